/* The decode step's head through an int8 copy with the exact argmax kept: head8.h says what and why.
 *
 * Three kernels:
 *   head8_quantize_kernel  (once) a block a row: s_j = max |W_j| / 127, q_j = rint(W_j / s_j), and the bounds c_j
 *                          (head8_row_bound) from ||W_j - s_j q_j|| and ||W_j||, d_j (head8_row_xbound) from
 *                          ||s_j q_j||, summed in double;
 *   head8_approx_kernel    a step's screen: every block stages the n input rows normed (rmsnorm(x) * norm_w rounded
 *                          to bf16, as every other head kernel does) and their norms ||x||; a warp takes R = 4 rows of
 *                          q at a time, each lane 16-byte chunks of them, the warp's groups of R rows one stream of
 *                          steps with D (2-4, ORTHROS_HEAD8_DEPTH) steps of R chunks in flight across the groups' ends
 *                          (the warp's next R rows asked into L2 as it starts these unless no_next_pf, its first ones
 *                          before its wait; with even, the grid cut so that its last round of groups is nearly full),
 *                          each int8 converted once and multiplied into the n rows' fp32 sums, approx_j =
 *                          s_j (q_j . x); or (the integer form, INT) the staged rows split into two int8 vectors
 *                          (h8_split) and four int8 products a dp4a into int32 sums, approx_j from them
 *                          (head8_int_approx); approx_j to scratch, and per input row the largest lower bound
 *                          approx_j - B_j by an ordered atomicMax;
 *   head8_select_kernel    the rows whose upper bound reaches it: a warp tests 32 rows at a time (a ballot) and reads
 *                          each candidate's bf16 row (its logit in fp32, lane-strided, then a butterfly), the best
 *                          key (argmax_key) by an atomicMax; the last block turns the keys into ids and clears the
 *                          step's scratch for the next call; or (one_launch, head8_approx_kernel's SEL) the same
 *                          selection at the screen's end, after a grid barrier, each warp over the rows it screened.
 * The screen converts each int8 with a byte permute and an add (s8f), not I2F, whose 16 a clock an SM (4.2 G a
 * second on the H200's 132 SMs at 1.98 GHz) is below the 4.5 G int8 a second of the read ceiling (docs/kernels.md,
 * "The head through an int8 copy"). */
#include "head8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

#define H8_THREADS 256
#define H8_WARPS (H8_THREADS / 32)
#define H8_R 4 /* q rows a warp at a time */

struct orthros_head8 {
    const void *W;
    int V, K;
    int8_t *q;                  /* [V][K] */
    float *s, *c, *d;           /* [V] */
    float *approx;              /* [MAX_ROWS][V] */
    bf16 *xst;                  /* [MAX_ROWS][K]: the last screen's staged input rows (its block 0's) */
    float *ex;                  /* [MAX_ROWS]: the last integer screen's ex (0 after an fp32 one) */
    int last_dp4a;              /* the form of the last call */
    unsigned *lb;               /* [MAX_ROWS] ordered floats; 0 (NaN's key, below all) between calls */
    unsigned long long *keys;   /* [MAX_ROWS] argmax keys; 0 between calls */
    unsigned *counts;           /* [MAX_ROWS] candidates of the last call */
    unsigned *done;             /* the selection's block ticket; 0 between calls */
    unsigned *bar;              /* the one-launch form's grid barrier (arrivals); 0 between calls */
    int sms;                    /* the device's SMs: the one-launch form's grid is resident at once */
    int per_sm[2][2][3][ORTHROS_HEAD8_MAX_ROWS + 1]; /* the screen's blocks an SM in one launch or two (SEL), form INT,
                                                      * at depth D (2-4), NR rows: [SEL][INT][D - 2][NR] (0: not asked
                                                      * yet), the shared memory limit raised when asked */
    void *mem;                  /* one allocation for all of it */
};

/* A kernel's by-value parameters: at most 128 bytes (112 here), which nvcc 13.0 reads directly; past that through a
 * generic pointer, which changes the whole kernel's code (docs/kernels.md, "The window merge and the parameter
 * struct"). The step's small scratch is one pointer, its words at fixed offsets (orthros_head8_create). */
struct h8_args {
    const int8_t *q;
    const float *s, *c, *d;
    const bf16 *W;
    float *approx, *logits;
    bf16 *xst;
    char *tail;
    int32_t *ids;
    const bf16 *x, *norm_w;
    float eps;
    int n, V, K;
    int next_pf; /* 1: each warp asks its next group's rows into L2 as it starts a group (orthros_head8_params) */
    __device__ unsigned long long *keys() const { return (unsigned long long *)tail; }
    __device__ unsigned *lb() const { return (unsigned *)(tail + 64); }
    __device__ unsigned *counts() const { return (unsigned *)(tail + 128); }
    __device__ unsigned *done() const { return (unsigned *)(tail + 192); }
    __device__ float *ex() const { return (float *)(tail + 256); }
    __device__ unsigned *bar() const { return (unsigned *)(tail + 320); } /* the one-launch form's grid barrier */
};
static_assert(sizeof(h8_args) <= 128, "h8_args past 128 bytes");

/* ---- the copy ---- */

static __device__ double block_sum_d(double v, double *red)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads(); /* red is reused */
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    double t = 0.0;
    for (int w = 0; w < H8_WARPS; w++) t += red[w];
    return t;
}

