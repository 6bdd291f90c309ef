/* orthros eval niah / mqar: every cell of architecture x context x depth (NIAH) or architecture x context x
 * pairs (MQAR) runs `samples` seeded samples greedily, scores them by exact match, and is written to the
 * result file with its Wilson interval as soon as it is done; --resume keeps the cells already there.
 * orthros make-model analytic-recall: writes the checkpoint the evals run on (analytic.c). */
#define _GNU_SOURCE
#include "eval.h"
#include "analytic.h"
#include "axes.h"
#include "cli.h"
#include "results.h"
#include "stats.h"
#include "tasks.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_AXIS 256

static const char *const arch_names[] = {"transformer", "orthros", "linear", "swa", "hybrid", NULL};

typedef struct {
    cli_model_opts mo;
    const char *task;      /* "niah" or "mqar" */
    const char *archs, *ctxs, *depths, *pairs, *variant, *json, *save_prompts;
    int samples, resume;
} eval_opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

static const char *x_name(const eval_opts *o) { return strcmp(o->task, "niah") ? "pairs" : "depth"; }

static int cell_matches(const cJSON *c, const cell *k, const eval_opts *o)
{
    const cJSON *a = cJSON_GetObjectItem(c, "arch"), *ctx = cJSON_GetObjectItem(c, "ctx");
    const cJSON *x = cJSON_GetObjectItem(c, x_name(o));
    return cJSON_IsString(a) && !strcmp(a->valuestring, k->arch) && cJSON_IsNumber(ctx) && ctx->valueint == k->ctx &&
           cJSON_IsNumber(x) && x->valueint == k->x;
}

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
    cJSON_AddStringToObject(j, "variant", strcmp(o->task, "niah") ? "mqar" : o->variant);
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

/* Runs every sample of one cell on model m; returns the cell object or NULL (error recorded). */
static cJSON *run_cell(orthros_model *m, const eval_opts *o, const orthros_ar_layout *l, orthros_niah_variant v,
                       const cell *c, FILE *prompts)
{
    orthros_eval_sample s;
    orthros_session *sess = NULL;
    cJSON *out = NULL, *records = cJSON_CreateArray();
    int64_t correct = 0, trials = 0, sample_correct = 0;
    double t0 = now_s();
    int rc = 0;
    for (int i = 0; i < o->samples; i++) {
        uint64_t seed = orthros_eval_sample_seed((uint64_t)o->mo.seed, o->task, c->ctx, c->x, i);
        if ((rc = build_sample(&s, o, l, v, c, seed))) goto fail;
        int need = s.n_prompt + orthros_eval_decode_tokens(&s);
        if (!sess && (rc = orthros_session_init(&sess, m, 1, need, o->mo.chunk))) {
            orthros_eval_sample_free(&s);
            goto fail;
        }
        int32_t gen[ORTHROS_EVAL_MAX_ANSWERS];
        rc = orthros_eval_run(sess, &s, gen);
        if (!rc && prompts) rc = save_prompt(prompts, o, c, seed, &s, gen);
        if (rc) {
            orthros_eval_sample_free(&s);
            goto fail;
        }
        int k = orthros_eval_score(&s, gen), ok = k == s.n_answers;
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "ctx", c->ctx);
        cJSON_AddNumberToObject(r, x_name(o), c->x);
        cJSON_AddNumberToObject(r, "seed", (double)seed);
        if (!strcmp(o->task, "niah")) {
            cJSON *pos = cJSON_AddArrayToObject(r, "needle_positions");
            for (int j = 0; j < (v == ORTHROS_NIAH_SINGLE ? 1 : ORTHROS_NIAH_NEEDLES); j++)
                cJSON_AddItemToArray(pos, cJSON_CreateNumber(s.needle_pos[j]));
        }
        cJSON_AddItemToObject(r, "expected", ints_json(s.expected, s.n_answers));
        cJSON_AddItemToObject(r, "generated", ints_json(gen, s.n_answers));
        cJSON_AddNumberToObject(r, "n_correct", k);
        cJSON_AddBoolToObject(r, "correct", ok);
        cJSON_AddItemToArray(records, r);
        /* NIAH counts samples (all answers right); MQAR counts questions, as Zoology reports it. */
        if (strcmp(o->task, "niah")) {
            correct += k;
            trials += s.n_answers;
        } else {
            correct += ok;
            trials += 1;
        }
        sample_correct += ok;
        orthros_eval_sample_free(&s);
    }
    double lo = 0, hi = 1;
    orthros_stats_wilson(&lo, &hi, correct, trials, ORTHROS_STATS_Z95);
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "task", o->task);
    cJSON_AddStringToObject(out, "variant", strcmp(o->task, "niah") ? "mqar" : o->variant);
    cJSON_AddStringToObject(out, "arch", c->arch);
    cJSON_AddNumberToObject(out, "ctx", c->ctx);
    cJSON_AddNumberToObject(out, x_name(o), c->x);
    cJSON_AddNumberToObject(out, "samples", o->samples);
    cJSON_AddNumberToObject(out, "samples_correct", (double)sample_correct);
    cJSON_AddNumberToObject(out, "n", (double)trials);
    cJSON_AddNumberToObject(out, "correct", (double)correct);
    cJSON_AddNumberToObject(out, "accuracy", (double)correct / (double)trials);
    cJSON_AddNumberToObject(out, "ci95_lo", lo);
    cJSON_AddNumberToObject(out, "ci95_hi", hi);
    cJSON_AddNumberToObject(out, "elapsed_s", now_s() - t0);
    cJSON_AddItemToObject(out, "records", records);
    records = NULL;
