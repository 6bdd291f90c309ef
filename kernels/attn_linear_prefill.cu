/* Chunked linear attention (the flash-linear-attention "chunk" algorithm, normalised form).
 *
 * The call's tokens are cut into chunks of C = 64. With Phi_q, Phi_k the feature-mapped q, k of a chunk and
 * (S_c, z_c) the state before chunk c:
 *   o = (tril(Phi_q Phi_k^T) V + Phi_q S_c) / (rowsum(tril(Phi_q Phi_k^T)) + Phi_q z_c + eps)
 *   S_{c+1} = S_c + Phi_k^T V,  z_{c+1} = z_c + Phi_k^T 1.
 * v1-v4 run three launches per span of up to LC_SPAN tokens per sequence, every chunk in parallel:
 *   1. chunk_state: dS_c = Phi_k^T V (mma.sync, fp32 out) and dz_c, one block per (chunk, kv head, sequence);
 *   2. scan: exclusive prefix over chunks in place, starting from the carried (S, z), which it updates;
 *   3. chunk_out: per chunk and kv head, for each query head of the group, the intra-chunk causal part and
 *      the inter-chunk part on tensor cores. S_c is split as bf16 hi + lo (two mma passes) so the
 *      inter-chunk product keeps about 16 bits of the fp32 state.
 * v5-v7 run three launches per call with no per-chunk states in memory (the v5 and v7 sections below).
 *
 * Versions, a line each (what each measured, the floors, the plans and what was tried and dropped:
 * docs/kernels.md, "Linear prefill"):
 *   v1  the three launches above; phi computed once by linear_featurize into scratch.
 *   v2  chunk_out with 8 warps, two query heads of the group at a time.
 *   v3  the one-at-a-time load chains (S_c's hi / lo conversion, the scan's chunk loop) batched.
 *   v4  elu1 / relu applied in shared memory on the raw q, k rows (linear_phi.cuh): no featurize pass.
 *   v5  segments walked chunk by chunk with the state in mma accumulators (lin5_state, the scan, lin5_out).
 *   v6  v5 with the element-wise map 8 values a step without a branch, and empty intra-chunk tiles skipped.
 *   v7  at head dim 128 on sm_90a the output pass on wgmma (lin7_out); v6 elsewhere: the sm_90a default.
 *   window  (not a version: every path) a converted model's local window (docs/converted-models.md; its tests pass
 *           on the H200 at e470e63): with p.keys.shift = W the state lags the window; every path reads the keys and
 *           values of the key stream W rows behind (linear_phi.cuh's lin_key_row: the call's rows W earlier, or before
 *           the call the ring / cache, zeros before position 0, and phi skips those rows) and writes each row's
 *           denominator to p.den for attn_linear_window.cu's pass. Every kernel takes it as a separate instantiation
 *           (LAG) with its own parameter struct (lin_args in linear_phi.cuh: a by-value struct over 128 bytes changes
 *           a kernel's whole code), so that the code without a window is the code it was, SASS for SASS; v3/v4
 *           featurize the lagging keys through linear_featurize and read its values row by row. v5-v7 load a chunk
 *           whose lagging rows lie inside the call as plain rows W up, lin_key_row only for the first chunks (with
 *           every row through it, v7's d 128 output pass ran 10% slower than without a window; now 5%).
 */
#include "attn_linear_prefill.h"

