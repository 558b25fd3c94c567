/* xoshiro256** seeded through splitmix64: fast, well distributed, and reproducible. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void mx_rng_seed(mx_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t mx_rng_next(mx_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double mx_rng_uniform(mx_rng *r) { return (double)(mx_rng_next(r) >> 11) * 0x1.0p-53; }

double mx_rng_normal(mx_rng *r)
{
    double u1 = mx_rng_uniform(r), u2 = mx_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint32_t mx_rng_below(mx_rng *r, uint32_t n) { return (uint32_t)(((mx_rng_next(r) >> 32) * (uint64_t)n) >> 32); }

void mx_rng_shuffle(mx_rng *r, int32_t *idx, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)mx_rng_below(r, (uint32_t)(i + 1));
        int32_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}
