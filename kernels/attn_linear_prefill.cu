/* Chunked linear attention (the flash-linear-attention "chunk" algorithm, normalised form).
 *
 * The call's tokens are cut into chunks of C = 64. With Phi_q, Phi_k the feature-mapped q, k of a chunk and
 * (S_c, z_c) the state before chunk c:
 *   o = (tril(Phi_q Phi_k^T) V + Phi_q S_c) / (rowsum(tril(Phi_q Phi_k^T)) + Phi_q z_c + eps)
 *   S_{c+1} = S_c + Phi_k^T V,  z_{c+1} = z_c + Phi_k^T 1.
 * v1, three launches per span of up to LC_SPAN tokens per sequence, every chunk in parallel:
 *   1. chunk_state: dS_c = Phi_k^T V (mma.sync, fp32 out) and dz_c, one block per (chunk, kv head, sequence);
 *   2. scan: exclusive prefix over chunks in place, starting from the carried (S, z), which it updates;
 *   3. chunk_out: per chunk and kv head, for each query head of the group, the intra-chunk causal part and
 *      the inter-chunk part on tensor cores. S_c is split as bf16 hi + lo (two mma passes) so the
 *      inter-chunk product keeps about 16 bits of the fp32 state.
 * phi is computed once by linear_featurize into scratch.
 * H200, B=1, n=128K, Hq=32, Hkv=8, elu1: d=64 3.17 ms, d=128 21.9 ms (one 4-warp block per SM at d=128).
 * v2: chunk_out runs 8 warps, two query heads of the group at a time, for twice the warps per SM.
 *     d=64 3.28 ms, d=128 16.4 ms.
 * v3: the loads that were one-at-a-time latency chains (the S_c fp32 -> hi/lo conversion in chunk_out, the
 *     chunk loop of the scan) are batched, several 16-byte loads in flight per thread.
 *     d=64 2.59 ms, d=128 8.1 ms (flash-linear-attention's normalised chunk kernels: 5.80 and 9.59 ms).
 * v4 (opt-in until measured on the GPU): for the element-wise maps (elu1, relu; F = d) no featurize pass:
 *     chunk_state and chunk_out load the raw k and q rows of qkv and apply phi in shared memory
 *     (linear_phi.cuh, the same fp32 -> bf16 rounding as linear_featurize, so the results are identical).
 *     This drops a write and a read of phi_q and phi_k, 2 x (Hq + Hkv) d bf16 per token: at 128K, d=64,
 *     Hq=32, Hkv=8, 1.34 GB of traffic, about 0.32 ms at the 4.2 TB/s copy rate (less where phi stayed in L2).
 *     Hedgehog keeps v3's path. Not yet run on the GPU. */
#include "attn_linear_prefill.h"

#include "cuda_common.cuh"
#include "linear_featurize.h"
#include "linear_phi.cuh"

#define LC 64
#define LC_WARPS 4
#define LCO_WARPS 8 /* chunk_out: two query heads of the group at a time, 4 warps each */
#define LC_SPAN 8192
#define LC_MAX_DT 16
#define CONV_U 4

struct lin_work {
    bf16 *phi_q, *phi_k;
    float *tmp, *dS, *dz;
};

/* cp.async of a chunk's 64 phi_k rows of kv head kv into sPk (row stride ldf), rows past ns zero-filled: from
 * the featurized w.phi_k, or (FUSED) the raw k of qkv, to be mapped in place once it has landed. */
template <bool FUSED>
static __device__ __forceinline__ void load_phi_k(bf16 *sPk, int ldf, const orthros_attn_linear_params &p,
                                                  const lin_work &w, const bf16 *qkv, int W, int b, int kv, int i0,
                                                  int ns, int t0)
{
    const int F = p.F;
    for (int e = threadIdx.x; e < LC * (F / 8); e += blockDim.x) {
        int r = e / (F / 8), ch = e % (F / 8), ok = t0 + r < ns;
        const bf16 *src;
        if (FUSED)
            src = ok ? qkv + ((size_t)b * p.n + i0 + t0 + r) * W + (size_t)(p.Hq + kv) * p.d + ch * 8 : qkv;
        else
            src = ok ? w.phi_k + (((size_t)b * ns + t0 + r) * p.Hkv + kv) * F + ch * 8 : w.phi_k;
        cp_async16(sPk + r * ldf + ch * 8, src, ok ? 16 : 0);
    }
}