#include "cuda_common.cuh"
#include "linear_featurize.h"
#include "linear_phi.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

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
template <bool FUSED, class P>
static __device__ __forceinline__ void load_phi_k(bf16 *sPk, int ldf, const P &p,
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

/* cp.async of the values of key rows j0 .. j0 + 63 of a lagging key stream (a local window: the call's rows W earlier,
 * before the call the ring) of kv head kv into sV (row stride ldd); rows at or past `valid` and rows before position
 * 0 zero-filled. */
static __device__ __forceinline__ void load_v_rows(bf16 *sV, int ldd, const lin_args<true> &p, int b, int kv, int j0,
                                                   int valid)
{
    const int d = p.d, pos0b = lin_key_pos0(p.keys, b);
    for (int e = threadIdx.x; e < LC * (d / 8); e += blockDim.x) {
        const int r = e / (d / 8), ch = e % (d / 8);
        const bf16 *v = r < valid ? lin_key_row(p.keys, p.qkv, p.n, p.Hq, p.Hkv, d, b, pos0b, j0 + r, kv, 1) : NULL;
        cp_async16(sV + r * ldd + ch * 8, v ? v + ch * 8 : (const bf16 *)p.qkv, v ? 16 : 0);
    }
}

/* FUSED: phi_k is made here from the raw k of qkv (element-wise maps, F == d) instead of read from w.phi_k. LAG: the
 * values of the lagging key stream (a local window; phi_k comes featurized from it). */
template <bool FUSED, bool LAG>
static __global__ void __launch_bounds__(LC_WARPS * 32)
    lin_chunk_state_kernel(lin_args<LAG> p, lin_work w, int i0, int ns, int nc)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int F = p.F, d = p.d, LDF = F + SMEM_PAD, LDD = d + SMEM_PAD;
    bf16 *sPk = (bf16 *)smem_raw;  // [64][LDF]
    bf16 *sV = sPk + LC * LDF;     // [64][LDD]
    int c = blockIdx.x, kv = blockIdx.y, b = blockIdx.z, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    int W = (p.Hq + 2 * p.Hkv) * d, t0 = c * LC;
    const bf16 *qkv = (const bf16 *)p.qkv;
    load_phi_k<FUSED>(sPk, LDF, p, w, qkv, W, b, kv, i0, ns, t0);
    if constexpr (LAG) {
        load_v_rows(sV, LDD, p, b, kv, i0 + t0, ns - t0);
    } else {
        for (int e = tid; e < LC * (d / 8); e += blockDim.x) {
            int r = e / (d / 8), ch = e % (d / 8), ok = t0 + r < ns;
            const bf16 *src = ok ? qkv + ((size_t)b * p.n + i0 + t0 + r) * W + (size_t)(p.Hq + p.Hkv + kv) * d + ch * 8 : qkv;
            cp_async16(sV + r * LDD + ch * 8, src, ok ? 16 : 0);
        }
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
static __global__ void lin_scan_kernel(lin_args<false> p, lin_work w, int nc)
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

/* One warp's intra-chunk scores s = tril(Phi_q Phi_k^T) (mma.sync accumulator layout) of the 16 query rows at q
 * (row stride ld; this thread's rows rA and rB = rA + 8 of the chunk) against the chunk's 64 keys in sPk, kf = F / 16
 * k-steps (a loop unrolled where kf is a compile-time constant), and the row sums of the kept scores. With skip,
 * the 16-key tiles wholly above the warp's last row (all masked) are not multiplied: they stay 0, as the mask
 * would leave them. */
static __device__ __forceinline__ void lin_intra_scores(float (&s)[LC / 8][4], float &denA, float &denB, const bf16 *q,
                                                        const bf16 *sPk, int ld, int kf, int rA, int rB, int lane,
                                                        bool skip = false)
{
    const int rlast = skip ? rA - lane / 4 + 15 : LC - 1;  // the warp's last row (warp-uniform)
#pragma unroll
    for (int nt = 0; nt < LC / 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kf; kk++) {
        uint32_t a[4];
        ldmatrix_x4(a[0], a[1], a[2], a[3], q + (lane % 16) * ld + kk * 16 + (lane / 16) * 8);
#pragma unroll
        for (int nt = 0; nt < LC / 8; nt += 2) {
            if (nt * 8 > rlast) continue;
            uint32_t bb[4];
            ldmatrix_x4(bb[0], bb[1], bb[2], bb[3], sPk + (nt * 8 + (lane % 8) + (lane / 16) * 8) * ld + kk * 16 + ((lane / 8) % 2) * 8);
            mma_bf16_16816(s[nt], a, bb);
            mma_bf16_16816(s[nt + 1], a, bb + 2);
        }
    }
    denA = 0.0f;
    denB = 0.0f;
    const int col = (lane % 4) * 2;
#pragma unroll
    for (int nt = 0; nt < LC / 8; nt++) {
        const int key = nt * 8 + col;
        if (key > rA) s[nt][0] = 0.0f;
        if (key + 1 > rA) s[nt][1] = 0.0f;
        if (key > rB) s[nt][2] = 0.0f;
        if (key + 1 > rB) s[nt][3] = 0.0f;
        denA += s[nt][0] + s[nt][1];
        denB += s[nt][2] + s[nt][3];
    }
}

/* The row sums of the row's 4 threads added up (left in denA, denB: the denominators without eps, which a local
 * window's combine needs), + eps, inverted. */
static __device__ __forceinline__ void lin_den_finish(float &iA, float &iB, float &denA, float &denB, float eps)
{
    denA += __shfl_xor_sync(0xffffffffu, denA, 1);
    denA += __shfl_xor_sync(0xffffffffu, denA, 2);
    denB += __shfl_xor_sync(0xffffffffu, denB, 1);
    denB += __shfl_xor_sync(0xffffffffu, denB, 2);
    iA = 1.0f / (denA + eps);
    iB = 1.0f / (denB + eps);
}

/* The denominators' inverses of rows rA and rB: the intra-chunk row sums denA, denB plus Phi_q z (z [F] fp32 in
 * shared memory, the query rows of the tile q with row stride ld), reduced over the row's 4 threads, + eps. */
static __device__ __forceinline__ void lin_den_inverse(float &iA, float &iB, float &denA, float &denB, const bf16 *q,
                                                       int ld, const float *sz, int F, float eps, int rA, int rB,
                                                       int lane)
{
    for (int f = lane % 4; f < F; f += 4) {
        denA += bf2f(q[rA * ld + f]) * sz[f];
        denB += bf2f(q[rB * ld + f]) * sz[f];
    }
    lin_den_finish(iA, iB, denA, denB, eps);
}

/* A local window's combine needs each row's linear denominator: row (b, i) of query head h, [B][n][Hq] fp32 (one
 * thread of the row's 4 writes it; rows past the call's are not written). */
static __device__ __forceinline__ void lin_den_store(const lin_args<true> &p, size_t row, int valid_row, int h,
                                                     float den, int lane)
{
    if (p.den && valid_row && lane % 4 == 0) p.den[row * p.Hq + h] = den;
}

/* denA += the dot of the 8 bf16 features in a with z8[0..8), denB the same for b (two query rows, one z chunk). */
static __device__ __forceinline__ void lin_den_add8(float &denA, float &denB, uint4 a, uint4 b, const float *z8)
{
    const float4 z0 = *(const float4 *)z8, z1 = *(const float4 *)(z8 + 4);
    const uint32_t wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
    const float z[8] = {z0.x, z0.y, z0.z, z0.w, z1.x, z1.y, z1.z, z1.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        denA += bf16x2_lo(wa[i]) * z[2 * i] + bf16x2_hi(wa[i]) * z[2 * i + 1];
        denB += bf16x2_lo(wb[i]) * z[2 * i] + bf16x2_hi(wb[i]) * z[2 * i + 1];
    }
}

/* lin_den_inverse with F a compile-time multiple of 32 and 16-byte aligned rows: each of the row's 4 threads
 * takes 8 features a step (one 16-byte load of each query row, two of z) instead of one. */
template <int F>
static __device__ __forceinline__ void lin_den_inverse_x8(float &iA, float &iB, float &denA, float &denB, const bf16 *q,
                                                          int ld, const float *sz, float eps, int rA, int rB, int lane)
{
    static_assert(F % 32 == 0, "4 threads x 8 features a step");
#pragma unroll
    for (int f = (lane % 4) * 8; f < F; f += 32)
        lin_den_add8(denA, denB, *(const uint4 *)(q + rA * ld + f), *(const uint4 *)(q + rB * ld + f), sz + f);
    lin_den_finish(iA, iB, denA, denB, eps);
}

/* FUSED: phi_q and phi_k are made here from the raw q and k of qkv, as in lin_chunk_state_kernel. LAG: the values of
 * the lagging key stream, and each row's denominator to p.den. */
template <bool FUSED, bool LAG>
static __global__ void __launch_bounds__(LCO_WARPS * 32)
    lin_chunk_out_kernel(lin_args<LAG> p, lin_work w, int i0, int ns, int nc)
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
    if constexpr (LAG) {
        load_v_rows(sV, LDD, p, b, kv, i0 + t0, ns - t0);
    } else {
        for (int e = tid; e < LC * (d / 8); e += blockDim.x) {
            int r = e / (d / 8), ch = e % (d / 8), ok = t0 + r < ns;
            const bf16 *src = ok ? qkv + ((size_t)b * p.n + i0 + t0 + r) * W + (size_t)(p.Hq + p.Hkv + kv) * d + ch * 8 : qkv;
            cp_async16(sV + r * LDD + ch * 8, src, ok ? 16 : 0);
        }
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
            float s[LC / 8][4], denA, denB;
            lin_intra_scores(s, denA, denB, sPq + warp * 16 * LDF, sPk, LDF, KF, rA, rB, lane);
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
            float iA, iB;
            lin_den_inverse(iA, iB, denA, denB, sPq, LDF, sz, F, p.eps, rA, rB, lane);
            if constexpr (LAG) {
                lin_den_store(p, (size_t)b * p.n + i0 + t0 + rA, t0 + rA < ns, h, denA, lane);
                lin_den_store(p, (size_t)b * p.n + i0 + t0 + rB, t0 + rB < ns, h, denB, lane);
            }
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

/* ---- v5: segments walked chunk by chunk, the state in registers ----
 * Three launches per call (no spans): lin5_state sums phi_k^T V and phi_k over each of P1 segments of the
 * sequence (every (segment, kv head, sequence) a block, the sum in mma accumulators across the segment's
 * chunks); lin_scan_kernel (v1-v4's) turns the P1 sums into the state at each segment's start and the final
 * state; lin5_out gives a block a segment of m consecutive P1 segments, one kv head and two query heads of its
 * group, loads the state at the segment's start into the same accumulators and walks the chunks in order: the
 * outputs of chunk c from S_c (as bf16 hi + lo in shared memory, as v1-v4) and the intra-chunk part, then
 * S_{c+1} = S_c + phi_k^T V accumulated in place, and the next chunk's rows loaded by cp.async meanwhile. The
 * per-chunk fp32 states of v1-v4 (written, scanned in place, read: 4 F d bytes per chunk and kv head, three
 * times) never reach memory. elu1 / relu with F == d only (phi applied in shared memory as v4); hedgehog keeps
 * v4's path. */
#define L5_WARPS 8
template <int D> struct lin5_cfg {
    static constexpr int LD = D + SMEM_PAD;        // F == D
    static constexpr int TILE = LC * LD;           // bf16 elements of one [64][LD] tile
    static constexpr int MT = D / 16;              // 16-row feature tiles of S
    static constexpr int WPM = L5_WARPS / MT;      // warps per feature tile (1 at d 128, 2 at d 64)
    static constexpr int NTW = (D / 8) / WPM;      // n8 column tiles of S per warp (16, 4)
    static constexpr size_t SMEM_STATE = (size_t)2 * 2 * TILE * sizeof(bf16);  // 2 stages of phi_k, V
    // 2 stages of phi_k, V, phi_q of two heads; S hi and lo [D][LD]; z [D] fp32
    static constexpr size_t SMEM_OUT = ((size_t)2 * 4 * TILE + 2 * (size_t)D * LD) * sizeof(bf16) + D * sizeof(float);
    static_assert(L5_WARPS % MT == 0, "the feature tiles of S must spread evenly over the warps");
    static_assert(SMEM_OUT <= 227 * 1024, "v5's stages exceed the shared memory of a block");
};

/* cp.async of the 64-row tile of head column block `col` (element offset within a qkv row) for chunk rows
 * t0 .. t0 + 63 of the sequence (qkv rows row0 + t), zeros past `valid` rows. */
template <int D>
static __device__ __forceinline__ void lin5_load(bf16 *dst, const bf16 *qkv, size_t row0, int W, int col, int valid)
{
    constexpr int LD = lin5_cfg<D>::LD, CH = D / 8;
    for (int e = threadIdx.x; e < LC * CH; e += blockDim.x) {
        const int r = e / CH, ch = e % CH, ok = r < valid;
        const bf16 *src = ok ? qkv + (row0 + r) * (size_t)W + col + ch * 8 : qkv;
        cp_async16(dst + r * LD + ch * 8, src, ok ? 16 : 0);
    }
}

/* cp.async of the 64-row tile of the call's key rows j0 .. j0 + 63 (a lagging key stream, p.keys.shift > 0): the keys
 * phi reads (which 0) or the values (which 1) of kv head kv, zeros past `valid` rows and before position 0. */
template <int D>
static __device__ __forceinline__ void lin5_load_keys(bf16 *dst, const lin_args<true> &p, int b, int pos0b,
                                                      int j0, int valid, int kv, int which)
{
    constexpr int LD = lin5_cfg<D>::LD, CH = D / 8;
    for (int e = threadIdx.x; e < LC * CH; e += blockDim.x) {
        const int r = e / CH, ch = e % CH;
        const bf16 *src = r < valid ? lin_key_row(p.keys, p.qkv, p.n, p.Hq, p.Hkv, D, b, pos0b, j0 + r, kv, which) : NULL;
        cp_async16(dst + r * LD + ch * 8, src ? src + ch * 8 : (const bf16 *)p.qkv, src ? 16 : 0);
    }
}

/* The phi_k and V tiles of a chunk (key rows j0 .. j0 + 63 of the call, `valid` of them) into st and st + TILE: from
 * qkv, or with LAG from the key stream W rows behind. A chunk whose lagging rows all lie inside the call (j0 >= W:
 * every chunk but the first of a long prefill) reads them as the plain path does, W rows up; only the others take
 * lin_key_row's per-row choice of call, ring and zeros. */
template <int D, bool LAG>
static __device__ __forceinline__ void lin5_load_kv(bf16 *st, const lin_args<LAG> &p, int b, int pos0b, int j0,
                                                    int valid, int kv)
{
    constexpr int TILE = lin5_cfg<D>::TILE;
    const int W = (p.Hq + 2 * p.Hkv) * D;
    int r0 = j0;
    if constexpr (LAG) {
        if (j0 < p.keys.shift) {
            lin5_load_keys<D>(st, p, b, pos0b, j0, valid, kv, 0);
            lin5_load_keys<D>(st + TILE, p, b, pos0b, j0, valid, kv, 1);
            return;
        }
        r0 = j0 - p.keys.shift;
    }
    const bf16 *qkv = (const bf16 *)p.qkv;
    const size_t row = (size_t)b * p.n + r0;
    lin5_load<D>(st, qkv, row, W, (p.Hq + kv) * D, valid);
    lin5_load<D>(st + TILE, qkv, row, W, (p.Hq + p.Hkv + kv) * D, valid);
}

/* phi in place over a chunk's 64-row tile, rows [first, valid): v5 element by element (phi_tile_inplace), v6 (X8) 8
 * values a step (as are v6's denominators at d 128, lin_den_inverse_x8). */
template <int D, bool X8>
static __device__ __forceinline__ void lin5_phi(bf16 *tile, int valid, int fmap, int first = 0)
{
    if (X8) phi_tile_inplace_x8<D>(tile, lin5_cfg<D>::LD, LC, valid, fmap, first);
    else phi_tile_inplace(tile, lin5_cfg<D>::LD, LC, valid, D, fmap, first);
}

/* z += the column sums of the chunk's phi_k tile, feature threadIdx.x (< D): v5 one chain of 64 adds, v6 (X8)
 * four chains (the loads issued together). */
template <int D, bool X8>
static __device__ __forceinline__ void lin5_zsum(float &zacc, const bf16 *sPk)
{
    constexpr int LD = lin5_cfg<D>::LD;
    if (threadIdx.x >= D) return;
    if (!X8) {
        for (int r = 0; r < LC; r++) zacc += bf2f(sPk[r * LD + threadIdx.x]);
        return;
    }
    float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < LC; r += 4)
#pragma unroll
        for (int i = 0; i < 4; i++) z[i] += bf2f(sPk[(r + i) * LD + threadIdx.x]);
    zacc += (z[0] + z[1]) + (z[2] + z[3]);
}

/* acc += phi_k^T V for this warp's tiles of S: feature tile mt = warp % MT, column tiles [n0, n0 + NTW) with
 * n0 = (warp / MT) NTW. A = phi_k^T and B = V by transposing loads of the token-major tiles (lin_chunk_state's
 * fragments). */
template <int D>
static __device__ __forceinline__ void lin5_update(float (&acc)[lin5_cfg<D>::NTW][4], const bf16 *sPk, const bf16 *sV,
                                                   int warp, int lane)
{
    using C = lin5_cfg<D>;
    constexpr int LD = C::LD, NTW = C::NTW;
    const int mt = warp % C::MT, n0 = (warp / C::MT) * NTW;
#pragma unroll
    for (int kk = 0; kk < LC / 16; kk++) {
        uint32_t a[4];
        ldmatrix_x4_trans(a[0], a[1], a[2], a[3],
                          sPk + (kk * 16 + (lane % 8) + (lane / 16) * 8) * LD + mt * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int nt = 0; nt < NTW; nt += 2) {
            uint32_t bb[4];
            ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3],
                              sV + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + (n0 + nt) * 8 + (lane / 16) * 8);
            mma_bf16_16816(acc[nt], a, bb);
            mma_bf16_16816(acc[nt + 1], a, bb + 2);
        }
    }
}

