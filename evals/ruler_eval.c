/* orthros eval ruler: the RULER-style tasks of ruler.h over architecture x context x depth (niah), hops (vt) or
 * common words (cwe), on a text model; each sample generated greedily and scored by contains-match (driver.c runs
 * the grid). */
#define _GNU_SOURCE
#include "driver.h"
#include "tables.h"
#include "ruler.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *task_arg, *variant_arg, *needle_arg, *chat_arg, *xs_arg;
    orthros_ruler_spec spec;
    orthros_tokenizer *tok;
    char seed_task[64];   /* what sample seeds are derived from: task, variant, needle */
} ruler_task;

static const char *axis_name(const ruler_task *t) { return orthros_eval_axis_name(orthros_ruler_file_task(t->spec.task)); }

static cJSON *strings_json(const orthros_ruler_sample *s)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < s->n_answers; i++) cJSON_AddItemToArray(a, cJSON_CreateString(s->answers[i]));
    return a;
}

static cJSON *record(const ruler_task *t, const eval_cell *c, uint64_t seed, const orthros_ruler_sample *s,
                     const char *text, int n_gen, int found)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "ctx", c->ctx);
    cJSON_AddNumberToObject(r, axis_name(t), c->axis);
    orthros_eval_add_seed(r, seed);
    cJSON_AddNumberToObject(r, "prompt_tokens", s->n_ids);
    cJSON_AddNumberToObject(r, t->spec.task == ORTHROS_RULER_CWE ? "list_entries" : "haystack_sentences", s->units);
    if (s->n_needles) {
        cJSON *u = cJSON_AddArrayToObject(r, t->spec.task == ORTHROS_RULER_VT ? "statement_sentences" : "needle_sentences");
        for (int i = 0; i < s->n_needles; i++) cJSON_AddItemToArray(u, cJSON_CreateNumber(s->needle_units[i]));
    }
    cJSON_AddItemToObject(r, "expected", strings_json(s));
    cJSON_AddStringToObject(r, "generated", text);
    cJSON_AddNumberToObject(r, "generated_tokens", n_gen);
    cJSON_AddNumberToObject(r, "n_correct", found);
    cJSON_AddBoolToObject(r, "correct", found == s->n_answers);
    return r;
}

static int save_prompt(eval_run *r, const eval_cell *c, uint64_t seed, const orthros_ruler_sample *s, const char *text)
{
    const ruler_task *t = r->task;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", orthros_ruler_file_task(t->spec.task));
    if (t->spec.task == ORTHROS_RULER_NIAH) {
        cJSON_AddStringToObject(j, "variant", orthros_niah_variant_name(t->spec.variant));
        cJSON_AddStringToObject(j, "needle", orthros_needle_name(t->spec.needle));
    }
    cJSON_AddStringToObject(j, "arch", c->arch);
    cJSON_AddNumberToObject(j, "ctx", c->ctx);
    cJSON_AddNumberToObject(j, axis_name(t), c->axis);
    orthros_eval_add_seed(j, seed);
    cJSON_AddStringToObject(j, "chat", orthros_chat_name(t->spec.chat));
    cJSON_AddStringToObject(j, "message", s->message);
    cJSON_AddStringToObject(j, "answer_prefix", s->answer_prefix);
    cJSON_AddItemToObject(j, "prompt", orthros_eval_ints_json(s->ids, s->n_ids));
    cJSON_AddItemToObject(j, "expected", strings_json(s));
    cJSON_AddStringToObject(j, "generated", text);
    return orthros_eval_save_line(r->prompts, j);
}

