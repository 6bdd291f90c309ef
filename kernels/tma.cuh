/* The sm_90 asynchronous-copy pieces shared by the kernels that stream K/V through shared memory with the Tensor
 * Memory Accelerator (attn_full_prefill_wgmma.cu, attn_full_decode.cu): mbarriers, TMA tile loads, named
 * barriers, the 128-byte swizzle the TMA writes, and on the host the tensor map of a KV cache. Device code
 * exists for sm_90 and later only (__CUDA_ARCH__ >= 900); the callers guard their kernels the same way. Included
 * by .cu files only. */
#ifndef ORTHROS_TMA_CUH
#define ORTHROS_TMA_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include "cuda_common.cuh"

/* Where the 16-byte chunk ch (of 8 elements) of row r of a [rows][64] bf16 region lands under the 128-byte
 * swizzle (region start 1024-aligned): byte r * 128 + ((ch ^ (r % 8)) * 16). This is the layout a TMA box of
 * 64 bf16 columns writes with CU_TENSOR_MAP_SWIZZLE_128B (arithmetic only: defined for every target). */
static __device__ __forceinline__ uint32_t swz128(int r, int ch) { return (uint32_t)(r * 128 + ((ch ^ (r & 7)) << 4)); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/* cp.async of 16 bytes to a shared-memory address; src_bytes = 0 writes zeros. */
static __device__ __forceinline__ void cp_async16_s(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

static __device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/* Waits until the phase of the given parity has completed (acquire). A fresh barrier counts as having
 * completed the phase before phase 0, so waiting for parity 1 on it returns at once (the producer's first
 * pass over the empty barriers). A thread may wait only for the barrier's current phase or the one before:
 * the parity cannot tell a phase two back from the current one. */
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
/* A 1-d bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory to shared memory at
 * dst, completing its bytes on the mbarrier. */
static __device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
/* TMA: the box at coordinates (c0 innermost .. c3) of the tensor map into shared memory at dst, completing
 * its bytes on the mbarrier. Box elements outside the tensor (negative coordinates too) are written as zeros and
 * still count towards the transaction bytes. */
static __device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
                                                   int c2, int c3)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
                 "%5}], [%6];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
}
/* TMA: the box at (c0 innermost, c1) of a 2-d tensor map into shared memory at dst, completing on the mbarrier. */
static __device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
/* TMA: the box at (c0 innermost, c1, c2) of a 3-d tensor map into shared memory at dst, completing on the mbarrier. */
static __device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
                                                   int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
                 "[%5];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

#endif /* __CUDA_ARCH__ >= 900 */

/* Named barriers (bar.sync / bar.arrive id, n threads: every architecture; gemv.cu's v3 uses them at sm_80 too). */
static __device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
static __device__ __forceinline__ void bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }

/* ---- host side ---- */

static inline PFN_cuTensorMapEncodeTiled_v12000 tma_encoder(void)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *ptr = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)ptr;
        cudaGetLastError();
    }
    return fn;
}

/* A bf16 tensor of `rank` dimensions (dims innermost first, strides in bytes of dims 1..rank-1) as a tensor map read in
 * boxes of `box`, the given swizzle, 256-byte L2 promotion, zeros outside: the encoding every map below shares. */
static inline int tma_encode(CUtensorMap *m, cuuint32_t rank, const void *base, const cuuint64_t *dims,
                             const cuuint64_t *strides, const cuuint32_t *box, CUtensorMapSwizzle swizzle,
                             const char *who)
{
    PFN_cuTensorMapEncodeTiled_v12000 enc = tma_encoder();
    if (!enc) return orthros_error(ORTHROS_EDEVICE, "%s: no cuTensorMapEncodeTiled in the driver", who);
    const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
    CUresult r = enc(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, (void *)base, dims, strides, box, estr,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return orthros_error(ORTHROS_EDEVICE, "%s: cuTensorMapEncodeTiled failed (%d)", who, (int)r);
    return 0;
}

/* A matrix [rows][cols] bf16 (cols innermost, row stride cols) as a 2-d tensor read in boxes of box_cols x box_rows,
 * unswizzled (a box lands row after row) or with swz128 the 128-byte swizzle (box_cols 64: swz128's layout above, the
 * box's destination 1024-aligned), zeros outside. `who` names the kernel in errors. */
static inline int tma_matrix_map(CUtensorMap *m, const void *W, int rows, int cols, int box_cols, int box_rows,
                                 int swz128, const char *who)
{
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * 2};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    return tma_encode(m, 2, W, dims, strides, box, swz128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                      who);
}

/* A matrix [rows][K] bf16 (K a multiple of 64) as a 3-d tensor of 64-wide k-blocks: [K / 64][rows][64] (the k-block
 * outermost, its stride 128 bytes), read in boxes of kst k-blocks x box_rows rows x 64, 128-byte swizzled: a box lands
 * as kst of tma_matrix_map's swizzled 64 x box_rows boxes one after another. Zeros outside. */
static inline int tma_kblock_map(CUtensorMap *m, const void *W, int rows, int K, int box_rows, int kst, const char *who)
{
    const cuuint64_t dims[3] = {64, (cuuint64_t)rows, (cuuint64_t)(K / 64)}, strides[2] = {(cuuint64_t)K * 2, 128};
    const cuuint32_t box[3] = {64, (cuuint32_t)box_rows, (cuuint32_t)kst};
    return tma_encode(m, 3, W, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, who);
}

/* A KV cache [B][cap][Hkv][D] bf16 as a 4-d tensor (D innermost), read in boxes of 64 columns x 1 head x
 * box_rows positions x 1 sequence, 128-byte swizzled, zeros outside. `who` names the kernel in errors. */
static inline int tma_kv_cache_map(CUtensorMap *m, const void *cache, int B, int cap, int Hkv, int D, int box_rows,
                                   const char *who)
{
    const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)Hkv, (cuuint64_t)cap, (cuuint64_t)B};
    const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)Hkv * D * 2, (cuuint64_t)cap * Hkv * D * 2};
    const cuuint32_t box[4] = {64, 1, (cuuint32_t)box_rows, 1};
    return tma_encode(m, 4, cache, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, who);
}

#endif
