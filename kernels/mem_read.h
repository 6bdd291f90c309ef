/* A read-only pass over device memory: the XOR of its 64-bit words, one partial per block. It exists to
 * measure the read-bandwidth ceiling (decode and other read-bound ops are judged against it, copies against
 * the copy ceiling).
 *   CPU reference: cpu_read in engine/backend_cpu.c (the XOR of the 64-bit words).
 *   Test: kernels/tests/test_cuda_ops.c, test_read (odd sizes against the host XOR, every variant).
 *   Bench: bench/kernels/bench_kernels.c op "ceiling_read" (4 GiB), next to "ceiling_copy"; op "read_probe"
 *   (every variant). */
#ifndef ORTHROS_KERNEL_MEM_READ_H
#define ORTHROS_KERNEL_MEM_READ_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned long long *partials; /* [blocks] device: the XOR of the partials is that of all the words */
    const void *src;              /* [bytes] device, 16-byte aligned; a trailing bytes % 8 are not read */
    size_t bytes;
    int blocks;                   /* orthros_read_blocks(num_sms) */
    int variant;                  /* how the bytes are read (0, the ceiling's pattern; the others are probes) */
} orthros_read_params;

/* The read patterns, probes of what reaches the HBM's read rate (the ceiling uses 0, the fastest measured; decode
 * v6 reads its cache in contiguous per-block spans through a TMA ring, like 3, v7 through a cp.async ring, like 5):
 *   0 grid-stride 16-byte loads, 4 in flight per thread, no prefetch hint;
 *   1 the same with an L2 256-byte prefetch hint (the ceiling's pattern until 2026-12-01);
 *   2 a contiguous span per block, 16-byte loads, 8 in flight per thread, with the hint;
 *   3 a contiguous span per block through a 3-stage shared-memory ring of 32 KB bulk copies (sm_90 and later;
 *     ORTHROS_EUNSUPPORTED elsewhere), two blocks per SM;
 *   4 as 2 without the hint;
 *   5 a contiguous span per block, one block per SM, through a 4-stage ring of 32 KB stages filled by 16-byte
 *     cp.async from every thread (sm_90 and later). */
#define ORTHROS_READ_VARIANTS 6
const char *orthros_read_variant_name(int variant);

/* The block count that keeps every SM full of loads (8 blocks of 256 threads per SM). */
int orthros_read_blocks(int num_sms);
int orthros_read_xor_u64(const orthros_read_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
