/* Multiple-choice questions: the layouts, lm-eval's prompts and its token boundary (mc.h). Written from lm-eval
 * 0.4.13's task definitions (arc/arc_easy.yaml, hellaswag/hellaswag.yaml and utils.py, piqa/piqa.yaml,
 * openbookqa/openbookqa.yaml, winogrande/default.yaml and preprocess_winogrande.py) and its api/task.py,
 * api/samplers.py (first_n) and api/model.py (_encode_pair, loglikelihood). */
#define _GNU_SOURCE
#include "mc.h"
#include "jsonl.h"
#include "result_eval.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const layout_names[] = {"arc", "hellaswag", "piqa", "openbookqa", "winogrande", "generic", "auto"};

int orthros_mc_layout_parse(orthros_mc_layout *out, const char *name)
{
    for (int i = 0; i <= ORTHROS_MC_AUTO; i++)
        if (!strcmp(name, layout_names[i])) {
            *out = (orthros_mc_layout)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown layout \"%s\" (arc, hellaswag, piqa, openbookqa, winogrande, generic, auto)",
                         name);
}

const char *orthros_mc_layout_name(orthros_mc_layout l) { return layout_names[l]; }
const char *orthros_mc_layout_version(orthros_mc_layout l) { return l == ORTHROS_MC_GENERIC ? "N/A" : "1"; }

static void item_free(orthros_mc_item *it)
{
    free(it->id);
    free(it->query);
    free(it->target);
    for (int i = 0; it->choices && i < it->n_choices; i++) free(it->choices[i]);
    free(it->choices);
    memset(it, 0, sizeof *it);
}

void orthros_mc_free(orthros_mc_set *set)
{
    for (int i = 0; i < set->n; i++) item_free(&set->items[i]);
    free(set->items);
    set->items = NULL, set->n = 0;
}

static char *cat(const char *a, const char *b, const char *c)
{
    char *s = NULL;
    return asprintf(&s, "%s%s%s", a, b ? b : "", c ? c : "") < 0 ? NULL : s;
}

/* Python's str.strip() over ASCII white space (what it strips of ASCII). */
static int py_space(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f); }

static char *strip(const char *s, size_t len)
{
    size_t a = 0, b = len;
    while (a < b && py_space(s[a])) a++;
    while (b > a && py_space(s[b - 1])) b--;
    return strndup(s + a, b - a);
}

/* s with every non-overlapping `from` replaced by `to`, left to right (Python's str.replace). */
static char *replace(const char *s, const char *from, const char *to)
{
    size_t lf = strlen(from), lt = strlen(to), n = 0;
    for (const char *p = s; (p = strstr(p, from)); p += lf) n++;
    char *out = malloc(strlen(s) + n * lt + 1), *w = out;
    if (!out) return NULL;
    for (const char *p = s, *q; *p; p = q + lf) {
        if (!(q = strstr(p, from))) {
            strcpy(w, p);
            return out;
        }
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, to, lt);
        w += lt;
    }
    *w = 0;
    return out;
}

char *orthros_mc_hellaswag_preprocess(const char *text)
{
    char *a = strip(text, strlen(text)), *b = a ? replace(a, " [title]", ". ") : NULL, *c = NULL, *d = NULL;
    if (b && (c = malloc(strlen(b) + 1))) {
        /* re.sub("\\[.*?\\]", "", text): each "[" to the nearest "]" after it, no line break between ('.' stops there). */
        char *w = c;
        for (const char *p = b; *p;) {
            const char *close = NULL;
            if (*p == '[')
                for (const char *q = p + 1; *q && *q != '\n'; q++)
                    if (*q == ']') {
                        close = q;
                        break;
                    }
            if (close) p = close + 1;
            else *w++ = *p++;
        }
        *w = 0;
        d = replace(c, "  ", " ");
    }
    free(a), free(b), free(c);
    return d;
}

/* Python's str.capitalize() on ASCII: the first character upper case, the rest lower case. */
static void capitalize(char *s)
{
    for (size_t i = 0; s[i]; i++) {
        char ch = s[i];
        if (i == 0 && ch >= 'a' && ch <= 'z') s[i] = (char)(ch - 32);
        else if (i > 0 && ch >= 'A' && ch <= 'Z') s[i] = (char)(ch + 32);
    }
}

int orthros_mc_chars(const char *s)
{
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) n += (*p & 0xC0) != 0x80;
    return n;
}

/* ---- reading ---- */