/* Pass 1: the sums of phi_k^T V and phi_k over segment blockIdx.x (tokens [x Lsub, (x + 1) Lsub) of the call),
 * kv head blockIdx.y, sequence blockIdx.z, into w.dS / w.dz [b][kv][P1][F][d] as lin_scan_kernel reads them. */
template <int D, bool X8, bool LAG>
static __global__ void __launch_bounds__(L5_WARPS * 32)
    lin5_state_kernel(lin_args<LAG> p, lin_work w, int Lsub, int P1)
{
    using C = lin5_cfg<D>;
    constexpr int TILE = C::TILE, NTW = C::NTW;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sbuf = (bf16 *)smem_raw;  // [2 stages][phi_k, V][64][LD]
    const int seg = blockIdx.x, kv = blockIdx.y, b = blockIdx.z, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int W = (p.Hq + 2 * p.Hkv) * D, t_begin = seg * Lsub, t_end = min(p.n, t_begin + Lsub);
    const int nch = (t_end - t_begin + LC - 1) / LC;
    const bf16 *qkv = (const bf16 *)p.qkv;
    const size_t row_b = (size_t)b * p.n;
    const int pos0b = lin_pos0(p, b), kfirst = lin_kfirst(p, pos0b);
    float acc[NTW][4];
#pragma unroll
    for (int i = 0; i < NTW; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    float zacc = 0.0f;  // feature threadIdx.x (< D)
    auto load = [&](int c) {
        bf16 *st = sbuf + (c & 1) * 2 * TILE;
        const int t0 = t_begin + c * LC, valid = min(LC, t_end - t0);
        lin5_load_kv<D, LAG>(st, p, b, pos0b, t0, valid, kv);
        cp_async_commit();
    };
    if (nch > 0) load(0);
    for (int c = 0; c < nch; c++) {
        cp_async_wait<0>();
        __syncthreads();                       // chunk c landed; every read of the other stage (chunk c - 1) done
        if (c + 1 < nch) load(c + 1);
        bf16 *sPk = sbuf + (c & 1) * 2 * TILE, *sV = sPk + TILE;
        const int valid = min(LC, t_end - (t_begin + c * LC));
        lin5_phi<D, X8>(sPk, valid, p.fmap, LAG ? kfirst - (t_begin + c * LC) : 0);
        __syncthreads();
        lin5_zsum<D, X8>(zacc, sPk);
        lin5_update<D>(acc, sPk, sV, warp, lane);
    }
    const size_t part = ((size_t)b * p.Hkv + kv) * P1 + seg;
    float *dS = w.dS + part * D * D;
    const int mt = warp % C::MT, n0 = (warp / C::MT) * NTW, row = mt * 16 + lane / 4, col = (lane % 4) * 2;
#pragma unroll
    for (int nt = 0; nt < NTW; nt++) {
        *(float2 *)(dS + (size_t)row * D + (n0 + nt) * 8 + col) = make_float2(acc[nt][0], acc[nt][1]);
        *(float2 *)(dS + (size_t)(row + 8) * D + (n0 + nt) * 8 + col) = make_float2(acc[nt][2], acc[nt][3]);
    }
    if (threadIdx.x < D) w.dz[part * D + threadIdx.x] = zacc;
}

/* Pass 3: the outputs of query heads 2 blockIdx.y % HP .. + 1 of kv head blockIdx.y / HP (HP = head pairs per kv
 * head) over segment blockIdx.x (tokens [x Lseg, (x + 1) Lseg), starting from the state at P1 segment x m). */
template <int D, bool X8, bool LAG>
static __global__ void __launch_bounds__(L5_WARPS * 32, D == 64 ? 2 : 1)
    lin5_out_kernel(lin_args<LAG> p, lin_work w, int Lseg, int m, int P1)
{
    using C = lin5_cfg<D>;
    constexpr int LD = C::LD, TILE = C::TILE, NTW = C::NTW, KF = D / 16;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *sbuf = (bf16 *)smem_raw;              // [2 stages][phi_k, V, phi_q x2][64][LD]
    bf16 *sHi = sbuf + 2 * 4 * TILE;            // [D][LD]
    bf16 *sLo = sHi + D * LD;                   // [D][LD]
    float *sz = (float *)(sLo + D * LD);        // [D]
    const int g = p.Hq / p.Hkv, HP = (g + 1) / 2;
    const int seg = blockIdx.x, kv = blockIdx.y / HP, j0 = 2 * (blockIdx.y % HP), b = blockIdx.z;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int W = (p.Hq + 2 * p.Hkv) * D, t_begin = seg * Lseg, t_end = min(p.n, t_begin + Lseg);
    const int nch = (t_end - t_begin + LC - 1) / LC;
    const bf16 *qkv = (const bf16 *)p.qkv;
    const size_t row_b = (size_t)b * p.n;
    const int nq = min(2, g - j0);              // query heads of this block (the last pair of an odd group has 1)
    const int pos0b = lin_pos0(p, b), kfirst = lin_kfirst(p, pos0b);

    // The state at the segment's start, into this warp's accumulator tiles (the mapping of lin5_update).
    const size_t part = ((size_t)b * p.Hkv + kv) * P1 + (size_t)seg * m;
    const int mt = warp % C::MT, n0 = (warp / C::MT) * NTW, srow = mt * 16 + lane / 4, scol = (lane % 4) * 2;
    float acc[NTW][4];
    {
        const float *Sp = w.dS + part * D * D;
#pragma unroll
        for (int nt = 0; nt < NTW; nt++) {
            const float2 x = *(const float2 *)(Sp + (size_t)srow * D + (n0 + nt) * 8 + scol);
            const float2 y = *(const float2 *)(Sp + (size_t)(srow + 8) * D + (n0 + nt) * 8 + scol);
            acc[nt][0] = x.x;
            acc[nt][1] = x.y;
            acc[nt][2] = y.x;
            acc[nt][3] = y.y;
        }
    }
    float zacc = tid < D ? w.dz[part * D + tid] : 0.0f;
    // S as bf16 hi + lo (and z) for the inter-chunk product of the next chunk.
    auto publish = [&]() {
#pragma unroll
        for (int nt = 0; nt < NTW; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float x0 = acc[nt][2 * h], x1 = acc[nt][2 * h + 1];
                const __nv_bfloat162 hi = __floats2bfloat162_rn(x0, x1);
                const __nv_bfloat162 lo = __floats2bfloat162_rn(x0 - __low2float(hi), x1 - __high2float(hi));
                const int off = (srow + 8 * h) * LD + (n0 + nt) * 8 + scol;
                *(__nv_bfloat162 *)(sHi + off) = hi;
                *(__nv_bfloat162 *)(sLo + off) = lo;
            }
        if (tid < D) sz[tid] = zacc;
    };
    auto load = [&](int c) {
        bf16 *st = sbuf + (c & 1) * 4 * TILE;
        const int t0 = t_begin + c * LC, valid = min(LC, t_end - t0);
        lin5_load_kv<D, LAG>(st, p, b, pos0b, t0, valid, kv);
        for (int hh = 0; hh < nq; hh++) lin5_load<D>(st + (2 + hh) * TILE, qkv, row_b + t0, W, (kv * g + j0 + hh) * D, valid);
        cp_async_commit();
    };
    publish();
    if (nch > 0) load(0);

    const int hh = warp / 4, rA = (warp % 4) * 16 + lane / 4, rB = rA + 8, col = (lane % 4) * 2;
    for (int c = 0; c < nch; c++) {
        cp_async_wait<0>();
        __syncthreads();  // chunk c landed, S_c published; the other stage's last reads (chunk c - 1) are done
        if (c + 1 < nch) load(c + 1);
        bf16 *sPk = sbuf + (c & 1) * 4 * TILE, *sV = sPk + TILE, *sPq = sPk + (2 + hh) * TILE;
        const int t0 = t_begin + c * LC, valid = min(LC, t_end - t0);
        lin5_phi<D, X8>(sPk, valid, p.fmap, LAG ? kfirst - t0 : 0);
        for (int q = 0; q < nq; q++) lin5_phi<D, X8>(sPk + (2 + q) * TILE, valid, p.fmap);
        __syncthreads();
        if (hh < nq) {
            // Intra-chunk scores A = Phi_q Phi_k^T of this warp's 16 tokens against the chunk's 64.
            float sc[LC / 8][4], denA, denB;
            lin_intra_scores(sc, denA, denB, sPq + (warp % 4) * 16 * LD, sPk, LD, KF, rA, rB, lane, X8);
            float iA, iB;
            // (at d 64 the vector form spills under the 128 registers of two blocks per SM)
            if (X8 && D == 128) lin_den_inverse_x8<D>(iA, iB, denA, denB, sPq, LD, sz, p.eps, rA, rB, lane);
            else lin_den_inverse(iA, iB, denA, denB, sPq, LD, sz, D, p.eps, rA, rB, lane);
            if constexpr (LAG) {
                lin_den_store(p, row_b + t0 + rA, rA < valid, kv * g + j0 + hh, denA, lane);
                lin_den_store(p, row_b + t0 + rB, rB < valid, kv * g + j0 + hh, denB, lane);
            }
            // A as bf16 A fragments (16 registers instead of the 32 of sc), then the output in 64-column halves:
            // with S's 64 accumulator registers per thread at d 128, o for all 128 columns would not fit.
            uint32_t pa[LC / 16][4];
#pragma unroll
            for (int kk = 0; kk < LC / 16; kk++) {
                pa[kk][0] = pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]);
                pa[kk][1] = pack_bf16x2(sc[2 * kk][2], sc[2 * kk][3]);
                pa[kk][2] = pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
                pa[kk][3] = pack_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
            }
            const int h = kv * g + j0 + hh;
            bf16 *out = (bf16 *)p.out;
#pragma unroll 1
            for (int c0 = 0; c0 < D; c0 += 64) {
                float o[8][4];
#pragma unroll
                for (int i = 0; i < 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
#pragma unroll
                for (int kk = 0; kk < LC / 16; kk++) {
                    if (X8 && kk > warp % 4) continue;  // keys past the warp's rows: A is 0 there (v6 skips)
#pragma unroll
                    for (int dt = 0; dt < 8; dt += 2) {
                        uint32_t bb[4];
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3],
                                          sV + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + c0 + dt * 8 +
                                              (lane / 16) * 8);
                        mma_bf16_16816(o[dt], pa[kk], bb);
                        mma_bf16_16816(o[dt + 1], pa[kk], bb + 2);
                    }
                }
                // Inter-chunk part: Phi_q (S_hi + S_lo).
#pragma unroll
                for (int kk = 0; kk < KF; kk++) {
                    uint32_t a[4];
                    ldmatrix_x4(a[0], a[1], a[2], a[3], sPq + ((warp % 4) * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
                    const int r = kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
#pragma unroll
                    for (int dt = 0; dt < 8; dt += 2) {
                        uint32_t bb[4];
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3], sHi + r * LD + c0 + dt * 8 + (lane / 16) * 8);
                        mma_bf16_16816(o[dt], a, bb);
                        mma_bf16_16816(o[dt + 1], a, bb + 2);
                        ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3], sLo + r * LD + c0 + dt * 8 + (lane / 16) * 8);
                        mma_bf16_16816(o[dt], a, bb);
                        mma_bf16_16816(o[dt + 1], a, bb + 2);
                    }
                }
                if (rA < valid) {
                    bf16 *dst = out + ((row_b + t0 + rA) * p.Hq + h) * D + c0 + col;
#pragma unroll
                    for (int dt = 0; dt < 8; dt++)
                        *(__nv_bfloat162 *)(dst + dt * 8) = __floats2bfloat162_rn(o[dt][0] * iA, o[dt][1] * iA);
                }
                if (rB < valid) {
                    bf16 *dst = out + ((row_b + t0 + rB) * p.Hq + h) * D + c0 + col;
#pragma unroll
                    for (int dt = 0; dt < 8; dt++)
                        *(__nv_bfloat162 *)(dst + dt * 8) = __floats2bfloat162_rn(o[dt][2] * iB, o[dt][3] * iB);
                }
            }
        }
        __syncthreads();  // every read of S_c (hi, lo, z) is done
        lin5_zsum<D, X8>(zacc, sPk);
        lin5_update<D>(acc, sPk, sV, warp, lane);
        publish();        // S_{c+1}; the next iteration's first barrier orders it before its reads
    }
}

