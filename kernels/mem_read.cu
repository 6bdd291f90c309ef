/* The read-bandwidth ceiling: a grid-stride pass of 16-byte loads, four independent ones in flight per thread
 * (8 blocks of 256 threads per SM: 128 KB of loads in flight per SM, several times the ~35 KB that ~4.6 TB/s
 * at ~1 us of latency needs), XORed into one word per thread, reduced per block and written once per block.
 * The loads bypass L1 (ld.global.nc.L1::no_allocate), without an L2 prefetch hint (the hint read slower).
 * Floor: bytes over the HBM read rate, of which what cuDNN's decode reaches is a lower bound. The other variants
 * are probes of the patterns a decode kernel could use. What each measured: docs/kernels.md, "The read ceiling". */
#include "mem_read.h"

#include "cuda_common.cuh"
#include "tma.cuh"

#define READ_THREADS 256
#define READ_BLOCKS_PER_SM 8
#define READ_UNROLL 4

/* A 16-byte load past L1; HINT asks L2 for the 256-byte sector group (variants 1 and 2). */
template <bool HINT = true> static __device__ __forceinline__ uint4 ld_stream16(const uint4 *p)
{
    uint4 v;
    if (HINT)
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    else
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    return v;
}

static __device__ __forceinline__ unsigned long long fold(uint4 v)
{
    return ((unsigned long long)v.y << 32 | v.x) ^ ((unsigned long long)v.w << 32 | v.z);
}

/* Adds the last 8-byte word past the 16-byte ones (block 0), XORs the block's threads and writes its partial. */
static __device__ __forceinline__ void read_finish(const orthros_read_params &p, unsigned long long acc)
{
    __shared__ unsigned long long red[READ_THREADS / 32];
    if (blockIdx.x == 0 && threadIdx.x == 0 && (p.bytes % 16) >= 8)
        acc ^= ((const unsigned long long *)p.src)[2 * (p.bytes / 16)];
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < READ_THREADS / 32; w++) acc ^= red[w];
        p.partials[blockIdx.x] = acc;
    }
}

/* Variants 0 and 1: grid-stride. */
template <bool HINT>
static __global__ void __launch_bounds__(READ_THREADS) read_xor_kernel(orthros_read_params p)
{
    const uint4 *src = (const uint4 *)p.src;
    const size_t n16 = p.bytes / 16, stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (; i + (READ_UNROLL - 1) * stride < n16; i += READ_UNROLL * stride) {
        uint4 v[READ_UNROLL];
#pragma unroll
        for (int u = 0; u < READ_UNROLL; u++) v[u] = ld_stream16<HINT>(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < READ_UNROLL; u++) acc ^= fold(v[u]);
    }
    for (; i < n16; i += stride) acc ^= fold(ld_stream16<HINT>(src + i));
    read_finish(p, acc);
}

/* Variants 2 and 4: block b reads the 16-byte words [b span16, (b + 1) span16), 8 loads in flight per thread. */
#define SPAN_UNROLL 8
template <bool HINT>
static __global__ void __launch_bounds__(READ_THREADS) read_span_kernel(orthros_read_params p, size_t span16)
{
    const uint4 *src = (const uint4 *)p.src;
    const size_t n16 = p.bytes / 16, b0 = (size_t)blockIdx.x * span16;
    const size_t b1 = b0 + span16 < n16 ? b0 + span16 : n16;
    unsigned long long acc = 0;
    size_t i = b0 + threadIdx.x;
    for (; b1 > (SPAN_UNROLL - 1) * READ_THREADS && i < b1 - (SPAN_UNROLL - 1) * READ_THREADS; i += SPAN_UNROLL * READ_THREADS) {
        uint4 v[SPAN_UNROLL];
#pragma unroll
        for (int u = 0; u < SPAN_UNROLL; u++) v[u] = ld_stream16<HINT>(src + i + u * READ_THREADS);
#pragma unroll
        for (int u = 0; u < SPAN_UNROLL; u++) acc ^= fold(v[u]);
    }
    for (; i < b1; i += READ_THREADS) acc ^= fold(ld_stream16<HINT>(src + i));
    read_finish(p, acc);
}

/* Variant 3: block b's span streamed through BULK_STAGES shared-memory stages of BULK_CHUNK bytes, each filled
 * by one bulk copy (cp.async.bulk, completing on the stage's mbarrier) and XORed by every thread; a stage is
 * refilled after a barrier, by thread 0, BULK_STAGES chunks ahead. */
