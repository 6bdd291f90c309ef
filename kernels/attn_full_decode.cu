/* Flash-decoding: softmax attention of up to 16 query rows per kv head (the n * Hq/Hkv (query, head) pairs
 * of a GQA group, n usually 1) against a long KV cache, split over the keys so the whole chip streams it.
 * S = Q K^T and O += P V run on mma.sync m16n8k16 with the group's query heads as the 16 rows of the A operand;
 * each split writes one fp32 partial (O unnormalised, the row max in log2 units, the row sum) and a combine
 * kernel merges the splits. Floor: the cache's K and V bytes over the read ceiling (mem_read.cu).
 *
 * Versions, a line each (what each measured, and the analysis behind each step: docs/kernels.md, "Decode
 * attention"):
 *   v1  a block of 4 warps per (b, kv head, split), 64-key tiles through an NST-deep cp.async ring, one wave.
 *   v2  128-key tiles at head dim 64, so that a stage is 32 KB at either head dim; 3 stages.
 *   v3  the split count that minimises waves x keys per split; a combine that reads every split's (m, l) at once.
 *   v4  the K/V cp.async with an L2::256B prefetch hint; the default before sm_90, and for windows everywhere.
 *   v5  the combine fused into the split kernel (the block that finishes a head last merges it); no faster.
 *   v6  a block per group of kv heads, whole [Hkv][d] cache rows by TMA into a 3-deep ring, 8 consumer warps.
 *   v7  v6 with the ring filled by cp.async from all 8 warps (no producer warp, hint or tensor map).
 *   v8  v7's kernel with a block per kv head and a thread-block cluster per (sequence, kv head) holding all its
 *       splits: the partials merge in shared memory, across the cluster through distributed shared memory, and the
 *       output is written by the cluster itself (no scratch, no combine kernel): sm_90's default (v7 where the
 *       clusters do not fit one wave).
 */
#include "attn_full_decode.h"

#include <math.h>
#include <string.h>

#include <cooperative_groups.h>

#include "cuda_common.cuh"
#include "tma.cuh"

#define DEC_WARPS 4
#define DEC_ROWS 16
#define DEC_MIN_SPLIT 256

/* A stage is BN keys (BN / 4 per warp): 128 for head dim 64 so that a stage moves 32 KB either way. */
template <int D> struct dec_cfg {
    static constexpr int BN = D == 64 ? 128 : 64;
    static constexpr int KW = BN / DEC_WARPS;
    static constexpr int NST = 3;
    static constexpr int LD = D + SMEM_PAD;
    static constexpr size_t bytes = (size_t)(DEC_ROWS + 2 * NST * BN) * LD * sizeof(bf16);
};

template <int D> static __device__ void merge_head_rows(const orthros_attn_full_decode_params &p, int nsplit, int bh);

template <int D, bool PF, bool FUSED>
static __global__ void __launch_bounds__(DEC_WARPS * 32)
    attn_decode_split_kernel(orthros_attn_full_decode_params p, int split_len, int nsplit, unsigned *counters)
{
    constexpr int NST = dec_cfg<D>::NST, LD = dec_cfg<D>::LD, KT = D / 16, DT = D / 8, CH = D / 8;
    constexpr int DEC_BN = dec_cfg<D>::BN, KW = dec_cfg<D>::KW;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = (bf16 *)smem_raw;          // [16][LD]
    bf16 *sK = sQ + DEC_ROWS * LD;        // [NST][BN][LD]
    bf16 *sV = sK + NST * DEC_BN * LD;    // [NST][BN][LD]
    __shared__ float sm_m[DEC_WARPS][DEC_ROWS], sm_l[DEC_WARPS][DEC_ROWS];

    l2_prefetch_share(p.l2_next, p.l2_next_bytes, p.l2_policy, blockIdx.x, gridDim.x);
    const int g = p.Hq / p.Hkv, rows = p.n * g;
    const int split = blockIdx.x % nsplit, bh = blockIdx.x / nsplit, kv = bh % p.Hkv, b = bh / p.Hkv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tid = threadIdx.x;
    const int W = (p.Hq + 2 * p.Hkv) * D;
    const int pos0 = p.pos0[b];
    const int lo_first = p.window > 0 ? max(0, pos0 - p.window + 1) : 0;
    const int k_begin = lo_first + split * split_len;
    const int k_end = min(pos0 + p.n, k_begin + split_len);
    const int ntiles = k_begin < k_end ? (k_end - k_begin + DEC_BN - 1) / DEC_BN : 0;

    const bf16 *qkv = (const bf16 *)p.qkv + (size_t)b * p.n * W;
    for (int c = tid; c < DEC_ROWS * CH; c += blockDim.x) {
        int r = c / CH, ch = c % CH;
        int ok = r < rows;
        const bf16 *src = ok ? qkv + (size_t)(r / g) * W + (kv * g + r % g) * D + ch * 8 : qkv;
        cp_async16(sQ + r * LD + ch * 8, src, ok ? 16 : 0);
    }
    const bf16 *kc = (const bf16 *)p.k_cache, *vc = (const bf16 *)p.v_cache;
    auto load_kv = [&](int t) {
        int ts = k_begin + t * DEC_BN, buf = t % NST;
        for (int c = tid; c < DEC_BN * CH; c += blockDim.x) {
            int r = c / CH, ch = c % CH, s = ts + r;
            int ok = s < k_end;
            size_t off = ok ? (((size_t)b * p.cap + (size_t)(s % p.cap)) * p.Hkv + kv) * D + ch * 8 : 0;
            if (PF) {
                cp_async16_pf256(sK + (buf * DEC_BN + r) * LD + ch * 8, kc + off, ok ? 16 : 0);
                cp_async16_pf256(sV + (buf * DEC_BN + r) * LD + ch * 8, vc + off, ok ? 16 : 0);
            } else {
                cp_async16(sK + (buf * DEC_BN + r) * LD + ch * 8, kc + off, ok ? 16 : 0);
                cp_async16(sV + (buf * DEC_BN + r) * LD + ch * 8, vc + off, ok ? 16 : 0);
            }
        }
    };
    // Group st holds tile st (the first also Q); empty groups keep the wait count uniform.
#pragma unroll
    for (int st = 0; st < NST - 1; st++) {
        if (st < ntiles) load_kv(st);
        cp_async_commit();
    }

    int rA = lane / 4, rB = rA + 8;
    int tA = rA < rows ? pos0 + rA / g : -1, tB = rB < rows ? pos0 + rB / g : -1;
    int loA = p.window > 0 ? max(0, tA - p.window + 1) : 0, loB = p.window > 0 ? max(0, tB - p.window + 1) : 0;
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);

    uint32_t qf[KT][4];
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;

    for (int t = 0; t < ntiles; t++) {
        cp_async_wait<NST - 2>();
        __syncthreads();
        if (t + NST - 1 < ntiles) load_kv(t + NST - 1);
        cp_async_commit();
        if (t == 0) {
#pragma unroll
            for (int kk = 0; kk < KT; kk++)
                ldmatrix_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], sQ + (lane % 16) * LD + kk * 16 + (lane / 16) * 8);
        }
        const bf16 *k = sK + ((t % NST) * DEC_BN + warp * KW) * LD, *v = sV + ((t % NST) * DEC_BN + warp * KW) * LD;
        float s[KW / 8][4];
#pragma unroll
        for (int nt = 0; nt < KW / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        warp_qk<KT, KW / 8, LD>(s, qf, k, lane);
        const int kbase = k_begin + t * DEC_BN + warp * KW + (lane % 4) * 2;
        float mxA = -INFINITY, mxB = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < KW / 8; nt++) {
#pragma unroll
            for (int c = 0; c < 4; c++) {
                int key = kbase + nt * 8 + (c & 1);
                int tt = c < 2 ? tA : tB, lo = c < 2 ? loA : loB;
                s[nt][c] = (key > tt || key < lo || key >= k_end) ? -INFINITY : s[nt][c] * sl2;
            }
            mxA = fmaxf(mxA, fmaxf(s[nt][0], s[nt][1]));
            mxB = fmaxf(mxB, fmaxf(s[nt][2], s[nt][3]));
        }
        warp_online_softmax(s, o, mxA, mxB, mA, mB, lA, lB);
        warp_pv<KW / 8, DT, LD>(o, s, v, lane);
    }
    cp_async_wait<0>();
    lA += __shfl_xor_sync(0xffffffffu, lA, 1);
    lA += __shfl_xor_sync(0xffffffffu, lA, 2);
    lB += __shfl_xor_sync(0xffffffffu, lB, 1);
    lB += __shfl_xor_sync(0xffffffffu, lB, 2);
    if (lane % 4 == 0) {
        sm_m[warp][rA] = mA;
        sm_m[warp][rB] = mB;
        sm_l[warp][rA] = lA;
        sm_l[warp][rB] = lB;
    }
    __syncthreads();
    // Merge the 4 warps: rescale each to the block's row max, then sum through shared memory (the K ring).
    float MA = -INFINITY, MB = -INFINITY;
#pragma unroll
    for (int w = 0; w < DEC_WARPS; w++) {
        MA = fmaxf(MA, sm_m[w][rA]);
        MB = fmaxf(MB, sm_m[w][rB]);
    }
    float fA = MA == -INFINITY ? 0.0f : exp2f(mA - MA), fB = MB == -INFINITY ? 0.0f : exp2f(mB - MB);
    float *red = (float *)sK; // [4][16][D]
    int col = (lane % 4) * 2;
#pragma unroll
    for (int i = 0; i < DT; i++) {
        red[(warp * DEC_ROWS + rA) * D + i * 8 + col] = o[i][0] * fA;
        red[(warp * DEC_ROWS + rA) * D + i * 8 + col + 1] = o[i][1] * fA;
        red[(warp * DEC_ROWS + rB) * D + i * 8 + col] = o[i][2] * fB;
        red[(warp * DEC_ROWS + rB) * D + i * 8 + col + 1] = o[i][3] * fB;
    }
    __syncthreads();
    size_t part = (size_t)bh * nsplit + split;
    float *po = p.work + part * DEC_ROWS * D;                                      // [16][D]
    float *pml = p.work + (size_t)gridDim.x * DEC_ROWS * D + part * DEC_ROWS * 2;  // [16][2]
    for (int e = tid; e < rows * D; e += blockDim.x) {
        float acc = 0.0f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; w++) acc += red[w * DEC_ROWS * D + e];
        po[e] = acc;
    }
    if (tid < rows) {
        float M = -INFINITY, L = 0.0f;
        for (int w = 0; w < DEC_WARPS; w++) M = fmaxf(M, sm_m[w][tid]);
        if (M != -INFINITY)
            for (int w = 0; w < DEC_WARPS; w++) L += sm_l[w][tid] * exp2f(sm_m[w][tid] - M);
        pml[tid * 2] = M;
        pml[tid * 2 + 1] = L;
    }
    if constexpr (FUSED) {
        // Every thread's partial writes are made visible device-wide before the ticket is drawn; the block with
        // the last ticket sees every other block's partials (each fenced before its own ticket).
        __shared__ int last;
        __threadfence();
        __syncthreads();
        if (tid == 0) last = atomicAdd(counters + bh, 1u) == (unsigned)(nsplit - 1);
        __syncthreads();
        if (!last) return;
        __threadfence();
        merge_head_rows<D>(p, nsplit, bh);
        if (tid == 0) counters[bh] = 0u; // the next call's blocks start after this kernel ends (stream order)
    }
}

/* v5's merge, by the last block of head bh (4 warps): warp w merges rows w, w + 4, ... of the head; each lane
 * owns D / 32 consecutive columns. Per split s: weight exp2(m_s - M) (0 for a split that saw no key), so
 * out = sum_s w_s O_s / sum_s w_s l_s, as attn_decode_combine_kernel computes it. */
