/* The local softmax window of a converted model's linear formula (docs/converted-models.md), added to the linear
 * term that attn_linear_prefill / attn_linear_decode left normalised in out, with its denominator in den:
 *   o = (o_lin (den + eps) + gamma_h sum_{Win} e^{x - m} v) / (den + gamma_h sum_{Win} e^{x - m}),
 * x = q~.k~ / sqrt(d) over the last W positions (t included), m their max.
 *   CPU reference: cpu_attn_linear in engine/backend_cpu.c (the window term is full's attn_row there).
 *   Test: kernels/tests/test_cuda_ops.c, window_suite() (section "window").
 *   Bench: bench_kernels op "attn_linear_prefill" with window=64 (the linear prefill plus this pass). */
#ifndef ORTHROS_KERNEL_ATTN_LINEAR_WINDOW_H
#define ORTHROS_KERNEL_ATTN_LINEAR_WINDOW_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    void *out;             /* [B][n][Hq][d] bf16: in, the linear term num / (den + eps); out, the combined output */
    const float *den;      /* [B][n][Hq] fp32: the linear term's denominator, eps not added */
    const void *q;         /* bf16 q~ of row i of sequence b at q + (b * n + i) * q_stride, head h at + h * d */
    size_t q_stride;       /* elements */
    const void *k_cache;   /* [B][cap][Hkv][d] bf16: k~ of position p at slot p % cap */
    const void *v_cache;   /* [B][cap][Hkv][d] bf16 */
    const int *pos0;       /* device [B]: row i sits at position pos0[b] + i */
    const void *gate;      /* [Hq] bf16 gamma_h, or NULL: 1 */
    int B, n, Hq, Hkv, d, cap, window;
    float eps;             /* the linear op's eps (o_lin was divided by den + eps) */
} orthros_attn_linear_window_params;

/* Any n, head dims up to 256 (even): tensor cores for head dims 64 and 128 from 16 rows up, one warp per (row, head)
 * otherwise. The cache must hold positions pos0[b] - window + 1 .. pos0[b] + n - 1 (cap >= window + n - 1). */
int orthros_attn_linear_window_bf16(const orthros_attn_linear_window_params *p, cudaStream_t stream);

/* Kernel versions of the tensor-core path (head dims 64 and 128, 16 rows or more), process-wide, for tests and
 * benchmarks that compare them:
 *   1  a block per (64 positions, kv head, pair of query heads), K / V tiles of 64 keys double-buffered, online
 *      softmax, the combine 4 bytes at a time from global memory; any window. H200, 128K tokens, W 64: d 64 1.52 ms,
 *      d 128 2.38 ms (28% of its floor's bandwidth; e470e63);
 *   2  (the default; H200, 128K, W 64: d 64 0.553 ms, d 128 1.161 ms, 80% / 76% of its floor; 3ba2852) windows up
 *      to 64: a block per (64 positions, kv head), the key window loaded once for the whole group, each warp's next
 *      head's q~ and o_lin rows in flight while it computes, the combine in shared memory and 16-byte stores; wider
 *      windows take 1's kernel.
 * attn_linear_window.cu's top comment has the floors and the prediction. */
#define ORTHROS_ATTN_LINEAR_WINDOW_LATEST 2
#define ORTHROS_ATTN_LINEAR_WINDOW_DEFAULT 2
/* 0 selects the default; anything else outside 1 .. LATEST is ORTHROS_EINVAL. */
int orthros_attn_linear_window_set_version(int version);
/* The version in use. */
int orthros_attn_linear_window_version(void);

#ifdef __cplusplus
}
#endif
#endif
