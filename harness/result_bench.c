/* Bench result files: the typed cells, their one reader (with validation) and one writer. */
#define _GNU_SOURCE
#include "result_bench.h"
#include "gpu_state.h"
#include "keyset.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG 1e300 /* an upper bound for quantities that have none */

/* ---- cells ---- */

void orthros_bench_cell_init(orthros_bench_cell *c)
{
    memset(c, 0, sizeof *c);
    c->noise = c->flops = c->attn_flops = c->bytes = NAN;
    c->tokens_per_s = c->tflops = c->tbps = c->frac_gemm = c->frac_copy = c->frac_read = NAN;
    c->floor_s = c->weights_bytes = c->session_bytes = c->device_used_bytes = NAN;
    c->ttft_s = c->tpot_s = c->tpot_floor_s = NAN;
    c->gpu_sm_clock_mhz = c->gpu_sm_clock_max_mhz = c->gpu_power_w = c->gpu_power_limit_w = NAN;
    c->stats.median = c->stats.ci_lo = c->stats.ci_hi = NAN;
}

void orthros_bench_cell_set_gpu(orthros_bench_cell *c, const char *bus_id)
{
    orthros_gpu_state st;
    if (orthros_gpu_state_read(bus_id, &st)) return;
    c->gpu_sm_clock_mhz = st.sm_clock_mhz, c->gpu_sm_clock_max_mhz = st.sm_clock_max_mhz;
    c->gpu_power_w = st.power_w, c->gpu_power_limit_w = st.power_limit_w;
    c->gpu_clock_limits[0] = '\0';
    if (st.have_reasons) orthros_gpu_reasons_text(st.reasons, c->gpu_clock_limits, sizeof c->gpu_clock_limits);
}

const char *orthros_bench_clock_note(const orthros_bench_file *f, char *buf, size_t n)
{
    enum { MAXR = 12 };
    char names[MAXR][40];
    int counts[MAXR], nr = 0;
    size_t measured = 0, limited = 0;
    double lo = INFINITY, hi = -INFINITY, max = NAN;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < f->n_cells; i++) {
        const orthros_bench_cell *c = &f->cells[i];
        if (c->state != ORTHROS_CELL_MEASURED || !c->gpu_clock_limits[0]) continue;
        measured++;
        int any = 0;
        char list[sizeof c->gpu_clock_limits];
        snprintf(list, sizeof list, "%s", c->gpu_clock_limits);
        for (char *save = NULL, *r = strtok_r(list, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
            if (!strcmp(r, "gpu_idle") || !strcmp(r, "none")) continue;
            any = 1;
            int k = 0;
            while (k < nr && strcmp(names[k], r)) k++;
            if (k == nr && nr < MAXR) snprintf(names[nr], sizeof names[nr], "%s", r), counts[nr++] = 0;
            if (k < nr) counts[k]++;
        }
        if (!any) continue;
        limited++;
        if (isfinite(c->gpu_sm_clock_mhz)) {
            lo = fmin(lo, c->gpu_sm_clock_mhz);
            hi = fmax(hi, c->gpu_sm_clock_mhz);
        }
        if (isfinite(c->gpu_sm_clock_max_mhz)) max = c->gpu_sm_clock_max_mhz;
    }
    if (!limited || !n) return buf;
    size_t used = 0;
    int w = snprintf(buf, n, "the GPU clock was held below its maximum at the end of %zu of %zu cells (", limited, measured);
    for (int k = 0; k < nr && w >= 0 && (used += (size_t)w) < n; k++)
        w = snprintf(buf + used, n - used, "%s%s %d", k ? ", " : "", names[k], counts[k]);
    if (w >= 0 && (used += (size_t)w) < n) {
        if (isfinite(lo) && isfinite(max))
            snprintf(buf + used, n - used, "): SM %.0f-%.0f of %.0f MHz", lo, hi, max);
        else
            snprintf(buf + used, n - used, ")");
    }
    return buf;
}

void orthros_bench_cell_free(orthros_bench_cell *c)
{
    free(c->reason);
    free(c->reps_reduced);
    free(c->samples);
    free(c->round_ends);
    free(c->ttft);
    orthros_bench_cell_init(c);
}

int orthros_bench_cell_set_reason(orthros_bench_cell *c, orthros_cell_state state, const char *reason)
{
    char *r = strdup(reason && reason[0] ? reason : "unknown");
    if (!r) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    free(c->reason);
    c->reason = r;
    c->state = state;
    return 0;
}

int orthros_bench_cell_same_key(const orthros_bench_cell *a, const orthros_bench_cell *b)
{
    if (a->op[0] || b->op[0]) return !strcmp(a->op, b->op) && !strcmp(a->shape, b->shape);
    return !strcmp(a->arch, b->arch) && !strcmp(a->phase, b->phase) && a->ctx == b->ctx && a->batch == b->batch;
}

void orthros_bench_cell_set_key(char *out, size_t n, const orthros_bench_cell *c)
{
    /* \x1f cannot occur in a string a reader accepts (control characters are refused). */
    if (c->op[0]) snprintf(out, n, "k\x1f%s\x1f%s", c->op, c->shape);
    else snprintf(out, n, "m\x1f%s\x1f%s\x1f%d\x1f%d", c->arch, c->phase, c->ctx, c->batch);
}

void orthros_bench_cell_key(char *out, size_t n, const orthros_bench_cell *c)
{
    if (c->op[0]) snprintf(out, n, "%s %s", c->op, c->shape);
    else snprintf(out, n, "%s %s ctx %d batch %d", c->arch, c->phase, c->ctx, c->batch);
}

void orthros_bench_file_init(orthros_bench_file *f)
{
    memset(f, 0, sizeof *f);
    f->ceilings = (orthros_ceilings){NAN, 0, NAN, NAN, NAN, NAN};
    orthros_sched_config_init(&f->cfg.sched);
    f->cfg.tp = 1;
}

void orthros_bench_config_free(orthros_bench_config *c)
{
    free(c->model);
    free(c->archs);
    free(c->ctxs);
    free(c->phases);
    free(c->batches);
    c->model = c->archs = c->ctxs = c->phases = c->batches = NULL;
}

void orthros_bench_file_free(orthros_bench_file *f)
{
    for (size_t i = 0; i < f->n_cells; i++) orthros_bench_cell_free(&f->cells[i]);
    free(f->cells);
    free(f->speedups);
    free(f->summary);
    cJSON_Delete(f->header);
    orthros_bench_config_free(&f->cfg);
    orthros_bench_file_init(f);
}

int orthros_bench_file_add(orthros_bench_file *f, orthros_bench_cell *c)
{
    if (f->n_cells == f->cap_cells) {
        size_t cap = f->cap_cells ? 2 * f->cap_cells : 32;
        orthros_bench_cell *p = realloc(f->cells, cap * sizeof *p);
        if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory adding a cell");
        f->cells = p, f->cap_cells = cap;
    }
    f->cells[f->n_cells++] = *c;
    orthros_bench_cell_init(c);
    return 0;
}

