/* The backend interface: every operation the forward schedule (engine/model.c) needs, as a struct of
 * function pointers. The schedule is written once against it; `cpu` (plain C11 + OpenMP, fp32, the
 * reference) and `cuda` (kernels + cuBLAS, bf16 activations and weights, fp32 accumulation) implement it.
 *
 * Tensors are opaque device pointers. Two element types exist per backend:
 *   - "act": activations, weights and the KV cache (fp32 on cpu, bf16 on cuda), `act_size` bytes each;
 *   - fp32: linear-attention state (S, z), logits.
 * Shapes are written as comments, row-major. Every op returns 0 or a negative ORTHROS_E* code.
 *
 * The fused QKV layout: one projection writes rows of width (Hq + 2 Hkv) d laid out as
 * [q: Hq x d | k: Hkv x d | v: Hkv x d], with q, k, v before RoPE. */
#ifndef ORTHROS_BACKEND_H
#define ORTHROS_BACKEND_H

#include "orthros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ranks of a tensor-parallel model and how they meet (engine/tp.h). */
typedef struct orthros_comm orthros_comm;

typedef enum { ORTHROS_DTYPE_F32 = 0, ORTHROS_DTYPE_BF16 = 1, ORTHROS_DTYPE_F16 = 2 } orthros_dtype;

/* RoPE tables and attention geometry, filled once per model. */
typedef struct {
    int n_heads, n_kv_heads, head_dim;
    float *inv_freq;     /* host [head_dim / 2], llama3 scaling applied */
} orthros_rope;

/* What an attention op needs to know about its layer. */
typedef struct {
    int n_heads, n_kv_heads, head_dim;
    /* full / swa: the KV cache of one layer, [B][cap][Hkv][d] act; position p lives at slot p % cap. */
    void *k_cache, *v_cache;
    int cap;
    int window;          /* 0: attend to every cached position <= t; else to (t - window, t] */
    /* linear: state of one layer, S [B][Hkv][F][d] fp32, z [B][Hkv][F] fp32. */
    float *S, *z;
    orthros_fmap fmap;
    int feature_dim;     /* F (= 2 * hedgehog columns, or head_dim) */
    const void *fmap_q;  /* hedgehog: [Hq][d][F/2] act */
    const void *fmap_k;  /* hedgehog: [Hkv][d][F/2] act */
    float eps;
    /* The linear formula of a converted model (docs/converted-models.md; 0 / NULL: DESIGN section 2's): */
    int fmap_after;      /* phi acts on q~, k~: rope_cache_write rotates q and k in place, the linear op reads them */
    int local_window;    /* W >= 1: the linear term covers s <= t - W and exact softmax (full's scores) the last W
                          * positions, their k~ and v read from the cache (a ring of cap >= W + n for linear layers) */
    const void *window_gate; /* [Hq] act: gamma_h of the window term; NULL: 1 for every head */
    void *kraw_cache;    /* before with a window: [B][kraw_cap][Hkv][d] act, un-rotated k of position p at slot
                          * p % kraw_cap (kraw_cap >= W + n), written by rope_cache_write: the keys phi reads once
                          * they leave the window (after: phi reads k~ from k_cache) */
    int kraw_cap;
    void *q_rot;         /* before with a window: [B][n][Hq][d] act, rope_cache_write writes every row's q~ here
                          * (q in qkv stays un-rotated for phi) */
    /* A decode step whose positions live in backend memory (the step captured once and replayed, docs/kernels.md
     * "Whole-model decode"): device [B] positions of the call's sequences, which the ops read instead of pos0; pos0
     * (host) then only bounds them (pos0[b] >= the position held, for planning the work: split counts, scratch).
     * NULL: pos0 holds the positions. */
    const int *pos_dev;
} orthros_attn_layer;

struct orthros_backend {
    const char *name;
    orthros_device_info info;
    unsigned caps;                   /* ORTHROS_CAP_* */
    int default_chunk;               /* the prefill chunk when none is asked for (orthros_backend_default_chunk) */
    unsigned decode_modes;           /* ORTHROS_DECODE_* a new session takes (orthros_decode_env) */
    size_t act_size;                 /* bytes of one activation / weight / cache element */
    void *impl;

