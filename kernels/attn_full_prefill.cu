/* Causal GQA softmax attention of a chunk of queries against the KV cache, flash-attention-2 style.
 *
 * A "row" is one (query, head-of-the-GQA-group) pair, so the Hq/Hkv query heads that share a kv head share
 * every K/V tile load. Row tiles are the grid's slow axis, in reverse, so the heaviest (latest positions)
 * start first. Floor: 2 n^2 Hq d causal FLOPs over the GEMM ceiling (the K/V bytes are negligible: each tile is
 * reused by n g / 128 row blocks, from L2).
 *
 * Versions, a line each (what each measured against the floor and PyTorch SDPA: docs/kernels.md, "Prefill
 * attention"); v5-v7 are in attn_full_prefill_wgmma.cu:
 *   v1  mma.sync m16n8k16, 4 warps x 16 rows, 64-key tiles through cp.async, P re-packed from S as P V's A.
 *   v2  32 rows per warp, 128 per block, a 3-stage ring, ex2.approx with the scale folded into one FFMA.
 *   v3  v2 with a lazy rescale: O is rescaled only when some row of the warp changed its max.
 *   v4  v3 with 2x larger key tiles, 2 stages: the default without sm_90a code, and v5 / v6's fallback.
 *   v5  wgmma + TMA + warp specialization (FA3 style), window 0 with every key at its own slot.
 *   v6  v5 plus sliding windows and ring caches that wrap; window-0 shapes run v5's kernel unchanged.
 *   v7  v6 with three consumer warpgroups at head dim 64, window 0 (192-row blocks): the sm_90a default.
 * The plain kernel handles head dims other than 64 and 128: one warp per row, fp32, online softmax. */
#include "attn_full_prefill.h"

#include <math.h>

#include "attn_full_prefill_wgmma.cuh"
#include "cuda_common.cuh"

#define FA_WARPS 4
#define FA_BM 64
#define FA_BN 64

template <int D> struct fa_smem {
    static constexpr int LD = D + SMEM_PAD;
    static constexpr size_t bytes = (size_t)(FA_BM + 4 * FA_BN) * LD * sizeof(bf16);
};