template <int D> static __device__ void merge_head_rows(const orthros_attn_full_decode_params &p, int nsplit, int bh)
{
    constexpr int C = D / 32;
    const int g = p.Hq / p.Hkv, rows = p.n * g, kv = bh % p.Hkv, b = bh / p.Hkv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const size_t nparts = (size_t)gridDim.x;
    const size_t part0 = (size_t)bh * nsplit;
    const float *pml = p.work + nparts * DEC_ROWS * D;
    for (int r = warp; r < rows; r += DEC_WARPS) {
        float M = -INFINITY;
        // __ldcg: the partials come from other blocks of this launch; read them from L2, never from L1.
        for (int s = lane; s < nsplit; s += 32) M = fmaxf(M, __ldcg(pml + ((part0 + s) * DEC_ROWS + r) * 2));
        for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
        float L = 0.0f, acc[C];
#pragma unroll
        for (int c = 0; c < C; c++) acc[c] = 0.0f;
#pragma unroll 4
        for (int s = 0; s < nsplit; s++) {
            const float2 ml = __ldcg((const float2 *)(pml + ((part0 + s) * DEC_ROWS + r) * 2));
            const float w = ml.x == -INFINITY ? 0.0f : exp2f(ml.x - M);
            L += w * ml.y;
            const float *x = p.work + ((part0 + s) * DEC_ROWS + r) * D + lane * C;
            if constexpr (C == 2) {
                const float2 v = __ldcg((const float2 *)x);
                acc[0] += w * v.x;
                acc[1] += w * v.y;
            } else {
                const float4 v = __ldcg((const float4 *)x);
                acc[0] += w * v.x;
                acc[1] += w * v.y;
                acc[2] += w * v.z;
                acc[3] += w * v.w;
            }
        }
        const float inv = L > 0.0f ? 1.0f / L : 0.0f;
        bf16 *out = (bf16 *)p.out + (((size_t)b * p.n + r / g) * p.Hq + kv * g + r % g) * D + lane * C;
#pragma unroll
        for (int c = 0; c < C; c += 2) *(__nv_bfloat162 *)(out + c) = __floats2bfloat162_rn(acc[c] * inv, acc[c + 1] * inv);
    }
}

/* One block per (b, kv head, valid row): merge the nsplit partials of that row. v3: the splits' (m, l) are read
 * by all threads at once and reduced in shared memory, then thread t sums 4 columns (one float4) over every
 * (128 / (D / 4))-th split, with the weights exp2(m_s - M) / L precomputed, and the column groups are reduced
 * in shared memory: a handful of independent 16-byte loads per thread instead of nsplit dependent 4-byte ones.
 * Since 2026-12-02 all of a thread's first loads are issued at once (below): the profile of the captured step
 * (ci/gpu-decode-profile.sh) had the combine at 5.8 us a layer at 1B 4K and 7.6 at 8B 4K, most of it L2 trips in a
 * row. */
#define DEC_COMBINE_THREADS 128
#define DEC_COMBINE_MAXW 1024
/* T threads: 128 for v3-v5; v6, whose splits are more numerous (one wave of whole-chip blocks per sequence), uses
 * 256 so that each thread sums half as many splits. */
