/* Shared by the cuda kernels: the checking macro, bf16 helpers and the warp-level tensor-core primitives
 * (ldmatrix, mma.sync m16n8k16 bf16 -> fp32, cp.async). Included by .cu files only. */
#ifndef ORTHROS_CUDA_COMMON_CUH
#define ORTHROS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "orthros.h"

/* Every CUDA runtime call goes through this: on failure it records the call, file and line and returns
 * ORTHROS_EDEVICE from the enclosing function. */
#define ORTHROS_CUDA_CHECK(call)                                                                              \
    do {                                                                                                      \
        cudaError_t err_ = (call);                                                                            \
        if (err_ != cudaSuccess)                                                                              \
            return orthros_error(ORTHROS_EDEVICE, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(err_),   \
                                 __FILE__, __LINE__);                                                         \
    } while (0)

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

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

#endif
