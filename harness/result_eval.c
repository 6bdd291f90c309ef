/* Eval result files: the typed cells, their one reader (with validation) and one writer. */
#define _GNU_SOURCE
#include "result_eval.h"
#include "keyset.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const orthros_eval_tasks[] = {"niah", "mqar", "ruler_niah", "ruler_vt", "ruler_cwe", "recall", "ppl", "mc", NULL};

/* Each task's second axis: its JSON name in cells, the config key of its list, and its range. */
static const struct {
    const char *task, *x, *xs;
    int64_t lo, hi;
} axes[] = {{"niah", "depth", "depths", 0, 100},    {"mqar", "pairs", "pairs", 1, INT_MAX},
            {"ruler_niah", "depth", "depths", 0, 100}, {"ruler_vt", "hops", "hops", 1, INT_MAX},
            {"ruler_cwe", "words", "words", 1, INT_MAX}, {"ppl", "stride", NULL, 1, INT_MAX},
            {"recall", NULL, NULL, 0, 0},             {"mc", NULL, NULL, 0, 0}};

static int axis_of(const char *task)
{
    for (size_t i = 0; i < sizeof axes / sizeof *axes; i++)
        if (!strcmp(axes[i].task, task)) return (int)i;
    return -1;
}

const char *orthros_eval_axis_name(const char *task)
{
    int a = axis_of(task);
    return a < 0 ? NULL : axes[a].x;
}

const char *orthros_eval_xs_key(const char *task)
{
    int a = axis_of(task);
    return a < 0 ? NULL : axes[a].xs;
}

int orthros_eval_is_ppl(const char *task) { return !strcmp(task, "ppl"); }
int orthros_eval_is_mc(const char *task) { return !strcmp(task, "mc"); }

double orthros_eval_binary_stderr(int64_t k, int64_t n)
{
    if (n < 2) return NAN;
    double p = (double)k / (double)n;
    /* sum (x - p)^2 over k ones and n - k zeros, over n - 1, then over sqrt(n) */
    double var = ((double)k * (1 - p) * (1 - p) + (double)(n - k) * p * p) / (double)(n - 1);
    return sqrt(var) / sqrt((double)n);
}
int orthros_eval_is_ruler(const char *task) { return !strncmp(task, "ruler_", 6); }

void orthros_eval_file_init(orthros_eval_file *f)
{
    memset(f, 0, sizeof *f);
    orthros_sched_config_init(&f->cfg.sched);
    f->cfg.text_tokens = -1, f->cfg.stride = -1, f->cfg.max_new = -1, f->cfg.shots = -1, f->cfg.limit = -1;
}

void orthros_eval_config_free(orthros_eval_config *c)
{
    free(c->model);
    free(c->archs);
    free(c->ctxs);
    free(c->xs);
    free(c->text);
    free(c->fewshot);
    cJSON_Delete(c->analytic_recall);
    c->model = c->archs = c->ctxs = c->xs = c->text = c->fewshot = NULL;
    c->analytic_recall = NULL;
}

void orthros_eval_file_free(orthros_eval_file *f)
{
    for (size_t i = 0; i < f->n_cells; i++) cJSON_Delete(f->cells[i].records);
    free(f->cells);
    cJSON_Delete(f->header);
    orthros_eval_config_free(&f->cfg);
    orthros_eval_file_init(f);
}

int orthros_eval_file_add(orthros_eval_file *f, orthros_eval_cell *c)
{
    if (f->n_cells == f->cap_cells) {
        size_t cap = f->cap_cells ? 2 * f->cap_cells : 32;
        orthros_eval_cell *p = realloc(f->cells, cap * sizeof *p);
        if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory adding a cell");
        f->cells = p, f->cap_cells = cap;
    }
    f->cells[f->n_cells++] = *c;
    c->records = NULL;
    return 0;
}

const orthros_eval_cell *orthros_eval_file_find(const orthros_eval_file *f, const char *arch, int ctx, int axis)
{
    for (size_t i = 0; i < f->n_cells; i++)
        if (!strcmp(f->cells[i].arch, arch) && f->cells[i].ctx == ctx && f->cells[i].axis == axis) return &f->cells[i];
    return NULL;
}

int orthros_eval_config_check_same(const orthros_eval_config *a, const char *a_name, const orthros_eval_config *b,
                                   const char *b_name)
{
    int rc;
    if ((rc = orthros_result_same_str(a_name, b_name, "the task", a->task, b->task)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the variant", a->variant, b->variant)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the model", a->model, b->model)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the device", a->device, b->device)) ||
        (rc = orthros_sched_config_same(&a->sched, a_name, &b->sched, b_name)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--samples", a->samples, b->samples)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--seed", a->seed, b->seed)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the text", a->text ? a->text : "", b->text ? b->text : "")) ||
        (rc = orthros_result_same_num(a_name, b_name, "the text's tokens", (double)a->text_tokens, (double)b->text_tokens)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--stride", a->stride, b->stride)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--max-new", a->max_new, b->max_new)) ||
        (rc = orthros_result_same_str(a_name, b_name, "--chat", a->chat, b->chat)) ||
        (rc = orthros_result_same_str(a_name, b_name, "--needle", a->needle, b->needle)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the layout", a->layout, b->layout)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the task name", a->name, b->name)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--shots", a->shots, b->shots)) ||
        /* no --limit: 0 as the writer writes it, absent in a file of before --limit (-1) */
        (rc = orthros_result_same_num(a_name, b_name, "--limit", a->limit > 0 ? (double)a->limit : 0,
                                      b->limit > 0 ? (double)b->limit : 0)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the few-shot file", a->fewshot ? a->fewshot : "",
                                      b->fewshot ? b->fewshot : "")) ||
        (rc = orthros_result_same_str(a_name, b_name, "--score", a->score, b->score)))
        return rc;
    return 0;
}

/* ---- reading ---- */

static int arch_known(const char *arch)
{
    for (int i = 0; orthros_arch_names[i]; i++)
        if (!strcmp(arch, orthros_arch_names[i])) return 1;
    return 0;
}

/* The variants each task's cells and run.config may name. */
static int variant_ok(const char *task, const char *variant)
{
    static const char *const niah[] = {"single", "multikey", "multivalue", "multiquery", NULL};
    /* mc: the tasks file's layout */
    static const char *const mc[] = {"arc", "hellaswag", "piqa", "openbookqa", "winogrande", "generic", NULL};
    static const struct {
        const char *task, *variant;
    } one[] = {{"mqar", "mqar"}, {"ruler_vt", "vt"}, {"ruler_cwe", "cwe"}, {"recall", "contains"}, {"ppl", "ppl"}};
    const char *const *many = !strcmp(task, "niah") || !strcmp(task, "ruler_niah") ? niah : orthros_eval_is_mc(task) ? mc : NULL;
    if (many) {
        for (int i = 0; many[i]; i++)
            if (!strcmp(variant, many[i])) return 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof one / sizeof *one; i++)
        if (!strcmp(task, one[i].task)) return !strcmp(variant, one[i].variant);
    return 0;
}

/* The options of the tasks-file evals (mc, recall; issue 26): only in their files; mc's layout, name, shots and
 * score required (recall's files before them lack them); the layout one of the task's, a name or few-shot file not
 * empty, and samples what --limit leaves of the tasks file's items. */
