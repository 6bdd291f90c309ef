/* Element-wise fills and dtype conversions into bf16 tensors (weight upload, dummy weights).
 *   CPU reference: cpu_upload, cpu_fill_random and cpu_fill in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, test_fill_upload (section ops).
 *   Bench: none (they run when a model loads, not in what the bench times). Kernel: convert.cu. */
#ifndef ORTHROS_KERNEL_CONVERT_H
#define ORTHROS_KERNEL_CONVERT_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ORTHROS_CONVERT_F32 = 0, ORTHROS_CONVERT_F16 = 2 } orthros_convert_src;

typedef struct {
    void *dst;        /* [n] bf16 */
    const void *src;  /* [n] fp32 or fp16 */
    orthros_convert_src src_type;
    size_t n;
} orthros_convert_params;

typedef struct {
    void *dst;        /* [n] bf16 */
    size_t n;
    int random;       /* 1: (2 u(seed, i) - 1) * scale; 0: value */
    uint64_t seed;
    float scale, value;
} orthros_fill_params;

int orthros_convert_to_bf16(const orthros_convert_params *p, cudaStream_t stream);
int orthros_fill_bf16(const orthros_fill_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