template <int T>
static __global__ void __launch_bounds__(T) attn_decode_combine_kernel(orthros_attn_full_decode_params p, int nsplit)
{
    /* Every load a thread makes is issued before the first is used: its (m, l) pairs (ML of them) and its first XB
     * partial columns (the columns never depend on M), so that a combine of up to XB x (T / (D / 4)) splits is one
     * trip to L2, not four in a row (the pairs for M, again for L, then two rounds of columns). The sums keep the
     * order they had (each thread's splits in ascending order, then the column groups in order). */
    constexpr int ML = DEC_COMBINE_MAXW / T, XB = 16;
    __shared__ float sw[DEC_COMBINE_MAXW];
    __shared__ float4 sacc[T];
    __shared__ float red[T / 32];
    const int g = p.Hq / p.Hkv, D = p.d, rows = p.n * g;
    const int r = blockIdx.x % rows, bh = blockIdx.x / rows, kv = bh % p.Hkv, b = bh / p.Hkv;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const size_t nparts = (size_t)p.B * p.Hkv * nsplit;
    const float *pml = p.work + nparts * DEC_ROWS * D;
    const size_t part0 = (size_t)bh * nsplit;
    const int quads = D / 4, groups = T / quads, c4 = tid % quads, grp = tid / quads;
    float2 mine[ML];
#pragma unroll
    for (int i = 0; i < ML; i++) {
        const int s = tid + i * T;
        mine[i] = s < nsplit ? __ldcg((const float2 *)(pml + ((part0 + s) * DEC_ROWS + r) * 2)) : make_float2(-INFINITY, 0.0f);
    }
    float4 xv[XB];
#pragma unroll
    for (int k = 0; k < XB; k++) {
        const int s = grp + k * groups;
        xv[k] = grp < groups && s < nsplit ? __ldcg((const float4 *)(p.work + ((part0 + s) * DEC_ROWS + r) * D + c4 * 4))
                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float M = -INFINITY;
#pragma unroll
    for (int i = 0; i < ML; i++) M = fmaxf(M, mine[i].x);
    for (int s = tid + ML * T; s < nsplit; s += T) M = fmaxf(M, pml[((part0 + s) * DEC_ROWS + r) * 2]); /* v3-v5 only */
    for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    if (lane == 0) red[warp] = M;
    __syncthreads();
    M = red[0];
#pragma unroll
    for (int w = 1; w < T / 32; w++) M = fmaxf(M, red[w]);
    __syncthreads();
    float L = 0.0f;
#pragma unroll
    for (int i = 0; i < ML; i++) {
        const int s = tid + i * T;
        if (s >= nsplit) break;
        const float w = mine[i].x == -INFINITY ? 0.0f : exp2f(mine[i].x - M);
        sw[s] = w;
        L += mine[i].y * w;
    }
    for (int s = tid + ML * T; s < nsplit; s += T) {
        const float *ml = pml + ((part0 + s) * DEC_ROWS + r) * 2;
        L += ml[1] * (ml[0] == -INFINITY ? 0.0f : exp2f(ml[0] - M));
    }
    for (int o = 16; o > 0; o >>= 1) L += __shfl_xor_sync(0xffffffffu, L, o);
    if (lane == 0) red[warp] = L;
    __syncthreads();
    L = red[0];
#pragma unroll
    for (int w = 1; w < T / 32; w++) L += red[w];
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (grp < groups) {
        int s = grp;
#pragma unroll
        for (int k = 0; k < XB; k++, s += groups) {
            if (s >= nsplit) break;
            const float w = sw[s];
            acc.x += w * xv[k].x;
            acc.y += w * xv[k].y;
            acc.z += w * xv[k].z;
            acc.w += w * xv[k].w;
        }
#pragma unroll 4
        for (; s < nsplit; s += groups) {
            float w;
            if (s < DEC_COMBINE_MAXW) {
                w = sw[s];
            } else {
                float m = pml[((part0 + s) * DEC_ROWS + r) * 2];
                w = m == -INFINITY ? 0.0f : exp2f(m - M);
            }
            float4 x = *(const float4 *)(p.work + ((part0 + s) * DEC_ROWS + r) * D + c4 * 4);
            acc.x += w * x.x;
            acc.y += w * x.y;
            acc.z += w * x.z;
            acc.w += w * x.w;
        }
    }
    sacc[tid] = acc;
    __syncthreads();
    if (tid < quads) {
        for (int j = 1; j < groups; j++) {
            float4 x = sacc[j * quads + tid];
            acc.x += x.x;
            acc.y += x.y;
            acc.z += x.z;
            acc.w += x.w;
        }
        bf16 *out = (bf16 *)p.out + (((size_t)b * p.n + r / g) * p.Hq + kv * g + r % g) * D + tid * 4;
        *(__nv_bfloat162 *)out = __floats2bfloat162_rn(acc.x * inv, acc.y * inv);
        *(__nv_bfloat162 *)(out + 2) = __floats2bfloat162_rn(acc.z * inv, acc.w * inv);
    }
}

/* ---- v6: a block per (sequence, group of HB kv heads, split), K/V by TMA through an mbarrier ring ----
 * Warp 8 is the producer (one lane issues the TMA copies); warps 0-7 consume. A stage holds BN keys of every
 * head of the group: per (head, 64-column chunk) one TMA box of BN rows x 128 bytes, 128-byte swizzled, so a
 * stage reads the group's whole Hkv * d row run of each of its BN positions. Warp w takes head w % HB and keys
 * [(w / HB) KW, (w / HB + 1) KW) of every stage with mma.sync (the group's query heads as the 16 rows of A, as in
 * v1-v5), keeps its own online softmax and writes its own partial: the combine kernel merges nsplit * (8 / HB)
 * partials per head. */
#define DEC6_WARPS 8
template <int D> struct dec6_cfg {
    static constexpr int KW = 2048 / D;                    // keys per warp per stage: 16 (d 128), 32 (d 64)
    static constexpr int NST = 3;                          // ring depth: two stages in flight while one is used
    static constexpr int STAGE = DEC6_WARPS * KW * D * 2;  // bytes of K (and of V) per stage: 32 KB
    static constexpr int THREADS = (DEC6_WARPS + 1) * 32;
    static constexpr size_t SMEM = (size_t)2 * NST * STAGE + 2 * NST * 8 + 1024;
    static_assert(SMEM <= 227 * 1024, "v6 stages exceed the shared memory of a block");
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
static __device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
#endif

/* A warp's partial in the mma accumulator layout (rows rA = lane / 4 and rB = rA + 8, columns i * 8 + 2 (lane % 4)
 * + {0, 1} of o[i]; (m, l) summed over the lane quad), rows past `rows` left out, into row-major po[DEC_ROWS][D]
 * and (m, l) pairs pml[DEC_ROWS][2]: v6 / v7's scratch in global memory, v8's in shared memory. */
template <int D>
static __device__ __forceinline__ void store_warp_partial(float *po, float *pml, const float (&o)[D / 8][4], float mA,
                                                          float mB, float lA, float lB, int rows, int lane)
{
    const int rA = lane / 4, rB = rA + 8, col = (lane % 4) * 2;
    if (rA < rows) {
#pragma unroll
        for (int i = 0; i < D / 8; i++) *(float2 *)(po + rA * D + i * 8 + col) = make_float2(o[i][0], o[i][1]);
        if (lane % 4 == 0) *(float2 *)(pml + rA * 2) = make_float2(mA, lA);
    }
    if (rB < rows) {
#pragma unroll
        for (int i = 0; i < D / 8; i++) *(float2 *)(po + rB * D + i * 8 + col) = make_float2(o[i][2], o[i][3]);
        if (lane % 4 == 0) *(float2 *)(pml + rB * 2) = make_float2(mB, lB);
    }
}

template <int D>
static __device__ void dec8_merge(const orthros_attn_full_decode_params &p, float *sm, const float (&o)[D / 8][4],
                                  float mA, float mB, float lA, float lB, int b, int kv, int nsplit,
                                  step_stamps &stamps);
template <int D>
static __device__ void dec8_o(const orthros_attn_full_decode_params &p, float *sm, int b, int kv, int nsplit);

/* v8's largest cluster: 16 blocks (the non-portable maximum of sm_90). */
#define DEC8_MAX_CLUSTER 16
/* The pushed merge's slots in rank 0's shared memory (orthros_attn_full_decode_set_push): a block's merged partial,
 * rows x D floats of outputs, then each row's max and sum (dec8_push_slot), for up to 16 blocks of 4 rows at head
 * dim 128.
 * They lie in the ring, past what dec8_smem puts there (dec8_smem::SLOTS), so that the pushed form takes no more
 * shared memory than the pulled one: a block of more would take the SM's largest carveout and leave the products
 * after it a smaller L1 (slots past the ring, 7cd0a70, made the step slower). */
#define DEC8_PUSH_BYTES (16 * 4 * (128 + 2) * 4)
/* A pushed slot's floats for `rows` rows at head dim d: the outputs, then the (max, sum) pairs padded to 16 bytes, so
 * that every slot starts 16-byte aligned for the merge's 4-wide loads and stores. */
static __host__ __device__ __forceinline__ int dec8_push_slot(int rows, int d)
{
    return rows * d + (rows * 2 + 3) / 4 * 4;
}
/* o_scratch: the counters [B][DEC8_MAX_CLUSTER] (padded to 256 bytes), then the partials [B][Hkv][o_M] fp32. */
static __host__ __device__ __forceinline__ size_t dec8_o_count_bytes(int B)
{
    return ((size_t)B * DEC8_MAX_CLUSTER * sizeof(unsigned) + 255) & ~(size_t)255;
}

/* v8's use of the ring's shared memory once the attention is done (sm: its 1024-byte aligned base), in floats: the
 * 8 warps' partials wo [8][16][D] and their (m, l) wml [8][16][2], the block's merged partial bo [16][D] and bml
 * [16][2] (dec8_merge); with the O product, the head's outputs this rank merged, hv [16 D], the whole head's
 * gathered, xo [16 D], and the block's "last to arrive" flag (dec8_o); past them, 256-byte aligned, the pushed
 * merge's slots (DEC8_PUSH_BYTES). */
template <int D> struct dec8_smem {
    float *wo, *wml, *bo, *bml, *hv, *xo, *slots;
    int *last;
    /* floats from sm to the pushed merge's slots: past everything above, 256-byte aligned */
    static constexpr int SLOTS = (DEC6_WARPS * DEC_ROWS * (D + 2) + DEC_ROWS * (3 * D + 2) + 1 + 63) / 64 * 64;
    __device__ __forceinline__ explicit dec8_smem(float *sm)
    {
        wo = sm, wml = wo + DEC6_WARPS * DEC_ROWS * D, bo = wml + DEC6_WARPS * DEC_ROWS * 2, bml = bo + DEC_ROWS * D;
        hv = bml + DEC_ROWS * 2, xo = hv + DEC_ROWS * D, last = (int *)(xo + DEC_ROWS * D), slots = sm + SLOTS;
    }
};
static_assert(dec8_smem<64>::SLOTS * 4 + DEC8_PUSH_BYTES <= 2 * dec6_cfg<64>::NST * dec6_cfg<64>::STAGE,
              "v8's push slots do not fit in the ring");
static_assert(dec8_smem<128>::SLOTS * 4 + DEC8_PUSH_BYTES <= 2 * dec6_cfg<128>::NST * dec6_cfg<128>::STAGE,
              "v8's push slots do not fit in the ring");

/* v8 with the O product: the block's rows of O (a 1 / nsplit share of o_M, rank = blockIdx.x) and this kv head's
 * columns (its g query heads' g d), which the block reads after the attention. */
struct dec8_o_rows {
    int m0, m1;
    __device__ __forceinline__ dec8_o_rows(int M, int nsplit, int rank)
    {
        const int Mr = (M + nsplit - 1) / nsplit;
        m0 = min(M, rank * Mr), m1 = min(M, m0 + Mr);
    }
};

/* ---- v8 with the q/k/v projection ahead of it (dec8_qkv; orthros_attn_full_decode_qkv_bf16) ---- */

/* The projection streams its weights through the attention's ring (sK's three stages then sV's: six slots of
 * DEC8_QSLOT bytes, at either head dim) before the attention uses it, five slots in flight. */
#define DEC8_QSLOT 32768
#define DEC8_QSLOTS 6

/* Its shared memory beyond the ring (256-byte aligned after the ring's barriers): the normed input xs [K] bf16, this
 * block's rows [Rb] fp32, the warps' partial sums of its 16-row groups [ceil(Rb / 16)][8][16] fp32, the head's rows
 * [R] fp32 and RoPE's cosines and sines [d / 2][2] (rank 0), the warps' sums [8]. R = (g + 2) d: the head's g query
 * heads, its key and its value; Rb = ceil(R / cs), a block's share. */
static __host__ __device__ __forceinline__ size_t dec8_qkv_extra(int K, int g, int d, int cs)
{
    const int R = (g + 2) * d, Rb = (R + cs - 1) / cs;
    return 256 + (size_t)K * 2 + ((size_t)Rb + (size_t)(Rb + 15) / 16 * 128 + R + d + 8) * sizeof(float);
}

/* A block's share of the head's rows and their place in qkv_w; a ring stage is 16 rows (a row group) x 1024 of K. */
struct dec8_qkv_rows {
    int g, R, Rb, r0, nrow, NKR, NRG, NS; // NKR: stages a row group (K / 1024); NRG: row groups; NS: stages
    __device__ __forceinline__ dec8_qkv_rows(const orthros_attn_full_decode_params &p, int D, int cs, int rank)
    {
        g = p.Hq / p.Hkv, R = (g + 2) * D, Rb = (R + cs - 1) / cs, r0 = min(R, rank * Rb);
        nrow = min(R, r0 + Rb) - r0, NKR = p.qkv_K / 1024, NRG = (nrow + 15) / 16, NS = NRG * NKR;
    }
    // the head's row rr (q rows of its g query heads, then its key's, then its value's) as a row of qkv_w
    __device__ __forceinline__ int grow(const orthros_attn_full_decode_params &p, int D, int kv, int rr) const
    {
        return rr < g * D ? kv * g * D + rr
                          : rr < (g + 1) * D ? p.Hq * D + kv * D + rr - g * D : (p.Hq + p.Hkv) * D + kv * D + rr - (g + 1) * D;
    }
};

/* Stage s (row group s / NKR, k range (s % NKR) 1024 ..) into ring slot s % 6 by 16-byte cp.async: thread t copies
 * column chunk t % 128 of rows t / 128 + 2 u, u = 0..7, each row's 128 chunks at 16-byte slots XOR (row % 8) (so the
 * 8 rows an ldmatrix reads lie in 8 bank groups); rows past the block's share are zero-filled (no bytes read). A
 * commit group either way. */
static __device__ __forceinline__ void dec8_qkv_copy(const orthros_attn_full_decode_params &p, const dec8_qkv_rows &Q,
                                                     int D, int kv, uint32_t ring, int s)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (s < Q.NS) {
        const int rg = s / Q.NKR, kr = s - rg * Q.NKR, col = threadIdx.x & 127, rt = threadIdx.x >> 7;
        const bf16 *W = (const bf16 *)p.qkv_w + (size_t)kr * 1024 + col * 8;
        const uint32_t slot = ring + (uint32_t)(s % DEC8_QSLOTS) * DEC8_QSLOT;
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const int r = rt + 2 * u, lr = rg * 16 + r;
            const bool ok = lr < Q.nrow;
            const bf16 *src = W + (size_t)Q.grow(p, D, kv, Q.r0 + (ok ? lr : 0)) * p.qkv_K;
            cp_async16_s(slot + (uint32_t)(r * 128 + (col ^ (r & 7))) * 16, src, ok ? 16 : 0);
        }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* The block's first five stages. */
template <int D>
static __device__ __forceinline__ void dec8_qkv_start(const orthros_attn_full_decode_params &p, uint32_t ring, int kv,
                                                      int cs)
{
    const dec8_qkv_rows Q(p, D, cs, (int)cooperative_groups::this_cluster().block_rank());
    for (int s = 0; s < DEC8_QSLOTS - 1; s++) dec8_qkv_copy(p, Q, D, kv, ring, s);
}

/* The cluster of (sequence b, kv head kv) forms its head's rows of qkv[b] before attending (after dec8_qkv_start and
 * the dependency wait): every block normalises x[b] (rmsnorm's fp32 sum of squares of bf16 over all of K, then w *
 * (x * r) rounded to bf16, as gemv.cu's staging does; the sum in another order) and streams its share of the head's
 * R rows (rows rank Rb .. of the head's: q rows kv g d .., k row block Hq d + kv d .., v Hq d + Hkv d + kv d ..)
 * through the ring, 16 rows x 1024 of K a stage, on the tensor cores: warp w takes k w 128 .. of each stage (8 mma
 * of m16n8k16, x as B's one column), its sums of a row group kept per warp and added over the warps in order. After
 * a cluster barrier rank 0 gathers the R sums through distributed shared memory, applies RoPE at pos0 and writes
 * them as gemv.cu's ROPE epilogue does (q rotated into qkv, k unrotated into qkv and rotated into the cache at pos0's
 * slot, v into both), and a second cluster barrier makes them visible to the cluster before any block reads the key
 * at pos0 or its q. The ring is free after. */
template <int D>
static __device__ void dec8_qkv(const orthros_attn_full_decode_params &p, unsigned char *qx, uint32_t ring, int b,
                                int kv, int cs, int pos0)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int T = DEC6_WARPS * 32, H = D / 2;
    const int K = p.qkv_K;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int rank = (int)cluster.block_rank(), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const dec8_qkv_rows Q(p, D, cs, rank);
    const int R = Q.R, Rb = Q.Rb, g = Q.g;
    bf16 *xs = (bf16 *)qx;
    float *mine = (float *)(qx + (size_t)K * 2), *part = mine + Rb, *all = part + (size_t)(Rb + 15) / 16 * 128,
          *csn = all + R, *red = csn + D;

    // rmsnorm of x[b] (written by the kernel before this one: read through L2 after the wait)
    const uint4 *xr = (const uint4 *)((const bf16 *)p.qkv_x + (size_t)b * K);
    const uint4 *nw = (const uint4 *)p.qkv_norm_w;
    float ss = 0.0f;
    for (int q = threadIdx.x; q < K / 8; q += T) {
        sumsq_bf16x8(ss, __ldcg(xr + q));
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (lane == 0) red[warp] = ss;
    __syncthreads();
    float tot = 0.0f;
#pragma unroll
    for (int w = 0; w < DEC6_WARPS; w++) tot += red[w];
    const float r = rsqrtf(tot / (float)K + p.qkv_eps);
    for (int q = threadIdx.x; q < K / 8; q += T)
        *(uint4 *)(xs + q * 8) = rms_scale_bf16x8(__ldcg(xr + q), __ldg(nw + q), r);
    // (the barrier of the ring's first stage below orders xs before its reads)

    // the ring: stage s landed, then slot (s - 1) % 6 refilled with stage s + 5, then warp w's k range w 128 .. of
    // stage s on the tensor cores: its 8 k-tiles of the stage's 16 rows as A (ldmatrix from the swizzled slot), x's
    // as B's column 0 (lanes 0-3; the other columns zero), the row group's sums in C's column 0 across its NKR stages
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int s = 0; s < Q.NS; s++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(DEC8_QSLOTS - 2) : "memory");
        __syncthreads();
        dec8_qkv_copy(p, Q, D, kv, ring, s + DEC8_QSLOTS - 1);
        const int rg = s / Q.NKR, kr = s - rg * Q.NKR, arow = lane % 16;
        const uint32_t slot = ring + (uint32_t)(s % DEC8_QSLOTS) * DEC8_QSLOT + (uint32_t)arow * 128 * 16;
        const bf16 *xk = xs + kr * 1024 + warp * 128 + (lane % 4) * 2;
#pragma unroll
        for (int kt = 0; kt < 8; kt++) {
            uint32_t a[4], bq[2] = {0u, 0u};
            const int c = warp * 16 + kt * 2 + lane / 16;
            ldsm_x4(a, slot + (uint32_t)(c ^ (arow & 7)) * 16);
            if (lane < 4) bq[0] = *(const uint32_t *)(xk + kt * 16), bq[1] = *(const uint32_t *)(xk + kt * 16 + 8);
            mma_bf16_16816(acc, a, bq);
        }
        if (kr == Q.NKR - 1) { // the row group's last stage: this warp's sums of its 16 rows (column 0)
            if (lane % 4 == 0) {
                part[(rg * DEC6_WARPS + warp) * 16 + lane / 4] = acc[0];
                part[(rg * DEC6_WARPS + warp) * 16 + lane / 4 + 8] = acc[2];
            }
            acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    __syncthreads(); // every warp's sums in; the ring free for the attention
    for (int j = threadIdx.x; j < Q.nrow; j += T) {
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < DEC6_WARPS; w++) sum += part[((j / 16) * DEC6_WARPS + w) * 16 + j % 16];
        mine[j] = sum;
    }

    cluster.sync(); // every block's sums in its shared memory
    if (rank == 0) {
        for (int e = threadIdx.x; e < R; e += T) {
            const int owner = e / Rb;
            all[e] = *cluster.map_shared_rank(mine + (e - owner * Rb), owner);
        }
        for (int i = threadIdx.x; i < H; i += T) rope_cs_of(pos0, p.qkv_inv_freq[i], csn[2 * i], csn[2 * i + 1]);
        __syncthreads();
        bf16 *row = (bf16 *)p.qkv + (size_t)b * (p.Hq + 2 * p.Hkv) * D;
        const size_t slot = ((size_t)b * p.cap + (size_t)(pos0 % p.cap)) * p.Hkv + kv;
        for (int e = threadIdx.x; e < (g + 2) * H; e += T) {
            const int hh = e / H, i = e - hh * H, kind = hh < g ? 0 : hh - g + 1;
            const int head = kind == 0 ? kv * g + hh : p.Hq + (kind - 1) * p.Hkv + kv;
            bf16 *cache = kind == 0 ? nullptr : (bf16 *)(kind == 1 ? p.k_cache : p.v_cache) + slot * D;
            rope_pair_store(row + (size_t)head * D, cache, kind, i, H, all[hh * D + i], all[hh * D + i + H],
                            csn[2 * i], csn[2 * i + 1]);
        }
        __threadfence();
    }
    cluster.sync(); // rank 0's q, key and value written; the others' sums read
#endif
}

/* v7 (CPA): the same blocks, stages and consumers, but no producer warp: the 8 warps fill the ring themselves
 * with 16-byte cp.async (no L2 hint), two stages ahead, a block barrier per stage. v8 (CL, with CPA and HB = 1):
 * the same, launched as clusters of the nsplit blocks of one (sequence, kv head), the partials merged by
 * dec8_merge instead of written out. */
template <int D, bool CPA, bool CL, bool QKV = false, bool LEAN = false, bool CLAIM = false>
static __device__ __forceinline__ void attn_decode_tma_body(const CUtensorMap &tmK, const CUtensorMap &tmV,
                                                            const orthros_attn_full_decode_params &p, int HB,
                                                            int split_len, int nsplit)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    using C = dec6_cfg<D>;
    constexpr int KW = C::KW, NST = C::NST, STAGE = C::STAGE, KT = D / 16, DT = D / 8, NC = D / 64;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const uint32_t sK = base, sV = base + NST * STAGE, bars = base + 2 * NST * STAGE;
    auto full = [&](int s) { return bars + 8u * (uint32_t)s; };
    auto empty = [&](int s) { return bars + 8u * (uint32_t)(NST + s); };

    const int blk = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int nblk = gridDim.x * gridDim.y * gridDim.z;
    const bool l2_late = CL && p.l2_late;
    if (!l2_late) l2_prefetch_share(p.l2_next, p.l2_next_bytes, p.l2_policy, blk, nblk);
    step_stamps stamps(CL ? p.stamps : nullptr, p.stamp_slot); // a stamped build's clock readings (step_stamps.h)
    if (CL) HB = 1; // v8: a block a kv head (a constant, so that BN is one and its divisions shifts)
    const int split = blockIdx.x, h0 = blockIdx.y * HB, b = blockIdx.z;
    const int WPH = DEC6_WARPS / HB, BN = KW * WPH;           // warps per head, keys per stage
    const int g = p.Hq / p.Hkv, rows = p.n * g;
    // v8 leaves SMs idle at batch 1: the stream's next kernel, where it is a programmatic dependent launch, may
    // start on them now (its blocks ask their weights into L2, then wait for this grid).
    if (CL) pdl_trigger();
    if (CL && p.o_w) {
        // The O weights this block reads after the attention never depend on it: asked into L2 now, so that the
        // product after the merge reads them from L2 while the attention's stream has the memory.
        const dec8_o_rows R(p.o_M, nsplit, split);
        const int lines = g * D * 2 / 128, HD = p.Hq * D;
        const bf16 *w = (const bf16 *)p.o_w + (size_t)h0 * g * D;
        for (int i = threadIdx.x; i < (R.m1 - R.m0) * lines; i += DEC6_WARPS * 32)
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(w + (size_t)(R.m0 + i / lines) * HD + (i % lines) * 64));
    }
    const int pos0 = p.pos0[b];
    // v8 sizes its splits by this sequence's own keys (pos0 + n, window 0), not the plan's bound: a captured step
    // is planned for its cache-length bucket (up to 1.25x the keys and more), and splits sized by the bound leave
    // the first ones empty and the rest longer (at 1B 4K, 5 of 9 blocks a head did the work).
    if (CL) split_len = ((pos0 + p.n + nsplit - 1) / nsplit + BN - 1) / BN * BN;
    // Splits are aligned to this sequence's end: split s covers [k_lo, k_lo + split_len), the last one ending at
    // pos0 + n. Tiles wholly below key 0 are skipped; the first kept one may start below 0 (TMA zero fill).
    const int k_lo = pos0 + p.n - (nsplit - split) * split_len;
    const int t0 = k_lo < 0 ? (-k_lo) / BN : 0;
    const int ntiles = max(0, split_len / BN - t0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // v8 with claims (CLAIM, orthros_attn_full_decode_set_claim): the head's T tiles, oldest first, tile u covering
    // the BN keys [end - (T - u) BN, end - (T - u - 1) BN) (end = pos0 + n; the oldest may start below key 0), are
    // not split evenly: block r takes tiles r, r + nsplit, ... for its first NST stages (dealt round, so that a short
    // cache's few tiles still reach every block), then each later stage claims the next tile from a counter in rank
    // 0's shared memory (nsplit NST at the start), so that a block whose stream runs faster takes more tiles and the
    // cluster's blocks end their streams together. Thread 0 claims stage t + NST's tile as stage t starts (a remote
    // atomic, its latency behind stage t's sums) and stores it in a ring of 2 NST slots before the barrier of stage
    // t + 1, where stage t + NST's copies are asked. A block stops at its first stage claimed past the last tile (its
    // tiles only grow). The sums are the same online softmax over other sets of keys a block: not the same bits
    // from one call to the next.
    static_assert(!CLAIM || (CPA && CL), "claims are v8's (cp.async, clusters)");
    int *claim_sm = nullptr; // CLAIM: the slots [2 NST], then the counter (rank 0's)
    if constexpr (CLAIM) {
        __shared__ int claim_words[2 * NST + 1];
        claim_sm = claim_words;
    }
    const int end = pos0 + p.n, T = CLAIM ? (end + BN - 1) / BN : 0;
    auto tile_of = [&](int t) { // CLAIM: stage t's tile, T where it has none
        const int u = t < NST ? t * nsplit + split : claim_sm[t % (2 * NST)];
        return u < T ? u : T;
    };
    auto has = [&](int t) { return CLAIM ? tile_of(t) < T : t < ntiles; };
    auto ts_of = [&](int t) { return CLAIM ? end - (T - tile_of(t)) * BN : k_lo + (t0 + t) * BN; };

    if (threadIdx.x == 0) {
        for (int s = 0; s < NST; s++) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), DEC6_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        if (CLAIM && split == 0) claim_sm[2 * NST] = nsplit * NST;
    }
    __syncthreads();
    // CLAIM: rank 0's counter set before any block claims (the wait is at the first stage, which lands long after)
    if constexpr (CLAIM) asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");

    // v7: thread i copies the 16-byte column (head h0 + cp_h, chunk cp_c) of the stage's positions
    // cp_p0 + u * cp_step, u = 0..7 (a stage is BN positions x HB * D / 8 chunks = 2048 chunks, 8 per thread).
    const int lg_row = (__ffs(HB) - 1) + (D == 128 ? 4 : 3), row16 = 1 << lg_row;
    const int cp_rem = threadIdx.x & (row16 - 1), cp_h = cp_rem / (D / 8), cp_c = cp_rem % (D / 8);
    const int cp_p0 = threadIdx.x >> lg_row, cp_step = (DEC6_WARPS * 32) >> lg_row;
    const uint32_t cp_dst = (uint32_t)((cp_h * NC + cp_c / 8) * BN * 128);
    // The thread's column of key 0, and the elements from one position to the next: a stage whose keys are all
    // at or above 0 (every one but perhaps the first) steps its sources by cp_step positions from its first key
    // (the compiler otherwise forms each of the 8 addresses in 64-bit from the key: ~120 instructions a stage,
    // on the critical path of each warp, which the ncu profile of this kernel found bound by its warps'
    // instruction streams); the first stage clamps its keys below 0 to 0 and reads no bytes for them. H200
    // (data/results/h200-2026-12-03-default43/attn-lean-37d2f01): 9-11% fewer instructions, v8 3% shorter alone.
    const size_t rs = (size_t)p.Hkv * D;
    const size_t col0 = ((size_t)b * p.cap * p.Hkv + h0 + cp_h) * D + cp_c * 8;
    // Tile t's copies into its stage, then the thread's commit group (part 0); or only its rows below pos0, not
    // committed (part 1: they join the group that part 2 commits), or only its rows at or above pos0, committed
    // (part 2), each row's key formed on its own as for a first tile below key 0.
    auto cp_stage = [&](int t, int part) {
        if (has(t)) {
            const int s = t % NST, ts = ts_of(t);
            constexpr int UN = STAGE / 16 / (DEC6_WARPS * 32);
            if (ts >= 0 && part == 0) {
                const size_t first = col0 + (size_t)(ts + cp_p0) * rs, step = (size_t)cp_step * rs;
                const bf16 *kp = (const bf16 *)p.k_cache + first, *vp = (const bf16 *)p.v_cache + first;
#pragma unroll
                for (int u = 0; u < UN; u++) {
                    const uint32_t dst = (uint32_t)(s * STAGE) + cp_dst + swz128(cp_p0 + u * cp_step, cp_c % 8);
                    cp_async16_s(sK + dst, kp + u * step, 16);
                    cp_async16_s(sV + dst, vp + u * step, 16);
                }
            } else {
#pragma unroll
                for (int u = 0; u < UN; u++) {
                    const int r = cp_p0 + u * cp_step, key = ts + r;
                    if (part == 1 ? key >= pos0 : part == 2 && key < pos0) continue;
                    const size_t off = col0 + (size_t)(key < 0 ? 0 : key) * rs;
                    const uint32_t dst = (uint32_t)(s * STAGE) + cp_dst + swz128(r, cp_c % 8);
                    cp_async16_s(sK + dst, (const bf16 *)p.k_cache + off, key < 0 ? 0 : 16);
                    cp_async16_s(sV + dst, (const bf16 *)p.v_cache + off, key < 0 ? 0 : 16);
                }
            }
        }
        if (part != 1) asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    if (CL) {
        // Launched as a programmatic dependent of the kernel before it (p.pdl: the q/k/v projection, which writes
        // this step's q and its key and value at slot pos0): the first stages wholly below pos0 read only what
        // earlier steps wrote, so they are asked before the wait; the rest, and Q, after it. (A no-op wait when
        // the launch was a plain one.)
        int t = 0;
        if constexpr (QKV) {
            // The cluster's q, key and value first (x is the kernel before's), its weights streamed through the
            // ring, which is the attention's after. (Its first stages asked before the wait, and the cache's asked
            // into L2 then, measured 5% slower at 8B 4K: they compete with the kernel before's last loads.)
            pdl_wait();
            stamps.waited();
            dec8_qkv_start<D>(p, base, h0, nsplit);
            dec8_qkv<D>(p, smem_raw + (base - smem_addr(smem_raw)) + 2 * NST * STAGE + 256, base, b, h0, nsplit, pos0);
        } else {
            for (; t < NST - 1 && ts_of(t) + BN <= pos0; t++) cp_stage(t, 0);
            // p.early_rows: the next tile (the one that holds pos0, the last split's last: splits end at pos0 + n)
            // has its rows below pos0 asked before the wait too, so that after it only the rows the kernel before
            // wrote are read (from L2); the tile stays one commit group
            const bool early = p.early_rows && t < NST - 1 && has(t);
            if (early) cp_stage(t, 1);
            pdl_wait();
            stamps.waited();
            if (early) cp_stage(t++, 2);
        }
        for (; t < NST - 1; t++) cp_stage(t, 0);
    } else if (CPA) {
        for (int t = 0; t < NST - 1; t++) cp_stage(t, 0);
    }

    if (!CPA && warp == DEC6_WARPS) {
        // ---- producer ----
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmK) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmV) : "memory");
            for (int t = 0; t < ntiles; t++) {
                const int s = t % NST, ts = k_lo + (t0 + t) * BN;
                mbar_wait(empty(s), ((uint32_t)(t / NST) & 1u) ^ 1u);
                mbar_expect_tx(full(s), 2u * STAGE);
                for (int h = 0; h < HB; h++)
#pragma unroll
                    for (int c = 0; c < NC; c++) {
                        const uint32_t off = (uint32_t)(s * STAGE + (h * NC + c) * BN * 128);
                        tma_load_4d(sK + off, &tmK, full(s), 64 * c, h0 + h, ts, b);
                        tma_load_4d(sV + off, &tmV, full(s), 64 * c, h0 + h, ts, b);
                    }
            }
        }
        return;
    }

    // ---- consumers ----
    const int h = warp % HB, j = warp / HB, kv = h0 + h;
    const int rA = lane / 4, rB = rA + 8;
    const int tA = rA < rows ? pos0 + rA / g : -1, tB = rB < rows ? pos0 + rB / g : -1;
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);
    // Q as A fragments straight from global memory: register 0 holds row rA, columns 2 (lane % 4) + {0, 1} of the
    // k-step, 1 row rB, 2 and 3 the same 8 columns further (the ldmatrix_x4 order of v1-v5); rows past the end 0.
    // Each row's address is formed once (the ncu source counters of v8 found a division by g for each of Q's 4 KT
    // loads, about a third of the kernel's instructions at d 128, executed once a warp).
    const int W = (p.Hq + 2 * p.Hkv) * D;
    const bf16 *qkv = (const bf16 *)p.qkv + (size_t)b * p.n * W + (lane % 4) * 2;
    // q as written: by the kernel before (a plain load), or with QKV by this cluster's rank 0 (through L2)
    auto ld_q = [&](const bf16 *a) { return QKV ? __ldcg((const unsigned *)a) : *(const uint32_t *)a; };
    auto q_row = [&](int row) {
        const int tok = row / g;
        return qkv + (size_t)tok * W + (size_t)(kv * g + row - tok * g) * D;
    };
    uint32_t qf[KT][4];
