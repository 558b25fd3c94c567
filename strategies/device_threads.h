/* One thread per device for the strategies that drive several devices in one process (data,
 * model, layer): device 0 runs on the caller's thread, devices 1..n-1 on threads of their own
 * that wait for each step; mx_device_threads_run runs one step on every device and returns
 * once all are done. */
#ifndef MX_DEVICE_THREADS_H
#define MX_DEVICE_THREADS_H

#include "base/limits.h"

#include <pthread.h>

typedef struct {
    void (*bind)(void *user, int device); /* once per thread, before its first step (BLAS threads, pinning) */
    void (*run)(void *user, int device);  /* one step's work of a device */
    void *user;
    int n;
    pthread_t threads[MX_MAX_DEVICES];
    int started[MX_MAX_DEVICES];
    pthread_mutex_t lock;
    pthread_cond_t go, finished;
    long generation;
    int pending, stopping;
} mx_device_threads;

/* Binds the caller as device 0 and starts threads for devices 1..n-1 (MX_ERUNTIME or
 * MX_ENOMEM with a message if one cannot start; mx_device_threads_stop still cleans up). */
int mx_device_threads_start(mx_device_threads *t, int n, void (*bind)(void *, int), void (*run)(void *, int),
                            void *user);
/* One step: every device's run, device 0 on the caller's thread; returns when all are done. */
void mx_device_threads_run(mx_device_threads *t);
/* Ends and joins the threads; safe on a zeroed struct and after a failed start. */
void mx_device_threads_stop(mx_device_threads *t);

#endif
