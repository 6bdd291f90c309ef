/* orthros eval recall: JSONL recall questions (recall.h), the greedy answer of each architecture scored by
 * normalised contains-match of any reference answer; one cell per architecture (driver.c runs it). */
#define _GNU_SOURCE
#include "recall.h"
#include "driver.h"
#include "results.h"
#include "text_eval.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tasks file ---- */

static void item_free(orthros_recall_item *it)
{
    free(it->id);
    free(it->context);
    free(it->question);
    for (int i = 0; i < it->n_answers; i++) free(it->answers[i]);
    free(it->answers);
    memset(it, 0, sizeof *it);
}

void orthros_recall_free(orthros_recall_set *set)
{
    for (int i = 0; i < set->n; i++) item_free(&set->items[i]);
    free(set->items);
    set->items = NULL, set->n = 0;
}

/* A string field, required and not empty. */
static int text_field(char **out, const cJSON *o, const char *key, const char *name, int line)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is missing", name, line, key);
    if (!cJSON_IsString(v)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is not a string", name, line, key);
    if (!v->valuestring[0]) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is empty", name, line, key);
    if (!(*out = strdup(v->valuestring))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

/* An escaped NUL (\u0000) would cut a string short in cJSON: refused, as the model loaders refuse it. */
static int has_escaped_nul(const char *s, size_t len)
{
    for (size_t i = 0; i + 6 <= len; i++) {
        if (memcmp(s + i, "\\u0000", 6)) continue;
        size_t bs = 0;
        while (bs < i && s[i - 1 - bs] == '\\') bs++;
        if (bs % 2 == 0) return 1;
    }
    return 0;
}

static int parse_line(orthros_recall_item *it, const char *s, size_t len, const char *name, int line)
{
    memset(it, 0, sizeof *it);
    it->line = line;
    if (memchr(s, 0, len)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: a NUL byte", name, line);
    if (has_escaped_nul(s, len)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: a string holds \\u0000", name, line);
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(s, len, &end, 0);
    int rc = 0;
    const char *dup;
    if (!o) return orthros_error(ORTHROS_EFORMAT, "%s:%d: not valid JSON (near byte %ld of the line)", name, line,
                                 end ? (long)(end - s) : -1L);
    for (const char *p = end; p < s + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r') {
            rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: bytes after the JSON value", name, line);
            goto done;
        }
    if (!cJSON_IsObject(o)) {
        rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: not a JSON object", name, line);
        goto done;
    }
    if ((dup = orthros_json_duplicate_key(o))) {
        rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: the key \"%.64s\" appears twice", name, line, dup);
        goto done;
    }
    if ((rc = text_field(&it->context, o, "context", name, line)) || (rc = text_field(&it->question, o, "question", name, line)))
        goto done;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "answers"), *e;
    if (!a) rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answers\" is missing", name, line);
    else if (!cJSON_IsArray(a)) rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answers\" is not an array of strings", name, line);
    else if (!cJSON_GetArraySize(a)) rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answers\" is empty", name, line);
    if (rc) goto done;
    if (!(it->answers = calloc((size_t)cJSON_GetArraySize(a), sizeof *it->answers))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(e, a)
    {
        /* An answer of only white space would be found in any text. */
        char *norm = cJSON_IsString(e) ? orthros_text_normalise(e->valuestring, strlen(e->valuestring)) : NULL;
        int blank = !norm || !norm[0];
        free(norm);
        if (!cJSON_IsString(e) || blank) {
            rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answers\"[%d] is %s", name, line, it->n_answers,
                               cJSON_IsString(e) ? "empty" : "not a string");
            goto done;
        }
        if (!(it->answers[it->n_answers++] = strdup(e->valuestring))) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            goto done;
        }
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (id) {
        char num[64];
        /* A numeric id is kept as the integer it is. One a double cannot hold exactly would be recorded as another
         * id (2^53 + 1 is read as 2^53, 1e400 as inf, 0.1 printed as 0.10000000000000001): below 2^53 every
         * integer is exact, and the rest are refused, to be given as strings. */
        if (cJSON_IsNumber(id)) {
            double x = id->valuedouble;
            if (!(fabs(x) < 9007199254740992.0 && x == floor(x))) {
                rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"id\" %.17g is not an integer of magnitude below 2^53 "
                                   "(give such an id as a string)", name, line, x);
                goto done;
            }
            snprintf(num, sizeof num, "%lld", (long long)x);
        } else if (!cJSON_IsString(id)) {
            rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"id\" is not a string or a number", name, line);
            goto done;
        }
        if (!(it->id = strdup(cJSON_IsNumber(id) ? num : id->valuestring))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
done:
    cJSON_Delete(o);
    if (rc) item_free(it);
    return rc;
}