static int run_cell(eval_run *r, orthros_eval_cell *out, orthros_model *m, const eval_cell *c)
{
    const ruler_task *t = r->task;
    const eval_common *o = r->o;
    gen_cell g;
    int64_t correct = 0;
    double partial = 0;
    int rc = orthros_eval_gen_cell_begin(&g, out, m, c->ctx, t->spec.max_new, o->mo.chunk);
    if (rc) return rc;
    for (int i = 0; i < o->samples && !rc; i++) {
        uint64_t seed = orthros_eval_sample_seed((uint64_t)o->mo.seed, t->seed_task, c->ctx, c->axis, i);
        orthros_ruler_sample s;
        char *text = NULL;
        int n_gen = 0;
        if ((rc = orthros_ruler_sample_make(&s, t->tok, &t->spec, c->ctx, c->axis, seed))) break;
        rc = orthros_text_generate(g.sess, m, t->tok, t->spec.chat, s.ids, s.n_ids, t->spec.max_new, g.gen, &n_gen, &text);
        if (!rc && r->prompts) rc = save_prompt(r, c, seed, &s, text);
        if (!rc) {
            int found = orthros_ruler_score(&s, text);
            correct += found == s.n_answers;
            partial += (double)found / s.n_answers;
            cJSON_AddItemToArray(out->records, record(t, c, seed, &s, text, n_gen, found));
            if (!o->quiet) {
                char shown[400];
                orthros_eval_progress_text(shown, sizeof shown, text, 60);
                fprintf(stderr, "  sample %d: %d of %d found: \"%s\"\n", i + 1, found, s.n_answers, shown);
            }
        }
        free(text);
        orthros_ruler_sample_free(&s);
    }
    snprintf(out->task, sizeof out->task, "%s", orthros_ruler_file_task(t->spec.task));
    snprintf(out->variant, sizeof out->variant, "%s",
             t->spec.task == ORTHROS_RULER_NIAH ? orthros_niah_variant_name(t->spec.variant) : orthros_ruler_task_name(t->spec.task));
    if (t->spec.task == ORTHROS_RULER_NIAH) snprintf(out->needle, sizeof out->needle, "%s", orthros_needle_name(t->spec.needle));
    out->partial = partial / o->samples;
    return orthros_eval_gen_cell_end(&g, out, c, rc, correct, o->samples);
}

/* The accuracy columns and RULER's partial score. */
void orthros_eval_ruler_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX])
{
    orthros_eval_accuracy_row(r, c, v);
    snprintf(v[7], ORTHROS_NAME_MAX, "%.3f", c->partial);
}

/* The accuracy summary, then (text and markdown) RULER's pivot: architecture x length with the average. */
static void ruler_summary(eval_run *r)
{
    orthros_eval_accuracy_summary(r);
    if (r->table.format == ORTHROS_TABLE_TEXT || r->table.format == ORTHROS_TABLE_MD) {
        fputc('\n', r->table.out);
        orthros_eval_ruler_pivot(&r->f, r->table.format, r->table.out);
    }
}

/* Every context must be within the model's. */
static int check_model(eval_run *r, orthros_model *m)
{
    int max = orthros_model_get_config(m)->max_pos;
    for (size_t i = 0; i < r->nc; i++)
        if (max > 0 && r->ctxs[i] > max)
            return orthros_error(ORTHROS_EINVAL, "--ctx %d is past the model's context of %d tokens (max_position_embeddings)",
                                 r->ctxs[i], max);
    return 0;
}

const orthros_table_col orthros_eval_ruler_cols[8] = {{"arch", -12, 0}, {"ctx", 7, 1},      {"x", 6, 1},       {"n", 5, 1},
                                               {"accuracy", 9, 1}, {"ci95_lo", 8, 1}, {"ci95_hi", 8, 1}, {"partial", 8, 1}};

