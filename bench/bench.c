/* orthros bench: a cartesian sweep over architecture x phase x context x batch. Each cell is warmed up, then
 * repeated until its noise (robust relative spread, robust_noise()) is under the target, the cell's time-out passes, or
 * --max-reps is reached; the raw samples, their statistics, the stated cost model (cost.c) and the achieved
 * fraction of ceilings measured at the start of the run are written to the result file as soon as the cell is
 * done. Timing: the backend's timer marks (CUDA events on the GPU, a monotonic clock on the CPU). */
#define _GNU_SOURCE
#include "bench.h"
#include "axes.h"
#include "backend.h"
#include "cli.h"
#include "cost.h"
#include "report.h"
#include "results.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_AXIS 64
#define RESAMPLES 2000

static const char *const arch_names[] = {"transformer", "orthros", "linear", "swa", "hybrid", NULL};
static const char *const phase_names[] = {"prefill", "decode", "e2e", "allreduce", NULL};

typedef struct {
    cli_model_opts mo;
    const char *archs, *ctxs, *phases, *batches, *json, *recipe, *out_dir, *anchors, *models;
    int decode_tokens, warmup, reps, max_reps, resume;
    double max_noise, timeout, cell_budget;
} bench_opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- ceilings ---- */

/* Seconds between two timer marks of the backend (CUDA events on cuda); < 0 on failure. */
static double marked_seconds(orthros_backend *be)
{
    double t = -1;
    return be->timer_mark(be, 1) || be->timer_seconds(be, 0, 1, &t) ? -1 : t;
}


static double time_median(double *t, int n)
{
    double m = NAN;
    orthros_stats_median(&m, t, (size_t)n);
    return m;
}

/* A bf16 (cuda) / fp32 (cpu) GEMM of n^3 and a device copy, as the run's own ceilings. */
static cJSON *measure_ceilings(orthros_backend *be)
{
    int cuda = strcmp(be->name, "cpu") != 0, n = cuda ? 8192 : 512;
    size_t copy_bytes = cuda ? (size_t)2 << 30 : (size_t)256 << 20;
    cJSON *c = cJSON_CreateObject();
    size_t elems = (size_t)n * n;
    void *a = be->alloc(be, elems * be->act_size), *b = be->alloc(be, elems * be->act_size);
    void *o = be->alloc(be, elems * be->act_size);
    double t[10];
    if (a && b && o && !be->fill_random(be, a, elems, 1, 1.0f) && !be->fill_random(be, b, elems, 2, 1.0f)) {
        for (int i = 0; i < 3; i++) be->gemm(be, o, a, b, n, n, n);
        be->sync(be);
        for (int i = 0; i < 10; i++) {
            be->timer_mark(be, 0);
            be->gemm(be, o, a, b, n, n, n);
            t[i] = marked_seconds(be);
        }
        cJSON_AddNumberToObject(c, "gemm_tflops", 2.0 * n * (double)n * n / time_median(t, 10) / 1e12);
        cJSON_AddNumberToObject(c, "gemm_n", n);
    }
    if (a) be->free(be, a);
    if (b) be->free(be, b);
    if (o) be->free(be, o);
    void *src = be->copy ? be->alloc(be, copy_bytes) : NULL, *dst = src ? be->alloc(be, copy_bytes) : NULL;
    if (src && dst && !be->zero(be, src, copy_bytes)) {
        for (int i = 0; i < 2; i++) be->copy(be, dst, src, copy_bytes);
        be->sync(be);
        for (int i = 0; i < 10; i++) {
            be->timer_mark(be, 0);
            be->copy(be, dst, src, copy_bytes);
            t[i] = marked_seconds(be);
        }
        cJSON_AddNumberToObject(c, "copy_tbps", 2.0 * (double)copy_bytes / time_median(t, 10) / 1e12);
        cJSON_AddNumberToObject(c, "copy_bytes", (double)copy_bytes);
    }
    if (src) be->free(be, src);
    if (dst) be->free(be, dst);
    return c;
}

/* ---- one cell ---- */

typedef struct {
    const char *arch, *phase;
    int ctx, batch;
} cell;

static int cell_matches(const cJSON *m, const cell *c)
{
    const cJSON *a = cJSON_GetObjectItem(m, "arch"), *p = cJSON_GetObjectItem(m, "phase");
    return cJSON_IsString(a) && cJSON_IsString(p) && !strcmp(a->valuestring, c->arch) &&
           !strcmp(p->valuestring, c->phase) && cJSON_GetObjectItem(m, "ctx")->valueint == c->ctx &&
           cJSON_GetObjectItem(m, "batch")->valueint == c->batch;
}

/* Noise as a robust relative spread: the interquartile range over the median, scaled to a normal's standard
 * deviation (IQR / 1.349), so that a few samples disturbed by the OS do not keep a cell repeating forever. */
static double robust_noise(const double *x, int n)
{
    double q1, q3, med;
    if (n < 2 || orthros_stats_quantile(&q1, x, (size_t)n, 0.25) || orthros_stats_quantile(&q3, x, (size_t)n, 0.75) ||
        orthros_stats_median(&med, x, (size_t)n) || med <= 0)
        return INFINITY;
    return (q3 - q1) / 1.349 / med;
}

