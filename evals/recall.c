/* orthros eval recall: JSONL recall questions (recall.h), the greedy answer of each architecture scored by
 * normalised contains-match of any reference answer; one cell per architecture (driver.c runs it). */
#define _GNU_SOURCE
#include "recall.h"
#include "driver.h"
#include "jsonl.h"
#include "squad.h"
#include "tables.h"
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

/* The layouts (recall.h): the keys that tell them apart. */
static const char *const layout_names[] = {"generic", "squad", "squad_v2", "triviaqa", "auto"};

int orthros_recall_layout_parse(orthros_recall_layout *out, const char *name)
{
    for (int i = 0; i <= ORTHROS_RECALL_AUTO; i++)
        if (!strcmp(name, layout_names[i])) {
            *out = (orthros_recall_layout)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown layout \"%s\" (generic, squad, squad_v2, triviaqa, auto)", name);
}

const char *orthros_recall_layout_name(orthros_recall_layout l) { return layout_names[l]; }

static orthros_recall_layout detect(const cJSON *o)
{
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "answer")) && !cJSON_GetObjectItemCaseSensitive(o, "answers"))
        return ORTHROS_RECALL_TRIVIAQA;
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "answers"))) return ORTHROS_RECALL_SQUAD;
    return ORTHROS_RECALL_GENERIC;
}

/* A non-empty string answer (one of only white space would be found in any text), appended. */
static int add_answer(orthros_recall_item *it, const cJSON *e, const char *key, const char *name, int line)
{
    char *norm = cJSON_IsString(e) ? orthros_text_normalise(e->valuestring, strlen(e->valuestring)) : NULL;
    int blank = !norm || !norm[0];
    free(norm);
    if (!cJSON_IsString(e) || blank)
        return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\"[%d] is %s", name, line, key, it->n_answers,
                             cJSON_IsString(e) ? "empty" : "not a string");
    if (!(it->answers[it->n_answers++] = strdup(e->valuestring))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

/* An array of answers at a (its name key in messages); empty_ok: SQuAD v2's unanswerable questions. */
static int take_answers(orthros_recall_item *it, const cJSON *a, const char *key, int empty_ok, const char *name, int line)
{
    const cJSON *e;
    if (!a) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is missing", name, line, key);
    if (!cJSON_IsArray(a)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is not an array of strings", name, line, key);
    if (!cJSON_GetArraySize(a) && !empty_ok)
        return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is empty%s", name, line, key,
                             strcmp(key, "answers.text") ? "" : " (an unanswerable question: SQuAD v2, --layout squad_v2)");
    if (!(it->answers = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof *it->answers)))
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int rc = 0;
    cJSON_ArrayForEach(e, a) if (!rc) rc = add_answer(it, e, key, name, line);
    it->unanswerable = !it->n_answers;
    return rc;
}

/* TriviaQA's context: its Wikipedia pages, then its search results, each a list of documents. */
static int trivia_context(char **out, const cJSON *o, const char *name, int line)
{
    static const char *const parts[][2] = {{"entity_pages", "wiki_context"}, {"search_results", "search_context"}};
    size_t len = 0, cap = 1;
    char *s = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 2; k++) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, parts[k][0]), *e;
            const cJSON *docs = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, parts[k][1]) : NULL;
            if (p && !cJSON_IsObject(p))
                return free(s), orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is not an object", name, line, parts[k][0]);
            if (docs && !cJSON_IsArray(docs))
                return free(s), orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s.%s\" is not an array of strings", name, line,
                                            parts[k][0], parts[k][1]);
            cJSON_ArrayForEach(e, docs)
            {
                if (!cJSON_IsString(e))
                    return free(s), orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s.%s\" holds a non-string", name, line,
                                                parts[k][0], parts[k][1]);
                size_t n = strlen(e->valuestring);
                if (!pass) cap += n + 2;
                else {
                    if (len) memcpy(s + len, "\n\n", 2), len += 2;
                    memcpy(s + len, e->valuestring, n), len += n;
                }
            }
        }
        if (!pass && !(s = malloc(cap))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    s[len] = 0;
    if (!len) {
        free(s);
        return orthros_error(ORTHROS_EFORMAT, "%s:%d: no context (entity_pages.wiki_context and search_results.search_context "
                             "are empty: the no-context configurations cannot test recall)", name, line);
    }
    *out = s;
    return 0;
}

