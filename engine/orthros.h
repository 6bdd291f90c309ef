/* Public API of the Orthros engine: errors, model configuration, attention schedules, models and sessions.
 *
 * A model is a Hugging Face Llama-family checkpoint (or a seeded dummy preset) loaded onto a backend and
 * run under an attention schedule (DESIGN section 2). A session owns the per-sequence state (KV cache,
 * linear-attention state) for a batch of sequences and runs chunked prefill and batched decode.
 * Every function that can fail returns 0 or a negative ORTHROS_E* code; orthros_last_error() then holds a
 * one-line message naming the problem. Nothing here aborts. */
#ifndef ORTHROS_H
#define ORTHROS_H

#include <stddef.h>
#include <stdint.h>

/* Error codes, orthros_error and the last-error message, ORTHROS_MAX_HEAD_DIM / _LAYERS, orthros_fmap. */
#include "orthros_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHROS_VERSION "0.1.0"

/* Where the feature map phi of the linear formula acts (docs/converted-models.md): on q_t, k_t before RoPE (DESIGN
 * section 2's meaning, the default) or on the rotated q~_t, k~_t (LoLCATs' placement). */
typedef enum {
    ORTHROS_FMAP_ROPE_BEFORE = 0,
    ORTHROS_FMAP_ROPE_AFTER = 1,
} orthros_fmap_rope;

typedef enum {
    ORTHROS_ATTN_FULL = 0,
    ORTHROS_ATTN_LINEAR = 1,
    ORTHROS_ATTN_SWA = 2,
    ORTHROS_ATTN_ORTHROS = 3,
} orthros_attn_kind;

/* The dense model, as config.json describes it. */
typedef struct {
    int d_model;      /* hidden_size */
    int n_layers;     /* num_hidden_layers */
    int n_heads;      /* num_attention_heads (Hq) */
    int n_kv_heads;   /* num_key_value_heads (Hkv) */
    int head_dim;     /* d */
    int ffn;          /* intermediate_size */
    int vocab;        /* vocab_size */
    int max_pos;      /* max_position_embeddings (informational: RoPE is computed for any position) */
    int tie_embeddings;
    float norm_eps;   /* rms_norm_eps */
    double rope_theta;
    int rope_llama3;  /* rope_scaling.rope_type == "llama3" */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_orig_max_pos;
    int n_eos;        /* eos_token_id (int or list); generation stops after emitting one */
    int eos[8];
} orthros_model_config;

/* The attention schedule and its parameters. */
typedef struct {
    char name[32];                  /* transformer, orthros, linear, swa, hybrid, or "checkpoint" */
    orthros_attn_kind kind[ORTHROS_MAX_LAYERS];
    orthros_fmap fmap;
    int feature_dim;                /* hedgehog: columns of W per sign (F = 2 * feature_dim) */
    int tail;                       /* orthros: prompt positions t >= N - tail run full attention */
    float eps;                      /* linear: denominator epsilon */
    int window;                     /* swa: W */
    int hybrid_every;               /* hybrid: layer i is full when (i + 1) % k == 0 */
    orthros_fmap_rope fmap_rope;    /* linear formula: phi before or after RoPE */
    int local_window;               /* linear formula: exact softmax over the last W positions, the linear term over
                                     * the older ones (0: no window); docs/converted-models.md */
} orthros_arch;

/* The value of an orthros_arch_opts field that is not set (exactly this value; for eps, (double)ORTHROS_UNSET). */
#define ORTHROS_UNSET (-1)

/* Options a user can set on the command line; a field left at ORTHROS_UNSET (or arch NULL) takes the
 * checkpoint's value (its `orthros` object) or the default. Any other value is used and checked:
 * orthros_arch_resolve refuses it with ORTHROS_EINVAL when out of range (so -5, or a NaN eps, is an error,
 * never "unset"). A caller that reads these from a user must reject ORTHROS_UNSET itself when the user
 * typed it: that is the caller's to know. */
