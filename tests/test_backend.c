/* The typed, fallible backend: casts on hand-chosen values (expected bit patterns worked
 * out by hand), the non-finite count, gemm_ex against gemm and against a scalar reference,
 * events, ranges and peer copies, the defaults a table gets for the ops it leaves NULL, the
 * registry's checks, the sticky error, and a backend that fails part-way through training
 * surfacing as an error with its message from the data strategy's step. */
#include "check.h"
#include "engine/core/backends.h"
#include "engine/cpu/cpu.h"
#include "engine/core/net.h"
#include "engine/core/rng.h"
#include "base/status.h"
#include "strategies/strategy.h"
#include "workloads/workloads.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float flt(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* n elements through be's cast, host to host (device buffers in between). */
static void cast_via(mx_backend *be, size_t n, void *dst, mx_dtype dt, const void *src, mx_dtype st)
{
    void *ds = be->ops->alloc(be, n * mx_dtype_size(st)), *dd = be->ops->alloc(be, n * mx_dtype_size(dt));
    be->ops->copy(be, ds, src, n * mx_dtype_size(st), MX_COPY_H2D);
    be->ops->cast(be, n, dd, dt, ds, st);
    be->ops->copy(be, dst, dd, n * mx_dtype_size(dt), MX_COPY_D2H);
    be->ops->free(be, ds);
    be->ops->free(be, dd);
}

typedef struct {
    uint32_t f;  /* f32 bits in */
    uint16_t h;  /* half bits out */
} narrow_case;

/* f32 -> f16. Ties: 1+2^-11 lies halfway between 1 (0x3c00, even) and 1+2^-10; 1+3*2^-11
 * halfway between 0x3c01 (odd) and 0x3c02. 65520 is halfway between 65504 (0x7bff, odd)
 * and 65536, which does not exist: inf. 2^-25 is halfway between 0 and 2^-24; 1.5*2^-24
 * between 0x0001 and 0x0002; 1023.5*2^-24 between the largest subnormal 0x03ff and the
 * smallest normal 0x0400. */
static const narrow_case to_f16[] = {
    {0x3f800000, 0x3c00}, {0xc0000000, 0xc000}, {0x00000000, 0x0000}, {0x80000000, 0x8000},
    {0x3f801000, 0x3c00}, {0x3f803000, 0x3c02}, {0x3f801001, 0x3c01}, {0x477fe000, 0x7bff},
    {0x477fefff, 0x7bff}, {0x477ff000, 0x7c00}, {0x49742400, 0x7c00}, {0xc9742400, 0xfc00},
    {0x7f800000, 0x7c00}, {0xff800000, 0xfc00}, {0x7fc00000, 0x7e00}, {0xffc00000, 0xfe00},
    {0x7f802000, 0x7e01}, {0x33800000, 0x0001}, {0x33000000, 0x0000}, {0x33000001, 0x0001},
    {0x33c00000, 0x0002}, {0x387fc000, 0x03ff}, {0x387fe000, 0x0400}, {0x38800000, 0x0400},
    {0xb3800000, 0x8001}, {0xb2800000, 0x8000}, {0x00000001, 0x0000},
};

/* f32 -> bf16: the top 16 bits, the low 16 rounded to even. 0x7f7f8000 is halfway between
 * the largest finite 0x7f7f (odd) and inf; 0x7f800001 is a NaN whose payload is only in
 * the dropped bits (truncation would make it inf); 0x00008000 is halfway between 0 and the
 * smallest subnormal; 0x3fff8000 carries into the exponent. */
static const narrow_case to_bf16[] = {
    {0x3f800000, 0x3f80}, {0x80000000, 0x8000}, {0x00000000, 0x0000}, {0x3f808000, 0x3f80},
    {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81}, {0x7f7f0000, 0x7f7f}, {0x7f7f7fff, 0x7f7f},
    {0x7f7f8000, 0x7f80}, {0x7f7fffff, 0x7f80}, {0x7f800000, 0x7f80}, {0xff800000, 0xff80},
    {0x7fc00000, 0x7fc0}, {0xffc00000, 0xffc0}, {0x7f800001, 0x7fc0}, {0x00010000, 0x0001},
    {0x00008000, 0x0000}, {0x00018000, 0x0002}, {0x00000001, 0x0000}, {0x80008001, 0x8001},
    {0x3fff8000, 0x4000},
};

