/* Statistics for benchmark samples; see stats.h for the contract of each function. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orthros.h"

/* ---- Seeded generator: xoshiro256** with its state filled by splitmix64, as its authors recommend. ---- */

typedef struct {
    uint64_t s[4];
} stats_rng;

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(stats_rng *r, uint64_t seed)
{
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&sm);
}

static uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(stats_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform in [0, n) without modulo bias: draws below 2^64 mod n are rejected. */
static size_t rng_below(stats_rng *r, size_t n)
{
    uint64_t un = (uint64_t)n;
    uint64_t threshold = (0 - un) % un;
    for (;;) {
        uint64_t v = rng_next(r);
        if (v >= threshold)
            return (size_t)(v % un);
    }
}

/* ---- Helpers ---- */

static int check_samples(const double *x, size_t n, const char *what)
{
    if (!x || n == 0)
        return orthros_error(ORTHROS_EINVAL, "%s: no samples", what);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return orthros_error(ORTHROS_EINVAL, "%s: sample %zu is not finite", what, i);
    return 0;
}

static int check_level(double level, const char *what)
{
    if (!(level > 0.0 && level < 1.0))
        return orthros_error(ORTHROS_EINVAL, "%s: confidence level %g is not in (0, 1)", what, level);
    return 0;
}

static int check_resamples(size_t n_resamples, const char *what)
{
    if (n_resamples == 0 || n_resamples > ORTHROS_STATS_MAX_RESAMPLES)
        return orthros_error(ORTHROS_EINVAL, "%s: %zu resamples is not in [1, %d]", what, n_resamples,
                             ORTHROS_STATS_MAX_RESAMPLES);
    return 0;
}

/* A sorted heap copy of x, or NULL with the error recorded. */
static double *sorted_copy(const double *x, size_t n, const char *what)
{
    double *c = malloc(n * sizeof *c);
    if (!c) {
        orthros_error(ORTHROS_ENOMEM, "%s: cannot allocate %zu samples", what, n);
        return NULL;
    }
    memcpy(c, x, n * sizeof *c);
    qsort(c, n, sizeof *c, orthros_cmp_double);
    return c;
}

static double median3(double a, double b, double c)
{
    if (a > b) {
        double t = a;
        a = b;
        b = t;
    }
    if (b > c)
        b = c;
    return a > b ? a : b;
}

/* Partially orders a[n] so that a[k] is the k-th smallest, everything before it <= a[k] and everything
 * after it >= a[k] (Hoare quickselect); a resample's median then costs O(n) instead of a sort. */
static void select_kth(double *a, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
    while (lo < hi) {
        double pivot = median3(a[lo], a[lo + (hi - lo) / 2], a[hi]);
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            break; /* a[j+1 .. i-1] all equal the pivot */
    }
}

/* Median of a[n], reordering a; the same interpolation as orthros_stats_quantile_sorted at p = 0.5. */
static double median_inplace(double *a, size_t n)
{
    size_t k = (n - 1) / 2;
    select_kth(a, n, k);
    if (n % 2)
        return a[k];
    double next = a[k + 1];
    for (size_t i = k + 2; i < n; i++)
        if (a[i] < next)
            next = a[i];
    return a[k] + 0.5 * (next - a[k]);
}

/* ---- Order statistics and moments ---- */

double orthros_stats_quantile_sorted(const double *sorted, size_t n, double p)
{
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = h - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int orthros_stats_quantile(double *out, const double *x, size_t n, double p)
{
    int rc = check_samples(x, n, "quantile");
    if (rc)
        return rc;
    if (!(p >= 0.0 && p <= 1.0))
        return orthros_error(ORTHROS_EINVAL, "quantile: p = %g is not in [0, 1]", p);
    double *s = sorted_copy(x, n, "quantile");
    if (!s)
        return ORTHROS_ENOMEM;
    *out = orthros_stats_quantile_sorted(s, n, p);
    free(s);
    return 0;
}

int orthros_stats_median(double *out, const double *x, size_t n)
{
    return orthros_stats_quantile(out, x, n, 0.5);
}

int orthros_stats_min(double *out, const double *x, size_t n)
{
    int rc = check_samples(x, n, "min");
    if (rc)
        return rc;
    double m = x[0];
    for (size_t i = 1; i < n; i++)
        if (x[i] < m)
            m = x[i];
    *out = m;
    return 0;
}

int orthros_stats_max(double *out, const double *x, size_t n)
{
    int rc = check_samples(x, n, "max");
    if (rc)
        return rc;
    double m = x[0];
    for (size_t i = 1; i < n; i++)
        if (x[i] > m)
            m = x[i];
    *out = m;
    return 0;
}

static double mean_of(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / (double)n;
}

/* Two passes (mean, then squared deviations) to avoid the cancellation of the sum-of-squares formula. */
static double stdev_of(const double *x, size_t n, double mean)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - mean;
        ss += d * d;
    }
    return sqrt(ss / (double)(n - 1));
}

