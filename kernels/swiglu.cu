/* out = silu(gate) * up in fp32, rounded once. Grid-stride over all n * F outputs. */
#include "swiglu.h"

#include "cuda_common.cuh"

static __global__ void swiglu_kernel(orthros_swiglu_params p)
{
    size_t total = (size_t)p.n * p.F;
    const bf16 *gu = (const bf16 *)p.gu;
    bf16 *out = (bf16 *)p.out;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / p.F, j = e % p.F;
        float g = bf2f(gu[i * 2 * p.F + j]), u = bf2f(gu[i * 2 * p.F + p.F + j]);
        out[e] = f2bf(g / (1.0f + expf(-g)) * u);
    }
}

int orthros_swiglu_bf16(const orthros_swiglu_params *p, cudaStream_t stream)
{
    size_t total = (size_t)p->n * p->F;
    if (!total) return 0;
    size_t blocks = (total + 255) / 256;
    if (blocks > 65536) blocks = 65536;
    swiglu_kernel<<<(unsigned)blocks, 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("swiglu_kernel");
    return 0;
}