#pragma unroll
    for (int kk = 0; kk < KT; kk++) qf[kk][0] = qf[kk][1] = qf[kk][2] = qf[kk][3] = 0u;
    if (rA < rows) {
        const bf16 *q = q_row(rA);
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            qf[kk][0] = ld_q(q + kk * 16);
            qf[kk][2] = ld_q(q + kk * 16 + 8);
        }
    }
    if (rB < rows) {
        const bf16 *q = q_row(rB);
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            qf[kk][1] = ld_q(q + kk * 16);
            qf[kk][3] = ld_q(q + kk * 16 + 8);
        }
    }

    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;
    // This warp's rows of a region: keys j KW + ...; a region is one (head, 64-column chunk) of BN rows.
    const int region = BN * 128;
    for (int t = 0; CLAIM || t < ntiles; t++) {
        const int s = t % NST;
        unsigned claimed = 0;
        if (CPA) {
            asm volatile("cp.async.wait_group %0;\n" ::"n"(NST - 2) : "memory");
            __syncthreads();  // stage t landed for every thread; every warp is done with stage t - 1
            if constexpr (CLAIM) {
                if (t == 0) asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
                if (!has(t)) break; // block-uniform: every thread read the same slot
                if (threadIdx.x == 0)
                    claimed = atomicAdd(cooperative_groups::this_cluster().map_shared_rank(claim_sm + 2 * NST, 0), 1);
            }
            if (t == 0) stamps.phase(0); // (a stamped build: the first and the last stage in, step_stamps.h)
            if (!has(t + 1)) stamps.phase(1);
            cp_stage(t + NST - 1, 0);
            // p.l2_late: the next product's weights asked once this block's stream is all asked (its last stage)
            if (l2_late && (CLAIM ? !has(t + NST - 1) && (t == 0 || has(t + NST - 2)) : t == max(0, ntiles - NST)))
                l2_prefetch_share(p.l2_next, p.l2_next_bytes, p.l2_policy, blk, nblk);
        } else {
            mbar_wait(full(s), (uint32_t)(t / NST) & 1u);
        }
        const int ts = ts_of(t);
        const uint32_t kb = sK + (uint32_t)(s * STAGE + h * NC * region), vb = sV + (uint32_t)(s * STAGE + h * NC * region);
        float sc[KW / 8][4];
#pragma unroll
        for (int nt = 0; nt < KW / 8; nt++) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
        // S = Q K^T: per k-step and pair of n8 key tiles one ldmatrix.x4 (keys as rows, 8 d-columns per matrix).
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            const int e = kk * 16 + ((lane / 8) % 2) * 8, cidx = e / 64, ch = (e % 64) / 8;
#pragma unroll
            for (int nt = 0; nt < KW / 8; nt += 2) {
                const int r = j * KW + nt * 8 + (lane % 8) + (lane / 16) * 8;
                uint32_t bb[4];
                ldsm_x4(bb, kb + (uint32_t)(cidx * region) + swz128(r, ch));
                mma_bf16_16816(sc[nt], qf[kk], bb);
                mma_bf16_16816(sc[nt + 1], qf[kk], bb + 2);
            }
        }
        const int kbase = ts + j * KW + (lane % 4) * 2;
        float mxA = -INFINITY, mxB = -INFINITY;
        // The lean form (orthros_attn_full_decode_set_lean) masks keys only in a tile that holds one below 0 or past
        // the first row's newest (pos0; a later row's newest is later still): the test is the block's, so no warp
        // diverges. Rows past `rows` (q of 0: scores 0 where unmasked) are never stored. Its scores stay raw, the
        // scale applied in the softmax (warp_online_softmax_as); as written, each unmasked score is scaled here.
        const bool edge = !LEAN || ts < 0 || ts + BN - 1 > pos0;
