/* params_diff A B TOL: compares two weight files written by `mxbench train --save-params`
 * (raw f32). Prints the largest difference relative to the largest magnitude of B and exits
 * 1 when it exceeds TOL (or the files differ in length), 0 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *load(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *w = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (w && fread(w, 1, (size_t)bytes, f) != (size_t)bytes) w = (free(w), NULL);
    fclose(f);
    *n = bytes / (long)sizeof(float);
    return w;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: params_diff A B TOL\n");
        return 2;
    }
    long na = 0, nb = 0;
    float *a = load(argv[1], &na), *b = load(argv[2], &nb);
    if (!a || !b || na != nb || na == 0) {
        fprintf(stderr, "params_diff: %s (%ld values) and %s (%ld values) cannot be compared\n", argv[1], na, argv[2],
                nb);
        return 1;
    }
    double scale = 0, worst = 0;
    long at = 0;
    for (long i = 0; i < nb; i++) scale = fmax(scale, fabs(b[i]));
    for (long i = 0; i < na; i++) {
        const double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst)) worst = d, at = i; /* a NaN counts as the worst */
    }
    const double rel = worst / (scale > 0 ? scale : 1), tol = atof(argv[3]);
    printf("%ld weights: largest difference %.3g (at %ld) = %.3g of the largest weight %.3g; tolerance %g\n", na, worst,
           at, rel, scale, tol);
    return rel <= tol ? 0 : 1;
}
