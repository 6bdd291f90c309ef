/* Split-K softmax attention for a few query rows against a long KV cache (decode). */
#ifndef ORTHROS_KERNEL_ATTN_FULL_DECODE_H
#define ORTHROS_KERNEL_ATTN_FULL_DECODE_H

#include "attn_full_prefill.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the split-K kernel takes this shape: head_dim 64 or 128 and n * Hq / Hkv <= 16 rows per kv head. */
int orthros_attn_full_decode_supported(const orthros_attn_full_params *p);
/* Scratch the split-K kernel needs in p->work for this shape (p->max_keys and p->num_sms set). */
size_t orthros_attn_full_decode_work_bytes(const orthros_attn_full_params *p);
/* The numbered kernel version used (3 .. ORTHROS_ATTN_DECODE_LATEST; earlier ones are in the .cu history only),
 * process-wide, ORTHROS_ATTN_DECODE_DEFAULT until set: for benchmarks that compare versions. v5 (the merge fused
 * into the split kernel) is not the default until it has run on a GPU. */
#define ORTHROS_ATTN_DECODE_LATEST 5
#define ORTHROS_ATTN_DECODE_DEFAULT 4
int orthros_attn_full_decode_set_version(int version);
int orthros_attn_full_decode_bf16(const orthros_attn_full_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