typedef struct {
    orthros_mc_set *set;
    const char *name;
    int cap;
} parse_ctx;

#define FAIL(...) orthros_error(ORTHROS_EFORMAT, __VA_ARGS__)

/* An array of non-empty strings (at least 2, at most ORTHROS_MC_MAX_CHOICES) as the item's choices. */
static int take_choices(orthros_mc_item *it, const cJSON *a, const char *key, const char *name, int line)
{
    const cJSON *e;
    if (!a) return FAIL("%s:%d: \"%s\" is missing", name, line, key);
    if (!cJSON_IsArray(a)) return FAIL("%s:%d: \"%s\" is not an array of strings", name, line, key);
    int n = cJSON_GetArraySize(a);
    if (n < 2 || n > ORTHROS_MC_MAX_CHOICES)
        return FAIL("%s:%d: \"%s\" has %d choices (2 to %d)", name, line, key, n, ORTHROS_MC_MAX_CHOICES);
    if (!(it->choices = calloc((size_t)n, sizeof *it->choices))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsString(e)) return FAIL("%s:%d: \"%s\"[%d] is not a string", name, line, key, it->n_choices);
        if (!(it->choices[it->n_choices] = strdup(e->valuestring))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        it->n_choices++;
    }
    return 0;
}

/* ARC and OpenBookQA: choices {text: [...], label: [...]}, the gold the index of answerKey among the labels. */
static int labelled_choices(orthros_mc_item *it, const cJSON *o, int lstrip_key, const char *name, int line)
{
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "choices");
    char *key = NULL;
    int rc;
    if (!ch) return FAIL("%s:%d: \"choices\" is missing", name, line);
    if (!cJSON_IsObject(ch)) return FAIL("%s:%d: \"choices\" is not an object {\"text\": [...], \"label\": [...]}", name, line);
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(ch, "label"), *e;
    if ((rc = take_choices(it, cJSON_GetObjectItemCaseSensitive(ch, "text"), "choices.text", name, line)) ||
        (rc = orthros_jsonl_string(&key, o, "answerKey", name, line, 0)))
        return rc;
    if (!cJSON_IsArray(labels) || cJSON_GetArraySize(labels) != it->n_choices) {
        free(key);
        return FAIL("%s:%d: \"choices.label\" is not an array of one label per choice", name, line);
    }
    const char *want = key;
    while (lstrip_key && py_space(*want)) want++; /* openbookqa: answerKey.lstrip() */
    int i = 0;
    it->gold = -1;
    cJSON_ArrayForEach(e, labels)
    {
        if (!cJSON_IsString(e)) {
            free(key);
            return FAIL("%s:%d: \"choices.label\"[%d] is not a string", name, line, i);
        }
        if (it->gold < 0 && !strcmp(e->valuestring, want)) it->gold = i;
        i++;
    }
    if (it->gold < 0) rc = FAIL("%s:%d: \"answerKey\" \"%.32s\" is not one of the labels", name, line, key);
    free(key);
    return rc;
}

/* A gold index: an integer, or a string of digits (HellaSwag's label, Winogrande's answer). A number is converted
 * only once it is known to be a whole number of fewer than seven digits (a conversion of one outside long's range
 * is undefined: the libFuzzer run of mc_jsonl found "gold": 1e308). */
static int gold_index(int *gold, const cJSON *o, const char *key, int n, int one_based, const char *name, int line)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    long g = -1;
    if (!v) return FAIL("%s:%d: \"%s\" is missing", name, line, key);
    if (cJSON_IsNumber(v) && fabs(v->valuedouble) < 1e6 && v->valuedouble == floor(v->valuedouble))
        g = (long)v->valuedouble;
    else if (cJSON_IsString(v) && v->valuestring[0] && strspn(v->valuestring, "0123456789") == strlen(v->valuestring) &&
             strlen(v->valuestring) < 6)
        g = strtol(v->valuestring, NULL, 10);
    else return FAIL("%s:%d: \"%s\" is not an index (an integer or a string of digits)", name, line, key);
    g -= one_based;
    if (g < 0 || g >= n) return FAIL("%s:%d: \"%s\" is outside the %d choices", name, line, key, n);
    *gold = (int)g;
    return 0;
}