fail:
    cJSON_Delete(records);
    orthros_session_free(sess);
    return out;
}

static cJSON *config_json(const eval_opts *o, const char *device, const orthros_ar_layout *l)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "task", o->task);
    cJSON_AddStringToObject(c, "variant", strcmp(o->task, "niah") ? "mqar" : o->variant);
    cJSON_AddStringToObject(c, "model", o->mo.model);
    cJSON_AddStringToObject(c, "arch", o->archs);
    cJSON_AddStringToObject(c, "ctx", o->ctxs);
    if (!strcmp(o->task, "niah")) cJSON_AddStringToObject(c, "depths", o->depths);
    else cJSON_AddStringToObject(c, "pairs", o->pairs);
    cJSON_AddNumberToObject(c, "samples", o->samples);
    cJSON_AddNumberToObject(c, "seed", o->mo.seed);
    cJSON_AddStringToObject(c, "device", device);
    cJSON_AddNumberToObject(c, "chunk", o->mo.chunk);
    cJSON_AddNumberToObject(c, "tail", o->mo.tail);
    cJSON_AddNumberToObject(c, "window", o->mo.window);
    cJSON_AddNumberToObject(c, "hybrid_every", o->mo.hybrid_every);
    cJSON_AddStringToObject(c, "feature_map", o->mo.feature_map ? o->mo.feature_map : "");
    cJSON_AddStringToObject(c, "scoring", strcmp(o->task, "niah")
                                              ? "exact match per question; n counts questions"
                                              : "exact match of every expected token (multivalue: as a set); n counts samples");
    cJSON_AddItemToObject(c, "analytic_recall", orthros_ar_layout_json(l));
    return c;
}

/* A resumed file must hold the same experiment. */
static int check_resume(const cJSON *old, const eval_opts *o)
{
    const cJSON *oc = cJSON_GetObjectItem(cJSON_GetObjectItem(old, "run"), "config");
    const char *keys[] = {"task", "variant", "model"};
    const char *want[] = {o->task, strcmp(o->task, "niah") ? "mqar" : o->variant, o->mo.model};
    const cJSON *kind = cJSON_GetObjectItem(old, "kind");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "eval"))
        return orthros_error(ORTHROS_EINVAL, "%s is not an eval result file; cannot resume", o->json);
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItem(oc, keys[i]);
        if (!cJSON_IsString(v) || strcmp(v->valuestring, want[i]))
            return orthros_error(ORTHROS_EINVAL, "%s holds results of another %s (%s, not %s); cannot resume", o->json,
                                 keys[i], cJSON_IsString(v) ? v->valuestring : "?", want[i]);
    }
    const cJSON *sm = cJSON_GetObjectItem(oc, "samples"), *sd = cJSON_GetObjectItem(oc, "seed");
    if (!cJSON_IsNumber(sm) || sm->valueint != o->samples || !cJSON_IsNumber(sd) || sd->valueint != o->mo.seed)
        return orthros_error(ORTHROS_EINVAL, "%s was run with other --samples or --seed; cannot resume", o->json);
    return 0;
}

