/* The element-wise feature maps of linear attention (elu1, relu), shared by linear_featurize.cu and the fused
 * loads of attn_linear_prefill.cu, so that both round exactly the same fp32 value to bf16. Included by .cu
 * files only. */
#ifndef ORTHROS_LINEAR_PHI_CUH
#define ORTHROS_LINEAR_PHI_CUH

#include "cuda_common.cuh"

/* fmap: ORTHROS_FMAP_ELU1 gives elu(x) + 1 (x + 1 above 0, e^x below), anything else relu. */
static __device__ __forceinline__ float phi_elementwise(float x, int fmap)
{
    return fmap == ORTHROS_FMAP_ELU1 ? (x > 0.0f ? x + 1.0f : expf(x)) : fmaxf(x, 0.0f);
}

/* In place over a shared-memory tile of `rows` rows of F bf16 values (row stride ld), by the whole block;
 * rows at or past `valid` are left as they are (zero-filled by the load, so they add nothing). The caller
 * synchronises before and after. */
static __device__ __forceinline__ void phi_tile_inplace(bf16 *tile, int ld, int rows, int valid, int F, int fmap)
{
    int n = (valid < rows ? valid : rows) * F;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        bf16 *x = tile + (e / F) * ld + e % F;
        *x = f2bf(phi_elementwise(bf2f(*x), fmap));
    }
}

#endif
