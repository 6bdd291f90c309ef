/* orthros eval: dispatches to the tasks. niah / mqar (here): every cell of architecture x context x depth (NIAH)
 * or architecture x context x pairs (MQAR) runs `samples` seeded samples greedily, scores them by exact match, and
 * is written to the result file with its Wilson interval as soon as it is done (driver.c); --resume keeps the cells
 * already there. ruler, recall and ppl run on text models (ruler.c, recall.c, ppl.c).
 * orthros make-model analytic-recall: writes the checkpoint the evals run on (analytic.c). */
#define _GNU_SOURCE
#include "eval.h"
#include "analytic.h"
#include "axes.h"
#include "driver.h"
#include "tables.h"
#include "tasks.h"
#include "text_eval.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The analytic tasks' own state: the variant and the checkpoint's token layout. */
typedef struct {
    const char *depths, *pairs, *variant;
    orthros_niah_variant v;
    orthros_analytic_layout lay;
} analytic_task;

static const char *variant_name(const eval_common *o, const analytic_task *t)
{
    return strcmp(o->task, "niah") ? "mqar" : t->variant;
}

static int build_sample(orthros_eval_sample *s, const eval_common *o, const analytic_task *t, const eval_cell *c,
                        uint64_t seed)
{
    return strcmp(o->task, "niah") ? orthros_mqar_sample(s, &t->lay, c->axis, c->ctx, seed)
                                   : orthros_niah_sample(s, &t->lay, t->v, c->ctx, c->axis, seed);
}

/* One line per sample for evals/check_hf.py: the prompt, the questions, what we generated. */
static int save_prompt(FILE *f, const eval_common *o, const analytic_task *t, const eval_cell *c, uint64_t seed,
                       const orthros_eval_sample *s, const int32_t *gen)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", o->task);
    cJSON_AddStringToObject(j, "variant", variant_name(o, t));
    cJSON_AddStringToObject(j, "arch", c->arch);
    cJSON_AddNumberToObject(j, "ctx", c->ctx);
    cJSON_AddNumberToObject(j, orthros_eval_axis_name(o->task), c->axis);
    orthros_eval_add_seed(j, seed);
    cJSON_AddItemToObject(j, "prompt", orthros_eval_ints_json(s->prompt, s->n_prompt));
    cJSON_AddItemToObject(j, "queries", orthros_eval_ints_json(s->queries, s->n_answers));
    cJSON_AddBoolToObject(j, "feed_back", s->feed_back);
    cJSON_AddItemToObject(j, "expected", orthros_eval_ints_json(s->expected, s->n_answers));
    cJSON_AddItemToObject(j, "generated", orthros_eval_ints_json(gen, s->n_answers));
    return orthros_eval_save_line(f, j);
}

/* The per-sample record of a cell's result. */
static cJSON *sample_record(const eval_common *o, const analytic_task *t, const eval_cell *c, uint64_t seed,
                            const orthros_eval_sample *s, const int32_t *gen, int k)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "ctx", c->ctx);
    cJSON_AddNumberToObject(r, orthros_eval_axis_name(o->task), c->axis);
    orthros_eval_add_seed(r, seed);
    if (!strcmp(o->task, "niah")) {
        cJSON *pos = cJSON_AddArrayToObject(r, "needle_positions");
        for (int j = 0; j < (t->v == ORTHROS_NIAH_SINGLE ? 1 : ORTHROS_NIAH_NEEDLES); j++)
            cJSON_AddItemToArray(pos, cJSON_CreateNumber(s->needle_pos[j]));
    }
    cJSON_AddItemToObject(r, "expected", orthros_eval_ints_json(s->expected, s->n_answers));
    cJSON_AddItemToObject(r, "generated", orthros_eval_ints_json(gen, s->n_answers));
    cJSON_AddNumberToObject(r, "n_correct", k);
    cJSON_AddBoolToObject(r, "correct", k == s->n_answers);
    return r;
}