int orthros_stats_mean(double *out, const double *x, size_t n)
{
    int rc = check_samples(x, n, "mean");
    if (rc)
        return rc;
    *out = mean_of(x, n);
    return 0;
}

int orthros_stats_stdev(double *out, const double *x, size_t n)
{
    int rc = check_samples(x, n, "stdev");
    if (rc)
        return rc;
    if (n < 2)
        return orthros_error(ORTHROS_EINVAL, "stdev: needs at least 2 samples, got %zu", n);
    *out = stdev_of(x, n, mean_of(x, n));
    return 0;
}

int orthros_stats_cv(double *out, const double *x, size_t n)
{
    int rc = check_samples(x, n, "cv");
    if (rc)
        return rc;
    if (n < 2)
        return orthros_error(ORTHROS_EINVAL, "cv: needs at least 2 samples, got %zu", n);
    double m = mean_of(x, n);
    if (m == 0.0)
        return orthros_error(ORTHROS_ERANGE, "cv: the mean is 0");
    *out = stdev_of(x, n, m) / fabs(m);
    return 0;
}

/* ---- Bootstrap ---- */

static void resample_into(double *dst, const double *x, size_t n, stats_rng *r)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = x[rng_below(r, n)];
}

/* The percentile interval: the (1-level)/2 and (1+level)/2 quantiles of the bootstrap statistics. */
static void percentile_interval(double *lo, double *hi, double *stat, size_t n_resamples, double level)
{
    qsort(stat, n_resamples, sizeof *stat, orthros_cmp_double);
    *lo = orthros_stats_quantile_sorted(stat, n_resamples, 0.5 * (1.0 - level));
    *hi = orthros_stats_quantile_sorted(stat, n_resamples, 0.5 * (1.0 + level));
}

int orthros_stats_bootstrap_median_ci(double *lo, double *hi, const double *x, size_t n, double level,
                                      size_t n_resamples, uint64_t seed)
{
    const char *what = "bootstrap median interval";
    int rc = check_samples(x, n, what);
    if (!rc)
        rc = check_level(level, what);
    if (!rc)
        rc = check_resamples(n_resamples, what);
    if (rc)
        return rc;
    double *buf = malloc((n + n_resamples) * sizeof *buf);
    if (!buf)
        return orthros_error(ORTHROS_ENOMEM, "%s: cannot allocate %zu doubles", what, n + n_resamples);
    double *resample = buf, *stat = buf + n;
    stats_rng r;
    rng_seed(&r, seed);
    for (size_t b = 0; b < n_resamples; b++) {
        resample_into(resample, x, n, &r);
        stat[b] = median_inplace(resample, n);
    }
    percentile_interval(lo, hi, stat, n_resamples, level);
    free(buf);
    return 0;
}

int orthros_stats_bootstrap_ratio_of_sums_ci(double *lo, double *hi, const double *num, const double *den, size_t n,
                                              double level, size_t n_resamples, uint64_t seed)
{
    const char *what = "bootstrap ratio-of-sums interval";
    int rc = check_samples(num, n, what);
    if (!rc)
        rc = check_samples(den, n, what);
    if (!rc)
        rc = check_level(level, what);
    if (!rc)
        rc = check_resamples(n_resamples, what);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (!(den[i] > 0))
            return orthros_error(ORTHROS_EINVAL, "%s: denominator %zu is %g, not positive", what, i, den[i]);
    double *stat = malloc(n_resamples * sizeof *stat);
    if (!stat)
        return orthros_error(ORTHROS_ENOMEM, "%s: cannot allocate %zu doubles", what, n_resamples);
    stats_rng r;
    rng_seed(&r, seed);
    for (size_t b = 0; b < n_resamples; b++) {
        double sn = 0, sd = 0;
        for (size_t i = 0; i < n; i++) {
            size_t k = rng_below(&r, n);
            sn += num[k], sd += den[k];
        }
        stat[b] = sn / sd;
    }
    percentile_interval(lo, hi, stat, n_resamples, level);
    free(stat);
    return 0;
}

