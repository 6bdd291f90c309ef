/* orthros bench: a sweep over phase x context x batch x architecture. The architectures of one (phase, context,
 * batch) are measured interleaved, in rounds of alternating order (A B, B A, A B, ... : ABBA), so that a drift of
 * the machine (clocks, temperature, a neighbour's load) falls on every architecture alike instead of passing for
 * a speedup; the speedup's interval resamples rounds, then samples within rounds. Each architecture's cell is
 * warmed up, then repeated round after round until its noise (robust relative spread, robust_noise()) is under
 * the target, the time-out passes, or --max-reps is reached; the raw samples (with their rounds), statistics, the
 * stated cost model (cost.c) and the achieved fraction of the ceilings measured at the start of the run are
 * written to the result file as soon as the cell is done. Timing: the backend's timer marks (CUDA events on the
 * GPU, a monotonic clock on the CPU). */
#define _GNU_SOURCE
#include "bench.h"
#include "axes.h"
#include "cost.h"
#include "options.h"
#include "report.h"
#include "result_bench.h"
#include "result_run.h"
#include "stats.h"
#include "table.h"
#include "bench_rows.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_AXIS 64
#define MAX_ROUNDS 64
#define RESAMPLES 2000
#define MAX_BATCH 4096

static const char *const phase_names[] = {"prefill", "decode", "e2e", "allreduce", NULL};
#define ALLREDUCE_ITERS 20

typedef struct {
    orthros_model_opts mo;
    const char *archs, *ctxs, *phases, *batches, *json, *recipe, *out_dir, *anchors, *models, *format, *table_out;
    int decode_tokens, warmup, reps, max_reps, rounds, resume, force, quiet, report_only, wait;
    double max_noise, timeout, cell_budget;
} bench_opts;

typedef struct {
    char archs[MAX_AXIS][ORTHROS_AXIS_NAME_MAX], phases[MAX_AXIS][ORTHROS_AXIS_NAME_MAX];
    int ctxs[MAX_AXIS], batches[MAX_AXIS];
    size_t na, np, nc, nb;
} sweep_axes;

/* One run of a sweep over one model. */
typedef struct {
    const bench_opts *o;
    sweep_axes ax;
    orthros_backend *be;
    orthros_model *m;
    orthros_bench_file f;
    orthros_table table;
    orthros_result_run run; /* the file's lifecycle (result_run.h): measured counts this run's measured cells */
    double t0;
    size_t total, idx;
    char gpu_bus[32]; /* the GPU's PCI address (rank 0's), read once: its state is recorded after each round */
} sweep;