/* Runs every sample of one cell on model m into *out (its records owned by it). */
static int run_cell(eval_run *run, orthros_eval_cell *out, orthros_model *m, const eval_cell *c)
{
    const eval_common *o = run->o;
    const analytic_task *t = run->task;
    orthros_eval_sample s;
    orthros_session *sess = NULL;
    int64_t correct = 0, trials = 0, sample_correct = 0;
    double t0 = orthros_now_s();
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->partial = NAN;
    if (!(out->records = cJSON_CreateArray())) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (int i = 0; i < o->samples; i++) {
        uint64_t seed = orthros_eval_sample_seed((uint64_t)o->mo.seed, o->task, c->ctx, c->axis, i);
        int32_t gen[ORTHROS_EVAL_MAX_ANSWERS];
        if ((rc = build_sample(&s, o, t, c, seed))) goto fail;
        int need = s.n_prompt + orthros_eval_decode_tokens(&s);
        if (!sess) rc = orthros_session_init(&sess, m, 1, need, o->mo.chunk);
        if (!rc) rc = orthros_eval_run(sess, &s, gen);
        if (!rc && run->prompts) rc = save_prompt(run->prompts, o, t, c, seed, &s, gen);
        if (rc) {
            orthros_eval_sample_free(&s);
            goto fail;
        }
        int k = orthros_eval_score(&s, gen), ok = k == s.n_answers;
        cJSON_AddItemToArray(out->records, sample_record(o, t, c, seed, &s, gen, k));
        /* NIAH counts samples (all answers right); MQAR counts questions, as Zoology reports it. */
        correct += strcmp(o->task, "niah") ? k : ok;
        trials += strcmp(o->task, "niah") ? s.n_answers : 1;
        sample_correct += ok;
        orthros_eval_sample_free(&s);
    }
    snprintf(out->task, sizeof out->task, "%s", o->task);
    snprintf(out->variant, sizeof out->variant, "%s", variant_name(o, t));
    snprintf(out->arch, sizeof out->arch, "%s", c->arch);
    out->ctx = c->ctx, out->axis = c->axis, out->samples = o->samples, out->samples_correct = (int)sample_correct;
    orthros_eval_cell_set_accuracy(out, correct, trials);
    out->elapsed_s = orthros_now_s() - t0;
    orthros_session_free(sess);
    return 0;
fail:
    cJSON_Delete(out->records);
    out->records = NULL;
    orthros_session_free(sess);
    return rc;
}

static int check_model(eval_run *r, orthros_model *m)
{
    const analytic_task *t = r->task;
    if (orthros_model_get_config(m)->vocab != t->lay.vocab)
        return orthros_error(ORTHROS_EFORMAT, "%s: vocab_size disagrees with its analytic_recall layout", r->o->mo.model);
    return 0;
}

/* The grid and the layout, checked before any model runs: usage errors. */
static int parse_grid(eval_run *r, analytic_task *t)
{
    const eval_common *o = r->o;
    int rc, niah = !strcmp(o->task, "niah");
    if ((niah && (rc = orthros_niah_variant_parse(t->variant, &t->v))) || (rc = orthros_eval_parse_archs(r)) ||
        (rc = orthros_eval_parse_ints(r->ctxs, &r->nc, o->ctxs, "ctx", 1, INT_MAX / 2)) ||
        (rc = niah ? orthros_eval_parse_ints(r->xs, &r->nx, t->depths, "depths", 0, 100)
                   : orthros_eval_parse_ints(r->xs, &r->nx, t->pairs, "pairs", 1, INT_MAX)) ||
        (rc = orthros_analytic_layout_load(&t->lay, o->mo.model)))
        return rc;
    for (size_t i = 0; i < r->nc; i++)
        for (size_t j = 0; j < r->nx; j++) {
            orthros_eval_sample s;
            eval_cell c = {r->archs[0], r->ctxs[i], r->xs[j]};
            if ((rc = build_sample(&s, o, t, &c, 0))) return rc;
            orthros_eval_sample_free(&s);
        }
    return 0;
}

const orthros_table_col orthros_eval_accuracy_cols[7] = {{"arch", -12, 0}, {"ctx", 8, 1},      {"x", 6, 1},      {"n", 8, 1},
                                              {"accuracy", 9, 1}, {"ci95_lo", 8, 1}, {"ci95_hi", 8, 1}};

