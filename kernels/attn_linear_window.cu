/* The local softmax window of a converted model's linear formula (docs/converted-models.md), as a pass after the
 * linear op: that op leaves o_lin = num / (den + eps) in out and den in p.den (its kernels write the row's fp32
 * denominator beside the output, attn_linear_prefill.cu / attn_linear_decode.cu); this pass forms, per (row, query
 * head), the window's scores x = q~.k~ / sqrt(d) over positions t - W + 1 .. t from the KV cache (an orthros layer's)
 * or ring (a linear layer's), their max m, l = sum e^{x - m} and a = sum e^{x - m} v, and writes
 *   o = (o_lin (den + eps) + gamma_h a) / (den + gamma_h l)
 * over out. l >= 1 (the max's own term), so the denominator is at least gamma_h > 0.
 *
 * Why a separate pass and not fused into the linear output pass (which would save reading q~ and reading and
 * rewriting o, about two thirds of this pass's bytes): the window has to work under every linear path (v3/v4 with
 * featurized maps, hedgehog with F != d, v5/v6's per-segment walk, v7's wgmma pass at 255 registers and one block an
 * SM, the recurrent decode) and every W (1 .. beyond the chunk, where the window leaves the 64-token chunk pair
 * that a fused v6/v7 pass could keep in shared memory); v7 has no registers or shared memory left for a second
 * score tile and its accumulators (a fused d 128 pass would also hold q~ and the previous and current chunk's k~ and
 * v beside v7's 193 KB), and v6 d 64 runs two blocks an SM at 128 registers already. So v2 makes the separate pass run
 * near its floor instead (measured v1 was at 28% of it). With v2 and the linear kernels' lagging keys loaded as plain
 * rows (attn_linear_prefill.cu), the W 64 prefill at 128K is 1.41-1.46x the plain one at d 64 and 1.45-1.48x at d 128
 * (H200, docs/kernels.md): inside 1.5x, so the fusion was not written.
 *
 * Floors at 128K tokens, 32 q / 8 kv heads, W 64 (H200: ~800 TFLOP/s dense bf16, 4.5 TB/s):
 *   FLOPs 4 Hq d sum_t min(t + 1, W) = 68.7 GFLOP at d 64 (0.086 ms), 137 GFLOP at d 128 (0.17 ms); the mma kernel
 *   computes 16-key groups, ~80 keys a row for W 64: 86 / 172 GFLOP;
 *   bytes per token: q~ Hq d 2, o read and written 2 Hq d 2, den Hq 4, k~ and v once 2 Hkv d 2 (the overlap of
 *   neighbouring blocks' keys comes from L2): 14.5 KB at d 64 (1.9 GB, 0.42 ms), 28.8 KB at d 128 (3.8 GB, 0.84 ms).
 *   So the pass is memory-bound: against the plain linear prefill's 1.16 / 2.65 ms (v6 d 64 / v7 d 128), the
 *   target of 1.5x leaves 0.58 / 1.33 ms for this pass and the linear kernels' lagging loads.
 *
 * Versions (orthros_attn_linear_window_set_version; attn_linear_window.h):
 * v1: mma.sync (sm_80+), a block per (64 positions, kv head, pair of query heads of its group), 8 warps (head of the
 *   pair x 16 rows), K / V tiles of 64 keys double-buffered by cp.async and shared by both heads, online softmax in
 *   the log2 domain (the helpers of the full prefill, v1), each warp skipping the 16-key groups outside its rows'
 *   windows; head dims 64 (Q fragments in registers) and 128 (re-read from shared memory); two blocks an SM (127 /
 *   128 registers, 55 / 104 KB of shared memory; at sm_90a 32 bytes of spills at d 128). Measured (H200, e470e63,
 *   128K, W 64): d 64 1.52 ms, d 128 2.38 ms: 28% of the floor's bandwidth. Where it lost (from its structure, not
 *   profiled): each block's phases run in sequence (Q and two K/V tiles, then the scores, then the combine, whose
 *   o_lin and den loads sit in the dependency chain after the last mma, 4 bytes a lane), with 16 warps an SM and
 *   nothing in flight during the compute; the window's K / V went through shared memory once per head pair.
 *   Windows over 64 take v1 under v2 too.
 * v2 (the default; H200 at 3ba2852: 0.553 / 1.161 ms at d 64 / 128, 80% / 76% of the floor): the section above
 *   lw2_kernel. Per warp and query head a loop of 834 SASS instructions at d 64 (80 HMMA, 42 MUFU) and 1227 at
 *   d 128 (160 HMMA) at W 64; 4 blocks (16 warps) an SM at d 64 (128 registers, no spills), 2 blocks (8 warps) at
 *   d 128 (255 registers, 4 bytes of spills at W 50-64: one local load a head).
 *   Prediction (128K, 32 / 8 heads, W 64): memory-bound with the issue well below it: 8192 x 32 warp-heads over
 *   132 SMs x 4 schedulers at one instruction a cycle is 0.21 ms at d 64 (0.31 ms at d 128) against the floors of
 *   0.42 / 0.84 ms; with ~85% of the copy rate (4.27 TB/s measured): d 64 ~0.52 ms, d 128 ~1.04 ms (v1 1.52 /
 *   2.38). The W 64 linear prefill then ~1.70 ms at d 64 (1.18 + 0.52: 1.44x the plain 1.18) and ~3.7 ms at d 128
 *   (2.65 + 1.04: 1.39x). If v2 lands well above that, the next suspects: the block prologue (K / V, 32 / 64 KB,
 *   waited on before any compute: a block's first head is latency-bound) and the ring slot modulo per key row.
 * Other head dims, and calls of fewer than 16 rows (decode), take a plain kernel: one warp per (row, head), fp32. */
