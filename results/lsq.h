/* Small least squares for the projection's fits (kvstore/calls.c's alpha-beta-gamma per step,
 * project.c's compute line): a few named columns, some of which the data may not tell apart,
 * so the caller lists the subsets to try in order of preference and gets the first that the
 * data determine. */
#ifndef MX_LSQ_H
#define MX_LSQ_H

#define MX_LSQ_MAXK 4 /* columns */

/* Least squares of y[0..n) on the columns use[0..nuse) of x (row-major, n rows of k columns),
 * each column scaled to unit length first so that columns of different units compare. out[k]
 * gets the coefficients of the used columns and NaN elsewhere. 0, or -1 when the used columns
 * are not independent (or fewer rows than columns): the data cannot tell them apart. */
int mx_lsq(const double *x, int n, int k, const double *y, const int *use, int nuse, double *out);

/* Tries the subsets sets[0..nsets) (each sizes[s] column indices) in turn; returns the index
 * of the first the data determine, with out filled as mx_lsq, or -1 (out all NaN). */
int mx_lsq_first(const double *x, int n, int k, const double *y, const int (*sets)[MX_LSQ_MAXK], const int *sizes,
                 int nsets, double *out);

#endif
