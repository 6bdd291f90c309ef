/* Shared by the cuda kernels: the checking macro, bf16 helpers and the warp-level tensor-core primitives
 * (ldmatrix, mma.sync m16n8k16 bf16 -> fp32, cp.async). Included by .cu files only. */
#ifndef ORTHROS_CUDA_COMMON_CUH
#define ORTHROS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "orthros_base.h"
#include "step_stamps.h"

/* Every CUDA runtime call goes through this: on failure it records the call, file and line and returns
 * ORTHROS_EDEVICE from the enclosing function. */
#define ORTHROS_CUDA_CHECK(call)                                                                              \
    do {                                                                                                      \
        cudaError_t err_ = (call);                                                                            \
        if (err_ != cudaSuccess)                                                                              \
            return orthros_error(ORTHROS_EDEVICE, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(err_),   \
                                 __FILE__, __LINE__);                                                         \
    } while (0)

/* The same for cuBLAS and cuBLASLt calls (in files that include cublas_v2.h or cublasLt.h). */
#define CUBLAS_CHECK(call)                                                                                    \
    do {                                                                                                      \
        cublasStatus_t st_ = (call);                                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                                     \
            return orthros_error(ORTHROS_EDEVICE, "%s failed: %s (%s:%d)", #call, cublasGetStatusString(st_), \
                                 __FILE__, __LINE__);                                                         \
    } while (0)

/* The one probe of the sm_90 code a kernel may choose (cuda_common.cu): every kernel is built for the same
 * architectures, so the TMA and wgmma kernels have the code exactly when the probe kernel has. The first call
 * launches a one-thread probe and waits for it; the answer is cached.
 * 1 when this binary has code of compute capability 9.0 or later for the current device and it runs it (TMA,
 * mbarriers: decode v6 / v7), else 0. */
extern "C" int orthros_cuda_sm90_available(void);
/* 1 when there is a current device at all (whatever its compute capability), else 0; from the same probe. */
extern "C" int orthros_cuda_device_present(void);
/* 1 when this binary carries sm_90a code (wgmma: prefill v5-v7, linear prefill v7) and the current device runs it
 * (compute capability 9.0), else 0. */
extern "C" int orthros_cuda_sm90a_available(void);

/* After a launch: a bad configuration shows up here, not at the launch. */
#define ORTHROS_CUDA_LAUNCH_CHECK(name) ORTHROS_CUDA_CHECK(cudaGetLastError())

typedef __nv_bfloat16 bf16;

static __device__ __forceinline__ float bf2f(bf16 x) { return __bfloat162float(x); }
static __device__ __forceinline__ bf16 f2bf(float x) { return __float2bfloat16_rn(x); }

/* Two fp32 values packed as a bf16x2 register, low half first (the mma operand layout). */
static __device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
/* The low and the high bf16 of such a register as fp32 (exact: a shift or a mask, no conversion instruction). */
static __device__ __forceinline__ float bf16x2_lo(uint32_t w) { return __uint_as_float(w << 16); }
static __device__ __forceinline__ float bf16x2_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