/* ---- v7: the output pass at head dim 128 on wgmma (sm_90a) ----
 * v5/v6's lin5_out with its four products per chunk as warpgroup MMAs: one block per (segment, kv head, pair of
 * query heads), two warpgroups. Warpgroup w takes query head j0 + w of the pair (when it exists) for all 64 rows
 * of the chunk, and rows [64 w, 64 w + 64) of the state S = sum phi_k^T V (F = d = 128):
 *   scores  A = Phi_q Phi_k^T       wgmma m64n64k16,  Phi_q and Phi_k K-major in shared memory, 8 k-steps;
 *   intra   O = tril(A) V           wgmma m64n128k16, P = tril(A) as bf16 A fragments from registers, V MN-major;
 *   inter   O += Phi_q (S_hi + S_lo) wgmma m64n128k16, S hi / lo MN-major in shared memory, 2 x 8 k-steps;
 *   update  S_w += Phi_k[:, w]^T V  wgmma m64n128k16, Phi_k MN-major as A (imm-trans-a), V as B, 4 k-steps;
 * the denominators (row sums of tril(A) plus Phi_q z) on the CUDA cores, as in v5. Every tile sits in shared
 * memory in the 128-byte-swizzled layout of the wgmma operands (attn_full_prefill_wgmma.cu's top comment derives
 * them): a [64 rows][128 columns] bf16 tile is two [64][64] regions 8 KB apart, row r's 16-byte chunk c of a
 * region at swz128(r, c); S hi / lo are [128 F rows][128 d] as two [128][64] regions 16 KB apart. Loads are
 * cp.async of the next chunk (two stages), phi is applied in place (an element-wise map does not care where an
 * element sits), and generic-proxy writes (cp.async, phi, the S publish) are fenced to the async proxy before
 * wgmma reads them. Shared memory: 2 stages x 4 tiles x 16 KB + 64 KB of S hi / lo + z: ~193 KB, one block per
 * SM, as v6 at d 128. */