/* One timed repetition of a cell on a prepared session; returns seconds (per token for decode) or < 0. */
static double run_once(orthros_backend *be, orthros_session *s, const cell *c, const int32_t *tok, int decode_tokens)
{
    int32_t next[4096], cur[4096];
    double t;
    if (!strcmp(c->phase, "decode")) {
        for (int b = 0; b < c->batch; b++) cur[b] = tok[b];
        if (be->timer_mark(be, 0)) return -1;
        for (int i = 0; i < decode_tokens; i++) {
            if (orthros_decode(s, cur, next, NULL)) return -1;
            memcpy(cur, next, sizeof(int32_t) * (size_t)c->batch);
        }
        t = marked_seconds(be) / decode_tokens;
        return t < 0 || orthros_session_rewind(s, c->ctx) ? -1 : t;
    }
    if (orthros_session_reset(s) || be->timer_mark(be, 0)) return -1;
    for (int b = 0; b < c->batch; b++)
        if (orthros_prefill(s, b, tok, c->ctx, NULL, &cur[b])) return -1;
    if (!strcmp(c->phase, "e2e"))
        for (int i = 0; i < decode_tokens; i++) {
            if (orthros_decode(s, cur, next, NULL)) return -1;
            memcpy(cur, next, sizeof(int32_t) * (size_t)c->batch);
        }
    return marked_seconds(be);
}

static cJSON *stats_json(const orthros_stats *st)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)st->n);
    cJSON_AddNumberToObject(o, "median", st->median);
    cJSON_AddNumberToObject(o, "q1", st->q1);
    cJSON_AddNumberToObject(o, "q3", st->q3);
    cJSON_AddNumberToObject(o, "min", st->min);
    cJSON_AddNumberToObject(o, "max", st->max);
    cJSON_AddNumberToObject(o, "mean", st->mean);
    cJSON_AddNumberToObject(o, "stdev", isnan(st->stdev) ? 0 : st->stdev);
    cJSON_AddNumberToObject(o, "cv", isnan(st->cv) ? 0 : st->cv);
    cJSON_AddNumberToObject(o, "ci95_lo", st->ci_lo);
    cJSON_AddNumberToObject(o, "ci95_hi", st->ci_hi);
    return o;
}

/* A measurement object holding only the cell's coordinates. */
static cJSON *cell_json(const cell *c, const bench_opts *o)
{
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "arch", c->arch);
    cJSON_AddStringToObject(out, "phase", c->phase);
    cJSON_AddNumberToObject(out, "ctx", c->ctx);
    cJSON_AddNumberToObject(out, "batch", c->batch);
    cJSON_AddNumberToObject(out, "decode_tokens", strcmp(c->phase, "prefill") ? o->decode_tokens : 0);
    return out;
}

/* The stated cost of one sample of a cell, and the tokens it processes. */
static orthros_cost cell_cost(orthros_model *m, const cell *c, int extra, int chunk, double *tokens)
{
    const orthros_model_config *cfg = orthros_model_get_config(m);
    const orthros_arch *a = orthros_model_get_arch(m);
    double act = (double)orthros_model_get_backend(m)->act_size;
    if (!strcmp(c->phase, "decode")) {
        *tokens = c->batch;
        return orthros_cost_decode(cfg, a, c->ctx, c->batch, act);
    }
    orthros_cost k = orthros_cost_prefill(cfg, a, c->ctx, c->batch, act, chunk);
    *tokens = (double)c->batch * c->ctx;
    for (int i = 0; i < extra; i++) {
        orthros_cost d = orthros_cost_decode(cfg, a, c->ctx + i, c->batch, act);
        k.flops += d.flops, k.attn_flops += d.attn_flops, k.bytes += d.bytes;
    }
    *tokens += (double)c->batch * extra;
    return k;
}

/* Warm-up, then repetitions of one(arg) (seconds, < 0 on failure) until the noise target, the time-out (once --reps
 * are done) or --max-reps; adds stop_reason, noise, samples and stats to out. Returns the count, or -1. */
static int take_samples(cJSON *out, const bench_opts *o, double (*one)(void *arg), void *arg, double *samples,
                        uint64_t seed, orthros_stats *st)
{
    int count = 0;
    const char *stop = "max_reps";
    for (int w = 0; w < o->warmup; w++)
        if (one(arg) < 0) return -1;
    double t_start = now_s();
    while (count < o->max_reps) {
        double t = one(arg);
        if (t < 0) return -1;
        samples[count++] = t;
        if (count >= o->reps && robust_noise(samples, count) * 100.0 <= o->max_noise) {
            stop = "noise_target";
            break;
        }
        if (count >= o->reps && now_s() - t_start >= o->timeout) { /* --reps is a floor, even on a slow machine */
            stop = "timeout";
            break;
        }
    }
    cJSON_AddStringToObject(out, "stop_reason", stop);
    cJSON_AddNumberToObject(out, "noise", count >= 2 ? robust_noise(samples, count) : 0);
    cJSON *arr = cJSON_AddArrayToObject(out, "samples");
    for (int i = 0; i < count; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(samples[i]));
    orthros_stats_fill(st, samples, (size_t)count, 0.95, RESAMPLES, seed);
    cJSON_AddItemToObject(out, "stats", stats_json(st));
    return count;
}

typedef struct {
    orthros_backend *be;
    orthros_session *s;
    const cell *c;
    const int32_t *tok;
    int decode_tokens;
} sample_once_args;

static double sample_once(void *arg)
{
    sample_once_args *a = arg;
    return run_once(a->be, a->s, a->c, a->tok, a->decode_tokens);
}

/* The all-reduce of the model's ranks alone, on a [ctx x batch][d_model] activation: the message of a prefill
 * chunk of ctx tokens of batch sequences, or of a decode step of batch sequences (ctx 1). A sample is the time
 * per all-reduce, the mean of 20 back to back; bus bandwidth as nccl-tests define it, 2 (N - 1) / N x bytes /
 * time, next to the link bandwidth the cost model assumes. */
typedef struct {
    orthros_model *m;
    int rows;
} allreduce_args;

static double allreduce_once(void *arg)
{
    allreduce_args *a = arg;
    double t = -1;
    return orthros_tp_allreduce_time(a->m, a->rows, 20, &t) ? -1 : t;
}

