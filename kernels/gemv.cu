/* Matrix-vector products for batch 1-16 on tensor cores: a warp streams 16 weight rows straight from global memory
 * into mma.sync m16n8k16 A fragments (the rows as M, the batch as N), 16-byte loads only, no shared-memory round
 * trip for the weights. Floor: the weight bytes over the read ceiling (mem_read.cu); at batch 1 the FLOPs are
 * nothing, at 16 they are 16 per weight, which CUDA cores could not issue at the HBM's rate but the tensor cores can.
 *
 * The layout trick: a dot product may sum its k in any order, so within a 64-wide k-block lane (g = lane / 4,
 * c = lane % 4) loads 16 consecutive k (two 16-byte loads) of weight rows g and g + 8 and of input rows g and g + 8,
 * and mma k-step s (of 4) takes words 2s and 2s + 1 of those 8 words as the fragment's k-pairs {2c, 2c + 1} and
 * {2c + 8, 2c + 9}. A and B fragments then pair the same physical k (both are indexed by c and s alone): the product
 * is exact up to the order of the fp32 sums.
 *
 * A block is 8 warps over MT = 16 TM rows: TM row tiles times WS = 8 / TM slices of the block's k-range (a warp
 * takes every WS-th k-block, U at a time: U x 2 KB of loads in flight per warp). When the rows give fewer blocks
 * than two per SM, K is split over KS blocks as well; each writes an fp32 partial and the last of them (a ticket,
 * the threadFenceReduction pattern) adds them in split order and runs the epilogue, so the result does not depend
 * on which block finishes last. With norm_w the block first forms each input row's RMS (fp32, over all of K) and
 * stages its k-range of rmsnorm(x) * norm_w, rounded to bf16 as rmsnorm's out would be, in shared memory.
 *
 * With p.pdl the launch is a programmatic dependent one (sm_90): every block first asks its share of the weights
 * into L2, then waits for the kernel before it (griddepcontrol.wait), so that the weight stream of one product starts
 * under the tail of the previous kernel; every launch, dependent or not, lets the next one start once its blocks are
 * all resident (griddepcontrol.launch_dependents).
 *
 * Versions:
 *   v1  this file (written without a GPU; its predictions are in docs/kernels.md, "Whole-model decode"). H200: 31-90%
 *       of the read ceiling at batch 1, below cuBLAS except on 2048 x 2048 (data/results/h200-2026-12-01-decode-modes).
 *   v1 + pdl (ORTHROS_DECODE_PDL=1): the dependent launch above. H200 (6004111): the whole step slower with it (8B B1
 *       4K 6.27 ms against 5.48), so it stays opt-in.
 *   v2 (ORTHROS_GEMV_VERSION=2: batch 1-4, v1 above; ORTHROS_GEMV_VERSION=1 keeps v1 everywhere): gemv2_kernel
 *       below, CUDA cores, two rows a warp over all of K. H200 (3ba2852, data/results/h200-2026-12-02-gemv-v2):
 *       88-96% of the read ceiling on the 8B gate/up, down and head and the 1B head, 31-74% on the 1B products; the
 *       fused + graphs step 1.063 ms at 1B B1 4K (v1 1.325) and 4.570 ms at 8B B1 4K (v1 5.505).
 *   v3 (the default: batch 1-8, v1 above): v2's kernel with another plan (make_plan2). H200 (2465e2b,
 *       data/results/h200-2026-12-02-decode-v3): the step's products 0.829 ms at 1B B1 (v2 0.877) and 3.953 ms at
 *       8B B1 (v2 4.062, 84% of their floor); the fused + graphs step 1.021 / 1.974 / 4.463 ms at 1B 4K, 1B 128K and
 *       8B 4K (v2 1.078 / 2.014 / 4.546).
 *   v3's early loads at batch 1 (orthros_gemv_set_early, ORTHROS_GEMV_EARLY; 11 the default from 4d4df63, 43 since
 *       83bd9d7): the residual and RoPE's operands loaded while the group's first round is in flight, no L2
 *       hint for the first round. H200 (24b9992, data/results/h200-2026-12-03-gemv-early): the step 0.971 / 1.934 /
 *       4.363 ms at 1B 4K, 1B 128K and 8B 4K against 0.994 / 1.960 / 4.488 for the tree before, in one call; the
 *       same bits. With 32 (a norm's input staged in one trip; 4eb7c85, the same folder): 0.963 / 2.041 / 4.297
 *       against 11's 0.974 / 2.041 / 4.373 in one call; within bf16's rounding of 11.
 *   v4 (ORTHROS_GEMV_VERSION=4: batch 1-4, v3 above): gemv4_kernel below, v3's groups and plan with a round always in
 *       flight a warp. H200 (8d369b3, data/results/h200-2026-12-02-decode-profile): slower, 1.073 / 2.024 / 4.612 ms
 *       against v3's 1.006 / 1.980 / 4.445 in the same run; opt-in.
 *   The MLP epilogue (ORTHROS_GEMV_MLP; the cuda backend's norm_mlp_add with ORTHROS_DECODE_MLP=1): gate/up and down
 *       in one launch, mlp_kernel below. H200 (eeab839 / 6d36f36, data/results/h200-2026-12-02-decode-mlp): slower,
 *       1.058 / 2.105 / 4.959 ms against the two products' 0.986 / 2.035 / 4.470 in the same run; opt-in. Its ring
 *       form (ORTHROS_DECODE_MLP=2, mlp_ring_kernel): with 64-byte bulk copies of W_down's rows (37edfb3) far slower,
 *       1.788 / 2.871 / 10.919 ms (0.996 / 2.052 / 4.463); with a 2-d TMA box a stage (874c65f) 1.032 / 2.024 / 4.819
 *       (0.990 / 1.966 / 4.455), the kernel 34.1 us a layer at 1B against 32.2 for the two products; opt-in.
 *   v5 (ORTHROS_GEMV_VERSION=5: batch 9-16, v3 below; opt-in): gemv5_kernel below, v1's tiles fed through a ring of
 *       cp.async slots a warp, persistent blocks of one an SM (docs/kernels.md, "Version 5 of the GEMV"); with it the
 *       cuda backend runs the fused step up to batch 16. H200 (c5743d6, data/results/h200-2026-12-03-gemv-v5): the
 *       batch-16 step's products 1.486 / 7.311 ms at 1B / 8B against cuBLAS's 0.841 / 4.034; without the per-item
 *       address arithmetic (v5_stream, 2334b6d) 1.474 / 7.231.
 *   v6 (ORTHROS_GEMV_VERSION=6: batch 9-16, v3 below; sm_90; opt-in): gemv6_kernel below, v5's grid and tiles with
 *       the weights asked by the TMA, 32 KB of a row tile's k-blocks a stage, and read with ldmatrix. H200 (02b418e,
 *       data/results/h200-2026-12-03-gemv-v6): the products 1.279 / 7.162 ms (cuBLAS 0.822 / 4.044), the fused
 *       step at batch 16 1.902 / 9.221 ms at 1B / 8B 4K against the default's 1.731 / 6.907.
 */
#include "gemv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"
#include "ring.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

#define GEMV_WARPS 8
#define GEMV_THREADS (GEMV_WARPS * 32)
#define GEMV_TICKETS 4096                      /* blocks of rows that a split-K call may have */
#define GEMV_PARTIALS_OFFSET ((size_t)32 << 10)
#define GEMV_PARTIAL_BYTES ((size_t)8 << 20)   /* the split-K partials of one call */
#define GEMV_XS_MAX_BYTES (96 * 1024)          /* the staged input rows of one block */
#define GEMV_MAX_TILE_ROWS 128
#define GEMV_PDL_PREFETCH 32                   /* k-blocks a warp asks into L2 before a dependent launch waits */
#define GEMV_CHAIN_SYNC_OFFSET ((size_t)24 << 10) /* the chain kernel's barrier: arrivals, departures */
#define GEMV5_SMEM_MAX (200 * 1024)            /* v5: the staged input and the rings of one block */

/* The scratch: tickets [GEMV_TICKETS] at 0, argmax keys [16] at 16 KB, the argmax block counter after them, the
 * chain kernel's barrier (two words) at 24 KB, the MLP kernel's ticket and flag word at 24 KB + 64, the partials from
 * 32 KB, then the MLP kernel's accumulator and flags (GEMV_MLP_ACC_OFFSET, below). */
struct gemv_scratch {
    unsigned *tickets;
    unsigned long long *keys;
    unsigned *done;
    float *partials;
};

static __device__ __forceinline__ gemv_scratch scratch_of(void *base)
{
    char *b = (char *)base;
    gemv_scratch s;
    s.tickets = (unsigned *)b;
    s.keys = (unsigned long long *)(b + (GEMV_TICKETS * sizeof(unsigned)));
    s.done = (unsigned *)(b + (GEMV_TICKETS * sizeof(unsigned)) + ORTHROS_GEMV_MAX_ROWS * sizeof(unsigned long long));
    s.partials = (float *)(b + GEMV_PARTIALS_OFFSET);
    return s;
}

/* The launch plan: rows per block MT = 16 TM, WS k-slices of warps, nblk blocks of rows, KS splits of K of kbs
 * 64-wide k-blocks each; xs the bytes of one staged input row (0: the input is read from global memory). */
struct gemv_plan {
    int TM, WS, MT, nblk, KS, kbs, xs;
    size_t smem;
    int bps, rs; /* v5: blocks a split, ring slots a warp (v6: the ring's stages) */
    int kst;     /* v6: k-blocks a stage */
    int form;    /* v6: GEMV6_TMA (a stage as a TMA box, read by ldmatrix), GEMV6_BULK (a 1-d bulk copy a row,
                  * ORTHROS_GEMV6_BULK) or GEMV6_WGMMA (TMA boxes read by wgmma, ORTHROS_GEMV6_WGMMA) */
};

/* The weight rows of a block: tile row i is row m0 + i, or for SWIGLU gate row m0 + i (i < MT / 2) and up row
 * F + m0 + i - MT / 2 (the output column m0 + i pairs them). */
struct gemv_rows {
    int m0, M, F, half, swiglu;
    __device__ __forceinline__ int row(int i, bool &ok) const
    {
        if (swiglu) {
            const int j = m0 + (i < half ? i : i - half);
            ok = j < F;
            return i < half ? j : F + j;
        }
        ok = m0 + i < M;
        return m0 + i;
    }
};

/* The rows of row tile bx of a call planned with pl (v1, v5, v6). */
static __device__ __forceinline__ gemv_rows tile_rows(const orthros_gemv_params &p, const gemv_plan &pl, int bx)
{
    gemv_rows R;
    R.swiglu = p.epilogue == ORTHROS_GEMV_SWIGLU, R.M = p.M, R.F = p.M / 2, R.half = pl.MT / 2;
    R.m0 = R.swiglu ? bx * (pl.MT / 2) : bx * pl.MT;
    return R;
}

static __device__ __forceinline__ uint4 zero4() { return make_uint4(0u, 0u, 0u, 0u); }

/* 16-byte loads, zero where pred is false. asm volatile keeps them in program order with the mma (also asm
 * volatile): a k-block group's loads are all issued before its first mma, where the compiler would otherwise sink
 * each load to its use and keep two or three in flight. Weights stream past L1 (read once); inputs stay in L1 for
 * the block's other warps. */
static __device__ __forceinline__ uint4 ld_weights(const void *p, bool pred)
{
    uint4 v;
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\t"
                 "mov.b32 %3, 0;\n\t@q ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "r"((int)pred));
    return v;
}
static __device__ __forceinline__ uint4 ld_input(const void *p, bool pred)
{
    uint4 v;
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\t"
                 "mov.b32 %3, 0;\n\t@q ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "r"((int)pred));
    return v;
}
static __device__ __forceinline__ uint4 lds_input(const void *p, bool pred)
{
    uint4 v;
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\t"
                 "mov.b32 %3, 0;\n\t@q ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(smem_addr(p)), "r"((int)pred));
    return v;
}

/* Word i (0-7) of the 16 bf16 a lane holds for one row of a k-block: lo then hi (i is a constant after unrolling). */
static __device__ __forceinline__ uint32_t word(const uint4 &lo, const uint4 &hi, int i)
{
    const uint4 &v = i < 4 ? lo : hi;
    switch (i & 3) {
    case 0: return v.x;
    case 1: return v.y;
    case 2: return v.z;
    default: return v.w;
    }
}


/* The epilogues of one output element, shared by both kernels. */

/* ADD's value: the residual's old value plus the product rounded to bf16, rounded again. */
static __device__ __forceinline__ bf16 add_resid(float old, float v) { return f2bf(old + bf2f(f2bf(v))); }

/* STORE, STORE_F32, ADD: output m of input row j. */
static __device__ __forceinline__ void epi_store(const orthros_gemv_params &p, int j, int m, float v)
{
    const size_t o = (size_t)j * p.M + m;
    if (p.epilogue == ORTHROS_GEMV_STORE_F32) {
        ((float *)p.out)[o] = v;
    } else if (p.epilogue == ORTHROS_GEMV_ADD) {
        /* the residual through L2 alone (__ldcg): in the chain kernel an earlier op of the launch wrote it on other
         * SMs */
        bf16 *r = (bf16 *)p.out + o;
        *r = add_resid(bf2f(__ldcg(r)), v);
    } else {
        ((bf16 *)p.out)[o] = f2bf(v);
    }
}

/* silu(g) u of a gate and an up product, each rounded to bf16 first (expf: swiglu.cu's scalar kernel's form), before
 * the caller's rounding. */
static __device__ __forceinline__ float swiglu_of(float g, float u)
{
    const float gt = bf2f(f2bf(g)), up = bf2f(f2bf(u));
    return gt / (1.0f + expf(-gt)) * up;
}

/* SWIGLU: output f (of F = M / 2) of input row j from its gate and up products. */
static __device__ __forceinline__ void epi_swiglu(const orthros_gemv_params &p, int j, int f, float g, float u)
{
    ((bf16 *)p.out)[(size_t)j * (p.M / 2) + f] = f2bf(swiglu_of(g, u));
}

/* RoPE's cosine and sine of pair i at position pos: the angle in fp32, its cosine and sine in double, as
 * rope_cache.cu and the cpu reference. */
static __device__ __forceinline__ void rope_cs(const orthros_gemv_params &p, int pos, int i, float &cs, float &sn)
{
    rope_cs_of(pos, p.inv_freq[i], cs, sn);
}

/* ROPE with the position and, for q and k heads, the pair's cosine and sine given (rope_cs): the pair (i, i + d / 2)
 * of head h (of [q: Hq | k: Hkv | v: Hkv]) of input row j. */
static __device__ __forceinline__ void epi_rope_cs(const orthros_gemv_params &p, int j, int h, int i, float x1,
                                                   float x2, int pos, float cs, float sn)
{
    const int d = p.d;
    const size_t slot = ((size_t)j * p.cap + (size_t)(pos % p.cap)) * p.Hkv;
    const int kind = h < p.Hq ? 0 : h < p.Hq + p.Hkv ? 1 : 2;
    bf16 *cache = kind == 0 ? nullptr
                  : (bf16 *)(kind == 1 ? p.k_cache : p.v_cache) + (slot + (size_t)(h - p.Hq - (kind - 1) * p.Hkv)) * d;
    rope_pair_store((bf16 *)p.out + (size_t)j * p.M + (size_t)h * d, cache, kind, i, d / 2, x1, x2, cs, sn);
}

/* ROPE: the pair (i, i + d / 2) of head h of input row j, its position read from p.pos. */
static __device__ __forceinline__ void epi_rope(const orthros_gemv_params &p, int j, int h, int i, float x1, float x2)
{
    const int pos = p.pos[j];
    float cs = 1.0f, sn = 0.0f;
    if (h < p.Hq + p.Hkv) rope_cs(p, pos, i, cs, sn);
    epi_rope_cs(p, j, h, i, x1, x2, pos, cs, sn);
}

/* ARGMAX, once per block after its keys are in: the last block to finish turns the keys into ids and zeroes them
 * (and the counter) for the next call. */
static __device__ __forceinline__ void argmax_finish(const orthros_gemv_params &p, const gemv_scratch &S, int *last)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) *last = atomicAdd(S.done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (*last) {
        __threadfence();
        if ((int)threadIdx.x < p.n) {
            const unsigned long long k = atomicExch(S.keys + threadIdx.x, 0ull);
            p.ids[threadIdx.x] = (int32_t)(0xffffffffu - (unsigned)(k & 0xffffffffull));
        }
        if (threadIdx.x == 0) *S.done = 0u;
    }
}

/* The block's input in shared memory (rows [0, n), `chunks` 16-byte chunks of each from k_base, row j at byte j *
 * stride; past K zeros), as rmsnorm(x) * norm_w rounded to bf16 when norm_w is given: rs[j] = 1 / sqrt(mean(x_j^2) +
 * eps) over all of K, as rmsnorm.cu forms it (fp32 squares of bf16), then out = w * (x * r) rounded once, as
 * rmsnorm_x8_kernel writes it. Every thread of the block calls it; it ends with a barrier. x is read through the
 * read-only path (__ldg), or with CHAIN through L2 alone (__ldcg): in the chain kernel, where x was written by an
 * earlier op of the same launch, on other SMs (the read-only path may hold stale lines); there the loads of a pass
 * are also issued SB at a time before any is used (the chain stages rows of up to 16K, 2 to 7 chunks a thread, which
 * one at a time would be as many trips to L2 in a row); SBT > 0 sets that count (v5: 8, its 16 rows of up to 8 KB
 * staged once a block). The values are the same either way. SW: the layout wgmma reads as B (v6 on wgmma), each
 * 64-wide k-block 2 KB of 16 rows, 128-byte swizzled, instead of row j at j * stride. */
template <bool CHAIN = false, int BAR = 0, int SBT = 0, bool SW = false>
static __device__ __forceinline__ void stage_input(const orthros_gemv_params &p, unsigned char *smem_x, int stride,
                                                   float *rs, int k_base, int chunks)
{
    /* BAR: 0 the block barrier; else named barrier BAR over the first GEMV_THREADS threads (a block with warps of other
     * work: the MLP ring kernel's producer) */
#define STAGE_SYNC()                                                                                                  \
    do {                                                                                                               \
        if constexpr (BAR != 0) asm volatile("bar.sync %0, %1;\n" ::"n"(BAR), "n"(GEMV_THREADS) : "memory");          \
        else __syncthreads();                                                                                          \
    } while (0)
    constexpr int SB = SBT ? SBT : CHAIN ? 4 : 1;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, n = p.n, K = p.K;
    const bf16 *X = (const bf16 *)p.x;
    if (p.norm_w) {
        for (int j = warp; j < n; j += GEMV_WARPS) {
            const uint4 *xr = (const uint4 *)(X + (size_t)j * K);
            float ss = 0.0f;
            for (int q0 = lane; q0 < K / 8; q0 += 32 * SB) {
                uint4 vs[SB];
#pragma unroll
                for (int u = 0; u < SB; u++) {
                    const int q = q0 + u * 32;
                    vs[u] = q < K / 8 ? (CHAIN ? __ldcg(xr + q) : __ldg(xr + q)) : zero4();
                }
#pragma unroll
                for (int u = 0; u < SB; u++) sumsq_bf16x8(ss, vs[u]);
            }
            for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
            if (lane == 0) rs[j] = rsqrtf(ss / (float)K + p.eps);
        }
        STAGE_SYNC();
    }
    for (int e0 = tid; e0 < n * chunks; e0 += SB * GEMV_THREADS) {
        uint4 vs[SB], gs[SB];
#pragma unroll
        for (int u = 0; u < SB; u++) {
            const int e = e0 + u * GEMV_THREADS, k = k_base + (e % chunks) * 8;
            const bool in = e < n * chunks && k < K;
            const bf16 *xp = X + (size_t)(e / chunks) * K + k;
            vs[u] = in ? (CHAIN ? __ldcg((const uint4 *)xp) : __ldg((const uint4 *)xp)) : zero4();
            gs[u] = in && p.norm_w ? __ldg((const uint4 *)((const bf16 *)p.norm_w + k)) : zero4();
        }
#pragma unroll
        for (int u = 0; u < SB; u++) {
            const int e = e0 + u * GEMV_THREADS, j = e / chunks, q = e % chunks, k = k_base + q * 8;
            if (e >= n * chunks) break;
            uint4 v = vs[u];
            if (p.norm_w && k < K) {
                v = rms_scale_bf16x8(v, gs[u], rs[j]);
            }
            const size_t at = SW ? (size_t)(q / 8) * 2048 + swz128(j, q % 8) : (size_t)j * stride + (size_t)q * 16;
            *(uint4 *)(smem_x + at) = v;
        }
    }
    STAGE_SYNC();
#undef STAGE_SYNC
}

/* One input row in shared memory in one trip (the ring chain's form 1, and v3 at batch 1 with orthros_gemv_set_early's
 * 32), by the first GEMV_THREADS threads (named barrier 1 among them): x through L2 (in the ring chain an earlier
 * product of the launch wrote it on other SMs), the loads of a pass issued before any is used; with a norm (K at most
 * 4 x 8 x GEMV_THREADS, so one pass) x and norm_w stay in registers while the block's sum of squares forms (every
 * thread's part, then the warps' in order: another order of the fp32 sums than stage_input's one warp a row), one trip
 * to L2 where stage_input makes two (the squares, then the values). The same rounding as stage_input's. red: the
 * block's GEMV_WARPS partial sums. */
