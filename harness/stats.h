/* Statistics for benchmark samples: order statistics, moments, bootstrap intervals, the one-sided
 * Mann-Whitney U test, Holm-Bonferroni correction and Wilson intervals (DESIGN section 5: bench and compare).
 *
 * Every function takes the caller's samples as const and never reorders them. Functions that need sorted
 * data copy the samples into one heap scratch buffer per call (noted per function) and return
 * ORTHROS_ENOMEM if it cannot be had; the *_sorted helper never allocates. Samples must be finite: a NaN or
 * an infinity is rejected with ORTHROS_EINVAL, as is an empty sample. Functions return 0 or a negative
 * ORTHROS_E* code and write outputs only on success. Randomness comes from a seeded generator private to
 * this module (xoshiro256** seeded through splitmix64), so every result is a pure function of its inputs
 * and seed. */
#ifndef ORTHROS_STATS_H
#define ORTHROS_STATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Two-sided 95% standard normal quantile, for orthros_stats_wilson. */
#define ORTHROS_STATS_Z95 1.959963984540054
/* The Mann-Whitney test is exact when both samples have at most this many values and there are no ties. */
#define ORTHROS_STATS_MWU_EXACT_MAX 20
/* Cap on bootstrap resamples, to bound time and the resample buffer. */
#define ORTHROS_STATS_MAX_RESAMPLES 1000000

/* Summary of one measurement's raw samples. q1/q3 are the 0.25/0.75 quantiles (type 7); stdev is the
 * sample standard deviation (n - 1) and cv = stdev / |mean|; both are NAN when undefined (n < 2, or
 * mean == 0 for cv). ci_lo/ci_hi bound a percentile-bootstrap interval of the median, NAN when no
 * bootstrap was asked for. cJSON writes NAN as null. */
typedef struct {
    size_t n;
    double median, q1, q3;
    double min, max;
    double mean, stdev, cv;
    double ci_lo, ci_hi;
} orthros_stats;

/* Percentile-bootstrap interval of sum(num) / sum(den) over n units (the windows of a perplexity run: num their
 * summed NLL, den their token counts), units drawn with replacement. den must be > 0. Scratch: n_resamples
 * doubles. */
int orthros_stats_bootstrap_ratio_of_sums_ci(double *lo, double *hi, const double *num, const double *den, size_t n,
                                              double level, size_t n_resamples, uint64_t seed);

/* One-sided Mann-Whitney U test result. u counts pairs with x > y, ties counting 1/2 (so 0 <= u <= nx*ny);
 * p is P(U >= u) under H0 (x and y from one distribution): small p says x is stochastically greater.
 * exact is 1 when p comes from the exact null distribution, 0 for the normal approximation. */
typedef struct {
    double u;
    double p;
    int exact;
} orthros_mwu;

/* Quantile p in [0, 1] of an ascending, finite array of n >= 1 values, by linear interpolation between
 * order statistics (Hyndman-Fan type 7, the default of R and numpy). No checks, no allocation. */
double orthros_stats_quantile_sorted(const double *sorted, size_t n, double p);

/* Quantile (type 7) and median of x[n]. One n-double scratch copy. */
int orthros_stats_quantile(double *out, const double *x, size_t n, double p);
int orthros_stats_median(double *out, const double *x, size_t n);

/* No allocation. orthros_stats_stdev needs n >= 2; orthros_stats_cv fails with ORTHROS_ERANGE when the
 * mean is 0. */
int orthros_stats_min(double *out, const double *x, size_t n);
int orthros_stats_max(double *out, const double *x, size_t n);
int orthros_stats_mean(double *out, const double *x, size_t n);
int orthros_stats_stdev(double *out, const double *x, size_t n);
int orthros_stats_cv(double *out, const double *x, size_t n);

/* Percentile-bootstrap interval at `level` (in (0, 1), e.g. 0.95) of the median of x[n], from
 * n_resamples resamples drawn with replacement by a generator seeded with `seed`. Scratch: n + n_resamples
 * doubles. */
int orthros_stats_bootstrap_median_ci(double *lo, double *hi, const double *x, size_t n, double level,
                                      size_t n_resamples, uint64_t seed);

/* Percentile-bootstrap interval of median(x_new) / median(x_base) for two independent samples, each
 * resampled separately. Base samples must be > 0 so that no resample median is 0. Scratch:
 * n_new + n_base + n_resamples doubles. */
int orthros_stats_bootstrap_ratio_ci(double *lo, double *hi, const double *x_new, size_t n_new,
                                     const double *x_base, size_t n_base, double level, size_t n_resamples,
                                     uint64_t seed);

/* The same for samples that come in groups (the rounds of an interleaved benchmark run): a two-stage
 * bootstrap that draws each side's groups with replacement, then samples with replacement within each drawn
 * group, so that a drift between rounds widens the interval instead of passing for a difference. ends[j] is
 * one past the last index of group j (ends[k - 1] == n); ends == NULL means one group, and then the result is
 * exactly orthros_stats_bootstrap_ratio_ci's. Scratch: k times the largest group per side, plus n_resamples
 * doubles. */
int orthros_stats_bootstrap_ratio_ci_grouped(double *lo, double *hi, const double *x_new, size_t n_new,
                                             const size_t *ends_new, size_t k_new, const double *x_base,
                                             size_t n_base, const size_t *ends_base, size_t k_base, double level,
                                             size_t n_resamples, uint64_t seed);

/* One-sided Mann-Whitney U test of "x stochastically greater than y", with average ranks for ties. Exact
 * (dynamic programming over the null distribution) when nx, ny <= ORTHROS_STATS_MWU_EXACT_MAX and no value
 * is tied; otherwise the normal approximation with tie and continuity corrections (p = 1 when every value
 * is tied). Scratch: nx + ny values with labels. */
int orthros_stats_mann_whitney(orthros_mwu *out, const double *x, size_t nx, const double *y, size_t ny);

/* Holm-Bonferroni step-down adjustment of p[n] (each in [0, 1]) into adj[n], in the input order: adjusted
 * values are monotone in the order of the raw ones and capped at 1. adj may alias p. Scratch: n pairs. */
int orthros_stats_holm(double *adj, const double *p, size_t n);

/* Wilson score interval for k successes in n >= 1 trials at normal quantile z > 0 (ORTHROS_STATS_Z95 for
 * 95%). No allocation. */
int orthros_stats_wilson(double *lo, double *hi, int64_t k, int64_t n, double z);

/* Fills every field of *out from x[n]. n_resamples == 0 skips the bootstrap (ci_lo = ci_hi = NAN); else
 * the interval is orthros_stats_bootstrap_median_ci at `level` with `seed`. */
int orthros_stats_fill(orthros_stats *out, const double *x, size_t n, double level, size_t n_resamples,
                       uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