static cJSON *run_allreduce_cell(orthros_model *m, const cell *c, const bench_opts *o, uint64_t seed)
{
    cJSON *out = cell_json(c, o);
    int world = orthros_model_tp(m);
    long rows = (long)c->ctx * c->batch;
    if (world < 2 || rows > (1L << 30)) {
        cJSON_AddStringToObject(out, "skipped", world < 2 ? "one rank (--tp 1): there is no all-reduce"
                                                          : "ctx x batch rows exceed 2^30");
        return out;
    }
    double *samples = malloc(sizeof(double) * (size_t)o->max_reps);
    allreduce_args args = {m, (int)rows};
    orthros_stats st;
    if (!samples) {
        cJSON_AddStringToObject(out, "error", "out of host memory");
        return out;
    }
    if (take_samples(out, o, allreduce_once, &args, samples, seed, &st) < 0) {
        cJSON_AddStringToObject(out, "error", orthros_last_error());
        free(samples);
        return out;
    }
    double bytes = (double)rows * orthros_model_get_config(m)->d_model * (double)orthros_model_get_backend(m)->act_size;
    double bus = 2.0 * (world - 1) / world * bytes;
    cJSON *cost = cJSON_AddObjectToObject(out, "cost");
    cJSON_AddNumberToObject(cost, "flops", 0);
    cJSON_AddNumberToObject(cost, "attn_flops", 0);
    cJSON_AddNumberToObject(cost, "bytes", bytes);
    cJSON_AddNumberToObject(cost, "allreduce_seconds_model", orthros_cost_allreduce_seconds(bytes, world));
    cJSON *thr = cJSON_AddObjectToObject(out, "throughput");
    cJSON_AddNumberToObject(thr, "tokens_per_s", (double)rows / st.median);
    cJSON_AddNumberToObject(thr, "tflops", 0);
    cJSON_AddNumberToObject(thr, "tbps", bytes / st.median / 1e12);
    cJSON_AddNumberToObject(thr, "algbw_gbps", bytes / st.median / 1e9);
    cJSON_AddNumberToObject(thr, "busbw_gbps", bus / st.median / 1e9);
    cJSON_AddNumberToObject(thr, "model_busbw_gbps", ORTHROS_COST_LINK_BUS_BYTES_PER_S / 1e9);
    cJSON_AddNumberToObject(thr, "frac_model_busbw", bus / st.median / ORTHROS_COST_LINK_BUS_BYTES_PER_S);
    free(samples);
    return out;
}

/* Runs one cell; returns its measurement object (with "skipped" set when it could not run). */
static cJSON *run_cell(orthros_model *m, const cell *c, const bench_opts *o, const cJSON *ceil, uint64_t seed)
{
    if (!strcmp(c->phase, "allreduce")) return run_allreduce_cell(m, c, o, seed);
    orthros_backend *be = orthros_model_get_backend(m);
    const orthros_model_config *cfg = orthros_model_get_config(m);
    cJSON *out = cell_json(c, o);
    int is_decode = !strcmp(c->phase, "decode");
    int extra = strcmp(c->phase, "prefill") ? o->decode_tokens : 0;
    size_t free_b = 0, total_b = 0;
    be->mem_info(be, &free_b, &total_b);
    int chunk = o->mo.chunk;
    size_t need = orthros_session_bytes(m, c->batch, c->ctx + extra, chunk > 0 ? chunk : (c->ctx < 64 ? c->ctx : 64));
    if (need > free_b) {
        char why[256];
        snprintf(why, sizeof why, "needs %.2f GiB for its KV cache, state and activations; %.2f GiB free",
                 (double)need / (1 << 30), (double)free_b / (1 << 30));
        cJSON_AddStringToObject(out, "skipped", why);
        return out;
    }
    orthros_session *s = NULL;
    int32_t *tok = malloc(sizeof *tok * (size_t)c->ctx);
    double *samples = malloc(sizeof(double) * (size_t)o->max_reps);
    orthros_stats st;
    if (!tok || !samples) goto oom;
    for (int i = 0; i < c->ctx; i++) tok[i] = (int32_t)(orthros_uniform(seed, (uint64_t)i) * (float)cfg->vocab) % cfg->vocab;
    if (orthros_session_init(&s, m, c->batch, c->ctx + extra, chunk)) {
        cJSON_AddStringToObject(out, "skipped", orthros_last_error());
        goto done;
    }
    if (is_decode) {
        int32_t nx;
        for (int b = 0; b < c->batch; b++)
            if (orthros_prefill(s, b, tok, c->ctx, NULL, &nx)) goto fail;
    }
    sample_once_args args = {be, s, c, tok, o->decode_tokens};
    if (take_samples(out, o, sample_once, &args, samples, seed, &st) < 0) goto fail;
    cJSON_AddNumberToObject(out, "chunk", orthros_session_chunk(s));

    /* Cost model and throughput, per sample unit (a prefill, a decode step, or prefill + N steps). */
    double tokens;
    orthros_cost k = cell_cost(m, c, extra, orthros_session_chunk(s), &tokens);
    cJSON *cost = cJSON_AddObjectToObject(out, "cost");
    cJSON_AddNumberToObject(cost, "flops", k.flops);
    cJSON_AddNumberToObject(cost, "attn_flops", k.attn_flops);
    cJSON_AddNumberToObject(cost, "bytes", k.bytes);
    int world = orthros_model_tp(m);
    if (world > 1) { /* two all-reduces of [rows][d_model] per layer and token */
        double ar = 2.0 * cfg->n_layers * tokens * cfg->d_model * (double)be->act_size;
        cJSON_AddNumberToObject(cost, "allreduce_bytes", ar);
        cJSON_AddNumberToObject(cost, "allreduce_seconds_model", orthros_cost_allreduce_seconds(ar, world));
    }
    cJSON *thr = cJSON_AddObjectToObject(out, "throughput");
    cJSON_AddNumberToObject(thr, "tokens_per_s", tokens / st.median);
    double tflops = k.flops / st.median / 1e12, tbps = k.bytes / st.median / 1e12;
    cJSON_AddNumberToObject(thr, "tflops", tflops);
    cJSON_AddNumberToObject(thr, "tbps", tbps);
    const cJSON *g = cJSON_GetObjectItem(ceil, "gemm_tflops"), *cp = cJSON_GetObjectItem(ceil, "copy_tbps");
    /* The ceilings are one GPU's; a tensor-parallel cell runs on `world` of them (cpu ranks share one cpu). */
    int devices = strcmp(be->name, "cpu") ? world : 1;
    if (g) cJSON_AddNumberToObject(thr, "frac_gemm_ceiling", tflops / g->valuedouble / devices);
    if (cp) cJSON_AddNumberToObject(thr, "frac_copy_ceiling", tbps / cp->valuedouble / devices);
    cJSON *mem = cJSON_AddObjectToObject(out, "memory");
    cJSON_AddNumberToObject(mem, "weights_bytes", (double)orthros_model_weight_bytes(m));
    cJSON_AddNumberToObject(mem, "session_bytes",
                            (double)orthros_session_bytes(m, c->batch, c->ctx + extra, orthros_session_chunk(s)));
    be->mem_info(be, &free_b, &total_b);
    cJSON_AddNumberToObject(mem, "device_used_bytes", (double)(total_b - free_b));
    goto done;
fail:
    cJSON_AddStringToObject(out, "error", orthros_last_error());
    goto done;
oom:
    cJSON_AddStringToObject(out, "error", "out of host memory");
done:
    orthros_session_free(s);
    free(tok);
    free(samples);
    return out;
}