/* half -> f32 is exact; NaN checked as NaN with its sign. */
static const narrow_case from_f16[] = {
    {0x33800000, 0x0001}, {0x387fc000, 0x03ff}, {0x38800000, 0x0400}, {0x477fe000, 0x7bff},
    {0x7f800000, 0x7c00}, {0xff800000, 0xfc00}, {0x80000000, 0x8000}, {0x00000000, 0x0000},
    {0x3f800000, 0x3c00}, {0xb3800000, 0x8001}, {0xc0000000, 0xc000}, {0x7fc00000, 0x7e00},
};
static const narrow_case from_bf16[] = {
    {0x00010000, 0x0001}, {0x7f7f0000, 0x7f7f}, {0x7f800000, 0x7f80}, {0xff800000, 0xff80},
    {0x80000000, 0x8000}, {0x7fc00000, 0x7fc0}, {0xbf800000, 0xbf80},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void check_narrow(mx_backend *be, const narrow_case *c, size_t n, mx_dtype t)
{
    float in[64] = {0}; /* zeroed: the compiler cannot see that n <= 64 fills what is read */
    uint16_t out[64];
    for (size_t i = 0; i < n; i++) in[i] = flt(c[i].f);
    cast_via(be, n, out, t, in, MX_F32);
    for (size_t i = 0; i < n; i++)
        CHECK(out[i] == c[i].h, "%s: f32 0x%08x to %s gave 0x%04x, expected 0x%04x", be->ops->name, c[i].f,
              mx_dtype_name(t), out[i], c[i].h);
}

static void check_widen(mx_backend *be, const narrow_case *c, size_t n, mx_dtype t)
{
    uint16_t in[64] = {0};
    float out[64];
    for (size_t i = 0; i < n; i++) in[i] = c[i].h;
    cast_via(be, n, out, MX_F32, in, t);
    for (size_t i = 0; i < n; i++) {
        const int nan = (c[i].f & 0x7fffffffu) > 0x7f800000u;
        const int ok = nan ? isnan(out[i]) && (bits(out[i]) >> 31) == (c[i].f >> 31) : bits(out[i]) == c[i].f;
        CHECK(ok, "%s: %s 0x%04x to f32 gave 0x%08x, expected 0x%08x", be->ops->name, mx_dtype_name(t), c[i].h,
              bits(out[i]), c[i].f);
    }
}

static void test_casts(mx_backend *be)
{
    check_narrow(be, to_f16, N_OF(to_f16), MX_F16);
    check_narrow(be, to_bf16, N_OF(to_bf16), MX_BF16);
    check_widen(be, from_f16, N_OF(from_f16), MX_F16);
    check_widen(be, from_bf16, N_OF(from_bf16), MX_BF16);
    /* Between the halves, rounded once: f16 65504 is bf16 0x4780 (65536: 0x477fe000's low
     * half 0xe000 rounds up), and bf16 65536 is beyond f16's range: inf. */
    uint16_t h[2] = {0x7bff, 0x3c00}, b[2], back[2];
    cast_via(be, 2, b, MX_BF16, h, MX_F16);
    CHECK(b[0] == 0x4780 && b[1] == 0x3f80, "%s: f16 to bf16 gave 0x%04x 0x%04x", be->ops->name, b[0], b[1]);
    cast_via(be, 2, back, MX_F16, b, MX_BF16);
    CHECK(back[0] == 0x7c00 && back[1] == 0x3c00, "%s: bf16 to f16 gave 0x%04x 0x%04x", be->ops->name, back[0],
          back[1]);
    /* Long enough for the threaded path: every element as the scalar conversion. */
    const size_t n = 100003;
    float *x = malloc(sizeof(float) * n), *wide = malloc(sizeof(float) * n);
    uint16_t *hx = malloc(2 * n);
    mx_rng rng;
    mx_rng_seed(&rng, 11);
    for (size_t i = 0; i < n; i++) x[i] = (float)((mx_rng_uniform(&rng) - 0.5) * ldexp(1.0, (int)(i % 60) - 30));
    for (int t = MX_F16; t <= MX_BF16; t++) {
        cast_via(be, n, hx, (mx_dtype)t, x, MX_F32);
        cast_via(be, n, wide, MX_F32, hx, (mx_dtype)t);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            const uint16_t want = t == MX_F16 ? mx_f32_to_f16(x[i]) : mx_f32_to_bf16(x[i]);
            bad += hx[i] != want || bits(wide[i]) != bits(mx_dtype_load((mx_dtype)t, hx, i));
        }
        CHECK(bad == 0, "%s: %zu of %zu long %s casts differ from the scalar conversion", be->ops->name, bad, n,
              mx_dtype_name((mx_dtype)t));
    }
    free(x);
    free(wide);
    free(hx);
}