/* FUSED: phi_k is made here from the raw k of qkv (element-wise maps, F == d) instead of read from w.phi_k. */
template <bool FUSED>
static __global__ void __launch_bounds__(LC_WARPS * 32)
    lin_chunk_state_kernel(orthros_attn_linear_params p, lin_work w, int i0, int ns, int nc)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int F = p.F, d = p.d, LDF = F + SMEM_PAD, LDD = d + SMEM_PAD;
    bf16 *sPk = (bf16 *)smem_raw;  // [64][LDF]
    bf16 *sV = sPk + LC * LDF;     // [64][LDD]
    int c = blockIdx.x, kv = blockIdx.y, b = blockIdx.z, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int W = (p.Hq + 2 * p.Hkv) * d, t0 = c * LC;
    const bf16 *qkv = (const bf16 *)p.qkv;
    load_phi_k<FUSED>(sPk, LDF, p, w, qkv, W, b, kv, i0, ns, t0);
    for (int e = tid; e < LC * (d / 8); e += blockDim.x) {
        int r = e / (d / 8), ch = e % (d / 8), ok = t0 + r < ns;
        const bf16 *src = ok ? qkv + ((size_t)b * p.n + i0 + t0 + r) * W + (size_t)(p.Hq + p.Hkv + kv) * d + ch * 8 : qkv;
        cp_async16(sV + r * LDD + ch * 8, src, ok ? 16 : 0);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    if (FUSED) {
        phi_tile_inplace(sPk, LDF, LC, ns - t0, F, p.fmap);
        __syncthreads();
    }
    size_t part = ((size_t)b * p.Hkv + kv) * nc + c;
    for (int f = tid; f < F; f += blockDim.x) {
        float s = 0.0f;
        for (int r = 0; r < LC; r++) s += bf2f(sPk[r * LDF + f]);
        w.dz[part * F + f] = s;
    }
    float *dS = w.dS + part * F * d;
    const int DT = d / 8;
    for (int mt = warp; mt < F / 16; mt += LC_WARPS) {
        for (int n0 = 0; n0 < DT; n0 += 8) {
            float acc[8][4];
#pragma unroll
            for (int i = 0; i < 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < LC / 16; kk++) {
                uint32_t a[4];
                // A = Phi_k^T: the transposing load of the token-major tile.
                ldmatrix_x4_trans(a[0], a[1], a[2], a[3],
                                  sPk + (kk * 16 + (lane % 8) + (lane / 16) * 8) * LDF + mt * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
                for (int nt = 0; nt < 8; nt += 2) {
                    if (n0 + nt < DT) {
                        uint32_t bb[4];
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3],
                                          sV + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LDD + (n0 + nt) * 8 +
                                              (lane / 16) * 8);
                        mma_bf16_16816(acc[nt], a, bb);
                        mma_bf16_16816(acc[nt + 1], a, bb + 2);
                    }
                }
            }
            int row = mt * 16 + lane / 4, col = (lane % 4) * 2;
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                if (n0 + nt < DT) {
                    *(float2 *)(dS + (size_t)row * d + (n0 + nt) * 8 + col) = make_float2(acc[nt][0], acc[nt][1]);
                    *(float2 *)(dS + (size_t)(row + 8) * d + (n0 + nt) * 8 + col) = make_float2(acc[nt][2], acc[nt][3]);
                }
            }
        }
    }
}

