/* Token embedding lookup.
 *   CPU reference: cpu_embed in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, test_embed (section ops).
 *   Bench: no op of its own in bench/kernels/bench_kernels.c; it runs in every prefill and decode step
 *   `orthros bench` times. Kernel: embed.cu. */
#ifndef ORTHROS_KERNEL_EMBED_H
#define ORTHROS_KERNEL_EMBED_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void *x;               /* [n][D] bf16 */
    const int32_t *tokens; /* device [n], already range-checked */
    const void *table;     /* [vocab][D] bf16 */
    int n, D;
} orthros_embed_params;

int orthros_embed_bf16(const orthros_embed_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
