/* The cuda backend: bf16 activations, weights and KV cache on one GPU, fp32 accumulation, fp32 linear state
 * and logits. GEMMs go through cuBLAS; every other op is a kernel from kernels/ (one op per file), launched
 * on the backend's one stream. Host-side inputs (tokens, positions) travel through a ring of pinned staging
 * buffers, so an op neither allocates nor waits for the GPU unless it returns data to the host; scratch
 * (decode split-K partials, linear-attention chunk states) lives in one device workspace that only grows.
 * The cpu backend (backend_cpu.c) is the specification of every op. */
#include "backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argmax.h"
#include "attn_full_decode.h"
#include "attn_full_prefill.h"
#include "attn_linear_decode.h"
#include "attn_linear_prefill.h"
#include "attn_linear_window.h"
#include "convert.h"
#include "cuda_common.cuh"
#include "embed.h"
#include "gemm_lt.h"
#include "gemv.h"
#include "head8.h"
#include "mem_read.h"
#include "rmsnorm.h"
#include "rope_cache.h"
#include "swiglu.h"
#include "tp.h"

#define STAGE_SLOTS 16
#define STAGE_INIT_INTS 4096
#define CUBLAS_WS_BYTES ((size_t)32 << 20)
#define UPLOAD_CHUNK ((size_t)8 << 20) /* elements per conversion pass */
#define WORK_INIT_BYTES ((size_t)16 << 20)
#define STAMP_GRAPHS 64  /* graphs whose slots ORTHROS_STEP_STAMPS keeps */
#define STAMP_REPLAY 16  /* the replay of each graph whose timeline is written (warm by then) */

typedef struct {
    int *host;          /* pinned */
    int *dev;
    size_t cap;         /* ints */
    cudaEvent_t done;   /* the last copy out of `host` has finished */
} stage_slot;

typedef struct {
    cudaStream_t stream;
    cublasHandle_t cublas;
    void *cublas_ws;
    stage_slot slots[STAGE_SLOTS];
    unsigned next_slot;
    int32_t *ids_dev, *ids_host;   /* argmax results */
    size_t ids_cap;
    void *work;                    /* scratch shared by the attention ops (stream-ordered) */
    size_t work_cap;
    void *upload_buf;              /* device staging for F32/F16 uploads */
    int num_sms;
    unsigned long long *read_sink;  /* [orthros_read_blocks(num_sms)]: the read ceiling's per-block results */
    cudaEvent_t marks[ORTHROS_TIMER_SLOTS]; /* timer_mark / timer_seconds */
    /* The whole-model decode work (docs/kernels.md, "Whole-model decode"): */
    int gemv;                      /* ORTHROS_GEMV=1: gemm and logits of 1-16 rows through gemv.cu */
    int gemm_lt;                   /* ORTHROS_GEMM_LT=1: cuBLAS's products of 1-16 rows through cuBLASLt, tuned */
    orthros_gemm_lt *lt;           /* its context (gemm_lt.h), with gemm_lt */
    int pdl;                       /* ORTHROS_DECODE_PDL=1: every gemv.cu launch a programmatic dependent one */
    int pdl_late;                  /* ORTHROS_DECODE_PDL_LATE (unset: 1 on sm_90, not with the chain or pdl; 0 off):
                                    * every gemv.cu launch a dependent one that asks nothing into L2 first (pdl 3; 2:
                                    * its blocks' first group asked, pdl 1), and v3 lets its own dependents launch at
                                    * each block's last group, not as it starts */
    int pdl_lead;                  /* ORTHROS_DECODE_PDL_LEAD (0-3, unset 0): with pdl_late, the block rounds before
                                    * a v3 block's last group at which it lets its dependents launch */
    void *gemv_scratch;            /* orthros_gemv_scratch_bytes(), zeroed once; allocated at the first GEMV */
    int l2pf;                      /* ORTHROS_DECODE_L2PF: 0 off, 1 the l2_next hints asked into L2, 2 as evict_last */
    size_t l2pf_cap;               /* ORTHROS_DECODE_L2PF_MB: the most bytes of one hint asked */
    const void *l2_next;           /* the hint in force (cuda_l2_next): the gemv and decode-attention launches ask it */
    size_t l2_next_bytes;
    int chain;                     /* ORTHROS_DECODE_CHAIN=1: decode_chain records the fused products into one launch */
    int chain_open;                /* between decode_chain(1) and decode_chain(0) */
    int chain_ring;                /* ORTHROS_DECODE_CHAIN_RING=1: the chain's products streamed through a ring (implies
                                    * the chain) */
    int chain_n;                   /* products recorded, not yet launched */
    orthros_gemv_params chain_ops[ORTHROS_GEMV_CHAIN_MAX];
    int attn_o;                    /* ORTHROS_DECODE_ATTN_O=1 (unset 0; 0 with the chain): attn_decode_o in one launch */
    int qkv_attn;                  /* ORTHROS_DECODE_QKV_ATTN=1 (unset 0; 0 with the chain or attn_o):
                                    * norm_qkv_rope_attn in one launch */
    int head8;                     /* ORTHROS_DECODE_HEAD8 (unset 1; 0: the bf16 head): norm_argmax (ids only) at
                                    * batch 1-4 through an int8 copy of the head, the exact argmax kept
                                    * (kernels/head8.h) */
    int head8_depth;               /* ORTHROS_HEAD8_DEPTH (2-4, unset 4): the screen's chunk steps in flight a lane */
    int head8_dp4a;                /* ORTHROS_HEAD8_DP4A (unset 1; 0: fp32 sums): the screen's integer form (head8.h) */
    int head8_one;                 /* ORTHROS_HEAD8_ONE_LAUNCH (unset 0): the selection inside the screen's launch */
    int head8_next_pf;             /* ORTHROS_HEAD8_NEXT_PF (unset 1; 0: not): the screen's warps ask their next rows
                                    * into L2 as they start a group */
    int head8_even;                /* ORTHROS_HEAD8_EVEN (unset 0): the screen's grid cut so that its last round of
                                    * row groups is (nearly) full */
    size_t kvpf_cap;               /* ORTHROS_DECODE_KVPF_MB (0-1024 MiB, unset 0: off): at batch 1 the q/k/v product asks
                                    * the layer's K and V caches below the step's bound into L2 for the attention
                                    * after it, where each is at most this many bytes */
    orthros_head8 *h8;             /* that copy, of the head last met (made at its first uncaptured call, dropped when
                                    * the head's memory is freed through this backend) */
    int mlp;                       /* ORTHROS_DECODE_MLP (unset 0; 0 with the chain): 1 norm_mlp_add in one launch; 2
                                    * the same, at batch 1 with K 2048 or 4096 the kernel streaming its weights through
                                    * a shared-memory ring (sm_90) */
    int o_pdl;                     /* ORTHROS_DECODE_O_PDL (unset: 0 with pdl_late, else 1 on sm_90 and 0 elsewhere):
                                    * 1 the product after a decode attention a programmatic dependent of it, its
                                    * blocks asking their weights into L2 on the SMs the attention leaves idle; 2 the
                                    * same, and the attention asks the hint (O) into L2; 0 a plain launch, or with
                                    * pdl_late the late launches' dependent one that asks nothing first (pdl 3); 3
                                    * O as 0 does, and each v8 block asks its share of O's first
                                    * ORTHROS_DECODE_L2PF_MB into L2 once its own stream is asked */
    int next_pdl;                  /* o_pdl: set by a decode attention launch, taken by the next gemv launch */
    int attn_pdl;                  /* ORTHROS_DECODE_ATTN_PDL (unset: 1 on sm_90; 0 off): a decode attention (v8) a
                                    * programmatic dependent of the kernel before it (the q/k/v projection), its older
                                    * keys asked before the wait */
    int attn_early;                /* ORTHROS_DECODE_ATTN_EARLY=1 (unset 0; with attn_pdl): the tile that holds the
                                    * newest key has its older rows asked before the wait too */
    const void *hint_w;            /* the l2_next hint as given, whatever ORTHROS_DECODE_L2PF says (o_pdl 2) */
    size_t hint_bytes;
    void *ao_scratch;              /* orthros_attn_full_decode_o_scratch_bytes(), zeroed; grown outside captures */
    size_t ao_cap;
    int capturing;                 /* between graph_begin and graph_end */
    /* ORTHROS_STEP_STAMPS=FILE (a build with ORTHROS_STAMPS, kernels/step_stamps.h): the captured launches' slots and
     * the timeline of each graph's STAMP_REPLAY-th replay, appended to FILE */
    unsigned long long *stamps;    /* the device array, NULL when off */
    char *stamps_path;
    int stamp_next;                /* the next free slot; launches past ORTHROS_STAMP_SLOTS are not stamped */
    int stamp_first;               /* the slot of the capture's first launch */
    const char *stamp_kind[ORTHROS_STAMP_SLOTS];
    struct {
        void *exec;
        int first, n, replays;
    } stamp_graph[STAMP_GRAPHS];
    int n_stamp_graphs;
    unsigned long epoch;           /* bumped whenever `work` is replaced (graph_epoch) */
} cuda_impl;

static cuda_impl *impl_of(orthros_backend *be) { return (cuda_impl *)be->impl; }

/* ---- ORTHROS_STEP_STAMPS: the captured step's timeline (kernels/step_stamps.h) ---- */

static int stamps_init(cuda_impl *c)
{
    const char *path = getenv("ORTHROS_STEP_STAMPS");
    if (!path || !*path) return 0;
#ifndef ORTHROS_STAMPS
    return orthros_error(ORTHROS_EUNSUPPORTED, "ORTHROS_STEP_STAMPS: this build's kernels read no clock (configure "
                                               "with -DORTHROS_STAMPS=ON, a diagnostic build)");
#else
    const size_t len = strlen(path) + 1;
    if (!(c->stamps_path = (char *)malloc(len))) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    memcpy(c->stamps_path, path, len);
    ORTHROS_CUDA_CHECK(cudaMalloc((void **)&c->stamps, ORTHROS_STAMP_WORDS * sizeof *c->stamps));
    return 0;
#endif
}

/* A slot for a launch being captured: *stamps stays NULL where stamps are off, outside a capture, or past the last
 * slot (that launch is then not stamped). */
static void stamp_take(cuda_impl *c, const char *kind, unsigned long long **stamps, int *slot)
{
    *stamps = NULL, *slot = 0;
    if (!c->stamps || !c->capturing || c->stamp_next >= ORTHROS_STAMP_SLOTS) return;
    c->stamp_kind[c->stamp_next] = kind;
    *stamps = c->stamps, *slot = c->stamp_next++;
}

/* The step's name of a product, from its epilogue (an add after the attention is O, any other down). */
static const char *stamp_gemv_kind(const cuda_impl *c, int epilogue)
{
    switch (epilogue) {
    case ORTHROS_GEMV_ROPE: return "qkv";
    case ORTHROS_GEMV_SWIGLU: return "gate_up";
    case ORTHROS_GEMV_ARGMAX: return "head";
    case ORTHROS_GEMV_MLP: return "mlp";
    case ORTHROS_GEMV_ADD:
        return c->stamp_next > c->stamp_first && !strcmp(c->stamp_kind[c->stamp_next - 1], "attn") ? "o" : "down";
    default: return "gemv";
    }
}

/* Graph g's replay with its slots cleared first, then read back and appended to the file as one table: per launch
 * the blocks that recorded and the first and last block's start, wait, end (a block's end: its last warp's), then per
 * phase its kernel marks (step_stamps.h) the first, the last and the mean over the blocks that marked it, or "- - -". */