/* In place: dS_c <- S_in + sum_{c' < c} dS_c'; S <- S_in + sum of all. Same for z. */
#define SCAN_U 8
static __global__ void lin_scan_kernel(orthros_attn_linear_params p, lin_work w, int nc)
{
    int kv = blockIdx.y, b = blockIdx.z, F = p.F, d = p.d;
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x, hd = (size_t)b * p.Hkv + kv;
    float *st, *ws;
    size_t stride;
    if (e < (size_t)F * d) {
        st = p.S + hd * F * d + e;
        ws = w.dS + hd * nc * F * d + e;
        stride = (size_t)F * d;
    } else if (e < (size_t)F * d + F) {
        size_t f = e - (size_t)F * d;
        st = p.z + hd * F + f;
        ws = w.dz + hd * nc * F + f;
        stride = F;
    } else {
        return;
    }
    float run = *st;
    // Loads of SCAN_U chunks are issued before any store, so their latencies overlap.
    for (int c0 = 0; c0 < nc; c0 += SCAN_U) {
        float t[SCAN_U];
#pragma unroll
        for (int u = 0; u < SCAN_U; u++) t[u] = c0 + u < nc ? ws[(size_t)(c0 + u) * stride] : 0.0f;
#pragma unroll
        for (int u = 0; u < SCAN_U; u++) {
            if (c0 + u < nc) ws[(size_t)(c0 + u) * stride] = run;
            run += t[u];
        }
    }
    *st = run;
}

static size_t chunk_out_smem(int F, int d)
{
    return ((size_t)3 * LC * (F + SMEM_PAD) + LC * (d + SMEM_PAD) + 2 * (size_t)F * (d + SMEM_PAD)) * sizeof(bf16) +
           (size_t)F * sizeof(float);
}

