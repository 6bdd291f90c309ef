/* RoPE fused with the KV-cache write.
 *   CPU reference: cpu_rope_cache_write in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, test_full (its "rope qkv", "rope k_cache" and "rope v_cache" checks,
 *   every head geometry, ring caches and windows) through full_suite() and the version suites.
 *   Bench: no op of its own in bench/kernels/bench_kernels.c; it runs in every full-attention layer `orthros
 *   bench` times. Kernel: rope_cache.cu. */
#ifndef ORTHROS_KERNEL_ROPE_CACHE_H
#define ORTHROS_KERNEL_ROPE_CACHE_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHROS_ROPE_MAX_HALF 128

typedef struct {
    void *qkv;             /* [B][n][(Hq + 2 Hkv) d] bf16; q rows i >= rotate_q_from rotated in place */
    void *k_cache;         /* [B][cap][Hkv][d] bf16; with cap 0 nothing is written */
    void *v_cache;         /* [B][cap][Hkv][d] bf16 */
    const int *pos0;       /* device [B] */
    int B, n, Hq, Hkv, d, cap, rotate_q_from;
    float inv_freq[ORTHROS_ROPE_MAX_HALF];
    /* The linear formula of a converted model (docs/converted-models.md): */
    void *kraw;            /* NULL, or [B][kraw_cap][Hkv][d] bf16: the un-rotated k of position p at slot p % kraw_cap */
    int kraw_cap;
    void *q_rot;           /* NULL, or [B][n][Hq][d] bf16: every row's rotated q */
    int rotate_k;          /* 1: k rotated in place in qkv too (phi after RoPE) */
} orthros_rope_cache_params;

int orthros_rope_cache_write_bf16(const orthros_rope_cache_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