static int read_tasks_options(orthros_eval_config *c, const orthros_jr *j, const cJSON *o)
{
    static const char *const keys[] = {"layout", "name", "shots", "limit", "fewshot", "score"};
    static const char *const recall_layouts[] = {"generic", "squad", "squad_v2", "triviaqa", NULL};
    const int mc = orthros_eval_is_mc(c->task), recall = !strcmp(c->task, "recall");
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        /* Every eval takes --limit. The writer of issue 26 before this check wrote "shots": 0 into every other
         * task's file (committed ones among them): read as not given. Any other value is refused. */
        if (!strcmp(keys[i], "limit")) continue;
        if (v && !mc && !recall && !strcmp(keys[i], "shots") && cJSON_IsNumber(v) && v->valuedouble == 0) {
            c->shots = -1;
            continue;
        }
        if (v && !(mc || (recall && strcmp(keys[i], "score"))))
            return orthros_jr_fail(j, keys[i], "given for a %s run (%s only)", c->task, strcmp(keys[i], "score") ? "mc and recall" : "mc");
    }
    if (mc) {
        if (!variant_ok(c->task, c->layout)) return orthros_jr_fail(j, "layout", "\"%s\" is not a multiple-choice layout", c->layout);
        if (c->variant[0] && strcmp(c->variant, c->layout))
            return orthros_jr_fail(j, "variant", "\"%s\" is not the layout \"%s\"", c->variant, c->layout);
        if (strcmp(c->score, "decode") && strcmp(c->score, "prefill"))
            return orthros_jr_fail(j, "score", "\"%s\" is not decode or prefill", c->score);
        if (c->shots < 0) return orthros_jr_fail(j, "shots", "missing");
    }
    if (recall && cJSON_GetObjectItemCaseSensitive(o, "layout")) {
        int k = 0;
        while (recall_layouts[k] && strcmp(recall_layouts[k], c->layout)) k++;
        if (!recall_layouts[k])
            return orthros_jr_fail(j, "layout", "\"%s\" is not a recall layout (generic, squad, squad_v2, triviaqa)", c->layout);
    }
    if (cJSON_GetObjectItemCaseSensitive(o, "name") && !c->name[0]) return orthros_jr_fail(j, "name", "empty");
    if (c->fewshot && !c->fewshot[0]) return orthros_jr_fail(j, "fewshot", "empty");
    if ((mc || recall) && c->text_tokens > 0) {
        int64_t runs = c->limit > 0 && c->limit < c->text_tokens ? c->limit : c->text_tokens;
        char lim[48] = "no --limit";
        if (c->limit >= 0) snprintf(lim, sizeof lim, "--limit %lld", (long long)c->limit);
        if (c->samples != runs)
            return orthros_jr_fail(j, "samples", "%d, but the run takes %lld of the %lld items (%s)", c->samples,
                                   (long long)runs, (long long)c->text_tokens, lim);
    }
    return 0;
}

static int read_config(orthros_eval_config *c, orthros_jr *j, const cJSON *o)
{
    int rc;
    const cJSON *ar;
    int64_t v;
    struct {
        const char *key;
        int *dst;
        int64_t lo;
    } ints[] = {{"samples", &c->samples, 1}, {"seed", &c->seed, 0}, {"stride", &c->stride, 0},
                {"max_new", &c->max_new, 1}, {"shots", &c->shots, 0}};
    if ((rc = orthros_jr_string(c->task, sizeof c->task, j, o, "task", ORTHROS_JR_REQUIRED))) return rc;
    if (axis_of(c->task) < 0) return orthros_jr_fail(j, "task", "\"%s\" is not an eval task", c->task);
    const char *xs = orthros_eval_xs_key(c->task);
    if ((rc = orthros_jr_string(c->variant, sizeof c->variant, j, o, "variant", 0)) ||
        (rc = orthros_jr_strdup(&c->model, j, o, "model", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_strdup(&c->archs, j, o, "arch", 0)) || (rc = orthros_jr_strdup(&c->ctxs, j, o, "ctx", 0)) ||
        (xs && (rc = orthros_jr_strdup(&c->xs, j, o, xs, 0))) ||
        (rc = orthros_jr_string(c->device, sizeof c->device, j, o, "device", 0)) ||
        (rc = orthros_sched_config_read(&c->sched, j, o)) ||
        (rc = orthros_jr_string(c->scoring, sizeof c->scoring, j, o, "scoring", 0)) ||
        (rc = orthros_jr_object(&ar, j, o, "analytic_recall", 0)) ||
        (rc = orthros_jr_strdup(&c->text, j, o, "text", orthros_eval_is_ppl(c->task) || !strcmp(c->task, "recall") ||
                                                                orthros_eval_is_mc(c->task)
                                                            ? ORTHROS_JR_REQUIRED : 0)) ||
        (rc = orthros_jr_string(c->layout, sizeof c->layout, j, o, "layout", orthros_eval_is_mc(c->task) ? ORTHROS_JR_REQUIRED : 0)) ||
        (rc = orthros_jr_string(c->name, sizeof c->name, j, o, "name", orthros_eval_is_mc(c->task) ? ORTHROS_JR_REQUIRED : 0)) ||
        (rc = orthros_jr_int(&c->limit, j, o, "limit", 0, INT64_MAX / 2, 0)) ||
        (rc = orthros_jr_strdup(&c->fewshot, j, o, "fewshot", 0)) ||
        (rc = orthros_jr_string(c->score, sizeof c->score, j, o, "score", orthros_eval_is_mc(c->task) ? ORTHROS_JR_REQUIRED : 0)) ||
        (rc = orthros_jr_int(&c->text_tokens, j, o, "text_tokens", 1, INT64_MAX / 2, 0)) ||
        (rc = orthros_jr_string(c->chat, sizeof c->chat, j, o, "chat", 0)) ||
        (rc = orthros_jr_string(c->needle, sizeof c->needle, j, o, "needle", 0)))
        return rc;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        v = *ints[i].dst;
        /* samples has no default: a file without it cannot say what its cells measured. */
        if ((rc = orthros_jr_int(&v, j, o, ints[i].key, ints[i].lo, INT_MAX, i == 0 ? ORTHROS_JR_REQUIRED : 0))) return rc;
        *ints[i].dst = (int)v;
    }
    if (c->variant[0] && !variant_ok(c->task, c->variant))
        return orthros_jr_fail(j, "variant", "\"%s\" is not a variant of %s", c->variant, c->task);
    if ((rc = read_tasks_options(c, j, o))) return rc;
    if (ar && !(c->analytic_recall = cJSON_Duplicate(ar, 1))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

/* An array of integers in [lo, hi] (its length in *n), as the records' id lists and positions are. */
static int int_array(const cJSON **out, int64_t *n, const orthros_jr *j, const cJSON *o, const char *key, int64_t lo,
                     int64_t hi, int flags)
{
    const cJSON *a, *v;
    int rc = orthros_jr_array(&a, j, o, key, flags);
    *out = a;
    *n = 0;
    if (rc || !a) return rc;
    cJSON_ArrayForEach(v, a)
    {
        double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (!(x >= (double)lo && x <= (double)hi && x == floor(x)))
            return orthros_jr_fail(j, key, "item %lld is not an integer in %lld..%lld", (long long)*n, (long long)lo,
                                   (long long)hi);
        ++*n;
    }
    return 0;
}

/* An array of n strings (n >= 1 when `nonempty`). */
static int string_array(int64_t *n, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    const cJSON *a, *v;
    int rc = orthros_jr_array(&a, j, o, key, flags);
    *n = 0;
    if (rc || !a) return rc;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsString(v) || !v->valuestring) return orthros_jr_fail(j, key, "item %lld is not a string", (long long)*n);
        ++*n;
    }
    return 0;
}