typedef struct {
    const char *arch;   /* NULL: the checkpoint's schedule, else transformer */
    int fmap;           /* ORTHROS_UNSET or an orthros_fmap */
    int feature_dim;    /* ORTHROS_UNSET: checkpoint or head_dim / 2; else [1, 1024] */
    int tail;           /* ORTHROS_UNSET: checkpoint or 1; else >= 1 (and at most the prompt length, checked at prefill) */
    double eps;         /* ORTHROS_UNSET: checkpoint or 1e-6; else (0, 1] */
    int window;         /* ORTHROS_UNSET: checkpoint or 4096; else >= 1 */
    int hybrid_every;   /* ORTHROS_UNSET: checkpoint or 4; else >= 1 */
    int fmap_rope;      /* ORTHROS_UNSET: checkpoint or before; else an orthros_fmap_rope */
    int local_window;   /* ORTHROS_UNSET: checkpoint or 0; else [0, 2^30] */
    int tp;             /* tensor-parallel ranks (world size), default 1; docs/tensor-parallel.md */
    const char *adapter;/* NULL, or an adapter safetensors merged over the model (docs/converted-models.md#adapters) */
} orthros_arch_opts;

void orthros_arch_opts_default(orthros_arch_opts *o);
/* The named schedules ("transformer", "orthros", "linear", "swa", "hybrid"), NULL-terminated. */
extern const char *const orthros_arch_names[];
const char *orthros_fmap_name(orthros_fmap f);
int orthros_fmap_parse(const char *s, orthros_fmap *out);
/* "before" / "after". */
const char *orthros_fmap_rope_name(orthros_fmap_rope r);
int orthros_fmap_rope_parse(const char *s, orthros_fmap_rope *out);
/* Feature dimension F of phi for this schedule and head dim. */
int orthros_arch_feature_size(const orthros_arch *a, int head_dim);
/* True when some layer of the schedule uses the linear state. */
int orthros_arch_uses_state(const orthros_arch *a, int n_layers);

typedef struct orthros_backend orthros_backend;

/* 1 when the build has CUDA and a GPU is present. */
int orthros_cuda_available(void);

/* Backends. "auto" picks cuda when a GPU is present and the build has CUDA, else cpu. */
int orthros_backend_create(orthros_backend **out, const char *device);
void orthros_backend_free(orthros_backend *be);
const char *orthros_backend_name(const orthros_backend *be);

/* What a backend runs on, for result files. Fields that do not apply stay 0 / empty. */
typedef struct {
    char name[128];          /* GPU name, or the CPU model */
    int sm_count;            /* multiprocessors (cuda) or cores (cpu) */
    size_t mem_total;        /* bytes of device (or host) memory */
    int clock_mhz, mem_clock_mhz;
    int driver_version, runtime_version; /* as cudaDriverGetVersion / cudaRuntimeGetVersion report them */
    int cc_major, cc_minor;
    char kernels[256];       /* cuda: the kernel versions and decode switches in use; empty on cpu */
    char pci_bus_id[32];     /* cuda: the GPU's PCI address (as NVML and nvidia-smi name it); empty on cpu */
    char uuid[48];           /* cuda: the GPU's UUID as nvidia-smi writes it (GPU-8-4-4-4-12 hex); empty on cpu */
    char kind[8];            /* the backend: cpu or cuda */
    char host[72];           /* the host name of the machine the device is in */
} orthros_device_info;

void orthros_backend_device_info(const orthros_backend *be, orthros_device_info *out);
/* Capabilities, instead of checks of the backend's name. */
#define ORTHROS_CAP_GPU 1u   /* a GPU: its own memory, work queued on a stream (sync before a host clock) */
unsigned orthros_backend_caps(const orthros_backend *be);
/* The prefill chunk a session takes when none is asked for and memory allows (16384 on cuda, 256 on cpu). */
int orthros_backend_default_chunk(const orthros_backend *be);
/* The batches (1 to this) whose greedy decode step reads the LM head through an int8 copy (cuda, kernels/head8.h;
 * 0: none): the cost model's decode floor counts those bytes there (orthros_cost_decode's head_int8). */
