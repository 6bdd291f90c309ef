/* Tests of bench/stats.c against values computed by hand (shown in the comments) or by independent
 * brute force inside this file. Prints "N passed, N failed" and exits non-zero on any failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "orthros.h"
#include "testutil.h"
#include "stats.h"


#define CHECK_NEAR(got, want, tol)                                                                           \
    CHECK(fabs((double)(got) - (double)(want)) <= (tol), "%s = %.17g, want %.17g (tol %g)", #got,           \
          (double)(got), (double)(want), (double)(tol))

#define CHECK_RC(expr, want)                                                                                 \
    do {                                                                                                     \
        int rc_ = (expr);                                                                                    \
        CHECK(rc_ == (want), "%s returned %d, want %d (%s)", #expr, rc_, (want), orthros_last_error());      \
    } while (0)

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void test_order_statistics(void)
{
    double v;
    /* {3,1,2,10} sorted is {1,2,3,10}; the median is (2 + 3) / 2 = 2.5. */
    const double a[] = {3, 1, 2, 10};
    CHECK_RC(orthros_stats_median(&v, a, 4), 0);
    CHECK_NEAR(v, 2.5, 0);
    /* The caller's array is not reordered. */
    CHECK(a[0] == 3 && a[1] == 1 && a[2] == 2 && a[3] == 10, "input reordered");

    /* {15,3,9,21,6,12} sorted is {3,6,9,12,15,21}, n = 6. Type 7: h = (n-1) p = 5p,
     * q = s[floor h] + (h - floor h) (s[floor h + 1] - s[floor h]):
     *   p = 0    -> s[0] = 3
     *   p = 0.25 -> h = 1.25 -> 6 + 0.25 * 3  = 6.75
     *   p = 0.5  -> h = 2.5  -> 9 + 0.5 * 3   = 10.5
     *   p = 0.75 -> h = 3.75 -> 12 + 0.75 * 3 = 14.25
     *   p = 0.9  -> h = 4.5  -> 15 + 0.5 * 6  = 18
     *   p = 1    -> s[5] = 21
     * (numpy.percentile([3,6,9,12,15,21], [0,25,50,75,90,100]) gives the same.) */
    const double b[] = {15, 3, 9, 21, 6, 12};
    const double ps[] = {0, 0.25, 0.5, 0.75, 0.9, 1};
    const double want[] = {3, 6.75, 10.5, 14.25, 18, 21};
    for (size_t i = 0; i < COUNT(ps); i++) {
        CHECK_RC(orthros_stats_quantile(&v, b, 6, ps[i]), 0);
        CHECK_NEAR(v, want[i], 1e-12);
    }
    CHECK(b[0] == 15 && b[5] == 12, "input reordered");
    /* Odd n: {5,1,4} -> {1,4,5}, median 4; one sample: every quantile is it. */
    const double c[] = {5, 1, 4};
    CHECK_RC(orthros_stats_median(&v, c, 3), 0);
    CHECK_NEAR(v, 4, 0);
    const double one[] = {7.5};
    CHECK_RC(orthros_stats_quantile(&v, one, 1, 0.3), 0);
    CHECK_NEAR(v, 7.5, 0);

    /* min 3, max 21, mean 66 / 6 = 11; deviations -8 -5 -2 1 4 10, squares 64 25 4 1 16 100 = 210,
     * sample variance 210 / 5 = 42, stdev sqrt(42) = 6.48074069840786, cv = 6.48074069840786 / 11
     * = 0.589158245309806. */
    CHECK_RC(orthros_stats_min(&v, b, 6), 0);
    CHECK_NEAR(v, 3, 0);
    CHECK_RC(orthros_stats_max(&v, b, 6), 0);
    CHECK_NEAR(v, 21, 0);
    CHECK_RC(orthros_stats_mean(&v, b, 6), 0);
    CHECK_NEAR(v, 11, 1e-12);
    CHECK_RC(orthros_stats_stdev(&v, b, 6), 0);
    CHECK_NEAR(v, 6.48074069840786, 1e-12);
    CHECK_RC(orthros_stats_cv(&v, b, 6), 0);
    CHECK_NEAR(v, 0.589158245309806, 1e-12);

    /* Errors: empty, non-finite, p outside [0, 1], stdev of one sample, cv with mean 0. */
    const double bad[] = {1, NAN, 3};
    const double inf[] = {1, INFINITY};
    const double zero_mean[] = {-1, 1};
    CHECK_RC(orthros_stats_median(&v, a, 0), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_median(&v, NULL, 3), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_median(&v, bad, 3), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_mean(&v, inf, 2), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_quantile(&v, a, 4, 1.5), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_quantile(&v, a, 4, -0.1), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_quantile(&v, a, 4, NAN), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_stdev(&v, one, 1), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_cv(&v, zero_mean, 2), ORTHROS_ERANGE);
}

