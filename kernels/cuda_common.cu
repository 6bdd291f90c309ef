/* The host side of cuda_common.cuh: the one probe of whether this binary's kernels carry sm_90a code for the
 * current device, which every kernel with an sm_90a version (wgmma, TMA) asks before choosing it. */
#include "cuda_common.cuh"

static __device__ int sm90a_probe_flag;
static __global__ void sm90a_probe_kernel(void)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    sm90a_probe_flag = 1;
#else
    sm90a_probe_flag = 0;
#endif
}

int orthros_cuda_sm90a_available(void)
{
    static int cached = -1;
    if (cached >= 0) return cached;
    int dev = 0, major = 0, minor = 0, flag = 0;
    cached = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess || major != 9 ||
        minor != 0) {
        cudaGetLastError();
        return cached;
    }
    sm90a_probe_kernel<<<1, 1>>>();
    if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpyFromSymbol(&flag, sm90a_probe_flag, sizeof flag) != cudaSuccess) {
        cudaGetLastError();  // no kernel image for this device: not sticky, clear it
        return cached;
    }
    cached = flag == 1;
    return cached;
}
