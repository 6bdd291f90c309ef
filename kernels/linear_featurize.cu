/* phi for elu1 and relu is element-wise (F = d). For hedgehog, u = x W runs as cuBLAS strided-batched GEMMs
 * (one batch entry per head, bf16 in, fp32 out), then one warp per (row, head) forms
 * [softmax(u), softmax(-u)] in fp32 and rounds it to bf16. Keys of a stream that lags a local window (p.keys.shift
 * > 0: rows from qkv and from the rings, not evenly strided) go through featurize_keys_kernel instead: one warp per
 * (row, kv head) forms u = x W in fp32 itself (or the element-wise map), and rows before position 0 get phi = 0. */
#include "linear_featurize.h"

#include <math.h>

#include "cuda_common.cuh"
#include "linear_phi.cuh"

/* LAG: the keys lag a local window and featurize_keys_kernel maps them; the query heads alone here. A separate
 * instantiation, so that the code without a window is the code it was. */
template <bool LAG> static __global__ void featurize_elementwise_kernel(orthros_linear_featurize_params p)
{
    int r = blockIdx.x, b = r / p.ns, i = r % p.ns, d = p.d;
    int W = (p.Hq + 2 * p.Hkv) * d;
    const bf16 *row = (const bf16 *)p.qkv + ((size_t)b * p.n + p.i0 + i) * W;
    bf16 *pq = (bf16 *)p.phi_q + (size_t)r * p.Hq * d, *pk = (bf16 *)p.phi_k + (size_t)r * p.Hkv * d;
    int total = (LAG ? p.Hq : p.Hq + p.Hkv) * d;
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
        float x = bf2f(row[e]);
        float f = phi_elementwise(x, p.fmap);
        if (e < p.Hq * d)
            pq[e] = f2bf(f);
        else
            pk[e - p.Hq * d] = f2bf(f);
    }
}

/* One warp: dst[F] = [softmax(u), softmax(-u)] of u[F/2] (fp32, in global or shared memory), rounded to bf16. */
static __device__ __forceinline__ void hedgehog_softmax_warp(bf16 *dst, const float *u, int half, int lane)
{
    float mx = -INFINITY, mn = INFINITY;
    for (int c = lane; c < half; c += 32) {
        mx = fmaxf(mx, u[c]);
        mn = fminf(mn, u[c]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
    }
    float sp = 0.0f, sn = 0.0f;
    for (int c = lane; c < half; c += 32) {
        sp += expf(u[c] - mx);
        sn += expf(mn - u[c]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        sp += __shfl_xor_sync(0xffffffffu, sp, o);
        sn += __shfl_xor_sync(0xffffffffu, sn, o);
    }
    for (int c = lane; c < half; c += 32) {
        dst[c] = f2bf(expf(u[c] - mx) / sp);
        dst[half + c] = f2bf(expf(mn - u[c]) / sn);
    }
}

/* One warp per (row, kv head) of the key stream: x = the key row (kf ring or qkv), phi(x) into phi_k; zero where the
 * row holds no key. Hedgehog: u[c] = sum_j x[j] W[kv][j][c] in fp32 from bf16, then as featurize_softmax_kernel. */
#define FK_WARPS 8
static __global__ void __launch_bounds__(FK_WARPS * 32) featurize_keys_kernel(orthros_linear_featurize_params p)
{
    extern __shared__ float fk_smem[];  /* [FK_WARPS][d + F/2] */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, d = p.d, F = p.F, half = F / 2;
    const size_t item = (size_t)blockIdx.x * FK_WARPS + warp;
    if (item >= (size_t)p.B * p.ns * p.Hkv) return;
    const int kv = (int)(item % p.Hkv);
    const size_t r = item / p.Hkv;  /* row b * ns + i of phi_k */
    const int b = (int)(r / p.ns), i = (int)(r % p.ns);
    bf16 *dst = (bf16 *)p.phi_k + (r * p.Hkv + kv) * F;
    const bf16 *x = lin_key_row(p.keys, p.qkv, p.n, p.Hq, p.Hkv, d, b, lin_key_pos0(p.keys, b), p.i0 + i, kv, 0);
    if (!x) {
        for (int c = lane; c < F; c += 32) dst[c] = f2bf(0.0f);
        return;
    }
    if (p.fmap != ORTHROS_FMAP_HEDGEHOG) {
        for (int c = lane; c < d; c += 32) dst[c] = f2bf(phi_elementwise(bf2f(x[c]), p.fmap));
        return;
    }
    float *xs = fk_smem + (size_t)warp * (d + half), *u = xs + d;
    for (int j = lane; j < d; j += 32) xs[j] = bf2f(x[j]);
    __syncwarp();
    const bf16 *w = (const bf16 *)p.fmap_k + (size_t)kv * d * half;
    for (int c = lane; c < half; c += 32) {
        float acc = 0.0f;
        for (int j = 0; j < d; j++) acc += xs[j] * bf2f(w[(size_t)j * half + c]);
        u[c] = acc;
    }
    __syncwarp();
    hedgehog_softmax_warp(dst, u, half, lane);
}

/* Items over the heads formed here: all (q then k), or with LAG the query heads alone (featurize_keys_kernel forms the
 * lagging keys'); u is [row][Hq + Hkv][F/2] either way. Separate instantiations, as featurize_elementwise_kernel. */
template <bool LAG> static __global__ void featurize_softmax_kernel(orthros_linear_featurize_params p)
{
    int H = LAG ? p.Hq : p.Hq + p.Hkv, half = p.F / 2;
    size_t item = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (item >= (size_t)p.B * p.ns * H) return;
    size_t r = item / H;
    int h = (int)(item % H);
    const float *u = LAG ? p.tmp + (r * (size_t)(p.Hq + p.Hkv) + h) * half : p.tmp + item * half;
    bf16 *dst = h < p.Hq ? (bf16 *)p.phi_q + (r * p.Hq + h) * p.F : (bf16 *)p.phi_k + (r * p.Hkv + h - p.Hq) * p.F;
    hedgehog_softmax_warp(dst, u, half, lane);
}

size_t orthros_linear_featurize_tmp_bytes(int B, int ns, int Hq, int Hkv, int F, int fmap)
{
    return fmap == ORTHROS_FMAP_HEDGEHOG ? (size_t)B * ns * (Hq + Hkv) * (F / 2) * sizeof(float) : 0;
}

/* phi of the lagging key stream (p->keys.shift > 0). */
static int featurize_keys(const orthros_linear_featurize_params *p, cudaStream_t stream)
{
    const size_t items = (size_t)p->B * p->ns * p->Hkv;
    const size_t smem = (size_t)FK_WARPS * (p->d + p->F / 2) * sizeof(float);
    if (smem > 48 * 1024) {
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(featurize_keys_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)smem));
    }
    featurize_keys_kernel<<<(unsigned)((items + FK_WARPS - 1) / FK_WARPS), FK_WARPS * 32, smem, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("featurize_keys_kernel");
    return 0;
}

