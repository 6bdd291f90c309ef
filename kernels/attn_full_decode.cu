/* Flash-decoding: softmax attention of up to 16 query rows per kv head (the n * Hq/Hkv (query, head) pairs
 * of a GQA group, n usually 1) against a long KV cache, split over the keys so the whole chip streams it.
 *
 * v1: grid = B * Hkv * nsplit blocks of 4 warps. A block streams its key range in tiles of 64
 * keys through an NST-deep cp.async ring; each warp takes 16 keys of every tile with tensor cores
 * (S = Q K^T and O += P V, mma.sync m16n8k16, the group's query heads packed as the 16 rows of the A
 * operand) and keeps its own online-softmax state. The 4 warps merge in shared memory and the block writes
 * one fp32 partial (O unnormalised, row max in log2 units, row sum); a second kernel merges the splits.
 * The split count is chosen so that about one full wave of resident blocks covers the longest sequence.
 * Floor: the K and V bytes of the cache over the measured 4.26 TB/s copy rate; B=1, Hkv=8, 128K cache:
 * 0.126 ms at d=128, 0.063 ms at d=64 (the FLOPs, 4 L Hq d, are negligible).
 * H200, B=1, Hq=32, Hkv=8, 128K cache: d=128 0.170 ms (3.15 TB/s), d=64 0.139 ms (1.93 TB/s).
 * v2: the tile is 128 keys (32 per warp) for head dim 64, so a stage moves 32 KB at either head dim and the
 * per-tile overhead (barrier, softmax) is paid per 32 KB; 3 stages for both.
 * 128K cache: d=128 0.166-0.168 ms (3.2 TB/s, 75% of copy), d=64 0.096 ms (2.8 TB/s, 65%).
 * v3: (a) the split count minimises (waves of resident blocks) x (keys per split) instead of rounding "one
 * wave" up: B * Hkv = 64 or 128 heads now take 4 or 2 splits (exactly one wave of 264 blocks) where they took
 * 5 or 3 (1.2 / 1.45 waves). B=8 32K d128: 0.478 -> 0.303 ms (2.25 -> 3.55 TB/s). (b) the combine reads all
 * splits' (m, l) at once with a block reduction, then sums float4 columns over interleaved splits with
 * precomputed weights (was nsplit dependent scalar loads per thread), one block per valid row only:
 * B=1 128K d64 0.096 -> 0.086 ms (2.8 -> 3.1 TB/s), d128 0.168 -> 0.158 ms (3.2 -> 3.4 TB/s), 64K d64
 * 0.059 -> 0.049 ms.
 * v4 (default): the K/V cp.async carry an L2::256B prefetch hint. Within noise of v3 (0-1%).
 * Last run (H200, copy 4.22 TB/s; anchors PyTorch 2.11 SDPA in the same device session, one call each, so
 * their B=1 figures carry launch overhead and moved 30% between two runs): B=1: 64K d64 0.048 ms (66% of
 * copy; cuDNN 0.053-0.075), 128K d64 0.085 ms (75%; cuDNN 0.082-0.116), 64K d128 0.087 ms (73%), 128K d128
 * 0.157 ms (81%; cuDNN 0.144-0.178). B=16: 64K/128K d64 0.589 / 1.163 ms (86 / 87%; cuDNN 0.554-0.622 /
 * 1.092-1.150), d128 1.152 / 2.303 ms (88%; cuDNN 0.966-1.024 / 1.897-1.951, 4.2-4.5 TB/s: a pure read
 * stream goes past the copy figure). Gap at B=1: a fixed ~15 us per call (two launches, the first tile's
 * latency, the partials) on a 32-64 us floor; at B=16, 12-15% of bandwidth: next, a block per (split, all
 * kv heads) so that each stage is one contiguous Hkv * d row run, and the combine fused into the last block.
 * v5 (opt-in until measured; not yet run on a GPU): the combine fused into the split kernel. Each block, after
 * writing its partial, takes a ticket from a per-(b, kv head) counter (threadfence, then atomicAdd, the CUDA
 * threadFenceReduction pattern); the block that draws the last ticket merges the nsplit partials of that head,
 * one warp per row, writes the output and resets the counter to 0 for the next call. No second launch, no
 * kernel boundary between the split pass and the merge: aimed at the fixed ~15 us per call at batch 1. The
 * counters are a module-owned device array (one process, one device, calls ordered on one stream). */