#include "attn_linear_window.h"

#include <math.h>

#include "cuda_common.cuh"

#define LW_BM 64    /* positions per block */
#define LW_BN 64    /* keys per K/V tile */
#define LW_WARPS 8  /* two query heads x 4 warps of 16 rows */

template <int D> struct lw_cfg {
    static constexpr int LD = D + SMEM_PAD;
    /* Q of two heads, two stages of K and V. */
    static constexpr size_t SMEM = (size_t)(2 * LW_BM + 4 * LW_BN) * LD * sizeof(bf16);
};

/* The combine of one row of the window with the linear term in out (o_lin), for this thread's 2 columns of each
 * of the DT 8-column tiles: o = (o_lin (den + eps) + gamma acc) / (den + gamma l). */
template <int DT>
static __device__ __forceinline__ void lw_combine(bf16 *dst, const float (&o)[DT][4], int half, float den, float eps,
                                                  float gamma, float l)
{
    const float keep = den + eps, inv = 1.0f / (den + gamma * l);
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        __nv_bfloat162 *p2 = (__nv_bfloat162 *)(dst + dt * 8);
        const __nv_bfloat162 cur = *p2;
        const float a = (__low2float(cur) * keep + gamma * o[dt][2 * half]) * inv;
        const float b = (__high2float(cur) * keep + gamma * o[dt][2 * half + 1]) * inv;
        *p2 = __floats2bfloat162_rn(a, b);
    }
}

/* Q fragments stay in registers at head dim 64; at 128 they are re-read from shared memory each tile, so that the
 * kernel fits 128 registers and two blocks an SM (the o accumulators alone take 64). */
