/* The CPU backend: host memory, GEMM (the own AVX-512 kernels of engine/cpu/gemm.c, or OpenBLAS's
 * sgemm), and the elementwise, loss and optimizer kernels. It is the readable reference the
 * CUDA backend is tested against. */
#include "engine/backend/backend.h"
#include "kernels.h"
#include "base/status.h"

#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS's own controls; declared here because cblas.h of other BLAS lacks them. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);

void mx_cpu_set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
const char *mx_cpu_blas_info(void) { return openblas_get_config(); }

/* ---- memory: 64-byte aligned so vector loads never straddle cache lines */

static void *cpu_alloc(mx_backend *be, size_t bytes)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (p) memset(p, 0, rounded);
    return p;
}

static void cpu_free(mx_backend *be, void *p) { free(p); }

static void cpu_copy(mx_backend *be, void *dst, const void *src, size_t bytes, mx_copy_kind kind)
{
    if (dst != src && bytes) memcpy(dst, src, bytes);
}

static void cpu_zero(mx_backend *be, void *p, size_t bytes) { memset(p, 0, bytes); }
/* Every op has finished when it returns: only the sticky error is left to report. */
static int cpu_sync(mx_backend *be) { return mx_backend_error(be); }
/* Device d owns cores [d*nthreads, (d+1)*nthreads) when they exist, so that devices do not
 * trade cores and caches (one-thread lenet measured faster pinned than free, by about as much
 * as the host's noise: a likely gain, not a proven one). Beyond the cores, threads go
 * round-robin (core (d*nthreads + t) mod cores), so that every core takes an equal share of
 * turns: left unpinned, the devices past the cores shared whichever core the scheduler chose
 * with the pinned ones, and with mlp on 4 devices of 1 thread on 2 cores one core ran 3 of
 * them in turn, a slower step than round-robin (docs/performance.md, "Choices in the code"). */
static void cpu_bind_thread(mx_backend *be)
{
    mx_cpu_set_blas_threads(be->nthreads);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int first = be->device * be->nthreads;
    if (be->device < 0 || cores < 1) return;
    /* One core per OpenMP thread; the team is reused by later parallel regions of this
     * thread, BLAS's included, so the placement holds. */
#pragma omp parallel num_threads(be->nthreads)
    {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)((first + omp_get_thread_num()) % cores), &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
}

/* Called after every BLAS GEMM when set (mx_cpu_set_gemm_hook): NULL in mxbench, a load and a
 * branch per GEMM. */
static mx_cpu_gemm_hook gemm_hook;

void mx_cpu_set_gemm_hook(mx_cpu_gemm_hook fn) { gemm_hook = fn; }

void mx_cpu_gemm(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc)
{
    if (be->math == MX_BF16 && mx_cpu_bf16_native()) {
        if (mx_cpu_gemm_bf16_dnnl() && mx_cpu_gemm_dnnl(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
            return;
        mx_cpu_gemm_bf16(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (mx_cpu_gemm_own()) {
        mx_cpu_gemm_f32(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
                lda, b, ldb, beta, c, ldc);
    if (gemm_hook) gemm_hook(ta, tb, m, n, k, alpha, a, lda, b, ldb);
}

static void cpu_bias_forward(mx_backend *be, int outer, int c, int inner, float *y, const float *b)
{
    if (inner == 1) { /* a dense or linear layer's: rows of c, added a row at a time (vectorised) */
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)outer * c)) schedule(static)
        for (int o = 0; o < outer; o++) {
            float *restrict row = y + (size_t)o * c;
            for (int j = 0; j < c; j++) row[j] += b[j];
        }
        return;
    }
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)outer * c * inner)) schedule(static)
    for (int o = 0; o < outer; o++)
        for (int j = 0; j < c; j++) {
            float *row = y + ((size_t)o * c + j) * inner;
            for (int i = 0; i < inner; i++) row[i] += b[j];
        }
}

/* The sum of one row, in 16 float lanes added in a fixed order: a single running sum is a
 * chain of dependent adds (4 cycles each), which made lenet's first bias gradient (128 x 576
 * values per channel) most of its layer's backward (docs/performance.md, "Choices in the
 * code"). */