static void test_fill(void)
{
    orthros_stats st;
    /* The array of test_order_statistics: median 10.5, q1 6.75, q3 14.25, min 3, max 21, mean 11,
     * stdev sqrt(42), cv sqrt(42) / 11. */
    const double b[] = {15, 3, 9, 21, 6, 12};
    CHECK_RC(orthros_stats_fill(&st, b, 6, 0.95, 2000, 42), 0);
    CHECK(st.n == 6, "n = %zu", st.n);
    CHECK_NEAR(st.median, 10.5, 1e-12);
    CHECK_NEAR(st.q1, 6.75, 1e-12);
    CHECK_NEAR(st.q3, 14.25, 1e-12);
    CHECK_NEAR(st.min, 3, 0);
    CHECK_NEAR(st.max, 21, 0);
    CHECK_NEAR(st.mean, 11, 1e-12);
    CHECK_NEAR(st.stdev, 6.48074069840786, 1e-12);
    CHECK_NEAR(st.cv, 0.589158245309806, 1e-12);
    CHECK(st.ci_lo <= st.median && st.median <= st.ci_hi && st.ci_lo >= 3 && st.ci_hi <= 21,
          "ci [%g, %g] around %g", st.ci_lo, st.ci_hi, st.median);
    double lo, hi;
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, b, 6, 0.95, 2000, 42), 0);
    CHECK(lo == st.ci_lo && hi == st.ci_hi, "fill's interval differs from the direct call");

    /* No bootstrap: NAN bounds. One sample: stdev and cv undefined, the interval is the sample itself. */
    CHECK_RC(orthros_stats_fill(&st, b, 6, 0.95, 0, 42), 0);
    CHECK(isnan(st.ci_lo) && isnan(st.ci_hi), "ci without resamples");
    const double one[] = {4.0};
    CHECK_RC(orthros_stats_fill(&st, one, 1, 0.95, 100, 1), 0);
    CHECK(st.median == 4 && st.q1 == 4 && st.q3 == 4 && st.mean == 4, "one sample");
    CHECK(isnan(st.stdev) && isnan(st.cv), "stdev %g cv %g of one sample", st.stdev, st.cv);
    CHECK(st.ci_lo == 4 && st.ci_hi == 4, "ci [%g, %g] of one sample", st.ci_lo, st.ci_hi);
    CHECK_RC(orthros_stats_fill(&st, one, 0, 0.95, 100, 1), ORTHROS_EINVAL);
}

