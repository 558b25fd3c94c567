/* Mixed precision leaves token ids alone: a language model's input holds integer ids, which
 * bf16 holds exactly only up to 256 and fp16 up to 2048, so a context whose first layer reads
 * ids (MX_TRAIT_IDS_IN, the embedding) must not round its input the way it rounds an image.
 * Ids 257, 999 and 2049 would round to 256, 1000 (out of range) and 2048; the embedding's
 * gradient must land on the rows of the ids given, and no id may be refused. */
#include "check.h"
#include "engine/core/backends.h"
#include "engine/core/net.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

enum { T = 4, C = 8, V = 2112, N = 2 };

static void check_ids(mx_amp amp)
{
    mx_backend *be = NULL;
    CHECK(mx_backend_create(&be, "cpu", 0, 1) == MX_OK, "cpu backend: %s", mx_last_error());
    if (!be) return;
    const mx_layer_spec specs[] = {{.kind = "embedding", .units = C, .vocab = V},
                                   {.kind = "layernorm"},
                                   {.kind = "lm_head", .vocab = V}};
    mx_net *net = NULL;
    CHECK(mx_net_create_amp(&net, be, specs, 3, (mx_shape){1, 1, T}, N, amp) == MX_OK, "%s net: %s",
          mx_amp_name(amp), mx_last_error());
    if (!net) {
        mx_backend_destroy(be);
        return;
    }
    CHECK(mx_net_init_params(net, 7, MX_WEIGHT_INIT_NORMAL, 0.02f) == MX_OK, "init: %s", mx_last_error());
    const float ids[N * T] = {257, 999, 2049, 3, 999, 257, 1, 2049};
    const int32_t labels[N * T] = {1, 2, 3, 4, 5, 6, 7, 8};
    mx_net_set_batch(net, ids, labels, N);
    mx_net_zero_grad(net);
    mx_net_forward(net, N, 1);
    mx_net_loss(net, N, 1.0f / N, NULL);
    mx_net_backward(net, N, NULL, NULL);
    CHECK(be->ops->sync(be) == MX_OK, "%s: an id was refused: %s", mx_amp_name(amp), mx_last_error());
    /* the token table's gradient rows: those of the ids given carry the embedding's share */
    const mx_param *wte = &net->params[0];
    CHECK(strstr(wte->name, "embedding.wte") != NULL, "first tensor %s", wte->name);
    float *g = malloc(sizeof(float) * wte->count);
    be->ops->copy(be, g, net->g + wte->offset, sizeof(float) * wte->count, MX_COPY_D2H);
    /* rows 256, 998 and 2048, the rounded neighbours, get only the head's share; the head's
     * share is the same for every row of a batch's logits, so compare the embedding rows'
     * magnitude against a row no id names (1000) */
    double given = 0, neighbour = 0;
    static const int rows_given[] = {257, 999, 2049}, rows_near[] = {256, 1000, 2048};
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < C; j++) {
            given += (double)g[rows_given[r] * C + j] * g[rows_given[r] * C + j];
            neighbour += (double)g[rows_near[r] * C + j] * g[rows_near[r] * C + j];
        }
    CHECK(given > 100 * neighbour, "%s: gradient on the ids' rows %.3g, on their rounded neighbours %.3g",
          mx_amp_name(amp), given, neighbour);
    free(g);
    mx_net_destroy(net);
    mx_backend_destroy(be);
}

int main(void)
{
    check_ids(MX_AMP_OFF);
    check_ids(MX_AMP_BF16);
    check_ids(MX_AMP_FP16);
    return check_summary("test_amp_ids");
}
