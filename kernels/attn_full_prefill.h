/* Causal softmax attention of a chunk of queries against the KV cache (full and sliding window): the prefill
 * op of full, swa, hybrid and orthros-tail layers.
 *   CPU reference: cpu_attn_full in engine/backend_cpu.c (the same function serves decode).
 *   Test: kernels/tests/test_cuda_ops.c, full_suite() and prefill_versions() (every kept version on awkward
 *         shapes; the versions past the default last, prefill_v5_edges / prefill_v6_window).
 *   Bench: bench/kernels/bench_kernels.c op "attn_full_prefill" (each version by name, against the anchors'
 *   flash and cuDNN).
 *   Kernels: attn_full_prefill.cu (v1-v4, mma.sync, any sm_80+), attn_full_prefill_wgmma.cu (v5-v7: wgmma +
 *   TMA, sm_90a only); their versions: docs/kernels.md. */
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
    int max_keys;           /* host view: max over b of the keys the chunk's queries read, (pos0 + n - lo) */
} orthros_attn_full_prefill_params;

/* Any n, any head_dim up to 256: tensor cores for head_dim 64 and 128, a plain kernel otherwise. */
int orthros_attn_full_prefill_bf16(const orthros_attn_full_prefill_params *p, cudaStream_t stream);

/* Kernel versions for head dims 64 and 128 (1 .. ORTHROS_ATTN_PREFILL_LATEST), process-wide, for benchmarks and
 * tests that compare versions:
 *   1-4  mma.sync (attn_full_prefill.cu), any shape;
 *   5    wgmma + TMA (sm_90a), window == 0 with every key in its own slot; other shapes go to 4. Run on the
 *        H200: every GPU test and memcheck pass, 1.5x v4 (issue 11);
 *   6    5 plus sliding windows and ring caches that wrap (the swa layers). Run on the H200 (2026-12-01):
 *        every GPU test and memcheck pass; swa prefill 1.4-2.0x v4; window == 0 runs v5's instantiation;
 *   7    6 with three consumer warpgroups (192-row blocks, no ping-pong) at head dim 64, window 0, where v5/v6's
 *        two leave the kernel latency-bound; elsewhere 6's kernels. Run on the H200 (2026-12-01): the prefill
 *        GPU tests (1220 checks) and memcheck pass; d 64 16K-128K 1.09-1.11x cuDNN of the same job where v6 is
 *        0.95-0.98x; the 1B transformer at 128K 2.68 s (v6 3.03 s).
 * The default: ORTHROS_ATTN_PREFILL_SM90A_DEFAULT (7) where the binary carries sm_90a code and the device is
 * compute capability 9.0, else ORTHROS_ATTN_PREFILL_PORTABLE_DEFAULT (4). ORTHROS_ATTN_PREFILL_VERSION selects
 * one for a process. */
#define ORTHROS_ATTN_PREFILL_LATEST 7
#define ORTHROS_ATTN_PREFILL_PORTABLE_DEFAULT 4
#define ORTHROS_ATTN_PREFILL_SM90A_DEFAULT 7
/* The default for this binary and device (the first call probes the device). */
int orthros_attn_full_prefill_default_version(void);
/* 0 selects the default. Versions 5 to 7 need sm_90a code in the binary and a 9.0 device: without, setting
 * them returns ORTHROS_EUNSUPPORTED and leaves the version unchanged. */
int orthros_attn_full_prefill_set_version(int version);
/* The version in use. */
int orthros_attn_full_prefill_version(void);
/* The plain kernel alone (one warp per query row), exposed for tests and as the fallback. */
int orthros_attn_full_generic_bf16(const orthros_attn_full_prefill_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