template <int D> static __global__ void __launch_bounds__(FA_WARPS * 32) attn_prefill_mma_kernel(orthros_attn_full_prefill_params p)
{
    constexpr int LD = D + SMEM_PAD, KT = D / 16, DT = D / 8, CH = D / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = (bf16 *)smem_raw;       // [64][LD]
    bf16 *sK = sQ + FA_BM * LD;        // [2][64][LD]
    bf16 *sV = sK + 2 * FA_BN * LD;    // [2][64][LD]

    const int g = p.Hq / p.Hkv, rows = p.n * g;
    const int tile = gridDim.y - 1 - blockIdx.y, kv = blockIdx.x % p.Hkv, b = blockIdx.x / p.Hkv;
    const int r0 = tile * FA_BM;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tid = threadIdx.x;
    const int W = (p.Hq + 2 * p.Hkv) * D;
    const int pos0 = p.pos0[b];
    const int r_last = min(r0 + FA_BM, rows) - 1;
    const int t_first = pos0 + r0 / g, t_last = pos0 + r_last / g;
    const int s_begin = p.window > 0 ? max(0, t_first - p.window + 1) : 0;
    const int s_end = t_last + 1;
    const int lo_last = p.window > 0 ? max(0, t_last - p.window + 1) : 0;
    const int ntiles = (s_end - s_begin + FA_BN - 1) / FA_BN;

    const bf16 *qkv = (const bf16 *)p.qkv + (size_t)b * p.n * W;
    for (int c = tid; c < FA_BM * CH; c += blockDim.x) {
        int r = c / CH, ch = c % CH, rr = r0 + r;
        const bf16 *src = qkv;
        int ok = rr < rows;
        if (ok) src = qkv + (size_t)(rr / g) * W + (kv * g + rr % g) * D + ch * 8;
        cp_async16(sQ + r * LD + ch * 8, src, ok ? 16 : 0);
    }
    const bf16 *kc = (const bf16 *)p.k_cache, *vc = (const bf16 *)p.v_cache;
    auto load_kv = [&](int t, int buf) {
        int ts = s_begin + t * FA_BN;
        for (int c = tid; c < FA_BN * CH; c += blockDim.x) {
            int r = c / CH, ch = c % CH, s = ts + r;
            int ok = s < s_end;
            size_t off = ok ? (((size_t)b * p.cap + (size_t)(s % p.cap)) * p.Hkv + kv) * D + ch * 8 : 0;
            cp_async16(sK + (buf * FA_BN + r) * LD + ch * 8, kc + off, ok ? 16 : 0);
            cp_async16(sV + (buf * FA_BN + r) * LD + ch * 8, vc + off, ok ? 16 : 0);
        }
    };
    load_kv(0, 0);
    cp_async_commit();

    // The two rows this thread holds accumulator elements of, their positions and window starts.
    int rA = r0 + warp * 16 + lane / 4, rB = rA + 8;
    int tA = rA < rows ? pos0 + rA / g : -1, tB = rB < rows ? pos0 + rB / g : -1;
    int loA = p.window > 0 ? max(0, tA - p.window + 1) : 0, loB = p.window > 0 ? max(0, tB - p.window + 1) : 0;
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);

    uint32_t qf[KT][4];
    float o[DT][4];
    for (int i = 0; i < DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;

    for (int t = 0; t < ntiles; t++) {
        if (t + 1 < ntiles) {
            load_kv(t + 1, (t + 1) & 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (t == 0) {
#pragma unroll
            for (int kk = 0; kk < KT; kk++)
                ldmatrix_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3],
                            sQ + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
        }
        const bf16 *k = sK + (t & 1) * FA_BN * LD, *v = sV + (t & 1) * FA_BN * LD;
        float s[FA_BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        warp_qk<KT, FA_BN / 8, LD>(s, qf, k, lane);
        const int ts = s_begin + t * FA_BN;
        // Masking only where the tile crosses a row's causal edge, a window start or the range's end.
        const bool need_mask = ts + FA_BN - 1 > t_first || ts < lo_last || ts + FA_BN > s_end;
        float mxA = -INFINITY, mxB = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++) {
#pragma unroll
            for (int c = 0; c < 4; c++) {
                float x = s[nt][c] * sl2;
                if (need_mask) {
                    int key = ts + nt * 8 + (lane % 4) * 2 + (c & 1);
                    int tt = c < 2 ? tA : tB, lo = c < 2 ? loA : loB;
                    if (key > tt || key < lo) x = -INFINITY;
                }
                s[nt][c] = x;
            }
            mxA = fmaxf(mxA, fmaxf(s[nt][0], s[nt][1]));
            mxB = fmaxf(mxB, fmaxf(s[nt][2], s[nt][3]));
        }
        warp_online_softmax(s, o, mxA, mxB, mA, mB, lA, lB);
        warp_pv<FA_BN / 8, DT, LD>(o, s, v, lane);
        __syncthreads();
    }
    lA += __shfl_xor_sync(0xffffffffu, lA, 1);
    lA += __shfl_xor_sync(0xffffffffu, lA, 2);
    lB += __shfl_xor_sync(0xffffffffu, lB, 1);
    lB += __shfl_xor_sync(0xffffffffu, lB, 2);
    float iA = lA > 0.0f ? 1.0f / lA : 0.0f, iB = lB > 0.0f ? 1.0f / lB : 0.0f;
    bf16 *out = (bf16 *)p.out + (size_t)b * p.n * p.Hq * D;
    int col = (lane % 4) * 2;
    if (rA < rows) {
        bf16 *dst = out + ((size_t)(rA / g) * p.Hq + kv * g + rA % g) * D + col;
#pragma unroll
        for (int i = 0; i < DT; i++)
            *(__nv_bfloat162 *)(dst + i * 8) = __floats2bfloat162_rn(o[i][0] * iA, o[i][1] * iA);
    }
    if (rB < rows) {
        bf16 *dst = out + ((size_t)(rB / g) * p.Hq + kv * g + rB % g) * D + col;
#pragma unroll
        for (int i = 0; i < DT; i++)
            *(__nv_bfloat162 *)(dst + i * 8) = __floats2bfloat162_rn(o[i][2] * iB, o[i][3] * iB);
    }
}

template <int D> static int launch_mma(const orthros_attn_full_prefill_params *p, cudaStream_t stream)
{
    size_t smem = fa_smem<D>::bytes;
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_prefill_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)smem));
    int g = p->Hq / p->Hkv;
    dim3 grid(p->Hkv * p->B, ceil_div(p->n * g, FA_BM));
    attn_prefill_mma_kernel<D><<<grid, FA_WARPS * 32, smem, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_prefill_mma_kernel");
    return 0;
}