static __device__ __forceinline__ void rc_stage(const orthros_gemv_params &p, unsigned char *xs, float *red)
{
    const int tid = threadIdx.x, C = p.K / 8;
    const uint4 *X = (const uint4 *)p.x;
    if (!p.norm_w) {
        for (int e0 = tid; e0 < C; e0 += 4 * GEMV_THREADS) {
            uint4 v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = e0 + u * GEMV_THREADS < C ? __ldcg(X + e0 + u * GEMV_THREADS) : zero4();
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (e0 + u * GEMV_THREADS < C) ((uint4 *)xs)[e0 + u * GEMV_THREADS] = v[u];
        }
        bar_sync(1, GEMV_THREADS);
        return;
    }
    uint4 v[4], g[4];
    float ss = 0.0f;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int e = tid + u * GEMV_THREADS;
        v[u] = e < C ? __ldcg(X + e) : zero4();
        g[u] = e < C ? __ldg((const uint4 *)p.norm_w + e) : zero4();
    }
#pragma unroll
    for (int u = 0; u < 4; u++) sumsq_bf16x8(ss, v[u]);
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (tid % 32 == 0) red[tid / 32] = ss;
    bar_sync(1, GEMV_THREADS);
    float tot = 0.0f;
#pragma unroll
    for (int w = 0; w < GEMV_WARPS; w++) tot += red[w];
    const float r = rsqrtf(tot / (float)p.K + p.eps);
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int e = tid + u * GEMV_THREADS;
        if (e >= C) break;
        ((uint4 *)xs)[e] = rms_scale_bf16x8(v[u], g[u], r);
    }
    bar_sync(1, GEMV_THREADS);
}

/* One k-block of a warp's 16 rows (v1 and v5): the 4 mma k-steps of the lane's weight pieces w (rows A and B, lo and
 * hi: v1's layout note, top of the file) against its input pieces x of each n-tile. */
template <int NT>
static __device__ __forceinline__ void kblock_mma(float (&acc)[NT][4], const uint4 (&w)[4], const uint4 (&x)[NT][2])
{
#pragma unroll
    for (int s = 0; s < 4; s++) {
        const uint32_t a[4] = {word(w[0], w[1], 2 * s), word(w[2], w[3], 2 * s), word(w[0], w[1], 2 * s + 1),
                               word(w[2], w[3], 2 * s + 1)};
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint32_t b[2] = {word(x[nt][0], x[nt][1], 2 * s), word(x[nt][0], x[nt][1], 2 * s + 1)};
            mma_bf16_16816(acc[nt], a, b);
        }
    }
}

/* A warp's C fragment into red[warp] (v1 and v5): rows g and g + 8 of the tile, input rows nt * 8 + 2c and + 1. */
template <int NT>
static __device__ __forceinline__ void store_fragment(float (*red)[16][17], const float (&acc)[NT][4])
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        red[warp][g][nt * 8 + 2 * c] = acc[nt][0];
        red[warp][g][nt * 8 + 2 * c + 1] = acc[nt][1];
        red[warp][g + 8][nt * 8 + 2 * c] = acc[nt][2];
        red[warp][g + 8][nt * 8 + 2 * c + 1] = acc[nt][3];
    }
}

/* The end of a row tile (v1 and v5): the warps' sums in red (warp w's fragment rows, written before the call) added
 * over the k-slices in order into tile, split K's partial and ticket (false: another split of the tile is still to
 * come, nothing written), then the epilogue of the tile's rows. ARGMAX: the tile's best keys; argmax_finish once the
 * block has no more tiles (finish_argmax). Every thread of the block calls it; it starts with a block barrier. */
template <int NT>
static __device__ bool tile_finish(const orthros_gemv_params &p, const gemv_plan &pl, const gemv_rows &R, int bx,
                                   int ks, float (*red)[16][17], float *tile, int &last, bool finish_argmax)
{
    constexpr int COLS = NT * 8;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, n = p.n;
    __syncthreads();
    /* The block's sums: tile row i, input row j, over the k-slices in order. */
    for (int e = tid; e < pl.MT * COLS; e += GEMV_THREADS) {
        const int i = e / COLS, j = e % COLS, tt = i / 16, ii = i % 16;
        float v = 0.0f;
        for (int q = 0; q < pl.WS; q++) v += red[q * pl.TM + tt][ii][j];
        tile[i * 17 + j] = v;
    }
    const gemv_scratch S = scratch_of(p.scratch);
    if (pl.KS > 1) {
        /* Split K: the partial out, a ticket; the last block of the row block adds the partials in split order. */
        float *part = S.partials + ((size_t)bx * pl.KS + ks) * (size_t)(pl.MT * COLS);
        __syncthreads();
        for (int e = tid; e < pl.MT * COLS; e += GEMV_THREADS) part[e] = tile[(e / COLS) * 17 + e % COLS];
        __threadfence();
        __syncthreads();
        if (tid == 0) last = atomicAdd(S.tickets + bx, 1u) == (unsigned)(pl.KS - 1);
        __syncthreads();
        if (!last) return false;
        __threadfence();
        for (int e = tid; e < pl.MT * COLS; e += GEMV_THREADS) {
            float v = 0.0f;
            for (int q = 0; q < pl.KS; q++)
                v += __ldcg(S.partials + ((size_t)bx * pl.KS + q) * (size_t)(pl.MT * COLS) + e);
            tile[(e / COLS) * 17 + e % COLS] = v;
        }
        if (tid == 0) S.tickets[bx] = 0u; /* the next call starts after this one ends (stream order) */
    }
    __syncthreads();

    /* ---- epilogues ---- */
    switch (p.epilogue) {
    case ORTHROS_GEMV_SWIGLU: {
        const int h = pl.MT / 2, F = p.M / 2;
        for (int e = tid; e < n * h; e += GEMV_THREADS) {
            const int j = e / h, i = e % h, f = R.m0 + i;
            if (f < F) epi_swiglu(p, j, f, tile[i * 17 + j], tile[(i + h) * 17 + j]);
        }
        break;
    }
    case ORTHROS_GEMV_ROPE: {
        /* Block bx is head bx of [q: Hq | k: Hkv | v: Hkv]; its tile is the head's d rows. */
        const int half = p.d / 2;
        for (int e = tid; e < n * half; e += GEMV_THREADS) {
            const int j = e / half, i = e % half;
            epi_rope(p, j, bx, i, tile[i * 17 + j], tile[(i + half) * 17 + j]);
        }
        break;
    }
    case ORTHROS_GEMV_ARGMAX: {
        /* Warp w takes input rows w, w + 8: the block's best key by a warp maximum, one atomic per row and block;
         * the last block to finish turns the keys into ids and zeroes them for the next call. */
        for (int j = warp; j < n; j += GEMV_WARPS) {
            unsigned long long best = 0ull;
            for (int i = lane; i < pl.MT; i += 32) {
                bool ok;
                const int m = R.row(i, ok);
                if (!ok) continue;
                const float v = tile[i * 17 + j];
                if (p.out) ((float *)p.out)[(size_t)j * p.M + m] = v;
                const unsigned long long k = argmax_key(v, m);
                best = k > best ? k : best;
            }
            for (int o = 16; o > 0; o >>= 1) {
                const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, o);
                best = other > best ? other : best;
            }
            if (lane == 0 && best) atomicMax(S.keys + j, best);
        }
        if (finish_argmax) argmax_finish(p, S, &last);
        break;
    }
    default: {
        for (int e = tid; e < n * pl.MT; e += GEMV_THREADS) {
            const int j = e / pl.MT, i = e % pl.MT;
            bool ok;
            const int m = R.row(i, ok);
            if (ok) epi_store(p, j, m, tile[i * 17 + j]);
        }
        break;
    }
    }
    return true;
}

/* NT n-tiles of 8 input rows (1: n <= 8, 2: n <= 16); XS: the input (normed) staged in shared memory. */
template <int NT, bool XS>
static __global__ void __launch_bounds__(GEMV_THREADS, 2) gemv_kernel(const orthros_gemv_params p, const gemv_plan pl)
{
    constexpr int U = NT == 1 ? 4 : 2;
    extern __shared__ __align__(16) unsigned char smem_x[]; /* XS: [n][pl.xs bytes] */
    __shared__ float red[GEMV_WARPS][16][17];
    __shared__ float tile[GEMV_MAX_TILE_ROWS * 17];         /* [MT][17]: the block's sums, column j = input row j */
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4;
    const int bx = blockIdx.x, ks = blockIdx.y, n = p.n, K = p.K;
    const int nkb = (K + 63) / 64, kb_lo = ks * pl.kbs, kb_hi = min(nkb, kb_lo + pl.kbs);
    const gemv_rows R = tile_rows(p, pl, bx);
    const bf16 *X = (const bf16 *)p.x, *Wt = (const bf16 *)p.W;
    const int t = warp % pl.TM, sl = warp / pl.TM, active = warp < pl.TM * pl.WS;
    bool okA = false, okB = false;
    const int rA = R.row(t * 16 + g, okA), rB = R.row(t * 16 + g + 8, okB);
    const bf16 *wA = Wt + (size_t)(okA ? rA : 0) * K, *wB = Wt + (size_t)(okB ? rB : 0) * K;

    /* The next kernel of the stream may launch once every block of this one is resident (a no-op unless it was
     * launched as a programmatic dependent). */
    pdl_trigger();
    l2_prefetch_share(p.l2_next, p.l2_next_bytes, p.l2_policy, bx + gridDim.x * ks, gridDim.x * gridDim.y);
    /* Weights never depend on an earlier kernel: a dependent launch (p.pdl) asks the warp's whole share of them into
     * L2 (up to GEMV_PDL_PREFETCH k-blocks) before it waits for the kernel before it; without one, the first U
     * k-blocks are asked while the input is normed and staged (XS). */
    const int pf = p.pdl == 1 || p.pdl == 2 ? GEMV_PDL_PREFETCH : XS ? U : 0;
    if (active)
        for (int u = 0; u < pf && kb_lo + sl + u * pl.WS < kb_hi; u++) {
            const int k0 = (kb_lo + sl + u * pl.WS) * 64 + c * 16;
            if (k0 < K) {
                if (okA) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(wA + k0));
                if (okB) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(wB + k0));
            }
        }
    /* Nothing an earlier kernel writes (the input, the positions, the caches, the scratch, the output) is read or
     * written above this line. */
    pdl_wait();

    if constexpr (XS) stage_input(p, smem_x, pl.xs, rs, kb_lo * 64, pl.kbs * 8);

    /* ---- the stream: warp (t, sl) takes k-blocks kb_lo + sl, + WS, ... of tile t's 16 rows ---- */
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
    if (active) {
        const int WS = pl.WS;
        for (int kb0 = kb_lo + sl; kb0 < kb_hi; kb0 += WS * U) {
            uint4 wv[U][4], xv[U][NT][2];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kb = kb0 + u * WS, k0 = kb * 64 + c * 16;
                const bool in = kb < kb_hi, lo = in && k0 < K, hi = in && k0 + 8 < K;
                wv[u][0] = ld_weights(wA + k0, okA && lo);
                wv[u][1] = ld_weights(wA + k0 + 8, okA && hi);
                wv[u][2] = ld_weights(wB + k0, okB && lo);
                wv[u][3] = ld_weights(wB + k0 + 8, okB && hi);
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    const int j = g + nt * 8;
                    if constexpr (XS) {
                        const unsigned char *xs = smem_x + (size_t)j * pl.xs + (size_t)((kb - kb_lo) * 64 + c * 16) * 2;
                        xv[u][nt][0] = lds_input(xs, j < n && in);
                        xv[u][nt][1] = lds_input(xs + 16, j < n && in);
                    } else {
                        const bf16 *xr = X + (size_t)(j < n ? j : 0) * K + k0;
                        xv[u][nt][0] = ld_input(xr, j < n && lo);
                        xv[u][nt][1] = ld_input(xr + 8, j < n && hi);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++) kblock_mma<NT>(acc, wv[u], xv[u]);
        }
        store_fragment<NT>(red, acc);
    }
    tile_finish<NT>(p, pl, R, bx, ks, red, tile, last, true);
}

/* ---- v5: v1's tiles at batch 9-16 through a ring of cp.async slots a warp, persistent ----
 * The grid is KS x bps blocks, one an SM: block b takes split ks = b % KS (k-blocks [kb_lo, kb_hi)) and row tiles
 * b / KS, + bps, ..., staging its k-range of the input (normed with norm_w) once. Warp (t, sl) streams, tile after
 * tile, k-blocks kb_lo + sl, + WS, ... of tile row block t's 16 rows: each lane copies its own four 16-byte pieces of a
 * k-block (rows A and B at k 8c and 32 + 8c: what the lane feeds its mma) into a slot of the warp's ring with
 * cp.async, RS - 1 items ahead, across the tiles' seams; a lane reads back only what it copied, so cp.async.wait_group
 * alone orders the ring (no barrier). Unlike v1's pieces (k 16c and 16c + 8: half of each 32-byte sector a request),
 * a copy instruction's four lanes of a row ask 64 contiguous bytes, whole sectors; any split of the k-block's 64 k
 * over the 4 lanes serves the mma, as long as the input's pieces are the same (v1's layout note, top of the file).
 * The staged input's rows are 64 bytes past a multiple of 128 apart, so that those reads meet no bank twice. The
 * first RS - 1 items are asked before the input is staged. Each tile ends in tile_finish (the same sums, partials,
 * tickets and epilogues as v1). */
#define GEMV5_SLOT_BYTES 2048 /* one k-block of a warp's 16 rows */

/* The rows A and B of lane (g) of warp-tile t in row tile bx. */
static __device__ __forceinline__ void v5_rows(const orthros_gemv_params &p, const gemv_plan &pl, int bx, int t, int g,
                                               const bf16 *&wA, const bf16 *&wB, bool &okA, bool &okB)
{
    const gemv_rows R = tile_rows(p, pl, bx);
    const int rA = R.row(t * 16 + g, okA), rB = R.row(t * 16 + g + 8, okB);
    const bf16 *Wt = (const bf16 *)p.W;
    wA = Wt + (size_t)(okA ? rA : 0) * p.K, wB = Wt + (size_t)(okB ? rB : 0) * p.K;
}

/* A warp's copy side: the next item to ask (tile j of the block, its k-block i, ring slot slot) and that tile's rows,
 * advanced by increments (the tile's rows once a tile; no division an item). */
struct v5_stream {
    int j, i, slot;
    const bf16 *wA, *wB;
    bool okA, okB;
};

/* The next item copied into its slot, then the stream advanced; past the warp's last item an empty group, so that
 * every call commits one. */
template <int RS>
static __device__ __forceinline__ void v5_issue(const orthros_gemv_params &p, const gemv_plan &pl, unsigned char *wring,
                                                v5_stream &st, int ntiles, int nk, int b0, int bps, int t, int sl,
                                                int kb_lo)
{
    if (st.j < ntiles && nk > 0) {
        const int lane = threadIdx.x % 32, c = lane % 4;
        const int k0 = (kb_lo + sl + st.i * pl.WS) * 64 + c * 8, K = p.K;
        const bool lo = k0 < K, hi = k0 + 32 < K;
        const bf16 *wA = st.wA, *wB = st.wB;
        const bool okA = st.okA, okB = st.okB;
        unsigned char *d = wring + (size_t)st.slot * GEMV5_SLOT_BYTES + (size_t)lane * 16;
        cp_async16(d, okA && lo ? (const void *)(wA + k0) : (const void *)wA, okA && lo ? 16 : 0);
        cp_async16(d + 512, okA && hi ? (const void *)(wA + k0 + 32) : (const void *)wA, okA && hi ? 16 : 0);
        cp_async16(d + 1024, okB && lo ? (const void *)(wB + k0) : (const void *)wB, okB && lo ? 16 : 0);
        cp_async16(d + 1536, okB && hi ? (const void *)(wB + k0 + 32) : (const void *)wB, okB && hi ? 16 : 0);
        st.slot = st.slot + 1 == RS ? 0 : st.slot + 1;
        if (++st.i == nk) {
            st.i = 0;
            if (++st.j < ntiles) v5_rows(p, pl, b0 + st.j * bps, t, lane / 4, st.wA, st.wB, st.okA, st.okB);
        }
    }
    cp_async_commit();
}

template <int NT, int RS>
static __global__ void __launch_bounds__(GEMV_THREADS, 1) gemv5_kernel(const orthros_gemv_params p, const gemv_plan pl)
{
    extern __shared__ __align__(16) unsigned char smem_x[]; /* [n][pl.xs bytes], then the warps' rings */
    __shared__ float red[GEMV_WARPS][16][17];
    __shared__ float tile[GEMV_MAX_TILE_ROWS * 17];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4, n = p.n;
    const int KS = pl.KS, ks = blockIdx.x % KS, bps = gridDim.x / KS, b0 = blockIdx.x / KS;
    const int nkb = (p.K + 63) / 64, kb_lo = ks * pl.kbs, kb_hi = min(nkb, kb_lo + pl.kbs);
    const int t = warp % pl.TM, sl = warp / pl.TM, active = warp < pl.TM * pl.WS;
    const int ntiles = b0 < pl.nblk ? (pl.nblk - b0 + bps - 1) / bps : 0;
    const int nk = active && kb_lo + sl < kb_hi ? (kb_hi - kb_lo - sl + pl.WS - 1) / pl.WS : 0;
    unsigned char *wring = smem_x + (size_t)n * pl.xs + (size_t)warp * RS * GEMV5_SLOT_BYTES;

    v5_stream st;
    st.j = 0, st.i = 0, st.slot = 0;
    v5_rows(p, pl, b0, t, g, st.wA, st.wB, st.okA, st.okB);
    pdl_trigger();
    for (int q = 0; q < RS - 1; q++) v5_issue<RS>(p, pl, wring, st, ntiles, nk, b0, bps, t, sl, kb_lo);
    /* Nothing an earlier kernel writes is read or written above this line. */
    pdl_wait();
    stage_input<false, 0, 8>(p, smem_x, pl.xs, rs, kb_lo * 64, pl.kbs * 8);

    int rslot = 0; /* the slot of the next item to read */
    for (int j = 0; j < ntiles; j++) {
        const int bx = b0 + j * bps;
        float acc[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
        for (int i = 0; i < nk; i++) {
            cp_async_wait<RS - 2>(); /* this item's group is in */
            const unsigned char *src = wring + (size_t)rslot * GEMV5_SLOT_BYTES + (size_t)lane * 16;
            rslot = rslot + 1 == RS ? 0 : rslot + 1;
            uint4 wv[4];
#pragma unroll
            for (int q = 0; q < 4; q++) wv[q] = *(const uint4 *)(src + q * 512);
            /* RS - 1 items on, into the slot read one item before (this lane's reads of it are done: their values
             * were used) */
            v5_issue<RS>(p, pl, wring, st, ntiles, nk, b0, bps, t, sl, kb_lo);
            const int kb = kb_lo + sl + i * pl.WS;
            uint4 xv[NT][2];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int r = g + nt * 8;
                const unsigned char *xs = smem_x + (size_t)r * pl.xs + (size_t)((kb - kb_lo) * 64 + c * 8) * 2;
                xv[nt][0] = lds_input(xs, r < n);
                xv[nt][1] = lds_input(xs + 64, r < n);
            }
            kblock_mma<NT>(acc, wv, xv);
        }
        if (active) store_fragment<NT>(red, acc);
        tile_finish<NT>(p, pl, tile_rows(p, pl, bx), bx, ks, red, tile, last, false);
        __syncthreads(); /* red and tile are written again by the next tile */
    }
    cp_async_wait<0>();
    if (p.epilogue == ORTHROS_GEMV_ARGMAX) argmax_finish(p, scratch_of(p.scratch), &last);
}