static size_t count_via(mx_backend *be, size_t n, const void *host, mx_dtype t)
{
    void *d = be->ops->alloc(be, n * mx_dtype_size(t) + 1);
    be->ops->copy(be, d, host, n * mx_dtype_size(t), MX_COPY_H2D);
    const size_t c = be->ops->count_nonfinite(be, n, d, t);
    be->ops->free(be, d);
    return c;
}

static void test_count_nonfinite(mx_backend *be)
{
    const float f[] = {1, -0.0f, 3.4e38f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, flt(0x7f800001)};
    CHECK(count_via(be, N_OF(f), f, MX_F32) == 5, "%s: f32 count %zu, expected 5", be->ops->name,
          count_via(be, N_OF(f), f, MX_F32));
    /* 65504, inf, -inf, NaN, the smallest subnormal, a signalling NaN */
    const uint16_t h[] = {0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x7c01, 0x3c00};
    CHECK(count_via(be, N_OF(h), h, MX_F16) == 4, "%s: f16 count %zu, expected 4", be->ops->name,
          count_via(be, N_OF(h), h, MX_F16));
    const uint16_t b[] = {0x7f7f, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x7f81, 0x3f80, 0x7bff};
    CHECK(count_via(be, N_OF(b), b, MX_BF16) == 4, "%s: bf16 count %zu, expected 4", be->ops->name,
          count_via(be, N_OF(b), b, MX_BF16));
    CHECK(count_via(be, 0, f, MX_F32) == 0, "%s: count of nothing", be->ops->name);
    const size_t n = 70001;
    float *big = calloc(n, sizeof(float));
    big[0] = NAN, big[n / 2] = INFINITY, big[n - 1] = -INFINITY;
    CHECK(count_via(be, n, big, MX_F32) == 3, "%s: long f32 count %zu, expected 3", be->ops->name,
          count_via(be, n, big, MX_F32));
    free(big);
}

/* ---- gemm_ex */

/* rows x cols at ld of type t, random values already representable in t. */
static void *rand_matrix(mx_rng *rng, int rows, int cols, int ld, mx_dtype t)
{
    void *m = calloc((size_t)rows * ld + 1, mx_dtype_size(t));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) mx_dtype_store(t, m, (size_t)r * ld + c, (float)(2 * mx_rng_uniform(rng) - 1));
    return m;
}

/* Element (i, j) of op(X) for X stored at ld, widened to double. */
static double at_op(const void *x, mx_dtype t, int trans, int ld, int i, int j)
{
    return mx_dtype_load(t, x, trans ? (size_t)j * ld + i : (size_t)i * ld + j);
}

/* Half-precision results may differ from the double reference by the f32 accumulation
 * (k <= 65 terms of magnitude <= 1: under 1e-5 of the summed magnitudes) plus one unit in
 * the last place of the output type, where f32 and double land on either side of a
 * rounding boundary. */
static double tolerance(mx_dtype t, double ref, double mag)
{
    double ulp = 0;
    if (t != MX_F32) {
        float lo = fabsf((float)ref);
        uint16_t h = t == MX_F16 ? mx_f32_to_f16(lo) : mx_f32_to_bf16(lo);
        uint16_t up = (uint16_t)(h + 1);
        ulp = fabs((double)mx_dtype_load(t, &up, 0) - (double)mx_dtype_load(t, &h, 0));
    }
    return ulp + 1e-5 * mag;
}