static int stamps_replay(cuda_impl *c, int g)
{
    const int first = c->stamp_graph[g].first, n = c->stamp_graph[g].n;
    const size_t words = (size_t)n * ORTHROS_STAMP_SLOT_WORDS;
    unsigned long long *dev = c->stamps + (size_t)first * ORTHROS_STAMP_SLOT_WORDS;
    ORTHROS_CUDA_CHECK(cudaMemsetAsync(dev, 0, words * sizeof *dev, c->stream));
    ORTHROS_CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)c->stamp_graph[g].exec, c->stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    unsigned long long *h = (unsigned long long *)malloc(words * sizeof *h);
    if (!h) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    cudaError_t e = cudaMemcpy(h, dev, words * sizeof *h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(h);
        return orthros_error(ORTHROS_EDEVICE, "cuda: reading the step stamps: %s", cudaGetErrorString(e));
    }
    enum { NF = 6 }; /* the first and the last block's start, wait and end */
    const unsigned long long none = ~0ull;
    unsigned long long t0 = none;
    for (size_t i = 0; i < words; i += ORTHROS_STAMP_FIELDS)
        if (h[i] && h[i] < t0) t0 = h[i];
    FILE *f = fopen(c->stamps_path, "a");
    if (!f) {
        free(h);
        return orthros_error(ORTHROS_EIO, "ORTHROS_STEP_STAMPS: cannot open %s for appending", c->stamps_path);
    }
    fprintf(f, "# graph %d: %d launches, replay %d; ns from the first block's start of the step\n"
               "# slot kind blocks start_first start_last wait_first wait_last end_first end_last",
            g, n, STAMP_REPLAY);
    for (int k = 0; k < ORTHROS_STAMP_PHASES; k++) fprintf(f, " p%d_first p%d_last p%d_mean", k, k, k);
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        enum { NP = ORTHROS_STAMP_PHASES, P0 = 2 + ORTHROS_STAMP_WARPS };
        unsigned long long v[NF] = {none, 0, none, 0, none, 0}, pf[NP], pl[NP];
        double psum[NP];
        int blocks = 0, pn[NP];
        for (int k = 0; k < NP; k++) pf[k] = none, pl[k] = 0, psum[k] = 0.0, pn[k] = 0;
        for (int b = 0; b < ORTHROS_STAMP_BLOCKS; b++) {
            const unsigned long long *r = h + (size_t)i * ORTHROS_STAMP_SLOT_WORDS + (size_t)b * ORTHROS_STAMP_FIELDS;
            if (!r[0]) continue;
            unsigned long long w = r[1] ? r[1] : r[0], end = 0;
            for (int k = 2; k < P0; k++) end = r[k] > end ? r[k] : end;
            if (!end) continue; /* a block still running when the step was read cannot be: skipped */
            const unsigned long long x[3] = {r[0], w, end};
            for (int k = 0; k < 3; k++) {
                v[2 * k] = x[k] < v[2 * k] ? x[k] : v[2 * k];
                v[2 * k + 1] = x[k] > v[2 * k + 1] ? x[k] : v[2 * k + 1];
            }
            for (int k = 0; k < NP; k++) { /* a phase is marked between the block's wait and its end */
                const unsigned long long ph = r[P0 + k];
                if (!ph) continue;
                pf[k] = ph < pf[k] ? ph : pf[k], pl[k] = ph > pl[k] ? ph : pl[k];
                psum[k] += (double)(ph - t0), pn[k]++;
            }
            blocks++;
        }
        if (!blocks) { /* a kernel that reads no clock ran this launch */
            fprintf(f, "%d %s 0 - - - - - -", first + i, c->stamp_kind[first + i]);
            for (int k = 0; k < NP; k++) fputs(" - - -", f);
            fputc('\n', f);
            continue;
        }
        fprintf(f, "%d %s %d", first + i, c->stamp_kind[first + i], blocks);
        for (int k = 0; k < NF; k++) fprintf(f, " %llu", v[k] - t0);
        for (int k = 0; k < NP; k++) {
            if (pn[k])
                fprintf(f, " %llu %llu %.0f", pf[k] - t0, pl[k] - t0, psum[k] / pn[k]);
            else
                fputs(" - - -", f);
        }
        fputc('\n', f);
    }
    free(h);
    if (fclose(f)) return orthros_error(ORTHROS_EIO, "ORTHROS_STEP_STAMPS: writing %s failed", c->stamps_path);
    return 0;
}

/* The next staging slot, holding at least n ints, its last copy done: its host buffer may be written. */
static int stage_slot_take(cuda_impl *c, int n, stage_slot **out)
{
    /* A captured copy would read the slot at every replay, long after it holds other data. */
    if (c->capturing)
        return orthros_error(ORTHROS_EUNSUPPORTED, "cuda: an op stages host data inside a captured decode step");
    stage_slot *s = &c->slots[c->next_slot++ % STAGE_SLOTS];
    if ((size_t)n > s->cap) {
        size_t cap = s->cap * 2 > (size_t)n ? s->cap * 2 : (size_t)n;
        ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
        ORTHROS_CUDA_CHECK(cudaFreeHost(s->host));
        ORTHROS_CUDA_CHECK(cudaFree(s->dev));
        s->host = NULL;
        s->dev = NULL;
        s->cap = 0;
        ORTHROS_CUDA_CHECK(cudaMallocHost((void **)&s->host, cap * sizeof(int)));
        ORTHROS_CUDA_CHECK(cudaMalloc((void **)&s->dev, cap * sizeof(int)));
        s->cap = cap;
    } else {
        ORTHROS_CUDA_CHECK(cudaEventSynchronize(s->done));
    }
    *out = s;
    return 0;
}

/* Copies n host ints to device memory that stays valid until STAGE_SLOTS further stagings. */
static int stage_ints(cuda_impl *c, const int *src, int n, const int **dev)
{
    stage_slot *s = NULL;
    int rc = stage_slot_take(c, n, &s);
    if (rc) return rc;
    memcpy(s->host, src, (size_t)n * sizeof(int));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(s->dev, s->host, (size_t)n * sizeof(int), cudaMemcpyHostToDevice, c->stream));
    ORTHROS_CUDA_CHECK(cudaEventRecord(s->done, c->stream));
    *dev = s->dev;
    return 0;
}

/* Grows the workspace to at least `bytes` (only when a larger shape first appears). */
/* A scratch buffer of the backend (*buf, *cap bytes) grown to hold `bytes` (a quarter more, so that small growths do
 * not each reallocate), zeroed where `zero` asks it; never inside a capture, and graph_epoch moves on. */
static int scratch_reserve(cuda_impl *c, void **buf, size_t *cap, size_t bytes, int zero, const char *what)
{
    if (bytes <= *cap) return 0;
    if (c->capturing)
        return orthros_error(ORTHROS_EUNSUPPORTED, "cuda: the %s would grow inside a captured decode step", what);
    c->epoch++; /* graphs captured before refer to the old scratch */
    size_t want = bytes + bytes / 4;
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    ORTHROS_CUDA_CHECK(cudaFree(*buf));
    *buf = NULL;
    *cap = 0;
    if (cudaMalloc(buf, want) != cudaSuccess) {
        (void)cudaGetLastError();
        *buf = NULL;
        return orthros_error(ORTHROS_ENOMEM, "cuda: cannot allocate %zu bytes of %s", want, what);
    }
    if (zero) ORTHROS_CUDA_CHECK(cudaMemsetAsync(*buf, 0, want, c->stream));
    *cap = want;
    return 0;
}

static int work_reserve(cuda_impl *c, size_t bytes)
{
    return scratch_reserve(c, &c->work, &c->work_cap, bytes, 0, "attention scratch");
}

static void cuda_destroy(orthros_backend *be)
{
    if (!be) return;
    cuda_impl *c = impl_of(be);
    if (c) {
        if (c->stream) cudaStreamSynchronize(c->stream);
        for (int i = 0; i < STAGE_SLOTS; i++) {
            if (c->slots[i].host) cudaFreeHost(c->slots[i].host);
            if (c->slots[i].dev) cudaFree(c->slots[i].dev);
            if (c->slots[i].done) cudaEventDestroy(c->slots[i].done);
        }
        if (c->ids_dev) cudaFree(c->ids_dev);
        if (c->ids_host) cudaFreeHost(c->ids_host);
        if (c->work) cudaFree(c->work);
        if (c->upload_buf) cudaFree(c->upload_buf);
        if (c->read_sink) cudaFree(c->read_sink);
        if (c->gemv_scratch) cudaFree(c->gemv_scratch);
        orthros_head8_destroy(c->h8);
        if (c->ao_scratch) cudaFree(c->ao_scratch);
        if (c->stamps) cudaFree(c->stamps);
        free(c->stamps_path);
        for (int i = 0; i < ORTHROS_TIMER_SLOTS; i++)
            if (c->marks[i]) cudaEventDestroy(c->marks[i]);
        orthros_gemm_lt_destroy(c->lt);
        if (c->cublas) cublasDestroy(c->cublas);
        if (c->cublas_ws) cudaFree(c->cublas_ws);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
    }
    free(be);
}

static void *cuda_alloc(orthros_backend *be, size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 256) != cudaSuccess) {
        (void)cudaGetLastError();
        orthros_error(ORTHROS_ENOMEM, "cuda: cannot allocate %zu bytes of device memory", bytes);
        return NULL;
    }
    return p;
}

static void cuda_free(orthros_backend *be, void *p)
{
    cuda_impl *c = impl_of(be);
    if (p && c->h8 && orthros_head8_weights(c->h8) == p) { /* the head's copy goes with it */
        cudaStreamSynchronize(c->stream);
        orthros_head8_destroy(c->h8);
        c->h8 = NULL;
    }
    if (p) cudaFree(p);
}

static int cuda_zero(orthros_backend *be, void *p, size_t bytes)
{
    ORTHROS_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, impl_of(be)->stream));
    return 0;
}

static int cuda_mem_info(orthros_backend *be, size_t *free_bytes, size_t *total_bytes)
{
    ORTHROS_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}

static int cuda_sync(orthros_backend *be)
{
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(impl_of(be)->stream));
    return 0;
}

/* BF16 is copied as is; F32 and F16 go through a device staging buffer and a conversion kernel. The call
 * returns once the host buffer may be reused (load time, not the hot path). */
static int cuda_upload(orthros_backend *be, void *dst, size_t dst_off, const void *src, orthros_dtype dtype, size_t n)
{
    cuda_impl *c = impl_of(be);
    bf16 *d = (bf16 *)dst + dst_off;
    if (dtype == ORTHROS_DTYPE_BF16) {
        ORTHROS_CUDA_CHECK(cudaMemcpyAsync(d, src, n * sizeof(bf16), cudaMemcpyHostToDevice, c->stream));
        ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
        return 0;
    }
    if (dtype != ORTHROS_DTYPE_F32 && dtype != ORTHROS_DTYPE_F16)
        return orthros_error(ORTHROS_EUNSUPPORTED, "cuda upload: dtype %d", (int)dtype);
    if (!c->upload_buf) ORTHROS_CUDA_CHECK(cudaMalloc(&c->upload_buf, UPLOAD_CHUNK * sizeof(float)));
    size_t es = orthros_dtype_size(dtype);
    for (size_t i = 0; i < n; i += UPLOAD_CHUNK) {
        size_t m = n - i < UPLOAD_CHUNK ? n - i : UPLOAD_CHUNK;
        ORTHROS_CUDA_CHECK(cudaMemcpyAsync(c->upload_buf, (const char *)src + i * es, m * es, cudaMemcpyHostToDevice,
                                           c->stream));
        orthros_convert_params p = {d + i, c->upload_buf,
                                    dtype == ORTHROS_DTYPE_F32 ? ORTHROS_CONVERT_F32 : ORTHROS_CONVERT_F16, m};
        int rc = orthros_convert_to_bf16(&p, c->stream);
        if (rc) return rc;
    }
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return 0;
}

static int cuda_fill_random(orthros_backend *be, void *dst, size_t n, uint64_t seed, float scale)
{
    orthros_fill_params p = {dst, n, 1, seed, scale, 0.0f};
    return orthros_fill_bf16(&p, impl_of(be)->stream);
}

