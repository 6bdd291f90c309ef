/* One block per (token, sequence): the cos/sin table of the token's position is formed once in shared
 * memory (angle = (float)pos * inv_freq in fp32, cos and sin in double, as the cpu reference does), then
 * every k head is rotated into the cache, v copied, and the q heads rotated in place when asked. The k in
 * qkv stays un-rotated (linear attention reads it) unless rotate_k (phi after RoPE); a converted model's local
 * window also gets the un-rotated k in its ring (kraw) and every row's q~ beside qkv (q_rot). Each thread reads
 * and writes the same pair (j, j + d/2), so the in-place writes race with nothing. */
#include "rope_cache.h"

#include "cuda_common.cuh"

static __global__ void rope_cache_kernel(orthros_rope_cache_params p)
{
    __shared__ float cs[ORTHROS_ROPE_MAX_HALF], sn[ORTHROS_ROPE_MAX_HALF];
    int i = blockIdx.x, b = blockIdx.y, d = p.d, half = d / 2;
    int pos = p.pos0[b] + i;
    for (int j = threadIdx.x; j < half; j += blockDim.x) {
        rope_cs_of(pos, p.inv_freq[j], cs[j], sn[j]);
    }
    __syncthreads();
    int W = (p.Hq + 2 * p.Hkv) * d;
    bf16 *row = (bf16 *)p.qkv + ((size_t)b * p.n + i) * W;
    bf16 *kc = p.cap > 0 ? (bf16 *)p.k_cache + ((size_t)b * p.cap + (size_t)(pos % p.cap)) * p.Hkv * d : NULL;
    bf16 *vc = p.cap > 0 ? (bf16 *)p.v_cache + ((size_t)b * p.cap + (size_t)(pos % p.cap)) * p.Hkv * d : NULL;
    bf16 *kr = p.kraw ? (bf16 *)p.kraw + ((size_t)b * p.kraw_cap + (size_t)(pos % p.kraw_cap)) * p.Hkv * d : NULL;
    int nk = p.Hkv * half;
    for (int e = threadIdx.x; e < nk; e += blockDim.x) {
        int h = e / half, j = e % half;
        bf16 *k = row + (size_t)(p.Hq + h) * d;
        const bf16 k1 = k[j], k2 = k[j + half];
        bf16 r1, r2;
        rope_rotate(bf2f(k1), bf2f(k2), cs[j], sn[j], r1, r2);
        if (kc) {
            kc[h * d + j] = r1;
            kc[h * d + j + half] = r2;
        }
        if (kr) {
            kr[h * d + j] = k1;
            kr[h * d + j + half] = k2;
        }
        if (p.rotate_k) {
            k[j] = r1;
            k[j + half] = r2;
        }
    }
    const bf16 *v = row + (size_t)(p.Hq + p.Hkv) * d;
    if (vc)
        for (int e = threadIdx.x; e < p.Hkv * d; e += blockDim.x) vc[e] = v[e];
    if (i >= p.rotate_q_from || p.q_rot) {
        int nq = p.Hq * half;
        bf16 *qr = p.q_rot ? (bf16 *)p.q_rot + ((size_t)b * p.n + i) * p.Hq * d : NULL;
        for (int e = threadIdx.x; e < nq; e += blockDim.x) {
            int h = e / half, j = e % half;
            bf16 *q = row + (size_t)h * d;
            bf16 r1, r2;
            rope_rotate(bf2f(q[j]), bf2f(q[j + half]), cs[j], sn[j], r1, r2);
            if (qr) {
                qr[h * d + j] = r1;
                qr[h * d + j + half] = r2;
            }
            if (i >= p.rotate_q_from) {
                q[j] = r1;
                q[j + half] = r2;
            }
        }
    }
}

int orthros_rope_cache_write_bf16(const orthros_rope_cache_params *p, cudaStream_t stream)
{
    if (p->n <= 0 || p->B <= 0) return 0;
    if (p->d / 2 > ORTHROS_ROPE_MAX_HALF || (p->d & 1))
        return orthros_error(ORTHROS_EUNSUPPORTED, "rope: head_dim %d (must be even and at most %d)", p->d,
                             2 * ORTHROS_ROPE_MAX_HALF);
    if ((p->cap > 0 && (!p->k_cache || !p->v_cache)) || (p->kraw && p->kraw_cap <= 0) || p->cap < 0)
        return orthros_error(ORTHROS_EINVAL, "rope: a cache without its buffers (cap %d, raw-key ring %d)", p->cap,
                             p->kraw_cap);
    dim3 grid(p->n, p->B);
    rope_cache_kernel<<<grid, 128, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("rope_cache_kernel");
    return 0;
}