    void (*destroy)(orthros_backend *be);

    /* Memory. alloc returns NULL when out of memory. */
    void *(*alloc)(orthros_backend *be, size_t bytes);
    void (*free)(orthros_backend *be, void *p);
    int (*zero)(orthros_backend *be, void *p, size_t bytes);
    int (*mem_info)(orthros_backend *be, size_t *free_bytes, size_t *total_bytes);
    int (*sync)(orthros_backend *be);
    /* dst[dst_off + i] = convert(src[i]) for i < n, src in `dtype` on the host, dst an act tensor. */
    int (*upload)(orthros_backend *be, void *dst, size_t dst_off, const void *src, orthros_dtype dtype, size_t n);
    /* dst[i] = (2 u(seed, i) - 1) * scale, u the counter-based uniform of orthros_uniform(); same on every
     * backend up to the act dtype's rounding. */
    int (*fill_random)(orthros_backend *be, void *dst, size_t n, uint64_t seed, float scale);
    /* dst[i] = value (act). */
    int (*fill)(orthros_backend *be, void *dst, size_t n, float value);
    /* dst[0..bytes) = src[0..bytes), both on the backend (the bench's copy-bandwidth ceiling). */
    int (*copy)(orthros_backend *be, void *dst, const void *src, size_t bytes);
    /* Reads src[0..bytes) and nothing else of note (the read-bandwidth ceiling); NULL where not implemented. */
    int (*read)(orthros_backend *be, const void *src, size_t bytes);
    /* host[i] = fp32 src[i]. */
    int (*download_f32)(orthros_backend *be, float *host, const float *src, size_t n);

    /* Timing: timer_mark records the point the backend's queued work has reached in slot (0 to
     * ORTHROS_TIMER_SLOTS - 1); timer_seconds waits for mark b and gives the seconds from mark a to mark b
     * (CUDA events on cuda; a monotonic clock read when the work is done, on cpu). */
    int (*timer_mark)(orthros_backend *be, int slot);
    int (*timer_seconds)(orthros_backend *be, int a, int b, double *seconds);

    /* Profiling ranges (NVTX on cuda; no-ops on cpu). */
    void (*range_push)(orthros_backend *be, const char *name);
    void (*range_pop)(orthros_backend *be);

    /* x[n][D] = table[tokens[i]] (tokens on the host, already range-checked). */
    int (*embed)(orthros_backend *be, void *x, const int32_t *tokens, const void *table, int n, int D);
    /* out[n][D] = rmsnorm(x) * w. */
    int (*rmsnorm)(orthros_backend *be, void *out, const void *x, const void *w, int n, int D, float eps);
    /* resid[n][D] += delta; out = rmsnorm(resid) * w. */
    int (*add_rmsnorm)(orthros_backend *be, void *out, void *resid, const void *delta, const void *w, int n, int D,
                       float eps);
    /* out[n][M] = x[n][K] . W[M][K]^T. */
    int (*gemm)(orthros_backend *be, void *out, const void *x, const void *W, int n, int M, int K);
    /* out[n][F] = silu(gu[:, :F]) * gu[:, F:], gu [n][2F]. */
    int (*swiglu)(orthros_backend *be, void *out, const void *gu, int n, int F);
    /* out[n][V] fp32 = x[n][D] . W[V][D]^T. */
    int (*logits)(orthros_backend *be, float *out, const void *x, const void *W, int n, int V, int D);
    /* ids[i] = argmax_j logits[i][j] (lowest index on ties), ids on the host. */
    int (*argmax)(orthros_backend *be, int32_t *ids, const float *logits, int n, int V);