/* ---- speedups ---- */

static const cJSON *find_meas(const cJSON *meas, const cell *c)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, meas) if (cell_matches(m, c) && cJSON_GetObjectItem(m, "samples")) return m;
    return NULL;
}

static double *samples_of(const cJSON *m, size_t *n)
{
    const cJSON *arr = cJSON_GetObjectItem(m, "samples");
    *n = (size_t)cJSON_GetArraySize(arr);
    double *v = malloc(sizeof(double) * (*n ? *n : 1));
    for (size_t i = 0; i < *n; i++) v[i] = cJSON_GetArrayItem(arr, (int)i)->valuedouble;
    return v;
}

/* Every architecture over transformer, per (phase, batch, ctx); then per (arch, phase, batch) the crossover
 * length and where 21.9x is reached (interpolated in log length). */
static cJSON *speedups(const cJSON *meas, uint64_t seed)
{
    cJSON *out = cJSON_CreateObject(), *cells = cJSON_AddArrayToObject(out, "cells");
    cJSON *summary = cJSON_AddArrayToObject(out, "summary");
    const cJSON *m;
    cJSON_ArrayForEach(m, meas)
    {
        const char *arch = cJSON_GetObjectItem(m, "arch")->valuestring;
        if (!strcmp(arch, "transformer") || !cJSON_GetObjectItem(m, "samples") ||
            !strcmp(cJSON_GetObjectItem(m, "phase")->valuestring, "allreduce"))
            continue;
        cell base = {"transformer", cJSON_GetObjectItem(m, "phase")->valuestring, cJSON_GetObjectItem(m, "ctx")->valueint,
                     cJSON_GetObjectItem(m, "batch")->valueint};
        const cJSON *b = find_meas(meas, &base);
        if (!b) continue;
        size_t nx, ny;
        double *x = samples_of(b, &nx), *y = samples_of(m, &ny), lo = NAN, hi = NAN, mx = NAN, my = NAN;
        orthros_stats_median(&mx, x, nx);
        orthros_stats_median(&my, y, ny);
        /* speedup = median(transformer) / median(arch): the "new" sample is transformer's. */
        orthros_stats_bootstrap_ratio_ci(&lo, &hi, x, nx, y, ny, 0.95, RESAMPLES, seed);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "arch", arch);
        cJSON_AddStringToObject(e, "phase", base.phase);
        cJSON_AddNumberToObject(e, "ctx", base.ctx);
        cJSON_AddNumberToObject(e, "batch", base.batch);
        cJSON_AddNumberToObject(e, "speedup", mx / my);
        cJSON_AddNumberToObject(e, "ci95_lo", lo);
        cJSON_AddNumberToObject(e, "ci95_hi", hi);
        cJSON_AddItemToArray(cells, e);
        free(x);
        free(y);
    }
    /* Group: cells of the same (arch, phase, batch), in increasing ctx. */
    int n = cJSON_GetArraySize(cells);
    char *done = calloc((size_t)n + 1, 1);
    for (int i = 0; i < n; i++) {
        if (done[i]) continue;
        const cJSON *ci = cJSON_GetArrayItem(cells, i);
        const char *arch = cJSON_GetObjectItem(ci, "arch")->valuestring, *ph = cJSON_GetObjectItem(ci, "phase")->valuestring;
        int batch = cJSON_GetObjectItem(ci, "batch")->valueint;
        double ctx[MAX_AXIS * 4], sp[MAX_AXIS * 4];
        int k = 0;
        for (int j = i; j < n && k < MAX_AXIS * 4; j++) {
            const cJSON *cj = cJSON_GetArrayItem(cells, j);
            if (strcmp(cJSON_GetObjectItem(cj, "arch")->valuestring, arch) ||
                strcmp(cJSON_GetObjectItem(cj, "phase")->valuestring, ph) || cJSON_GetObjectItem(cj, "batch")->valueint != batch)
                continue;
            done[j] = 1;
            double cx = cJSON_GetObjectItem(cj, "ctx")->valuedouble, s = cJSON_GetObjectItem(cj, "speedup")->valuedouble;
            int at = k++;
            while (at > 0 && ctx[at - 1] > cx) {
                ctx[at] = ctx[at - 1], sp[at] = sp[at - 1];
                at--;
            }
            ctx[at] = cx, sp[at] = s;
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "arch", arch);
        cJSON_AddStringToObject(e, "phase", ph);
        cJSON_AddNumberToObject(e, "batch", batch);
        double cross = -1, reach = -1, best = 0;
        for (int j = 0; j < k; j++) {
            if (sp[j] > best) best = sp[j];
            if (cross < 0 && sp[j] >= 1.0) cross = ctx[j];
            if (reach < 0 && sp[j] >= 21.9) {
                if (j == 0) reach = ctx[0];
                else {
                    double f = (log(21.9) - log(sp[j - 1])) / (log(sp[j]) - log(sp[j - 1]));
                    reach = exp(log(ctx[j - 1]) + f * (log(ctx[j]) - log(ctx[j - 1])));
                }
            }
        }
        if (cross >= 0) cJSON_AddNumberToObject(e, "crossover_ctx", cross);
        else cJSON_AddNullToObject(e, "crossover_ctx");
        cJSON_AddBoolToObject(e, "reached_21_9x", reach >= 0);
        if (reach >= 0) cJSON_AddNumberToObject(e, "ctx_at_21_9x", reach);
        else cJSON_AddNullToObject(e, "ctx_at_21_9x");
        cJSON_AddNumberToObject(e, "max_speedup", best);
        cJSON_AddItemToArray(summary, e);
    }
    free(done);
    return out;
}

