/* The element-wise feature maps of linear attention (elu1, relu), shared by linear_featurize.cu and the fused
 * loads of attn_linear_prefill.cu, so that both round exactly the same fp32 value to bf16; and the key stream of a
 * call whose state lags a local window (linear_featurize.h, orthros_linear_keys). Included by .cu files only. */
#ifndef ORTHROS_LINEAR_PHI_CUH
#define ORTHROS_LINEAR_PHI_CUH

#include "attn_linear_decode.h"
#include "cuda_common.cuh"
#include "linear_featurize.h"

/* The linear kernels' by-value parameter: orthros_attn_linear_params as the kernels see it, two layouts.
 * nvcc (13.0) addresses a kernel's by-value struct parameter of more than 128 bytes through a generic pointer to the
 * parameter space (mov.b64 %rd, param; ld.param [%rd + off]) instead of direct ld.param, and ptxas then allocates and
 * schedules the whole kernel differently. The window's fields (keys, den) grew orthros_attn_linear_params from 96 to
 * 144 bytes, and with that alone, no line of their code changed, the window-0 linear kernels lost their measured
 * code: lin7_out 255 -> 254 registers and 3672 -> 3880 SASS instructions, lin5_out d 128 209 -> 200 registers (the
 * H200 run of e470e63: v7 d 128 3.107 ms against 2.64-2.67, v6 3.54 against 3.05-3.10). So:
 *   lin_args<false>  the window-0 kernels: exactly the fields of orthros_attn_linear_params before the window, in
 *                    their order (96 bytes), so that those kernels compile to the PTX they had (names aside);
 *   lin_args<true>   the kernels of a lagging key stream: the same fields but the host's scratch, then keys and den
 *                    (128 bytes, at the limit). */
template <bool LAG> struct lin_args;
template <> struct lin_args<false> {
    void *out;
    const void *qkv;
    float *S, *z;
    const void *fmap_q, *fmap_k;
    int B, n, Hq, Hkv, d, F, fmap;
    float eps;
    void *work;        /* unused by the kernels: kept so that the layout is the one they were measured with */
    size_t work_bytes;
};
template <> struct lin_args<true> {
    void *out;
    const void *qkv;
    float *S, *z;
    const void *fmap_q, *fmap_k;
    int B, n, Hq, Hkv, d, F, fmap;
    float eps;
    orthros_linear_keys keys;
    float *den;
};
static_assert(sizeof(lin_args<false>) == 96 && sizeof(lin_args<true>) <= 128,
              "a kernel parameter over 128 bytes is addressed through a pointer (see lin_args)");

/* Whether a call takes the lin_args<true> kernels: a lagging key stream, or a denominator to write (host). */
static inline bool lin_lags(const orthros_attn_linear_params *p) { return p->keys.shift > 0 || p->den; }

/* The kernels' view of the op's parameters (host). */
template <bool LAG> static inline lin_args<LAG> lin_args_of(const orthros_attn_linear_params *p)
{
    lin_args<LAG> a;
    a.out = p->out;
    a.qkv = p->qkv;
    a.S = p->S;
    a.z = p->z;
    a.fmap_q = p->fmap_q;
    a.fmap_k = p->fmap_k;
    a.B = p->B;
    a.n = p->n;
    a.Hq = p->Hq;
    a.Hkv = p->Hkv;
    a.d = p->d;
    a.F = p->F;
    a.fmap = p->fmap;
    a.eps = p->eps;
    if constexpr (LAG) {
        a.keys = p->keys;
        a.den = p->den;
    } else {
        a.work = p->work;
        a.work_bytes = p->work_bytes;
    }
    return a;
}

/* fmap: ORTHROS_FMAP_ELU1 gives elu(x) + 1 (x + 1 above 0, e^x below; NaN stays NaN), anything else relu.
 * Both sides are computed and one selected, no branch; __expf (ex2.approx, ~2 ulp of fp32) rounds to the same
 * bf16 as expf except within ~2^-22 of a rounding boundary. The branch and the accurate expf cost ~30
 * instructions an element, divergent in every warp of mixed signs. */