/* A float's bits made monotonic as an unsigned (larger wins; NaN lowest, at 0; -0 as +0). */
static __device__ __forceinline__ unsigned ordered_float(float v)
{
    const unsigned u = __float_as_uint(v == 0.0f ? 0.0f : v);
    return isnan(v) ? 0u : (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
/* The inverse of ordered_float for every key but 0 (NaN's). */
static __device__ __forceinline__ float unordered_float(unsigned o)
{
    return __uint_as_float((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);
}
/* The order of cpu_argmax as one 64-bit key, larger wins: the value's ordered bits, then the complement of the
 * index (the lower index wins a tie). Every key of an element is > 0. */
static __device__ __forceinline__ unsigned long long argmax_key(float v, int idx)
{
    return ((unsigned long long)ordered_float(v) << 32) | (unsigned long long)(0xffffffffu - (unsigned)idx);
}

/* RMSNorm's pieces on 8 bf16 (one 16-byte chunk), shared by rmsnorm.cu and the products that norm their input
 * (gemv.cu's staging, the decode attention's q/k/v): the squares added into ss pair by pair, in the fp32 order
 * every one of them uses; the output w * (x * r) rounded to bf16. */
static __device__ __forceinline__ void sumsq_bf16x8(float &ss, uint4 v)
{
    const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; e++) ss += bf16x2_lo(w4[e]) * bf16x2_lo(w4[e]) + bf16x2_hi(w4[e]) * bf16x2_hi(w4[e]);
}
static __device__ __forceinline__ uint4 rms_scale_bf16x8(uint4 x, uint4 w, float r)
{
    uint4 o;
    o.x = pack_bf16x2(bf16x2_lo(w.x) * (bf16x2_lo(x.x) * r), bf16x2_hi(w.x) * (bf16x2_hi(x.x) * r));
    o.y = pack_bf16x2(bf16x2_lo(w.y) * (bf16x2_lo(x.y) * r), bf16x2_hi(w.y) * (bf16x2_hi(x.y) * r));
    o.z = pack_bf16x2(bf16x2_lo(w.z) * (bf16x2_lo(x.z) * r), bf16x2_hi(w.z) * (bf16x2_hi(x.z) * r));
    o.w = pack_bf16x2(bf16x2_lo(w.w) * (bf16x2_lo(x.w) * r), bf16x2_hi(w.w) * (bf16x2_hi(x.w) * r));
    return o;
}

/* RoPE as the cpu reference does it, shared by rope_cache.cu, gemv.cu's ROPE epilogue and the decode attention's
 * q/k/v: the cosine and sine of position pos at one inverse frequency (the angle in fp32, its cosine and sine in
 * double); the pair (a, b) = (x_i, x_{i + d/2}) rotated, each rounded to bf16. */
static __device__ __forceinline__ void rope_cs_of(int pos, float inv_freq, float &cs, float &sn)
{
    const float ang = (float)pos * inv_freq;
    double sd, cd;
    sincos((double)ang, &sd, &cd);
    cs = (float)cd, sn = (float)sd;
}
static __device__ __forceinline__ void rope_rotate(float a, float b, float cs, float sn, bf16 &r1, bf16 &r2)
{
    r1 = f2bf(a * cs - b * sn), r2 = f2bf(b * cs + a * sn);
}

/* A decode step's fresh q/k/v pair i (of half = d/2) from a projection's fp32 sums (x1, x2), written as the attention
 * reads it: a q head (kind 0) rotated into its row; a k head (1) rounded into its row as it is (linear attention
 * reads k unrotated) and rotated into its cache row; a v head (2) rounded into both. row and cache point at the
 * head's d elements (cache unused for q). */
static __device__ __forceinline__ void rope_pair_store(bf16 *row, bf16 *cache, int kind, int i, int half, float x1,
                                                       float x2, float cs, float sn)
{
    if (kind == 2) {
        const bf16 v1 = f2bf(x1), v2 = f2bf(x2);
        row[i] = v1, row[i + half] = v2;
        cache[i] = v1, cache[i + half] = v2;
        return;
    }
    const float a = bf2f(f2bf(x1)), b = bf2f(f2bf(x2));
    bf16 r1, r2;
    rope_rotate(a, b, cs, sn, r1, r2);
    if (kind == 0) {
        row[i] = r1, row[i + half] = r2;
    } else {
        row[i] = f2bf(a), row[i + half] = f2bf(b);
        cache[i] = r1, cache[i + half] = r2;
    }
}

/* The GPU's global clock, ns (%globaltimer): the probes' and the ring chain's stamps. */
static __device__ __forceinline__ unsigned long long globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
    return t;
}

/* A stamped build's clock readings of one launch (step_stamps.h): the block's start when made, waited() after its
 * dependency wait, each warp's end in the destructor. Without ORTHROS_STAMPS, or with a null array, nothing. */
struct step_stamps {
#ifdef ORTHROS_STAMPS
    unsigned long long *row; /* this block's, NULL where it does not record */
    __device__ __forceinline__ step_stamps(unsigned long long *a, int slot)
    {
        const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        row = a && b < ORTHROS_STAMP_BLOCKS
                  ? a + (size_t)slot * ORTHROS_STAMP_SLOT_WORDS + (size_t)b * ORTHROS_STAMP_FIELDS : nullptr;
        if (row && threadIdx.x == 0) row[0] = globaltimer_ns();
    }
    __device__ __forceinline__ void waited()
    {
        if (row && threadIdx.x == 0) row[1] = globaltimer_ns();
    }
    /* phase k (< ORTHROS_STAMP_PHASES) reached, as thread 0 of the block sees it */
    __device__ __forceinline__ void phase(int k)
    {
        if (row && threadIdx.x == 0) row[2 + ORTHROS_STAMP_WARPS + k] = globaltimer_ns();
    }
    __device__ __forceinline__ ~step_stamps()
    {
        if (row && threadIdx.x % 32 == 0 && threadIdx.x / 32 < ORTHROS_STAMP_WARPS)
            row[2 + threadIdx.x / 32] = globaltimer_ns();
    }
#else
    __device__ __forceinline__ step_stamps(unsigned long long *, int) {}
    __device__ __forceinline__ void waited() {}
    __device__ __forceinline__ void phase(int) {}
#endif
};

/* A cluster barrier whose arrival orders nothing (barrier.cluster.arrive.relaxed, then the wait): for a barrier that
 * only keeps a block's shared memory alive until the cluster's other blocks have read it (sm_90). */
static __device__ __forceinline__ void cluster_arrive_relaxed_wait()
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;\n" ::: "memory");
}