#pragma unroll
        for (int nt = 0; nt < KW / 8; nt++) {
            if (edge) {
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int key = kbase + nt * 8 + (c & 1);
                    if (key < 0 || key > (c < 2 ? tA : tB)) sc[nt][c] = -INFINITY;
                    else if (!LEAN) sc[nt][c] *= sl2;
                }
            }
            mxA = fmaxf(mxA, fmaxf(sc[nt][0], sc[nt][1]));
            mxB = fmaxf(mxB, fmaxf(sc[nt][2], sc[nt][3]));
        }
        warp_online_softmax_as<LEAN>(sc, o, mxA, mxB, sl2, mA, mB, lA, lB);
        // O += P V: per 16 keys and pair of n8 d-tiles one ldmatrix.x4.trans.
#pragma unroll
        for (int kk = 0; kk < KW / 16; kk++) {
            uint32_t a[4] = {pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]), pack_bf16x2(sc[2 * kk][2], sc[2 * kk][3]),
                             pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                             pack_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
            const int r = j * KW + kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                const int e = dt * 8 + (lane / 16) * 8;
                uint32_t bb[4];
                ldsm_x4_t(bb, vb + (uint32_t)((e / 64) * region) + swz128(r, (e % 64) / 8));
                mma_bf16_16816(o[dt], a, bb);
                mma_bf16_16816(o[dt + 1], a, bb + 2);
            }
        }
        // The warp's reads of the stage are done (ldmatrix results consumed above): release it.
        if (!CPA) {
            __syncwarp();
            if (lane == 0) mbar_arrive(empty(s));
        }
        // CLAIM: stage t + NST's tile, for the copies that stage t + 1 asks (its slot's last reader was stage t - NST)
        if (CLAIM && threadIdx.x == 0) claim_sm[(t + NST) % (2 * NST)] = (int)claimed;
    }
    if (CPA) asm volatile("cp.async.wait_group 0;\n" ::: "memory");

    // This warp's partial, in the layout of v3-v5 (part = (b, kv head) * nsplit * WPH + split * WPH + j).
    lA += __shfl_xor_sync(0xffffffffu, lA, 1);
    lA += __shfl_xor_sync(0xffffffffu, lA, 2);
    lB += __shfl_xor_sync(0xffffffffu, lB, 1);
    lB += __shfl_xor_sync(0xffffffffu, lB, 2);
    if constexpr (CL) {
        float *sm = (float *)(smem_raw + (base - smem_addr(smem_raw)));
        stamps.phase(2); // warp 0's sums done: the cluster's merge next
        dec8_merge<D>(p, sm, o, mA, mB, lA, lB, b, kv, nsplit, stamps);
        if (p.o_w) dec8_o<D>(p, sm, b, kv, nsplit);
        return;
    }
    const size_t nparts = (size_t)p.B * p.Hkv * nsplit * WPH;
    const size_t part = ((size_t)(b * p.Hkv + kv) * nsplit + split) * WPH + j;
    store_warp_partial<D>(p.work + part * DEC_ROWS * D, p.work + nparts * DEC_ROWS * D + part * DEC_ROWS * 2, o, mA, mB,
                          lA, lB, rows, lane);
#endif
}

template <int D, bool CPA, bool CL = false, bool QKV = false, bool LEAN = false, bool CLAIM = false>
static __global__ void __launch_bounds__(dec6_cfg<D>::THREADS, 1)
    attn_decode_tma_kernel(const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV,
                           const orthros_attn_full_decode_params p, int HB, int split_len, int nsplit)
{
    attn_decode_tma_body<D, CPA, CL, QKV, LEAN, CLAIM>(tmK, tmV, p, HB, split_len, nsplit);
}

/* v8 held to 160 registers a thread (orthros_attn_full_decode_set_regs; 162 unheld at d 128, no spills at 160): a
 * block of 8 warps then takes 40960 registers, so that it fits on an SM beside one q/k/v product block of 96
 * registers a thread (24576), where the unheld block's 43008 does not. */
template <int D, bool LEAN, bool CLAIM = false>
static __global__ void __maxnreg__(160)
    attn_decode_r160_kernel(const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV,
                            const orthros_attn_full_decode_params p, int HB, int split_len, int nsplit)
{
    attn_decode_tma_body<D, true, true, false, LEAN, CLAIM>(tmK, tmV, p, HB, split_len, nsplit);
}

/* The merge of n <= N partials (running max m, sum l, V outputs x each; a partial with m = -inf is empty) in index
 * order: acc = sum wt x, L = sum wt l with wt = 2^(m - M), M the largest m (returned). Branch-free (the entries past n
 * count as empty, wt by ex2.approx.ftz: an empty partial's m - M is -inf and its weight 0, M taken as 0 where all are
 * empty), so that the N weights' MUFUs issue back to back, and one weight serves V outputs of the row: the form with
 * `m == -inf ? 0 : exp2f(m - M)` under `if (s < n)`, an output a thread, compiled to a branch and exp2f's range
 * handling an entry, the entries one after another on the same registers (SASS of v8 at 1B, instructions
 * 3233-3456). */
template <int N, int V>
static __device__ __forceinline__ float merge_weighted(float (&m)[N], const float (&l)[N], const float (&x)[N][V],
                                                       int n, float (&acc)[V], float &L)
{
    float M = -INFINITY;
#pragma unroll
    for (int s = 0; s < N; s++) {
        if (s >= n) m[s] = -INFINITY;
        M = fmaxf(M, m[s]);
    }
    const float Ms = M == -INFINITY ? 0.0f : M;
    L = 0.0f;
#pragma unroll
    for (int v = 0; v < V; v++) acc[v] = 0.0f;
#pragma unroll
    for (int s = 0; s < N; s++) {
        const float wt = ex2_ftz(m[s] - Ms);
        if (s < n) {
#pragma unroll
            for (int v = 0; v < V; v++) acc[v] = fmaf(wt, x[s][v], acc[v]);
            L = fmaf(wt, l[s], L);
        }
    }
    return M;
}

/* v8's merge, at the end of a block of one kv head (8 warps, each with its own partial of the split's keys):
 * the warps' partials go to shared memory (the ring's space, free once every copy landed and every read is done)
 * and the block merges them into one, row by row (max of the warps' m, then the weighted sums); the cluster, the
 * nsplit blocks of this (sequence, kv head), synchronises, and rank r reads every rank's merged partial through
 * distributed shared memory for its share of the head's rows x d outputs (four a thread: elements 4 (r T .. r T +
 * T - 1), then every 4 nsplit T-th) and writes them as bf16; a second cluster barrier keeps each block's shared
 * memory until the others have read it. The sums are those of the combine kernel (weights 2^(m - M), output acc /
 * L), the weights by ex2.approx.ftz (merge_weighted).
 * Pushed (p.merge_push): the block's merged partial goes into its slot of rank 0's shared memory instead (after a
 * barrier that says every block's ring is free, arrived before the warps' merge), and rank 0 alone forms the head's
 * outputs from its slots once every block has arrived again; the others exit. */
