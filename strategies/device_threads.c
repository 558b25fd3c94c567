/* Device threads (device_threads.h): a generation counter under one lock wakes every thread
 * for a step, a pending count says when the last one is done. */
#include "device_threads.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    mx_device_threads *t;
    int device;
} thread_arg;

static void *device_thread(void *p)
{
    thread_arg a = *(thread_arg *)p;
    free(p);
    mx_device_threads *t = a.t;
    t->bind(t->user, a.device);
    long seen = 0;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->stopping && t->generation == seen) pthread_cond_wait(&t->go, &t->lock);
        if (t->stopping) break;
        seen = t->generation;
        pthread_mutex_unlock(&t->lock);
        t->run(t->user, a.device);
        pthread_mutex_lock(&t->lock);
        if (--t->pending == 0) pthread_cond_signal(&t->finished);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int mx_device_threads_start(mx_device_threads *t, int n, void (*bind)(void *, int), void (*run)(void *, int),
                            void *user)
{
    memset(t, 0, sizeof *t);
    t->bind = bind, t->run = run, t->user = user, t->n = n;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->go, NULL);
    pthread_cond_init(&t->finished, NULL);
    bind(user, 0); /* device 0 runs on the caller's thread */
    for (int d = 1; d < n; d++) {
        thread_arg *a = malloc(sizeof *a);
        if (!a) return mx_error(MX_ENOMEM, "out of memory starting device thread %d", d);
        *a = (thread_arg){t, d};
        if (pthread_create(&t->threads[d], NULL, device_thread, a) != 0) {
            free(a);
            return mx_error(MX_ERUNTIME, "cannot start device thread %d of %d", d, n);
        }
        t->started[d] = 1;
    }
    return MX_OK;
}

void mx_device_threads_run(mx_device_threads *t)
{
    pthread_mutex_lock(&t->lock);
    t->pending = t->n - 1;
    t->generation++;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->lock);
    t->run(t->user, 0);
    pthread_mutex_lock(&t->lock);
    while (t->pending > 0) pthread_cond_wait(&t->finished, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

void mx_device_threads_stop(mx_device_threads *t)
{
    if (!t->run) return; /* never started */
    pthread_mutex_lock(&t->lock);
    t->stopping = 1;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->lock);
    for (int d = 1; d < t->n; d++)
        if (t->started[d]) pthread_join(t->threads[d], NULL);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->go);
    pthread_cond_destroy(&t->finished);
    t->run = NULL;
}