/* Predicted seconds of one repetition of a cell, extrapolating the FLOP rate measured in the longest shorter
 * cell of the same arch, phase and batch; 0 when there is none to extrapolate from. */
static double predict_cell_seconds(orthros_model *m, const cJSON *meas, const cell *c, const bench_opts *o,
                                   int *from_ctx, double *rate)
{
    const cJSON *best = NULL, *e;
    if (!strcmp(c->phase, "allreduce")) return 0;
    cJSON_ArrayForEach(e, meas)
    {
        if (!cJSON_GetObjectItem(e, "samples") || strcmp(cJSON_GetObjectItem(e, "arch")->valuestring, c->arch) ||
            strcmp(cJSON_GetObjectItem(e, "phase")->valuestring, c->phase) ||
            cJSON_GetObjectItem(e, "batch")->valueint != c->batch || cJSON_GetObjectItem(e, "ctx")->valueint >= c->ctx)
            continue;
        if (!best || cJSON_GetObjectItem(e, "ctx")->valueint > cJSON_GetObjectItem(best, "ctx")->valueint) best = e;
    }
    if (!best) return 0;
    double flops_prev = cJSON_GetObjectItem(cJSON_GetObjectItem(best, "cost"), "flops")->valuedouble;
    double t_prev = cJSON_GetObjectItem(cJSON_GetObjectItem(best, "stats"), "median")->valuedouble;
    double tokens;
    int extra = strcmp(c->phase, "prefill") ? o->decode_tokens : 0;
    orthros_cost k = cell_cost(m, c, extra, o->mo.chunk, &tokens);
    *from_ctx = cJSON_GetObjectItem(best, "ctx")->valueint;
    *rate = flops_prev / t_prev;
    return k.flops / *rate;
}

/* ---- the sweep ---- */

static int parse_names(char (*out)[ORTHROS_AXIS_NAME_MAX], size_t *n, const char *text, const char *const *allowed)
{
    return orthros_axis_parse_names(out, MAX_AXIS, n, text, allowed);
}

static int parse_ints(int *out, size_t *n, const char *text, int64_t lo, int64_t hi)
{
    int64_t v[ORTHROS_AXIS_MAX_VALUES];
    int rc = orthros_axis_parse_int_range(v, MAX_AXIS, n, text, lo, hi);
    for (size_t i = 0; !rc && i < *n; i++) out[i] = (int)v[i];
    return rc;
}

static void print_row(const cJSON *m)
{
    const cJSON *st = cJSON_GetObjectItem(m, "stats"), *thr = cJSON_GetObjectItem(m, "throughput");
    const char *ph = cJSON_GetObjectItem(m, "phase")->valuestring;
    printf("%-12s %-8s %9d %5d ", cJSON_GetObjectItem(m, "arch")->valuestring, ph, cJSON_GetObjectItem(m, "ctx")->valueint,
           cJSON_GetObjectItem(m, "batch")->valueint);
    if (!st) {
        const cJSON *why = cJSON_GetObjectItem(m, "skipped");
        if (!why) why = cJSON_GetObjectItem(m, "error");
        printf("%s\n", why ? why->valuestring : "not measured");
        return;
    }
    const cJSON *bus = cJSON_GetObjectItem(thr, "busbw_gbps");
    if (bus) {
        printf("%11.4f [%9.4f, %9.4f] %5.1f%%   busbw %.1f GB/s (%.0f%% of the cost model's %.0f GB/s)\n",
               cJSON_GetObjectItem(st, "median")->valuedouble * 1e3, cJSON_GetObjectItem(st, "ci95_lo")->valuedouble * 1e3,
               cJSON_GetObjectItem(st, "ci95_hi")->valuedouble * 1e3, cJSON_GetObjectItem(st, "cv")->valuedouble * 100,
               bus->valuedouble, cJSON_GetObjectItem(thr, "frac_model_busbw")->valuedouble * 100,
               cJSON_GetObjectItem(thr, "model_busbw_gbps")->valuedouble);
        return;
    }
    const cJSON *fg = cJSON_GetObjectItem(thr, "frac_gemm_ceiling"), *fc = cJSON_GetObjectItem(thr, "frac_copy_ceiling");
    printf("%11.4f [%9.4f, %9.4f] %5.1f%% %12.1f %9.3f %6.1f%% %8.3f %6.1f%%\n",
           cJSON_GetObjectItem(st, "median")->valuedouble * 1e3, cJSON_GetObjectItem(st, "ci95_lo")->valuedouble * 1e3,
           cJSON_GetObjectItem(st, "ci95_hi")->valuedouble * 1e3, cJSON_GetObjectItem(st, "cv")->valuedouble * 100,
           cJSON_GetObjectItem(thr, "tokens_per_s")->valuedouble, cJSON_GetObjectItem(thr, "tflops")->valuedouble,
           fg ? fg->valuedouble * 100 : 0, cJSON_GetObjectItem(thr, "tbps")->valuedouble, fc ? fc->valuedouble * 100 : 0);
}