#define L7_THREADS 256
#define L7_TILE 16384u                 /* bytes of a [64][128] bf16 tile */
#define L7_STAGE (4u * L7_TILE)        /* phi_k, V, phi_q of two heads */
#define L7_SREG 16384u                 /* bytes of one [128][64] region of S hi or lo */
#define L7_SMEM (2u * L7_STAGE + 4u * L7_SREG + 128u * 4u + 1024u)

template <bool LAG>
static __global__ void __launch_bounds__(L7_THREADS, 1)
    lin7_out_kernel(lin_args<LAG> p, lin_work w, int Lseg, int m, int P1)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int D = 128;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    unsigned char *gbase = smem_raw + (base - smem_addr(smem_raw));  // the same bytes, generic address
    const uint32_t sStage = base, sHi = base + 2u * L7_STAGE, sLo = sHi + 2u * L7_SREG;
    float *sz = (float *)(gbase + 2u * L7_STAGE + 4u * L7_SREG);
    const int g = p.Hq / p.Hkv, HP = (g + 1) / 2;
    const int seg = blockIdx.x, kv = blockIdx.y / HP, j0 = 2 * (blockIdx.y % HP), b = blockIdx.z;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
    const int W = (p.Hq + 2 * p.Hkv) * D, t_begin = seg * Lseg, t_end = min(p.n, t_begin + Lseg);
    const int nch = (t_end - t_begin + LC - 1) / LC;
    const bf16 *qkv = (const bf16 *)p.qkv;
    const size_t row_b = (size_t)b * p.n;
    const int nq = min(2, g - j0);
    const int pos0b = lin_pos0(p, b), kfirst = lin_kfirst(p, pos0b);
    // This thread's accumulator rows (of any m64nN tile): r0 and r0 + 8; register i holds row (i / 2) % 2 ? r1 : r0,
    // column 8 (i / 4) + 2 (lane % 4) + (i % 2).
    const int r0 = 16 * warp + lane / 4, r1 = r0 + 8, cq = 2 * (lane % 4);

    // The state at the segment's start: S rows [64 wg, 64 wg + 64) into the accumulators, z[threadIdx.x].
    const size_t part = ((size_t)b * p.Hkv + kv) * P1 + (size_t)seg * m;
    float sacc[64];
    {
        const float *Sp = w.dS + part * D * D + (size_t)(64 * wg) * D;
#pragma unroll
        for (int i = 0; i < 64; i += 2) {
            const float2 x = *(const float2 *)(Sp + (size_t)((i / 2) % 2 ? r1 : r0) * D + 8 * (i / 4) + cq);
            sacc[i] = x.x;
            sacc[i + 1] = x.y;
        }
    }
    float zacc = threadIdx.x < D ? w.dz[part * D + threadIdx.x] : 0.0f;
    // S as bf16 hi + lo in the MN-major layout of the inter product's B operand, and z.
    auto publish = [&]() {
#pragma unroll
        for (int i = 0; i < 64; i += 2) {
            const int f = 64 * wg + ((i / 2) % 2 ? r1 : r0), c = 8 * (i / 4) + cq;
            const __nv_bfloat162 hi = __floats2bfloat162_rn(sacc[i], sacc[i + 1]);
            const __nv_bfloat162 lo = __floats2bfloat162_rn(sacc[i] - __low2float(hi), sacc[i + 1] - __high2float(hi));
            const uint32_t off = (uint32_t)(c / 64) * L7_SREG + swz128(f, (c % 64) / 8) + (uint32_t)(c % 8) * 2u;
            *(__nv_bfloat162 *)(gbase + (sHi - base) + off) = hi;
            *(__nv_bfloat162 *)(gbase + (sLo - base) + off) = lo;
        }
        if (threadIdx.x < D) sz[threadIdx.x] = zacc;
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    };
    // cp.async of chunk c's tiles into stage c & 1: [64 rows][16 chunks] each, rows past the chunk zero-filled.
    auto load = [&](int c) {
        const uint32_t st = sStage + (uint32_t)(c & 1) * L7_STAGE;
        const int t0 = t_begin + c * LC, valid = min(LC, t_end - t0);
        const int cols[4] = {(p.Hq + kv) * D, (p.Hq + p.Hkv + kv) * D, (kv * g + j0) * D, (kv * g + j0 + 1) * D};
#pragma unroll
        for (int t = 0; t < 4; t++) {
            if (t == 3 && nq < 2) break;
            // A local window's keys and values are the rows W earlier: inside the call (t0 >= W, every chunk but
            // the first of a long prefill) read as the plain path reads, W rows up; else row by row by lin_key_row.
            int r0 = t0;
            if constexpr (LAG) {
                if (t < 2 && t0 < p.keys.shift) {
#pragma unroll
                    for (int k = 0; k < LC * 16 / L7_THREADS; k++) {
                        const int e = threadIdx.x + k * L7_THREADS, r = e / 16, ch = e % 16;
                        const bf16 *src =
                            r < valid ? lin_key_row(p.keys, p.qkv, p.n, p.Hq, p.Hkv, D, b, pos0b, t0 + r, kv, t) : NULL;
                        cp_async16_s(st + (uint32_t)t * L7_TILE + (uint32_t)(ch / 8) * 8192u + swz128(r, ch % 8),
                                     src ? src + ch * 8 : qkv, src ? 16 : 0);
                    }
                    continue;
                }
                if (t < 2) r0 = t0 - p.keys.shift;
            }
#pragma unroll
            for (int k = 0; k < LC * 16 / L7_THREADS; k++) {
                const int e = threadIdx.x + k * L7_THREADS, r = e / 16, ch = e % 16, ok = r < valid;
                const bf16 *src = ok ? qkv + (row_b + r0 + r) * (size_t)W + cols[t] + ch * 8 : qkv;
                cp_async16_s(st + (uint32_t)t * L7_TILE + (uint32_t)(ch / 8) * 8192u + swz128(r, ch % 8), src, ok ? 16 : 0);
            }
        }
        cp_async_commit();
    };
    publish();
    if (nch > 0) load(0);

    for (int c = 0; c < nch; c++) {
        cp_async_wait<0>();
        __syncthreads();  // chunk c landed, S_c published; every read of the other stage (chunk c - 1) is done
        if (c + 1 < nch) {
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // its last readers were wgmma
            load(c + 1);
        }
        const uint32_t st = sStage + (uint32_t)(c & 1) * L7_STAGE;
        const uint32_t sPk = st, sV = st + L7_TILE, sPq = st + (uint32_t)(2 + wg) * L7_TILE;
        const int t0 = t_begin + c * LC, valid = min(LC, t_end - t0);
        // phi in place on phi_k and the query tiles, each region a [64][64] tile of stride 64.
        for (int t = 0; t < 2 + nq; t++) {
            if (t == 1) continue;  // V
            for (int rg = 0; rg < 2; rg++)
                phi_tile_inplace_x8<64>((bf16 *)(gbase + (st - base) + (uint32_t)t * L7_TILE + (uint32_t)rg * 8192u), 64,
                                        LC, valid, p.fmap, LAG && t == 0 ? kfirst - t0 : 0);
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();

        if (wg < nq) {
            // Scores of this warpgroup's head: A = Phi_q Phi_k^T, then the causal mask and the row sums.
            float sc[32];
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                const uint32_t ko = (uint32_t)(kk / 4) * 8192u + (uint32_t)(kk % 4) * 32u;
                wgmma_ss_m64n64(sc, sw128_desc(sPq + ko, 16, 1024), sw128_desc(sPk + ko, 16, 1024), kk > 0);
            }
            wg_commit();
            wg_wait<0>();
            reg_fence(sc);
            float denA = 0.0f, denB = 0.0f;
#pragma unroll
            for (int i = 0; i < 32; i++) {
                const int row = (i / 2) % 2 ? r1 : r0, key = 8 * (i / 4) + cq + (i % 2);
                if (key > row) sc[i] = 0.0f;
                if ((i / 2) % 2) denB += sc[i];
                else denA += sc[i];
            }
            // + Phi_q z: the row's 4 threads take 32 features each (4 chunks of 8).
            const unsigned char *q = gbase + (sPq - base);
#pragma unroll
            for (int mm = 0; mm < 4; mm++) {
                const int ch = (lane % 4) * 4 + mm;
                lin_den_add8(denA, denB, *(const uint4 *)(q + (ch / 8) * 8192 + swz128(r0, ch % 8)),
                             *(const uint4 *)(q + (ch / 8) * 8192 + swz128(r1, ch % 8)), sz + ch * 8);
            }
            float iA, iB;
            lin_den_finish(iA, iB, denA, denB, p.eps);
            if constexpr (LAG) {
                lin_den_store(p, row_b + t0 + r0, r0 < valid, kv * g + j0 + wg, denA, lane);
                lin_den_store(p, row_b + t0 + r1, r1 < valid, kv * g + j0 + wg, denB, lane);
            }
            // P as bf16 A fragments: keys [16 kk, 16 kk + 16) are registers 8 kk .. 8 kk + 7, packed pairwise.
            uint32_t pf[4][4];
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
#pragma unroll
                for (int r = 0; r < 4; r++) pf[kk][r] = pack_bf16x2(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
            float o[64];
#pragma unroll
            for (int i = 0; i < 64; i++) o[i] = 0.0f;
            wg_fence();
            // Intra-chunk: O = P V (V MN-major: 64 d-columns a region, regions 8 KB apart; 16 keys = 2048 bytes).
#pragma unroll
            for (int kk = 0; kk < 4; kk++) wgmma_rs_m64n128(o, pf[kk], sw128_desc(sV + (uint32_t)kk * 2048u, 8192, 1024));
            // Inter-chunk: O += Phi_q S_hi + Phi_q S_lo (S MN-major: 64 d-columns a region, regions 16 KB apart).
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                const uint32_t qo = (uint32_t)(kk / 4) * 8192u + (uint32_t)(kk % 4) * 32u;
                wgmma_ss_m64n128<0, 1>(o, sw128_desc(sPq + qo, 16, 1024), sw128_desc(sHi + (uint32_t)kk * 2048u, L7_SREG, 1024), 1);
                wgmma_ss_m64n128<0, 1>(o, sw128_desc(sPq + qo, 16, 1024), sw128_desc(sLo + (uint32_t)kk * 2048u, L7_SREG, 1024), 1);
            }
            wg_commit();
            wg_wait<0>();
            reg_fence(o);
            reg_fence(pf);
            const int h = kv * g + j0 + wg;
            bf16 *out = (bf16 *)p.out;
#pragma unroll
            for (int i = 0; i < 64; i += 2) {
                const int row = (i / 2) % 2 ? r1 : r0, col = 8 * (i / 4) + cq;
                if (row < valid) {
                    const float inv = (i / 2) % 2 ? iB : iA;
                    *(__nv_bfloat162 *)(out + ((row_b + t0 + row) * p.Hq + h) * D + col) =
                        __floats2bfloat162_rn(o[i] * inv, o[i + 1] * inv);
                }
            }
        }
        // S_{c+1} = S_c + Phi_k^T V, this warpgroup's 64 feature rows: A = Phi_k region wg read MN-major
        // (imm-trans-a; 16 keys = 2048 bytes), B = V MN-major.
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            wgmma_ss_m64n128<1, 1>(sacc, sw128_desc(sPk + (uint32_t)wg * 8192u + (uint32_t)kk * 2048u, 8192, 1024),
                                   sw128_desc(sV + (uint32_t)kk * 2048u, 8192, 1024), 1);
        wg_commit();
        // z += the column sums of phi_k (rows past the chunk are zero), feature threadIdx.x.
        if (threadIdx.x < D) {
            const unsigned char *k = gbase + (sPk - base);
            const int f = threadIdx.x, rg = f / 64, ch = (f % 64) / 8, e = f % 8;
            float zs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int r = 0; r < LC; r += 4)
#pragma unroll
                for (int u = 0; u < 4; u++) zs[u] += bf2f(*(const bf16 *)(k + rg * 8192 + swz128(r + u, ch) + e * 2));
            zacc += (zs[0] + zs[1]) + (zs[2] + zs[3]);
        }
        wg_wait<0>();
        reg_fence(sacc);
        __syncthreads();  // every read of S_c (hi, lo, z) is done
        publish();        // S_{c+1}; the next iteration's first barrier orders it before its reads
    }