template <int D>
static __device__ void dec8_merge(const orthros_attn_full_decode_params &p, float *sm, const float (&o)[D / 8][4],
                                  float mA, float mB, float lA, float lB, int b, int kv, int nsplit,
                                  step_stamps &stamps)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int T = DEC6_WARPS * 32, MAXC = DEC8_MAX_CLUSTER;
    const int g = p.Hq / p.Hkv, rows = p.n * g, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const dec8_smem<D> S(sm);
    float *wo = S.wo, *wml = S.wml, *bo = S.bo, *bml = S.bml, *slots = S.slots;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int rank = (int)cluster.block_rank();
    const int W = p.Hq * D;
    bf16 *out = (bf16 *)p.out + (size_t)b * p.n * W;
    const int SL = dec8_push_slot(rows, D); // a pushed slot: rows x D outputs, then rows x (max, sum), 16-byte whole
    const bool push = p.merge_push;
    __syncthreads();
    // Pushed: the ring's reads and copies are done in this block, so the others may write into its slots (in the
    // ring) once every block has arrived here; the wait is after this block's own merge of its warps.
    if (push) asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory");
    store_warp_partial<D>(wo + warp * DEC_ROWS * D, wml + warp * DEC_ROWS * 2, o, mA, mB, lA, lB, rows, lane);
    __syncthreads();
    if (push) {
        // pushed: this block's merged partial into its slot of rank 0's memory, once every block's ring is free
        asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
        bo = cluster.map_shared_rank(slots + rank * SL, 0), bml = bo + rows * D;
    }
    // four outputs a thread (a row's d is a multiple of 4: one row, one set of weights, 16-byte loads and stores)
    for (int e = threadIdx.x * 4; e < rows * D; e += T * 4) {
        const int r = e / D;
        float m[DEC6_WARPS], l[DEC6_WARPS], x[DEC6_WARPS][4];
#pragma unroll
        for (int w = 0; w < DEC6_WARPS; w++) {
            const float2 ml = *(const float2 *)(wml + (w * DEC_ROWS + r) * 2);
            const float4 v = *(const float4 *)(wo + w * DEC_ROWS * D + e);
            m[w] = ml.x, l[w] = ml.y, x[w][0] = v.x, x[w][1] = v.y, x[w][2] = v.z, x[w][3] = v.w;
        }
        float acc[4], L;
        const float M = merge_weighted<DEC6_WARPS, 4>(m, l, x, DEC6_WARPS, acc, L);
        *(float4 *)(bo + e) = make_float4(acc[0], acc[1], acc[2], acc[3]);
        if (e % D == 0) *(float2 *)(bml + r * 2) = make_float2(M, L);
    }
    stamps.phase(3); // (a stamped build: the block's partial merged, past the cluster's barrier, its share stored)
    if (push) {
        // the stores above made visible to rank 0 as this block arrives; the others are done
        asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
        if (rank != 0) return;
        asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    } else {
        cluster.sync();
    }
    stamps.phase(4);
    // The head's outputs from the cluster's partials, in split order, four a thread: pulled, each rank a share of
    // them read across the cluster (outputs 4 (r T .. r T + T - 1), then every 4 nsplit T-th); pushed, rank 0 all of
    // them from its own slots.
    for (int e = (push ? threadIdx.x : rank * T + threadIdx.x) * 4; e < rows * D; e += (push ? T : nsplit * T) * 4) {
        const int r = e / D;
        float m[MAXC], l[MAXC], x[MAXC][4];
#pragma unroll
        for (int s = 0; s < MAXC; s++)
            if (s < nsplit) {
                const float2 ml = push ? *(const float2 *)(slots + s * SL + rows * D + r * 2)
                                       : *(const float2 *)cluster.map_shared_rank(bml + r * 2, s);
                const float4 v = push ? *(const float4 *)(slots + s * SL + e)
                                      : *(const float4 *)cluster.map_shared_rank(bo + e, s);
                m[s] = ml.x, l[s] = ml.y, x[s][0] = v.x, x[s][1] = v.y, x[s][2] = v.z, x[s][3] = v.w;
            }
        float acc[4], L;
        merge_weighted<MAXC, 4>(m, l, x, nsplit, acc, L);
        alignas(8) bf16 y[4];
#pragma unroll
        for (int v = 0; v < 4; v++) y[v] = __float2bfloat16(L > 0.0f ? acc[v] / L : 0.0f);
        *(uint2 *)(out + (size_t)(r / g) * W + (size_t)(kv * g + r % g) * D + e % D) = *(const uint2 *)y;
        if (p.o_w) /* for dec8_o: the head's outputs as rounded */
            *(float4 *)(S.hv + e) = make_float4(__bfloat162float(y[0]), __bfloat162float(y[1]),
                                                __bfloat162float(y[2]), __bfloat162float(y[3]));
    }
    stamps.phase(5);
    // The second barrier only keeps each block's shared memory until the others have read it (their reads' values
    // are used above, so those reads are done): p.end_relaxed arrives without the release (the SASS of cluster.sync's
    // arrive is MEMBAR.ALL.GPU, which waits for this thread's stores of the outputs to be visible to the whole GPU);
    // with the O product after it, dec8_o reads hv across the cluster, so the release stays.
    if (!push) {
        if (p.end_relaxed && !p.o_w) cluster_arrive_relaxed_wait();
        else cluster.sync();
    }
#endif
}

/* v8's O product, after dec8_merge (p.n == 1, so the head's rows are its g query heads): every block gathers the
 * g d outputs of its kv head from the ranks that merged them (element e from rank (e / 4T) % nsplit), multiplies
 * its rows of O (dec8_o_rows) by them over this head's g d columns (a warp R rows at a time, a lane's 16-byte
 * chunks, fp32 sums, a butterfly per row), and stores the sums in o_scratch's partials [B][Hkv][o_M]. The last of
 * the Hkv blocks of one rank to arrive (a counter per (sequence, rank), the threadfence-reduction pattern) adds
 * the Hkv sums of each of its rows in head order, rounds to bf16 and adds that into o_resid (ORTHROS_GEMV_ADD's
 * roundings), and puts the counter back to 0. */
template <int D>
static __device__ void dec8_o(const orthros_attn_full_decode_params &p, float *sm, int b, int kv, int nsplit)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int T = DEC6_WARPS * 32, R = 8;
    const int g = p.Hq / p.Hkv, Wk = g * D, HD = p.Hq * D, CH = Wk / 8, M = p.o_M;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const dec8_smem<D> S(sm);
    float *hv = S.hv, *xo = S.xo;
    int *last = S.last;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int rank = (int)cluster.block_rank();
    for (int e = threadIdx.x; e < Wk; e += T) xo[e] = *cluster.map_shared_rank(hv + e, (e / (4 * T)) % nsplit);
    /* every block has its copy (the loads' values are stored above): the owners' shared memory may go. Relaxed, the
     * block barrier first orders the copy's stores for the block's other threads, which the product below reads. */
    if (p.end_relaxed) {
        __syncthreads();
        cluster_arrive_relaxed_wait();
    } else {
        cluster.sync();
    }

    const dec8_o_rows rs(M, nsplit, rank);
    unsigned *count = (unsigned *)p.o_scratch + b * DEC8_MAX_CLUSTER + rank;
    float *part = (float *)((char *)p.o_scratch + dec8_o_count_bytes(p.B)) + (size_t)b * p.Hkv * M;
    const bf16 *Wo = (const bf16 *)p.o_w + (size_t)kv * Wk;
    for (int mb = rs.m0 + warp * R; mb < rs.m1; mb += DEC6_WARPS * R) {
        float acc[R];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = 0.0f;
        for (int c = lane; c < CH; c += 32) {
            uint4 wv[R];
#pragma unroll
            for (int r = 0; r < R; r++)
                wv[r] = mb + r < rs.m1 ? __ldg((const uint4 *)(Wo + (size_t)(mb + r) * HD + c * 8)) : make_uint4(0u, 0u, 0u, 0u);
            const float4 xa = *(const float4 *)(xo + c * 8), xb = *(const float4 *)(xo + c * 8 + 4);
#pragma unroll
            for (int r = 0; r < R; r++) {
                acc[r] += bf16x2_lo(wv[r].x) * xa.x + bf16x2_hi(wv[r].x) * xa.y + bf16x2_lo(wv[r].y) * xa.z +
                          bf16x2_hi(wv[r].y) * xa.w + bf16x2_lo(wv[r].z) * xb.x + bf16x2_hi(wv[r].z) * xb.y +
                          bf16x2_lo(wv[r].w) * xb.z + bf16x2_hi(wv[r].w) * xb.w;
            }
        }
        float mine = 0.0f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float v = acc[r];
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == r) mine = v;
        }
        if (lane < R && mb + lane < rs.m1) part[(size_t)kv * M + mb + lane] = mine;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) *last = atomicAdd(count, 1u) == (unsigned)p.Hkv - 1;
    __syncthreads();
    if (*last) {
        __threadfence();
        bf16 *res = (bf16 *)p.o_resid + (size_t)b * M;
        for (int m = rs.m0 + threadIdx.x; m < rs.m1; m += T) {
            float s = 0.0f;
            for (int h = 0; h < p.Hkv; h++) s += __ldcg(part + (size_t)h * M + m);
            res[m] = __float2bfloat16(__bfloat162float(res[m]) + __bfloat162float(__float2bfloat16(s)));
        }
        if (threadIdx.x == 0) *count = 0u;
    }
#endif
}

/* v6's group of kv heads per block: the largest of 8, 4, 2, 1 that divides Hkv. */
static int dec6_group(int Hkv) { return Hkv % 8 == 0 ? 8 : Hkv % 4 == 0 ? 4 : Hkv % 2 == 0 ? 2 : 1; }

/* v6 takes window == 0 with every key at its own slot (as prefill v5), 16-byte aligned caches. */
static bool dec6_shape(const orthros_attn_full_decode_params *p)
{
    return p->window == 0 && p->max_keys > 0 && p->max_keys <= p->cap && ((uintptr_t)p->k_cache % 16) == 0 &&
           ((uintptr_t)p->v_cache % 16) == 0;
}

/* The split count in 1 .. max_ns minimising (waves of `slots` resident blocks) x (split length + a fixed cost of
 * `fixed` keys per block: its first loads' latency, the partial it writes and merges), with blocks_per_ns blocks
 * per split and split lengths a multiple of the tile bn, at least min_len; the fewest splits on a tie. */
static void split_search(int keys, int bn, int min_len, int max_ns, long blocks_per_ns, long slots, long fixed,
                         int *split_len, int *nsplit)
{
    long best = -1;
    *split_len = ceil_div(keys, bn) * bn;
    *nsplit = 1;
    for (int ns = 1; ns <= max_ns; ns++) {
        int len = ceil_div(ceil_div(keys, ns), bn) * bn;
        if (len < min_len) len = min_len;
        if (ceil_div(keys, len) != ns) continue;
        long waves = (blocks_per_ns * ns + slots - 1) / slots;
        long cost = waves * ((long)len + fixed);
        if (best < 0 || cost < best) {
            best = cost;
            *split_len = len;
            *nsplit = ns;
        }
    }
}

/* orthros_attn_full_decode_force_splits: 0, or the split count v6 / v7 take instead of their plan's. */
static int forced_splits = 0;

/* v6's split plan: blocks = B * (Hkv / HB) * nsplit, one per SM (its ring takes ~193 KB); the count minimising
 * (waves) x (split length + a fixed cost per block) wins, as in decode_plan. The partials are nsplit * WPH per
 * head, at most DEC_COMBINE_MAXW. The fixed cost is DEC6_FIXED_BYTES of the block's K / V rows (HB * d * 4 bytes a
 * key), not two stages as first modelled: measured on the H200 (data/results/h200-2026-12-01-v7-defaults/splits),
 * one wave of 128 blocks on the 132 SMs beat four full waves at d 128 B16 64K / 128K (0.956 / 1.888 ms against
 * 0.974 / 1.900 with 33 splits) and two at d 64 B8 128K (0.486 against 0.498): ~15-20 us a block beyond its
 * keys, which 1 MiB of rows (~30 us of one SM's share of the bandwidth) puts on the side of fewer, longer splits.
 * At batch 1 every candidate is one wave and the plan is unchanged. */
#define DEC6_FIXED_BYTES (1L << 20)
static int dec6_plan(const orthros_attn_full_decode_params *p, int *split_len, int *nsplit)
{
    const int HB = dec6_group(p->Hkv), WPH = DEC6_WARPS / HB;
    const int bn = (p->d == 64 ? dec6_cfg<64>::KW : dec6_cfg<128>::KW) * WPH;
    const long slots = p->num_sms > 0 ? p->num_sms : 132;
    const long blocks_per_ns = (long)p->B * (p->Hkv / HB);
    const int keys = p->max_keys > 0 ? p->max_keys : 1;
    int max_ns = ceil_div(keys, bn), cap_ns = (int)(4 * slots / blocks_per_ns) + 1;
    if (max_ns > DEC_COMBINE_MAXW / WPH) max_ns = DEC_COMBINE_MAXW / WPH;
    if (forced_splits > 0) {
        const int ns = forced_splits < max_ns ? forced_splits : max_ns;
        *split_len = ceil_div(ceil_div(keys, ns), bn) * bn;
        *nsplit = ceil_div(keys, *split_len);
        return 0;
    }
    if (max_ns > cap_ns) max_ns = cap_ns;
    const long fixed_keys = DEC6_FIXED_BYTES / ((long)HB * p->d * 4);
    const long fixed = fixed_keys > 2L * bn ? fixed_keys : 2L * bn;
    split_search(keys, bn, bn, max_ns, blocks_per_ns, slots, fixed, split_len, nsplit);
    return 0;
}

int orthros_attn_full_decode_force_splits(int nsplit)
{
    if (nsplit < 0) return orthros_error(ORTHROS_EINVAL, "decode attention: %d splits", nsplit);
    forced_splits = nsplit;
    return 0;
}

