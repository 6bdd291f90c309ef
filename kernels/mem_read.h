/* A read-only pass over device memory: the XOR of its 64-bit words, one partial per block. It exists to
 * measure the read-bandwidth ceiling (decode and other read-bound ops are judged against it, copies against
 * the copy ceiling).
 *   CPU reference: cpu_read in engine/backend_cpu.c (the XOR of the 64-bit words).
 *   Test: kernels/tests/test_cuda_ops.c, test_read (odd sizes against the host XOR).
 *   Bench: bench_kernels op "ceiling_read" (4 GiB), next to "ceiling_copy". */
#ifndef ORTHROS_KERNEL_MEM_READ_H
#define ORTHROS_KERNEL_MEM_READ_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned long long *partials; /* [blocks] device: partials[i] = XOR of block i's words (XOR them for all) */
    const void *src;              /* [bytes] device, 16-byte aligned; a trailing bytes % 8 are not read */
    size_t bytes;
    int blocks;                   /* orthros_read_blocks(num_sms) */
} orthros_read_params;

/* The block count that keeps every SM full of loads (8 blocks of 256 threads per SM). */
int orthros_read_blocks(int num_sms);
int orthros_read_xor_u64(const orthros_read_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
