/* Parameter sets: two-phase construction (layers register their tensors, then one buffer
 * is carved for the held ones and the replicas of tied tensors held elsewhere) and
 * split-independent initialisation. */
#include "params.h"
#include "rng.h"
#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mx_allocs {
    void **dev; /* backend buffers (model state: batch-norm running statistics) */
    int ndev, capdev;
    void **host; /* layer setup (priv) */
    int nhost, caphost;
};

/* The builder a layer's setup is handed: the face it sees (engine/layers/layer.h) first. */
typedef struct {
    mx_net_builder face;
    mx_params *ps;
    int top_layer;
    int nested;      /* nested layers set up so far under top_layer: names them apart */
    char prefix[24]; /* of the tensor names of the layer being set up */
    int cap;
    float ***w_ptrs, ***g_ptrs; /* where each tensor's pointers go once carved */
    /* Tied uses (a language model's head reading the token embedding): the tensor's index,
     * the top-level layer that uses it and where its pointers go once carved. */
    struct tie {
        int param, layer;
        float **w, **g;
    } *ties;
    int nties, capties;
    int failed;
} set_builder;

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

static void *host_calloc(mx_params *ps, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (p && push_ptr(&ps->allocs->host, &ps->allocs->nhost, &ps->allocs->caphost, p) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void *dev_alloc(mx_params *ps, size_t bytes)
{
    void *p = ps->be->ops->alloc(ps->be, bytes);
    if (p && push_ptr(&ps->allocs->dev, &ps->allocs->ndev, &ps->allocs->capdev, p) < 0) {
        ps->be->ops->free(ps->be, p);
        return NULL;
    }
    if (p) ps->bytes += bytes;
    return p;
}

/* ---- the builder's ops, called by layer setup */

static set_builder *of(mx_net_builder *face) { return (set_builder *)face; }

static int builder_param(mx_net_builder *face, const char *name, size_t count, mx_init_kind init, int fan_in,
                         int fan_out, int decay, float **w, float **g)
{
    set_builder *b = of(face);
    mx_params *ps = b->ps;
    if (ps->nparams == b->cap) {
        int nc = b->cap ? 2 * b->cap : 32;
        mx_param *p = realloc(ps->params, sizeof *p * nc);
        float ***wp = realloc(b->w_ptrs, sizeof *wp * nc);
        float ***gp = wp ? realloc(b->g_ptrs, sizeof *gp * nc) : NULL;
        if (p) ps->params = p;
        if (wp) b->w_ptrs = wp;
        if (gp) b->g_ptrs = gp;
        if (!p || !wp || !gp) return mx_error(MX_ENOMEM, "out of memory registering parameter '%s'", name);
        b->cap = nc;
    }
    mx_param *p = &ps->params[ps->nparams];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s%s", b->prefix, name);
    p->count = count;
    p->dtype = MX_F32; /* master weights and gradients stay f32; AMP adds a half copy */
    p->init = init;
    p->fan_in = fan_in;
    p->fan_out = fan_out;
    p->decay = decay;
    p->layer = b->top_layer;
    b->w_ptrs[ps->nparams] = w;
    b->g_ptrs[ps->nparams] = g;
    ps->nparams++;
    return MX_OK;
}

/* The first tensor registered as `name` (the name its layer passed, under any prefix). */
static int find_param(const mx_params *ps, const char *name)
{
    const size_t n = strlen(name);
    for (int i = 0; i < ps->nparams; i++) {
        const char *full = ps->params[i].name;
        const size_t len = strlen(full);
        if (len > n && full[len - n - 1] == '.' && strcmp(full + len - n, name) == 0) return i;
    }
    return -1;
}

static int builder_tied(mx_net_builder *face, const char *name, size_t count, float **w, float **g)
{
    set_builder *b = of(face);
    const int i = find_param(b->ps, name);
    if (i < 0) return mx_error(MX_EINVAL, "no earlier layer registered tensor '%s' to tie to", name);
    if (b->ps->params[i].count != count)
        return mx_error(MX_EINVAL, "tensor '%s' holds %zu values; tying it as %zu", name, b->ps->params[i].count,
                        count);
    if (b->nties == b->capties) {
        const int nc = b->capties ? 2 * b->capties : 4;
        struct tie *grown = realloc(b->ties, sizeof *grown * nc);
        if (!grown) return mx_error(MX_ENOMEM, "out of memory tying tensor '%s'", name);
        b->ties = grown;
        b->capties = nc;
    }
    b->ties[b->nties++] = (struct tie){i, b->top_layer, w, g};
    return MX_OK;
}

static void *builder_buffer(mx_net_builder *face, size_t bytes)
{
    set_builder *b = of(face);
    void *p = dev_alloc(b->ps, bytes);
    if (!p) b->failed = 1;
    return p;
}

static mx_backend *builder_backend(const mx_net_builder *face) { return ((const set_builder *)face)->ps->be; }

static int setup_layer(set_builder *b, mx_layer *l, const mx_layer_spec *spec, mx_shape in)
{
    l->ops = mx_layer_find(spec->kind);
    if (!l->ops) return mx_error(MX_EINVAL, "unknown layer kind '%s' (known: %s)", spec->kind, mx_layer_kinds());
    l->in = in;
    l->priv = host_calloc(b->ps, l->ops->priv_size);
    if (!l->priv) return mx_error(MX_ENOMEM, "out of memory for layer '%s'", spec->kind);
    l->param_first = b->ps->nparams;
    MX_TRY(l->ops->setup(l, spec, &b->face));
    if (b->failed) return mx_error(MX_ENOMEM, "out of device memory setting up layer '%s'", spec->kind);
    l->param_count = b->ps->nparams - l->param_first;
    if (l->out.c < 1 || l->out.h < 1 || l->out.w < 1)
        return mx_error(MX_EINVAL, "layer '%s' on input %dx%dx%d gives an empty output %dx%dx%d", spec->kind, in.c,
                        in.h, in.w, l->out.c, l->out.h, l->out.w);
    return MX_OK;
}

static int builder_child(mx_net_builder *face, mx_layer *l, const mx_layer_spec *spec, mx_shape in)
{
    set_builder *b = of(face);
    /* Nested tensors are named by their order under the top-level layer, so that the
     * names stay unique (a residual block holds three conv.w). */
    char outer[sizeof b->prefix];
    memcpy(outer, b->prefix, sizeof outer);
    snprintf(b->prefix, sizeof b->prefix, "%d.%d.", b->top_layer, b->nested++);
    int rc = setup_layer(b, l, spec, in);
    memcpy(b->prefix, outer, sizeof outer);
    return rc;
}

static const mx_builder_ops builder_ops = {builder_param, builder_buffer, builder_backend, builder_child,
                                           builder_tied};

/* ---- construction */

static int build_layers(mx_params *ps, set_builder *b, const mx_layer_spec *specs)
{
    mx_shape shape = ps->in;
    for (int i = 0; i < ps->nlayers; i++) {
        b->top_layer = i;
        b->nested = 0;
        snprintf(b->prefix, sizeof b->prefix, "%d.", i);
        int rc = setup_layer(b, &ps->layers[i], &specs[i], shape);
        if (rc < 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", mx_last_error());
            return mx_error(rc, "layer %d (%s): %s", i, specs[i].kind, why);
        }
        shape = ps->layers[i].out;
    }
    return MX_OK;
}

static int is_replica(const mx_params *ps, int param)
{
    for (int j = 0; j < ps->nreplicas; j++)
        if (ps->replicas[j] == param) return 1;
    return 0;
}

/* The tensors that held layers tie but the set does not hold, each once, ascending (the
 * order every set and the strategy's exchange of their gradients agree on). */
static int list_replicas(mx_params *ps, const set_builder *b)
{
    if (!(ps->replicas = host_calloc(ps, sizeof(int) * (size_t)(b->nties ? b->nties : 1))))
        return mx_error(MX_ENOMEM, "out of memory listing the replicas of tied tensors");
    for (int k = 0; k < b->nties; k++) {
        const struct tie *t = &b->ties[k];
        const int user_held = t->layer >= ps->layer_lo && t->layer < ps->layer_hi;
        const int held = t->param >= ps->param_lo && t->param < ps->param_hi;
        if (!user_held || held || is_replica(ps, t->param)) continue;
        int j = ps->nreplicas++;
        for (; j > 0 && ps->replicas[j - 1] > t->param; j--) ps->replicas[j] = ps->replicas[j - 1];
        ps->replicas[j] = t->param;
    }
    return MX_OK;
}

static int carve_params(mx_params *ps, set_builder *b)
{
    ps->param_lo = ps->layers[ps->layer_lo].param_first;
    ps->param_hi = ps->layer_hi < ps->nlayers ? ps->layers[ps->layer_hi].param_first : ps->nparams;
    for (int i = ps->param_lo; i < ps->param_hi; i++) {
        ps->params[i].offset = ps->nweights;
        /* Keep every tensor 16-float aligned so vector kernels and shards start on a line. */
        ps->nweights += (ps->params[i].count + 15) / 16 * 16;
    }
    ps->nheld = ps->nweights;
    /* The replicas after the held tensors, so that the held ones keep the one-device layout's
     * order and a pipeline's stages still read as consecutive slices of it. */
    MX_TRY(list_replicas(ps, b));
    for (int j = 0; j < ps->nreplicas; j++) {
        mx_param *p = &ps->params[ps->replicas[j]];
        p->offset = ps->nweights;
        ps->nweights += (p->count + 15) / 16 * 16;
    }
    ps->w = dev_alloc(ps, sizeof(float) * (ps->nweights ? ps->nweights : 1));
    ps->g = dev_alloc(ps, sizeof(float) * (ps->nweights ? ps->nweights : 1));
    if (!ps->w || !ps->g)
        return mx_error(MX_ENOMEM, "out of device memory for %zu parameters (%.2f GiB with their gradients)",
                        ps->nweights, 2.0 * sizeof(float) * ps->nweights / (1 << 30));
    for (int i = ps->param_lo; i < ps->param_hi; i++) {
        *b->w_ptrs[i] = ps->w + ps->params[i].offset;
        *b->g_ptrs[i] = ps->g + ps->params[i].offset;
    }
    /* A tying layer reads the held tensor (one copy, whose gradient both users add to) or,
     * where the set does not hold it, the set's replica: held or replica, the offset is
     * this set's. */
    for (int k = 0; k < b->nties; k++) {
        const struct tie *t = &b->ties[k];
        if (t->layer < ps->layer_lo || t->layer >= ps->layer_hi) continue;
        *t->w = ps->w + ps->params[t->param].offset;
        *t->g = ps->g + ps->params[t->param].offset;
    }
    return MX_OK;
}

int mx_params_create(mx_params **out, mx_backend *be, const mx_layer_spec *specs, int nspecs, mx_shape in,
                     int layer_lo, int layer_hi)
{
    *out = NULL;
    if (nspecs < 1) return mx_error(MX_EINVAL, "a network needs at least one layer");
    if (layer_lo < 0 || layer_hi > nspecs || layer_lo >= layer_hi)
        return mx_error(MX_EINVAL, "held layers [%d, %d): need 0 <= first < last <= %d (the layer count)", layer_lo,
                        layer_hi, nspecs);
    mx_params *ps = calloc(1, sizeof *ps);
    set_builder b = {.face = {&builder_ops}, .ps = ps};
    if (!ps || !(ps->allocs = calloc(1, sizeof *ps->allocs)) || !(ps->layers = calloc(nspecs, sizeof *ps->layers))) {
        mx_params_destroy(ps);
        return mx_error(MX_ENOMEM, "out of memory creating a parameter set");
    }
    ps->be = be;
    ps->in = in;
    ps->nlayers = nspecs;
    ps->layer_lo = layer_lo;
    ps->layer_hi = layer_hi;
    int rc = build_layers(ps, &b, specs);
    if (rc == MX_OK) rc = carve_params(ps, &b);
    free(b.w_ptrs);
    free(b.g_ptrs);
    free(b.ties);
    if (rc < 0) {
        mx_params_destroy(ps);
        return rc;
    }
    *out = ps;
    return MX_OK;
}

void mx_params_destroy(mx_params *ps)
{
    if (!ps) return;
    if (ps->allocs) {
        for (int i = 0; i < ps->allocs->ndev; i++) ps->be->ops->free(ps->be, ps->allocs->dev[i]);
        for (int i = 0; i < ps->allocs->nhost; i++) free(ps->allocs->host[i]);
        free(ps->allocs->dev);
        free(ps->allocs->host);
        free(ps->allocs);
    }
    free(ps->layers);
    free(ps->params);
    free(ps);
}

void mx_params_zero_grad(mx_params *ps) { ps->be->ops->zero(ps->be, ps->g, sizeof(float) * ps->nweights); }

double mx_params_flops(const mx_params *ps, int first, int last)
{
    double f = 0;
    for (int i = first; i < last; i++)
        if (ps->layers[i].ops->flops) f += ps->layers[i].ops->flops(&ps->layers[i]);
    return f;
}

/* ---- initialisation: one stream per tensor, walked from its start */

typedef struct {
    mx_rng rng;
    int draws;    /* rng words per element: 0 (constant), 1 (uniform), 2 (Box-Muller) */
    float value;  /* constant inits */
    double scale; /* xavier bound or normal sigma */
} init_stream;

static void stream_open(init_stream *s, const mx_param *p, int index, uint64_t seed, mx_weight_init kind,
                        float sigma)
{
    /* Seeded by the tensor's index in the whole model only: the same stream in every
     * shard of the tensor, and the values mxbench has always drawn. */
    mx_rng_seed(&s->rng, seed * 0x9e3779b97f4a7c15ULL + (uint64_t)index + 1);
    s->draws = 0;
    s->value = p->init == MX_INIT_ONE ? 1.0f : 0.0f;
    if (p->init == MX_INIT_WEIGHT && kind == MX_WEIGHT_INIT_XAVIER) {
        s->draws = 1;
        s->scale = sqrt(6.0 / (p->fan_in + p->fan_out));
    } else if (p->init == MX_INIT_WEIGHT) {
        s->draws = 2;
        s->scale = sigma;
    }
}

static void stream_skip(init_stream *s, size_t n)
{
    for (size_t j = 0; j < n * (size_t)s->draws; j++) mx_rng_next(&s->rng);
}

static void stream_take(init_stream *s, size_t n, float *out)
{
    if (s->draws == 1)
        for (size_t j = 0; j < n; j++) out[j] = (float)((2 * mx_rng_uniform(&s->rng) - 1) * s->scale);
    else if (s->draws == 2)
        for (size_t j = 0; j < n; j++) out[j] = (float)(mx_rng_normal(&s->rng) * s->scale);
    else
        for (size_t j = 0; j < n; j++) out[j] = s->value;
}

int mx_param_init_slice(const mx_param *p, int index, uint64_t seed, mx_weight_init kind, float sigma, size_t lo,
                        size_t hi, float *out)
{
    if (lo > hi || hi > p->count)
        return mx_error(MX_EINVAL, "initialising elements [%zu, %zu) of '%s': need lo <= hi <= %zu (its size)", lo,
                        hi, p->name, p->count);
    init_stream s;
    stream_open(&s, p, index, seed, kind, sigma);
    stream_skip(&s, lo);
    stream_take(&s, hi - lo, out);
    return MX_OK;
}

int mx_param_init_block(const mx_param *p, int index, uint64_t seed, mx_weight_init kind, float sigma,
                        size_t cols, size_t r0, size_t r1, size_t c0, size_t c1, float *out)
{
    if (cols < 1 || p->count % cols)
        return mx_error(MX_EINVAL, "initialising '%s' as rows of %zu columns: its size %zu is not a multiple",
                        p->name, cols, p->count);
    const size_t rows = p->count / cols;
    if (r0 > r1 || r1 > rows || c0 > c1 || c1 > cols)
        return mx_error(MX_EINVAL, "initialising rows [%zu, %zu) x columns [%zu, %zu) of '%s' (%zu x %zu): "
                        "a range is reversed or out of bounds", r0, r1, c0, c1, p->name, rows, cols);
    init_stream s;
    stream_open(&s, p, index, seed, kind, sigma);
    stream_skip(&s, r0 * cols);
    for (size_t r = r0; r < r1; r++, out += c1 - c0) {
        stream_skip(&s, c0);
        stream_take(&s, c1 - c0, out);
        stream_skip(&s, cols - c1);
    }
    return MX_OK;
}

int mx_params_init(mx_params *ps, uint64_t seed, mx_weight_init kind, float sigma)
{
    float *host = calloc(ps->nweights ? ps->nweights : 1, sizeof(float));
    if (!host) return mx_error(MX_ENOMEM, "out of memory initialising %zu parameters", ps->nweights);
    for (int i = ps->param_lo; i < ps->param_hi; i++) {
        const mx_param *p = &ps->params[i];
        mx_param_init_slice(p, i, seed, kind, sigma, 0, p->count, host + p->offset);
    }
    /* a replica from its tensor's own stream: the owner's values, bit for bit */
    for (int j = 0; j < ps->nreplicas; j++) {
        const int i = ps->replicas[j];
        mx_param_init_slice(&ps->params[i], i, seed, kind, sigma, 0, ps->params[i].count, host + ps->params[i].offset);
    }
    ps->be->ops->copy(ps->be, ps->w, host, sizeof(float) * ps->nweights, MX_COPY_H2D);
    free(host);
    return MX_OK;
}