static __global__ void __launch_bounds__(H8_THREADS) head8_quantize_kernel(const bf16 *W, int K, int8_t *q, float *s,
                                                                           float *c, float *d)
{
    __shared__ double red[H8_WARPS];
    const size_t j = blockIdx.x;
    const bf16 *w = W + j * (size_t)K;
    float mx = 0.0f;
    for (int k = threadIdx.x; k < K; k += H8_THREADS) mx = fmaxf(mx, fabsf(bf2f(w[k])));
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
    __syncthreads();
    float amax = 0.0f;
    for (int i = 0; i < H8_WARPS; i++) amax = fmaxf(amax, (float)red[i]);
    const float sj = __fdiv_rn(amax, 127.0f);
    double ee = 0.0, ww = 0.0, qq = 0.0;
    for (int k = threadIdx.x; k < K; k += H8_THREADS) {
        const float v = bf2f(w[k]);
        const float r = sj > 0.0f ? rintf(__fdiv_rn(v, sj)) : 0.0f;
        const int qi = r > 127.0f ? 127 : r < -127.0f ? -127 : r == r ? (int)r : 0; /* NaN: 0 (c is NaN then) */
        q[j * (size_t)K + k] = (int8_t)qi;
        const double sq = (double)sj * (double)qi, e = (double)v - sq;
        ee += e * e, ww += (double)v * (double)v, qq += sq * sq;
    }
    ee = block_sum_d(ee, red);
    ww = block_sum_d(ww, red);
    qq = block_sum_d(qq, red);
    if (threadIdx.x == 0) {
        s[j] = sj;
        c[j] = __double2float_ru(head8_row_bound(sqrt(ee), sqrt(ww), K));
        d[j] = __double2float_ru(head8_row_xbound(sqrt(qq)));
    }
}

/* ---- a step ---- */

/* The n input rows normed into xs [NR][K] bf16 (rows past n zero) and their norms ||x||_2 into xn (fp32, a fixed
 * order: the same bits in both kernels of a step). Every thread calls it; it ends with a barrier. */
template <int NR> static __device__ void h8_stage(const h8_args &a, bf16 *xs, float *xn, float *rs)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, K = a.K, C = K / 8;
    if (warp < NR) {
        float ss = 0.0f;
        if (warp < a.n) {
            const uint4 *xr = (const uint4 *)(a.x + (size_t)warp * K);
            for (int q = lane; q < C; q += 32) sumsq_bf16x8(ss, __ldg(xr + q));
        }
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) rs[warp] = rsqrtf(ss / (float)K + a.eps);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < NR * C; e += H8_THREADS) {
        const int j = e / C, q = e % C;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (j < a.n) v = rms_scale_bf16x8(__ldg((const uint4 *)(a.x + (size_t)j * K) + q), __ldg((const uint4 *)a.norm_w + q), rs[j]);
        ((uint4 *)xs)[e] = v;
    }
    __syncthreads();
    if (warp < NR) {
        float ss = 0.0f;
        const uint4 *xr = (const uint4 *)(xs + (size_t)warp * K);
        for (int q = lane; q < C; q += 32) sumsq_bf16x8(ss, xr[q]);
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) xn[warp] = sqrtf(ss);
    }
    __syncthreads();
}

/* The integer screen's split of the staged rows (after h8_stage): per row t, sx_t = max |x_t| / 127, then every
 * element by head8_x_split into hi, lo (xq [NR][2][K] int8: row t's hi at t 2K, its lo at t 2K + K, so a lane's
 * 16-byte chunk i of each is one conflict-free load), and ex_t = ||x_t - x_q,t|| (1 + 2^-10) rounded up, its terms
 * e = x - sx (hi + lo / 256) in fp32 by one fma (the sum in parentheses is exact in fp32; the fma's rounding, u of e,
 * is far inside the 2^-10), squared and summed in double (an fp32 square of a tiny e would vanish). The sums have a
 * fixed order: every block gets the same bits. Every thread calls it; it ends with a barrier. */
template <int NR> static __device__ void h8_split(const bf16 *xs, int8_t *xq, int K, float *sx, float *ex)
{
    __shared__ double part[H8_WARPS][NR];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, C = K / 16;
    if (warp < NR) {
        float m = 0.0f;
        const uint4 *xr = (const uint4 *)(xs + (size_t)warp * K);
        for (int q = lane; q < 2 * C; q += 32) {
            const uint4 v = xr[q];
            const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int b = 0; b < 4; b++) m = fmaxf(m, fmaxf(fabsf(bf16x2_lo(u[b])), fabsf(bf16x2_hi(u[b]))));
        }
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) sx[warp] = __fdiv_rn(m, 127.0f);
    }
    __syncthreads();
    double ee[NR];
#pragma unroll
    for (int t = 0; t < NR; t++) ee[t] = 0.0;
    for (int e = threadIdx.x; e < NR * C; e += H8_THREADS) {
        const int t = e / C, i = e % C;
        const float st = sx[t], inv = st > 0.0f ? __frcp_rn(st) : 0.0f;
        const uint4 *xr = (const uint4 *)(xs + (size_t)t * K) + 2 * i;
        uint32_t hw[4], lw[4];
        double part_ee = 0.0;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint4 v = xr[h];
            const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int b = 0; b < 4; b++) {
                uint32_t hh = 0u, ll = 0u;
#pragma unroll
                for (int z = 0; z < 2; z++) {
                    const float x = z ? bf16x2_hi(u[b]) : bf16x2_lo(u[b]);
                    int hi, lo;
                    head8_x_split(__fmul_rn(x, inv), &hi, &lo);
                    const float tq = (float)hi + (float)lo * 0.00390625f, er = fmaf(-st, tq, x);
                    part_ee = fma((double)er, (double)er, part_ee);
                    hh |= ((uint32_t)hi & 0xffu) << (8 * z), ll |= ((uint32_t)lo & 0xffu) << (8 * z);
                }
                /* elements 8 h + 2 b, + 1: bytes 2 b, 2 b + 1 of word 2 h + b / 2 */
                const int word = 2 * h + b / 2, sh = 16 * (b % 2);
                if (sh == 0) hw[word] = hh, lw[word] = ll;
                else hw[word] |= hh << 16, lw[word] |= ll << 16;
            }
        }
        ((uint4 *)(xq + (size_t)t * 2 * K))[i] = make_uint4(hw[0], hw[1], hw[2], hw[3]);
        ((uint4 *)(xq + (size_t)t * 2 * K + K))[i] = make_uint4(lw[0], lw[1], lw[2], lw[3]);
