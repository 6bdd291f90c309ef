/* Linear attention, token by token: the recurrent form (decode, and the fallback for any shape).
 *   CPU reference: cpu_attn_linear in engine/backend_cpu.c (token by token; the same function serves prefill).
 *   Test: kernels/tests/test_cuda_ops.c, linear_suite() (decode steps after each prefill, every feature map).
 *   Bench: bench/kernels/bench_kernels.c op "attn_linear_decode" (batch 1 and 16, elu1, d 64 and 128, against the
 *   read ceiling). Kernel: attn_linear_decode.cu. */
#ifndef ORTHROS_KERNEL_ATTN_LINEAR_DECODE_H
#define ORTHROS_KERNEL_ATTN_LINEAR_DECODE_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#include "linear_featurize.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One layer's linear attention over qkv [B][n][(Hq + 2 Hkv) d] (q, k un-rotated, or rotated in place when phi acts
 * after RoPE), carrying (S, z). With keys.shift = W >= 1 (a converted model's local window, docs/converted-models.md)
 * the keys and values the state takes are those of the lagging key stream (linear_featurize.h): query row i reads
 * the keys of positions up to pos0 + i - W, and the window term is added by attn_linear_window.cu, which needs den. */
typedef struct {
    void *out;             /* [B][n][Hq][d] bf16: num / (den + eps) */
    const void *qkv;
    float *S;              /* [B][Hkv][F][d] fp32, updated */
    float *z;              /* [B][Hkv][F] fp32, updated */
    const void *fmap_q;    /* hedgehog: [Hq][d][F/2] bf16 */
    const void *fmap_k;    /* hedgehog: [Hkv][d][F/2] bf16 */
    int B, n, Hq, Hkv, d, F, fmap;
    float eps;
    void *work;            /* scratch, at least the *_work_bytes of the op */
    size_t work_bytes;
    orthros_linear_keys keys; /* shift 0: key row i is qkv row i */
    float *den;            /* NULL, or [B][n][Hq] fp32: each row's denominator phi(q).z_t (eps not added) */
} orthros_attn_linear_params;

size_t orthros_attn_linear_recurrent_work_bytes(const orthros_attn_linear_params *p);
/* Any shape: tokens in order, one block per (32 columns of d, kv head, sequence). */
int orthros_attn_linear_recurrent_bf16(const orthros_attn_linear_params *p, cublasHandle_t cublas, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
