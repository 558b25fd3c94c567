/* The kvstore verbs on their own, for every mode: init/push/pull semantics (the summed
 * gradient reaches the updater, every device pulls the same result), priorities among
 * ready keys, a key pushed twice before a pull, and bad keys or shapes rejected. */
#include "check.h"
#include "engine/status.h"
#include "strategies/kvstore.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NKEYS 3
static const mx_kv_key keys[NKEYS] = {{0, 5}, {16, 100}, {128, 1000}};
#define TOTAL 1128

typedef struct {
    pthread_mutex_t lock;
    int order[64], n;
    int slow_key; /* the updater sleeps on this key, so others queue up behind it */
} trace;

/* w -= g over the shard, and note which key ran (once per key: the first shard). */
static void minus_updater(void *user, mx_backend *be, int key, size_t lo, size_t hi, float *w, float *mom,
                          const float *g)
{
    trace *t = user;
    if (key == t->slow_key) usleep(100 * 1000);
    for (size_t i = lo; i < hi; i++) w[i] -= g[i];
    pthread_mutex_lock(&t->lock);
    if (lo == 0 && t->n < 64) t->order[t->n++] = key;
    pthread_mutex_unlock(&t->lock);
}

typedef struct {
    int ndev;
    mx_backend *be[4];
    float *w[4], *g[4];
    mx_kvstore *kv;
    trace tr;
} rig;

static int rig_open(rig *r, const char *mode, int ndev)
{
    memset(r, 0, sizeof *r);
    r->ndev = ndev;
    pthread_mutex_init(&r->tr.lock, NULL);
    r->tr.slow_key = -1;
    for (int d = 0; d < ndev; d++) {
        mx_backend_create(&r->be[d], "cpu", d, 1);
        r->w[d] = r->be[d]->ops->alloc(r->be[d], sizeof(float) * TOTAL);
        r->g[d] = r->be[d]->ops->alloc(r->be[d], sizeof(float) * TOTAL);
        for (int i = 0; i < TOTAL; i++) r->w[d][i] = (float)i;
    }
    int rc = mx_kv_create(&r->kv, mode, ndev, r->be, r->w, r->g, keys, NKEYS);
    if (rc == MX_OK) {
        mx_kv_set_updater(r->kv, minus_updater, &r->tr);
        rc = mx_kv_init(r->kv, r->w[0]);
    }
    return rc;
}

static void rig_close(rig *r)
{
    mx_kv_destroy(r->kv);
    for (int d = 0; d < r->ndev; d++) {
        r->be[d]->ops->free(r->be[d], r->w[d]);
        r->be[d]->ops->free(r->be[d], r->g[d]);
        mx_backend_destroy(r->be[d]);
    }
}

/* Each device pushes every key; every device then holds w0 - sum of gradients. */
static void check_sum(const char *mode, int ndev)
{
    rig r;
    CHECK(rig_open(&r, mode, ndev) == MX_OK, "%s x%d: %s", mode, ndev, mx_last_error());
    for (int d = 0; d < ndev; d++)
        for (int i = 0; i < TOTAL; i++) r.g[d][i] = (float)(d + 1) * 0.5f;
    for (int d = 0; d < ndev; d++)
        for (int k = NKEYS - 1; k >= 0; k--) CHECK(mx_kv_push(r.kv, k, d, keys[k].count, -k) == MX_OK, "push");
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++) CHECK(mx_kv_pull(r.kv, k, d, keys[k].count) == MX_OK, "pull");
    const float sum = 0.5f * ndev * (ndev + 1) / 2;
    int bad = 0;
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++)
            for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++)
                bad += r.w[d][i] != (float)i - sum;
    CHECK(bad == 0, "%s x%d: %d weights differ from w0 - sum(g)", mode, ndev, bad);
    CHECK(r.kv->stats.bytes > 0 || ndev == 1, "%s x%d: no bytes counted", mode, ndev);
    printf("%s x%d: push/pull sum %s, %.0f bytes moved\n", mode, ndev, bad ? "NOT OK" : "ok", r.kv->stats.bytes);
    rig_close(&r);
}

/* While the one worker of `local` is held on key 0, keys 1 and 2 become ready; the
 * higher priority one must go first whatever the push order. */
static void check_priority(void)
{
    rig r;
    CHECK(rig_open(&r, "local", 1) == MX_OK, "%s", mx_last_error());
    r.tr.slow_key = 0;
    mx_kv_push(r.kv, 0, 0, keys[0].count, 0);
    usleep(20 * 1000); /* the worker is now inside key 0's update */
    mx_kv_push(r.kv, 1, 0, keys[1].count, 5);
    mx_kv_push(r.kv, 2, 0, keys[2].count, 9);
    for (int k = 0; k < NKEYS; k++) mx_kv_pull(r.kv, k, 0, keys[k].count);
    CHECK(r.tr.n == 3 && r.tr.order[0] == 0 && r.tr.order[1] == 2 && r.tr.order[2] == 1,
          "processing order %d %d %d, expected 0 2 1", r.tr.order[0], r.tr.order[1], r.tr.order[2]);
    rig_close(&r);
}

/* MXNet semantics: every push is an update; a second push of a key before the pull
 * waits for the first round, and the pull sees both. */
static void check_push_twice(const char *mode)
{
    rig r;
    CHECK(rig_open(&r, mode, 2) == MX_OK, "%s", mx_last_error());
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < TOTAL; i++) r.g[d][i] = 1.0f;
    for (int round = 0; round < 2; round++)
        for (int d = 0; d < 2; d++) mx_kv_push(r.kv, 1, d, keys[1].count, 0);
    for (int d = 0; d < 2; d++) mx_kv_pull(r.kv, 1, d, keys[1].count);
    int bad = 0;
    for (int d = 0; d < 2; d++)
        for (size_t i = keys[1].offset; i < keys[1].offset + keys[1].count; i++)
            bad += fabsf(r.w[d][i] - ((float)i - 4.0f)) > 0;
    CHECK(bad == 0, "%s: pushed twice: %d weights are not w0 - 2 rounds x 2 devices", mode, bad);
    rig_close(&r);
}

static void check_errors(void)
{
    rig r;
    CHECK(rig_open(&r, "device", 2) == MX_OK, "%s", mx_last_error());
    CHECK(mx_kv_push(r.kv, 1, 0, 99, 0) == MX_EINVAL && strstr(mx_last_error(), "holds 100 values, got 99"),
          "mismatched shape: %s", mx_last_error());
    CHECK(mx_kv_push(r.kv, 7, 0, 5, 0) == MX_EINVAL && strstr(mx_last_error(), "key 7"), "bad key: %s",
          mx_last_error());
    CHECK(mx_kv_pull(r.kv, 0, 3, 5) == MX_EINVAL && strstr(mx_last_error(), "device 3"), "bad device: %s",
          mx_last_error());
    rig_close(&r);
    mx_kvstore *kv;
    CHECK(mx_kv_create(&kv, "nccl", 1, r.be, r.w, r.g, keys, NKEYS) == MX_EINVAL &&
              strstr(mx_last_error(), "'nccl'") && strstr(mx_last_error(), "local|device"),
          "unknown mode: %s", mx_last_error());
}

int main(void)
{
    const char *modes[] = {"local", "device"};
    for (int m = 0; m < 2; m++)
        for (int ndev = 1; ndev <= 4; ndev *= 2) check_sum(modes[m], ndev);
    for (int m = 0; m < 2; m++) check_push_twice(modes[m]);
    check_priority();
    check_errors();
    return check_summary("test_kvstore");
}
