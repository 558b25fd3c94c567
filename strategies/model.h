/* Internal to the model strategy (model.c, model_stage.c): a pipeline stage and one step's
 * micro-batches. */
#ifndef MX_MODEL_H
#define MX_MODEL_H

#include "comm/comm.h"
#include "pipeline_schedule.h"
#include "strategy.h"
#include "engine/core/exec.h"

typedef struct {
    int r, k;              /* stage r of k: device r */
    int first, last;       /* its top-level layers [first, last) */
    int micro_cap;         /* the most samples a micro-batch may have */
    mx_backend *be;
    mx_params *ps;         /* its layers' parameters and gradients only */
    float *mom;            /* device: the optimizer's state beside ps->w (engine/core/optim.h) */
    long updates;          /* updates applied: AdamW's t is the next */
    int slots;             /* micro-batches it holds at once (pipeline_schedule.h) */
    mx_exec **ctx;         /* [slots]: micro-batch i runs in ctx[i % slots] */
    float **inbuf;         /* [slots] device: received inputs (stages after the first) */
    const float **out;     /* [slots]: each slot's output, owned by its context */
    float *gin, *gout;     /* device: the gradient of a micro-batch's input (sent back), of its output (received) */
    size_t in_size, out_size; /* per sample */
    float *tie_buf;        /* device: a replica's gradient, received by the stage owning the tensor */
    mx_pp_op *ops;         /* its op list for one step of ops_m micro-batches (room for m's) */
    int nops, ops_m;
    mx_pp_schedule sched;
    double mem_params, mem_optim; /* bytes, as the allocator counted them at creation */

    /* ---- one step, written by the stage's thread */
    double busy;           /* seconds in forward and backward compute */
    double t_fwd_end, t_bwd_end, t_end; /* its last forward, last backward, update done */
    double loss;
    double sent_act, sent_grad; /* bytes sent: activations to r+1, input gradients to r-1 */
    double sent_tied;      /* bytes sent adding the gradients of tied tensors' copies (model_tied.c) */
    int correct, held, held_max, error;
    char errmsg[256];      /* the message of error */
} model_stage;

/* A tensor that several stages hold copies of (a language model's head reading the token
 * embedding on another stage): the stage that holds it as its own and those holding a replica
 * (engine/core/params.h). */
typedef struct {
    int param;             /* its index in the whole model's table */
    size_t count;          /* floats */
    int owner;             /* the stage whose layers hold it */
    int nreplicas;
    int replica[MX_MAX_DEVICES]; /* the stages holding a replica, ascending */
} model_tie;

typedef struct {
    mx_comm *comm;         /* k members, stage r is member r */
    const model_tie *ties; /* [nties], ascending by tensor: every stage walks them in this order */
    int nties;
    const float *x;        /* host batch */
    const int32_t *y;
    int m;                 /* micro-batches this step: m, or fewer for a smaller batch */
    const int *count, *off; /* micro-batch i: count[i] samples from sample off[i] */
    float grad_scale;
    mx_optim opt;          /* the step's lr; each stage sets its own step count */
    double *sumsq;         /* [k] clipping: stage r's squared gradient norm at r, shared */
} model_step;

/* Builds stage r of k over layers [first, last) on device id: parameters initialised as one
 * device's, the optimizer's state, the schedule's op list and as many contexts as it holds
 * micro-batches. */
int mx_model_stage_create(model_stage *st, const mx_strategy_config *cfg, int r, int k, int first, int last,
                          int micro_cap, int m, mx_pp_schedule sched, int id);
void mx_model_stage_destroy(model_stage *st);
/* One step's op list, then the stage's update (model_stage.c). */
void mx_model_stage_run(model_stage *st, const model_step *sp);

/* ---- tied tensors across stages (model_tied.c) */
/* The tensors of the k stages' sets that other stages hold replicas of, into *ties (*nties,
 * malloc'ed; NULL and 0 where none), and on each owner a buffer to receive a replica's
 * gradient into. */
int mx_model_ties_plan(model_stage *st, int k, model_tie **ties, int *nties);
/* Frees the owners' buffers (before the stages are destroyed) and ties. */
void mx_model_ties_destroy(model_stage *st, int k, model_tie *ties);
/* After stage st's last backward: every copy of each tied tensor st holds ends up with the
 * sum of all the copies' gradients (the same bits on every stage), so that the stages apply
 * the same update to identical copies. Bytes sent into st->sent_tied. */
void mx_model_stage_reduce_tied(model_stage *st, const model_step *sp);
/* How far the replicas are from their owners' tensors: the largest absolute difference of any
 * value (INFINITY where one is NaN and the other not), over *copies replicas in all. */
int mx_model_ties_compare(model_stage *st, const model_tie *ties, int nties, int *copies, double *diff);
/* The same for a model strategy's stages (s made by mx_strategy_model's create): for checks. */
int mx_model_tied_diff(mx_strategy *s, int *copies, double *diff);

#endif
