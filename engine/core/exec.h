/* Execution contexts: one runs top-level layers [first, last) of a parameter set (a
 * residual block is one unit) on one micro-batch at a time, from an external input or its
 * own batch buffer, backward from an external output gradient or the loss, handing back
 * the input gradient of layer first. Everything a backward needs from its forward
 * (activations, layers' saved state) lives here, so several contexts over the same
 * parameters hold several micro-batches in flight; parameter gradients accumulate into
 * the set's g. A pipeline stage or a micro-batch is one context; mx_net is one over all.
 *
 * Mixed precision (engine/core/amp.h): a context created with a 16-bit act_type stores each layer's
 * output as 16-bit values of that type (real 2-byte storage) and runs the layers, whose
 * kernels compute in f32, on f32 working buffers: forward expands the layer's input into
 * one, the layer writes its output into the other, and the output is rounded (nearest
 * even) into its storage; the next layer reads the rounded values, as on a GPU. Backward
 * expands the layer's input and output again, and rounds the activation gradient it
 * writes and the layer's parameter gradients to the half type, so that an fp16 overflow
 * becomes inf as it would on a GPU (the gradients stay in f32 buffers: emulation).
 * Where a layer's traits (engine/layers/layer.h) say a rounding cannot change a value or a backward does
 * not read a tensor, the rounding or expansion is skipped (the values are the same; a
 * skipped input reaches the layer as NULL). An external dout must hold half values (the
 * next AMP stage's din does).
 * What a layer keeps as saved state (batch-norm statistics, argmax, a residual block's
 * inner activations) stays as the layer writes it, f32. The two working buffers are each
 * as wide as the widest layer, so the context as a whole shrinks only where the saved
 * outputs outweigh four of its widest layers (two working buffers, two gradients). */
#ifndef MX_EXEC_H
#define MX_EXEC_H

#include "params.h"

/* Called once a top-level layer's backward is done: params [first, first+count) (indices
 * in the whole model's table) are final for this micro-batch. */
typedef void (*mx_grad_ready_fn)(void *user, int param_first, int param_count);

typedef struct mx_exec {
    mx_params *ps;
    mx_dtype act_type; /* storage of saved activations: MX_F32, or MX_F16/MX_BF16 (AMP) */
    mx_backend *be;
    int first, last;  /* top-level layers [first, last) */
    int max_batch;
    int loss;         /* last is the model's end and its output class scores (mx_loss_rows) */
    int nclasses;     /* with loss: classes per row */
    int label_len;    /* with loss: rows (labels) per sample: 1 for a vector, T for a sequence */
    mx_shape in, out; /* per-sample input of layer first, output of layer last-1 */
    float *x;         /* device: own input [max_batch][in] for mx_exec_set_batch (first == 0) */
    int32_t *labels;  /* device: own labels [max_batch][label_len] (with loss) */
    /* device: act[i - first] = output of layer i, f32. In an AMP context only the last
     * layer's output is f32 (values of act_type: what the loss and a next stage read), the
     * others are NULL: their outputs are in act_half. */
    float **act;
    void **act_half;  /* AMP: act_half[i - first] = output of layer i (NULL for the last); NULL when f32 */
    void *in_half;    /* AMP: the forward's input rounded to act_type, which backward expands again */
    float *work[2];   /* AMP: f32 working buffers for a layer's input and output */
    size_t work_elems; /* AMP: floats in each: the widest of layer first's input and every output */
    void **state;     /* device: state[i - first] = layer i's saved state, NULL when it keeps none */
    /* fused[i - first]: layer i is a relu that layer i + 1 applies in its own pass (engine/layers/layer.h's
     * absorbs_relu); it runs nothing, and its output (act, act_half) is never written */
    char *fused;
    int plain;        /* MXBENCH_FUSE=off: no fusion, and AMP ignores the layers' traits */
    float *dbuf[2];   /* device: activation gradients, alternating between layers; the loss's in dbuf[0] */
    const float *in_ptr; /* the input of the forward in flight: backward reads it again */
    size_t bytes;     /* device bytes this context holds (activations, state, gradients, batch) */
    size_t act_bytes; /* of bytes: the saved activations (outputs, and AMP's half input) */
    void *blocks[8];  /* its allocations */
} mx_exec;

/* How the loss reads a model's per-sample output: a vector {C, 1, 1} is one row of C class
 * scores (an image's label), rows {1, R, C} are R rows of C (a sequence's next tokens, one
 * label each). Sets *classes and *rows; MX_EINVAL naming the shape for anything else. */
int mx_loss_rows(mx_shape out, int *classes, int *rows);

/* A context for layers [first, last) of ps (whose tensors ps must hold) and batches of up to
 * max_batch samples. with_loss: last must be the model's last layer, its output a vector. */
int mx_exec_create(mx_exec **out, mx_params *ps, int first, int last, int max_batch, int with_loss);
/* The same, with saved activations stored as act_type: MX_F32 is mx_exec_create (bit for bit
 * what it computes); MX_F16 or MX_BF16 is mixed precision as described above. The loss
 * and the input/output of the context stay f32 (the loss reads the logits' half values). */
int mx_exec_create_amp(mx_exec **out, mx_params *ps, int first, int last, int max_batch, int with_loss,
                       mx_dtype act_type);
void mx_exec_destroy(mx_exec *e);
/* Whether MXBENCH_FUSE=off asks contexts to run every layer apart and round every tensor
 * (read when a context is created). */
int mx_exec_fusion_off(void);

/* Copies n samples from host memory into the context's own input (x_host, when first is
 * 0) and labels (labels_host, with loss); either may be NULL. */
void mx_exec_set_batch(mx_exec *e, const float *x_host, const int32_t *labels_host, int n);
/* Forward over n samples of in (device, [n][e->in]; NULL: the own input). in must stay
 * unchanged until this micro-batch's backward, which reads it again. Returns the output of
 * layer last-1 (device, f32, owned by the context, valid until its next forward). */
const float *mx_exec_forward(mx_exec *e, const float *in, int n, int training);
/* Softmax cross-entropy of the output against labels (device, [n][label_len]; NULL: the own
 * labels); gradients, scaled by grad_scale, go to dbuf[0] for a backward with dout NULL.
 * A sample's loss is the mean over its rows (a sequence's tokens), so a loss summed over
 * samples and grad_scale = 1/batch mean the same for images and tokens. Returns the summed
 * loss; *correct counts the rows (tokens) whose argmax is the label. Needs a context created
 * with_loss. AMP: the loss is computed in f32 and its gradient rounded to act_type, as the
 * backward of a GPU's cast to f32 does. */
double mx_exec_loss(mx_exec *e, const int32_t *labels, int n, float grad_scale, int *correct);
/* Backward over the n samples of the last training forward: dout (device, [n][e->out]; NULL:
 * the loss's gradient) in, the input gradient of layer first out to din (device, [n][e->in];
 * NULL when nothing upstream needs it). Parameter gradients accumulate into ps->g; ready
 * (may be NULL) is called as each layer's are final. din must not alias dout. */
void mx_exec_backward(mx_exec *e, int n, const float *dout, float *din, mx_grad_ready_fn ready, void *user);

#endif
