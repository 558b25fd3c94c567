/* Layers: each family is one file holding a table of ops (setup, forward, backward, flops)
 * listed once in engine/layers/layers.def. A layer object holds what is constant for its parameters
 * (descriptors, pointers into the parameter set, batch-norm running statistics); what one
 * micro-batch's backward needs from its forward (argmax, batch statistics, inner
 * activations) is saved state that the execution context owns and passes in, so several
 * contexts can hold micro-batches in flight through the same layer. Contract: parameter
 * gradients accumulate (+=) so that micro-batches can add up; activation gradients are
 * written (=). */
#ifndef MX_LAYER_H
#define MX_LAYER_H

#include "engine/backend/backend.h"

#include <stddef.h>

typedef struct {
    int c, h, w;
} mx_shape; /* per-sample shape, NCHW without N */

static inline size_t mx_shape_size(mx_shape s) { return (size_t)s.c * s.h * s.w; }

typedef enum { MX_INIT_ZERO, MX_INIT_ONE, MX_INIT_WEIGHT } mx_init_kind;

/* What a workload asks for: a layer kind and its integer arguments. */
typedef struct {
    const char *kind; /* a name from engine/layers/layers.def: "dense", "conv2d", ... */
    int units;        /* dense: outputs; conv2d/residual: output channels */
    int k, stride, pad;
    int bias;         /* conv2d: add a per-channel bias; linear: add a bias per output */
    int heads;        /* attention: heads */
    int vocab;        /* embedding, lm_head: vocabulary size */
} mx_layer_spec;

/* What a layer's kernels do not need, or cannot change, that a mixed-precision context (engine/core/exec.c)
 * uses to skip casts and roundings; 0 claims nothing. */
enum {
    MX_TRAIT_BWD_NO_IN = 1,    /* backward reads not its in (a context may pass NULL) */
    MX_TRAIT_BWD_NO_OUT = 2,   /* backward reads not its out (a context may pass NULL) */
    MX_TRAIT_EXACT_OUT = 4,    /* each output is one of the inputs or 0: half values stay half values */
    MX_TRAIT_EXACT_DIN = 8,    /* each input gradient is one of the output gradients or 0 */
    MX_TRAIT_IDS_IN = 16,      /* the input holds integer ids (tokens), which rounding would change */
};

typedef struct mx_net_builder mx_net_builder;
typedef struct mx_layer mx_layer;

/* Saved state is one block of device memory per layer and context, state_bytes(l, max_batch)
 * long (64-byte aligned). A layer lays it out from the n of the call: forward and the
 * backward that reads it get the same n, and a layout for n <= max_batch must fit in
 * state_bytes(l, max_batch). */
#define MX_STATE_ALIGN 64
static inline size_t mx_state_align(size_t bytes)
{
    return (bytes + MX_STATE_ALIGN - 1) / MX_STATE_ALIGN * MX_STATE_ALIGN;
}

typedef struct {
    const char *kind;
    size_t priv_size; /* bytes of per-layer constant setup, zeroed, freed with the parameter set */
    /* Checks spec against l->in, sets l->out, registers parameters and model-state buffers. */
    int (*setup)(mx_layer *l, const mx_layer_spec *spec, mx_net_builder *b);
    /* Device bytes of saved state for batches up to max_batch; NULL when the layer keeps none. */
    size_t (*state_bytes)(const mx_layer *l, int max_batch);
    void (*forward)(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training);
    /* din may be NULL when nothing upstream needs it (the first layer). state is what the
     * training forward of these n samples left. */
    void (*backward)(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                     const float *in, const float *out);
    double (*flops)(const mx_layer *l); /* forward FLOPs per sample (2 per multiply-add) */
    /* OPTIONAL: MX_TRAIT_* flags of this layer (NULL: none). */
    unsigned (*traits)(const mx_layer *l);
    /* OPTIONAL: a relu layer just before this one taken into this layer's own pass, which saves
     * the relu's trip through memory each way. absorbs_relu: whether it can on be (a backend
     * may lack the fused kernels); forward_relu and backward_relu: this layer's forward of
     * relu(in) and its backward through the relu (in the relu's input, din the gradient of it),
     * with the values of the two layers run apart; backward_relu reads out, not in (whatever
     * traits says of backward). The execution context (engine/core/exec.c) then runs the relu layer as
     * nothing. */
    int (*absorbs_relu)(const mx_layer *l, const mx_backend *be);
    void (*forward_relu)(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training);
    void (*backward_relu)(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                          const float *in, const float *out);
} mx_layer_ops;

struct mx_layer {
    const mx_layer_ops *ops;
    mx_shape in, out;
    int param_first, param_count; /* this layer's slice of the parameter table */
    void *priv;
};