#define BULK_CHUNK (32 * 1024)
#define BULK_STAGES 3
#define BULK_BLOCKS_PER_SM 2
static __global__ void __launch_bounds__(READ_THREADS) read_bulk_kernel(orthros_read_params p, size_t span16)
{
    unsigned long long acc = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[BULK_STAGES];
    const size_t n16 = p.bytes / 16, b0 = (size_t)blockIdx.x * span16;
    const size_t nbytes = b0 < n16 ? ((b0 + span16 < n16 ? b0 + span16 : n16) - b0) * 16 : 0;
    const int nchunks = (int)((nbytes + BULK_CHUNK - 1) / BULK_CHUNK);
    const unsigned char *src = (const unsigned char *)p.src + b0 * 16;
    if (threadIdx.x == 0) {
        for (int s = 0; s < BULK_STAGES; s++) mbar_init(smem_addr(&full[s]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](int c) {
        const size_t off = (size_t)c * BULK_CHUNK;
        const uint32_t len = (uint32_t)(nbytes - off < BULK_CHUNK ? nbytes - off : BULK_CHUNK);
        const int s = c % BULK_STAGES;
        mbar_expect_tx(smem_addr(&full[s]), len);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                         smem_addr(ring + (size_t)s * BULK_CHUNK)),
                     "l"(src + off), "r"(len), "r"(smem_addr(&full[s]))
                     : "memory");
    };
    if (threadIdx.x == 0)
        for (int c = 0; c < nchunks && c < BULK_STAGES; c++) issue(c);
    for (int c = 0; c < nchunks; c++) {
        const int s = c % BULK_STAGES;
        mbar_wait(smem_addr(&full[s]), (uint32_t)(c / BULK_STAGES) & 1u);
        const size_t off = (size_t)c * BULK_CHUNK;
        const int n = (int)((nbytes - off < BULK_CHUNK ? nbytes - off : BULK_CHUNK) / 16);
        const uint4 *q = (const uint4 *)(ring + (size_t)s * BULK_CHUNK);
        for (int i = threadIdx.x; i < n; i += READ_THREADS) acc ^= fold(q[i]);
        __syncthreads();  // every thread is done with stage s
        if (threadIdx.x == 0 && c + BULK_STAGES < nchunks) issue(c + BULK_STAGES);
    }
#endif
    read_finish(p, acc);
}

/* Variant 5: block b's span streamed through ASYNC_STAGES shared-memory stages of BULK_CHUNK bytes, each filled
 * by cp.async.cg of 16 bytes from every thread (no L2 hint: the pattern of cuDNN's sm80 decode kernel, one block
 * per SM), ASYNC_STAGES - 1 stages in flight while one is XORed. */