void orthros_bench_file_remove(orthros_bench_file *f, size_t i)
{
    if (i >= f->n_cells) return;
    orthros_bench_cell_free(&f->cells[i]);
    memmove(&f->cells[i], &f->cells[i + 1], (f->n_cells - i - 1) * sizeof *f->cells);
    f->n_cells--;
}

const orthros_bench_cell *orthros_bench_file_find(const orthros_bench_file *f, const char *arch, const char *phase,
                                                  int ctx, int batch, int measured_only)
{
    for (size_t i = 0; i < f->n_cells; i++) {
        const orthros_bench_cell *c = &f->cells[i];
        if (!strcmp(c->arch, arch) && !strcmp(c->phase, phase) && c->ctx == ctx && c->batch == batch &&
            (!measured_only || c->state == ORTHROS_CELL_MEASURED))
            return c;
    }
    return NULL;
}

const char *orthros_bench_model_label(const orthros_bench_file *f)
{
    const char *m = f->cfg.model;
    if (!m || !m[0]) return "unknown model";
    if (!strncmp(m, "preset:", 7)) return m + 7;
    const char *slash = strrchr(m, '/');
    return slash && slash[1] ? slash + 1 : m;
}

int orthros_bench_config_check_same(const orthros_bench_config *a, const char *a_name, const orthros_bench_config *b,
                                    const char *b_name)
{
    int rc;
    if ((rc = orthros_result_same_str(a_name, b_name, "the model", a->model, b->model)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the device", a->device, b->device)) ||
        (rc = orthros_sched_config_same(&a->sched, a_name, &b->sched, b_name)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--seed", a->seed, b->seed)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--decode-tokens", a->decode_tokens, b->decode_tokens)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--tp", a->tp, b->tp)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--max-noise", a->max_noise_pct, b->max_noise_pct)))
        return rc;
    return 0;
}

/* ---- reading ---- */

static int read_stats(orthros_stats *st, orthros_jr *j, const cJSON *o)
{
    int64_t n = 0;
    int rc;
    if ((rc = orthros_jr_int(&n, j, o, "n", 1, INT64_MAX, ORTHROS_JR_REQUIRED))) return rc;
    st->n = (size_t)n;
    struct {
        const char *key;
        double *dst;
        int flags;
    } f[] = {{"median", &st->median, ORTHROS_JR_REQUIRED},  {"q1", &st->q1, ORTHROS_JR_NULL_NAN},
             {"q3", &st->q3, ORTHROS_JR_NULL_NAN},           {"min", &st->min, ORTHROS_JR_NULL_NAN},
             {"max", &st->max, ORTHROS_JR_NULL_NAN},         {"mean", &st->mean, ORTHROS_JR_NULL_NAN},
             {"stdev", &st->stdev, ORTHROS_JR_NULL_NAN},     {"cv", &st->cv, ORTHROS_JR_NULL_NAN},
             {"ci95_lo", &st->ci_lo, ORTHROS_JR_NULL_NAN},   {"ci95_hi", &st->ci_hi, ORTHROS_JR_NULL_NAN}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        *f[i].dst = NAN;
        if ((rc = orthros_jr_num(f[i].dst, j, o, f[i].key, 0, BIG, f[i].flags))) return rc;
    }
    return 0;
}

static int read_rounds(orthros_bench_cell *c, orthros_jr *j, const cJSON *o)
{
    const cJSON *a, *v;
    int rc = orthros_jr_array(&a, j, o, "rounds", 0);
    c->n_rounds = 1;
    c->round_ends = malloc(sizeof *c->round_ends * (a ? (size_t)cJSON_GetArraySize(a) + 1 : 1));
    if (!c->round_ends) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    c->round_ends[0] = c->n_samples;
    if (rc || !a) return rc;
    size_t k = 0, prev = 0;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble <= (double)prev ||
            v->valuedouble > (double)c->n_samples)
            return orthros_jr_fail(j, "rounds", "must be increasing sample counts ending at the number of samples");
        c->round_ends[k++] = prev = (size_t)v->valuedouble;
    }
    if (!k || prev != c->n_samples)
        return orthros_jr_fail(j, "rounds", "must be increasing sample counts ending at the number of samples");
    c->n_rounds = k;
    return 0;
}

