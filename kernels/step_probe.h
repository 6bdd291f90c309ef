/* Probes of the two fixed costs a persistent decode step trades (docs/kernels.md, "Whole-model decode", "A
 * persistent step"): a chain of small dependent kernels, each a kernel boundary of the captured step as it runs now,
 * and a grid-wide barrier inside one resident kernel, what a persistent step would pay between its ops instead.
 *   CPU reference: the counts each probe must leave (a chain of n kernels adds n to every block's word; a barrier
 *   round r sees every block's word at r), checked on the host.
 *   Test: kernels/tests/test_cuda_ops.c, section stepprobe (awkward kernel, block and round counts).
 *   Bench: bench/kernels/bench_kernels.c op "step_probe" (the 1B step's 98 kernels of 264 blocks under a CUDA
 *   graph, and 97 barriers of one block an SM: microseconds each). */
#ifndef ORTHROS_KERNEL_STEP_PROBE_H
#define ORTHROS_KERNEL_STEP_PROBE_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* n launches of a kernel of `blocks` blocks of 256 threads, each adding 1 to words[block] (thread 0), in stream
 * order: words[0..blocks) gain n. */
int orthros_probe_chain(unsigned *words, int blocks, int n, cudaStream_t stream);
/* One kernel of `blocks` blocks (at most one an SM: all resident, a cooperative launch) that runs `rounds` grid
 * barriers; in round r (1-based) each block writes r into words[block] before the barrier and, after it, counts the
 * blocks whose word is not r into *errors, then meets them at a second barrier (so that no block writes round r + 1
 * before all have read round r). sync[2] (zeroed by the caller once) is the barriers' arrival count and generation;
 * it is left with the count 0 and the generation advanced by 2 rounds. With flat, the barrier is the flat one (an
 * arrival count that never resets, a release reduction and acquire polls): sync[0] is left at 2 rounds x blocks,
 * sync[1] untouched. ORTHROS_EUNSUPPORTED where the device cannot launch cooperatively or blocks exceeds what fits
 * at once. */
int orthros_probe_barrier(unsigned *words, unsigned *sync, unsigned *errors, int blocks, int rounds, int flat,
                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
