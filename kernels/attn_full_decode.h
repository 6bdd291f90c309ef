/* Split-K softmax attention for a few query rows against a long KV cache (decode, and any chunk with at most
 * 16 (query, head) rows per kv head).
 *   CPU reference: cpu_attn_full in engine/backend_cpu.c (the same function serves prefill).
 *   Test: kernels/tests/test_cuda_ops.c, full_suite() (decode cases of every head geometry, v3-v5) and
 *         decode_v6() (v6 and v7, sections decode6 and decode7, forced split counts); v8 with O and with q/k/v
 *         ahead: test_attn_o() and test_qkv_attn() (sections attno and qkvattn) against the cpu's ops.
 *   Bench: bench/kernels/bench_kernels.c op "attn_full_decode" (each version by name; batch 1, 8, 16 at
 *         32K..128K, against the anchors' flash and cuDNN and the read ceiling), op "attn_full_decode_splits".
 *   Kernels: attn_full_decode.cu; its versions: docs/kernels.md. */
#ifndef ORTHROS_KERNEL_ATTN_FULL_DECODE_H
#define ORTHROS_KERNEL_ATTN_FULL_DECODE_H

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
    int num_sms;            /* multiprocessors of the device (the split plan fills them) */
    float *work;            /* fp32 scratch for the split-K partial results, work_bytes long */
    size_t work_bytes;
    const void *l2_next;    /* NULL, or the weights of a later kernel of the step, asked into L2 (l2_next_bytes of
                             * them, evict_last where l2_policy is 1) as the blocks start: gemv.h's fields */
    size_t l2_next_bytes;
    int l2_policy;
    int l2_late;            /* v8: 1 asks the block's share of l2_next once its last stage is asked (beside the
                             * attention's last reads, not its first: ORTHROS_DECODE_O_PDL=3), 0 as it starts */
    /* The O projection fused into v8 (orthros_attn_full_decode_o_bf16 alone; NULL / 0 elsewhere): o_resid [B][o_M]
     * bf16 += the product out[b] . o_w^T rounded to bf16 (gemv.h's ORTHROS_GEMV_ADD), o_w [o_M][Hq d] bf16;
     * o_scratch orthros_attn_full_decode_o_scratch_bytes() long, zeroed once before the first call (every call
     * leaves its counters at 0). */
    int pdl;                /* v8: launched as a programmatic dependent of the stream's previous kernel (which may
                             * write q and the newest key and value: read after griddepcontrol.wait) */
    int early_rows;         /* v8 with pdl: 1 asks the rows below pos0 of the tile that holds it before the wait too
                             * (0: that tile wholly after it; ORTHROS_DECODE_ATTN_EARLY) */
    const void *o_w;
    void *o_resid;
    int o_M;
    void *o_scratch;
    size_t o_scratch_bytes;
    /* The q/k/v projection fused ahead of v8 (orthros_attn_full_decode_qkv_bf16 alone; NULL / 0 elsewhere): each
     * cluster first forms its kv head's rows of qkv[b] = rmsnorm(qkv_x[b]) * qkv_norm_w . qkv_w^T (its g query heads,
     * its key and value), with RoPE at pos0 and the cache write, as gemv.h's ROPE epilogue does (norm_qkv_rope: q
     * rotated in qkv, k unrotated in qkv and rotated in the cache, v in both), writing them to qkv (so qkv is written
     * here, not only read), then attends. qkv_x [B][qkv_K] bf16, qkv_w [(Hq + 2 Hkv) d][qkv_K] bf16, qkv_inv_freq
     * RoPE's d / 2 inverse frequencies. */
    const void *qkv_w, *qkv_x, *qkv_norm_w;
    int qkv_K;
    float qkv_eps;
    float qkv_inv_freq[64];
    unsigned long long *stamps; /* gemv.h's fields: a stamped build's clock readings (v8's clusters alone) */
    int stamp_slot;
    int merge_push;             /* set by v8's launcher alone (callers leave it 0): 1 where the call's blocks push
                                 * their partials to the cluster's rank 0 (orthros_attn_full_decode_set_push) */
    int end_relaxed;            /* set by v8's launcher alone (callers leave it 0): 1 where the cluster barriers that
                                 * only keep shared memory alive arrive relaxed (orthros_attn_full_decode_set_relaxed) */
} orthros_attn_full_decode_params;