static __device__ __forceinline__ float phi_elementwise(float x, int fmap)
{
    const float e = __expf(x), p = x + 1.0f;
    return fmap == ORTHROS_FMAP_ELU1 ? (x > 0.0f ? p : e) : fmaxf(x, 0.0f);
}

/* In place over a shared-memory tile of `rows` rows of F bf16 values (row stride ld), by the whole block, rows
 * [max(first, 0), valid): the rows before `first` (keys before position 0 of a lagging key stream) and at or past
 * `valid` are left as they are (zero-filled by the load, so they add nothing). The caller synchronises before and
 * after. */
static __device__ __forceinline__ void phi_tile_inplace(bf16 *tile, int ld, int rows, int valid, int F, int fmap,
                                                        int first = 0)
{
    int n = (valid < rows ? valid : rows) * F;
    for (int e = threadIdx.x + (first > 0 ? first : 0) * F; e < n; e += blockDim.x) {
        bf16 *x = tile + (e / F) * ld + e % F;
        *x = f2bf(phi_elementwise(bf2f(*x), fmap));
    }
}

/* The same over a tile whose row length F is a compile-time multiple of 8 and whose rows start 16-byte aligned:
 * 8 values a step (one 16-byte shared load and store, bf16 <-> fp32 by shifts), no division by a runtime F. */
template <int F>
static __device__ __forceinline__ void phi_tile_inplace_x8(bf16 *tile, int ld, int rows, int valid, int fmap,
                                                           int first = 0)
{
    static_assert(F % 8 == 0, "rows of whole 16-byte vectors");
    constexpr int V = F / 8;
    const int n = (valid < rows ? valid : rows) * V;
    for (int e = threadIdx.x + (first > 0 ? first : 0) * V; e < n; e += blockDim.x) {
        uint4 *x = (uint4 *)(tile + (e / V) * ld + (e % V) * 8);
        uint4 u = *x;
        uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++)
            w[i] = pack_bf16x2(phi_elementwise(bf16x2_lo(w[i]), fmap), phi_elementwise(bf16x2_hi(w[i]), fmap));
        *x = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

/* Key row j (call-relative) of sequence b of the key stream ks: its k (which 0: the keys phi reads) or v (which 1)
 * of kv head kv, or NULL where its position is before 0. qkv [B][n][(Hq + 2 Hkv) d]; pos0b = ks.pos0[b] (read once by
 * the caller; unused with shift 0). */
static __device__ __forceinline__ const bf16 *lin_key_row(const orthros_linear_keys &ks, const void *qkv, int n, int Hq,
                                                          int Hkv, int d, int b, int pos0b, int j, int kv, int which)
{
    const int r = j - ks.shift;
    if (r >= 0)
        return (const bf16 *)qkv + ((size_t)b * n + r) * (size_t)((Hq + 2 * Hkv) * d) + (size_t)(Hq + which * Hkv + kv) * d;
    const int pos = pos0b + r;
    if (pos < 0) return NULL;
    const int cap = which ? ks.v_cap : ks.kf_cap;
    const bf16 *ring = (const bf16 *)(which ? ks.v_ring : ks.kf_ring);
    return ring + (((size_t)b * cap + (size_t)(pos % cap)) * Hkv + kv) * d;
}

/* The position of key row 0 of sequence b's key stream, read once per block (0 reads nothing with shift 0). */
static __device__ __forceinline__ int lin_key_pos0(const orthros_linear_keys &ks, int b)
{
    return ks.shift > 0 ? ks.pos0[b] : 0;
}

/* The first key row of the stream that holds a key: the rows before it are positions before 0. */
static __device__ __forceinline__ int lin_first_key(const orthros_linear_keys &ks, int pos0b)
{
    return ks.shift > pos0b ? ks.shift - pos0b : 0;
}

/* The same through a kernel's lin_args: 0 without a lagging key stream (nothing read). */
template <bool LAG> static __device__ __forceinline__ int lin_pos0(const lin_args<LAG> &p, int b)
{
    if constexpr (LAG) return lin_key_pos0(p.keys, b);
    else return 0;
}
template <bool LAG> static __device__ __forceinline__ int lin_kfirst(const lin_args<LAG> &p, int pos0b)
{
    if constexpr (LAG) return lin_first_key(p.keys, pos0b);
    else return 0;
}

#endif