#pragma unroll
        for (int r = 0; r < NR; r++)
            if (r == t) ee[r] += part_ee;
    }
#pragma unroll
    for (int t = 0; t < NR; t++) {
        double v = ee[t];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) part[warp][t] = v;
    }
    __syncthreads();
    if (threadIdx.x < NR) {
        double sum = 0.0;
        for (int w = 0; w < H8_WARPS; w++) sum += part[w][threadIdx.x];
        ex[threadIdx.x] = __double2float_ru(sqrt(sum) * (1.0 + 0x1p-10));
    }
    __syncthreads();
}

/* The int8 of byte b (0..3) of w as a float, exactly, without a conversion instruction (I2F runs at 16 a clock an
 * SM, below what the read ceiling needs; a byte permute and an add run at 64 and 128): wx = w ^ 0x80808080 holds
 * q + 128 in each byte, the permute puts that byte under the exponent of 2^23 (the float 2^23 + q + 128), and the
 * subtraction leaves q. */
static __device__ __forceinline__ float s8f(uint32_t wx, int b)
{
    return __int_as_float((int)__byte_perm(wx, 0x4B000000u, 0x7440u + (unsigned)b)) - 8388736.0f;
}

/* Lane `lane`'s chunk step s of a warp whose first row group is `first` (TW warps in the grid): group s / ipg, its
 * chunk lane + 32 (s % ipg) of each of its H8_R rows (rows past V read row V - 1, chunks past C nothing). */
static __device__ __forceinline__ void h8_load_step(uint4 (&buf)[H8_R], const h8_args &a, int first, int TW, int ipg,
                                                    int steps, int s, int lane)
{
    const int g = s / ipg, i = lane + 32 * (s - g * ipg), j0 = first + g * TW * H8_R, C = a.K / 16;
#pragma unroll
    for (int r = 0; r < H8_R; r++)
        buf[r] = s < steps && i < C ? __ldcs((const uint4 *)(a.q + (size_t)min(j0 + r, a.V - 1) * a.K) + i)
                                    : make_uint4(0u, 0u, 0u, 0u);
}

/* B_j of input row t: c_j ||x_t||, and in the integer form + d_j ex_t: the select kernel's in both forms, the integer
 * screen's (the fp32 screen forms c_j ||x_t|| inline, c_j loaded once a row for all t). */
template <bool INT> static __device__ __forceinline__ float h8_bound(const h8_args &a, int j, float xn, float ex)
{
    const float b = __ldg(a.c + j) * xn;
    if constexpr (INT) return fmaf(__ldg(a.d + j), ex, b);
    return b;
}

/* Block 0's staged rows and ex to the scratch the tests read (orthros_head8_last_screen). */
template <int NR> static __device__ void h8_keep(const h8_args &a, const bf16 *xs, const float *ex)
{
    if (blockIdx.x) return;
    for (int e = threadIdx.x; e < a.n * (a.K / 8); e += H8_THREADS) ((uint4 *)a.xst)[e] = ((const uint4 *)xs)[e];
    if ((int)threadIdx.x < a.n) a.ex()[threadIdx.x] = ex ? ex[threadIdx.x] : 0.0f;
}

/* The selection's bounds (after every block's screen): lbound[t] = L of input row t from the screen's ordered
 * atomicMax (none: +inf, no candidate); ex (the select kernel's, NULL in the one launch, whose blocks have their own)
 * the integer screen's ex_t as its block 0 left it (every block's are the same bits; 0 in the fp32 form). Every
 * thread calls it; it ends with a barrier. */
template <int NR, bool INT> static __device__ void h8_lbounds(const h8_args &a, float *lbound, float *ex)
{
    if (threadIdx.x < NR) {
        const unsigned o = threadIdx.x < a.n ? __ldcg(a.lb() + threadIdx.x) : 0u;
        lbound[threadIdx.x] = o ? unordered_float(o) : __int_as_float(0x7f800000);
        if (ex) ex[threadIdx.x] = INT && threadIdx.x < a.n ? __ldcg(a.ex() + threadIdx.x) : 0.0f;
    }
    __syncthreads();
}

/* sum + the dot product of two rows of 8 bf16, in the order lo, hi of each pair */
static __device__ __forceinline__ float dot_bf16x8(const uint4 w, const uint4 x, float sum)
{
    sum = fmaf(bf16x2_lo(w.x), bf16x2_lo(x.x), sum), sum = fmaf(bf16x2_hi(w.x), bf16x2_hi(x.x), sum);
    sum = fmaf(bf16x2_lo(w.y), bf16x2_lo(x.y), sum), sum = fmaf(bf16x2_hi(w.y), bf16x2_hi(x.y), sum);
    sum = fmaf(bf16x2_lo(w.z), bf16x2_lo(x.z), sum), sum = fmaf(bf16x2_hi(w.z), bf16x2_hi(x.z), sum);
    sum = fmaf(bf16x2_lo(w.w), bf16x2_lo(x.w), sum), sum = fmaf(bf16x2_hi(w.w), bf16x2_hi(x.w), sum);
    return sum;
}