    /* For B sequences of n tokens each: rotate k of qkv [B][n][W] by position pos0[b] + i and write it with v
     * into the layer's cache (when cap > 0); rotate q in place for rows i >= rotate_q_from (the rows that run full
     * attention). For the linear formula of a converted model: the un-rotated k into kraw_cache (when set), every
     * row's q~ into q_rot (when set), and with fmap_after k rotated in place too. pos0 on the host. */
    int (*rope_cache_write)(orthros_backend *be, void *qkv, const orthros_attn_layer *L, const orthros_rope *rope,
                            const int *pos0, int B, int n, int rotate_q_from);
    /* Softmax attention of the rotated q of qkv [B][n][W] at positions pos0[b] + i over cached positions
     * s <= pos0[b] + i (within the window): out [B][n][Hq][d]. prefill: any n; decode: n == 1. */
    int (*attn_full_prefill)(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L,
                             const int *pos0, int B, int n);
    int (*attn_full_decode)(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L,
                            const int *pos0, int B, int n);
    /* Linear attention of the q, k, v of qkv [B][n][W] at positions pos0[b] + i (un-rotated, or rotated in place
     * with fmap_after), updating the layer's (S, z) token by token: out [B][n][Hq][d]. With a local window W the
     * state holds the positions up to t - W, the window's k~, v come from the cache (rope_cache_write has written
     * the call's rows) and its q~ from q_rot or qkv (docs/converted-models.md). prefill: any n; decode: n == 1.
     * pos0 on the host. */
    int (*attn_linear_prefill)(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L,
                               const int *pos0, int B, int n);
    int (*attn_linear_decode)(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L,
                              const int *pos0, int B, int n);

    /* Tensor parallel: x[n][D] = the sum over the ranks of `comm` of their x, in place, the same on every rank
     * (cpu: fp32 in rank order; cuda: bf16 through NCCL, which adds in fp32 and rounds to bf16 per step). */
    int (*allreduce_sum)(orthros_backend *be, orthros_comm *comm, void *x, int n, int D);

    /* ---- the decode step with its inputs in backend memory (docs/kernels.md, "Whole-model decode") ----
     * Every backend has these; model.c uses them when a session's decode mode asks (orthros_session_set_decode). */
    /* dst[0..n) (backend memory) = src[0..n) (host), queued: src may be reused when the call returns. */
    int (*upload_ints)(orthros_backend *be, int32_t *dst, const int32_t *src, int n);
    /* host[0..n) = src[0..n) (backend memory), after the queued work. */
    int (*download_ints)(orthros_backend *be, int32_t *host, const int32_t *src, int n);
    /* embed with the tokens in backend memory (already range-checked). */
    int (*embed_dev)(orthros_backend *be, void *x, const int32_t *tokens, const void *table, int n, int D);
    /* argmax into ids[n] in backend memory (nothing returns to the host). */
    int (*argmax_dev)(orthros_backend *be, int32_t *ids, const float *logits, int n, int V);