int orthros_recall_parse(orthros_recall_set *set, const char *text, size_t len, const char *name)
{
    int rc = 0, line = 0, cap = 0;
    memset(set, 0, sizeof *set);
    for (size_t at = 0; at < len && !rc;) {
        const char *s = text + at, *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl != NULL);
        line++;
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) k++;
        if (k == n) continue;
        if (set->n == ORTHROS_RECALL_MAX_ITEMS) {
            rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: more than %d items", name, line, ORTHROS_RECALL_MAX_ITEMS);
            break;
        }
        if (set->n == cap) {
            int c2 = cap ? 2 * cap : 64;
            orthros_recall_item *p = realloc(set->items, (size_t)c2 * sizeof *p);
            if (!p) {
                rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
                break;
            }
            set->items = p, cap = c2;
        }
        if (!(rc = parse_line(&set->items[set->n], s, n, name, line))) set->n++;
    }
    if (!rc && !set->n) rc = orthros_error(ORTHROS_EFORMAT, "%s: no items (one JSON object a line)", name);
    if (rc) orthros_recall_free(set);
    return rc;
}

int orthros_recall_load(orthros_recall_set *set, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    memset(set, 0, sizeof *set);
    int rc = orthros_read_file(&text, &len, path, ORTHROS_RECALL_MAX_BYTES, NULL);
    if (!rc) rc = orthros_recall_parse(set, text, len, path);
    free(text);
    return rc;
}

/* ---- the eval ---- */

typedef struct {
    const char *tasks, *chat_arg;
    int max_new;
    orthros_chat chat;
    orthros_tokenizer *tok;
    orthros_recall_set set;
    int32_t **ids;    /* [set.n]: each item's prompt */
    int *n_ids;
    int longest;      /* the longest prompt plus max_new: the cell's ctx */
} recall_task;

static const char *const instruction = "Answer the question using the text above. Reply with the answer only.";

/* The prompt of an item: the context, then the question; the answer begins after "Answer:". */
static int item_prompt(int32_t **ids, int *n, const recall_task *t, const orthros_recall_item *it)
{
    size_t len = strlen(it->context) + strlen(it->question) + strlen(instruction) + 32;
    char *msg = malloc(len);
    if (!msg) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int k = snprintf(msg, len, "%s\n\n%s\nQuestion: %s", it->context, instruction, it->question);
    int rc = orthros_text_prompt(ids, n, t->tok, t->chat, msg, (size_t)k, "Answer:");
    free(msg);
    return rc;
}

