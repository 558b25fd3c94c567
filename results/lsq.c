/* Small least squares (lsq.h): normal equations on unit-length columns, Gaussian elimination
 * with partial pivoting. The systems are at most 4 x 4 and the columns few and scaled, so the
 * normal equations lose nothing that matters here; a pivot below 1e-9 on unit columns means a
 * column is (nearly) a combination of the others. */
#include "lsq.h"

#include <math.h>

int mx_lsq(const double *x, int n, int k, const double *y, const int *use, int nuse, double *out)
{
    double scale[MX_LSQ_MAXK], a[MX_LSQ_MAXK][MX_LSQ_MAXK + 1];
    for (int j = 0; j < k; j++) out[j] = NAN;
    if (nuse < 1 || nuse > MX_LSQ_MAXK || n < nuse) return -1;
    for (int j = 0; j < nuse; j++) {
        if (use[j] < 0 || use[j] >= k) return -1;
        scale[j] = 0;
        for (int i = 0; i < n; i++) scale[j] += x[i * k + use[j]] * x[i * k + use[j]];
        if (!(scale[j] > 0) || !isfinite(scale[j])) return -1;
        scale[j] = sqrt(scale[j]);
    }
    for (int j = 0; j < nuse; j++)
        for (int m = 0; m <= nuse; m++) a[j][m] = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < nuse; j++) {
            const double xj = x[i * k + use[j]] / scale[j];
            for (int m = 0; m < nuse; m++) a[j][m] += xj * x[i * k + use[m]] / scale[m];
            a[j][nuse] += xj * y[i];
        }
    for (int c = 0; c < nuse; c++) {
        int piv = c;
        for (int r = c + 1; r < nuse; r++)
            if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
        if (!(fabs(a[piv][c]) >= 1e-9)) return -1;
        for (int m = 0; m <= nuse; m++) {
            const double t = a[c][m];
            a[c][m] = a[piv][m];
            a[piv][m] = t;
        }
        for (int r = 0; r < nuse; r++) {
            if (r == c) continue;
            const double f = a[r][c] / a[c][c];
            for (int m = c; m <= nuse; m++) a[r][m] -= f * a[c][m];
        }
    }
    for (int j = 0; j < nuse; j++) out[use[j]] = a[j][nuse] / a[j][j] / scale[j];
    return 0;
}

int mx_lsq_first(const double *x, int n, int k, const double *y, const int (*sets)[MX_LSQ_MAXK], const int *sizes,
                 int nsets, double *out)
{
    for (int s = 0; s < nsets; s++)
        if (mx_lsq(x, n, k, y, sets[s], sizes[s], out) == 0) return s;
    for (int j = 0; j < k; j++) out[j] = NAN;
    return -1;
}
