/* The linear-attention feature map phi applied to the un-rotated q and k of a span of qkv rows.
 *   CPU reference: feature_map (for cpu_attn_linear) in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, linear_suite() (elu1, relu and hedgehog, through the linear ops).
 *   Bench: within bench/kernels/bench_kernels.c op "attn_linear_prefill" (the hedgehog case featurizes; elu1 and
 *   relu are fused into v4 and later). Kernel: linear_featurize.cu. */
#ifndef ORTHROS_KERNEL_LINEAR_FEATURIZE_H
#define ORTHROS_KERNEL_LINEAR_FEATURIZE_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The key stream of a linear-attention call whose state lags a local window of `shift` positions (the linear formula
 * of a converted model, docs/converted-models.md): key row j of sequence b is position pos0[b] + j - shift, read from
 * qkv row j - shift when that is >= 0, else from the rings (kf_ring: the keys phi reads, un-rotated or rotated; v_ring),
 * position p at slot p % cap; there is no key where the position is < 0 (phi of it is 0, not phi(0)). shift 0: key
 * row j is qkv row j, the rings unused. */
typedef struct {
    int shift;
    const int *pos0;       /* device [B] */
    const void *kf_ring;   /* [B][kf_cap][Hkv][d] bf16 */
    const void *v_ring;    /* [B][v_cap][Hkv][d] bf16 */
    int kf_cap, v_cap;
} orthros_linear_keys;

/* Rows i0 .. i0 + ns - 1 of each of the B sequences of qkv [B][n][(Hq + 2 Hkv) d] are mapped (the keys: those rows of
 * the key stream `keys`). */
typedef struct {
    void *phi_q;           /* [B][ns][Hq][F] bf16 */
    void *phi_k;           /* [B][ns][Hkv][F] bf16 */
    float *tmp;            /* hedgehog only: [B * ns][Hq + Hkv][F / 2] fp32 scratch */
    const void *qkv;
    const void *fmap_q;    /* hedgehog: [Hq][d][F/2] bf16 */
    const void *fmap_k;    /* hedgehog: [Hkv][d][F/2] bf16 */
    int B, n, i0, ns, Hq, Hkv, d, F, fmap; /* fmap: an orthros_fmap */
    orthros_linear_keys keys;
} orthros_linear_featurize_params;

size_t orthros_linear_featurize_tmp_bytes(int B, int ns, int Hq, int Hkv, int F, int fmap);
int orthros_linear_featurize_bf16(const orthros_linear_featurize_params *p, cublasHandle_t cublas, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
