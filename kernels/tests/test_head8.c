/* head8's screen on the cpu (kernels/head8_ref.h, the kernels' reference; no GPU): the int8 copy, its bound and the
 * selection, in both forms of the screen (fp32 and integer), on random rows and on rows made to strain them:
 *   - the bound: for every row |s_j q_j . x - W_j . x| (in double) <= c_j ||x||, and the fp32 approximate and exact
 *     sums within B_j = c_j ||x|| of each other; the integer form's approximate logit within its B_j = c_j ||x|| +
 *     d_j ex of the exact one (in double and in fp32), its split within sx / 256 an element and ex of x in norm;
 *   - the selection: the argmax over the candidates is the argmax of the exact logits over all rows;
 *   - rows that strain it: zero, constant, one outlier (its other values quantise to 0), pairs one bf16 step apart
 *     (near-ties the screen cannot split), an input aligned with one row's quantisation error (the Cauchy-Schwarz
 *     bound's worst case), inputs with outlier channels, one row holding a NaN (always a candidate, never the
 *     argmax);
 *   - the screen screens: on random rows it keeps a small part of them (printed; at most a tenth checked).
 * Runs wherever the CUDA code builds (the header's types); labelled cpu. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "head8.h"
#include "head8_ref.h"
#include "orthros_base.h"
#include "testutil.h"

static uint64_t rng_state;
static double urand(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void)
{
    const double u = urand() + 1e-300, v = urand();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
static float bfround(float f) { return orthros_bf16_to_f32(orthros_f32_to_bf16(f)); }

typedef struct {
    int V, K;
    uint16_t *W;
    int8_t *q, *hi, *lo;
    float *s, *c, *d, *approx, *exact, *bound;
} screen;

static void screen_alloc(screen *S, int V, int K)
{
    S->V = V, S->K = K;
    S->W = calloc((size_t)V * K, sizeof *S->W);
    S->q = calloc((size_t)V * K, 1);
    S->hi = calloc((size_t)K, 1), S->lo = calloc((size_t)K, 1);
    S->s = calloc((size_t)V, sizeof(float)), S->c = calloc((size_t)V, sizeof(float));
    S->d = calloc((size_t)V, sizeof(float));
    S->approx = calloc((size_t)V, sizeof(float)), S->exact = calloc((size_t)V, sizeof(float));
    S->bound = calloc((size_t)V, sizeof(float));
    if (!S->W || !S->q || !S->hi || !S->lo || !S->s || !S->c || !S->d || !S->approx || !S->exact || !S->bound) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
}

static void screen_free(screen *S)
{
    free(S->W), free(S->q), free(S->hi), free(S->lo), free(S->s), free(S->c), free(S->d), free(S->approx),
        free(S->exact), free(S->bound);
}

/* The argmax of the exact logits over all rows (cpu_argmax's order). */
static int full_argmax(const float *v, int V)
{
    int best = 0;
    for (int j = 1; j < V; j++)
        if (!isnan(v[j]) && (isnan(v[best]) || v[j] > v[best])) best = j;
    return best;
}

/* The integer screen of x over the copy S holds: the split, the bound against the exact logits in double and in
 * fp32, and the selection; returns the candidates. */