/* A load with acquire semantics at GPU scope (past L1): what a grid barrier's waiters poll. */
static __device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Programmatic dependent launch (sm_90): the trigger lets the stream's next kernel launch early, the wait blocks
 * until the kernel before this one has finished and its writes are visible; both are no-ops when the launches were
 * plain ones. */
static __device__ __forceinline__ void pdl_trigger()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/* The flat grid barrier of a cooperative launch (step_probe.cu timed it; gemv.cu's chain runs it): sync[0] counts
 * every arrival of the launch and never resets within it; barrier i (1-based) is passed once it reaches i x gridDim.x.
 * Thread 0 of a block arrives with a release reduction (nothing comes back) and polls with acquire loads: one trip to
 * L2 and the poll, where the textbook barrier makes three in a row. FENCE: a __threadfence before the arrival, for
 * writes the block's other threads made before the block barrier (the chain's products); the probe's blocks write
 * through thread 0 alone. */
template <bool FENCE>
static __device__ __forceinline__ void grid_barrier_flat(unsigned *sync, unsigned target)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        if (FENCE) __threadfence();
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(sync) : "memory");
        while (ld_acquire_gpu(sync) < target) {
        }
    }
    __syncthreads();
}

static __device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16-byte global -> shared copy; src_bytes = 0 fills the destination with zeros (out-of-range rows). */
static __device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
/* The same with a 256-byte L2 prefetch hint: streaming reads of long rows (the decode KV cache) ask DRAM for
 * whole 256-byte sectors groups at once. */
static __device__ __forceinline__ void cp_async16_pf256(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}
/* The weights a later kernel of the decode step reads, asked into L2 ahead of it (ORTHROS_DECODE_L2PF; the fields
 * l2_next* of the gemv and decode-attention parameters): block `part` of `parts` takes its share of [base, base +
 * bytes) in 16-byte-aligned pieces, one cp.async.bulk.prefetch.L2 per lane of warp 0 (sm_90; a hint that changes no
 * result, issued and forgotten; on older devices nothing). policy 1 marks the lines evict_last, 0 evict_normal. */
static __device__ __forceinline__ void l2_prefetch_share(const void *base, size_t bytes, int policy, int part, int parts)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (!base || threadIdx.x >= 32) return;
    const size_t n16 = bytes / 16, lo = n16 * (size_t)part / (size_t)parts, hi = n16 * (size_t)(part + 1) / (size_t)parts;
    const size_t a = lo + (hi - lo) * threadIdx.x / 32, b = lo + (hi - lo) * (threadIdx.x + 1) / 32;
    if (b <= a) return;
    const char *src = (const char *)base + a * 16;
    const uint32_t size = (uint32_t)((b - a) * 16);
    if (policy) {
        uint64_t pol;
        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
        asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;\n" ::"l"(src), "r"(size), "l"(pol)
                     : "memory");
    } else {
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(size) : "memory");
    }
#else
    (void)base, (void)bytes, (void)policy, (void)part, (void)parts;
#endif
}

/* Part `part` of `parts` of base[0 .. bytes) asked into L2 by one bulk prefetch of thread 0 (sm_90; elsewhere
 * nothing): for a range read by a later kernel, a block's share in one request. bytes a multiple of 16. */
static __device__ __forceinline__ void l2_prefetch_part(const void *base, size_t bytes, int part, int parts)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (!base || threadIdx.x) return;
    const size_t n16 = bytes / 16, lo = n16 * (size_t)part / (size_t)parts, hi = n16 * (size_t)(part + 1) / (size_t)parts;
    if (hi > lo)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"((const char *)base + lo * 16),
                     "r"((uint32_t)((hi - lo) * 16))
                     : "memory");
#else
    (void)base, (void)bytes, (void)part, (void)parts;
#endif
}

static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

static __device__ __forceinline__ void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr(p)));
}
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                                         const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr(p)));
}

