/* The decode step's products through cuBLASLt with an algorithm tuned per shape (ORTHROS_GEMM_LT=1 on the cuda
 * backend; docs/kernels.md, "cuBLASLt with a tuned algorithm"): out[n][M] = x[n][K] W[M][K]^T, bf16 in, bf16 or fp32
 * out, fp32 accumulation (split-K reductions in fp32 only), as the backend's cublasGemmEx computes it.
 *   CPU reference: cpu_gemm / cpu_logits in engine/backend_cpu.c.
 *   Test: kernels/tests/test_cuda_ops.c, section gemmlt (a backend made with ORTHROS_GEMM_LT=1, gemm and logits of
 *   awkward shapes against the cpu).
 *   Bench: bench/kernels/bench_kernels.c, op gemv, cell "cublaslt" beside "cublas". */
#ifndef ORTHROS_KERNEL_GEMM_LT_H
#define ORTHROS_KERNEL_GEMM_LT_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct orthros_gemm_lt orthros_gemm_lt;

/* A cuBLASLt context whose calls use the caller's workspace (ws_bytes at ws, stream-ordered: the backend's cuBLAS
 * workspace serves both). 0 or ORTHROS_EDEVICE / ORTHROS_ENOMEM. */
int orthros_gemm_lt_create(orthros_gemm_lt **out, void *ws, size_t ws_bytes);
void orthros_gemm_lt_destroy(orthros_gemm_lt *lt);

/* One product on `stream`. A shape (n, M, K, out type) met for the first time outside a stream capture is tuned:
 * every algorithm cuBLASLt's heuristic offers (up to 16) is timed on this call's operands, L2 flushed before each
 * run, and the fastest is kept for the shape (a line on stderr names it); met first inside a capture (capturing 1),
 * the heuristic's first is used and kept. The tuning synchronizes the stream and allocates a 128 MB flush buffer for
 * its duration (where it cannot, the heuristic's first is kept, untuned, and a line says so). */
int orthros_gemm_lt_bf16(orthros_gemm_lt *lt, void *out, int out_f32, const void *x, const void *W, int n, int M,
                         int K, int capturing, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
