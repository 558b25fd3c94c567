/* The kvstore verbs on their own, for every mode: init/push/pull semantics (the summed
 * gradient reaches the updater, every device pulls the same result), one key order on every
 * member, a key pushed twice before a pull, pull without an updater (the summed gradient),
 * the push hook, and bad keys, shapes or set-ups rejected; device's buckets keep all of
 * that and the bits of each key exchanged alone. */
#include "check.h"
#include "base/status.h"
#include "kvstore/kvstore.h"
#include "engine/core/backends.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NKEYS 3
static const mx_kv_key keys[NKEYS] = {{0, 5, MX_F32}, {16, 100, MX_F32}, {128, 1000, MX_F32}};
#define TOTAL 1128

typedef struct {
    pthread_mutex_t lock;
    int order[4][64], n[4]; /* keys in the order each device's shard was updated */
} trace;

/* w -= g over the shard, and note which key ran on which device (the updater runs once
 * per non-empty shard, on the owning device's backend). */
static void minus_updater(void *user, mx_backend *be, int key, size_t lo, size_t hi, float *w, mx_optim_state st,
                          const float *g)
{
    trace *t = user;
    for (size_t i = lo; i < hi; i++) w[i] -= g[i];
    const int d = be->device >= 0 && be->device < 4 ? be->device : 0;
    pthread_mutex_lock(&t->lock);
    if (t->n[d] < 64) t->order[d][t->n[d]++] = key;
    pthread_mutex_unlock(&t->lock);
}

typedef struct {
    int ndev;
    mx_comm *comm;
    mx_backend *be[4];
    float *w[4], *g[4];
    mx_kvstore *kv;
    trace tr;
} rig;

static double rig_bucket_mb; /* the stores' bucket size (0: each key alone) */

/* A store over a threads comm of ndev members; each device binds its own buffers. With
 * updater 0 the store keeps the default: pull returns the summed gradient. */
static int rig_open_keys(rig *r, const char *mode, int ndev, int updater, const mx_kv_key *table, int nkeys)
{
    memset(r, 0, sizeof *r);
    r->ndev = ndev;
    pthread_mutex_init(&r->tr.lock, NULL);
    for (int d = 0; d < ndev; d++) {
        mx_backend_create(&r->be[d], "cpu", d, 1);
        r->w[d] = r->be[d]->ops->alloc(r->be[d], sizeof(float) * TOTAL);
        r->g[d] = r->be[d]->ops->alloc(r->be[d], sizeof(float) * TOTAL);
        for (int i = 0; i < TOTAL; i++) r->w[d][i] = (float)i;
    }
    int rc = mx_comm_create(&r->comm, "threads", ndev);
    const mx_kv_options opt = {.bucket_mb = rig_bucket_mb};
    if (rc == MX_OK) rc = mx_kv_create(&r->kv, mx_kv_mode_of(mode), r->comm, table, nkeys, &opt);
    for (int d = 0; rc == MX_OK && d < ndev; d++) rc = mx_kv_bind(r->kv, d, r->be[d], r->w[d], r->g[d]);
    if (rc == MX_OK) {
        if (updater) mx_kv_set_updater(r->kv, minus_updater, &r->tr);
        rc = mx_kv_init(r->kv);
    }
    return rc;
}

static int rig_open(rig *r, const char *mode, int ndev) { return rig_open_keys(r, mode, ndev, 1, keys, NKEYS); }

static void rig_close(rig *r)
{
    mx_kv_destroy(r->kv);
    mx_comm_destroy(r->comm);
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
        for (int k = NKEYS - 1; k >= 0; k--) CHECK(mx_kv_push(r.kv, k, d, keys[k].count) == MX_OK, "push");
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++) CHECK(mx_kv_pull(r.kv, k, d, keys[k].count) == MX_OK, "pull");
    const float sum = 0.5f * ndev * (ndev + 1) / 2;
    int bad = 0;
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++)
            for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++)
                bad += r.w[d][i] != (float)i - sum;
    CHECK(bad == 0, "%s x%d: %d weights differ from w0 - sum(g)", mode, ndev, bad);
    const mx_kv_stats st = mx_kv_stats_get(r.kv);
    CHECK(st.bytes > 0 || ndev == 1, "%s x%d: no bytes counted", mode, ndev);
    printf("%s x%d: push/pull sum %s, %.0f bytes moved\n", mode, ndev, bad ? "NOT OK" : "ok", st.bytes);
    rig_close(&r);
}