/* FUSED: phi_q and phi_k are made here from the raw q and k of qkv, as in lin_chunk_state_kernel. */
template <bool FUSED>
static __global__ void __launch_bounds__(LCO_WARPS * 32)
    lin_chunk_out_kernel(orthros_attn_linear_params p, lin_work w, int i0, int ns, int nc)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int F = p.F, d = p.d, LDF = F + SMEM_PAD, LDD = d + SMEM_PAD, DT = d / 8, KF = F / 16;
    bf16 *sPk = (bf16 *)smem_raw;   // [64][LDF]
    bf16 *sPq2 = sPk + LC * LDF;    // [2][64][LDF]: one tile per warp group
    bf16 *sV = sPq2 + 2 * LC * LDF; // [64][LDD]
    bf16 *sHi = sV + LC * LDD;      // [F][LDD]
    bf16 *sLo = sHi + F * LDD;      // [F][LDD]
    float *sz = (float *)(sLo + F * LDD); // [F]
    int c = blockIdx.x, kv = blockIdx.y, b = blockIdx.z, tid = threadIdx.x, lane = tid % 32;
    int wg = tid / 128, warp = (tid / 32) % 4;
    bf16 *sPq = sPq2 + wg * LC * LDF;
    int g = p.Hq / p.Hkv, W = (p.Hq + 2 * p.Hkv) * d, t0 = c * LC;
    const bf16 *qkv = (const bf16 *)p.qkv;
    load_phi_k<FUSED>(sPk, LDF, p, w, qkv, W, b, kv, i0, ns, t0);
    for (int e = tid; e < LC * (d / 8); e += blockDim.x) {
        int r = e / (d / 8), ch = e % (d / 8), ok = t0 + r < ns;
        const bf16 *src = ok ? qkv + ((size_t)b * p.n + i0 + t0 + r) * W + (size_t)(p.Hq + p.Hkv + kv) * d + ch * 8 : qkv;
        cp_async16(sV + r * LDD + ch * 8, src, ok ? 16 : 0);
    }
    cp_async_commit();
    size_t part = ((size_t)b * p.Hkv + kv) * nc + c;
    const float *Sp = w.dS + part * F * d;
    // S_c as bf16 hi + lo; 16-byte loads, CONV_U of them in flight per thread (d % 16 == 0 keeps each group of
    // 4 in one row).
    const float4 *Sp4 = (const float4 *)Sp;
    const int n4 = F * d / 4;
    for (int base = tid; base < n4; base += blockDim.x * CONV_U) {
        float4 v[CONV_U];
#pragma unroll
        for (int u = 0; u < CONV_U; u++)
            if (base + u * (int)blockDim.x < n4) v[u] = Sp4[base + u * blockDim.x];
#pragma unroll
        for (int u = 0; u < CONV_U; u++) {
            int e4 = base + u * blockDim.x;
            if (e4 < n4) {
                int f = (e4 * 4) / d, col = (e4 * 4) % d;
                float x[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
                __align__(8) bf16 hi[4], lo[4];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    hi[k] = f2bf(x[k]);
                    lo[k] = f2bf(x[k] - bf2f(hi[k]));
                }
                *(uint2 *)(sHi + f * LDD + col) = *(const uint2 *)hi;
                *(uint2 *)(sLo + f * LDD + col) = *(const uint2 *)lo;
            }
        }
    }
    for (int f = tid; f < F; f += blockDim.x) sz[f] = w.dz[part * F + f];

    const int rA = warp * 16 + lane / 4, rB = rA + 8, col = (lane % 4) * 2;
    for (int j0 = 0; j0 < g; j0 += 2) {
        for (int e = tid; e < 2 * LC * (F / 8); e += blockDim.x) {
            int hh = e / (LC * (F / 8)), r = (e / (F / 8)) % LC, ch = e % (F / 8), ok = t0 + r < ns && j0 + hh < g;
            const bf16 *src;
            if (FUSED)
                src = ok ? qkv + ((size_t)b * p.n + i0 + t0 + r) * W + (size_t)(kv * g + j0 + hh) * d + ch * 8 : qkv;
            else
                src = ok ? w.phi_q + (((size_t)b * ns + t0 + r) * p.Hq + kv * g + j0 + hh) * F + ch * 8 : w.phi_q;
            cp_async16(sPq2 + (hh * LC + r) * LDF + ch * 8, src, ok ? 16 : 0);
        }
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();
        if (FUSED) {
            /* Both query tiles (a missing second head's rows are zero and stay zero: phi of nothing is not
             * needed), and the keys on the first pass. */
            for (int hh = 0; hh < 2 && j0 + hh < g; hh++) phi_tile_inplace(sPq2 + hh * LC * LDF, LDF, LC, ns - t0, F, p.fmap);
            if (j0 == 0) phi_tile_inplace(sPk, LDF, LC, ns - t0, F, p.fmap);
            __syncthreads();
        }
        const int h = kv * g + j0 + wg;
        if (j0 + wg < g) {
            // Intra-chunk scores A = Phi_q Phi_k^T for this warp's 16 tokens against the chunk's 64.
            float s[LC / 8][4];
#pragma unroll
            for (int nt = 0; nt < LC / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
            for (int kk = 0; kk < KF; kk++) {
                uint32_t a[4];
                ldmatrix_x4(a[0], a[1], a[2], a[3], sPq + (warp * 16 + lane % 16) * LDF + kk * 16 + (lane / 16) * 8);
#pragma unroll
                for (int nt = 0; nt < LC / 8; nt += 2) {
                    uint32_t bb[4];
                    ldmatrix_x4(bb[0], bb[1], bb[2], bb[3],
                                sPk + (nt * 8 + (lane % 8) + (lane / 16) * 8) * LDF + kk * 16 + ((lane / 8) % 2) * 8);
                    mma_bf16_16816(s[nt], a, bb);
                    mma_bf16_16816(s[nt + 1], a, bb + 2);
                }
            }
            float denA = 0.0f, denB = 0.0f;
#pragma unroll
            for (int nt = 0; nt < LC / 8; nt++) {
                int key = nt * 8 + col;
                if (key > rA) s[nt][0] = 0.0f;
                if (key + 1 > rA) s[nt][1] = 0.0f;
                if (key > rB) s[nt][2] = 0.0f;
                if (key + 1 > rB) s[nt][3] = 0.0f;
                denA += s[nt][0] + s[nt][1];
                denB += s[nt][2] + s[nt][3];
            }
            float o[LC_MAX_DT][4];
#pragma unroll
            for (int i = 0; i < LC_MAX_DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < LC / 16; kk++) {
                uint32_t a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                                 pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                 pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
                for (int dt = 0; dt < LC_MAX_DT; dt += 2) {
                    if (dt < DT) {
                        uint32_t bb[4];
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3],
                                          sV + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LDD + dt * 8 + (lane / 16) * 8);
                        mma_bf16_16816(o[dt], a, bb);
                        mma_bf16_16816(o[dt + 1], a, bb + 2);
                    }
                }
            }
            // Inter-chunk part: Phi_q (S_hi + S_lo).
            for (int kk = 0; kk < KF; kk++) {
                uint32_t a[4];
                ldmatrix_x4(a[0], a[1], a[2], a[3], sPq + (warp * 16 + lane % 16) * LDF + kk * 16 + (lane / 16) * 8);
                int srow = kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
#pragma unroll
                for (int dt = 0; dt < LC_MAX_DT; dt += 2) {
                    if (dt < DT) {
                        uint32_t bb[4];
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3], sHi + srow * LDD + dt * 8 + (lane / 16) * 8);
                        mma_bf16_16816(o[dt], a, bb);
                        mma_bf16_16816(o[dt + 1], a, bb + 2);
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3], sLo + srow * LDD + dt * 8 + (lane / 16) * 8);
                        mma_bf16_16816(o[dt], a, bb);
                        mma_bf16_16816(o[dt + 1], a, bb + 2);
                    }
                }
            }
            for (int f = lane % 4; f < F; f += 4) {
                denA += bf2f(sPq[rA * LDF + f]) * sz[f];
                denB += bf2f(sPq[rB * LDF + f]) * sz[f];
            }
            denA += __shfl_xor_sync(0xffffffffu, denA, 1);
            denA += __shfl_xor_sync(0xffffffffu, denA, 2);
            denB += __shfl_xor_sync(0xffffffffu, denB, 1);
            denB += __shfl_xor_sync(0xffffffffu, denB, 2);
            float iA = 1.0f / (denA + p.eps), iB = 1.0f / (denB + p.eps);
            bf16 *out = (bf16 *)p.out;
            if (t0 + rA < ns) {
                bf16 *dst = out + (((size_t)b * p.n + i0 + t0 + rA) * p.Hq + h) * d + col;
#pragma unroll
                for (int dt = 0; dt < LC_MAX_DT; dt++)
                    if (dt < DT) *(__nv_bfloat162 *)(dst + dt * 8) = __floats2bfloat162_rn(o[dt][0] * iA, o[dt][1] * iA);
            }
            if (t0 + rB < ns) {
                bf16 *dst = out + (((size_t)b * p.n + i0 + t0 + rB) * p.Hq + h) * d + col;
#pragma unroll
                for (int dt = 0; dt < LC_MAX_DT; dt++)
                    if (dt < DT) *(__nv_bfloat162 *)(dst + dt * 8) = __floats2bfloat162_rn(o[dt][2] * iB, o[dt][3] * iB);
            }
        }
        __syncthreads();
    }
}