static int parse_item(orthros_recall_item *it, const cJSON *o, orthros_recall_layout lay, const char *name, int line)
{
    int rc;
    memset(it, 0, sizeof *it);
    it->line = line;
    if (lay == ORTHROS_RECALL_TRIVIAQA) {
        const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
        if ((rc = trivia_context(&it->context, o, name, line)) ||
            (rc = orthros_jsonl_string(&it->question, o, "question", name, line, 0)))
            return rc;
        if (!cJSON_IsObject(ans)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answer\" is not an object", name, line);
        /* Wikipedia pages, then search results; the answer's value and its aliases */
        const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(ans, "aliases"), *value = cJSON_GetObjectItemCaseSensitive(ans, "value");
        cJSON *all = cJSON_CreateArray(), *e;
        if (value) cJSON_AddItemToArray(all, cJSON_Duplicate(value, 0));
        if (aliases && !cJSON_IsArray(aliases)) rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answer.aliases\" is not an array", name, line);
        else if (aliases)
            cJSON_ArrayForEach(e, aliases) cJSON_AddItemToArray(all, cJSON_Duplicate(e, 0));
        if (!rc) rc = take_answers(it, all, "answer.aliases", 0, name, line);
        cJSON_Delete(all);
        if (!rc) {
            const cJSON *qid = cJSON_GetObjectItemCaseSensitive(o, "question_id");
            if (cJSON_IsString(qid) && !(it->id = strdup(qid->valuestring))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        }
        return rc;
    }
    if ((rc = orthros_jsonl_string(&it->context, o, "context", name, line, 0)) ||
        (rc = orthros_jsonl_string(&it->question, o, "question", name, line, 0)) || (rc = orthros_jsonl_id(&it->id, o, name, line)))
        return rc;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "answers");
    if (lay == ORTHROS_RECALL_GENERIC) return take_answers(it, a, "answers", 0, name, line);
    if (!cJSON_IsObject(a)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"answers\" is not an object {\"text\": [...]}", name, line);
    return take_answers(it, cJSON_GetObjectItemCaseSensitive(a, "text"), "answers.text", lay == ORTHROS_RECALL_SQUAD_V2, name, line);
}

typedef struct {
    orthros_recall_set *set;
    const char *name;
    int cap;
} parse_ctx;

static int take_line(void *ctx, const cJSON *o, int line)
{
    parse_ctx *p = ctx;
    orthros_recall_set *set = p->set;
    orthros_recall_layout got = detect(o);
    if (set->layout == ORTHROS_RECALL_AUTO) set->layout = got;
    else if (got != (set->layout == ORTHROS_RECALL_SQUAD_V2 ? ORTHROS_RECALL_SQUAD : set->layout))
        return orthros_error(ORTHROS_EFORMAT, "%s:%d: not a line of the %s layout (it looks like %s)", p->name, line,
                             layout_names[set->layout], layout_names[got]);
    if (set->n == p->cap) {
        int c2 = p->cap ? 2 * p->cap : 64;
        orthros_recall_item *q = realloc(set->items, (size_t)c2 * sizeof *q);
        if (!q) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        set->items = q, p->cap = c2;
    }
    int rc = parse_item(&set->items[set->n], o, set->layout, p->name, line);
    if (rc) item_free(&set->items[set->n]);
    else set->n++;
    return rc;
}

