/* The cpu reference of head8 (head8.h), for the tests: the int8 copy as head8_quantize_kernel makes it, the fp32
 * screen of one input row with sequential sums (a kernel's sums are in another order, within the same bound), and the
 * integer screen (its sums exact: the kernels' bits). Header-only: static functions, C. */
#ifndef ORTHROS_KERNEL_HEAD8_REF_H
#define ORTHROS_KERNEL_HEAD8_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "head8.h"

static inline float head8_ref_bf16(uint16_t b)
{
    const uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float head8_ref_round_up(double b)
{
    float f = (float)b;
    if ((double)f < b) f = nextafterf(f, INFINITY);
    return f;
}

/* q [V][K], s [V], c [V], d [V] from W [V][K] (bf16 bits), as the kernel makes them: s_j = max |W_j| / 127 (float
 * division), q = rint(W / s_j) clamped to +-127, c_j = head8_row_bound of the error's and the row's norms in double,
 * d_j = head8_row_xbound of ||s_j q_j||, both rounded up to a float. */
static inline void head8_ref_quantize(const uint16_t *W, int V, int K, int8_t *q, float *s, float *c, float *d)
{
    for (int j = 0; j < V; j++) {
        const uint16_t *w = W + (size_t)j * K;
        float amax = 0.0f;
        for (int k = 0; k < K; k++) amax = fmaxf(amax, fabsf(head8_ref_bf16(w[k])));
        const float sj = amax / 127.0f;
        double ee = 0.0, ww = 0.0, qq = 0.0;
        for (int k = 0; k < K; k++) {
            const float v = head8_ref_bf16(w[k]);
            const float r = sj > 0.0f ? rintf(v / sj) : 0.0f;
            const int qi = r > 127.0f ? 127 : r < -127.0f ? -127 : r == r ? (int)r : 0; /* NaN: 0 (c is NaN then) */
            q[(size_t)j * K + k] = (int8_t)qi;
            const double sq = (double)sj * (double)qi, e = (double)v - sq;
            ee += e * e, ww += (double)v * (double)v, qq += sq * sq;
        }
        s[j] = sj;
        c[j] = head8_ref_round_up(head8_row_bound(sqrt(ee), sqrt(ww), K));
        d[j] = head8_ref_round_up(head8_row_xbound(sqrt(qq)));
    }
}

/* The integer screen's split of one normed input row x [K] (bf16 values as floats), as h8_split makes it: sx =
 * max |x| / 127, hi and lo [K] by head8_x_split, and ex = ||x - sx (hi + lo / 256)|| (1 + 2^-10) rounded up (its
 * terms by the same fma, summed in another order: within a few u of the kernels' ex). */
static inline void head8_ref_split(const float *x, int K, int8_t *hi, int8_t *lo, float *sx, float *ex)
{
    float m = 0.0f;
    for (int k = 0; k < K; k++) m = fmaxf(m, fabsf(x[k]));
    const float st = m / 127.0f, inv = st > 0.0f ? 1.0f / st : 0.0f;
    double ee = 0.0;
    for (int k = 0; k < K; k++) {
        int h, l;
        head8_x_split(x[k] * inv, &h, &l);
        hi[k] = (int8_t)h, lo[k] = (int8_t)l;
        const float tq = (float)h + (float)l * 0.00390625f, er = fmaf(-st, tq, x[k]);
        ee += (double)er * (double)er;
    }
    *sx = st;
    *ex = head8_ref_round_up(sqrt(ee) * (1.0 + 0x1p-10));
}

/* ||x||_2 of a normed input row in fp32, sequential: both screens' B_j factor. */
static inline float head8_ref_norm(const float *x, int K)
{
    float ss = 0.0f;
    for (int k = 0; k < K; k++) ss += x[k] * x[k];
    return sqrtf(ss);
}

/* The selection both screens end with: L = max (approx - bound) over the rows (a NaN left out), the candidates
 * (approx + bound not below L: a NaN makes one) counted, and the argmax of exact over them (the larger value, the
 * lower index on a tie, NaN lowest). */
static inline int head8_ref_select(const float *approx, const float *exact, const float *bound, int V, unsigned *count)
{
    float L = -INFINITY;
    for (int j = 0; j < V; j++) L = fmaxf(L, approx[j] - bound[j]);
    int best = -1;
    unsigned n = 0;
    for (int j = 0; j < V; j++) {
        if (approx[j] + bound[j] < L) continue;
        n++;
        const float v = exact[j];
        if (best < 0 || (!isnan(v) && (isnan(exact[best]) || v > exact[best]))) best = j;
    }
    *count = n;
    return best < 0 ? 0 : best;
}

/* The exact fp32 logit of row j (sequential sums), as a candidate's is read. */
static inline float head8_ref_exact(const uint16_t *W, const float *x, int j, int K)
{
    float e = 0.0f;
    for (int k = 0; k < K; k++) e = fmaf(head8_ref_bf16(W[(size_t)j * K + k]), x[k], e);
    return e;
}

/* The integer screen of one normed input row x [K]: approx [V] bit for bit the kernels' (exact int sums of q with
 * the split, head8_int_approx), exact [V], bound B_j = c_j ||x|| + d_j ex (||x|| in fp32, sequential), the
 * selection as head8_ref_select; sx and ex out. Returns the argmax over the candidates. */
static inline int head8_ref_screen_int(const int8_t *q, const float *s, const float *c, const float *d,
                                       const uint16_t *W, const float *x, int V, int K, int8_t *hi, int8_t *lo,
                                       float *approx, float *exact, float *bound, float *sx, float *ex, unsigned *count)
{
    const float xn = head8_ref_norm(x, K);
    head8_ref_split(x, K, hi, lo, sx, ex);
    for (int j = 0; j < V; j++) {
        long long ah = 0, al = 0;
        for (int k = 0; k < K; k++) {
            ah += (long long)q[(size_t)j * K + k] * hi[k];
            al += (long long)q[(size_t)j * K + k] * lo[k];
        }
        approx[j] = head8_int_approx((int)ah, (int)al, s[j], *sx);
        exact[j] = head8_ref_exact(W, x, j, K);
        bound[j] = fmaf(d[j], *ex, c[j] * xn);
    }
    return head8_ref_select(approx, exact, bound, V, count);
}

/* The screen of one normed input row x [K] (the bf16 values as floats), in fp32 with sequential sums: approx [V],
 * exact [V] (every row's, for the checks), the bound B_j = c_j ||x||, the lower bound L = max (approx - B) and the
 * candidates (approx_j + B_j not below L: a NaN makes one) counted; returns the argmax over the candidates of exact (the larger value, the
 * lower index on a tie, NaN lowest). */
static inline int head8_ref_screen(const int8_t *q, const float *s, const float *c, const uint16_t *W, const float *x,
                                   int V, int K, float *approx, float *exact, float *bound, unsigned *count)
{
    const float xn = head8_ref_norm(x, K);
    for (int j = 0; j < V; j++) {
        float a = 0.0f;
        for (int k = 0; k < K; k++) a = fmaf((float)q[(size_t)j * K + k], x[k], a);
        approx[j] = s[j] * a, exact[j] = head8_ref_exact(W, x, j, K), bound[j] = c[j] * xn;
    }
    return head8_ref_select(approx, exact, bound, V, count);
}

#endif
