/* out = rmsnorm(x) * w, one block per row, statistics in fp32. With delta, x = resid + delta is rounded to
 * bf16, stored back to resid, and the norm is taken of the stored value (what the next layer will read). */
#include "rmsnorm.h"

#include "cuda_common.cuh"

#define RMS_THREADS 256

static __device__ float block_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float s = 0.0f;
    for (int w = 0; w < (int)(blockDim.x / 32); w++) s += red[w];
    return s;
}

static __global__ void __launch_bounds__(RMS_THREADS) rmsnorm_kernel(orthros_rmsnorm_params p)
{
    __shared__ float red[RMS_THREADS / 32];
    size_t row = (size_t)blockIdx.x * p.D;
    bf16 *x = (bf16 *)p.resid + row;
    const bf16 *dl = p.delta ? (const bf16 *)p.delta + row : NULL;
    const bf16 *w = (const bf16 *)p.w;
    bf16 *out = (bf16 *)p.out + row;
    float ss = 0.0f;
    /* Each thread touches the same elements in both passes, so pass 2 reads its own pass-1 writes. */
    for (int j = threadIdx.x; j < p.D; j += blockDim.x) {
        float v = bf2f(x[j]);
        if (dl) {
            bf16 r = f2bf(v + bf2f(dl[j]));
            x[j] = r;
            v = bf2f(r);
        }
        ss += v * v;
    }
    float r = rsqrtf(block_sum(ss, red) / (float)p.D + p.eps);
    for (int j = threadIdx.x; j < p.D; j += blockDim.x) out[j] = f2bf(bf2f(w[j]) * (bf2f(x[j]) * r));
}

int orthros_rmsnorm_bf16(const orthros_rmsnorm_params *p, cudaStream_t stream)
{
    if (p->n <= 0) return 0;
    rmsnorm_kernel<<<p->n, RMS_THREADS, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("rmsnorm_kernel");
    return 0;
}
