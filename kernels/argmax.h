/* Row-wise argmax of fp32 logits (greedy sampling). */
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
