/* Matrix-vector products at batch 1-16 (the decode step's projections): out[n][M] = x[n][K] . W[M][K]^T, bf16
 * weights and inputs, fp32 accumulation (on tensor cores in v1, on CUDA cores in v2 at batch 1-4), and the epilogues
 * of the fused decode ops (backend.h).
 *   CPU reference: cpu_gemm, cpu_logits and the fused ops cpu_norm_gemm, cpu_gemm_add, cpu_norm_gemm_swiglu,
 *   cpu_norm_qkv_rope, cpu_norm_logits_argmax in engine/backend_cpu.c (each the composition of the plain ops).
 *   Test: kernels/tests/test_cuda_ops.c, section gemv (every epilogue, n 1 to 16, awkward M and K, split K).
 *   Bench: bench/kernels/bench_kernels.c op "gemv" (the 1B and 8B decode shapes at batch 1, 4, 8, 16, beside cuBLAS
 *   and the read floor). Kernel: gemv.cu; docs/kernels.md, "Whole-model decode". */
#ifndef ORTHROS_KERNEL_GEMV_H
#define ORTHROS_KERNEL_GEMV_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ORTHROS_GEMV_STORE = 0,     /* out [n][M] bf16 = the product */
    ORTHROS_GEMV_STORE_F32 = 1, /* out [n][M] fp32 = the product (logits) */
    ORTHROS_GEMV_ADD = 2,       /* out [n][M] bf16 += the product rounded to bf16 (the residual add) */
    ORTHROS_GEMV_SWIGLU = 3,    /* W [M = 2F][K] gate rows then up rows; out [n][F] bf16 = silu(g) u of the products
                                 * rounded to bf16 */
    ORTHROS_GEMV_ROPE = 4,      /* W the fused q, k, v rows [M = (Hq + 2 Hkv) d][K]; out qkv [n][M] bf16 with q rotated
                                 * by position pos[j], k as projected; k rotated and v written to the caches at slot
                                 * pos[j] % cap (rope_cache_write of a decode step) */
    ORTHROS_GEMV_ARGMAX = 5,    /* out [n][M] fp32 logits (or NULL) and ids[j] = argmax over m (the lowest index on
                                 * ties, NaN loses to everything: cpu_argmax's order) */
    ORTHROS_GEMV_MLP = 6,       /* the MLP of a decode step in one launch: W [M = 2F][K] gate rows then up rows as SWIGLU,
                                 * W_down [K][F]; out [n][K] bf16 (the residual, also x) += down(swiglu(...)), the down
                                 * product rounded to bf16 first: SWIGLU into [n][F], then ADD of it through W_down.
                                 * The down product's sums are split over slices of F, each block's added in 64-bit
                                 * fixed point (2^-28; the same bits whichever block adds first); a block's sum past
                                 * 2^25 in magnitude, or NaN, makes that output NaN or +-inf. Batch 1-4, F a multiple
                                 * of 32 (orthros_gemv_supported). Slower than SWIGLU then ADD on the H200 (3-11% of
                                 * the step: docs/kernels.md, "The MLP in one launch") */
} orthros_gemv_epilogue;

#define ORTHROS_GEMV_MAX_ROWS 16
#define ORTHROS_GEMV_MAX_HALF 64 /* ROPE: head_dim / 2 at most */