/* ---- v6: v1's tiles at batch 9-16, the weights by TMA into a ring of the block's stages, persistent ----
 * v5's warps spend ~187 instructions a 2 KB k-block, most of them on their own copies (docs/kernels.md, "Version 5
 * of the GEMV"). Here no lane copies a weight byte: thread 0 asks each stage, kst k-blocks (64 k each) of a row
 * tile's MT rows, as one TMA box [kst][MT rows][64 k] (a 3-d map where K is a multiple of 64, else a 2-d box of one
 * k-block; SWIGLU: a box of the gate rows and one of the up rows) into a ring of pl.rs stages, 128-byte swizzled,
 * each completing on its full mbarrier. Warp (t, sl) of the TM x WS warps takes the stages whose index in the tile is
 * sl mod WS and from each k-block its 16 rows: four ldmatrix.x4 (A fragments, conflict-free under the swizzle), four
 * of the staged input (B fragments of both n-tiles), eight mma; then frees the stage on its empty mbarrier (TM warps
 * a stage; the stages a multiple of WS, gemv6_min_stages). The grid, the staged input and the tile ends are v5's:
 * block b takes split b % KS and row tiles b / KS, + bps, ...; the ring streams across the tiles' seams, so a tile's
 * end (tile_finish: the same sums, partials, tickets and epilogues as v1) runs under the next tile's copies.
 * Thread 0 refills a stage's slot once its consumers have freed it, after its own warp's stage q only the slots of
 * stages up to q (those are freed before any block barrier, so its wait cannot hold the block), and at each tile's
 * start the slots of the tiles before. Input rows past n read row n - 1 (their columns are never written).
 *
 * Three forms of the stages and their reads (gemv6_plan's pl.form):
 *   GEMV6_TMA    the above: TMA boxes, ldmatrix and mma.sync (the default);
 *   GEMV6_BULK   (ORTHROS_GEMV6_BULK=1) a bulk copy a row, read by ldmatrix (below, at the kernel);
 *   GEMV6_WGMMA  (ORTHROS_GEMV6_WGMMA=1; sm_90a) the TMA boxes read by wgmma straight from shared memory: a warpgroup
 *                takes 64 rows of a stage (TM 4: a warpgroup a k-slice; TM 8: one slice, the two warpgroups the two
 *                halves of the tile, for SWIGLU the gate box and the up box), each k-block four m64n16k16 products
 *                of A = its rows (K-major, the box's 128-byte swizzle) and B = the staged input, which is staged
 *                k-block by k-block in the same swizzle (stage_input's SW; rows past n zero). No ldmatrix and no
 *                fragments: ~20 instructions a warpgroup's 8 KB where ldmatrix and mma.sync take ~50 a warp's 2 KB,
 *                and the products run asynchronously: a warpgroup commits a stage's products, waits for the
 *                stage before (wgmma.wait_group 1) and frees that one, so the products of a stage run while the
 *                next stage's barrier is waited on. The accumulators of a warp are mma.sync's C fragments of its
 *                16 rows (PTX ISA 9.7.15.5.1.1.1), so the tile ends are v6's. */
#define GEMV6_SMEM_MAX (200 * 1024) /* the ring, its 1024-byte alignment and the staged input of one block */
#define GEMV6_STAGES_MAX 16
#define GEMV6_TMA 0
#define GEMV6_BULK 1
#define GEMV6_WGMMA 2

struct gemv6_plan {
    CUtensorMap w; /* W [M][K], boxes of 64 k x (MT or, for SWIGLU, MT / 2) rows, 128-byte swizzled */
    gemv_plan pl;  /* pl.rs: the ring's stages */
};

/* BULK (ORTHROS_GEMV6_BULK=1; K a multiple of 64): a stage is the tile's rows' kst k-blocks as one 1-d bulk copy a
 * row (kst x 128 contiguous bytes, as the stream probe's copies that read at the ceiling), issued by the lanes of warp
 * 0 a row each, landing at a row stride of kst x 128 + 16 bytes (no swizzle: the 8 rows one ldmatrix reads then start
 * in distinct bank groups); rows past M are not asked (their stale rows' sums are never written). Else TMA boxes. */
template <int FORM>
static __global__ void __launch_bounds__(GEMV_THREADS, 1) gemv6_kernel(const orthros_gemv_params p,
                                                                       const __grid_constant__ gemv6_plan gp)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr bool BULK = FORM == GEMV6_BULK, WG = FORM == GEMV6_WGMMA;
    const gemv_plan &pl = gp.pl;
    extern __shared__ __align__(16) unsigned char smem6[]; /* ring [rs][SB] from a 1024-aligned byte | x [n][pl.xs] */
    __shared__ float red[GEMV_WARPS][16][17];
    __shared__ float tile[GEMV_MAX_TILE_ROWS * 17];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ __align__(8) unsigned long long bars[2 * GEMV6_STAGES_MAX]; /* full [S], then empty [S] */
    __shared__ int last;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, n = p.n;
    const int KS = pl.KS, ks = blockIdx.x % KS, bps = gridDim.x / KS, b0 = blockIdx.x / KS;
    const int nkb = (p.K + 63) / 64, kb_lo = ks * pl.kbs, KB = pl.kst, kb_hi = min(nkb, kb_lo + pl.kbs);
    const int nk = (kb_hi - kb_lo + KB - 1) / KB; /* stages a tile; the last split's last one may end past K */
    const int ntiles = b0 < pl.nblk ? (pl.nblk - b0 + bps - 1) / bps : 0, total = ntiles * nk;
    const int S = pl.rs, TM = pl.TM, WS = pl.WS, t = warp % TM, sl = warp / TM, active = warp < TM * WS;
    const bool swiglu = p.epilogue == ORTHROS_GEMV_SWIGLU;
    const int BR = swiglu ? pl.MT / 2 : pl.MT; /* a box's rows */
    const uint32_t RB = (uint32_t)(KB * 128 + 16); /* BULK: a row's bytes in a stage, with its skew */
    const uint32_t SB = BULK ? (uint32_t)pl.MT * RB : (uint32_t)(pl.MT * 128 * KB);
    const uint32_t base = smem_addr(smem6), ring = (base + 1023u) & ~1023u;
    unsigned char *xs = smem6 + (ring - base) + (size_t)S * SB;
    const uint32_t full0 = smem_addr(bars), empty0 = full0 + 8u * GEMV6_STAGES_MAX;

    /* stage q of the block's stream: tile q / nk, its k-blocks from KB (q % nk), slot q % S; a stage is a box [KB][BR
     * rows][64 k] (KB > 1: the 3-d map, K a multiple of 64), two for SWIGLU (gate, up), asked by thread 0 alone, or
     * (BULK) a bulk copy a row of the tile, asked by the lanes of warp 0 (every lane calls refill then) */
    int next = 0;
    auto refill = [&](int upto) { /* every stage whose slot's previous stage is at most upto */
        for (; next < total && next - S <= upto; next++) {
            const int j = next / nk, i = next - j * nk, s = next % S, bx = b0 + j * bps, kb = kb_lo + i * KB;
            if (next >= S) mbar_wait(empty0 + 8u * s, (uint32_t)((next / S - 1) & 1));
            const uint32_t dst = ring + (uint32_t)s * SB, fb = full0 + 8u * s;
            if constexpr (BULK) {
                const gemv_rows R = tile_rows(p, pl, bx);
                /* a copy for every row of W the tile names (tile row r is weight row R.row(r); the last tile's rows
                 * past M are not asked), the stage's bytes the copies' */
                int cnt = 0;
                for (int r = lane; r < pl.MT; r += 32) {
                    bool ok;
                    cnt += R.row(r, ok) < p.M;
                }
                cnt = __reduce_add_sync(0xffffffffu, cnt);
                /* the stage's k-blocks within K: a copy never reads past its row (the last row is the end of W) */
                const uint32_t bytes = (uint32_t)(min(KB, kb_hi - kb) * 128);
                if (lane == 0) mbar_expect_tx(fb, (uint32_t)cnt * bytes);
                __syncwarp();
                const bf16 *Wt = (const bf16 *)p.W;
                for (int r = lane; r < pl.MT; r += 32) {
                    bool ok;
                    const int m = R.row(r, ok);
                    if (m < p.M) bulk_copy(dst + (uint32_t)r * RB, Wt + (size_t)m * p.K + (size_t)kb * 64, bytes, fb);
                }
            } else {
                const int m0 = swiglu ? bx * BR : bx * pl.MT;
                mbar_expect_tx(fb, SB);
                if (KB > 1) tma_load_3d(dst, &gp.w, fb, 0, m0, kb);
                else tma_load_2d(dst, &gp.w, fb, kb * 64, m0);
                if (swiglu) {
                    if (KB > 1) tma_load_3d(dst + SB / 2, &gp.w, fb, 0, p.M / 2 + m0, kb);
                    else tma_load_2d(dst + SB / 2, &gp.w, fb, kb * 64, p.M / 2 + m0);
                }
            }
        }
    };
    /* the threads that ask stages: thread 0, or warp 0 (BULK) */
    const bool producer = BULK ? warp == 0 : tid == 0;
    pdl_trigger();
    ring_init(full0, empty0, S, TM);
    if constexpr (BULK) __syncthreads(); /* warp 0's other lanes use the barriers thread 0 initialized */
    if (producer) refill(-1); /* the first S stages, while the input is staged */
    if constexpr (WG) /* B's rows past n: zeros (their columns are never written; no stale value reaches a sum) */
        for (int e = tid; e < (16 - n) * pl.kbs * 8; e += GEMV_THREADS) {
            const int r = n + e / (pl.kbs * 8), q = e % (pl.kbs * 8);
            *(uint4 *)(xs + (size_t)(q / 8) * 2048 + swz128(r, q % 8)) = zero4();
        }
    /* Nothing an earlier kernel writes is read or written above this line. */
    pdl_wait();
    stage_input<false, 0, 8, WG>(p, xs, pl.xs, rs, kb_lo * 64, pl.kbs * 8); /* ends in a block barrier */
    if constexpr (WG) { /* the staged input, written by the threads, is read by wgmma (the async proxy) */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
    }

    /* the lane's ldmatrix rows: A row t 16 + (lane % 8) + 8 ((lane / 8) % 2), 16-byte chunk 2 s + lane / 16; B (the
     * input) row (lane % 8) + 8 (lane / 16), chunk 2 s + (lane / 8) % 2 */
    uint32_t aoff[4];
    if constexpr (BULK) {
        /* row t 16 + (lane % 8) + 8 ((lane / 8) % 2) of the stage, RB bytes a row */
        const uint32_t ar = (uint32_t)(t * 16 + (lane % 8) + 8 * ((lane / 8) % 2));
#pragma unroll
        for (int s = 0; s < 4; s++) aoff[s] = ar * RB + (uint32_t)((2 * s + lane / 16) * 16);
    } else {
        /* the warp's rows in box t 16 / BR (SWIGLU: gate or up), k-block 0 of the stage */
        const int ar = (t * 16) % BR + (lane % 8) + 8 * ((lane / 8) % 2);
        const uint32_t box = (uint32_t)((t * 16) / BR) * (SB / (swiglu ? 2u : 1u));
#pragma unroll
        for (int s = 0; s < 4; s++) aoff[s] = box + swz128(ar, 2 * s + lane / 16);
    }
    const uint32_t kstride = BULK ? 128u : (uint32_t)BR * 128u; /* the next k-block of the stage */
    const int xr = min((lane % 8) + 8 * (lane / 16), n - 1);
    const uint32_t xb = smem_addr(xs) + (uint32_t)(xr * pl.xs) + (uint32_t)(((lane / 8) % 2) * 16);

    for (int j = 0; j < ntiles; j++) {
        const int bx = b0 + j * bps;
        if (producer) refill(j * nk - 1); /* the tiles before are all consumed (the block barrier of their ends) */
        float acc[2][4];
#pragma unroll
        for (int nt = 0; nt < 2; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
        if constexpr (WG) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
            /* warpgroup warp / 4 (all 8 warps are active: TM x WS = 8); its 64 rows start at tile row r0, in box
             * r0 / BR (SWIGLU: gate or up) */
            const int wsl = __shfl_sync(0xffffffffu, sl, 0); /* sl, known warp-uniform to ptxas (as kv below) */
            const int r0 = __shfl_sync(0xffffffffu, (t & ~3) * 16, 0);
            const uint32_t abox = (uint32_t)(r0 / BR) * (SB / (swiglu ? 2u : 1u)) + (uint32_t)(r0 % BR) * 128u;
            const uint32_t xw = smem_addr(xs);
            float d[8];
#pragma unroll
            for (int e = 0; e < 8; e++) d[e] = 0.0f;
            int q = j * nk + wsl, slot = q % S, phase = (q / S) & 1, held = -1, held_q = -1;
            for (int i = wsl; i < nk; i += WS, q += WS) {
                mbar_wait(full0 + 8u * slot, (uint32_t)phase);
                __syncwarp(); /* the wgmma below are .aligned */
                /* the stage's k-blocks within K, through a shuffle so that ptxas knows the count warp-uniform (a
                 * count it cannot prove uniform serializes every wgmma: ptxas C7520) */
                const int kv = __shfl_sync(0xffffffffu, min(KB, kb_hi - (kb_lo + i * KB)), 0);
                wg_fence();
#pragma unroll 1
                for (int kk = 0; kk < kv; kk++) {
                    const uint32_t a = ring + (uint32_t)slot * SB + abox + (uint32_t)kk * kstride;
                    const uint32_t b = xw + (uint32_t)((i * KB + kk) * 2048);
#pragma unroll
                    for (int s = 0; s < 4; s++) /* k 16 s: 32 s bytes into the swizzled rows */
                        wgmma_ss_m64n16(d, sw128_desc(a + 32u * s, 16, 1024), sw128_desc(b + 32u * s, 16, 1024));
                }
                wg_commit();
                wg_wait<1>(); /* the stage before this one is read */
                if (held >= 0) {
                    if (lane == 0) mbar_arrive(empty0 + 8u * held);
                    if (producer) refill(held_q);
                    __syncwarp();
                }
                held = slot, held_q = q;
                for (slot += WS; slot >= S; slot -= S) phase ^= 1;
            }
            wg_wait<0>();
            reg_fence(d);
            if (held >= 0) {
                if (lane == 0) mbar_arrive(empty0 + 8u * held);
                if (producer) refill(held_q); /* the next tile's first stages, under this tile's end */
                __syncwarp();
            }
#pragma unroll
            for (int e = 0; e < 8; e++) acc[e / 4][e % 4] = d[e]; /* register e: n-tile e / 4, C fragment e % 4 */
            store_fragment<2>(red, acc);
#else
            __trap(); /* not an sm_90a build: the host plans no v6 on wgmma (make_plan6) */
#endif
        } else if (active) {
            int q = j * nk + sl, slot = q % S, phase = (q / S) & 1;
            for (int i = sl; i < nk; i += WS, q += WS) {
                mbar_wait(full0 + 8u * slot, (uint32_t)phase);
                /* the stage's k-blocks within K (past it the last split's last stage holds zeros by TMA, nothing by
                 * BULK: skipped) */
                const int kv = min(KB, kb_hi - (kb_lo + i * KB));
                for (int kk = 0; kk < kv; kk++) {
                    const uint32_t st = ring + (uint32_t)slot * SB + (uint32_t)kk * kstride;
                    const uint32_t xk = xb + (uint32_t)((i * KB + kk) * 128);
#pragma unroll
                    for (int s = 0; s < 4; s++) {
                        uint32_t a[4], b[4];
                        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                                     : "r"(st + aoff[s]));
                        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                                     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                                     : "r"(xk + (uint32_t)(s * 32)));
                        mma_bf16_16816(acc[0], a, b);
                        mma_bf16_16816(acc[1], a, b + 2);
                    }
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(empty0 + 8u * slot);
                if (producer) refill(q);
                __syncwarp(); /* ldmatrix is .aligned: warp 0 reconverged after its lane 0's waits */
                for (slot += WS; slot >= S; slot -= S) phase ^= 1;
            }
            store_fragment<2>(red, acc);
        }
        tile_finish<2>(p, pl, tile_rows(p, pl, bx), bx, ks, red, tile, last, false);
        __syncthreads(); /* red and tile are written again by the next tile */
    }
    if (p.epilogue == ORTHROS_GEMV_ARGMAX) argmax_finish(p, scratch_of(p.scratch), &last);
#endif
}

/* ---- v2: batch 1-4 on CUDA cores, two weight rows a warp over all of K (or a slice of it) ----
 * A group is two weight rows whose epilogue needs them together: rows 2g and 2g + 1 (STORE, STORE_F32, ADD,
 * ARGMAX), gate row g and up row F + g (SWIGLU), rows i and i + d / 2 of head h (ROPE, g = h * d / 2 + i). Warp
 * slice s of KW takes the 16-byte chunks c = (t KW + s) 32 + lane, U of them for each row at a time (every load of a
 * round issued before its first use), so that all a warp streams is in flight at once; the block's warps are GPB =
 * 8 / KW groups times KW slices, and the grid (as many blocks as fit at once) walks the groups, block-uniform. The
 * sums: fp32 FMAs in k order within a lane, a butterfly over the lanes (which leaves every lane the same bits), the
 * slices added in slice order: the result depends on the shape only. KW > 1 when the groups are too few to fill the
 * warps the machine holds (the 1B o and down products). The input is read through L1, or with norm_w normed and
 * staged whole in shared memory by each block once. */
#define GEMV2_MAX_N 4 /* v2; v3 takes up to 8 */
#define GEMV3_MAX_N 8
#define GEMV2_XS_MAX_BYTES (64 * 1024)
#define GEMV2_MAX_KW 4
#define GEMV_FEW_ROUNDS 8 /* orthros_gemv_set_early's 16 */

struct gemv2_plan {
    int groups, KW, GPB, blocks, U;
    size_t smem;
    int early; /* v3's orthros_gemv_set_early mask (0 for v2 and v4) */
    int trig0; /* orthros_gemv_set_qkv_blocks: this q/k/v product lets its dependent launch as it starts */
};

/* ROPE's group g as (head h, pair i): g = h (d / 2) + i. d / 2 is a power of two in every Llama shape: a shift and a
 * mask there, where a division by a value known only at run time costs ~20 instructions on each group's path (ncu's
 * source counters on the 1B q/k/v product: 4% of its stall samples); any other even d divides. */
static __device__ __forceinline__ void rope_group(const orthros_gemv_params &p, int g, int &h, int &i)
{
    const int half = p.d / 2;
    if ((half & (half - 1)) == 0) {
        const int sh = __ffs(half) - 1;
        h = g >> sh, i = g & (half - 1);
    } else {
        h = g / half, i = g % half;
    }
}

static __device__ __forceinline__ void gemv2_rows(const orthros_gemv_params &p, int g, int r[2], bool ok[2])
{
    if (p.epilogue == ORTHROS_GEMV_SWIGLU) {
        r[0] = g, r[1] = p.M / 2 + g;
        ok[0] = ok[1] = g < p.M / 2;
    } else if (p.epilogue == ORTHROS_GEMV_ROPE) {
        int h, i;
        rope_group(p, g, h, i);
        r[0] = h * p.d + i, r[1] = r[0] + p.d / 2;
        ok[0] = ok[1] = r[1] < p.M;
    } else {
        r[0] = 2 * g, r[1] = 2 * g + 1;
        ok[0] = r[0] < p.M, ok[1] = r[1] < p.M;
    }
}

/* acc += the dot product of 8 bf16 weights with 8 inputs, in k order. */
static __device__ __forceinline__ float dot8(const uint4 &w, const float (&x)[8], float acc)
{
    acc = fmaf(bf16x2_lo(w.x), x[0], acc), acc = fmaf(bf16x2_hi(w.x), x[1], acc);
    acc = fmaf(bf16x2_lo(w.y), x[2], acc), acc = fmaf(bf16x2_hi(w.y), x[3], acc);
    acc = fmaf(bf16x2_lo(w.z), x[4], acc), acc = fmaf(bf16x2_hi(w.z), x[5], acc);
    acc = fmaf(bf16x2_lo(w.w), x[6], acc), acc = fmaf(bf16x2_hi(w.w), x[7], acc);
    return acc;
}

/* The 8 bf16 of a 16-byte chunk as fp32, in k order. */
static __device__ __forceinline__ void unpack8(const uint4 &v, float (&f)[8])
{
    f[0] = bf16x2_lo(v.x), f[1] = bf16x2_hi(v.x), f[2] = bf16x2_lo(v.y), f[3] = bf16x2_hi(v.y);
    f[4] = bf16x2_lo(v.z), f[5] = bf16x2_hi(v.z), f[6] = bf16x2_lo(v.w), f[7] = bf16x2_hi(v.w);
}

/* One round of a group's two rows (v2, v3, the chain and the MLP kernel): lane's chunks c = ((t0 + u) KW + sl) 32 +
 * lane, u < U, of rows w0 and w1 (ok0, ok1: the row exists) and of the N input rows (from shared memory with XS, else X through
 * L1), every load issued before the first use, then between(), then their dot products added into acc in k order.
 * (Issuing a round's weight loads all before its input loads was measured slower: aa09bb4, a 1B layer's four products
 * 50.7 us against 46.7.) */
struct no_between {
    __device__ __forceinline__ void operator()() const {}
};

template <int N, int U, bool XS, class Between = no_between>
static __device__ __forceinline__ void group_round(const bf16 *w0, const bf16 *w1, bool ok0, bool ok1, const bf16 *X,
                                                   const unsigned char *smem_x, int K, int t0, int KW, int sl,
                                                   int lane, float (&acc)[2][N], const Between &between = Between())
{
    const int nch = K / 8;
    uint4 wv[U][2], xv[U][N];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int c = ((t0 + u) * KW + sl) * 32 + lane;
        const bool in = c < nch;
        wv[u][0] = ld_weights(w0 + (size_t)c * 8, ok0 && in);
        wv[u][1] = ld_weights(w1 + (size_t)c * 8, ok1 && in);
#pragma unroll
        for (int j = 0; j < N; j++) {
            if constexpr (XS) xv[u][j] = lds_input(smem_x + ((size_t)j * K + (size_t)c * 8) * 2, in);
            else xv[u][j] = ld_input(X + (size_t)j * K + (size_t)c * 8, in);
        }
    }
    between();