static cJSON *config_json(const bench_opts *o, const char *device)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model", o->mo.model);
    cJSON_AddStringToObject(c, "arch", o->archs);
    cJSON_AddStringToObject(c, "ctx", o->ctxs);
    cJSON_AddStringToObject(c, "phase", o->phases);
    cJSON_AddStringToObject(c, "batch", o->batches);
    cJSON_AddStringToObject(c, "device", device);
    cJSON_AddNumberToObject(c, "decode_tokens", o->decode_tokens);
    cJSON_AddNumberToObject(c, "warmup", o->warmup);
    cJSON_AddNumberToObject(c, "reps", o->reps);
    cJSON_AddNumberToObject(c, "max_reps", o->max_reps);
    cJSON_AddNumberToObject(c, "max_noise_pct", o->max_noise);
    cJSON_AddNumberToObject(c, "timeout_s", o->timeout);
    cJSON_AddNumberToObject(c, "cell_budget_s", o->cell_budget);
    cJSON_AddNumberToObject(c, "chunk", o->mo.chunk);
    cJSON_AddNumberToObject(c, "tp", o->mo.tp);
    cJSON_AddNumberToObject(c, "tail", o->mo.tail);
    cJSON_AddNumberToObject(c, "window", o->mo.window);
    cJSON_AddNumberToObject(c, "hybrid_every", o->mo.hybrid_every);
    cJSON_AddStringToObject(c, "feature_map", o->mo.feature_map ? o->mo.feature_map : "");
    cJSON_AddStringToObject(c, "timer", strcmp(device, "cpu") ? "CUDA events on the backend's stream"
                                                               : "monotonic clock (work is done when each call returns)");
    return c;
}