/* Keys run in the order the devices pushed them (the backward order), not by a priority:
 * a key pushed alone first runs first, then the others in push order. */
static void check_push_order(void)
{
    rig r;
    CHECK(rig_open(&r, "local", 1) == MX_OK, "%s", mx_last_error());
    mx_kv_push(r.kv, 0, 0, keys[0].count);
    usleep(20 * 1000);
    mx_kv_push(r.kv, 2, 0, keys[2].count);
    mx_kv_push(r.kv, 1, 0, keys[1].count);
    for (int k = 0; k < NKEYS; k++) mx_kv_pull(r.kv, k, 0, keys[k].count);
    CHECK(r.tr.n[0] == 3 && r.tr.order[0][0] == 0 && r.tr.order[0][1] == 2 && r.tr.order[0][2] == 1,
          "processing order %d %d %d, expected 0 2 1", r.tr.order[0][0], r.tr.order[0][1], r.tr.order[0][2]);
    rig_close(&r);
}

/* Devices push at once from their own threads, last key first, for several rounds: every
 * member processes the keys in that one order (each device's updater trace is the same). */
#define OKEYS 4
#define ROUNDS 3
static const mx_kv_key order_keys[OKEYS] = {{0, 64, MX_F32}, {64, 64, MX_F32}, {128, 64, MX_F32}, {192, 64, MX_F32}};

typedef struct {
    rig *r;
    int d, bad;
} device_arg;

static void *device_main(void *p)
{
    device_arg *a = p;
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = OKEYS - 1; k >= 0; k--) a->bad += mx_kv_push(a->r->kv, k, a->d, 64) != MX_OK;
        for (int k = 0; k < OKEYS; k++) a->bad += mx_kv_pull(a->r->kv, k, a->d, 64) != MX_OK;
    }
    return NULL;
}

static void check_key_order(const char *mode, int ndev)
{
    rig r;
    CHECK(rig_open_keys(&r, mode, ndev, 1, order_keys, OKEYS) == MX_OK, "%s", mx_last_error());
    pthread_t th[4];
    device_arg a[4];
    for (int d = 0; d < ndev; d++) {
        a[d] = (device_arg){&r, d, 0};
        pthread_create(&th[d], NULL, device_main, &a[d]);
    }
    for (int d = 0; d < ndev; d++) pthread_join(th[d], NULL);
    /* local updates once on the host; device updates each member's shard on its device */
    const int members = strcmp(mode, "device") == 0 ? ndev : 1;
    int bad = 0;
    for (int d = 0; d < ndev; d++) bad += a[d].bad;
    int updates[OKEYS] = {0};
    for (int m = 0; m < members; m++) {
        if (rig_bucket_mb > 0) {
            /* a member updates the keys its shard of each bucket covers: descending in each round */
            int runs = 0;
            for (int i = 0; i < r.tr.n[m]; i++) {
                runs += i == 0 || r.tr.order[m][i] >= r.tr.order[m][i - 1];
                updates[r.tr.order[m][i]]++;
            }
            bad += runs > ROUNDS;
            continue;
        }
        bad += r.tr.n[m] != OKEYS * ROUNDS;
        for (int i = 0; i < r.tr.n[m] && i < OKEYS * ROUNDS; i++) bad += r.tr.order[m][i] != OKEYS - 1 - i % OKEYS;
    }
    for (int k = 0; rig_bucket_mb > 0 && k < OKEYS; k++) bad += updates[k] < ROUNDS;
    CHECK(bad == 0, "%s x%d: keys not processed last key first on every member (device 0: %d %d %d %d ...)", mode, ndev,
          r.tr.order[0][0], r.tr.order[0][1], r.tr.order[0][2], r.tr.order[0][3]);
    rig_close(&r);
}