static int run_analytic(eval_common *o, analytic_task *t, int argc, char **argv)
{
    static const eval_task_ops ops = {check_model, run_cell, NULL, NULL};
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = o, r.ops = &ops, r.task = t;
    int rc;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "eval %s", o->task);
    if ((rc = parse_grid(&r, t))) return orthros_cmd_fail_usage(cmd, rc);
    orthros_eval_config cfg;
    if ((rc = orthros_eval_config_common(&cfg, o, ""))) return orthros_cmd_fail(cmd, rc);
    snprintf(cfg.variant, sizeof cfg.variant, "%s", variant_name(o, t));
    cfg.xs = strdup(strcmp(o->task, "niah") ? t->pairs : t->depths);
    cfg.analytic_recall = orthros_analytic_layout_json(&t->lay);
    if (!cfg.xs || !cfg.analytic_recall) {
        orthros_eval_config_free(&cfg);
        return orthros_cmd_fail(cmd, orthros_error(ORTHROS_ENOMEM, "out of memory"));
    }
    snprintf(cfg.scoring, sizeof cfg.scoring, "%s",
             strcmp(o->task, "niah") ? "exact match per question; n counts questions"
                                     : "exact match of every expected token (multivalue: as a set); n counts samples");
    orthros_table_col cols[7];
    memcpy(cols, orthros_eval_accuracy_cols, sizeof cols);
    cols[2].name = orthros_eval_axis_name(o->task);
    return orthros_eval_drive(&r, argc, argv, &cfg, cols, 7);
}