#pragma unroll
    for (int u = 0; u < U; u++) {
#pragma unroll
        for (int j = 0; j < N; j++) {
            float xf[8];
            unpack8(xv[u][j], xf);
            acc[0][j] = dot8(wv[u][0], xf, acc[0][j]);
            acc[1][j] = dot8(wv[u][1], xf, acc[1][j]);
        }
    }
}

/* The epilogue's operands a lane loaded before the group's sums (v3 with orthros_gemv_set_early's 1 and 2): ADD, lane
 * i N + j: the residual's old value of output (row i, input row j); ROPE, lane j: the pair's cosine and sine at input
 * row j's position pos. `have` when they are loaded. */
struct group_pre {
    bool have;
    float a, b;
    int pos;
};

/* The end of a group (v2, v3, v4): every lane's sums of the two rows over its chunks meet in a butterfly (every lane
 * gets the same bits), the KW slices are added in slice order through shared memory (part; two barriers of the
 * group's KW warps: each of them calls this for the group), then slice 0 writes the group's outputs:
 * lane i N + j output (row i, input row j), through the same epilogue functions as v1, with the operands in pre where
 * they were loaded early; ARGMAX keeps the lane's best key of each input row in best. */
template <int N>
static __device__ __forceinline__ void group_finish(const orthros_gemv_params &p, const gemv2_plan &pl, int g,
                                                    const int r[2], const bool ok[2], float (&acc)[2][N],
                                                    float (*part)[2][N], unsigned long long (&best)[N],
                                                    const group_pre &pre = group_pre{false, 0.0f, 0.0f, 0})
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, KW = pl.KW, sl = warp % KW;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < N; j++)
            for (int o = 16; o > 0; o >>= 1) acc[i][j] += __shfl_xor_sync(0xffffffffu, acc[i][j], o);
    if (KW > 1) {
        /* the KW warps of this group alone meet (named barrier 8 + the group's warp index, KW warps): a block's other
         * groups, whose loads may still be in flight, are not waited for */
        const int bar = 8 + warp / KW;
        if (lane == 0)
#pragma unroll
            for (int j = 0; j < N; j++) part[warp][0][j] = acc[0][j], part[warp][1][j] = acc[1][j];
        bar_sync(bar, KW * 32);
        if (sl == 0)
#pragma unroll
            for (int j = 0; j < N; j++) {
                float a = part[warp][0][j], b = part[warp][1][j];
                for (int q = 1; q < KW; q++) a += part[warp + q][0][j], b += part[warp + q][1][j];
                acc[0][j] = a, acc[1][j] = b;
            }
        bar_sync(bar, KW * 32); /* part is written again by the next round */
    }
    if (sl != 0 || g >= pl.groups) return;
#pragma unroll
    for (int j = 0; j < N; j++) {
        switch (p.epilogue) {
        case ORTHROS_GEMV_SWIGLU:
            if (lane == j) epi_swiglu(p, j, g, acc[0][j], acc[1][j]);
            break;
        case ORTHROS_GEMV_ROPE:
            if (lane == j) {
                int h, i;
                rope_group(p, g, h, i);
                if (pre.have) epi_rope_cs(p, j, h, i, acc[0][j], acc[1][j], pre.pos, pre.a, pre.b);
                else epi_rope(p, j, h, i, acc[0][j], acc[1][j]);
            }
            break;
        case ORTHROS_GEMV_ARGMAX:
#pragma unroll
            for (int i = 0; i < 2; i++) {
                if (!ok[i]) continue;
                if (p.out && lane == i * N + j) ((float *)p.out)[(size_t)j * p.M + r[i]] = acc[i][j];
                const unsigned long long k = argmax_key(acc[i][j], r[i]);
                best[j] = k > best[j] ? k : best[j];
            }
            break;
        default:
#pragma unroll
            for (int i = 0; i < 2; i++) {
                if (!ok[i] || lane != i * N + j) continue;
                if (pre.have && p.epilogue == ORTHROS_GEMV_ADD)
                    ((bf16 *)p.out)[(size_t)j * p.M + r[i]] = add_resid(pre.a, acc[i][j]);
                else
                    epi_store(p, j, r[i], acc[i][j]);
            }
            break;
        }
    }
}

/* ARGMAX, at the end of a v2-v4 kernel: the block's best key of each input row (slice 0 of every group holds one;
 * others 0), one atomic a row, then argmax_finish. */
template <int N>
static __device__ __forceinline__ void block_argmax(const orthros_gemv_params &p, const gemv2_plan &pl,
                                                    const unsigned long long (&best)[N], int *last)
{
    __shared__ unsigned long long bbest[GEMV_WARPS][N];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, sl = warp % pl.KW;
    const gemv_scratch S = scratch_of(p.scratch);
    if (lane == 0)
#pragma unroll
        for (int j = 0; j < N; j++) bbest[warp][j] = sl == 0 ? best[j] : 0ull;
    __syncthreads();
    if (tid < N) {
        unsigned long long b = 0ull;
        for (int w = 0; w < GEMV_WARPS; w++) b = bbest[w][tid] > b ? bbest[w][tid] : b;
        if (b) atomicMax(S.keys + tid, b);
    }
    argmax_finish(p, S, last);
}

/* The groups of one product (v2, v3 and the chain kernel): block b takes group rounds b, b + gridDim.x, ...; each
 * warp (gw, sl) streams its slice of its group's two rows U chunks a lane at a time, every load of a round issued
 * before its first use, the input from shared memory (XS) or through L1. Every thread of the block calls it. */
template <int N, int U, bool XS>
static __device__ __forceinline__ void gemv2_groups(const orthros_gemv_params &p, const gemv2_plan &pl,
                                                    const unsigned char *smem_x, float (*part)[2][N], int *last)
{
    constexpr bool EARLY = N == 1 && U == 4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int K = p.K, nch = K / 8, KW = pl.KW, sl = warp % KW, gw = warp / KW;
    const bf16 *X = (const bf16 *)p.x, *Wt = (const bf16 *)p.W;
    unsigned long long best[N];
#pragma unroll
    for (int j = 0; j < N; j++) best[j] = 0ull;
    /* orthros_gemv_set_early (batch 1 alone: at 2-8 the registers it holds made the kernels spill): 1, ADD's
     * residual loaded as the group starts; 2, ROPE's position read once and the pair's cosine and sine formed while
     * the group's first round is in flight; both used in group_finish */
    const bool e_add = EARLY && (pl.early & 1) && p.epilogue == ORTHROS_GEMV_ADD;
    const bool e_rope = EARLY && (pl.early & 2) && p.epilogue == ORTHROS_GEMV_ROPE;
    group_pre pre{e_add || e_rope, 0.0f, 0.0f, 0};
    if (e_rope && lane < N) pre.pos = p.pos[lane];
    for (int gb = blockIdx.x; gb * pl.GPB < pl.groups; gb += gridDim.x) {
        const int g = gb * pl.GPB + gw;
        /* p.pdl_late: the stream's next kernel, a dependent launch, may launch once every block is at its last
         * group, or p.pdl_late - 1 block rounds before it (a block with none never enters: its exit counts) */
        if (p.pdl_late && (gb + p.pdl_late * (int)gridDim.x) * pl.GPB >= pl.groups) pdl_trigger();
        int r[2] = {0, 0};
        bool ok[2] = {false, false};
        if (g < pl.groups) gemv2_rows(p, g, r, ok);
        const bf16 *w0 = Wt + (size_t)(ok[0] ? r[0] : 0) * K, *w1 = Wt + (size_t)(ok[1] ? r[1] : 0) * K;
        if (e_add && sl == 0 && lane < 2 * N) {
            /* (r and ok indexed by constants: an index known only at run time puts them in local memory, which made
             * every product slower, early or not) */
            const bool hi = lane >= N, oki = hi ? ok[1] : ok[0];
            const int ri = hi ? r[1] : r[0];
            if (oki) pre.a = bf2f(__ldcg((const bf16 *)p.out + (size_t)(lane % N) * p.M + ri));
        }
        float acc[2][N];
#pragma unroll
        for (int j = 0; j < N; j++) acc[0][j] = acc[1][j] = 0.0f;
        if (e_rope) {
            /* the pair's cosine and sine while the first round is in flight */
            const auto rope = [&]() {
                if (sl == 0 && lane < N && g < pl.groups) {
                    int h, i;
                    rope_group(p, g, h, i);
                    pre.a = 1.0f, pre.b = 0.0f;
                    if (h < p.Hq + p.Hkv) rope_cs(p, pre.pos, i, pre.a, pre.b);
                }
            };
            group_round<N, U, XS>(w0, w1, ok[0], ok[1], X, smem_x, K, 0, KW, sl, lane, acc, rope);
            for (int t0 = U; (t0 * KW + sl) * 32 < nch; t0 += U)
                group_round<N, U, XS>(w0, w1, ok[0], ok[1], X, smem_x, K, t0, KW, sl, lane, acc);
        } else {
            for (int t0 = 0; (t0 * KW + sl) * 32 < nch; t0 += U)
                group_round<N, U, XS>(w0, w1, ok[0], ok[1], X, smem_x, K, t0, KW, sl, lane, acc);
        }
        group_finish<N>(p, pl, g, r, ok, acc, part, best, pre);
    }
    if (p.epilogue == ORTHROS_GEMV_ARGMAX) block_argmax<N>(p, pl, best, last);
}

/* The warp's share of block round gb's group of a product asked into L2: `rounds` chunks a row of its slice. */
static __device__ __forceinline__ void prefetch_group(const orthros_gemv_params &p, const gemv2_plan &pl, int gb,
                                                      int rounds)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, K = p.K, nch = K / 8, KW = pl.KW, sl = warp % KW;
    const int g = gb * pl.GPB + warp / KW;
    if (g >= pl.groups) return;
    const bf16 *Wt = (const bf16 *)p.W;
    int r[2];
    bool ok[2];
    gemv2_rows(p, g, r, ok);
    for (int t = 0; t < rounds; t++) {
        const int c = (t * KW + sl) * 32 + lane;
        if (c >= nch) break;
        if (ok[0]) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(Wt + (size_t)r[0] * K + (size_t)c * 8));
        if (ok[1]) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(Wt + (size_t)r[1] * K + (size_t)c * 8));
    }
}

/* N input rows (N == p.n), U chunks a row in flight per lane, XS: the input normed and staged; KV: p.l2_kv asked into
 * L2 (a separate instantiation, so that the others' code is what it was). */
template <int N, int U, bool XS, bool KV = false>
static __global__ void __launch_bounds__(GEMV_THREADS, 2) gemv2_kernel(const orthros_gemv_params p, const gemv2_plan pl)
{
    extern __shared__ __align__(16) unsigned char smem_x[]; /* XS: [N][K] bf16 */
    __shared__ float part[GEMV_WARPS][2][N];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;
    step_stamps stamps(p.stamps, p.stamp_slot); /* a stamped build's clock readings (step_stamps.h) */

    if (!p.pdl_late || pl.trig0) pdl_trigger(); /* else at the block's last group (gemv2_groups) */
    l2_prefetch_share(p.l2_next, p.l2_next_bytes, p.l2_policy, blockIdx.x, gridDim.x);
    /* the decode attention's keys and values below this step's positions (its bound), asked into L2 while this
     * product runs (ORTHROS_DECODE_KVPF_MB); a bound past the position reaches the slots this kernel's epilogue
     * writes, which a prefetch into L2, the one copy they have there, cannot make stale */
    if constexpr (KV) {
        l2_prefetch_part(p.l2_kv[0], p.l2_kv_bytes, blockIdx.x, gridDim.x);
        l2_prefetch_part(p.l2_kv[1], p.l2_kv_bytes, blockIdx.x, gridDim.x);
    }
    /* The weights never depend on an earlier kernel: the warp's share of its first group is asked into L2 while the
     * input is staged (and, with p.pdl, while the kernel before this one ends). Copying it into shared memory instead
     * (cp.async, 64 KB a block) was measured slower at cf5b787 (docs/kernels.md, "The chain"). With p.pdl 2 (the
     * product after the decode attention, which leaves SMs idle: ORTHROS_DECODE_O_PDL) every group of the block. */
    if (p.pdl == 2) { /* every group of the block, whole (its rounds: ceil(nch / (32 KW))) */
        for (int gb = blockIdx.x; gb * pl.GPB < pl.groups; gb += gridDim.x)
            prefetch_group(p, pl, gb, (p.K / 8 + 32 * pl.KW - 1) / (32 * pl.KW));
    } else if (p.pdl == 1 || !(pl.early & 8)) {
        /* orthros_gemv_set_early's 8 (or 16, which make_plan2 turns into 8 where a warp has few rounds): without a
         * dependent launch, the first round is not asked into L2 before the same loads ask for it */
        prefetch_group(p, pl, blockIdx.x, p.pdl == 1 ? 4 * U : U);
    }
    pdl_wait();
    stamps.waited();
    if constexpr (XS) {
        /* orthros_gemv_set_early's 32 (batch 1, K at most 8192): the input normed and staged in one trip */
        __shared__ float red[GEMV_WARPS];
        if (N == 1 && U == 4 && (pl.early & 32)) rc_stage(p, smem_x, red);
        else stage_input(p, smem_x, p.K * 2, rs, 0, p.K / 8);
    }

    gemv2_groups<N, U, XS>(p, pl, smem_x, part, &last);
}

/* ---- v4: v3's groups as one pipeline a warp (batch 1-4) ----
 * The profile of the captured step (ci/gpu-decode-profile.sh, 2026-12-02) had every product 4-7 us over its bytes
 * at the 1B shape: v3 issues a round of U chunks a row, waits for it, adds it up, and only after a group's last
 * round, its butterfly and its epilogue does it ask for the next group's first round, so each round and each group
 * end is a trip to memory with nothing in flight behind it. v4 keeps the same groups, slices, plan and sums (the
 * same bits as v3), but a warp asks for its next round (the next of the group, or the first of its next group)
 * before it adds up the round it holds, so one round is always in flight while the warp computes, reduces and
 * writes; the first round is asked before the input is staged (and before a dependent launch waits); and the input
 * is always staged in shared memory (raw where there is no norm), so a round's loads are the weights alone. */
template <int U>
static __device__ __forceinline__ void load_round(const orthros_gemv_params &p, int g, int groups, int round, int KW,
                                                  int sl, uint4 (&buf)[U][2])
{
    int r[2] = {0, 0};
    bool ok[2] = {false, false};
    if (g < groups) gemv2_rows(p, g, r, ok);
    const int nch = p.K / 8, lane = threadIdx.x % 32;
    const bf16 *Wt = (const bf16 *)p.W;
    const bf16 *w0 = Wt + (size_t)(ok[0] ? r[0] : 0) * p.K, *w1 = Wt + (size_t)(ok[1] ? r[1] : 0) * p.K;
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int c = ((round * U + u) * KW + sl) * 32 + lane;
        const bool in = c < nch;
        buf[u][0] = ld_weights(w0 + (size_t)c * 8, ok[0] && in);
        buf[u][1] = ld_weights(w1 + (size_t)c * 8, ok[1] && in);
    }
}

template <int N, int U>
static __global__ void __launch_bounds__(GEMV_THREADS, 2) gemv4_kernel(const orthros_gemv_params p, const gemv2_plan pl)
{
    extern __shared__ __align__(16) unsigned char smem_x[]; /* [N][K] bf16: the input, normed where norm_w is given */
    __shared__ float part[GEMV_WARPS][2][N];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int K = p.K, nch = K / 8, KW = pl.KW, sl = warp % KW, gw = warp / KW, GPB = pl.GPB;
    const int T = (nch + 32 * KW - 1) / (32 * KW), R = (T + U - 1) / U; /* rounds a group, the same for every slice */

    pdl_trigger();
    l2_prefetch_share(p.l2_next, p.l2_next_bytes, p.l2_policy, blockIdx.x, gridDim.x);
    uint4 cur[U][2];
    load_round<U>(p, blockIdx.x * GPB + gw, pl.groups, 0, KW, sl, cur); /* weights never depend on an earlier kernel */
    pdl_wait();
    stage_input(p, smem_x, K * 2, rs, 0, nch);

    unsigned long long best[N];
#pragma unroll
    for (int j = 0; j < N; j++) best[j] = 0ull;
    for (int gb = blockIdx.x; gb * GPB < pl.groups; gb += gridDim.x) {
        const int g = gb * GPB + gw;
        const bool more = (gb + (int)gridDim.x) * GPB < pl.groups;
        int r[2] = {0, 0};
        bool ok[2] = {false, false};
        if (g < pl.groups) gemv2_rows(p, g, r, ok);
        float acc[2][N];
#pragma unroll
        for (int j = 0; j < N; j++) acc[0][j] = acc[1][j] = 0.0f;
        for (int rr = 0; rr < R; rr++) {
            uint4 nxt[U][2];
            if (rr + 1 < R) load_round<U>(p, g, pl.groups, rr + 1, KW, sl, nxt);
            else if (more) load_round<U>(p, g + (int)gridDim.x * GPB, pl.groups, 0, KW, sl, nxt);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int c = ((rr * U + u) * KW + sl) * 32 + lane;
                const bool in = c < nch;
#pragma unroll
                for (int j = 0; j < N; j++) {
                    float xf[8];
                    unpack8(lds_input(smem_x + ((size_t)j * K + (size_t)c * 8) * 2, in), xf);
                    acc[0][j] = dot8(cur[u][0], xf, acc[0][j]);
                    acc[1][j] = dot8(cur[u][1], xf, acc[1][j]);
                }
            }
            if (rr + 1 < R || more)
#pragma unroll
                for (int u = 0; u < U; u++) cur[u][0] = nxt[u][0], cur[u][1] = nxt[u][1];
        }
        group_finish<N>(p, pl, g, r, ok, acc, part, best);
    }
    if (p.epilogue == ORTHROS_GEMV_ARGMAX) block_argmax<N>(p, pl, best, &last);
}

/* The v2 plan (host): 0 and pl filled when v2 takes the call (n <= 4, the staged input within 64 KB), else
 * ORTHROS_EUNSUPPORTED. KW: the fewest slices (1, 2, 4) whose warps, groups times KW, reach three quarters of the
 * warps the machine holds, while a slice keeps a chunk a lane. U: 8 chunks a row at batch 1, else 4.
 * Version 3 (the default since its first GPU run, faster than v2 at every decode shape measured) takes batch 5-8
 * too (U 2 there: 8 input rows' chunks and two weight rows' a round fit 128 registers) and changes the plan:
 *   - U 4 at batch 1-4, so that a warp's share comes in twice as many, half as large rounds. The last round of a
 *     product is latency that nothing overlaps: 1 of 4 rounds on the 1B gate/up, 1 of 2 on the 8B O.
 *   - KW chosen so that the block rounds fill the machine's block slots best. The 8B q/k/v's 3072 groups are 1.45
 *     waves of 264 blocks x 8 warps at KW 1 (73% of the slots) and 2.9 at KW 2 (97%); the 1B q/k/v's 1536 groups
 *     fill 73% at KW 1 and 2, 97% at 4. */
static int gemv_early = ORTHROS_GEMV_EARLY_DEFAULT; /* orthros_gemv_set_early */

int orthros_gemv_set_early(int mask)
{
    if (mask < 0 || mask > 63 || (mask & 4))
        return orthros_error(ORTHROS_EINVAL, "gemv: early mask %d (0 to 63 without 4: bits 1, 2, 8, 16, 32)", mask);
    gemv_early = mask;
    return 0;
}

int orthros_gemv_early(void) { return gemv_early; }

/* orthros_gemv_set_kw: an experiment on the plan's KW. The source counters of the 1B q/k/v product
 * (data/results/h200-2026-12-04-sass/) show the plan's KW 4 leaving each lane 2 of its round's 4 chunks a row and
 * three block rounds a block, each a trip to memory and a barrier of the group's warps. */
static int gemv_kw = 0;

int orthros_gemv_set_kw(int kw)
{
    if (kw != 0 && kw != 1 && kw != 2 && kw != 4)
        return orthros_error(ORTHROS_EINVAL, "gemv: KW %d (1, 2 or 4; 0 the plan's choice)", kw);
    gemv_kw = kw;
    return 0;
}

int orthros_gemv_kw(void) { return gemv_kw; }

static int gemv_fill = ORTHROS_GEMV_FILL_DEFAULT;

int orthros_gemv_set_fill(int rule)
{
    if (rule < 1 || rule > 3) return orthros_error(ORTHROS_EINVAL, "gemv: fill rule %d (1, 2 or 3)", rule);
    gemv_fill = rule;
    return 0;
}

/* orthros_gemv_set_qkv_blocks: 0, or the most blocks a q/k/v product (ROPE) of v3 is launched with */
static int gemv_qkv_blocks = 0;

int orthros_gemv_set_qkv_blocks(int n)
{
    if (n < 0 || n > 4096) return orthros_error(ORTHROS_EINVAL, "gemv: q/k/v blocks %d (0 to 4096)", n);
    gemv_qkv_blocks = n;
    return 0;
}

static int gemv_balance = ORTHROS_GEMV_BALANCE_DEFAULT;

