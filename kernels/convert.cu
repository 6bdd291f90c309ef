/* Grid-stride element-wise kernels. fill_random evaluates the same counter-based uniform as the cpu backend
 * (orthros_uniform from base/orthros_base.h) and rounds once to bf16. */
#include "convert.h"

#include <cuda_fp16.h>

#include "cuda_common.cuh"

static __global__ void convert_kernel(orthros_convert_params p)
{
    bf16 *dst = (bf16 *)p.dst;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (size_t)gridDim.x * blockDim.x) {
        float v = p.src_type == ORTHROS_CONVERT_F32 ? ((const float *)p.src)[i]
                                                    : __half2float(((const __half *)p.src)[i]);
        dst[i] = f2bf(v);
    }
}

static __global__ void fill_kernel(orthros_fill_params p)
{
    bf16 *dst = (bf16 *)p.dst;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (size_t)gridDim.x * blockDim.x) {
        float v = p.random ? (2.0f * orthros_uniform(p.seed, i) - 1.0f) * p.scale : p.value;
        dst[i] = f2bf(v);
    }
}

static unsigned grid_for(size_t n)
{
    size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks > 65536 ? 65536 : blocks);
}

int orthros_convert_to_bf16(const orthros_convert_params *p, cudaStream_t stream)
{
    if (!p->n) return 0;
    convert_kernel<<<grid_for(p->n), 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("convert_kernel");
    return 0;
}

int orthros_fill_bf16(const orthros_fill_params *p, cudaStream_t stream)
{
    if (!p->n) return 0;
    fill_kernel<<<grid_for(p->n), 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("fill_kernel");
    return 0;
}