/* Two-stage resample of x[n] cut into k groups (ends[j] is one past group j's last index, ends[k-1] == n):
 * k groups drawn with replacement, then each drawn group's own number of samples drawn with replacement from
 * it. With one group no group is drawn, so this is resample_into. Returns the resample's length. */
static size_t resample_grouped_into(double *dst, const double *x, const size_t *ends, size_t k, stats_rng *r)
{
    size_t m = 0;
    for (size_t j = 0; j < k; j++) {
        size_t g = k > 1 ? rng_below(r, k) : 0, lo = g ? ends[g - 1] : 0;
        resample_into(dst + m, x + lo, ends[g] - lo, r);
        m += ends[g] - lo;
    }
    return m;
}

/* Checks the group ends of one side and returns its largest group in *max_group. */
static int check_groups(size_t *max_group, const size_t *ends, size_t k, size_t n, const char *what, const char *side)
{
    *max_group = 0;
    if (k == 0) return orthros_error(ORTHROS_EINVAL, "%s: no groups in the %s samples", what, side);
    for (size_t j = 0; j < k; j++) {
        size_t lo = j ? ends[j - 1] : 0;
        if (ends[j] <= lo || ends[j] > n)
            return orthros_error(ORTHROS_EINVAL, "%s: group %zu of the %s samples is empty or out of range", what, j,
                                 side);
        if (ends[j] - lo > *max_group) *max_group = ends[j] - lo;
    }
    if (ends[k - 1] != n)
        return orthros_error(ORTHROS_EINVAL, "%s: the %s groups end at %zu, not at %zu", what, side, ends[k - 1], n);
    return 0;
}

int orthros_stats_bootstrap_ratio_ci_grouped(double *lo, double *hi, const double *x_new, size_t n_new,
                                             const size_t *ends_new, size_t k_new, const double *x_base,
                                             size_t n_base, const size_t *ends_base, size_t k_base, double level,
                                             size_t n_resamples, uint64_t seed)
{
    const char *what = "bootstrap ratio interval";
    size_t one_new = n_new, one_base = n_base, max_new = 0, max_base = 0;
    if (!ends_new) ends_new = &one_new, k_new = 1;
    if (!ends_base) ends_base = &one_base, k_base = 1;
    int rc = check_samples(x_new, n_new, what);
    if (!rc)
        rc = check_samples(x_base, n_base, what);
    if (!rc)
        rc = check_level(level, what);
    if (!rc)
        rc = check_resamples(n_resamples, what);
    if (!rc)
        rc = check_groups(&max_new, ends_new, k_new, n_new, what, "new");
    if (!rc)
        rc = check_groups(&max_base, ends_base, k_base, n_base, what, "base");
    if (rc)
        return rc;
    /* Positive base samples keep every resample median, the denominator, positive. */
    for (size_t i = 0; i < n_base; i++)
        if (!(x_base[i] > 0.0))
            return orthros_error(ORTHROS_EINVAL, "%s: base sample %zu is %g, not > 0", what, i, x_base[i]);
    /* A resample of a side holds at most k times its largest group. */
    size_t cap_new = k_new * max_new, cap_base = k_base * max_base;
    double *buf = malloc((cap_new + cap_base + n_resamples) * sizeof *buf);
    if (!buf)
        return orthros_error(ORTHROS_ENOMEM, "%s: cannot allocate %zu doubles", what,
                             cap_new + cap_base + n_resamples);
    double *rs_new = buf, *rs_base = buf + cap_new, *stat = buf + cap_new + cap_base;
    stats_rng r;
    rng_seed(&r, seed);
    for (size_t b = 0; b < n_resamples; b++) {
        size_t m_new = resample_grouped_into(rs_new, x_new, ends_new, k_new, &r);
        size_t m_base = resample_grouped_into(rs_base, x_base, ends_base, k_base, &r);
        stat[b] = median_inplace(rs_new, m_new) / median_inplace(rs_base, m_base);
    }
    percentile_interval(lo, hi, stat, n_resamples, level);
    free(buf);
    return 0;
}