    /* ---- fused decode ops: each is exactly the composition of the ops named, with the same roundings to act of
     * every intermediate; the cpu backend computes them that way (the reference), the cuda backend in one GEMV
     * kernel each. Scratch arguments (xn [n][K], tmp, gu) may be written with anything. fused_max_rows: the most
     * rows (sequences) at which a session's decode takes the fused step (cuda: 8; the ops themselves take up to
     * 16, the GEMV's limit, but at 9-16 rows its two n-tiles lose to cuBLAS). ---- */
    int fused_max_rows;
    /* out[n][M] = gemm(rmsnorm(x[n][K]) * norm_w, W[M][K]): rmsnorm then gemm. */
    int (*norm_gemm)(orthros_backend *be, void *out, void *xn, const void *x, const void *norm_w, const void *W, int n,
                     int M, int K, float eps);
    /* resid[n][M] += gemm(x[n][K], W[M][K]), the product rounded to act first: gemm into tmp [n][M], then the
     * residual add of add_rmsnorm. */
    int (*gemm_add)(orthros_backend *be, void *resid, void *tmp, const void *x, const void *W, int n, int M, int K);
    /* out[n][F] = swiglu(gemm(rmsnorm(x[n][K]) * norm_w, W_gu[2F][K])): norm_gemm into gu [n][2F], then swiglu. */
    int (*norm_gemm_swiglu)(orthros_backend *be, void *out, void *xn, void *gu, const void *x, const void *norm_w,
                            const void *W_gu, int n, int F, int K, float eps);
    /* The q, k, v projection of a decode step and its RoPE: qkv[n][W] = norm_gemm(x, norm_w, Wqkv), then
     * rope_cache_write(qkv, L, rope, pos0, B = n, n = 1, rotate_q_from = 0). For layers whose rope writes only the
     * cache (no kraw_cache, no q_rot, no fmap_after; cap > 0). */
    int (*norm_qkv_rope)(orthros_backend *be, void *qkv, void *xn, const void *x, const void *norm_w, const void *Wqkv,
                         const orthros_attn_layer *L, const orthros_rope *rope, const int *pos0, int n, int K, float eps);
    /* The head of a decode step: logits[n][V] fp32 = logits(rmsnorm(x[n][D]) * norm_w, W[V][D]) and ids[n] (backend
     * memory) = argmax_dev of them. */
    int (*norm_logits_argmax)(orthros_backend *be, int32_t *ids, float *logits, void *xn, const void *x,
                              const void *norm_w, const void *W, int n, int V, int D, float eps);
    /* The same head when only the ids are wanted (a greedy step): logits is scratch, its contents after the call
     * unspecified. NULL: model.c calls norm_logits_argmax. cuda: by default (ORTHROS_DECODE_HEAD8=0: off), at batch 1
     * to head_int8_rows the head read through an int8 copy with the exact argmax kept (kernels/head8.h), leaving
     * approximate logits in the scratch; else norm_logits_argmax. */
    int (*norm_argmax)(orthros_backend *be, int32_t *ids, float *logits, void *xn, const void *x, const void *norm_w,
                       const void *W, int n, int V, int D, float eps);
    int head_int8_rows; /* the batches (1 to this) whose norm_argmax reads the head's int8 copy, 0: none (the cost
                         * model's floor of a decode step counts its bytes there: orthros_cost_decode's head_int8) */
    /* The attention and O projection of a decode step, NULL where a backend has no fused form (model.c then runs
     * the two ops): attn_full_decode(attn, qkv, L, pos0, B, n = 1), then gemm_add(resid, tmp, attn, Wo, B, M,
     * Hq d). cuda: one launch where the decode attention's clusters take the call, with ORTHROS_DECODE_ATTN_O=1
     * (else, and with ORTHROS_DECODE_CHAIN=1, NULL). */
    int (*attn_decode_o)(orthros_backend *be, void *resid, void *tmp, void *attn, const void *qkv,
                         const orthros_attn_layer *L, const int *pos0, int B, const void *Wo, int M);
    /* The q/k/v projection and the attention of a decode step, NULL where a backend has no fused form (model.c then
     * runs the two ops): norm_qkv_rope(qkv, xn, x, norm_w, Wqkv, L, rope, pos0, n = B, K, eps), then
     * attn_full_decode(attn, qkv, L, pos0, B, n = 1). cuda: one launch where the decode attention's clusters take
     * the call with the projection (each kv head's cluster forms its own q, key and value), with
     * ORTHROS_DECODE_QKV_ATTN=1 (else, with ORTHROS_DECODE_CHAIN=1 and with ORTHROS_DECODE_ATTN_O=1, NULL). */
    int (*norm_qkv_rope_attn)(orthros_backend *be, void *attn, void *qkv, void *xn, const void *x, const void *norm_w,
                              const void *Wqkv, const orthros_attn_layer *L, const orthros_rope *rope, const int *pos0,
                              int B, int K, float eps);
    /* The MLP of a decode step, NULL where a backend has no fused form (model.c then runs the two ops):
     * norm_gemm_swiglu(act, xn, gu, resid, norm_w, W_gu, n, F, D, eps), then gemm_add(resid, tmp, act, W_down, n, D,
     * F). cuda: one launch (gemv.cu's ORTHROS_GEMV_MLP: the down product's sums split over slices of F and added in
     * fixed point, so not the two ops' bits) with ORTHROS_DECODE_MLP=1 (else, and with ORTHROS_DECODE_CHAIN=1, NULL). */
    int (*norm_mlp_add)(orthros_backend *be, void *resid, void *xn, void *gu, void *act, void *tmp, const void *norm_w,
                        const void *W_gu, const void *W_down, int n, int F, int D, float eps);
    /* A hint, NULL where a backend takes none: the weights W[bytes] of the product after the op queued next, which
     * that op's kernels may ask into the cache ahead of it (cuda: ORTHROS_DECODE_L2PF). In force until the next
     * call; W NULL clears it. It changes no result. */
    void (*l2_next)(orthros_backend *be, const void *W, size_t bytes);
    /* The decode chain, NULL where a backend has none (cuda, with ORTHROS_DECODE_CHAIN=1; a no-op without it): open 1
     * records the products of the fused ops that follow (norm_gemm, gemm_add, norm_gemm_swiglu, norm_qkv_rope) where
     * the backend can run them as one launch, open 0 launches what was recorded. Between the two only those four ops
     * may be queued. It changes no result. */
    int (*decode_chain)(orthros_backend *be, int open);