int orthros_linear_featurize_bf16(const orthros_linear_featurize_params *p, cublasHandle_t cublas, cudaStream_t stream)
{
    int rows = p->B * p->ns;
    if (rows <= 0) return 0;
    const int lag = p->keys.shift > 0;
    if (lag && (!p->keys.pos0 || !p->keys.kf_ring || !p->keys.v_ring || p->keys.kf_cap <= 0 || p->keys.v_cap <= 0))
        return orthros_error(ORTHROS_EINVAL, "linear attention: a key stream lagging %d positions without its rings",
                             p->keys.shift);
    if (p->fmap != ORTHROS_FMAP_HEDGEHOG) {
        if (p->F != p->d)
            return orthros_error(ORTHROS_EINVAL, "linear attention: feature_dim %d must equal head_dim %d for %s", p->F,
                                 p->d, p->fmap == ORTHROS_FMAP_ELU1 ? "elu1" : "relu");
        if (lag)
            featurize_elementwise_kernel<true><<<rows, 256, 0, stream>>>(*p);
        else
            featurize_elementwise_kernel<false><<<rows, 256, 0, stream>>>(*p);
        ORTHROS_CUDA_LAUNCH_CHECK("featurize_elementwise_kernel");
        return lag ? featurize_keys(p, stream) : 0;
    }
    int half = p->F / 2, H = p->Hq + p->Hkv, d = p->d, W = (p->Hq + 2 * p->Hkv) * d;
    if (half <= 0 || (p->F & 1)) return orthros_error(ORTHROS_EINVAL, "hedgehog: feature size %d must be even", p->F);
    if (!p->fmap_q || !p->fmap_k) return orthros_error(ORTHROS_EINVAL, "hedgehog: feature-map weights missing");
    if ((size_t)FK_WARPS * (d + half) * sizeof(float) > 200 * 1024)
        return orthros_error(ORTHROS_EUNSUPPORTED, "hedgehog: head dim %d with %d features per sign", d, half);
    /* cublasSetStream also resets the handle's workspace to cuBLAS's default pool, dropping the one the backend set
     * with cublasSetWorkspace (which a captured decode step relies on: no workspace allocated inside a capture), so
     * the stream is set only when it differs (the backend's handle is already on its stream). */
    cudaStream_t cur = NULL;
    CUBLAS_CHECK(cublasGetStream(cublas, &cur));
    if (cur != stream) CUBLAS_CHECK(cublasSetStream(cublas, stream));
    const float one = 1.0f, zero = 0.0f;
    /* Column-major view: u_h^T [F/2 x rows] = W_h^T [F/2 x d] . x_h^T [d x rows]; the rows of one call must be
     * evenly strided in qkv, which holds for all B sequences at once only when the span is the whole call. */
    int calls = p->ns == p->n ? 1 : p->B, cols = p->ns == p->n ? rows : p->ns;
    for (int c = 0; c < calls; c++) {
        const bf16 *x = (const bf16 *)p->qkv + ((size_t)c * p->n + p->i0) * W;
        float *u = p->tmp + (size_t)c * p->ns * H * half;
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, half, cols, d, &one, p->fmap_q,
                                                CUDA_R_16BF, half, (long long)d * half, x, CUDA_R_16BF, W, d, &zero,
                                                u, CUDA_R_32F, H * half, half, p->Hq, CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT));
        if (!lag)
            CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, half, cols, d, &one, p->fmap_k,
                                                    CUDA_R_16BF, half, (long long)d * half, x + (size_t)p->Hq * d,
                                                    CUDA_R_16BF, W, d, &zero, u + (size_t)p->Hq * half, CUDA_R_32F,
                                                    H * half, half, p->Hkv, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    /* The softmax kernel indexes u as [row][Hq + Hkv][F/2] whether or not the key part was filled; it forms the query
     * heads only when the keys lag. */
    size_t items = (size_t)rows * (lag ? p->Hq : H);
    if (lag)
        featurize_softmax_kernel<true><<<(unsigned)((items + 7) / 8), 256, 0, stream>>>(*p);
    else
        featurize_softmax_kernel<false><<<(unsigned)((items + 7) / 8), 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("featurize_softmax_kernel");
    return lag ? featurize_keys(p, stream) : 0;
}
