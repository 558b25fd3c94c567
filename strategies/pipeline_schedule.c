/* The per-stage op lists of GPipe and 1F1B (see pipeline_schedule.h). */
#include "pipeline_schedule.h"
#include "base/status.h"

#include <string.h>

int mx_pp_schedule_parse(const char *name, mx_pp_schedule *out)
{
    if (!name || strcmp(name, "gpipe") == 0) {
        *out = MX_PP_GPIPE;
        return MX_OK;
    }
    if (strcmp(name, "1f1b") == 0) {
        *out = MX_PP_1F1B;
        return MX_OK;
    }
    return mx_error(MX_EINVAL, "pipeline schedule '%s': accepted gpipe|1f1b", name);
}

const char *mx_pp_schedule_name(mx_pp_schedule s) { return s == MX_PP_1F1B ? "1f1b" : "gpipe"; }

int mx_pp_slots(mx_pp_schedule s, int k, int r, int m)
{
    if (s == MX_PP_GPIPE) return m;
    return k - r < m ? k - r : m;
}

typedef struct {
    mx_pp_op *ops;
    int n, k, r;
} builder;

/* Appends an op, leaving out those towards a neighbour the stage does not have. */
static void put(builder *b, mx_pp_kind kind, int micro)
{
    const int first = b->r == 0, last = b->r == b->k - 1;
    if ((first && (kind == MX_PP_RECV_ACT || kind == MX_PP_SEND_GRAD)) ||
        (last && (kind == MX_PP_SEND_ACT || kind == MX_PP_RECV_GRAD)))
        return;
    b->ops[b->n++] = (mx_pp_op){kind, micro};
}

static void forward(builder *b, int i)
{
    put(b, MX_PP_RECV_ACT, i);
    put(b, MX_PP_FORWARD, i);
    put(b, MX_PP_SEND_ACT, i);
}

static void backward(builder *b, int i)
{
    put(b, MX_PP_RECV_GRAD, i);
    put(b, MX_PP_BACKWARD, i);
    put(b, MX_PP_SEND_GRAD, i);
}

int mx_pp_stage_ops(mx_pp_schedule s, int k, int r, int m, mx_pp_op *ops)
{
    builder b = {ops, 0, k, r};
    if (s == MX_PP_GPIPE) {
        /* GPipe: every forward, then every backward (in forward order; see the header). */
        for (int i = 0; i < m; i++) forward(&b, i);
        for (int i = 0; i < m; i++) backward(&b, i);
        return b.n;
    }
    /* 1F1B (PipeDream-Flush, Megatron's non-interleaved schedule): warm-up forwards so that
     * the last stage gets its first micro-batch, then one forward and one backward in turn,
     * then the backwards left. Stage r then holds at most k-r micro-batches. */
    const int warm = k - 1 - r < m ? k - 1 - r : m, steady = m - warm;
    for (int i = 0; i < warm; i++) forward(&b, i);
    if (steady > 0) put(&b, MX_PP_RECV_ACT, warm);
    for (int j = 0; j < steady; j++) {
        put(&b, MX_PP_FORWARD, warm + j);
        /* with r+1, which is between its backward j and its next forward: it receives the
         * activation first (below), so this stage, the lower of the pair, sends first */
        put(&b, MX_PP_SEND_ACT, warm + j);
        put(&b, MX_PP_RECV_GRAD, j);
        put(&b, MX_PP_BACKWARD, j);
        if (j + 1 < steady) {
            /* with r-1, which sends its next activation first: this stage, the upper of
             * the pair, receives first */
            put(&b, MX_PP_RECV_ACT, warm + j + 1);
        }
        put(&b, MX_PP_SEND_GRAD, j);
    }
    for (int j = steady; j < m; j++) backward(&b, j);
    return b.n;
}