template <int D>
static __global__ void __launch_bounds__(LW_WARPS * 32, 2) lw_mma_kernel(orthros_attn_linear_window_params p)
{
    using C = lw_cfg<D>;
    constexpr int LD = C::LD, KT = D / 16, DT = D / 8, CH = D / 8, NT = LW_BN / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = (bf16 *)smem_raw;     // [2 heads][64][LD]
    bf16 *sK = sQ + 2 * LW_BM * LD;  // [2 stages][64][LD]
    bf16 *sV = sK + 2 * LW_BN * LD;  // [2 stages][64][LD]

    const int g = p.Hq / p.Hkv, HP = (g + 1) / 2;
    const int kv = blockIdx.y / HP, j0 = 2 * (blockIdx.y % HP), b = blockIdx.z, nq = min(2, g - j0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, hh = warp / 4, wq = warp % 4;
    const int i0 = blockIdx.x * LW_BM, i1 = min(i0 + LW_BM, p.n);  // the block's rows [i0, i1)
    const int pos0 = p.pos0[b];
    const int s_begin = max(0, pos0 + i0 - p.window + 1), s_end = pos0 + i1 - 1;  // the keys any row reads
    const int ntiles = (s_end - s_begin + LW_BN) / LW_BN;

    for (int e = threadIdx.x; e < 2 * LW_BM * CH; e += blockDim.x) {
        const int qh = e / (LW_BM * CH), r = (e / CH) % LW_BM, ch = e % CH;
        const bool ok = qh < nq && i0 + r < p.n;
        const bf16 *src = ok ? (const bf16 *)p.q + ((size_t)b * p.n + i0 + r) * p.q_stride + (size_t)(kv * g + j0 + qh) * D + ch * 8
                             : (const bf16 *)p.q;
        cp_async16(sQ + (qh * LW_BM + r) * LD + ch * 8, src, ok ? 16 : 0);
    }
    const bf16 *kc = (const bf16 *)p.k_cache + (size_t)b * p.cap * p.Hkv * D + (size_t)kv * D;
    const bf16 *vc = (const bf16 *)p.v_cache + (size_t)b * p.cap * p.Hkv * D + (size_t)kv * D;
    auto load_kv = [&](int t) {
        const int ts = s_begin + t * LW_BN, buf = t & 1;
        for (int e = threadIdx.x; e < LW_BN * CH; e += blockDim.x) {
            const int r = e / CH, ch = e % CH, s = ts + r, ok = s <= s_end;
            const size_t off = ok ? (size_t)(s % p.cap) * p.Hkv * D + ch * 8 : 0;
            cp_async16(sK + (buf * LW_BN + r) * LD + ch * 8, kc + off, ok ? 16 : 0);
            cp_async16(sV + (buf * LW_BN + r) * LD + ch * 8, vc + off, ok ? 16 : 0);
        }
    };
    load_kv(0);
    cp_async_commit();

    // This thread's rows (of the warp's 16, head hh of the pair): tile rows rA, rB = rA + 8, their positions and
    // window starts. The warp's rows wr0 .. wr1 (those inside the call) read keys wlo .. whi.
    const int rA = wq * 16 + lane / 4, rB = rA + 8;
    const int tA = pos0 + i0 + rA, tB = pos0 + i0 + rB;
    const int loA = max(0, tA - p.window + 1), loB = max(0, tB - p.window + 1);
    const int wr0 = wq * 16, wr1 = min(wq * 16 + 15, i1 - i0 - 1);
    const bool active = hh < nq && wr0 <= wr1;
    const int wlo = max(0, pos0 + i0 + wr0 - p.window + 1), whi = pos0 + i0 + wr1;
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);

    constexpr bool QREG = D == 64;
    uint32_t qf[QREG ? KT : 1][4];
    const bf16 *qw = sQ + (hh * LW_BM + wq * 16 + lane % 16) * LD + (lane / 16) * 8;
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;

    for (int t = 0; t < ntiles; t++) {
        if (t + 1 < ntiles) {
            load_kv(t + 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (QREG && t == 0 && active) {
#pragma unroll
            for (int kk = 0; kk < KT; kk++)
                ldmatrix_x4(qf[QREG ? kk : 0][0], qf[QREG ? kk : 0][1], qf[QREG ? kk : 0][2], qf[QREG ? kk : 0][3],
                            qw + kk * 16);
        }
        const int ts = s_begin + t * LW_BN;
        // The 16-key groups of this tile that hold keys of the warp's rows (warp-uniform): g0 .. g1.
        const int klo = max(wlo - ts, 0), khi = min(whi - ts, LW_BN - 1);
        if (active && klo <= khi) {
            const int g0 = klo / 16, g1 = khi / 16;
            const bf16 *k = sK + (t & 1) * LW_BN * LD, *v = sV + (t & 1) * LW_BN * LD;
            float s[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KT; kk++) {
                uint32_t qa[4];
                if (QREG) {
#pragma unroll
                    for (int j = 0; j < 4; j++) qa[j] = qf[QREG ? kk : 0][j];
                } else {
                    ldmatrix_x4(qa[0], qa[1], qa[2], qa[3], qw + kk * 16);
                }
#pragma unroll
                for (int nt = 0; nt < NT; nt += 2) {
                    if (nt / 2 < g0 || nt / 2 > g1) continue;
                    uint32_t bb[4];
                    ldmatrix_x4(bb[0], bb[1], bb[2], bb[3],
                                k + (nt * 8 + (lane % 8) + (lane / 16) * 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
                    mma_bf16_16816(s[nt], qa, bb);
                    mma_bf16_16816(s[nt + 1], qa, bb + 2);
                }
            }
            // Scores in log2 units; keys outside a row's window (and the skipped groups, outside every row's) -inf.
            float mxA = -INFINITY, mxB = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int key = ts + nt * 8 + (lane % 4) * 2 + (c & 1);
                    const int tt = c < 2 ? tA : tB, lo = c < 2 ? loA : loB;
                    s[nt][c] = key > tt || key < lo ? -INFINITY : s[nt][c] * sl2;
                }
                mxA = fmaxf(mxA, fmaxf(s[nt][0], s[nt][1]));
                mxB = fmaxf(mxB, fmaxf(s[nt][2], s[nt][3]));
            }
            warp_online_softmax(s, o, mxA, mxB, mA, mB, lA, lB);
            // o += P V over the groups computed (P is 0 elsewhere).
#pragma unroll
            for (int kk = 0; kk < NT / 2; kk++) {
                if (kk < g0 || kk > g1) continue;
                uint32_t a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                                 pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                 pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
                for (int dt = 0; dt < DT; dt += 2) {
                    uint32_t bb[4];
                    ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3],
                                      v + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + dt * 8 + (lane / 16) * 8);
                    mma_bf16_16816(o[dt], a, bb);
                    mma_bf16_16816(o[dt + 1], a, bb + 2);
                }
            }
        }
        __syncthreads();
    }
    lA += __shfl_xor_sync(0xffffffffu, lA, 1);
    lA += __shfl_xor_sync(0xffffffffu, lA, 2);
    lB += __shfl_xor_sync(0xffffffffu, lB, 1);
    lB += __shfl_xor_sync(0xffffffffu, lB, 2);
    if (!active) return;
    const int h = kv * g + j0 + hh, col = (lane % 4) * 2;
    const float gamma = p.gate ? bf2f(((const bf16 *)p.gate)[h]) : 1.0f;
    if (i0 + rA < p.n) {
        const size_t row = (size_t)b * p.n + i0 + rA;
        lw_combine<DT>((bf16 *)p.out + (row * p.Hq + h) * D + col, o, 0, p.den[row * p.Hq + h], p.eps, gamma, lA);
    }
    if (i0 + rB < p.n) {
        const size_t row = (size_t)b * p.n + i0 + rB;
        lw_combine<DT>((bf16 *)p.out + (row * p.Hq + h) * D + col, o, 1, p.den[row * p.Hq + h], p.eps, gamma, lB);
    }
}