static void gemm_case(mx_backend *be, mx_rng *rng, int ta, int tb, int m, int n, int k, mx_dtype at, mx_dtype bt,
                      mx_dtype ct, float alpha, float beta)
{
    const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    const int lda = ac + 3, ldb = bc + 1, ldc = n + 2;
    void *a = rand_matrix(rng, ar, ac, lda, at), *b = rand_matrix(rng, br, bc, ldb, bt);
    void *c = rand_matrix(rng, m, n, ldc, ct), *c0 = malloc(((size_t)m * ldc + 1) * mx_dtype_size(ct));
    memcpy(c0, c, (size_t)m * ldc * mx_dtype_size(ct));
    be->ops->gemm_ex(be, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, MX_F32);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                const double v = at_op(a, at, ta, lda, i, p) * at_op(b, bt, tb, ldb, p, j);
                s += v, mag += fabs(v);
            }
            const double cold = mx_dtype_load(ct, c0, (size_t)i * ldc + j);
            const double ref = alpha * s + beta * cold;
            mag = fabs(alpha) * mag + fabs(beta * cold);
            const double got = mx_dtype_load(ct, c, (size_t)i * ldc + j), err = fabs(got - ref);
            if (err > worst) worst = err;
            bad += !(err <= tolerance(ct, ref, mag));
        }
    /* Padding between rows of C is never written. */
    for (int i = 0; i < m; i++)
        for (int j = n; j < ldc; j++)
            bad += mx_dtype_load(ct, c, (size_t)i * ldc + j) != mx_dtype_load(ct, c0, (size_t)i * ldc + j);
    CHECK(bad == 0, "%s: gemm_ex %s x %s -> %s, %c%c m=%d n=%d k=%d alpha=%g beta=%g: %d bad, worst %.3g",
          be->ops->name, mx_dtype_name(at), mx_dtype_name(bt), mx_dtype_name(ct), ta ? 'T' : 'N', tb ? 'T' : 'N',
          m, n, k, alpha, beta, bad, worst);
    if (at == MX_F32 && bt == MX_F32 && ct == MX_F32) {
        /* All f32: gemm_ex is gemm, bit for bit. */
        be->ops->gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, ldc);
        CHECK(memcmp(c, c0, sizeof(float) * m * ldc) == 0, "%s: gemm_ex f32 differs from gemm (m=%d n=%d k=%d)",
              be->ops->name, m, n, k);
    }
    free(a);
    free(b);
    free(c);
    free(c0);
}

