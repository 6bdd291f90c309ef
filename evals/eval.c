/* orthros eval niah / mqar: every cell of architecture x context x depth (NIAH) or architecture x context x
 * pairs (MQAR) runs `samples` seeded samples greedily, scores them by exact match, and is written to the
 * result file with its Wilson interval as soon as it is done; --resume keeps the cells already there.
 * orthros make-model analytic-recall: writes the checkpoint the evals run on (analytic.c). */
#define _GNU_SOURCE
#include "eval.h"
#include "analytic.h"
#include "axes.h"
#include "options.h"
#include "result_eval.h"
#include "stats.h"
#include "table.h"
#include "tasks.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AXIS 256

typedef struct {
    orthros_model_opts mo;
    const char *task;      /* "niah" or "mqar" */
    const char *archs, *ctxs, *depths, *pairs, *variant, *json, *save_prompts, *format, *table_out;
    int samples, resume, force, quiet;
} eval_opts;

static int parse_ints(int *out, size_t *n, const char *text, const char *what, int64_t lo, int64_t hi)
{
    int64_t v[MAX_AXIS];
    int rc = orthros_axis_parse_int(v, MAX_AXIS, n, text, INT64_MIN / 2);
    if (rc) return orthros_error(rc, "--%s: %s", what, orthros_last_error());
    for (size_t i = 0; i < *n; i++) {
        if (v[i] < lo || v[i] > hi)
            return orthros_error(ORTHROS_EINVAL, "--%s: %lld is outside %lld..%lld%s", what, (long long)v[i],
                                 (long long)lo, (long long)hi,
                                 !strcmp(what, "depths") ? " (percent of the context)" : "");
        out[i] = (int)v[i];
    }
    return 0;
}

/* ---- cells ---- */

typedef struct {
    const char *arch;
    int ctx, x; /* x: depth (niah) or pairs (mqar) */
} cell;

static const char *x_name(const eval_opts *o) { return orthros_eval_x_name(o->task); }
static const char *variant_name(const eval_opts *o) { return strcmp(o->task, "niah") ? "mqar" : o->variant; }

static cJSON *ints_json(const int32_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static int build_sample(orthros_eval_sample *s, const eval_opts *o, const orthros_ar_layout *l,
                        orthros_niah_variant v, const cell *c, uint64_t seed)
{
    return strcmp(o->task, "niah") ? orthros_mqar_sample(s, l, c->x, c->ctx, seed)
                                   : orthros_niah_sample(s, l, v, c->ctx, c->x, seed);
}

/* One line per sample for evals/check_hf.py: the prompt, the questions, what we generated. */
static int save_prompt(FILE *f, const eval_opts *o, const cell *c, uint64_t seed, const orthros_eval_sample *s,
                       const int32_t *gen)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", o->task);
    cJSON_AddStringToObject(j, "variant", variant_name(o));
    cJSON_AddStringToObject(j, "arch", c->arch);
    cJSON_AddNumberToObject(j, "ctx", c->ctx);
    cJSON_AddNumberToObject(j, x_name(o), c->x);
    cJSON_AddNumberToObject(j, "seed", (double)seed);
    cJSON_AddItemToObject(j, "prompt", ints_json(s->prompt, s->n_prompt));
    cJSON_AddItemToObject(j, "queries", ints_json(s->queries, s->n_answers));
    cJSON_AddBoolToObject(j, "feed_back", s->feed_back);
    cJSON_AddItemToObject(j, "expected", ints_json(s->expected, s->n_answers));
    cJSON_AddItemToObject(j, "generated", ints_json(gen, s->n_answers));
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    int ok = t && fprintf(f, "%s\n", t) > 0;
    free(t);
    return ok ? 0 : orthros_error(ORTHROS_EIO, "cannot write the --save-prompts file");
}