static void test_bootstrap_median(void)
{
    double lo, hi, lo2, hi2;
    const double x[] = {12.1, 11.8, 12.6, 13.0, 11.9, 12.2, 12.4, 14.9, 12.0, 12.3,
                        12.5, 11.7, 12.8, 12.2, 12.1, 13.3, 12.0, 12.4, 12.6, 11.9};
    double med;
    orthros_stats_median(&med, x, COUNT(x));
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, x, COUNT(x), 0.95, 5000, 7), 0);
    CHECK(lo <= med && med <= hi && lo < hi, "median %g outside [%g, %g]", med, lo, hi);
    /* The interval is made of medians of resamples, so it lies within [min, max]. */
    CHECK(lo >= 11.7 && hi <= 14.9, "[%g, %g] outside the data", lo, hi);
    /* Deterministic for a seed. */
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo2, &hi2, x, COUNT(x), 0.95, 5000, 7), 0);
    CHECK(lo == lo2 && hi == hi2, "seed 7 not reproducible: [%g, %g] vs [%g, %g]", lo, hi, lo2, hi2);
    /* Same seed, same resamples: a lower level gives a nested interval. */
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo2, &hi2, x, COUNT(x), 0.5, 5000, 7), 0);
    CHECK(lo <= lo2 && hi2 <= hi, "50%% [%g, %g] not inside 95%% [%g, %g]", lo2, hi2, lo, hi);

    /* x = {1, 3}: a resample is {1,1}, {1,3}, {3,1} or {3,3}, so its median is 1, 2 or 3 with
     * probabilities 1/4, 1/2, 1/4. With 20000 resamples the 0.025 and 0.975 quantiles are 1 and 3, and
     * the 0.3 and 0.7 quantiles (level 0.4) are 2 (the share of 1s is 0.25 +- 0.003, far from 0.3). */
    const double two[] = {1, 3};
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, two, 2, 0.95, 20000, 3), 0);
    CHECK(lo == 1 && hi == 3, "{1,3} at 95%%: [%g, %g], want [1, 3]", lo, hi);
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, two, 2, 0.4, 20000, 3), 0);
    CHECK(lo == 2 && hi == 2, "{1,3} at 40%%: [%g, %g], want [2, 2]", lo, hi);

    /* Constant data: [c, c]. */
    const double flat[] = {5, 5, 5, 5};
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, flat, 4, 0.95, 100, 1), 0);
    CHECK(lo == 5 && hi == 5, "constant: [%g, %g]", lo, hi);

    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, x, COUNT(x), 1.0, 100, 1), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, x, COUNT(x), 0.0, 100, 1), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_bootstrap_median_ci(&lo, &hi, x, COUNT(x), 0.95, 0, 1), ORTHROS_EINVAL);
}

static void test_bootstrap_ratio(void)
{
    double base[24], scaled[24], lo, hi, lo2, hi2;
    /* Base: 100 ms with a spread of up to +-10%; new = 1.2 x base, so the true ratio of medians is 1.2. */
    for (int i = 0; i < 24; i++) {
        base[i] = 100.0 + (double)((i * 7) % 24 - 12) * 0.8;
        scaled[i] = 1.2 * base[i];
    }
    CHECK_RC(orthros_stats_bootstrap_ratio_ci(&lo, &hi, scaled, 24, base, 24, 0.95, 5000, 11), 0);
    CHECK(lo < 1.2 && 1.2 < hi, "ratio interval [%g, %g] misses 1.2", lo, hi);
    CHECK(lo > 1.0 && hi < 1.45, "ratio interval [%g, %g] implausibly wide", lo, hi);
    CHECK_RC(orthros_stats_bootstrap_ratio_ci(&lo2, &hi2, scaled, 24, base, 24, 0.95, 5000, 11), 0);
    CHECK(lo == lo2 && hi == hi2, "ratio interval not reproducible");
    /* new = base: the interval brackets 1; unequal sizes are fine. */
    CHECK_RC(orthros_stats_bootstrap_ratio_ci(&lo, &hi, base, 24, base, 17, 0.95, 5000, 5), 0);
    CHECK(lo < 1.0 + 1e-12 && 1.0 - 1e-12 < hi, "ratio interval [%g, %g] misses 1", lo, hi);
    /* Constant samples 6 and 3: every resample ratio is exactly 2. */
    const double six[] = {6, 6, 6}, three[] = {3, 3};
    CHECK_RC(orthros_stats_bootstrap_ratio_ci(&lo, &hi, six, 3, three, 2, 0.9, 50, 0), 0);
    CHECK(lo == 2 && hi == 2, "[%g, %g], want [2, 2]", lo, hi);
    const double nonpos[] = {3, 0};
    CHECK_RC(orthros_stats_bootstrap_ratio_ci(&lo, &hi, six, 3, nonpos, 2, 0.9, 50, 0), ORTHROS_EINVAL);
}

/* Grouped (two-stage) bootstrap, by hand. NEW = three rounds of 30 samples, constant 1, 2 and 3; BASE = ten
 * samples of 1. A two-stage resample draws 3 rounds with replacement and then 30 samples within each, so its
 * median (the mean of the 45th and 46th of 90 sorted values) is the middle one of the 3 drawn constants: 1 with
 * probability P(at least two 1s) = (3 * 2 + 1) / 27 = 7/27 = 0.26, likewise 3, else 2. Both tails are far above
 * 2.5%: the 95% interval is [1, 3]. Pooled as one round, a resample median is 1 only when 46 of 90 draws are 1s
 * (a Binomial(90, 1/3) count, mean 30, sd 4.5: 3.5 sd out, p ~ 3e-4), likewise 3: the interval is [2, 2]. The
 * rounds disagree by 2x, so only the grouped interval is honest. */
