/* phi for elu1 and relu is element-wise (F = d). For hedgehog, u = x W runs as cuBLAS strided-batched GEMMs
 * (one batch entry per head, bf16 in, fp32 out), then one warp per (row, head) forms
 * [softmax(u), softmax(-u)] in fp32 and rounds it to bf16. */
#include "linear_featurize.h"

#include <math.h>

#include "cuda_common.cuh"
#include "linear_phi.cuh"

static __global__ void featurize_elementwise_kernel(orthros_linear_featurize_params p)
{
    int r = blockIdx.x, b = r / p.ns, i = r % p.ns, d = p.d;
    int W = (p.Hq + 2 * p.Hkv) * d;
    const bf16 *row = (const bf16 *)p.qkv + ((size_t)b * p.n + p.i0 + i) * W;
    bf16 *pq = (bf16 *)p.phi_q + (size_t)r * p.Hq * d, *pk = (bf16 *)p.phi_k + (size_t)r * p.Hkv * d;
    int total = (p.Hq + p.Hkv) * d;
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
        float x = bf2f(row[e]);
        float f = phi_elementwise(x, p.fmap);
        if (e < p.Hq * d)
            pq[e] = f2bf(f);
        else
            pk[e - p.Hq * d] = f2bf(f);
    }
}

static __global__ void featurize_softmax_kernel(orthros_linear_featurize_params p)
{
    int H = p.Hq + p.Hkv, half = p.F / 2;
    size_t item = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (item >= (size_t)p.B * p.ns * H) return;
    size_t r = item / H;
    int h = (int)(item % H);
    const float *u = p.tmp + item * half;
    bf16 *dst = h < p.Hq ? (bf16 *)p.phi_q + (r * p.Hq + h) * p.F : (bf16 *)p.phi_k + (r * p.Hkv + h - p.Hq) * p.F;
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

size_t orthros_linear_featurize_tmp_bytes(int B, int ns, int Hq, int Hkv, int F, int fmap)
{
    return fmap == ORTHROS_FMAP_HEDGEHOG ? (size_t)B * ns * (Hq + Hkv) * (F / 2) * sizeof(float) : 0;
}

int orthros_linear_featurize_bf16(const orthros_linear_featurize_params *p, cublasHandle_t cublas, cudaStream_t stream)
{
    int rows = p->B * p->ns;
    if (rows <= 0) return 0;
    if (p->fmap != ORTHROS_FMAP_HEDGEHOG) {
        if (p->F != p->d)
            return orthros_error(ORTHROS_EINVAL, "linear attention: feature_dim %d must equal head_dim %d for %s", p->F,
                                 p->d, p->fmap == ORTHROS_FMAP_ELU1 ? "elu1" : "relu");
        featurize_elementwise_kernel<<<rows, 256, 0, stream>>>(*p);
        ORTHROS_CUDA_LAUNCH_CHECK("featurize_elementwise_kernel");
        return 0;
    }
    int half = p->F / 2, H = p->Hq + p->Hkv, d = p->d, W = (p->Hq + 2 * p->Hkv) * d;
    if (half <= 0 || (p->F & 1)) return orthros_error(ORTHROS_EINVAL, "hedgehog: feature size %d must be even", p->F);
    if (!p->fmap_q || !p->fmap_k) return orthros_error(ORTHROS_EINVAL, "hedgehog: feature-map weights missing");
    CUBLAS_CHECK(cublasSetStream(cublas, stream));
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
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, half, cols, d, &one, p->fmap_k,
                                                CUDA_R_16BF, half, (long long)d * half, x + (size_t)p->Hq * d,
                                                CUDA_R_16BF, W, d, &zero, u + (size_t)p->Hq * half, CUDA_R_32F,
                                                H * half, half, p->Hkv, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    size_t items = (size_t)rows * H;
    featurize_softmax_kernel<<<(unsigned)((items + 7) / 8), 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("featurize_softmax_kernel");
    return 0;
}