static int run_cell(eval_run *r, orthros_eval_cell *out, orthros_model *m, const eval_cell *c)
{
    const recall_task *t = r->task;
    const eval_common *o = r->o;
    gen_cell g;
    int64_t correct = 0;
    int rc = orthros_eval_gen_cell_begin(&g, out, m, t->longest, t->max_new, o->mo.chunk);
    if (rc) return rc;
    for (int i = 0; i < t->set.n && !rc; i++) {
        const orthros_recall_item *it = &t->set.items[i];
        char *text = NULL;
        int n_gen = 0, ok = 0;
        if ((rc = orthros_text_generate(g.sess, m, t->tok, t->chat, t->ids[i], t->n_ids[i], t->max_new, g.gen, &n_gen,
                                        &text)))
            break;
        for (int a = 0; a < it->n_answers && !ok; a++) ok = orthros_text_contains(text, it->answers[a]);
        correct += ok;
        cJSON *rec = cJSON_CreateObject(), *ans = cJSON_AddArrayToObject(rec, "expected");
        cJSON_AddNumberToObject(rec, "line", it->line);
        if (it->id) cJSON_AddStringToObject(rec, "id", it->id);
        cJSON_AddNumberToObject(rec, "prompt_tokens", t->n_ids[i]);
        for (int a = 0; a < it->n_answers; a++) cJSON_AddItemToArray(ans, cJSON_CreateString(it->answers[a]));
        cJSON_AddStringToObject(rec, "generated", text);
        cJSON_AddNumberToObject(rec, "generated_tokens", n_gen);
        cJSON_AddNumberToObject(rec, "n_correct", ok);
        cJSON_AddBoolToObject(rec, "correct", ok);
        cJSON_AddItemToArray(out->records, rec);
        if (r->prompts) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "task", "recall");
            cJSON_AddStringToObject(j, "arch", c->arch);
            cJSON_AddNumberToObject(j, "line", it->line);
            cJSON_AddItemToObject(j, "prompt", orthros_eval_ints_json(t->ids[i], t->n_ids[i]));
            cJSON_AddItemToObject(j, "expected", cJSON_Duplicate(ans, 1));
            cJSON_AddStringToObject(j, "generated", text);
            rc = orthros_eval_save_line(r->prompts, j);
        }
        if (!o->quiet) fprintf(stderr, "  %s:%d: %s: %.60s\n", t->tasks, it->line, ok ? "right" : "wrong", text);
        free(text);
    }
    snprintf(out->task, sizeof out->task, "recall");
    snprintf(out->variant, sizeof out->variant, "contains");
    return orthros_eval_gen_cell_end(&g, out, c, rc, correct, t->set.n);
}

/* Every prompt and its answer must fit the model's context. */
static int check_model(eval_run *r, orthros_model *m)
{
    const recall_task *t = r->task;
    int max = orthros_model_get_config(m)->max_pos;
    for (int i = 0; i < t->set.n; i++)
        if (max > 0 && t->n_ids[i] + t->max_new > max)
            return orthros_error(ORTHROS_EINVAL, "%s:%d: the prompt's %d tokens and --max-new %d are past the model's "
                                 "context of %d tokens", t->tasks, t->set.items[i].line, t->n_ids[i], t->max_new, max);
    return 0;
}

static void recall_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX])
{
    snprintf(v[0], ORTHROS_NAME_MAX, "%s", c->arch);
    snprintf(v[1], ORTHROS_NAME_MAX, "%lld", (long long)c->n);
    snprintf(v[2], ORTHROS_NAME_MAX, "%lld", (long long)c->correct);
    snprintf(v[3], ORTHROS_NAME_MAX, "%.3f", c->accuracy);
    snprintf(v[4], ORTHROS_NAME_MAX, "%.3f", c->ci_lo);
    snprintf(v[5], ORTHROS_NAME_MAX, "%.3f", c->ci_hi);
}

static void recall_summary(eval_run *r)
{
    const recall_task *t = r->task;
    char line[200];
    snprintf(line, sizeof line, "%d items of %s; prompts of up to %d tokens; contains-match of any answer", t->set.n,
             t->tasks, t->longest - t->max_new);
    orthros_table_note(&r->table, line);
}

static const orthros_table_col recall_cols[] = {{"arch", -12, 0}, {"n", 6, 1},       {"correct", 8, 1},
                                                {"accuracy", 9, 1}, {"ci95_lo", 8, 1}, {"ci95_hi", 8, 1}};

static void task_free(recall_task *t)
{
    for (int i = 0; t->ids && i < t->set.n; i++) free(t->ids[i]);
    free(t->ids);
    free(t->n_ids);
    orthros_recall_free(&t->set);
    orthros_tokenizer_free(t->tok);
}

/* The tasks file, the tokenizer and every prompt, before any model runs. */
static int prepare(recall_task *t, const char *model, int *usage)
{
    int rc;
    *usage = 0;
    if ((rc = orthros_recall_load(&t->set, t->tasks))) return rc;
    *usage = 1;
    if ((rc = orthros_tokenizer_load(&t->tok, model)) || (rc = orthros_chat_resolve(&t->chat, t->chat_arg, t->tok))) return rc;
    *usage = 0;
    t->ids = calloc((size_t)t->set.n, sizeof *t->ids);
    t->n_ids = calloc((size_t)t->set.n, sizeof *t->n_ids);
    if (!t->ids || !t->n_ids) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (int i = 0; i < t->set.n; i++) {
        if ((rc = item_prompt(&t->ids[i], &t->n_ids[i], t, &t->set.items[i]))) return rc;
        if (t->n_ids[i] > INT_MAX / 2 - t->max_new)
            return orthros_error(ORTHROS_ERANGE, "%s:%d: a prompt of %d tokens", t->tasks, t->set.items[i].line, t->n_ids[i]);
        if (t->n_ids[i] + t->max_new > t->longest) t->longest = t->n_ids[i] + t->max_new;
    }
    return 0;
}