int orthros_backend_head_int8_rows(const orthros_backend *be);
/* Free and total bytes of the memory the backend allocates from (device memory on cuda). */
int orthros_backend_mem_info(orthros_backend *be, size_t *free_bytes, size_t *total_bytes);
/* Waits until the backend's queued work is done. */
int orthros_backend_sync(orthros_backend *be);
/* OpenMP threads the cpu backend (and the host side of every backend) uses. */
int orthros_cpu_threads(void);

/* Timing of queued work: orthros_timer_mark records the point the backend's work has reached in slot
 * (0 .. ORTHROS_TIMER_SLOTS - 1); orthros_timer_seconds waits for mark `to` and gives the seconds from mark
 * `from` to it (CUDA events on cuda; a monotonic clock read when the work is done, on cpu). */
#define ORTHROS_TIMER_SLOTS 4
int orthros_timer_mark(orthros_backend *be, int slot);
int orthros_timer_seconds(orthros_backend *be, int from, int to, double *seconds);

/* The ceilings a run's measurements are judged against, measured on the backend itself: a square GEMM in the
 * act dtype (bf16 on cuda, n = 8192; fp32 on cpu, n = 512), a device-to-device copy (bytes read + written over
 * time) and a read-only pass (bytes read over time). Each the median of 10 timed runs after warm-up; NAN where a
 * measurement could not be made (not enough memory). */
typedef struct {
    double gemm_tflops;
    int gemm_n;
    double copy_tbps, copy_bytes;
    double read_tbps, read_bytes;
} orthros_ceilings;

int orthros_measure_ceilings(orthros_backend *be, orthros_ceilings *out);

typedef struct orthros_model orthros_model;

/* Loads `spec` (a model directory, a FILE.gguf, or preset:tiny / preset:llama3.2-1b / preset:llama3.1-8b /
 * preset:llama3.1-70b) onto `be` under the schedule resolved from `opts`. `seed` fills preset weights. A model
 * directory whose config.json has an `orthros_base` object is an adapter over that base, and opts->adapter merges
 * an adapter file over any spec (docs/converted-models.md#adapters).
 * opts->tp > 1 shards the model over that many ranks (docs/tensor-parallel.md): on the cpu backend the model
 * holds every shard, each on a cpu backend of its own (be holds rank 0's); on the cuda backend this process is
 * one rank of a world started by the orthros command (ranks/ranks.h) or by torchrun / mpirun, and be holds its
 * shard. */
int orthros_model_load(orthros_model **out, orthros_backend *be, const char *spec,
                       const orthros_arch_opts *opts, uint64_t seed);
void orthros_model_free(orthros_model *m);
/* Runs the same weights under another named schedule (transformer, orthros, ...), resolved with the options the
 * model was loaded with. Sessions made before keep the old layout: free them first. Fails with
 * ORTHROS_EUNSUPPORTED when the schedule needs weights that were not loaded (hedgehog feature maps). */
int orthros_model_set_arch(orthros_model *m, const char *arch);
const orthros_model_config *orthros_model_get_config(const orthros_model *m);
const orthros_arch *orthros_model_get_arch(const orthros_model *m);
orthros_backend *orthros_model_get_backend(orthros_model *m);
/* Bytes of weights held on this process's backends (every in-process rank's, on cpu). */
size_t orthros_model_weight_bytes(const orthros_model *m);
/* Bytes of one activation, weight or KV-cache element on the model's backend (2 for bf16 on cuda, 4 on cpu). */
size_t orthros_model_act_size(const orthros_model *m);
/* The tensor-parallel world size of the model (1 when it is not sharded). */
int orthros_model_tp(const orthros_model *m);
/* The devices a model runs on, rank by rank: fills out[0 .. min(max, world)) and returns the world size. */
int orthros_model_devices(const orthros_model *m, orthros_device_info *out, int max);
/* The same before a model exists, for the result file of a run of `tp` ranks whose rank 0 runs on be: in a world
 * of ranks as processes (ranks/ranks.h), be's device for this rank and, for every other rank, the device it sent
 * to rank 0 when the world started (the world's size is returned, whatever tp says); else the ranks are threads of
 * this process (cpu) and each reports be's device. */