/* orthros_attn_full_decode_set_regs: 0, or 160 (attn_decode_r160_kernel) */
static int dec8_regs = 0;
static bool dec8_lean = ORTHROS_ATTN_DECODE_LEAN_DEFAULT == 1; /* orthros_attn_full_decode_set_lean */
static bool dec8_push = false; /* orthros_attn_full_decode_set_push */
static bool dec8_end_relaxed = ORTHROS_ATTN_DECODE_RELAXED_DEFAULT == 1; /* orthros_attn_full_decode_set_relaxed */
static int dec8_claim_keys = ORTHROS_ATTN_DECODE_CLAIM_DEFAULT; /* orthros_attn_full_decode_set_claim */

int orthros_attn_full_decode_set_regs(int regs)
{
    if (regs != 0 && regs != 160) return orthros_error(ORTHROS_EINVAL, "decode attention: %d registers (0 or 160)", regs);
    dec8_regs = regs;
    return 0;
}

int orthros_attn_full_decode_set_lean(int lean)
{
    if (lean != 0 && lean != 1) return orthros_error(ORTHROS_EINVAL, "decode attention: lean form %d (0 or 1)", lean);
    dec8_lean = lean == 1;
    return 0;
}

int orthros_attn_full_decode_set_push(int push)
{
    if (push != 0 && push != 1) return orthros_error(ORTHROS_EINVAL, "decode attention: merge push %d (0 or 1)", push);
    dec8_push = push == 1;
    return 0;
}

int orthros_attn_full_decode_set_relaxed(int on)
{
    if (on != 0 && on != 1)
        return orthros_error(ORTHROS_EINVAL, "decode attention: relaxed end barrier %d (0 or 1)", on);
    dec8_end_relaxed = on == 1;
    return 0;
}

int orthros_attn_full_decode_set_claim(int min_keys)
{
    if (min_keys < 0)
        return orthros_error(ORTHROS_EINVAL, "decode attention: claims from %d keys (0: never, else a bound)", min_keys);
    dec8_claim_keys = min_keys;
    return 0;
}

/* v6 (CPA false: TMA, a producer warp) and v7 (CPA true: cp.async from the consumers, no tensor maps). */
template <int D, bool CPA>
static int launch_dec6(const orthros_attn_full_decode_params *p, int split_len, int nsplit, cudaStream_t stream)
{
    using C = dec6_cfg<D>;
    const int HB = dec6_group(p->Hkv), WPH = DEC6_WARPS / HB, BN = C::KW * WPH;
    CUtensorMap tk, tv;
    memset(&tk, 0, sizeof tk);
    memset(&tv, 0, sizeof tv);
    if (!CPA) {
        int rc = tma_kv_cache_map(&tk, p->k_cache, p->B, p->cap, p->Hkv, D, BN, "decode attention v6");
        if (!rc) rc = tma_kv_cache_map(&tv, p->v_cache, p->B, p->cap, p->Hkv, D, BN, "decode attention v6");
        if (rc) return rc;
    }
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_decode_tma_kernel<D, CPA>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)C::SMEM));
    dim3 grid((unsigned)nsplit, (unsigned)(p->Hkv / HB), (unsigned)p->B);
    attn_decode_tma_kernel<D, CPA><<<grid, CPA ? DEC6_WARPS * 32 : C::THREADS, C::SMEM, stream>>>(tk, tv, *p, HB,
                                                                                                 split_len, nsplit);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_tma_kernel");
    attn_decode_combine_kernel<256><<<(unsigned)(p->B * p->Hkv * p->n * (p->Hq / p->Hkv)), 256, 0, stream>>>(
        *p, nsplit * WPH);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_combine_kernel");
    return 0;
}

/* ---- v8: clusters of one (sequence, kv head)'s splits ----
 * A block per (split, kv head, sequence) as v7 with HB = 1 (its 8 warps on one head, BN = 8 KW keys a stage), the
 * grid's x the splits and a cluster the whole of x, so a head's splits merge inside the cluster (dec8_merge).
 * The cluster size is the split count: at most 16 (the non-portable maximum of sm_90), and only counts whose
 * clusters are co-resident in one wave for every head (cudaOccupancyMaxActiveClusters >= B * Hkv) are planned.
 * It takes every call whose blocks fill at least a quarter of the SMs (elsewhere v8 runs v7): on the H200 the
 * whole decode step was faster with it at every shape measured (batch 1 and 16, 4K to 128K), and the attention alone
 * ahead in every cell of batch 1-16 and 2K-128K keys but one, timed after v7 (an order that may favour the second)
 * (data/results/h200-2026-12-02-decode-cluster/). */
/* Set on every launch, as launch_dec6 does: the attributes belong to the current device. */
typedef void (*dec8_kernel_fn)(CUtensorMap, CUtensorMap, orthros_attn_full_decode_params, int, int, int);

/* v8's kernel: unheld, or held to 160 registers (orthros_attn_full_decode_set_regs); its softmax as written, or the
 * lean form (orthros_attn_full_decode_set_lean); its tiles split evenly, or claimed (claim: the lean form's only) */
template <int D> static dec8_kernel_fn dec8_kernel(bool claim = false)
{
    if (dec8_lean && claim)
        return dec8_regs == 160 ? attn_decode_r160_kernel<D, true, true> : attn_decode_tma_kernel<D, true, true, false, true, true>;
    if (dec8_lean) return dec8_regs == 160 ? attn_decode_r160_kernel<D, true> : attn_decode_tma_kernel<D, true, true, false, true>;
    return dec8_regs == 160 ? attn_decode_r160_kernel<D, false> : attn_decode_tma_kernel<D, true, true>;
}

/* Whether a v8 call of these parameters claims its tiles (orthros_attn_full_decode_set_claim; not with q/k/v fused) */
static bool dec8_claims(const orthros_attn_full_decode_params *p, bool QKV)
{
    return dec8_claim_keys > 0 && dec8_lean && !QKV && p->max_keys >= dec8_claim_keys;
}

/* A v8 kernel's launch attributes: its dynamic shared memory and clusters past the portable size. */
static int dec8_attrs_of(dec8_kernel_fn fn, size_t smem)
{
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    return 0;
}

template <int D> static int dec8_attrs() { return dec8_attrs_of(dec8_kernel<D>(), dec6_cfg<D>::SMEM); }

static void dec8_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute (&at)[2], int D, int cs, int Hkv, int B, int pdl,
                        cudaStream_t stream)
{
    *cfg = cudaLaunchConfig_t{};
    at[0] = cudaLaunchAttribute{};
    at[1] = cudaLaunchAttribute{};
    cfg->gridDim = dim3((unsigned)cs, (unsigned)Hkv, (unsigned)B);
    cfg->blockDim = dim3(DEC6_WARPS * 32);
    cfg->dynamicSmemBytes = D == 64 ? dec6_cfg<64>::SMEM : dec6_cfg<128>::SMEM;
    cfg->stream = stream;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)cs;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg->attrs = at;
    cfg->numAttrs = pdl ? 2 : 1;
}

/* Clusters of cs blocks that the device holds at once (cached per head dim and size, for one kind of device a
 * process; 0 where none fits). */
static int dec8_max_clusters(int D, int cs, int *out)
{
    static int cache[2][2][2][DEC8_MAX_CLUSTER + 1];
    int &c = cache[dec8_regs == 160][dec8_lean][D == 64 ? 0 : 1][cs];
    if (!c) {
        int rc = D == 64 ? dec8_attrs<64>() : dec8_attrs<128>();
        if (rc) return rc;
        cudaLaunchConfig_t cfg;
        cudaLaunchAttribute at[2];
        dec8_config(&cfg, at, D, cs, 1, 1, 0, 0);
        int n = 0;
        const void *fn = D == 64 ? (const void *)dec8_kernel<64>() : (const void *)dec8_kernel<128>();
        ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, fn, &cfg));
        c = n > 0 ? n : -1;
    }
    *out = c > 0 ? c : 0;
    return 0;
}

/* v8's plan: *use = 1 and the split length and count (= the cluster size) where the cluster path takes the call.
 * The largest size up to 16 with a split of at least one stage whose clusters fit one wave for all B * Hkv heads,
 * and blocks on at least a quarter of the SMs; a forced split count (force_splits) is taken as the largest size up
 * to it that the device holds at all, whatever the waves. The split length returned is the bound's (max_keys); the
 * kernel sizes each sequence's splits by its own keys. */
static int dec8_plan(const orthros_attn_full_decode_params *p, int *use, int *split_len, int *nsplit)
{
    *use = 0;
    if (!orthros_cuda_sm90_available() || !dec6_shape(p)) return 0;
    const int bn = (p->d == 64 ? dec6_cfg<64>::KW : dec6_cfg<128>::KW) * DEC6_WARPS;
    const int keys = p->max_keys, tiles = ceil_div(keys, bn), heads = p->B * p->Hkv;
    const int sms = p->num_sms > 0 ? p->num_sms : 132;
    int cs = forced_splits > 0 ? forced_splits : DEC8_MAX_CLUSTER;
    if (cs > DEC8_MAX_CLUSTER) cs = DEC8_MAX_CLUSTER;
    if (cs > tiles) cs = tiles;
    for (; cs >= 1; cs--) {
        int fit = 0, rc = dec8_max_clusters(p->d, cs, &fit);
        if (rc) return rc;
        if (forced_splits > 0 ? fit >= 1 : fit >= heads && 4L * heads * cs >= sms) break;
    }
    if (cs < 1) return 0;
    *use = 1;
    *nsplit = cs;
    *split_len = ceil_div(ceil_div(keys, cs), bn) * bn;
    return 0;
}

/* QKV: the kernel with the q/k/v projection ahead (dec8_qkv), its shared memory the ring's and dec8_qkv_extra's */
template <int D>
static int launch_dec8(const orthros_attn_full_decode_params *p, int split_len, int nsplit, cudaStream_t stream,
                       bool QKV = false)
{
    // the pushed merge where its slots hold the call's partials (not with O or q/k/v fused: those pull)
    const bool push = dec8_push && !QKV && !p->o_w &&
                      (size_t)dec8_push_slot(p->n * (p->Hq / p->Hkv), D) * sizeof(float) * nsplit <= DEC8_PUSH_BYTES;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[2];
    dec8_config(&cfg, at, D, nsplit, p->Hkv, p->B, p->pdl, stream);
    dec8_kernel_fn fn = dec8_kernel<D>(dec8_claims(p, QKV));
    if (QKV) {
        fn = attn_decode_tma_kernel<D, true, true, true>;
        cfg.dynamicSmemBytes += dec8_qkv_extra(p->qkv_K, p->Hq / p->Hkv, D, nsplit);
    }
    int rc = dec8_attrs_of(fn, cfg.dynamicSmemBytes);
    if (rc) return rc;
    CUtensorMap tk, tv;
    memset(&tk, 0, sizeof tk);
    memset(&tv, 0, sizeof tv);
    orthros_attn_full_decode_params q = *p;
    q.merge_push = push ? 1 : 0;
    q.end_relaxed = dec8_end_relaxed ? 1 : 0;
    ORTHROS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, fn, tk, tv, q, 1, split_len, nsplit));
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_tma_kernel (v8)");
    return 0;
}

template <int D, bool PF, bool FUSED> static int set_smem()
{
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_decode_split_kernel<D, PF, FUSED>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dec_cfg<D>::bytes));
    return 0;
}

/* Resident blocks per SM of the split kernel (every version has the same shared memory; v5 may differ in
 * registers, so the count is taken from the version in use). */
template <int D> static int blocks_per_sm(int *out, bool fused)
{
    static int cached[2] = {0, 0};
    int &c = cached[fused ? 1 : 0];
    if (!c) {
        int rc = set_smem<D, false, false>();
        if (!rc) rc = set_smem<D, true, false>();
        if (!rc) rc = set_smem<D, true, true>();
        if (rc) return rc;
        const void *fn = fused ? (const void *)attn_decode_split_kernel<D, true, true>
                               : (const void *)attn_decode_split_kernel<D, true, false>;
        ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c, fn, DEC_WARPS * 32, dec_cfg<D>::bytes));
        if (c < 1) c = 1;
    }
    *out = c;
    return 0;
}

static int decode_version = ORTHROS_ATTN_DECODE_DEFAULT;

/* v5's tickets: one counter per (b, kv head), zero between calls (the last block of a head resets its own).
 * Grown (and zeroed on the stream) when a call has more heads than any before it. */
static unsigned *ticket_counters;
static size_t ticket_count;