/* Every per-sample record of an accuracy cell against the schema (evals/result.schema.json, cells[].records[]) and
 * the cell: each field of its type and range; the fields the task's writer always writes present (ctx, the axis
 * and the seed for niah, mqar and ruler; the prompt and answer lengths for ruler and recall); ctx and the axis the
 * cell's; expected and generated of the task's kind (token ids or text), as many ids generated as expected;
 * n_correct within them and `correct` what it implies; one record per sample, and the records adding up to the
 * cell's counts. A record of another shape was kept and written back by --resume.
 * Text tasks: the prompt and the answer fit the cell's context together. recall: the records in the tasks file's
 * order (line increasing); with `squad` (the cell carries SQuAD's exact_match and f1, issue 26) every record has its
 * exact_match (0 or 1) and f1 (in [0, 1], 1 with an exact match), without it none has them; an unanswerable SQuAD v2
 * question (unanswerable: true) expects exactly [""] and is right, by every score, exactly when its exact match is;
 * "" is expected nowhere else. The other tasks' records carry none of recall's fields. */
static int read_accuracy_records(const orthros_eval_cell *c, const orthros_jr *j, const cJSON *rec, int squad)
{
    static const char *const squad_keys[] = {"exact_match", "f1", "unanswerable"};
    static const struct {
        const char *key;
        int64_t lo;
    } ints[] = {{"ctx", 1},           {"depth", 0},          {"pairs", 1},        {"hops", 1},
                {"words", 1},         {"prompt_tokens", 1},  {"haystack_sentences", 0}, {"list_entries", 0},
                {"generated_tokens", 1}, {"line", 1}};
    static const char *const int_lists[] = {"needle_positions", "needle_sentences", "statement_sentences"};
    const int analytic = !strcmp(c->task, "niah") || !strcmp(c->task, "mqar"), ruler = orthros_eval_is_ruler(c->task);
    const int recall = !strcmp(c->task, "recall");
    const char *axis = orthros_eval_axis_name(c->task);
    orthros_jr r = *j;
    size_t at = orthros_jr_push_key(&r, "records");
    int64_t n_rec = 0, n_right = 0, questions = 0, answers_right = 0, prev_line = 0;
    double partial = 0;
    const cJSON *o;
    int rc;
    cJSON_ArrayForEach(o, rec)
    {
        size_t at2 = orthros_jr_push_index(&r, (int)n_rec);
        int64_t v, n_exp = 0, n_gen = 0, n_ok = 0, prompt = -1, gen_tokens = -1, line = -1;
        int ok = 0, unanswerable = 0;
        double em = NAN, f1 = NAN;
        const cJSON *list, *seed, *hex;
        for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
            /* ctx and the axis for the tasks that write them; the lengths of text prompts and answers. */
            int need = ((analytic || ruler) && (!strcmp(ints[i].key, "ctx") || (axis && !strcmp(ints[i].key, axis)))) ||
                       ((ruler || recall) && (!strcmp(ints[i].key, "prompt_tokens") || !strcmp(ints[i].key, "generated_tokens"))) ||
                       (recall && !strcmp(ints[i].key, "line"));
            v = -1;
            if ((rc = orthros_jr_int(&v, &r, o, ints[i].key, ints[i].lo, INT_MAX, need ? ORTHROS_JR_REQUIRED : 0))) return rc;
            if (v >= 0 && !strcmp(ints[i].key, "ctx") && v != c->ctx)
                return orthros_jr_fail(&r, "ctx", "%lld is not the cell's %d", (long long)v, c->ctx);
            if (v >= 0 && axis && !strcmp(ints[i].key, axis) && v != c->axis)
                return orthros_jr_fail(&r, axis, "%lld is not the cell's %d", (long long)v, c->axis);
            if (v >= 0 && !strcmp(ints[i].key, "prompt_tokens") && v > c->ctx)
                return orthros_jr_fail(&r, "prompt_tokens", "%lld is longer than the cell's context of %d", (long long)v, c->ctx);
            if (!strcmp(ints[i].key, "prompt_tokens")) prompt = v;
            if (!strcmp(ints[i].key, "generated_tokens")) gen_tokens = v;
            if (!strcmp(ints[i].key, "line")) line = v;
        }
        if (prompt >= 0 && gen_tokens >= 0 && prompt + gen_tokens > c->ctx)
            return orthros_jr_fail(&r, "generated_tokens", "%lld after a prompt of %lld tokens: past the cell's context of %d",
                                   (long long)gen_tokens, (long long)prompt, c->ctx);
        if (recall && line <= prev_line)
            return orthros_jr_fail(&r, "line", "%lld after line %lld (the records follow the tasks file)", (long long)line,
                                   (long long)prev_line);
        prev_line = line;
        for (size_t i = 0; i < sizeof squad_keys / sizeof *squad_keys; i++)
            if (cJSON_GetObjectItemCaseSensitive(o, squad_keys[i]) && !squad)
                return recall ? orthros_jr_fail(&r, squad_keys[i], "given, but the cell has no exact_match and f1")
                              : orthros_jr_fail(&r, squad_keys[i], "given in a %s record (recall's only)", c->task);
        if (squad) {
            if ((rc = orthros_jr_num(&em, &r, o, "exact_match", 0, 1, ORTHROS_JR_REQUIRED)) ||
                (rc = orthros_jr_num(&f1, &r, o, "f1", 0, 1, ORTHROS_JR_REQUIRED)) ||
                (rc = orthros_jr_bool(&unanswerable, &r, o, "unanswerable", 0)))
                return rc;
            if (em != 0 && em != 1) return orthros_jr_fail(&r, "exact_match", "neither 0 nor 1");
            if (em == 1 && f1 != 1) return orthros_jr_fail(&r, "f1", "%.17g with an exact match (then 1)", f1);
        }
        for (size_t i = 0; i < sizeof int_lists / sizeof *int_lists; i++)
            if ((rc = int_array(&list, &v, &r, o, int_lists[i], 0, INT_MAX,
                                !strcmp(c->task, "niah") && i == 0 ? ORTHROS_JR_REQUIRED : 0)))
                return rc;
        /* The seed: a number (rounded above 2^53) and, in newer files, its exact 16 hex digits, which must agree to
         * the number's precision. */
        seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
        hex = cJSON_GetObjectItemCaseSensitive(o, "seed_hex");
        if (!seed && (analytic || ruler)) return orthros_jr_fail(&r, "seed", "missing");
        if (seed && (!cJSON_IsNumber(seed) || !isfinite(seed->valuedouble) || seed->valuedouble < 0 ||
                     seed->valuedouble >= 18446744073709551616.0))
            return orthros_jr_fail(&r, "seed", "not a 64-bit seed");
        if (hex) {
            const char *h = cJSON_IsString(hex) ? hex->valuestring : NULL;
            size_t len = h ? strspn(h, "0123456789abcdef") : 0;
            if (!h || len != 16 || h[16]) return orthros_jr_fail(&r, "seed_hex", "not 16 lowercase hex digits");
            /* cJSON writes a number with 15 significant digits when they read back within an ulp or two. */
            double exact = (double)strtoull(h, NULL, 16);
            if (seed && fabs(exact - seed->valuedouble) > 1e-14 * exact)
                return orthros_jr_fail(&r, "seed_hex", "%s is not the seed %.17g", h, seed->valuedouble);
        }
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
        if (id && !cJSON_IsString(id)) return orthros_jr_fail(&r, "id", "not a string");
        /* What was asked and what came back: token ids (niah, mqar) or text (ruler, recall). */
        if (analytic) {
            if ((rc = int_array(&list, &n_exp, &r, o, "expected", 0, INT32_MAX, ORTHROS_JR_REQUIRED)) ||
                (rc = int_array(&list, &n_gen, &r, o, "generated", 0, INT32_MAX, ORTHROS_JR_REQUIRED)))
                return rc;
            if (n_gen != n_exp)
                return orthros_jr_fail(&r, "generated", "%lld answers for %lld expected", (long long)n_gen, (long long)n_exp);
        } else {
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "generated"), *e;
            if ((rc = string_array(&n_exp, &r, o, "expected", ORTHROS_JR_REQUIRED))) return rc;
            if (!g) return orthros_jr_fail(&r, "generated", "missing");
            if (!cJSON_IsString(g) || !g->valuestring) return orthros_jr_fail(&r, "generated", "not a string");
            int k = 0;
            cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "expected"))
            {
                if (!e->valuestring[0] && !unanswerable)
                    return orthros_jr_fail(&r, "expected", "item %d is empty (\"\" is expected only for an unanswerable "
                                           "question)", k);
                k++;
            }
            if (unanswerable && (n_exp != 1 || cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "expected"), 0)->valuestring[0]))
                return orthros_jr_fail(&r, "expected", "not [\"\"] for an unanswerable question");
        }
        if (n_exp < 1) return orthros_jr_fail(&r, "expected", "empty");
        /* recall: 1 when any of the answers was found; else the expected answers found. */
        int64_t most = recall ? 1 : n_exp;
        if ((rc = orthros_jr_int(&n_ok, &r, o, "n_correct", 0, most, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_bool(&ok, &r, o, "correct", ORTHROS_JR_REQUIRED)))
            return rc;
        if (ok != (n_ok == most))
            return orthros_jr_fail(&r, "correct", "%s with %lld of %lld right", ok ? "true" : "false", (long long)n_ok,
                                   (long long)most);
        /* Nothing to find: right exactly when the answer normalises to nothing, as exact match and F1 score it. */
        if (unanswerable && (double)n_ok != em)
            return orthros_jr_fail(&r, "n_correct", "%lld, but an unanswerable question's exact_match is %g", (long long)n_ok, em);
        if (unanswerable && f1 != em)
            return orthros_jr_fail(&r, "f1", "%.17g, but an unanswerable question's exact_match is %g", f1, em);
        n_right += ok, questions += n_exp, answers_right += n_ok, partial += (double)n_ok / (double)n_exp;
        orthros_jr_pop(&r, at2);
        n_rec++;
    }
    orthros_jr_pop(&r, at);
    if (n_rec != c->samples)
        return orthros_jr_fail(j, "records", "%lld records for %d samples", (long long)n_rec, c->samples);
    if (n_right != c->samples_correct)
        return orthros_jr_fail(j, "samples_correct", "%d, but %lld records are correct", c->samples_correct, (long long)n_right);
    /* What the cell counts: samples (niah, ruler, recall) or questions (mqar). */
    int64_t want_n = !strcmp(c->task, "mqar") ? questions : n_rec, want_correct = !strcmp(c->task, "mqar") ? answers_right : n_right;
    if (c->n != want_n) return orthros_jr_fail(j, "n", "%lld, but the records hold %lld", (long long)c->n, (long long)want_n);
    if (c->correct != want_correct)
        return orthros_jr_fail(j, "correct", "%lld, but the records hold %lld right", (long long)c->correct,
                               (long long)want_correct);
    if (ruler && fabs(partial / (double)n_rec - c->partial) > 1e-9)
        return orthros_jr_fail(j, "partial_score", "%.17g is not the records' mean fraction found", c->partial);
    return 0;
}