/* ---- v2: one block per (64 positions, kv head, sequence), W <= 64 ----
 * 4 warps, warp w on the block's rows 16 w .. 16 w + 15 for every query head of the group in turn. The block's key
 * window (positions i0 - 64 .. i0 + 63 of the call, the W + 63 it needs and zeros elsewhere) is loaded into shared
 * memory once, for all g heads (v1 loaded it once per head pair). Each warp keeps two 16-row slots of its own: the
 * q~ rows of the next head land in the Q slot while the current head's softmax and P V run, and the o_lin rows of
 * the next head in the O slot while the next head's scores run, so that a warp always has the next head's 4 or 8 KB in
 * flight (16 warps an SM at d 64, 8 at d 128: 64 KB an SM, about what 4.5 TB/s at ~1.5 us of latency needs) and
 * no block barrier after the first. Keys: a warp takes the G = ceil((W + 15) / 16) 16-key groups that end at its last
 * row (W + 15 keys cover its 16 rows' windows), all of them in registers (G <= 5: 40 scores a thread), one max, no
 * online rescale; only the groups that cross a row's window edge (the first ones and the diagonal one) are masked
 * element by element. The combine reads o_lin from the O slot in the accumulator layout, writes the result back
 * there, and the warp stores its 16 rows as 16-byte vectors (v1 read and wrote o 4 bytes at a time). */
#define LW2_WARPS 4
#define LW2_ROWS (16 * LW2_WARPS)  /* positions per block */
#define LW2_KEYS 128               /* key rows in shared memory: positions i0 - 64 .. i0 + 63 */
#define LW2_WMAX 64
#define LW2_GMAX 5                 /* 16-key groups a warp takes: ceil((W + 15) / 16) <= 5 for W <= 64 */

template <int D> struct lw2_cfg {
    static constexpr int LD = D + SMEM_PAD;
    static constexpr int SLOT = 16 * LD;  /* bf16 elements of one warp's 16-row slot */
    /* K, V [128][LD]; per warp a Q slot and an O slot. */
    static constexpr size_t SMEM = ((size_t)2 * LW2_KEYS * LD + (size_t)LW2_WARPS * 2 * SLOT) * sizeof(bf16);
    static constexpr int BLOCKS = D == 64 ? 4 : 2;  /* an SM: 55 / 104 KB of shared memory a block */
};

/* cp.async of 16 rows of D bf16 (rows r of src at src + r * stride elements) into a warp's slot, by its 32 lanes;
 * rows at or past `valid` zero-filled. */
template <int D>
static __device__ __forceinline__ void lw2_load_rows(bf16 *slot, const bf16 *src, int stride, int valid, int lane)
{
    constexpr int CH = D / 8, LD = lw2_cfg<D>::LD;
#pragma unroll
    for (int k = 0; k < 16 * CH / 32; k++) {
        const int e = lane + 32 * k, r = e / CH, ch = e % CH, ok = r < valid;
        cp_async16(slot + r * LD + ch * 8, ok ? src + (r * stride + ch * 8) : src, ok ? 16 : 0);
    }
}