static void test_bootstrap_ratio_grouped(void)
{
    double x[90], one[10], lo, hi, lo2, hi2;
    for (int i = 0; i < 90; i++) x[i] = 1.0 + (double)(i / 30);
    for (int i = 0; i < 10; i++) one[i] = 1.0;
    const size_t ends[3] = {30, 60, 90}, all = 90, ten = 10;
    CHECK_RC(orthros_stats_bootstrap_ratio_ci_grouped(&lo, &hi, x, 90, ends, 3, one, 10, NULL, 1, 0.95, 5000, 3), 0);
    CHECK(lo == 1 && hi == 3, "grouped interval [%g, %g], want [1, 3]", lo, hi);
    CHECK_RC(orthros_stats_bootstrap_ratio_ci_grouped(&lo, &hi, x, 90, &all, 1, one, 10, &ten, 1, 0.95, 5000, 3), 0);
    CHECK(lo == 2 && hi == 2, "one group: [%g, %g], want [2, 2]", lo, hi);
    /* One group is exactly the ungrouped function, same seed, same draws. */
    CHECK_RC(orthros_stats_bootstrap_ratio_ci(&lo2, &hi2, x, 90, one, 10, 0.95, 5000, 3), 0);
    CHECK(lo == lo2 && hi == hi2, "one group [%g, %g] differs from ungrouped [%g, %g]", lo, hi, lo2, hi2);
    /* Base grouped too: BASE rounds of 1 and 2 against NEW constant 2 give ratios 2, 4/3 or 1 (2 / median of
     * the two drawn base rounds: 1 1 -> 2, 1 2 -> 2 / 1.5, 2 2 -> 1), each tail 1/4: [1, 2]. */
    const double base2[6] = {1, 1, 1, 2, 2, 2}, two[4] = {2, 2, 2, 2};
    const size_t bends[2] = {3, 6};
    CHECK_RC(orthros_stats_bootstrap_ratio_ci_grouped(&lo, &hi, two, 4, NULL, 1, base2, 6, bends, 2, 0.95, 5000, 9), 0);
    CHECK(lo == 1 && hi == 2, "grouped base: [%g, %g], want [1, 2]", lo, hi);
    /* Groups that do not cover the samples, or an empty one, are refused. */
    const size_t short_ends[2] = {30, 60}, empty[3] = {30, 30, 90};
    CHECK_RC(orthros_stats_bootstrap_ratio_ci_grouped(&lo, &hi, x, 90, short_ends, 2, one, 10, NULL, 1, 0.95, 50, 1),
             ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_bootstrap_ratio_ci_grouped(&lo, &hi, x, 90, empty, 3, one, 10, NULL, 1, 0.95, 50, 1),
             ORTHROS_EINVAL);
}

/* ---- Mann-Whitney: independent references ---- */

/* U of x over y by counting pairs (no ranks): x > y counts 1, a tie 1/2. */
static double pairs_u(const double *x, int nx, const double *y, int ny)
{
    double u = 0;
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < ny; j++)
            u += x[i] > y[j] ? 1.0 : x[i] == y[j] ? 0.5 : 0.0;
    return u;
}

/* Exact P(U >= u_obs) by enumerating every way to label m of the m + n sorted positions as x: bit b of
 * mask set means the b-th smallest value is an x; U counts (x position, y position) pairs with the x
 * above. Used for m + n <= 16. */
static double brute_upper(int m, int n, int u_obs)
{
    int total = 0, upper = 0, nn = m + n;
    for (unsigned mask = 0; mask < (1u << nn); mask++) {
        int bits = 0;
        for (unsigned t = mask; t; t &= t - 1)
            bits++;
        if (bits != m)
            continue;
        int u = 0, ys_below = 0;
        for (int b = 0; b < nn; b++) {
            if (mask & (1u << b))
                u += ys_below;
            else
                ys_below++;
        }
        total++;
        upper += u >= u_obs;
    }
    return (double)upper / total;
}

/* The classic recurrence, unlike the library's Gaussian-binomial product: the largest value is an x
 * (beating all n y's) or a y, so f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u). */