/* c[4] += a[4] (16x16 row-major) * b[2] (16x8 column-major), bf16 in, fp32 accumulate. */
static __device__ __forceinline__ void mma_bf16_16816(float *c, const uint32_t *a, const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Shared-memory tiles of bf16 rows are padded by 8 elements (16 bytes): the 8 rows one ldmatrix reads then
 * start in 8 different 16-byte bank groups. */
#define SMEM_PAD 8

/* ---- one warp's flash-attention step on an m16 tile of query rows (mma.sync layouts) ----
 * A thread holds, of each n8 tile of S and each n8 column tile of O, the elements [0], [1] of row A = lane / 4
 * and [2], [3] of row B = A + 8, at columns (lane % 4) * 2 and + 1. Shared by the v1 prefill kernel
 * (attn_full_prefill.cu) and the decode split kernel (attn_full_decode.cu). */

/* s[NT][4] += Q K^T: the 16 query rows in fragments qf[KT] against NT * 8 keys, rows of the tile k (row stride
 * LD bf16) in shared memory. */
template <int KT, int NT, int LD>
static __device__ __forceinline__ void warp_qk(float (&s)[NT][4], const uint32_t (&qf)[KT][4], const bf16 *k, int lane)
{
#pragma unroll
    for (int kk = 0; kk < KT; kk++) {
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            uint32_t bb[4];
            ldmatrix_x4(bb[0], bb[1], bb[2], bb[3], k + (nt * 8 + (lane % 8) + (lane / 16) * 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
            mma_bf16_16816(s[nt], qf[kk], bb);
            mma_bf16_16816(s[nt + 1], qf[kk], bb + 2);
        }
    }
}

/* 2^x by ex2.approx.ftz: one MUFU, no range handling (exp2f without -ftz adds a compare and two predicated FMUL
 * for results below 2^-126, which these kernels round to 0 anyway); -inf gives 0. */
static __device__ __forceinline__ float ex2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The online softmax over one tile of scores s (masked keys -inf), given this thread's partial row maxima mxA, mxB
 * over it: the maxima are reduced over the 4 threads of a row, the running max m and sum l move on, the
 * accumulators o are rescaled, and s becomes the tile's probabilities. A row with every key masked so far keeps
 * m = -inf and uses 0 as its reference, so that exp2 gives 0, not NaN.
 * LEAN false (warp_online_softmax): s in log2 units, scaled as formed, p = exp2f(s - m). LEAN true (v8's lean form):
 * s raw dot products, the scale applied here: the row maxima of the raw scores times scale are the maxima of the
 * scaled scores (scale > 0, and rounding keeps order), so m and l are those of the other form over s * scale, and each
 * p = 2^(s scale - m) is one FFMA into ex2.approx.ftz (the other form: an FMUL when the scores are formed, an FADD, and
 * exp2f's range handling). */
template <bool LEAN, int NT, int DT>
static __device__ __forceinline__ void warp_online_softmax_as(float (&s)[NT][4], float (&o)[DT][4], float mxA,
                                                              float mxB, float scale, float &mA, float &mB, float &lA,
                                                              float &lB)
{
    mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 1));
    mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 2));
    mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 1));
    mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 2));
    const float mnA = fmaxf(mA, LEAN ? mxA * scale : mxA), mnB = fmaxf(mB, LEAN ? mxB * scale : mxB);
    const float uA = mnA == -INFINITY ? 0.0f : mnA, uB = mnB == -INFINITY ? 0.0f : mnB;
    auto e2 = [](float x) { return LEAN ? ex2_ftz(x) : exp2f(x); };
    const float fA = e2(mA - uA), fB = e2(mB - uB);
    mA = mnA;
    mB = mnB;
    lA *= fA;
    lB *= fB;
#pragma unroll
    for (int i = 0; i < DT; i++) {
        o[i][0] *= fA;
        o[i][1] *= fA;
        o[i][2] *= fB;
        o[i][3] *= fB;
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const float u = c < 2 ? uA : uB;
            s[nt][c] = e2(LEAN ? fmaf(s[nt][c], scale, -u) : s[nt][c] - u);
        }
        lA += s[nt][0] + s[nt][1];
        lB += s[nt][2] + s[nt][3];
    }
}

template <int NT, int DT>
static __device__ __forceinline__ void warp_online_softmax(float (&s)[NT][4], float (&o)[DT][4], float mxA, float mxB,
                                                           float &mA, float &mB, float &lA, float &lB)
{
    warp_online_softmax_as<false>(s, o, mxA, mxB, 1.0f, mA, mB, lA, lB);
}

/* o[DT][4] += P V: the probabilities s (NT * 8 keys, re-packed as bf16 A fragments, no shared-memory round
 * trip) against the tile's V rows v (row stride LD bf16) in shared memory. */
template <int NT, int DT, int LD>
static __device__ __forceinline__ void warp_pv(float (&o)[DT][4], const float (&s)[NT][4], const bf16 *v, int lane)
{
#pragma unroll
    for (int kk = 0; kk < NT / 2; kk++) {
        uint32_t a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                         pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dt = 0; dt < DT; dt += 2) {
            uint32_t bb[4];
            ldmatrix_x4_trans(bb[0], bb[1], bb[2], bb[3], v + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * LD + dt * 8 + (lane / 16) * 8);
            mma_bf16_16816(o[dt], a, bb);
            mma_bf16_16816(o[dt + 1], a, bb + 2);
        }
    }
}

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

#endif
