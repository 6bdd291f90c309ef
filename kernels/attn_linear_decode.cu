/* Linear attention in its recurrent form: for each token in order, S += phi(k) v^T, z += phi(k), then
 * o_h = (phi(q_h)^T S) / (phi(q_h)^T z + eps) for the query heads of the kv head's group.
 *
 * v1: phi comes from linear_featurize into scratch. A block owns 32 columns of S for one (sequence, kv head);
 * lane = column and the 8 warps split the F rows, so every S element is read and written by one thread
 * only (S stays in global memory, where it is touched once per token). Each block runs its own copy of z
 * from a snapshot of the input z taken before the launch (blocks never read what another wrote); block 0
 * writes z back. Decode (n = 1) is one pass over S: bandwidth-bound on F * d * 8 bytes per head.
 * A lagging key stream (a local window, p.keys.shift > 0): phi_k is featurized from it and v read from it, so token i
 * adds the key of position pos0 + i - shift (none before 0); block 0 writes each row's denominator to p.den. */
#include "attn_linear_decode.h"

#include "cuda_common.cuh"
#include "linear_featurize.h"
#include "linear_phi.cuh"

#define LR_WARPS 8
#define LR_HEADS 8

/* LAG: a lagging key stream (its values read through lin_key_row, each row's denominator to p.den); a separate
 * instantiation, so that the code without a window is the code it was (lin_args, linear_phi.cuh). */
template <bool LAG>
static __global__ void __launch_bounds__(LR_WARPS * 32)
    attn_linear_recurrent_kernel(lin_args<LAG> p, const bf16 *phi_q, const bf16 *phi_k, const float *z_in, int i0,
                                 int ns)
{
    extern __shared__ float sm[];
    int F = p.F, d = p.d, g = p.Hq / p.Hkv;
    float *pk = sm;                       // [F]
    float *zr = pk + F;                   // [F]
    float *pq = zr + F;                   // [g][F]
    float *vv = pq + (size_t)g * F;       // [32]
    float *red = vv + 32;                 // [LR_WARPS][LR_HEADS][32]
    float *den = red + LR_WARPS * LR_HEADS * 32; // [LR_HEADS]
    int kv = blockIdx.y, b = blockIdx.z, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int c = blockIdx.x * 32 + lane;
    int W = (p.Hq + 2 * p.Hkv) * d;
    float *S = p.S + ((size_t)b * p.Hkv + kv) * F * d;
    const int pos0b = lin_pos0(p, b);
    for (int f = threadIdx.x; f < F; f += blockDim.x) zr[f] = z_in[((size_t)b * p.Hkv + kv) * F + f];
    for (int i = 0; i < ns; i++) {
        size_t r = (size_t)b * ns + i;
        const bf16 *row = (const bf16 *)p.qkv + ((size_t)b * p.n + i0 + i) * W;
        for (int f = threadIdx.x; f < F; f += blockDim.x) pk[f] = bf2f(phi_k[(r * p.Hkv + kv) * F + f]);
        for (int e = threadIdx.x; e < g * F; e += blockDim.x) pq[e] = bf2f(phi_q[(r * p.Hq + kv * g) * F + e]);
        if (threadIdx.x < 32) {
            int cc = blockIdx.x * 32 + threadIdx.x;
            if constexpr (LAG) {
                const bf16 *v = lin_key_row(p.keys, p.qkv, p.n, p.Hq, p.Hkv, d, b, pos0b, i0 + i, kv, 1);
                vv[threadIdx.x] = cc < d && v ? bf2f(v[cc]) : 0.0f;
            } else {
                vv[threadIdx.x] = cc < d ? bf2f(row[(size_t)(p.Hq + p.Hkv + kv) * d + cc]) : 0.0f;
            }
        }
        __syncthreads();
        for (int f = threadIdx.x; f < F; f += blockDim.x) zr[f] += pk[f];
        if (c < d)
            for (int f = warp; f < F; f += LR_WARPS) S[(size_t)f * d + c] += pk[f] * vv[lane];
        __syncthreads();
        for (int jb = 0; jb < g; jb += LR_HEADS) {
            float part[LR_HEADS];
#pragma unroll
            for (int jj = 0; jj < LR_HEADS; jj++) part[jj] = 0.0f;
            if (c < d)
                for (int f = warp; f < F; f += LR_WARPS) {
                    float s = S[(size_t)f * d + c];
#pragma unroll
                    for (int jj = 0; jj < LR_HEADS; jj++)
                        if (jb + jj < g) part[jj] += pq[(jb + jj) * F + f] * s;
                }
#pragma unroll
            for (int jj = 0; jj < LR_HEADS; jj++) red[(warp * LR_HEADS + jj) * 32 + lane] = part[jj];
            if (jb + warp < g) {
                float ds = 0.0f;
                for (int f = lane; f < F; f += 32) ds += pq[(jb + warp) * F + f] * zr[f];
                for (int o = 16; o > 0; o >>= 1) ds += __shfl_xor_sync(0xffffffffu, ds, o);
                if (lane == 0) den[warp] = ds;
                if constexpr (LAG)
                    if (lane == 0 && p.den && blockIdx.x == 0)
                        p.den[((size_t)b * p.n + i0 + i) * p.Hq + kv * g + jb + warp] = ds;
            }
            __syncthreads();
            int jj = threadIdx.x / 32;
            if (jj < LR_HEADS && jb + jj < g && c < d) {
                float num = 0.0f;
                for (int w = 0; w < LR_WARPS; w++) num += red[(w * LR_HEADS + jj) * 32 + lane];
                bf16 *o = (bf16 *)p.out + (((size_t)b * p.n + i0 + i) * p.Hq + kv * g + jb + jj) * d;
                o[c] = f2bf(num / (den[jj] + p.eps));
            }
            __syncthreads();
        }
    }
    if (blockIdx.x == 0)
        for (int f = threadIdx.x; f < F; f += blockDim.x) p.z[((size_t)b * p.Hkv + kv) * F + f] = zr[f];
}

