/* The read-bandwidth ceiling: a grid-stride pass of 16-byte loads, four independent ones in flight per thread
 * (8 blocks of 256 threads per SM: 128 KB of loads in flight per SM, several times the ~35 KB that ~4.6 TB/s
 * at ~1 us of latency needs), XORed into one word per thread, reduced per block and written once per block.
 * The loads bypass L1 (ld.global.nc.L1::no_allocate) and ask L2 for 256-byte sectors groups.
 * Floor: bytes over the HBM read rate; what cuDNN's decode reaches (4.61 TB/s on the H200, issue 11) is a lower
 * bound on it. Measured on the H200: 4.25-4.27 TB/s over 4 GiB, 88% of the DRAM peak by Nsight Compute, with the
 * L2 at 95-97% of its throughput (data/results/h200-2026-12-01/profile): short of cuDNN's rate, so the ceiling it
 * gives is a floor of the true one. */
#include "mem_read.h"

#include "cuda_common.cuh"

#define READ_THREADS 256
#define READ_BLOCKS_PER_SM 8
#define READ_UNROLL 4

static __device__ __forceinline__ uint4 ld_stream16(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

static __device__ __forceinline__ unsigned long long fold(uint4 v)
{
    return ((unsigned long long)v.y << 32 | v.x) ^ ((unsigned long long)v.w << 32 | v.z);
}

static __global__ void __launch_bounds__(READ_THREADS) read_xor_kernel(orthros_read_params p)
{
    __shared__ unsigned long long red[READ_THREADS / 32];
    const uint4 *src = (const uint4 *)p.src;
    const size_t n16 = p.bytes / 16, stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (; i + (READ_UNROLL - 1) * stride < n16; i += READ_UNROLL * stride) {
        uint4 v[READ_UNROLL];
#pragma unroll
        for (int u = 0; u < READ_UNROLL; u++) v[u] = ld_stream16(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < READ_UNROLL; u++) acc ^= fold(v[u]);
    }
    for (; i < n16; i += stride) acc ^= fold(ld_stream16(src + i));
    // A last 8-byte word past the 16-byte ones.
    if (blockIdx.x == 0 && threadIdx.x == 0 && (p.bytes % 16) >= 8)
        acc ^= ((const unsigned long long *)p.src)[2 * n16];
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < READ_THREADS / 32; w++) acc ^= red[w];
        p.partials[blockIdx.x] = acc;
    }
}

int orthros_read_blocks(int num_sms) { return (num_sms > 0 ? num_sms : 132) * READ_BLOCKS_PER_SM; }

int orthros_read_xor_u64(const orthros_read_params *p, cudaStream_t stream)
{
    if (p->blocks <= 0 || !p->partials)
        return orthros_error(ORTHROS_EINVAL, "read: %d blocks, partials %p", p->blocks, (void *)p->partials);
    if ((uintptr_t)p->src % 16)
        return orthros_error(ORTHROS_EINVAL, "read: source %p is not 16-byte aligned", p->src);
    read_xor_kernel<<<(unsigned)p->blocks, READ_THREADS, 0, stream>>>(*p);
    ORTHROS_CUDA_LAUNCH_CHECK("read_xor_kernel");
    return 0;
}