/* 1 when the split-K kernel takes this shape: head_dim 64 or 128 and n * Hq / Hkv <= 16 rows per kv head. */
int orthros_attn_full_decode_supported(const orthros_attn_full_decode_params *p);
/* Scratch the split-K kernel needs in p->work for this shape (p->max_keys and p->num_sms set); 0 on error. */
size_t orthros_attn_full_decode_work_bytes(const orthros_attn_full_decode_params *p);
/* Kernel versions (3 .. ORTHROS_ATTN_DECODE_LATEST; 1 and 2 are in the .cu history only), process-wide, for
 * benchmarks that compare versions:
 *   3  split kernel + combine kernel (mma.sync, cp.async);
 *   4  3 with an L2::256B prefetch hint on the K/V loads (the default where 6 cannot run);
 *   5  4 with the combine fused into the split kernel (last block of each head merges); passes the GPU tests,
 *      timed on the H200: no faster than 4;
 *   6  a block per (sequence, group of kv heads, split) fed by TMA through an mbarrier ring, so each stage
 *      streams whole Hkv * d rows of the cache (sm_90 devices; other shapes and devices go to 4). Measured on
 *      the H200: 128K, 0.079 / 1.035 ms at d 64 B1 / B16, v4 0.085 / 1.178;
 *   7  6 with the ring filled by cp.async from the consumer warps instead of TMA (sm_90 devices,
 *      same shapes). H200, 128K: d 128 B16 1.906 ms (4.51 TB/s; v6 2.085), d 64 B16 0.969 (v6 1.038), d 128 B1
 *      0.139 (v6 0.147). Since commit 7bc873b v6 and v7 plan fewer, longer splits at batch 8-16 (one wave of
 *      128 blocks where four full waves were planned): d 128 B16 64K / 128K 0.942 / 1.862 ms, 1.01x / 1.00x
 *      cuDNN of the same job, every batch 8-16 cell >= 1.00x the faster of flash and cuDNN
 *      (data/results/h200-2026-12-01-v7-defaults/splits).
 *   8  (the default) 7's kernel with a block per kv head and a thread-block cluster per (sequence, kv head)
 *      holding all its splits (16 at most), merged through distributed shared memory: no scratch and no combine
 *      kernel. Takes the calls where the clusters of every head fit one wave and fill a quarter of the SMs;
 *      others run 7. H200, batch 1 4K: d 64 11 us, d 128 15 us a call (v7 13 / 18, timed before); the step 0.985 ms at
 *      1B (v7 1.004), batch 16 1.729 (1.813) (data/results/h200-2026-12-02-decode-cluster). Triggers the stream's next kernel at its start
 *      (a programmatic dependent launch may then fill the SMs its clusters leave idle).
 * ORTHROS_ATTN_DECODE_VERSION selects one for a process. */
#define ORTHROS_ATTN_DECODE_LATEST 8
#define ORTHROS_ATTN_DECODE_DEFAULT 8
/* 0 selects the default; 6, 7 or 8 on a device without sm_90 code (compute capability < 9.0) returns
 * ORTHROS_EUNSUPPORTED. */
int orthros_attn_full_decode_set_version(int version);
int orthros_attn_full_decode_version(void);
/* For benchmarks that tune the split plan: v6 and v7 split every sequence into `nsplit` parts (clamped to one tile
 * each at least and to what the combine kernel merges; v8 to 16 and to a cluster the device holds) instead of the
 * planned count; 0 restores the plan.
 * Process-wide; a negative count returns ORTHROS_EINVAL. Versions 3 to 5 ignore it. */
int orthros_attn_full_decode_force_splits(int nsplit);
/* v8's kernel held to `regs` registers a thread: 160, or 0 (the default) the kernel as compiled unheld (162 at d 128).
 * Process-wide; anything else returns ORTHROS_EINVAL. The same sums: only the registers' allocation changes. */
int orthros_attn_full_decode_set_regs(int regs);
/* v8's softmax in its lean form (1, ORTHROS_ATTN_DECODE_LEAN_DEFAULT) or as written (0): keys masked only in the
 * tiles that hold one below 0 or past the newest, the scale folded into exp2's argument (one FFMA), exp2 as
 * ex2.approx.ftz. The same maxima and the same merge; each probability rounded once where the form as written rounds
 * twice, so results move in their last bits. The default since it measured 1.1% off the 1B 128K step on an H100 and
 * no change elsewhere (docs/kernels.md, "v8's lean softmax"). Process-wide; anything but 0 or 1 returns
 * ORTHROS_EINVAL. */