static int cuda_fill(orthros_backend *be, void *dst, size_t n, float value)
{
    orthros_fill_params p = {dst, n, 0, 0, 0.0f, value};
    return orthros_fill_bf16(&p, impl_of(be)->stream);
}

static int cuda_copy(orthros_backend *be, void *dst, const void *src, size_t bytes)
{
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, impl_of(be)->stream));
    return 0;
}

/* The read ceiling: every 64-bit word of src XORed on the device, one word written per block, nothing returned. */
static int cuda_read(orthros_backend *be, const void *src, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    orthros_read_params p = {c->read_sink, src, bytes, orthros_read_blocks(c->num_sms)};
    return orthros_read_xor_u64(&p, c->stream);
}

static int cuda_download_f32(orthros_backend *be, float *host, const float *src, size_t n)
{
    cuda_impl *c = impl_of(be);
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(host, src, n * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return 0;
}

static void cuda_range_push(orthros_backend *be, const char *name) { nvtxRangePushA(name); }
static void cuda_range_pop(orthros_backend *be) { nvtxRangePop(); }

static int cuda_embed(orthros_backend *be, void *x, const int32_t *tokens, const void *table, int n, int D)
{
    if (n <= 0) return 0;
    cuda_impl *c = impl_of(be);
    const int *dt = NULL;
    int rc = stage_ints(c, tokens, n, &dt);
    if (rc) return rc;
    orthros_embed_params p = {x, dt, table, n, D};
    return orthros_embed_bf16(&p, c->stream);
}

static int cuda_rmsnorm(orthros_backend *be, void *out, const void *x, const void *w, int n, int D, float eps)
{
    orthros_rmsnorm_params p = {out, (void *)x, NULL, w, n, D, eps};
    return orthros_rmsnorm_bf16(&p, impl_of(be)->stream);
}

static int cuda_add_rmsnorm(orthros_backend *be, void *out, void *resid, const void *delta, const void *w, int n, int D,
                            float eps)
{
    orthros_rmsnorm_params p = {out, resid, delta, w, n, D, eps};
    return orthros_rmsnorm_bf16(&p, impl_of(be)->stream);
}

/* Row-major out[n][M] = x[n][K] W[M][K]^T is column-major out^T = W^T x^T: op(A) = W^T (A = W, K x M
 * column-major), B = x^T (K x n column-major). */
static int gemm_rowmajor(cuda_impl *c, void *out, cudaDataType otype, const void *x, const void *W, int n, int M, int K)
{
    if (n <= 0 || M <= 0) return 0;
    if (c->lt && n <= ORTHROS_GEMV_MAX_ROWS)
        return orthros_gemm_lt_bf16(c->lt, out, otype == CUDA_R_32F, x, W, n, M, K, c->capturing, c->stream);
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, M, n, K, &one, W, CUDA_R_16BF, K, x, CUDA_R_16BF, K,
                              &zero, out, otype, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return 0;
}

/* The GEMV kernel's scratch, allocated and zeroed the first time (never inside a captured step: the step runs
 * uncaptured before it is captured). */
static int gemv_ready(cuda_impl *c, orthros_gemv_params *p)
{
    if (!c->gemv_scratch) {
        if (c->capturing) return orthros_error(ORTHROS_EUNSUPPORTED, "cuda: the GEMV scratch would be allocated inside a capture");
        ORTHROS_CUDA_CHECK(cudaMalloc(&c->gemv_scratch, orthros_gemv_scratch_bytes()));
        ORTHROS_CUDA_CHECK(cudaMemsetAsync(c->gemv_scratch, 0, orthros_gemv_scratch_bytes(), c->stream));
    }
    p->scratch = c->gemv_scratch;
    p->num_sms = c->num_sms;
    p->pdl = c->pdl || c->pdl_late == 2 ? 1 : c->pdl_late ? 3 : 0;
    p->pdl_late = c->pdl_late ? 1 + c->pdl_lead : 0;
    p->l2_next = c->l2_next, p->l2_next_bytes = c->l2_next_bytes, p->l2_policy = c->l2pf == 2;
    return 0;
}

/* A product of few rows through gemv.cu, when ORTHROS_GEMV=1 and the kernel takes the shape: 1 when it ran (or
 * failed: *rc), 0 when the caller should use cuBLAS. */
static int try_gemv(cuda_impl *c, void *out, int epilogue, const void *x, const void *W, int n, int M, int K, int *rc)
{
    if (!c->gemv || n > ORTHROS_GEMV_MAX_ROWS) return 0;
    orthros_gemv_params p;
    memset(&p, 0, sizeof p);
    p.out = out, p.x = x, p.W = W, p.n = n, p.M = M, p.K = K, p.epilogue = epilogue;
    if (!orthros_gemv_supported(&p)) return 0;
    *rc = gemv_ready(c, &p);
    if (!*rc) *rc = orthros_gemv_bf16(&p, c->stream);
    return 1;
}

static int cuda_gemm(orthros_backend *be, void *out, const void *x, const void *W, int n, int M, int K)
{
    int rc = 0;
    if (try_gemv(impl_of(be), out, ORTHROS_GEMV_STORE, x, W, n, M, K, &rc)) return rc;
    return gemm_rowmajor(impl_of(be), out, CUDA_R_16BF, x, W, n, M, K);
}

static int cuda_swiglu(orthros_backend *be, void *out, const void *gu, int n, int F)
{
    orthros_swiglu_params p = {out, gu, n, F};
    return orthros_swiglu_bf16(&p, impl_of(be)->stream);
}

static int cuda_logits(orthros_backend *be, float *out, const void *x, const void *W, int n, int V, int D)
{
    int rc = 0;
    if (try_gemv(impl_of(be), out, ORTHROS_GEMV_STORE_F32, x, W, n, V, D, &rc)) return rc;
    return gemm_rowmajor(impl_of(be), out, CUDA_R_32F, x, W, n, V, D);
}

/* The pinned id buffers hold at least n ids (grown with a sync, outside any capture). */
static int ids_reserve(cuda_impl *c, int n)
{
    if ((size_t)n <= c->ids_cap) return 0;
    if (c->capturing) return orthros_error(ORTHROS_EUNSUPPORTED, "cuda: id buffers would grow inside a capture");
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    ORTHROS_CUDA_CHECK(cudaFree(c->ids_dev));
    ORTHROS_CUDA_CHECK(cudaFreeHost(c->ids_host));
    c->ids_dev = c->ids_host = NULL;
    c->ids_cap = 0;
    ORTHROS_CUDA_CHECK(cudaMalloc((void **)&c->ids_dev, (size_t)n * sizeof(int32_t)));
    ORTHROS_CUDA_CHECK(cudaMallocHost((void **)&c->ids_host, (size_t)n * sizeof(int32_t)));
    c->ids_cap = (size_t)n;
    return 0;
}

static int cuda_argmax(orthros_backend *be, int32_t *ids, const float *logits, int n, int V)
{
    if (n <= 0) return 0;
    cuda_impl *c = impl_of(be);
    int rc0 = ids_reserve(c, n);
    if (rc0) return rc0;
    orthros_argmax_params p = {c->ids_dev, logits, n, V};
    int rc = orthros_argmax_f32(&p, c->stream);
    if (rc) return rc;
    ORTHROS_CUDA_CHECK(
        cudaMemcpyAsync(c->ids_host, c->ids_dev, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost, c->stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    memcpy(ids, c->ids_host, (size_t)n * sizeof(int32_t));
    return 0;
}

static int check_heads(const orthros_attn_layer *L, const char *op)
{
    if (L->n_kv_heads <= 0 || L->n_heads % L->n_kv_heads)
        return orthros_error(ORTHROS_EINVAL, "%s: %d query heads not a multiple of %d kv heads", op, L->n_heads,
                             L->n_kv_heads);
    if (L->head_dim <= 0 || L->head_dim > ORTHROS_MAX_HEAD_DIM || (L->head_dim & 7))
        return orthros_error(ORTHROS_EUNSUPPORTED, "%s: head_dim %d (the cuda backend needs a multiple of 8, at most %d)",
                             op, L->head_dim, ORTHROS_MAX_HEAD_DIM);
    return 0;
}

static int cuda_rope_cache_write(orthros_backend *be, void *qkv, const orthros_attn_layer *L, const orthros_rope *rope,
                                 const int *pos0, int B, int n, int rotate_q_from)
{
    if (B <= 0 || n <= 0) return 0;
    int rc = check_heads(L, "rope");
    if (rc) return rc;
    /* A linear layer with phi after RoPE and no window has no cache: its q and k are only rotated in place. */
    if ((L->cap <= 0 || !L->k_cache || !L->v_cache) && !(L->fmap_after && L->cap <= 0))
        return orthros_error(ORTHROS_EINVAL, "rope: layer has no KV cache");
    cuda_impl *c = impl_of(be);
    orthros_rope_cache_params p;
    memset(&p, 0, sizeof p);
    p.qkv = qkv;
    p.k_cache = L->k_cache;
    p.v_cache = L->v_cache;
    p.B = B;
    p.n = n;
    p.Hq = L->n_heads;
    p.Hkv = L->n_kv_heads;
    p.d = L->head_dim;
    p.cap = L->cap > 0 ? L->cap : 0;
    p.rotate_q_from = rotate_q_from;
    p.kraw = L->kraw_cache;
    p.kraw_cap = L->kraw_cap;
    p.q_rot = L->q_rot;
    p.rotate_k = L->fmap_after;
    memcpy(p.inv_freq, rope->inv_freq, (size_t)(L->head_dim / 2) * sizeof(float));
    if (L->pos_dev) p.pos0 = L->pos_dev;
    else if ((rc = stage_ints(c, pos0, B, &p.pos0))) return rc;
    return orthros_rope_cache_write_bf16(&p, c->stream);
}

/* The attention kernels' parameters of a call (positions staged unless the layer's are in device memory). */
static int attn_params(cuda_impl *c, orthros_attn_full_decode_params *pp, void *out, const void *qkv,
                       const orthros_attn_layer *L, const int *pos0, int B, int n)
{
    int rc = check_heads(L, "attention");
    if (rc) return rc;
    if (L->cap <= 0 || !L->k_cache || !L->v_cache)
        return orthros_error(ORTHROS_EINVAL, "attention: layer has no KV cache");
    orthros_attn_full_decode_params &p = *pp;
    memset(&p, 0, sizeof p);
    p.out = out;
    p.qkv = qkv;
    p.k_cache = L->k_cache;
    p.v_cache = L->v_cache;
    p.B = B;
    p.n = n;
    p.Hq = L->n_heads;
    p.Hkv = L->n_kv_heads;
    p.d = L->head_dim;
    p.cap = L->cap;
    p.window = L->window > 0 ? L->window : 0;
    p.num_sms = c->num_sms;
    if (n == 1) p.l2_next = c->l2_next, p.l2_next_bytes = c->l2_next_bytes, p.l2_policy = c->l2pf == 2;
    for (int b = 0; b < B; b++) {
        if (pos0[b] < 0) return orthros_error(ORTHROS_EINVAL, "attention: negative position %d", pos0[b]);
        int lo = p.window > 0 && pos0[b] - p.window + 1 > 0 ? pos0[b] - p.window + 1 : 0;
        int keys = pos0[b] + n - lo;
        if (keys > p.max_keys) p.max_keys = keys;
    }
    /* With positions in device memory, pos0 bounds them: the split plan and scratch are the bound's. */
    if (L->pos_dev) p.pos0 = L->pos_dev;
    else if ((rc = stage_ints(c, pos0, B, &p.pos0))) return rc;
    return 0;
}

/* ORTHROS_DECODE_O_PDL at a batch-1 decode attention: the hint it carries (O's weights: 2 all of them as its blocks
 * start, 3 the first ORTHROS_DECODE_L2PF_MB once a block's own stream is asked) and whether the product after it is
 * a dependent launch that asks its weights first (1, 2). */
static void attn_o_hint(cuda_impl *c, orthros_attn_full_decode_params *p)
{
    if (c->o_pdl >= 2 && p->n == 1 && !p->l2_next) {
        p->l2_next = c->hint_w, p->l2_late = c->o_pdl == 3;
        p->l2_next_bytes = p->l2_late && c->hint_bytes > c->l2pf_cap ? c->l2pf_cap : c->hint_bytes;
    }
    c->next_pdl = (c->o_pdl == 1 || c->o_pdl == 2) && p->n == 1;
}

/* Few query rows per kv head (decode, a short orthros tail) go to the split-K kernel, which spreads a long
 * cache over the whole chip; larger chunks to the flash-attention prefill kernel. */
static int attn_run(cuda_impl *c, orthros_attn_full_decode_params &p)
{
    const int n = p.n;
    int rc;
    if (orthros_attn_full_decode_supported(&p)) {
        size_t need = orthros_attn_full_decode_work_bytes(&p);
        if (!need) return orthros_error(ORTHROS_EDEVICE, "decode attention: %s", orthros_last_error());
        if ((rc = work_reserve(c, need))) return rc;
        p.work = (float *)c->work;
        p.work_bytes = c->work_cap;
        attn_o_hint(c, &p);
        p.pdl = c->attn_pdl && n == 1;
        p.early_rows = p.pdl && c->attn_early;
        stamp_take(c, "attn", &p.stamps, &p.stamp_slot);
        return orthros_attn_full_decode_bf16(&p, c->stream);
    }
    orthros_attn_full_prefill_params q = {p.out, p.qkv, p.k_cache, p.v_cache, p.pos0, p.B, p.n, p.Hq, p.Hkv,
                                          p.d, p.cap, p.window, p.max_keys};
    return orthros_attn_full_prefill_bf16(&q, c->stream);
}

static int attn_full(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, const int *pos0,
                     int B, int n)
{
    if (B <= 0 || n <= 0) return 0;
    cuda_impl *c = impl_of(be);
    /* The decode kernel's parameters are a superset of the prefill kernel's: filled once, copied if it is prefill. */
    orthros_attn_full_decode_params p;
    int rc = attn_params(c, &p, out, qkv, L, pos0, B, n);
    return rc ? rc : attn_run(c, p);
}

static int linear_params(orthros_attn_linear_params *p, void *out, const void *qkv, const orthros_attn_layer *L, int B,
                         int n)
{
    int rc = check_heads(L, "linear attention");
    if (rc) return rc;
    if (!L->S || !L->z) return orthros_error(ORTHROS_EINVAL, "linear attention: layer has no state");
    memset(p, 0, sizeof *p);
    p->out = out;
    p->qkv = qkv;
    p->S = L->S;
    p->z = L->z;
    p->fmap_q = L->fmap_q;
    p->fmap_k = L->fmap_k;
    p->B = B;
    p->n = n;
    p->Hq = L->n_heads;
    p->Hkv = L->n_kv_heads;
    p->d = L->head_dim;
    p->F = L->feature_dim;
    p->fmap = (int)L->fmap;
    p->eps = L->eps;
    if (p->F <= 0) return orthros_error(ORTHROS_EINVAL, "linear attention: feature size %d", p->F);
    return 0;
}

/* Linear attention, and with a local window (docs/converted-models.md) the window pass after it: the linear kernels
 * then read the key stream W positions behind (the call's rows and, before them, the ring or cache: k~ when phi acts
 * after RoPE, the ring of un-rotated k before) and write each row's denominator into the workspace, which the window
 * pass (attn_linear_window.cu) combines with the scores of q~ (in qkv, or q_rot) against the cache's k~. */
static int linear_run(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, const int *pos0,
                      int B, int n, int decode)
{
    if (B <= 0 || n <= 0) return 0;
    cuda_impl *c = impl_of(be);
    orthros_attn_linear_params p;
    int rc = linear_params(&p, out, qkv, L, B, n);
    if (rc) return rc;
    const int win = L->local_window;
    const int *dpos = NULL;
    const void *kf = L->fmap_after ? L->k_cache : L->kraw_cache;
    const int kf_cap = L->fmap_after ? L->cap : L->kraw_cap;
    const void *q = L->fmap_after ? qkv : L->q_rot;
    if (win > 0) {
        if (!L->k_cache || !L->v_cache || L->cap < 1 || !kf || kf_cap < 1 || !q)
            return orthros_error(ORTHROS_EINVAL, "linear attention with a local window of %d: the layer has no window cache",
                                 win);
        for (int b = 0; b < B; b++)
            if (pos0[b] < 0) return orthros_error(ORTHROS_EINVAL, "linear attention: negative position %d", pos0[b]);
        if (L->pos_dev) dpos = L->pos_dev;
        else if ((rc = stage_ints(c, pos0, B, &dpos))) return rc;
        p.keys.shift = win;
        p.keys.pos0 = dpos;
        p.keys.kf_ring = kf;
        p.keys.kf_cap = kf_cap;
        p.keys.v_ring = L->v_cache;
        p.keys.v_cap = L->cap;
    }
    const int chunked = !decode && n > 1 && orthros_attn_linear_chunked_supported(&p);
    size_t need = chunked ? orthros_attn_linear_chunked_work_bytes(&p) : orthros_attn_linear_recurrent_work_bytes(&p);
    size_t den_bytes = win > 0 ? ((size_t)B * n * L->n_heads * sizeof(float) + 255) / 256 * 256 : 0;
    if ((rc = work_reserve(c, den_bytes + need))) return rc;
    p.den = win > 0 ? (float *)c->work : NULL;
    p.work = (char *)c->work + den_bytes;
    p.work_bytes = c->work_cap - den_bytes;
    rc = chunked ? orthros_attn_linear_chunked_bf16(&p, c->cublas, c->stream)
                 : orthros_attn_linear_recurrent_bf16(&p, c->cublas, c->stream);
    if (rc || win <= 0) return rc;
    orthros_attn_linear_window_params w;
    memset(&w, 0, sizeof w);
    w.out = out;
    w.den = p.den;
    w.q = q;
    w.q_stride = L->fmap_after ? (size_t)(L->n_heads + 2 * L->n_kv_heads) * L->head_dim : (size_t)L->n_heads * L->head_dim;
    w.k_cache = L->k_cache;
    w.v_cache = L->v_cache;
    w.pos0 = dpos;
    w.gate = L->window_gate;
    w.B = B;
    w.n = n;
    w.Hq = L->n_heads;
    w.Hkv = L->n_kv_heads;
    w.d = L->head_dim;
    w.cap = L->cap;
    w.window = win;
    w.eps = L->eps;
    return orthros_attn_linear_window_bf16(&w, c->stream);
}

static int cuda_attn_linear_prefill(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L,
                                    const int *pos0, int B, int n)
{
    return linear_run(be, out, qkv, L, pos0, B, n, 0);
}

static int cuda_attn_linear_decode(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L,
                                   const int *pos0, int B, int n)
{
    return linear_run(be, out, qkv, L, pos0, B, n, 1);
}

/* The ranks of a cuda model are processes, one per GPU: NCCL sums their bf16 partial sums on this backend's
 * stream (engine/tp_nccl.c). */
static int cuda_allreduce_sum(orthros_backend *be, orthros_comm *comm, void *x, int n, int D)
{
    if (n <= 0) return 0;
    return orthros_comm_allreduce_bf16(comm, x, (size_t)n * (size_t)D, (void *)impl_of(be)->stream);
}

/* ---- the decode step with its inputs on the device (docs/kernels.md, "Whole-model decode") ---- */

/* One host-to-device copy through a pinned staging slot, straight into dst. */
static int cuda_upload_ints(orthros_backend *be, int32_t *dst, const int32_t *src, int n)
{
    if (n <= 0) return 0;
    cuda_impl *c = impl_of(be);
    stage_slot *s = NULL;
    int rc = stage_slot_take(c, n, &s);
    if (rc) return rc;
    memcpy(s->host, src, (size_t)n * sizeof(int));
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(dst, s->host, (size_t)n * sizeof(int), cudaMemcpyHostToDevice, c->stream));
    ORTHROS_CUDA_CHECK(cudaEventRecord(s->done, c->stream));
    return 0;
}

static int cuda_download_ints(orthros_backend *be, int32_t *host, const int32_t *src, int n)
{
    if (n <= 0) return 0;
    cuda_impl *c = impl_of(be);
    int rc = ids_reserve(c, n);
    if (rc) return rc;
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(c->ids_host, src, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost, c->stream));
    ORTHROS_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    memcpy(host, c->ids_host, (size_t)n * sizeof(int32_t));
    return 0;
}

static int cuda_embed_dev(orthros_backend *be, void *x, const int32_t *tokens, const void *table, int n, int D)
{
    orthros_embed_params p = {x, tokens, table, n, D};
    return orthros_embed_bf16(&p, impl_of(be)->stream);
}

static int cuda_argmax_dev(orthros_backend *be, int32_t *ids, const float *logits, int n, int V)
{
    orthros_argmax_params p = {ids, logits, n, V};
    return orthros_argmax_f32(&p, impl_of(be)->stream);
}

/* ---- fused decode ops: one GEMV kernel each where gemv.cu takes the shape, else their composition ---- */

static void gemv_params(orthros_gemv_params *p, void *out, int epilogue, const void *x, const void *norm_w,
                        const void *W, int n, int M, int K, float eps)
{
    memset(p, 0, sizeof *p);
    p->out = out, p->x = x, p->norm_w = norm_w, p->eps = eps, p->W = W, p->n = n, p->M = M, p->K = K;
    p->epilogue = epilogue;
}

/* The products the chain recorded, launched: one alone as gemv.cu's own launch, more as the chain kernel (the ring
 * chain with ORTHROS_DECODE_CHAIN_RING=1 where it takes every one of them). */
static int chain_flush(cuda_impl *c)
{
    const int n = c->chain_n;
    c->chain_n = 0;
    if (n == 0) return 0;
    if (n == 1) return orthros_gemv_bf16(&c->chain_ops[0], c->stream);
    int ring = c->chain_ring;
    for (int i = 0; ring && i < n; i++) ring = orthros_gemv_ring_chain_supported(&c->chain_ops[i]);
    return ring ? orthros_gemv_ring_chain_bf16(c->chain_ops, n, c->stream)
                : orthros_gemv_chain_bf16(c->chain_ops, n, c->stream);
}

/* A fused op's product: recorded while a chain is open and the chain takes it (`chainable`: its inputs stay valid
 * until the chain is launched), else launched after whatever the chain holds. */
static int run_gemv_chained(cuda_impl *c, orthros_gemv_params *p, int chainable)
{
    int rc = gemv_ready(c, p);
    if (rc) return rc;
    stamp_take(c, stamp_gemv_kind(c, p->epilogue), &p->stamps, &p->stamp_slot);
    if (c->next_pdl && !c->pdl) p->pdl = 2; /* after a decode attention (ORTHROS_DECODE_O_PDL) */
    c->next_pdl = 0;
    if (chainable && c->chain_open && orthros_gemv_chain_supported(p)) {
        if (c->chain_n == ORTHROS_GEMV_CHAIN_MAX && (rc = chain_flush(c))) return rc;
        c->chain_ops[c->chain_n++] = *p;
        return 0;
    }
    if ((rc = chain_flush(c))) return rc;
    return orthros_gemv_bf16(p, c->stream);
}

static int run_gemv(cuda_impl *c, orthros_gemv_params *p) { return run_gemv_chained(c, p, 1); }

/* backend.h decode_chain: with ORTHROS_DECODE_CHAIN=1 open records the fused ops' products, close launches them;
 * without it both do nothing. */
static int cuda_decode_chain(orthros_backend *be, int open)
{
    cuda_impl *c = impl_of(be);
    if (!c->chain) return 0;
    if (open) {
        c->chain_open = 1;
        return 0;
    }
    c->chain_open = 0;
    return chain_flush(c);
}

static int cuda_norm_gemm(orthros_backend *be, void *out, void *xn, const void *x, const void *norm_w, const void *W,
                          int n, int M, int K, float eps)
{
    orthros_gemv_params p;
    gemv_params(&p, out, ORTHROS_GEMV_STORE, x, norm_w, W, n, M, K, eps);
    if (orthros_gemv_supported(&p)) return run_gemv(impl_of(be), &p);
    int rc = chain_flush(impl_of(be));
    if (!rc) rc = cuda_rmsnorm(be, xn, x, norm_w, n, K, eps);
    return rc ? rc : cuda_gemm(be, out, xn, W, n, M, K);
}

static int cuda_gemm_add(orthros_backend *be, void *resid, void *tmp, const void *x, const void *W, int n, int M, int K)
{
    orthros_gemv_params p;
    gemv_params(&p, resid, ORTHROS_GEMV_ADD, x, NULL, W, n, M, K, 0.0f);
    if (!orthros_gemv_supported(&p))
        return orthros_error(ORTHROS_EUNSUPPORTED, "cuda gemm_add: %d rows of width %d (the GEMV takes 1-%d rows, widths "
                                                   "a multiple of 8)", n, K, ORTHROS_GEMV_MAX_ROWS);
    return run_gemv(impl_of(be), &p);
}

/* The decode step's attention and O (backend.h attn_decode_o): one launch where the decode attention's clusters
 * take the call with the product (orthros_attn_full_decode_o_supported), else the two ops. */
static int cuda_attn_decode_o(orthros_backend *be, void *resid, void *tmp, void *attn, const void *qkv,
                              const orthros_attn_layer *L, const int *pos0, int B, const void *Wo, int M)
{
    if (B <= 0) return 0;
    cuda_impl *c = impl_of(be);
    orthros_attn_full_decode_params p;
    int rc = attn_params(c, &p, attn, qkv, L, pos0, B, 1);
    if (rc) return rc;
    p.o_w = Wo, p.o_resid = resid, p.o_M = M;
    if (orthros_attn_full_decode_o_supported(&p)) {
        if ((rc = scratch_reserve(c, &c->ao_scratch, &c->ao_cap, orthros_attn_full_decode_o_scratch_bytes(&p), 1,
                                  "attention + O scratch")))
            return rc;
        p.o_scratch = c->ao_scratch, p.o_scratch_bytes = c->ao_cap;
        p.pdl = c->attn_pdl;
        p.early_rows = p.pdl && c->attn_early;
        return orthros_attn_full_decode_o_bf16(&p, c->stream);
    }
    p.o_w = NULL, p.o_resid = NULL, p.o_M = 0;
    if ((rc = attn_run(c, p))) return rc;
    return cuda_gemm_add(be, resid, tmp, attn, Wo, B, M, L->n_heads * L->head_dim);
}

static int cuda_norm_gemm_swiglu(orthros_backend *be, void *out, void *xn, void *gu, const void *x, const void *norm_w,
                                 const void *W_gu, int n, int F, int K, float eps)
{
    orthros_gemv_params p;
    gemv_params(&p, out, ORTHROS_GEMV_SWIGLU, x, norm_w, W_gu, n, 2 * F, K, eps);
    if (orthros_gemv_supported(&p)) return run_gemv(impl_of(be), &p);
    int rc = cuda_norm_gemm(be, gu, xn, x, norm_w, W_gu, n, 2 * F, K, eps); /* flushes the chain */
    return rc ? rc : cuda_swiglu(be, out, gu, n, F);
}

/* The decode step's MLP (backend.h norm_mlp_add): one launch where gemv.cu's MLP kernel takes the shape, else the two
 * fused ops. */
static int cuda_norm_mlp_add(orthros_backend *be, void *resid, void *xn, void *gu, void *act, void *tmp,
                             const void *norm_w, const void *W_gu, const void *W_down, int n, int F, int D, float eps)
{
    cuda_impl *c = impl_of(be);
    orthros_gemv_params p;
    gemv_params(&p, resid, ORTHROS_GEMV_MLP, resid, norm_w, W_gu, n, 2 * F, D, eps);
    p.W_down = W_down, p.mlp_ring = c->mlp == 2;
    if (orthros_gemv_supported(&p)) return run_gemv_chained(c, &p, 0);
    int rc = cuda_norm_gemm_swiglu(be, act, xn, gu, resid, norm_w, W_gu, n, F, D, eps);
    return rc ? rc : cuda_gemm_add(be, resid, tmp, act, W_down, n, D, F);
}

/* norm_qkv_rope's layers (backend.h): its rope writes the KV cache and nothing else. */
static int rope_cache_only(const orthros_attn_layer *L, const char *op)
{
    if (L->cap <= 0 || !L->k_cache || !L->v_cache || L->kraw_cache || L->q_rot || L->fmap_after)
        return orthros_error(ORTHROS_EINVAL, "%s: a layer whose rope writes more than its KV cache", op);
    return check_heads(L, op);
}

/* norm_qkv_rope once rope_cache_only has passed; pos_dev: NULL, or pos0 already in device memory (the layer's, or
 * staged by the caller), which the fused product then reads instead of staging pos0 again. */
static int norm_qkv_rope_run(orthros_backend *be, void *qkv, void *xn, const void *x, const void *norm_w,
                             const void *Wqkv, const orthros_attn_layer *L, const orthros_rope *rope, const int *pos0,
                             const int *pos_dev, int n, int K, float eps)
{
    cuda_impl *c = impl_of(be);
    const int M = (L->n_heads + 2 * L->n_kv_heads) * L->head_dim;
    int rc;
    orthros_gemv_params p;
    gemv_params(&p, qkv, ORTHROS_GEMV_ROPE, x, norm_w, Wqkv, n, M, K, eps);
    p.k_cache = L->k_cache, p.v_cache = L->v_cache;
    p.Hq = L->n_heads, p.Hkv = L->n_kv_heads, p.d = L->head_dim, p.cap = L->cap;
    if (!pos_dev) pos_dev = L->pos_dev;
    p.pos = pos_dev ? pos_dev : pos0; /* pos0 only for the check; staged below */
    if (L->head_dim / 2 <= ORTHROS_GEMV_MAX_HALF && orthros_gemv_supported(&p)) {
        memcpy(p.inv_freq, rope->inv_freq, (size_t)(L->head_dim / 2) * sizeof(float));
        if (c->kvpf_cap && n == 1 && L->window == 0 && pos0[0] > 0) {
            /* positions 0 .. pos0 - 1 (the bound under a captured step): slots 0 .. of [1][cap][Hkv][d] */
            const size_t keys = (size_t)(pos0[0] < L->cap ? pos0[0] : L->cap);
            const size_t bytes = keys * (size_t)L->n_kv_heads * (size_t)L->head_dim * 2;
            if (bytes <= c->kvpf_cap) p.l2_kv[0] = L->k_cache, p.l2_kv[1] = L->v_cache, p.l2_kv_bytes = bytes;
        }
        if (!pos_dev && (rc = stage_ints(c, pos0, n, &p.pos))) return rc;
        /* positions staged by a copy on the stream: launched now, not chained */
        return run_gemv_chained(c, &p, pos_dev == L->pos_dev && pos_dev != NULL);
    }
    if ((rc = cuda_norm_gemm(be, qkv, xn, x, norm_w, Wqkv, n, M, K, eps))) return rc; /* flushes the chain */
    return cuda_rope_cache_write(be, qkv, L, rope, pos0, n, 1, 0);
}

static int cuda_norm_qkv_rope(orthros_backend *be, void *qkv, void *xn, const void *x, const void *norm_w,
                              const void *Wqkv, const orthros_attn_layer *L, const orthros_rope *rope, const int *pos0,
                              int n, int K, float eps)
{
    int rc = rope_cache_only(L, "norm_qkv_rope");
    return rc ? rc : norm_qkv_rope_run(be, qkv, xn, x, norm_w, Wqkv, L, rope, pos0, NULL, n, K, eps);
}

/* The decode step's q/k/v projection and attention (backend.h norm_qkv_rope_attn): one launch where the decode
 * attention's clusters take the call with the projection (orthros_attn_full_decode_qkv_supported), else the two ops. */
static int cuda_norm_qkv_rope_attn(orthros_backend *be, void *attn, void *qkv, void *xn, const void *x,
                                   const void *norm_w, const void *Wqkv, const orthros_attn_layer *L,
                                   const orthros_rope *rope, const int *pos0, int B, int K, float eps)
{
    if (B <= 0) return 0;
    cuda_impl *c = impl_of(be);
    orthros_attn_full_decode_params p;
    int rc = rope_cache_only(L, "norm_qkv_rope_attn");
    if (!rc) rc = attn_params(c, &p, attn, qkv, L, pos0, B, 1);
    if (rc) return rc;
    p.qkv_w = Wqkv, p.qkv_x = x, p.qkv_norm_w = norm_w, p.qkv_K = K, p.qkv_eps = eps;
    if (orthros_attn_full_decode_qkv_supported(&p)) { /* (head_dim / 2 at most 64: qkv_inv_freq holds it) */
        memcpy(p.qkv_inv_freq, rope->inv_freq, (size_t)(L->head_dim / 2) * sizeof(float));
        attn_o_hint(c, &p);
        p.pdl = c->attn_pdl;
        stamp_take(c, "attn", &p.stamps, &p.stamp_slot);
        return orthros_attn_full_decode_qkv_bf16(&p, c->stream);
    }
    /* The two ops, on the positions and the checks attn_params has already made. */
    p.qkv_w = NULL, p.qkv_x = NULL, p.qkv_norm_w = NULL, p.qkv_K = 0;
    rc = norm_qkv_rope_run(be, qkv, xn, x, norm_w, Wqkv, L, rope, pos0, p.pos0, B, K, eps);
    return rc ? rc : attn_run(c, p);
}

/* ORTHROS_DECODE_HEAD8 (the default; 0 turns it off): the ids of the head through its int8 copy (kernels/head8.h;
 * no logits), made at the first call for this W, which is never captured (a decode step runs uncaptured before its
 * capture); 1 when it ran, 0 when it does not take the call (the caller runs the bf16 head; where the copy cannot be
 * made, for want of memory, from then on). */
static int head8_run(cuda_impl *c, int32_t *ids, const void *x, const void *norm_w, const void *W, int n, int V, int D,
                     float eps, int *rc)
{
    *rc = 0;
    if (!c->head8 || !orthros_head8_supported(n, V, D) || ((uintptr_t)x | (uintptr_t)norm_w | (uintptr_t)W) % 16)
        return 0;
    if (!orthros_head8_matches(c->h8, W, V, D)) {
        if (c->capturing) return 0; /* a head first met inside a capture: the bf16 head, captured as it is */
        if ((*rc = chain_flush(c))) return 1;
        if (c->h8) cudaStreamSynchronize(c->stream), orthros_head8_destroy(c->h8), c->h8 = NULL;
        if (orthros_head8_create(&c->h8, W, V, D, c->stream)) { /* no room: the bf16 head from now on, said once */
            fprintf(stderr, "orthros: no int8 copy of the decode head (%s); the bf16 head runs\n",
                    orthros_last_error());
            c->head8 = 0;
            return 0;
        }
    }
    if ((*rc = chain_flush(c))) return 1;
    orthros_head8_params hp;
    memset(&hp, 0, sizeof hp);
    hp.ids = ids, hp.logits = NULL, hp.x = x, hp.norm_w = norm_w, hp.eps = eps, hp.n = n;
    hp.num_sms = c->num_sms, hp.pdl = c->pdl || c->pdl_late, hp.depth = c->head8_depth, hp.dp4a = c->head8_dp4a;
    hp.one_launch = c->head8_one, hp.no_next_pf = !c->head8_next_pf, hp.even = c->head8_even;
    c->next_pdl = 0;
    *rc = orthros_head8_argmax(c->h8, &hp, c->stream);
    return 1;
}

static int cuda_norm_logits_argmax(orthros_backend *be, int32_t *ids, float *logits, void *xn, const void *x,
                                   const void *norm_w, const void *W, int n, int V, int D, float eps)
{
    orthros_gemv_params p;
    gemv_params(&p, logits, ORTHROS_GEMV_ARGMAX, x, norm_w, W, n, V, D, eps);
    p.ids = ids;
    if (orthros_gemv_supported(&p)) return run_gemv(impl_of(be), &p);
    int rc = chain_flush(impl_of(be));
    if (!rc) rc = cuda_rmsnorm(be, xn, x, norm_w, n, D, eps);
    if (!rc) rc = cuda_logits(be, logits, xn, W, n, V, D);
    return rc ? rc : cuda_argmax_dev(be, ids, logits, n, V);
}

/* ids only: the int8 copy's head where it takes the call (head8_run; its approximate logits left in the scratch),
 * else the exact head. */
static int cuda_norm_argmax(orthros_backend *be, int32_t *ids, float *logits, void *xn, const void *x, const void *norm_w,
                            const void *W, int n, int V, int D, float eps)
{
    int rc8 = 0;
    if (head8_run(impl_of(be), ids, x, norm_w, W, n, V, D, eps, &rc8)) return rc8;
    if (!impl_of(be)->head8) be->head_int8_rows = 0; /* no copy could be made: the floor counts the bf16 head again */
    return cuda_norm_logits_argmax(be, ids, logits, xn, x, norm_w, W, n, V, D, eps);
}

/* The weights the step's next product reads (backend.h, l2_next): with ORTHROS_DECODE_L2PF the hint the gemv and
 * decode-attention launches carry until the next one, capped at ORTHROS_DECODE_L2PF_MB. */
static void cuda_l2_next(orthros_backend *be, const void *W, size_t bytes)
{
    cuda_impl *c = impl_of(be);
    c->hint_w = W && bytes ? W : NULL, c->hint_bytes = c->hint_w ? bytes : 0;
    c->l2_next = c->l2pf && W && bytes ? W : NULL;
    c->l2_next_bytes = c->l2_next ? (bytes < c->l2pf_cap ? bytes : c->l2pf_cap) : 0;
}

/* ORTHROS_DECODE_L2PF (0, 1, 2; unset 0) and ORTHROS_DECODE_L2PF_MB (1-1024; unset 16). */
/* A switch from 0 to max (at most 99; one or two digits) from the environment variable `name` into *out; unset or
 * empty leaves *out as it is; anything else is refused naming the variable. */
static int env_digit(const char *name, int max, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    const size_t len = strlen(v);
    const int ok = len <= 2 && v[0] >= '0' && v[0] <= '9' && (len == 1 || (v[1] >= '0' && v[1] <= '9' && v[0] != '0'));
    const int x = ok ? atoi(v) : -1;
    if (x < 0 || x > max) return orthros_error(ORTHROS_EINVAL, "%s=%.40s: a number from 0 to %d", name, v, max);
    *out = x;
    return 0;
}

/* A whole number from lo to hi in the environment variable `name` into *out (left as it is when unset or empty);
 * ORTHROS_EINVAL naming the variable and the unit otherwise. */
static int env_whole(const char *name, long lo, long hi, const char *unit, long *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end = NULL;
    const long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi)
        return orthros_error(ORTHROS_EINVAL, "%s=%.40s: a whole number of %s, %ld-%ld", name, v, unit, lo, hi);
    *out = x;
    return 0;
}

