/* The single-replica network: a parameter set and one context over [0, n) with the loss. */
#include "net.h"
#include "base/status.h"

#include <stdlib.h>

int mx_net_create(mx_net **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in, int max_batch)
{
    return mx_net_create_amp(out, be, specs, nspecs, in, max_batch, MX_AMP_OFF);
}

/* The master and half copies of the weights, beside the set's w and g. */
static int amp_weights(mx_net *net)
{
    mx_backend *be = net->ps->be;
    const size_t n = net->ps->nweights ? net->ps->nweights : 1;
    net->w_master = be->ops->alloc(be, sizeof(float) * n);
    net->w_half = be->ops->alloc(be, mx_dtype_size(mx_amp_dtype(net->amp)) * n);
    if (!net->w_master || !net->w_half)
        return mx_error(MX_ENOMEM, "out of device memory for the master and half copies of %zu weights",
                        net->ps->nweights);
    return MX_OK;
}

int mx_net_create_amp(mx_net **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                      int max_batch, mx_amp amp)
{
    *out = NULL;
    if (nspecs < 1) return mx_error(MX_EINVAL, "a network needs at least one layer");
    if (max_batch < 1) return mx_error(MX_EINVAL, "batch size %d: must be at least 1", max_batch);
    if ((unsigned)amp > MX_AMP_BF16)
        return mx_error(MX_EINVAL, "mixed precision %d: accepted %d (off), %d (fp16), %d (bf16)", (int)amp,
                        MX_AMP_OFF, MX_AMP_FP16, MX_AMP_BF16);
    mx_net *net = calloc(1, sizeof *net);
    if (!net) return mx_error(MX_ENOMEM, "out of memory creating a network");
    net->amp = amp;
    int rc = mx_params_create(&net->ps, be, specs, nspecs, in, 0, nspecs);
    if (rc == MX_OK) rc = mx_exec_create_amp(&net->exec, net->ps, 0, nspecs, max_batch, 1, mx_amp_dtype(amp));
    if (rc == MX_OK && amp != MX_AMP_OFF) rc = amp_weights(net);
    if (rc < 0) {
        mx_net_destroy(net);
        return rc;
    }
    const mx_params *ps = net->ps;
    const mx_exec *e = net->exec;
    net->be = be;
    net->in = in;
    net->nclasses = e->nclasses;
    net->label_len = e->label_len;
    net->max_batch = max_batch;
    net->nlayers = nspecs;
    net->layers = ps->layers;
    net->nparams = ps->nparams;
    net->params = ps->params;
    net->nweights = ps->nweights;
    net->w = ps->w;
    net->g = ps->g;
    net->x = e->x;
    net->labels = e->labels;
    net->act = e->act;
    net->dbuf[0] = e->dbuf[0];
    net->dbuf[1] = e->dbuf[1];
    *out = net;
    return MX_OK;
}

void mx_net_destroy(mx_net *net)
{
    if (!net) return;
    if (net->ps) {
        if (net->w_master) net->ps->be->ops->free(net->ps->be, net->w_master);
        if (net->w_half) net->ps->be->ops->free(net->ps->be, net->w_half);
    }
    mx_exec_destroy(net->exec);
    mx_params_destroy(net->ps);
    free(net);
}

int mx_net_init_params(mx_net *net, uint64_t seed, mx_weight_init kind, float sigma)
{
    MX_TRY(mx_params_init(net->ps, seed, kind, sigma));
    if (net->amp != MX_AMP_OFF) {
        /* The drawn values are the master's; the layers get their rounding. */
        net->be->ops->copy(net->be, net->w_master, net->w, sizeof(float) * net->nweights, MX_COPY_D2D);
        mx_net_amp_refresh(net);
    }
    /* The copy to the device can fail on a backend that queues it: its sticky error. */
    return net->be->ops->sync(net->be);
}

void mx_net_amp_refresh(mx_net *net)
{
    if (net->amp == MX_AMP_OFF) return;
    const mx_dtype t = mx_amp_dtype(net->amp);
    net->be->ops->cast(net->be, net->nweights, net->w_half, t, net->w_master, MX_F32);
    net->be->ops->cast(net->be, net->nweights, net->w, MX_F32, net->w_half, t);
}

size_t mx_net_grad_nonfinite(mx_net *net)
{
    return net->be->ops->count_nonfinite(net->be, net->nweights, net->g, MX_F32);
}

size_t mx_net_weight_bytes(const mx_net *net)
{
    const size_t n = net->nweights ? net->nweights : 1; /* as amp_weights allocated them */
    return net->ps->bytes + (net->amp == MX_AMP_OFF ? 0 : n * (sizeof(float) + mx_dtype_size(mx_amp_dtype(net->amp))));
}

void mx_net_set_batch(mx_net *net, const float *x_host, const int32_t *labels_host, int n)
{
    mx_exec_set_batch(net->exec, x_host, labels_host, n);
}

const float *mx_net_forward(mx_net *net, int n, int training) { return mx_exec_forward(net->exec, NULL, n, training); }

double mx_net_loss(mx_net *net, int n, float grad_scale, int *correct)
{
    return mx_exec_loss(net->exec, NULL, n, grad_scale, correct);
}

void mx_net_backward(mx_net *net, int n, mx_grad_ready_fn ready, void *user)
{
    mx_exec_backward(net->exec, n, NULL, NULL, ready, user);
}

void mx_net_zero_grad(mx_net *net) { mx_params_zero_grad(net->ps); }

double mx_net_flops(const mx_net *net) { return mx_params_flops(net->ps, 0, net->nlayers); }

int mx_net_evaluate(mx_net *net, const float *x_host, const int32_t *labels_host, int n, double *loss_sum,
                    int *correct)
{
    const size_t per = mx_shape_size(net->in), L = (size_t)net->label_len;
    *loss_sum = 0;
    *correct = 0;
    /* The loss kernel would only count such a sample wrong (see xent_row); a caller that
     * checks the return learns that its data, not the model, is at fault. */
    for (size_t i = 0; i < (size_t)n * L; i++)
        if (labels_host[i] < 0 || labels_host[i] >= net->nclasses)
            return mx_error(MX_EFORMAT, "evaluation: label %d of sample %zu is out of range; accepted 0..%d",
                            (int)labels_host[i], i / L, net->nclasses - 1);
    for (int s = 0; s < n; s += net->max_batch) {
        int nb = n - s < net->max_batch ? n - s : net->max_batch, hits = 0;
        mx_net_set_batch(net, x_host + (size_t)s * per, labels_host + (size_t)s * L, nb);
        const float *logits = mx_net_forward(net, nb, 0);
        /* a sample's loss is the mean over its rows, as in training (mx_exec_loss) */
        *loss_sum += net->be->ops->softmax_eval(net->be, nb * (int)L, net->nclasses, &hits, logits, net->labels) /
                     (double)L;
        *correct += hits;
    }
    /* A failed op leaves garbage in the sums, not a status: the backend's sticky error. */
    return net->be->ops->sync(net->be);
}
