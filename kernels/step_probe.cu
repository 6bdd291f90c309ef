/* The step probes (step_probe.h). The chain: each kernel is as small as a kernel can be (one store a block), so the
 * time per kernel is the boundary: launch, drain and ramp. The barrier: the textbook sense-reversing grid barrier
 * (an arrival counter and a generation, thread 0 of each block arrives with a device-scope atomic, the last one resets
 * the counter and bumps the generation, the others spin on it with acquire loads), the kind a persistent step would
 * run between its ops; and the flat one of cuda_common.cuh (grid_barrier_flat), one trip where the textbook one
 * makes three. */
#include "step_probe.h"

#include "cuda_common.cuh"

#define PROBE_THREADS 256

static __global__ void __launch_bounds__(PROBE_THREADS) chain_kernel(unsigned *words)
{
    if (threadIdx.x == 0) words[blockIdx.x] += 1u;
}

/* sync[0]: arrivals this generation; sync[1]: the generation. */
static __device__ __forceinline__ void grid_barrier(unsigned *sync)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned gen = ld_acquire_gpu(sync + 1);
        __threadfence();
        if (atomicAdd(sync, 1u) == gridDim.x - 1) {
            sync[0] = 0u;
            __threadfence();
            atomicAdd(sync + 1, 1u);
        } else {
            while (ld_acquire_gpu(sync + 1) == gen) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}

template <bool FLAT>
static __global__ void __launch_bounds__(PROBE_THREADS) barrier_kernel(unsigned *words, unsigned *sync, unsigned *errors,
                                                                        int rounds)
{
    __shared__ unsigned bad;
    unsigned passed = 0u;
    for (int r = 1; r <= rounds; r++) {
        if (threadIdx.x == 0) {
            bad = 0u;
            *(volatile unsigned *)(words + blockIdx.x) = (unsigned)r;
        }
        if (FLAT) grid_barrier_flat<false>(sync, ++passed * gridDim.x);
        else grid_barrier(sync);
        /* every block's word, read past L1 */
        for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
            if (ld_acquire_gpu(words + b) != (unsigned)r) atomicAdd(&bad, 1u);
        __syncthreads();
        if (threadIdx.x == 0 && bad) atomicAdd(errors, bad);
        /* nobody writes round r + 1 before everybody has read round r */
        if (FLAT) grid_barrier_flat<false>(sync, ++passed * gridDim.x);
        else grid_barrier(sync);
    }
}

extern "C" int orthros_probe_chain(unsigned *words, int blocks, int n, cudaStream_t stream)
{
    if (!words || blocks < 1 || n < 0) return orthros_error(ORTHROS_EINVAL, "probe chain: %d blocks, %d kernels", blocks, n);
    for (int i = 0; i < n; i++) {
        chain_kernel<<<blocks, PROBE_THREADS, 0, stream>>>(words);
        ORTHROS_CUDA_LAUNCH_CHECK("probe chain");
    }
    return 0;
}

extern "C" int orthros_probe_barrier(unsigned *words, unsigned *sync, unsigned *errors, int blocks, int rounds, int flat,
                                     cudaStream_t stream)
{
    if (!words || !sync || !errors || blocks < 1 || rounds < 0 || (flat && (long)blocks * 2 * rounds > 0xffffffffL))
        return orthros_error(ORTHROS_EINVAL, "probe barrier: %d blocks, %d rounds", blocks, rounds);
    void (*kernel)(unsigned *, unsigned *, unsigned *, int) = flat ? barrier_kernel<true> : barrier_kernel<false>;
    int dev = 0, coop = 0, sms = 0, per_sm = 0;
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, PROBE_THREADS, 0));
    if (!coop || blocks > sms * per_sm)
        return orthros_error(ORTHROS_EUNSUPPORTED, "probe barrier: %d blocks do not fit at once (%d SMs x %d, cooperative %d)",
                             blocks, sms, per_sm, coop);
    void *args[] = {&words, &sync, &errors, &rounds};
    ORTHROS_CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)kernel, dim3((unsigned)blocks),
                                                   dim3(PROBE_THREADS), args, 0, stream));
    return 0;
}