#define ORTHROS_ATTN_DECODE_LEAN_DEFAULT 1
int orthros_attn_full_decode_set_lean(int lean);
/* v8's merge of a head's splits: pulled (0, the default) or pushed (1). Pulled: each block merges its warps'
 * partials into its own shared memory, a cluster barrier, each rank reads its share of the cluster's partials
 * from distributed shared memory and writes that share of the head's output, a second barrier (each block's memory
 * stays until the others have read it). Pushed: each block arrives on the cluster's barrier once its ring is free,
 * merges its warps' partials, waits (every ring free), stores its merged partial into a slot of rank 0's shared
 * memory (in rank 0's ring, past the warps' partials: no more shared memory than pulled), arrives with release
 * semantics and exits; rank 0 waits for it and merges the slots from its own memory. No reads across SMs, and the
 * others do not wait for rank 0; the same sums in the same order. Calls whose partials do not fit the slots (n Hq /
 * Hkv rows x (d + 2) floats x nsplit blocks over 16 x 4 x 130 floats) and v8 with O or q/k/v fused pull. Measured
 * no faster than pulled in the step (docs/kernels.md, "v8's merge pushed to rank 0"). Process-wide; anything but 0
 * or 1 returns ORTHROS_EINVAL. */
int orthros_attn_full_decode_set_push(int push);
/* v8's cluster barriers that only keep a block's shared memory alive until the others have read it (the pulled
 * merge's second, unless the O product follows and reads the outputs across the cluster; dec8_o's after its gather)
 * arrive relaxed (1, ORTHROS_ATTN_DECODE_RELAXED_DEFAULT: barrier.cluster.arrive.relaxed, then the wait) or with
 * cluster.sync's release (0), whose SASS is MEMBAR.ALL.GPU and so waits for the thread's stores of the outputs to be
 * visible GPU-wide before the barrier can complete (~450 ns a barrier in a cluster of 9 on an H100: the cluster
 * probe). The same sums, the same bits. The default since it measured 0.65% off the 1B 4K step and 0.42% off the 8B
 * 4K one on an H100 (docs/kernels.md, "v8's end barrier relaxed"). Process-wide; anything but 0 or 1 returns
 * ORTHROS_EINVAL. */
#define ORTHROS_ATTN_DECODE_RELAXED_DEFAULT 1
int orthros_attn_full_decode_set_relaxed(int on);
/* v8's tiles claimed (min_keys > 0: every v8 call whose keys bound, max_keys, is at least min_keys, in v8's lean form,
 * the default, and not with q/k/v fused; with the lean form off no call claims; 0, ORTHROS_ATTN_DECODE_CLAIM_DEFAULT:
 * never): a cluster's blocks take NST tiles each, dealt round, then claim the head's next tile a stage from a counter
 * in rank 0's shared memory, so that the blocks whose streams run faster take more and the cluster's streams end
 * together (evenly split, the stamped 1B 128K step's blocks end 15.5 us apart on an H100, 2.5 on the H200). The same
 * online softmax over another set of keys a block: the bits may differ from one call to the next (within the sums'
 * rounding), where the even split gives the same bits every call. Process-wide; a negative count returns
 * ORTHROS_EINVAL. */
#define ORTHROS_ATTN_DECODE_CLAIM_DEFAULT 0
int orthros_attn_full_decode_set_claim(int min_keys);
/* The kernel version a call with these parameters runs under the process's settings (v8 may run 7, 6-8 may run 4)
 * and its split count (for v8 the cluster size), as orthros_attn_full_decode_bf16 would plan it. */
int orthros_attn_full_decode_plan(const orthros_attn_full_decode_params *p, int *version, int *nsplit);
int orthros_attn_full_decode_bf16(const orthros_attn_full_decode_params *p, cudaStream_t stream);

/* The decode step's attention and O projection in one launch (v8 with the O product after each cluster's merge;
 * docs/kernels.md, "The O projection in the attention's clusters"): out as orthros_attn_full_decode_bf16 writes it,
 * then o_resid += out . o_w^T as gemv.h's ORTHROS_GEMV_ADD (each kv head's cluster sums its share of the columns,
 * the last of the heads to finish a block of rows adds the heads' sums in head order). supported: 1 when the call
 * runs this way (n == 1, v8 in use and its clusters planned for the call, o_w 16-byte aligned), else 0: the caller
 * runs the attention and the product apart. */
int orthros_attn_full_decode_o_supported(const orthros_attn_full_decode_params *p);
size_t orthros_attn_full_decode_o_scratch_bytes(const orthros_attn_full_decode_params *p);
int orthros_attn_full_decode_o_bf16(const orthros_attn_full_decode_params *p, cudaStream_t stream);
/* v8 with the q/k/v projection ahead of it (qkv_w and the fields after it given, o_w NULL): 1 where a call runs
 * that way (one query row a sequence, v8's clusters, qkv_K a multiple of 1024 whose staging fits beside the ring,
 * d at most 128, 16-byte aligned rows), else 0; orthros_attn_full_decode_qkv_bf16 runs it (ORTHROS_EUNSUPPORTED
 * where it does not). */
int orthros_attn_full_decode_qkv_supported(const orthros_attn_full_decode_params *p);
int orthros_attn_full_decode_qkv_bf16(const orthros_attn_full_decode_params *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
