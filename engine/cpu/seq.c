/* The CPU's kernels of the transformer's row-wise and elementwise layers: token and position
 * embedding, layer norm and GELU (engine/backend/backend.h, "transformer"). Rows are threaded
 * as the other row-wise ops (mx_cpu_team); every sum over rows keeps one order whatever the
 * thread count, so results do not depend on it. */
#include "kernels.h"
#include "base/status.h"

#include <omp.h>
#include <string.h>

/* ---- embedding */

/* The token id a float holds, or -1 where it is not an integer in [0, vocab) (NaN included):
 * a float is compared before it is converted, since converting one out of int's range is
 * undefined. */
static inline int token_id(float x, int vocab)
{
    if (!(x >= 0.0f && x < (float)vocab)) return -1;
    const int id = (int)x;
    return (float)id == x && id < vocab ? id : -1;
}

void mx_cpu_embedding_forward(mx_backend *be, int n, int t, int c, int vocab, float *out, const float *ids,
                              const float *wte, const float *wpe)
{
    const int rows = n * t;
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)rows * c)) schedule(static)
    for (int r = 0; r < rows; r++) {
        float *restrict o = out + (size_t)r * c;
        const int id = token_id(ids[r], vocab);
        if (id < 0) {
            memset(o, 0, sizeof(float) * (size_t)c);
            mx_backend_fail(be, MX_EINVAL,
                            "embedding: token id %g (sample %d, position %d) is not an integer in [0, %d), the "
                            "vocabulary", (double)ids[r], r / t, r % t, vocab);
            continue;
        }
        const float *restrict e = wte + (size_t)id * c, *restrict p = wpe + (size_t)(r % t) * c;
        for (int j = 0; j < c; j++) o[j] = e[j] + p[j];
    }
}

/* Threads split the c columns, each adding every row's share in row order: two rows with the
 * same token never race, and each sum has one order for any thread count. Shares are whole
 * cache lines (16 floats) so that threads do not write the same line. */
void mx_cpu_embedding_backward(mx_backend *be, int n, int t, int c, int vocab, float *dwte, float *dwpe,
                               const float *dout, const float *ids)
{
    const int rows = n * t, lines = (c + 15) / 16;
    int T = mx_cpu_team(be, (size_t)rows * c);
    if (T > lines) T = lines;
#pragma omp parallel num_threads(T)
    {
        const int nt = omp_get_num_threads(), u = omp_get_thread_num();
        const int lo = lines * u / nt * 16, hi0 = lines * (u + 1) / nt * 16, hi = hi0 < c ? hi0 : c;
        for (int r = 0; r < rows && lo < hi; r++) {
            const int id = token_id(ids[r], vocab);
            if (id < 0) continue;
            const float *restrict d = dout + (size_t)r * c;
            float *restrict e = dwte + (size_t)id * c, *restrict p = dwpe + (size_t)(r % t) * c;
            for (int j = lo; j < hi; j++) e[j] += d[j];
            for (int j = lo; j < hi; j++) p[j] += d[j];
        }
    }
}

/* ---- layer norm */

/* Sums over one row in 16 float lanes added in a fixed order (engine/cpu/backend.c's row_sum
 * explains the lanes). f32 is enough within a row: a row is at most a few thousand values, so
 * each lane adds a few hundred, and the variance is summed from x - mean (two passes), which
 * cancels nothing. */
static inline float lanes_total(float lane[16])
{
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) lane[l] += lane[l + w];
    return lane[0];
}

static float row_mean(const float *restrict x, int w)
{
    float lane[16] = {0}, s = 0;
    int i = 0;
    for (; i + 16 <= w; i += 16)
        for (int l = 0; l < 16; l++) lane[l] += x[i + l];
    for (; i < w; i++) s += x[i];
    return (lanes_total(lane) + s) / (float)w;
}

static float row_var(const float *restrict x, int w, float mean)
{
    float lane[16] = {0}, s = 0;
    int i = 0;
    for (; i + 16 <= w; i += 16)
        for (int l = 0; l < 16; l++) {
            const float d = x[i + l] - mean;
            lane[l] += d * d;
        }
    for (; i < w; i++) s += (x[i] - mean) * (x[i] - mean);
    return (lanes_total(lane) + s) / (float)w;
}