static float row_sum(const float *restrict x, int n)
{
    float lane[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) lane[l] += x[i + l];
    float s = 0;
    for (; i < n; i++) s += x[i];
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) lane[l] += lane[l + w];
    return lane[0] + s;
}

/* A dense or linear layer's bias gradient (inner 1): the column sums of dy [rows][c]. Threads
 * take blocks of BIAS_COLS columns and walk the rows in order, adding each row's values to the
 * columns' double sums: the sums and order of the loop over a column below (the same results),
 * vectorised along the row. That loop had walked dy down its columns, a cache line a value and a
 * chain of dependent double adds: 3% of gpt-bench's step (docs/performance.md, "Choices in the
 * code"). */
#define BIAS_COLS 256

static void bias_backward_rows(mx_backend *be, int rows, int c, float *db, const float *dy)
{
    const int blocks = (c + BIAS_COLS - 1) / BIAS_COLS, team = mx_cpu_team(be, (size_t)rows * c);
#pragma omp parallel for num_threads(team < blocks ? team : blocks) schedule(static)
    for (int b = 0; b < blocks; b++) {
        const int lo = b * BIAS_COLS, cols = c - lo < BIAS_COLS ? c - lo : BIAS_COLS;
        double sum[BIAS_COLS] = {0};
        for (int r = 0; r < rows; r++) {
            const float *restrict d = dy + (size_t)r * c + lo;
            for (int j = 0; j < cols; j++) sum[j] += d[j];
        }
        for (int j = 0; j < cols; j++) db[lo + j] += (float)sum[j];
    }
}

static void cpu_bias_backward(mx_backend *be, int outer, int c, int inner, float *db, const float *dy)
{
    if (inner == 1 && c >= 16) {
        bias_backward_rows(be, outer, c, db, dy);
        return;
    }
    /* Parallel over channels so every sum keeps one order: deterministic for any thread count;
     * rows summed in float, rows added in double. */
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)outer * c * inner)) schedule(static)
    for (int j = 0; j < c; j++) {
        double s = 0;
        if (inner >= 16)
            for (int o = 0; o < outer; o++) s += row_sum(dy + ((size_t)o * c + j) * inner, inner);
        else /* a dense layer's bias (inner 1): one value per row */
            for (int o = 0; o < outer; o++)
                for (int i = 0; i < inner; i++) s += dy[((size_t)o * c + j) * inner + i];
        db[j] += (float)s;
    }
}

static void cpu_relu_forward(mx_backend *be, size_t n, float *out, const float *in)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = in[i] > 0 ? in[i] : 0;
}

static void cpu_relu_backward(mx_backend *be, size_t n, float *din, const float *dout, const float *out)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) din[i] = out[i] > 0 ? dout[i] : 0;
}

static void cpu_add(mx_backend *be, size_t n, float *y, const float *x)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* relu(a + b) as cpu_add then cpu_relu_forward compute it, in one pass instead of three (the
 * residual block had copied its branch, added the shortcut, then taken the relu). */
static void cpu_add_relu(mx_backend *be, size_t n, float *out, const float *a, const float *b)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float s = a[i] + b[i];
        out[i] = s > 0 ? s : 0;
    }
}

static void cpu_scale(mx_backend *be, size_t n, float *x, float a)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

/* ---- loss: max-shifted log-sum-exp so large logits cannot overflow */

static double xent_row(int classes, float *drow, const float *row, int label, float grad_scale, int *hit)
{
    /* A label outside [0, classes) would read past the row. The loaders refuse such data
     * (mx_idx_load_dir), so this is a last line of defence: no gradient, no hit, and a NaN
     * loss that the trainer's non-finite-loss check turns into a failed run, never a read
     * out of bounds or a silently wrong accuracy. */
    if (label < 0 || label >= classes) {
        if (drow) memset(drow, 0, sizeof(float) * (size_t)classes);
        *hit = 0;
        return NAN;
    }
    float mx = row[0];
    int arg = 0;
    for (int j = 1; j < classes; j++)
        if (row[j] > mx) mx = row[j], arg = j;
    double sum = 0;
    for (int j = 0; j < classes; j++) sum += exp((double)(row[j] - mx));
    double logz = log(sum) + mx;
    if (drow)
        for (int j = 0; j < classes; j++)
            drow[j] = (float)(exp((double)row[j] - logz) - (j == label)) * grad_scale;
    *hit = arg == label;
    return logz - row[label];
}

