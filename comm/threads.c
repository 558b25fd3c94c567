/* Communicator `threads`: the members are threads of this process and buffers are host or
 * CPU-device memory, so a collective is a rendezvous in which every member publishes its
 * pointers, reads the others' directly, and waits until no one still reads its own.
 * Buffers in a GPU's memory (c->be set) take the same steps, each member's reads and sums
 * done by its backend's copies and adds (same GPU, or peers), after its queued work.
 * Rendezvous are generation counters: a short spin (members usually arrive together), then
 * a futex sleep, because there are often more threads than cores and a long spin would
 * steal the core that the late member needs. */
#include "comm.h"
#include "engine/backend/backend.h"
#include "base/status.h"

#include <limits.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
static void sleep_while(_Atomic uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}
static void wake_all(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#else
#include <sched.h>
static void sleep_while(_Atomic uint32_t *w, uint32_t v) { sched_yield(); }
static void wake_all(_Atomic uint32_t *w) {}
#endif

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* About 2 to 10 microseconds of pause instructions: enough for members that arrive together,
 * short enough not to matter when the late one waits for a core. */
#ifndef SPIN
#define SPIN 200
#endif

/* A word others wait on, and how many sleep on it (so that setting it makes a syscall only
 * when someone sleeps). */
typedef struct {
    _Atomic uint32_t v, sleepers;
} flag;

static void flag_wait_ne(flag *f, uint32_t old)
{
    for (int i = 0; i < SPIN; i++) {
        if (atomic_load_explicit(&f->v, memory_order_acquire) != old) return;
        cpu_relax();
    }
    /* seq_cst on both sides (sleepers then v here, v then sleepers in flag_set): either we
     * see the new value or the setter sees us asleep and wakes us. */
    atomic_fetch_add(&f->sleepers, 1);
    while (atomic_load(&f->v) == old) sleep_while(&f->v, old);
    atomic_fetch_sub(&f->sleepers, 1);
}

static void flag_set(flag *f, uint32_t v)
{
    atomic_store(&f->v, v);
    if (atomic_load(&f->sleepers)) wake_all(&f->v);
}

typedef struct {
    alignas(64) flag gen;
    _Atomic uint32_t arrived;
} barrier;

/* Sense-free generation barrier: the last to arrive resets the count, then opens the next
 * generation; a member that leaves and re-enters at once finds the count already reset. */
static void barrier_wait(barrier *b, int n)
{
    const uint32_t g = atomic_load_explicit(&b->gen.v, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == (uint32_t)n - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        flag_set(&b->gen, g + 1);
    } else {
        flag_wait_ne(&b->gen, g);
    }
}

/* What a member brings to a collective, read by the others between the two rendezvous. */
typedef struct {
    alignas(64) mx_comm_verb verb;
    int root;
    const void *send;
    void *recv;
    size_t count;
    mx_dtype t;
} slot;

/* One direction of one pair of members; send and recv meet here. */
typedef struct {
    alignas(64) flag posted, done;
    const void *buf;
    size_t count;
    mx_dtype t;
    int status;
} channel;

typedef struct {
    barrier bar;
    slot *slots;       /* [n] */
    channel *channels; /* [from * n + to] */
} threads_comm;

static int threads_create(mx_comm *c)
{
    threads_comm *T = aligned_alloc(64, sizeof *T);
    if (!T) return mx_error(MX_ENOMEM, "out of memory creating a threads communicator");
    memset(T, 0, sizeof *T);
    const size_t nslots = (size_t)c->n, nch = (size_t)c->n * (size_t)c->n;
    T->slots = aligned_alloc(64, sizeof *T->slots * nslots);
    T->channels = aligned_alloc(64, sizeof *T->channels * nch);
    if (!T->slots || !T->channels) {
        free(T->slots);
        free(T->channels);
        free(T);
        return mx_error(MX_ENOMEM, "out of memory creating a threads communicator of %d members", c->n);
    }
    memset(T->slots, 0, sizeof *T->slots * nslots);
    memset(T->channels, 0, sizeof *T->channels * nch);
    c->impl = T;
    return MX_OK;
}

static void threads_destroy(mx_comm *c)
{
    threads_comm *T = c->impl;
    if (!T) return;
    free(T->slots);
    free(T->channels);
    free(T);
}

/* ---- device buffers: member m's backend moves and sums them */

static void mem_copy(const mx_comm *c, int m, void *dst, const void *src, size_t bytes)
{
    if (dst == src || !bytes) return;
    if (c->be) c->be[m]->ops->copy(c->be[m], dst, src, bytes, MX_COPY_D2D);
    else memcpy(dst, src, bytes);
}

/* Member m's own buffers are complete (its queued kernels done) before others read them. */
static int settle(const mx_comm *c, int m) { return c->be ? c->be[m]->ops->sync(c->be[m]) : MX_OK; }

/* sum_into on device memory: f32 adds on member m's queue in member order, except that a
 * source which is dst itself (in place) is the first term; then waited for, so the
 * others may reuse their buffers after the next rendezvous. */
static void sum_into_device(const mx_comm *c, int m, float *dst, size_t lo, size_t hi)
{
    const threads_comm *T = c->impl;
    mx_backend *be = c->be[m];
    const size_t len = hi - lo;
    int self = -1;
    for (int j = 0; j < c->n && self < 0; j++)
        if ((const float *)T->slots[j].send + lo == dst + lo) self = j;
    if (self < 0) be->ops->copy(be, dst + lo, (const float *)T->slots[0].send + lo, sizeof(float) * len, MX_COPY_D2D);
    for (int j = self < 0 ? 1 : 0; j < c->n; j++)
        if (j != self) be->ops->add(be, len, dst + lo, (const float *)T->slots[j].send + lo);
    be->ops->sync(be);
}

/* ---- collectives */

/* Publishes this member's call and waits for all; then every member compares every call
 * with member 0's, so a mismatch fails the call on every member alike. */
static int arrive(mx_comm *c, int m, mx_comm_verb v, const void *send, void *recv, size_t count, mx_dtype t, int root)
{
    threads_comm *T = c->impl;
    T->slots[m] = (slot){.verb = v, .root = root, .send = send, .recv = recv, .count = count, .t = t};
    const int ready = settle(c, m);
    barrier_wait(&T->bar, c->n);
    if (ready < 0) return ready;
    if (c->be && t != MX_F32 && (v == MX_COMM_ALLREDUCE || v == MX_COMM_REDUCE_SCATTER))
        return mx_error(MX_EUNSUPPORTED, "comm threads: %s of %s on device memory: the device sums take f32",
                        mx_comm_verb_name(v), mx_dtype_name(t));
    const slot *a = &T->slots[0];
    for (int j = 1; j < c->n; j++) {
        const slot *b = &T->slots[j];
        if (b->verb != a->verb || b->count != a->count || b->t != a->t || b->root != a->root)
            return mx_error(MX_EINVAL,
                            "comm: member %d called %s(%zu %s, root %d) while member 0 called %s(%zu %s, root %d): "
                            "every member must make the same calls in the same order",
                            j, mx_comm_verb_name(b->verb), b->count, mx_dtype_name(b->t), b->root,
                            mx_comm_verb_name(a->verb), a->count, mx_dtype_name(a->t), a->root);
    }
    return MX_OK;
}

/* Sum, in f32 and in member order, of elements [lo, hi) of every member's send buffer into
 * dst. Chunks stay in L1; dst may be one of the sources (in place): each chunk is read
 * whole before it is written. */
#define CHUNK 1024
static void sum_into(const mx_comm *c, int m, void *dst, size_t lo, size_t hi, mx_dtype t)
{
    const threads_comm *T = c->impl;
    if (c->be) {
        if (hi > lo) sum_into_device(c, m, dst, lo, hi);
        return;
    }
    float acc[CHUNK];
    for (size_t at = lo; at < hi; at += CHUNK) {
        const size_t len = hi - at < CHUNK ? hi - at : CHUNK;
        if (t == MX_F32) {
            memcpy(acc, (const float *)T->slots[0].send + at, sizeof(float) * len);
            for (int d = 1; d < c->n; d++) {
                const float *x = (const float *)T->slots[d].send + at;
                for (size_t i = 0; i < len; i++) acc[i] += x[i];
            }
            memcpy((float *)dst + at, acc, sizeof(float) * len);
        } else {
            for (size_t i = 0; i < len; i++) acc[i] = mx_dtype_load(t, T->slots[0].send, at + i);
            for (int d = 1; d < c->n; d++)
                for (size_t i = 0; i < len; i++) acc[i] += mx_dtype_load(t, T->slots[d].send, at + i);
            for (size_t i = 0; i < len; i++) mx_dtype_store(t, dst, at + i, acc[i]);
        }
    }
}

/* Every shard but m's, copied from its owner's buffer (in each owner's slot `recv`). */
static void gather_others(const mx_comm *c, int m, void *buf, size_t count, mx_dtype t)
{
    const threads_comm *T = c->impl;
    const size_t sz = mx_dtype_size(t);
    for (int j = 0; j < c->n; j++) {
        size_t lo, hi;
        mx_comm_shard(count, j, c->n, &lo, &hi);
        const char *src = T->slots[j].recv;
        if (j != m && hi > lo && src != buf) mem_copy(c, m, (char *)buf + lo * sz, src + lo * sz, (hi - lo) * sz);
    }
}

static int threads_allreduce(mx_comm *c, int m, const void *send, void *recv, size_t count, mx_dtype t)
{
    threads_comm *T = c->impl;
    if (c->n == 1) {
        mem_copy(c, m, recv, send, count * mx_dtype_size(t));
        return MX_OK;
    }
    /* Reduce-scatter into recv, then all-gather recv: each element is summed once, by its
     * shard's owner, so every member gets the same bits. In place is safe: a member writes
     * only its own shard before the middle rendezvous, and others' shards after it. */
    int rc = arrive(c, m, MX_COMM_ALLREDUCE, send, recv, count, t, 0);
    if (rc == MX_OK) {
        size_t lo, hi;
        mx_comm_shard(count, m, c->n, &lo, &hi);
        sum_into(c, m, recv, lo, hi, t);
    }
    barrier_wait(&T->bar, c->n);
    if (rc == MX_OK) gather_others(c, m, recv, count, t);
    barrier_wait(&T->bar, c->n);
    return rc;
}

static int threads_reduce_scatter(mx_comm *c, int m, const void *send, void *recv, size_t count, mx_dtype t)
{
    threads_comm *T = c->impl;
    size_t lo, hi;
    mx_comm_shard(count, m, c->n, &lo, &hi);
    if (c->n == 1) {
        const size_t sz = mx_dtype_size(t);
        mem_copy(c, m, (char *)recv + lo * sz, (const char *)send + lo * sz, (hi - lo) * sz);
        return MX_OK;
    }
    int rc = arrive(c, m, MX_COMM_REDUCE_SCATTER, send, recv, count, t, 0);
    if (rc == MX_OK) sum_into(c, m, recv, lo, hi, t);
    barrier_wait(&T->bar, c->n); /* the others have read our send buffer */
    return rc;
}

static int threads_allgather(mx_comm *c, int m, void *buf, size_t count, mx_dtype t)
{
    threads_comm *T = c->impl;
    if (c->n == 1) return MX_OK;
    int rc = arrive(c, m, MX_COMM_ALLGATHER, buf, buf, count, t, 0);
    if (rc == MX_OK) gather_others(c, m, buf, count, t);
    barrier_wait(&T->bar, c->n);
    return rc;
}

static int threads_broadcast(mx_comm *c, int m, void *buf, size_t count, mx_dtype t, int root)
{
    threads_comm *T = c->impl;
    if (c->n == 1) return MX_OK;
    int rc = arrive(c, m, MX_COMM_BROADCAST, buf, buf, count, t, root);
    if (rc == MX_OK && m != root) mem_copy(c, m, buf, T->slots[root].recv, count * mx_dtype_size(t));
    barrier_wait(&T->bar, c->n);
    return rc;
}

static int threads_barrier(mx_comm *c, int m)
{
    threads_comm *T = c->impl;
    if (c->n > 1) barrier_wait(&T->bar, c->n);
    return MX_OK;
}

/* ---- point to point: a synchronous send (returns once received), as MPI_Ssend, so that
 * the sender's buffer is free again on return without a copy */

static int threads_send(mx_comm *c, int m, const void *buf, size_t count, mx_dtype t, int peer)
{
    threads_comm *T = c->impl;
    channel *ch = &T->channels[(size_t)m * c->n + peer];
    const uint32_t seq = atomic_load_explicit(&ch->posted.v, memory_order_relaxed) + 1;
    settle(c, m); /* a failure stays sticky on the backend and surfaces at its next sync */
    ch->buf = buf;
    ch->count = count;
    ch->t = t;
    flag_set(&ch->posted, seq);
    flag_wait_ne(&ch->done, seq - 1);
    if (ch->status < 0)
        return mx_error(MX_EINVAL,
                        "comm send: member %d sent %zu %s to member %d, which expected another count or type", m, count,
                        mx_dtype_name(t), peer);
    return MX_OK;
}

static int threads_recv(mx_comm *c, int m, void *buf, size_t count, mx_dtype t, int peer)
{
    threads_comm *T = c->impl;
    channel *ch = &T->channels[(size_t)peer * c->n + m];
    const uint32_t seq = atomic_load_explicit(&ch->done.v, memory_order_relaxed) + 1;
    flag_wait_ne(&ch->posted, seq - 1);
    int rc = MX_OK;
    if (ch->count != count || ch->t != t)
        rc = mx_error(MX_EINVAL, "comm recv: member %d expected %zu %s from member %d, which sent %zu %s", m, count,
                      mx_dtype_name(t), peer, ch->count, mx_dtype_name(ch->t));
    else
        mem_copy(c, m, buf, ch->buf, count * mx_dtype_size(t));
    ch->status = rc;
    flag_set(&ch->done, seq);
    return rc;
}

const mx_comm_ops mx_comm_threads_ops = {
    .name = "threads",
    .create = threads_create,
    .destroy = threads_destroy,
    .allreduce = threads_allreduce,
    .reduce_scatter = threads_reduce_scatter,
    .allgather = threads_allgather,
    .broadcast = threads_broadcast,
    .send = threads_send,
    .recv = threads_recv,
    .barrier = threads_barrier,
};