/* G = ceil((W + 15) / 16), a template parameter so that the key groups are unrolled without predicates. */
template <int D, int G>
static __global__ void __launch_bounds__(LW2_WARPS * 32, lw2_cfg<D>::BLOCKS)
    lw2_kernel(orthros_attn_linear_window_params p)
{
    static_assert(G >= 1 && G <= LW2_GMAX, "windows of 1 .. 64");
    static_assert((LW2_WARPS * 32) % (D / 8) == 0, "a thread keeps one 16-byte column of the key rows");
    using C = lw2_cfg<D>;
    constexpr int LD = C::LD, KT = D / 16, DT = D / 8, CH = D / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sK = (bf16 *)smem_raw;      // [128][LD]: key row kr is position i0 - 64 + kr of the call (+ pos0)
    bf16 *sV = sK + LW2_KEYS * LD;    // [128][LD]
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    bf16 *sQ = sV + LW2_KEYS * LD + warp * 2 * C::SLOT, *sO = sQ + C::SLOT;  // this warp's slots

    const int g = p.Hq / p.Hkv, kv = blockIdx.y, b = blockIdx.z, W = p.window;
    const int i0 = blockIdx.x * LW2_ROWS, pos0 = p.pos0[b];
    const int kb0 = pos0 + i0 - 64;  // the position of key row 0
    // The keys any row of the block reads: from the first row's window start to the last row of the call.
    const int s_lo = max(0, pos0 + i0 - W + 1), s_hi = pos0 + min(i0 + LW2_ROWS, p.n) - 1;
    {
        const bf16 *kc = (const bf16 *)p.k_cache + (size_t)b * p.cap * p.Hkv * D + (size_t)kv * D;
        const bf16 *vc = (const bf16 *)p.v_cache + (size_t)b * p.cap * p.Hkv * D + (size_t)kv * D;
        // A thread keeps its 16-byte column ch and steps RSTEP rows: the ring slot moves with it, one modulo a thread
        // (cap >= W + n - 1 >= RSTEP here).
        constexpr int RSTEP = LW2_WARPS * 32 / CH;
        const int ch = threadIdx.x % CH, kr1 = threadIdx.x / CH;
        int slot = (kb0 + kr1) % p.cap;
        if (slot < 0) slot += p.cap;
#pragma unroll 4
        for (int kr = kr1; kr < LW2_KEYS; kr += RSTEP) {
            const int s = kb0 + kr, ok = s >= s_lo && s <= s_hi;
            const size_t off = ok ? (size_t)slot * p.Hkv * D + ch * 8 : 0;
            cp_async16(sK + kr * LD + ch * 8, kc + off, ok ? 16 : 0);
            cp_async16(sV + kr * LD + ch * 8, vc + off, ok ? 16 : 0);
            slot += RSTEP;
            if (slot >= p.cap) slot -= p.cap;
        }
    }
    // This warp's rows of the call: i0 + 16 warp + r, r < wvalid.
    const int wvalid = min(16, p.n - (i0 + 16 * warp));
    // Its first row (b, i): q~, o and den of the group's first head; rows 16 apart at most, so 32-bit strides.
    const size_t row0 = (size_t)b * p.n + i0 + 16 * warp;
    const bf16 *qbase = (const bf16 *)p.q + row0 * p.q_stride + (size_t)kv * g * D;
    bf16 *obase = (bf16 *)p.out + (row0 * p.Hq + (size_t)kv * g) * D;
    const float *dbase = p.den + row0 * p.Hq + (size_t)kv * g;
    const int qstride = (int)p.q_stride, ostride = p.Hq * D;
    if (wvalid > 0) {
        lw2_load_rows<D>(sQ, qbase, qstride, wvalid, lane);
        lw2_load_rows<D>(sO, obase, ostride, wvalid, lane);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();  // the keys are in; from here on each warp runs alone
    if (wvalid <= 0) return;

    // The warp's key groups: G groups of 16 ending at its last row's own key (key row 16 warp + 79), so that key j
    // (0 .. 16 G - 1) of the warp is position R0 + 16 - 16 G + j, R0 = pos0 + i0 + 16 warp its first row's position.
    // Row r (0 .. 15) keeps key j when r + off - W + 1 <= j <= r + off (off = 16 G - 16) and the position is >= 0.
    constexpr int off = 16 * G - 16;
    const int kr0 = 16 * warp + 80 - 16 * G;                   // key row of the warp's key 0 (>= 0)
    const int kpos = pos0 + i0 + 16 * warp + 16 - 16 * G;      // its position
    const int jneg = kpos < 0 ? -kpos : 0;                     // keys below it are before position 0
    const int rA = lane / 4, rB = rA + 8, col = (lane % 4) * 2;
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);
    const bf16 *qw = sQ + (lane % 16) * LD + (lane / 16) * 8;

    for (int j = 0; j < g; j++) {
        const int h = kv * g + j;
        cp_async_wait<1>();  // this head's q~ rows (the O rows may still be landing)
        __syncwarp();
        float s[2 * G][4];
#pragma unroll
        for (int nt = 0; nt < 2 * G; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            uint32_t qa[4];
            ldmatrix_x4(qa[0], qa[1], qa[2], qa[3], qw + kk * 16);
#pragma unroll
            for (int gi = 0; gi < G; gi++) {
                uint32_t bb[4];
                ldmatrix_x4(bb[0], bb[1], bb[2], bb[3],
                            sK + (kr0 + gi * 16 + (lane % 8) + (lane / 16) * 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
                mma_bf16_16816(s[2 * gi], qa, bb);
                mma_bf16_16816(s[2 * gi + 1], qa, bb + 2);
            }
        }
        __syncwarp();  // every lane's reads of the Q slot are done
        if (j + 1 < g) lw2_load_rows<D>(sQ, qbase + (j + 1) * D, qstride, wvalid, lane);
        cp_async_commit();
        const float denA = rA < wvalid ? dbase[rA * p.Hq + j] : 0.0f;
        const float denB = rB < wvalid ? dbase[rB * p.Hq + j] : 0.0f;
        const float gamma = p.gate ? bf2f(((const bf16 *)p.gate)[h]) : 1.0f;

        // The keys outside a row's window -inf (the groups inside every row's window untouched), the row maxima of
        // the raw scores; the scale 1/sqrt(d) log2(e) is folded into the exponent's FFMA below.
        float mA = -INFINITY, mB = -INFINITY;
#pragma unroll
        for (int gi = 0; gi < G; gi++) {
            const bool whole = 16 * gi >= off - W + 16 && gi <= G - 2 && 16 * gi >= jneg;
#pragma unroll
            for (int h2 = 0; h2 < 2; h2++) {
                float *x = s[2 * gi + h2];
                if (!whole) {
#pragma unroll
                    for (int c = 0; c < 4; c++) {
                        const int key = 16 * gi + 8 * h2 + col + (c & 1), r = c < 2 ? rA : rB;
                        const bool in = (unsigned)(key - (r + off - W + 1)) < (unsigned)W && key >= jneg;
                        x[c] = in ? x[c] : -INFINITY;
                    }
                }
                mA = fmaxf(mA, fmaxf(x[0], x[1]));
                mB = fmaxf(mB, fmaxf(x[2], x[3]));
            }
        }
        // Every row keeps its own key (j = r + off), so its max is finite.
        mA = fmaxf(mA, __shfl_xor_sync(0xffffffffu, mA, 1));
        mA = fmaxf(mA, __shfl_xor_sync(0xffffffffu, mA, 2));
        mB = fmaxf(mB, __shfl_xor_sync(0xffffffffu, mB, 1));
        mB = fmaxf(mB, __shfl_xor_sync(0xffffffffu, mB, 2));
        const float nmA = -mA * sl2, nmB = -mB * sl2;
        float lA = 0.0f, lB = 0.0f, o[DT][4];
#pragma unroll
        for (int i = 0; i < DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
#pragma unroll
        for (int gi = 0; gi < G; gi++) {
            float *x0 = s[2 * gi], *x1 = s[2 * gi + 1];
#pragma unroll
            for (int c = 0; c < 4; c++) {
                x0[c] = ex2_ftz(fmaf(x0[c], sl2, c < 2 ? nmA : nmB));
                x1[c] = ex2_ftz(fmaf(x1[c], sl2, c < 2 ? nmA : nmB));
            }
            lA += (x0[0] + x0[1]) + (x1[0] + x1[1]);
            lB += (x0[2] + x0[3]) + (x1[2] + x1[3]);
            const uint32_t a[4] = {pack_bf16x2(x0[0], x0[1]), pack_bf16x2(x0[2], x0[3]), pack_bf16x2(x1[0], x1[1]),
                                   pack_bf16x2(x1[2], x1[3])};
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                uint32_t bb[4];
                ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3], sV + (kr0 + gi * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD +
                                                                  dt * 8 + (lane / 16) * 8);
                mma_bf16_16816(o[dt], a, bb);
                mma_bf16_16816(o[dt + 1], a, bb + 2);
            }
        }
        lA += __shfl_xor_sync(0xffffffffu, lA, 1);
        lA += __shfl_xor_sync(0xffffffffu, lA, 2);
        lB += __shfl_xor_sync(0xffffffffu, lB, 1);
        lB += __shfl_xor_sync(0xffffffffu, lB, 2);

        // The combine, o = (o_lin (den + eps) + gamma a) / (den + gamma l), in place in the O slot.
        cp_async_wait<1>();  // this head's o_lin rows (the next head's q~ may still be landing)
        __syncwarp();
        // As o_lin k + a u per element: k = (den + eps) / (den + gamma l), u = gamma / (den + gamma l).
        const float invA = __fdividef(1.0f, denA + gamma * lA), invB = __fdividef(1.0f, denB + gamma * lB);
        const float kA = (denA + p.eps) * invA, kB = (denB + p.eps) * invB, uA = gamma * invA, uB = gamma * invB;
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            uint32_t *pa = (uint32_t *)(sO + rA * LD + dt * 8 + col), *pb = (uint32_t *)(sO + rB * LD + dt * 8 + col);
            const uint32_t ca = *pa, cb = *pb;
            *pa = pack_bf16x2(fmaf(bf16x2_lo(ca), kA, o[dt][0] * uA), fmaf(bf16x2_hi(ca), kA, o[dt][1] * uA));
            *pb = pack_bf16x2(fmaf(bf16x2_lo(cb), kB, o[dt][2] * uB), fmaf(bf16x2_hi(cb), kB, o[dt][3] * uB));
        }
        __syncwarp();
        // The warp's rows of head h out, 16 bytes a lane a step.
        bf16 *dst = obase + j * D;
#pragma unroll
        for (int k = 0; k < 16 * CH / 32; k++) {
            const int e = lane + 32 * k, r = e / CH, ch = e % CH;
            if (r < wvalid) *(uint4 *)(dst + (r * ostride + ch * 8)) = *(const uint4 *)(sO + r * LD + ch * 8);
        }
        __syncwarp();  // every lane's reads of the O slot are done
        if (j + 1 < g) lw2_load_rows<D>(sO, obase + (j + 1) * D, ostride, wvalid, lane);
        cp_async_commit();
    }
}

