/* Probes of the two fixed costs a persistent decode step trades (docs/kernels.md, "Whole-model decode", "A
 * persistent step"): a chain of small dependent kernels, each a kernel boundary of the captured step as it runs now,
 * and a grid-wide barrier inside one resident kernel, what a persistent step would pay between its ops instead.
 *   CPU reference: the counts each probe must leave (a chain of n kernels adds n to every block's word; a barrier
 *   round r sees every block's word at r), checked on the host.
 *   Test: kernels/tests/test_cuda_ops.c, section stepprobe (awkward kernel, block and round counts).
 *   Bench: bench/kernels/bench_kernels.c op "step_probe" (the 1B step's 98 kernels of 264 blocks under a CUDA
 *   graph, and 97 barriers of one block an SM: microseconds each).
 * And a probe of a third: whether products streamed through one shared-memory ring keep the memory busy across the
 * grid's steps (orthros_probe_stream; CPU reference: each y_p from the W_p and the x_p the rule gives, computed on the
 * host from the probe's own y_{p-1}; test section streamprobe; bench op stream_probe). */
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

/* The stream probe (docs/kernels.md, "A step through one ring"): can one resident kernel keep the memory streaming
 * across the grid-wide steps between a step's products? One block an SM at most (a cooperative launch), running
 * the products of list in order, y_p = W_p x_p; block b owns the rows [b M / G, (b + 1) M / G) of each product (G =
 * blocks), one contiguous range of bytes. A producer warp streams the block's ranges of every product, one after
 * another, through `stages` shared-memory stages of 32 KB (1-d bulk copies on mbarriers): it waits for nothing but a
 * free stage, so it runs ahead across the grid's steps as far as the ring holds. 16 consumer warps stage each
 * product's input x_p in shared memory as bf16, take the stages (a warp's 512 bytes lie in one row, since K is a
 * multiple of 256), add each row's sum in shared memory and write y_p (fp32). Where a product waits, the consumers of
 * every block meet at a grid barrier (the flat one, sync[0]: zeroed by the caller before each launch) after writing
 * y_p, and the next product's input is x_{p+1}[k] = bf16(y_p[k % M_p]), read through L2: the step's data dependency.
 * Otherwise x_{p+1}[k] = x0[k % K_0] and nothing is waited for (the ring's own streaming rate). stamps, when not
 * NULL, gets [2][n][blocks] the global timer (ns) at which each block's consumers had written each product's y, then
 * at which they had staged its input (past the barrier before it; a split product's: as its consumers start it). */
typedef struct {
    const void *W; /* bf16 [M][K] row-major (a split product's [K][M]), 16-byte aligned */
    float *y;      /* [M] */
    int M, K;      /* K: a multiple of 256 (a split product's any), at most ORTHROS_STREAM_PROBE_MAX_K */
    int wait;      /* nonzero: the grid meets after this product and the next reads its y */
    /* nonzero: K split over the blocks as the product before dealt out its rows, so that no block waits or stages
     * anything before it (a decode step's down after gate/up, each block's share of the SwiGLU its own). The product
     * before has M = 2K rows as pairs (a, b), dealt out in pairs, and does not wait; block b's input is its own pairs
     * k, x[k] = bf16(y[2k] y[2k + 1]) from its row sums, and it reads W's k-rows of them, one contiguous range (W
     * given transposed, [K][M]: the layout such a step would store down in), each thread eight columns of every
     * row of its phase on the FMA units (in every mode but 2); the block's column sums are added into y (split 1:
     * fp32 atomics, 16 bytes at a time, so the sums' order varies) or into acc (split 2: 64-bit fixed point,
     * one atomic an output: integer sums, the same bits whichever block adds first, as a step that must decode the
     * same tokens every run would need; y is then left as it was, and the next product's input is acc's values). The
     * kernel zeroes y (acc) as it starts, so a product that waits must come before. M a multiple of 8 up to 4096, y
     * 16-byte aligned. */
    int split;
    unsigned long long *acc; /* split 2: [M], device */
} orthros_stream_product;
#define ORTHROS_STREAM_PROBE_MAX_K 16384
#define ORTHROS_STREAM_PROBE_FIX_SHIFT 28 /* split 2's fixed point: a sum s is held as round(s 2^28) */
#define ORTHROS_STREAM_PROBE_MAX_ROWS 1024 /* rows of a product a block */
/* list: n products on the host; list_dev: room for n on the device (the call copies list there, in stream order);
 * x0: bf16 [list[0].K]; stages 2, 4 or 6 (6 with K up to 14336); mode, the consumers: 0 on the FMA units (a lane's
 * 16 bytes of a row times x's, one warp reduction a row), 1 on the tensor cores (mma.sync, a k-block's 16-byte units
 * as A's rows and x's as B's columns, the diagonal summed), 2 none (the stages freed unread: the producer's own rate;
 * y is then 0); ahead: the stages of a product the producer may issue before the consumers have staged its input (the
 * dependent loads of a grid step wait behind every copy in flight; -1: no limit). ORTHROS_EINVAL for a list the probe
 * does not take (K, rows a block, the shared memory of the stages and K), ORTHROS_EUNSUPPORTED without sm_90 or where
 * `blocks` do not fit at once. */