/* The per-sample record of a cell's result. */
static cJSON *sample_record(const eval_opts *o, const cell *c, orthros_niah_variant v, uint64_t seed,
                            const orthros_eval_sample *s, const int32_t *gen, int k)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "ctx", c->ctx);
    cJSON_AddNumberToObject(r, x_name(o), c->x);
    cJSON_AddNumberToObject(r, "seed", (double)seed);
    if (!strcmp(o->task, "niah")) {
        cJSON *pos = cJSON_AddArrayToObject(r, "needle_positions");
        for (int j = 0; j < (v == ORTHROS_NIAH_SINGLE ? 1 : ORTHROS_NIAH_NEEDLES); j++)
            cJSON_AddItemToArray(pos, cJSON_CreateNumber(s->needle_pos[j]));
    }
    cJSON_AddItemToObject(r, "expected", ints_json(s->expected, s->n_answers));
    cJSON_AddItemToObject(r, "generated", ints_json(gen, s->n_answers));
    cJSON_AddNumberToObject(r, "n_correct", k);
    cJSON_AddBoolToObject(r, "correct", k == s->n_answers);
    return r;
}

/* Runs every sample of one cell on model m into *out (its records owned by it). */
static int run_cell(orthros_eval_cell *out, orthros_model *m, const eval_opts *o, const orthros_ar_layout *l,
                    orthros_niah_variant v, const cell *c, FILE *prompts)
{
    orthros_eval_sample s;
    orthros_session *sess = NULL;
    int64_t correct = 0, trials = 0, sample_correct = 0;
    double t0 = orthros_now_s();
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (!(out->records = cJSON_CreateArray())) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (int i = 0; i < o->samples; i++) {
        uint64_t seed = orthros_eval_sample_seed((uint64_t)o->mo.seed, o->task, c->ctx, c->x, i);
        int32_t gen[ORTHROS_EVAL_MAX_ANSWERS];
        if ((rc = build_sample(&s, o, l, v, c, seed))) goto fail;
        int need = s.n_prompt + orthros_eval_decode_tokens(&s);
        if (!sess) rc = orthros_session_init(&sess, m, 1, need, o->mo.chunk);
        if (!rc) rc = orthros_eval_run(sess, &s, gen);
        if (!rc && prompts) rc = save_prompt(prompts, o, c, seed, &s, gen);
        if (rc) {
            orthros_eval_sample_free(&s);
            goto fail;
        }
        int k = orthros_eval_score(&s, gen), ok = k == s.n_answers;
        cJSON_AddItemToArray(out->records, sample_record(o, c, v, seed, &s, gen, k));
        /* NIAH counts samples (all answers right); MQAR counts questions, as Zoology reports it. */
        correct += strcmp(o->task, "niah") ? k : ok;
        trials += strcmp(o->task, "niah") ? s.n_answers : 1;
        sample_correct += ok;
        orthros_eval_sample_free(&s);
    }
    snprintf(out->task, sizeof out->task, "%s", o->task);
    snprintf(out->variant, sizeof out->variant, "%s", variant_name(o));
    snprintf(out->arch, sizeof out->arch, "%s", c->arch);
    out->ctx = c->ctx, out->x = c->x, out->samples = o->samples, out->samples_correct = (int)sample_correct;
    out->n = trials, out->correct = correct, out->accuracy = (double)correct / (double)trials;
    out->ci_lo = 0, out->ci_hi = 1;
    orthros_stats_wilson(&out->ci_lo, &out->ci_hi, correct, trials, ORTHROS_STATS_Z95);
    out->elapsed_s = orthros_now_s() - t0;
    orthros_session_free(sess);
    return 0;
fail:
    cJSON_Delete(out->records);
    out->records = NULL;
    orthros_session_free(sess);
    return rc;
}