int orthros_tp_devices(const orthros_backend *be, int tp, orthros_device_info *out, int max);

/* ---- a model's weights read back (orthros export; docs/converted-models.md#export) ---- */

typedef struct {
    char name[80];      /* the Hugging Face name, e.g. model.layers.0.self_attn.q_proj.weight */
    int ndim;
    int64_t shape[3];
} orthros_weight_info;

/* The tensors the model holds, under their Hugging Face names and shapes, in load order: the fused q/k/v and
 * gate/up weights split back, lm_head left out when tied to the embedding, feature maps when they were loaded.
 * *out is malloc'd. A model of one rank (ORTHROS_EUNSUPPORTED for --tp > 1). */
int orthros_model_weights(orthros_model *m, orthros_weight_info **out, int *n);
/* Weight `name` as fp32 into out[numel]: what the backend holds (adapters merged). The act dtype must be fp32 (the
 * cpu backend); ORTHROS_EUNSUPPORTED else. */
int orthros_model_weight_read(orthros_model *m, const char *name, float *out);
/* The text of the model's `orthros` object (the checkpoint's, or its adapter's), or NULL. */
const char *orthros_model_orthros_json(const orthros_model *m);
/* The model's RoPE frequencies inv_freq[head_dim / 2], after a GGUF's scaling. */
const float *orthros_model_rope_inv_freq(const orthros_model *m);
/* The model's config.json as transformers writes a Llama config (`dtype` its torch dtype name, bos the BOS id or
 * -1), with the model's `orthros` object; *json malloc'd. ORTHROS_EUNSUPPORTED when the model's RoPE frequencies
 * have no config field (a GGUF's linear scaling or rope_freqs factors). */
int orthros_model_hf_config(const orthros_model *m, int bos, const char *dtype, char **json);
/* A model spec's tokenizer as Hugging Face files (malloc'd texts, both NULL when the model has no tokenizer): a
 * directory's own tokenizer.json and tokenizer_config.json as they are, an adapter directory's base's, or a GGUF's
 * tokenizer.ggml.* metadata written as a tokenizer.json that Hugging Face tokenizers reads as the engine does and a
 * tokenizer_config.json with the special tokens (model_max_length max_pos); *generated is 1 for the last. */
int orthros_tokenizer_hf_files(const char *spec, int max_pos, char **tok_json, char **tok_cfg, int *generated);

/* Parses config.json text (exposed for tests). The JSON is read strictly (engine/json.h): duplicate keys, NUL
 * bytes and \u0000, trailing bytes, and a field of the wrong type (attention_bias: 1, 4.5 heads) are refused. */
int orthros_config_parse(orthros_model_config *cfg, const char *json_text);
/* The same over text[0..len); *orthros_json, if not NULL, receives the text of the config's `orthros` object
 * (malloc'd), or NULL when it has none. */
int orthros_config_parse_text(orthros_model_config *cfg, char **orthros_json, const char *text, size_t len);
/* Resolves a schedule for n_layers layers from opts and an optional `orthros` object of config.json
 * (passed as its JSON text, or NULL). */
int orthros_arch_resolve(orthros_arch *arch, const orthros_model_config *cfg, const orthros_arch_opts *opts,
                         const char *orthros_json);
int orthros_preset_config(orthros_model_config *cfg, const char *name);
/* The configuration of a model spec (preset:NAME, FILE.gguf or a Hugging Face directory's config.json) without
 * loading its weights: for checking arguments against the model (its context length) before any work. */
int orthros_model_spec_config(orthros_model_config *cfg, const char *spec);

typedef struct orthros_session orthros_session;

/* A session for `batch` sequences of up to max_ctx tokens each. chunk <= 0 picks the prefill chunk size
 * from free memory. Fails with ORTHROS_ENOMEM, naming the bytes needed, when it cannot fit. */