#endif
}

/* v5's segmentation: P3 output segments of Lseg tokens per (b, head pair) filling the resident blocks once,
 * each made of m pass-1 segments of Lsub tokens (pass 1 has fewer blocks per segment: one per kv head). */
struct lin5_plan {
    int Lsub, P1, m, Lseg, P3;
};

static int sm_count(void)
{
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
            cudaGetLastError();
            sms = 132;
        }
    }
    return sms;
}

static lin5_plan lin5_make_plan(const orthros_attn_linear_params *p)
{
    const int sms = sm_count(), nchunks = ceil_div(p->n, LC), g = p->Hq / p->Hkv, HP = (g + 1) / 2;
    const int per_sm_out = p->d == 64 ? 2 : 1, per_sm_state = 2;  // shared memory: ~92 / ~205 KB, ~37 / ~70 KB
    lin5_plan pl;
    int P3 = (per_sm_out * sms) / (p->B * p->Hkv * HP);
    P3 = P3 < 1 ? 1 : P3 > nchunks ? nchunks : P3;
    int m = (per_sm_state * sms) / (p->B * p->Hkv * P3);
    m = m < 1 ? 1 : m;
    if (m * P3 > nchunks) m = nchunks / P3 > 0 ? nchunks / P3 : 1;
    pl.Lsub = ceil_div(nchunks, P3 * m) * LC;
    pl.P1 = ceil_div(p->n, pl.Lsub);
    pl.m = m;
    pl.Lseg = m * pl.Lsub;
    pl.P3 = ceil_div(p->n, pl.Lseg);
    return pl;
}