/* 32 rows of the selection, lane `lane`'s row j (live: j < V and one of the caller's rows; the loop around it is the
 * warp's): every row whose upper bound approx_j + B_j is not below lbound[t] is a candidate (a row whose bound or value
 * is not a number is one), read in bf16 by the whole warp (its logit in fp32, lane-strided, then a butterfly) and
 * kept in best[t] if its key is the larger; with logits asked for, the candidates' exact logit and the others'
 * approx_j are written. xs: the staged normed rows [NR][K] bf16. */
template <int NR, bool INT>
static __device__ __forceinline__ void h8_select_rows(const h8_args &a, const bf16 *xs, const float *xn, const float *ex,
                                                      const float *lbound, int j, bool live, int lane,
                                                      unsigned long long (&best)[NR], unsigned (&cnt)[NR])
{
    const int K = a.K, V = a.V;
#pragma unroll
    for (int t = 0; t < NR; t++) {
        bool cand = false;
        if (t < a.n && live) {
            const float v = __ldcg(a.approx + (size_t)t * V + j);
            cand = !(v + h8_bound<INT>(a, j, xn[t], ex[t]) < lbound[t]);
            if (a.logits && !cand) a.logits[(size_t)t * V + j] = v;
        }
        unsigned m = __ballot_sync(0xffffffffu, cand);
        cnt[t] += (unsigned)__popc(m);
        while (m) {
            const int jj = __shfl_sync(0xffffffffu, j, __ffs((int)m) - 1);
            m &= m - 1u;
            const uint4 *wr = (const uint4 *)(a.W + (size_t)jj * K), *xr = (const uint4 *)(xs + (size_t)t * K);
            float sum = 0.0f;
            int q = lane;
            for (; q + 96 < K / 8; q += 128) {
                uint4 w[4];
#pragma unroll
                for (int u = 0; u < 4; u++) w[u] = __ldg(wr + q + 32 * u);
#pragma unroll
                for (int u = 0; u < 4; u++) sum = dot_bf16x8(w[u], xr[q + 32 * u], sum);
            }
            for (; q < K / 8; q += 32) sum = dot_bf16x8(__ldg(wr + q), xr[q], sum);
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            if (lane == 0 && a.logits) a.logits[(size_t)t * V + jj] = sum;
            const unsigned long long key = argmax_key(sum, jj);
            best[t] = key > best[t] ? key : best[t];
        }
    }
}

/* The selection's end: each warp's best keys and counts into the step's scratch; the last block to finish turns the
 * keys into ids and clears the scratch for the next call (the one-launch form's barrier word too: every block passed
 * it before it took its ticket). Every thread calls it. */
template <int NR> static __device__ void h8_select_end(const h8_args &a, const unsigned long long (&best)[NR],
                                                       const unsigned (&cnt)[NR], int lane)
{
    __shared__ int last;
    if (lane == 0)
#pragma unroll
        for (int t = 0; t < NR; t++) { /* rows past n found nothing */
            if (best[t]) atomicMax(a.keys() + t, best[t]);
            if (cnt[t]) atomicAdd(a.counts() + t, cnt[t]);
        }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.done(), 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    if ((int)threadIdx.x < a.n) {
        const unsigned long long k = atomicExch(a.keys() + threadIdx.x, 0ull);
        /* no key (every row NaN): index 0, as cpu_argmax gives */
        a.ids[threadIdx.x] = k ? (int32_t)(0xffffffffu - (unsigned)(k & 0xffffffffull)) : 0;
        a.lb()[threadIdx.x] = 0u;
    }
    if (threadIdx.x == 0) *a.done() = 0u, *a.bar() = 0u;
}

/* The screen. A warp's row groups (H8_R rows, TW H8_R apart) are one stream of chunk steps, a lane's 16 bytes of each
 * of the group's rows a step: D steps in flight across the groups' ends, so that a group's sums (the shuffles, the
 * stores, the bounds) run while the next group's first chunks arrive. Each lane sums its chunks in the same order
 * whatever D (the sums are the same bits). INT: the integer form (head8.h), its first D - 1 steps asked before the
 * input is staged and split, its int32 sums exact (any order gives the same bits), and each sum's approx_j and
 * bound worked out by one lane (r NR + t) rather than by all. */
template <int NR, int D, bool INT, bool SEL>
static __global__ void __launch_bounds__(H8_THREADS, 2) head8_approx_kernel(const h8_args a)
{
    extern __shared__ uint4 h8_smem[]; /* xs [NR][K] bf16; INT: then xq [NR][2][K] int8 */
    __shared__ float xn[NR], rs[NR], sx[NR], ex[NR];
    __shared__ unsigned blb[H8_WARPS][NR];
    bf16 *xs = (bf16 *)h8_smem;
    int8_t *xq = (int8_t *)(xs + (size_t)NR * a.K);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, K = a.K, V = a.V, C = K / 16;
    pdl_trigger();
    const int TW = gridDim.x * H8_WARPS, first = (blockIdx.x * H8_WARPS + warp) * H8_R;
    const int ipg = (C + 31) / 32, groups = first < V ? (V - 1 - first) / (TW * H8_R) + 1 : 0, steps = groups * ipg;
    /* the copy never changes: the warp's first rows asked into L2 before the wait, so that they arrive while the
     * kernel before ends and the input is staged */
    if (first < V)
        for (int r = 0; r < H8_R; r++) {
            const int8_t *fr = a.q + (size_t)min(first + r, V - 1) * K;
            for (int i = lane; i < C; i += 32) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(fr + 16 * (size_t)i));
        }
    /* Nothing an earlier kernel writes (x, the scratch) is read or written above this line. */
    pdl_wait();
    if (blockIdx.x == 0 && threadIdx.x < NR) a.counts()[threadIdx.x] = 0u;
    uint4 buf[D][H8_R];
    if constexpr (INT)