/* Scratch: phi_q, phi_k, the hedgehog GEMM output and the z snapshot, for up to LR_SPAN rows per sequence. */
#define LR_SPAN 4096

static int span_rows(const orthros_attn_linear_params *p) { return p->n < LR_SPAN ? p->n : LR_SPAN; }

size_t orthros_attn_linear_recurrent_work_bytes(const orthros_attn_linear_params *p)
{
    size_t ns = (size_t)span_rows(p);
    size_t phi = (size_t)p->B * ns * (p->Hq + p->Hkv) * p->F * sizeof(bf16);
    phi = (phi + 255) / 256 * 256;
    size_t zb = ((size_t)p->B * p->Hkv * p->F * sizeof(float) + 255) / 256 * 256;
    return phi + zb + orthros_linear_featurize_tmp_bytes(p->B, (int)ns, p->Hq, p->Hkv, p->F, p->fmap);
}

int orthros_attn_linear_recurrent_bf16(const orthros_attn_linear_params *p, cublasHandle_t cublas, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (p->Hkv <= 0 || p->Hq % p->Hkv)
        return orthros_error(ORTHROS_EINVAL, "linear attention: %d query heads not a multiple of %d kv heads", p->Hq,
                             p->Hkv);
    if (p->work_bytes < orthros_attn_linear_recurrent_work_bytes(p))
        return orthros_error(ORTHROS_EINVAL, "linear attention: scratch too small");
    int g = p->Hq / p->Hkv, ns_max = span_rows(p);
    size_t smem = ((size_t)(2 + g) * p->F + 32 + LR_WARPS * LR_HEADS * 32 + LR_HEADS) * sizeof(float);
    if (smem > 200 * 1024)
        return orthros_error(ORTHROS_EUNSUPPORTED, "linear attention: %d heads x %d features too large", g, p->F);
    const bool lag = lin_lags(p);
    if (lag)
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_linear_recurrent_kernel<true>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    else
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_linear_recurrent_kernel<false>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    size_t phi_q_bytes = (size_t)p->B * ns_max * p->Hq * p->F * sizeof(bf16);
    size_t phi_bytes = ((size_t)p->B * ns_max * (p->Hq + p->Hkv) * p->F * sizeof(bf16) + 255) / 256 * 256;
    char *w = (char *)p->work;
    bf16 *phi_q = (bf16 *)w, *phi_k = (bf16 *)(w + phi_q_bytes);
    float *z_in = (float *)(w + phi_bytes);
    float *tmp = (float *)(w + phi_bytes + ((size_t)p->B * p->Hkv * p->F * sizeof(float) + 255) / 256 * 256);
    for (int i0 = 0; i0 < p->n; i0 += ns_max) {
        int ns = p->n - i0 < ns_max ? p->n - i0 : ns_max;
        orthros_linear_featurize_params fp = {phi_q, phi_k, tmp, p->qkv, p->fmap_q, p->fmap_k, p->B, p->n, i0, ns,
                                              p->Hq, p->Hkv, p->d, p->F, p->fmap, p->keys};
        int rc = orthros_linear_featurize_bf16(&fp, cublas, stream);
        if (rc) return rc;
        ORTHROS_CUDA_CHECK(cudaMemcpyAsync(z_in, p->z, (size_t)p->B * p->Hkv * p->F * sizeof(float),
                                           cudaMemcpyDeviceToDevice, stream));
        dim3 grid(ceil_div(p->d, 32), p->Hkv, p->B);
        if (lag)
            attn_linear_recurrent_kernel<true>
                <<<grid, LR_WARPS * 32, smem, stream>>>(lin_args_of<true>(p), phi_q, phi_k, z_in, i0, ns);
        else
            attn_linear_recurrent_kernel<false>
                <<<grid, LR_WARPS * 32, smem, stream>>>(lin_args_of<false>(p), phi_q, phi_k, z_in, i0, ns);
        ORTHROS_CUDA_LAUNCH_CHECK("attn_linear_recurrent_kernel");
    }
    return 0;
}
