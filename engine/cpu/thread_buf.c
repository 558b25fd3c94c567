/* Per-thread working buffers of the CPU kernels (packed GEMM panels): each grows to the
 * largest size its thread has asked for and is reused, so that a step allocates nothing.
 * Per thread, not per device, because engine/cpu/conv.c runs one device's products from several
 * threads; freed when the thread ends. */
#include "kernels.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    void *p[MX_THREAD_BUF_COUNT];
    size_t cap[MX_THREAD_BUF_COUNT];
} thread_bufs;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void bufs_free(void *v)
{
    thread_bufs *b = v;
    for (int i = 0; i < MX_THREAD_BUF_COUNT; i++) free(b->p[i]);
    free(b);
}

static void key_init(void) { (void)pthread_key_create(&key, bufs_free); }

void *mx_cpu_thread_buffer(mx_thread_buf slot, size_t bytes)
{
    pthread_once(&once, key_init);
    thread_bufs *b = pthread_getspecific(key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    if (bytes > b->cap[slot]) {
        const size_t rounded = (bytes + 63) / 64 * 64;
        void *p = aligned_alloc(64, rounded);
        if (!p) return NULL;
        free(b->p[slot]);
        b->p[slot] = p;
        b->cap[slot] = rounded;
    }
    return b->p[slot];
}

void mx_cpu_add_thread_sums(float *dw, const float *part, size_t stride, int T, size_t nw)
{
#pragma omp for schedule(static)
    for (size_t i = 0; i < nw; i++) {
        float acc = dw[i];
        for (int u = 0; u < T; u++) acc += part[stride * u + i];
        dw[i] = acc;
    }
}