/* One warp per (row, query head), fp32, keys one at a time with an online softmax: any even head dim up to 256
 * (lane j holds columns j, j + 32, ...), and the few rows of decode. */
#define LW_GEN_COLS (ORTHROS_MAX_HEAD_DIM / 32)
static __global__ void lw_generic_kernel(orthros_attn_linear_window_params p)
{
    const int lane = threadIdx.x % 32;
    const size_t item = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (item >= (size_t)p.B * p.n * p.Hq) return;
    const int h = (int)(item % p.Hq), d = p.d, kv = h / (p.Hq / p.Hkv);
    const size_t row = item / p.Hq;
    const int b = (int)(row / p.n), i = (int)(row % p.n);
    const int t = p.pos0[b] + i, lo = max(0, t - p.window + 1);
    const bf16 *q = (const bf16 *)p.q + row * p.q_stride + (size_t)h * d;
    float qv[LW_GEN_COLS], acc[LW_GEN_COLS];
#pragma unroll
    for (int c = 0; c < LW_GEN_COLS; c++) {
        const int j = lane + 32 * c;
        qv[c] = j < d ? bf2f(q[j]) : 0.0f;
        acc[c] = 0.0f;
    }
    const float scale = 1.0f / sqrtf((float)d);
    float m = -INFINITY, l = 0.0f;
    for (int s = lo; s <= t; s++) {
        const size_t slot = ((size_t)b * p.cap + (size_t)(s % p.cap)) * p.Hkv + kv;
        const bf16 *k = (const bf16 *)p.k_cache + slot * d, *v = (const bf16 *)p.v_cache + slot * d;
        float dot = 0.0f;
#pragma unroll
        for (int c = 0; c < LW_GEN_COLS; c++) {
            const int j = lane + 32 * c;
            if (j < d) dot += qv[c] * bf2f(k[j]);
        }
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const float x = dot * scale, mn = fmaxf(m, x), f = expf(m - mn), e = expf(x - mn);
        l = l * f + e;
#pragma unroll
        for (int c = 0; c < LW_GEN_COLS; c++) {
            const int j = lane + 32 * c;
            acc[c] = acc[c] * f + (j < d ? e * bf2f(v[j]) : 0.0f);
        }
        m = mn;
    }
    const float gamma = p.gate ? bf2f(((const bf16 *)p.gate)[h]) : 1.0f;
    const float den = p.den[row * p.Hq + h], keep = den + p.eps, inv = 1.0f / (den + gamma * l);
    bf16 *out = (bf16 *)p.out + (row * p.Hq + h) * d;
#pragma unroll
    for (int c = 0; c < LW_GEN_COLS; c++) {
        const int j = lane + 32 * c;
        if (j < d) out[j] = f2bf((bf2f(out[j]) * keep + gamma * acc[c]) * inv);
    }
}