typedef struct {
    void *out;
    const void *x;        /* [n][K] bf16 */
    const void *norm_w;   /* NULL, or [K] bf16: the product's input is rmsnorm(x) * norm_w rounded to bf16, the
                           * values rmsnorm's out would hold (statistics in fp32) */
    float eps;
    const void *W;        /* [M][K] bf16 */
    const void *W_down;   /* MLP: [K][M / 2] bf16 */
    int mlp_ring;         /* MLP: 1 the kernel that streams the weights through a shared-memory ring where it takes the
                           * call (batch 1, K 2048 or 4096; sm_90 builds only: the caller checks the device; far
                           * slower on the H200) */
    int n, M, K;          /* n 1 .. 16, K a multiple of 8, x and W 16-byte aligned */
    int epilogue;         /* orthros_gemv_epilogue */
    /* ROPE: */
    void *k_cache, *v_cache; /* [n][cap][Hkv][d] bf16 */
    const int *pos;       /* device [n] */
    int Hq, Hkv, d, cap;  /* d a multiple of 16, at most 128 */
    float inv_freq[ORTHROS_GEMV_MAX_HALF];
    /* ARGMAX: */
    int32_t *ids;         /* device [n] */
    /* orthros_gemv_scratch_bytes() of device memory, zeroed once before the first call; every call leaves it as it
     * found it (the split-K tickets and the argmax keys), so calls on one stream share it. */
    void *scratch;
    int num_sms;          /* multiprocessors (the split-K plan fills them) */
    int pdl;              /* 1: launched as a programmatic dependent of the stream's previous kernel (sm_90; gemv.cu:
                           * the weights are asked into L2 before the wait for it); 2: the same, each block asking
                           * all of its groups' weights (v2 / v3), for a kernel after one that leaves SMs idle; 3:
                           * a dependent launch that asks nothing into L2 before the wait (ORTHROS_DECODE_PDL_LATE) */
    int pdl_late;         /* 1 (v2 / v3): this kernel lets its dependents launch when each block reaches its last
                           * group, not as it starts: their launch and dispatch overlap its last round, not its whole
                           * run (ORTHROS_DECODE_PDL_LATE); L > 1: L - 1 block rounds before its last group
                           * (ORTHROS_DECODE_PDL_LEAD) */
    const void *l2_next;  /* NULL, or the weights of a later kernel: the blocks ask l2_next_bytes of them into L2 as
                           * they start (sm_90; a hint: no result changes), evict_last where l2_policy is 1 */
    size_t l2_next_bytes;
    int l2_policy;
    unsigned long long *stamps; /* a stamped build (step_stamps.h): NULL, or the array whose slot stamp_slot this
                                 * launch's blocks store their clock readings in (v3's kernel; others ignore it) */
    int stamp_slot;
    const void *l2_kv[2]; /* NULL, or the K and V caches the decode attention after this product reads (the q/k/v
                           * projection at batch 1, ORTHROS_DECODE_KVPF_MB): v2 / v3's blocks at batch 1 with a normed
                           * input ask the first l2_kv_bytes of each into L2 as they start, a share a block (sm_90; a
                           * hint: no result changes) */
    size_t l2_kv_bytes;
} orthros_gemv_params;

size_t orthros_gemv_scratch_bytes(void);
/* 1 when the kernel takes this call (shape, alignment, epilogue arguments; the scratch is not looked at), else 0. */
int orthros_gemv_supported(const orthros_gemv_params *p);
int orthros_gemv_bf16(const orthros_gemv_params *p, cudaStream_t stream);
/* The launch plan the call would get with the version in use, as one line of text into buf (host only, no GPU
 * needed): 0, or ORTHROS_EUNSUPPORTED (buf empty) when the kernel does not take the call. */
int orthros_gemv_describe(const orthros_gemv_params *p, char *buf, size_t cap);
/* The kernel version (process-wide, as the attention kernels' set_version): 0 the default (3), 1 v1 alone (the
 * tensor-core kernel at every batch), 2 v2 at batch 1-4 (CUDA cores, two rows a warp over all of K) and v1 above,
 * 3 v2's kernel at batch 1-8 with smaller rounds and a wave-balanced K split, v1 above (gemv.cu; on the H200 the
 * decode step 3-5% faster than with 2: data/results/h200-2026-12-02-decode-v3), 4 v3's groups with a round always
 * in flight at batch 1-4, v3 above (slower on the H200: data/results/h200-2026-12-02-decode-profile), 5 v3 at
 * batch 1-8 and above it v1's tensor-core tiles fed through a ring of cp.async slots a warp in shared memory (the
 * input always staged, one block an SM), v1 where that plan does not fit, 6 as 5 with the weights asked by the TMA
 * into a ring of the block's stages and read with ldmatrix (sm_90; v1 where there is a device and it is not). */