int orthros_probe_stream(const orthros_stream_product *list, orthros_stream_product *list_dev, int n, const void *x0,
                         unsigned *sync, unsigned long long *stamps, int blocks, int stages, int mode, int ahead,
                         cudaStream_t stream);

/* The cluster probe (docs/kernels.md, "v8's end barrier relaxed"): what a thread-block cluster's barrier and the
 * first shared-memory loads after it cost, the steps of decode v8's merge. One launch of `clusters` clusters of `size`
 * blocks (2-16; 256 threads, every thread in every barrier); in each of `rounds` rounds thread 0 of every block reads
 * its SM's clock (clock64) around, in order: 0 a cluster.sync (arrive with release, wait with acquire); 1 the first
 * load of its own shared memory after it; 2 the first load of the next rank's shared memory after another
 * cluster.sync; 3 barrier.cluster.arrive.relaxed and the wait; 4 the first own load after that; 5 an own load after a
 * __syncthreads alone; 6 a remote load with no barrier just before it; 7 fence.acq_rel.cluster, then a relaxed arrival
 * and the wait (a release as a fence: the PTX model's release pattern); 8 the first remote load after that (each
 * load's value stored before the clock is read, so that the reading waits for it); 9 v8's gather's loads (every
 * thread a 16-byte and an 8-byte load from each rank, all issued before any is used, every rank at once) and a
 * block barrier; 10 the same loads from the block's own memory. cycles (ORTHROS_CLUSTER_PROBE_WORDS words, zeroed by
 * the caller): cycles[k] gains segment k's cycles summed over the blocks and the rounds after the first,
 * cycles[ORTHROS_CLUSTER_PROBE_SEGMENTS + k] its cycles in the first round summed over the blocks (the segment's code
 * then runs for the first time in the launch: its fetch into the SM's instruction caches is in it). CPU reference:
 * every block writes rank + 1 into its word and its partial's floats before the rounds, so each load must read the
 * rank's own + 1 or the next rank's + 1, and the gather's sums 2 (1 + ... + n) (remote) or 2 n (rank + 1) (own):
 * *errors (zeroed by the caller) counts thread 0's loads and sums that do not. ORTHROS_EUNSUPPORTED below sm_90. */
#define ORTHROS_CLUSTER_PROBE_SEGMENTS 11
#define ORTHROS_CLUSTER_PROBE_WORDS (2 * ORTHROS_CLUSTER_PROBE_SEGMENTS)
int orthros_probe_cluster(unsigned long long *cycles, unsigned *errors, int clusters, int size, int rounds,
                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