static void progress(const sweep *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const sweep *s, const char *fmt, ...)
{
    if (s->o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* ---- one architecture of a cell group ---- */

/* The state of one architecture's cell while its rounds run. */
typedef struct {
    const char *arch;
    orthros_bench_cell cell;
    orthros_session *s;
    int warmed, done, reps, warmup, max_reps;
    int chunk;        /* the prefill chunk of its session (the session may be gone when the cell is finished) */
    size_t cap;
    double one;       /* predicted seconds of one repetition (0: no prediction) */
} arm;

/* Noise as a robust relative spread: the interquartile range over the median, scaled to a normal's standard
 * deviation (IQR / 1.349), so that a few samples disturbed by the OS do not keep a cell repeating forever. */
static double robust_noise(const double *x, size_t n)
{
    double q1, q3, med;
    if (n < 2 || orthros_stats_quantile(&q1, x, n, 0.25) || orthros_stats_quantile(&q3, x, n, 0.75) ||
        orthros_stats_median(&med, x, n) || med <= 0)
        return INFINITY;
    return (q3 - q1) / 1.349 / med;
}

/* Seconds between timer marks 0 and 1, or < 0 on failure. */
static double marked_seconds(orthros_backend *be)
{
    double t = -1;
    return orthros_timer_mark(be, 1) || orthros_timer_seconds(be, 0, 1, &t) ? -1 : t;
}

/* One timed repetition on a prepared session: seconds (per token for decode), or < 0 on failure. An allreduce
 * cell times the tensor-parallel ranks' all-reduce of a [ctx x batch][d_model] activation alone (no session):
 * the mean of ALLREDUCE_ITERS back to back, after one that lines the ranks up. An e2e repetition also gives, in
 * *ttft, the seconds up to its first token (the prefill; timer mark 2). */
static double run_once(orthros_backend *be, orthros_model *m, orthros_session *s, const orthros_bench_cell *c,
                       const int32_t *tok, double *ttft)
{
    int32_t next[MAX_BATCH], cur[MAX_BATCH];
    double t;
    if (!strcmp(c->phase, "allreduce"))
        return orthros_tp_allreduce_time(m, c->ctx * c->batch, ALLREDUCE_ITERS, &t) ? -1 : t;
    if (!strcmp(c->phase, "decode")) {
        for (int b = 0; b < c->batch; b++) cur[b] = tok[b];
        if (orthros_timer_mark(be, 0)) return -1;
        for (int i = 0; i < c->decode_tokens; i++) {
            if (orthros_decode(s, cur, next, NULL)) return -1;
            memcpy(cur, next, sizeof(int32_t) * (size_t)c->batch);
        }
        t = marked_seconds(be) / c->decode_tokens;
        return t < 0 || orthros_session_rewind(s, c->ctx) ? -1 : t;
    }
    if (orthros_session_reset(s) || orthros_timer_mark(be, 0)) return -1;
    for (int b = 0; b < c->batch; b++)
        if (orthros_prefill(s, b, tok, c->ctx, NULL, &cur[b])) return -1;
    const int e2e = !strcmp(c->phase, "e2e");
    if (e2e && orthros_timer_mark(be, 2)) return -1;
    for (int i = 0; e2e && i < c->decode_tokens; i++) {
        if (orthros_decode(s, cur, next, NULL)) return -1;
        memcpy(cur, next, sizeof(int32_t) * (size_t)c->batch);
    }
    t = marked_seconds(be);
    if (t >= 0 && e2e && ttft && orthros_timer_seconds(be, 0, 2, ttft)) return -1;
    return t;
}

/* The stated cost of one sample of a cell, and the tokens it processes. */
static orthros_cost cell_cost(orthros_model *m, const orthros_bench_cell *c, int chunk, double *tokens)
{
    const orthros_model_config *cfg = orthros_model_get_config(m);
    const orthros_arch *a = orthros_model_get_arch(m);
    double act = (double)orthros_model_act_size(m);
    /* the bench's steps ask for the ids alone: where the backend reads the head's int8 copy, that is what they read */
    const int h8 = c->batch <= orthros_backend_head_int8_rows(orthros_model_get_backend(m));
    int extra = strcmp(c->phase, "prefill") ? c->decode_tokens : 0;
    if (!strcmp(c->phase, "decode")) {
        *tokens = c->batch;
        return orthros_cost_decode(cfg, a, c->ctx, c->batch, act, h8);
    }
    orthros_cost k = orthros_cost_prefill(cfg, a, c->ctx, c->batch, act, chunk);
    *tokens = (double)c->batch * c->ctx;
    for (int i = 0; i < extra; i++) {
        orthros_cost d = orthros_cost_decode(cfg, a, c->ctx + i, c->batch, act, h8);
        k.flops += d.flops, k.attn_flops += d.attn_flops, k.bytes += d.bytes;
    }
    *tokens += (double)c->batch * extra;
    return k;
}

/* Predicted seconds of one repetition: from the FLOP rate of the longest shorter measured cell of the same arch,
 * phase and batch; for the first cell, from the run's GEMM ceiling (an optimistic rate, so a cell is skipped only
 * when even that cannot fit). *why describes the basis. 0 when there is nothing to predict from. */
static double predict_seconds(const sweep *s, const orthros_bench_cell *c, char *why, size_t why_n)
{
    const orthros_bench_cell *best = NULL;
    for (size_t i = 0; i < s->f.n_cells; i++) {
        const orthros_bench_cell *e = &s->f.cells[i];
        if (e->state != ORTHROS_CELL_MEASURED || strcmp(e->arch, c->arch) || strcmp(e->phase, c->phase) ||
            e->batch != c->batch || e->ctx >= c->ctx || !(e->flops > 0) || !(e->stats.median > 0))
            continue;
        if (!best || e->ctx > best->ctx) best = e;
    }
    double tokens, rate;
    if (!strcmp(c->phase, "allreduce")) return 0;
    orthros_cost k = cell_cost(s->m, c, s->o->mo.chunk, &tokens);
    if (best) {
        rate = best->flops / best->stats.median;
        snprintf(why, why_n, "at the %.3g TFLOP/s measured at ctx %d", rate / 1e12, best->ctx);
    } else if (s->f.ceilings.gemm_tflops > 0) {
        rate = s->f.ceilings.gemm_tflops * 1e12;
        snprintf(why, why_n, "at the GEMM ceiling of %.3g TFLOP/s, an optimistic rate", rate / 1e12);
    } else {
        return 0;
    }
    return k.flops / rate;
}

/* The floors of a decode step (docs/bench.md, "Floors"): the bytes a step reads (cost model) over the read ceiling
 * (of every GPU of a tensor-parallel model), the mean over a sample's decode_tokens steps; an e2e cell's beside its
 * medians of the time to first token and of the time per output token after it. */
static int cell_floors(sweep *s, orthros_bench_cell *c)
{
    const orthros_model_config *cfg = orthros_model_get_config(s->m);
    const orthros_arch *a = orthros_model_get_arch(s->m);
    double act = (double)orthros_model_act_size(s->m);
    const int h8 = c->batch <= orthros_backend_head_int8_rows(s->be); /* as cell_cost */
    double devices = orthros_backend_caps(s->be) & ORTHROS_CAP_GPU ? orthros_model_tp(s->m) : 1;
    double read = s->f.ceilings.read_tbps * 1e12 * devices;
    if (!strcmp(c->phase, "decode") && read > 0 && c->decode_tokens > 0) {
        /* a sample is the mean of decode_tokens steps from depth ctx: so is its floor */
        double bytes = 0;
        for (int i = 0; i < c->decode_tokens; i++) bytes += orthros_cost_decode(cfg, a, c->ctx + i, c->batch, act, h8).bytes;
        c->floor_s = bytes / c->decode_tokens / read;
    }
    if (strcmp(c->phase, "e2e") || !c->ttft || c->decode_tokens < 1) return 0;
    double *tpot = malloc(c->n_samples * sizeof *tpot);
    if (!tpot) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->n_samples; i++) tpot[i] = (c->samples[i] - c->ttft[i]) / c->decode_tokens;
    int rc = orthros_stats_median(&c->ttft_s, c->ttft, c->n_samples);
    if (!rc) rc = orthros_stats_median(&c->tpot_s, tpot, c->n_samples);
    free(tpot);
    if (rc) return rc;
    double bytes = 0;
    for (int i = 0; i < c->decode_tokens; i++) bytes += orthros_cost_decode(cfg, a, c->ctx + i, c->batch, act, h8).bytes;
    if (read > 0) c->tpot_floor_s = bytes / c->decode_tokens / read;
    return 0;
}

/* Fills a measured cell's statistics, cost, throughput and memory. */
static int finish_cell(sweep *s, arm *a, const char *stop)
{
    orthros_bench_cell *c = &a->cell;
    const orthros_ceilings *ceil = &s->f.ceilings;
    int rc;
    snprintf(c->stop_reason, sizeof c->stop_reason, "%s", stop);
    c->noise = c->n_samples >= 2 ? robust_noise(c->samples, c->n_samples) : NAN;
    c->noisy = isfinite(c->noise) && c->noise * 100.0 > s->o->max_noise; /* one sample has no noise measure */
    c->chunk = a->chunk; /* 0 for an allreduce cell, which has no session */
    if ((rc = orthros_stats_fill(&c->stats, c->samples, c->n_samples, 0.95, RESAMPLES, (uint64_t)s->o->mo.seed))) return rc;
    if (!strcmp(c->phase, "allreduce")) {
        /* The message's bytes; tbps is the algorithm bandwidth, bytes / time (the bus bandwidth is
         * 2 (tp - 1) / tp of it, print_cell). */
        double rows = (double)c->ctx * c->batch;
        c->flops = c->attn_flops = 0;
        c->bytes = rows * orthros_model_get_config(s->m)->d_model * (double)orthros_model_act_size(s->m);
        c->tokens_per_s = rows / c->stats.median;
        c->tflops = 0;
        c->tbps = c->bytes / c->stats.median / 1e12;
        c->frac_gemm = c->frac_copy = c->frac_read = NAN;
        c->weights_bytes = (double)orthros_model_weight_bytes(s->m);
        c->session_bytes = 0;
        c->device_used_bytes = NAN;
        return 0;
    }
    double tokens;
    orthros_cost k = cell_cost(s->m, c, c->chunk, &tokens);
    c->flops = k.flops, c->attn_flops = k.attn_flops, c->bytes = k.bytes;
    if ((rc = cell_floors(s, c))) return rc;
    c->tokens_per_s = tokens / c->stats.median;
    c->tflops = k.flops / c->stats.median / 1e12;
    c->tbps = k.bytes / c->stats.median / 1e12;
    /* The ceilings are one GPU's; a tensor-parallel cell runs on tp of them (cpu ranks share one cpu). */
    double devices = orthros_backend_caps(s->be) & ORTHROS_CAP_GPU ? orthros_model_tp(s->m) : 1;
    c->frac_gemm = c->tflops / ceil->gemm_tflops / devices;
    c->frac_copy = c->tbps / ceil->copy_tbps / devices;
    c->frac_read = c->tbps / ceil->read_tbps / devices;
    int extra = strcmp(c->phase, "prefill") ? c->decode_tokens : 0;
    size_t free_b = 0, total_b = 0;
    orthros_backend_mem_info(s->be, &free_b, &total_b);
    c->weights_bytes = (double)orthros_model_weight_bytes(s->m);
    c->session_bytes = (double)orthros_session_bytes(s->m, c->batch, c->ctx + extra, c->chunk);
    c->device_used_bytes = (double)(total_b - free_b);
    return 0;
}

/* A session for the arm, with the prompt prefilled when the cell times decode steps. */
static int arm_open(sweep *s, arm *a, const int32_t *tok)
{
    const orthros_bench_cell *c = &a->cell;
    int extra = strcmp(c->phase, "prefill") ? c->decode_tokens : 0, rc;
    if ((rc = orthros_model_set_arch(s->m, a->arch))) return rc;
    if (!strcmp(c->phase, "allreduce")) return 0;
    if ((rc = orthros_session_init(&a->s, s->m, c->batch, c->ctx + extra, s->o->mo.chunk))) return rc;
    a->chunk = orthros_session_chunk(a->s);
    if (!strcmp(c->phase, "decode")) {
        int32_t nx;
        for (int b = 0; b < c->batch; b++)
            if ((rc = orthros_prefill(a->s, b, tok, c->ctx, NULL, &nx))) return rc;
    }
    return 0;
}

/* One round of an arm: warm-up the first time, then `k` timed repetitions appended as one round. */
static int arm_round(sweep *s, arm *a, const int32_t *tok, int k, int keep_session)
{
    orthros_bench_cell *c = &a->cell;
    int rc = 0;
    if (!a->s && (rc = arm_open(s, a, tok))) return rc;
    if ((rc = orthros_model_set_arch(s->m, a->arch))) return rc;
    const int e2e = !strcmp(c->phase, "e2e");
    double ttft = 0;
    for (; a->warmed < a->warmup; a->warmed++)
        if (run_once(s->be, s->m, a->s, c, tok, &ttft) < 0) return ORTHROS_EINVAL; /* the message is recorded */
    if (c->n_samples + (size_t)k > a->cap || c->n_rounds == a->cap) {
        size_t cap = 2 * (c->n_samples + (size_t)k) + 8;
        double *x = realloc(c->samples, cap * sizeof *x);
        if (x) c->samples = x;
        size_t *e = realloc(c->round_ends, cap * sizeof *e);
        if (e) c->round_ends = e;
        double *f = e2e ? realloc(c->ttft, cap * sizeof *f) : NULL;
        if (f) c->ttft = f;
        if (!x || !e || (e2e && !f)) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        a->cap = cap;
    }
    for (int i = 0; i < k; i++) {
        double t = run_once(s->be, s->m, a->s, c, tok, &ttft);
        if (t < 0) return ORTHROS_EINVAL;
        if (e2e) c->ttft[c->n_samples] = ttft < t ? ttft : t;
        c->samples[c->n_samples++] = t;
    }
    c->round_ends[c->n_rounds++] = c->n_samples;
    /* The clock and power the round ended at (its last repetition's): the last round's stay in the file. */
    if (s->gpu_bus[0]) orthros_bench_cell_set_gpu(c, s->gpu_bus);
    if (!keep_session) {
        orthros_session_free(a->s);
        a->s = NULL;
    }
    return 0;
}

/* ---- printing ---- */

static void print_cell(sweep *s, const orthros_bench_cell *c)
{
    char v[ORTHROS_BENCH_COLS][ORTHROS_BENCH_CELL_MAX];
    const char *cells[ORTHROS_BENCH_COLS];
    if (!s->table.header_done) orthros_bench_context(&s->table, &s->f, c); /* the run's model, device, commit */
    orthros_bench_row(c, v);
    for (int i = 0; i < ORTHROS_BENCH_COLS; i++) cells[i] = v[i];
    orthros_table_row(&s->table, cells);
    orthros_bench_note_unmeasured(&s->table, c);
    if (c->state == ORTHROS_CELL_MEASURED && !strcmp(c->phase, "allreduce")) {
        /* The bus bandwidth as nccl-tests define it, next to the link bandwidth of the cost model. */
        int tp = orthros_model_tp(s->m);
        double bus = 2.0 * (tp - 1) / tp * c->bytes / c->stats.median;
        char line[300];
        snprintf(line, sizeof line, "  %s allreduce of %d x %d rows over %d ranks: bus bandwidth %.1f GB/s, %.0f%% of the "
                 "cost model's %.0f GB/s", c->arch, c->ctx, c->batch, tp, bus / 1e9,
                 100 * bus / ORTHROS_COST_LINK_BUS_BYTES_PER_S, ORTHROS_COST_LINK_BUS_BYTES_PER_S / 1e9);
        orthros_table_note(&s->table, line);
    }
    if (c->state == ORTHROS_CELL_MEASURED && !strcmp(c->phase, "decode") && isfinite(c->floor_s)) {
        char line[300];
        snprintf(line, sizeof line, "  %s decode ctx %d batch %d: %.4f ms a step against its floor of %.4f ms (%.0f%%: the "
                 "%.3g GB a step reads over the read ceiling)", c->arch, c->ctx, c->batch, c->stats.median * 1e3,
                 c->floor_s * 1e3, 100 * c->floor_s / c->stats.median, c->bytes / 1e9);
        orthros_table_note(&s->table, line);
    }
    if (c->state == ORTHROS_CELL_MEASURED && c->ttft && isfinite(c->ttft_s)) {
        char line[400];
        snprintf(line, sizeof line, "  %s e2e ctx %d batch %d, %d tokens: time to first token %.2f ms (%.0f%% of the total), "
                 "time per output token %.4f ms (floor %.4f ms: %.0f%%), total %.2f ms", c->arch, c->ctx, c->batch,
                 c->decode_tokens + 1, c->ttft_s * 1e3, 100 * c->ttft_s / c->stats.median, c->tpot_s * 1e3,
                 c->tpot_floor_s * 1e3, 100 * c->tpot_floor_s / c->tpot_s, c->stats.median * 1e3);
        orthros_table_note(&s->table, line);
    }
    if (c->state == ORTHROS_CELL_MEASURED && c->noisy) {
        fprintf(stderr,
                "warning: %s %s ctx %d batch %d stopped (%s) at %.1f%% noise, above --max-noise %g%%: its median and "
                "interval are less trustworthy; more --reps or a quieter machine help\n",
                c->arch, c->phase, c->ctx, c->batch, c->stop_reason, c->noise * 100, s->o->max_noise);
    }
}


/* ---- speedups ---- */

/* Every architecture over transformer per (phase, ctx, batch), from the two cells' rounds; then per (arch, phase,
 * batch) where the speedup first reaches 1 and 21.9 (interpolated in log length). */
static int compute_speedups(orthros_bench_file *f, uint64_t seed)
{
    free(f->speedups);
    free(f->summary);
    f->n_speedups = f->n_summary = 0;
    f->speedups = calloc(f->n_cells + 1, sizeof *f->speedups);
    f->summary = calloc(f->n_cells + 1, sizeof *f->summary);
    if (!f->speedups || !f->summary) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t i = 0; i < f->n_cells; i++) {
        const orthros_bench_cell *y = &f->cells[i];
        if (y->op[0] || !strcmp(y->arch, "transformer") || y->state != ORTHROS_CELL_MEASURED ||
            !strcmp(y->phase, "allreduce"))
            continue;
        const orthros_bench_cell *x = orthros_bench_file_find(f, "transformer", y->phase, y->ctx, y->batch, 1);
        if (!x) continue;
        orthros_speedup *e = &f->speedups[f->n_speedups];
        double lo = NAN, hi = NAN;
        /* speedup = median(transformer) / median(arch): the "new" side is transformer's. */
        int rc = orthros_stats_bootstrap_ratio_ci_grouped(&lo, &hi, x->samples, x->n_samples, x->round_ends, x->n_rounds,
                                                          y->samples, y->n_samples, y->round_ends, y->n_rounds, 0.95,
                                                          RESAMPLES, seed);
        if (rc) return rc;
        snprintf(e->arch, sizeof e->arch, "%s", y->arch);
        snprintf(e->phase, sizeof e->phase, "%s", y->phase);
        e->ctx = y->ctx, e->batch = y->batch;
        e->speedup = x->stats.median / y->stats.median;
        e->ci_lo = lo, e->ci_hi = hi;
        f->n_speedups++;
    }
    for (size_t i = 0; i < f->n_speedups; i++) {
        const orthros_speedup *a = &f->speedups[i];
        int seen = 0;
        for (size_t k = 0; k < f->n_summary; k++)
            seen |= !strcmp(f->summary[k].arch, a->arch) && !strcmp(f->summary[k].phase, a->phase) && f->summary[k].batch == a->batch;
        if (seen) continue;
        /* The group's points in increasing ctx (insertion into a small sorted list). */
        double ctx[MAX_AXIS * 4], sp[MAX_AXIS * 4];
        int k = 0;
        for (size_t j = i; j < f->n_speedups && k < MAX_AXIS * 4; j++) {
            const orthros_speedup *b = &f->speedups[j];
            if (strcmp(b->arch, a->arch) || strcmp(b->phase, a->phase) || b->batch != a->batch) continue;
            int at = k++;
            while (at > 0 && ctx[at - 1] > b->ctx) ctx[at] = ctx[at - 1], sp[at] = sp[at - 1], at--;
            ctx[at] = b->ctx, sp[at] = b->speedup;
        }
        orthros_speedup_summary *e = &f->summary[f->n_summary++];
        snprintf(e->arch, sizeof e->arch, "%s", a->arch);
        snprintf(e->phase, sizeof e->phase, "%s", a->phase);
        e->batch = a->batch;
        e->crossover_ctx = e->ctx_at_21_9x = NAN;
        e->max_speedup = 0;
        for (int j = 0; j < k; j++) {
            if (sp[j] > e->max_speedup) e->max_speedup = sp[j];
            if (isnan(e->crossover_ctx) && sp[j] >= 1.0) e->crossover_ctx = ctx[j];
            if (isnan(e->ctx_at_21_9x) && sp[j] >= 21.9) {
                double t = j ? (log(21.9) - log(sp[j - 1])) / (log(sp[j]) - log(sp[j - 1])) : 0;
                e->ctx_at_21_9x = j ? exp(log(ctx[j - 1]) + t * (log(ctx[j]) - log(ctx[j - 1]))) : ctx[0];
            }
        }
    }
    return 0;
}

