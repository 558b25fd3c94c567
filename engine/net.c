/* Network construction (two phases: layers register their parameters, then one buffer is
 * carved for all of them), forward/backward over the layer list, and initialisation. */
#include "net.h"
#include "rng.h"
#include "status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mx_net_allocs {
    void **dev; /* backend buffers */
    int ndev, capdev;
    void **host; /* layer state */
    int nhost, caphost;
};

struct mx_net_builder {
    mx_net *net;
    int top_layer;
    int cap;
    float ***w_ptrs, ***g_ptrs; /* where each parameter's pointers go once carved */
    int failed;
};

static int push_ptr(void ***list, int *n, int *cap, void *p)
{
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 32;
        void **grown = realloc(*list, sizeof(void *) * nc);
        if (!grown) return MX_ENOMEM;
        *list = grown;
        *cap = nc;
    }
    (*list)[(*n)++] = p;
    return MX_OK;
}

static void *host_calloc(mx_net *net, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (p && push_ptr(&net->allocs->host, &net->allocs->nhost, &net->allocs->caphost, p) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void *dev_alloc(mx_net *net, size_t bytes)
{
    void *p = net->be->ops->alloc(net->be, bytes);
    if (p && push_ptr(&net->allocs->dev, &net->allocs->ndev, &net->allocs->capdev, p) < 0) {
        net->be->ops->free(net->be, p);
        return NULL;
    }
    return p;
}

/* ---- builder API used by layer setup */

int mx_builder_param(mx_net_builder *b, const char *name, size_t count, mx_init_kind init, int fan_in,
                     int fan_out, int decay, float **w, float **g)
{
    mx_net *net = b->net;
    if (net->nparams == b->cap) {
        int nc = b->cap ? 2 * b->cap : 32;
        mx_param *p = realloc(net->params, sizeof *p * nc);
        float ***wp = realloc(b->w_ptrs, sizeof *wp * nc);
        float ***gp = wp ? realloc(b->g_ptrs, sizeof *gp * nc) : NULL;
        if (p) net->params = p;
        if (wp) b->w_ptrs = wp;
        if (gp) b->g_ptrs = gp;
        if (!p || !wp || !gp) return mx_error(MX_ENOMEM, "out of memory registering parameter '%s'", name);
        b->cap = nc;
    }
    mx_param *p = &net->params[net->nparams];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%d.%s", b->top_layer, name);
    p->offset = net->nweights;
    p->count = count;
    p->init = init;
    p->fan_in = fan_in;
    p->fan_out = fan_out;
    p->decay = decay;
    p->layer = b->top_layer;
    b->w_ptrs[net->nparams] = w;
    b->g_ptrs[net->nparams] = g;
    /* Keep every tensor 16-float aligned so vector kernels and shards start on a line. */
    net->nweights += (count + 15) / 16 * 16;
    net->nparams++;
    return MX_OK;
}

void *mx_builder_buffer(mx_net_builder *b, size_t bytes)
{
    void *p = dev_alloc(b->net, bytes);
    if (!p) b->failed = 1;
    return p;
}

int mx_builder_max_batch(const mx_net_builder *b) { return b->net->max_batch; }
mx_backend *mx_builder_backend(const mx_net_builder *b) { return b->net->be; }

int mx_builder_child(mx_net_builder *b, mx_layer *l, const mx_layer_spec *spec, mx_shape in)
{
    l->ops = mx_layer_find(spec->kind);
    if (!l->ops) return mx_error(MX_EINVAL, "unknown layer kind '%s' (known: %s)", spec->kind, mx_layer_kinds());
    l->in = in;
    l->priv = host_calloc(b->net, l->ops->priv_size);
    if (!l->priv) return mx_error(MX_ENOMEM, "out of memory for layer '%s'", spec->kind);
    l->param_first = b->net->nparams;
    MX_TRY(l->ops->setup(l, spec, b));
    if (b->failed) return mx_error(MX_ENOMEM, "out of device memory setting up layer '%s'", spec->kind);
    l->param_count = b->net->nparams - l->param_first;
    if (l->out.c < 1 || l->out.h < 1 || l->out.w < 1)
        return mx_error(MX_EINVAL, "layer '%s' on input %dx%dx%d gives an empty output %dx%dx%d", spec->kind, in.c,
                        in.h, in.w, l->out.c, l->out.h, l->out.w);
    return MX_OK;
}

/* ---- construction */

static int build_layers(mx_net *net, mx_net_builder *b, const mx_layer_spec *specs, int nspecs)
{
    mx_shape shape = net->in;
    size_t widest = mx_shape_size(shape);
    for (int i = 0; i < nspecs; i++) {
        b->top_layer = i;
        mx_layer *l = &net->layers[i];
        int rc = mx_builder_child(b, l, &specs[i], shape);
        if (rc < 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", mx_last_error());
            return mx_error(rc, "layer %d (%s): %s", i, specs[i].kind, why);
        }
        net->act[i] = dev_alloc(net, sizeof(float) * net->max_batch * mx_shape_size(l->out));
        if (!net->act[i])
            return mx_error(MX_ENOMEM, "out of device memory for the activations of layer %d (%s): %.2f GiB for up to "
                            "%d samples a step; use a smaller batch or more devices", i, specs[i].kind,
                            (double)sizeof(float) * net->max_batch * mx_shape_size(l->out) / (1 << 30),
                            net->max_batch);
        shape = l->out;
        if (mx_shape_size(shape) > widest) widest = mx_shape_size(shape);
    }
    if (shape.h != 1 || shape.w != 1)
        return mx_error(MX_EINVAL, "the last layer must give a vector of class scores, not %dx%dx%d", shape.c,
                        shape.h, shape.w);
    net->nclasses = shape.c;
    for (int k = 0; k < 2; k++)
        if (!(net->dbuf[k] = dev_alloc(net, sizeof(float) * net->max_batch * widest)))
            return mx_error(MX_ENOMEM, "out of device memory for activation gradients: %.2f GiB for up to %d samples a step",
                            (double)sizeof(float) * net->max_batch * widest / (1 << 30), net->max_batch);
    return MX_OK;
}

static int carve_params(mx_net *net, mx_net_builder *b)
{
    net->w = dev_alloc(net, sizeof(float) * (net->nweights ? net->nweights : 1));
    net->g = dev_alloc(net, sizeof(float) * (net->nweights ? net->nweights : 1));
    net->x = dev_alloc(net, sizeof(float) * net->max_batch * mx_shape_size(net->in));
    net->labels = dev_alloc(net, (size_t)net->max_batch);
    if (!net->w || !net->g || !net->x || !net->labels)
        return mx_error(MX_ENOMEM, "out of device memory for %zu parameters", net->nweights);
    for (int i = 0; i < net->nparams; i++) {
        *b->w_ptrs[i] = net->w + net->params[i].offset;
        *b->g_ptrs[i] = net->g + net->params[i].offset;
    }
    return MX_OK;
}

int mx_net_create(mx_net **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in, int max_batch)
{
    *out = NULL;
    if (nspecs < 1) return mx_error(MX_EINVAL, "a network needs at least one layer");
    if (max_batch < 1) return mx_error(MX_EINVAL, "batch size %d: must be at least 1", max_batch);
    mx_net *net = calloc(1, sizeof *net);
    mx_net_builder b = {.net = net};
    if (!net || !(net->allocs = calloc(1, sizeof *net->allocs)) ||
        !(net->layers = calloc(nspecs, sizeof *net->layers)) || !(net->act = calloc(nspecs, sizeof *net->act))) {
        mx_net_destroy(net);
        return mx_error(MX_ENOMEM, "out of memory creating a network");
    }
    net->be = be;
    net->in = in;
    net->max_batch = max_batch;
    net->nlayers = nspecs;
    int rc = build_layers(net, &b, specs, nspecs);
    if (rc == MX_OK) rc = carve_params(net, &b);
    free(b.w_ptrs);
    free(b.g_ptrs);
    if (rc < 0) {
        mx_net_destroy(net);
        return rc;
    }
    *out = net;
    return MX_OK;
}

void mx_net_destroy(mx_net *net)
{
    if (!net) return;
    if (net->allocs) {
        for (int i = 0; i < net->allocs->ndev; i++) net->be->ops->free(net->be, net->allocs->dev[i]);
        for (int i = 0; i < net->allocs->nhost; i++) free(net->allocs->host[i]);
        free(net->allocs->dev);
        free(net->allocs->host);
        free(net->allocs);
    }
    free(net->layers);
    free(net->act);
    free(net->params);
    free(net);
}

int mx_net_init_params(mx_net *net, uint64_t seed, mx_weight_init kind, float sigma)
{
    float *host = calloc(net->nweights ? net->nweights : 1, sizeof(float));
    if (!host) return mx_error(MX_ENOMEM, "out of memory initialising %zu parameters", net->nweights);
    for (int i = 0; i < net->nparams; i++) {
        const mx_param *p = &net->params[i];
        float *v = host + p->offset;
        mx_rng rng;
        mx_rng_seed(&rng, seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i + 1);
        if (p->init == MX_INIT_ONE) {
            for (size_t j = 0; j < p->count; j++) v[j] = 1.0f;
        } else if (p->init == MX_INIT_WEIGHT && kind == MX_WEIGHT_INIT_XAVIER) {
            const double bound = sqrt(6.0 / (p->fan_in + p->fan_out));
            for (size_t j = 0; j < p->count; j++) v[j] = (float)((2 * mx_rng_uniform(&rng) - 1) * bound);
        } else if (p->init == MX_INIT_WEIGHT) {
            for (size_t j = 0; j < p->count; j++) v[j] = (float)(mx_rng_normal(&rng) * sigma);
        }
    }
    net->be->ops->copy(net->be, net->w, host, sizeof(float) * net->nweights, MX_COPY_H2D);
    free(host);
    return MX_OK;
}

/* ---- passes */

void mx_net_set_batch(mx_net *net, const float *x_host, const uint8_t *labels_host, int n)
{
    net->be->ops->copy(net->be, net->x, x_host, sizeof(float) * n * mx_shape_size(net->in), MX_COPY_H2D);
    if (labels_host) net->be->ops->copy(net->be, net->labels, labels_host, (size_t)n, MX_COPY_H2D);
}

const float *mx_net_forward(mx_net *net, int n, int training)
{
    const float *in = net->x;
    for (int i = 0; i < net->nlayers; i++) {
        mx_layer *l = &net->layers[i];
        l->ops->forward(l, net->be, n, net->act[i], in, training);
        in = net->act[i];
    }
    return in;
}

double mx_net_loss(mx_net *net, int n, float grad_scale, int *correct)
{
    return net->be->ops->softmax_xent(net->be, n, net->nclasses, net->dbuf[0], correct,
                                      net->act[net->nlayers - 1], net->labels, grad_scale);
}

void mx_net_backward(mx_net *net, int n, mx_grad_ready_fn ready, void *user)
{
    int cur = 0; /* the loss left dlogits in dbuf[0] */
    for (int i = net->nlayers - 1; i >= 0; i--) {
        mx_layer *l = &net->layers[i];
        const float *in = i ? net->act[i - 1] : net->x;
        float *din = i ? net->dbuf[1 - cur] : NULL;
        l->ops->backward(l, net->be, n, din, net->dbuf[cur], in, net->act[i]);
        cur = 1 - cur;
        if (ready && l->param_count) ready(user, l->param_first, l->param_count);
    }
}

void mx_net_zero_grad(mx_net *net) { net->be->ops->zero(net->be, net->g, sizeof(float) * net->nweights); }

double mx_net_flops(const mx_net *net)
{
    double f = 0;
    for (int i = 0; i < net->nlayers; i++)
        if (net->layers[i].ops->flops) f += net->layers[i].ops->flops(&net->layers[i]);
    return f;
}

int mx_net_evaluate(mx_net *net, const float *x_host, const uint8_t *labels_host, int n, double *loss_sum,
                    int *correct)
{
    const size_t per = mx_shape_size(net->in);
    *loss_sum = 0;
    *correct = 0;
    /* The loss kernel would only count such a sample wrong (see xent_row); a caller that
     * checks the return learns that its data, not the model, is at fault. */
    for (int i = 0; i < n; i++)
        if (labels_host[i] >= net->nclasses)
            return mx_error(MX_EFORMAT, "evaluation: label %u of sample %d is out of range; accepted 0..%d",
                            (unsigned)labels_host[i], i, net->nclasses - 1);
    for (int s = 0; s < n; s += net->max_batch) {
        int nb = n - s < net->max_batch ? n - s : net->max_batch, hits = 0;
        mx_net_set_batch(net, x_host + (size_t)s * per, labels_host + s, nb);
        const float *logits = mx_net_forward(net, nb, 0);
        *loss_sum += net->be->ops->softmax_eval(net->be, nb, net->nclasses, &hits, logits, net->labels);
        *correct += hits;
    }
    return MX_OK;
}