static int run_eval(eval_opts *o, int argc, char **argv)
{
    const char *cmd = "eval";
    char archs[MAX_AXIS][ORTHROS_AXIS_NAME_MAX];
    int ctxs[MAX_AXIS], xs[MAX_AXIS];
    size_t na = 0, nc = 0, nx = 0;
    int niah = !strcmp(o->task, "niah"), rc;
    orthros_niah_variant variant = ORTHROS_NIAH_SINGLE;
    orthros_arch_opts ao;
    orthros_ar_layout lay;
    if (!o->mo.model) {
        fprintf(stderr, "orthros eval: error: --model is required (a directory made by `orthros make-model "
                        "analytic-recall`)\n");
        return 2;
    }
    if (o->samples < 1) {
        fprintf(stderr, "orthros eval: error: --samples must be at least 1 (got %d)\n", o->samples);
        return 2;
    }
    if (!strncmp(o->mo.model, "preset:", 7)) {
        fprintf(stderr, "orthros eval: error: %s has no token layout; the evals need a model made by `orthros "
                        "make-model analytic-recall`\n", o->mo.model);
        return 2;
    }
    if ((niah && (rc = orthros_niah_variant_parse(o->variant, &variant))) ||
        (rc = orthros_axis_parse_names(archs, MAX_AXIS, &na, o->archs, arch_names)) ||
        (rc = parse_ints(ctxs, &nc, o->ctxs, "ctx", 1, INT_MAX / 2)) ||
        (rc = niah ? parse_ints(xs, &nx, o->depths, "depths", 0, 100) : parse_ints(xs, &nx, o->pairs, "pairs", 1, INT_MAX)) ||
        (rc = cli_model_opts_resolve(&ao, &o->mo)) || (rc = orthros_ar_layout_load(&lay, o->mo.model))) {
        cli_fail(cmd, rc);
        return 2;
    }
    /* Refuse a malformed grid before any model runs. */
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < nx; j++) {
            orthros_eval_sample s;
            cell c = {archs[0], ctxs[i], xs[j]};
            if ((rc = build_sample(&s, o, &lay, variant, &c, 0))) {
                cli_fail(cmd, rc);
                return 2;
            }
            orthros_eval_sample_free(&s);
        }
    orthros_backend *be = NULL;
    if ((rc = orthros_backend_create(&be, o->mo.device))) return cli_fail(cmd, rc);
    cJSON *root = NULL, *old = NULL;
    FILE *prompts = NULL;
    if (o->resume && (rc = orthros_result_load(&old, o->json))) goto fail;
    if (old && (rc = check_resume(old, o))) goto fail;
    if (o->save_prompts && !(prompts = fopen(o->save_prompts, o->resume ? "a" : "w"))) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", o->save_prompts, strerror(errno));
        goto fail;
    }
    root = orthros_result_new("eval", argc, argv, (uint64_t)o->mo.seed, be);
    cJSON *run = cJSON_GetObjectItem(root, "run");
    cJSON_AddItemToObject(run, "config", config_json(o, be->name, &lay));
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    const cJSON *oc;
    if (old) cJSON_ArrayForEach(oc, cJSON_GetObjectItem(old, "cells")) cJSON_AddItemToArray(cells, cJSON_Duplicate(oc, 1));
    if ((rc = orthros_result_write(o->json, root))) goto fail;

    size_t total = na * nc * nx, idx = 0;
    double t0 = now_s();
    printf("%-12s %8s %6s %8s %9s %17s\n", "arch", "ctx", x_name(o), "n", "accuracy", "ci95");
    for (size_t ia = 0; ia < na; ia++) {
        orthros_model *m = NULL;
        ao.arch = archs[ia];
        for (size_t ic = 0; ic < nc; ic++)
            for (size_t ix = 0; ix < nx; ix++) {
                cell c = {archs[ia], ctxs[ic], xs[ix]};
                int found = 0;
                idx++;
                cJSON_ArrayForEach(oc, cells) found |= cell_matches(oc, &c, o);
                if (found) {
                    fprintf(stderr, "[%zu/%zu] %s ctx %d %s %d: already in %s, skipped\n", idx, total, c.arch, c.ctx,
                            x_name(o), c.x, o->json);
                    continue;
                }
                if (!m && (rc = orthros_model_load(&m, be, o->mo.model, &ao, (uint64_t)o->mo.seed))) goto fail;
                if (orthros_model_get_config(m)->vocab != lay.vocab) {
                    orthros_model_free(m);
                    rc = orthros_error(ORTHROS_EFORMAT, "%s: vocab_size disagrees with its analytic_recall layout",
                                       o->mo.model);
                    goto fail;
                }
                fprintf(stderr, "[%zu/%zu] %s %s ctx %d %s %d, %d samples (elapsed %.0f s)...\n", idx, total, o->task,
                        c.arch, c.ctx, x_name(o), c.x, o->samples, now_s() - t0);
                cJSON *res = run_cell(m, o, &lay, variant, &c, prompts);
                if (!res) {
                    rc = ORTHROS_EINVAL;
                    orthros_model_free(m);
                    goto fail;
                }
                cJSON_AddItemToArray(cells, res);
                printf("%-12s %8d %6d %8d %9.3f    [%.3f, %.3f]\n", c.arch, c.ctx, c.x,
                       cJSON_GetObjectItem(res, "n")->valueint, cJSON_GetObjectItem(res, "accuracy")->valuedouble,
                       cJSON_GetObjectItem(res, "ci95_lo")->valuedouble, cJSON_GetObjectItem(res, "ci95_hi")->valuedouble);
                fflush(stdout);
                if (prompts) fflush(prompts);
                if ((rc = orthros_result_write(o->json, root))) {
                    orthros_model_free(m);
                    goto fail;
                }
            }
        orthros_model_free(m);
    }
    char now[64];
    orthros_result_now(now, sizeof now);
    cJSON_ReplaceItemInObject(run, "end_time", cJSON_CreateString(now));
    rc = orthros_result_write(o->json, root);
    if (!rc) fprintf(stderr, "eval: results in %s\n", o->json);