/* orthros eval niah|mqar on the analytic checkpoint. */
static int cmd_analytic(int argc, char **argv)
{
    eval_common o;
    analytic_task t = {.depths = "0:100:+10", .pairs = NULL, .variant = "single"};
    orthros_eval_common_default(&o, argv[2]);
    int niah = !strcmp(o.task, "niah");
    const char *json_default = niah ? "orthros-eval-niah.json" : "orthros-eval-mqar.json";
    char cmdname[32];
    snprintf(cmdname, sizeof cmdname, "eval %s", o.task);
    orthros_cmd c;
    orthros_cmd_init(&c, cmdname,
                     niah ? "Needle in a haystack on an analytic recall checkpoint: for every architecture, context length "
                            "and depth, seeded token-level haystacks with the needle(s) at the depth, the question at the "
                            "end of the prompt, the answer generated greedily and scored by exact match. Writes a JSON "
                            "result file with per-sample records and per-cell accuracy with a Wilson 95% interval. (On a "
                            "text model, orthros eval ruler --task niah.)"
                          : "Multi-query associative recall (Zoology) on an analytic recall checkpoint: the key-value pairs "
                            "at the start of the context, the questions asked one after another in the decode phase; "
                            "accuracy per cell over all questions, with a Wilson 95% interval.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_cmd_opt(&c, "model")->help = "an analytic checkpoint directory (orthros make-model analytic-recall) (required)";
    orthros_cmd_opt(&c, "seed")->help = "seed of the samples (default 1)";
    orthros_cmd_add(&c, "ctx", ORTHROS_OPT_STR, &o.ctxs, "LIST",
                    "context lengths in tokens, prompt included: 1k,4k or 1k:128k:x2 (default 256,1k on cpu, 1k:128k:x2 on cuda)");
    if (niah) {
        orthros_cmd_add(&c, "depths", ORTHROS_OPT_STR, &t.depths, "LIST",
                        "needle depths in percent of the context, 0..100 (default 0:100:+10)");
        orthros_cmd_add(&c, "variant", ORTHROS_OPT_STR, &t.variant, "V", "single|multikey|multivalue|multiquery (default single)");
    } else {
        orthros_cmd_add(&c, "pairs", ORTHROS_OPT_STR, &t.pairs, "LIST",
                        "key-value pairs per sample, at most the model's keys (default 1:64:x2, capped at the keys)");
    }
    orthros_cmd_add_num(&c, "samples", ORTHROS_OPT_INT, &o.samples, 1, 1000000, "N", "samples per cell (default 4)");
    orthros_eval_common_add(&c, &o, json_default,
                    "also write every sample's prompt, questions and answers as JSON lines (for evals/check_hf.py)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model)
        return orthros_cmd_usage(&c, "--model is required (a directory made by `orthros make-model analytic-recall`)");
    if (!strncmp(o.mo.model, "preset:", 7))
        return orthros_cmd_usage(&c, "%s has no token layout; the evals need a model made by `orthros make-model "
                                     "analytic-recall`", o.mo.model);
    if ((pr = orthros_eval_common_check(&c, &o, json_default)) >= 0) return pr;
    int gpu = strcmp(o.mo.device, "cpu") && (strcmp(o.mo.device, "auto") || orthros_cuda_available());
    if (!o.ctxs) o.ctxs = gpu ? "1k:128k:x2" : "256,1k";
    char pairs_default[64];
    if (!niah && !t.pairs) {
        /* 1, 2, 4, ... up to the model's keys. */
        orthros_analytic_layout l;
        int keys = !orthros_analytic_layout_load(&l, o.mo.model) ? l.keys : 64;
        snprintf(pairs_default, sizeof pairs_default, "1:%d:x2", keys);
        t.pairs = pairs_default;
    }
    if (orthros_analytic_layout_load(&t.lay, o.mo.model)) {
        /* A model with a tokenizer but no layout is a text model: say where its evals are. */
        orthros_tokenizer *tok = NULL;
        int text = !orthros_tokenizer_load(&tok, o.mo.model);
        orthros_tokenizer_free(tok);
        if (text)
            return orthros_cmd_usage(&c, "%s has no analytic_recall layout: it is a text model; run its needle in a "
                                         "haystack with `orthros eval ruler --task niah`", o.mo.model);
    }
    return run_analytic(&o, &t, argc, argv);
}

int orthros_cmd_eval(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
        const char *help;
    } tasks[] = {
        {"niah", cmd_analytic, "needle in a haystack on the analytic checkpoint, context x depth (four variants)"},
        {"mqar", cmd_analytic, "multi-query associative recall on the analytic checkpoint, context x pairs"},
        {"ruler", orthros_cmd_eval_ruler, "RULER-style text tasks on a text model: NIAH (four variants), variable "
                                          "tracking, common words; context x depth (or hops, words)"},
        {"recall", orthros_cmd_eval_recall, "in-context recall questions from a JSONL file, contains-match"},
        {"ppl", orthros_cmd_eval_ppl, "perplexity of a text over sliding windows, bootstrap interval"},
        {"mc", orthros_cmd_eval_mc, "multiple-choice log-likelihood in lm-eval's terms (ARC, HellaSwag, PIQA, OpenBookQA, "
                                    "Winogrande layouts): acc, acc_norm"},
    };
    for (size_t i = 0; argc >= 3 && i < sizeof tasks / sizeof *tasks; i++)
        if (!strcmp(argv[2], tasks[i].name)) return tasks[i].run(argc, argv);
    int help = argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"));
    FILE *f = help ? stdout : stderr;
    fprintf(f, "usage: orthros eval TASK [options]   (orthros eval TASK --help for its options)\n\n");
    for (size_t i = 0; i < sizeof tasks / sizeof *tasks; i++) fprintf(f, "  %-7s %s\n", tasks[i].name, tasks[i].help);
    if (!help && argc >= 3) fprintf(stderr, "orthros eval: error: unknown task \"%s\"\n", argv[2]);
    return help ? 0 : 2;
}

int orthros_cmd_make_model(int argc, char **argv)
{
    const char *cmd = "make-model", *out = NULL, *max_ctx = NULL;
    orthros_analytic_params p;
    orthros_analytic_params_default(&p);
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
        if (orthros_axis_parse_scalar(&v, max_ctx, 16, (int64_t)1 << 30))
            return orthros_cmd_usage(&c, "--max-context: %s", orthros_last_error());
        p.max_context = v;
    }
    if (orthros_analytic_check(&p)) return orthros_cmd_usage(&c, "%s", orthros_last_error());
    if ((rc = orthros_analytic_write(out, &p))) return orthros_cmd_fail(cmd, rc);
    orthros_analytic_layout l;
    orthros_analytic_margins m;
    orthros_analytic_layout_of(&l, &p);
    orthros_analytic_margins_of(&m, &p);
    fprintf(stderr,
            "make-model: %s: analytic-recall, %d keys, %d values, %d fillers, vocab %d, sized for %lld tokens\n"
            "  retrieval score S = %.2f: margin %.2f over ln(max_context), %.2f over the other facts\n"
            "  exclusion margin %.2f, exclusion head margin %.2f, largest rotation %.2e rad\n",
            out, l.keys, l.values, l.fillers, l.vocab, (long long)l.max_context, m.S, m.gap_filler, m.gap_keys,
            m.gap_excl, m.gap_exc_head, m.rope_max_angle);
    return 0;
}