static int select_l2pf(cuda_impl *c)
{
    long mb = 16;
    c->l2pf = 0;
    int rc = env_digit("ORTHROS_DECODE_L2PF", 2, &c->l2pf);
    if (rc || (rc = env_whole("ORTHROS_DECODE_L2PF_MB", 1, 1024, "MiB", &mb))) return rc;
    c->l2pf_cap = (size_t)mb << 20;
    return 0;
}

/* ---- captured work: CUDA graphs of the backend's stream ---- */

static int cuda_graph_begin(orthros_backend *be)
{
    cuda_impl *c = impl_of(be);
    if (c->capturing) return orthros_error(ORTHROS_EINVAL, "cuda: a capture is already open");
    /* Thread-local: a call of this thread that would wait or allocate fails the capture instead of passing. */
    ORTHROS_CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    c->capturing = 1;
    c->stamp_first = c->stamp_next;
    return 0;
}

static int cuda_graph_end(orthros_backend *be, void **graph)
{
    cuda_impl *c = impl_of(be);
    *graph = NULL;
    if (!c->capturing) return orthros_error(ORTHROS_EINVAL, "cuda: no capture is open");
    c->capturing = 0;
    cudaGraph_t g = NULL;
    cudaError_t err = cudaStreamEndCapture(c->stream, &g);
    if (err != cudaSuccess || !g) {
        (void)cudaGetLastError();
        if (g) cudaGraphDestroy(g);
        return orthros_error(ORTHROS_EDEVICE, "cuda: the decode step could not be captured: %s",
                             err != cudaSuccess ? cudaGetErrorString(err) : "no graph");
    }
    cudaGraphExec_t exec = NULL;
    err = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return orthros_error(ORTHROS_EDEVICE, "cuda: the captured decode step could not be instantiated: %s",
                             cudaGetErrorString(err));
    }
    *graph = (void *)exec;
    if (c->stamps && c->stamp_next > c->stamp_first && c->n_stamp_graphs < STAMP_GRAPHS) {
        c->stamp_graph[c->n_stamp_graphs].exec = exec, c->stamp_graph[c->n_stamp_graphs].first = c->stamp_first;
        c->stamp_graph[c->n_stamp_graphs].n = c->stamp_next - c->stamp_first;
        c->stamp_graph[c->n_stamp_graphs++].replays = 0;
    }
    return 0;
}

