/* Bench result files, typed: one reader (which validates) and one writer, used by `orthros bench` (sweeps,
 * resume), `orthros compare`, `orthros plot`, the recipe report and the kernel benchmarks (bench_kernels), which
 * write the same format. Also the PyTorch SDPA anchor files of bench/kernels/anchors.py (read only).
 *
 * A cell is one measured configuration with its raw samples (seconds). `orthros bench` cells are keyed by
 * (arch, phase, ctx, batch); kernel-benchmark cells by (op, shape). */
#ifndef ORTHROS_RESULT_BENCH_H
#define ORTHROS_RESULT_BENCH_H

#include "results.h"
#include "stats.h"

#define ORTHROS_NAME_MAX 64

typedef enum {
    ORTHROS_CELL_MEASURED = 0,
    ORTHROS_CELL_SKIPPED = 1, /* not run: would not fit the memory or the cell budget (reason says which) */
    ORTHROS_CELL_FAILED = 2,  /* run, and failed (reason holds the error) */
} orthros_cell_state;

typedef struct {
    /* Coordinates: arch and phase are set for `orthros bench` cells, op and shape for kernel cells. */
    char arch[ORTHROS_NAME_MAX], phase[16];
    int ctx, batch, decode_tokens;
    char op[ORTHROS_NAME_MAX], shape[128];

    orthros_cell_state state;
    char *reason;        /* skipped / failed: why; NULL when measured */
    char *reps_reduced;  /* the cell budget cut warm-up or repetitions: how; or NULL */

    /* Measured only. */
    double *samples;     /* [n_samples] seconds (per token for decode), each finite and > 0 */
    size_t n_samples;
    size_t *round_ends;  /* [n_rounds]: one past the last sample of each round (interleaved runs); n_rounds 1 */
    size_t n_rounds;     /*   when the cell was measured in one stretch */
    char stop_reason[32];/* noise_target, timeout, max_reps, budget */
    double noise;        /* the stopping noise measure: IQR / 1.349 / median */
    int noisy;           /* 1 when the cell stopped above --max-noise */
    int chunk;           /* the prefill chunk the session used; 0 for kernel cells */
    orthros_stats stats;
    /* The stated cost of one sample (NAN where not stated) and what it achieved against the run's ceilings. */
    double flops, attn_flops, bytes;
    double tokens_per_s, tflops, tbps, frac_gemm, frac_copy, frac_read;
    double floor_s;      /* kernel cells: max(FLOPs / GEMM ceiling, bytes / bandwidth ceiling); decode cells: the
                          * bytes of one step (cost) over the run's read ceiling; else NAN */
    /* e2e cells (prefill of ctx tokens, then decode_tokens steps): ttft[n_samples] the seconds of each sample up to the
     * first token (the prefill), NULL for other cells; the medians of the time to first token and of the time per
     * output token after it ((sample - ttft) / decode_tokens); tpot_floor_s the mean over the steps of a step's bytes
     * over the read ceiling. NAN where not recorded. */
    double *ttft;
    double ttft_s, tpot_s, tpot_floor_s;
    /* Kernel cells: what was measured, for matching with the SDPA anchors ("case" in the file): the kind
     * (prefill, decode, linear_prefill, ...; empty when not stated), head dim, ctx and batch (above), the
     * chunk's first position, the window, the kernel version that ran, and whether it is the default; which
     * ceiling its floor is judged against (read or copy). */
    char kind[24];
    int head_dim, pos0, window, version, is_default;
    char ceiling[8];
    double weights_bytes, session_bytes, device_used_bytes; /* NAN when not recorded */
    /* The GPU right after the cell's last timed repetition ("gpu" in the file; rank 0's GPU under tensor
     * parallel), through NVML: SM clock and its maximum (MHz), power and its enforced limit (W), NAN where not
     * read; the active clock event reasons as orthros_gpu_reasons_text writes them, empty where not read. */
    double gpu_sm_clock_mhz, gpu_sm_clock_max_mhz, gpu_power_w, gpu_power_limit_w;
    char gpu_clock_limits[160];
} orthros_bench_cell;

/* Every architecture over transformer, per (phase, ctx, batch). */
typedef struct {
    char arch[ORTHROS_NAME_MAX], phase[16];
    int ctx, batch;
    double speedup, ci_lo, ci_hi; /* median(transformer) / median(arch), two-stage bootstrap 95% interval */
} orthros_speedup;

/* Per (arch, phase, batch) over ctx: where the speedup first reaches 1 and 21.9 (interpolated in log length). */
typedef struct {
    char arch[ORTHROS_NAME_MAX], phase[16];
    int batch;
    double crossover_ctx;  /* NAN when never >= 1 */
    double ctx_at_21_9x;   /* NAN when never reached */
    double max_speedup;
} orthros_speedup_summary;

/* The run configuration of a bench file: what was asked for. */
typedef struct {
    char *model;                 /* the model spec: a folder, a .gguf file or preset:NAME */
    char *archs, *ctxs, *phases, *batches; /* the axes as given */
    char device[16];             /* cpu or cuda */
    int decode_tokens, warmup, reps, max_reps;
    double max_noise_pct, timeout_s, cell_budget_s;
    orthros_sched_config sched;  /* the schedule options */
    int tp;                      /* tensor-parallel ranks (--tp; 1 when the file does not say) */
    int seed;
    char timer[96];
    char source[32];             /* "orthros bench" or "bench_kernels" */
} orthros_bench_config;