int orthros_recall_parse_layout(orthros_recall_set *set, const char *text, size_t len, const char *name,
                                orthros_recall_layout want)
{
    memset(set, 0, sizeof *set);
    set->layout = want;
    parse_ctx p = {set, name, 0};
    int rc = orthros_jsonl_each(text, len, name, take_line, &p);
    if (rc == ORTHROS_EFORMAT && want == ORTHROS_RECALL_AUTO && set->layout == ORTHROS_RECALL_SQUAD &&
        strstr(orthros_last_error(), "(an unanswerable question")) {
        /* auto-detected SQuAD holding an unanswerable question: read again as SQuAD v2 */
        orthros_recall_free(set);
        return orthros_recall_parse_layout(set, text, len, name, ORTHROS_RECALL_SQUAD_V2);
    }
    if (rc) orthros_recall_free(set);
    return rc;
}

int orthros_recall_parse(orthros_recall_set *set, const char *text, size_t len, const char *name)
{
    return orthros_recall_parse_layout(set, text, len, name, ORTHROS_RECALL_AUTO);
}

int orthros_recall_load_layout(orthros_recall_set *set, const char *path, orthros_recall_layout want)
{
    char *text = NULL;
    size_t len = 0;
    memset(set, 0, sizeof *set);
    int rc = orthros_read_file(&text, &len, path, ORTHROS_RECALL_MAX_BYTES, NULL);
    if (!rc) rc = orthros_recall_parse_layout(set, text, len, path, want);
    free(text);
    return rc;
}

int orthros_recall_load(orthros_recall_set *set, const char *path)
{
    return orthros_recall_load_layout(set, path, ORTHROS_RECALL_AUTO);
}

/* ---- the eval ---- */

typedef struct {
    const char *tasks, *chat_arg, *layout_arg, *fewshot_file, *name_arg;
    int max_new, shots, limit;
    char name[64];
    orthros_chat chat;
    orthros_tokenizer *tok;
    orthros_recall_set set, pool_set;
    const orthros_recall_set *pool;
    int n;            /* items run: the first min(limit, set.n) */
    int32_t **ids;    /* [n]: each item's prompt */
    int *n_ids;
    int longest;      /* the longest prompt plus max_new: the cell's ctx */
} recall_task;

static const char *const instruction = "Answer the question using the text above. Reply with the answer only.";

/* Appends s[len] to the growing buffer *b (*n used). */
static int append(char **b, size_t *n, const char *s)
{
    size_t k = strlen(s);
    char *p = realloc(*b, *n + k + 1);
    if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    memcpy(p + *n, s, k + 1);
    *b = p, *n += k;
    return 0;
}

static int same_item(const orthros_recall_item *a, const orthros_recall_item *b)
{
    if (a == b) return 1;
    if (strcmp(a->context, b->context) || strcmp(a->question, b->question) || a->n_answers != b->n_answers) return 0;
    for (int i = 0; i < a->n_answers; i++)
        if (strcmp(a->answers[i], b->answers[i])) return 0;
    return 1;
}

/* The prompt of an item: `shots` examples (the first other items of the pool, lm-eval's first_n sampler), each
 * "CONTEXT\n\nQuestion: Q\nAnswer: A\n\n" (A its first answer), then the context, the instruction and the question;
 * the answer begins after "Answer:". */
static int item_prompt(int32_t **ids, int *n, const recall_task *t, const orthros_recall_item *it)
{
    char *msg = NULL;
    size_t len = 0;
    int rc = append(&msg, &len, ""), got = 0;
    for (int i = 0; !rc && got < t->shots && i < t->pool->n; i++) {
        const orthros_recall_item *ex = &t->pool->items[i];
        if (same_item(ex, it)) continue;
        if (!(rc = append(&msg, &len, ex->context)) && !(rc = append(&msg, &len, "\n\nQuestion: ")) &&
            !(rc = append(&msg, &len, ex->question)) && !(rc = append(&msg, &len, "\nAnswer: ")))
            rc = append(&msg, &len, ex->n_answers ? ex->answers[0] : "");
        if (!rc) rc = append(&msg, &len, "\n\n");
        got++;
    }
    if (!rc && got < t->shots)
        rc = orthros_error(ORTHROS_EINVAL, "%s:%d: %d few-shot examples asked for, the pool has %d others", t->tasks, it->line,
                           t->shots, got);
    if (!rc && !(rc = append(&msg, &len, it->context)) && !(rc = append(&msg, &len, "\n\n")) && !(rc = append(&msg, &len, instruction)) &&
        !(rc = append(&msg, &len, "\nQuestion: ")))
        rc = append(&msg, &len, it->question);
    if (!rc) rc = orthros_text_prompt(ids, n, t->tok, t->chat, msg, len, "Answer:");
    free(msg);
    return rc;
}