int orthros_gemv_set_balance(int on)
{
    if (on != 0 && on != 1) return orthros_error(ORTHROS_EINVAL, "gemv: balance %d (0 or 1)", on);
    gemv_balance = on;
    return 0;
}

static int gemv_carveout = -1; /* orthros_gemv_set_carveout */

int orthros_gemv_set_carveout(int percent)
{
    if (percent < -1 || percent > 100)
        return orthros_error(ORTHROS_EINVAL, "gemv: carveout %d (-1, or a percent from 0 to 100)", percent);
    gemv_carveout = percent;
    return 0;
}

/* launch: a launch's own grid, to which orthros_gemv_set_qkv_blocks and orthros_gemv_set_balance apply (false: the
 * chain's product, whose grid the chain plans) */
static int make_plan2(const orthros_gemv_params *p, gemv2_plan *pl, int version, bool launch = true)
{
    if (p->n > (version == 3 ? GEMV3_MAX_N : GEMV2_MAX_N)) return ORTHROS_EUNSUPPORTED;
    pl->smem = p->norm_w || version >= 4 ? (size_t)p->n * p->K * 2 : 0;
    if (pl->smem > GEMV2_XS_MAX_BYTES) return ORTHROS_EUNSUPPORTED;
    pl->groups = p->epilogue == ORTHROS_GEMV_SWIGLU || p->epilogue == ORTHROS_GEMV_ROPE ? p->M / 2 : ceil_div(p->M, 2);
    const int sms = p->num_sms > 0 ? p->num_sms : 132, slots = sms * 2 * GEMV_WARPS, nch = p->K / 8, most = sms * 2;
    int KW = 1;
    if (version >= 3) {
        /* the machine's block slots that the block rounds fill: rounds / (waves x slots), the largest wins, a
         * smaller KW on a tie (within 2%); fill rule 2: rounds that fit one block an SM against the SMs */
        double best = -1.0;
        for (int kw = 1; kw <= GEMV2_MAX_KW && (kw == 1 || kw * 32 <= nch); kw *= 2) {
            const int rounds = ceil_div(pl->groups, GEMV_WARPS / kw);
            const double span = gemv_fill == 2 && rounds <= sms ? sms : (double)ceil_div(rounds, most) * most;
            const double fill = rounds / span;
            if (fill > best + 0.02) best = fill, KW = kw;
        }
        /* fill rule 3: a q/k/v product (ROPE) whose KW 1 rounds fit one wave of the block slots takes KW 1, so that
         * every block starts at its last group and lets the attention, a dependent launch, launch at once */
        if (gemv_fill == 3 && p->epilogue == ORTHROS_GEMV_ROPE && ceil_div(pl->groups, GEMV_WARPS) <= most) KW = 1;
        if (version == 3 && gemv_kw) { /* orthros_gemv_set_kw: the largest up to it that K allows */
            KW = 1;
            while (KW < gemv_kw && 2 * KW * 32 <= nch) KW *= 2;
        }
    } else {
        while (KW < GEMV2_MAX_KW && (long)pl->groups * KW * 4 < (long)slots * 3 && 2 * KW * 32 <= nch) KW *= 2;
    }
    pl->KW = KW, pl->GPB = GEMV_WARPS / KW;
    pl->early = version == 3 && p->n == 1 ? gemv_early : 0; /* batch 1 alone (gemv2_groups) */
    pl->U = version >= 4 ? (p->n == 1 ? 4 : 2) : p->n > 4 ? 2 : version >= 3 || p->n > 1 ? 4 : 8;
    const int want = ceil_div(pl->groups, pl->GPB);
    pl->blocks = want < most ? want : most;
    if (launch && gemv_balance && want > most) pl->blocks = ceil_div(want, ceil_div(want, most)); /* same waves */
    pl->trig0 = 0;
    if (launch && version == 3 && gemv_qkv_blocks && p->epilogue == ORTHROS_GEMV_ROPE && gemv_qkv_blocks < pl->blocks)
        pl->blocks = gemv_qkv_blocks, pl->trig0 = 1;
    /* early 16: bit 8 where a warp has at most GEMV_FEW_ROUNDS rounds (block rounds a block x rounds a group) */
    const int rounds = ceil_div(want, pl->blocks) * ceil_div(nch, 32 * KW * pl->U);
    if ((pl->early & 16) && rounds <= GEMV_FEW_ROUNDS) pl->early |= 8;
    if (p->K > 4 * 8 * GEMV_THREADS) pl->early &= ~32; /* rc_stage's one pass */
    return 0;
}

/* One launch of a gemv kernel: its shared-memory limit raised to xs_max once (attr: the caller's flag, NULL when the
 * kernel stages nothing), then a plain launch or, with p->pdl, a programmatic dependent of the stream's previous
 * kernel (kept as such by graph capture), with the carveout orthros_gemv_set_carveout asks where it asks one. */
template <class Plan>
static int launch_gemv(void (*kernel)(orthros_gemv_params, Plan), bool *attr, int xs_max, dim3 grid,
                       const orthros_gemv_params *p, const Plan *pl, size_t smem, cudaStream_t stream,
                       int threads = GEMV_THREADS)
{
    if (attr && !*attr) {
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, xs_max));
        *attr = true;
    }
    if (p->pdl || gemv_carveout >= 0) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute at[2] = {};
        unsigned na = 0;
        if (p->pdl) {
            at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[na++].val.programmaticStreamSerializationAllowed = 1;
        }
        if (gemv_carveout >= 0) {
            at[na].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
            at[na++].val.sharedMemCarveout = (unsigned)gemv_carveout;
        }
        cfg.gridDim = grid, cfg.blockDim = dim3(threads), cfg.dynamicSmemBytes = smem, cfg.stream = stream;
        cfg.attrs = at, cfg.numAttrs = na;
        ORTHROS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, *p, *pl));
    } else {
        kernel<<<grid, threads, smem, stream>>>(*p, *pl);
    }
    ORTHROS_CUDA_LAUNCH_CHECK("gemv");
    return 0;
}

template <int N, int U, bool XS, bool KV = false>
static int launch2(const orthros_gemv_params *p, const gemv2_plan *pl, cudaStream_t stream)
{
    static bool attr = false; /* the shared-memory limit, raised once per instantiation */
    return launch_gemv(gemv2_kernel<N, U, XS, KV>, XS ? &attr : NULL, GEMV2_XS_MAX_BYTES, dim3((unsigned)pl->blocks), p,
                       pl, pl->smem, stream);
}

static int launch_v2(const orthros_gemv_params *p, const gemv2_plan *pl, cudaStream_t stream)
{
    const bool xs = p->norm_w != NULL;
    switch (p->n) {
    case 1:
        if (xs && p->l2_kv[0]) /* the normed q/k/v product asking the attention's caches into L2 */
            return pl->U == 4 ? launch2<1, 4, true, true>(p, pl, stream) : launch2<1, 8, true, true>(p, pl, stream);
        if (pl->U == 4) return xs ? launch2<1, 4, true>(p, pl, stream) : launch2<1, 4, false>(p, pl, stream);
        return xs ? launch2<1, 8, true>(p, pl, stream) : launch2<1, 8, false>(p, pl, stream);
    case 2: return xs ? launch2<2, 4, true>(p, pl, stream) : launch2<2, 4, false>(p, pl, stream);
    case 3: return xs ? launch2<3, 4, true>(p, pl, stream) : launch2<3, 4, false>(p, pl, stream);
    case 4: return xs ? launch2<4, 4, true>(p, pl, stream) : launch2<4, 4, false>(p, pl, stream);
    case 5: return xs ? launch2<5, 2, true>(p, pl, stream) : launch2<5, 2, false>(p, pl, stream);
    case 6: return xs ? launch2<6, 2, true>(p, pl, stream) : launch2<6, 2, false>(p, pl, stream);
    case 7: return xs ? launch2<7, 2, true>(p, pl, stream) : launch2<7, 2, false>(p, pl, stream);
    default: return xs ? launch2<8, 2, true>(p, pl, stream) : launch2<8, 2, false>(p, pl, stream);
    }
}

/* ---- the chain: consecutive products of a decode step in one resident kernel (batch 1; ORTHROS_DECODE_CHAIN) ----
 * Written after the profile of the step (docs/kernels.md, "Where the step goes"): a small product's SMs sat idle for
 * about half its time in the grid's dispatch and drain. The chain runs up to ORTHROS_GEMV_CHAIN_MAX products (the
 * step's O, gate/up, down and the next layer's q/k/v) as one cooperative launch of as many blocks as fit at once,
 * each product as the v3 kernel runs it (its plan, its groups, its sums: the same bits), with a grid barrier between
 * products. Inside one launch an earlier product wrote the input of a later one on other SMs, so inputs are staged
 * through L2 alone (stage_input<true>) and the residual's add reads it the same way; every input is staged in shared
 * memory (raw where there is no norm).
 * H200 (data/results/h200-2026-12-02-chain): bit for bit against one-by-one launches, but slower than them in the
 * captured step: first (f075598, a textbook barrier, the next product's first group asked into L2 before it) 1.123 ms
 * a step at 1B 4K against 1.006, then (cf5b787 and 308701f, the flat barrier below, nothing asked ahead) 1.080 and
 * 1.046 against 1.005 and 1.009, and 4.689 and 4.597 against 4.476 and 4.438 at 8B 4K. It moves the grid's idle time
 * into the barrier's wait rather than removing it. Each block copying the next product's first weights into shared
 * memory (cp.async, 32-64 KB a block) while it waits was slower still (1.212-1.273 ms at 1B 4K). Opt-in. */
struct gemv_chain_args {
    orthros_gemv_params p[ORTHROS_GEMV_CHAIN_MAX];
    gemv2_plan pl[ORTHROS_GEMV_CHAIN_MAX];
    int n;
};

/* The barrier between products: cuda_common.cuh's grid_barrier_flat with its fence, arrivals in sync[0]. chain_depart
 * at the end of the launch puts both words back at 0 for the next one: departures count in sync[1], and the last block
 * to depart (every block has passed every barrier by then) clears them. */
static __device__ __forceinline__ void chain_depart(unsigned *sync)
{
    if (threadIdx.x == 0 && atomicAdd(sync + 1, 1u) == gridDim.x - 1) {
        *(volatile unsigned *)sync = 0u;
        *(volatile unsigned *)(sync + 1) = 0u;
    }
}

static __global__ void __launch_bounds__(GEMV_THREADS, 2) gemv_chain_kernel(const gemv_chain_args a)
{
    extern __shared__ __align__(16) unsigned char smem_x[]; /* [K] bf16 of the product running */
    __shared__ float part[GEMV_WARPS][2][1];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;
    __shared__ float red[GEMV_WARPS];
    unsigned *sync = (unsigned *)((char *)a.p[0].scratch + GEMV_CHAIN_SYNC_OFFSET);
#pragma unroll
    for (int i = 0; i < ORTHROS_GEMV_CHAIN_MAX; i++) {
        if (i >= a.n) break;
        /* a normed input staged as v3 stages it under the same early mask (32: one trip), so the same bits */
        if ((a.pl[i].early & 32) && a.p[i].norm_w) rc_stage(a.p[i], smem_x, red);
        else stage_input<true>(a.p[i], smem_x, a.p[i].K * 2, rs, 0, a.p[i].K / 8);
        gemv2_groups<1, 4, true>(a.p[i], a.pl[i], smem_x, part, &last);
        if (i + 1 == a.n) break;
        /* then the next product stages its input where this one's was */
        grid_barrier_flat<true>(sync, (unsigned)(i + 1) * gridDim.x);
    }
    if (a.n > 1) chain_depart(sync);
}

/* The chain's plan of one product: v3's at batch 1 with the input staged (within 64 KB). */
static int make_chain_plan(const orthros_gemv_params *p, gemv2_plan *pl)
{
    if (p->n != 1 || p->epilogue == ORTHROS_GEMV_ARGMAX || p->epilogue == ORTHROS_GEMV_MLP || !orthros_gemv_supported(p))
        return ORTHROS_EUNSUPPORTED;
    if (make_plan2(p, pl, 3, false) || pl->U != 4) return ORTHROS_EUNSUPPORTED;
    pl->smem = (size_t)p->K * 2;
    return pl->smem <= GEMV2_XS_MAX_BYTES ? 0 : ORTHROS_EUNSUPPORTED;
}

int orthros_gemv_chain_supported(const orthros_gemv_params *p)
{
    gemv2_plan pl;
    return make_chain_plan(p, &pl) == 0;
}

int orthros_gemv_chain_bf16(const orthros_gemv_params *ops, int n, cudaStream_t stream)
{
    if (!ops || n < 1 || n > ORTHROS_GEMV_CHAIN_MAX)
        return orthros_error(ORTHROS_EINVAL, "gemv chain: %d products (1 to %d)", n, ORTHROS_GEMV_CHAIN_MAX);
    gemv_chain_args a;
    memset(&a, 0, sizeof a);
    a.n = n;
    size_t smem = 0;
    for (int i = 0; i < n; i++) {
        if (make_chain_plan(&ops[i], &a.pl[i]))
            return orthros_error(ORTHROS_EUNSUPPORTED, "gemv chain: product %d (n %d, M %d, K %d, epilogue %d) is not one "
                                 "the chain takes (batch 1, no argmax, K at most %d)", i, ops[i].n, ops[i].M, ops[i].K,
                                 ops[i].epilogue, (int)(GEMV2_XS_MAX_BYTES / 2));
        if (!ops[i].scratch || ops[i].scratch != ops[0].scratch)
            return orthros_error(ORTHROS_EINVAL, "gemv chain: product %d without the scratch of product 0", i);
        a.p[i] = ops[i];
        smem = a.pl[i].smem > smem ? a.pl[i].smem : smem;
    }
    static bool attr = false;
    if (!attr) {
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(gemv_chain_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)GEMV2_XS_MAX_BYTES));
        attr = true;
    }
    int per_sm = 0, dev = 0, sms = 0;
    ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_chain_kernel, GEMV_THREADS, smem));
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (per_sm < 1) return orthros_error(ORTHROS_EUNSUPPORTED, "gemv chain: no block fits on an SM");
    per_sm = per_sm < 2 ? per_sm : 2;
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cfg.gridDim = dim3((unsigned)(per_sm * sms)), cfg.blockDim = dim3(GEMV_THREADS), cfg.dynamicSmemBytes = smem;
    cfg.stream = stream, cfg.attrs = at, cfg.numAttrs = 1;
    ORTHROS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_chain_kernel, a));
    ORTHROS_CUDA_LAUNCH_CHECK("gemv chain");
    return 0;
}

/* ---- the ring chain: the chain's products streamed through a shared-memory ring (ORTHROS_DECODE_CHAIN_RING) ----
 * The stream probe (step_probe.h; docs/kernels.md, "A step through one ring") ran a step's products in one resident
 * kernel with a producer warp a block streaming every product's rows through a ring of 32 KB stages: the products'
 * bodies at their bytes' floor, each grid step between them 2.5-5 us. This is the chain above in that form: one
 * cooperative launch of one block an SM; a product's groups (v3's pairs of rows: gate and up row f, a RoPE pair, two
 * rows) split into a contiguous range a block; the producer warp streams the block's groups' rows, row A then row B,
 * product after product, through RC_NS stages (1-d bulk copies of the rows' pieces on mbarriers), waiting for nothing
 * but free stages; 16 consumer warps stage each product's input (normed, through L2, as the chain does), sum each row
 * (ring.cuh), run the group's epilogue (v3's functions: the same outputs up to the order of the sums), and meet the
 * grid (the flat barrier, among the consumers) before the next product. Batch 1, M even (M a multiple of d for RoPE),
 * K a multiple of 256 up to 14336, sm_90. H200 (data/results/h200-2026-12-03-ring-chain): correct, and slower than
 * the products one by one in the step (its first form, 58.6 us a layer alone at 1B 4K against their 49.3); its form 1
 * takes the input in one trip to L2 and loads the epilogue's operands while the input stages (rc_stage, rc_preload). */
#define RC_SB (32 * 1024)
#define RC_NS 6
#define RC_WARPS 16
#define RC_CONSUMERS (RC_WARPS * 32)
#define RC_THREADS (RC_CONSUMERS + 32)
#define RC_MAX_ROWS 512 /* rows of a product a block: 2 a group */
#define RC_MAX_K 14336

struct gemv_ring_chain_args {
    orthros_gemv_params p[ORTHROS_GEMV_CHAIN_MAX];
    unsigned long long *stamps; /* NULL, or [n][4][G] + [G]: a product's input staged, its rows summed, its epilogue
                                 * done, the barrier after it passed, a block each; then each block's start */
    int n;
    int ahead; /* the stages of a product (after the first) the producer copies before its input is staged; -1 all */
};

static __device__ __host__ __forceinline__ int rc_groups(const orthros_gemv_params &p) { return p.M / 2; }
static __device__ __host__ __forceinline__ int rc_split(int n, int b, int G) { return (int)((long long)n * b / G); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* The consumers' grid barrier (the flat one of grid_barrier_flat, over named barrier 2 of the consumers: the
 * producer warp takes no part). */
static __device__ __forceinline__ void rc_barrier(unsigned *sync, unsigned target)
{
    bar_sync(2, RC_CONSUMERS);
    if (threadIdx.x == 0) {
        __threadfence();
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(sync) : "memory");
        while (ld_acquire_gpu(sync) < target) {
        }
    }
    bar_sync(2, RC_CONSUMERS);
}

/* The block's row v (of 2 ng, for its ng groups from g0) of a product in the order the ring carries them: a paired
 * product's (SWIGLU, ROPE) rows A of its groups, then their rows B (each a run of consecutive rows, broken only at a
 * RoPE head's end), so that the producer copies runs of rows rather than a row at a time (ab8c7ac copied a row at a
 * time, row A then row B: gate/up's rows at 58% of the read ceiling, down's longer rows at 100%); another product's
 * rows in their own order, from 2 g0. */
static __device__ __forceinline__ bool rc_paired(const orthros_gemv_params &p)
{
    return p.epilogue == ORTHROS_GEMV_SWIGLU || p.epilogue == ORTHROS_GEMV_ROPE;
}

static __device__ __forceinline__ int rc_vrow(const orthros_gemv_params &p, int g0, int ng, int v)
{
    if (!rc_paired(p)) return 2 * g0 + v;
    int r[2];
    bool ok[2];
    gemv2_rows(p, g0 + (v < ng ? v : v - ng), r, ok);
    return r[v < ng ? 0 : 1];
}

/* Form 0's epilogue of a group: v3's (group_finish) with the two rows' sums a and b, its operands (the residual, the
 * position) loaded here. */
static __device__ __forceinline__ void rc_epilogue(const orthros_gemv_params &p, int g, float a, float b)
{
    int r[2];
    bool ok[2];
    gemv2_rows(p, g, r, ok);
    if (p.epilogue == ORTHROS_GEMV_SWIGLU) epi_swiglu(p, 0, g, a, b);
    else if (p.epilogue == ORTHROS_GEMV_ROPE) {
        int h, i;
        rope_group(p, g, h, i);
        epi_rope(p, 0, h, i, a, b);
    }
    else {
        if (ok[0]) epi_store(p, 0, r[0], a);
        if (ok[1]) epi_store(p, 0, r[1], b);
    }
}

/* Form 1's epilogue operands of the block's groups [g0, g1), into pre[2 a group] by the consumer threads from t (of
 * nt): ADD's residual values (read before the product writes them), ROPE's cosine and sine (the position, read once,
 * into *pos). Run while the first GEMV_THREADS stage the input, so that their loads and RoPE's double-precision
 * sincos wait behind the staging's trip to L2 rather than after the rows' sums. */
static __device__ __forceinline__ void rc_preload(const orthros_gemv_params &p, int g0, int g1, float *pre, int *pos,
                                                  int t, int nt)
{
    if (p.epilogue == ORTHROS_GEMV_ADD) {
        for (int gi = t; gi < g1 - g0; gi += nt) {
            int r[2];
            bool ok[2];
            gemv2_rows(p, g0 + gi, r, ok);
            pre[2 * gi] = ok[0] ? bf2f(__ldcg((const bf16 *)p.out + r[0])) : 0.0f;
            pre[2 * gi + 1] = ok[1] ? bf2f(__ldcg((const bf16 *)p.out + r[1])) : 0.0f;
        }
    } else if (p.epilogue == ORTHROS_GEMV_ROPE) {
        const int ps = p.pos[0];
        if (t == 0) *pos = ps;
        for (int gi = t; gi < g1 - g0; gi += nt) {
            const int g = g0 + gi;
            int h, i;
            rope_group(p, g, h, i);
            if (h < p.Hq + p.Hkv) rope_cs(p, ps, i, pre[2 * gi], pre[2 * gi + 1]);
        }
    }
}