static double dp_f[21][21][401];
static void dp_fill(void)
{
    for (int m = 0; m <= 20; m++)
        for (int n = 0; n <= 20; n++)
            for (int u = 0; u <= 400; u++) {
                if (m == 0 || n == 0) {
                    dp_f[m][n][u] = u == 0;
                    continue;
                }
                dp_f[m][n][u] = (u >= n ? dp_f[m - 1][n][u - n] : 0) + dp_f[m][n - 1][u];
            }
}
static double dp_upper(int m, int n, int u_obs)
{
    double total = 0, upper = 0;
    for (int u = 0; u <= m * n; u++) {
        total += dp_f[m][n][u];
        if (u >= u_obs)
            upper += dp_f[m][n][u];
    }
    return upper / total;
}

static uint64_t lcg_state = 12345;
static double lcg_uniform(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) * (1.0 / 9007199254740992.0);
}

static void test_mann_whitney(void)
{
    orthros_mwu r;
    /* x = {4,5,6} above all of y = {1,2,3}: U = 9 = nx*ny. Only 1 of the C(6,3) = 20 labellings has
     * U >= 9, so p = 1/20 = 0.05. */
    const double x1[] = {4, 5, 6}, y1[] = {1, 2, 3};
    CHECK_RC(orthros_stats_mann_whitney(&r, x1, 3, y1, 3), 0);
    CHECK(r.exact == 1, "exact");
    CHECK_NEAR(r.u, 9, 0);
    CHECK_NEAR(r.p, 0.05, 1e-15);
    /* Reversed: U = 0 and p = P(U >= 0) = 1. */
    CHECK_RC(orthros_stats_mann_whitney(&r, y1, 3, x1, 3), 0);
    CHECK_NEAR(r.u, 0, 0);
    CHECK_NEAR(r.p, 1, 1e-15);

    /* x = {1.5,3.5,5}, y = {1,2,3,4}: 1.5 beats 1 (1), 3.5 beats 1,2,3 (3), 5 beats all (4): U = 8 of 12.
     * Under H0 U is symmetric about 6, so P(U >= 8) = P(U <= 4) = (number of partitions of u = 0..4
     * into at most 3 parts each <= 4) / C(7,3): u=0: 1, u=1: 1, u=2: 2 (2, 1+1), u=3: 3 (3, 2+1,
     * 1+1+1), u=4: 4 (4, 3+1, 2+2, 2+1+1) -> 11/35 = 0.314285714285714. */
    const double x2[] = {1.5, 3.5, 5}, y2[] = {1, 2, 3, 4};
    CHECK_RC(orthros_stats_mann_whitney(&r, x2, 3, y2, 4), 0);
    CHECK(r.exact == 1, "exact");
    CHECK_NEAR(r.u, 8, 0);
    CHECK_NEAR(r.p, 11.0 / 35.0, 1e-15);

    /* Random distinct samples of sizes up to 8 + 8 against full enumeration. */
    const int sizes[][2] = {{1, 1}, {1, 5}, {5, 1}, {2, 3}, {4, 4}, {5, 7}, {3, 12}, {8, 8}, {6, 9}};
    for (size_t s = 0; s < COUNT(sizes); s++) {
        int nx = sizes[s][0], ny = sizes[s][1];
        for (int rep = 0; rep < 5; rep++) {
            double x[16], y[16];
            /* The shift makes x tend to be larger, spreading U over its range. */
            for (int i = 0; i < nx; i++)
                x[i] = lcg_uniform() + 0.3 * rep;
            for (int j = 0; j < ny; j++)
                y[j] = lcg_uniform();
            double u = pairs_u(x, nx, y, ny);
            CHECK_RC(orthros_stats_mann_whitney(&r, x, (size_t)nx, y, (size_t)ny), 0);
            CHECK(r.exact == 1, "exact for %dx%d", nx, ny);
            CHECK_NEAR(r.u, u, 0);
            CHECK_NEAR(r.p, brute_upper(nx, ny, (int)u), 1e-13);
        }
    }

    /* 20 x 20 (the largest exact case) against the recurrence: x = {2,4,...,40}, y = {1,3,...,39}: the x
     * at 2i beats i y's, so U = 1 + 2 + ... + 20 = 210; also shifted copies for other U. */
    dp_fill();
    for (int shift = -20; shift <= 20; shift += 5) {
        double x[20], y[20];
        for (int i = 0; i < 20; i++) {
            x[i] = 2.0 * (i + 1) + 2.0 * shift;
            y[i] = 2.0 * i + 1.0;
        }
        double u = pairs_u(x, 20, y, 20);
        CHECK_RC(orthros_stats_mann_whitney(&r, x, 20, y, 20), 0);
        CHECK(r.exact == 1, "exact for 20x20");
        CHECK_NEAR(r.u, u, 0);
        CHECK_NEAR(r.p, dp_upper(20, 20, (int)u), 1e-12);
        if (shift == 0) {
            /* And the normal approximation agrees roughly: mu = 200, var = 400 * 41 / 12 = 1366.67,
             * z = (210 - 200 - 0.5) / 36.968 = 0.25698, p = 0.39860. */
            CHECK_NEAR(u, 210, 0);
            CHECK_NEAR(r.p, 0.3985987096345874, 0.01);
        }
    }
    /* Mixed sizes with the recurrence. */
    {
        double x[20], y[13];
        for (int i = 0; i < 20; i++)
            x[i] = lcg_uniform() + 0.2;
        for (int j = 0; j < 13; j++)
            y[j] = lcg_uniform();
        double u = pairs_u(x, 20, y, 13);
        CHECK_RC(orthros_stats_mann_whitney(&r, x, 20, y, 13), 0);
        CHECK(r.exact == 1, "exact for 20x13");
        CHECK_NEAR(r.p, dp_upper(20, 13, (int)u), 1e-12);
    }

    /* Ties force the normal approximation. x = {3,4,4,5,6}, y = {1,2,3,4}; pooled and sorted:
     * 1y 2y 3x 3y 4x 4x 4y 5x 6x with ranks 1, 2, 3.5, 3.5, 6, 6, 6, 8, 9. R_x = 3.5+6+6+8+9 = 32.5,
     * U = 32.5 - 5*6/2 = 17.5 (pairs: 2.5 + 3.5 + 3.5 + 4 + 4). mu = 20/2 = 10. Ties: a pair (2^3-2 = 6)
     * and a triple (3^3-3 = 24), sum 30. var = 20/12 * ((9+1) - 30/(9*8)) = 15.9722222,
     * sd = 3.99652627, z = (17.5 - 10 - 0.5)/sd = 1.75152108, p = 1 - Phi(z) = 0.0399280969. */
    const double x3[] = {3, 4, 4, 5, 6}, y3[] = {1, 2, 3, 4};
    CHECK_RC(orthros_stats_mann_whitney(&r, x3, 5, y3, 4), 0);
    CHECK(r.exact == 0, "ties: normal approximation");
    CHECK_NEAR(r.u, 17.5, 1e-12);
    CHECK_NEAR(r.p, 0.03992809688675823, 1e-9);

    /* Large, no ties: x = {101..121}, y = {1..21}: U = 21*21 = 441, mu = 220.5,
     * var = 441/12 * 43 = 1580.25, sd = 39.7523584, z = (441 - 220.5 - 0.5)/sd = 5.53426284,
     * p = 1.5627e-8. */
    double x4[21], y4[21];
    for (int i = 0; i < 21; i++) {
        x4[i] = 101 + i;
        y4[i] = 1 + i;
    }
    CHECK_RC(orthros_stats_mann_whitney(&r, x4, 21, y4, 21), 0);
    CHECK(r.exact == 0, "n > 20: normal approximation");
    CHECK_NEAR(r.u, 441, 0);
    CHECK_NEAR(r.p, 1.562699999200441e-08, 1e-13);

    /* Every value tied: U = nx*ny/2 and no evidence, p = 1. */
    const double same[] = {2, 2, 2};
    CHECK_RC(orthros_stats_mann_whitney(&r, same, 3, same, 2), 0);
    CHECK_NEAR(r.u, 3, 0);
    CHECK_NEAR(r.p, 1, 0);

    CHECK_RC(orthros_stats_mann_whitney(&r, x1, 0, y1, 3), ORTHROS_EINVAL);
    const double bad[] = {1, NAN};
    CHECK_RC(orthros_stats_mann_whitney(&r, x1, 3, bad, 2), ORTHROS_EINVAL);
}

