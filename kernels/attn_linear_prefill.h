/* Chunked linear attention for prefill (tensor cores, sequence split across blocks). */
#ifndef ORTHROS_KERNEL_ATTN_LINEAR_PREFILL_H
#define ORTHROS_KERNEL_ATTN_LINEAR_PREFILL_H

#include "attn_linear_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the chunked kernels take this shape (F and d multiples of 16, d <= 128, F <= 256, state tile fits
 * in shared memory); otherwise use orthros_attn_linear_recurrent_bf16. */
int orthros_attn_linear_chunked_supported(const orthros_attn_linear_params *p);
size_t orthros_attn_linear_chunked_work_bytes(const orthros_attn_linear_params *p);
int orthros_attn_linear_chunked_bf16(const orthros_attn_linear_params *p, cublasHandle_t cublas, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
