/* Tensor (Megatron-style) parallelism, internals shared by the layer strategy (layer.c) and
 * its tests: a plan says how a model is cut into per-device shards and where the
 * collectives go (layer_plan.c); a device program runs one device's part of it
 * (layer_run.c).
 *
 * The plan is a small straight-line program of steps over tensors. A tensor is, on every
 * device, one of:
 *   FULL     the whole activation [n][C][h][w], the same on every device (replicated);
 *   SHARD    the device's channels [bound[d], bound[d+1]) of it: [n][c_d][h][w];
 *   PARTIAL  the whole shape, but a partial sum whose sum over devices is the activation
 *            (a row-parallel dense layer's output before its all-reduce).
 * A step is an engine layer set up over the device's shard (LAYER), or a collective
 * (GATHER: SHARD -> FULL, ALLREDUCE: PARTIAL -> FULL), or the residual add (ADD). Gradients
 * keep the same invariants: a FULL tensor's gradient is whole and replicated, a SHARD's the
 * device's channels, a PARTIAL's the (replicated) gradient of the sum. Column-parallel
 * layers give only partial input gradients, so the tensor they read is marked `gpart`: its
 * gradient is summed over the devices before anything reads it (a reduce-scatter where the
 * tensor was gathered from shards, an all-reduce otherwise).
 *
 * A transformer's sequence activations ({1, T, width}, row-major [T][width]) are marked `seq`:
 * their SHARD splits each row's features (w) instead of the channels (c), so a device's part
 * is [n][T][w_d]. Nothing gathers such a shard: Megatron's split of a GPT block (a
 * column-parallel layer on a whole input, local work on the shard, a row-parallel layer and
 * an all-reduce) never needs the whole of one. */
#ifndef MX_LAYER_PLAN_H
#define MX_LAYER_PLAN_H

#include "comm/comm.h"
#include "base/limits.h"
#include "engine/core/optim.h"
#include "engine/core/params.h"
#include "workloads/workloads.h"

typedef enum { TP_FULL, TP_SHARD, TP_PARTIAL } tp_layout;

typedef struct {
    mx_shape shape;   /* the whole tensor's per-sample shape */
    tp_layout layout;
    int bound[MX_MAX_DEVICES + 1]; /* SHARD: device d holds channels [bound[d], bound[d+1]) */
    int seq;          /* a sequence activation: SHARD splits shape.w, the features of every row */
    int producer;     /* step writing it; -1 for the model's input */
    int needs_grad;   /* some parameter lies upstream (or the caller wants the input gradient) */
    int gpart;        /* its consumers are column-parallel: their input gradients are partial sums */
    int gpart_layer;  /* the top-level layer whose collective sums that gradient */
    int col_uses, other_uses; /* consumers that need its gradient, by kind (never mixed) */
} tp_tensor;

typedef enum { TP_LAYER, TP_GATHER, TP_ALLREDUCE, TP_ADD } tp_op;

/* How a LAYER step's work is split over the devices. */
typedef enum {
    TP_REPL, /* every device computes the whole layer; its tensors replicated (a transformer's
              * layer norms, embedding and head), trained alike on every device */
    TP_COL,  /* output channels / units split: the weight's row block, the bias' slice */
    TP_ROW,  /* dense over the device's input shard: the weight's column block; the bias on
              * device 0 only, so that it is added once to the sum */
    TP_CHAN, /* per channel on the shard (batch norm, relu, pooling, flatten; GELU per feature) */
    TP_HEADS /* attention on the device's heads: the shard holds their q, k and v columns */
} tp_par;

typedef struct {
    tp_op op;
    tp_par par;
    mx_layer_spec spec;  /* the whole layer's spec (units: the whole count) */
    int in, in2, out;    /* tensors; in2: ADD's second operand (-1 otherwise) */
    int acc, acc2;       /* backward adds into the input's gradient (a later consumer wrote it) */
    int layer;           /* the top-level layer it belongs to (collectives' bytes, names) */
    int param_first;     /* whole-model index of its first parameter tensor */
    int nparams;         /* parameter tensors of the layer */
    int groups;          /* TP_COL: the output is this many equal blocks of units, each split alike
                          * (a fused QKV projection: 3, the device's q, k and v rows); else 1 */
    /* A head tied to an embedding: the embedding's step holds both layers in one parameter
     * set (tied_by: the head's step), so that the table is one tensor whose gradient both
     * add to; the head's step runs that set's second layer (shares: the embedding's step).
     * -1 where none. */
    int tied_by, shares;
} tp_step;

typedef struct {
    int k;               /* devices */
    int nsteps, ntensors;
    tp_step *steps;
    tp_tensor *tensors;  /* tensor 0 is the model's input (FULL) */
    int out;             /* the model's output, FULL */
    int nlayers;         /* top-level layers */
    /* the whole model's tensor table, and each tensor's offset in the one-device layout
     * (mx_net's w: 16-float aligned), so shards can be drawn from and put back into it */
    mx_param *whole;
    int nwhole;
    size_t *offset;
    size_t nweights;
    double flops;        /* forward FLOPs per sample of the whole model */
    float init_sigma;    /* normal initialisation's deviation (0.01 unless the strategy sets it) */
} mx_tp_plan;

