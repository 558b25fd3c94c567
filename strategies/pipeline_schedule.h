/* The order of work on one pipeline stage of the model strategy: which micro-batch it
 * receives, computes and sends next, for GPipe and 1F1B. Pure functions of (schedule, k, r,
 * m), so the order can be checked without threads (tests/test_model.c simulates every
 * stage's list under blocking, paired send/recv).
 *
 * Stage r of k runs the ops of its list in order. A forward of micro-batch i is RECV_ACT i
 * (from r-1, where r > 0), FORWARD i, SEND_ACT i (to r+1, where r < k-1); a backward is
 * RECV_GRAD i (from r+1), BACKWARD i, SEND_GRAD i (to r-1). Ops towards a missing neighbour
 * are left out. Backwards run in forward order (micro-batch 0 first) in both schedules, so
 * the gradients accumulate in the same order and both give the same bits.
 *
 * Sends are synchronous (mx_comm_send returns once the peer has received), so the lists of
 * neighbours must meet: where 1F1B exchanges an activation and a gradient with a neighbour
 * at once (Megatron's send_forward_recv_backward / send_backward_recv_forward, batched
 * isend/irecv there), the lower stage of the pair sends first and the upper one receives
 * first. */
#ifndef MX_PIPELINE_SCHEDULE_H
#define MX_PIPELINE_SCHEDULE_H

typedef enum { MX_PP_GPIPE, MX_PP_1F1B } mx_pp_schedule;

typedef enum {
    MX_PP_RECV_ACT,  /* the micro-batch's input from stage r-1, into its slot's buffer */
    MX_PP_FORWARD,   /* forward (and, on the last stage, the loss) */
    MX_PP_SEND_ACT,  /* its output to stage r+1 */
    MX_PP_RECV_GRAD, /* the gradient of its output from stage r+1 */
    MX_PP_BACKWARD,
    MX_PP_SEND_GRAD, /* the gradient of its input to stage r-1 */
} mx_pp_kind;

typedef struct {
    mx_pp_kind kind;
    int micro;
} mx_pp_op;

/* The most ops a stage's list has: six per micro-batch. */
#define MX_PP_MAX_OPS(m) (6 * (m))

/* "gpipe" (or NULL) and "1f1b"; MX_EINVAL naming the value and "gpipe|1f1b" otherwise. */
int mx_pp_schedule_parse(const char *name, mx_pp_schedule *out);
const char *mx_pp_schedule_name(mx_pp_schedule s);

/* Stage r's ops for k stages and m micro-batches into ops (room for MX_PP_MAX_OPS(m));
 * returns how many. */
int mx_pp_stage_ops(mx_pp_schedule s, int k, int r, int m, mx_pp_op *ops);

/* Micro-batches stage r holds at once (forward done, backward not yet): GPipe all m, 1F1B
 * min(k-r, m). Backwards come in forward order, so micro-batch i can use slot i % slots:
 * when it starts, micro-batch i - slots has finished its backward. */
int mx_pp_slots(mx_pp_schedule s, int k, int r, int m);

#endif