fail:
    if (rc) cli_fail(cmd, rc);
    if (prompts) fclose(prompts);
    cJSON_Delete(root);
    cJSON_Delete(old);
    orthros_backend_free(be);
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
                   .pairs = NULL, .variant = "single", .samples = 4};
    int niah = !strcmp(o.task, "niah");
    cli_model_opts_default(&o.mo);
    o.mo.model = NULL;
    cli_opt t[64];
    int n = cli_model_opts_table(t, 0, &o.mo);
    t[1] = (cli_opt){"arch", CLI_STR, &o.archs, "LIST",
                     "architectures, comma-separated (default transformer,orthros,linear,swa,hybrid)"};
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, "model"))
            t[i].help = "an analytic checkpoint directory (orthros make-model analytic-recall) (required)";
        else if (!strcmp(t[i].name, "seed"))
            t[i].help = "seed of the samples (default 1)";
    t[n++] = (cli_opt){"ctx", CLI_STR, &o.ctxs, "LIST",
                       "context lengths in tokens, prompt included: 1k,4k or 1k:128k:x2 (default 256,1k on cpu, "
                       "1k:128k:x2 on cuda)"};
    if (niah) {
        t[n++] = (cli_opt){"depths", CLI_STR, &o.depths, "LIST",
                           "needle depths in percent of the context, 0..100 (default 0:100:+10)"};
        t[n++] = (cli_opt){"variant", CLI_STR, &o.variant, "V",
                           "single|multikey|multivalue|multiquery (default single)"};
    } else {
        t[n++] = (cli_opt){"pairs", CLI_STR, &o.pairs, "LIST",
                           "key-value pairs per sample, at most the model's keys (default 1:64:x2, capped at the keys)"};
    }
    t[n++] = (cli_opt){"samples", CLI_INT, &o.samples, "N", "samples per cell (default 4)"};
    t[n++] = (cli_opt){"json", CLI_STR, &o.json, "FILE",
                       niah ? "result file, rewritten after every cell (default orthros-eval-niah.json)"
                            : "result file, rewritten after every cell (default orthros-eval-mqar.json)"};
    t[n++] = (cli_opt){"resume", CLI_FLAG, &o.resume, NULL, "keep the cells already in --json and run only the rest"};
    t[n++] = (cli_opt){"save-prompts", CLI_STR, &o.save_prompts, "FILE",
                       "also write every sample's prompt, questions and answers as JSON lines (for evals/check_hf.py)"};
    const char *pos[1];
    char cmdname[32];
    snprintf(cmdname, sizeof cmdname, "eval %s", o.task);
    int npos, pr = cli_parse(argc, argv, 3, t, n, cmdname,
                             niah ? "Needle in a haystack on an analytic recall checkpoint: for every architecture, "
                                    "context length and depth, seeded token-level haystacks with the needle(s) at the "
                                    "depth, the question at the end of the prompt, the answer generated greedily and "
                                    "scored by exact match. Writes a JSON result file with per-sample records and "
                                    "per-cell accuracy with a Wilson 95% interval."
                                  : "Multi-query associative recall (Zoology) on an analytic recall checkpoint: the "
                                    "key-value pairs at the start of the context, the questions asked one after another "
                                    "in the decode phase; accuracy per cell over all questions, with a Wilson 95% "
                                    "interval.",
                             pos, 0, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    int gpu = strcmp(o.mo.device, "cpu") && (strcmp(o.mo.device, "auto") || orthros_cuda_available());
    if (!o.ctxs) o.ctxs = gpu ? "1k:128k:x2" : "256,1k";
    if (!o.json) o.json = niah ? "orthros-eval-niah.json" : "orthros-eval-mqar.json";
    char pairs_default[64];
    if (!niah && !o.pairs) {
        /* 1, 2, 4, ... up to the model's keys. */
        orthros_ar_layout l;
        int keys = o.mo.model && !orthros_ar_layout_load(&l, o.mo.model) ? l.keys : 64;
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
    cli_opt t[8];
    int n = 0;
    t[n++] = (cli_opt){"out", CLI_STR, &out, "DIR", "directory to write config.json and model.safetensors into (required)"};
    t[n++] = (cli_opt){"keys", CLI_INT, &p.keys, "K", "key tokens, 1..64 (default 64): the most MQAR pairs it supports"};
    t[n++] = (cli_opt){"values", CLI_INT, &p.values, "V", "value tokens, a multiple of 4 in 4..32 (default 32)"};
    t[n++] = (cli_opt){"fillers", CLI_INT, &p.fillers, "F", "filler tokens for haystacks, 1..256 (default 64)"};
    t[n++] = (cli_opt){"max-context", CLI_STR, &max_ctx, "N",
                       "longest context the margins are sized for, e.g. 1m (default 1m, at most 1g)"};
    const char *pos[2];
    int npos, pr = cli_parse(argc, argv, 2, t, n, cmd,
                             "Writes a model built by construction, not trained.\n"
                             "  orthros make-model analytic-recall --out DIR: a 2-layer Llama checkpoint (loadable by "
                             "transformers as LlamaForCausalLM) that answers key -> value recall questions under full "
                             "attention at every length up to --max-context, and a fixed default token wherever its "
                             "attention mass on the right needle is below one half (docs/evals.md).",
                             pos, 2, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    if (npos != 1 || strcmp(pos[0], "analytic-recall")) {
        fprintf(stderr, "orthros %s: error: name the model to make: analytic-recall (see --help)\n", cmd);
        return 2;
    }
    if (!out) {
        fprintf(stderr, "orthros %s: error: --out is required (see --help)\n", cmd);
        return 2;
    }
    int rc;
    if (max_ctx) {
        int64_t v;
        if ((rc = orthros_axis_parse_scalar(&v, max_ctx, 16, (int64_t)1 << 30))) {
            fprintf(stderr, "orthros %s: error: --max-context: %s\n", cmd, orthros_last_error());
            return 2;
        }
        p.max_context = v;
    }
    if ((rc = orthros_ar_check(&p))) {
        fprintf(stderr, "orthros %s: error: %s\n", cmd, orthros_last_error());
        return 2;
    }
    if ((rc = orthros_ar_write(out, &p))) return cli_fail(cmd, rc);
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