static int span_len(const orthros_attn_linear_params *p)
{
    int s = LC_SPAN / (p->B > 0 ? p->B : 1);
    s = s / LC * LC;
    if (s < LC) s = LC;
    return p->n < s ? p->n : s;
}

int orthros_attn_linear_chunked_supported(const orthros_attn_linear_params *p)
{
    return p->F % 16 == 0 && p->d % 16 == 0 && p->d <= 8 * LC_MAX_DT && p->F <= 256 && p->F > 0 &&
           p->d > 0 && p->Hkv > 0 && p->Hq % p->Hkv == 0 && chunk_out_smem(p->F, p->d) <= 220 * 1024;
}

static void work_layout(const orthros_attn_linear_params *p, int ns, lin_work *w, size_t *total)
{
    int nc = ceil_div(ns, LC);
    size_t off = 0;
    char *base = (char *)p->work;
    auto take = [&](size_t bytes) {
        size_t at = off;
        off += (bytes + 255) / 256 * 256;
        return base + at;
    };
    w->phi_q = (bf16 *)take((size_t)p->B * ns * p->Hq * p->F * sizeof(bf16));
    w->phi_k = (bf16 *)take((size_t)p->B * ns * p->Hkv * p->F * sizeof(bf16));
    w->tmp = (float *)take(orthros_linear_featurize_tmp_bytes(p->B, ns, p->Hq, p->Hkv, p->F, p->fmap));
    w->dS = (float *)take((size_t)p->B * p->Hkv * nc * p->F * p->d * sizeof(float));
    w->dz = (float *)take((size_t)p->B * p->Hkv * nc * p->F * sizeof(float));
    *total = off;
}