static void test_gemm_ex(mx_backend *be)
{
    static const int sizes[] = {1, 2, 3, 7, 17, 33, 64, 65};
    static const mx_dtype types[][3] = {{MX_F32, MX_F32, MX_F32},  {MX_F16, MX_F16, MX_F32},
                                        {MX_F16, MX_F16, MX_F16},  {MX_BF16, MX_BF16, MX_F32},
                                        {MX_BF16, MX_BF16, MX_BF16}, {MX_F16, MX_F32, MX_BF16}};
    mx_rng rng;
    mx_rng_seed(&rng, 5);
    for (int it = 0; it < 48; it++) {
        const mx_dtype *t = types[it % N_OF(types)];
        const int m = sizes[mx_rng_next(&rng) % N_OF(sizes)], n = sizes[mx_rng_next(&rng) % N_OF(sizes)];
        const int k = sizes[mx_rng_next(&rng) % N_OF(sizes)];
        const float beta = it % 3 == 0 ? 0.0f : it % 3 == 1 ? 1.0f : -0.5f;
        gemm_case(be, &rng, it & 1, (it >> 1) & 1, m, n, k, t[0], t[1], t[2], it % 4 ? 1.0f : 0.75f, beta);
    }
    /* beta = 0 does not read C: a NaN there stays out of the result. */
    uint16_t a[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, c[4] = {0x7e00, 0x7e00, 0x7e00, 0x7e00};
    be->ops->gemm_ex(be, 0, 0, 2, 2, 2, 1.0f, a, MX_F16, 2, a, MX_F16, 2, 0.0f, c, MX_F16, 2, MX_F32);
    CHECK(c[0] == 0x4000 && c[3] == 0x4000, "%s: beta 0 read C: 0x%04x", be->ops->name, c[0]);
}

/* ---- defaults: a table that leaves every optional op NULL */

static mx_backend_ops bare_table(const char *name)
{
    mx_backend_ops o = mx_cpu_backend_ops;
    o.name = name;
    o.open = NULL, o.close = NULL, o.sync = NULL, o.bind_thread = NULL;
    o.copy_async = NULL, o.copy_peer = NULL;
    o.event_create = NULL, o.event_record = NULL, o.event_wait = NULL, o.event_elapsed = NULL;
    o.event_destroy = NULL;
    o.range_push = NULL, o.range_pop = NULL;
    o.cast = NULL, o.count_nonfinite = NULL, o.gemm_ex = NULL, o.add_relu = NULL;
    return o;
}

typedef struct {
    int pushes, pops;
    char last[32];
    double t;
} range_log;

static void log_range(void *user, mx_backend *be, const char *name, int push, double t)
{
    range_log *l = user;
    if (push) {
        l->pushes++;
        snprintf(l->last, sizeof l->last, "%s", name);
    } else {
        l->pops++;
    }
    l->t = t;
}

static void test_events_ranges_copies(mx_backend *be, mx_backend *other)
{
    mx_event *e0 = be->ops->event_create(be), *e1 = be->ops->event_create(be);
    CHECK(e0 && e1, "%s: event_create", be->ops->name);
    be->ops->event_record(be, e0);
    /* Not a timing: a sleep of 2 ms bounds the elapsed time from below on any machine. */
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    be->ops->event_record(be, e1);
    be->ops->event_wait(be, e1);
    const double dt = be->ops->event_elapsed(be, e0, e1);
    CHECK(dt >= 0.0019 && isfinite(dt), "%s: elapsed %.6f s over a 2 ms sleep", be->ops->name, dt);
    CHECK(be->ops->event_elapsed(be, e1, e1) == 0, "%s: an event's elapsed to itself", be->ops->name);
    be->ops->event_destroy(be, e0);
    be->ops->event_destroy(be, e1);

    range_log log = {0};
    be->ops->range_push(be, "ignored"); /* no hook: nothing happens */
    be->ops->range_pop(be);
    mx_backend_set_range_hook(be, log_range, &log);
    be->ops->range_push(be, "forward");
    be->ops->range_pop(be);
    mx_backend_set_range_hook(be, NULL, NULL);
    CHECK(log.pushes == 1 && log.pops == 1 && strcmp(log.last, "forward") == 0 && log.t > 0,
          "%s: range hook saw %d pushes, %d pops, '%s'", be->ops->name, log.pushes, log.pops, log.last);

    /* More than the default's 4 MiB staging piece, and an odd tail. */
    const size_t bytes = ((size_t)9 << 20) + 3;
    unsigned char *src = other->ops->alloc(other, bytes), *dst = be->ops->alloc(be, bytes);
    unsigned char *host = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(i * 131 + 7);
    other->ops->copy_async(other, src, host, bytes, MX_COPY_H2D);
    CHECK(other->ops->sync(other) == MX_OK, "%s: sync after copy_async", other->ops->name);
    be->ops->copy_peer(be, dst, other, src, bytes);
    memset(host, 0, bytes);
    be->ops->copy(be, host, dst, bytes, MX_COPY_D2H);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += host[i] != (unsigned char)(i * 131 + 7);
    CHECK(bad == 0, "%s: copy_peer from %s: %zu of %zu bytes wrong", be->ops->name, other->ops->name, bad, bytes);
    other->ops->free(other, src);
    be->ops->free(be, dst);
    free(host);
    CHECK(be->ops->sync(be) == MX_OK, "%s: sync: %s", be->ops->name, mx_last_error());
}

/* The defaults against the CPU's own ops: the same results, bit for bit. */
static void test_defaults(mx_backend *cpu)
{
    mx_backend_ops bare = bare_table("bare");
    CHECK(mx_backend_register(&bare) == MX_OK, "register bare: %s", mx_last_error());
    const mx_backend_ops *o = mx_backend_find("bare");
    CHECK(o && o->open && o->close && o->sync && o->bind_thread && o->copy_async && o->copy_peer &&
              o->event_create && o->event_record && o->event_wait && o->event_elapsed && o->event_destroy &&
              o->range_push && o->range_pop && o->cast && o->count_nonfinite && o->gemm_ex && o->add_relu,
          "bare: an optional op was not filled");
    mx_backend *be;
    if (mx_backend_create(&be, "bare", 0, 1) != MX_OK) {
        CHECK(0, "create bare: %s", mx_last_error());
        return;
    }
    test_casts(be);
    test_count_nonfinite(be);
    test_gemm_ex(be);
    test_events_ranges_copies(be, cpu);
    test_events_ranges_copies(cpu, be);
    /* Half operands through f32 device temporaries give what the CPU's panels give. */
    mx_rng rng;
    mx_rng_seed(&rng, 9);
    const int m = 17, n = 33, k = 7;
    void *a = rand_matrix(&rng, m, k, k + 2, MX_F16), *b = rand_matrix(&rng, n, k, k, MX_BF16);
    void *c1 = rand_matrix(&rng, m, n, n + 1, MX_F16), *c2 = malloc(sizeof(uint16_t) * (m * (n + 1) + 1));
    memcpy(c2, c1, sizeof(uint16_t) * m * (n + 1));
    be->ops->gemm_ex(be, 0, 1, m, n, k, 0.5f, a, MX_F16, k + 2, b, MX_BF16, k, 1.0f, c1, MX_F16, n + 1, MX_F32);
    cpu->ops->gemm_ex(cpu, 0, 1, m, n, k, 0.5f, a, MX_F16, k + 2, b, MX_BF16, k, 1.0f, c2, MX_F16, n + 1, MX_F32);
    CHECK(memcmp(c1, c2, sizeof(uint16_t) * m * (n + 1)) == 0, "default gemm_ex differs from the CPU's");
    free(a), free(b), free(c1), free(c2);
    /* relu(a + b), default against the CPU's: sums < 0, +-0, NaN, inf; also into b itself */
    enum { NR = 1031 };
    float ra[NR], rb[NR], r1[NR], r2[NR];
    for (int i = 0; i < NR; i++) {
        ra[i] = i % 11 == 0 ? -0.0f : i % 13 == 0 ? (i % 2 ? NAN : INFINITY) : (float)(mx_rng_uniform(&rng) * 4 - 2);
        rb[i] = i % 11 == 0 ? -0.0f : i % 7 == 0 ? -ra[i] : (float)(mx_rng_uniform(&rng) * 4 - 2);
    }
    be->ops->add_relu(be, NR, r1, ra, rb);
    cpu->ops->add_relu(cpu, NR, r2, ra, rb);
    be->ops->add_relu(be, NR, rb, ra, rb);
    CHECK(!memcmp(r1, r2, sizeof r1) && !memcmp(rb, r2, sizeof r1), "default add_relu differs from the CPU's");
    mx_backend_destroy(be);

    /* A table with gemm_ex but no gemm: gemm defaults to gemm_ex with every type f32. */
    mx_backend_ops exonly = mx_cpu_backend_ops;
    exonly.name = "gemm_ex_only";
    exonly.gemm = NULL;
    CHECK(mx_backend_register(&exonly) == MX_OK, "register gemm_ex_only: %s", mx_last_error());
    if (mx_backend_create(&be, "gemm_ex_only", 0, 1) == MX_OK) {
        mx_rng_seed(&rng, 4);
        for (int it = 0; it < 6; it++)
            gemm_case(be, &rng, it & 1, it >> 1 & 1, 3 + it, 5, 2 * it + 1, MX_F32, MX_F32, MX_F32, 1.0f, 0.5f);
        mx_backend_destroy(be);
    }
}

static void test_registry(void)
{
    CHECK(mx_backend_register(&mx_cpu_backend_ops) == MX_EINVAL, "registering cpu twice was accepted");
    mx_backend_ops o = bare_table("no_alloc");
    o.alloc = NULL;
    CHECK(mx_backend_register(&o) == MX_EINVAL && strstr(mx_last_error(), "'alloc'"),
          "a table without alloc: %s", mx_last_error());
    o = bare_table("half_events");
    o.event_create = mx_backend_find("cpu")->event_create;
    CHECK(mx_backend_register(&o) == MX_EINVAL && strstr(mx_last_error(), "event"),
          "a table with 1 of 5 event ops: %s", mx_last_error());
    o = bare_table("no_gemm");
    o.gemm = NULL;
    CHECK(mx_backend_register(&o) == MX_EINVAL, "a table without gemm or gemm_ex was accepted");
    mx_backend *be = NULL;
    CHECK(mx_backend_create(&be, "tpu", 0, 1) == MX_EUNSUPPORTED && !be && strstr(mx_last_error(), "'tpu'") &&
              strstr(mx_last_error(), "cpu"),
          "an unknown kind: %s", mx_last_error());
    CHECK(!mx_backend_find("no_alloc") && strcmp(mx_backend_find("cpu")->device_type, "cpu") == 0,
          "find: a refused table is listed, or cpu's device_type is wrong");
}

/* ---- the sticky error */

static void *fail_from_thread(void *p)
{
    mx_backend *be = p;
    mx_backend_fail(be, MX_ERUNTIME, "a later failure from another thread");
    return NULL;
}

static void *small_alloc(mx_backend *be, size_t bytes)
{
    return bytes > (1 << 20) ? NULL : mx_cpu_backend_ops.alloc(be, bytes);
}

static void test_sticky(void)
{
    mx_backend *be;
    mx_backend_create(&be, "cpu", 3, 1);
    CHECK(mx_backend_error(be) == MX_OK && be->ops->sync(be) == MX_OK, "a fresh backend reports an error");
    /* A copy of the struct, as engine/cpu/conv.c makes for one thread, records into the device. */
    mx_backend one = *be;
    mx_backend_fail(&one, MX_ENOMEM, "cudaMalloc(%d bytes): out of memory", 4096);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, fail_from_thread, be);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    mx_error(MX_OK, "cleared");
    const int rc = be->ops->sync(be);
    CHECK(rc == MX_ENOMEM && strstr(mx_last_error(), "cudaMalloc(4096 bytes): out of memory") &&
              strstr(mx_last_error(), "device 3") && !strstr(mx_last_error(), "later"),
          "sync gave %d: %s", rc, mx_last_error());
    CHECK(mx_backend_error(be) == MX_ENOMEM && be->ops->sync(be) == MX_ENOMEM, "the error did not stay set");
    mx_backend_destroy(be);

    mx_backend_create(&be, "cpu", 0, 1);
    float x = 1;
    be->ops->gemm_ex(be, 0, 0, 1, 1, 1, 1, &x, MX_F32, 1, &x, MX_F32, 1, 0, &x, MX_F32, 1, MX_F16);
    CHECK(be->ops->sync(be) == MX_EUNSUPPORTED && strstr(mx_last_error(), "compute type f16"),
          "gemm_ex with f16 compute: %s", mx_last_error());
    mx_backend_destroy(be);
    /* a workspace that cannot be had (a table whose alloc refuses over 1 MiB): NULL and the
     * sticky error, so that a kernel which asked for it may return without computing and the
     * step still fails */
    mx_backend_ops small = bare_table("small_memory");
    small.alloc = small_alloc;
    CHECK(mx_backend_register(&small) == MX_OK && mx_backend_create(&be, "small_memory", 0, 1) == MX_OK,
          "small_memory: %s", mx_last_error());
    CHECK(mx_backend_scratch(be, 1 << 10) != NULL && mx_backend_scratch(be, 2 << 20) == NULL &&
              be->ops->sync(be) == MX_ENOMEM && strstr(mx_last_error(), "kernel workspace"),
          "an impossible workspace: %s", mx_last_error());
    mx_backend_destroy(be);
    mx_backend_create(&be, "cpu", 0, 1);
    be->ops->cast(be, 1, &x, (mx_dtype)7, &x, MX_F32);
    CHECK(be->ops->sync(be) == MX_EINVAL && strstr(mx_last_error(), "dtype 7"), "cast to dtype 7: %s",
          mx_last_error());
    mx_backend_destroy(be);
}

