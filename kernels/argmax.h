/* Row-wise argmax of fp32 logits (greedy sampling).
 *   CPU reference: cpu_argmax in engine/backend_cpu.c (the lowest index on ties).
 *   Test: kernels/tests/test_cuda_ops.c, test_argmax (section ops: a vocabulary of 50000 and of 7).
 *   Bench: no op of its own in bench/kernels/bench_kernels.c; it runs in every decode step `orthros bench`
 *   times. Kernel: argmax.cu. */
#ifndef ORTHROS_KERNEL_ARGMAX_H
#define ORTHROS_KERNEL_ARGMAX_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t *ids;         /* device [n] */
    const float *logits;  /* [n][V] fp32 */
    int n, V;
} orthros_argmax_params;

int orthros_argmax_f32(const orthros_argmax_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