size_t orthros_attn_linear_chunked_work_bytes(const orthros_attn_linear_params *p)
{
    lin_work w;
    size_t total;
    work_layout(p, span_len(p), &w, &total);
    return total;
}

static int linear_prefill_version = ORTHROS_ATTN_LINEAR_PREFILL_DEFAULT;

int orthros_attn_linear_prefill_set_version(int version)
{
    if (version == 0) version = ORTHROS_ATTN_LINEAR_PREFILL_DEFAULT;
    if (version < 3 || version > ORTHROS_ATTN_LINEAR_PREFILL_LATEST)
        return orthros_error(ORTHROS_EINVAL, "linear prefill: no kernel version %d (3 .. %d kept)", version,
                             ORTHROS_ATTN_LINEAR_PREFILL_LATEST);
    linear_prefill_version = version;
    return 0;
}

int orthros_attn_linear_prefill_version(void) { return linear_prefill_version; }

template <bool FUSED> static int set_smem(size_t smem_state, size_t smem_out)
{
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(lin_chunk_state_kernel<FUSED>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)smem_state));
    ORTHROS_CUDA_CHECK(
        cudaFuncSetAttribute(lin_chunk_out_kernel<FUSED>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_out));
    return 0;
}

int orthros_attn_linear_chunked_bf16(const orthros_attn_linear_params *p, cublasHandle_t cublas, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (!orthros_attn_linear_chunked_supported(p))
        return orthros_error(ORTHROS_EUNSUPPORTED, "chunked linear attention: head_dim %d, features %d", p->d, p->F);
    int span = span_len(p);
    lin_work w;
    size_t total;
    work_layout(p, span, &w, &total);
    if (p->work_bytes < total)
        return orthros_error(ORTHROS_EINVAL, "linear attention: %zu bytes of scratch given, %zu needed", p->work_bytes,
                             total);
    size_t smem_state = (size_t)LC * (p->F + SMEM_PAD + p->d + SMEM_PAD) * sizeof(bf16);
    size_t smem_out = chunk_out_smem(p->F, p->d);
    const bool fused = linear_prefill_version >= 4 && p->F == p->d &&
                       (p->fmap == ORTHROS_FMAP_ELU1 || p->fmap == ORTHROS_FMAP_RELU);
    int rc = fused ? set_smem<true>(smem_state, smem_out) : set_smem<false>(smem_state, smem_out);
    if (rc) return rc;
    for (int i0 = 0; i0 < p->n; i0 += span) {
        int ns = p->n - i0 < span ? p->n - i0 : span, nc = ceil_div(ns, LC);
        if (!fused) {
            orthros_linear_featurize_params fp = {w.phi_q, w.phi_k, w.tmp, p->qkv, p->fmap_q, p->fmap_k, p->B, p->n,
                                                  i0, ns, p->Hq, p->Hkv, p->d, p->F, p->fmap};
            if ((rc = orthros_linear_featurize_bf16(&fp, cublas, stream))) return rc;
        }
        dim3 grid(nc, p->Hkv, p->B);
        if (fused)
            lin_chunk_state_kernel<true><<<grid, LC_WARPS * 32, smem_state, stream>>>(*p, w, i0, ns, nc);
        else
            lin_chunk_state_kernel<false><<<grid, LC_WARPS * 32, smem_state, stream>>>(*p, w, i0, ns, nc);
        ORTHROS_CUDA_LAUNCH_CHECK("lin_chunk_state_kernel");
        dim3 sgrid(ceil_div(p->F * p->d + p->F, 256), p->Hkv, p->B);
        lin_scan_kernel<<<sgrid, 256, 0, stream>>>(*p, w, nc);
        ORTHROS_CUDA_LAUNCH_CHECK("lin_scan_kernel");
        if (fused)
            lin_chunk_out_kernel<true><<<grid, LCO_WARPS * 32, smem_out, stream>>>(*p, w, i0, ns, nc);
        else
            lin_chunk_out_kernel<false><<<grid, LCO_WARPS * 32, smem_out, stream>>>(*p, w, i0, ns, nc);
        ORTHROS_CUDA_LAUNCH_CHECK("lin_chunk_out_kernel");
    }
    return 0;
}