/* ---- a backend that fails part-way through training */

static atomic_int faulty_calls;
static int faulty_after, faulty_device;

/* The CPU's gemm, until the faulty device's call number faulty_after: that call fails as
 * a CUDA launch would (nothing computed, the sticky error set), and so does every later one. */
static void faulty_gemm(mx_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                        const float *b, int ldb, float beta, float *c, int ldc)
{
    if (be->device == faulty_device) {
        const int call = atomic_fetch_add(&faulty_calls, 1) + 1;
        if (call >= faulty_after) {
            mx_backend_fail(be, MX_ERUNTIME, "gemm(m=%d n=%d k=%d): injected failure at call %d", m, n, k, call);
            return;
        }
    }
    mx_cpu_backend_ops.gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void test_faulty_training(int devices, const char *kvstore)
{
    enum { BATCH = 16, PER = 28 * 28 };
    static float x[BATCH * PER];
    static int32_t y[BATCH];
    mx_rng rng;
    mx_rng_seed(&rng, 2);
    for (int i = 0; i < BATCH * PER; i++) x[i] = (float)mx_rng_normal(&rng);
    for (int i = 0; i < BATCH; i++) y[i] = (int32_t)(i % 10);
    /* mlp: 8 gemm calls a step on each device (3 forward, 3 weight and 2 input gradients),
     * so the first step is clean and the second fails. */
    atomic_store(&faulty_calls, 0);
    faulty_after = 12;
    faulty_device = devices - 1; /* with 2 devices, a worker thread's device */
    const mx_strategy_ops *ops = mx_strategy_find(MX_STRATEGY_DATA);
    mx_layer_spec specs[MX_MAX_LAYERS];
    const int nspecs = mx_workload_find("mlp")->build(specs, (mx_shape){1, 28, 28}, 10);
    mx_strategy_config cfg = {.workload = "mlp", .specs = specs, .nspecs = nspecs, .in = {1, 28, 28},
                              .nclasses = 10, .devices = devices, .threads_per_device = 1,
                              .kvstore = mx_kv_mode_of(kvstore), .backend = "faulty", .max_batch = BATCH,
                              .opt = {.kind = MX_OPTIM_SGD, .lr = 0.05f, .momentum = 0.9f, .wd = 1e-4f},
                              .seed = 1, .init = MX_WEIGHT_INIT_XAVIER};
    mx_strategy *s;
    if (ops->create(&s, &cfg) != MX_OK) {
        CHECK(0, "create on the faulty backend (%d devices): %s", devices, mx_last_error());
        return;
    }
    mx_step_stats st;
    int rc = ops->step(s, x, y, BATCH, 0.05f, &st);
    CHECK(rc == MX_OK, "%d devices, %s: the first step failed: %s", devices, kvstore, mx_last_error());
    rc = ops->step(s, x, y, BATCH, 0.05f, &st);
    CHECK(rc < 0 && strstr(mx_last_error(), "injected failure at call 12") &&
              strstr(mx_last_error(), "faulty"),
          "%d devices, %s: the failing step gave %d: %s", devices, kvstore, rc, mx_last_error());
    rc = ops->step(s, x, y, BATCH, 0.05f, &st);
    CHECK(rc < 0 && strstr(mx_last_error(), "injected failure at call 12"),
          "%d devices, %s: the error did not stay: %d: %s", devices, kvstore, rc, mx_last_error());
    if (devices == 1) {
        double loss;
        int correct;
        rc = ops->evaluate(s, x, y, BATCH, &loss, &correct);
        CHECK(rc < 0 && strstr(mx_last_error(), "injected failure"), "evaluate on the failed device gave %d: %s",
              rc, mx_last_error());
    }
    ops->destroy(s);
}

static void test_param_dtype(mx_backend *be)
{
    const mx_layer_spec specs[] = {{.kind = "dense", .units = 8}, {.kind = "relu"}, {.kind = "dense", .units = 3}};
    mx_net *net;
    if (mx_net_create(&net, be, specs, 3, (mx_shape){1, 2, 5}, 4) != MX_OK) {
        CHECK(0, "net: %s", mx_last_error());
        return;
    }
    int f32 = 0;
    for (int i = 0; i < net->nparams; i++) f32 += net->params[i].dtype == MX_F32;
    CHECK(net->nparams == 4 && f32 == 4, "%d of %d parameters are f32", f32, net->nparams);
    mx_net_destroy(net);
}

int main(void)
{
    mx_backend *cpu;
    if (mx_backend_create(&cpu, "cpu", 0, 2) != MX_OK) {
        fprintf(stderr, "cpu backend: %s\n", mx_last_error());
        return 1;
    }
    test_casts(cpu);
    test_count_nonfinite(cpu);
    test_gemm_ex(cpu);
    test_events_ranges_copies(cpu, cpu);
    test_param_dtype(cpu);
    test_defaults(cpu);
    test_registry();
    test_sticky();
    mx_backend_destroy(cpu);
    mx_backend_ops faulty = mx_cpu_backend_ops;
    faulty.name = "faulty";
    faulty.gemm = faulty_gemm;
    CHECK(mx_backend_register(&faulty) == MX_OK, "register faulty: %s", mx_last_error());
    test_faulty_training(1, "device");
    test_faulty_training(2, "device");
    test_faulty_training(2, "local");
    return check_summary("test_backend");
}
