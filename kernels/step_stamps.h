/* The decode step's timeline (a diagnostic build: cmake -DORTHROS_STAMPS=ON; docs/kernels.md, "The step's
 * timeline"). Nsight Compute times each kernel alone, serialised, so it cannot show how the captured step's kernels
 * overlap through their programmatic dependent launches. In a stamped build the v3 GEMV kernel (gemv2_kernel) and the
 * decode attention's clusters (v8) store the GPU's global clock (%globaltimer, ns; never 0) into a slot of a device
 * array, one slot a launch, one row a block (the first ORTHROS_STAMP_BLOCKS blocks, in blockIdx order x, y, z):
 *   row[0] the block's start    row[1] past its dependency wait (a plain launch passes it at once)
 *   row[2 + w] the end of warp w (the first ORTHROS_STAMP_WARPS warps)
 *   row[2 + ORTHROS_STAMP_WARPS + k] phase k of the block's work, where its kernel marks phases (v8: 0 its first
 *   stage of keys and values landed, 1 its last stage landed, 2 its sums done, the cluster's merge next; in the
 *   merge, as thread 0 sees it, 3 the block's warps' partials merged, 4 past the cluster's first barrier, 5 its share
 *   of the head merged and stored, the second barrier next)
 * Plain stores, no atomics: the array is zeroed before the replay that is read, and a 0 is a block or warp that did
 * not record. Without the build option the kernels compile as before and the fields that carry the array are not
 * read. The engine's use: engine/backend_cuda.cu, ORTHROS_STEP_STAMPS. */
#ifndef ORTHROS_KERNEL_STEP_STAMPS_H
#define ORTHROS_KERNEL_STEP_STAMPS_H

#define ORTHROS_STAMP_SLOTS 1024 /* launches a process stamps at most (the 8B step is 161) */
#define ORTHROS_STAMP_BLOCKS 512 /* blocks a launch records (the step's launches have at most 264) */
#define ORTHROS_STAMP_WARPS 16
#define ORTHROS_STAMP_PHASES 6
#define ORTHROS_STAMP_FIELDS (2 + ORTHROS_STAMP_WARPS + ORTHROS_STAMP_PHASES)
#define ORTHROS_STAMP_SLOT_WORDS ((size_t)ORTHROS_STAMP_BLOCKS * ORTHROS_STAMP_FIELDS)
#define ORTHROS_STAMP_WORDS ((size_t)ORTHROS_STAMP_SLOTS * ORTHROS_STAMP_SLOT_WORDS)

#endif