    /* ---- captured work (CUDA graphs; NULL where a backend has none) ----
     * graph_begin starts capturing what the backend queues, without running it; graph_end stops and gives the
     * instantiated graph in *graph (NULL and an error when the capture failed: work that returns data to the host,
     * stages host data, allocates or waits cannot be captured); graph_launch queues a replay; graph_free frees one.
     * graph_epoch changes whenever the backend replaces memory that captured work may refer to (its scratch): a
     * graph captured at another epoch is stale. */
    int (*graph_begin)(orthros_backend *be);
    int (*graph_end)(orthros_backend *be, void **graph);
    int (*graph_launch)(orthros_backend *be, void *graph);
    void (*graph_free)(orthros_backend *be, void *graph);
    unsigned long (*graph_epoch)(orthros_backend *be);
};

/* The switches of the whole-model decode work (docs/kernels.md, "Whole-model decode"), read from the environment when
 * a backend is created: ORTHROS_DECODE_FUSED and ORTHROS_DECODE_GRAPHS (the decode mode of its sessions,
 * ORTHROS_DECODE_* bits: 1 on, 0 off, unset the backend's `defaults`),
 * ORTHROS_GEMV=1 (cuda: products of 1-16 rows through gemv.cu instead of cuBLAS), ORTHROS_DECODE_PDL=1 (cuda:
 * every gemv.cu launch, the fused ops' included, a programmatic dependent launch) and ORTHROS_DECODE_CHAIN=1 (cuda:
 * decode_chain records the fused products into one launch; these three unset or 0: off). Any other value is an
 * error (ORTHROS_EINVAL, naming it). The cuda backend also reads ORTHROS_DECODE_L2PF (0-2) and
 * ORTHROS_DECODE_L2PF_MB (1-1024) itself (backend_cuda.cu, select_l2pf; the l2_next hints). */
int orthros_decode_env(unsigned defaults, unsigned *decode_modes, int *gemv, int *pdl, int *chain);
/* Fills info->kind and info->host (this process's host name), for every backend's device description. */
void orthros_device_info_set_host(orthros_device_info *info, const char *kind);
int orthros_backend_cpu_create(orthros_backend **out);
/* Returns ORTHROS_EUNSUPPORTED when built without CUDA, ORTHROS_EDEVICE when no GPU is usable. */
int orthros_backend_cuda_create(orthros_backend **out);
/* GPUs visible to this process (0 without CUDA), and the one this thread's later CUDA work uses. */
int orthros_cuda_device_count(void);
int orthros_cuda_set_device(int device);

/* Shared helpers (the bf16 / fp16 conversions and orthros_uniform are in base/orthros_base.h). */
/* inv_freq[head_dim / 2] for a model, llama3 scaling applied as Hugging Face does. */
void orthros_rope_inv_freq(float *inv_freq, const orthros_model_config *cfg);
size_t orthros_dtype_size(orthros_dtype t);
/* The bytes [begin, end) a tensor takes in a file's data, named for the message. */
typedef struct {
    uint64_t begin, end;
    const char *name;
} orthros_span;
/* The one overlap check of the checkpoint readers (safetensors, GGUF): sorts spans[n] and refuses two that share a
 * byte with ORTHROS_EFORMAT, "tensors A and B overlap in the data". An empty span holds no bytes and cannot
 * overlap: callers leave it out, so that it cannot hide an overlap of its neighbours. */
int orthros_spans_disjoint(orthros_span *spans, size_t n);

#ifdef __cplusplus
}
#endif
#endif