static void test_holm(void)
{
    double adj[4];
    /* p = {0.01, 0.04, 0.03, 0.005}. Ascending: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1), times
     * 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; running max: 0.02, 0.03, 0.06, 0.06. In input order:
     * {0.03, 0.06, 0.06, 0.02}. */
    const double p[] = {0.01, 0.04, 0.03, 0.005};
    const double want[] = {0.03, 0.06, 0.06, 0.02};
    CHECK_RC(orthros_stats_holm(adj, p, 4), 0);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(adj[i], want[i], 1e-15);
    /* {0.3, 0.8, 0.9}: 0.3*3 = 0.9, 0.8*2 = 1.6 -> 1, 0.9*1 = 0.9 -> running max 0.9, 1, 1. */
    const double p2[] = {0.3, 0.8, 0.9};
    double adj2[3];
    CHECK_RC(orthros_stats_holm(adj2, p2, 3), 0);
    CHECK_NEAR(adj2[0], 0.9, 1e-15);
    CHECK_NEAR(adj2[1], 1, 0);
    CHECK_NEAR(adj2[2], 1, 0);
    /* In place, with a tie: {0.02, 0.01, 0.02}: 0.01*3 = 0.03, 0.02*2 = 0.04, 0.02*1 -> 0.04:
     * {0.04, 0.03, 0.04}. */
    double p3[] = {0.02, 0.01, 0.02};
    CHECK_RC(orthros_stats_holm(p3, p3, 3), 0);
    CHECK_NEAR(p3[0], 0.04, 1e-15);
    CHECK_NEAR(p3[1], 0.03, 1e-15);
    CHECK_NEAR(p3[2], 0.04, 1e-15);
    /* One p-value is unchanged. */
    const double p4[] = {0.2};
    CHECK_RC(orthros_stats_holm(adj, p4, 1), 0);
    CHECK_NEAR(adj[0], 0.2, 0);
    const double bad[] = {0.1, 1.5};
    CHECK_RC(orthros_stats_holm(adj, bad, 2), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_holm(adj, p, 0), ORTHROS_EINVAL);
}