/* Form 1's epilogue of a group from its operands in pre (rc_preload); epi_store, epi_swiglu and epi_rope_cs write. */
static __device__ __forceinline__ void rc_epilogue_pre(const orthros_gemv_params &p, int g, int gi, float a, float b,
                                                       const float *pre, int pos)
{
    int r[2];
    bool ok[2];
    gemv2_rows(p, g, r, ok);
    if (p.epilogue == ORTHROS_GEMV_SWIGLU) {
        epi_swiglu(p, 0, g, a, b);
    } else if (p.epilogue == ORTHROS_GEMV_ROPE) {
        int h, i;
        rope_group(p, g, h, i);
        epi_rope_cs(p, 0, h, i, a, b, pos, pre[2 * gi], pre[2 * gi + 1]);
    } else if (p.epilogue == ORTHROS_GEMV_ADD) {
        if (ok[0]) ((bf16 *)p.out)[r[0]] = add_resid(pre[2 * gi], a);
        if (ok[1]) ((bf16 *)p.out)[r[1]] = add_resid(pre[2 * gi + 1], b);
    } else {
        if (ok[0]) epi_store(p, 0, r[0], a);
        if (ok[1]) epi_store(p, 0, r[1], b);
    }
}

static __device__ __forceinline__ void rc_stamp(const gemv_ring_chain_args &a, int i, int s)
{
    if (a.stamps && threadIdx.x == 0) a.stamps[((size_t)i * 4 + s) * gridDim.x + blockIdx.x] = globaltimer_ns();
}
#endif

/* FORM 0: the input staged by stage_input (two trips to L2 where there is a norm) and the epilogue's operands loaded
 * after the rows' sums; FORM 1: rc_stage (one trip) while the other consumers preload the operands (rc_preload). */
template <int FORM>
static __global__ void __launch_bounds__(RC_THREADS, 1) gemv_ring_chain_kernel(const gemv_ring_chain_args a)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char rc_smem[]; /* ring [NS][SB] | x [K] bf16 */
    __shared__ __align__(8) unsigned long long bars[2 * RC_NS]; /* full, then empty */
    __shared__ float rowsum[RC_MAX_ROWS];
    __shared__ float pre[FORM ? RC_MAX_ROWS : 1];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS > GEMV_WARPS ? ORTHROS_GEMV_MAX_ROWS : GEMV_WARPS];
    __shared__ int pos;
    __shared__ volatile int staged; /* the last product whose input the consumers have staged */
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, G = gridDim.x, b = blockIdx.x;
    unsigned char *xs = rc_smem + (size_t)RC_NS * RC_SB;
    unsigned *sync = (unsigned *)((char *)a.p[0].scratch + GEMV_CHAIN_SYNC_OFFSET);
    const uint32_t full0 = smem_addr(&bars[0]), empty0 = smem_addr(&bars[RC_NS]);
    if (a.stamps && tid == 0) a.stamps[(size_t)a.n * 4 * G + b] = globaltimer_ns(); /* the block's start */
    ring_init(full0, empty0, RC_NS, RC_WARPS);
    for (int i = tid; i < RC_MAX_ROWS; i += RC_THREADS) rowsum[i] = 0.0f;
    if (tid == 0) staged = -1;
    __syncthreads();

    if (warp == RC_WARPS) { /* the producer: the block's rows of every product, in rc_vrow's order */
        if (lane != 0) return;
        uint32_t idx = 0;
        for (int i = 0; i < a.n; i++) {
            const orthros_gemv_params &p = a.p[i];
            const int groups = rc_groups(p), g0 = rc_split(groups, b, G), g1 = rc_split(groups, b + 1, G);
            const uint32_t rb = (uint32_t)p.K * 2;
            const unsigned char *W = (const unsigned char *)p.W;
            uint32_t voff = 0; /* in the run of the block's rows */
            for (uint32_t left = 2u * (uint32_t)(g1 - g0) * rb, issued = 0; left > 0; idx++, issued++) {
                const uint32_t cnt = left < RC_SB ? left : RC_SB;
                const int slot = idx % RC_NS;
                if (i > 0 && a.ahead >= 0 && issued >= (uint32_t)a.ahead) /* the lead into product i bounded */
                    while (staged < i) {
                    }
                const uint32_t full = full0 + 8 * slot, dst = smem_addr(rc_smem + (size_t)slot * RC_SB);
                mbar_wait(empty0 + 8 * slot, ((idx / RC_NS) & 1) ^ 1);
                mbar_expect_tx(full, cnt);
                for (uint32_t done = 0; done < cnt;) { /* the stage's runs of consecutive rows, a copy each */
                    const uint32_t v = (voff + done) / rb, col = (voff + done) % rb;
                    const int r0 = rc_vrow(p, g0, g1 - g0, (int)v);
                    uint32_t piece = rb - col, nv = v + 1;
                    while (piece < cnt - done && rc_vrow(p, g0, g1 - g0, (int)nv) == r0 + (int)(nv - v))
                        piece += rb, nv++;
                    piece = piece < cnt - done ? piece : cnt - done;
                    bulk_copy(dst + done, W + (size_t)r0 * rb + col, piece, full);
                    done += piece;
                }
                voff += cnt, left -= cnt;
            }
        }
        return;
    }
    /* the consumers */
    uint32_t idx = 0;
    for (int i = 0; i < a.n; i++) {
        const orthros_gemv_params &p = a.p[i];
        const int groups = rc_groups(p), g0 = rc_split(groups, b, G), g1 = rc_split(groups, b + 1, G);
        const uint32_t rb = (uint32_t)p.K * 2;
        /* the input, normed where the product has a norm, by the first GEMV_THREADS consumers */
        if constexpr (FORM == 0) {
            if (tid < GEMV_THREADS) stage_input<true, 1>(p, xs, p.K * 2, rs, 0, p.K / 8);
        } else {
            if (tid < GEMV_THREADS) rc_stage(p, xs, rs);
            else rc_preload(p, g0, g1, pre, &pos, tid - GEMV_THREADS, RC_CONSUMERS - GEMV_THREADS);
        }
        bar_sync(2, RC_CONSUMERS);
        if (tid == 0) staged = i;
        rc_stamp(a, i, 0);
        uint32_t off = 0;
        for (uint32_t left = 2u * (uint32_t)(g1 - g0) * rb; left > 0; idx++) {
            const uint32_t cnt = left < RC_SB ? left : RC_SB;
            const int slot = idx % RC_NS;
            mbar_wait(full0 + 8 * slot, (idx / RC_NS) & 1);
            ring_consume_fma<RC_SB / 512 / RC_WARPS>(rc_smem + (size_t)slot * RC_SB, xs, off, cnt, rb, warp, lane,
                                                     rowsum);
            __syncwarp();
            if (lane == 0) mbar_arrive(empty0 + 8 * slot);
            off += cnt, left -= cnt;
        }
        bar_sync(2, RC_CONSUMERS);
        rc_stamp(a, i, 1);
        for (int gi = tid; gi < g1 - g0; gi += RC_CONSUMERS) {
            const int ia = rc_paired(p) ? gi : 2 * gi, ib = rc_paired(p) ? g1 - g0 + gi : 2 * gi + 1; /* rc_vrow */
            if constexpr (FORM == 0) rc_epilogue(p, g0 + gi, rowsum[ia], rowsum[ib]);
            else rc_epilogue_pre(p, g0 + gi, gi, rowsum[ia], rowsum[ib], pre, pos);
            rowsum[ia] = rowsum[ib] = 0.0f;
        }
        if (a.stamps) {
            bar_sync(2, RC_CONSUMERS);
            rc_stamp(a, i, 2);
        }
        if (i + 1 < a.n) rc_barrier(sync, (unsigned)(i + 1) * (unsigned)G);
        rc_stamp(a, i, 3);
    }
    if (a.n > 1) chain_depart(sync);
#endif
}

/* Whether the ring chain takes a product (host): batch 1, an epilogue of the chain's but SWIGLU's or ROPE's pairing
 * whole (M even; RoPE's M a multiple of d), K a multiple of 256 up to RC_MAX_K (with a norm up to 8 x 4 x
 * GEMV_THREADS, rc_stage's one pass), 16-byte aligned weights, sm_90. */
int orthros_gemv_ring_chain_supported(const orthros_gemv_params *p)
{
    if (!orthros_gemv_chain_supported(p) || !orthros_cuda_sm90_available()) return 0;
    if (p->M < 2 || p->M % 2 || p->K % 256 || p->K > RC_MAX_K || (uintptr_t)p->W % 16) return 0;
    if (p->norm_w && p->K > 32 * GEMV_THREADS) return 0;
    if (p->epilogue == ORTHROS_GEMV_ROPE && (p->d < 2 || p->M % p->d)) return 0;
    return 1;
}

static int rc_form = 1, rc_ahead = -1;

int orthros_gemv_ring_chain_set_ahead(int stages)
{
    if (stages < -1 || stages > RC_NS)
        return orthros_error(ORTHROS_EINVAL, "gemv ring chain: %d stages ahead (-1 for no bound, or 0 to %d)", stages,
                             RC_NS);
    rc_ahead = stages;
    return 0;
}

int orthros_gemv_ring_chain_set_form(int form)
{
    if (form < 0 || form > 1) return orthros_error(ORTHROS_EINVAL, "gemv ring chain: form %d (0 or 1)", form);
    rc_form = form;
    return 0;
}

template <int FORM>
static int rc_launch(const gemv_ring_chain_args &a, int sms, int optin, int maxk, cudaStream_t stream)
{
    const size_t smem = (size_t)RC_NS * RC_SB + (size_t)maxk * 2;
    cudaFuncAttributes fa;
    ORTHROS_CUDA_CHECK(cudaFuncGetAttributes(&fa, gemv_ring_chain_kernel<FORM>));
    if (smem + fa.sharedSizeBytes > (size_t)optin)
        return orthros_error(ORTHROS_EUNSUPPORTED, "gemv ring chain: %zu bytes of shared memory (%d)",
                             smem + fa.sharedSizeBytes, optin);
    static bool attr = false;
    if (!attr) {
        ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(gemv_ring_chain_kernel<FORM>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                optin - (int)fa.sharedSizeBytes));
        attr = true;
    }
    int per_sm = 0;
    ORTHROS_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemv_ring_chain_kernel<FORM>, RC_THREADS, smem));
    if (per_sm < 1) return orthros_error(ORTHROS_EUNSUPPORTED, "gemv ring chain: no block fits on an SM");
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cfg.gridDim = dim3((unsigned)sms), cfg.blockDim = dim3(RC_THREADS), cfg.dynamicSmemBytes = smem;
    cfg.stream = stream, cfg.attrs = at, cfg.numAttrs = 1;
    ORTHROS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, gemv_ring_chain_kernel<FORM>, a));
    ORTHROS_CUDA_LAUNCH_CHECK("gemv ring chain");
    return 0;
}

int orthros_gemv_ring_chain_stamped(const orthros_gemv_params *ops, int n, unsigned long long *stamps,
                                    cudaStream_t stream)
{
    if (!ops || n < 1 || n > ORTHROS_GEMV_CHAIN_MAX)
        return orthros_error(ORTHROS_EINVAL, "gemv ring chain: %d products (1 to %d)", n, ORTHROS_GEMV_CHAIN_MAX);
    int dev = 0, sms = 0, coop = 0, optin = 0, maxk = 0;
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (!coop) return orthros_error(ORTHROS_EUNSUPPORTED, "gemv ring chain: no cooperative launch on this device");
    gemv_ring_chain_args a;
    memset(&a, 0, sizeof a);
    a.n = n, a.stamps = stamps, a.ahead = rc_ahead;
    for (int i = 0; i < n; i++) {
        if (!orthros_gemv_ring_chain_supported(&ops[i]) || 2 * (rc_split(ops[i].M / 2, 1, sms) + 1) > RC_MAX_ROWS)
            return orthros_error(ORTHROS_EUNSUPPORTED, "gemv ring chain: product %d (n %d, M %d, K %d, epilogue %d) is "
                                 "not one the ring chain takes (batch 1, M even, K a multiple of 256 up to %d, with "
                                 "a norm up to %d, sm_90)", i, ops[i].n, ops[i].M, ops[i].K, ops[i].epilogue, RC_MAX_K,
                                 32 * GEMV_THREADS);
        if (!ops[i].scratch || ops[i].scratch != ops[0].scratch)
            return orthros_error(ORTHROS_EINVAL, "gemv ring chain: product %d without the scratch of product 0", i);
        a.p[i] = ops[i];
        maxk = ops[i].K > maxk ? ops[i].K : maxk;
    }
    return rc_form ? rc_launch<1>(a, sms, optin, maxk, stream) : rc_launch<0>(a, sms, optin, maxk, stream);
}

int orthros_gemv_ring_chain_bf16(const orthros_gemv_params *ops, int n, cudaStream_t stream)
{
    return orthros_gemv_ring_chain_stamped(ops, n, NULL, stream);
}

template <int N, int U> static int launch4(const orthros_gemv_params *p, const gemv2_plan *pl, cudaStream_t stream)
{
    static bool attr = false; /* the shared-memory limit, raised once per instantiation */
    return launch_gemv(gemv4_kernel<N, U>, &attr, GEMV2_XS_MAX_BYTES, dim3((unsigned)pl->blocks), p, pl, pl->smem,
                       stream);
}

static int launch_v4(const orthros_gemv_params *p, const gemv2_plan *pl, cudaStream_t stream)
{
    switch (p->n) {
    case 1: return launch4<1, 4>(p, pl, stream);
    case 2: return launch4<2, 2>(p, pl, stream);
    case 3: return launch4<3, 2>(p, pl, stream);
    default: return launch4<4, 2>(p, pl, stream);
    }
}

/* ---- the MLP of a decode step in one launch (ORTHROS_GEMV_MLP; the cuda backend's norm_mlp_add) ----
 * The profile of the captured step (docs/kernels.md, "Where the step goes") has every product 4-5 us over its bytes:
 * its grid's dispatch, first trip and drain. Gate/up and down are two such products with a grid-wide step between
 * them only because every down output reads all of the SwiGLU row. Split the down product's K (= F) over the same
 * slices as the gate/up rows and that step goes: a unit is MLP_S consecutive columns f of the intermediate; its
 * block computes their gate and up rows (v3's groups: two rows a warp, U chunks a lane in flight, the input staged
 * normed in shared memory), rounds h = swiglu(g, u) to bf16 as SWIGLU would, and multiplies the MLP_S columns of
 * W_down by them at once (four lanes a row, 16 bytes each), adding each output's slice sum into the block's fp32
 * sums in shared memory. The grid walks the units; at the end each block adds its sums into the call's accumulator
 * in 64-bit fixed point (2^-MLP_FIX_SHIFT, one atomic an output: integer sums, so the result does not depend on which
 * block adds first), and the last block to finish (a ticket) rounds them to bf16, adds them into the residual and
 * zeroes the accumulator for the next call. A block's first down rows are asked into L2 as its warps start their
 * last gate/up group. Deterministic for a given shape and SM count; not the bits of SWIGLU then ADD (another order of
 * the down sums, and v3's K split of gate/up where it splits). */
#define MLP_S 32                 /* intermediate columns a unit */
#define MLP_U 4                  /* gate/up chunks a lane in flight a row */
#define MLP_UD 8                 /* down rows a lane in flight */
#define MLP_MAX_N 4
#define MLP_MAX_K 16384
#define MLP_FIX_SHIFT 28         /* the accumulator's fixed point */
#define MLP_FIX_MAX 33554432.0f  /* 2^25: a block's sum at or past it (or NaN) is flagged; 2^9 blocks keep the sum in
                                  * 2^63 */
#define MLP_MAX_BLOCKS 512
#define MLP_SMEM_MAX (96 * 1024) /* the staged input and the block's sums: n K 6 bytes */
#define GEMV_MLP_SYNC_OFFSET (((size_t)24 << 10) + 64) /* the ticket, then the flag word */
#define GEMV_MLP_ACC_OFFSET (GEMV_PARTIALS_OFFSET + GEMV_PARTIAL_BYTES)
#define GEMV_MLP_FLAGS_OFFSET (GEMV_MLP_ACC_OFFSET + (size_t)MLP_MAX_N * MLP_MAX_K * 8)
#define GEMV_MLP_END (GEMV_MLP_FLAGS_OFFSET + (size_t)MLP_MAX_N * MLP_MAX_K * 4)

struct mlp_plan {
    int units, blocks;
    size_t smem;
};

static int make_mlp_plan(const orthros_gemv_params *p, mlp_plan *pl)
{
    const int F = p->M / 2;
    if (p->n < 1 || p->n > MLP_MAX_N || p->M % 2 || F % MLP_S || p->K > MLP_MAX_K) return ORTHROS_EUNSUPPORTED;
    pl->smem = (size_t)p->n * p->K * 6;
    if (pl->smem > MLP_SMEM_MAX) return ORTHROS_EUNSUPPORTED;
    const int sms = p->num_sms > 0 ? p->num_sms : 132, most = 2 * sms < MLP_MAX_BLOCKS ? 2 * sms : MLP_MAX_BLOCKS;
    pl->units = F / MLP_S;
    pl->blocks = pl->units < most ? pl->units : most;
    return 0;
}

/* The end of an MLP launch (every thread of the block calls it): the block's sums [N][K] (shared memory) into the
 * accumulator, and in the last block to finish the accumulator rounded and added into the residual, the accumulator,
 * flags and ticket zeroed. The first GEMV_THREADS threads do the work (a block may have more: the ring kernel's
 * producer warp). */
template <int N>
static __device__ __forceinline__ void mlp_finish(const orthros_gemv_params &p, const float *sums, int *last_flag)
{
    const int tid = threadIdx.x, K = p.K;
    int &last = *last_flag;
    /* the block's sums into the accumulator */
    char *sb = (char *)p.scratch;
    unsigned long long *accum = (unsigned long long *)(sb + GEMV_MLP_ACC_OFFSET);
    unsigned *flags = (unsigned *)(sb + GEMV_MLP_FLAGS_OFFSET), *done = (unsigned *)(sb + GEMV_MLP_SYNC_OFFSET),
             *any = done + 1;
    for (int e = tid; tid < GEMV_THREADS && e < N * K; e += GEMV_THREADS) {
        const float v = sums[e];
        if (fabsf(v) < MLP_FIX_MAX) {
            atomicAdd(accum + e, (unsigned long long)__float2ll_rn(ldexpf(v, MLP_FIX_SHIFT)));
        } else {
            atomicOr(flags + e, isnan(v) ? 1u : v > 0.0f ? 2u : 4u);
            atomicOr(any, 1u);
        }
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const unsigned flagged = __ldcg(any);
    /* 8 consecutive outputs a thread (K is a multiple of 8), every load of them issued before the first use: one
     * trip to L2, where an element at a time made one a step (2-3 us of the 1B kernel on the H200) */
    bf16 *R = (bf16 *)p.out;
    for (int e0 = tid * 8; tid < GEMV_THREADS && e0 < N * K; e0 += GEMV_THREADS * 8) {
        ulonglong2 a[4];
#pragma unroll
        for (int q = 0; q < 4; q++) a[q] = __ldcg((const ulonglong2 *)(accum + e0) + q);
        const uint4 rv = *(const uint4 *)(R + e0);
        uint4 fl = zero4(), fh = zero4();
        if (flagged) fl = __ldcg((const uint4 *)(flags + e0)), fh = __ldcg((const uint4 *)(flags + e0) + 1);
        const unsigned long long av[8] = {a[0].x, a[0].y, a[1].x, a[1].y, a[2].x, a[2].y, a[3].x, a[3].y};
        const unsigned fv[8] = {fl.x, fl.y, fl.z, fl.w, fh.x, fh.y, fh.z, fh.w};
        const uint32_t rw[4] = {rv.x, rv.y, rv.z, rv.w};
        uint32_t ow[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float o[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int i = 2 * q + h;
                float v = __ll2float_rn((long long)av[i]) * (1.0f / (float)(1u << MLP_FIX_SHIFT));
                if (fv[i]) v = (fv[i] & 1u) || fv[i] == 6u ? NAN : fv[i] == 2u ? INFINITY : -INFINITY;
                o[h] = bf2f(f2bf((h ? bf16x2_hi(rw[q]) : bf16x2_lo(rw[q])) + bf2f(f2bf(v))));
            }
            ow[q] = pack_bf16x2(o[0], o[1]);
        }
        *(uint4 *)(R + e0) = make_uint4(ow[0], ow[1], ow[2], ow[3]);
#pragma unroll
        for (int q = 0; q < 4; q++) ((ulonglong2 *)(accum + e0))[q] = make_ulonglong2(0ull, 0ull);
        if (flagged) ((uint4 *)(flags + e0))[0] = zero4(), ((uint4 *)(flags + e0))[1] = zero4();
    }
    if (tid == 0) *done = 0u, *any = 0u;
}

template <int N>
static __global__ void __launch_bounds__(GEMV_THREADS, 2) mlp_kernel(const orthros_gemv_params p, const mlp_plan pl)
{
    extern __shared__ __align__(16) unsigned char smem_x[]; /* [N][K] bf16 the normed input, then [N][K] fp32 sums */
    __shared__ float hs[N][MLP_S];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, K = p.K, F = p.M / 2, nch = K / 8;
    const bf16 *Wg = (const bf16 *)p.W, *Wd = (const bf16 *)p.W_down;
    float *sums = (float *)(smem_x + (size_t)N * K * 2);
    const int g4 = lane / 4, c4 = lane % 4; /* the down phase: row g4 of the warp's eight, columns 8 c4 .. 8 c4 + 7 */

    pdl_trigger();
    /* the first unit's gate and up rows, a round of each of the warp's groups, asked into L2 while the input is
     * staged */
    for (int i = warp; i < MLP_S && (int)blockIdx.x < pl.units; i += GEMV_WARPS) {
        const int f = blockIdx.x * MLP_S + i;
        for (int t = 0; t < MLP_U; t++) {
            const int c = t * 32 + lane;
            if (c >= nch) break;
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(Wg + (size_t)f * K + (size_t)c * 8));
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(Wg + (size_t)(F + f) * K + (size_t)c * 8));
        }
    }
    pdl_wait();
    for (int e = tid; e < N * K; e += GEMV_THREADS) sums[e] = 0.0f;
    stage_input(p, smem_x, K * 2, rs, 0, nch); /* ends with a block barrier */

    for (int u = blockIdx.x; u < pl.units; u += gridDim.x) {
        const int f0 = u * MLP_S;
        /* gate and up: the warp's groups i = warp, warp + 8, ... of the unit */
        for (int i = warp; i < MLP_S; i += GEMV_WARPS) {
            const int f = f0 + i;
            if (i + GEMV_WARPS >= MLP_S) /* the warp's last group: its first down rows into L2 */
#pragma unroll
                for (int q = 0; q < MLP_UD; q++) {
                    const int r = q * 64 + warp * 8 + g4;
                    if (r < K && c4 == 0)
                        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(Wd + (size_t)r * F + f0));
                }
            const bf16 *w0 = Wg + (size_t)f * K, *w1 = Wg + (size_t)(F + f) * K;
            float acc[2][N];
#pragma unroll
            for (int j = 0; j < N; j++) acc[0][j] = acc[1][j] = 0.0f;
            for (int t0 = 0; t0 * 32 < nch; t0 += MLP_U)
                group_round<N, MLP_U, true>(w0, w1, true, true, NULL, smem_x, K, t0, 1, 0, lane, acc);
#pragma unroll
            for (int j = 0; j < N; j++)
                for (int o = 16; o > 0; o >>= 1) {
                    acc[0][j] += __shfl_xor_sync(0xffffffffu, acc[0][j], o);
                    acc[1][j] += __shfl_xor_sync(0xffffffffu, acc[1][j], o);
                }
            if (lane == 0)
#pragma unroll
                for (int j = 0; j < N; j++) hs[j][i] = bf2f(f2bf(swiglu_of(acc[0][j], acc[1][j]))); /* epi_swiglu's */
        }
        __syncthreads();
        /* down: output rows r = 64 t + 8 warp + g4 over the unit's columns, MLP_UD rows a lane in flight */
        float hv[N][8];