int orthros_gemv_set_version(int v);
int orthros_gemv_version(void);
/* The variables that versions 5 and 6 read as each call plans: ORTHROS_GEMV5_STAGES (4, 6 or 8: v5's ring slots a
 * warp), ORTHROS_GEMV6_ROWS (32, 64 or 128: v6's rows a tile), ORTHROS_GEMV6_STAGE_KB (4, 8, 16, 32 or 64: v6's bytes
 * a stage; unset 32), ORTHROS_GEMV6_WGMMA and ORTHROS_GEMV6_BULK (0 or 1: v6's form); unset or empty, the plan's
 * choice. ORTHROS_EINVAL naming the variable where one holds another value (the backend checks them as it is made;
 * the plans would pass such a value over). */
int orthros_gemv_check_env(void);
/* v3's epilogue operands loaded early and its first round's L2 hint left out, at batch 1 (process-wide; the same bits
 * either way but for 32), a mask: 1 ADD's residual read as each group starts (not after its sums); 2 ROPE's position read once
 * and each pair's cosine and sine formed while the group's first round is in flight; 8 without a dependent launch the
 * first round not asked into L2 before the same loads ask for it; 16 the same where a warp has at most 8 rounds of
 * the product; 32 a norm's input staged in one trip to L2 (K at most 8192; the block's sum of squares in another
 * order: not the same bits as without it, within bf16's rounding; the chain stages the same way). 0 to 63 without 4
 * (the first round loaded into registers before a norm's staging: measured slower on the H200 and removed), else
 * ORTHROS_EINVAL. */
#define ORTHROS_GEMV_EARLY_DEFAULT 43 /* 1 | 2 | 8 | 32: the fastest step measured on the H200 (4eb7c85) */
int orthros_gemv_set_early(int mask);
int orthros_gemv_early(void);
/* v3's slices a group (KW) forced, process-wide: 1, 2 or 4 (where K is too short for it, 32 KW chunks at most K / 8,
 * the largest that fits); 0 the plan's choice (the fill of the block slots). ORTHROS_EINVAL otherwise. Changes the
 * order of the sums (the slices are added in slice order), not the tolerance. */
int orthros_gemv_set_kw(int kw);
int orthros_gemv_kw(void);
/* How v3's plan chooses KW, process-wide: 1 the fill of the machine's block slots, two blocks an SM (the rule
 * measured first); 2 the same, and a product whose block rounds number at most the SMs counted against one block an
 * SM (its one wave), so that KW 1 ties there and wins (the 1B O and down: measured slower); 3 rule 1, and a q/k/v
 * product (ROPE) whose block rounds at KW 1 fit one wave of the slots takes KW 1 (the 1B q/k/v), so that each block
 * starts at its last group and the attention after it, a dependent launch, launches at once. ORTHROS_EINVAL
 * otherwise. */
#define ORTHROS_GEMV_FILL_DEFAULT 3 /* the fastest step measured on the H200 (1B 4K 0.861 ms against rule 1's 0.898) */
int orthros_gemv_set_fill(int rule);
/* An experiment on the q/k/v product's grid, process-wide: 0 (the default) the plan's blocks; N in 1-4096: a q/k/v
 * product (ROPE) of v3 launched with at most N blocks (more block rounds a block), letting its dependent launch as it
 * starts, so that the decode attention after it (a dependent launch) finds SMs with a free slot and asks its keys
 * while q/k/v runs, as the 1B q/k/v's 192 blocks at KW 1 let it. ORTHROS_EINVAL otherwise. */