/* The task, its grid and the tokenizer, checked (a sample of every (ctx, x) built) before any model runs. */
static int parse_task(eval_run *r, ruler_task *t, const char *model)
{
    const eval_common *o = r->o;
    int rc, lo, hi;
    if ((rc = orthros_ruler_task_parse(t->task_arg, &t->spec.task)) ||
        (rc = orthros_niah_variant_parse(t->variant_arg, &t->spec.variant)) ||
        (rc = orthros_needle_parse(t->needle_arg, &t->spec.needle)) || (rc = orthros_eval_parse_archs(r)) ||
        (rc = orthros_eval_parse_ints(r->ctxs, &r->nc, o->ctxs, "ctx", 2, INT_MAX / 2)))
        return rc;
    orthros_ruler_x_range(t->spec.task, &lo, &hi);
    const char *xs = orthros_eval_xs_key(orthros_ruler_file_task(t->spec.task));
    if (!t->xs_arg) t->xs_arg = t->spec.task == ORTHROS_RULER_NIAH ? "0,50,100" : t->spec.task == ORTHROS_RULER_VT ? "4" : "10";
    if ((rc = orthros_eval_parse_ints(r->xs, &r->nx, t->xs_arg, xs, lo, hi))) return rc;
    if (!t->spec.max_new) t->spec.max_new = orthros_ruler_default_max_new(t->spec.task);
    if ((rc = orthros_tokenizer_load(&t->tok, model)) || (rc = orthros_chat_resolve(&t->spec.chat, t->chat_arg, t->tok)))
        return rc;
    /* A context past the model's is refused before the samples are built (1M tokens of haystack took 19 s). */
    orthros_model_config mc;
    if ((rc = orthros_model_spec_config(&mc, model))) return rc;
    for (size_t i = 0; i < r->nc; i++)
        if (mc.max_pos > 0 && r->ctxs[i] > mc.max_pos)
            return orthros_error(ORTHROS_EINVAL, "--ctx %d is past the model's context of %d tokens (max_position_embeddings)",
                                 r->ctxs[i], mc.max_pos);
    snprintf(t->seed_task, sizeof t->seed_task, "%s/%s/%s", orthros_ruler_file_task(t->spec.task),
             t->spec.task == ORTHROS_RULER_NIAH ? orthros_niah_variant_name(t->spec.variant) : "",
             t->spec.task == ORTHROS_RULER_NIAH ? orthros_needle_name(t->spec.needle) : "");
    for (size_t i = 0; i < r->nc; i++)
        for (size_t j = 0; j < r->nx; j++) {
            orthros_ruler_sample s;
            if ((rc = orthros_ruler_sample_make(&s, t->tok, &t->spec, r->ctxs[i], r->xs[j], 0))) return rc;
            orthros_ruler_sample_free(&s);
        }
    return 0;
}