#pragma unroll
        for (int d = 0; d < D - 1; d++) h8_load_step(buf[d], a, first, TW, ipg, steps, d, lane);
    h8_stage<NR>(a, xs, xn, rs);
    if constexpr (INT) h8_split<NR>(xs, xq, K, sx, ex);
    float lbm[NR];
#pragma unroll
    for (int r = 0; r < NR; r++) lbm[r] = __int_as_float(0xff800000); /* -inf */
    if constexpr (!INT)
#pragma unroll
        for (int d = 0; d < D - 1; d++) h8_load_step(buf[d], a, first, TW, ipg, steps, d, lane);
    float acc[H8_R][NR];
    int ah[H8_R][NR], al[H8_R][NR];
#pragma unroll
    for (int r = 0; r < H8_R; r++)
#pragma unroll
        for (int t = 0; t < NR; t++) acc[r][t] = 0.0f, ah[r][t] = 0, al[r][t] = 0;
    /* The ring of D steps is indexed by the step mod D, the loop unrolled by D so that every index is a constant:
     * step s + D - 1's loads go into the slot step s - 1 left, and no register is copied from one slot to the next
     * (a copy of a slot whose load is in flight waits for it, which would leave one step in flight a warp). */
    for (int s0 = 0; s0 < steps; s0 += D)
#pragma unroll
    for (int u = 0; u < D; u++) {
        const int s = s0 + u;
        if (s >= steps) break;
        h8_load_step(buf[(u + D - 1) % D], a, first, TW, ipg, steps, s + D - 1, lane);
        const int g = s / ipg, i = lane + 32 * (s - g * ipg);
        if (a.next_pf && s - g * ipg == 0 && g + 1 < groups) /* the warp's next rows asked into L2 as it starts these */
            for (int r = 0; r < H8_R; r++) {
                const int8_t *nr = a.q + (size_t)min(first + (g + 1) * TW * H8_R + r, V - 1) * K;
                for (int c = lane; c < C; c += 32) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(nr + 16 * (size_t)c));
            }
        if (INT && i < C) {
            /* chunk i of the split rows: hi and lo, a word of 4 int8 a dp4a */
            uint4 xh[NR], xl[NR];
#pragma unroll
            for (int t = 0; t < NR; t++) {
                xh[t] = ((const uint4 *)(xq + (size_t)t * 2 * K))[i];
                xl[t] = ((const uint4 *)(xq + (size_t)t * 2 * K + K))[i];
            }
#pragma unroll
            for (int r = 0; r < H8_R; r++) {
                const uint4 w = buf[u][r];
#pragma unroll
                for (int t = 0; t < NR; t++) {
                    ah[r][t] = __dp4a((int)w.x, (int)xh[t].x, ah[r][t]), al[r][t] = __dp4a((int)w.x, (int)xl[t].x, al[r][t]);
                    ah[r][t] = __dp4a((int)w.y, (int)xh[t].y, ah[r][t]), al[r][t] = __dp4a((int)w.y, (int)xl[t].y, al[r][t]);
                    ah[r][t] = __dp4a((int)w.z, (int)xh[t].z, ah[r][t]), al[r][t] = __dp4a((int)w.z, (int)xl[t].z, al[r][t]);
                    ah[r][t] = __dp4a((int)w.w, (int)xh[t].w, ah[r][t]), al[r][t] = __dp4a((int)w.w, (int)xl[t].w, al[r][t]);
                }
            }
        } else if (!INT && i < C)
            /* chunk i: k 16 i .. 16 i + 15, a word of 4 int8 at a time */