/* The prediction SQuAD's metrics score: the generated text up to its first line break, stripped. */
static char *prediction(const char *text)
{
    size_t n = strcspn(text, "\n");
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r')) n--;
    const char *p = text;
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    return strndup(p, n);
}

static int run_cell(eval_run *r, orthros_eval_cell *out, orthros_model *m, const eval_cell *c)
{
    const recall_task *t = r->task;
    const eval_common *o = r->o;
    gen_cell g;
    int64_t correct = 0;
    double em_sum = 0, f1_sum = 0, em_sq = 0, f1_sq = 0;
    int rc = orthros_eval_gen_cell_begin(&g, out, m, t->longest, t->max_new, o->mo.chunk);
    if (rc) return rc;
    for (int i = 0; i < t->n && !rc; i++) {
        const orthros_recall_item *it = &t->set.items[i];
        char *text = NULL, *pred = NULL;
        int n_gen = 0, ok = 0, em = 0;
        double f1 = 0;
        if ((rc = orthros_text_generate(g.sess, m, t->tok, t->chat, t->ids[i], t->n_ids[i], t->max_new, g.gen, &n_gen,
                                        &text)))
            break;
        if (!(pred = prediction(text))) {
            free(text);
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        for (int a = 0; a < it->n_answers && !ok; a++) ok = orthros_text_contains(text, it->answers[a]);
        orthros_squad_score((const char *const *)it->answers, it->n_answers, pred, &em, &f1);
        if (it->unanswerable) ok = em; /* nothing to contain: right when the answer is empty, as exact match */
        correct += ok, em_sum += em, f1_sum += f1, em_sq += em, f1_sq += f1 * f1;
        cJSON *rec = cJSON_CreateObject(), *ans = cJSON_AddArrayToObject(rec, "expected");
        cJSON_AddNumberToObject(rec, "line", it->line);
        if (it->id) cJSON_AddStringToObject(rec, "id", it->id);
        cJSON_AddNumberToObject(rec, "prompt_tokens", t->n_ids[i]);
        for (int a = 0; a < it->n_answers; a++) cJSON_AddItemToArray(ans, cJSON_CreateString(it->answers[a]));
        if (it->unanswerable) {
            cJSON_AddItemToArray(ans, cJSON_CreateString("")); /* SQuAD v2: the empty answer */
            cJSON_AddBoolToObject(rec, "unanswerable", 1);
        }
        cJSON_AddStringToObject(rec, "generated", text);
        cJSON_AddNumberToObject(rec, "generated_tokens", n_gen);
        cJSON_AddNumberToObject(rec, "n_correct", ok);
        cJSON_AddBoolToObject(rec, "correct", ok);
        cJSON_AddNumberToObject(rec, "exact_match", em);
        cJSON_AddNumberToObject(rec, "f1", f1);
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
        if (!o->quiet) {
            char shown[400];
            orthros_eval_progress_text(shown, sizeof shown, text, 60);
            fprintf(stderr, "  %s:%d: %s (f1 %.2f): \"%s\"\n", t->tasks, it->line, ok ? "right" : "wrong", f1, shown);
        }
        free(text);
        free(pred);
    }
    snprintf(out->task, sizeof out->task, "recall");
    snprintf(out->variant, sizeof out->variant, "contains");
    rc = orthros_eval_gen_cell_end(&g, out, c, rc, correct, t->n);
    if (!rc) {
        /* lm-eval's mean_stderr of the per-item values */
        double n = t->n;
        out->exact_match = em_sum / n, out->f1 = f1_sum / n;
        out->exact_match_stderr = t->n < 2 ? NAN : sqrt(fmax(0, (em_sq - n * out->exact_match * out->exact_match) / (n - 1)) / n);
        out->f1_stderr = t->n < 2 ? NAN : sqrt(fmax(0, (f1_sq - n * out->f1 * out->f1) / (n - 1)) / n);
    }
    return rc;
}

/* Every prompt and its answer must fit the model's context. */
static int check_model(eval_run *r, orthros_model *m)
{
    const recall_task *t = r->task;
    int max = orthros_model_get_config(m)->max_pos;
    for (int i = 0; i < t->n; i++)
        if (max > 0 && t->n_ids[i] + t->max_new > max)
            return orthros_error(ORTHROS_EINVAL, "%s:%d: the prompt's %d tokens and --max-new %d are past the model's "
                                 "context of %d tokens", t->tasks, t->set.items[i].line, t->n_ids[i], t->max_new, max);
    return 0;
}

static void recall_summary(eval_run *r)
{
    const recall_task *t = r->task;
    orthros_eval_print_lmeval(r);
    if (!r->o->quiet)
        fprintf(stderr, "eval recall: %d items of %s (layout %s, %d-shot); prompts of up to %d tokens; contains-match of any "
                "answer, SQuAD's exact match and F1 of the first line\n", t->n, t->tasks,
                orthros_recall_layout_name(t->set.layout), t->shots, t->longest - t->max_new);
}

static void task_free(recall_task *t)
{
    for (int i = 0; t->ids && i < t->n; i++) free(t->ids[i]);
    free(t->ids);
    free(t->n_ids);
    orthros_recall_free(&t->set);
    orthros_recall_free(&t->pool_set);
    orthros_tokenizer_free(t->tok);
}

/* The tasks file, the few-shot pool, the tokenizer and every prompt, before any model runs. */
static int prepare(recall_task *t, const char *model, int *usage)
{
    orthros_recall_layout want = ORTHROS_RECALL_AUTO;
    int rc;
    *usage = 1;
    if ((rc = orthros_recall_layout_parse(&want, t->layout_arg))) return rc;
    *usage = 0;
    if ((rc = orthros_recall_load_layout(&t->set, t->tasks, want))) return rc;
    t->pool = &t->set;
    if (t->fewshot_file) {
        if ((rc = orthros_recall_load_layout(&t->pool_set, t->fewshot_file, ORTHROS_RECALL_AUTO))) return rc;
        t->pool = &t->pool_set;
    }
    *usage = 1;
    if ((rc = orthros_tokenizer_load(&t->tok, model)) || (rc = orthros_chat_resolve(&t->chat, t->chat_arg, t->tok))) return rc;
    *usage = 0;
    t->n = t->limit > 0 && t->limit < t->set.n ? t->limit : t->set.n;
    t->ids = calloc((size_t)t->n, sizeof *t->ids);
    t->n_ids = calloc((size_t)t->n, sizeof *t->n_ids);
    if (!t->ids || !t->n_ids) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (int i = 0; i < t->n; i++) {
        if ((rc = item_prompt(&t->ids[i], &t->n_ids[i], t, &t->set.items[i]))) return rc;
        if (t->n_ids[i] > INT_MAX / 2 - t->max_new)
            return orthros_error(ORTHROS_ERANGE, "%s:%d: a prompt of %d tokens", t->tasks, t->set.items[i].line, t->n_ids[i]);
        if (t->n_ids[i] + t->max_new > t->longest) t->longest = t->n_ids[i] + t->max_new;
    }
    return 0;
}

/* recall's fields of the run's configuration. */
static void recall_config(orthros_eval_config *cfg, const void *task)
{
    const recall_task *t = task;
    snprintf(cfg->variant, sizeof cfg->variant, "contains");
    snprintf(cfg->chat, sizeof cfg->chat, "%s", orthros_chat_name(t->chat));
    snprintf(cfg->layout, sizeof cfg->layout, "%s", orthros_recall_layout_name(t->set.layout));
    snprintf(cfg->name, sizeof cfg->name, "%s", t->name);
    cfg->max_new = t->max_new, cfg->text_tokens = t->set.n, cfg->samples = t->n, cfg->shots = t->shots, cfg->limit = t->limit;
    snprintf(cfg->scoring, sizeof cfg->scoring,
             "greedy answer to an end token or max_new; contains-match of any reference answer (case-insensitive, "
             "white space normalised, whole words); SQuAD's exact match and F1 of its first line; n counts items");
}

int orthros_cmd_eval_recall(int argc, char **argv)
{
    const char *cmd = "eval recall", *json_default = "orthros-eval-recall.json";
    eval_common o;
    recall_task t;
    memset(&t, 0, sizeof t);
    t.chat_arg = "auto", t.max_new = 32, t.layout_arg = "auto";
    orthros_eval_common_default(&o, "recall");
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "In-context recall on a text model: for every question of a JSONL file (generic {\"context\", "
                     "\"question\", \"answers\": [...]}, or the Hugging Face datasets export of SQuAD v1.1, SQuAD v2 or "
                     "TriviaQA), the context and the question as the prompt (after --shots examples), the answer generated "
                     "greedily (to an end token or --max-new) and scored by contains-match of any reference answer "
                     "(case-insensitive, white space normalised, whole words) and by SQuAD's exact match and F1 of its "
                     "first line (the official normalisation; SQuAD v2's unanswerable questions right when the answer is "
                     "empty). One cell per architecture; the table is lm-eval's.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_cmd_opt(&c, "model")->help = "a text model: a GGUF file or a Hugging Face directory with tokenizer.json (required)";
    orthros_cmd_add(&c, "tasks", ORTHROS_OPT_STR, &t.tasks, "FILE.jsonl", "the questions, one JSON object a line (required)");
    orthros_cmd_add(&c, "layout", ORTHROS_OPT_STR, &t.layout_arg, "L",
                    "generic|squad|squad_v2|triviaqa|auto (default auto: from the first line; SQuAD with an unanswerable "
                    "question is v2)");
    orthros_cmd_add_num(&c, "shots", ORTHROS_OPT_INT, &t.shots, 0, 1000, "K",
                        "examples before each question (default 0): the first K other items of the pool");
    orthros_cmd_add(&c, "fewshot-file", ORTHROS_OPT_STR, &t.fewshot_file, "FILE", "the pool of examples (default: the tasks file)");
    orthros_cmd_add(&c, "name", ORTHROS_OPT_STR, &t.name_arg, "NAME",
                    "the task's name in the table (default: the tasks file's name without .jsonl)");
    orthros_cmd_add_num(&c, "max-new", ORTHROS_OPT_INT, &t.max_new, 1, 4096, "N", "longest answer in tokens (default 32)");
    orthros_cmd_add(&c, "chat", ORTHROS_OPT_STR, &t.chat_arg, "C",
                    "auto|chatml|none: wrap the prompt as a ChatML user turn (auto: when the tokenizer has its tokens)");
    orthros_eval_common_add(&c, &o, json_default, "also write every item's prompt ids, answers and generated text as JSON lines");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model || !t.tasks) return orthros_cmd_usage(&c, "--model and --tasks are required (see --help)");
    if ((pr = orthros_eval_common_check(&c, &o, json_default)) >= 0) return pr;
    t.limit = o.limit;
    if ((pr = orthros_eval_task_name(&c, t.name, sizeof t.name, t.name_arg, NULL)) >= 0) return pr;
    static const eval_task_ops ops = {check_model, run_cell, NULL, recall_summary};
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = &o, r.ops = &ops, r.task = &t;
    int usage, rc = orthros_eval_parse_archs(&r);
    if (rc) return orthros_cmd_fail_usage(cmd, rc);
    if ((rc = prepare(&t, o.mo.model, &usage))) {
        task_free(&t);
        return usage ? orthros_cmd_fail_usage(cmd, rc) : orthros_cmd_fail(cmd, rc);
    }
    /* One cell per architecture: its ctx is the longest prompt plus the answer. */
    int status = orthros_eval_drive_tasks(&r, &o, argc, argv, t.n, t.longest, t.tasks, t.fewshot_file, recall_config);
    task_free(&t);
    return status;
}