int orthros_cmd_eval_ruler(int argc, char **argv)
{
    const char *cmd = "eval ruler", *json_default = "orthros-eval-ruler.json";
    eval_common o;
    ruler_task t;
    memset(&t, 0, sizeof t);
    t.task_arg = "niah", t.variant_arg = "single", t.needle_arg = "numbers", t.chat_arg = "auto";
    orthros_eval_common_default(&o, "ruler_niah");
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "RULER-style synthetic tasks on a text model, generated with its tokenizer to fill each context: "
                     "needle in a haystack (--task niah: noise sentences, needles of words, numbers or UUIDs; variants "
                     "single, multikey, multivalue, multiquery; context x depth), variable tracking (--task vt; context "
                     "x hops) and common-words extraction (--task cwe; context x words). The answer is generated "
                     "greedily (to an end token or --max-new) and scored by normalised contains-match of every expected "
                     "string; per cell the accuracy (all found) with a Wilson 95% interval and RULER's partial score.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_cmd_opt(&c, "model")->help = "a text model: a GGUF file or a Hugging Face directory with tokenizer.json (required)";
    orthros_cmd_opt(&c, "seed")->help = "seed of the samples (default 1)";
    orthros_cmd_add(&c, "task", ORTHROS_OPT_STR, &t.task_arg, "T", "niah|vt|cwe (default niah)");
    orthros_cmd_add(&c, "variant", ORTHROS_OPT_STR, &t.variant_arg, "V", "niah: single|multikey|multivalue|multiquery (default single)");
    orthros_cmd_add(&c, "needle", ORTHROS_OPT_STR, &t.needle_arg, "K", "niah: the values, words|numbers|uuids (default numbers)");
    orthros_cmd_add(&c, "ctx", ORTHROS_OPT_STR, &o.ctxs, "LIST",
                    "context lengths in tokens, prompt and answer included: 1k,4k or 1k:8k:x2 (default 1k:8k:x2)");
    orthros_cmd_add(&c, "depths", ORTHROS_OPT_STR, &t.xs_arg, "LIST", "niah: needle depths in percent, 0..100 (default 0,50,100)");
    orthros_cmd_add(&c, "hops", ORTHROS_OPT_STR, &t.xs_arg, "LIST", "vt: assignments after the first (default 4)");
    orthros_cmd_add(&c, "words", ORTHROS_OPT_STR, &t.xs_arg, "LIST", "cwe: common words to find (default 10)");
    orthros_cmd_add_num(&c, "samples", ORTHROS_OPT_INT, &o.samples, 1, 1000000, "N", "samples per cell (default 4)");
    orthros_cmd_add_num(&c, "max-new", ORTHROS_OPT_INT, &t.spec.max_new, 1, 4096, "N",
                        "longest answer in tokens (default niah 128, vt 30, cwe 120, as RULER)");
    orthros_cmd_add(&c, "chat", ORTHROS_OPT_STR, &t.chat_arg, "C",
                    "auto|chatml|none: wrap the prompt as a ChatML user turn (auto: when the tokenizer has its tokens)");
    orthros_eval_common_add(&c, &o, json_default,
                    "also write every sample's message, prompt ids, expected and generated answers as JSON lines");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model) return orthros_cmd_usage(&c, "--model is required (a GGUF file or a directory with tokenizer.json)");
    int given = orthros_cmd_opt(&c, "depths")->set + orthros_cmd_opt(&c, "hops")->set + orthros_cmd_opt(&c, "words")->set;
    const char *own = !strcmp(t.task_arg, "niah") ? "depths" : !strcmp(t.task_arg, "vt") ? "hops" : "words";
    if (given > 1 || (given == 1 && !orthros_cmd_opt(&c, own)->set))
        return orthros_cmd_usage(&c, "--task %s takes --%s (not --depths, --hops or --words of another task)", t.task_arg, own);
    if ((orthros_cmd_opt(&c, "variant")->set || orthros_cmd_opt(&c, "needle")->set) && strcmp(t.task_arg, "niah"))
        return orthros_cmd_usage(&c, "--variant and --needle are niah's");
    if ((pr = orthros_eval_common_check(&c, &o, json_default)) >= 0) return pr;
    if (!o.ctxs) o.ctxs = "1k:8k:x2";
    static const eval_task_ops ops = {check_model, run_cell, orthros_eval_ruler_row, ruler_summary};
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = &o, r.ops = &ops, r.task = &t;
    int rc = parse_task(&r, &t, o.mo.model), status;
    if (rc) {
        orthros_tokenizer_free(t.tok);
        return orthros_cmd_fail_usage(cmd, rc);
    }
    o.task = orthros_ruler_file_task(t.spec.task);
    orthros_eval_config cfg;
    if ((rc = orthros_eval_config_common(&cfg, &o, ""))) {
        orthros_tokenizer_free(t.tok);
        return orthros_cmd_fail(cmd, rc);
    }
    snprintf(cfg.variant, sizeof cfg.variant, "%s",
             t.spec.task == ORTHROS_RULER_NIAH ? orthros_niah_variant_name(t.spec.variant) : orthros_ruler_task_name(t.spec.task));
    if (t.spec.task == ORTHROS_RULER_NIAH) snprintf(cfg.needle, sizeof cfg.needle, "%s", orthros_needle_name(t.spec.needle));
    snprintf(cfg.chat, sizeof cfg.chat, "%s", orthros_chat_name(t.spec.chat));
    cfg.max_new = t.spec.max_new;
    cfg.xs = strdup(t.xs_arg);
    snprintf(cfg.scoring, sizeof cfg.scoring,
             "greedy answer to an end token or max_new; a sample is correct when every expected string is in it "
             "(normalised contains-match, whole words); partial_score: mean fraction found (RULER's)");
    orthros_table_col cols[8];
    memcpy(cols, orthros_eval_ruler_cols, sizeof cols);
    cols[2].name = axis_name(&t);
    status = cfg.xs ? orthros_eval_drive(&r, argc, argv, &cfg, cols, 8)
                    : (orthros_eval_config_free(&cfg), orthros_cmd_fail(cmd, orthros_error(ORTHROS_ENOMEM, "out of memory")));
    orthros_tokenizer_free(t.tok);
    return status;
}