/* Without an updater pull writes the summed gradient (f32, device order) into each device's
 * gradient buffer and leaves the weights alone, so a trainer can check it and update. */
static void check_no_updater(const char *mode, int ndev)
{
    rig r;
    CHECK(rig_open_keys(&r, mode, ndev, 0, keys, NKEYS) == MX_OK, "%s", mx_last_error());
    for (int d = 0; d < ndev; d++)
        for (int i = 0; i < TOTAL; i++) r.g[d][i] = (float)(d + 1) * 0.3f + (float)i * 1e-3f;
    for (int d = 0; d < ndev; d++)
        for (int k = NKEYS - 1; k >= 0; k--) CHECK(mx_kv_push(r.kv, k, d, keys[k].count) == MX_OK, "push");
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++)
            CHECK(mx_kv_pull(r.kv, k, d, keys[k].count) == MX_OK, "pull: %s", mx_last_error());
    int bad = 0;
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++)
            for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++) {
                float sum = 0;
                for (int e = 0; e < ndev; e++) sum += (float)(e + 1) * 0.3f + (float)i * 1e-3f;
                bad += r.g[d][i] != sum || r.w[d][i] != (float)i;
            }
    CHECK(bad == 0, "%s x%d: %d values are not the summed gradient (or weights moved)", mode, ndev, bad);
    rig_close(&r);
}

typedef struct {
    pthread_mutex_t lock;
    int calls[4][NKEYS];
    double bytes;
    int bad;
    float *g[4];
} hook_log;

/* Sees each push before it enters the reduction: checks what it is handed, counts it,
 * doubles the gradient (as a compressor may rewrite it) and says it sends half the bytes
 * (as fp16 would). */
static int doubling_hook(void *user, int dev, int key, void *data, size_t count, mx_dtype dtype, double *wire_bytes)
{
    hook_log *h = user;
    pthread_mutex_lock(&h->lock);
    h->calls[dev][key]++;
    h->bad += data != h->g[dev] + keys[key].offset || count != keys[key].count || dtype != MX_F32 ||
              *wire_bytes != 4.0 * (double)count;
    for (size_t i = 0; i < count; i++) ((float *)data)[i] *= 2;
    *wire_bytes /= 2;
    h->bytes += *wire_bytes;
    pthread_mutex_unlock(&h->lock);
    return MX_OK;
}

static int failing_hook(void *user, int dev, int key, void *data, size_t count, mx_dtype dtype, double *wire_bytes)
{
    return mx_error(MX_ERUNTIME, "compressor refused key %d", key);
}

