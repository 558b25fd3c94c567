/* Seeded random numbers: the same seed gives the same stream on every machine, so runs
 * with the same seed are bit-identical on CPU. */
#ifndef MX_RNG_H
#define MX_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4]; /* xoshiro256** state */
} mx_rng;

void mx_rng_seed(mx_rng *r, uint64_t seed);
uint64_t mx_rng_next(mx_rng *r);
/* Uniform in [0,1). */
double mx_rng_uniform(mx_rng *r);
/* Standard normal (Box-Muller; one value per call, deterministic). */
double mx_rng_normal(mx_rng *r);
/* Uniform integer in [0, n). */
uint32_t mx_rng_below(mx_rng *r, uint32_t n);
/* Fisher-Yates shuffle of idx[0..n). */
void mx_rng_shuffle(mx_rng *r, int32_t *idx, int n);

#endif
