/* Versions 5 to 7 of the causal prefill attention kernel: wgmma (sm_90a) with TMA-fed K/V, for head dims 64 and
 * 128 (attn_full_prefill_wgmma.cu). v5: window == 0 with every key in its own slot; v6 adds sliding windows and
 * ring caches that wrap. Internal to kernels/: attn_full_prefill.cu dispatches to it. */
#ifndef ORTHROS_KERNEL_ATTN_FULL_PREFILL_WGMMA_CUH
#define ORTHROS_KERNEL_ATTN_FULL_PREFILL_WGMMA_CUH

#include <cuda_runtime_api.h>

#include "attn_full_prefill.h"

/* 1 when the given version (5 or 6) can take these parameters: head dim 64 or 128, 16-byte aligned caches, and
 * for v5 window == 0 with every key the chunk reads at its own slot (0 < max_keys <= cap, so slot s % cap == s);
 * v6 takes any window and cap. Otherwise the caller uses v4. */
int orthros_attn_prefill_wgmma_supported(const orthros_attn_full_prefill_params *p, int version);
/* Runs v5 or v6 (the caller checked _supported). ORTHROS_EUNSUPPORTED when the binary has no sm_90a code. */
int orthros_attn_prefill_wgmma_bf16(const orthros_attn_full_prefill_params *p, int version, cudaStream_t stream);

#endif
