/* The cpu reference of head8 (head8.h), for the tests: the int8 copy as head8_quantize_kernel makes it, and the
 * screen of one input row in fp32 with sequential sums (a kernel's sums are in another order, within the same
 * bound). Header-only: static functions, C. */
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

/* q [V][K], s [V], c [V] from W [V][K] (bf16 bits), as the kernel makes them: s_j = max |W_j| / 127 (float
 * division), q = rint(W / s_j) clamped to +-127, c_j = head8_row_bound of the error's and the row's norms in double,
 * rounded up to a float. */
static inline void head8_ref_quantize(const uint16_t *W, int V, int K, int8_t *q, float *s, float *c)
{
    for (int j = 0; j < V; j++) {
        const uint16_t *w = W + (size_t)j * K;
        float amax = 0.0f;
        for (int k = 0; k < K; k++) amax = fmaxf(amax, fabsf(head8_ref_bf16(w[k])));
        const float sj = amax / 127.0f;
        double ee = 0.0, ww = 0.0;
        for (int k = 0; k < K; k++) {
            const float v = head8_ref_bf16(w[k]);
            const float r = sj > 0.0f ? rintf(v / sj) : 0.0f;
            const int qi = r > 127.0f ? 127 : r < -127.0f ? -127 : r == r ? (int)r : 0; /* NaN: 0 (c is NaN then) */
            q[(size_t)j * K + k] = (int8_t)qi;
            const double e = (double)v - (double)sj * (double)qi;
            ee += e * e, ww += (double)v * (double)v;
        }
        s[j] = sj;
        const double b = head8_row_bound(sqrt(ee), sqrt(ww), K);
        float f = (float)b;
        if ((double)f < b) f = nextafterf(f, INFINITY);
        c[j] = f;
    }
}

/* The screen of one normed input row x [K] (the bf16 values as floats), in fp32 with sequential sums: approx [V],
 * exact [V] (every row's, for the checks), the bound B_j = c_j ||x||, the lower bound L = max (approx - B) and the
 * candidates (approx_j + B_j not below L: a NaN makes one) counted; returns the argmax over the candidates of exact (the larger value, the
 * lower index on a tie, NaN lowest). */
static inline int head8_ref_screen(const int8_t *q, const float *s, const float *c, const uint16_t *W, const float *x,
                                   int V, int K, float *approx, float *exact, float *bound, unsigned *count)
{
    float ss = 0.0f;
    for (int k = 0; k < K; k++) ss += x[k] * x[k];
    const float xn = sqrtf(ss);
    float L = -INFINITY;
    for (int j = 0; j < V; j++) {
        float a = 0.0f, e = 0.0f;
        for (int k = 0; k < K; k++) {
            a = fmaf((float)q[(size_t)j * K + k], x[k], a);
            e = fmaf(head8_ref_bf16(W[(size_t)j * K + k]), x[k], e);
        }
        approx[j] = s[j] * a, exact[j] = e, bound[j] = c[j] * xn;
        L = fmaxf(L, approx[j] - bound[j]);
    }
    int best = -1;
    unsigned n = 0;
    for (int j = 0; j < V; j++) {
        if (approx[j] + bound[j] < L) continue; /* a NaN bound or value: a candidate */
        n++;
        const float v = exact[j];
        if (best < 0 || (!isnan(v) && (isnan(exact[best]) || v > exact[best]))) best = j;
    }
    *count = n;
    return best < 0 ? 0 : best;
}

#endif