static unsigned check_int_screen(screen *S, const float *x, const char *what)
{
    const int V = S->V, K = S->K;
    float sx = 0.0f, ex = 0.0f;
    unsigned cnt = 0;
    const int got = head8_ref_screen_int(S->q, S->s, S->c, S->d, S->W, x, V, K, S->hi, S->lo, S->approx, S->exact,
                                         S->bound, &sx, &ex, &cnt);
    double en = 0.0, xn = 0.0, emax = 0.0;
    int bad_split = 0, finite = 1;
    for (int k = 0; k < K; k++) {
        const double e = (double)x[k] - (double)sx * ((double)S->hi[k] + S->lo[k] / 256.0);
        en += e * e, xn += (double)x[k] * x[k], emax = fmax(emax, fabs(e));
        bad_split += S->hi[k] == INT8_MIN || S->lo[k] == INT8_MIN; /* int8: only -128 lies outside +-127 */
        finite &= isfinite(x[k]);
    }
    en = sqrt(en), xn = sqrt(xn);
    CHECK(!bad_split, "%s, integer: %d elements split outside +-127", what, bad_split);
    if (finite) {
        /* y = x (1 / sx) is within 2 u of x / sx: 127 2^-23 of a step of sx at most */
        CHECK(emax <= sx * (1.0 / 256.0 + 127.0 * 0x1p-23), "%s, integer: an element's split error %g past sx / 256 = %g", what,
              emax, sx / 256.0);
        CHECK(en <= ex, "%s, integer: ||x - x_q|| %.9g past ex %.9g", what, en, (double)ex);
        CHECK(ex <= en * 1.002 + 1e-30, "%s, integer: ex %.9g well past ||x - x_q|| %.9g", what, (double)ex, en);
    } else {
        CHECK(isnan(ex), "%s, integer: a row holding a NaN or an infinity has ex %g, not NaN", what, (double)ex);
    }
    int bad64 = 0, bad32 = 0;
    double share = 0.0;
    for (int j = 0; j < V; j++) {
        if (isnan(S->exact[j]) || !isfinite(ex)) continue;
        double e64 = 0.0;
        for (int k = 0; k < K; k++) e64 += (double)head8_ref_bf16(S->W[(size_t)j * K + k]) * x[k];
        bad64 += !(fabs((double)S->approx[j] - e64) <= (double)S->bound[j]);
        bad32 += !(fabsf(S->approx[j] - S->exact[j]) <= S->bound[j]);
        const double cx = (double)S->c[j] * xn;
        if (cx > 0.0) share = fmax(share, (double)S->d[j] * ex / cx);
    }
    CHECK(!bad64, "%s, integer: %d rows whose approximate logit is further than B from W . x in double", what, bad64);
    CHECK(!bad32, "%s, integer: %d rows whose approximate and fp32 exact logits are further apart than B", what, bad32);
    const int want = full_argmax(S->exact, V);
    CHECK(got == want, "%s, integer: the screen's argmax %d (%.9g), the exact one %d (%.9g); %u candidates", what, got,
          (double)S->exact[got], want, (double)S->exact[want], cnt);
    printf("%-44s integer: %6u candidates (%.3f%%), d ex at most %.4f of c ||x||\n", what, cnt, 100.0 * cnt / V, share);
    return cnt;
}

/* Quantise, screen x in both forms, and check the bound and the selection; returns the fp32 form's candidates (the
 * integer form's in *int_cnt when asked). */
static unsigned check_screen2(screen *S, const float *x, const char *what, unsigned *int_cnt)
{
    const int V = S->V, K = S->K;
    head8_ref_quantize(S->W, V, K, S->q, S->s, S->c, S->d);
    unsigned cnt = 0;
    const int got = head8_ref_screen(S->q, S->s, S->c, S->W, x, V, K, S->approx, S->exact, S->bound, &cnt);
    double xn = 0.0;
    for (int k = 0; k < K; k++) xn += (double)x[k] * x[k];
    xn = sqrt(xn);
    double worst = 0.0;
    int bad_q = 0, bad_bound = 0, bad_fp32 = 0;
    for (int j = 0; j < V; j++) {
        double d = 0.0, amax = 0.0;
        int qmax = 0;
        for (int k = 0; k < K; k++) {
            const double w = head8_ref_bf16(S->W[(size_t)j * K + k]);
            const int qi = S->q[(size_t)j * K + k];
            d += ((double)S->s[j] * qi - w) * x[k];
            amax = fmax(amax, fabs(w));
            qmax = abs(qi) > qmax ? abs(qi) : qmax;
        }
        bad_q += qmax > 127 || (amax > 0.0 && qmax != 127) || (amax == 0.0 && qmax != 0);
        const double lim = (double)S->c[j] * xn;
        if (isnan(S->exact[j])) continue;
        if (lim > 0.0) worst = fmax(worst, fabs(d) / lim);
        bad_bound += !(fabs(d) <= lim);
        bad_fp32 += !(fabsf(S->approx[j] - S->exact[j]) <= S->bound[j]);
    }
    CHECK(!bad_q, "%s: %d rows whose int8 copy is not max |q| = 127 (0 for a zero row)", what, bad_q);
    CHECK(!bad_bound, "%s: %d rows whose quantisation error passes c ||x|| (worst ratio %.3f)", what, bad_bound, worst);
    CHECK(!bad_fp32, "%s: %d rows whose fp32 approximate and exact logits are further apart than B", what, bad_fp32);
    const int want = full_argmax(S->exact, V);
    CHECK(got == want, "%s: the screen's argmax %d (%.9g), the exact one %d (%.9g); %u candidates", what, got,
          (double)S->exact[got], want, (double)S->exact[want], cnt);
    printf("%-44s V %6d K %5d: %6u candidates (%.3f%%), the error at most %.3f of its bound\n", what, V, K, cnt,
           100.0 * cnt / V, worst);
    int bad_d = 0;
    for (int j = 0; j < V; j++) {
        double qq = 0.0;
        for (int k = 0; k < K; k++) {
            const double sq = (double)S->s[j] * S->q[(size_t)j * K + k];
            qq += sq * sq;
        }
        bad_d += !((double)S->d[j] >= sqrt(qq) && (double)S->d[j] <= sqrt(qq) * (1.0 + 1e-5) + 1e-30);
    }
    CHECK(!bad_d, "%s: %d rows whose d is not ||s q|| (rounded up, with 2^-20 to spare)", what, bad_d);
    const unsigned ic = check_int_screen(S, x, what);
    if (int_cnt) *int_cnt = ic;
    return cnt;
}