#pragma unroll
            for (int b = 0; b < 4; b++) {
                float xv[NR][4];
#pragma unroll
                for (int t = 0; t < NR; t++) {
                    const uint2 u = *(const uint2 *)(xs + (size_t)t * K + 16 * i + 4 * b);
                    xv[t][0] = bf16x2_lo(u.x), xv[t][1] = bf16x2_hi(u.x), xv[t][2] = bf16x2_lo(u.y), xv[t][3] = bf16x2_hi(u.y);
                }
#pragma unroll
                for (int r = 0; r < H8_R; r++) {
                    const uint4 &w4 = buf[u][r];
                    const uint32_t w = (b == 0 ? w4.x : b == 1 ? w4.y : b == 2 ? w4.z : w4.w) ^ 0x80808080u;
                    const float f0 = s8f(w, 0), f1 = s8f(w, 1), f2 = s8f(w, 2), f3 = s8f(w, 3);
#pragma unroll
                    for (int t = 0; t < NR; t++)
                        acc[r][t] = fmaf(f3, xv[t][3], fmaf(f2, xv[t][2], fmaf(f1, xv[t][1], fmaf(f0, xv[t][0], acc[r][t]))));
                }
            }
        if (s - g * ipg < ipg - 1) continue;
        /* the group's last step: its sums, while the next group's first D - 1 steps are in flight */
        const int j0 = first + g * TW * H8_R;
        if constexpr (INT) {
            int mh = 0, ml = 0;
#pragma unroll
            for (int r = 0; r < H8_R; r++)
#pragma unroll
                for (int t = 0; t < NR; t++) {
                    for (int o = 16; o > 0; o >>= 1) {
                        ah[r][t] += __shfl_xor_sync(0xffffffffu, ah[r][t], o);
                        al[r][t] += __shfl_xor_sync(0xffffffffu, al[r][t], o);
                    }
                    if (lane == r * NR + t) mh = ah[r][t], ml = al[r][t];
                    ah[r][t] = 0, al[r][t] = 0;
                }
            /* lane r NR + t: row j0 + r, input row t */
            const int t = lane % NR, j = j0 + lane / NR;
            if (lane < H8_R * NR && t < a.n && j < V) {
                const float v = head8_int_approx(mh, ml, __ldg(a.s + j), sx[t]);
                __stcg(a.approx + (size_t)t * V + j, v);
                const float lo = v - h8_bound<true>(a, j, xn[t], ex[t]);
#pragma unroll
                for (int u = 0; u < NR; u++)
                    if (u == t) lbm[u] = fmaxf(lbm[u], lo); /* fmaxf: a NaN row's bound is left out */
            }
        } else {
#pragma unroll
            for (int r = 0; r < H8_R; r++)
#pragma unroll
                for (int t = 0; t < NR; t++)
                    for (int o = 16; o > 0; o >>= 1) acc[r][t] += __shfl_xor_sync(0xffffffffu, acc[r][t], o);
            /* every lane holds every sum: lane r t of the R x NR writes one */
#pragma unroll
            for (int r = 0; r < H8_R; r++) {
                const int j = j0 + r;
                if (j < V) {
                    const float sj = __ldg(a.s + j), cj = __ldg(a.c + j);
#pragma unroll
                    for (int t = 0; t < NR; t++) {
                        if (t >= a.n) break;
                        const float v = sj * acc[r][t];
                        if (lane == r * NR + t) __stcg(a.approx + (size_t)t * V + j, v);
                        lbm[t] = fmaxf(lbm[t], v - cj * xn[t]); /* fmaxf: a NaN row's bound is left out */
                    }
                }
#pragma unroll
                for (int t = 0; t < NR; t++) acc[r][t] = 0.0f;
            }
        }
    }
    h8_keep<NR>(a, xs, INT ? ex : NULL);
    if constexpr (INT) /* each lane's bounds are its own rows' */
#pragma unroll
        for (int t = 0; t < NR; t++)
            for (int o = 16; o > 0; o >>= 1) lbm[t] = fmaxf(lbm[t], __shfl_xor_sync(0xffffffffu, lbm[t], o));
    if (lane == 0)
#pragma unroll
        for (int t = 0; t < NR; t++) blb[warp][t] = ordered_float(lbm[t]);
    __syncthreads();
    if (threadIdx.x < a.n) {
        unsigned m = 0u;
        for (int w = 0; w < H8_WARPS; w++) m = max(m, blb[w][threadIdx.x]);
        atomicMax(a.lb() + threadIdx.x, m);
    }
    if constexpr (SEL) {
        /* the selection in the same launch: once every block's bounds are in (a grid barrier; the grid is at most the
         * blocks the SMs hold at once, so every block is resident once the kernel before has ended), each warp tests
         * its own rows, whose approx_j it wrote (L2), against L, with the rows it staged */
        __shared__ float lbound[NR];
        grid_barrier_flat<true>(a.bar(), gridDim.x);
        h8_lbounds<NR, INT>(a, lbound, NULL);
        unsigned long long best[NR];
        unsigned cnt[NR];
#pragma unroll
        for (int t = 0; t < NR; t++) best[t] = 0ull, cnt[t] = 0u;
        /* the warp's rows: group g's H8_R rows at first + g TW H8_R, row e of them (e < groups H8_R) */
        for (int e0 = 0; e0 < groups * H8_R; e0 += 32) {
            const int e = e0 + lane, j = first + (e / H8_R) * TW * H8_R + e % H8_R;
            h8_select_rows<NR, INT>(a, xs, xn, ex, lbound, j, e < groups * H8_R && j < V, lane, best, cnt);
        }
        h8_select_end<NR>(a, best, cnt, lane);
    }
}

template <int NR, bool INT> static __global__ void __launch_bounds__(H8_THREADS) head8_select_kernel(const h8_args a)
{
    extern __shared__ uint4 h8_smem[]; /* xs [NR][K] bf16 */
    __shared__ float xn[NR], rs[NR], lbound[NR], ex[NR];
    bf16 *xs = (bf16 *)h8_smem;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, V = a.V;
    pdl_trigger();
    pdl_wait();
    h8_stage<NR>(a, xs, xn, rs);
    h8_lbounds<NR, INT>(a, lbound, ex);
    unsigned long long best[NR];
    unsigned cnt[NR];
#pragma unroll
    for (int t = 0; t < NR; t++) best[t] = 0ull, cnt[t] = 0u;
    const int TW = gridDim.x * H8_WARPS;
    for (int j0 = (blockIdx.x * H8_WARPS + warp) * 32; j0 < V; j0 += TW * 32)
        h8_select_rows<NR, INT>(a, xs, xn, ex, lbound, j0 + lane, j0 + lane < V, lane, best, cnt);
    h8_select_end<NR>(a, best, cnt, lane);
}

/* ---- host ---- */

int orthros_head8_supported(int n, int V, int K)
{
    return n >= 1 && n <= ORTHROS_HEAD8_MAX_ROWS && V >= 1 && K >= 16 && K % 16 == 0 && K <= ORTHROS_HEAD8_MAX_K;
}