int orthros_gemv_set_qkv_blocks(int n);
/* v2-v4's grid where a product has more block rounds than the machine has block slots (two blocks an SM), process-
 * wide: 0 a block a slot, the rounds dealt out in turn (the 8B gate/up's 1792 rounds: 208 blocks with 7, 56 with 6,
 * so that a fifth of the blocks end a round early); 1 the fewest blocks that keep the same number of waves, so that
 * every block has the same number of rounds or one fewer (1792 rounds: 256 blocks of 7). The same sums, the same
 * bits. ORTHROS_EINVAL otherwise. */
#define ORTHROS_GEMV_BALANCE_DEFAULT 0
int orthros_gemv_set_balance(int on);
/* The preferred shared-memory carveout of every launch of orthros_gemv_bf16 and the fused products, process-wide:
 * -1 (the default) none asked, the driver's choice; 0-100 the percent of the device's largest shared memory asked
 * (228 KB on sm_90; rounded up to a split the SM has, and more where a block needs it; a launch attribute, kept by
 * graph capture). 0 asks the largest L1, 85 the decode attention's 196 KB split. Measured: 0 is 3.5-4.9% slower
 * (docs/kernels.md, "The products' carveout"). The same sums. ORTHROS_EINVAL otherwise. */
int orthros_gemv_set_carveout(int percent);
/* v5's ring slots a warp: 4, 6 or 8 (0: ORTHROS_GEMV5_STAGES if set, else the most that fit beside the staged input,
 * chosen per call); process-wide. ORTHROS_EINVAL otherwise. */
int orthros_gemv_set_ring_slots(int s);

/* The chain (docs/kernels.md, "Where the step goes"; the decode step's ORTHROS_DECODE_CHAIN): n products, each as
 * orthros_gemv_bf16 with version 3 would compute it (the same bits), in one cooperative launch, a grid barrier
 * between them, so that a product may read what an earlier one wrote. Batch 1, no ARGMAX, K at most 32768; every
 * product with the same scratch (its barrier lives there). */
#define ORTHROS_GEMV_CHAIN_MAX 4
int orthros_gemv_chain_supported(const orthros_gemv_params *p);
int orthros_gemv_chain_bf16(const orthros_gemv_params *ops, int n, cudaStream_t stream);
/* The ring chain (docs/kernels.md, "The ring chain"; ORTHROS_DECODE_CHAIN_RING): the chain's products in one
 * cooperative launch of one block an SM, each block's rows of every product streamed through a shared-memory ring by
 * a producer warp, a grid barrier between products among the consumers. The chain's outputs up to the order of the
 * sums (not its bits). Batch 1, M even (RoPE: a multiple of d), K a multiple of 256 up to 14336, sm_90; every product
 * with the same scratch. */
int orthros_gemv_ring_chain_supported(const orthros_gemv_params *p);
int orthros_gemv_ring_chain_bf16(const orthros_gemv_params *ops, int n, cudaStream_t stream);
/* The same with each block's clock (%globaltimer, ns) written to stamps (device memory, NULL for none; bench_kernels'
 * ring_chain op): [n][4][blocks] (a product's input staged, its rows summed, its epilogue done, the barrier after it
 * passed) then [blocks] (the block's start); blocks is the SM count. */
int orthros_gemv_ring_chain_stamped(const orthros_gemv_params *ops, int n, unsigned long long *stamps,
                                    cudaStream_t stream);
/* The ring chain's form (process-wide): 1 the default (the input staged in one trip to L2 while the other consumers
 * load the epilogue's operands), 0 the first (stage_input's two trips with a norm, the operands loaded in the
 * epilogue). */
int orthros_gemv_ring_chain_set_form(int form);
/* The ring chain's producer lead (process-wide): into every product after the first, at most `stages` stages copied
 * before the consumers have staged its input (0 to 6), or -1 (the default) no bound: the copies in flight across a
 * grid step keep the memory busy but delay the step's own loads behind them. */
int orthros_gemv_ring_chain_set_ahead(int stages);

#ifdef __cplusplus
}
#endif
#endif