/* The sweep of one model; writes o->json after every cell. Returns 0 or an error (already printed). */
static int run_sweep(const bench_opts *o, int argc, char **argv)
{
    const char *cmd = "bench";
    char archs[MAX_AXIS][ORTHROS_AXIS_NAME_MAX], phases[MAX_AXIS][ORTHROS_AXIS_NAME_MAX];
    int ctxs[MAX_AXIS], batches[MAX_AXIS];
    size_t na, np, nc, nb;
    int rc;
    orthros_arch_opts ao;
    if ((rc = parse_names(archs, &na, o->archs, arch_names)) || (rc = parse_names(phases, &np, o->phases, phase_names)) ||
        (rc = parse_ints(ctxs, &nc, o->ctxs, 1, 1 << 30)) || (rc = parse_ints(batches, &nb, o->batches, 1, 4096)) ||
        (rc = cli_model_opts_resolve(&ao, &o->mo)))
        return cli_fail(cmd, rc);
    if (o->decode_tokens < 1 || o->reps < 1 || o->warmup < 0 || o->max_reps < o->reps || o->timeout <= 0 ||
        o->max_noise < 0) {
        fprintf(stderr, "orthros bench: error: need decode-tokens >= 1, reps >= 1, warmup >= 0, max-reps >= reps, "
                        "timeout > 0, max-noise >= 0\n");
        return 2;
    }
    orthros_backend *be = NULL;
    if ((rc = orthros_backend_create(&be, o->mo.device))) return cli_fail(cmd, rc);
    cJSON *root = NULL, *old = NULL;
    if (o->resume && (rc = orthros_result_load(&old, o->json))) goto fail;
    root = orthros_result_new("bench", argc, argv, (uint64_t)o->mo.seed, be);
    cJSON *run = cJSON_GetObjectItem(root, "run");
    cJSON_AddItemToObject(run, "config", config_json(o, be->name));
    if (old) {
        const cJSON *oc = cJSON_GetObjectItem(cJSON_GetObjectItem(old, "run"), "config");
        const cJSON *om = cJSON_GetObjectItem(oc, "model"), *od = cJSON_GetObjectItem(oc, "decode_tokens");
        if (!cJSON_IsString(om) || strcmp(om->valuestring, o->mo.model) || !od || od->valueint != o->decode_tokens) {
            rc = orthros_error(ORTHROS_EINVAL, "%s holds results of another model or decode-tokens; cannot resume", o->json);
            goto fail;
        }
    }
    fprintf(stderr, "bench: measuring ceilings on %s (%s)...\n", be->name, be->info.name);
    cJSON *ceil = measure_ceilings(be);
    cJSON_AddItemToObject(root, "ceilings", ceil);
    cJSON *meas = cJSON_AddArrayToObject(root, "measurements");
    const cJSON *om;
    if (old) cJSON_ArrayForEach(om, cJSON_GetObjectItem(old, "measurements")) cJSON_AddItemToArray(meas, cJSON_Duplicate(om, 1));
    if ((rc = orthros_result_write(o->json, root))) goto fail;

    size_t total = na * np * nc * nb, idx = 0;
    double t0 = now_s();
    printf("%-12s %-8s %9s %5s %11s %23s %6s %12s %9s %7s %8s %7s\n", "arch", "phase", "ctx", "batch", "median_ms",
           "ci95_ms", "cv", "tokens/s", "TFLOP/s", "%gemm", "TB/s", "%copy");
    for (size_t ia = 0; ia < na; ia++) {
        orthros_model *m = NULL;
        ao.arch = archs[ia];
        for (size_t ip = 0; ip < np; ip++)
            for (size_t ic = 0; ic < nc; ic++)
                for (size_t ib = 0; ib < nb; ib++) {
                    cell c = {archs[ia], phases[ip], ctxs[ic], batches[ib]};
                    idx++;
                    if (find_meas(meas, &c)) {
                        fprintf(stderr, "[%zu/%zu] %s %s ctx %d batch %d: already in %s, skipped\n", idx, total, c.arch,
                                c.phase, c.ctx, c.batch, o->json);
                        continue;
                    }
                    if (!m && (rc = orthros_model_load(&m, be, o->mo.model, &ao, (uint64_t)o->mo.seed))) goto fail;
                    double el = now_s() - t0;
                    fprintf(stderr, "[%zu/%zu] %s %s ctx %d batch %d (elapsed %.0f s)...\n", idx, total, c.arch,
                            c.phase, c.ctx, c.batch, el);
                    int from = 0;
                    double rate = 0, one = o->cell_budget > 0 ? predict_cell_seconds(m, meas, &c, o, &from, &rate) : 0;
                    bench_opts oc = *o; /* this cell's repetitions */
                    char why[256] = "";
                    if (one > o->cell_budget) {
                        snprintf(why, sizeof why,
                                 "predicted %.0f s for one repetition (at the %.3g TFLOP/s measured at ctx %d) exceeds "
                                 "--cell-budget %.0f s",
                                 one, rate / 1e12, from, o->cell_budget);
                    } else if (one * (o->warmup + o->reps) > o->cell_budget) {
                        /* One repetition fits but warm-up + --reps do not: as many as fit, no warm-up (a
                         * repetition this long is its own warm-up many times over). */
                        oc.warmup = 0;
                        oc.reps = oc.max_reps = (int)fmin(o->reps, fmax(1.0, floor(o->cell_budget / one)));
                    }
                    cJSON *res;
                    if (why[0]) {
                        res = cell_json(&c, o);
                        cJSON_AddStringToObject(res, "skipped", why);
                    } else {
                        res = run_cell(m, &c, &oc, ceil, (uint64_t)o->mo.seed);
                        if (oc.reps != o->reps || oc.warmup != o->warmup || oc.max_reps != o->max_reps) {
                            snprintf(why, sizeof why,
                                     "predicted %.0f s a repetition (at the %.3g TFLOP/s measured at ctx %d): %d "
                                     "repetition%s and no warm-up, to fit --cell-budget %.0f s",
                                     one, rate / 1e12, from, oc.reps, oc.reps > 1 ? "s" : "", o->cell_budget);
                            cJSON_AddStringToObject(res, "reps_reduced", why);
                        }
                    }
                    /* Drop an earlier skipped/failed record of the same cell. */
                    for (int k = cJSON_GetArraySize(meas) - 1; k >= 0; k--)
                        if (cell_matches(cJSON_GetArrayItem(meas, k), &c)) cJSON_DeleteItemFromArray(meas, k);
                    cJSON_AddItemToArray(meas, res);
                    print_row(res);
                    fflush(stdout);
                    cJSON_DeleteItemFromObject(root, "speedups");
                    cJSON_AddItemToObject(root, "speedups", speedups(meas, (uint64_t)o->mo.seed));
                    if ((rc = orthros_result_write(o->json, root))) {
                        orthros_model_free(m);
                        goto fail;
                    }
                    el = now_s() - t0;
                    fprintf(stderr, "[%zu/%zu] done, elapsed %.0f s, about %.0f s to go\n", idx, total, el,
                            el / (double)idx * (double)(total - idx));
                }
        orthros_model_free(m);
    }
    char now[64];
    orthros_result_now(now, sizeof now);
    cJSON_ReplaceItemInObject(run, "end_time", cJSON_CreateString(now));
    cJSON_DeleteItemFromObject(root, "speedups");
    cJSON *sp = speedups(meas, (uint64_t)o->mo.seed);
    cJSON_AddItemToObject(root, "speedups", sp);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(sp, "cells"))
        printf("speedup %-10s over transformer, %-7s ctx %8d batch %3d: %8.2fx [%.2f, %.2f]\n",
               cJSON_GetObjectItem(e, "arch")->valuestring, cJSON_GetObjectItem(e, "phase")->valuestring,
               cJSON_GetObjectItem(e, "ctx")->valueint, cJSON_GetObjectItem(e, "batch")->valueint,
               cJSON_GetObjectItem(e, "speedup")->valuedouble, cJSON_GetObjectItem(e, "ci95_lo")->valuedouble,
               cJSON_GetObjectItem(e, "ci95_hi")->valuedouble);
    rc = orthros_result_write(o->json, root);
    if (!rc) fprintf(stderr, "bench: results in %s\n", o->json);
fail:
    if (rc) cli_fail(cmd, rc);
    cJSON_Delete(root);
    cJSON_Delete(old);
    orthros_backend_free(be);
    return rc ? 1 : 0;
}

/* The named sweep behind the paper's headline claim: every model's sweep is resumable (a long run can be
 * split over several calls), and the report is rewritten from whatever the result files hold. */