static int config_of(orthros_eval_config *c, const eval_opts *o, const char *device, const orthros_ar_layout *l)
{
    memset(c, 0, sizeof *c);
    snprintf(c->task, sizeof c->task, "%s", o->task);
    snprintf(c->variant, sizeof c->variant, "%s", variant_name(o));
    c->model = strdup(o->mo.model);
    c->archs = strdup(o->archs);
    c->ctxs = strdup(o->ctxs);
    c->xs = strdup(strcmp(o->task, "niah") ? o->pairs : o->depths);
    c->analytic_recall = orthros_ar_layout_json(l);
    if (!c->model || !c->archs || !c->ctxs || !c->xs || !c->analytic_recall) {
        orthros_eval_config_free(c);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    c->samples = o->samples, c->seed = o->mo.seed;
    snprintf(c->device, sizeof c->device, "%s", device);
    c->chunk = o->mo.chunk, c->tail = o->mo.tail, c->window = o->mo.window, c->hybrid_every = o->mo.hybrid_every;
    c->feature_dim = o->mo.feature_dim, c->eps = o->mo.eps;
    snprintf(c->feature_map, sizeof c->feature_map, "%s", o->mo.feature_map ? o->mo.feature_map : "");
    snprintf(c->scoring, sizeof c->scoring, "%s",
             strcmp(o->task, "niah") ? "exact match per question; n counts questions"
                                     : "exact match of every expected token (multivalue: as a set); n counts samples");
    return 0;
}

/* ---- the run ---- */

typedef struct {
    const eval_opts *o;
    char archs[MAX_AXIS][ORTHROS_AXIS_NAME_MAX];
    int ctxs[MAX_AXIS], xs[MAX_AXIS];
    size_t na, nc, nx;
    orthros_niah_variant variant;
    orthros_ar_layout lay;
    orthros_backend *be;
    orthros_eval_file f;
    orthros_table table;
    FILE *prompts;
    int existed, measured;
} eval_run;

/* The grid and the layout, checked before any model runs: usage errors. */
static int parse_grid(eval_run *r)
{
    const eval_opts *o = r->o;
    int rc, niah = !strcmp(o->task, "niah");
    if ((niah && (rc = orthros_niah_variant_parse(o->variant, &r->variant))) ||
        (rc = orthros_axis_parse_names(r->archs, MAX_AXIS, &r->na, o->archs, orthros_arch_names)) ||
        (rc = parse_ints(r->ctxs, &r->nc, o->ctxs, "ctx", 1, INT_MAX / 2)) ||
        (rc = niah ? parse_ints(r->xs, &r->nx, o->depths, "depths", 0, 100) : parse_ints(r->xs, &r->nx, o->pairs, "pairs", 1, INT_MAX)) ||
        (rc = orthros_ar_layout_load(&r->lay, o->mo.model)))
        return rc;
    for (size_t i = 0; i < r->nc; i++)
        for (size_t j = 0; j < r->nx; j++) {
            orthros_eval_sample s;
            cell c = {r->archs[0], r->ctxs[i], r->xs[j]};
            if ((rc = build_sample(&s, o, &r->lay, r->variant, &c, 0))) return rc;
            orthros_eval_sample_free(&s);
        }
    return 0;
}

/* The result file: an earlier run's cells with --resume (same configuration, else refused), a fresh header. An
 * existing file is not replaced before this run has a cell (or with --force). */
static int open_results(eval_run *r, int argc, char **argv)
{
    const eval_opts *o = r->o;
    orthros_eval_file old;
    int rc, exists = 0;
    orthros_eval_file_init(&r->f);
    if ((rc = orthros_eval_file_read(&old, o->json, 1, &exists))) {
        if (!o->force || o->resume) return rc;
        exists = 1;
    }
    r->existed = exists;
    if ((rc = config_of(&r->f.cfg, o, orthros_backend_name(r->be), &r->lay))) goto done;
    if (exists && o->resume) {
        if ((rc = orthros_eval_config_check_same(&old.cfg, o->json, &r->f.cfg, "this run"))) {
            orthros_error(rc, "cannot resume: %s", orthros_last_error());
            goto done;
        }
        for (size_t i = 0; i < old.n_cells; i++)
            if ((rc = orthros_eval_file_add(&r->f, &old.cells[i]))) goto done;
    }
    if (!(r->f.header = orthros_result_new("eval", argc, argv, (uint64_t)o->mo.seed, r->be)))
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
    if (!rc && o->force && exists) rc = orthros_eval_file_write(&r->f, o->json);
done:
    if (exists) orthros_eval_file_free(&old);
    return rc;
}

static int save(eval_run *r, int final)
{
    if (r->existed && !r->measured && !r->o->force && !r->o->resume) {
        if (final) fprintf(stderr, "eval: nothing was run; %s left as it was\n", r->o->json);
        return 0;
    }
    if (final) orthros_result_finish(r->f.header);
    return orthros_eval_file_write(&r->f, r->o->json);
}

static void print_cell(eval_run *r, const orthros_eval_cell *c)
{
    char v[7][ORTHROS_NAME_MAX];
    const char *cells[7];
    for (int i = 0; i < 7; i++) cells[i] = v[i];
    snprintf(v[0], ORTHROS_NAME_MAX, "%s", c->arch);
    snprintf(v[1], ORTHROS_NAME_MAX, "%d", c->ctx);
    snprintf(v[2], ORTHROS_NAME_MAX, "%d", c->x);
    snprintf(v[3], ORTHROS_NAME_MAX, "%lld", (long long)c->n);
    snprintf(v[4], ORTHROS_NAME_MAX, "%.3f", c->accuracy);
    snprintf(v[5], ORTHROS_NAME_MAX, "%.3f", c->ci_lo);
    snprintf(v[6], ORTHROS_NAME_MAX, "%.3f", c->ci_hi);
    orthros_table_row(&r->table, cells);
}

/* After the grid: per architecture, the pooled accuracy over every cell of this file, with its Wilson interval. */
static void print_summary(eval_run *r)
{
    for (size_t ia = 0; ia < r->na; ia++) {
        int64_t k = 0, n = 0;
        size_t cells = 0;
        for (size_t i = 0; i < r->f.n_cells; i++)
            if (!strcmp(r->f.cells[i].arch, r->archs[ia])) k += r->f.cells[i].correct, n += r->f.cells[i].n, cells++;
        if (!n) continue;
        double lo = 0, hi = 1;
        orthros_stats_wilson(&lo, &hi, k, n, ORTHROS_STATS_Z95);
        char line[256];
        snprintf(line, sizeof line, "summary %-12s %zu cells, %lld of %lld right: accuracy %.3f [%.3f, %.3f]", r->archs[ia],
                 cells, (long long)k, (long long)n, (double)k / (double)n, lo, hi);
        orthros_table_note(&r->table, line);
    }
}

/* Every cell of one architecture not yet in the file. */
static int run_arch(eval_run *r, size_t ia, orthros_arch_opts *ao, size_t *idx, size_t total, double t0)
{
    const eval_opts *o = r->o;
    orthros_model *m = NULL;
    int rc = 0;
    ao->arch = r->archs[ia];
    for (size_t ic = 0; ic < r->nc && !rc; ic++)
        for (size_t ix = 0; ix < r->nx && !rc; ix++) {
            cell c = {r->archs[ia], r->ctxs[ic], r->xs[ix]};
            (*idx)++;
            if (orthros_eval_file_find(&r->f, c.arch, c.ctx, c.x)) {
                if (!o->quiet)
                    fprintf(stderr, "[%zu/%zu] %s ctx %d %s %d: already in %s, skipped\n", *idx, total, c.arch, c.ctx,
                            x_name(o), c.x, o->json);
                continue;
            }
            if (!m && (rc = orthros_model_load(&m, r->be, o->mo.model, ao, (uint64_t)o->mo.seed))) break;
            if (orthros_model_get_config(m)->vocab != r->lay.vocab) {
                rc = orthros_error(ORTHROS_EFORMAT, "%s: vocab_size disagrees with its analytic_recall layout", o->mo.model);
                break;
            }
            if (!o->quiet)
                fprintf(stderr, "[%zu/%zu] %s %s ctx %d %s %d, %d samples (elapsed %.0f s)...\n", *idx, total, o->task,
                        c.arch, c.ctx, x_name(o), c.x, o->samples, orthros_now_s() - t0);
            orthros_eval_cell res;
            if ((rc = run_cell(&res, m, o, &r->lay, r->variant, &c, r->prompts))) break;
            if ((rc = orthros_eval_file_add(&r->f, &res))) {
                cJSON_Delete(res.records);
                break;
            }
            r->measured++;
            print_cell(r, &r->f.cells[r->f.n_cells - 1]);
            if (r->prompts) fflush(r->prompts);
            rc = save(r, 0);
        }
    orthros_model_free(m);
    return rc;
}

static const orthros_table_col eval_cols[] = {{"arch", -12, 0}, {"ctx", 8, 1},      {"x", 6, 1},      {"n", 8, 1},
                                              {"accuracy", 9, 1}, {"ci95_lo", 8, 1}, {"ci95_hi", 8, 1}};

static int run_eval(eval_opts *o, int argc, char **argv)
{
    const char *cmd = "eval";
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    orthros_arch_opts ao;
    orthros_table_format tf = ORTHROS_TABLE_TEXT;
    int rc;
    if ((rc = parse_grid(&r)) || (rc = orthros_model_opts_resolve(&ao, &o->mo)) ||
        (rc = orthros_table_format_parse(&tf, o->format)))
        return orthros_cmd_fail_usage(cmd, rc);
    if ((rc = orthros_backend_create(&r.be, o->mo.device))) return orthros_cmd_fail(cmd, rc);
    orthros_table_col cols[7];
    memcpy(cols, eval_cols, sizeof cols);
    cols[2].name = x_name(o);
    if ((rc = open_results(&r, argc, argv)) || (rc = orthros_table_open(&r.table, tf, o->table_out, cols, 7))) goto done;
    if (o->save_prompts && !(r.prompts = fopen(o->save_prompts, o->resume ? "a" : "w"))) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", o->save_prompts, strerror(errno));
        goto done;
    }
    size_t total = r.na * r.nc * r.nx, idx = 0;
    double t0 = orthros_now_s();
    for (size_t ia = 0; ia < r.na && !rc; ia++) rc = run_arch(&r, ia, &ao, &idx, total, t0);
    if (!rc && !(rc = save(&r, 1))) {
        print_summary(&r);
        if (!o->quiet && (r.measured || !r.existed || o->force || o->resume)) fprintf(stderr, "eval: results in %s\n", o->json);
    }
done:
    if (r.table.out) {
        int trc = orthros_table_close(&r.table);
        if (!rc) rc = trc;
    }
    if (rc) orthros_cmd_fail(cmd, rc);
    if (r.prompts) fclose(r.prompts);
    orthros_eval_file_free(&r.f);
    orthros_backend_free(r.be);
    return rc ? 1 : 0;
}