/* The measured part of a cell: samples, statistics, cost, throughput, memory. */
static int read_measured(orthros_bench_cell *c, orthros_jr *j, const cJSON *o, double sample_scale)
{
    const cJSON *st, *cost, *thr, *mem, *gpu;
    int rc;
    int64_t chunk = 0;
    if ((rc = orthros_jr_positive_array(&c->samples, &c->n_samples, j, o, sample_scale == 1 ? "samples" : "samples_ms",
                                        ORTHROS_JR_REQUIRED)))
        return rc;
    if (!c->n_samples) return orthros_jr_fail(j, "samples", "empty (a measured cell has at least one sample)");
    for (size_t i = 0; i < c->n_samples; i++) c->samples[i] *= sample_scale;
    if ((rc = read_rounds(c, j, o)) || (rc = orthros_jr_string(c->stop_reason, sizeof c->stop_reason, j, o, "stop_reason", 0)) ||
        (rc = orthros_jr_num(&c->noise, j, o, "noise", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
        (rc = orthros_jr_bool(&c->noisy, j, o, "noisy", 0)) || (rc = orthros_jr_int(&chunk, j, o, "chunk", 0, INT_MAX, 0)) ||
        (rc = orthros_jr_object(&st, j, o, "stats", 0)) || (rc = orthros_jr_object(&cost, j, o, "cost", 0)) ||
        (rc = orthros_jr_object(&thr, j, o, "throughput", 0)) || (rc = orthros_jr_object(&mem, j, o, "memory", 0)) ||
        (rc = orthros_jr_object(&gpu, j, o, "gpu", 0)))
        return rc;
    c->chunk = (int)chunk;
    if (st) {
        size_t at = orthros_jr_push_key(j, "stats");
        if ((rc = read_stats(&c->stats, j, st))) return rc;
        orthros_jr_pop(j, at);
        if (c->stats.n != c->n_samples) return orthros_jr_fail(j, "stats", "n is not the number of samples");
    } else if ((rc = orthros_stats_fill(&c->stats, c->samples, c->n_samples, 0.95, 0, 1))) {
        return rc;
    }
    struct {
        const cJSON *obj;
        const char *obj_key, *key;
        double *dst;
    } f[] = {{cost, "cost", "flops", &c->flops},
             {cost, "cost", "attn_flops", &c->attn_flops},
             {cost, "cost", "bytes", &c->bytes},
             {thr, "throughput", "tokens_per_s", &c->tokens_per_s},
             {thr, "throughput", "tflops", &c->tflops},
             {thr, "throughput", "tbps", &c->tbps},
             {thr, "throughput", "frac_gemm_ceiling", &c->frac_gemm},
             {thr, "throughput", "frac_copy_ceiling", &c->frac_copy},
             {thr, "throughput", "frac_read_ceiling", &c->frac_read},
             {mem, "memory", "weights_bytes", &c->weights_bytes},
             {mem, "memory", "session_bytes", &c->session_bytes},
             {mem, "memory", "device_used_bytes", &c->device_used_bytes},
             {gpu, "gpu", "sm_clock_mhz", &c->gpu_sm_clock_mhz},
             {gpu, "gpu", "sm_clock_max_mhz", &c->gpu_sm_clock_max_mhz},
             {gpu, "gpu", "power_w", &c->gpu_power_w},
             {gpu, "gpu", "power_limit_w", &c->gpu_power_limit_w}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
        if (!f[i].obj) continue;
        size_t at = orthros_jr_push_key(j, f[i].obj_key);
        rc = orthros_jr_num(f[i].dst, j, f[i].obj, f[i].key, 0, BIG, ORTHROS_JR_NULL_NAN);
        orthros_jr_pop(j, at);
        if (rc) return rc;
    }
    if (gpu) {
        size_t at = orthros_jr_push_key(j, "gpu");
        rc = orthros_jr_string(c->gpu_clock_limits, sizeof c->gpu_clock_limits, j, gpu, "clock_limits", 0);
        if (!rc && c->gpu_clock_limits[0] && !orthros_gpu_reasons_valid(c->gpu_clock_limits))
            rc = orthros_jr_fail(j, "clock_limits", "must be comma-separated names of a-z, 0-9 and _");
        orthros_jr_pop(j, at);
        if (rc) return rc;
    }
    if ((rc = orthros_jr_num(&c->floor_s, j, o, "floor_s", 0, BIG, ORTHROS_JR_NULL_NAN))) return rc;
    /* e2e: the time to first token of every sample, and the medians derived from them */
    size_t nt = 0;
    if ((rc = orthros_jr_positive_array(&c->ttft, &nt, j, o, "ttft_samples", 0))) return rc;
    if (c->ttft && nt != c->n_samples) return orthros_jr_fail(j, "ttft_samples", "must have one entry per sample");
    for (size_t i = 0; c->ttft && i < nt; i++)
        if (c->ttft[i] > c->samples[i]) return orthros_jr_fail(j, "ttft_samples", "a time to first token past its sample");
    const cJSON *e2e;
    if ((rc = orthros_jr_object(&e2e, j, o, "e2e", 0)) || !e2e) return rc;
    size_t at = orthros_jr_push_key(j, "e2e");
    if ((rc = orthros_jr_num(&c->ttft_s, j, e2e, "ttft_s", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
        (rc = orthros_jr_num(&c->tpot_s, j, e2e, "tpot_s", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
        (rc = orthros_jr_num(&c->tpot_floor_s, j, e2e, "tpot_floor_s", 0, BIG, ORTHROS_JR_NULL_NAN)))
        return rc;
    orthros_jr_pop(j, at);
    return 0;
}

/* A kernel cell's optional "case" object and "ceiling". */
static int read_kernel_case(orthros_bench_cell *c, orthros_jr *j, const cJSON *o)
{
    const cJSON *k;
    int rc;
    int64_t v[6] = {0, 0, 0, 0, 0, 0};
    if ((rc = orthros_jr_string(c->ceiling, sizeof c->ceiling, j, o, "ceiling", 0)) ||
        (rc = orthros_jr_object(&k, j, o, "case", 0)) || !k)
        return rc;
    size_t at = orthros_jr_push_key(j, "case");
    const char *keys[6] = {"head_dim", "ctx", "batch", "pos0", "window", "version"};
    if ((rc = orthros_jr_string(c->kind, sizeof c->kind, j, k, "kind", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_bool(&c->is_default, j, k, "default", 0)))
        return rc;
    for (int i = 0; i < 6; i++)
        if ((rc = orthros_jr_int(&v[i], j, k, keys[i], 0, INT_MAX, 0))) return rc;
    c->head_dim = (int)v[0], c->ctx = (int)v[1], c->batch = (int)v[2], c->pos0 = (int)v[3], c->window = (int)v[4];
    c->version = (int)v[5];
    orthros_jr_pop(j, at);
    return 0;
}

static int read_cell(orthros_bench_cell *c, orthros_jr *j, const cJSON *o, int legacy_kernels)
{
    int rc;
    int64_t ctx = 0, batch = 0, dt = 0;
    if (!cJSON_IsObject(o)) return orthros_jr_fail(j, NULL, "not an object");
    if ((rc = orthros_jr_string(c->op, sizeof c->op, j, o, "op", legacy_kernels ? ORTHROS_JR_REQUIRED : 0))) return rc;
    if (c->op[0]) {
        if ((rc = orthros_jr_string(c->shape, sizeof c->shape, j, o, "shape", ORTHROS_JR_REQUIRED)) ||
            (rc = read_kernel_case(c, j, o)))
            return rc;
        if (legacy_kernels) {
            /* The format bench_kernels wrote before it wrote bench files: times in milliseconds. */
            if ((rc = read_measured(c, j, o, 1e-3))) return rc;
            double floor_ms = NAN;
            if ((rc = orthros_jr_num(&floor_ms, j, o, "floor_ms", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&c->tflops, j, o, "tflops", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&c->tbps, j, o, "tbps", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&c->flops, j, o, "flops", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&c->bytes, j, o, "bytes", 0, BIG, ORTHROS_JR_NULL_NAN)))
                return rc;
            c->floor_s = floor_ms * 1e-3;
            return 0;
        }
    } else {
        if ((rc = orthros_jr_string(c->arch, sizeof c->arch, j, o, "arch", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(c->phase, sizeof c->phase, j, o, "phase", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&ctx, j, o, "ctx", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&batch, j, o, "batch", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&dt, j, o, "decode_tokens", 0, INT_MAX, 0)))
            return rc;
        if (!c->arch[0]) return orthros_jr_fail(j, "arch", "empty");
        if (strcmp(c->phase, "prefill") && strcmp(c->phase, "decode") && strcmp(c->phase, "e2e") &&
            strcmp(c->phase, "allreduce"))
            return orthros_jr_fail(j, "phase", "\"%s\" is not prefill, decode, e2e or allreduce", c->phase);
        c->ctx = (int)ctx, c->batch = (int)batch, c->decode_tokens = (int)dt;
    }
    char *skipped = NULL, *error = NULL;
    if ((rc = orthros_jr_strdup(&skipped, j, o, "skipped", 0)) || (rc = orthros_jr_strdup(&error, j, o, "error", 0)) ||
        (rc = orthros_jr_strdup(&c->reps_reduced, j, o, "reps_reduced", 0))) {
        free(skipped);
        free(error);
        return rc;
    }
    if (skipped || error) {
        c->state = skipped ? ORTHROS_CELL_SKIPPED : ORTHROS_CELL_FAILED;
        c->reason = skipped ? skipped : error;
        free(skipped ? error : NULL);
        if (cJSON_GetObjectItem(o, "samples"))
            return orthros_jr_fail(j, skipped ? "skipped" : "error", "a cell with samples cannot be %s",
                                   skipped ? "skipped" : "failed");
        return 0;
    }
    c->state = ORTHROS_CELL_MEASURED;
    return read_measured(c, j, o, 1.0);
}

static int read_config(orthros_bench_config *c, orthros_jr *j, const cJSON *o)
{
    int rc;
    int64_t v;
    struct {
        const char *key;
        int *dst;
        int64_t lo;
    } ints[] = {{"decode_tokens", &c->decode_tokens, 0}, {"warmup", &c->warmup, 0},
                {"reps", &c->reps, 0},                   {"max_reps", &c->max_reps, 0},
                {"tp", &c->tp, 1}};
    if ((rc = orthros_jr_strdup(&c->model, j, o, "model", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_strdup(&c->archs, j, o, "arch", 0)) || (rc = orthros_jr_strdup(&c->ctxs, j, o, "ctx", 0)) ||
        (rc = orthros_jr_strdup(&c->phases, j, o, "phase", 0)) || (rc = orthros_jr_strdup(&c->batches, j, o, "batch", 0)) ||
        (rc = orthros_jr_string(c->device, sizeof c->device, j, o, "device", 0)) ||
        (rc = orthros_sched_config_read(&c->sched, j, o)) ||
        (rc = orthros_jr_string(c->timer, sizeof c->timer, j, o, "timer", 0)) ||
        (rc = orthros_jr_string(c->source, sizeof c->source, j, o, "source", 0)) ||
        (rc = orthros_jr_num(&c->max_noise_pct, j, o, "max_noise_pct", 0, BIG, 0)) ||
        (rc = orthros_jr_num(&c->timeout_s, j, o, "timeout_s", 0, BIG, 0)) ||
        (rc = orthros_jr_num(&c->cell_budget_s, j, o, "cell_budget_s", 0, BIG, 0)))
        return rc;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        v = *ints[i].dst;
        if ((rc = orthros_jr_int(&v, j, o, ints[i].key, ints[i].lo, INT_MAX, 0))) return rc;
        *ints[i].dst = (int)v;
    }
    return 0;
}

static int read_speedups(orthros_bench_file *f, orthros_jr *j, const cJSON *o)
{
    const cJSON *cells, *summary, *e;
    int rc;
    if ((rc = orthros_jr_array(&cells, j, o, "cells", 0)) || (rc = orthros_jr_array(&summary, j, o, "summary", 0))) return rc;
    size_t nc = cells ? (size_t)cJSON_GetArraySize(cells) : 0, ns = summary ? (size_t)cJSON_GetArraySize(summary) : 0;
    f->speedups = calloc(nc ? nc : 1, sizeof *f->speedups);
    f->summary = calloc(ns ? ns : 1, sizeof *f->summary);
    if (!f->speedups || !f->summary) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int i = 0;
    size_t at0 = orthros_jr_push_key(j, "cells");
    cJSON_ArrayForEach(e, cells)
    {
        orthros_speedup *s = &f->speedups[f->n_speedups];
        int64_t ctx = 0, batch = 0;
        size_t at = orthros_jr_push_index(j, i++);
        if (!cJSON_IsObject(e)) return orthros_jr_fail(j, NULL, "not an object");
        if ((rc = orthros_jr_string(s->arch, sizeof s->arch, j, e, "arch", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(s->phase, sizeof s->phase, j, e, "phase", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&ctx, j, e, "ctx", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&batch, j, e, "batch", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_num(&s->speedup, j, e, "speedup", 0, BIG, ORTHROS_JR_REQUIRED | ORTHROS_JR_POSITIVE)) ||
            (rc = orthros_jr_num(&s->ci_lo, j, e, "ci95_lo", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
            (rc = orthros_jr_num(&s->ci_hi, j, e, "ci95_hi", 0, BIG, ORTHROS_JR_NULL_NAN)))
            return rc;
        s->ctx = (int)ctx, s->batch = (int)batch;
        f->n_speedups++;
        orthros_jr_pop(j, at);
    }
    orthros_jr_pop(j, at0);
    i = 0;
    at0 = orthros_jr_push_key(j, "summary");
    cJSON_ArrayForEach(e, summary)
    {
        orthros_speedup_summary *s = &f->summary[f->n_summary];
        int64_t batch = 0;
        size_t at = orthros_jr_push_index(j, i++);
        if (!cJSON_IsObject(e)) return orthros_jr_fail(j, NULL, "not an object");
        s->crossover_ctx = s->ctx_at_21_9x = s->max_speedup = NAN;
        if ((rc = orthros_jr_string(s->arch, sizeof s->arch, j, e, "arch", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(s->phase, sizeof s->phase, j, e, "phase", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&batch, j, e, "batch", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_num(&s->crossover_ctx, j, e, "crossover_ctx", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
            (rc = orthros_jr_num(&s->ctx_at_21_9x, j, e, "ctx_at_21_9x", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
            (rc = orthros_jr_num(&s->max_speedup, j, e, "max_speedup", 0, BIG, ORTHROS_JR_NULL_NAN)))
            return rc;
        s->batch = (int)batch;
        f->n_summary++;
        orthros_jr_pop(j, at);
    }
    orthros_jr_pop(j, at0);
    return 0;
}

static int from_json(orthros_bench_file *f, const cJSON *root, const char *name)
{
    orthros_jr j;
    orthros_jr_init(&j, name);
    int rc, legacy = 0;
    const cJSON *list, *ceil, *run, *cfg, *sp, *m;
    /* bench_kernels files before they were bench files: {"device": {...}, "results": [...]}. */
    if (!cJSON_GetObjectItem(root, "kind") && cJSON_IsArray(cJSON_GetObjectItem(root, "results"))) {
        legacy = 1;
        f->hdr.kind = ORTHROS_RESULT_BENCH;
        const cJSON *dev = cJSON_GetObjectItem(root, "device");
        if (cJSON_IsObject(dev)) {
            size_t at = orthros_jr_push_key(&j, "device");
            if ((rc = orthros_jr_string(f->hdr.device_name, sizeof f->hdr.device_name, &j, dev, "name", 0))) return rc;
            orthros_jr_pop(&j, at);
        }
        snprintf(f->hdr.git_commit, sizeof f->hdr.git_commit, "unknown");
        snprintf(f->cfg.source, sizeof f->cfg.source, "bench_kernels");
        snprintf(f->cfg.device, sizeof f->cfg.device, "cuda");
        /* The header such a file lacks, with what it says: written back, it is a bench file like any other. */
        f->header = cJSON_CreateObject();
        cJSON *tool = cJSON_AddObjectToObject(f->header, "tool"), *env = cJSON_AddObjectToObject(f->header, "environment");
        cJSON_AddStringToObject(tool, "name", "orthros");
        cJSON_AddStringToObject(tool, "git_commit", "unknown");
        cJSON_AddBoolToObject(tool, "dirty", 0);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(f->header, "run"), "seed", 0);
        cJSON_AddStringToObject(env, "backend", "cuda");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(env, "device"), "name", f->hdr.device_name);
        if (!(f->cfg.archs = strdup("")) || !(f->cfg.ctxs = strdup("")) || !(f->cfg.phases = strdup("")) ||
            !(f->cfg.batches = strdup("")))
            return orthros_error(ORTHROS_ENOMEM, "out of memory");
        if (!(f->cfg.model = strdup("kernels"))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    } else {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "bench"))
            return orthros_error(ORTHROS_EFORMAT, "%s is an \"%.32s\" result file, not a bench result file", name,
                                 kind->valuestring);
        if ((rc = orthros_result_header_read(&f->hdr, root, name))) return rc;
        if (f->hdr.kind != ORTHROS_RESULT_BENCH)
            return orthros_error(ORTHROS_EFORMAT, "%s is an anchors file, not a bench result file", name);
        if (!(f->header = orthros_result_header_keep(root))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        if ((rc = orthros_jr_object(&run, &j, root, "run", ORTHROS_JR_REQUIRED))) return rc;
        size_t at = orthros_jr_push_key(&j, "run");
        if ((rc = orthros_jr_object(&cfg, &j, run, "config", ORTHROS_JR_REQUIRED))) return rc;
        orthros_jr_push_key(&j, "config");
        if ((rc = read_config(&f->cfg, &j, cfg))) return rc;
        orthros_jr_pop(&j, at);
        f->cfg.seed = (int)(f->hdr.seed > INT_MAX ? INT_MAX : f->hdr.seed);
        if (!f->cfg.device[0]) snprintf(f->cfg.device, sizeof f->cfg.device, "%s", f->hdr.backend);
        if ((rc = orthros_jr_object(&ceil, &j, root, "ceilings", 0))) return rc;
        if (ceil) {
            int64_t n = 0;
            at = orthros_jr_push_key(&j, "ceilings");
            if ((rc = orthros_jr_num(&f->ceilings.gemm_tflops, &j, ceil, "gemm_tflops", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_int(&n, &j, ceil, "gemm_n", 0, INT_MAX, 0)) ||
                (rc = orthros_jr_num(&f->ceilings.copy_tbps, &j, ceil, "copy_tbps", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&f->ceilings.copy_bytes, &j, ceil, "copy_bytes", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&f->ceilings.read_tbps, &j, ceil, "read_tbps", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
                (rc = orthros_jr_num(&f->ceilings.read_bytes, &j, ceil, "read_bytes", 0, BIG, ORTHROS_JR_NULL_NAN)))
                return rc;
            f->ceilings.gemm_n = (int)n;
            orthros_jr_pop(&j, at);
        }
        if ((rc = orthros_jr_object(&sp, &j, root, "speedups", 0))) return rc;
        if (sp) {
            at = orthros_jr_push_key(&j, "speedups");
            if ((rc = read_speedups(f, &j, sp))) return rc;
            orthros_jr_pop(&j, at);
        }
    }
    const char *list_key = legacy ? "results" : "measurements";
    if ((rc = orthros_jr_array(&list, &j, root, list_key, ORTHROS_JR_REQUIRED))) return rc;
    int i = 0;
    orthros_jr_push_key(&j, list_key);
    /* A cell twice is found through a set of the cells' keys: comparing each with every earlier one took
     * minutes for a file of 100k cells. */
    orthros_keyset seen;
    orthros_keyset_init(&seen);
    cJSON_ArrayForEach(m, list)
    {
        orthros_bench_cell c;
        char key[ORTHROS_RESULT_KEY_MAX];
        orthros_bench_cell_init(&c);
        size_t at = orthros_jr_push_index(&j, i++);
        if ((rc = read_cell(&c, &j, m, legacy))) {
            orthros_bench_cell_free(&c);
            break;
        }
        orthros_bench_cell_set_key(key, sizeof key, &c);
        if ((rc = orthros_keyset_add(&seen, key)) > 0) {
            orthros_bench_cell_key(key, sizeof key, &c);
            rc = orthros_jr_fail(&j, NULL, "the cell %s appears twice", key);
        }
        if (rc || (rc = orthros_bench_file_add(f, &c))) {
            orthros_bench_cell_free(&c);
            break;
        }
        orthros_jr_pop(&j, at);
    }
    orthros_keyset_free(&seen);
    return rc;
}

/* ---- writing ---- */

static cJSON *stats_json(const orthros_stats *st)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)st->n);
    orthros_json_add_num(o, "median", st->median);
    orthros_json_add_num(o, "q1", st->q1);
    orthros_json_add_num(o, "q3", st->q3);
    orthros_json_add_num(o, "min", st->min);
    orthros_json_add_num(o, "max", st->max);
    orthros_json_add_num(o, "mean", st->mean);
    orthros_json_add_num(o, "stdev", st->stdev);
    orthros_json_add_num(o, "cv", st->cv);
    orthros_json_add_num(o, "ci95_lo", st->ci_lo);
    orthros_json_add_num(o, "ci95_hi", st->ci_hi);
    return o;
}

static cJSON *cell_json(const orthros_bench_cell *c)
{
    cJSON *o = cJSON_CreateObject();
    if (c->op[0]) {
        cJSON_AddStringToObject(o, "op", c->op);
        cJSON_AddStringToObject(o, "shape", c->shape);
        if (c->ceiling[0]) cJSON_AddStringToObject(o, "ceiling", c->ceiling);
        if (c->kind[0]) {
            cJSON *k = cJSON_AddObjectToObject(o, "case");
            cJSON_AddStringToObject(k, "kind", c->kind);
            cJSON_AddNumberToObject(k, "head_dim", c->head_dim);
            cJSON_AddNumberToObject(k, "ctx", c->ctx);
            cJSON_AddNumberToObject(k, "batch", c->batch);
            cJSON_AddNumberToObject(k, "pos0", c->pos0);
            cJSON_AddNumberToObject(k, "window", c->window);
            cJSON_AddNumberToObject(k, "version", c->version);
            cJSON_AddBoolToObject(k, "default", c->is_default);
        }
    } else {
        cJSON_AddStringToObject(o, "arch", c->arch);
        cJSON_AddStringToObject(o, "phase", c->phase);
        cJSON_AddNumberToObject(o, "ctx", c->ctx);
        cJSON_AddNumberToObject(o, "batch", c->batch);
        cJSON_AddNumberToObject(o, "decode_tokens", c->decode_tokens);
    }
    if (c->reps_reduced) cJSON_AddStringToObject(o, "reps_reduced", c->reps_reduced);
    if (c->state != ORTHROS_CELL_MEASURED) {
        cJSON_AddStringToObject(o, c->state == ORTHROS_CELL_SKIPPED ? "skipped" : "error", c->reason ? c->reason : "unknown");
        return o;
    }
    if (c->stop_reason[0]) cJSON_AddStringToObject(o, "stop_reason", c->stop_reason);
    orthros_json_add_num(o, "noise", c->noise);
    cJSON_AddBoolToObject(o, "noisy", c->noisy);
    if (!c->op[0]) cJSON_AddNumberToObject(o, "chunk", c->chunk);
    cJSON *arr = cJSON_AddArrayToObject(o, "samples");
    for (size_t i = 0; i < c->n_samples; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(c->samples[i]));
    if (c->n_rounds > 1) {
        cJSON *r = cJSON_AddArrayToObject(o, "rounds");
        for (size_t i = 0; i < c->n_rounds; i++) cJSON_AddItemToArray(r, cJSON_CreateNumber((double)c->round_ends[i]));
    }
    cJSON_AddItemToObject(o, "stats", stats_json(&c->stats));
    cJSON *cost = cJSON_AddObjectToObject(o, "cost");
    orthros_json_add_num(cost, "flops", c->flops);
    orthros_json_add_num(cost, "attn_flops", c->attn_flops);
    orthros_json_add_num(cost, "bytes", c->bytes);
    cJSON *thr = cJSON_AddObjectToObject(o, "throughput");
    orthros_json_add_num(thr, "tokens_per_s", c->tokens_per_s);
    orthros_json_add_num(thr, "tflops", c->tflops);
    orthros_json_add_num(thr, "tbps", c->tbps);
    orthros_json_add_num(thr, "frac_gemm_ceiling", c->frac_gemm);
    orthros_json_add_num(thr, "frac_copy_ceiling", c->frac_copy);
    orthros_json_add_num(thr, "frac_read_ceiling", c->frac_read);
    if (c->op[0] || isfinite(c->floor_s)) orthros_json_add_num(o, "floor_s", c->floor_s);
    if (c->ttft) {
        cJSON *t = cJSON_AddArrayToObject(o, "ttft_samples");
        for (size_t i = 0; i < c->n_samples; i++) cJSON_AddItemToArray(t, cJSON_CreateNumber(c->ttft[i]));
        cJSON *e = cJSON_AddObjectToObject(o, "e2e");
        orthros_json_add_num(e, "ttft_s", c->ttft_s);
        orthros_json_add_num(e, "tpot_s", c->tpot_s);
        orthros_json_add_num(e, "tpot_floor_s", c->tpot_floor_s);
    }
    if (!c->op[0]) {
        cJSON *mem = cJSON_AddObjectToObject(o, "memory");
        orthros_json_add_num(mem, "weights_bytes", c->weights_bytes);
        orthros_json_add_num(mem, "session_bytes", c->session_bytes);
        orthros_json_add_num(mem, "device_used_bytes", c->device_used_bytes);
    }
    if (isfinite(c->gpu_sm_clock_mhz) || isfinite(c->gpu_power_w) || c->gpu_clock_limits[0]) {
        cJSON *gpu = cJSON_AddObjectToObject(o, "gpu");
        orthros_json_add_num(gpu, "sm_clock_mhz", c->gpu_sm_clock_mhz);
        orthros_json_add_num(gpu, "sm_clock_max_mhz", c->gpu_sm_clock_max_mhz);
        orthros_json_add_num(gpu, "power_w", c->gpu_power_w);
        orthros_json_add_num(gpu, "power_limit_w", c->gpu_power_limit_w);
        if (c->gpu_clock_limits[0]) cJSON_AddStringToObject(gpu, "clock_limits", c->gpu_clock_limits);
    }
    return o;
}

static cJSON *config_json(const orthros_bench_config *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", c->model ? c->model : "");
    if (c->source[0]) cJSON_AddStringToObject(o, "source", c->source);
    cJSON_AddStringToObject(o, "arch", c->archs ? c->archs : "");
    cJSON_AddStringToObject(o, "ctx", c->ctxs ? c->ctxs : "");
    cJSON_AddStringToObject(o, "phase", c->phases ? c->phases : "");
    cJSON_AddStringToObject(o, "batch", c->batches ? c->batches : "");
    cJSON_AddStringToObject(o, "device", c->device);
    cJSON_AddNumberToObject(o, "decode_tokens", c->decode_tokens);
    cJSON_AddNumberToObject(o, "warmup", c->warmup);
    cJSON_AddNumberToObject(o, "reps", c->reps);
    cJSON_AddNumberToObject(o, "max_reps", c->max_reps);
    cJSON_AddNumberToObject(o, "max_noise_pct", c->max_noise_pct);
    cJSON_AddNumberToObject(o, "timeout_s", c->timeout_s);
    cJSON_AddNumberToObject(o, "cell_budget_s", c->cell_budget_s);
    orthros_sched_config_write(o, &c->sched);
    cJSON_AddNumberToObject(o, "tp", c->tp);
    cJSON_AddStringToObject(o, "timer", c->timer);
    return o;
}

static cJSON *speedups_json(const orthros_bench_file *f)
{
    cJSON *o = cJSON_CreateObject(), *cells = cJSON_AddArrayToObject(o, "cells"), *sum = cJSON_AddArrayToObject(o, "summary");
    for (size_t i = 0; i < f->n_speedups; i++) {
        const orthros_speedup *s = &f->speedups[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "arch", s->arch);
        cJSON_AddStringToObject(e, "phase", s->phase);
        cJSON_AddNumberToObject(e, "ctx", s->ctx);
        cJSON_AddNumberToObject(e, "batch", s->batch);
        cJSON_AddNumberToObject(e, "speedup", s->speedup);
        orthros_json_add_num(e, "ci95_lo", s->ci_lo);
        orthros_json_add_num(e, "ci95_hi", s->ci_hi);
        cJSON_AddItemToArray(cells, e);
    }
    for (size_t i = 0; i < f->n_summary; i++) {
        const orthros_speedup_summary *s = &f->summary[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "arch", s->arch);
        cJSON_AddStringToObject(e, "phase", s->phase);
        cJSON_AddNumberToObject(e, "batch", s->batch);
        orthros_json_add_num(e, "crossover_ctx", s->crossover_ctx);
        cJSON_AddBoolToObject(e, "reached_21_9x", isfinite(s->ctx_at_21_9x));
        orthros_json_add_num(e, "ctx_at_21_9x", s->ctx_at_21_9x);
        orthros_json_add_num(e, "max_speedup", s->max_speedup);
        cJSON_AddItemToArray(sum, e);
    }
    return o;
}

cJSON *orthros_bench_file_to_json(const orthros_bench_file *f)
{
    cJSON *root = orthros_result_header_emit(f->header, "bench", config_json(&f->cfg));
    if (!root) return NULL;
    cJSON *ceil = cJSON_AddObjectToObject(root, "ceilings");
    orthros_json_add_num(ceil, "gemm_tflops", f->ceilings.gemm_tflops);
    cJSON_AddNumberToObject(ceil, "gemm_n", f->ceilings.gemm_n);
    orthros_json_add_num(ceil, "copy_tbps", f->ceilings.copy_tbps);
    orthros_json_add_num(ceil, "copy_bytes", f->ceilings.copy_bytes);
    orthros_json_add_num(ceil, "read_tbps", f->ceilings.read_tbps);
    orthros_json_add_num(ceil, "read_bytes", f->ceilings.read_bytes);
    cJSON *meas = cJSON_AddArrayToObject(root, "measurements");
    for (size_t i = 0; i < f->n_cells; i++) cJSON_AddItemToArray(meas, cell_json(&f->cells[i]));
    cJSON_AddItemToObject(root, "speedups", speedups_json(f));
    return root;
}

/* ---- the kind ---- */

static void type_init(void *f) { orthros_bench_file_init(f); }
static void type_free(void *f) { orthros_bench_file_free(f); }
static int type_from_json(void *f, const cJSON *root, const char *name) { return from_json(f, root, name); }
static cJSON *type_to_json(const void *f) { return orthros_bench_file_to_json(f); }
static orthros_result_header *type_hdr(void *f) { return &((orthros_bench_file *)f)->hdr; }
static cJSON **type_header(void *f) { return &((orthros_bench_file *)f)->header; }

static int type_same_config(const void *old, const char *old_name, const void *now, const char *now_name)
{
    return orthros_bench_config_check_same(&((const orthros_bench_file *)old)->cfg, old_name,
                                           &((const orthros_bench_file *)now)->cfg, now_name);
}

static size_t type_n_cells(const void *f) { return ((const orthros_bench_file *)f)->n_cells; }
static void type_cell_key(const void *f, size_t i, char *buf, size_t cap)
{
    orthros_bench_cell_set_key(buf, cap, &((const orthros_bench_file *)f)->cells[i]);
}
/* --resume keeps the measured cells; skipped and failed ones are run again. */
static int type_cell_kept(const void *f, size_t i)
{
    return ((const orthros_bench_file *)f)->cells[i].state == ORTHROS_CELL_MEASURED;
}
static int type_cell_add(void *now, void *old, size_t i)
{
    return orthros_bench_file_add(now, &((orthros_bench_file *)old)->cells[i]);
}

const orthros_result_type orthros_bench_type = {"bench", sizeof(orthros_bench_file), type_init, type_free,
                                                type_from_json, type_to_json, type_hdr, type_header,
                                                type_same_config, type_n_cells, type_cell_key, type_cell_kept,
                                                type_cell_add};

int orthros_bench_file_from_json(orthros_bench_file *f, const cJSON *root, const char *name)
{
    return orthros_result_from_json(&orthros_bench_type, f, root, name);
}

int orthros_bench_file_read(orthros_bench_file *f, const char *path, int missing_ok, int *exists)
{
    return orthros_result_read_file(&orthros_bench_type, f, path, missing_ok, exists);
}

int orthros_bench_file_write(const orthros_bench_file *f, const char *path)
{
    return orthros_result_write_file(&orthros_bench_type, f, path);
}

/* ---- anchor files ---- */

void orthros_anchor_file_free(orthros_anchor_file *f)
{
    free(f->cases);
    memset(f, 0, sizeof *f);
}

static int anchor_cmp(const void *a, const void *b)
{
    const orthros_anchor_case *x = *(const orthros_anchor_case *const *)a, *y = *(const orthros_anchor_case *const *)b;
    int c = strcmp(x->op, y->op);
    if (!c) c = strcmp(x->backend, y->backend);
    if (!c) c = strcmp(x->model, y->model);
    if (!c) c = x->head_dim != y->head_dim ? (x->head_dim < y->head_dim ? -1 : 1) : 0;
    if (!c) c = x->ctx != y->ctx ? (x->ctx < y->ctx ? -1 : 1) : 0;
    if (!c) c = x->batch != y->batch ? (x->batch < y->batch ? -1 : 1) : 0;
    return c;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What anchors.py writes beyond the fields the figures use, checked as strictly (they were taken as they were):
 * the run's ceilings and versions at the top; in each case an op of prefill or decode, a backend named by a plain
 * word, the samples positive with median_s their median, the throughput of the op's kind (tflops for prefill, tbps
 * for decode); and no case twice (sorted, so that a long file costs n log n). decode_anchor.py's files (f->steps):
 * no ceilings; each case's model shape a plain name, its samples ("samples") positive with median_s their median,
 * its wall time not negative; no (model, ctx, batch) twice. */
static int anchor_check(const orthros_anchor_file *f, orthros_jr *j, const cJSON *root)
{
    static const char *const ceilings[] = {"gemm_tflops", "copy_tbps", "read_tbps"};
    int rc, steps = f->steps > 0;
    double v;
    char torch[64];
    for (size_t i = 0; !steps && i < sizeof ceilings / sizeof *ceilings; i++)
        if ((rc = orthros_jr_num(&v, j, root, ceilings[i], 0, BIG, ORTHROS_JR_POSITIVE))) return rc;
    const cJSON *cudnn = cJSON_GetObjectItemCaseSensitive(root, "cudnn");
    int64_t iv;
    if (cudnn && !cJSON_IsNull(cudnn) && (rc = orthros_jr_int(&iv, j, root, "cudnn", 0, INT_MAX, 0))) return rc;
    if ((rc = orthros_jr_string(torch, sizeof torch, j, root, "torch", 0))) return rc;
    const char *samples_key = steps ? "samples" : "samples_s";
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases"), *e;
    size_t at = orthros_jr_push_key(j, "cases");
    int i = 0;
    cJSON_ArrayForEach(e, cases)
    {
        const orthros_anchor_case *c = &f->cases[i];
        size_t at2 = orthros_jr_push_index(j, i++);
        if (!steps && strcmp(c->op, "prefill") && strcmp(c->op, "decode"))
            return orthros_jr_fail(j, "op", "\"%s\" is not prefill or decode", c->op);
        if (!c->backend[0] || strspn(c->backend, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(c->backend))
            return orthros_jr_fail(j, "backend", "\"%s\" is not a backend's name (lowercase letters, digits, _ and -)",
                                   c->backend);
        if (steps && (!c->model[0] || strspn(c->model, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(c->model)))
            return orthros_jr_fail(j, "model", "\"%s\" is not a model shape's name (lowercase letters, digits, '.', _ "
                                   "and -)", c->model);
        int prefill = !strcmp(c->op, "prefill");
        if (!steps && (prefill ? !isnan(c->tbps) : !isnan(c->tflops)))
            return orthros_jr_fail(j, prefill ? "tbps" : "tflops", "given for a %s case", c->op);
        if (steps && (rc = orthros_jr_num(&v, j, e, "wall_s", 0, BIG, 0))) return rc;
        double *s = NULL;
        size_t n = 0;
        if ((rc = orthros_jr_positive_array(&s, &n, j, e, samples_key, steps ? ORTHROS_JR_REQUIRED : 0))) return rc;
        if (s && n == 0) {
            free(s);
            return orthros_jr_fail(j, samples_key, "empty");
        }
        if (s) {
            /* anchors.py's and decode_anchor.py's median: the middle of the sorted samples (the upper one of an
             * even count). */
            qsort(s, n, sizeof *s, cmp_double);
            double med = s[n / 2];
            free(s);
            if (fabs(med - c->median_s) > 1e-12 * med)
                return orthros_jr_fail(j, "median_s", "%.17g is not the median of %s (%.17g)", c->median_s, samples_key,
                                       med);
        }
        orthros_jr_pop(j, at2);
    }
    orthros_jr_pop(j, at);
    if (f->n < 2) return 0;
    const orthros_anchor_case **sorted = malloc(f->n * sizeof *sorted);
    if (!sorted) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t k = 0; k < f->n; k++) sorted[k] = &f->cases[k];
    qsort(sorted, f->n, sizeof *sorted, anchor_cmp);
    /* The later of two equal cases is named, as a reader reading in order would find it. */
    size_t dup = f->n;
    for (size_t k = 1; k < f->n; k++)
        if (!anchor_cmp(&sorted[k - 1], &sorted[k])) {
            size_t later = (size_t)(sorted[k] > sorted[k - 1] ? sorted[k] - f->cases : sorted[k - 1] - f->cases);
            if (later < dup) dup = later;
        }
    free(sorted);
    if (dup < f->n) {
        const orthros_anchor_case *c = &f->cases[dup];
        orthros_jr_push_key(j, "cases");
        orthros_jr_push_index(j, (int)dup);
        if (steps)
            return orthros_jr_fail(j, NULL, "the case %s ctx %d batch %d appears twice", c->model, c->ctx, c->batch);
        return orthros_jr_fail(j, NULL, "the case %s %s head_dim %d ctx %d batch %d appears twice", c->op, c->backend,
                               c->head_dim, c->ctx, c->batch);
    }
    return 0;
}

int orthros_anchor_file_from_json(orthros_anchor_file *f, const cJSON *root, const char *name)
{
    orthros_jr j;
    orthros_jr_init(&j, name);
    memset(f, 0, sizeof *f);
    const cJSON *cases, *e;
    int rc;
    orthros_result_header h;
    if ((rc = orthros_result_header_read(&h, root, name))) return rc;
    if (h.kind != ORTHROS_RESULT_ANCHORS)
        return orthros_error(ORTHROS_EFORMAT, "%s: not an anchors file (bench/kernels/anchors.py)", name);
    snprintf(f->device_name, sizeof f->device_name, "%s", h.device_name);
    const cJSON *torch = cJSON_GetObjectItem(root, "torch");
    if (cJSON_IsString(torch)) snprintf(f->torch, sizeof f->torch, "%s", torch->valuestring);
    /* decode_anchor.py's files: its "method" and "steps" at the top, cases of whole decode steps of a model shape,
     * eager or compiled by the file's "compiled" */
    int compiled = 0;
    if (cJSON_GetObjectItemCaseSensitive(root, "steps") || cJSON_GetObjectItemCaseSensitive(root, "method")) {
        char method[512];
        int64_t steps = 0;
        if ((rc = orthros_jr_int(&steps, &j, root, "steps", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(method, sizeof method, &j, root, "method", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_bool(&compiled, &j, root, "compiled", ORTHROS_JR_REQUIRED)))
            return rc;
        f->steps = (int)steps;
    }
    if ((rc = orthros_jr_array(&cases, &j, root, "cases", ORTHROS_JR_REQUIRED))) return rc;
    size_t n = (size_t)cJSON_GetArraySize(cases);
    f->cases = calloc(n ? n : 1, sizeof *f->cases);
    if (!f->cases) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int i = 0;
    orthros_jr_push_key(&j, "cases");
    cJSON_ArrayForEach(e, cases)
    {
        orthros_anchor_case *c = &f->cases[f->n];
        int64_t hd = 0, ctx = 0, batch = 1, hq = 32, hkv = 8;
        size_t at = orthros_jr_push_index(&j, i++);
        c->tflops = c->tbps = NAN;
        if (!cJSON_IsObject(e)) {
            rc = orthros_jr_fail(&j, NULL, "not an object");
            goto fail;
        }
        if (f->steps) {
            /* a whole decode step: the model shape, batch and cache depth, its median over the samples */
            snprintf(c->op, sizeof c->op, "step");
            snprintf(c->backend, sizeof c->backend, "%s", compiled ? "compiled" : "graph");
            hq = hkv = 0;
            if ((rc = orthros_jr_string(c->model, sizeof c->model, &j, e, "model", ORTHROS_JR_REQUIRED)) ||
                (rc = orthros_jr_int(&ctx, &j, e, "ctx", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
                (rc = orthros_jr_int(&batch, &j, e, "batch", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
                (rc = orthros_jr_num(&c->median_s, &j, e, "median_s", 0, BIG, ORTHROS_JR_REQUIRED | ORTHROS_JR_POSITIVE)))
                goto fail;
        } else if ((rc = orthros_jr_string(c->op, sizeof c->op, &j, e, "op", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(c->backend, sizeof c->backend, &j, e, "backend", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&hd, &j, e, "head_dim", 1, 4096, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&ctx, &j, e, "ctx", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&batch, &j, e, "batch", 1, INT_MAX, 0)) ||
            (rc = orthros_jr_int(&hq, &j, e, "hq", 1, 4096, 0)) || (rc = orthros_jr_int(&hkv, &j, e, "hkv", 1, 4096, 0)) ||
            (rc = orthros_jr_num(&c->median_s, &j, e, "median_s", 0, BIG, ORTHROS_JR_REQUIRED | ORTHROS_JR_POSITIVE)) ||
            (rc = orthros_jr_num(&c->tflops, &j, e, "tflops", 0, BIG, ORTHROS_JR_NULL_NAN)) ||
            (rc = orthros_jr_num(&c->tbps, &j, e, "tbps", 0, BIG, ORTHROS_JR_NULL_NAN)))
            goto fail;
        c->head_dim = (int)hd, c->ctx = (int)ctx, c->batch = (int)batch, c->hq = (int)hq, c->hkv = (int)hkv;
        f->n++;
        orthros_jr_pop(&j, at);
    }
    orthros_jr_init(&j, name);
    if ((rc = anchor_check(f, &j, root))) goto fail;
    return 0;
fail:
    orthros_anchor_file_free(f);
    return rc;
}

int orthros_anchor_file_read(orthros_anchor_file *f, const char *path)
{
    cJSON *root = NULL;
    memset(f, 0, sizeof *f);
    int rc = orthros_result_load(&root, path, 0);
    if (rc) return rc;
    rc = orthros_anchor_file_from_json(f, root, path);
    cJSON_Delete(root);
    return rc;
}
