/* One block per row. The order matches the cpu backend: larger value wins, NaN loses to everything, and the
 * lowest index wins a tie. */
#include "argmax.h"

#include "cuda_common.cuh"

#define ARGMAX_THREADS 512

static __device__ __forceinline__ bool better(float va, int ia, float vb, int ib)
{
    bool na = isnan(va), nb = isnan(vb);
    if (na != nb) return nb;
    if (!na && va != vb) return va > vb;
    return ia < ib;
}

static __global__ void __launch_bounds__(ARGMAX_THREADS) argmax_kernel(orthros_argmax_params p)
{
    __shared__ float sv[ARGMAX_THREADS / 32];
    __shared__ int si[ARGMAX_THREADS / 32];
    const float *l = p.logits + (size_t)blockIdx.x * p.V;
    float bv = __int_as_float(0x7fc00000);
    int bi = 0x7fffffff;
    for (int j = threadIdx.x; j < p.V; j += blockDim.x) {
        float v = l[j];
        if (better(v, j, bv, bi)) {
            bv = v;
            bi = j;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (better(ov, oi, bv, bi)) {
            bv = ov;
            bi = oi;
        }
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sv[warp] = bv;
        si[warp] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < ARGMAX_THREADS / 32; w++)
            if (better(sv[w], si[w], bv, bi)) {
                bv = sv[w];
                bi = si[w];
            }
        p.ids[blockIdx.x] = bi;
    }
}

int orthros_argmax_f32(const orthros_argmax_params *p, cudaStream_t stream)
{
    if (p->n <= 0) return 0;
    argmax_kernel<<<p->n, ARGMAX_THREADS, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("argmax_kernel");
    return 0;
}
