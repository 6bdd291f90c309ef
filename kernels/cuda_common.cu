/* The host side of cuda_common.cuh: the one probe of which of this binary's sm_90 code runs on the current
 * device, which every kernel with an sm_90 or sm_90a version (TMA, wgmma) asks before choosing it. */
#include "cuda_common.cuh"

enum { PROBE_SM90 = 1, PROBE_SM90A = 2 };

static __device__ int probe_flags;
static __global__ void probe_kernel(void)
{
    int f = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    f |= PROBE_SM90;
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    f |= PROBE_SM90A;
#endif
    probe_flags = f;
}

/* The PROBE_* flags of the code the current device runs, and its compute capability; probed once. A device
 * below 9.0, or one this binary has no kernel image for, gives no flags. */
static int probe(int *major, int *minor)
{
    static int flags = -1, cc_major = 0, cc_minor = 0;
    if (flags < 0) {
        int dev = 0, f = 0;
        flags = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess || cc_major < 9) {
            cudaGetLastError();
        } else {
            probe_kernel<<<1, 1>>>();
            if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
                cudaMemcpyFromSymbol(&f, probe_flags, sizeof f) != cudaSuccess)
                cudaGetLastError(); /* no kernel image for this device: not sticky, clear it */
            else
                flags = f;
        }
    }
    *major = cc_major, *minor = cc_minor;
    return flags;
}

int orthros_cuda_sm90_available(void)
{
    int major, minor;
    return (probe(&major, &minor) & PROBE_SM90) && major >= 9;
}

int orthros_cuda_sm90a_available(void)
{
    int major, minor;
    return (probe(&major, &minor) & PROBE_SM90A) && major == 9 && minor == 0;
}

int orthros_cuda_device_present(void)
{
    int major, minor;
    probe(&major, &minor);
    return major > 0;
}