template <int D> static int launch_mma(const orthros_attn_linear_window_params *p, cudaStream_t stream)
{
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(lw_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)lw_cfg<D>::SMEM));
    const int g = p->Hq / p->Hkv;
    const dim3 grid(ceil_div(p->n, LW_BM), p->Hkv * ((g + 1) / 2), p->B);
    lw_mma_kernel<D><<<grid, LW_WARPS * 32, lw_cfg<D>::SMEM, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("lw_mma_kernel");
    return 0;
}

template <int D, int G> static int launch_lw2_g(const orthros_attn_linear_window_params *p, cudaStream_t stream)
{
    ORTHROS_CUDA_CHECK(
        cudaFuncSetAttribute(lw2_kernel<D, G>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)lw2_cfg<D>::SMEM));
    const dim3 grid(ceil_div(p->n, LW2_ROWS), p->Hkv, p->B);
    lw2_kernel<D, G><<<grid, LW2_WARPS * 32, lw2_cfg<D>::SMEM, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("lw2_kernel");
    return 0;
}

template <int D> static int launch_lw2(const orthros_attn_linear_window_params *p, cudaStream_t stream)
{
    switch ((p->window + 15 + 15) / 16) {
    case 1: return launch_lw2_g<D, 1>(p, stream);
    case 2: return launch_lw2_g<D, 2>(p, stream);
    case 3: return launch_lw2_g<D, 3>(p, stream);
    case 4: return launch_lw2_g<D, 4>(p, stream);
    default: return launch_lw2_g<D, 5>(p, stream);
    }
}

