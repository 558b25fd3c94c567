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
    mx_pp_op *ops;         /* its op list for one step */
    int nops;
    double mem_params, mem_optim; /* bytes, as the allocator counted them at creation */

    /* ---- one step, written by the stage's thread */
    double busy;           /* seconds in forward and backward compute */
    double t_fwd_end, t_bwd_end, t_end; /* its last forward, last backward, update done */
    double loss;
    double sent_act, sent_grad; /* bytes sent: activations to r+1, input gradients to r-1 */
    int correct, held, held_max, error;
    char errmsg[256];      /* the message of error */
} model_stage;

typedef struct {
    mx_comm *comm;         /* k members, stage r is member r */
    const float *x;        /* host batch */
    const int32_t *y;
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

#endif