int orthros_head8_create(orthros_head8 **out, const void *W, int V, int K, cudaStream_t stream)
{
    if (!out) return orthros_error(ORTHROS_EINVAL, "head8: no output");
    *out = NULL;
    if (!W || !orthros_head8_supported(1, V, K) || (uintptr_t)W % 16)
        return orthros_error(ORTHROS_EINVAL, "head8: V %d, K %d (K a multiple of 16 up to %d, W 16-byte aligned)", V, K,
                             ORTHROS_HEAD8_MAX_K);
    orthros_head8 *h = (orthros_head8 *)calloc(1, sizeof *h);
    if (!h) return orthros_error(ORTHROS_ENOMEM, "head8: out of memory");
    h->W = W, h->V = V, h->K = K;
    const size_t qb = ((size_t)V * K + 255) & ~(size_t)255, vb = ((size_t)V * sizeof(float) + 255) & ~(size_t)255;
    const size_t ab = ORTHROS_HEAD8_MAX_ROWS * vb, xb = (size_t)ORTHROS_HEAD8_MAX_ROWS * K * 2, tail = 4096;
    const size_t bytes = qb + 3 * vb + ab + xb + tail;
    cudaError_t e = cudaMalloc(&h->mem, bytes);
    if (e != cudaSuccess) {
        free(h);
        return orthros_error(ORTHROS_EDEVICE, "head8: cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    }
    char *m = (char *)h->mem;
    h->q = (int8_t *)m, h->s = (float *)(m + qb), h->c = (float *)(m + qb + vb), h->d = (float *)(m + qb + 2 * vb);
    h->approx = (float *)(m + qb + 3 * vb), h->xst = (bf16 *)(m + qb + 3 * vb + ab);
    char *t = m + qb + 3 * vb + ab + xb;
    /* the step's scratch (h8_args::tail's offsets) */
    h->keys = (unsigned long long *)t;
    h->lb = (unsigned *)(t + 64), h->counts = (unsigned *)(t + 128), h->done = (unsigned *)(t + 192);
    h->ex = (float *)(t + 256), h->bar = (unsigned *)(t + 320);
    int rc = 0, dev = 0;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess || (e = cudaDeviceGetAttribute(&h->sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
        rc = orthros_error(ORTHROS_EDEVICE, "head8: the device's SMs: %s", cudaGetErrorString(e));
    if (!rc && (e = cudaMemsetAsync(t, 0, tail, stream)) != cudaSuccess)
        rc = orthros_error(ORTHROS_EDEVICE, "head8: cudaMemsetAsync: %s", cudaGetErrorString(e));
    if (!rc) {
        head8_quantize_kernel<<<V, H8_THREADS, 0, stream>>>((const bf16 *)W, K, h->q, h->s, h->c, h->d);
        if ((e = cudaGetLastError()) != cudaSuccess || (e = cudaStreamSynchronize(stream)) != cudaSuccess)
            rc = orthros_error(ORTHROS_EDEVICE, "head8: the int8 copy: %s", cudaGetErrorString(e));
    }
    if (rc) {
        orthros_head8_destroy(h);
        return rc;
    }
    *out = h;
    return 0;
}

void orthros_head8_destroy(orthros_head8 *h)
{
    if (!h) return;
    if (h->mem) cudaFree(h->mem);
    free(h);
}

const void *orthros_head8_weights(const orthros_head8 *h) { return h ? h->W : NULL; }

int orthros_head8_matches(const orthros_head8 *h, const void *W, int V, int K)
{
    return h && h->W == W && h->V == V && h->K == K;
}

template <typename Kernel>
static int h8_launch(Kernel kernel, int blocks, size_t smem, int pdl, const h8_args &a, cudaStream_t stream)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3((unsigned)blocks), cfg.blockDim = dim3(H8_THREADS), cfg.dynamicSmemBytes = smem;
    cfg.stream = stream, cfg.attrs = pdl ? at : NULL, cfg.numAttrs = pdl ? 1 : 0;
    ORTHROS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a));
    ORTHROS_CUDA_LAUNCH_CHECK("head8");
    return 0;
}

/* The screen's shared memory: the bf16 rows, and in the integer form their split too. */
static size_t h8_smem_bytes(int NR, int K, int dp4a) { return (size_t)NR * K * (dp4a ? 4 : 2); }
#define H8_SMEM_MAX ((size_t)227 * 1024)

template <int NR, int D, bool INT, bool SEL>
static int h8_run(orthros_head8 *h, const h8_args &a, const orthros_head8_params *p, cudaStream_t stream)
{
    const size_t smem = h8_smem_bytes(NR, h->K, INT), smem_b = h8_smem_bytes(NR, h->K, 0);
    /* the device's own SM count, never more (the one launch's grid must be resident at once) */
    const int sms = p->num_sms > 0 ? min(p->num_sms, h->sms) : h->sms;
    int *per_sm = &h->per_sm[SEL][INT][D - 2][NR];
    if (!*per_sm) { /* once a copy, form, NR and D: the limits raised (before the occupancy query, which needs it) */
        if (smem > 48 * 1024)
            ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(head8_approx_kernel<NR, D, INT, SEL>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        if (!SEL && smem_b > 48 * 1024)
            ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(head8_select_kernel<NR, INT>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_b));
        ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, head8_approx_kernel<NR, D, INT, SEL>,
                                                                         H8_THREADS, smem));
        if (*per_sm < 1)
            return orthros_error(ORTHROS_EDEVICE, "head8: no block of %zu B of shared memory fits on an SM", smem);
    }
    const int per = *per_sm;
    const int rows_a = (h->V + H8_R - 1) / H8_R, rows_b = (h->V + 31) / 32;
    int ga = min(per * sms, (rows_a + H8_WARPS - 1) / H8_WARPS);
    const int gb = min(2 * sms, (rows_b + H8_WARPS - 1) / H8_WARPS);
    if (p->even) { /* the rounds of row groups the full grid takes, over the fewest blocks that take them: V 128256 is
                    * 32064 groups, 16 rounds over 264 blocks' 2112 warps (the last a fifth full), or 251 blocks' 2008
                    * (the last 97% full) */
        const int rounds = (rows_a + ga * H8_WARPS - 1) / (ga * H8_WARPS);
        ga = (rows_a + rounds * H8_WARPS - 1) / (rounds * H8_WARPS);
    }
    int rc = h8_launch(head8_approx_kernel<NR, D, INT, SEL>, ga, smem, p->pdl, a, stream);
    if (rc || SEL) return rc;
    return h8_launch(head8_select_kernel<NR, INT>, gb, smem_b, p->pdl, a, stream);
}

