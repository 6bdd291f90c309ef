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
 * 128K cache: d=128 0.166-0.168 ms (3.2 TB/s, 75% of copy), d=64 0.096 ms (2.8 TB/s, 65%). */
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

template <int D>
static __global__ void __launch_bounds__(DEC_WARPS * 32)
    attn_decode_split_kernel(orthros_attn_full_params p, int split_len, int nsplit)
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
            cp_async16(sK + (buf * DEC_BN + r) * LD + ch * 8, kc + off, ok ? 16 : 0);
            cp_async16(sV + (buf * DEC_BN + r) * LD + ch * 8, vc + off, ok ? 16 : 0);
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
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
#pragma unroll
            for (int nt = 0; nt < KW / 8; nt += 2) {
                uint32_t bb[4];
                ldmatrix_x4(bb[0], bb[1], bb[2], bb[3],
                            k + (nt * 8 + (lane % 8) + (lane / 16) * 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
                mma_bf16_16816(s[nt], qf[kk], bb);
                mma_bf16_16816(s[nt + 1], qf[kk], bb + 2);
            }
        }
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
        mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 1));
        mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 2));
        mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 1));
        mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 2));
        float mnA = fmaxf(mA, mxA), mnB = fmaxf(mB, mxB);
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
        for (int nt = 0; nt < KW / 8; nt++) {
            s[nt][0] = exp2f(s[nt][0] - uA);
            s[nt][1] = exp2f(s[nt][1] - uA);
            s[nt][2] = exp2f(s[nt][2] - uB);
            s[nt][3] = exp2f(s[nt][3] - uB);
            lA += s[nt][0] + s[nt][1];
            lB += s[nt][2] + s[nt][3];
        }
#pragma unroll
        for (int kk = 0; kk < KW / 16; kk++) {
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
}

/* One block per (b, kv head, row): merge the nsplit partials of that row. */
static __global__ void attn_decode_combine_kernel(orthros_attn_full_params p, int nsplit)
{
    int g = p.Hq / p.Hkv, D = p.d;
    int r = blockIdx.x % DEC_ROWS, bh = blockIdx.x / DEC_ROWS, kv = bh % p.Hkv, b = bh / p.Hkv;
    if (r >= p.n * g) return;
    size_t nparts = (size_t)p.B * p.Hkv * nsplit;
    const float *pml = p.work + nparts * DEC_ROWS * D;
    float M = -INFINITY;
    for (int s = 0; s < nsplit; s++) M = fmaxf(M, pml[(((size_t)bh * nsplit + s) * DEC_ROWS + r) * 2]);
    float L = 0.0f;
    for (int s = 0; s < nsplit; s++) {
        const float *ml = pml + (((size_t)bh * nsplit + s) * DEC_ROWS + r) * 2;
        if (ml[0] != -INFINITY) L += ml[1] * exp2f(ml[0] - M);
    }
    float inv = L > 0.0f ? 1.0f / L : 0.0f;
    bf16 *out = (bf16 *)p.out + (((size_t)b * p.n + r / g) * p.Hq + kv * g + r % g) * D;
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
        float acc = 0.0f;
        for (int s = 0; s < nsplit; s++) {
            size_t part = (size_t)bh * nsplit + s;
            float m = pml[(part * DEC_ROWS + r) * 2];
            if (m != -INFINITY) acc += p.work[(part * DEC_ROWS + r) * D + c] * exp2f(m - M);
        }
        out[c] = f2bf(acc * inv);
    }
}

template <int D> static int blocks_per_sm(int *out)
{
    static int cached = 0;
    if (!cached) {
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_decode_split_kernel<D>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dec_cfg<D>::bytes));
        ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&cached, attn_decode_split_kernel<D>,
                                                                         DEC_WARPS * 32, dec_cfg<D>::bytes));
        if (cached < 1) cached = 1;
    }
    *out = cached;
    return 0;
}

/* Split length (a multiple of the tile) and count so that the blocks fill about one wave of the chip. */
static int decode_plan(const orthros_attn_full_params *p, int *split_len, int *nsplit)
{
    int per_sm = 1, rc = p->d == 64 ? blocks_per_sm<64>(&per_sm) : blocks_per_sm<128>(&per_sm);
    if (rc) return rc;
    int sms = p->num_sms > 0 ? p->num_sms : 132;
    int heads = p->B * p->Hkv;
    int want = ceil_div(per_sm * sms, heads);
    int keys = p->max_keys > 0 ? p->max_keys : 1;
    int bn = p->d == 64 ? dec_cfg<64>::BN : dec_cfg<128>::BN;
    int len = ceil_div(ceil_div(keys, want), bn) * bn;
    if (len < DEC_MIN_SPLIT) len = DEC_MIN_SPLIT;
    *split_len = len;
    *nsplit = ceil_div(keys, len);
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
    if (p->d == 64)
        attn_decode_split_kernel<64><<<blocks, DEC_WARPS * 32, dec_cfg<64>::bytes, stream>>>(*p, split_len, nsplit);
    else
        attn_decode_split_kernel<128><<<blocks, DEC_WARPS * 32, dec_cfg<128>::bytes, stream>>>(*p, split_len, nsplit);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_split_kernel");
    attn_decode_combine_kernel<<<(unsigned)(p->B * p->Hkv * DEC_ROWS), 128, 0, stream>>>(*p, nsplit);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_decode_combine_kernel");
    return 0;
}
