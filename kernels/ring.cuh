/* The consumers' side of a ring of shared-memory stages that a producer warp fills with a run of weight rows
 * (step_probe.cu's stream probe, gemv.cu's ring chain). Device code for sm_90 and later only, as tma.cuh's. Included
 * by .cu files only. */
#ifndef ORTHROS_RING_CUH
#define ORTHROS_RING_CUH

#include "cuda_common.cuh"
#include "tma.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* A ring's ns pairs of mbarriers at full0 and empty0 (8 bytes apart): each full one completes on the producer's one
 * arrival and its copies' bytes, each empty one on `consumers` warps' arrivals. Thread 0 initializes them; the caller
 * meets the block at a barrier before any use. */
static __device__ __forceinline__ void ring_init(uint32_t full0, uint32_t empty0, int ns, int consumers)
{
    if (threadIdx.x == 0) {
        for (int i = 0; i < ns; i++) mbar_init(full0 + 8 * i, 1), mbar_init(empty0 + 8 * i, consumers);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
}

/* A consumer warp's share of a ring stage on the FMA units: the stage holds cnt bytes (a multiple of 512) from byte
 * off of a run of rows of rb bytes each (rb a multiple of 512, off + cnt at most 2^32), consumer warp `warp` takes
 * the SEGS 512-byte segments from SEGS x warp, x (bf16, a row's length) is staged at xs, and each row's dot product
 * with x is added into rowsum[row of the run] (shared memory, one atomic a row a warp). */
template <int SEGS>
static __device__ __forceinline__ void ring_consume_fma(const unsigned char *stage, const unsigned char *xs, uint32_t off,
                                                        uint32_t cnt, uint32_t rb, int warp, int lane, float *rowsum)
{
    /* a warp's SEGS consecutive 512-byte segments of the stage: their rows and columns found from one division a
     * stage, every load issued first, the lane's sums kept while the row stays the same, one warp reduction a row
     * (48afef2 made a reduction a segment and two 64-bit divisions: 1 TB/s, the consumers' instructions the bound) */
    const uint32_t s0 = (uint32_t)warp * SEGS, base = off + s0 * 512;
    uint32_t col = base % rb;
    int row = (int)(base / rb), rr[SEGS];
    uint4 w[SEGS], x[SEGS];
#pragma unroll
    for (int i = 0; i < SEGS; i++) {
        const bool in = s0 + i < cnt / 512;
        rr[i] = in ? row : -1;
        w[i] = in ? *(const uint4 *)(stage + (s0 + i) * 512 + lane * 16) : make_uint4(0u, 0u, 0u, 0u);
        x[i] = in ? *(const uint4 *)(xs + col + lane * 16) : make_uint4(0u, 0u, 0u, 0u);
        col += 512;
        if (col == rb) col = 0, row++;
    }
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < SEGS; i++) {
        if (rr[i] < 0) break;
        acc += bf16x2_lo(w[i].x) * bf16x2_lo(x[i].x) + bf16x2_hi(w[i].x) * bf16x2_hi(x[i].x);
        acc += bf16x2_lo(w[i].y) * bf16x2_lo(x[i].y) + bf16x2_hi(w[i].y) * bf16x2_hi(x[i].y);
        acc += bf16x2_lo(w[i].z) * bf16x2_lo(x[i].z) + bf16x2_hi(w[i].z) * bf16x2_hi(x[i].z);
        acc += bf16x2_lo(w[i].w) * bf16x2_lo(x[i].w) + bf16x2_hi(w[i].w) * bf16x2_hi(x[i].w);
        if (i + 1 == SEGS || rr[i + 1] != rr[i]) { /* the row ends in this warp's part: its sum out */
            for (int q = 16; q > 0; q >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, q);
            if (lane == 0) atomicAdd(&rowsum[rr[i]], acc);
            acc = 0.0f;
        }
    }
}

#endif /* __CUDA_ARCH__ >= 900 */
#endif