#pragma unroll
        for (int j = 0; j < N; j++)
#pragma unroll
            for (int e = 0; e < 8; e++) hv[j][e] = hs[j][c4 * 8 + e];
        for (int t0 = 0; t0 * 64 < K; t0 += MLP_UD) {
            uint4 wv[MLP_UD];
#pragma unroll
            for (int q = 0; q < MLP_UD; q++) {
                const int r = (t0 + q) * 64 + warp * 8 + g4;
                const size_t rr = r < K ? r : 0;
                wv[q] = ld_weights(Wd + rr * F + f0 + c4 * 8, r < K);
            }
#pragma unroll
            for (int q = 0; q < MLP_UD; q++) {
                const int r = (t0 + q) * 64 + warp * 8 + g4;
#pragma unroll
                for (int j = 0; j < N; j++) {
                    float s = dot8(wv[q], hv[j], 0.0f);
                    s += __shfl_xor_sync(0xffffffffu, s, 1);
                    s += __shfl_xor_sync(0xffffffffu, s, 2);
                    if (c4 == 0 && r < K) sums[(size_t)j * K + r] += s;
                }
            }
        }
        __syncthreads(); /* hs is written again by the next unit */
    }

    mlp_finish<N>(p, sums, &last);
}

/* ---- the MLP with its weights streamed through a shared-memory ring (ORTHROS_DECODE_MLP=2; batch 1, sm_90) ----
 * mlp_kernel's phases each end in a trip with nothing in flight behind it (docs/kernels.md, "The MLP in one launch").
 * Here a ninth warp of the block only streams: for each unit of the block, its gate and up rows (GPS groups a stage:
 * their gate rows in one 1-d bulk copy, their up rows in another; a row a copy until a9e7b65's ring chain showed
 * that copies of one 4 KB row run below the ceiling) and then W_down's 32 columns (256 rows a stage: one 2-d TMA box of 32 columns x 256
 * rows; 37edfb3 copied them a 64-byte row at a time and ran at 4.7 GB/s a block) into MLP_RING_NS stages of
 * MLP_RING_SB bytes, each stage's bytes completing on its full mbarrier; the eight other warps
 * take the stages in order and free them on the empty mbarrier. The producer never waits for h: the down stages are
 * in flight while the consumers finish the gate/up sums. Gate/up: a lane one 16-byte chunk of K a row (K = 2048: 256
 * lanes x 8; K 4096: two chunks a lane), the sums met over the lanes at each stage and over the warps once a unit. Down: as mlp_kernel, four lanes a row. The sums' end is mlp_finish's. Batch 1, K 2048 or
 * 4096 (the 1B and 8B widths: a stage holds two groups or one). H200 (37edfb3, W_down a 64-byte bulk copy a row): 81
 * us a layer at 1B, against 35.6 for mlp_kernel and 32.2 for the two products; with the 2-d box (874c65f) 34.1 us
 * (docs/kernels.md, "The MLP in one launch"); the gate and up rows a run a copy (152cfef): the step unchanged. */
#define MLP_RING_SB (16 * 1024)
#define MLP_RING_NS 4
#define MLP_RING_THREADS (GEMV_THREADS + 32)

/* The ring kernel's plan: mlp_kernel's, and W_down [K][F] as a 2-d tensor map of 32 x 256 boxes. */
struct mlp_ring_plan {
    CUtensorMap down;
    mlp_plan pl;
};