#define ASYNC_STAGES 4
static __global__ void __launch_bounds__(READ_THREADS, 1) read_async_kernel(orthros_read_params p, size_t span16)
{
    unsigned long long acc = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char ring[];
    constexpr int PER = BULK_CHUNK / 16 / READ_THREADS;  // 16-byte copies per thread per stage
    const size_t n16 = p.bytes / 16, b0 = (size_t)blockIdx.x * span16;
    const size_t len16 = b0 < n16 ? (b0 + span16 < n16 ? b0 + span16 : n16) - b0 : 0;
    const int nchunks = (int)((len16 + BULK_CHUNK / 16 - 1) / (BULK_CHUNK / 16));
    const uint4 *src = (const uint4 *)p.src + b0;
    auto issue = [&](int c) {
        if (c < nchunks) {
            const uint32_t dst = smem_addr(ring + (size_t)(c % ASYNC_STAGES) * BULK_CHUNK);
#pragma unroll
            for (int u = 0; u < PER; u++) {
                const size_t i = (size_t)c * (BULK_CHUNK / 16) + u * READ_THREADS + threadIdx.x;
                cp_async16_s(dst + (uint32_t)(u * READ_THREADS + threadIdx.x) * 16u, src + (i < len16 ? i : 0),
                             i < len16 ? 16 : 0);
            }
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    for (int c = 0; c < ASYNC_STAGES - 1; c++) issue(c);
    for (int c = 0; c < nchunks; c++) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(ASYNC_STAGES - 2) : "memory");
        __syncthreads();  // stage c landed for every thread; every thread is done with stage c - 1
        issue(c + ASYNC_STAGES - 1);
        const uint4 *q = (const uint4 *)(ring + (size_t)(c % ASYNC_STAGES) * BULK_CHUNK);
#pragma unroll
        for (int u = 0; u < PER; u++) acc ^= fold(q[u * READ_THREADS + threadIdx.x]);  // zeros past the end
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
    read_finish(p, acc);
}

const char *orthros_read_variant_name(int variant)
{
    static const char *const names[ORTHROS_READ_VARIANTS] = {
        "grid-stride, 4 x 16 B in flight, no hint", "grid-stride, 4 x 16 B in flight, L2 256 B hint",
        "span per block, 8 x 16 B in flight, L2 256 B hint", "span per block, 3 x 32 KB bulk copies in flight",
        "span per block, 8 x 16 B in flight, no hint", "span per block, 1 block/SM, 3 x 32 KB cp.async in flight"};
    return variant >= 0 && variant < ORTHROS_READ_VARIANTS ? names[variant] : "unknown";
}

int orthros_read_blocks(int num_sms) { return (num_sms > 0 ? num_sms : 132) * READ_BLOCKS_PER_SM; }

int orthros_read_xor_u64(const orthros_read_params *p, cudaStream_t stream)
{
    if (p->blocks <= 0 || !p->partials)
        return orthros_error(ORTHROS_EINVAL, "read: %d blocks, partials %p", p->blocks, (void *)p->partials);
    if ((uintptr_t)p->src % 16)
        return orthros_error(ORTHROS_EINVAL, "read: source %p is not 16-byte aligned", p->src);
    const size_t n16 = p->bytes / 16;
    switch (p->variant) {
    case 0:
    case 1:
        if (p->variant) read_xor_kernel<true><<<(unsigned)p->blocks, READ_THREADS, 0, stream>>>(*p);
        else read_xor_kernel<false><<<(unsigned)p->blocks, READ_THREADS, 0, stream>>>(*p);
        ORTHROS_CUDA_LAUNCH_CHECK("read_xor_kernel");
        return 0;
    case 2:
    case 4:
        if (p->variant == 2) read_span_kernel<true><<<(unsigned)p->blocks, READ_THREADS, 0, stream>>>(*p, (n16 + p->blocks - 1) / p->blocks);
        else read_span_kernel<false><<<(unsigned)p->blocks, READ_THREADS, 0, stream>>>(*p, (n16 + p->blocks - 1) / p->blocks);
        ORTHROS_CUDA_LAUNCH_CHECK("read_span_kernel");
        return 0;
    case 3:
    case 5: {
        int dev = 0, cc = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
            cudaGetLastError();
            return orthros_error(ORTHROS_EDEVICE, "read: cannot query the device");
        }
        if (cc < 9) return orthros_error(ORTHROS_EUNSUPPORTED, "read variant %d needs sm_90 or later", p->variant);
        /* Fewer, longer spans (two blocks per SM for the bulk copies, one for cp.async); the other partials are
         * zero. */
        const bool bulk = p->variant == 3;
        const int per_sm = bulk ? BULK_BLOCKS_PER_SM : 1;
        const int blocks = p->blocks / (READ_BLOCKS_PER_SM / per_sm) > 0 ? p->blocks / (READ_BLOCKS_PER_SM / per_sm) : 1;
        const size_t smem = (size_t)(bulk ? BULK_STAGES : ASYNC_STAGES) * BULK_CHUNK;
        static int smem_set[2] = {0, 0}; /* (per process: one device) */
        if (!smem_set[bulk]) {
            if (bulk) ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(read_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            else ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(read_async_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            smem_set[bulk] = 1;
        }
        ORTHROS_CUDA_CHECK(cudaMemsetAsync(p->partials, 0, (size_t)p->blocks * sizeof *p->partials, stream));
        if (bulk) read_bulk_kernel<<<(unsigned)blocks, READ_THREADS, smem, stream>>>(*p, (n16 + blocks - 1) / blocks);
        else read_async_kernel<<<(unsigned)blocks, READ_THREADS, smem, stream>>>(*p, (n16 + blocks - 1) / blocks);
        ORTHROS_CUDA_LAUNCH_CHECK(bulk ? "read_bulk_kernel" : "read_async_kernel");
        return 0;
    }
    default:
        return orthros_error(ORTHROS_EINVAL, "read: no variant %d (0 .. %d)", p->variant, ORTHROS_READ_VARIANTS - 1);
    }
}