static double cpu_softmax_xent(mx_backend *be, int n, int classes, float *dlogits, int *correct,
                               const float *logits, const int32_t *labels, float grad_scale)
{
    double loss = 0;
    int hits = 0;
    for (int i = 0; i < n; i++) {
        int hit;
        loss += xent_row(classes, dlogits ? dlogits + (size_t)i * classes : NULL, logits + (size_t)i * classes,
                         labels[i], grad_scale, &hit);
        hits += hit;
    }
    if (correct) *correct = hits;
    return loss;
}

static double cpu_softmax_eval(mx_backend *be, int n, int classes, int *correct, const float *logits,
                               const int32_t *labels)
{
    return cpu_softmax_xent(be, n, classes, NULL, correct, logits, labels, 0);
}

static void cpu_sgd_update(mx_backend *be, size_t n, float *w, float *mom, const float *g, float lr,
                           float momentum, float wd, float rescale)
{
    const int T = mx_cpu_team(be, n);
#pragma omp parallel num_threads(T)
    {
        const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        mx_cpu_sgd_range(w, mom, g, lr, momentum, wd, rescale, n * t / nt, n * (t + 1) / nt);
    }
}

/* copy_async, events and ranges are left to engine/backend/backend.c's defaults, which are exactly the
 * CPU's: synchronous copies, host timestamps, ranges only through a timeline hook. */
const mx_backend_ops mx_cpu_backend_ops = {
    .name = "cpu",
    .device_type = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .bind_thread = cpu_bind_thread,
    .close = mx_cpu_dnnl_close,
    .copy_peer = mx_cpu_copy_peer,
    .cast = mx_cpu_cast,
    .count_nonfinite = mx_cpu_count_nonfinite,
    .amp_kernels = mx_cpu_amp_kernels,
    .round_half = mx_cpu_round_half,
    .gemm = mx_cpu_gemm,
    .gemm_ex = mx_cpu_gemm_ex,
    .bias_forward = cpu_bias_forward,
    .bias_backward = cpu_bias_backward,
    .conv2d_forward = mx_cpu_conv2d_forward,
    .conv2d_backward = mx_cpu_conv2d_backward,
    .maxpool_forward = mx_cpu_maxpool_forward,
    .maxpool_backward = mx_cpu_maxpool_backward,
    .maxpool_relu_forward = mx_cpu_maxpool_relu_forward,
    .maxpool_relu_backward = mx_cpu_maxpool_relu_backward,
    .avgpool_global_forward = mx_cpu_avgpool_global_forward,
    .avgpool_global_backward = mx_cpu_avgpool_global_backward,
    .batchnorm_forward_train = mx_cpu_batchnorm_forward_train,
    .batchnorm_forward_infer = mx_cpu_batchnorm_forward_infer,
    .batchnorm_backward = mx_cpu_batchnorm_backward,
    .batchnorm_relu_forward_train = mx_cpu_batchnorm_relu_forward_train,
    .batchnorm_relu_backward = mx_cpu_batchnorm_relu_backward,
    .residual_branch_forward = mx_cpu_residual_branch_forward,
    .residual_branch_backward = mx_cpu_residual_branch_backward,
    .relu_forward = cpu_relu_forward,
    .relu_backward = cpu_relu_backward,
    .add = cpu_add,
    .add_relu = cpu_add_relu,
    .scale = cpu_scale,
    .embedding_forward = mx_cpu_embedding_forward,
    .embedding_backward = mx_cpu_embedding_backward,
    .layernorm_forward = mx_cpu_layernorm_forward,
    .layernorm_backward = mx_cpu_layernorm_backward,
    .gelu_forward = mx_cpu_gelu_forward,
    .gelu_backward = mx_cpu_gelu_backward,
    .attention_forward = mx_cpu_attention_forward,
    .attention_backward = mx_cpu_attention_backward,
    .softmax_xent = cpu_softmax_xent,
    .softmax_eval = cpu_softmax_eval,
    .sgd_update = cpu_sgd_update,
    .sgd_update_amp = mx_cpu_sgd_update_amp,
    .adamw_update = mx_cpu_adamw_update,
    .adamw_update_amp = mx_cpu_adamw_update_amp,
    .sumsq = mx_cpu_sumsq,
};