int orthros_cmd_eval(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "niah") && strcmp(argv[2], "mqar"))) {
        int help = argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"));
        fprintf(help ? stdout : stderr,
                "usage: orthros eval niah|mqar [options]   (orthros eval niah --help for its options)\n\n"
                "  niah   needle in a haystack over context x depth (variants single, multikey, multivalue, multiquery)\n"
                "  mqar   multi-query associative recall over context x number of pairs\n");
        if (!help && argc >= 3) fprintf(stderr, "orthros eval: error: unknown task \"%s\"\n", argv[2]);
        return help ? 0 : 2;
    }
    eval_opts o = {.task = argv[2], .archs = "transformer,orthros,linear,swa,hybrid", .depths = "0:100:+10",
                   .pairs = NULL, .variant = "single", .samples = 4, .format = "text"};
    int niah = !strcmp(o.task, "niah");
    char cmdname[32];
    snprintf(cmdname, sizeof cmdname, "eval %s", o.task);
    orthros_model_opts_default(&o.mo);
    o.mo.model = NULL;
    orthros_cmd c;
    orthros_cmd_init(&c, cmdname,
                     niah ? "Needle in a haystack on an analytic recall checkpoint: for every architecture, context length "
                            "and depth, seeded token-level haystacks with the needle(s) at the depth, the question at the "
                            "end of the prompt, the answer generated greedily and scored by exact match. Writes a JSON "
                            "result file with per-sample records and per-cell accuracy with a Wilson 95% interval."
                          : "Multi-query associative recall (Zoology) on an analytic recall checkpoint: the key-value pairs "
                            "at the start of the context, the questions asked one after another in the decode phase; "
                            "accuracy per cell over all questions, with a Wilson 95% interval.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_opt *arch = orthros_cmd_opt(&c, "arch");
    arch->dst = &o.archs;
    arch->metavar = "LIST";
    arch->help = "architectures, comma-separated (default transformer,orthros,linear,swa,hybrid)";
    orthros_cmd_opt(&c, "model")->help = "an analytic checkpoint directory (orthros make-model analytic-recall) (required)";
    orthros_cmd_opt(&c, "seed")->help = "seed of the samples (default 1)";
    orthros_cmd_add(&c, "ctx", ORTHROS_OPT_STR, &o.ctxs, "LIST",
                    "context lengths in tokens, prompt included: 1k,4k or 1k:128k:x2 (default 256,1k on cpu, 1k:128k:x2 on cuda)");
    if (niah) {
        orthros_cmd_add(&c, "depths", ORTHROS_OPT_STR, &o.depths, "LIST",
                        "needle depths in percent of the context, 0..100 (default 0:100:+10)");
        orthros_cmd_add(&c, "variant", ORTHROS_OPT_STR, &o.variant, "V", "single|multikey|multivalue|multiquery (default single)");
    } else {
        orthros_cmd_add(&c, "pairs", ORTHROS_OPT_STR, &o.pairs, "LIST",
                        "key-value pairs per sample, at most the model's keys (default 1:64:x2, capped at the keys)");
    }
    orthros_cmd_add_num(&c, "samples", ORTHROS_OPT_INT, &o.samples, 1, 1000000, "N", "samples per cell (default 4)");
    orthros_cmd_add(&c, "json", ORTHROS_OPT_STR, &o.json, "FILE",
                    niah ? "result file, rewritten after every cell (default orthros-eval-niah.json)"
                         : "result file, rewritten after every cell (default orthros-eval-mqar.json)");
    orthros_cmd_add(&c, "resume", ORTHROS_OPT_FLAG, &o.resume, NULL,
                    "keep the cells already in --json (same configuration) and run only the rest");
    orthros_cmd_add(&c, "force", ORTHROS_OPT_FLAG, &o.force, NULL,
                    "replace --json at the start (without it, an existing file is replaced only once a cell is done)");
    orthros_cmd_add(&c, "save-prompts", ORTHROS_OPT_STR, &o.save_prompts, "FILE",
                    "also write every sample's prompt, questions and answers as JSON lines (for evals/check_hf.py)");
    orthros_cmd_add(&c, "o", ORTHROS_OPT_STR, &o.format, "FMT", "table format on stdout: text|md|csv|jsonl|json (default text)");
    orthros_cmd_add(&c, "table-out", ORTHROS_OPT_STR, &o.table_out, "FILE", "write the table to FILE instead of stdout");
    orthros_cmd_add(&c, "quiet", ORTHROS_OPT_FLAG, &o.quiet, NULL, "no progress lines on stderr");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model)
        return orthros_cmd_usage(&c, "--model is required (a directory made by `orthros make-model analytic-recall`)");
    if (!strncmp(o.mo.model, "preset:", 7))
        return orthros_cmd_usage(&c, "%s has no token layout; the evals need a model made by `orthros make-model "
                                     "analytic-recall`", o.mo.model);
    if (o.resume && o.force) return orthros_cmd_usage(&c, "--resume keeps the file's cells, --force replaces them: not both");
    if (!strcmp(o.json ? o.json : "", "-")) return orthros_cmd_usage(&c, "--json needs a file (results are rewritten as cells finish)");
    int gpu = strcmp(o.mo.device, "cpu") && (strcmp(o.mo.device, "auto") || orthros_cuda_available());
    if (!o.ctxs) o.ctxs = gpu ? "1k:128k:x2" : "256,1k";
    if (!o.json) o.json = niah ? "orthros-eval-niah.json" : "orthros-eval-mqar.json";
    char pairs_default[64];
    if (!niah && !o.pairs) {
        /* 1, 2, 4, ... up to the model's keys. */
        orthros_ar_layout l;
        int keys = !orthros_ar_layout_load(&l, o.mo.model) ? l.keys : 64;
        snprintf(pairs_default, sizeof pairs_default, "1:%d:x2", keys);
        o.pairs = pairs_default;
    }
    return run_eval(&o, argc, argv);
}