static inline size_t mx_layer_state_bytes(const mx_layer *l, int max_batch)
{
    return l->ops->state_bytes ? mx_state_align(l->ops->state_bytes(l, max_batch)) : 0;
}

/* ---- used by layer setup functions: what a setup may ask of the parameter set being built,
 * through a table the set fills (engine/core/params.c), so that layers know the set only by
 * this interface */

typedef struct {
    int (*param)(mx_net_builder *b, const char *name, size_t count, mx_init_kind init, int fan_in, int fan_out,
                 int decay, float **w, float **g);
    void *(*buffer)(mx_net_builder *b, size_t bytes);
    mx_backend *(*backend)(const mx_net_builder *b);
    int (*child)(mx_net_builder *b, mx_layer *child, const mx_layer_spec *spec, mx_shape in);
    int (*tied)(mx_net_builder *b, const char *name, size_t count, float **w, float **g);
} mx_builder_ops;
struct mx_net_builder {
    const mx_builder_ops *ops;
};

/* Registers a parameter tensor of count floats; *w and *g are pointed into the parameter
 * set's contiguous parameter and gradient buffers once every layer is set up (they stay
 * NULL for layers whose tensors the set does not hold). decay: whether weight decay
 * applies (weights yes; biases and batch-norm parameters no). */
static inline int mx_builder_param(mx_net_builder *b, const char *name, size_t count, mx_init_kind init,
                                   int fan_in, int fan_out, int decay, float **w, float **g)
{
    return b->ops->param(b, name, count, init, fan_in, fan_out, decay, w, g);
}
/* Points *w and *g (once every layer is set up, as mx_builder_param) at the tensor an earlier
 * layer of the same set registered as `name` (the name that layer passed, e.g.
 * "embedding.wte"): a tied weight, one tensor whose gradient both layers add to. MX_EINVAL
 * when there is none or it does not hold count values. A set that holds the layer that ties
 * it but not the tensor (a pipeline stage) points the layer at its replica of the tensor
 * (engine/core/params.h). */
static inline int mx_builder_tied(mx_net_builder *b, const char *name, size_t count, float **w, float **g)
{
    return b->ops->tied(b, name, count, w, g);
}
/* A device buffer of model state (not trained, not per micro-batch: batch-norm running
 * statistics), zero-filled, freed with the parameter set. */
static inline void *mx_builder_buffer(mx_net_builder *b, size_t bytes) { return b->ops->buffer(b, bytes); }
static inline mx_backend *mx_builder_backend(const mx_net_builder *b) { return b->ops->backend(b); }
/* For setups of layers whose kernels are OPTIONAL backend ops without a default (the
 * transformer's): MX_OK, or MX_EUNSUPPORTED naming the layer, the backend and the op where the
 * backend's table leaves op NULL, so that a model is refused when it is built rather than
 * failing in its first step. The including file includes base/status.h (mx_error). */
#define MX_LAYER_NEEDS_OP(b, kind, op)                                                                     \
    (mx_builder_backend(b)->ops->op ? MX_OK                                                                \
                                    : mx_error(MX_EUNSUPPORTED, "layer %s: backend %s has no %s kernel", kind, \
                                               mx_builder_backend(b)->ops->name, #op))
/* Sets up a layer nested inside another (residual blocks): same registry, same set. */
static inline int mx_builder_child(mx_net_builder *b, mx_layer *child, const mx_layer_spec *spec, mx_shape in)
{
    return b->ops->child(b, child, spec, in);
}

/* A batch-norm layer l followed by a relu, run as one where the backend has the fused kernels
 * (mx_bn_relu_fusable): forward writes relu(bn(in)) and keeps l's saved state; backward takes
 * dout, the gradient of that output, with out (the relu's output) and in (bn's input), and
 * writes bn's input gradient. A residual block's inner pair runs so (engine/layers/batchnorm.c). */
int mx_bn_relu_fusable(const mx_backend *be);
void mx_bn_relu_forward(mx_layer *l, mx_backend *be, void *state, int n, float *out, const float *in, int training);
void mx_bn_relu_backward(mx_layer *l, mx_backend *be, void *state, int n, float *din, const float *dout,
                         const float *in, const float *out);

/* A conv2d layer's descriptor and weights (no bias); a batch-norm layer's tensors (with the
 * batch statistics in its saved state) and constants: what a residual block hands a
 * backend's residual_branch_* ops. */
void mx_conv2d_tensors(const mx_layer *l, mx_conv_desc *d, const float **w, float **dw);
void mx_bn_tensors(const mx_layer *l, void *state, mx_res_bn *b, float *eps, float *momentum);

/* Layer registry, generated from engine/layers/layers.def. */
const mx_layer_ops *mx_layer_find(const char *kind);
const char *mx_layer_kinds(void); /* "dense|conv2d|..." for messages */

#endif
