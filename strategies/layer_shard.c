/* Shards of whole tensors for the layer strategy (layer_plan.h): which block of the
 * one-device tensor each device's copy of a parameter is, drawn from the whole tensor's
 * stream and put back into the one-device layout. A column-parallel layer holds a row block
 * of its [units][inputs] weight (a fused QKV projection three of them: the q, k and v rows of
 * the device's heads), a row-parallel one a column block, a per-channel layer its channels'
 * values, and a replicated layer the whole tensor. */
#include "layer_plan.h"
#include "base/status.h"

#include <string.h>

/* The features a shard of x splits: a sequence's row width, else the channels. */
static size_t features(const tp_tensor *x) { return (size_t)(x->seq ? x->shape.w : x->shape.c); }

mx_shape mx_tp_local_shape(const mx_tp_plan *p, int t, int d)
{
    const tp_tensor *x = &p->tensors[t];
    mx_shape s = x->shape;
    if (x->layout == TP_SHARD && x->seq)
        s.w = x->bound[d + 1] - x->bound[d];
    else if (x->layout == TP_SHARD)
        s.c = x->bound[d + 1] - x->bound[d];
    return s;
}

size_t mx_tp_local_size(const mx_tp_plan *p, int t, int d) { return mx_shape_size(mx_tp_local_shape(p, t, d)); }

mx_layer_spec mx_tp_shard_spec(const mx_tp_plan *p, const tp_step *s, int d)
{
    mx_layer_spec spec = s->spec;
    const tp_tensor *out = &p->tensors[s->out];
    const int mine = out->bound[d + 1] - out->bound[d];
    if (s->par == TP_COL) spec.units = mine;
    /* the device's heads: its share of the output's features, heads of the same size */
    if (s->par == TP_HEADS) spec.heads = (int)((long)s->spec.heads * mine / (long)features(out));
    return spec;
}

int mx_tp_shard_map(const mx_tp_plan *p, const tp_step *s, int j, int d, size_t count, tp_map *m)
{
    const int w = s->param_first + j;
    const mx_param *whole = &p->whole[w];
    const tp_tensor *in = &p->tensors[s->in], *out = &p->tensors[s->out];
    const size_t units = features(out);
    *m = (tp_map){.whole = w, .groups = 1, .owner = 1, .train = 1};
    switch (s->par) {
    case TP_COL:  /* rows: output channels or units (conv [oc][c*k*k], dense [units][inputs], bias [oc]) */
    case TP_CHAN: /* per-channel tensors (batch norm's gamma and beta) */
        m->groups = s->par == TP_COL && s->groups > 1 ? s->groups : 1;
        m->gstride = units / m->groups;
        m->cols = whole->count / units;
        m->r0 = out->bound[d] / m->groups, m->r1 = out->bound[d + 1] / m->groups;
        m->c0 = 0, m->c1 = m->cols;
        break;
    case TP_ROW: /* dense [units][inputs]: the columns of the device's input features */
        if (j == 0) {
            const size_t per = in->seq ? 1 : mx_shape_size(in->shape) / in->shape.c;
            m->cols = whole->count / units;
            m->r0 = 0, m->r1 = units;
            m->c0 = in->bound[d] * per, m->c1 = in->bound[d + 1] * per;
            break;
        }
        /* the bias: added once, by device 0, to its partial sum */
        m->owner = m->train = d == 0;
        /* fall through */
    case TP_REPL:
    case TP_HEADS:
        m->cols = 1, m->r0 = 0, m->r1 = whole->count, m->c0 = 0, m->c1 = 1;
        if (s->par != TP_ROW) m->owner = d == 0, m->replica = 1;
        break;
    }
    const size_t block = (m->r1 - m->r0) * (m->c1 - m->c0);
    if (m->groups * block != count || m->cols * (whole->count / m->cols) != whole->count ||
        m->r1 + (m->groups - 1) * m->gstride > whole->count / m->cols)
        return mx_error(MX_EUNSUPPORTED, "layer strategy: shard of '%s' on device %d has %zu elements, its block "
                        "%zu (internal)", whole->name, d, count, m->groups * block);
    return MX_OK;
}

int mx_tp_shard_init(const mx_tp_plan *p, const tp_map *m, uint64_t seed, mx_weight_init init, float *out)
{
    const size_t block = (m->r1 - m->r0) * (m->c1 - m->c0);
    for (int g = 0; g < m->groups; g++)
        MX_TRY(mx_param_init_block(&p->whole[m->whole], m->whole, seed, init, p->init_sigma, m->cols,
                                   m->r0 + g * m->gstride, m->r1 + g * m->gstride, m->c0, m->c1, out + g * block));
    return MX_OK;
}

void mx_tp_shard_put(const tp_map *m, const float *shard, float *whole)
{
    const size_t w = m->c1 - m->c0, rows = m->r1 - m->r0;
    for (int g = 0; g < m->groups; g++)
        for (size_t r = 0; r < rows; r++)
            memcpy(whole + (m->r0 + g * m->gstride + r) * m->cols + m->c0, shard + (g * rows + r) * w,
                   sizeof(float) * w);
}

int mx_tp_shard_same(const tp_map *m, const float *shard, const float *whole)
{
    const size_t w = m->c1 - m->c0, rows = m->r1 - m->r0;
    for (int g = 0; g < m->groups; g++)
        for (size_t r = 0; r < rows; r++)
            if (memcmp(whole + (m->r0 + g * m->gstride + r) * m->cols + m->c0, shard + (g * rows + r) * w,
                       sizeof(float) * w) != 0)
                return 0;
    return 1;
}