/* The mean of a field of every record (each in [lo, hi], required) and lm-eval's stderr of it (sample standard
 * deviation over sqrt(n); NAN for one record). */
static int records_mean(double *mean, double *se, const orthros_jr *j, const cJSON *rec, const char *key, double lo,
                        double hi, int64_t n)
{
    orthros_jr r = *j;
    size_t at = orthros_jr_push_key(&r, "records");
    double sum = 0, sq = 0;
    int i = 0, rc;
    const cJSON *e;
    cJSON_ArrayForEach(e, rec)
    {
        double v;
        size_t at2 = orthros_jr_push_index(&r, i++);
        if ((rc = orthros_jr_num(&v, &r, e, key, lo, hi, ORTHROS_JR_REQUIRED))) return rc;
        sum += v;
        orthros_jr_pop(&r, at2);
    }
    orthros_jr_pop(&r, at);
    if (i != n) return orthros_jr_fail(j, "records", "%d records for %lld items", i, (long long)n);
    *mean = sum / (double)n;
    cJSON_ArrayForEach(e, rec)
    {
        double v = cJSON_GetObjectItemCaseSensitive(e, key)->valuedouble - *mean;
        sq += v * v;
    }
    *se = n < 2 ? NAN : sqrt(sq / (double)(n - 1)) / sqrt((double)n);
    return 0;
}

