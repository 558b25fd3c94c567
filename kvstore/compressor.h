/* Gradient compressors: what one device's push of one key becomes on the wire. A compressor is
 * a table of functions in its own file (gc_<name>.c), named by its line of MX_GC_LIST
 * (base/config.h) and listed in kvstore/compressor.c; its state, the
 * residual that error feedback keeps, lives per device and key in the mx_compressor instance.
 * The kvstore runs it through its push hook (mx_compressor_push): the gradient is compressed
 * into a packed payload, whose size is what the wire carries, and decompressed in place where
 * the reduction reads it, which in one process is the same memory (across processes the
 * payload is what is sent, and the server decompresses it). */
#ifndef MX_COMPRESSOR_H
#define MX_COMPRESSOR_H

#include "kvstore.h"

typedef struct mx_compressor mx_compressor;

typedef struct {
    mx_gc_kind kind; /* its name is base/config.h's (mx_gc_name) */
    const char *summary;
    int error_feedback; /* keeps a residual per device and key (what was not sent yet) */
    /* Bytes of the packed payload for count f32 values. */
    size_t (*packed_bytes)(const mx_compressor *c, size_t count);
    /* g[count] (plus residual[count] when error_feedback, updated in place) into packed. */
    void (*compress)(const mx_compressor *c, const float *g, float *residual, size_t count, void *packed);
    /* packed into out[count]: the values the receiver sums. */
    void (*decompress)(const mx_compressor *c, const void *packed, size_t count, float *out);
} mx_compressor_ops;

/* A compressor's settings: 2bit's threshold (MXNet's default 0.5) and topk's share of each
 * unit's values sent (0.01); 0 (or a NULL options pointer) means the default. */
typedef struct {
    double threshold, topk_ratio;
} mx_compressor_opts;

struct mx_compressor {
    const mx_compressor_ops *ops;
    double threshold, topk_ratio; /* resolved settings */
    /* what gradients are multiplied by before compressing and divided by after decompressing:
     * the samples of the step, so that a mean gradient is compressed as the sum MXNet's
     * executors hand its kvstore (its optimizer rescales afterwards), and the threshold
     * means what it means there. 1 unless the owner sets it (mx_kv_set_grad_scale). */
    float prescale;
    int ndev, nkeys;
    mx_kv_key *keys;
    float **residual;    /* [ndev] laid out by the key table (error feedback only) */
    unsigned char **buf; /* [ndev] one packed payload of the largest key */
};

/* A compressor of kind (one this build has: mx_compressor_names()) for ndev parties (each with
 * its residuals) and the table of units it compresses one at a time (f32 keys; offsets lay out
 * the residuals). */
int mx_compressor_create(mx_compressor **out, mx_gc_kind kind, int ndev, const mx_kv_key *keys, int nkeys,
                         const mx_compressor_opts *opts);
void mx_compressor_destroy(mx_compressor *c);
/* The L2 norm of the residuals over all devices and keys (0 for a kind without error
 * feedback): what error feedback still owes the receivers, for the record. In the units the
 * residual is kept in (the prescaled gradient, as the threshold). It reads every residual,
 * so call it between steps, while no device pushes. */
double mx_compressor_residual_norm(const mx_compressor *c);
/* The kinds built, "none|fp16|2bit|topk" (every kind mxbench knows is base/config.h's mx_gc_names()). */
const char *mx_compressor_names(void);
int mx_compressor_built(mx_gc_kind kind);

/* The kvstore push hook that runs compressor user: mx_kv_set_push_hook(kv, mx_compressor_push, c).
 * Called by each device's thread for its own pushes only, so devices never share state. */
int mx_compressor_push(void *user, int dev, int key, void *data, size_t count, mx_dtype dtype, double *wire_bytes);

#endif
