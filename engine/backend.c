/* Backend selection by name. */
#include "backend.h"

#include <string.h>

int orthros_backend_create(orthros_backend **out, const char *device)
{
    *out = NULL;
    if (!device || !strcmp(device, "auto"))
        return orthros_cuda_available() ? orthros_backend_cuda_create(out) : orthros_backend_cpu_create(out);
    if (!strcmp(device, "cpu")) return orthros_backend_cpu_create(out);
    if (!strcmp(device, "cuda")) return orthros_backend_cuda_create(out);
    return orthros_error(ORTHROS_EINVAL, "unknown device \"%s\" (cpu, cuda, auto)", device);
}

void orthros_backend_free(orthros_backend *be)
{
    if (be) be->destroy(be);
}

const char *orthros_backend_name(const orthros_backend *be)
{
    return be->name;
}