static int run_recipe(bench_opts *o, int argc, char **argv)
{
    if (strcmp(o->recipe, "reproduce-21.9x")) {
        fprintf(stderr, "orthros bench: error: unknown recipe \"%s\" (reproduce-21.9x)\n", o->recipe);
        return 2;
    }
    char models[8][ORTHROS_AXIS_NAME_MAX * 4];
    int n_models = 0;
    {
        /* Model specs hold '/' and ':' (paths, presets), so split by hand rather than as names. */
        const char *p = o->models ? o->models : "preset:llama3.2-1b,preset:llama3.1-8b";
        while (*p && n_models < 8) {
            size_t len = strcspn(p, ",");
            if (!len || len >= sizeof models[0]) {
                fprintf(stderr, "orthros bench: error: bad --models list \"%s\"\n", o->models);
                return 2;
            }
            memcpy(models[n_models], p, len);
            models[n_models++][len] = '\0';
            p += len + (p[len] == ',');
        }
    }
    const char *dir = o->out_dir ? o->out_dir : "data/results/reproduce-21.9x";
    char paths[8][4096], md[4096];
    const char *list[8];
    char mk[4200];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", dir);
    if (system(mk) != 0) {
        fprintf(stderr, "orthros bench: error: cannot create %s\n", dir);
        return 1;
    }
    o->archs = "transformer,orthros";
    o->phases = "prefill";
    o->batches = "1";
    if (!o->ctxs) o->ctxs = "4k:1m:x2";
    o->resume = 1;
    if (o->cell_budget <= 0) o->cell_budget = 240;
    int status = 0;
    for (int i = 0; i < n_models; i++) {
        const char *base = strrchr(models[i], ':') ? strrchr(models[i], ':') + 1 : models[i];
        if (strrchr(base, '/')) base = strrchr(base, '/') + 1;
        snprintf(paths[i], sizeof paths[i], "%s/%s.json", dir, base);
        list[i] = paths[i];
        o->mo.model = models[i];
        o->json = paths[i];
        fprintf(stderr, "recipe reproduce-21.9x: %s -> %s\n", models[i], paths[i]);
        status = run_sweep(o, argc, argv);
        if (status) break;
    }
    snprintf(md, sizeof md, "%s/report.md", dir);
    int rc = orthros_bench_report(md, list, n_models, o->anchors);
    if (rc) return cli_fail("bench", rc);
    fprintf(stderr, "recipe reproduce-21.9x: report in %s\n", md);
    return status;
}

int orthros_cmd_bench(int argc, char **argv)
{
    bench_opts o = {.archs = "transformer,orthros", .ctxs = NULL, .phases = "prefill,decode", .batches = "1",
                    .json = "orthros-bench.json", .decode_tokens = 16, .warmup = 1, .reps = 5, .max_reps = 100,
                    .max_noise = 2.0, .timeout = 10.0};
    cli_model_opts_default(&o.mo);
    o.mo.model = NULL;
    cli_opt t[64];
    int n = cli_model_opts_table(t, 0, &o.mo);
    t[1] = (cli_opt){"arch", CLI_STR, &o.archs, "LIST", "architectures, comma-separated (default transformer,orthros)"};
    t[n++] = (cli_opt){"ctx", CLI_STR, &o.ctxs, "LIST",
                       "context lengths: 1k,4k or ranges 1k:1m:x2, 0:4k:+1k (default 256:2k:x2 on cpu, 4k:64k:x2 on cuda)"};
    t[n++] = (cli_opt){"phase", CLI_STR, &o.phases, "LIST",
                       "prefill,decode,e2e,allreduce (default prefill,decode; allreduce: --tp ranks' all-reduce of "
                       "ctx x batch rows)"};
    t[n++] = (cli_opt){"batch", CLI_STR, &o.batches, "LIST", "batch sizes (default 1)"};
    t[n++] = (cli_opt){"decode-tokens", CLI_INT, &o.decode_tokens, "N",
                       "decode steps per decode sample, and generated tokens of e2e (default 16)"};
    t[n++] = (cli_opt){"warmup", CLI_INT, &o.warmup, "N", "untimed runs per cell (default 1)"};
    t[n++] = (cli_opt){"reps", CLI_INT, &o.reps, "N", "minimum timed repetitions per cell (default 5)"};
    t[n++] = (cli_opt){"max-reps", CLI_INT, &o.max_reps, "N", "maximum repetitions per cell (default 100)"};
    t[n++] = (cli_opt){"max-noise", CLI_DOUBLE, &o.max_noise, "PCT",
                       "stop repeating once the samples' noise (IQR / 1.349 / median) is under PCT (default 2)"};
    t[n++] = (cli_opt){"timeout", CLI_DOUBLE, &o.timeout, "S", "stop repeating a cell after S seconds, once --reps are done (default 10)"};
    t[n++] = (cli_opt){"json", CLI_STR, &o.json, "FILE", "result file, rewritten after every cell (default orthros-bench.json)"};
    t[n++] = (cli_opt){"resume", CLI_FLAG, &o.resume, NULL, "keep the cells already in --json and run only the rest"};
    t[n++] = (cli_opt){"cell-budget", CLI_DOUBLE, &o.cell_budget, "S",
                       "skip a cell predicted (from the FLOP rate of the longest shorter cell) to take more than S seconds"};
    t[n++] = (cli_opt){"recipe", CLI_STR, &o.recipe, "NAME",
                       "a named sweep: reproduce-21.9x (Llama-3.2-1B and 3.1-8B shapes, transformer vs orthros, prefill "
                       "4K to 1M, resumable, with a markdown report)"};
    t[n++] = (cli_opt){"models", CLI_STR, &o.models, "LIST",
                       "recipe: models to run (default preset:llama3.2-1b,preset:llama3.1-8b)"};
    t[n++] = (cli_opt){"out-dir", CLI_STR, &o.out_dir, "DIR", "recipe: where its result files and report go "
                                                               "(default data/results/reproduce-21.9x)"};
    t[n++] = (cli_opt){"anchors", CLI_STR, &o.anchors, "FILE",
                       "recipe: anchors.json of kernels/bench/anchors.py (same GPU) to quote in the report"};
    const char *pos[1];
    int npos, pr = cli_parse(argc, argv, 2, t, n, "bench",
                             "Times prefill, decode and end-to-end generation over a sweep of architectures, context "
                             "lengths and batch sizes, and writes a self-describing JSON result file.\n"
                             "Without --model it runs preset:tiny on the cpu and preset:llama3.2-1b on cuda.",
                             pos, 0, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    int gpu = strcmp(o.mo.device, "cpu") && (strcmp(o.mo.device, "auto") || orthros_cuda_available());
    if (o.recipe) return run_recipe(&o, argc, argv);
    if (!o.mo.model) o.mo.model = gpu ? "preset:llama3.2-1b" : "preset:tiny";
    if (!o.ctxs) o.ctxs = gpu ? "4k:64k:x2" : "256:2k:x2";
    return run_sweep(&o, argc, argv);
}