static void check_push_hook(const char *mode, int ndev)
{
    rig r;
    CHECK(rig_open(&r, mode, ndev) == MX_OK, "%s", mx_last_error());
    hook_log h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    for (int d = 0; d < ndev; d++) h.g[d] = r.g[d];
    mx_kv_set_push_hook(r.kv, doubling_hook, &h);
    for (int d = 0; d < ndev; d++)
        for (int i = 0; i < TOTAL; i++) r.g[d][i] = 1.0f;
    for (int d = 0; d < ndev; d++)
        for (int k = NKEYS - 1; k >= 0; k--) mx_kv_push(r.kv, k, d, keys[k].count);
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++) mx_kv_pull(r.kv, k, d, keys[k].count);
    int missed = 0, bad = 0;
    for (int d = 0; d < ndev; d++)
        for (int k = 0; k < NKEYS; k++) missed += h.calls[d][k] != 1;
    for (int d = 0; d < ndev; d++)
        for (size_t i = keys[1].offset; i < keys[1].offset + keys[1].count; i++)
            bad += r.w[d][i] != (float)i - 2.0f * ndev;
    const mx_kv_stats st = mx_kv_stats_get(r.kv);
    const double expect = 2.0 * ndev * (5 + 100 + 1000); /* half of 4 bytes per value */
    CHECK(missed == 0 && h.bad == 0, "%s x%d: hook missed %d pushes, %d with wrong arguments", mode, ndev, missed,
          h.bad);
    CHECK(bad == 0, "%s x%d: %d weights do not reflect the hook's doubled gradients", mode, ndev, bad);
    CHECK(st.wire_bytes == expect && h.bytes == expect && st.pushes == ndev * NKEYS,
          "%s x%d: wire bytes %.0f (hook saw %.0f), expected %.0f; %ld pushes", mode, ndev, st.wire_bytes, h.bytes,
          expect, st.pushes);
    mx_kv_set_push_hook(r.kv, failing_hook, NULL);
    CHECK(mx_kv_push(r.kv, 2, 0, keys[2].count) == MX_ERUNTIME && strstr(mx_last_error(), "refused key 2"),
          "a failing hook fails the push: %s", mx_last_error());
    for (int d = 1; d < ndev; d++) mx_kv_push(r.kv, 2, d, keys[2].count);
    CHECK(mx_kv_pull(r.kv, 2, 0, keys[2].count) == MX_ERUNTIME && strstr(mx_last_error(), "refused key 2"),
          "the round completes and its pull reports the hook's failure: %s", mx_last_error());
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
        for (int d = 0; d < 2; d++) mx_kv_push(r.kv, 1, d, keys[1].count);
    for (int d = 0; d < 2; d++) mx_kv_pull(r.kv, 1, d, keys[1].count);
    int bad = 0;
    for (int d = 0; d < 2; d++)
        for (size_t i = keys[1].offset; i < keys[1].offset + keys[1].count; i++)
            bad += fabsf(r.w[d][i] - ((float)i - 4.0f)) > 0;
    CHECK(bad == 0, "%s: pushed twice: %d weights are not w0 - 2 rounds x 2 devices", mode, bad);
    rig_close(&r);
}

/* Buckets (device, bucket_mb > 0) change which calls move the keys, not the sums: random
 * gradients over 2 rounds give the bits of the keys exchanged one by one, with keys in one
 * bucket, in two (0.002 MiB: keys 0 and 1 with the padding between them, key 2 alone) or each
 * alone (a cap below every key). */
static void check_buckets(int ndev)
{
    const double sizes[] = {0, 1, 0.002, 1e-6};
    float *w0 = malloc(sizeof(float) * TOTAL);
    for (int s = 0; s < 4; s++) {
        rig_bucket_mb = sizes[s];
        rig r;
        CHECK(rig_open(&r, "device", ndev) == MX_OK, "%s", mx_last_error());
        for (int round = 0; round < 2; round++) {
            for (int d = 0; d < ndev; d++)
                for (int i = 0; i < TOTAL; i++) r.g[d][i] = sinf((float)(i * (d + 3) + round)) / (float)(d + 1);
            for (int d = 0; d < ndev; d++)
                for (int k = NKEYS - 1; k >= 0; k--) CHECK(mx_kv_push(r.kv, k, d, keys[k].count) == MX_OK, "push");
            for (int d = 0; d < ndev; d++)
                for (int k = 0; k < NKEYS; k++) CHECK(mx_kv_pull(r.kv, k, d, keys[k].count) == MX_OK, "pull");
        }
        int bad = 0;
        for (int d = 0; d < ndev; d++)
            for (int k = 0; k < NKEYS; k++)
                for (size_t i = keys[k].offset; i < keys[k].offset + keys[k].count; i++)
                    bad += s ? r.w[d][i] != w0[i] : r.w[d][i] != r.w[0][i];
        if (!s) memcpy(w0, r.w[0], sizeof(float) * TOTAL);
        CHECK(bad == 0, "device x%d, buckets of %g MiB: %d weights differ from each key alone", ndev, sizes[s], bad);
        rig_close(&r);
    }
    rig_bucket_mb = 0;
    free(w0);
}

