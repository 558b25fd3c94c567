/* A parameter set: the table of a model's tensors with their values (w) and gradients (g)
 * in one contiguous buffer each on one backend, and the layers set up over them. It runs
 * nothing: execution contexts (engine/core/exec.h) run layer ranges over it. Initialisation draws each
 * whole tensor from its own stream, so a shard can reproduce its slice of the tensor.
 *
 * Replicas: a set holding a layer that ties a tensor of a layer it does not hold (a pipeline's
 * last stage, whose language-model head reads the first stage's token embedding) holds a copy
 * of that tensor after its own, drawn from the tensor's stream, so equal to the owner's bit
 * for bit. The set only keeps the copy; keeping the copies equal is the caller's: whoever
 * trains the set adds the copies' gradients together and applies the same update to each
 * (strategies/model_tied.c, as Megatron-LM does between its first and last stages). */
#ifndef MX_PARAMS_H
#define MX_PARAMS_H

#include "engine/layers/layer.h"

#include <stdint.h>

typedef struct {
    char name[48];        /* "<top layer>.<kind>.<tensor>", nested: "<top>.<sub>.<kind>.<tensor>" */
    /* in elements of dtype (f32 today: w and g are float buffers; an AMP half copy keeps
     * the offsets), into w and g (offset meaningful only for held tensors and replicas) */
    size_t offset, count;
    mx_dtype dtype;       /* of w and g: MX_F32 */
    mx_init_kind init;
    int fan_in, fan_out;
    int decay;            /* weight decay applies */
    int layer;            /* index of the top-level layer that owns it */
} mx_param;

typedef enum { MX_WEIGHT_INIT_XAVIER, MX_WEIGHT_INIT_NORMAL } mx_weight_init;

typedef struct mx_params {
    mx_backend *be;
    mx_shape in;         /* per-sample input of layer 0 */
    int nlayers;
    mx_layer *layers;    /* every top-level layer of the model, set up (shapes, flops) */
    int nparams;
    mx_param *params;    /* every tensor of the model: an index is the tensor's in the whole model */
    int layer_lo, layer_hi; /* top-level layers [lo, hi) whose tensors this set holds */
    int param_lo, param_hi; /* the tensors held: those of layers [layer_lo, layer_hi) */
    /* Replicas of tensors held elsewhere that a held layer ties (see above), ascending:
     * indices into params, whose offset is the replica's in this set's w and g. */
    int nreplicas;
    int *replicas;
    size_t nweights;     /* floats in w (and g): the held tensors, then the replicas, each 16-float aligned */
    size_t nheld;        /* of nweights, the held tensors' (the replicas start there) */
    float *w, *g;        /* device: values and gradients of the held tensors and replicas */
    size_t bytes;        /* device bytes the set allocated: w, g and model state (batch-norm statistics) */
    struct mx_allocs *allocs;
} mx_params;

/* Sets up specs[0..nspecs) for inputs of shape in on backend be, and holds the tensors of
 * layers [layer_lo, layer_hi) (a pipeline stage; 0, nspecs for the whole model), and a
 * replica of each tensor outside them that a layer inside ties. Every layer is set up so
 * that shapes and the whole-model tensor table are known everywhere; layers outside the
 * range get no parameter storage (only their few bytes of batch-norm running statistics). */
int mx_params_create(mx_params **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                     int layer_lo, int layer_hi);
void mx_params_destroy(mx_params *ps);

/* Initialises every held tensor and replica from seed (see mx_param_init_slice). */
int mx_params_init(mx_params *ps, uint64_t seed, mx_weight_init kind, float sigma);
void mx_params_zero_grad(mx_params *ps);
/* Forward FLOPs per sample of layers [first, last). */
double mx_params_flops(const mx_params *ps, int first, int last);

/* Values of elements [lo, hi) of tensor p, index `index` in the whole model's table, into
 * out[0 .. hi-lo) (host). The whole tensor is drawn from a stream seeded by seed and index
 * alone, and the slice kept, so the result does not depend on how the tensor is split.
 * Xavier is uniform with bound sqrt(6/(fan_in+fan_out)) (p's fans are the whole tensor's);
 * normal has standard deviation sigma. Fails on lo > hi or hi > p->count. */
int mx_param_init_slice(const mx_param *p, int index, uint64_t seed, mx_weight_init kind, float sigma, size_t lo,
                        size_t hi, float *out);
/* The block rows [r0, r1) x columns [c0, c1) of tensor p viewed as [count/cols][cols], into
 * out[(r1-r0)][(c1-c0)] (host), values as mx_param_init_slice. A row range (c0 = 0,
 * c1 = cols) is a Megatron column-parallel shard of a dense [units][inputs] weight; a
 * column range its row-parallel shard (a conv weight [oc][c*k*k] splits input channels
 * as columns [c0*k*k, c1*k*k)). Fails when cols does not divide the count or a range is
 * out of bounds. */
int mx_param_init_block(const mx_param *p, int index, uint64_t seed, mx_weight_init kind, float sigma,
                        size_t cols, size_t r0, size_t r1, size_t c0, size_t c1, float *out);

#endif