/* ---- v2-v4: 32 rows per warp (two m16 tiles), 128 rows per block ---- */

/* Tile shapes of v2-v4: BN keys per K/V stage, NST stages, Q kept in registers or re-read from shared memory
 * every tile (v2's d 128 and v4, where the accumulators leave no room for it). */
template <int D, int BN_, int NST_, bool QREG_> struct fa2_cfg {
    static constexpr int BM = 128, MT = 2, BN = BN_, NST = NST_;
    static constexpr bool QREG = QREG_;
    static constexpr int LD = D + SMEM_PAD;
    static constexpr size_t bytes = (size_t)(BM + 2 * NST * BN) * LD * sizeof(bf16);
};

template <int D, int BN_, int NST_, bool QREG_, bool LAZY>
static __global__ void __launch_bounds__(FA_WARPS * 32, 2) attn_prefill_mma2_kernel(orthros_attn_full_prefill_params p)
{
    using C = fa2_cfg<D, BN_, NST_, QREG_>;
    constexpr int LD = C::LD, KT = D / 16, DT = D / 8, CH = D / 8, BM = C::BM, BN = C::BN, MT = C::MT, NST = C::NST;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = (bf16 *)smem_raw;   // [BM][LD]
    bf16 *sK = sQ + BM * LD;       // [NST][BN][LD]
    bf16 *sV = sK + NST * BN * LD; // [NST][BN][LD]

    const int g = p.Hq / p.Hkv, rows = p.n * g;
    const int tile = gridDim.y - 1 - blockIdx.y, kv = blockIdx.x % p.Hkv, b = blockIdx.x / p.Hkv;
    const int r0 = tile * BM;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tid = threadIdx.x;
    const int W = (p.Hq + 2 * p.Hkv) * D;
    const int pos0 = p.pos0[b];
    const int r_last = min(r0 + BM, rows) - 1;
    const int t_first = pos0 + r0 / g, t_last = pos0 + r_last / g;
    const int s_begin = p.window > 0 ? max(0, t_first - p.window + 1) : 0;
    const int s_end = t_last + 1;
    const int ntiles = (s_end - s_begin + BN - 1) / BN;
    // This warp's rows: [wr0, wr1]; the keys they can see: [wlo, wt1]. Tiles outside are skipped by the warp.
    const int wr0 = min(r0 + warp * 32, r_last), wr1 = min(r0 + warp * 32 + 31, r_last);
    const int wt0 = pos0 + wr0 / g, wt1 = pos0 + wr1 / g;
    const int wlo0 = p.window > 0 ? max(0, wt0 - p.window + 1) : 0;
    const int wlo1 = p.window > 0 ? max(0, wt1 - p.window + 1) : 0;

    const bf16 *qkv = (const bf16 *)p.qkv + (size_t)b * p.n * W;
    for (int c = tid; c < BM * CH; c += blockDim.x) {
        int r = c / CH, ch = c % CH, rr = r0 + r;
        const bf16 *src = qkv;
        int ok = rr < rows;
        if (ok) src = qkv + (size_t)(rr / g) * W + (kv * g + rr % g) * D + ch * 8;
        cp_async16(sQ + r * LD + ch * 8, src, ok ? 16 : 0);
    }
    const bf16 *kc = (const bf16 *)p.k_cache + (size_t)b * p.cap * p.Hkv * D + (size_t)kv * D;
    const bf16 *vc = (const bf16 *)p.v_cache + (size_t)b * p.cap * p.Hkv * D + (size_t)kv * D;
    const size_t rstride = (size_t)p.Hkv * D;
    auto load_kv = [&](int t) {
        int ts = s_begin + t * BN, buf = t % NST;
#pragma unroll 1
        for (int i = 0; i < BN * CH / (FA_WARPS * 32); i++) {
            int c = tid + i * FA_WARPS * 32, r = c / CH, ch = c % CH, s = ts + r;
            int ok = s < s_end;
            size_t off = ok ? (size_t)(s % p.cap) * rstride + ch * 8 : 0;
            cp_async16(sK + (buf * BN + r) * LD + ch * 8, kc + off, ok ? 16 : 0);
            cp_async16(sV + (buf * BN + r) * LD + ch * 8, vc + off, ok ? 16 : 0);
        }
    };
#pragma unroll
    for (int st = 0; st < NST - 1; st++) {
        if (st < ntiles) load_kv(st);
        cp_async_commit();
    }

    // Thread rows: m-tile mt holds rows wbase + mt*16 + lane/4 (A) and + 8 (B).
    const int wbase = r0 + warp * 32 + lane / 4;
    int tq[MT][2], lo[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int r = wbase + mt * 16 + h * 8;
            tq[mt][h] = r < rows ? pos0 + r / g : -1;
            lo[mt][h] = p.window > 0 ? max(0, tq[mt][h] - p.window + 1) : 0;
        }
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);

    uint32_t qf[C::QREG ? MT : 1][C::QREG ? KT : 1][4];
    float o[MT][DT][4];
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int i = 0; i < DT; i++) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.0f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
    }
    const bf16 *qw = sQ + (warp * 32 + lane % 16) * LD + (lane / 16) * 8;

    for (int t = 0; t < ntiles; t++) {
        cp_async_wait<NST - 2>();
        __syncthreads();
        if (t + NST - 1 < ntiles) load_kv(t + NST - 1);
        cp_async_commit();
        if (C::QREG && t == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int kk = 0; kk < KT; kk++)
                    ldmatrix_x4(qf[mt][kk][0], qf[mt][kk][1], qf[mt][kk][2], qf[mt][kk][3],
                                qw + mt * 16 * LD + kk * 16);
        }
        const int ts = s_begin + t * BN;
        // The whole tile is past this warp's last row, or before its first row's window: nothing to add.
        if (ts > wt1 || ts + BN - 1 < wlo0) continue;
        const bf16 *k = sK + (t % NST) * BN * LD, *v = sV + (t % NST) * BN * LD;
        float s[MT][BN / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            uint32_t qa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                if (C::QREG) {
#pragma unroll
                    for (int j = 0; j < 4; j++) qa[mt][j] = qf[C::QREG ? mt : 0][C::QREG ? kk : 0][j];
                } else {
                    ldmatrix_x4(qa[mt][0], qa[mt][1], qa[mt][2], qa[mt][3], qw + mt * 16 * LD + kk * 16);
                }
            }
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt += 2) {
                uint32_t bb[4];
                ldmatrix_x4(bb[0], bb[1], bb[2], bb[3],
                            k + (nt * 8 + (lane % 8) + (lane / 16) * 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma_bf16_16816(s[mt][nt], qa[mt], bb);
                    mma_bf16_16816(s[mt][nt + 1], qa[mt], bb + 2);
                }
            }
        }
        // Masking only where the tile crosses one of this warp's rows' causal edge or window start.
        const bool need_mask = ts + BN - 1 > wt0 || ts < wlo1;
        if (need_mask) {
            const int kb = ts + (lane % 4) * 2;
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
                    for (int c = 0; c < 4; c++) {
                        int key = kb + nt * 8 + (c & 1);
                        if (key > tq[mt][c / 2] || key < lo[mt][c / 2]) s[mt][nt][c] = -INFINITY;
                    }
        }
        float fs[MT][2];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < BN / 8; nt++) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                float mn = fmaxf(m[mt][h], mx);
                // A row with every key masked so far keeps m = -inf; 0 as its reference gives exp2 = 0, not NaN.
                float u = mn == -INFINITY ? 0.0f : mn * sl2;
                float f = ex2_ftz(m[mt][h] * sl2 - u);
                m[mt][h] = mn;
                float sum = 0.0f;