/* A mean and its stderr in a cell, as the records give them. */
static int check_mean(const orthros_jr *j, const cJSON *o, const char *key, const char *se_key, double *mean,
                      double *se, double want, double want_se)
{
    int rc;
    if ((rc = orthros_jr_num(mean, j, o, key, 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(se, j, o, se_key, 0, 1, ORTHROS_JR_REQUIRED | ORTHROS_JR_NULL_NAN)))
        return rc;
    if (fabs(*mean - want) > 1e-9) return orthros_jr_fail(j, key, "%.17g, but the records give %.17g", *mean, want);
    if (isnan(*se) != isnan(want_se) || (!isnan(want_se) && fabs(*se - want_se) > 1e-9))
        return orthros_jr_fail(j, se_key, "is not the records' stderr (%.17g)", want_se);
    return 0;
}

/* The cell's keys of SQuAD's scores (recall since issue 26). */
static const char *const squad_cell_keys[] = {"exact_match", "exact_match_stderr", "f1", "f1_stderr"};

/* Whether an accuracy cell carries SQuAD's scores: recall's may (files before them do not), no other task's. */
static int has_squad(int *squad, const orthros_jr *j, const orthros_eval_cell *c, const cJSON *o)
{
    *squad = 0;
    for (size_t i = 0; i < sizeof squad_cell_keys / sizeof *squad_cell_keys; i++)
        if (cJSON_GetObjectItemCaseSensitive(o, squad_cell_keys[i])) {
            if (strcmp(c->task, "recall")) return orthros_jr_fail(j, squad_cell_keys[i], "given in a %s cell (recall's only)", c->task);
            *squad = 1;
        }
    return 0;
}

/* recall: SQuAD's exact match and F1 (the cell has them: has_squad), their means and stderr as the records give
 * them (each record's values were checked by read_accuracy_records). */
static int read_squad(orthros_eval_cell *c, const orthros_jr *j, const cJSON *o, const cJSON *rec)
{
    double em, em_se, f1, f1_se;
    int rc;
    if ((rc = records_mean(&em, &em_se, j, rec, "exact_match", 0, 1, c->n)) ||
        (rc = records_mean(&f1, &f1_se, j, rec, "f1", 0, 1, c->n)) ||
        (rc = check_mean(j, o, "exact_match", "exact_match_stderr", &c->exact_match, &c->exact_match_stderr, em, em_se)))
        return rc;
    return check_mean(j, o, "f1", "f1_stderr", &c->f1, &c->f1_stderr, f1, f1_se);
}

/* The index of the largest of v[n] (the first on ties, as numpy's argmax). */
static int argmax_d(const double *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* A multiple-choice cell (mc): every question's record (the choices' log-likelihoods and lengths, the gold index)
 * and the metrics recomputed from them as lm-eval computes them. Every field the writer writes is required and
 * checked: one entry per choice in is_greedy (booleans), choice_chars and cont_tokens (positive integers);
 * ctx_tokens holds one context length (a context per choice for winogrande, whose choices are contexts); an id is a
 * string; the records follow the tasks file (line increasing), and the cell's ctx is their longest request (a
 * context and its continuation), the session's context the run used. */