void mx_cpu_layernorm_forward(mx_backend *be, int rows, int w, float *out, float *mean, float *rstd,
                              const float *in, const float *gamma, const float *beta, float eps)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, (size_t)rows * w)) schedule(static)
    for (int r = 0; r < rows; r++) {
        const float *restrict x = in + (size_t)r * w;
        float *restrict o = out + (size_t)r * w;
        const float mu = row_mean(x, w), s = 1.0f / sqrtf(row_var(x, w, mu) + eps);
        mean[r] = mu;
        rstd[r] = s;
        for (int j = 0; j < w; j++) o[j] = (x[j] - mu) * s * gamma[j] + beta[j];
    }
}

/* din of one row: with xh = (x - mean) rstd and g = dout gamma,
 * din = rstd (g - mean(g) - xh mean(g xh)). */
static void layernorm_row_din(int w, float *restrict din, const float *restrict dout, const float *restrict x,
                              float mu, float s, const float *restrict gamma)
{
    float l1[16] = {0}, l2[16] = {0}, s1 = 0, s2 = 0;
    int i = 0;
    for (; i + 16 <= w; i += 16)
        for (int l = 0; l < 16; l++) {
            const float g = dout[i + l] * gamma[i + l];
            l1[l] += g;
            l2[l] += g * (x[i + l] - mu) * s;
        }
    for (; i < w; i++) {
        const float g = dout[i] * gamma[i];
        s1 += g;
        s2 += g * (x[i] - mu) * s;
    }
    const float m1 = (lanes_total(l1) + s1) / (float)w, m2 = (lanes_total(l2) + s2) / (float)w;
    for (int j = 0; j < w; j++) din[j] = s * (dout[j] * gamma[j] - m1 - (x[j] - mu) * s * m2);
}

/* gamma's and beta's gradients sum over every row of the batch (n*t of them, thousands): rows
 * go in chunks of LN_CHUNK, each chunk's sums in f32 (a few dozen terms a value) into the
 * device's workspace, and each column then adds its chunks' sums in chunk order in double, so
 * that a long column keeps its accuracy and the result does not depend on the thread count.
 * One pass over dout and the input serves din and the chunks' sums, where a second pass by
 * columns had read both again (docs/performance.md, "Choices in the code"). */
#define LN_CHUNK 64

void mx_cpu_layernorm_backward(mx_backend *be, int rows, int w, float *din, float *dgamma, float *dbeta,
                               const float *dout, const float *in, const float *mean, const float *rstd,
                               const float *gamma)
{
    const int chunks = (rows + LN_CHUNK - 1) / LN_CHUNK;
    float *sums = mx_backend_scratch(be, sizeof(float) * 2 * (size_t)chunks * w); /* per chunk: gamma's, beta's */
    if (!sums) return;
#pragma omp parallel num_threads(mx_cpu_team(be, (size_t)rows * w))
    {
#pragma omp for schedule(static)
        for (int q = 0; q < chunks; q++) {
            float *restrict sg = sums + (size_t)q * 2 * w, *restrict sb = sg + w;
            memset(sg, 0, sizeof(float) * 2 * (size_t)w);
            for (int r = q * LN_CHUNK; r < rows && r < (q + 1) * LN_CHUNK; r++) {
                const float *restrict d = dout + (size_t)r * w, *restrict x = in + (size_t)r * w;
                const float mu = mean[r], s = rstd[r];
                if (din) layernorm_row_din(w, din + (size_t)r * w, d, x, mu, s, gamma);
                for (int j = 0; j < w; j++) {
                    sg[j] += d[j] * (x[j] - mu) * s;
                    sb[j] += d[j];
                }
            }
        }
#pragma omp for schedule(static)
        for (int j = 0; j < w; j++) {
            double g = 0, b = 0;
            for (int q = 0; q < chunks; q++) {
                g += sums[(size_t)q * 2 * w + j];
                b += sums[(size_t)q * 2 * w + w + j];
            }
            dgamma[j] += (float)g;
            dbeta[j] += (float)b;
        }
    }
}