#include "attn_full_decode.h"

#include <math.h>

#include "cuda_common.cuh"

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

template <int D> static __device__ void merge_head_rows(const orthros_attn_full_params &p, int nsplit, int bh);

template <int D, bool PF, bool FUSED>
static __global__ void __launch_bounds__(DEC_WARPS * 32)
    attn_decode_split_kernel(orthros_attn_full_params p, int split_len, int nsplit, unsigned *counters)
{
    constexpr int NST = dec_cfg<D>::NST, LD = dec_cfg<D>::LD, KT = D / 16, DT = D / 8, CH = D / 8;
    constexpr int DEC_BN = dec_cfg<D>::BN, KW = dec_cfg<D>::KW;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sQ = (bf16 *)smem_raw;          // [16][LD]
    bf16 *sK = sQ + DEC_ROWS * LD;        // [NST][BN][LD]
    bf16 *sV = sK + NST * DEC_BN * LD;    // [NST][BN][LD]
    __shared__ float sm_m[DEC_WARPS][DEC_ROWS], sm_l[DEC_WARPS][DEC_ROWS];

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
template <int D> static __device__ void merge_head_rows(const orthros_attn_full_params &p, int nsplit, int bh)
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
 * in shared memory: a handful of independent 16-byte loads per thread instead of nsplit dependent 4-byte ones. */
#define DEC_COMBINE_THREADS 128
#define DEC_COMBINE_MAXW 1024
static __global__ void __launch_bounds__(DEC_COMBINE_THREADS) attn_decode_combine_kernel(orthros_attn_full_params p, int nsplit)
{
    __shared__ float sw[DEC_COMBINE_MAXW];
    __shared__ float4 sacc[DEC_COMBINE_THREADS];
    __shared__ float red[DEC_COMBINE_THREADS / 32];
    const int g = p.Hq / p.Hkv, D = p.d, rows = p.n * g;
    const int r = blockIdx.x % rows, bh = blockIdx.x / rows, kv = bh % p.Hkv, b = bh / p.Hkv;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const size_t nparts = (size_t)p.B * p.Hkv * nsplit;
    const float *pml = p.work + nparts * DEC_ROWS * D;
    const size_t part0 = (size_t)bh * nsplit;
    float M = -INFINITY;
    for (int s = tid; s < nsplit; s += blockDim.x) M = fmaxf(M, pml[((part0 + s) * DEC_ROWS + r) * 2]);
    for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    if (lane == 0) red[warp] = M;
    __syncthreads();
    M = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    __syncthreads();
    float L = 0.0f;
    for (int s = tid; s < nsplit; s += blockDim.x) {
        const float *ml = pml + ((part0 + s) * DEC_ROWS + r) * 2;
        float w = ml[0] == -INFINITY ? 0.0f : exp2f(ml[0] - M);
        if (s < DEC_COMBINE_MAXW) sw[s] = w;
        L += ml[1] * w;
    }
    for (int o = 16; o > 0; o >>= 1) L += __shfl_xor_sync(0xffffffffu, L, o);
    if (lane == 0) red[warp] = L;
    __syncthreads();
    L = red[0] + red[1] + red[2] + red[3];
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    const int quads = D / 4, groups = DEC_COMBINE_THREADS / quads, c4 = tid % quads, grp = tid / quads;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (grp < groups) {
#pragma unroll 4
        for (int s = grp; s < nsplit; s += groups) {
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
static int decode_plan(const orthros_attn_full_params *p, int *split_len, int *nsplit)
{
    const bool fused = decode_version >= 5;
    int per_sm = 1, rc = p->d == 64 ? blocks_per_sm<64>(&per_sm, fused) : blocks_per_sm<128>(&per_sm, fused);
    if (rc) return rc;
    int sms = p->num_sms > 0 ? p->num_sms : 132;
    long slots = (long)per_sm * sms;
    int heads = p->B * p->Hkv;
    int keys = p->max_keys > 0 ? p->max_keys : 1;
    int bn = p->d == 64 ? dec_cfg<64>::BN : dec_cfg<128>::BN;
    int max_ns = ceil_div(keys, DEC_MIN_SPLIT), cap_ns = (int)(4 * slots / heads) + 1;
    if (max_ns > cap_ns) max_ns = cap_ns;
    long best = -1;
    int best_len = keys, best_ns = 1;
    for (int ns = 1; ns <= max_ns; ns++) {
        int len = ceil_div(ceil_div(keys, ns), bn) * bn;
        if (len < DEC_MIN_SPLIT) len = DEC_MIN_SPLIT;
        int real_ns = ceil_div(keys, len);
        if (real_ns != ns) continue;
        long waves = ((long)heads * ns + slots - 1) / slots;
        /* A fixed cost per block (its first load's latency and the partial it writes), in keys. */
        long cost = waves * ((long)len + 2 * bn);
        if (best < 0 || cost < best) {
            best = cost;
            best_len = len;
            best_ns = ns;
        }
    }
    *split_len = best_len;
    *nsplit = best_ns;
    return 0;
}

int orthros_attn_full_decode_supported(const orthros_attn_full_params *p)
{
    return (p->d == 64 || p->d == 128) && p->Hkv > 0 && p->Hq % p->Hkv == 0 && p->n * (p->Hq / p->Hkv) <= DEC_ROWS;
}

size_t orthros_attn_full_decode_work_bytes(const orthros_attn_full_params *p)
{
    int split_len, nsplit;
    if (decode_plan(p, &split_len, &nsplit)) return 0;
    return (size_t)p->B * p->Hkv * nsplit * DEC_ROWS * (p->d + 2) * sizeof(float);
}

int orthros_attn_full_decode_set_version(int version)
{
    if (version < 3 || version > ORTHROS_ATTN_DECODE_LATEST)
        return orthros_error(ORTHROS_EINVAL, "decode attention: no kernel version %d (3 .. %d kept)", version,
                             ORTHROS_ATTN_DECODE_LATEST);
    decode_version = version;
    return 0;
}

int orthros_attn_full_decode_bf16(const orthros_attn_full_params *p, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (!orthros_attn_full_decode_supported(p))
        return orthros_error(ORTHROS_EUNSUPPORTED, "decode attention: head_dim %d with %d rows per kv head", p->d,
                             p->n * (p->Hkv ? p->Hq / p->Hkv : 0));
    int split_len, nsplit, rc = decode_plan(p, &split_len, &nsplit);
    if (rc) return rc;
    size_t need = (size_t)p->B * p->Hkv * nsplit * DEC_ROWS * (p->d + 2) * sizeof(float);
    if (p->work_bytes < need)
        return orthros_error(ORTHROS_EINVAL, "decode attention: %zu bytes of scratch given, %zu needed", p->work_bytes,
                             need);
    unsigned blocks = (unsigned)(p->B * p->Hkv * nsplit);
    if (decode_version >= 5) {
        unsigned *counters = NULL;
        if ((rc = tickets(&counters, (size_t)p->B * p->Hkv, stream))) return rc;
        if (p->d == 64)
            attn_decode_split_kernel<64, true, true><<<blocks, DEC_WARPS * 32, dec_cfg<64>::bytes, stream>>>(*p, split_len, nsplit, counters);
        else
            attn_decode_split_kernel<128, true, true><<<blocks, DEC_WARPS * 32, dec_cfg<128>::bytes, stream>>>(*p, split_len, nsplit, counters);
        ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_split_kernel");
        return 0;
    }
    const bool pf = decode_version >= 4;
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
    attn_decode_combine_kernel<<<(unsigned)(p->B * p->Hkv * p->n * (p->Hq / p->Hkv)), DEC_COMBINE_THREADS, 0,
                                 stream>>>(*p, nsplit);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_combine_kernel");
    return 0;
}