static void check_errors(void)
{
    rig r;
    CHECK(rig_open(&r, "device", 2) == MX_OK, "%s", mx_last_error());
    CHECK(mx_kv_push(r.kv, 1, 0, 99) == MX_EINVAL && strstr(mx_last_error(), "holds 100 values, got 99"),
          "mismatched shape: %s", mx_last_error());
    CHECK(mx_kv_push(r.kv, 7, 0, 5) == MX_EINVAL && strstr(mx_last_error(), "key 7"), "bad key: %s",
          mx_last_error());
    CHECK(mx_kv_pull(r.kv, 0, 3, 5) == MX_EINVAL && strstr(mx_last_error(), "device 3"), "bad device: %s",
          mx_last_error());
    mx_kvstore *kv;
    mx_kv_mode mode;
    CHECK(mx_kv_mode_parse("nccl", &mode) == MX_EINVAL &&
              strstr(mx_last_error(), "'nccl'") && strstr(mx_last_error(), "local|device"),
          "unknown mode: %s", mx_last_error());
    CHECK(mx_kv_create(&kv, MX_KV_NONE, r.comm, keys, NKEYS, NULL) == MX_EINVAL &&
              strstr(mx_last_error(), "'none'") && strstr(mx_last_error(), "local|device"),
          "a mode without a store: %s", mx_last_error());
    /* device needs one comm member per device */
    const mx_kv_options three = {.devices = 3};
    CHECK(mx_kv_create(&kv, MX_KV_DEVICE, r.comm, keys, NKEYS, &three) == MX_EINVAL &&
              strstr(mx_last_error(), "3 devices"),
          "comm of 2 for 3 devices: %s", mx_last_error());
    /* every device binds before init; a push from an unbound device is refused */
    CHECK(mx_kv_create(&kv, MX_KV_LOCAL, r.comm, keys, NKEYS, NULL) == MX_OK, "%s", mx_last_error());
    mx_kv_bind(kv, 0, r.be[0], r.w[0], r.g[0]);
    CHECK(mx_kv_init(kv) == MX_EINVAL && strstr(mx_last_error(), "device 1 has not bound"), "init unbound: %s",
          mx_last_error());
    CHECK(mx_kv_push(kv, 0, 1, 5) == MX_EINVAL && strstr(mx_last_error(), "device 1 has not bound"), "push unbound: %s",
          mx_last_error());
    CHECK(mx_kv_bind(kv, 2, r.be[0], r.w[0], r.g[0]) == MX_EINVAL && strstr(mx_last_error(), "device 2"), "bind: %s",
          mx_last_error());
    mx_kv_destroy(kv);
    const mx_kv_key half[1] = {{0, 8, MX_F16}};
    CHECK(mx_kv_create(&kv, MX_KV_DEVICE, r.comm, half, 1, NULL) == MX_EINVAL &&
              strstr(mx_last_error(), "f16"), "f16 key: %s",
          mx_last_error());
    rig_close(&r);
}

int main(void)
{
    const char *modes[] = {"local", "device"};
    for (int m = 0; m < 2; m++)
        for (int ndev = 1; ndev <= 4; ndev *= 2) check_sum(modes[m], ndev);
    for (int m = 0; m < 2; m++) check_push_twice(modes[m]);
    check_push_order();
    for (int m = 0; m < 2; m++)
        for (int ndev = 1; ndev <= 4; ndev *= 2) {
            check_key_order(modes[m], ndev);
            check_no_updater(modes[m], ndev);
            check_push_hook(modes[m], ndev);
        }
    /* buckets: the same semantics, and the same bits as each key alone */
    for (int ndev = 1; ndev <= 4; ndev *= 2) {
        rig_bucket_mb = 0.0005; /* order_keys: two buckets of two keys */
        check_key_order("device", ndev);
        rig_bucket_mb = 0.002;
        check_sum("device", ndev);
        check_no_updater("device", ndev);
        check_push_hook("device", ndev);
    }
    rig_bucket_mb = 0;
    for (int ndev = 2; ndev <= 3; ndev++) check_buckets(ndev);
    check_errors();
    return check_summary("test_kvstore");
}