static void test_wilson(void)
{
    double lo, hi;
    /* 8 of 10, z = 1.96: p^ = 0.8, z^2 = 3.8416, denom = 1 + 3.8416/10 = 1.38416,
     * center = (0.8 + 3.8416/20) / denom = 0.99208 / 1.38416 = 0.716738,
     * half = 1.96 sqrt(0.8*0.2/10 + 3.8416/400) / denom = 1.96 sqrt(0.025604) / 1.38416 = 0.226581,
     * interval [0.490157, 0.943319]. */
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 8, 10, 1.96), 0);
    CHECK_NEAR(lo, 0.4902, 5e-5);
    CHECK_NEAR(hi, 0.9433, 5e-5);
    CHECK_NEAR(lo, 0.49015684672072335, 1e-12);
    CHECK_NEAR(hi, 0.9433190520193067, 1e-12);
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 8, 10, ORTHROS_STATS_Z95), 0);
    CHECK_NEAR(lo, 0.4902, 1e-4);
    CHECK_NEAR(hi, 0.9433, 1e-4);
    /* 0 of 10: lo = 0, hi = (3.8416/10) / 1.38416 = 0.277540; 10 of 10 mirrors it: [0.722460, 1]. */
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 0, 10, 1.96), 0);
    CHECK(lo == 0, "lo = %g", lo);
    CHECK_NEAR(hi, 0.2775401687666166, 1e-12);
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 10, 10, 1.96), 0);
    CHECK_NEAR(lo, 0.7224598312333834, 1e-12);
    CHECK(hi == 1, "hi = %g", hi);
    /* 5 of 10: center 0.5, half = 1.96 sqrt(0.025 + 0.009604) / 1.38416 = 0.263410, [0.236590, 0.763410]. */
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 5, 10, 1.96), 0);
    CHECK_NEAR(lo, 0.23658959361548731, 1e-12);
    CHECK_NEAR(hi, 0.7634104063845126, 1e-12);
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 11, 10, 1.96), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_wilson(&lo, &hi, -1, 10, 1.96), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 0, 0, 1.96), ORTHROS_EINVAL);
    CHECK_RC(orthros_stats_wilson(&lo, &hi, 1, 2, 0.0), ORTHROS_EINVAL);
}

int main(void)
{
    test_order_statistics();
    test_fill();
    test_bootstrap_median();
    test_bootstrap_ratio();
    test_bootstrap_ratio_grouped();
    test_mann_whitney();
    test_holm();
    test_wilson();
    return tu_finish();
}