int orthros_cmd_make_model(int argc, char **argv)
{
    const char *cmd = "make-model", *out = NULL, *max_ctx = NULL;
    orthros_ar_params p;
    orthros_ar_params_default(&p);
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Writes a model built by construction, not trained.\n"
                     "  orthros make-model analytic-recall --out DIR: a 2-layer Llama checkpoint (loadable by "
                     "transformers as LlamaForCausalLM) that answers key -> value recall questions under full attention "
                     "at every length up to --max-context, and a fixed default token wherever its attention mass on the "
                     "right needle is below one half (docs/evals.md).",
                     2);
    orthros_cmd_add(&c, "out", ORTHROS_OPT_STR, &out, "DIR", "directory to write config.json and model.safetensors into (required)");
    orthros_cmd_add(&c, "keys", ORTHROS_OPT_INT, &p.keys, "K", "key tokens, 1..64 (default 64): the most MQAR pairs it supports");
    orthros_cmd_add(&c, "values", ORTHROS_OPT_INT, &p.values, "V", "value tokens, a multiple of 4 in 4..32 (default 32)");
    orthros_cmd_add(&c, "fillers", ORTHROS_OPT_INT, &p.fillers, "F", "filler tokens for haystacks, 1..256 (default 64)");
    orthros_cmd_add(&c, "max-context", ORTHROS_OPT_STR, &max_ctx, "N",
                    "longest context the margins are sized for, e.g. 1m (default 1m, at most 1g)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (c.n_pos != 1 || strcmp(c.pos[0], "analytic-recall"))
        return orthros_cmd_usage(&c, "name the model to make: analytic-recall (see --help)");
    if (!out) return orthros_cmd_usage(&c, "--out is required (see --help)");
    int rc;
    if (max_ctx) {
        int64_t v;
        if ((rc = orthros_axis_parse_scalar(&v, max_ctx, 16, (int64_t)1 << 30)))
            return orthros_cmd_usage(&c, "--max-context: %s", orthros_last_error());
        p.max_context = v;
    }
    if ((rc = orthros_ar_check(&p))) return orthros_cmd_usage(&c, "%s", orthros_last_error());
    if ((rc = orthros_ar_write(out, &p))) return orthros_cmd_fail(cmd, rc);
    orthros_ar_layout l;
    orthros_ar_margins m;
    orthros_ar_layout_of(&l, &p);
    orthros_ar_margins_of(&m, &p);
    fprintf(stderr,
            "make-model: %s: analytic-recall, %d keys, %d values, %d fillers, vocab %d, sized for %lld tokens\n"
            "  retrieval score S = %.2f: margin %.2f over ln(max_context), %.2f over the other facts\n"
            "  exclusion margin %.2f, exclusion head margin %.2f, largest rotation %.2e rad\n",
            out, l.keys, l.values, l.fillers, l.vocab, (long long)l.max_context, m.S, m.gap_filler, m.gap_keys,
            m.gap_excl, m.gap_exc_head, m.rope_max_angle);
    return 0;
}
