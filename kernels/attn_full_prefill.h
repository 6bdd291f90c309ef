/* Causal softmax attention of a chunk of queries against the KV cache (full and sliding window). */
#ifndef ORTHROS_KERNEL_ATTN_FULL_PREFILL_H
#define ORTHROS_KERNEL_ATTN_FULL_PREFILL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Query i of sequence b sits at position t = pos0[b] + i and attends to the cached positions s in
 * [lo, t], lo = max(0, t - window + 1) when window > 0 else 0; position s lives at slot s % cap. */
typedef struct {
    void *out;              /* [B][n][Hq][d] bf16 */
    const void *qkv;        /* [B][n][(Hq + 2 Hkv) d] bf16, q already rotated */
    const void *k_cache;    /* [B][cap][Hkv][d] bf16 */
    const void *v_cache;    /* [B][cap][Hkv][d] bf16 */
    const int *pos0;        /* device [B] */
    int B, n, Hq, Hkv, d, cap, window;
    /* Decode only: fp32 scratch for the split-K partial results, and the host's view of the key ranges. */
    float *work;
    size_t work_bytes;
    int max_keys;           /* max over b of the number of keys the chunk's queries read (host-computed) */
    int num_sms;
} orthros_attn_full_params;

/* Any n, any head_dim up to 256: tensor cores (mma.sync) for head_dim 64 and 128, a plain kernel otherwise. */
int orthros_attn_full_prefill_bf16(const orthros_attn_full_params *p, cudaStream_t stream);
/* The numbered kernel version the head dims 64 and 128 use (1 .. ORTHROS_ATTN_PREFILL_LATEST), process-wide,
 * ORTHROS_ATTN_PREFILL_DEFAULT until set: for benchmarks and tests that compare versions. Version 5 (wgmma,
 * attn_full_prefill_wgmma.cu) needs sm_90a code in the binary: without it, setting 5 returns
 * ORTHROS_EUNSUPPORTED and leaves the version unchanged. It stays off by default until run on a GPU. */
#define ORTHROS_ATTN_PREFILL_LATEST 5
#define ORTHROS_ATTN_PREFILL_DEFAULT 4
int orthros_attn_full_prefill_set_version(int version);
/* The plain kernel alone (one warp per query row), exposed for tests and as the fallback. */
int orthros_attn_full_generic_bf16(const orthros_attn_full_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