static int cuda_graph_launch(orthros_backend *be, void *graph)
{
    cuda_impl *c = impl_of(be);
    for (int i = 0; i < c->n_stamp_graphs; i++)
        if (c->stamp_graph[i].exec == graph && ++c->stamp_graph[i].replays == STAMP_REPLAY) return stamps_replay(c, i);
    ORTHROS_CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)graph, c->stream));
    return 0;
}

static void cuda_graph_free(orthros_backend *be, void *graph)
{
    cuda_impl *c = impl_of(be);
    for (int i = 0; i < c->n_stamp_graphs; i++)
        if (c->stamp_graph[i].exec == graph) c->stamp_graph[i].exec = NULL; /* its address may come back */
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static unsigned long cuda_graph_epoch(orthros_backend *be) { return impl_of(be)->epoch; }

int orthros_cuda_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

int orthros_cuda_set_device(int device)
{
    ORTHROS_CUDA_CHECK(cudaSetDevice(device));
    return 0;
}

int orthros_cuda_available(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count > 0;
}

static int fill_info(orthros_device_info *info, int dev)
{
    struct cudaDeviceProp prop;
    ORTHROS_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    snprintf(info->name, sizeof info->name, "%.127s", prop.name);
    info->sm_count = prop.multiProcessorCount;
    info->mem_total = prop.totalGlobalMem;
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    /* Clock attributes may be unavailable on some drivers; they stay 0 then. */
    if (cudaDeviceGetAttribute(&info->clock_mhz, cudaDevAttrClockRate, dev) == cudaSuccess) info->clock_mhz /= 1000;
    else (void)cudaGetLastError();
    if (cudaDeviceGetAttribute(&info->mem_clock_mhz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess)
        info->mem_clock_mhz /= 1000;
    else
        (void)cudaGetLastError();
    ORTHROS_CUDA_CHECK(cudaDriverGetVersion(&info->driver_version));
    ORTHROS_CUDA_CHECK(cudaRuntimeGetVersion(&info->runtime_version));
    /* The PCI address names the same GPU to NVML, whose numbering can differ from CUDA's. */
    if (cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        info->pci_bus_id[0] = '\0';
    }
    /* The UUID as nvidia-smi -L and NVML write it: it names the GPU on any host, whatever the bus numbering. */
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(info->uuid, sizeof info->uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    orthros_device_info_set_host(info, "cuda");
    return 0;
}

/* set(v) for the value v of the environment variable env; its refusal names the variable. */
static int set_from_env_value(const char *env, int (*set)(int), int v)
{
    int rc = set(v);
    if (rc) {
        char why[256];
        snprintf(why, sizeof why, "%s", orthros_last_error());
        return orthros_error(rc, "%s=%d: %s", env, v, why);
    }
    return 0;
}

/* A kernel version from the environment variable env (digits alone, 1-99; unset or empty: 0, the module's default)
 * given to set, which refuses the versions its module does not keep; an error names the variable. */
static int set_version_from_env(const char *env, int (*set)(int))
{
    const char *text = getenv(env);
    int v = 0;
    if (text && *text) {
        char *end;
        long x = strtol(text, &end, 10);
        if (*end || x < 1 || x > 99 || text[0] < '0' || text[0] > '9')
            return orthros_error(ORTHROS_EINVAL, "%s=%.40s is not a kernel version number", env, text);
        v = (int)x;
    }
    return set_from_env_value(env, set, v);
}

/* The attention kernel versions: ORTHROS_ATTN_PREFILL_VERSION, ORTHROS_ATTN_DECODE_VERSION and
 * ORTHROS_LINEAR_PREFILL_VERSION in the environment choose a kept version of each (to compare versions end to
 * end, or to try one not yet the default); unset, the defaults (0: the kernel module's default for this binary and
 * device, e.g. prefill v5 with sm_90a code on a 9.0 device, else v4). Applied process-wide at backend creation
 * and written into info->kernels for result files, with the number actually in use. */
static int select_kernels(orthros_device_info *info)
{
    static const struct {
        const char *env, *tag;
        int (*set)(int);
        int (*get)(void);
    } k[3] = {{"ORTHROS_ATTN_PREFILL_VERSION", "attn_prefill", orthros_attn_full_prefill_set_version,
               orthros_attn_full_prefill_version},
              {"ORTHROS_ATTN_DECODE_VERSION", "attn_decode", orthros_attn_full_decode_set_version,
               orthros_attn_full_decode_version},
              {"ORTHROS_LINEAR_PREFILL_VERSION", "linear_prefill", orthros_attn_linear_prefill_set_version,
               orthros_attn_linear_prefill_version}};
    size_t used = 0;
    info->kernels[0] = '\0';
    for (int i = 0; i < 3; i++) {
        int rc = set_version_from_env(k[i].env, k[i].set);
        if (rc) return rc;
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, "%s%s v%d", i ? ", " : "", k[i].tag,
                                 k[i].get());
        if (used >= sizeof info->kernels) used = sizeof info->kernels - 1;
    }
    return 0;
}

/* The fused step up to batch 8: at 16 the plain ops were faster (H200, 8B shape, 4K cache: 7.68 ms a step against
 * 9.28 fused; data/results/h200-2026-12-01-decode-modes), the GEMV at two n-tiles being the reason. With gemv.cu's
 * version 5 or 6 (their ring kernels at batch 9-16) the fused step runs up to batch 16. */
#define CUDA_FUSED_MAX_ROWS 8
#define CUDA_FUSED_MAX_ROWS_V5 16

/* The decode modes (orthros_decode_env; cuda's default: FUSED + GRAPHS) named after the kernel versions, so that
 * result files of the modes differ and --resume refuses to mix them: ", gemv v3" (", gemv v3+pdl") when gemv.cu runs
 * (ORTHROS_GEMV or the fused ops), ", decode fused+graphs" (or either alone) and ", gemv pdl" when the dependent
 * launch is asked for alone, ", chain" with ORTHROS_DECODE_CHAIN=1 (0 or unset: off; the fused products between
 * decode_chain's open and close as one launch), ", chain ring" with ORTHROS_DECODE_CHAIN_RING=1 (the same launch
 * with the products streamed through a shared-memory ring; sm_90, else the plain chain is not turned on by it),
 * ", attn+o" with ORTHROS_DECODE_ATTN_O=1, ", qkv+attn" with ORTHROS_DECODE_QKV_ATTN=1, ", mlp" (", mlp ring") with
 * ORTHROS_DECODE_MLP=1 (2) in the fused mode; on sm_90 by default (0 turns each off) ", attn pdl"
 * (ORTHROS_DECODE_ATTN_PDL) and ", gemv pdl late" (ORTHROS_DECODE_PDL_LATE; ", gemv pdl late 2" with 2; ", lead N"
 * with ORTHROS_DECODE_PDL_LEAD=N).
 * ORTHROS_GEMV_VERSION (1 to 6; unset: 3) chooses gemv.cu's version, process-wide, as the attention kernels'
 * variables do (set_version_from_env); ORTHROS_GEMV_EARLY (0-63; unset: ORTHROS_GEMV_EARLY_DEFAULT) v3's early loads
 * (orthros_gemv_set_early), ", gemv early N" where not the default; ORTHROS_GEMV_KW (1, 2 or 4; unset or 0: the
 * plan's) v3's slices a group forced (orthros_gemv_set_kw), ", gemv kw N"; ORTHROS_GEMV_FILL (1-3; unset:
 * ORTHROS_GEMV_FILL_DEFAULT) how v3's plan chooses its slices a group (orthros_gemv_set_fill), ", gemv fill N" where
 * not the default; ORTHROS_GEMV_BALANCE (0 or 1; unset: ORTHROS_GEMV_BALANCE_DEFAULT) a product of several waves on
 * the fewest blocks that keep them (orthros_gemv_set_balance), ", gemv balance N" where not the default;
 * ORTHROS_GEMV_CARVEOUT (0-100; unset: none asked) the preferred shared-memory carveout of gemv.cu's launches, a
 * percent of the largest shared memory (orthros_gemv_set_carveout), ", gemv carveout N";
 * ORTHROS_GEMV_QKV_BLOCKS (0-4096; unset or 0: the plan's) the q/k/v product's grid capped, its dependent launched
 * as it starts (orthros_gemv_set_qkv_blocks), ", qkv blocks N"; ORTHROS_ATTN_DECODE_REGS (0 or 160) v8 held to 160
 * registers (orthros_attn_full_decode_set_regs), ", attn regs 160"; ORTHROS_ATTN_DECODE_LEAN (0 or 1; unset:
 * ORTHROS_ATTN_DECODE_LEAN_DEFAULT) v8's softmax in its lean form or as written (orthros_attn_full_decode_set_lean),
 * ", attn lean N" where not the default; ORTHROS_ATTN_DECODE_PUSH (0 or 1) v8's merge pushed to each cluster's rank 0
 * (orthros_attn_full_decode_set_push), ", attn push"; ORTHROS_ATTN_DECODE_RELAXED (0 or 1; unset:
 * ORTHROS_ATTN_DECODE_RELAXED_DEFAULT) v8's barriers that only keep shared memory alive arriving relaxed or with
 * cluster.sync's release (orthros_attn_full_decode_set_relaxed), ", attn relaxed N" where not the default;
 * ORTHROS_ATTN_DECODE_CLAIM (keys; unset: ORTHROS_ATTN_DECODE_CLAIM_DEFAULT, 0 never) v8's tiles claimed a stage in
 * calls of at least that many keys (orthros_attn_full_decode_set_claim), ", attn claim N" where not the default. */
static int select_decode(cuda_impl *c, orthros_device_info *info, unsigned *modes)
{
    int rc = orthros_decode_env(ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, modes, &c->gemv, &c->pdl, &c->chain);
    if (rc || (rc = set_version_from_env("ORTHROS_GEMV_VERSION", orthros_gemv_set_version))) return rc;
    if ((rc = orthros_gemv_check_env()) || (rc = select_l2pf(c))) return rc;
    const int sm90 = orthros_cuda_sm90_available() ? 1 : 0;
    c->attn_o = 0, c->qkv_attn = 0, c->o_pdl = -1, c->attn_pdl = sm90, c->mlp = 0, c->chain_ring = 0;
    c->attn_early = 0;
    c->pdl_late = sm90, c->pdl_lead = 0, c->head8 = 1, c->head8_dp4a = 1, c->head8_one = 0;
    c->head8_next_pf = 1, c->head8_even = 0;
    if ((rc = env_digit("ORTHROS_DECODE_ATTN_PDL", 1, &c->attn_pdl)) ||
        (rc = env_digit("ORTHROS_DECODE_ATTN_EARLY", 1, &c->attn_early)) ||
        (rc = env_digit("ORTHROS_DECODE_PDL_LATE", 2, &c->pdl_late)) ||
        (rc = env_digit("ORTHROS_DECODE_PDL_LEAD", 3, &c->pdl_lead)) ||
        (rc = env_digit("ORTHROS_DECODE_ATTN_O", 1, &c->attn_o)) ||
        (rc = env_digit("ORTHROS_DECODE_O_PDL", 3, &c->o_pdl)) ||
        (rc = env_digit("ORTHROS_DECODE_QKV_ATTN", 1, &c->qkv_attn)) ||
        (rc = env_digit("ORTHROS_DECODE_MLP", 2, &c->mlp)) ||
        (rc = env_digit("ORTHROS_DECODE_HEAD8", 1, &c->head8)) ||
        (rc = env_digit("ORTHROS_HEAD8_DP4A", 1, &c->head8_dp4a)) ||
        (rc = env_digit("ORTHROS_HEAD8_ONE_LAUNCH", 1, &c->head8_one)) ||
        (rc = env_digit("ORTHROS_HEAD8_NEXT_PF", 1, &c->head8_next_pf)) ||
        (rc = env_digit("ORTHROS_HEAD8_EVEN", 1, &c->head8_even)) ||
        (rc = env_digit("ORTHROS_DECODE_CHAIN_RING", 1, &c->chain_ring)) ||
        (rc = env_digit("ORTHROS_GEMM_LT", 1, &c->gemm_lt)))
        return rc;
    int early = ORTHROS_GEMV_EARLY_DEFAULT, kw = 0, fill = ORTHROS_GEMV_FILL_DEFAULT;
    int balance = ORTHROS_GEMV_BALANCE_DEFAULT;
    long qkv_blocks = 0, attn_regs = 0; /* the setters refuse what their ranges let through (registers: 0 or 160) */
    long carveout = -1;
    int attn_lean = ORTHROS_ATTN_DECODE_LEAN_DEFAULT, attn_push = 0, attn_relaxed = ORTHROS_ATTN_DECODE_RELAXED_DEFAULT;
    long attn_claim = ORTHROS_ATTN_DECODE_CLAIM_DEFAULT;
    long head8_depth = 4, kvpf_mb = 0; /* head8: fastest 4 deep with the integer screen (an H100, 2026-12-05) */
    if ((rc = env_whole("ORTHROS_HEAD8_DEPTH", 2, 4, "chunk steps", &head8_depth)) ||
        (rc = env_whole("ORTHROS_DECODE_KVPF_MB", 0, 1024, "MiB", &kvpf_mb)))
        return rc;
    c->head8_depth = (int)head8_depth;
    c->kvpf_cap = (size_t)kvpf_mb << 20;
    if ((rc = env_whole("ORTHROS_GEMV_QKV_BLOCKS", 0, 4096, "blocks", &qkv_blocks)) ||
        (rc = set_from_env_value("ORTHROS_GEMV_QKV_BLOCKS", orthros_gemv_set_qkv_blocks, (int)qkv_blocks)) ||
        (rc = env_whole("ORTHROS_ATTN_DECODE_REGS", 0, 160, "registers", &attn_regs)) ||
        (rc = set_from_env_value("ORTHROS_ATTN_DECODE_REGS", orthros_attn_full_decode_set_regs, (int)attn_regs)) ||
        (rc = env_digit("ORTHROS_ATTN_DECODE_LEAN", 1, &attn_lean)) ||
        (rc = set_from_env_value("ORTHROS_ATTN_DECODE_LEAN", orthros_attn_full_decode_set_lean, attn_lean)) ||
        (rc = env_digit("ORTHROS_ATTN_DECODE_PUSH", 1, &attn_push)) ||
        (rc = set_from_env_value("ORTHROS_ATTN_DECODE_PUSH", orthros_attn_full_decode_set_push, attn_push)) ||
        (rc = env_digit("ORTHROS_ATTN_DECODE_RELAXED", 1, &attn_relaxed)) ||
        (rc = set_from_env_value("ORTHROS_ATTN_DECODE_RELAXED", orthros_attn_full_decode_set_relaxed, attn_relaxed)) ||
        (rc = env_whole("ORTHROS_ATTN_DECODE_CLAIM", 0, 1L << 30, "keys", &attn_claim)) ||
        (rc = set_from_env_value("ORTHROS_ATTN_DECODE_CLAIM", orthros_attn_full_decode_set_claim, (int)attn_claim)))
        return rc;
    if ((rc = env_digit("ORTHROS_GEMV_EARLY", 63, &early)) ||
        (rc = set_from_env_value("ORTHROS_GEMV_EARLY", orthros_gemv_set_early, early)) ||
        (rc = env_digit("ORTHROS_GEMV_KW", 4, &kw)) ||
        (rc = set_from_env_value("ORTHROS_GEMV_KW", orthros_gemv_set_kw, kw)) ||
        (rc = env_digit("ORTHROS_GEMV_FILL", 3, &fill)) ||
        (rc = set_from_env_value("ORTHROS_GEMV_FILL", orthros_gemv_set_fill, fill)) ||
        (rc = env_digit("ORTHROS_GEMV_BALANCE", 1, &balance)) ||
        (rc = set_from_env_value("ORTHROS_GEMV_BALANCE", orthros_gemv_set_balance, balance)) ||
        (rc = env_whole("ORTHROS_GEMV_CARVEOUT", 0, 100, "percent", &carveout)) ||
        (rc = set_from_env_value("ORTHROS_GEMV_CARVEOUT", orthros_gemv_set_carveout, (int)carveout)))
        return rc;
    c->chain_ring = c->chain_ring && sm90; /* the ring chain is sm_90's */
    if (c->chain_ring) c->chain = 1;
    if (c->mlp == 2 && !sm90) c->mlp = 1; /* the ring kernel is sm_90's */
    c->attn_pdl = c->attn_pdl && sm90;
    c->attn_early = c->attn_early && c->attn_pdl;
    if (c->chain) c->attn_o = 0, c->mlp = 0; /* the chain records O and the MLP's products with the products after them */
    if (c->chain || c->attn_o) c->qkv_attn = 0; /* the chain records q/k/v; O's fused form is the other cluster kernel */
    c->pdl_late = sm90 && !c->chain && !c->pdl ? c->pdl_late : 0; /* ORTHROS_DECODE_PDL=1 keeps its early launches */
    /* O after the attention: with the late launches a dependent one that asks nothing into L2 (o_pdl 0, O's pdl 3;
     * asking all of O's weights, 1, measured 2% slower at 8B 4K), without them one that asks (1) on sm_90 */
    const int o_auto = c->pdl_late ? 0 : sm90;
    if (c->o_pdl < 0) c->o_pdl = o_auto;
    size_t used = strlen(info->kernels);
    const int runs = c->gemv || (*modes & ORTHROS_DECODE_FUSED);
    if (runs)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv v%d%s",
                                 orthros_gemv_version(), c->pdl ? "+pdl" : "");
    else if (c->pdl)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv pdl");
    if (used < sizeof info->kernels && runs && early != ORTHROS_GEMV_EARLY_DEFAULT)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv early %d", early);
    if (used < sizeof info->kernels && runs && kw)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv kw %d", kw);
    if (used < sizeof info->kernels && runs && fill != ORTHROS_GEMV_FILL_DEFAULT)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv fill %d", fill);
    if (used < sizeof info->kernels && runs && balance != ORTHROS_GEMV_BALANCE_DEFAULT)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv balance %d", balance);
    if (used < sizeof info->kernels && runs && carveout >= 0)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv carveout %ld", carveout);
    if (used < sizeof info->kernels && runs && qkv_blocks)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", qkv blocks %ld", qkv_blocks);
    if (used < sizeof info->kernels && attn_regs)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn regs %ld", attn_regs);
    if (used < sizeof info->kernels && attn_lean != ORTHROS_ATTN_DECODE_LEAN_DEFAULT)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn lean %d", attn_lean);
    if (used < sizeof info->kernels && attn_push)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn push");
    if (used < sizeof info->kernels && attn_relaxed != ORTHROS_ATTN_DECODE_RELAXED_DEFAULT)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn relaxed %d", attn_relaxed);
    if (used < sizeof info->kernels && attn_claim != ORTHROS_ATTN_DECODE_CLAIM_DEFAULT)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn claim %ld", attn_claim);
    if (used < sizeof info->kernels && c->l2pf)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", l2pf%d %zuM", c->l2pf,
                                 c->l2pf_cap >> 20);
    if (used < sizeof info->kernels && c->chain)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", chain%s",
                                 c->chain_ring ? " ring" : "");
    if (used < sizeof info->kernels && c->attn_o && (*modes & ORTHROS_DECODE_FUSED))
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn+o");
    if (used < sizeof info->kernels && c->qkv_attn && (*modes & ORTHROS_DECODE_FUSED))
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", qkv+attn");
    if (used < sizeof info->kernels && c->mlp && (*modes & ORTHROS_DECODE_FUSED))
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", mlp%s", c->mlp == 2 ? " ring" : "");
    if (used < sizeof info->kernels && c->head8 && (*modes & ORTHROS_DECODE_FUSED))
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", head int8%s%s%s%s%s",
                                 c->head8_dp4a ? " dp4a" : "", c->head8_depth == 3 ? " d3" : c->head8_depth == 4 ? " d4" : "",
                                 c->head8_one ? " one launch" : "", c->head8_next_pf ? "" : " no next pf",
                                 c->head8_even ? " even" : "");
    if (used < sizeof info->kernels && c->kvpf_cap && (*modes & ORTHROS_DECODE_FUSED))
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", kv l2 %zuM", c->kvpf_cap >> 20);
    if (used < sizeof info->kernels && c->attn_pdl)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", attn pdl%s",
                                 c->attn_early ? " early" : "");
    if (used < sizeof info->kernels && c->pdl_late)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemv pdl late%s",
                                 c->pdl_late == 2 ? " 2" : "");
    if (used < sizeof info->kernels && c->pdl_late && c->pdl_lead)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", lead %d", c->pdl_lead);
    if (used < sizeof info->kernels && c->gemm_lt)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", gemm lt");
    if (used < sizeof info->kernels && c->o_pdl != o_auto)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, ", o pdl%d", c->o_pdl);
    if (used < sizeof info->kernels && c->o_pdl == 3 && !c->l2pf)
        used += (size_t)snprintf(info->kernels + used, sizeof info->kernels - used, " %zuM", c->l2pf_cap >> 20);
    if (used < sizeof info->kernels && *modes)
        snprintf(info->kernels + used, sizeof info->kernels - used, ", decode %s%s%s",
                 *modes & ORTHROS_DECODE_FUSED ? "fused" : "",
                 (*modes & ORTHROS_DECODE_FUSED) && (*modes & ORTHROS_DECODE_GRAPHS) ? "+" : "",
                 *modes & ORTHROS_DECODE_GRAPHS ? "graphs" : "");
    return 0;
}