/* ---- the result file ---- */

/* Before each write of the file (the lifecycle's prepare, after --resume's merge): the speedups over every cell. */
static int prepare_file(void *f, void *arg)
{
    const sweep *s = arg;
    return compute_speedups(f, (uint64_t)s->o->mo.seed);
}

static int config_of(orthros_bench_config *c, const bench_opts *o, const orthros_backend *be)
{
    memset(c, 0, sizeof *c);
    c->model = strdup(o->mo.model);
    c->archs = strdup(o->archs);
    c->ctxs = strdup(o->ctxs);
    c->phases = strdup(o->phases);
    c->batches = strdup(o->batches);
    if (!c->model || !c->archs || !c->ctxs || !c->phases || !c->batches) {
        orthros_bench_config_free(c);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    snprintf(c->device, sizeof c->device, "%s", orthros_backend_name(be));
    snprintf(c->source, sizeof c->source, "orthros bench");
    c->decode_tokens = o->decode_tokens, c->warmup = o->warmup, c->reps = o->reps, c->max_reps = o->max_reps;
    c->max_noise_pct = o->max_noise, c->timeout_s = o->timeout, c->cell_budget_s = o->cell_budget;
    orthros_model_opts_sched(&c->sched, &o->mo);
    c->seed = o->mo.seed, c->tp = o->mo.tp;
    snprintf(c->timer, sizeof c->timer, "%s",
             orthros_backend_caps(be) & ORTHROS_CAP_GPU ? "CUDA events on the backend's stream"
                                                        : "monotonic clock (work is done when each call returns)");
    return 0;
}

/* Opens the result file: the cells of an earlier run of the same configuration and code with --resume (refused
 * when the configuration, the commit or the kernel versions differ), a fresh header, and the ceilings measured
 * now. */
static int open_results(sweep *s, int argc, char **argv)
{
    const bench_opts *o = s->o;
    int rc;
    if ((rc = config_of(&s->f.cfg, o, s->be)) ||
        (rc = orthros_result_run_open(&s->run, argc, argv, (uint64_t)o->mo.seed, s->be, o->mo.tp)))
        return rc;
    progress(s, "bench: measuring ceilings on %s...\n", orthros_backend_name(s->be));
    if ((rc = orthros_measure_ceilings(s->be, &s->f.ceilings))) return rc;
    progress(s, "bench: GEMM %.3g TFLOP/s, copy %.3g TB/s, read %.3g TB/s\n", s->f.ceilings.gemm_tflops,
             s->f.ceilings.copy_tbps, s->f.ceilings.read_tbps);
    if (o->force && s->run.existed) rc = orthros_result_run_save(&s->run, 0);
    return rc;
}

/* ---- a group: every architecture at one (phase, ctx, batch) ---- */

/* Decides whether an arm runs, and with how many repetitions: a cell that cannot fit memory or the cell budget is
 * recorded as skipped (arm->done). */
static int arm_plan(sweep *s, arm *a, size_t n_arms)
{
    const bench_opts *o = s->o;
    orthros_bench_cell *c = &a->cell;
    int extra = strcmp(c->phase, "prefill") ? c->decode_tokens : 0, rc;
    char why[400], basis[160] = "";
    a->reps = o->reps, a->warmup = o->warmup, a->max_reps = o->max_reps;
    if ((rc = orthros_model_set_arch(s->m, a->arch))) return rc;
    if (!strcmp(c->phase, "allreduce")) {
        if (orthros_model_tp(s->m) > 1 && (long)c->ctx * c->batch <= (1L << 30)) return 0;
        a->done = 1;
        return orthros_bench_cell_set_reason(c, ORTHROS_CELL_SKIPPED,
                                             orthros_model_tp(s->m) > 1 ? "ctx x batch rows exceed 2^30"
                                                                        : "one rank (--tp 1): there is no all-reduce");
    }
    size_t free_b = 0, total_b = 0;
    orthros_backend_mem_info(s->be, &free_b, &total_b);
    int chunk = o->mo.chunk > 0 ? o->mo.chunk : (c->ctx < 64 ? c->ctx : 64);
    size_t need = orthros_session_bytes(s->m, c->batch, c->ctx + extra, chunk);
    if (need > free_b) {
        snprintf(why, sizeof why, "needs %.2f GiB for its KV cache, state and activations; %.2f GiB free",
                 (double)need / (1 << 30), (double)free_b / (1 << 30));
        a->done = 1;
        return orthros_bench_cell_set_reason(c, ORTHROS_CELL_SKIPPED, why);
    }
    a->one = o->cell_budget > 0 ? predict_seconds(s, c, basis, sizeof basis) : 0;
    if (a->one > o->cell_budget) {
        snprintf(why, sizeof why, "predicted %.0f s for one repetition (%s) exceeds --cell-budget %.0f s", a->one, basis,
                 o->cell_budget);
        a->done = 1;
        return orthros_bench_cell_set_reason(c, ORTHROS_CELL_SKIPPED, why);
    }
    if (a->one * (o->warmup + o->reps) > o->cell_budget) {
        /* One repetition fits but warm-up + --reps do not: as many as fit, no warm-up (a repetition this long is
         * its own warm-up many times over). */
        a->warmup = 0;
        a->reps = a->max_reps = (int)fmin(o->reps, fmax(1.0, floor(o->cell_budget / a->one)));
        snprintf(why, sizeof why,
                 "predicted %.0f s a repetition (%s): %d repetition%s and no warm-up, to fit --cell-budget %.0f s",
                 a->one, basis, a->reps, a->reps > 1 ? "s" : "", o->cell_budget);
        if (!(c->reps_reduced = strdup(why))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    (void)n_arms;
    return 0;
}

/* Runs the arms of one group in rounds of alternating order; each arm's cell is complete when it returns. */
static int run_group(sweep *s, arm *arms, size_t n, const int32_t *tok)
{
    const bench_opts *o = s->o;
    size_t need = 0, free_b = 0, total_b = 0, active = 0;
    for (size_t i = 0; i < n; i++) active += !arms[i].done;
    if (!active) return 0;
    /* The sessions of all arms stay alive across rounds when they fit together; otherwise each round opens its
     * own (and a decode cell prefills its prompt again). */
    for (size_t i = 0; i < n; i++) {
        if (arms[i].done || !strcmp(arms[i].cell.phase, "allreduce") || orthros_model_set_arch(s->m, arms[i].arch)) continue;
        const orthros_bench_cell *c = &arms[i].cell;
        int extra = strcmp(c->phase, "prefill") ? c->decode_tokens : 0;
        need += orthros_session_bytes(s->m, c->batch, c->ctx + extra, o->mo.chunk > 0 ? o->mo.chunk : 256);
    }
    orthros_backend_mem_info(s->be, &free_b, &total_b);
    /* ORTHROS_BENCH_SESSION_PER_ROUND=1 takes the second way whatever the memory (for the tests). */
    const char *fresh = getenv("ORTHROS_BENCH_SESSION_PER_ROUND");
    int keep = need <= free_b / 10 * 8 && !(fresh && !strcmp(fresh, "1"));
    double t_start = orthros_now_s();
    for (int r = 0; active; r++) {
        for (size_t q = 0; q < n; q++) {
            arm *a = &arms[r % 2 ? n - 1 - q : q]; /* A B, B A, A B, ... */
            if (a->done) continue;
            int rounds = o->rounds < a->reps ? o->rounds : a->reps;
            int k = (a->reps + rounds - 1) / rounds;
            if ((int)a->cell.n_samples + k > a->max_reps) k = a->max_reps - (int)a->cell.n_samples;
            const char *stop = NULL;
            int rc = arm_round(s, a, tok, k, keep);
            if (rc) {
                /* A cell that fails is recorded as failed, with the error, and the sweep goes on. */
                orthros_session_free(a->s);
                a->s = NULL;
                if ((rc = orthros_bench_cell_set_reason(&a->cell, ORTHROS_CELL_FAILED, orthros_last_error()))) return rc;
                free(a->cell.samples);
                a->cell.samples = NULL;
                a->cell.n_samples = a->cell.n_rounds = 0;
                a->done = 1;
                active--;
                continue;
            }
            size_t cnt = a->cell.n_samples;
            int enough = (int)cnt >= a->reps && (int)a->cell.n_rounds >= rounds;
            if (enough && robust_noise(a->cell.samples, cnt) * 100.0 <= o->max_noise) stop = "noise_target";
            else if ((int)cnt >= a->max_reps) stop = a->cell.reps_reduced ? "budget" : "max_reps";
            else if (enough && orthros_now_s() - t_start >= o->timeout) stop = "timeout"; /* --reps is a floor */
            else if (r + 1 >= MAX_ROUNDS) stop = "max_rounds";
            if (stop) {
                int frc = finish_cell(s, a, stop);
                orthros_session_free(a->s);
                a->s = NULL;
                if (frc) return frc;
                a->done = 1;
                active--;
            }
        }
    }
    return 0;
}

/* Every architecture of one (phase, ctx, batch): plan, run interleaved, record, print, save. */
static int sweep_group(sweep *s, const char *phase, int ctx, int batch, const int32_t *tok)
{
    arm arms[MAX_AXIS];
    size_t n = 0;
    int rc = 0;
    for (size_t ia = 0; ia < s->ax.na; ia++) {
        s->idx++;
        if (orthros_bench_file_find(&s->f, s->ax.archs[ia], phase, ctx, batch, 1)) {
            progress(s, "[%zu/%zu] %s %s ctx %d batch %d: already in %s, skipped\n", s->idx, s->total, s->ax.archs[ia],
                     phase, ctx, batch, s->o->json);
            continue;
        }
        arm *a = &arms[n++];
        *a = (arm){.arch = s->ax.archs[ia]};
        orthros_bench_cell_init(&a->cell);
        snprintf(a->cell.arch, sizeof a->cell.arch, "%s", a->arch);
        snprintf(a->cell.phase, sizeof a->cell.phase, "%s", phase);
        a->cell.ctx = ctx, a->cell.batch = batch;
        a->cell.decode_tokens = strcmp(phase, "prefill") ? s->o->decode_tokens : 0;
        if ((rc = arm_plan(s, a, n))) goto done;
    }
    if (!n) return 0;
    progress(s, "[%zu/%zu] %s ctx %d batch %d: %zu architecture%s interleaved (elapsed %.0f s)...\n", s->idx, s->total,
             phase, ctx, batch, n, n > 1 ? "s" : "", orthros_now_s() - s->t0);
    if ((rc = run_group(s, arms, n, tok))) goto done;
    for (size_t i = 0; i < n; i++) {
        /* An earlier record of the same cell (skipped or failed) is dropped. */
        for (size_t k = s->f.n_cells; k-- > 0;)
            if (orthros_bench_cell_same_key(&s->f.cells[k], &arms[i].cell)) orthros_bench_file_remove(&s->f, k);
        s->run.measured += arms[i].cell.state == ORTHROS_CELL_MEASURED;
        print_cell(s, &arms[i].cell);
        if ((rc = orthros_bench_file_add(&s->f, &arms[i].cell))) goto done;
    }
    if ((rc = orthros_result_run_save(&s->run, 0))) goto done;
    double el = orthros_now_s() - s->t0;
    progress(s, "[%zu/%zu] done, elapsed %.0f s, about %.0f s to go\n", s->idx, s->total, el,
             el / (double)s->idx * (double)(s->total - s->idx));
done:
    for (size_t i = 0; i < n; i++) {
        orthros_session_free(arms[i].s);
        orthros_bench_cell_free(&arms[i].cell);
    }
    return rc;
}

/* ---- the sweep ---- */

static int parse_ints(int *out, size_t *n, const char *text, int64_t lo, int64_t hi, const char *what)
{
    int64_t v[ORTHROS_AXIS_MAX_VALUES];
    int rc = orthros_axis_parse_int_range(v, MAX_AXIS, n, text, lo, hi);
    if (rc) return orthros_error(rc, "--%s: %s", what, orthros_last_error());
    for (size_t i = 0; i < *n; i++) out[i] = (int)v[i];
    return 0;
}

static int parse_axes(sweep_axes *ax, const bench_opts *o)
{
    int rc;
    if ((rc = orthros_axis_parse_names(ax->archs, MAX_AXIS, &ax->na, o->archs, orthros_arch_names)))
        return orthros_error(rc, "--arch: %s", orthros_last_error());
    if ((rc = orthros_axis_parse_names(ax->phases, MAX_AXIS, &ax->np, o->phases, phase_names)))
        return orthros_error(rc, "--phase: %s", orthros_last_error());
    if ((rc = parse_ints(ax->ctxs, &ax->nc, o->ctxs, 1, 1 << 30, "ctx")) ||
        (rc = parse_ints(ax->batches, &ax->nb, o->batches, 1, MAX_BATCH, "batch")))
        return rc;
    return 0;
}

static void sweep_close(sweep *s)
{
    orthros_model_free(s->m);
    orthros_backend_free(s->be);
    orthros_bench_file_free(&s->f);
    orthros_result_run_close(&s->run);
}

/* The sweep of one model; writes o->json after every group of cells. Returns an exit status. */
static int run_sweep(const bench_opts *o, int argc, char **argv)
{
    const char *cmd = "bench";
    sweep s;
    memset(&s, 0, sizeof s);
    s.o = o;
    orthros_arch_opts ao;
    orthros_table_format tf = ORTHROS_TABLE_TEXT;
    int rc;
    if ((rc = parse_axes(&s.ax, o)) || (rc = orthros_model_opts_resolve(&ao, &o->mo)) ||
        (rc = orthros_table_format_parse(&tf, o->format)))
        return orthros_cmd_fail_usage(cmd, rc);
    orthros_bench_file_init(&s.f);
    s.run = (orthros_result_run){.type = &orthros_bench_type, .file = &s.f, .cmd = "bench",
                                 .nothing = "nothing was measured", .path = o->json, .resume = o->resume,
                                 .force = o->force, .wait = o->wait, .prepare = prepare_file, .prepare_arg = &s};
    /* Another run writing --json: refused (or waited for) before anything is loaded. */
    if ((rc = orthros_result_run_lock(&s.run))) return orthros_cmd_fail(cmd, rc);
    if ((rc = orthros_backend_create(&s.be, o->mo.device))) {
        sweep_close(&s);
        return orthros_cmd_fail(cmd, rc);
    }
    if (orthros_backend_caps(s.be) & ORTHROS_CAP_GPU) {
        orthros_device_info info;
        memset(&info, 0, sizeof info);
        orthros_backend_device_info(s.be, &info);
        snprintf(s.gpu_bus, sizeof s.gpu_bus, "%s", info.pci_bus_id);
    }
    ao.arch = s.ax.archs[0];
    if ((rc = orthros_model_load(&s.m, s.be, o->mo.model, &ao, (uint64_t)o->mo.seed)) || (rc = open_results(&s, argc, argv)) ||
        (rc = orthros_table_open(&s.table, tf, o->table_out, orthros_bench_cols, ORTHROS_BENCH_COLS))) {
        sweep_close(&s);
        return orthros_cmd_fail(cmd, rc);
    }
    if (!strcmp(o->json, "-") && !o->table_out) s.table.out = stderr; /* stdout carries the result file */
    const orthros_model_config *cfg = orthros_model_get_config(s.m);
    int max_ctx = 0;
    for (size_t i = 0; i < s.ax.nc; i++) max_ctx = s.ax.ctxs[i] > max_ctx ? s.ax.ctxs[i] : max_ctx;
    int32_t *tok = malloc(sizeof *tok * (size_t)max_ctx);
    if (!tok) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of host memory for a %d-token prompt", max_ctx);
        goto done;
    }
    for (int i = 0; i < max_ctx; i++)
        tok[i] = (int32_t)(orthros_uniform((uint64_t)o->mo.seed, (uint64_t)i) * (float)cfg->vocab) % cfg->vocab;
    s.total = s.ax.na * s.ax.np * s.ax.nc * s.ax.nb;
    s.t0 = orthros_now_s();
    for (size_t ip = 0; ip < s.ax.np && !rc; ip++)
        for (size_t ib = 0; ib < s.ax.nb && !rc; ib++)
            for (size_t ic = 0; ic < s.ax.nc && !rc; ic++)
                rc = sweep_group(&s, s.ax.phases[ip], s.ax.ctxs[ic], s.ax.batches[ib], tok);
    if (!rc && !(rc = orthros_result_run_save(&s.run, 1))) {
        orthros_bench_speedups(&s.table, &s.f);
        char note[512];
        if (orthros_bench_clock_note(&s.f, note, sizeof note)[0])
            progress(&s, "bench: %s; a long cell at a power or thermal limit runs at a lower clock than a short one "
                         "(\"gpu\" in each cell)\n", note);
        if (strcmp(o->json, "-") && (s.run.measured || !s.run.existed || o->force || o->resume))
            progress(&s, "bench: results in %s\n", o->json);
    }
done:
    free(tok);
    if (s.table.out) {
        int trc = orthros_table_close(&s.table);
        if (!rc) rc = trc;
    }
    if (rc) orthros_cmd_fail(cmd, rc);
    sweep_close(&s);
    return rc ? 1 : 0;
}

/* ---- the recipe ---- */

/* The named sweep behind the paper's headline claim: every model's sweep is resumable (a long run can be split
 * over several calls), and the report is rewritten from whatever the result files hold. */
/* Splits a --models list into models[8]; model specs hold '/' and ':' (paths, presets), so not as names. */
static int split_models(char (*models)[1024], int *n, const char *list)
{
    *n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (!len || len >= 1024 || *n == 8) return -1;
        memcpy(models[*n], p, len);
        models[(*n)++][len] = '\0';
        p += len + (p[len] == ',');
    }
    return 0;
}

/* DIR/NAME.json for a model spec (its preset name or the last component of its path), DIR/NAME-tpN.json for a
 * tensor-parallel run of N > 1 ranks (a file records one --tp: resume refuses another). */
static void recipe_path(char *out, size_t n, const char *dir, const char *model, int tp)
{
    const char *base = strrchr(model, ':') ? strrchr(model, ':') + 1 : model;
    if (strrchr(base, '/')) base = strrchr(base, '/') + 1;
    if (tp > 1) snprintf(out, n, "%s/%.1000s-tp%d.json", dir, base, tp);
    else snprintf(out, n, "%s/%.1000s.json", dir, base);
}

/* The named sweep behind the paper's headline claim: every model's sweep is resumable (a long run can be split
 * over several calls, a model per call), and the report is rewritten from whatever the result files hold: the
 * models run now, and the recipe's default models whose files are in the folder. */
/* The e2e recipe: the paper's end-to-end gains as the harness measures them. For each model (default the 1B shape)
 * and each N of 128 and 1024 (or the --decode-tokens given), transformer against orthros, phase e2e, batch 1, prompts of
 * 32K and 128K (--ctx), into DIR/<model>-n<N>.json, resumable; then DIR/report.md: time to first token, time per output
 * token against its floor, total, the prefill's share, per architecture. */
static int run_recipe_e2e(bench_opts *o, int argc, char **argv, int tokens_given)
{
    char models[8][1024], paths[16][1200], md[1100];
    const char *list[16];
    int n = 0, np = 0;
    if (split_models(models, &n, o->models ? o->models : "preset:llama3.2-1b")) {
        fprintf(stderr, "orthros bench: error: bad --models list (at most 8 comma-separated models)\n");
        return 2;
    }
    const int Ns[2] = {128, 1024}, nN = tokens_given ? 1 : 2;
    const char *dir = o->out_dir ? o->out_dir : "data/results/e2e";
    if (orthros_mkdir_p(dir)) return orthros_cmd_fail("bench", ORTHROS_EIO);
    o->archs = "transformer,orthros";
    o->phases = "e2e";
    o->batches = "1";
    if (!o->ctxs) o->ctxs = "32k,128k";
    o->resume = !o->force;
    if (o->cell_budget <= 0) o->cell_budget = 240;
    int status = 0;
    for (int i = 0; i < n && np < 16; i++)
        for (int k = 0; k < nN && np < 16; k++) {
            int N = tokens_given ? o->decode_tokens : Ns[k];
            char base[1100];
            recipe_path(base, sizeof base, dir, models[i], o->mo.tp);
            base[strlen(base) - 5] = '\0'; /* without .json */
            snprintf(paths[np], sizeof paths[0], "%.1100s-n%d.json", base, N);
            list[np] = paths[np];
            if (!o->report_only && !status) {
                bench_opts one = *o; /* this run's model and file, which live in this frame */
                one.mo.model = models[i];
                one.decode_tokens = N;
                one.json = paths[np];
                fprintf(stderr, "recipe e2e: %s, %d tokens decoded -> %s\n", models[i], N, paths[np]);
                status = run_sweep(&one, argc, argv);
            }
            np++;
        }
    snprintf(md, sizeof md, "%s/report.md", dir);
    int rc = orthros_bench_e2e_report(md, list, np);
    if (rc) return orthros_cmd_fail("bench", rc);
    fprintf(stderr, "recipe e2e: report in %s\n", md);
    return status;
}

static int run_recipe(bench_opts *o, int argc, char **argv, int tokens_given)
{
    static const char *const defaults = "preset:llama3.2-1b,preset:llama3.1-8b";
    if (!strcmp(o->recipe, "e2e")) return run_recipe_e2e(o, argc, argv, tokens_given);
    if (strcmp(o->recipe, "reproduce-21.9x")) {
        fprintf(stderr, "orthros bench: error: unknown recipe \"%s\" (reproduce-21.9x, e2e)\n", o->recipe);
        return 2;
    }
    /* The report's files: each model's at this --tp, and those of the other world sizes already in the folder
     * (the 8B shape at 1M tokens needs two GPUs: its TP=2 file stands beside the TP=1 one). */
    static const int tps[] = {1, 2, 4, 8};
    enum { NTP = sizeof tps / sizeof tps[0] };
    char models[16][1024], paths[16 * NTP][1100], md[1100];
    const char *list[16 * NTP];
    int n = 0, nd = 0;
    if (split_models(models, &n, o->models ? o->models : defaults) || split_models(models + n, &nd, defaults)) {
        fprintf(stderr, "orthros bench: error: bad --models list (at most 8 comma-separated models)\n");
        return 2;
    }
    const char *dir = o->out_dir ? o->out_dir : "data/results/reproduce-21.9x";
    if (orthros_mkdir_p(dir)) return orthros_cmd_fail("bench", ORTHROS_EIO);
    int n_run = n, n_report = 0;
    for (int i = 0; i < n + nd; i++)
        for (int k = 0; k < NTP; k++) {
            char *path = paths[i * NTP + k];
            recipe_path(path, sizeof paths[0], dir, models[i], tps[k]);
            int dup = 0, now = i < n && tps[k] == (o->mo.tp > 0 ? o->mo.tp : 1);
            for (int j = 0; j < n_report; j++) dup |= !strcmp(list[j], path);
            if (!dup && (now || access(path, F_OK) == 0)) list[n_report++] = path;
        }
    o->archs = "transformer,orthros";
    o->phases = "prefill";
    o->batches = "1";
    if (!o->ctxs) o->ctxs = "4k:1m:x2";
    o->resume = !o->force; /* --force: the models' files are replaced, not resumed */
    if (o->cell_budget <= 0) o->cell_budget = 240;
    int status = 0;
    char run_path[1100];
    for (int i = 0; i < n_run && !o->report_only; i++) {
        bench_opts one = *o; /* this run's model and file, which live in this frame */
        one.mo.model = models[i];
        recipe_path(run_path, sizeof run_path, dir, models[i], o->mo.tp);
        one.json = run_path;
        fprintf(stderr, "recipe reproduce-21.9x: %s -> %s\n", models[i], run_path);
        if ((status = run_sweep(&one, argc, argv))) break;
    }
    snprintf(md, sizeof md, "%s/report.md", dir);
    int rc = orthros_bench_report(md, list, n_report, o->anchors);
    if (rc) return orthros_cmd_fail("bench", rc);
    fprintf(stderr, "recipe reproduce-21.9x: report in %s\n", md);
    return status;
}

int orthros_cmd_bench(int argc, char **argv)
{
    bench_opts o = {.archs = "transformer,orthros", .ctxs = NULL, .phases = "prefill,decode", .batches = "1",
                    .json = "orthros-bench.json", .decode_tokens = 0, .warmup = 1, .reps = 8, .max_reps = 100,
                    .rounds = 4, .max_noise = 2.0, .timeout = 10.0, .format = "text"};
    orthros_model_opts_default(&o.mo);
    o.mo.model = NULL;
    orthros_cmd c;
    orthros_cmd_init(&c, "bench",
                     "Times prefill, decode and end-to-end generation over a sweep of architectures, context lengths and "
                     "batch sizes, the architectures of each (phase, context, batch) interleaved in rounds of alternating "
                     "order, and writes a self-describing JSON result file.\n"
                     "Without --model it runs preset:tiny on the cpu and preset:llama3.2-1b on cuda.",
                     0);
    orthros_model_opts_add(&c, &o.mo);
    orthros_opt *arch = orthros_cmd_opt(&c, "arch");
    arch->dst = &o.archs;
    arch->metavar = "LIST";
    arch->help = "architectures, comma-separated (default transformer,orthros)";
    orthros_cmd_add(&c, "ctx", ORTHROS_OPT_STR, &o.ctxs, "LIST",
                    "context lengths: 1k,4k or ranges 1k:1m:x2, 0:4k:+1k (default 256:2k:x2 on cpu, 4k:64k:x2 on cuda)");
    orthros_cmd_add(&c, "phase", ORTHROS_OPT_STR, &o.phases, "LIST",
                    "prefill,decode,e2e,allreduce (default prefill,decode; allreduce: the --tp ranks' all-reduce of ctx x "
                    "batch rows alone)");
    orthros_cmd_add(&c, "batch", ORTHROS_OPT_STR, &o.batches, "LIST", "batch sizes, 1..4096 (default 1)");
    orthros_cmd_add_num(&c, "decode-tokens", ORTHROS_OPT_INT, &o.decode_tokens, 1, 1 << 20, "N",
                        "decode steps per decode sample, and decode steps of e2e after the first token (default 16; the "
                        "e2e recipe: 128 and 1024)");
    orthros_cmd_add_num(&c, "warmup", ORTHROS_OPT_INT, &o.warmup, 0, 1000, "N", "untimed runs per cell (default 1)");
    orthros_cmd_add_num(&c, "reps", ORTHROS_OPT_INT, &o.reps, 1, 100000, "N", "minimum timed repetitions per cell (default 8)");
    orthros_cmd_add_num(&c, "max-reps", ORTHROS_OPT_INT, &o.max_reps, 1, 1000000, "N", "maximum repetitions per cell (default 100)");
    orthros_cmd_add_num(&c, "rounds", ORTHROS_OPT_INT, &o.rounds, 1, MAX_ROUNDS, "R",
                        "rounds (at least) the repetitions of a cell are split into, the architectures interleaved in "
                        "alternating order in each (default 4)");
    orthros_cmd_add_num(&c, "max-noise", ORTHROS_OPT_DOUBLE, &o.max_noise, 0, 1000, "PCT",
                        "stop repeating once the samples' noise (IQR / 1.349 / median) is under PCT (default 2); a cell "
                        "that ends above it is flagged noisy");
    orthros_cmd_add_num(&c, "timeout", ORTHROS_OPT_DOUBLE, &o.timeout, 1e-3, 1e9, "S",
                        "stop repeating a group of cells after S seconds, once --reps and --rounds are done (default 10)");
    orthros_cmd_add(&c, "json", ORTHROS_OPT_STR, &o.json, "FILE",
                    "result file, rewritten after every group of cells; - for stdout at the end (default orthros-bench.json)");
    orthros_cmd_add(&c, "resume", ORTHROS_OPT_FLAG, &o.resume, NULL,
                    "keep the measured cells already in --json (same configuration) and run only the rest");
    orthros_cmd_add(&c, "force", ORTHROS_OPT_FLAG, &o.force, NULL,
                    "replace --json at the start (without it, an existing file is replaced only once a cell is measured)");
    orthros_cmd_add(&c, "wait", ORTHROS_OPT_FLAG, &o.wait, NULL,
                    "when another run is writing --json, wait for it to finish (default: refuse)");
    orthros_cmd_add_num(&c, "cell-budget", ORTHROS_OPT_DOUBLE, &o.cell_budget, 0, 1e9, "S",
                        "skip a cell predicted (from the FLOP rate of the longest shorter cell, or the GEMM ceiling for the "
                        "first) to take more than S seconds a repetition; run fewer repetitions where all would not fit");
    orthros_cmd_add(&c, "o", ORTHROS_OPT_STR, &o.format, "FMT", "table format on stdout: text|md|csv|jsonl|json (default text)");
    orthros_cmd_add(&c, "table-out", ORTHROS_OPT_STR, &o.table_out, "FILE", "write the table to FILE instead of stdout");
    orthros_cmd_add(&c, "quiet", ORTHROS_OPT_FLAG, &o.quiet, NULL, "no progress lines on stderr");
    orthros_cmd_add(&c, "recipe", ORTHROS_OPT_STR, &o.recipe, "NAME",
                    "a named sweep: reproduce-21.9x (Llama-3.2-1B and 3.1-8B shapes, transformer vs orthros, prefill 4K "
                    "to 1M, resumable, with a markdown report); e2e (transformer vs orthros, a prompt of 32K and 128K "
                    "tokens then 128 and 1024 decoded: time to first token, time per output token against its floor, "
                    "total; resumable, with a markdown report)");
    orthros_cmd_add(&c, "models", ORTHROS_OPT_STR, &o.models, "LIST",
                    "recipe: models to run (reproduce-21.9x: preset:llama3.2-1b,preset:llama3.1-8b; e2e: "
                    "preset:llama3.2-1b)");
    orthros_cmd_add(&c, "out-dir", ORTHROS_OPT_STR, &o.out_dir, "DIR",
                    "recipe: where its result files and report go (default data/results/reproduce-21.9x, "
                    "data/results/e2e)");
    orthros_cmd_add(&c, "report-only", ORTHROS_OPT_FLAG, &o.report_only, NULL,
                    "recipe: write the report from the result files already in --out-dir, measuring nothing");
    orthros_cmd_add(&c, "anchors", ORTHROS_OPT_STR, &o.anchors, "FILE",
                    "recipe: anchors.json of bench/kernels/anchors.py (same GPU) to quote in the report");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (o.max_reps < o.reps) return orthros_cmd_usage(&c, "--max-reps (%d) is below --reps (%d)", o.max_reps, o.reps);
    if (o.resume && o.force) return orthros_cmd_usage(&c, "--resume keeps the file's cells, --force replaces them: not both");
    if (o.resume && !strcmp(o.json, "-")) return orthros_cmd_usage(&c, "--resume needs a file, not --json -");
    int gpu = strcmp(o.mo.device, "cpu") && (strcmp(o.mo.device, "auto") || orthros_cuda_available());
    const int tokens_given = o.decode_tokens > 0;
    if (!tokens_given) o.decode_tokens = 16;
    if (o.recipe) return run_recipe(&o, argc, argv, tokens_given);
    if (!o.mo.model) o.mo.model = gpu ? "preset:llama3.2-1b" : "preset:tiny";
    if (!o.ctxs) o.ctxs = gpu ? "4k:64k:x2" : "256:2k:x2";
    return run_sweep(&o, argc, argv);
}