int orthros_session_init(orthros_session **out, orthros_model *m, int batch, int max_ctx, int chunk);
void orthros_session_free(orthros_session *s);
/* Bytes a session would need (KV cache, linear state, activations); for up-front memory checks. */
size_t orthros_session_bytes(const orthros_model *m, int batch, int max_ctx, int chunk);
int orthros_session_chunk(const orthros_session *s);
/* Forgets every sequence's tokens (positions back to 0, linear state zeroed). */
int orthros_session_reset(orthros_session *s);
/* Moves every sequence's position back to pos (<= its current one), for timing decode at a fixed cache depth.
 * KV entries past pos are overwritten by later tokens; a linear state is NOT rewound, so only timing, not
 * output, is meaningful after a rewind. */
int orthros_session_rewind(orthros_session *s, int pos);

/* How orthros_decode runs a step (docs/kernels.md, "Whole-model decode"), opt-in while they are measured against
 * the plain step: FUSED runs the fused decode ops (the RMSNorm and the residual add inside the products, RoPE in
 * the q/k/v projection's epilogue, the argmax in the head's: on cuda one GEMV kernel each); GRAPHS keeps the step's
 * tokens and positions in backend memory and, on cuda, captures the step once per (batch, cache-length bucket) as
 * a CUDA graph and replays it (on the cpu the same step runs uncaptured). Both give the plain step's tokens (on the
 * cpu its logits bit for bit). */
#define ORTHROS_DECODE_FUSED 1u
#define ORTHROS_DECODE_GRAPHS 2u
/* Sets the modes a session's decode steps ask for (a new session takes the backend's: ORTHROS_DECODE_FUSED=1 and
 * ORTHROS_DECODE_GRAPHS=1 in the environment). A mode the session cannot run falls back to the plain step:
 * tensor parallel (neither), more sequences than the fused ops take (FUSED: 16 on cuda) or a model width that is
 * not a multiple of 8 (FUSED). Frees the session's graphs. */
int orthros_session_set_decode(orthros_session *s, unsigned modes);
/* The modes in effect. */
unsigned orthros_session_decode(const orthros_session *s);
/* What the GRAPHS mode did: steps run in it, graphs captured and replayed, captures that failed (that bucket then
 * runs uncaptured) and the last failure's message. */
typedef struct {
    long steps, replays, captures, capture_failures;
    int graphs;              /* graphs the session holds now */
    char last_failure[200];
} orthros_decode_stats;
void orthros_session_decode_stats(const orthros_session *s, orthros_decode_stats *out);

/* Prefills sequence `seq` with n prompt tokens. logits_all, if not NULL, receives [n][vocab] float32 logits for
 * every prompt position; next, if not NULL, receives the greedy token after the prompt. Under a schedule with
 * orthros layers a tail longer than n is refused (ORTHROS_EINVAL): it would run a transformer labelled orthros. */
int orthros_prefill(orthros_session *s, int seq, const int32_t *tokens, int n, float *logits_all, int32_t *next);
/* The same with logits for prompt positions [from, n) only: logits, if not NULL, receives [n - from][vocab] float32
 * (0 <= from < n); orthros_prefill is from = 0. The log-likelihood evals take the last position's this way. */
int orthros_prefill_logits(orthros_session *s, int seq, const int32_t *tokens, int n, int from, float *logits,
                           int32_t *next);
/* Copies sequence src's state to sequence dst of the same session: its position and every per-sequence buffer
 * (the KV cache of every layer up to that position, the linear state S and z), on every rank of a tensor-parallel
 * model. A later prefill or decode of dst continues from src's tokens as if they had been fed to dst: the shared
 * context of several continuations is prefilled once (eval mc). dst == src does nothing. */
int orthros_session_copy_seq(orthros_session *s, int dst, int src);
/* One decode step for every sequence: tokens[batch] in, greedy next[batch] out; logits, if not NULL,
 * receives [batch][vocab] float32. With next and logits both NULL no logits are computed (the ranks > 0 of a
 * tensor-parallel model). */
int orthros_decode(orthros_session *s, const int32_t *tokens, int32_t *next, float *logits);
/* Times an in-place sum all-reduce of a [rows][d_model] activation across the model's ranks: one untimed
 * call (which also lines the ranks up), then `iters` back to back on rank 0's backend timer; *seconds gets
 * the time per all-reduce. ORTHROS_EINVAL on a model with no communicator (world size 1). */