/* 0 until the first call or set_version: then the default. */
static int window_version = 0;

int orthros_attn_linear_window_set_version(int version)
{
    if (version == 0) version = ORTHROS_ATTN_LINEAR_WINDOW_DEFAULT;
    if (version < 1 || version > ORTHROS_ATTN_LINEAR_WINDOW_LATEST)
        return orthros_error(ORTHROS_EINVAL, "local window: no kernel version %d (1 .. %d kept)", version,
                             ORTHROS_ATTN_LINEAR_WINDOW_LATEST);
    window_version = version;
    return 0;
}

int orthros_attn_linear_window_version(void)
{
    if (!window_version) window_version = ORTHROS_ATTN_LINEAR_WINDOW_DEFAULT;
    return window_version;
}

int orthros_attn_linear_window_bf16(const orthros_attn_linear_window_params *p, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (p->window < 1) return orthros_error(ORTHROS_EINVAL, "local window: %d (the pass is for windows of 1 or more)", p->window);
    if (p->Hkv <= 0 || p->Hq % p->Hkv)
        return orthros_error(ORTHROS_EINVAL, "local window: %d query heads not a multiple of %d kv heads", p->Hq, p->Hkv);
    if (p->d <= 0 || p->d > ORTHROS_MAX_HEAD_DIM || (p->d & 1))
        return orthros_error(ORTHROS_EUNSUPPORTED, "local window: head dim %d", p->d);
    if (!p->out || !p->den || !p->q || !p->k_cache || !p->v_cache || !p->pos0 || p->cap < 1)
        return orthros_error(ORTHROS_EINVAL, "local window: a buffer is missing (cap %d)", p->cap);
    if (p->n >= 16 && (p->d == 64 || p->d == 128) && p->q_stride % 8 == 0) {
        if (orthros_attn_linear_window_version() >= 2 && p->window <= LW2_WMAX)
            return p->d == 64 ? launch_lw2<64>(p, stream) : launch_lw2<128>(p, stream);
        return p->d == 64 ? launch_mma<64>(p, stream) : launch_mma<128>(p, stream);
    }
    const size_t items = (size_t)p->B * p->n * p->Hq;
    lw_generic_kernel<<<(unsigned)((items + 7) / 8), 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("lw_generic_kernel");
    return 0;
}
