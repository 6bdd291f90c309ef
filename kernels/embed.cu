/* x[i] = table[tokens[i]]: one block per row, 16-byte copies when rows are 16-byte aligned. */
#include "embed.h"

#include "cuda_common.cuh"

static __global__ void embed_kernel(orthros_embed_params p)
{
    int i = blockIdx.x;
    const bf16 *src = (const bf16 *)p.table + (size_t)p.tokens[i] * p.D;
    bf16 *dst = (bf16 *)p.x + (size_t)i * p.D;
    if ((p.D & 7) == 0) {
        const uint4 *s4 = (const uint4 *)src;
        uint4 *d4 = (uint4 *)dst;
        for (int j = threadIdx.x; j < p.D / 8; j += blockDim.x) d4[j] = s4[j];
    } else {
        for (int j = threadIdx.x; j < p.D; j += blockDim.x) dst[j] = src[j];
    }
}

int orthros_embed_bf16(const orthros_embed_params *p, cudaStream_t stream)
{
    if (p->n <= 0) return 0;
    embed_kernel<<<p->n, 256, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("embed_kernel");
    return 0;
}
