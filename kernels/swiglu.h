/* SwiGLU activation of the fused gate/up projection.
 *   CPU reference: cpu_swiglu in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, test_swiglu (section ops: the vector and scalar paths).
 *   Bench: no op of its own in bench/kernels/bench_kernels.c; it runs in every layer `orthros bench` times.
 *   Kernel: swiglu.cu. */
#ifndef ORTHROS_KERNEL_SWIGLU_H
#define ORTHROS_KERNEL_SWIGLU_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void *out;      /* [n][F] bf16 */
    const void *gu; /* [n][2F] bf16: gate then up */
    int n, F;
} orthros_swiglu_params;

int orthros_swiglu_bf16(const orthros_swiglu_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