int orthros_stats_bootstrap_ratio_ci(double *lo, double *hi, const double *x_new, size_t n_new,
                                     const double *x_base, size_t n_base, double level, size_t n_resamples,
                                     uint64_t seed)
{
    return orthros_stats_bootstrap_ratio_ci_grouped(lo, hi, x_new, n_new, NULL, 1, x_base, n_base, NULL, 1, level,
                                                    n_resamples, seed);
}

/* ---- Mann-Whitney U ---- */

typedef struct {
    double v;
    int from_x;
} labelled;

static int cmp_labelled(const void *a, const void *b)
{
    return orthros_cmp_double(&((const labelled *)a)->v, &((const labelled *)b)->v);
}

/* P(U >= u_obs) under H0 without ties. The counts of arrangements of m x's and n y's by U are the
 * coefficients of the Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built
 * one factor at a time: multiplying by (1 - q^s) and dividing (exactly) by (1 - q^i) are each one pass over
 * the coefficients. Counts stay below C(40, 20) ~ 1.4e11, exact in int64 and in double. */
static double mwu_exact_upper(size_t m, size_t n, size_t u_obs)
{
    enum { MAXC = ORTHROS_STATS_MWU_EXACT_MAX * ORTHROS_STATS_MWU_EXACT_MAX + ORTHROS_STATS_MWU_EXACT_MAX + 1 };
    int64_t c[MAXC];
    memset(c, 0, sizeof c);
    c[0] = 1;
    size_t deg = 0;
    for (size_t i = 1; i <= m; i++) {
        size_t s = n + i;
        for (size_t u = deg + s; u >= s; u--)
            c[u] -= c[u - s];
        for (size_t u = i; u <= deg + s; u++)
            c[u] += c[u - i];
        deg += n;
    }
    int64_t total = 0, upper = 0;
    for (size_t u = 0; u <= deg; u++) {
        total += c[u];
        if (u >= u_obs)
            upper += c[u];
    }
    return (double)upper / (double)total;
}

int orthros_stats_mann_whitney(orthros_mwu *out, const double *x, size_t nx, const double *y, size_t ny)
{
    const char *what = "Mann-Whitney test";
    int rc = check_samples(x, nx, what);
    if (!rc)
        rc = check_samples(y, ny, what);
    if (rc)
        return rc;
    size_t n = nx + ny;
    labelled *a = malloc(n * sizeof *a);
    if (!a)
        return orthros_error(ORTHROS_ENOMEM, "%s: cannot allocate %zu samples", what, n);
    for (size_t i = 0; i < nx; i++)
        a[i] = (labelled){x[i], 1};
    for (size_t j = 0; j < ny; j++)
        a[nx + j] = (labelled){y[j], 0};
    qsort(a, n, sizeof *a, cmp_labelled);

    /* Rank sum of x with tied values sharing the average of their ranks; tie_term = sum (t^3 - t). */
    double rank_sum_x = 0.0, tie_term = 0.0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j].v == a[i].v)
            j++;
        double t = (double)(j - i), avg_rank = 0.5 * (double)(i + 1 + j);
        for (size_t k = i; k < j; k++)
            if (a[k].from_x)
                rank_sum_x += avg_rank;
        tie_term += t * t * t - t;
        i = j;
    }
    free(a);

    double dnx = (double)nx, dny = (double)ny, dn = (double)n;
    double u = rank_sum_x - dnx * (dnx + 1.0) / 2.0;
    orthros_mwu res = {u, 1.0, 0};
    if (tie_term == 0.0 && nx <= ORTHROS_STATS_MWU_EXACT_MAX && ny <= ORTHROS_STATS_MWU_EXACT_MAX) {
        res.p = mwu_exact_upper(nx, ny, (size_t)llround(u));
        res.exact = 1;
    } else {
        double mu = dnx * dny / 2.0;
        double var = dnx * dny / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0)));
        /* With every value tied there is no evidence either way. */
        if (var > 0.0) {
            double z = (u - mu - 0.5) / sqrt(var);
            res.p = 0.5 * erfc(z / sqrt(2.0));
        }
    }
    *out = res;
    return 0;
}

