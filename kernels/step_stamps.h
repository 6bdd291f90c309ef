/* The decode step's timeline (a diagnostic build: cmake -DORTHROS_STAMPS=ON; docs/kernels.md, "The step's
 * timeline"). Nsight Compute times each kernel alone, serialised, so it cannot show how the captured step's kernels
 * overlap through their programmatic dependent launches. In a stamped build the v3 GEMV kernel (gemv2_kernel) and the
 * decode attention's clusters (v8) read the GPU's global clock (%globaltimer, ns) at points of every block and fold
 * them into a slot of a device array, one slot a launch:
 *   mins[slot][0] the first block's start        mins[slot][1] the first block past its dependency wait
 *   maxs[slot][0] the last block's start         maxs[slot][1] the last block past its wait
 *   maxs[slot][2] the last warp's end
 * (mins initialised to all ones, maxs to zero, before the replay that is read.) A kernel launched plainly passes its
 * wait at once. Without the build option the kernels compile as before and the fields below are not read.
 * The engine's use: engine/backend_cuda.cu, ORTHROS_STEP_STAMPS. */
#ifndef ORTHROS_KERNEL_STEP_STAMPS_H
#define ORTHROS_KERNEL_STEP_STAMPS_H

#define ORTHROS_STAMP_SLOTS 4096 /* launches a process stamps at most (the 8B step is 162) */
#define ORTHROS_STAMP_MINS 2
#define ORTHROS_STAMP_MAXS 3
/* the array: [ORTHROS_STAMP_SLOTS][ORTHROS_STAMP_MINS] then [ORTHROS_STAMP_SLOTS][ORTHROS_STAMP_MAXS] u64 */
#define ORTHROS_STAMP_WORDS (ORTHROS_STAMP_SLOTS * (ORTHROS_STAMP_MINS + ORTHROS_STAMP_MAXS))

#endif