static bool lin5_applies(const orthros_attn_linear_params *p)
{
    return p->F == p->d && (p->d == 64 || p->d == 128) && (p->fmap == ORTHROS_FMAP_ELU1 || p->fmap == ORTHROS_FMAP_RELU);
}

/* Pass 1, the scan, then the output pass: lin5_out, or with WG (v7, head dim 128) lin7_out on wgmma. LAG: the key
 * stream lags a local window (p->keys.shift > 0) and the rows' denominators go to p->den; a separate instantiation,
 * so that the code without a window is the code it was. */
template <int D, bool X8, bool WG, bool LAG>
static int launch_lin5_keys(const orthros_attn_linear_params *p, const lin_work &w, const lin5_plan &pl, cudaStream_t stream)
{
    static_assert(!WG || (D == 128 && X8), "lin7_out is v7's head-dim-128 output pass");
    using C = lin5_cfg<D>;
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(lin5_state_kernel<D, X8, LAG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)C::SMEM_STATE));
    if constexpr (WG)
        ORTHROS_CUDA_CHECK(
            cudaFuncSetAttribute(lin7_out_kernel<LAG>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L7_SMEM));
    else
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(lin5_out_kernel<D, X8, LAG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)C::SMEM_OUT));
    const lin_args<LAG> a = lin_args_of<LAG>(p);
    lin5_state_kernel<D, X8, LAG><<<dim3(pl.P1, p->Hkv, p->B), L5_WARPS * 32, C::SMEM_STATE, stream>>>(a, w, pl.Lsub, pl.P1);
    ORTHROS_CUDA_LAUNCH_CHECK("lin5_state_kernel");
    dim3 sgrid(ceil_div(p->F * p->d + p->F, 256), p->Hkv, p->B);
    lin_scan_kernel<<<sgrid, 256, 0, stream>>>(lin_args_of<false>(p), w, pl.P1);
    ORTHROS_CUDA_LAUNCH_CHECK("lin_scan_kernel");
    const dim3 ogrid(pl.P3, p->Hkv * ((p->Hq / p->Hkv + 1) / 2), p->B);
    if constexpr (WG) {
        lin7_out_kernel<LAG><<<ogrid, L7_THREADS, L7_SMEM, stream>>>(a, w, pl.Lseg, pl.m, pl.P1);
        ORTHROS_CUDA_LAUNCH_CHECK("lin7_out_kernel");
    } else {
        lin5_out_kernel<D, X8, LAG><<<ogrid, L5_WARPS * 32, C::SMEM_OUT, stream>>>(a, w, pl.Lseg, pl.m, pl.P1);
        ORTHROS_CUDA_LAUNCH_CHECK("lin5_out_kernel");
    }
    return 0;
}

