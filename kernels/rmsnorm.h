/* RMSNorm, optionally fused with the residual add that precedes it.
 *   CPU reference: cpu_rmsnorm and cpu_add_rmsnorm in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, test_rmsnorm (section ops: plain and fused, the vector and scalar paths).
 *   Bench: no op of its own in bench/kernels/bench_kernels.c; it runs in every layer `orthros bench` times.
 *   Kernel: rmsnorm.cu. */
#ifndef ORTHROS_KERNEL_RMSNORM_H
#define ORTHROS_KERNEL_RMSNORM_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void *out;         /* [n][D] bf16 */
    void *resid;       /* [n][D] bf16: the input; with delta, updated in place to resid + delta */
    const void *delta; /* [n][D] bf16 or NULL */
    const void *w;     /* [D] bf16 */
    int n, D;
    float eps;
} orthros_rmsnorm_params;

int orthros_rmsnorm_bf16(const orthros_rmsnorm_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