/* The plan of specs (inputs of shape in) over k devices. with_loss: the output feeds the
 * loss, so the last layer is column-parallel and its logits gathered (a row-parallel last
 * layer would be cheaper but the loss wants the classes split as the units are); without,
 * a last dense layer on a sharded input is row-parallel and all-reduced. input_grad: the
 * caller wants the input's gradient (tests). be: where the whole model is set up once,
 * briefly, for its shapes and tensor table. MX_EINVAL when some layer has fewer channels
 * or units than devices; MX_EUNSUPPORTED for a layer kind it cannot shard. */
int mx_tp_plan_create(mx_tp_plan **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                      int k, int with_loss, int input_grad);
void mx_tp_plan_destroy(mx_tp_plan *p);

/* Elements per sample of tensor t on device d, and its per-sample shape there. */
size_t mx_tp_local_size(const mx_tp_plan *p, int t, int d);
mx_shape mx_tp_local_shape(const mx_tp_plan *p, int t, int d);

/* ---- shards of whole tensors (layer_shard.c) */

/* Where one shard tensor lies in its whole-model tensor, viewed as [rows][cols]: the block
 * rows [r0, r1) x columns [c0, c1), repeated in `groups` row blocks gstride rows apart (a fused
 * QKV projection's q, k and v rows), laid one after another in the shard. */
typedef struct {
    int whole;
    size_t cols, r0, r1, c0, c1;
    int groups;
    size_t gstride;
    int owner; /* get_params takes this copy (a replicated tensor: device 0's) */
    int train; /* 0: held only for its shape (the row-parallel bias off device 0), kept zero */
    int replica; /* a replicated tensor: the same values on every device */
} tp_map;

/* The layer spec of step s's shard on device d: units, heads as the shard holds them. */
mx_layer_spec mx_tp_shard_spec(const mx_tp_plan *p, const tp_step *s, int d);
/* The block of whole tensor `s->param_first + j` that tensor j (count floats) of step s's
 * shard layer is on device d; MX_EUNSUPPORTED where the sizes disagree (internal). */
int mx_tp_shard_map(const mx_tp_plan *p, const tp_step *s, int j, int d, size_t count, tp_map *m);
/* The shard's initial values (host), drawn as the whole tensor is (mx_param_init_block). */
int mx_tp_shard_init(const mx_tp_plan *p, const tp_map *m, uint64_t seed, mx_weight_init init, float *out);
/* Copies the shard (host) into its place in the whole tensor (host). */
void mx_tp_shard_put(const tp_map *m, const float *shard, float *whole);
/* Compares the shard (host) with its place in the whole tensor: 1 when every bit agrees. */
int mx_tp_shard_same(const tp_map *m, const float *shard, const float *whole);

/* ---- one device's program (layer_run.c) */

typedef struct mx_tp_dev mx_tp_dev;

/* Sets up device d's shards of every layer on be (its parameters drawn from seed exactly
 * as the one-device tensors, mx_param_init_block), the state of optimizer opt, and buffers for
 * batches of up to max_batch. comm: the k devices' communicator (member d is this device). */
int mx_tp_dev_create(mx_tp_dev **out, const mx_tp_plan *p, int d, mx_backend *be, mx_comm *comm, int max_batch,
                     uint64_t seed, mx_weight_init init, const mx_optim *opt);
void mx_tp_dev_destroy(mx_tp_dev *t);

/* The device's input buffer [max_batch][in] (device memory): the whole batch. */
float *mx_tp_input(mx_tp_dev *t);
/* Forward over n samples of the input; *out: the output, FULL [n][out] (device). Fails only
 * when a collective fails (on every member alike). */
int mx_tp_forward(mx_tp_dev *t, int n, int training, const float **out);
/* Backward from dout (device, FULL [n][out], the same on every device); parameter gradients
 * accumulate; din (device [n][in], may be NULL) gets the input's gradient when the plan was
 * made with input_grad. */
int mx_tp_backward(mx_tp_dev *t, int n, const float *dout, float *din);
void mx_tp_zero_grad(mx_tp_dev *t);
/* The optimizer's update of the device's own shards (a tensor held only to keep shapes, the
 * row-parallel bias off device 0, is left at zero), its t the device's next; with clipping,
 * the global norm over every device's shards first, through sumsq ([k] doubles the k devices
 * share) and two barriers every device makes (a failure fails on every member). */
int mx_tp_update(mx_tp_dev *t, const mx_optim *opt, double *sumsq);
/* Writes the tensors this device owns (grads: their gradients) into host, the whole model
 * in the one-device layout. */
int mx_tp_get_params(mx_tp_dev *t, float *host, int grads);
/* Checks that this device's copies of the replicated tensors hold the bits of host (the whole
 * model as get_params wrote it from every device): replicated layers are trained alike on
 * every device, and MX_ERUNTIME names the first tensor where they drifted apart. */
int mx_tp_check_replicas(mx_tp_dev *t, const float *host);

/* What the device measured: bytes of parameters and gradients (allocator count, model state
 * such as batch-norm statistics included), of the optimizer's state, and its collectives' bytes (count x
 * element size per call, as mx_comm counts them) per top-level layer since the last reset.
 * Backward's activation gradients, staging and scratch share buffers by liveness
 * (layer_run.c): mem_grads bytes in grad_buffers buffers, holding grad_uses of them. */
typedef struct {
    double mem_params, mem_optim;
    double mem_grads;
    int grad_buffers, grad_uses;
    double layer_bytes[MX_MAX_LAYERS];
} mx_tp_dev_stats;
const mx_tp_dev_stats *mx_tp_stats(const mx_tp_dev *t);
void mx_tp_stats_reset(mx_tp_dev *t);

#endif