template <int NR, bool INT, bool SEL>
static int h8_run_depth(orthros_head8 *h, const h8_args &a, const orthros_head8_params *p, cudaStream_t stream)
{
    if (p->depth == 3) return h8_run<NR, 3, INT, SEL>(h, a, p, stream);
    if (p->depth == 4) return h8_run<NR, 4, INT, SEL>(h, a, p, stream);
    return h8_run<NR, 2, INT, SEL>(h, a, p, stream);
}

template <int NR, bool SEL>
static int h8_run_sel(orthros_head8 *h, const h8_args &a, const orthros_head8_params *p, cudaStream_t stream)
{
    return h->last_dp4a ? h8_run_depth<NR, true, SEL>(h, a, p, stream) : h8_run_depth<NR, false, SEL>(h, a, p, stream);
}

template <int NR> static int h8_run_form(orthros_head8 *h, const h8_args &a, const orthros_head8_params *p, cudaStream_t stream)
{
    h->last_dp4a = p->dp4a && h8_smem_bytes(NR, h->K, 1) <= H8_SMEM_MAX;
    return p->one_launch ? h8_run_sel<NR, true>(h, a, p, stream) : h8_run_sel<NR, false>(h, a, p, stream);
}

int orthros_head8_argmax(orthros_head8 *h, const orthros_head8_params *p, cudaStream_t stream)
{
    if (!h || !p || !p->ids || !p->x || !p->norm_w || !orthros_head8_supported(p->n, h->V, h->K) ||
        ((uintptr_t)p->x | (uintptr_t)p->norm_w) % 16 || p->depth < 0 || p->depth == 1 || p->depth > 4 ||
        (p->dp4a != 0 && p->dp4a != 1) || (p->one_launch != 0 && p->one_launch != 1) ||
        (p->no_next_pf != 0 && p->no_next_pf != 1) || (p->even != 0 && p->even != 1))
        return orthros_error(ORTHROS_EINVAL,
                             "head8: n %d (1 to %d), depth %d (0, 2-4), dp4a %d, one_launch %d, no_next_pf %d and even %d "
                             "(0 or 1), x and norm_w 16-byte aligned", p ? p->n : 0, ORTHROS_HEAD8_MAX_ROWS,
                             p ? p->depth : 0, p ? p->dp4a : 0, p ? p->one_launch : 0, p ? p->no_next_pf : 0,
                             p ? p->even : 0);
    h8_args a;
    a.q = h->q, a.s = h->s, a.c = h->c, a.d = h->d, a.W = (const bf16 *)h->W, a.approx = h->approx, a.logits = p->logits;
    a.xst = h->xst, a.tail = (char *)h->keys, a.ids = p->ids;
    a.x = (const bf16 *)p->x, a.norm_w = (const bf16 *)p->norm_w, a.eps = p->eps, a.n = p->n, a.V = h->V, a.K = h->K;
    a.next_pf = !p->no_next_pf;
    if (p->n == 1) return h8_run_form<1>(h, a, p, stream);
    if (p->n == 2) return h8_run_form<2>(h, a, p, stream);
    return h8_run_form<4>(h, a, p, stream);
}

int orthros_head8_last_candidates(orthros_head8 *h, int n, unsigned *counts, cudaStream_t stream)
{
    if (!h || !counts || n < 1 || n > ORTHROS_HEAD8_MAX_ROWS) return orthros_error(ORTHROS_EINVAL, "head8: counts of %d rows", n);
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(counts, h->counts, (size_t)n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(stream));
    return 0;
}

int orthros_head8_export(const orthros_head8 *h, int8_t *q, float *s, float *c, float *d, cudaStream_t stream)
{
    if (!h || !q || !s || !c || !d) return orthros_error(ORTHROS_EINVAL, "head8: export into NULL");
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(q, h->q, (size_t)h->V * h->K, cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(s, h->s, (size_t)h->V * sizeof(float), cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(c, h->c, (size_t)h->V * sizeof(float), cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(d, h->d, (size_t)h->V * sizeof(float), cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(stream));
    return 0;
}

int orthros_head8_last_screen(const orthros_head8 *h, int n, uint16_t *x, float *approx, float *ex, int *dp4a,
                              cudaStream_t stream)
{
    if (!h || !x || !approx || !ex || !dp4a || n < 1 || n > ORTHROS_HEAD8_MAX_ROWS)
        return orthros_error(ORTHROS_EINVAL, "head8: the last screen of %d rows into NULL", n);
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(x, h->xst, (size_t)n * h->K * 2, cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(approx, h->approx, (size_t)n * h->V * sizeof(float), cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(ex, h->ex, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(stream));
    *dp4a = h->last_dp4a;
    return 0;
}