/* ---- GELU */

/* GPT-2's 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + e^(-2u)):
 * the same function (1 + tanh(u) = 2 / (1 + e^(-2u))), without tanh's cancellation near 0 and
 * with an exponential of our own that the compiler vectorises (libm's expf and tanhf are calls
 * it cannot). */
#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

/* e^z for z in [-87, 87] (the caller clamps): z = k ln2 + r, |r| <= ln2/2, e^r by its Taylor
 * series to r^7 (relative error below 1e-8 there, so within float's rounding), 2^k built in
 * the exponent bits. k is rounded by adding 1.5 * 2^23, which leaves it in the low bits of
 * the sum: floorf would not vectorise under the default -ftrapping-math, nor would libm's
 * expf and tanhf at all. */
#define EXP_ROUND 12582912.0f /* 1.5 * 2^23: its float's bits are 0x4b400000 */
static inline float exp_clamped(float z)
{
    const float kb = MX_MADD(z, 1.4426950408889634f, EXP_ROUND), k = kb - EXP_ROUND;
    const float r = MX_MADD(-k, 1.428606765330187e-6f, MX_MADD(-k, 0.693145751953125f, z)); /* ln2 in two parts */
    float p = 1.0f / 5040;
    p = MX_MADD(p, r, 1.0f / 720);
    p = MX_MADD(p, r, 1.0f / 120);
    p = MX_MADD(p, r, 1.0f / 24);
    p = MX_MADD(p, r, 1.0f / 6);
    p = MX_MADD(p, r, 0.5f);
    p = MX_MADD(p, r, 1.0f);
    p = MX_MADD(p, r, 1.0f);
    int32_t bits;
    memcpy(&bits, &kb, sizeof bits);
    bits = (bits - 0x4b400000 + 127) * (1 << 23); /* k + 127 in [1, 253]: a normal float's exponent */
    float two_k;
    memcpy(&two_k, &bits, sizeof two_k);
    return p * two_k;
}

/* GELU's tails: beyond |x| = 10 (|u| > 43) the float values are those of the limits, 0 and x,
 * gradients 0 and 1, and the kernels select them there, so that the exponential stays in
 * range and no overflow in a discarded branch reaches a result. */
#define GELU_TAIL 10.0f

/* s = (1 + tanh u) / 2 = 1 / (1 + e), e = e^(-2u), for |x| <= GELU_TAIL; any x gives some
 * finite s (z clamped; a NaN x ends as z = -87, never as a conversion of NaN to int) and a
 * NaN x a NaN result through the x that multiplies s. */
static inline float gelu_s(float x, float *e)
{
    float z = -2.0f * GELU_C * MX_MADD(GELU_A * x, x * x, x);
    z = z > -87.0f ? z : -87.0f;
    z = z < 87.0f ? z : 87.0f;
    *e = exp_clamped(z);
    return 1.0f / (1.0f + *e);
}

void mx_cpu_gelu_forward(mx_backend *be, size_t n, float *out, const float *in)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float x = in[i];
        float e;
        const float y = x * gelu_s(x, &e);
        out[i] = x < -GELU_TAIL ? 0.0f : x > GELU_TAIL ? x : y;
    }
}

/* With 1 - s = e s: gelu'(x) = s + x s (1 - s) 2 u'(x), u'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2). */
void mx_cpu_gelu_backward(mx_backend *be, size_t n, float *din, const float *dout, const float *in)
{
#pragma omp parallel for num_threads(mx_cpu_team(be, n)) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float x = in[i];
        float e;
        const float s = gelu_s(x, &e), du = 2.0f * GELU_C * (1.0f + 3.0f * GELU_A * x * x);
        const float g = s + x * du * (e * s) * s;
        din[i] = dout[i] * (x < -GELU_TAIL ? 0.0f : x > GELU_TAIL ? 1.0f : g);
    }
}