static int read_mc(orthros_eval_cell *c, orthros_jr *j, const cJSON *o, const cJSON *rec)
{
    int rc;
    int64_t samples = 0;
    if ((rc = orthros_jr_int(&samples, j, o, "samples", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->n, j, o, "n", samples, samples, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->correct, j, o, "correct", 0, c->n, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->correct_norm, j, o, "correct_norm", 0, c->n, ORTHROS_JR_REQUIRED)) ||
        (rc = check_mean(j, o, "acc", "acc_stderr", &c->accuracy, &c->acc_stderr, (double)c->correct / (double)c->n,
                         orthros_eval_binary_stderr(c->correct, c->n))) ||
        (rc = check_mean(j, o, "acc_norm", "acc_norm_stderr", &c->acc_norm, &c->acc_norm_stderr,
                         (double)c->correct_norm / (double)c->n, orthros_eval_binary_stderr(c->correct_norm, c->n))))
        return rc;
    c->samples = (int)samples, c->samples_correct = (int)c->correct;
    if (!rec) return orthros_jr_fail(j, "records", "missing: the metrics are recomputed from them");
    orthros_jr r = *j;
    size_t at = orthros_jr_push_key(&r, "records");
    int64_t acc = 0, acc_norm = 0, prev_line = 0, longest = 0;
    int i = 0;
    const int per_choice_ctx = !strcmp(c->variant, "winogrande");
    const cJSON *q;
    cJSON_ArrayForEach(q, rec)
    {
        enum { MAXC = ORTHROS_MC_MAX_CHOICES };
        double ll[MAXC] = {0}, norm[MAXC] = {0};
        int64_t gold, pred, pred_norm, line, n_ctx, n_cont;
        int ok, ok_norm, k = 0;
        const cJSON *lls, *lens, *e, *greedy, *ctx_tok, *cont_tok, *id;
        size_t at2 = orthros_jr_push_index(&r, i++);
        if ((rc = orthros_jr_int(&line, &r, q, "line", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_array(&lls, &r, q, "loglikelihoods", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_array(&lens, &r, q, "choice_chars", ORTHROS_JR_REQUIRED)))
            return rc;
        int n_choices = cJSON_GetArraySize(lls);
        if (n_choices < 2 || n_choices > MAXC)
            return orthros_jr_fail(&r, "loglikelihoods", "%d choices (2 to %d)", n_choices, MAXC);
        if (cJSON_GetArraySize(lens) != n_choices)
            return orthros_jr_fail(&r, "choice_chars", "%d lengths for %d choices", cJSON_GetArraySize(lens), n_choices);
        cJSON_ArrayForEach(e, lls)
        {
            if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble > 0)
                return orthros_jr_fail(&r, "loglikelihoods", "item %d is not a finite number <= 0", k);
            ll[k++] = e->valuedouble;
        }
        k = 0;
        cJSON_ArrayForEach(e, lens)
        {
            double chars = cJSON_IsNumber(e) ? e->valuedouble : 0;
            if (!(chars >= 1 && chars <= INT_MAX && chars == floor(chars)))
                return orthros_jr_fail(&r, "choice_chars", "item %d is not a positive integer", k);
            norm[k] = ll[k] / chars;
            k++;
        }
        if (line <= prev_line)
            return orthros_jr_fail(&r, "line", "%lld after line %lld (the records follow the tasks file)", (long long)line,
                                   (long long)prev_line);
        prev_line = line;
        if ((id = cJSON_GetObjectItemCaseSensitive(q, "id")) && !cJSON_IsString(id)) return orthros_jr_fail(&r, "id", "not a string");
        if ((rc = orthros_jr_array(&greedy, &r, q, "is_greedy", ORTHROS_JR_REQUIRED)) ||
            (rc = int_array(&ctx_tok, &n_ctx, &r, q, "ctx_tokens", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = int_array(&cont_tok, &n_cont, &r, q, "cont_tokens", 1, INT_MAX, ORTHROS_JR_REQUIRED)))
            return rc;
        if (cJSON_GetArraySize(greedy) != n_choices)
            return orthros_jr_fail(&r, "is_greedy", "%d values for %d choices", cJSON_GetArraySize(greedy), n_choices);
        k = 0;
        cJSON_ArrayForEach(e, greedy)
        {
            if (!cJSON_IsBool(e)) return orthros_jr_fail(&r, "is_greedy", "item %d is not true or false", k);
            k++;
        }
        if (n_ctx != (per_choice_ctx ? n_choices : 1))
            return orthros_jr_fail(&r, "ctx_tokens", "%lld contexts for %d choices (%s)", (long long)n_ctx, n_choices,
                                   per_choice_ctx ? "winogrande: one a choice" : "one, shared");
        if (n_cont != n_choices)
            return orthros_jr_fail(&r, "cont_tokens", "%lld lengths for %d choices", (long long)n_cont, n_choices);
        int64_t ctx_len[MAXC] = {0}, len;
        k = 0;
        cJSON_ArrayForEach(e, ctx_tok) ctx_len[k++] = (int64_t)e->valuedouble;
        k = 0;
        cJSON_ArrayForEach(e, cont_tok)
        {
            len = ctx_len[per_choice_ctx ? k : 0] + (int64_t)e->valuedouble;
            if (len > longest) longest = len;
            k++;
        }
        if ((rc = orthros_jr_int(&gold, &r, q, "gold", 0, n_choices - 1, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&pred, &r, q, "pred", 0, n_choices - 1, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&pred_norm, &r, q, "pred_norm", 0, n_choices - 1, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_bool(&ok, &r, q, "acc", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_bool(&ok_norm, &r, q, "acc_norm", ORTHROS_JR_REQUIRED)))
            return rc;
        if (pred != argmax_d(ll, n_choices)) return orthros_jr_fail(&r, "pred", "is not the choice of the largest log-likelihood");
        if (pred_norm != argmax_d(norm, n_choices))
            return orthros_jr_fail(&r, "pred_norm", "is not the choice of the largest log-likelihood per character");
        if (ok != (pred == gold)) return orthros_jr_fail(&r, "acc", "disagrees with pred and gold");
        if (ok_norm != (pred_norm == gold)) return orthros_jr_fail(&r, "acc_norm", "disagrees with pred_norm and gold");
        acc += ok, acc_norm += ok_norm;
        orthros_jr_pop(&r, at2);
    }
    orthros_jr_pop(&r, at);
    if (i != c->n) return orthros_jr_fail(j, "records", "%d records for %lld questions", i, (long long)c->n);
    if (longest != c->ctx)
        return orthros_jr_fail(j, "ctx", "%d, but the records' longest request (context and continuation) is %lld tokens",
                               c->ctx, (long long)longest);
    if (acc != c->correct) return orthros_jr_fail(j, "correct", "%lld, but %lld records are right", (long long)c->correct, (long long)acc);
    if (acc_norm != c->correct_norm)
        return orthros_jr_fail(j, "correct_norm", "%lld, but %lld records are right by acc_norm", (long long)c->correct_norm,
                               (long long)acc_norm);
    return 0;
}

/* The fields of an accuracy cell after its coordinates. */
static int read_accuracy(orthros_eval_cell *c, orthros_jr *j, const cJSON *o)
{
    int rc;
    int64_t samples = 0, sc = 0;
    if ((rc = orthros_jr_int(&samples, j, o, "samples", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&sc, j, o, "samples_correct", 0, samples, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->n, j, o, "n", 1, INT64_MAX / 2, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->correct, j, o, "correct", 0, c->n, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->accuracy, j, o, "accuracy", 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->ci_lo, j, o, "ci95_lo", 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->ci_hi, j, o, "ci95_hi", 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->partial, j, o, "partial_score", 0, 1,
                             orthros_eval_is_ruler(c->task) ? ORTHROS_JR_REQUIRED : 0)))
        return rc;
    /* The text tasks count samples (recall: items): n and correct are the samples'. */
    if (!strcmp(c->task, "recall") || orthros_eval_is_ruler(c->task)) {
        if (c->n != samples) return orthros_jr_fail(j, "n", "%lld is not the %lld samples", (long long)c->n, (long long)samples);
        if (c->correct != sc)
            return orthros_jr_fail(j, "correct", "%lld is not samples_correct (%lld)", (long long)c->correct, (long long)sc);
    }
    if (fabs(c->accuracy - (double)c->correct / (double)c->n) > 1e-9)
        return orthros_jr_fail(j, "accuracy", "is not correct / n");
    if (c->ci_lo > c->accuracy + 1e-12 || c->ci_hi < c->accuracy - 1e-12)
        return orthros_jr_fail(j, "ci95_lo", "the interval does not hold the accuracy");
    c->samples = (int)samples, c->samples_correct = (int)sc;
    return 0;
}

/* The fields of a perplexity cell after its coordinates; the windows' records must add up to the cell. */
static int read_ppl(orthros_eval_cell *c, orthros_jr *j, const cJSON *o, const cJSON *rec)
{
    int rc;
    int64_t windows = 0;
    if ((rc = orthros_jr_int(&windows, j, o, "windows", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->n, j, o, "tokens", 1, INT64_MAX / 2, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->nll, j, o, "nll", 0, 1e6, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->ppl, j, o, "ppl", 1, HUGE_VAL, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->ppl_lo, j, o, "ppl_ci95_lo", 1, HUGE_VAL, ORTHROS_JR_REQUIRED | ORTHROS_JR_NULL_NAN)) ||
        (rc = orthros_jr_num(&c->ppl_hi, j, o, "ppl_ci95_hi", 1, HUGE_VAL, ORTHROS_JR_REQUIRED | ORTHROS_JR_NULL_NAN)) ||
        (rc = orthros_jr_int(&c->linear_tokens, j, o, "linear_phase_tokens", 0, c->n, ORTHROS_JR_REQUIRED)))
        return rc;
    if (fabs(c->ppl - exp(c->nll)) > 1e-9 * c->ppl) return orthros_jr_fail(j, "ppl", "is not exp(nll)");
    if (windows > 1 && (isnan(c->ppl_lo) || isnan(c->ppl_hi)))
        return orthros_jr_fail(j, isnan(c->ppl_lo) ? "ppl_ci95_lo" : "ppl_ci95_hi", "null with %lld windows", (long long)windows);
    if (isnan(c->ppl_lo) != isnan(c->ppl_hi) || (!isnan(c->ppl_lo) && (c->ppl_lo > c->ppl * (1 + 1e-12) ||
                                                                        c->ppl_hi < c->ppl * (1 - 1e-12))))
        return orthros_jr_fail(j, "ppl_ci95_lo", "the interval does not hold the perplexity");
    c->samples = (int)windows;
    if (!rec) return 0;
    /* Every window's record: where it lies, what it scored; together they are the cell. */
    orthros_jr r = *j;
    size_t at = orthros_jr_push_key(&r, "records");
    int64_t tokens = 0, linear = 0, prev_end = 0;
    double nll = 0;
    int i = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, rec)
    {
        int64_t begin, end, scored, lin;
        double sum;
        size_t at2 = orthros_jr_push_index(&r, i);
        if (!cJSON_IsObject(w)) return orthros_jr_fail(&r, NULL, "not an object");
        if ((rc = orthros_jr_int(&begin, &r, w, "begin", 0, INT64_MAX / 2, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&end, &r, w, "end", begin + 1, begin + c->ctx, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&scored, &r, w, "scored", 1, end - begin, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_num(&sum, &r, w, "nll_sum", 0, 1e300, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&lin, &r, w, "linear_phase_tokens", 0, scored, ORTHROS_JR_REQUIRED)))
            return rc;
        if (end < prev_end) return orthros_jr_fail(&r, "end", "windows out of order");
        prev_end = end;
        tokens += scored, linear += lin, nll += sum;
        orthros_jr_pop(&r, at2);
        i++;
    }
    orthros_jr_pop(&r, at);
    if (i != windows) return orthros_jr_fail(j, "records", "%d records for %lld windows", i, (long long)windows);
    if (tokens != c->n) return orthros_jr_fail(j, "tokens", "%lld, but the windows score %lld", (long long)c->n, (long long)tokens);
    if (linear != c->linear_tokens)
        return orthros_jr_fail(j, "linear_phase_tokens", "%lld, but the windows' add up to %lld", (long long)c->linear_tokens,
                               (long long)linear);
    if (fabs(nll / (double)tokens - c->nll) > 1e-9 * (1 + c->nll))
        return orthros_jr_fail(j, "nll", "is not the windows' nll_sum over their tokens");
    return 0;
}

static int read_cell(orthros_eval_cell *c, orthros_jr *j, const cJSON *o)
{
    int rc;
    int64_t ctx = 0, x = 0;
    const cJSON *rec, *r;
    memset(c, 0, sizeof *c);
    c->elapsed_s = c->partial = c->nll = c->ppl = c->ppl_lo = c->ppl_hi = NAN;
    c->acc_stderr = c->acc_norm = c->acc_norm_stderr = NAN;
    c->exact_match = c->exact_match_stderr = c->f1 = c->f1_stderr = NAN;
    if (!cJSON_IsObject(o)) return orthros_jr_fail(j, NULL, "not an object");
    if ((rc = orthros_jr_string(c->task, sizeof c->task, j, o, "task", ORTHROS_JR_REQUIRED))) return rc;
    int a = axis_of(c->task);
    if (a < 0)
        return orthros_jr_fail(j, "task", "\"%s\" is not niah, mqar, ruler_niah, ruler_vt, ruler_cwe, recall, ppl or mc",
                               c->task);
    if ((rc = orthros_jr_string(c->variant, sizeof c->variant, j, o, "variant", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_string(c->needle, sizeof c->needle, j, o, "needle", !strcmp(c->task, "ruler_niah") ? ORTHROS_JR_REQUIRED : 0)) ||
        (rc = orthros_jr_string(c->arch, sizeof c->arch, j, o, "arch", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&ctx, j, o, "ctx", orthros_eval_is_ppl(c->task) ? 2 : 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
        (axes[a].x && (rc = orthros_jr_int(&x, j, o, axes[a].x, axes[a].lo, axes[a].hi, ORTHROS_JR_REQUIRED))) ||
        (rc = orthros_jr_num(&c->elapsed_s, j, o, "elapsed_s", 0, 1e300, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_array(&rec, j, o, "records", ORTHROS_JR_REQUIRED)))
        return rc;
    if (!variant_ok(c->task, c->variant))
        return orthros_jr_fail(j, "variant", "\"%s\" is not a variant of %s", c->variant, c->task);
    if (!arch_known(c->arch)) return orthros_jr_fail(j, "arch", "\"%s\" is not an architecture", c->arch);
    c->ctx = (int)ctx, c->axis = (int)x;
    if (!strcmp(c->task, "ruler_niah") && strcmp(c->needle, "words") && strcmp(c->needle, "numbers") && strcmp(c->needle, "uuids"))
        return orthros_jr_fail(j, "needle", "\"%s\" is not words, numbers or uuids", c->needle);
    int i = 0;
    cJSON_ArrayForEach(r, rec)
    {
        if (!cJSON_IsObject(r)) return orthros_jr_fail(j, "records", "item %d is not an object", i);
        i++;
    }
    if (i == 0) return orthros_jr_fail(j, "records", "empty");
    if ((rc = orthros_eval_is_ppl(c->task) ? read_ppl(c, j, o, rec)
              : orthros_eval_is_mc(c->task)  ? read_mc(c, j, o, rec)
                                             : read_accuracy(c, j, o)))
        return rc;
    if (!orthros_eval_is_ppl(c->task) && !orthros_eval_is_mc(c->task)) {
        int squad;
        if ((rc = has_squad(&squad, j, c, o)) || (rc = read_accuracy_records(c, j, rec, squad)) ||
            (squad && (rc = read_squad(c, j, o, rec))))
            return rc;
    }
    if (rec && !(c->records = cJSON_Duplicate(rec, 1))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

/* A text that is the same for two cells exactly when they are the same cell (task, arch, ctx and axis): for sets of
 * cells. \x1f cannot occur in a string a reader accepts (control characters are refused). */
static void cell_set_key(char *out, size_t n, const orthros_eval_cell *c)
{
    snprintf(out, n, "%s\x1f%s\x1f%d\x1f%d", c->task, c->arch, c->ctx, c->axis);
}

static int from_json(orthros_eval_file *f, const cJSON *root, const char *name)
{
    orthros_jr j;
    orthros_jr_init(&j, name);
    int rc;
    const cJSON *run, *cfg, *cells, *e;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "eval"))
        return orthros_error(ORTHROS_EFORMAT, "%s is a \"%.32s\" result file, not an eval result file", name,
                             kind->valuestring);
    if ((rc = orthros_result_header_read(&f->hdr, root, name))) return rc;
    if (f->hdr.kind != ORTHROS_RESULT_EVAL)
        return orthros_error(ORTHROS_EFORMAT, "%s is not an eval result file", name);
    if (!(f->header = orthros_result_header_keep(root))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    if ((rc = orthros_jr_object(&run, &j, root, "run", ORTHROS_JR_REQUIRED))) return rc;
    size_t at = orthros_jr_push_key(&j, "run");
    if ((rc = orthros_jr_object(&cfg, &j, run, "config", ORTHROS_JR_REQUIRED))) return rc;
    orthros_jr_push_key(&j, "config");
    if ((rc = read_config(&f->cfg, &j, cfg))) return rc;
    orthros_jr_pop(&j, at);
    if ((rc = orthros_jr_array(&cells, &j, root, "cells", ORTHROS_JR_REQUIRED))) return rc;
    orthros_jr_push_key(&j, "cells");
    int i = 0;
    /* A cell twice (its task, arch, ctx and axis) is found through a set of their keys, in time linear in the cells. */
    orthros_keyset seen;
    orthros_keyset_init(&seen);
    cJSON_ArrayForEach(e, cells)
    {
        orthros_eval_cell c;
        char key[ORTHROS_RESULT_KEY_MAX];
        size_t at2 = orthros_jr_push_index(&j, i++);
        if ((rc = read_cell(&c, &j, e))) break;
        cell_set_key(key, sizeof key, &c);
        if ((rc = orthros_keyset_add(&seen, key)) > 0)
            rc = orthros_jr_fail(&j, NULL, "the cell %s ctx %d %s %d appears twice", c.arch, c.ctx,
                                 orthros_eval_axis_name(c.task) ? orthros_eval_axis_name(c.task) : "x", c.axis);
        if (rc || (rc = orthros_eval_file_add(f, &c))) {
            cJSON_Delete(c.records);
            break;
        }
        orthros_jr_pop(&j, at2);
    }
    orthros_keyset_free(&seen);
    return rc;
}

/* ---- writing ---- */

static cJSON *config_json(const orthros_eval_config *c)
{
    cJSON *o = cJSON_CreateObject();
    const char *xs = orthros_eval_xs_key(c->task);
    cJSON_AddStringToObject(o, "task", c->task);
    cJSON_AddStringToObject(o, "variant", c->variant);
    cJSON_AddStringToObject(o, "model", c->model ? c->model : "");
    cJSON_AddStringToObject(o, "arch", c->archs ? c->archs : "");
    cJSON_AddStringToObject(o, "ctx", c->ctxs ? c->ctxs : "");
    if (xs) cJSON_AddStringToObject(o, xs, c->xs ? c->xs : "");
    cJSON_AddNumberToObject(o, "samples", c->samples);
    cJSON_AddNumberToObject(o, "seed", c->seed);
    cJSON_AddStringToObject(o, "device", c->device);
    orthros_sched_config_write(o, &c->sched);
    cJSON_AddStringToObject(o, "scoring", c->scoring);
    if (c->analytic_recall) cJSON_AddItemToObject(o, "analytic_recall", cJSON_Duplicate(c->analytic_recall, 1));
    if (c->text) cJSON_AddStringToObject(o, "text", c->text);
    if (c->text_tokens >= 0) cJSON_AddNumberToObject(o, "text_tokens", (double)c->text_tokens);
    if (c->stride >= 0) cJSON_AddNumberToObject(o, "stride", c->stride);
    if (c->max_new >= 0) cJSON_AddNumberToObject(o, "max_new", c->max_new);
    if (c->chat[0]) cJSON_AddStringToObject(o, "chat", c->chat);
    if (c->needle[0]) cJSON_AddStringToObject(o, "needle", c->needle);
    if (c->layout[0]) cJSON_AddStringToObject(o, "layout", c->layout);
    if (c->name[0]) cJSON_AddStringToObject(o, "name", c->name);
    if (c->shots >= 0) cJSON_AddNumberToObject(o, "shots", c->shots);
    if (c->limit >= 0) cJSON_AddNumberToObject(o, "limit", (double)c->limit);
    if (c->fewshot) cJSON_AddStringToObject(o, "fewshot", c->fewshot);
    if (c->score[0]) cJSON_AddStringToObject(o, "score", c->score);
    return o;
}

static cJSON *cell_json(const orthros_eval_cell *c)
{
    cJSON *o = cJSON_CreateObject();
    const char *x = orthros_eval_axis_name(c->task);
    cJSON_AddStringToObject(o, "task", c->task);
    cJSON_AddStringToObject(o, "variant", c->variant);
    if (c->needle[0]) cJSON_AddStringToObject(o, "needle", c->needle);
    cJSON_AddStringToObject(o, "arch", c->arch);
    cJSON_AddNumberToObject(o, "ctx", c->ctx);
    if (x) cJSON_AddNumberToObject(o, x, c->axis);
    if (orthros_eval_is_ppl(c->task)) {
        cJSON_AddNumberToObject(o, "windows", c->samples);
        cJSON_AddNumberToObject(o, "tokens", (double)c->n);
        cJSON_AddNumberToObject(o, "nll", c->nll);
        cJSON_AddNumberToObject(o, "ppl", c->ppl);
        orthros_json_add_num(o, "ppl_ci95_lo", c->ppl_lo);
        orthros_json_add_num(o, "ppl_ci95_hi", c->ppl_hi);
        cJSON_AddNumberToObject(o, "linear_phase_tokens", (double)c->linear_tokens);
    } else if (orthros_eval_is_mc(c->task)) {
        cJSON_AddNumberToObject(o, "samples", c->samples);
        cJSON_AddNumberToObject(o, "n", (double)c->n);
        cJSON_AddNumberToObject(o, "correct", (double)c->correct);
        cJSON_AddNumberToObject(o, "acc", c->accuracy);
        orthros_json_add_num(o, "acc_stderr", c->acc_stderr);
        cJSON_AddNumberToObject(o, "correct_norm", (double)c->correct_norm);
        cJSON_AddNumberToObject(o, "acc_norm", c->acc_norm);
        orthros_json_add_num(o, "acc_norm_stderr", c->acc_norm_stderr);
    } else {
        cJSON_AddNumberToObject(o, "samples", c->samples);
        cJSON_AddNumberToObject(o, "samples_correct", c->samples_correct);
        cJSON_AddNumberToObject(o, "n", (double)c->n);
        cJSON_AddNumberToObject(o, "correct", (double)c->correct);
        cJSON_AddNumberToObject(o, "accuracy", c->accuracy);
        cJSON_AddNumberToObject(o, "ci95_lo", c->ci_lo);
        cJSON_AddNumberToObject(o, "ci95_hi", c->ci_hi);
        if (isfinite(c->partial)) cJSON_AddNumberToObject(o, "partial_score", c->partial);
        /* Scored by SQuAD's metrics (recall since they exist): every record carries its own. */
        const cJSON *r0 = c->records ? cJSON_GetArrayItem(c->records, 0) : NULL;
        if (!strcmp(c->task, "recall") && isfinite(c->exact_match) && r0 && cJSON_GetObjectItemCaseSensitive(r0, "exact_match")) {
            cJSON_AddNumberToObject(o, "exact_match", c->exact_match);
            orthros_json_add_num(o, "exact_match_stderr", c->exact_match_stderr);
            cJSON_AddNumberToObject(o, "f1", c->f1);
            orthros_json_add_num(o, "f1_stderr", c->f1_stderr);
        }
    }
    if (isfinite(c->elapsed_s)) cJSON_AddNumberToObject(o, "elapsed_s", c->elapsed_s);
    cJSON_AddItemToObject(o, "records", c->records ? cJSON_Duplicate(c->records, 1) : cJSON_CreateArray());
    return o;
}

cJSON *orthros_eval_file_to_json(const orthros_eval_file *f)
{
    cJSON *root = orthros_result_header_emit(f->header, "eval", config_json(&f->cfg));
    if (!root) return NULL;
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (size_t i = 0; i < f->n_cells; i++) cJSON_AddItemToArray(cells, cell_json(&f->cells[i]));
    return root;
}

/* ---- the kind ---- */

static void type_init(void *f) { orthros_eval_file_init(f); }
static void type_free(void *f) { orthros_eval_file_free(f); }
static int type_from_json(void *f, const cJSON *root, const char *name) { return from_json(f, root, name); }
static cJSON *type_to_json(const void *f) { return orthros_eval_file_to_json(f); }
static orthros_result_header *type_hdr(void *f) { return &((orthros_eval_file *)f)->hdr; }
static cJSON **type_header(void *f) { return &((orthros_eval_file *)f)->header; }

static int type_same_config(const void *old, const char *old_name, const void *now, const char *now_name)
{
    return orthros_eval_config_check_same(&((const orthros_eval_file *)old)->cfg, old_name,
                                          &((const orthros_eval_file *)now)->cfg, now_name);
}

/* --resume keeps every cell (cell_kept NULL). */
static size_t type_n_cells(const void *f) { return ((const orthros_eval_file *)f)->n_cells; }
static void type_cell_key(const void *f, size_t i, char *buf, size_t cap)
{
    cell_set_key(buf, cap, &((const orthros_eval_file *)f)->cells[i]);
}
static int type_cell_add(void *now, void *old, size_t i)
{
    return orthros_eval_file_add(now, &((orthros_eval_file *)old)->cells[i]);
}

const orthros_result_type orthros_eval_type = {"eval", sizeof(orthros_eval_file), type_init, type_free,
                                               type_from_json, type_to_json, type_hdr, type_header,
                                               type_same_config, type_n_cells, type_cell_key, NULL, type_cell_add};

int orthros_eval_file_from_json(orthros_eval_file *f, const cJSON *root, const char *name)
{
    return orthros_result_from_json(&orthros_eval_type, f, root, name);
}

int orthros_eval_file_read(orthros_eval_file *f, const char *path, int missing_ok, int *exists)
{
    return orthros_result_read_file(&orthros_eval_type, f, path, missing_ok, exists);
}

int orthros_eval_file_write(const orthros_eval_file *f, const char *path)
{
    return orthros_result_write_file(&orthros_eval_type, f, path);
}