static int create_impl(cuda_impl *c, orthros_device_info *info, unsigned *modes)
{
    int dev = 0;
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&c->num_sms, cudaDevAttrMultiProcessorCount, dev));
    int rc = fill_info(info, dev);
    if (!rc) rc = select_kernels(info);
    if (!rc) rc = select_decode(c, info, modes);
    if (!rc) rc = stamps_init(c);
    if (rc) return rc;
    ORTHROS_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&c->cublas));
    CUBLAS_CHECK(cublasSetStream(c->cublas, c->stream));
    /* Keep fp32 accumulation end to end: no reduced-precision split-K reductions. */
    CUBLAS_CHECK(cublasSetMathMode(c->cublas, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    ORTHROS_CUDA_CHECK(cudaMalloc(&c->cublas_ws, CUBLAS_WS_BYTES));
    CUBLAS_CHECK(cublasSetWorkspace(c->cublas, c->cublas_ws, CUBLAS_WS_BYTES));
    if (c->gemm_lt && (rc = orthros_gemm_lt_create(&c->lt, c->cublas_ws, CUBLAS_WS_BYTES))) return rc;
    for (int i = 0; i < STAGE_SLOTS; i++) {
        stage_slot *s = &c->slots[i];
        ORTHROS_CUDA_CHECK(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
        ORTHROS_CUDA_CHECK(cudaMallocHost((void **)&s->host, STAGE_INIT_INTS * sizeof(int)));
        ORTHROS_CUDA_CHECK(cudaMalloc((void **)&s->dev, STAGE_INIT_INTS * sizeof(int)));
        s->cap = STAGE_INIT_INTS;
    }
    ORTHROS_CUDA_CHECK(cudaMalloc((void **)&c->ids_dev, 256 * sizeof(int32_t)));
    ORTHROS_CUDA_CHECK(cudaMallocHost((void **)&c->ids_host, 256 * sizeof(int32_t)));
    c->ids_cap = 256;
    ORTHROS_CUDA_CHECK(cudaMalloc(&c->work, WORK_INIT_BYTES));
    c->work_cap = WORK_INIT_BYTES;
    ORTHROS_CUDA_CHECK(cudaMalloc((void **)&c->read_sink, (size_t)orthros_read_blocks(c->num_sms) * sizeof *c->read_sink));
    for (int i = 0; i < ORTHROS_TIMER_SLOTS; i++) ORTHROS_CUDA_CHECK(cudaEventCreate(&c->marks[i]));
    return 0;
}

static int cuda_timer_mark(orthros_backend *be, int slot)
{
    if (slot < 0 || slot >= ORTHROS_TIMER_SLOTS) return orthros_error(ORTHROS_EINVAL, "timer slot %d", slot);
    cuda_impl *c = impl_of(be);
    ORTHROS_CUDA_CHECK(cudaEventRecord(c->marks[slot], c->stream));
    return 0;
}

static int cuda_timer_seconds(orthros_backend *be, int a, int b, double *seconds)
{
    if (a < 0 || b < 0 || a >= ORTHROS_TIMER_SLOTS || b >= ORTHROS_TIMER_SLOTS)
        return orthros_error(ORTHROS_EINVAL, "timer slots %d, %d", a, b);
    cuda_impl *c = impl_of(be);
    float ms = 0.0f;
    ORTHROS_CUDA_CHECK(cudaEventSynchronize(c->marks[b]));
    ORTHROS_CUDA_CHECK(cudaEventElapsedTime(&ms, c->marks[a], c->marks[b]));
    *seconds = 1e-3 * (double)ms;
    return 0;
}

int orthros_backend_cuda_create(orthros_backend **out)
{
    *out = NULL;
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        /* Without a GPU (or its driver) the runtime says "driver version is insufficient": say what it means. */
        if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice || count == 0)
            return orthros_error(ORTHROS_EDEVICE, "no GPU found (the CUDA runtime reports: %s); use --device cpu",
                                 err != cudaSuccess ? cudaGetErrorString(err) : "no devices");
        return orthros_error(ORTHROS_EDEVICE, "no usable GPU: %s", cudaGetErrorString(err));
    }
    orthros_backend *be = (orthros_backend *)calloc(1, sizeof *be);
    cuda_impl *c = (cuda_impl *)calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return orthros_error(ORTHROS_ENOMEM, "out of host memory creating the cuda backend");
    }
    be->impl = c;
    unsigned modes = 0;
    int rc = create_impl(c, &be->info, &modes);
    if (rc) {
        cuda_destroy(be);
        return rc;
    }
    be->name = "cuda";
    be->caps = ORTHROS_CAP_GPU;
    /* 16384: on the H200 the Llama-3.2-1B shape prefills 128K tokens as orthros in 0.466 / 0.458 / 0.450 / 0.447 s
     * with chunks of 4K / 8K / 16K / 32K (transformer 3.05 / 3.04 / 3.03 / 3.02 s): fewer launches, larger GEMMs
     * and linear-attention calls (data/results/h200-2026-12-01-linear-v6/chunk). 32K saves 0.7% more for twice
     * the activations. */
    be->default_chunk = 16384;
    be->decode_modes = modes;
    be->act_size = sizeof(bf16);
    be->destroy = cuda_destroy;
    be->alloc = cuda_alloc;
    be->free = cuda_free;
    be->zero = cuda_zero;
    be->mem_info = cuda_mem_info;
    be->sync = cuda_sync;
    be->upload = cuda_upload;
    be->fill_random = cuda_fill_random;
    be->fill = cuda_fill;
    be->copy = cuda_copy;
    be->read = cuda_read;
    be->download_f32 = cuda_download_f32;
    be->timer_mark = cuda_timer_mark;
    be->timer_seconds = cuda_timer_seconds;
    be->range_push = cuda_range_push;
    be->range_pop = cuda_range_pop;
    be->l2_next = cuda_l2_next;
    be->decode_chain = cuda_decode_chain;
    be->embed = cuda_embed;
    be->rmsnorm = cuda_rmsnorm;
    be->add_rmsnorm = cuda_add_rmsnorm;
    be->gemm = cuda_gemm;
    be->swiglu = cuda_swiglu;
    be->logits = cuda_logits;
    be->argmax = cuda_argmax;
    be->rope_cache_write = cuda_rope_cache_write;
    be->attn_full_prefill = attn_full;
    be->attn_full_decode = attn_full;
    be->attn_linear_prefill = cuda_attn_linear_prefill;
    be->attn_linear_decode = cuda_attn_linear_decode;
    be->allreduce_sum = cuda_allreduce_sum;
    be->upload_ints = cuda_upload_ints;
    be->download_ints = cuda_download_ints;
    be->embed_dev = cuda_embed_dev;
    be->argmax_dev = cuda_argmax_dev;
    be->fused_max_rows = orthros_gemv_version() >= 5 ? CUDA_FUSED_MAX_ROWS_V5 : CUDA_FUSED_MAX_ROWS;
    be->norm_gemm = cuda_norm_gemm;
    be->gemm_add = cuda_gemm_add;
    be->norm_gemm_swiglu = cuda_norm_gemm_swiglu;
    be->norm_qkv_rope = cuda_norm_qkv_rope;
    be->norm_logits_argmax = cuda_norm_logits_argmax;
    be->norm_argmax = cuda_norm_argmax;
    be->head_int8_rows = c->head8 && (modes & ORTHROS_DECODE_FUSED)
                             ? (ORTHROS_HEAD8_MAX_ROWS < be->fused_max_rows ? ORTHROS_HEAD8_MAX_ROWS : be->fused_max_rows)
                             : 0;
    be->attn_decode_o = c->attn_o ? cuda_attn_decode_o : NULL;
    be->norm_qkv_rope_attn = c->qkv_attn ? cuda_norm_qkv_rope_attn : NULL;
    be->norm_mlp_add = c->mlp ? cuda_norm_mlp_add : NULL;
    be->graph_begin = cuda_graph_begin;
    be->graph_end = cuda_graph_end;
    be->graph_launch = cuda_graph_launch;
    be->graph_free = cuda_graph_free;
    be->graph_epoch = cuda_graph_epoch;
    *out = be;
    return 0;
}
