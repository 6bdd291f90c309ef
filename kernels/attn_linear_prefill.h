/* Chunked linear attention for prefill (tensor cores, sequence split across blocks): the prefill op of the
 * linear layers and of orthros's linear phase. With a local window (params.keys.shift, a converted model's formula)
 * it is the linear term over the lagging key stream, and attn_linear_window.h adds the window.
 *   CPU reference: cpu_attn_linear in engine/backend_cpu.c (token by token; the same function serves decode).
 *   Test: kernels/tests/test_cuda_ops.c, linear_suite() (every kept version; state carried across calls) and
 *         window_suite() (the local window on every kept version).
 *   Bench: bench/kernels/bench_kernels.c op "attn_linear_prefill" (each version by name, 128K tokens, elu1, d 64
 *   and 128; hedgehog at 16K) and "attn_linear_window" (windows 0 and 64).
 *   Kernels: attn_linear_prefill.cu (chunked; its versions: docs/kernels.md), attn_linear_decode.cu (the
 *   recurrent fallback). */
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
 * 3 featurizes q and k into scratch first; 4 applies elu1 / relu inside the chunk kernels; 5 walks segments of
 * the sequence chunk by chunk with the state in registers (elu1 / relu, head dim 64 or 128; other shapes take
 * 4's path); 6 is 5 with the feature map applied 8 values a step and the causally empty tiles of the intra-chunk
 * products skipped (v5's lin5_out was issue-bound, about half its instructions the element-wise map); 7 is 6 with
 * the output pass on wgmma at head dim 128 (the chunk's scores, intra, inter and state-update products as
 * warpgroup MMAs from 128-byte-swizzled shared memory), 6's kernels elsewhere. Measured on the H200 at 128K
 * tokens, 32 q / 8 kv heads, elu1, one run: d 64 v3 2.59 ms, v4 2.57, v5 1.64, v6 1.14; d 128 v3 8.16, v4 9.03,
 * v5 4.46, v6 3.08 (data/results/h200-2026-12-01-linear-v6); v7 d 128 2.65 ms against v6's 3.07 in the same job,
 * its tests (224 checks) and memcheck passing (data/results/h200-2026-12-01-v7-defaults).
 * The default: ORTHROS_ATTN_LINEAR_PREFILL_SM90A_DEFAULT (7) where the binary carries sm_90a code and the device is
 * compute capability 9.0, else ORTHROS_ATTN_LINEAR_PREFILL_PORTABLE_DEFAULT (6). ORTHROS_LINEAR_PREFILL_VERSION
 * selects one for a process. */
#define ORTHROS_ATTN_LINEAR_PREFILL_PORTABLE_DEFAULT 6
#define ORTHROS_ATTN_LINEAR_PREFILL_SM90A_DEFAULT 7
#define ORTHROS_ATTN_LINEAR_PREFILL_LATEST 7
/* The default for this binary and device (the first call probes the device). */
int orthros_attn_linear_prefill_default_version(void);
/* 0 selects the default; 7 without sm_90a code for the device returns ORTHROS_EUNSUPPORTED and leaves the version
 * unchanged. */
int orthros_attn_linear_prefill_set_version(int version);
/* The version in use. */
int orthros_attn_linear_prefill_version(void);

#ifdef __cplusplus
}
#endif
#endif
