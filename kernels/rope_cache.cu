/* One block per (token, sequence): the cos/sin table of the token's position is formed once in shared
 * memory (angle = (float)pos * inv_freq in fp32, cos and sin in double, as the cpu reference does), then
 * every k head is rotated into the cache, v copied, and the q heads rotated in place when asked. The k in
 * qkv stays un-rotated: linear attention reads it. */
#include "rope_cache.h"

#include "cuda_common.cuh"

static __global__ void rope_cache_kernel(orthros_rope_cache_params p)
{
    __shared__ float cs[ORTHROS_ROPE_MAX_HALF], sn[ORTHROS_ROPE_MAX_HALF];
    int i = blockIdx.x, b = blockIdx.y, d = p.d, half = d / 2;
    int pos = p.pos0[b] + i;
    for (int j = threadIdx.x; j < half; j += blockDim.x) {
        float ang = (float)pos * p.inv_freq[j];
        double s, c;
        sincos((double)ang, &s, &c);
        cs[j] = (float)c;
        sn[j] = (float)s;
    }
    __syncthreads();
    int W = (p.Hq + 2 * p.Hkv) * d;
    bf16 *row = (bf16 *)p.qkv + ((size_t)b * p.n + i) * W;
    size_t slot = (size_t)b * p.cap + (size_t)(pos % p.cap);
    bf16 *kc = (bf16 *)p.k_cache + slot * p.Hkv * d;
    bf16 *vc = (bf16 *)p.v_cache + slot * p.Hkv * d;
    int nk = p.Hkv * half;
    for (int e = threadIdx.x; e < nk; e += blockDim.x) {
        int h = e / half, j = e % half;
        const bf16 *k = row + (size_t)(p.Hq + h) * d;
        float x1 = bf2f(k[j]), x2 = bf2f(k[j + half]);
        kc[h * d + j] = f2bf(x1 * cs[j] - x2 * sn[j]);
        kc[h * d + j + half] = f2bf(x2 * cs[j] + x1 * sn[j]);
    }
    const bf16 *v = row + (size_t)(p.Hq + p.Hkv) * d;
    for (int e = threadIdx.x; e < p.Hkv * d; e += blockDim.x) vc[e] = v[e];
    if (i >= p.rotate_q_from) {
        int nq = p.Hq * half;
        for (int e = threadIdx.x; e < nq; e += blockDim.x) {
            int h = e / half, j = e % half;
            bf16 *q = row + (size_t)h * d;
            float x1 = bf2f(q[j]), x2 = bf2f(q[j + half]);
            q[j] = f2bf(x1 * cs[j] - x2 * sn[j]);
            q[j + half] = f2bf(x2 * cs[j] + x1 * sn[j]);
        }
    }
}

int orthros_rope_cache_write_bf16(const orthros_rope_cache_params *p, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (p->d / 2 > ORTHROS_ROPE_MAX_HALF || (p->d & 1))
        return orthros_error(ORTHROS_EUNSUPPORTED, "rope: head_dim %d (must be even and at most %d)", p->d,
                             2 * ORTHROS_ROPE_MAX_HALF);
    dim3 grid(p->n, p->B);
    rope_cache_kernel<<<grid, 128, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("rope_cache_kernel");
    return 0;
}
