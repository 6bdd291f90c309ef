/* NCCL, loaded at run time: the binary does not link libnccl, so it runs without NCCL until a tensor-parallel
 * run on cuda needs it, and then says plainly that it is missing. The few types and functions used are declared
 * here as nccl.h (2.x) defines them: ncclUniqueId is 128 bytes, enums are ints, handles and cudaStream_t are
 * pointers. */
#define _GNU_SOURCE
#include "tp.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCCL_SUCCESS 0
#define NCCL_SUM 0
#define NCCL_BFLOAT16 9

typedef struct {
    char internal[128];
} nccl_unique_id;

static struct {
    void *lib;
    int (*get_version)(int *version);
    int (*get_unique_id)(nccl_unique_id *id);
    int (*comm_init_rank)(void **comm, int nranks, nccl_unique_id id, int rank);
    int (*all_reduce)(const void *send, void *recv, size_t count, int dtype, int op, void *comm, void *stream);
    const char *(*get_error_string)(int result);
    int version;
} nccl;

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static char nccl_why[768];

static void nccl_open(void)
{
    const char *name = getenv("ORTHROS_NCCL_LIB");
    if (!name || !*name) name = "libnccl.so.2";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(nccl_why, sizeof nccl_why,
                 "%s not found (%s); install NCCL (e.g. the nvidia-nccl-cu13 Python package) and put the folder "
                 "holding libnccl.so.2 on LD_LIBRARY_PATH",
                 name, e ? e : "dlopen failed");
        return;
    }
#define SYM(field, sym)                                                                                                \
    do {                                                                                                               \
        void *p_ = dlsym(lib, sym);                                                                                    \
        memcpy(&nccl.field, &p_, sizeof p_); /* object to function pointer, as POSIX allows */                         \
        if (!p_) {                                                                                                     \
            snprintf(nccl_why, sizeof nccl_why, "%s has no %s (NCCL 2.x is needed)", name, sym);                       \
            dlclose(lib);                                                                                              \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)
    SYM(get_version, "ncclGetVersion");
    SYM(get_unique_id, "ncclGetUniqueId");
    SYM(comm_init_rank, "ncclCommInitRank");
    SYM(all_reduce, "ncclAllReduce");
    SYM(get_error_string, "ncclGetErrorString");
#undef SYM
    if (nccl.get_version(&nccl.version) != NCCL_SUCCESS || nccl.version < 21000) {
        snprintf(nccl_why, sizeof nccl_why, "%s is NCCL version %d; bf16 all-reduce needs 2.10 or later", name,
                 nccl.version);
        dlclose(lib);
        return;
    }
    nccl.lib = lib;
}

int orthros_nccl_load(void)
{
    pthread_once(&nccl_once, nccl_open);
    return nccl.lib ? 0 : orthros_error(ORTHROS_EUNSUPPORTED, "%s", nccl_why);
}

int orthros_nccl_version(void)
{
    return nccl.lib ? nccl.version : 0;
}

static int nccl_fail(int result, const char *call)
{
    return orthros_error(ORTHROS_EDEVICE, "%s failed: %s (NCCL %d; NCCL_DEBUG=WARN in the environment says more)",
                         call, nccl.get_error_string(result), result);
}

int orthros_nccl_unique_id(unsigned char id[128])
{
    int rc = orthros_nccl_load();
    if (rc) return rc;
    nccl_unique_id u;
    int r = nccl.get_unique_id(&u);
    if (r != NCCL_SUCCESS) return nccl_fail(r, "ncclGetUniqueId");
    memcpy(id, u.internal, sizeof u.internal);
    return 0;
}

int orthros_nccl_comm_init(void **comm, int world, const unsigned char id[128], int rank)
{
    int rc = orthros_nccl_load();
    if (rc) return rc;
    nccl_unique_id u;
    memcpy(u.internal, id, sizeof u.internal);
    int r = nccl.comm_init_rank(comm, world, u, rank);
    if (r != NCCL_SUCCESS) return nccl_fail(r, "ncclCommInitRank");
    return 0;
}

int orthros_comm_allreduce_bf16(orthros_comm *c, void *x, size_t n, void *stream)
{
    if (!c || !c->nccl) return orthros_error(ORTHROS_EINVAL, "all-reduce: not an NCCL communicator");
    int r = nccl.all_reduce(x, x, n, NCCL_BFLOAT16, NCCL_SUM, c->nccl, stream);
    if (r != NCCL_SUCCESS) return nccl_fail(r, "ncclAllReduce");
    return 0;
}