/* ---- Holm-Bonferroni ---- */

typedef struct {
    double p;
    size_t idx;
} indexed_p;

/* Ties broken by index so that the order, and therefore the result, never depends on qsort. */
static int cmp_indexed_p(const void *a, const void *b)
{
    const indexed_p *x = a, *y = b;
    if (x->p != y->p)
        return (x->p > y->p) - (x->p < y->p);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int orthros_stats_holm(double *adj, const double *p, size_t n)
{
    if (!adj || !p || n == 0)
        return orthros_error(ORTHROS_EINVAL, "Holm correction: no p-values");
    for (size_t i = 0; i < n; i++)
        if (!(p[i] >= 0.0 && p[i] <= 1.0))
            return orthros_error(ORTHROS_EINVAL, "Holm correction: p-value %zu is %g, not in [0, 1]", i, p[i]);
    indexed_p *s = malloc(n * sizeof *s);
    if (!s)
        return orthros_error(ORTHROS_ENOMEM, "Holm correction: cannot allocate %zu p-values", n);
    for (size_t i = 0; i < n; i++)
        s[i] = (indexed_p){p[i], i};
    qsort(s, n, sizeof *s, cmp_indexed_p);
    /* The i-th smallest p is multiplied by (n - i); the running maximum makes the result monotone. */
    double running = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = (double)(n - i) * s[i].p;
        if (v > 1.0)
            v = 1.0;
        if (v > running)
            running = v;
        adj[s[i].idx] = running;
    }
    free(s);
    return 0;
}

/* ---- Wilson ---- */

int orthros_stats_wilson(double *lo, double *hi, int64_t k, int64_t n, double z)
{
    if (n < 1 || k < 0 || k > n)
        return orthros_error(ORTHROS_EINVAL, "Wilson interval: %lld successes of %lld trials",
                             (long long)k, (long long)n);
    if (!(z > 0.0) || !isfinite(z))
        return orthros_error(ORTHROS_EINVAL, "Wilson interval: z = %g is not > 0", z);
    double dn = (double)n, ph = (double)k / dn, z2 = z * z;
    double denom = 1.0 + z2 / dn;
    double center = (ph + z2 / (2.0 * dn)) / denom;
    double half = z * sqrt(ph * (1.0 - ph) / dn + z2 / (4.0 * dn * dn)) / denom;
    /* The bounds are exactly 0 and 1 at k = 0 and k = n; rounding must not push them outside. */
    *lo = k == 0 ? 0.0 : fmax(0.0, center - half);
    *hi = k == n ? 1.0 : fmin(1.0, center + half);
    return 0;
}

/* ---- Summary ---- */

int orthros_stats_fill(orthros_stats *out, const double *x, size_t n, double level, size_t n_resamples,
                       uint64_t seed)
{
    int rc = check_samples(x, n, "statistics");
    if (rc)
        return rc;
    double *s = sorted_copy(x, n, "statistics");
    if (!s)
        return ORTHROS_ENOMEM;
    orthros_stats st;
    st.n = n;
    st.median = orthros_stats_quantile_sorted(s, n, 0.5);
    st.q1 = orthros_stats_quantile_sorted(s, n, 0.25);
    st.q3 = orthros_stats_quantile_sorted(s, n, 0.75);
    st.min = s[0];
    st.max = s[n - 1];
    free(s);
    st.mean = mean_of(x, n);
    st.stdev = n >= 2 ? stdev_of(x, n, st.mean) : NAN;
    st.cv = n >= 2 && st.mean != 0.0 ? st.stdev / fabs(st.mean) : NAN;
    st.ci_lo = st.ci_hi = NAN;
    if (n_resamples > 0) {
        rc = orthros_stats_bootstrap_median_ci(&st.ci_lo, &st.ci_hi, x, n, level, n_resamples, seed);
        if (rc)
            return rc;
    }
    *out = st;
    return 0;
}