int orthros_cmd_eval_recall(int argc, char **argv)
{
    const char *cmd = "eval recall", *json_default = "orthros-eval-recall.json";
    eval_common o;
    recall_task t;
    memset(&t, 0, sizeof t);
    t.chat_arg = "auto", t.max_new = 32;
    orthros_eval_common_default(&o, "recall");
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "In-context recall on a text model: for every line of a JSONL file {\"context\", \"question\", "
                     "\"answers\": [...]}, the context and the question as the prompt, the answer generated greedily "
                     "(to an end token or --max-new) and scored right when it contains any reference answer "
                     "(case-insensitive, white space normalised, whole words). One cell per architecture, with a Wilson "
                     "95% interval.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_cmd_opt(&c, "model")->help = "a text model: a GGUF file or a Hugging Face directory with tokenizer.json (required)";
    orthros_cmd_add(&c, "tasks", ORTHROS_OPT_STR, &t.tasks, "FILE.jsonl",
                    "the questions: one {\"context\", \"question\", \"answers\"} object a line (required)");
    orthros_cmd_add_num(&c, "max-new", ORTHROS_OPT_INT, &t.max_new, 1, 4096, "N", "longest answer in tokens (default 32)");
    orthros_cmd_add(&c, "chat", ORTHROS_OPT_STR, &t.chat_arg, "C",
                    "auto|chatml|none: wrap the prompt as a ChatML user turn (auto: when the tokenizer has its tokens)");
    orthros_eval_common_add(&c, &o, json_default,
                            "also write every item's prompt ids, answers and generated text as JSON lines");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model || !t.tasks) return orthros_cmd_usage(&c, "--model and --tasks are required (see --help)");
    if ((pr = orthros_eval_common_check(&c, &o, json_default)) >= 0) return pr;
    static const eval_task_ops ops = {check_model, run_cell, recall_row, recall_summary};
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = &o, r.ops = &ops, r.task = &t;
    int usage, rc = orthros_eval_parse_archs(&r);
    if (rc) return orthros_cmd_fail_usage(cmd, rc);
    if ((rc = prepare(&t, o.mo.model, &usage))) {
        task_free(&t);
        return usage ? orthros_cmd_fail_usage(cmd, rc) : orthros_cmd_fail(cmd, rc);
    }
    o.samples = t.set.n;
    /* One cell per architecture: its ctx is the longest prompt plus the answer. */
    r.nc = r.nx = 1;
    r.ctxs[0] = t.longest, r.xs[0] = 0;
    char ctx_text[32];
    snprintf(ctx_text, sizeof ctx_text, "%d", t.longest);
    o.ctxs = ctx_text;
    orthros_eval_config cfg;
    int status;
    if ((rc = orthros_eval_config_common(&cfg, &o, "")) || !(cfg.text = strdup(t.tasks))) {
        if (!rc) orthros_eval_config_free(&cfg);
        status = orthros_cmd_fail(cmd, rc ? rc : orthros_error(ORTHROS_ENOMEM, "out of memory"));
    } else {
        snprintf(cfg.variant, sizeof cfg.variant, "contains");
        snprintf(cfg.chat, sizeof cfg.chat, "%s", orthros_chat_name(t.chat));
        cfg.max_new = t.max_new, cfg.text_tokens = t.set.n, cfg.samples = t.set.n;
        snprintf(cfg.scoring, sizeof cfg.scoring,
                 "greedy answer to an end token or max_new; right when it contains any reference answer (case-insensitive, "
                 "white space normalised, whole words); n counts items");
        status = orthros_eval_drive(&r, argc, argv, &cfg, recall_cols, 6);
    }
    task_free(&t);
    return status;
}
