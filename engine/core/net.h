/* A network: one parameter set over the whole model (engine/core/params.h) and one execution context
 * over all its layers with the loss (engine/core/exec.h). The fields below alias theirs, so that code
 * written for a single replica (the data strategy, tests, benchmarks) reads the same
 * parameters, offsets and buffers as before; pipeline and tensor-parallel code uses the
 * parts directly.
 *
 * A mixed-precision net (mx_net_create_amp, engine/core/amp.h) runs its context with 16-bit saved
 * activations (engine/core/exec.h) and holds two copies of the weights: w_master, f32, which the
 * optimizer updates, and w (= ps->w, what the layers read), the compute copy: w_master
 * rounded to the AMP type, set by mx_net_amp_refresh after every update. A step:
 *   forward; loss with grad_scale * scaler.scale; backward; agree on
 *   mx_net_grad_nonfinite(net) (summed gradients, every device and rank); if
 *   mx_loss_scaler_update says skip, leave the weights; else update w_master with g
 *   divided by the scale (rescale = 1/scale), then mx_net_amp_refresh. */
#ifndef MX_NET_H
#define MX_NET_H

#include "amp.h"
#include "exec.h"
#include "engine/layers/layer.h"
#include "params.h"

#include <stdint.h>

typedef struct mx_net {
    mx_backend *be;
    mx_shape in;
    int nclasses, max_batch;
    int label_len;    /* labels per sample: 1, or a sequence's length (engine/core/exec.h, mx_loss_rows) */
    int nlayers;
    mx_layer *layers;
    int nparams;
    mx_param *params;
    size_t nweights;  /* floats in w (and g) */
    float *w, *g;     /* device: parameters and their gradients (AMP: w is the rounded compute copy) */
    float *x;         /* device: input batch [max_batch][in] */
    int32_t *labels;  /* device: labels [max_batch][label_len] */
    /* device: act[i] = output of layer i. AMP: only act[nlayers-1] (the logits, f32 holding
     * half values); the others are NULL, their outputs 16-bit in exec->act_half. */
    float **act;
    float *dbuf[2];   /* device: activation gradients, alternating between layers */
    mx_amp amp;       /* MX_AMP_OFF, or the mixed precision the net runs */
    float *w_master;  /* AMP: device, f32 master weights laid out as w; NULL when off */
    void *w_half;     /* AMP: device, the 16-bit compute copy a GPU would hold; w is its f32 expansion */
    mx_params *ps;    /* what the fields above alias */
    mx_exec *exec;
} mx_net;

/* Builds the layers for inputs of shape in and batches up to max_batch on backend be. */
int mx_net_create(mx_net **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                  int max_batch);
/* The same with mixed precision amp (MX_AMP_OFF: mx_net_create). */
int mx_net_create_amp(mx_net **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                      int max_batch, mx_amp amp);
void mx_net_destroy(mx_net *net);

/* Deterministic initialisation from seed: each tensor draws from its own stream, so the
 * values do not depend on the device, on other tensors or on how a tensor is split (see
 * mx_param_init_slice). Xavier is uniform with bound sqrt(6/(fan_in+fan_out)); normal has
 * standard deviation sigma. AMP: initialises w_master and refreshes w from it. */
int mx_net_init_params(mx_net *net, uint64_t seed, mx_weight_init kind, float sigma);
/* AMP: w = w_master rounded to the AMP type (nearest even), through w_half. Call after
 * every change of w_master (the optimizer's update, a load). Nothing when off. */
void mx_net_amp_refresh(mx_net *net);
/* How many of the nweights values of g are inf or NaN (host value; reads g on the device). */
size_t mx_net_grad_nonfinite(mx_net *net);
/* Device bytes of the parameter set (w, g, model state) and, AMP, of the master and half
 * copies of the weights. */
size_t mx_net_weight_bytes(const mx_net *net);

/* Copies a batch of n samples from host memory into the net's input buffers. */
void mx_net_set_batch(mx_net *net, const float *x_host, const int32_t *labels_host, int n);
/* Forward pass over the current batch; returns the logits (device). */
const float *mx_net_forward(mx_net *net, int n, int training);
/* Softmax cross-entropy of the logits; gradients are scaled by grad_scale (1/global batch,
 * so that gradients summed across devices are the global mean). Returns the summed loss, a
 * sample's the mean over its rows; *correct counts rows (mx_exec_loss). */
double mx_net_loss(mx_net *net, int n, float grad_scale, int *correct);

/* Backward pass; accumulates into net->g (zero it first with mx_net_zero_grad). */
void mx_net_backward(mx_net *net, int n, mx_grad_ready_fn ready, void *user);
void mx_net_zero_grad(mx_net *net);

/* Forward FLOPs per sample (training costs about 3x: forward, input and weight gradients). */
double mx_net_flops(const mx_net *net);

/* Evaluation mode forward + loss/accuracy (correct rows, as mx_net_loss) over n samples (host
 * arrays: labels [n][label_len]), in batches; an AMP
 * net rounds as in training (the same context). */
int mx_net_evaluate(mx_net *net, const float *x_host, const int32_t *labels_host, int n, double *loss_sum,
                    int *correct);

#endif
