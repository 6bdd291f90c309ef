/* Causal GQA softmax attention of a chunk of queries against the KV cache, flash-attention-2 style.
 *
 * v1 (this file): mma.sync m16n8k16 bf16 -> fp32. A block of 4 warps takes 64 "rows", a row being one
 * (query, head-of-the-GQA-group) pair, so the Hq/Hkv query heads that share a kv head share every K/V tile
 * load. Each warp owns 16 rows: Q fragments stay in registers, S = Q K^T and O += P V run on tensor cores,
 * P is re-packed from the S accumulators without touching shared memory, and the softmax is online in the
 * log2 domain. K/V tiles of 64 keys are double-buffered through cp.async; out-of-range keys are zero-filled
 * and masked. Row tiles are the grid's slow axis, in reverse, so that the heaviest (latest positions) start first.
 * Floor (H200, causal n=16K, Hq=32, Hkv=8): 2 n^2 Hq d FLOPs over the measured 795 TFLOP/s cuBLAS rate:
 * 1.38 ms at d=64, 2.76 ms at d=128. v1 measured 5.7 ms (191 TFLOP/s) and 12.2 ms (180 TFLOP/s). Known gap:
 * every warp re-reads the whole K and V tile from shared memory for its 16 rows (ldmatrix bandwidth bound);
 * next: 32 rows per warp or wgmma (sm_90a).
 * The plain kernel handles head dims other than 64 and 128: one warp per row, fp32, online softmax. */
#include "attn_full_prefill.h"

#include <math.h>

#include "cuda_common.cuh"

#define FA_WARPS 4
#define FA_BM 64
#define FA_BN 64

template <int D> struct fa_smem {
    static constexpr int LD = D + SMEM_PAD;
    static constexpr size_t bytes = (size_t)(FA_BM + 4 * FA_BN) * LD * sizeof(bf16);
};

template <int D> static __global__ void __launch_bounds__(FA_WARPS * 32) attn_prefill_mma_kernel(orthros_attn_full_params p)
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
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
#pragma unroll
            for (int nt = 0; nt < FA_BN / 8; nt += 2) {
                uint32_t bb[4];
                ldmatrix_x4(bb[0], bb[1], bb[2], bb[3],
                            k + (nt * 8 + (lane % 8) + (lane / 16) * 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
                mma_bf16_16816(s[nt], qf[kk], bb);
                mma_bf16_16816(s[nt + 1], qf[kk], bb + 2);
            }
        }
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
        mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 1));
        mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 2));
        mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 1));
        mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 2));
        float mnA = fmaxf(mA, mxA), mnB = fmaxf(mB, mxB);
        // A row with every key masked so far keeps m = -inf; use 0 as its reference so exp2 gives 0, not NaN.
        float uA = mnA == -INFINITY ? 0.0f : mnA, uB = mnB == -INFINITY ? 0.0f : mnB;
        float fA = exp2f(mA - uA), fB = exp2f(mB - uB);
        mA = mnA;
        mB = mnB;
        lA *= fA;
        lB *= fB;
#pragma unroll
        for (int i = 0; i < DT; i++) {
            o[i][0] *= fA;
            o[i][1] *= fA;
            o[i][2] *= fB;
            o[i][3] *= fB;
        }
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++) {
            s[nt][0] = exp2f(s[nt][0] - uA);
            s[nt][1] = exp2f(s[nt][1] - uA);
            s[nt][2] = exp2f(s[nt][2] - uB);
            s[nt][3] = exp2f(s[nt][3] - uB);
            lA += s[nt][0] + s[nt][1];
            lB += s[nt][2] + s[nt][3];
        }
#pragma unroll
        for (int kk = 0; kk < FA_BN / 16; kk++) {
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

template <int D> static int launch_mma(const orthros_attn_full_params *p, cudaStream_t stream)
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

/* One warp per (b, i, h) row; lane j holds dims j, j + 32, ... of q and of the accumulator. */
#define GEN_MAXE (ORTHROS_MAX_HEAD_DIM / 32)
static __global__ void attn_generic_kernel(orthros_attn_full_params p)
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

int orthros_attn_full_generic_bf16(const orthros_attn_full_params *p, cudaStream_t stream)
{
    if (p->d > ORTHROS_MAX_HEAD_DIM)
        return orthros_error(ORTHROS_EUNSUPPORTED, "attention: head_dim %d over %d", p->d, ORTHROS_MAX_HEAD_DIM);
    int rows = p->B * p->n * p->Hq;
    attn_generic_kernel<<<ceil_div(rows, 4), 128, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_generic_kernel");
    return 0;
}

int orthros_attn_full_prefill_bf16(const orthros_attn_full_params *p, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (p->Hkv <= 0 || p->Hq % p->Hkv)
        return orthros_error(ORTHROS_EINVAL, "attention: %d query heads not a multiple of %d kv heads", p->Hq, p->Hkv);
    if (p->d == 64) return launch_mma<64>(p, stream);
    if (p->d == 128) return launch_mma<128>(p, stream);
    return orthros_attn_full_generic_bf16(p, stream);
}