#pragma unroll
                for (int nt = 0; nt < BN / 8; nt++) {
                    s[mt][nt][2 * h] = ex2_ftz(fmaf(s[mt][nt][2 * h], sl2, -u));
                    s[mt][nt][2 * h + 1] = ex2_ftz(fmaf(s[mt][nt][2 * h + 1], sl2, -u));
                    sum += s[mt][nt][2 * h] + s[mt][nt][2 * h + 1];
                }
                l[mt][h] = l[mt][h] * f + sum;
                fs[mt][h] = f;
            }
        }
        // Once the row maxima settle, most tiles change none of the warp's 32 of them: skip the rescale then.
        if (!LAZY || __any_sync(0xffffffffu, fs[0][0] != 1.0f || fs[0][1] != 1.0f || fs[MT - 1][0] != 1.0f ||
                                        fs[MT - 1][1] != 1.0f)) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int i = 0; i < DT; i++) {
                    o[mt][i][0] *= fs[mt][0];
                    o[mt][i][1] *= fs[mt][0];
                    o[mt][i][2] *= fs[mt][1];
                    o[mt][i][3] *= fs[mt][1];
                }
        }
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                a[mt][0] = pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                a[mt][1] = pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                a[mt][2] = pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                a[mt][3] = pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                uint32_t bb[4];
                ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3],
                                  v + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + dt * 8 + (lane / 16) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma_bf16_16816(o[mt][dt], a[mt], bb);
                    mma_bf16_16816(o[mt][dt + 1], a[mt], bb + 2);
                }
            }
        }
    }
    cp_async_wait<0>();
    bf16 *out = (bf16 *)p.out + (size_t)b * p.n * p.Hq * D;
    const int col = (lane % 4) * 2;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float lt = l[mt][h];
            lt += __shfl_xor_sync(0xffffffffu, lt, 1);
            lt += __shfl_xor_sync(0xffffffffu, lt, 2);
            float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
            int r = wbase + mt * 16 + h * 8;
            if (r < rows) {
                bf16 *dst = out + ((size_t)(r / g) * p.Hq + kv * g + r % g) * D + col;
#pragma unroll
                for (int i = 0; i < DT; i++)
                    *(__nv_bfloat162 *)(dst + i * 8) =
                        __floats2bfloat162_rn(o[mt][i][2 * h] * inv, o[mt][i][2 * h + 1] * inv);
            }
        }
}