static orthros_mc_layout detect(const cJSON *o)
{
#define HAS(k) (cJSON_GetObjectItemCaseSensitive(o, k) != NULL)
    if (HAS("sentence") && HAS("option1")) return ORTHROS_MC_WINOGRANDE;
    if (HAS("goal") && HAS("sol1")) return ORTHROS_MC_PIQA;
    if (HAS("endings") && HAS("ctx_a")) return ORTHROS_MC_HELLASWAG;
    if (HAS("question_stem")) return ORTHROS_MC_OPENBOOKQA;
    if (HAS("question") && HAS("answerKey")) return ORTHROS_MC_ARC;
    if (HAS("context") && HAS("choices") && HAS("gold")) return ORTHROS_MC_GENERIC;
#undef HAS
    return ORTHROS_MC_AUTO;
}

static int parse_item(orthros_mc_item *it, const cJSON *o, orthros_mc_layout lay, const char *name, int line)
{
    char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    int rc = 0;
    it->line = line;
    if ((rc = orthros_jsonl_id(&it->id, o, name, line))) return rc;
    switch (lay) {
    case ORTHROS_MC_ARC: /* doc_to_text "Question: {{question}}\nAnswer:" */
        if (!(rc = orthros_jsonl_string(&a, o, "question", name, line, 0)) &&
            !(rc = labelled_choices(it, o, 0, name, line)) && !(it->query = cat("Question: ", a, "\nAnswer:")))
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        break;
    case ORTHROS_MC_OPENBOOKQA: /* doc_to_text question_stem; answerKey.lstrip() */
        if (!(rc = orthros_jsonl_string(&it->query, o, "question_stem", name, line, 0)))
            rc = labelled_choices(it, o, 1, name, line);
        break;
    case ORTHROS_MC_PIQA: { /* "Question: {{goal}}\nAnswer:" -> [sol1, sol2] */
        cJSON *arr = cJSON_CreateArray();
        const cJSON *s1 = cJSON_GetObjectItemCaseSensitive(o, "sol1"), *s2 = cJSON_GetObjectItemCaseSensitive(o, "sol2");
        if (!(rc = orthros_jsonl_string(&a, o, "goal", name, line, 0)) && !(rc = orthros_jsonl_string(&b, o, "sol1", name, line, 0)) &&
            !(rc = orthros_jsonl_string(&c, o, "sol2", name, line, 0))) {
            cJSON_AddItemToArray(arr, cJSON_Duplicate(s1, 0));
            cJSON_AddItemToArray(arr, cJSON_Duplicate(s2, 0));
            if (!(rc = take_choices(it, arr, "sol1/sol2", name, line)) && !(rc = gold_index(&it->gold, o, "label", 2, 0, name, line)) &&
                !(it->query = cat("Question: ", a, "\nAnswer:")))
                rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        }
        cJSON_Delete(arr);
        break;
    }
    case ORTHROS_MC_HELLASWAG: { /* utils.process_docs: query = preprocess(activity_label + ": " + ctx_a + " " + ctx_b.capitalize()) */
        if ((rc = orthros_jsonl_string(&a, o, "activity_label", name, line, 1)) ||
            (rc = orthros_jsonl_string(&b, o, "ctx_a", name, line, 1)) || (rc = orthros_jsonl_string(&c, o, "ctx_b", name, line, 1)) ||
            (rc = take_choices(it, cJSON_GetObjectItemCaseSensitive(o, "endings"), "endings", name, line)) ||
            (rc = gold_index(&it->gold, o, "label", it->n_choices, 0, name, line)))
            break;
        capitalize(c);
        if (asprintf(&d, "%s: %s %s", a, b, c) < 0) {
            d = NULL;
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        if (!(it->query = orthros_mc_hellaswag_preprocess(d))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        for (int i = 0; !rc && i < it->n_choices; i++) {
            char *p = orthros_mc_hellaswag_preprocess(it->choices[i]);
            if (!p) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            free(it->choices[i]);
            it->choices[i] = p;
        }
        break;
    }
    case ORTHROS_MC_WINOGRANDE: { /* choices: sentence[:idx] + option; target: sentence[idx + 1:].strip(); answer "1"/"2" */
        if ((rc = orthros_jsonl_string(&a, o, "sentence", name, line, 0)) || (rc = orthros_jsonl_string(&b, o, "option1", name, line, 0)) ||
            (rc = orthros_jsonl_string(&c, o, "option2", name, line, 0)))
            break;
        const char *blank = strchr(a, '_');
        if (!blank) {
            rc = FAIL("%s:%d: \"sentence\" has no blank \"_\"", name, line);
            break;
        }
        it->multi_input = 1, it->n_choices = 2;
        size_t idx = (size_t)(blank - a);
        if (!(it->choices = calloc(2, sizeof *it->choices)) || !(it->target = strip(blank + 1, strlen(blank + 1))) ||
            asprintf(&it->choices[0], "%.*s%s", (int)idx, a, b) < 0 || asprintf(&it->choices[1], "%.*s%s", (int)idx, a, c) < 0) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        if (!it->target[0]) rc = FAIL("%s:%d: \"sentence\" has nothing after its blank to score", name, line);
        else rc = gold_index(&it->gold, o, "answer", 2, 1, name, line);
        break;
    }
    case ORTHROS_MC_GENERIC: /* {"context", "choices", "gold"}: the context as it is, " " + each choice */
        if (!(rc = orthros_jsonl_string(&it->query, o, "context", name, line, 1)) &&
            !(rc = take_choices(it, cJSON_GetObjectItemCaseSensitive(o, "choices"), "choices", name, line)))
            rc = gold_index(&it->gold, o, "gold", it->n_choices, 0, name, line);
        break;
    default: rc = FAIL("%s:%d: no layout", name, line);
    }
    free(a), free(b), free(c), free(d);
    /* lm-eval divides a choice's log-likelihood by its length for acc_norm: an empty choice is refused. */
    for (int i = 0; !rc && i < it->n_choices; i++)
        if (!it->choices[i] || !it->choices[i][0]) rc = FAIL("%s:%d: choice %d is empty", name, line, i);
    return rc;
}

static int take_line(void *ctx, const cJSON *o, int line)
{
    parse_ctx *p = ctx;
    orthros_mc_set *set = p->set;
    orthros_mc_layout got = detect(o);
    if (set->layout == ORTHROS_MC_AUTO) {
        if (got == ORTHROS_MC_AUTO)
            return FAIL("%s:%d: not a known layout (ARC: question, choices, answerKey; HellaSwag: activity_label, ctx_a, "
                        "ctx_b, endings, label; PIQA: goal, sol1, sol2, label; OpenBookQA: question_stem, choices, "
                        "answerKey; Winogrande: sentence, option1, option2, answer; generic: context, choices, gold)",
                        p->name, line);
        set->layout = got;
    } else if (got != set->layout) {
        return FAIL("%s:%d: not a line of the %s layout (it looks like %s)", p->name, line, layout_names[set->layout],
                    got == ORTHROS_MC_AUTO ? "none" : layout_names[got]);
    }
    if (set->n == p->cap) {
        int c2 = p->cap ? 2 * p->cap : 64;
        orthros_mc_item *q = realloc(set->items, (size_t)c2 * sizeof *q);
        if (!q) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        set->items = q, p->cap = c2;
    }
    orthros_mc_item *it = &set->items[set->n];
    memset(it, 0, sizeof *it);
    int rc = parse_item(it, o, set->layout, p->name, line);
    if (rc) item_free(it);
    else set->n++;
    return rc;
}

int orthros_mc_parse(orthros_mc_set *set, const char *text, size_t len, const char *name, orthros_mc_layout want)
{
    memset(set, 0, sizeof *set);
    set->layout = want;
    parse_ctx p = {set, name, 0};
    int rc = orthros_jsonl_each(text, len, name, take_line, &p);
    if (rc) orthros_mc_free(set);
    return rc;
}

int orthros_mc_load(orthros_mc_set *set, const char *path, orthros_mc_layout want)
{
    char *text = NULL;
    size_t len = 0;
    memset(set, 0, sizeof *set);
    int rc = orthros_read_file(&text, &len, path, ORTHROS_JSONL_MAX_BYTES, NULL);
    if (!rc) rc = orthros_mc_parse(set, text, len, path, want);
    free(text);
    return rc;
}

/* ---- requests ---- */

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* lm-eval removes the evaluated document from its few-shot pool by equality of the document. */
static int same_item(const orthros_mc_item *a, const orthros_mc_item *b)
{
    if (a == b) return 1;
    if (a->n_choices != b->n_choices || a->gold != b->gold || a->multi_input != b->multi_input || !same_str(a->query, b->query) ||
        !same_str(a->target, b->target))
        return 0;
    for (int i = 0; i < a->n_choices; i++)
        if (strcmp(a->choices[i], b->choices[i])) return 0;
    return 1;
}

/* An example as lm-eval's build_qa_turn writes it: question, the target delimiter, the answer, the few-shot
 * delimiter. Winogrande's question is its right choice and its answer the rest of the sentence. */
static int append_example(char **buf, const orthros_mc_item *ex)
{
    const char *q = ex->multi_input ? ex->choices[ex->gold] : ex->query, *a = ex->multi_input ? ex->target : ex->choices[ex->gold];
    char *s = NULL;
    if (asprintf(&s, "%s%s %s\n\n", *buf, q, a) < 0) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    free(*buf);
    *buf = s;
    return 0;
}

int orthros_mc_request(char **ctx, char **cont, const orthros_mc_set *pool, const orthros_mc_item *it, int shots, int b)
{
    char *fs = strdup("");
    int rc = fs ? 0 : orthros_error(ORTHROS_ENOMEM, "out of memory"), got = 0;
    *ctx = *cont = NULL;
    for (int i = 0; !rc && got < shots && i < pool->n; i++) {
        if (same_item(&pool->items[i], it)) continue;
        rc = append_example(&fs, &pool->items[i]);
        got++;
    }
    if (!rc && got < shots)
        rc = orthros_error(ORTHROS_EINVAL, "line %d: %d few-shot examples asked for, the pool has %d others", it->line, shots, got);
    if (!rc) {
        *ctx = cat(fs, it->multi_input ? it->choices[b] : it->query, NULL);
        *cont = cat(" ", it->multi_input ? it->target : it->choices[b], NULL);
        if (!*ctx || !*cont) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    free(fs);
    if (rc) {
        free(*ctx), free(*cont);
        *ctx = *cont = NULL;
    }
    return rc;
}

static int encode(int32_t **ids, int *n, const orthros_tokenizer *tok, const char *s, size_t len, int flags)
{
    return orthros_tokenizer_encode(tok, s, len, flags, ids, n);
}

int orthros_mc_encode(int32_t **ctx_ids, int *n_ctx, int32_t **cont_ids, int *n_cont, const orthros_tokenizer *tok,
                      const char *ctx, const char *cont)
{
    int rc;
    *ctx_ids = *cont_ids = NULL;
    *n_ctx = *n_cont = 0;
    if (!ctx[0]) {
        /* lm-eval: the continuation without special tokens after the prefix token (BOS, else EOS), unless it starts
         * with that token. */
        int32_t prefix = orthros_tokenizer_bos(tok) >= 0 ? orthros_tokenizer_bos(tok) : orthros_tokenizer_eos(tok);
        int32_t *c = NULL;
        int nc = 0;
        if ((rc = encode(&c, &nc, tok, cont, strlen(cont), 0))) return rc;
        if (prefix < 0 || nc < 1) {
            free(c);
            return orthros_error(ORTHROS_EINVAL, "an empty context needs a BOS or EOS token and a continuation");
        }
        int keep = prefix == c[0]; /* the first token of the continuation is the context */
        *ctx_ids = malloc(sizeof **ctx_ids);
        if (!*ctx_ids) {
            free(c);
            return orthros_error(ORTHROS_ENOMEM, "out of memory");
        }
        (*ctx_ids)[0] = prefix, *n_ctx = 1;
        if (keep) memmove(c, c + 1, (size_t)(nc - 1) * sizeof *c), nc--;
        *cont_ids = c, *n_cont = nc;
        return 0;
    }
    size_t lc = strlen(ctx), spaces = 0;
    while (spaces < lc && py_space(ctx[lc - 1 - spaces])) spaces++;
    char *whole = cat(ctx, cont, NULL); /* the context's trailing spaces now begin the continuation */
    if (!whole) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int32_t *w = NULL;
    int nw = 0;
    rc = encode(&w, &nw, tok, whole, strlen(whole), ORTHROS_TOK_ADD_SPECIAL);
    if (!rc) rc = encode(ctx_ids, n_ctx, tok, ctx, lc - spaces, ORTHROS_TOK_ADD_SPECIAL);
    free(whole);
    if (!rc) {
        int nc = nw > *n_ctx ? nw - *n_ctx : 0;
        if (!(*cont_ids = malloc((size_t)(nc ? nc : 1) * sizeof **cont_ids))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        else {
            memcpy(*cont_ids, w + *n_ctx, (size_t)nc * sizeof *w);
            *n_cont = nc;
        }
    }
    free(w);
    if (rc) {
        free(*ctx_ids), free(*cont_ids);
        *ctx_ids = *cont_ids = NULL;
    }
    return rc;
}