static int tickets(unsigned **out, size_t heads, cudaStream_t stream)
{
    if (heads > ticket_count) {
        if (ticket_counters) ORTHROS_CUDA_CHECK(cudaFree(ticket_counters)); /* synchronises: no call still uses it */
        ticket_counters = NULL;
        ticket_count = 0;
        ORTHROS_CUDA_CHECK(cudaMalloc((void **)&ticket_counters, heads * sizeof(unsigned)));
        ORTHROS_CUDA_CHECK(cudaMemsetAsync(ticket_counters, 0, heads * sizeof(unsigned), stream));
        ticket_count = heads;
    }
    *out = ticket_counters;
    return 0;
}

/* Split length (a multiple of the tile) and count: the blocks run in waves of per_sm * SMs, and a launch takes
 * about (waves) x (one split's keys), so the count minimising that product wins (the fewest splits on a tie,
 * which keeps the partials and the combine small). With B * Hkv = 64 or 128 heads this picks 4 or 2 splits
 * (one full wave) where "about one wave" rounded up to 1.2 or 1.45 waves. */
static int decode_plan(const orthros_attn_full_decode_params *p, int version, int *split_len, int *nsplit)
{
    if (version >= 6) return dec6_plan(p, split_len, nsplit);
    const bool fused = version >= 5;
    int per_sm = 1, rc = p->d == 64 ? blocks_per_sm<64>(&per_sm, fused) : blocks_per_sm<128>(&per_sm, fused);
    if (rc) return rc;
    int sms = p->num_sms > 0 ? p->num_sms : 132;
    long slots = (long)per_sm * sms;
    int heads = p->B * p->Hkv;
    int keys = p->max_keys > 0 ? p->max_keys : 1;
    int bn = p->d == 64 ? dec_cfg<64>::BN : dec_cfg<128>::BN;
    int max_ns = ceil_div(keys, DEC_MIN_SPLIT), cap_ns = (int)(4 * slots / heads) + 1;
    if (max_ns > cap_ns) max_ns = cap_ns;
    split_search(keys, bn, DEC_MIN_SPLIT, max_ns, heads, slots, 2L * bn, split_len, nsplit);
    return 0;
}

int orthros_attn_full_decode_supported(const orthros_attn_full_decode_params *p)
{
    return (p->d == 64 || p->d == 128) && p->Hkv > 0 && p->Hq % p->Hkv == 0 && p->n * (p->Hq / p->Hkv) <= DEC_ROWS;
}

/* The version that runs this call and its plan: v6 and up where they apply (an sm_90 device, window 0, keys in
 * their own slots), else v4; v8 where its clusters take the call (dec8_plan), else v7; the others as set. */
static int plan_call(const orthros_attn_full_decode_params *p, int *version, int *split_len, int *nsplit)
{
    int v = decode_version;
    if (v >= 6 && !(orthros_cuda_sm90_available() && dec6_shape(p))) v = 4;
    if (v == 8) {
        int use = 0, rc = dec8_plan(p, &use, split_len, nsplit);
        if (rc || use) {
            *version = 8;
            return rc;
        }
        v = 7;
    }
    *version = v;
    return decode_plan(p, v, split_len, nsplit);
}

/* fp32 partials: per (b, kv head) and partial, 16 rows of d values and (m, l). */
static size_t partial_bytes(const orthros_attn_full_decode_params *p, int version, int nsplit)
{
    if (version == 8) return 0; /* merged in the clusters' shared memory */
    size_t parts = (size_t)p->B * p->Hkv * nsplit * (version >= 6 ? DEC6_WARPS / dec6_group(p->Hkv) : 1);
    return parts * DEC_ROWS * (p->d + 2) * sizeof(float);
}

size_t orthros_attn_full_decode_work_bytes(const orthros_attn_full_decode_params *p)
{
    int split_len, nsplit, v;
    if (plan_call(p, &v, &split_len, &nsplit)) return 0;
    /* v8 needs none: a token amount, since 0 means an error */
    return v == 8 ? 16 : partial_bytes(p, v, nsplit);
}

int orthros_attn_full_decode_plan(const orthros_attn_full_decode_params *p, int *version, int *nsplit)
{
    int split_len;
    return plan_call(p, version, &split_len, nsplit);
}

int orthros_attn_full_decode_set_version(int version)
{
    /* The default needs sm_90 code and a Hopper device; elsewhere it is v4, the fastest of the portable ones. */
    if (version == 0)
        version = ORTHROS_ATTN_DECODE_DEFAULT >= 6 && !orthros_cuda_sm90_available() ? 4 : ORTHROS_ATTN_DECODE_DEFAULT;
    if (version < 3 || version > ORTHROS_ATTN_DECODE_LATEST)
        return orthros_error(ORTHROS_EINVAL, "decode attention: no kernel version %d (3 .. %d kept)", version,
                             ORTHROS_ATTN_DECODE_LATEST);
    if (version >= 6 && !orthros_cuda_sm90_available())
        return orthros_error(ORTHROS_EUNSUPPORTED, "decode attention v%d: the device is not compute capability "
                                                   "9.0 or later, or this binary has no sm_90 code for it", version);
    decode_version = version;
    return 0;
}

int orthros_attn_full_decode_version(void) { return decode_version; }

int orthros_attn_full_decode_bf16(const orthros_attn_full_decode_params *p, cudaStream_t stream)
{
    if (p->o_w) return orthros_error(ORTHROS_EINVAL, "decode attention: o_w given (orthros_attn_full_decode_o_bf16 takes it)");
    if (p->n <= 0 || p->B <= 0) return 0;
    if (!orthros_attn_full_decode_supported(p))
        return orthros_error(ORTHROS_EUNSUPPORTED, "decode attention: head_dim %d with %d rows per kv head", p->d,
                             p->n * (p->Hkv ? p->Hq / p->Hkv : 0));
    int version, split_len, nsplit, rc = plan_call(p, &version, &split_len, &nsplit);
    if (rc) return rc;
    size_t need = partial_bytes(p, version, nsplit);
    if (p->work_bytes < need)
        return orthros_error(ORTHROS_EINVAL, "decode attention: %zu bytes of scratch given, %zu needed", p->work_bytes,
                             need);
    if (version == 6)
        return p->d == 64 ? launch_dec6<64, false>(p, split_len, nsplit, stream)
                          : launch_dec6<128, false>(p, split_len, nsplit, stream);
    if (version == 7)
        return p->d == 64 ? launch_dec6<64, true>(p, split_len, nsplit, stream)
                          : launch_dec6<128, true>(p, split_len, nsplit, stream);
    if (version == 8)
        return p->d == 64 ? launch_dec8<64>(p, split_len, nsplit, stream) : launch_dec8<128>(p, split_len, nsplit, stream);
    unsigned blocks = (unsigned)(p->B * p->Hkv * nsplit);
    if (version == 5) {
        unsigned *counters = NULL;
        if ((rc = tickets(&counters, (size_t)p->B * p->Hkv, stream))) return rc;
        if (p->d == 64)
            attn_decode_split_kernel<64, true, true><<<blocks, DEC_WARPS * 32, dec_cfg<64>::bytes, stream>>>(*p, split_len, nsplit, counters);
        else
            attn_decode_split_kernel<128, true, true><<<blocks, DEC_WARPS * 32, dec_cfg<128>::bytes, stream>>>(*p, split_len, nsplit, counters);
        ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_split_kernel");
        return 0;
    }
    const bool pf = version >= 4;
    if (p->d == 64) {
        if (pf)
            attn_decode_split_kernel<64, true, false><<<blocks, DEC_WARPS * 32, dec_cfg<64>::bytes, stream>>>(*p, split_len, nsplit, nullptr);
        else
            attn_decode_split_kernel<64, false, false><<<blocks, DEC_WARPS * 32, dec_cfg<64>::bytes, stream>>>(*p, split_len, nsplit, nullptr);
    } else {
        if (pf)
            attn_decode_split_kernel<128, true, false><<<blocks, DEC_WARPS * 32, dec_cfg<128>::bytes, stream>>>(*p, split_len, nsplit, nullptr);
        else
            attn_decode_split_kernel<128, false, false><<<blocks, DEC_WARPS * 32, dec_cfg<128>::bytes, stream>>>(*p, split_len, nsplit, nullptr);
    }
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_split_kernel");
    attn_decode_combine_kernel<DEC_COMBINE_THREADS>
        <<<(unsigned)(p->B * p->Hkv * p->n * (p->Hq / p->Hkv)), DEC_COMBINE_THREADS, 0, stream>>>(*p, nsplit);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_combine_kernel");
    return 0;
}

/* ---- v8 with the O product (dec8_o) ---- */

/* 1 and v8's plan where the call runs with the O product, else 0. */
static int o_plan(const orthros_attn_full_decode_params *p, int *split_len, int *nsplit)
{
    if (p->n != 1 || p->B <= 0 || p->o_M <= 0 || !p->o_w || !p->o_resid || !orthros_attn_full_decode_supported(p))
        return 0;
    if ((uintptr_t)p->o_w % 16 || (p->Hq * p->d) % 8) return 0;
    int version = 0;
    return plan_call(p, &version, split_len, nsplit) == 0 && version == 8;
}

int orthros_attn_full_decode_o_supported(const orthros_attn_full_decode_params *p)
{
    int split_len, nsplit;
    return o_plan(p, &split_len, &nsplit);
}

size_t orthros_attn_full_decode_o_scratch_bytes(const orthros_attn_full_decode_params *p)
{
    return dec8_o_count_bytes(p->B) + (size_t)p->B * p->Hkv * p->o_M * sizeof(float);
}

int orthros_attn_full_decode_o_bf16(const orthros_attn_full_decode_params *p, cudaStream_t stream)
{
    int split_len = 0, nsplit = 0;
    if (!o_plan(p, &split_len, &nsplit))
        return orthros_error(ORTHROS_EUNSUPPORTED, "decode attention with O: not a call v8's clusters take with the "
                                                   "product (n %d, B %d, o_M %d, head_dim %d)", p->n, p->B, p->o_M, p->d);
    if (!p->o_scratch || p->o_scratch_bytes < orthros_attn_full_decode_o_scratch_bytes(p))
        return orthros_error(ORTHROS_EINVAL, "decode attention with O: %zu bytes of scratch given, %zu needed",
                             p->o_scratch ? p->o_scratch_bytes : 0, orthros_attn_full_decode_o_scratch_bytes(p));
    return p->d == 64 ? launch_dec8<64>(p, split_len, nsplit, stream) : launch_dec8<128>(p, split_len, nsplit, stream);
}

/* ---- v8 with the q/k/v projection ahead of it (dec8_qkv) ---- */

/* 1 and v8's plan where the call runs with the q/k/v projection, else 0. */
static int qkv_plan(const orthros_attn_full_decode_params *p, int *split_len, int *nsplit)
{
    if (p->n != 1 || p->B <= 0 || p->o_w || !p->qkv_w || !p->qkv_x || !p->qkv_norm_w || p->cap <= 0 ||
        !orthros_attn_full_decode_supported(p))
        return 0;
    if (p->qkv_K <= 0 || p->qkv_K % 1024 || p->d / 2 > 64 || (uintptr_t)p->qkv_w % 16 || (uintptr_t)p->qkv_x % 16 ||
        (uintptr_t)p->qkv_norm_w % 16 || (uintptr_t)p->qkv % 4)
        return 0;
    int version = 0;
    if (plan_call(p, &version, split_len, nsplit) != 0 || version != 8) return 0;
    const size_t ring = p->d == 64 ? dec6_cfg<64>::SMEM : dec6_cfg<128>::SMEM;
    return ring + dec8_qkv_extra(p->qkv_K, p->Hq / p->Hkv, p->d, *nsplit) <= 227 * 1024;
}

int orthros_attn_full_decode_qkv_supported(const orthros_attn_full_decode_params *p)
{
    int split_len, nsplit;
    return qkv_plan(p, &split_len, &nsplit);
}

int orthros_attn_full_decode_qkv_bf16(const orthros_attn_full_decode_params *p, cudaStream_t stream)
{
    int split_len = 0, nsplit = 0;
    if (!qkv_plan(p, &split_len, &nsplit))
        return orthros_error(ORTHROS_EUNSUPPORTED, "decode attention with q/k/v: not a call v8's clusters take with the "
                                                   "projection (n %d, B %d, K %d, head_dim %d)", p->n, p->B, p->qkv_K, p->d);
    return p->d == 64 ? launch_dec8<64>(p, split_len, nsplit, stream, true)
                      : launch_dec8<128>(p, split_len, nsplit, stream, true);
}