template <int D, bool X8, bool WG = false>
static int launch_lin5(const orthros_attn_linear_params *p, const lin_work &w, const lin5_plan &pl, cudaStream_t stream)
{
    return lin_lags(p) ? launch_lin5_keys<D, X8, WG, true>(p, w, pl, stream)
                             : launch_lin5_keys<D, X8, WG, false>(p, w, pl, stream);
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

/* 0 until the first call or set_version: then the default for this binary and device. */
static int linear_prefill_version = 0;

/* v5's scratch: the P1 segment sums (then prefix states) per (b, kv head). */
static void lin5_work_layout(const orthros_attn_linear_params *p, const lin5_plan &pl, lin_work *w, size_t *total)
{
    const size_t cells = (size_t)p->B * p->Hkv * pl.P1;
    char *base = (char *)p->work;
    const size_t s_bytes = (cells * p->F * p->d * sizeof(float) + 255) / 256 * 256;
    *w = lin_work{NULL, NULL, NULL, (float *)base, (float *)(base + s_bytes)};
    *total = s_bytes + cells * p->F * sizeof(float);
}

size_t orthros_attn_linear_chunked_work_bytes(const orthros_attn_linear_params *p)
{
    lin_work w;
    size_t total;
    if (orthros_attn_linear_prefill_version() >= 5 && lin5_applies(p)) {
        lin5_work_layout(p, lin5_make_plan(p), &w, &total);
        return total;
    }
    work_layout(p, span_len(p), &w, &total);
    return total;
}

int orthros_attn_linear_prefill_default_version(void)
{
    return orthros_cuda_sm90a_available() ? ORTHROS_ATTN_LINEAR_PREFILL_SM90A_DEFAULT
                                                  : ORTHROS_ATTN_LINEAR_PREFILL_PORTABLE_DEFAULT;
}

int orthros_attn_linear_prefill_set_version(int version)
{
    if (version == 0) version = orthros_attn_linear_prefill_default_version();
    if (version < 3 || version > ORTHROS_ATTN_LINEAR_PREFILL_LATEST)
        return orthros_error(ORTHROS_EINVAL, "linear prefill: no kernel version %d (3 .. %d kept)", version,
                             ORTHROS_ATTN_LINEAR_PREFILL_LATEST);
    if (version == 7 && !orthros_cuda_sm90a_available())
        return orthros_error(ORTHROS_EUNSUPPORTED, "linear prefill v7 (wgmma): this binary has no sm_90a code "
                                                   "(configure with -DCMAKE_CUDA_ARCHITECTURES=90a) or the device "
                                                   "is not sm_90");
    linear_prefill_version = version;
    return 0;
}

int orthros_attn_linear_prefill_version(void)
{
    if (!linear_prefill_version) linear_prefill_version = orthros_attn_linear_prefill_default_version();
    return linear_prefill_version;
}

template <bool FUSED, bool LAG> static int set_smem(size_t smem_state, size_t smem_out)
{
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(lin_chunk_state_kernel<FUSED, LAG>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_state));
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(lin_chunk_out_kernel<FUSED, LAG>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)smem_out));
    return 0;
}

/* v3 / v4: per span, featurize (unless FUSED), the chunk states, the scan, the outputs. LAG: a lagging key stream (a
 * local window), through linear_featurize; separate instantiations, so that the code without a window is the code it
 * was. */
template <bool FUSED, bool LAG>
static int launch_chunks(const orthros_attn_linear_params *p, const lin_work &w, int span, cublasHandle_t cublas,
                         cudaStream_t stream)
{
    const size_t smem_state = (size_t)LC * (p->F + SMEM_PAD + p->d + SMEM_PAD) * sizeof(bf16);
    const size_t smem_out = chunk_out_smem(p->F, p->d);
    int rc = set_smem<FUSED, LAG>(smem_state, smem_out);
    if (rc) return rc;
    const lin_args<LAG> a = lin_args_of<LAG>(p);
    for (int i0 = 0; i0 < p->n; i0 += span) {
        int ns = p->n - i0 < span ? p->n - i0 : span, nc = ceil_div(ns, LC);
        if (!FUSED) {
            orthros_linear_featurize_params fp = {w.phi_q, w.phi_k, w.tmp, p->qkv, p->fmap_q, p->fmap_k, p->B, p->n,
                                                  i0, ns, p->Hq, p->Hkv, p->d, p->F, p->fmap, p->keys};
            if ((rc = orthros_linear_featurize_bf16(&fp, cublas, stream))) return rc;
        }
        dim3 grid(nc, p->Hkv, p->B);
        lin_chunk_state_kernel<FUSED, LAG><<<grid, LC_WARPS * 32, smem_state, stream>>>(a, w, i0, ns, nc);
        ORTHROS_CUDA_LAUNCH_CHECK("lin_chunk_state_kernel");
        dim3 sgrid(ceil_div(p->F * p->d + p->F, 256), p->Hkv, p->B);
        lin_scan_kernel<<<sgrid, 256, 0, stream>>>(lin_args_of<false>(p), w, nc);
        ORTHROS_CUDA_LAUNCH_CHECK("lin_scan_kernel");
        lin_chunk_out_kernel<FUSED, LAG><<<grid, LCO_WARPS * 32, smem_out, stream>>>(a, w, i0, ns, nc);
        ORTHROS_CUDA_LAUNCH_CHECK("lin_chunk_out_kernel");
    }
    return 0;
}

int orthros_attn_linear_chunked_bf16(const orthros_attn_linear_params *p, cublasHandle_t cublas, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (!orthros_attn_linear_chunked_supported(p))
        return orthros_error(ORTHROS_EUNSUPPORTED, "chunked linear attention: head_dim %d, features %d", p->d, p->F);
    const int version = orthros_attn_linear_prefill_version();
    lin_work w;
    size_t total;
    if (version >= 5 && lin5_applies(p)) {
        const lin5_plan pl = lin5_make_plan(p);
        lin5_work_layout(p, pl, &w, &total);
        if (p->work_bytes < total)
            return orthros_error(ORTHROS_EINVAL, "linear attention v5: %zu bytes of scratch given, %zu needed",
                                 p->work_bytes, total);
        /* v7: the wgmma output pass at head dim 128 where the binary has sm_90a code for this device; else v6. */
        if (version >= 7 && p->d == 128 && orthros_cuda_sm90a_available())
            return launch_lin5<128, true, true>(p, w, pl, stream);
        if (version >= 6)
            return p->d == 64 ? launch_lin5<64, true>(p, w, pl, stream) : launch_lin5<128, true>(p, w, pl, stream);
        return p->d == 64 ? launch_lin5<64, false>(p, w, pl, stream) : launch_lin5<128, false>(p, w, pl, stream);
    }
    int span = span_len(p);
    work_layout(p, span, &w, &total);
    if (p->work_bytes < total)
        return orthros_error(ORTHROS_EINVAL, "linear attention: %zu bytes of scratch given, %zu needed", p->work_bytes,
                             total);
    /* A lagging key stream (a local window) goes through linear_featurize, which reads it row by row. */
    if (lin_lags(p)) return launch_chunks<false, true>(p, w, span, cublas, stream);
    const bool fused = version >= 4 && p->F == p->d && (p->fmap == ORTHROS_FMAP_ELU1 || p->fmap == ORTHROS_FMAP_RELU);
    return fused ? launch_chunks<true, false>(p, w, span, cublas, stream)
                 : launch_chunks<false, false>(p, w, span, cublas, stream);
}