template <int KK> /* K: 2048 or 4096 */
static __global__ void __launch_bounds__(MLP_RING_THREADS, 2) mlp_ring_kernel(const orthros_gemv_params p,
                                                                               const __grid_constant__ mlp_ring_plan rp)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const mlp_plan &pl = rp.pl;
    extern __shared__ __align__(128) unsigned char smem_r[]; /* ring [NS][SB] | x [K] bf16 | sums [K] fp32 */
    __shared__ __align__(8) unsigned long long bars[2 * MLP_RING_NS]; /* full, then empty */
    __shared__ float part[GEMV_WARPS][2 * MLP_S];
    __shared__ float hs[MLP_S];
    __shared__ float rs[ORTHROS_GEMV_MAX_ROWS];
    __shared__ int last;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, F = p.M / 2;
    constexpr int K = KK, nch = K / 8;
    constexpr int GPS = MLP_RING_SB / (4 * K); /* groups a gate/up stage */
    constexpr int CPL = nch / GEMV_THREADS;     /* chunks a lane a row */
    unsigned char *ring = smem_r, *xs = smem_r + MLP_RING_NS * MLP_RING_SB;
    float *sums = (float *)(xs + (size_t)K * 2);
    const uint32_t full0 = smem_addr(&bars[0]), empty0 = smem_addr(&bars[MLP_RING_NS]);
    ring_init(full0, empty0, MLP_RING_NS, GEMV_WARPS);
    __syncthreads();
    pdl_trigger();
    pdl_wait();

    if (warp == GEMV_WARPS) { /* the producer */
        const bf16 *Wg = (const bf16 *)p.W;
        uint32_t idx = 0;
        for (int u = blockIdx.x; u < pl.units; u += gridDim.x) {
            const int f0 = u * MLP_S;
            for (int st = 0; st < MLP_S / GPS + K / 256; st++, idx++) {
                const int slot = idx % MLP_RING_NS;
                const uint32_t full = full0 + 8 * slot, dst = smem_addr(ring + (size_t)slot * MLP_RING_SB);
                mbar_wait(empty0 + 8 * slot, ((idx / MLP_RING_NS) & 1) ^ 1);
                if (st < MLP_S / GPS) { /* gate/up: groups f0 + st GPS .. : their GPS gate rows, then their up
                                         * rows, each run one copy (a row a copy ran slower: the ring chain's stamps) */
                    if (lane == 0) {
                        const int f = f0 + st * GPS;
                        mbar_expect_tx(full, (uint32_t)(GPS * 4 * K));
                        bulk_copy(dst, Wg + (size_t)f * K, (uint32_t)(GPS * 2 * K), full);
                        bulk_copy(dst + (uint32_t)(GPS * 2 * K), Wg + (size_t)(F + f) * K, (uint32_t)(GPS * 2 * K), full);
                    }
                } else if (lane == 0) { /* down: rows r0 .. r0 + 255, the unit's 32 columns, one box */
                    mbar_expect_tx(full, 256u * 64u);
                    tma_load_2d(dst, &rp.down, full, f0, (st - MLP_S / GPS) * 256);
                }
            }
        }
    } else { /* the consumers */
        for (int e = tid; e < K; e += GEMV_THREADS) sums[e] = 0.0f;
        stage_input<false, 1>(p, xs, K * 2, rs, 0, nch);
        const int g4 = lane / 4, c4 = lane % 4;
        uint32_t idx = 0;
        for (int u = blockIdx.x; u < pl.units; u += gridDim.x) {
#pragma unroll
            for (int st = 0; st < MLP_S / GPS; st++, idx++) {
                const int slot = idx % MLP_RING_NS;
                mbar_wait(full0 + 8 * slot, (idx / MLP_RING_NS) & 1);
                const unsigned char *stage = ring + (size_t)slot * MLP_RING_SB;
                float acc[GPS][2]; /* this lane's sums of the stage's gate and up rows */
#pragma unroll
                for (int gi = 0; gi < GPS; gi++) acc[gi][0] = acc[gi][1] = 0.0f;
#pragma unroll
                for (int c = 0; c < CPL; c++) {
                    const int ch = c * GEMV_THREADS + tid;
                    float xf[8];
                    unpack8(lds_input(xs + (size_t)ch * 16, true), xf);
#pragma unroll
                    for (int gi = 0; gi < GPS; gi++) {
                        const uint4 wg = lds_input(stage + (size_t)gi * 2 * K + (size_t)ch * 16, true);
                        const uint4 wu = lds_input(stage + (size_t)(GPS + gi) * 2 * K + (size_t)ch * 16, true);
                        acc[gi][0] = dot8(wg, xf, acc[gi][0]);
                        acc[gi][1] = dot8(wu, xf, acc[gi][1]);
                    }
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(empty0 + 8 * slot); /* the stage is read: free it before the sums meet */
                /* the sums over the lanes; the warps' meet once the unit's gate/up stages are done */
#pragma unroll
                for (int gi = 0; gi < GPS; gi++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        float v = acc[gi][h];
                        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                        if (lane == 0) part[warp][2 * (st * GPS + gi) + h] = v;
                    }
            }
            bar_sync(1, GEMV_THREADS);
            if (tid < MLP_S) {
                float g = 0.0f, v = 0.0f;
                for (int w = 0; w < GEMV_WARPS; w++) g += part[w][2 * tid], v += part[w][2 * tid + 1];
                hs[tid] = bf2f(f2bf(swiglu_of(g, v))); /* epi_swiglu's value */
            }
            bar_sync(1, GEMV_THREADS);
            float hv[8];
#pragma unroll
            for (int e = 0; e < 8; e++) hv[e] = hs[c4 * 8 + e];
            for (int st = 0; st < K / 256; st++, idx++) {
                const int slot = idx % MLP_RING_NS;
                mbar_wait(full0 + 8 * slot, (idx / MLP_RING_NS) & 1);
                const unsigned char *stage = ring + (size_t)slot * MLP_RING_SB;
#pragma unroll
                for (int q = 0; q < 4; q++) { /* rows 64 q + 8 warp + g4 of the stage's 256 */
                    const int rl = q * 64 + warp * 8 + g4;
                    const uint4 w = lds_input(stage + (size_t)rl * 64 + c4 * 16, true);
                    float sdot = dot8(w, hv, 0.0f);
                    sdot += __shfl_xor_sync(0xffffffffu, sdot, 1);
                    sdot += __shfl_xor_sync(0xffffffffu, sdot, 2);
                    if (c4 == 0) sums[st * 256 + rl] += sdot;
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(empty0 + 8 * slot);
            }
        }
        bar_sync(1, GEMV_THREADS); /* every consumer's sums written */
    }
    mlp_finish<1>(p, sums, &last);
#endif
}

/* The ring kernel's shared memory, and whether it takes the call (host). */
static size_t mlp_ring_smem(int K) { return (size_t)MLP_RING_NS * MLP_RING_SB + (size_t)K * 6; }
static int mlp_ring_takes(const orthros_gemv_params *p)
{
    return p->n == 1 && (p->K == 2048 || p->K == 4096) && orthros_cuda_sm90_available();
}

template <int N> static int launch_mlp_n(const orthros_gemv_params *p, const mlp_plan *pl, cudaStream_t stream)
{
    static bool attr = false; /* the shared-memory limit, raised once per instantiation */
    return launch_gemv(mlp_kernel<N>, &attr, MLP_SMEM_MAX, dim3((unsigned)pl->blocks), p, pl, pl->smem, stream);
}

template <int KK> static int launch_mlp_ring(const orthros_gemv_params *p, const mlp_plan *pl, cudaStream_t stream)
{
    static bool attr = false; /* the shared-memory limit, raised once per instantiation */
    mlp_ring_plan rp;
    memset(&rp, 0, sizeof rp);
    rp.pl = *pl;
    const int rc = tma_matrix_map(&rp.down, p->W_down, KK, p->M / 2, MLP_S, 256, 0, "gemv mlp ring");
    if (rc) return rc;
    return launch_gemv(mlp_ring_kernel<KK>, &attr, (int)mlp_ring_smem(KK), dim3((unsigned)pl->blocks), p, &rp,
                       mlp_ring_smem(KK), stream, MLP_RING_THREADS);
}

static int launch_mlp(const orthros_gemv_params *p, const mlp_plan *pl, cudaStream_t stream)
{
    if (p->mlp_ring && mlp_ring_takes(p))
        return p->K == 2048 ? launch_mlp_ring<2048>(p, pl, stream) : launch_mlp_ring<4096>(p, pl, stream);
    switch (p->n) {
    case 1: return launch_mlp_n<1>(p, pl, stream);
    case 2: return launch_mlp_n<2>(p, pl, stream);
    case 3: return launch_mlp_n<3>(p, pl, stream);
    default: return launch_mlp_n<4>(p, pl, stream);
    }
}

/* The version in use: 0 (unset) is the default, 3; v2 and v3 take the calls their plan takes, v1 the rest (v5, v6:
 * v3's calls, then the version's ring kernel, then v1). */
#define GEMV_LATEST 3
#define GEMV_MAX_VERSION 6
static int gemv_version_set = 0;

int orthros_gemv_set_version(int v)
{
    if (v < 0 || v > GEMV_MAX_VERSION)
        return orthros_error(ORTHROS_EINVAL, "gemv: no version %d (1 to %d)", v, GEMV_MAX_VERSION);
    gemv_version_set = v;
    return 0;
}

int orthros_gemv_version(void) { return gemv_version_set ? gemv_version_set : GEMV_LATEST; }

size_t orthros_gemv_scratch_bytes(void) { return GEMV_MLP_END; }

/* The row tiles of MT rows a call has (host): a head each for ROPE (MT = d), MT / 2 gate rows with their up rows for
 * SWIGLU, MT rows else (v1, v5, v6). */
static int row_tiles(const orthros_gemv_params *p, int MT)
{
    if (p->epilogue == ORTHROS_GEMV_ROPE) return p->M / p->d;
    if (p->epilogue == ORTHROS_GEMV_SWIGLU) return ceil_div(p->M / 2, MT / 2);
    return ceil_div(p->M, MT);
}

/* The plan of a call (host): rows per block by epilogue (a whole head for ROPE, gate and up halves for SWIGLU, 128
 * rows for ARGMAX so that few blocks take the atomics), K split while the row blocks are fewer than two per SM and
 * each warp keeps U k-blocks, and (with norm_w) further until the staged input fits. */
static int make_plan(const orthros_gemv_params *p, gemv_plan *pl)
{
    const int NT = p->n <= 8 ? 1 : 2, U = NT == 1 ? 4 : 2, cols = NT * 8;
    int TM;
    switch (p->epilogue) {
    case ORTHROS_GEMV_ROPE: TM = p->d / 16; break;
    case ORTHROS_GEMV_SWIGLU: TM = 4; break;
    case ORTHROS_GEMV_ARGMAX: TM = 8; break;
    default: TM = NT == 1 ? 1 : 2; break;
    }
    if (TM < 1 || TM > 8) return ORTHROS_EUNSUPPORTED;
    pl->TM = TM, pl->WS = GEMV_WARPS / TM, pl->MT = 16 * TM;
    pl->nblk = row_tiles(p, pl->MT);
    const int nkb = ceil_div(p->K, 64), sms = p->num_sms > 0 ? p->num_sms : 132;
    int KS = 1;
    if (pl->nblk < 2 * sms && pl->nblk <= GEMV_TICKETS) {
        const int most = nkb / (pl->WS * U);
        KS = ceil_div(2 * sms, pl->nblk);
        KS = KS < most ? KS : most < 1 ? 1 : most;
        KS = KS < 32 ? KS : 32;
    }
    if (p->norm_w) {
        /* the fewest splits whose k-range of the n input rows fits in shared memory */
        int need = 1;
        while (need < nkb && (size_t)p->n * ((size_t)ceil_div(nkb, need) * 128 + 16) > GEMV_XS_MAX_BYTES) need++;
        KS = KS > need ? KS : need;
    }
    for (; KS >= 1; KS--) {
        pl->kbs = ceil_div(nkb, KS);
        pl->KS = ceil_div(nkb, pl->kbs);
        pl->xs = p->norm_w ? pl->kbs * 128 + 16 : 0; /* +16: consecutive rows start in other banks */
        pl->smem = (size_t)p->n * (size_t)pl->xs;
        const int split_ok = pl->KS == 1 || (pl->nblk <= GEMV_TICKETS && (size_t)pl->nblk * pl->KS * pl->MT * cols *
                                                                              sizeof(float) <= GEMV_PARTIAL_BYTES);
        if (split_ok && pl->smem <= GEMV_XS_MAX_BYTES) return 0;
    }
    return ORTHROS_EUNSUPPORTED;
}

/* v5's ring slots a warp: orthros_gemv_set_ring_slots's, else ORTHROS_GEMV5_STAGES (4, 6 or 8), else the plan's. */
static int gemv5_slots_set = 0;

int orthros_gemv_set_ring_slots(int s)
{
    if (s != 0 && s != 4 && s != 6 && s != 8)
        return orthros_error(ORTHROS_EINVAL, "gemv: %d ring slots (4, 6 or 8; 0 the default)", s);
    gemv5_slots_set = s;
    return 0;
}

/* The variables of versions 5 and 6, read as each call plans, and the values each takes (orthros_gemv_check_env) */
enum { GEMV_ENV_V5_STAGES, GEMV_ENV_V6_ROWS, GEMV_ENV_V6_STAGE_KB, GEMV_ENV_V6_WGMMA, GEMV_ENV_V6_BULK, GEMV_ENV_N };
static const struct {
    const char *name;
    int n, ok[5];
} gemv_env_vars[GEMV_ENV_N] = {{"ORTHROS_GEMV5_STAGES", 3, {4, 6, 8}},
                               {"ORTHROS_GEMV6_ROWS", 3, {32, 64, 128}},
                               {"ORTHROS_GEMV6_STAGE_KB", 5, {4, 8, 16, 32, 64}},
                               {"ORTHROS_GEMV6_WGMMA", 2, {0, 1}},
                               {"ORTHROS_GEMV6_BULK", 2, {0, 1}}};

/* 1 and *v the value where variable i holds one of its values (digits as written); else 0 and *v 0 */
static int gemv_env(int i, int *v)
{
    const char *t = getenv(gemv_env_vars[i].name);
    char one[16];
    *v = 0;
    for (int j = 0; t && j < gemv_env_vars[i].n; j++) {
        snprintf(one, sizeof one, "%d", gemv_env_vars[i].ok[j]);
        if (!strcmp(t, one)) return *v = gemv_env_vars[i].ok[j], 1;
    }
    return 0;
}

int orthros_gemv_check_env(void)
{
    for (int i = 0; i < GEMV_ENV_N; i++) {
        const char *t = getenv(gemv_env_vars[i].name);
        int v;
        if (!t || !*t || gemv_env(i, &v)) continue;
        char list[64] = "";
        for (int j = 0; j < gemv_env_vars[i].n; j++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", j ? ", " : "", gemv_env_vars[i].ok[j]);
        return orthros_error(ORTHROS_EINVAL, "%s=%.40s: one of %s", gemv_env_vars[i].name, t, list);
    }
    return 0;
}

/* 0: the plan's choice (the most that fit beside the staged input) */
static int gemv5_stages(void)
{
    int v;
    if (gemv5_slots_set) return gemv5_slots_set;
    gemv_env(GEMV_ENV_V5_STAGES, &v);
    return v;
}

/* v5's plan (host): v1's row tiles (make_plan's TM; 32 rows for SWIGLU, so that the tiles spread evenly over the
 * blocks), the input always staged, one block an SM (the rings and the staged input fill its shared memory): KS
 * splits of K times bps blocks a split, each block walking its split's row tiles bps apart. The K split is the one
 * with the least time for the busiest block (its tiles times their rows' bytes and a fixed cost a tile, ~128 row
 * k-blocks, twice that with a split's partials and ticket), among those whose staged k-range fits beside the rings
 * (4 slots a warp, or the slots asked for) and whose partials fit the scratch (the fewest splits on a tie); then the
 * most ring slots that fit (8, 6, 4), unless asked for. */
static int make_plan5(const orthros_gemv_params *p, gemv_plan *pl)
{
    const int NT = p->n <= 8 ? 1 : 2, cols = NT * 8, asked = gemv5_stages();
    if (make_plan(p, pl)) return ORTHROS_EUNSUPPORTED; /* the row tiles, and v1 as the fallback */
    if (p->epilogue == ORTHROS_GEMV_SWIGLU) {
        pl->TM = 2, pl->WS = GEMV_WARPS / 2, pl->MT = 32;
        pl->nblk = row_tiles(p, pl->MT);
    }
    const int nkb = ceil_div(p->K, 64), sms = p->num_sms > 0 ? p->num_sms : 132;
    const size_t slot_bytes = (size_t)GEMV_WARPS * GEMV5_SLOT_BYTES; /* one slot a warp, all warps */
    long best_cost = -1;
    int best = 0;
    for (int KS = 1; KS <= 32 && KS <= nkb; KS++) {
        const int kbs = ceil_div(nkb, KS), ks = ceil_div(nkb, kbs);
        if (ks != KS) continue; /* the same split as a smaller KS */
        const size_t xs = (size_t)kbs * 128 + 64;
        if ((size_t)p->n * xs + (asked ? asked : 4) * slot_bytes > GEMV5_SMEM_MAX) continue;
        if (KS > 1 && (pl->nblk > GEMV_TICKETS ||
                       (size_t)pl->nblk * KS * pl->MT * cols * sizeof(float) > GEMV_PARTIAL_BYTES))
            continue;
        const int bps = pl->nblk < sms / KS ? pl->nblk : sms / KS > 1 ? sms / KS : 1;
        const long cost = (long)ceil_div(pl->nblk, bps) * ((long)kbs * pl->MT + (KS > 1 ? 256 : 128));
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = KS;
    }
    if (!best) return ORTHROS_EUNSUPPORTED;
    pl->kbs = ceil_div(nkb, best);
    pl->KS = best;
    pl->xs = pl->kbs * 128 + 64; /* +64: the rows' pieces of a quarter warp in distinct banks */
    pl->rs = asked;
    for (int r = 8; !pl->rs; r -= 2)
        if (r == 4 || (size_t)p->n * pl->xs + r * slot_bytes <= GEMV5_SMEM_MAX) pl->rs = r;
    pl->smem = (size_t)p->n * pl->xs + pl->rs * slot_bytes;
    pl->bps = pl->nblk < sms / best ? pl->nblk : sms / best > 1 ? sms / best : 1;
    return 0;
}

/* v6's rows a tile where the epilogue leaves the choice: ORTHROS_GEMV6_ROWS (32, 64 or 128), else 0, the plan's. */
static int gemv6_rows(void)
{
    int v;
    gemv_env(GEMV_ENV_V6_ROWS, &v);
    return v;
}

/* v6's bytes a stage: ORTHROS_GEMV6_STAGE_KB (4, 8, 16, 32 or 64) KB, else 32 KB (H200, af925dd: the batch-16 step's
 * products 1.279 / 7.162 ms at 1B / 8B with 32 KB, 1.568 / 8.005 with 16, 1.287 / 7.814 with 64). */
static int gemv6_stage_bytes(void)
{
    int kb;
    return (gemv_env(GEMV_ENV_V6_STAGE_KB, &kb) ? kb : 32) << 10;
}

/* v6's form: ORTHROS_GEMV6_WGMMA=1, the TMA boxes read by wgmma (sm_90a); else ORTHROS_GEMV6_BULK=1, the stages
 * as bulk copies a row (where K is a multiple of 64); else TMA boxes read by ldmatrix. */
static int gemv6_form(int K)
{
    int w, b;
    gemv_env(GEMV_ENV_V6_WGMMA, &w);
    gemv_env(GEMV_ENV_V6_BULK, &b);
    if (w == 1) return GEMV6_WGMMA;
    return b == 1 && K % 64 == 0 ? GEMV6_BULK : GEMV6_TMA;
}

/* v6's k-blocks a stage at MT rows a tile: as many as make up the target bytes (1 to 8), where K is a multiple of 64
 * (the 3-d map of k-blocks); else 1. */
static int gemv6_kst(int K, int MT, int target)
{
    if (K % 64) return 1;
    const int k = target / (MT * 128);
    return k < 1 ? 1 : k > 8 ? 8 : k;
}

/* The fewest stages v6's ring may have with TM row tiles (WS = 8 / TM k-slices): WS, and at least 2. Stage q is
 * slice q mod WS's; with a multiple of WS stages every slot is always the same slice's, so that a consumer waits on
 * a slot only after its previous use there (the mbarrier's parity tells one phase from the next, not from the one
 * after), and thread 0, which refills up to S stages past its own, always reaches its slice's next stage. On wgmma
 * (wg) two stages a slice: a warpgroup frees a stage only after it has asked the products of its next one, so that
 * next stage must sit in another slot. */
static int gemv6_min_stages(int TM, bool wg)
{
    const int WS = GEMV_WARPS / TM;
    return wg ? (2 * WS > 2 ? 2 * WS : 2) : WS > 2 ? WS : 2;
}

/* v6's plan (host): v5's grid (KS splits times bps blocks a split, one block an SM, the input always staged) with row
 * tiles of MT = 16 TM rows, TM 2, 4 or 8 (a head for ROPE, 8 for ARGMAX, gemv6_rows's if set), TM and the split
 * chosen by v5's cost (the busiest block's tiles times their rows' k-blocks plus a fixed cost a tile; on a tie the
 * most blocks); a stage kst k-blocks of the tile (gemv6_kst), each split's k-blocks a multiple of kst; then the most
 * stages of kst x MT x 128 bytes (bulk: a 16-byte skew a row more; up to 16, a multiple of WS, at least
 * gemv6_min_stages) that fit beside the staged input. The TMA needs sm_90: where a device is present and is not, v6
 * does not take the call (without a device the plan is the one an sm_90 device gets). On wgmma (gemv6_form): a
 * warpgroup takes 64 rows, so TM 4 or 8 only (SWIGLU 8: a warpgroup the 64 rows of one box; ROPE a head of 64 or
 * 128; ORTHROS_GEMV6_ROWS 64 or 128), the input always 16 rows of kbs x 128 bytes (wgmma reads all 16; no skew),
 * and sm_90a where a device is present. */
static int make_plan6(const orthros_gemv_params *p, gemv_plan *pl)
{
    if (orthros_cuda_device_present() && !orthros_cuda_sm90_available()) return ORTHROS_EUNSUPPORTED;
    const int form = gemv6_form(p->K);
    const bool wg = form == GEMV6_WGMMA, bulk = form == GEMV6_BULK;
    if (wg && orthros_cuda_device_present() && !orthros_cuda_sm90a_available()) return ORTHROS_EUNSUPPORTED;
    const bool fixed = p->epilogue == ORTHROS_GEMV_ROPE || p->epilogue == ORTHROS_GEMV_ARGMAX;
    const int rows = gemv6_rows();
    int tms[3] = {2, 4, 8}, ntm = 3;
    if (wg) tms[0] = 4, tms[1] = 8, ntm = 2;
    if (fixed) tms[0] = p->epilogue == ORTHROS_GEMV_ROPE ? p->d / 16 : 8, ntm = 1;
    else if (rows) tms[0] = rows / 16, ntm = 1;
    else if (wg && p->epilogue == ORTHROS_GEMV_SWIGLU) tms[0] = 8, ntm = 1;
    if (tms[0] < 1 || tms[0] > 8) return ORTHROS_EUNSUPPORTED;
    if (wg && (tms[0] % 4 || (p->epilogue == ORTHROS_GEMV_SWIGLU && tms[0] != 8))) return ORTHROS_EUNSUPPORTED;
    const int nkb = ceil_div(p->K, 64), sms = p->num_sms > 0 ? p->num_sms : 132, target = gemv6_stage_bytes();
    const size_t xrows = wg ? 16 : (size_t)p->n; /* the staged input's rows */
    long best_cost = -1;
    int bTM = 0, bKS = 0, bblocks = 0;
    for (int a = 0; a < ntm; a++) {
        const int TM = tms[a], MT = 16 * TM, kst = gemv6_kst(p->K, MT, target);
        const int nblk = row_tiles(p, MT);
        for (int KS = 1; KS <= 32 && KS <= nkb; KS++) {
            const int kbs = ceil_div(ceil_div(nkb, KS), kst) * kst;
            if (ceil_div(nkb, kbs) != KS) continue; /* the same split as a smaller KS */
            const size_t xs = (size_t)kbs * 128 + (wg ? 0 : 16);
            const size_t rowb = 128 * (size_t)kst + (bulk ? 16 : 0); /* a stage's bytes a row (+16: bulk's skew) */
            if (1024 + gemv6_min_stages(TM, wg) * (size_t)MT * rowb + xrows * xs > GEMV6_SMEM_MAX) continue;
            if (KS > 1 && (nblk > GEMV_TICKETS || (size_t)nblk * KS * MT * 16 * sizeof(float) > GEMV_PARTIAL_BYTES))
                continue;
            const int bps = nblk < sms / KS ? nblk : sms / KS > 1 ? sms / KS : 1;
            const long cost = (long)ceil_div(nblk, bps) * ((long)kbs * MT + (KS > 1 ? 256 : 128));
            if (best_cost < 0 || cost < best_cost || (cost == best_cost && bps * KS > bblocks))
                best_cost = cost, bTM = TM, bKS = KS, bblocks = bps * KS;
        }
    }
    if (!bTM) return ORTHROS_EUNSUPPORTED;
    pl->TM = bTM, pl->WS = GEMV_WARPS / bTM, pl->MT = 16 * bTM;
    pl->nblk = row_tiles(p, pl->MT);
    const int kst = gemv6_kst(p->K, pl->MT, target);
    pl->kst = kst;
    pl->form = form;
    pl->kbs = ceil_div(ceil_div(nkb, bKS), kst) * kst;
    pl->KS = bKS;
    /* +16: the 8 rows one ldmatrix reads start in distinct bank groups (wgmma's swizzled k-blocks need none) */
    pl->xs = pl->kbs * 128 + (wg ? 0 : 16);
    pl->bps = bblocks / bKS;
    const size_t sb = (size_t)pl->MT * (128 * kst + (bulk ? 16 : 0));
    const size_t room = GEMV6_SMEM_MAX - 1024 - xrows * pl->xs;
    pl->rs = room / sb < GEMV6_STAGES_MAX ? (int)(room / sb) : GEMV6_STAGES_MAX;
    pl->rs -= pl->rs % pl->WS; /* a multiple of WS: each slot always the same slice's (gemv6_min_stages) */
    pl->smem = 1024 + (size_t)pl->rs * sb + xrows * pl->xs;
    return 0;
}

static int choose_plan(const orthros_gemv_params *p, gemv2_plan *pl2, gemv_plan *pl);

int orthros_gemv_supported(const orthros_gemv_params *p)
{
    if (p->n < 1 || p->n > ORTHROS_GEMV_MAX_ROWS || p->M < 1 || p->K < 8 || p->K % 8 || !p->W || !p->x) return 0;
    if (((uintptr_t)p->W | (uintptr_t)p->x | (uintptr_t)p->norm_w) % 16) return 0;
    switch (p->epilogue) {
    case ORTHROS_GEMV_STORE:
    case ORTHROS_GEMV_STORE_F32:
    case ORTHROS_GEMV_ADD:
        if (!p->out) return 0;
        break;
    case ORTHROS_GEMV_SWIGLU:
        if (!p->out || p->M % 2) return 0;
        break;
    case ORTHROS_GEMV_ROPE:
        if (!p->out || p->d < 16 || p->d > 2 * ORTHROS_GEMV_MAX_HALF || p->d % 16 || p->Hkv < 1 || p->Hq < 1 ||
            p->M != (p->Hq + 2 * p->Hkv) * p->d || !p->k_cache || !p->v_cache || !p->pos || p->cap < 1)
            return 0;
        break;
    case ORTHROS_GEMV_ARGMAX:
        if (!p->ids) return 0;
        break;
    case ORTHROS_GEMV_MLP: {
        mlp_plan ml;
        return p->out == p->x && p->W_down && (uintptr_t)p->W_down % 16 == 0 && make_mlp_plan(p, &ml) == 0;
    }
    default: return 0;
    }
    gemv_plan pl;
    gemv2_plan pl2;
    return make_plan(p, &pl) == 0 || choose_plan(p, &pl2, &pl) == 6; /* v6 also takes calls v1 cannot */
}

template <int NT, bool XS> static int launch(const orthros_gemv_params *p, const gemv_plan *pl, cudaStream_t stream)
{
    static bool attr = false; /* the shared-memory limit, raised once per instantiation */
    return launch_gemv(gemv_kernel<NT, XS>, XS ? &attr : NULL, GEMV_XS_MAX_BYTES,
                       dim3((unsigned)pl->nblk, (unsigned)pl->KS), p, pl, pl->smem, stream);
}

template <int NT, int RS> static int launch5(const orthros_gemv_params *p, const gemv_plan *pl, cudaStream_t stream)
{
    static bool attr = false;
    return launch_gemv(gemv5_kernel<NT, RS>, &attr, GEMV5_SMEM_MAX, dim3((unsigned)(pl->bps * pl->KS)), p, pl,
                       pl->smem, stream);
}

static int launch6(const orthros_gemv_params *p, const gemv_plan *pl, cudaStream_t stream)
{
    static bool attr = false;
    gemv6_plan gp;
    memset(&gp, 0, sizeof gp);
    gp.pl = *pl;
    const dim3 grid((unsigned)(pl->bps * pl->KS));
    if (pl->form == GEMV6_BULK) {
        static bool attr_bulk = false;
        return launch_gemv(gemv6_kernel<GEMV6_BULK>, &attr_bulk, GEMV6_SMEM_MAX, grid, p, &gp, pl->smem, stream);
    }
    const int rows = p->epilogue == ORTHROS_GEMV_SWIGLU ? pl->MT / 2 : pl->MT;
    const int rc = pl->kst > 1 ? tma_kblock_map(&gp.w, p->W, p->M, p->K, rows, pl->kst, "gemv v6")
                               : tma_matrix_map(&gp.w, p->W, p->M, p->K, 64, rows, 1, "gemv v6");
    if (rc) return rc;
    if (pl->form == GEMV6_WGMMA) {
        static bool attr_wg = false;
        return launch_gemv(gemv6_kernel<GEMV6_WGMMA>, &attr_wg, GEMV6_SMEM_MAX, grid, p, &gp, pl->smem, stream);
    }
    return launch_gemv(gemv6_kernel<GEMV6_TMA>, &attr, GEMV6_SMEM_MAX, grid, p, &gp, pl->smem, stream);
}

/* The plan a call gets with the version in use, for the launch and its description alike: 4 (pl2: the v4 kernel, batch
 * 1-4 with the input staged within 64 KB, version 4), 2 (pl2: the v2 kernel, versions 2 and 3, and 4-6 where v4 does
 * not take the call: v3's plan), 5 or 6 (pl: the v5 or v6 kernel at its version) or 1 (pl: v1's, made only where
 * none of those takes the call), else make_plan's error code (negative). */
static int choose_plan(const orthros_gemv_params *p, gemv2_plan *pl2, gemv_plan *pl)
{
    const int version = orthros_gemv_version();
    if (version == 4 && make_plan2(p, pl2, 4) == 0) return 4;
    if (version >= 2 && make_plan2(p, pl2, version < 4 ? version : 3) == 0) return 2;
    if (version == 5 && make_plan5(p, pl) == 0) return 5;
    if (version == 6 && make_plan6(p, pl) == 0) return 6;
    const int rc = make_plan(p, pl);
    return rc ? rc : 1;
}

int orthros_gemv_describe(const orthros_gemv_params *p, char *buf, size_t cap)
{
    if (!buf || cap == 0) return ORTHROS_EINVAL;
    buf[0] = '\0';
    if (!orthros_gemv_supported(p)) return ORTHROS_EUNSUPPORTED;
    if (p->epilogue == ORTHROS_GEMV_MLP) {
        mlp_plan ml = {0, 0, 0};
        make_mlp_plan(p, &ml);
        snprintf(buf, cap, "mlp: %d units of %d columns, %d blocks (%.2f units a block), %zu B shared", ml.units, MLP_S,
                 ml.blocks, (double)ml.units / ml.blocks, ml.smem);
        return 0;
    }
    gemv2_plan pl2;
    gemv_plan pl;
    const int kind = choose_plan(p, &pl2, &pl);
    if (kind == 2 || kind == 4) {
        const int rounds = ceil_div(pl2.groups, pl2.GPB), v = orthros_gemv_version();
        snprintf(buf, cap, "v%d: %d groups of 2 rows, KW %d, U %d, %d blocks, %d block rounds (%.2f waves), %zu B staged",
                 kind == 4 ? 4 : v < 4 ? v : 3, pl2.groups, pl2.KW, pl2.U, pl2.blocks, rounds, (double)rounds / pl2.blocks,
                 pl2.smem);
        return 0;
    }
    if (kind == 5) {
        snprintf(buf, cap,
                 "v5: %d rows a block, %d row tiles x %d K splits of %d k-blocks, %d blocks "
                 "(%d tiles a block at most), %d ring slots a warp, %zu B shared",
                 pl.MT, pl.nblk, pl.KS, pl.kbs, pl.bps * pl.KS, ceil_div(pl.nblk, pl.bps), pl.rs, pl.smem);
        return 0;
    }
    if (kind == 6) {
        snprintf(buf, cap,
                 "v6: %d rows a block, %d row tiles x %d K splits of %d k-blocks, %d blocks "
                 "(%d tiles a block at most), %d stages of %d k-blocks (%d B)%s, %zu B shared",
                 pl.MT, pl.nblk, pl.KS, pl.kbs, pl.bps * pl.KS, ceil_div(pl.nblk, pl.bps), pl.rs, pl.kst,
                 pl.MT * 128 * pl.kst,
                 pl.form == GEMV6_BULK ? " by bulk copies a row" : pl.form == GEMV6_WGMMA ? " read by wgmma" : "",
                 pl.smem);
        return 0;
    }
    if (kind != 1) return ORTHROS_EUNSUPPORTED;
    snprintf(buf, cap, "v1: %d rows a block, %d blocks x %d K splits of %d k-blocks, %zu B staged", pl.MT, pl.nblk,
             pl.KS, pl.kbs, pl.smem);
    return 0;
}

int orthros_gemv_bf16(const orthros_gemv_params *p, cudaStream_t stream)
{
    if (!orthros_gemv_supported(p))
        return orthros_error(ORTHROS_EUNSUPPORTED,
                             "gemv: n %d, M %d, K %d, epilogue %d (n 1..%d, K a multiple of 8, 16-byte aligned rows)",
                             p->n, p->M, p->K, p->epilogue, ORTHROS_GEMV_MAX_ROWS);
    if (!p->scratch) return orthros_error(ORTHROS_EINVAL, "gemv: no scratch");
    if (p->epilogue == ORTHROS_GEMV_MLP) {
        mlp_plan ml = {0, 0, 0};
        make_mlp_plan(p, &ml);
        return launch_mlp(p, &ml, stream);
    }
    gemv2_plan pl2;
    gemv_plan pl;
    const int kind = choose_plan(p, &pl2, &pl);
    if (kind == 4) return launch_v4(p, &pl2, stream);
    if (kind == 2) return launch_v2(p, &pl2, stream);
    if (kind == 5) {
        const int S = pl.rs;
        if (p->n <= 8) return S == 4 ? launch5<1, 4>(p, &pl, stream) : S == 8 ? launch5<1, 8>(p, &pl, stream)
                                                                         : launch5<1, 6>(p, &pl, stream);
        return S == 4 ? launch5<2, 4>(p, &pl, stream) : S == 8 ? launch5<2, 8>(p, &pl, stream)
                                                             : launch5<2, 6>(p, &pl, stream);
    }
    if (kind == 6) return launch6(p, &pl, stream);
    if (kind != 1) return orthros_error(kind, "gemv: no plan for n %d, M %d, K %d", p->n, p->M, p->K);
    const bool xs = p->norm_w != NULL;
    if (p->n <= 8) return xs ? launch<1, true>(p, &pl, stream) : launch<1, false>(p, &pl, stream);
    return xs ? launch<2, true>(p, &pl, stream) : launch<2, false>(p, &pl, stream);
}
