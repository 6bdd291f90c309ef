/* Stands in for the cuda backend in builds without nvcc, so that --device cuda fails with a clear message. */
#include "backend.h"

int orthros_backend_cuda_create(orthros_backend **out)
{
    *out = NULL;
    return orthros_error(ORTHROS_EUNSUPPORTED, "this build has no CUDA backend (configure with nvcc on the PATH)");
}

int orthros_cuda_available(void)
{
    return 0;
}

int orthros_cuda_device_count(void)
{
    return 0;
}

int orthros_cuda_set_device(int device)
{
    return orthros_error(ORTHROS_EUNSUPPORTED, "this build has no CUDA backend (configure with nvcc on the PATH)");
}