static unsigned check_screen(screen *S, const float *x, const char *what) { return check_screen2(S, x, what, NULL); }

/* Random rows (sigma 0.02, as a trained head's), an input of RMS 1 (plus `outliers` channels of 20), bf16. */
static void fill_random(screen *S, float *x, uint64_t seed, int outliers)
{
    rng_state = seed;
    for (size_t i = 0; i < (size_t)S->V * S->K; i++) S->W[i] = orthros_f32_to_bf16((float)(0.02 * nrand()));
    for (int k = 0; k < S->K; k++) x[k] = bfround((float)nrand());
    for (int o = 0; o < outliers; o++) x[(int)(urand() * S->K)] = bfround(20.0f * (urand() < 0.5 ? -1.0f : 1.0f));
}

int main(void)
{
    const int Ks[] = {16, 1040, 2048};
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
        const int K = Ks[ki], V = K == 16 ? 20000 : 3000;
        screen S;
        screen_alloc(&S, V, K);
        float *x = malloc((size_t)K * sizeof *x);
        char what[96];
        for (int seed = 1; seed <= 3; seed++) {
            fill_random(&S, x, 1000u * (uint64_t)K + (uint64_t)seed, seed == 3 ? 8 : 0);
            snprintf(what, sizeof what, "random, seed %d%s", seed, seed == 3 ? ", 8 outlier channels" : "");
            unsigned ic = 0;
            const unsigned cnt = check_screen2(&S, x, what, &ic);
            if (K >= 1024) {
                CHECK(cnt * 10 <= (unsigned)V, "%s, K %d: %u of %d rows candidates", what, K, cnt, V);
                CHECK(ic * 10 <= (unsigned)V, "%s, K %d: %u of %d rows candidates (integer)", what, K, ic, V);
                /* the integer form's bound is the fp32 form's plus a small term: about the same rows */
                CHECK(ic <= cnt + cnt / 4 + 2, "%s, K %d: the integer form keeps %u rows, the fp32 one %u", what, K, ic, cnt);
            }
        }
        /* rows that strain it: 0 zero, 1 constant, 2 one outlier, 3..6 pairs a bf16 step apart, the rest random;
         * the input raised along row 7's error */
        fill_random(&S, x, 77u + (uint64_t)K, 0);
        for (int k = 0; k < K; k++) {
            S.W[k] = 0;                                            /* row 0 */
            S.W[(size_t)K + k] = orthros_f32_to_bf16(0.0123f);     /* row 1 */
            S.W[2 * (size_t)K + k] = orthros_f32_to_bf16(k == 3 ? 1.5f : 0.001f * (float)((k % 7) - 3)); /* row 2 */
        }
        for (int pr = 0; pr < 2; pr++) { /* rows 3, 4 and 5, 6: the second one bf16 step higher at k 5 */
            const size_t a = (size_t)(3 + 2 * pr) * K, b = a + K;
            for (int k = 0; k < K; k++) S.W[b + k] = S.W[a + k];
            S.W[b + 5] = (uint16_t)(S.W[a + 5] + (head8_ref_bf16(S.W[a + 5]) >= 0.0f ? 1 : -1) * (pr ? 1 : -1));
        }
        head8_ref_quantize(S.W, V, K, S.q, S.s, S.c, S.d);
        for (int k = 0; k < K; k++) { /* x along sign(e_7): |e_7 . x| = ||e_7||_1 ||x||_inf */
            const double e = (double)head8_ref_bf16(S.W[7 * (size_t)K + k]) - (double)S.s[7] * S.q[7 * (size_t)K + k];
            x[k] = e > 0.0 ? 1.0f : e < 0.0 ? -1.0f : 0.0f;
        }
        snprintf(what, sizeof what, "strained rows, x along row 7's error");
        check_screen(&S, x, what);
        /* the integer form's worst case: row 10 along the sign of the input's split error (its int8 copy exact, so
         * c_10 holds rounding terms alone and only d_10 ex covers s q . (x - x_q)), the input with one channel of 100
         * (a step of sx 100 / 127: the split error then passes those rounding terms) */
        {
            float sx = 0.0f, ex = 0.0f;
            rng_state = 55u + (uint64_t)K;
            for (int k = 0; k < K; k++) x[k] = bfround((float)nrand());
            x[3] = 100.0f;
            head8_ref_split(x, K, S.hi, S.lo, &sx, &ex);
            for (int k = 0; k < K; k++) {
                const double e = (double)x[k] - (double)sx * ((double)S.hi[k] + S.lo[k] / 256.0);
                S.W[10 * (size_t)K + k] = orthros_f32_to_bf16(e >= 0.0 ? 0.02f : -0.02f);
            }
            snprintf(what, sizeof what, "strained rows, row 10 along x's split error");
            check_screen(&S, x, what);
        }
        /* the same rows, the near-tie pair lifted to the top: the input along row 4 (rows 3 and 4 differ at k 5) */
        for (int k = 0; k < K; k++) x[k] = bfround(40.0f * head8_ref_bf16(S.W[4 * (size_t)K + k]));
        snprintf(what, sizeof what, "strained rows, a near-tie on top");
        check_screen(&S, x, what);
        /* a NaN row: always a candidate (its bound is NaN), never the argmax */
        fill_random(&S, x, 91u + (uint64_t)K, 0);
        S.W[9 * (size_t)K + 1] = 0x7fc0;
        snprintf(what, sizeof what, "a NaN row");
        check_screen(&S, x, what);
        CHECK(isnan(S.exact[9]), "the NaN row's logit %g", (double)S.exact[9]);
        /* the integer form's split at its edges: sx 1 (max 127) and halves (y - hi = -0.5: lo clamped to -127) */
        fill_random(&S, x, 93u + (uint64_t)K, 0);
        for (int k = 0; k < K; k++) x[k] = k == 0 ? 127.0f : (float)(k % 9) - 4.0f + 0.5f;
        snprintf(what, sizeof what, "an input on the split's halves");
        check_screen(&S, x, what);
        CHECK(S.lo[1] == -127 || S.lo[1] == 127, "x %g split into %d + %d / 256", (double)x[1], S.hi[1], S.lo[1]);
        /* a zero input: every logit 0, every row a candidate, id 0 */
        for (int k = 0; k < K; k++) x[k] = 0.0f;
        snprintf(what, sizeof what, "a zero input");
        unsigned ic = 0, fc = check_screen2(&S, x, what, &ic);
        CHECK(fc == (unsigned)V && ic == (unsigned)V, "a zero input: %u and %u of %d rows candidates", fc, ic, V);
        /* an input holding a NaN: every row a candidate in both forms (ex is NaN), id 0 as cpu_argmax gives */
        fill_random(&S, x, 95u + (uint64_t)K, 0);
        x[K / 2] = NAN;
        snprintf(what, sizeof what, "an input holding a NaN");
        fc = check_screen2(&S, x, what, &ic);
        CHECK(fc == (unsigned)V && ic == (unsigned)V, "an input holding a NaN: %u and %u of %d rows candidates", fc, ic, V);
        free(x);
        screen_free(&S);
    }
    /* the bound's terms: the quantisation error's norm dominates; with no error only the fp32 sums' terms are left */
    CHECK(head8_row_bound(0.0, 1.0, 2048) > 0.0 && head8_row_bound(0.0, 1.0, 2048) < 1e-3, "the rounding term %g",
          head8_row_bound(0.0, 1.0, 2048));
    CHECK(head8_row_bound(0.5, 1.0, 2048) > 0.5, "the error term %g", head8_row_bound(0.5, 1.0, 2048));
    return tu_finish();
}