template <int D, int BN, int NST, bool QREG, bool LAZY>
static int launch_mma2(const orthros_attn_full_prefill_params *p, cudaStream_t stream)
{
    size_t smem = fa2_cfg<D, BN, NST, QREG>::bytes;
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_prefill_mma2_kernel<D, BN, NST, QREG, LAZY>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int g = p->Hq / p->Hkv;
    dim3 grid(p->Hkv * p->B, ceil_div(p->n * g, fa2_cfg<D, BN, NST, QREG>::BM));
    attn_prefill_mma2_kernel<D, BN, NST, QREG, LAZY><<<grid, FA_WARPS * 32, smem, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_prefill_mma2_kernel");
    return 0;
}

/* One warp per (b, i, h) row; lane j holds dims j, j + 32, ... of q and of the accumulator. */
#define GEN_MAXE (ORTHROS_MAX_HEAD_DIM / 32)
static __global__ void attn_generic_kernel(orthros_attn_full_prefill_params p)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    int total = p.B * p.n * p.Hq;
    if (row >= total) return;
    int h = row % p.Hq, i = (row / p.Hq) % p.n, b = row / (p.Hq * p.n);
    int d = p.d, g = p.Hq / p.Hkv, kv = h / g, W = (p.Hq + 2 * p.Hkv) * d;
    const bf16 *q = (const bf16 *)p.qkv + ((size_t)b * p.n + i) * W + (size_t)h * d;
    float qr[GEN_MAXE], acc[GEN_MAXE];
#pragma unroll
    for (int e = 0; e < GEN_MAXE; e++) {
        int j = lane + 32 * e;
        qr[e] = j < d ? bf2f(q[j]) : 0.0f;
        acc[e] = 0.0f;
    }
    int t = p.pos0[b] + i;
    int lo = p.window > 0 ? max(0, t - p.window + 1) : 0;
    float scale = 1.0f / sqrtf((float)d), m = -INFINITY, l = 0.0f;
    for (int s = lo; s <= t; s++) {
        size_t base = (((size_t)b * p.cap + (size_t)(s % p.cap)) * p.Hkv + kv) * d;
        const bf16 *k = (const bf16 *)p.k_cache + base, *v = (const bf16 *)p.v_cache + base;
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < GEN_MAXE; e++) {
            int j = lane + 32 * e;
            if (j < d) dot += qr[e] * bf2f(k[j]);
        }
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        float sc = dot * scale;
        if (sc > m) {
            float r = expf(m - sc);
            l *= r;
#pragma unroll
            for (int e = 0; e < GEN_MAXE; e++) acc[e] *= r;
            m = sc;
        }
        float pe = expf(sc - m);
        l += pe;