typedef struct {
    orthros_result_header hdr;
    cJSON *header;               /* tool, run (its config excepted) and environment as written, for rewriting */
    orthros_bench_config cfg;
    orthros_ceilings ceilings;   /* NAN where not measured */
    orthros_bench_cell *cells;
    size_t n_cells, cap_cells;
    orthros_speedup *speedups;
    size_t n_speedups;
    orthros_speedup_summary *summary;
    size_t n_summary;
} orthros_bench_file;

/* The kind, for the scaffolding of results.h and the lifecycle of result_run.h. */
extern const orthros_result_type orthros_bench_type;

void orthros_bench_file_init(orthros_bench_file *f);
void orthros_bench_file_free(orthros_bench_file *f);
void orthros_bench_config_free(orthros_bench_config *c);
/* Reads and validates path. With missing_ok, a missing file gives *exists = 0 and an empty f. */
int orthros_bench_file_read(orthros_bench_file *f, const char *path, int missing_ok, int *exists);
/* The same from a parsed JSON document (name for messages). */
int orthros_bench_file_from_json(orthros_bench_file *f, const cJSON *root, const char *name);
/* The JSON document of f (header, config, ceilings, cells, speedups); NULL when out of memory. */
cJSON *orthros_bench_file_to_json(const orthros_bench_file *f);
int orthros_bench_file_write(const orthros_bench_file *f, const char *path);

/* Cells. A new cell is zeroed with NAN in every measured number. add takes ownership of c's buffers. */
/* Records the state of the GPU at PCI address bus_id now in c's gpu fields (unchanged where NVML cannot read). */
void orthros_bench_cell_set_gpu(orthros_bench_cell *c, const char *bus_id);
/* A line on the measured cells of f whose GPU clock was held below its maximum when they ended (any clock event
 * reason but gpu_idle): how many, by reason, and their SM clocks against the maximum; "" when none was (or none
 * recorded the GPU). Returns buf. */
const char *orthros_bench_clock_note(const orthros_bench_file *f, char *buf, size_t n);
void orthros_bench_cell_init(orthros_bench_cell *c);
void orthros_bench_cell_free(orthros_bench_cell *c);
int orthros_bench_cell_set_reason(orthros_bench_cell *c, orthros_cell_state state, const char *reason);
int orthros_bench_file_add(orthros_bench_file *f, orthros_bench_cell *c);
/* Removes cell i (freeing it). */
void orthros_bench_file_remove(orthros_bench_file *f, size_t i);
/* 1 when two cells have the same coordinates. */
int orthros_bench_cell_same_key(const orthros_bench_cell *a, const orthros_bench_cell *b);
/* A text that is the same for two cells exactly when orthros_bench_cell_same_key holds (for sets of cells). */
void orthros_bench_cell_set_key(char *out, size_t n, const orthros_bench_cell *c);
/* "transformer prefill ctx 4096 batch 1", or "op shape" for kernel cells. */
void orthros_bench_cell_key(char *out, size_t n, const orthros_bench_cell *c);
/* The cell at (arch, phase, ctx, batch), or NULL; measured_only skips skipped and failed ones. */
const orthros_bench_cell *orthros_bench_file_find(const orthros_bench_file *f, const char *arch, const char *phase,
                                                  int ctx, int batch, int measured_only);
/* The model's short name for labels: "llama3.2-1b" for preset:llama3.2-1b, the last path component otherwise. */
const char *orthros_bench_model_label(const orthros_bench_file *f);
/* Which configuration fields differ between two runs in a way that makes their cells incomparable (model,
 * device, seed, decode tokens, every schedule option, the noise target): 0 when none, else ORTHROS_EINVAL with a
 * message naming the first field and both values. */
int orthros_bench_config_check_same(const orthros_bench_config *a, const char *a_name, const orthros_bench_config *b,
                                    const char *b_name);

/* ---- PyTorch anchor files: SDPA (bench/kernels/anchors.py) and whole decode steps (bench/kernels/decode_anchor.py) ---- */

typedef struct {
    char op[16];          /* prefill or decode (one layer's SDPA), or step (a whole model's decode step) */
    char backend[16];     /* flash, cudnn, ... (SDPA); graph or compiled (a step: eager or torch.compile, as a CUDA graph) */
    char model[32];       /* a step's model shape (llama3.2-1b, ...); "" for SDPA */
    int head_dim, ctx, batch, hq, hkv; /* a step: head_dim, hq and hkv 0; ctx the cache depth */
    double median_s;      /* a step: the time of one step of the batch */
    double tflops, tbps;  /* NAN where not given */
} orthros_anchor_case;

typedef struct {
    orthros_anchor_case *cases;
    size_t n;
    char device_name[128];
    char torch[64]; /* the PyTorch version that measured them, as the file gives it ("" when not given) */
    int steps;      /* decode_anchor.py's files: the replays a sample times (its cases are steps); 0 for SDPA files */
} orthros_anchor_file;

int orthros_anchor_file_from_json(orthros_anchor_file *f, const cJSON *root, const char *name);
int orthros_anchor_file_read(orthros_anchor_file *f, const char *path);
void orthros_anchor_file_free(orthros_anchor_file *f);

#endif
