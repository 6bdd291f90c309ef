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
/* The numbered version the chunked path uses, process-wide, for tests and benchmarks that compare versions:
 * 3 (the default) featurizes q and k into scratch first; 4 applies elu1 / relu inside the chunk kernels (not
 * yet measured on the GPU: the default moves to it once it is tested and faster). */
#define ORTHROS_ATTN_LINEAR_PREFILL_DEFAULT 3
#define ORTHROS_ATTN_LINEAR_PREFILL_LATEST 4
/* 0 selects the default. */
int orthros_attn_linear_prefill_set_version(int version);
int orthros_attn_linear_prefill_version(void);

#ifdef __cplusplus
}
#endif
#endif