#pragma unroll
        for (int e = 0; e < GEN_MAXE; e++) {
            int j = lane + 32 * e;
            if (j < d) acc[e] += pe * bf2f(v[j]);
        }
    }
    bf16 *o = (bf16 *)p.out + (((size_t)b * p.n + i) * p.Hq + h) * d;
#pragma unroll
    for (int e = 0; e < GEN_MAXE; e++) {
        int j = lane + 32 * e;
        if (j < d) o[j] = f2bf(l > 0.0f ? acc[e] / l : 0.0f);
    }
}

int orthros_attn_full_generic_bf16(const orthros_attn_full_prefill_params *p, cudaStream_t stream)
{
    if (p->d > ORTHROS_MAX_HEAD_DIM)
        return orthros_error(ORTHROS_EUNSUPPORTED, "attention: head_dim %d over %d", p->d, ORTHROS_MAX_HEAD_DIM);
    int rows = p->B * p->n * p->Hq;
    attn_generic_kernel<<<ceil_div(rows, 4), 128, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_generic_kernel");
    return 0;
}

/* 0 until the first call or set_version: then the default for this binary and device. */
static int prefill_version = 0;

int orthros_attn_full_prefill_default_version(void)
{
    return orthros_cuda_sm90a_available() ? ORTHROS_ATTN_PREFILL_SM90A_DEFAULT
                                                  : ORTHROS_ATTN_PREFILL_PORTABLE_DEFAULT;
}

int orthros_attn_full_prefill_set_version(int version)
{
    if (version == 0) version = orthros_attn_full_prefill_default_version();
    if (version < 1 || version > ORTHROS_ATTN_PREFILL_LATEST)
        return orthros_error(ORTHROS_EINVAL, "attention prefill: no kernel version %d (1 .. %d kept)", version,
                             ORTHROS_ATTN_PREFILL_LATEST);
    if (version >= 5 && !orthros_cuda_sm90a_available())
        return orthros_error(ORTHROS_EUNSUPPORTED, "attention prefill v%d (wgmma): this binary has no sm_90a code "
                                                   "(configure with -DCMAKE_CUDA_ARCHITECTURES=90a) or the device "
                                                   "is not sm_90", version);
    prefill_version = version;
    return 0;
}

int orthros_attn_full_prefill_version(void)
{
    if (!prefill_version) prefill_version = orthros_attn_full_prefill_default_version();
    return prefill_version;
}

int orthros_attn_full_prefill_bf16(const orthros_attn_full_prefill_params *p, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (p->Hkv <= 0 || p->Hq % p->Hkv)
        return orthros_error(ORTHROS_EINVAL, "attention: %d query heads not a multiple of %d kv heads", p->Hq, p->Hkv);
    const int version = orthros_attn_full_prefill_version();
    /* v5 takes window == 0 with every key in its own slot; v6 also sliding windows and wrapped rings. The
     * shapes they refuse (other head dims, unaligned caches) go to v4. */
    if (version >= 5 && orthros_attn_prefill_wgmma_supported(p, version))
        return orthros_attn_prefill_wgmma_bf16(p, version, stream);
    if (p->d == 64) {
        switch (version) {
        case 1: return launch_mma<64>(p, stream);
        case 2: return launch_mma2<64, 64, 3, true, false>(p, stream);
        case 3: return launch_mma2<64, 64, 3, true, true>(p, stream);
        default: return launch_mma2<64, 128, 2, false, true>(p, stream);
        }
    }
    if (p->d == 128) {
        switch (version) {
        case 1: return launch_mma<128>(p, stream);
        case 2: return launch_mma2<128, 32, 3, false, false>(p, stream);
        case 3: return launch_mma2<128, 32, 3, false, true>(p, stream);
        default: return launch_mma2<128, 64, 2, false, true>(p, stream);
        }
    }
    return orthros_attn_full_generic_bf16(p, stream);
}