int orthros_tp_allreduce_time(orthros_model *m, int rows, int iters, double *seconds);

/* Greedy generation for sequence 0 of a batch-1 session: prefill, then max_new - 1 decode steps
 * (the first generated token comes from the prefill). */
int orthros_generate(orthros_session *s, const int32_t *prompt, int n, int max_new, int32_t *out);
/* The same, timed on the host clock (each call returns once its work is done): *prefill_s the prefill's seconds (to
 * the first token), *decode_s the decode steps' (the other count - 1 tokens). Either may be NULL. */
int orthros_generate_timed(orthros_session *s, const int32_t *prompt, int n, int max_new, int32_t *out, double *prefill_s,
                           double *decode_s);

/* ---- tokenizers: byte-level BPE (GPT-2 style), from a GGUF's metadata or a Hugging Face tokenizer.json ---- */

typedef struct orthros_tokenizer orthros_tokenizer;

enum {
    ORTHROS_TOK_ADD_SPECIAL = 1,   /* encode: add what the tokenizer adds around a text (its BOS / EOS settings) */
    ORTHROS_TOK_SPLIT_SPECIAL = 2, /* encode: treat the text of special tokens as plain text */
    ORTHROS_TOK_SKIP_SPECIAL = 4,  /* decode: leave special tokens out */
    ORTHROS_TOK_LOSSY = 8,         /* decode: replace invalid UTF-8 with U+FFFD, as Hugging Face's decode does */
};

/* Loads the tokenizer of a model spec: FILE.gguf (its tokenizer.* metadata), a Hugging Face directory
 * (tokenizer.json, with tokenizer_config.json for BOS / EOS and the chat template when present), or a
 * tokenizer.json file. Presets have none (ORTHROS_EUNSUPPORTED). */
int orthros_tokenizer_load(orthros_tokenizer **out, const char *spec);
void orthros_tokenizer_free(orthros_tokenizer *t);
/* text[len] (any bytes: invalid UTF-8 is encoded byte by byte) -> *ids[*n] (malloc'd; caller frees). Special
 * tokens in the text are matched whole before splitting unless ORTHROS_TOK_SPLIT_SPECIAL. Thread-safe. */
int orthros_tokenizer_encode(const orthros_tokenizer *t, const char *text, size_t len, int flags, int32_t **ids,
                             int *n);
/* ids[n] -> *text[*len] bytes, NUL-terminated (malloc'd). Ids outside the vocabulary are an error. */
int orthros_tokenizer_decode(const orthros_tokenizer *t, const int32_t *ids, int n, int flags, char **text,
                             size_t *len);
int orthros_tokenizer_vocab_size(const orthros_tokenizer *t);
/* Special token ids, -1 where the tokenizer names none. */
int32_t orthros_tokenizer_bos(const orthros_tokenizer *t);
int32_t orthros_tokenizer_eos(const orthros_tokenizer *t);
int32_t orthros_tokenizer_unk(const orthros_tokenizer *t);
int32_t orthros_tokenizer_pad(const orthros_tokenizer *t);
int orthros_tokenizer_is_special(const orthros_tokenizer *t, int32_t id);
/* The bytes one token decodes to (not NUL-terminated), or NULL for an id outside the vocabulary. */
const char *orthros_tokenizer_token_bytes(const orthros_tokenizer *t, int32_t id, size_t *len);
/* The id of the token that is exactly these bytes (a special token by its text, e.g. "<|im_end|>"), or -1. */
int32_t orthros_tokenizer_token_id(const orthros_tokenizer *t, const char *bytes, size_t len);
/* The Jinja chat template the model ships (NUL-terminated), or NULL. */
const char *orthros_tokenizer_chat_template(const orthros_tokenizer *t);
/* The pre-tokenizer split in use: "gpt2" or "smollm" (digits one by one, then gpt2). */
const char *orthros_tokenizer_pre(const orthros_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
