/* RULER-style text samples: building (fitted to the context with the tokenizer) and scoring (ruler.h). */
#define _GNU_SOURCE
#include "ruler.h"
#include "words.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const task_names[] = {"niah", "vt", "cwe"};
static const char *const file_tasks[] = {"ruler_niah", "ruler_vt", "ruler_cwe"};
static const char *const needle_names[] = {"words", "numbers", "uuids"};

const char *orthros_ruler_task_name(orthros_ruler_task t) { return task_names[t]; }
const char *orthros_ruler_file_task(orthros_ruler_task t) { return file_tasks[t]; }
const char *orthros_needle_name(orthros_needle_kind k) { return needle_names[k]; }

int orthros_ruler_task_parse(const char *s, orthros_ruler_task *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, task_names[i])) {
            *out = (orthros_ruler_task)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown RULER task \"%s\" (niah, vt, cwe)", s);
}

int orthros_needle_parse(const char *s, orthros_needle_kind *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, needle_names[i])) {
            *out = (orthros_needle_kind)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown needle \"%s\" (words, numbers, uuids)", s);
}

int orthros_ruler_default_max_new(orthros_ruler_task t) { return t == ORTHROS_RULER_NIAH ? 128 : t == ORTHROS_RULER_VT ? 30 : 120; }

void orthros_ruler_x_range(orthros_ruler_task t, int *lo, int *hi)
{
    *lo = t == ORTHROS_RULER_NIAH ? 0 : 1;
    *hi = t == ORTHROS_RULER_NIAH ? 100 : t == ORTHROS_RULER_VT ? ORTHROS_RULER_MAX_ANSWERS - 1 : ORTHROS_RULER_MAX_ANSWERS;
}

/* ---- a growable string ---- */

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->oom) return;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p, b->cap = cap;
    }
}

/* ---- the tasks' words ---- */

/* RULER's noise haystack: these five sentences, repeated in order. */
static const char *const noise[] = {"The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
                                    "There and back again."};

/* The words of the common-words list and of word values: the adjectives, then the nouns. */
static int n_words(void) { return orthros_words_n_adjectives + orthros_words_n_nouns; }
static const char *word(int i)
{
    return i < orthros_words_n_adjectives ? orthros_words_adjectives[i] : orthros_words_nouns[i - orthros_words_n_adjectives];
}

/* An "adjective-noun" name, distinct from the n given (RULER's keys). */
static void adj_noun(orthros_rng *r, char *out, char (*taken)[ORTHROS_RULER_ANSWER_MAX], int n)
{
    for (;;) {
        snprintf(out, ORTHROS_RULER_ANSWER_MAX, "%s-%s", orthros_words_adjectives[orthros_rng_below(r, orthros_words_n_adjectives)],
                 orthros_words_nouns[orthros_rng_below(r, orthros_words_n_nouns)]);
        int clash = 0;
        for (int i = 0; i < n; i++) clash |= !strcmp(out, taken[i]);
        if (!clash) return;
    }
}

/* A needle's value, distinct from the n taken: a word pair, a 7-digit number or a version-4 UUID. */
static void needle_value(orthros_rng *r, orthros_needle_kind k, char *out, char (*taken)[ORTHROS_RULER_ANSWER_MAX], int n)
{
    for (;;) {
        if (k == ORTHROS_NEEDLE_WORDS) {
            adj_noun(r, out, taken, n);
            return;
        }
        if (k == ORTHROS_NEEDLE_NUMBERS) {
            snprintf(out, ORTHROS_RULER_ANSWER_MAX, "%d", 1000000 + orthros_rng_below(r, 9000000));
        } else {
            uint64_t a = orthros_rng_next(r), b = orthros_rng_next(r);
            snprintf(out, ORTHROS_RULER_ANSWER_MAX, "%08x-%04x-4%03x-%x%03x-%012llx", (unsigned)(a >> 32),
                     (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, 8 + (unsigned)(b >> 62), (unsigned)(b >> 48) & 0xfff,
                     (unsigned long long)(b & 0xffffffffffffull));
        }
        int clash = 0;
        for (int i = 0; i < n; i++) clash |= !strcmp(out, taken[i]);
        if (!clash) return;
    }
}

/* ---- building ---- */

/* What a sample holds before its haystack's length is known: every random choice. */
typedef struct {
    const orthros_ruler_spec *spec;
    int x;
    uint64_t seed;
    /* niah */
    int n_keys, n_needles;
    char keys[ORTHROS_NIAH_NEEDLES][ORTHROS_RULER_ANSWER_MAX];
    char values[ORTHROS_NIAH_NEEDLES][ORTHROS_RULER_ANSWER_MAX];
    int needle_key[ORTHROS_NIAH_NEEDLES];
    double frac[ORTHROS_RULER_MAX_ANSWERS]; /* where each needle (or chain statement) goes, in [0, 1] */
    /* vt */
    char vars[ORTHROS_RULER_MAX_ANSWERS][8];
    int vt_value;
    /* cwe: a permutation of the words (the first x are the common ones) */
    int order[1024];
} plan;

static const char *type_word(orthros_needle_kind k) { return needle_names[k]; }

static void plan_make(plan *p, const orthros_ruler_spec *spec, int x, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->spec = spec, p->x = x, p->seed = seed;
    orthros_rng r = {seed};
    if (spec->task == ORTHROS_RULER_NIAH) {
        orthros_niah_variant v = spec->variant;
        p->n_needles = v == ORTHROS_NIAH_SINGLE ? 1 : ORTHROS_NIAH_NEEDLES;
        p->n_keys = v == ORTHROS_NIAH_SINGLE || v == ORTHROS_NIAH_MULTIVALUE ? 1 : ORTHROS_NIAH_NEEDLES;
        for (int i = 0; i < p->n_keys; i++) adj_noun(&r, p->keys[i], p->keys, i);
        for (int i = 0; i < p->n_needles; i++) {
            needle_value(&r, spec->needle, p->values[i], p->values, i);
            p->needle_key[i] = p->n_keys == 1 ? 0 : i;
            p->frac[i] = i ? (double)(orthros_rng_next(&r) >> 11) / 9007199254740992.0 : x / 100.0;
        }
    } else if (spec->task == ORTHROS_RULER_VT) {
        /* x hops: x + 1 variables of 5 capital letters, each statement after the one before it. */
        for (int i = 0; i <= x; i++) {
            for (;;) {
                for (int k = 0; k < 5; k++) p->vars[i][k] = (char)('A' + orthros_rng_below(&r, 26));
                p->vars[i][5] = 0;
                int clash = 0;
                for (int j = 0; j < i; j++) clash |= !strcmp(p->vars[i], p->vars[j]);
                if (!clash) break;
            }
        }
        p->vt_value = 10000 + orthros_rng_below(&r, 90000);
        double f[ORTHROS_RULER_MAX_ANSWERS];
        for (int i = 0; i <= x; i++) f[i] = (double)(orthros_rng_next(&r) >> 11) / 9007199254740992.0;
        for (int i = 1; i <= x; i++) /* sorted: the chain reads in order */
            for (int j = i; j > 0 && f[j] < f[j - 1]; j--) {
                double t = f[j];
                f[j] = f[j - 1], f[j - 1] = t;
            }
        memcpy(p->frac, f, sizeof f);
        p->n_needles = x + 1;
    } else {
        int scratch[1024];
        orthros_rng_distinct(&r, p->order, n_words(), n_words(), scratch);
    }
}

/* The haystack of `units` noise sentences with the plan's needles (niah) or statements (vt) before the sentences
 * their depth names; needle_units[] receives where each went. */
static void haystack(sbuf *b, const plan *p, int units, int *needle_units)
{
    const orthros_ruler_spec *sp = p->spec;
    const int nn = p->n_needles;
    int at[ORTHROS_RULER_MAX_ANSWERS];
    for (int i = 0; i < nn; i++) {
        at[i] = (int)(p->frac[i] * units + 0.5);
        at[i] = at[i] > units ? units : at[i];
        if (needle_units) needle_units[i] = at[i];
    }
    for (int u = 0, first = 1; u <= units; u++) {
        for (int i = 0; i < nn; i++) {
            if (at[i] != u) continue;
            sb_printf(b, "%s", first ? "" : " ");
            if (sp->task == ORTHROS_RULER_NIAH)
                sb_printf(b, "One of the special magic %s for %s is: %s.", type_word(sp->needle), p->keys[p->needle_key[i]],
                          p->values[i]);
            else if (i == 0) sb_printf(b, "VAR %s = %d.", p->vars[0], p->vt_value);
            else sb_printf(b, "VAR %s = VAR %s.", p->vars[i], p->vars[i - 1]);
            first = 0;
        }
        if (u < units) sb_printf(b, "%s%s", first ? "" : " ", noise[u % 5]);
        first = 0;
    }
}

/* The common-words list of `units` entries: x common words F times each, the others u times each (u the least
 * that the word list allows, F at least u + 2 and about 30% of the list), shuffled. */
static int cwe_list(sbuf *b, const plan *p, int units)
{
    int x = p->x, pool = n_words() - x, u = 1, F;
    if (x < 1 || x > units / 3) return 0; /* (x >= 1: orthros_ruler_x_range) */
    for (;;) {
        F = (3 * units / 10) / x;
        F = F < u + 2 ? u + 2 : F;
        int rest = units - F * x;
        if (rest < 0) F = units / x, rest = units - F * x;
        if ((rest + u - 1) / u <= pool) break;
        u++;
    }
    int *entry = malloc((size_t)units * sizeof *entry);
    if (!entry) {
        b->oom = 1;
        return 0;
    }
    int n = 0;
    for (int i = 0; i < x; i++)
        for (int k = 0; k < F; k++) entry[n++] = p->order[i];
    for (int i = 0; n < units; i++)
        for (int k = 0; k < u && n < units; k++) entry[n++] = p->order[x + i];
    orthros_rng r = {p->seed ^ (uint64_t)units};
    for (int i = units - 1; i > 0; i--) {
        int j = orthros_rng_below(&r, i + 1), t = entry[i];
        entry[i] = entry[j], entry[j] = t;
    }
    for (int i = 0; i < units; i++) sb_printf(b, "%s%d. %s", i ? " " : "", i + 1, word(entry[i]));
    free(entry);
    return 1;
}

/* The message and answer prefix of the plan at `units`. */
static int render(sbuf *msg, sbuf *prefix, const plan *p, int units, int *needle_units)
{
    const orthros_ruler_spec *sp = p->spec;
    if (sp->task == ORTHROS_RULER_NIAH) {
        const char *t = type_word(sp->needle);
        char query[4 * ORTHROS_RULER_ANSWER_MAX + 16];
        if (p->spec->variant == ORTHROS_NIAH_MULTIQUERY)
            snprintf(query, sizeof query, "%s, %s, %s and %s", p->keys[0], p->keys[1], p->keys[2], p->keys[3]);
        else snprintf(query, sizeof query, "%s", p->keys[0]);
        sb_printf(msg, "Some special magic %s are hidden within the following text. Make sure to memorize it. I will "
                       "quiz you about the %s afterwards.\n", t, t);
        haystack(msg, p, units, needle_units);
        sb_printf(msg, "\nWhat are all the special magic %s for %s mentioned in the provided text?", t, query);
        sb_printf(prefix, "The special magic %s for %s mentioned in the provided text are", t, query);
    } else if (sp->task == ORTHROS_RULER_VT) {
        sb_printf(msg, "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n");
        haystack(msg, p, units, needle_units);
        sb_printf(msg, "\nQuestion: Find all variables that are assigned the value %d in the text above.", p->vt_value);
        sb_printf(prefix, "Answer: According to the chain(s) of variable assignment in the text above, %d variables are "
                          "assigned the value %d, they are:", p->x + 1, p->vt_value);
    } else {
        sb_printf(msg, "Below is a numbered list of words. In these words, some appear more often than others. "
                       "Memorize the ones that appear most often.\n");
        if (!cwe_list(msg, p, units)) return 0;
        sb_printf(msg, "\nQuestion: What are the %d most common words in the above list?", p->x);
        sb_printf(prefix, "Answer: The top %d words that appear most often in the list are:", p->x);
    }
    return !msg->oom && !prefix->oom;
}

/* The prompt at `units`: its tokens into *ids (NULL when units cannot hold the task, e.g. a list shorter than its
 * common words). */
static int encode_at(int32_t **ids, int *n, char **message, char **prefix, const orthros_tokenizer *tok, const plan *p,
                     int units, int *needle_units)
{
    sbuf msg = {0}, pre = {0};
    int rc = 0;
    *ids = NULL, *n = 0;
    if (!render(&msg, &pre, p, units, needle_units)) {
        rc = msg.oom || pre.oom ? orthros_error(ORTHROS_ENOMEM, "out of memory building a prompt") : 0;
    } else {
        rc = orthros_text_prompt(ids, n, tok, p->spec->chat, msg.s, msg.len, pre.s);
    }
    if (!rc && message) *message = msg.s, msg.s = NULL;
    if (!rc && prefix) *prefix = pre.s, pre.s = NULL;
    free(msg.s);
    free(pre.s);
    return rc;
}

int orthros_ruler_sample_make(orthros_ruler_sample *s, const orthros_tokenizer *tok, const orthros_ruler_spec *spec,
                              int ctx, int x, uint64_t seed)
{
    int lo_x, hi_x, rc;
    memset(s, 0, sizeof *s);
    orthros_ruler_x_range(spec->task, &lo_x, &hi_x);
    if (x < lo_x || x > hi_x)
        return orthros_error(ORTHROS_EINVAL, "%s %d is outside %d..%d", spec->task == ORTHROS_RULER_NIAH ? "depth"
                             : spec->task == ORTHROS_RULER_VT ? "hops" : "words", x, lo_x, hi_x);
    if (spec->max_new < 1 || ctx <= spec->max_new)
        return orthros_error(ORTHROS_EINVAL, "context %d leaves no room for a prompt before %d answer tokens", ctx,
                             spec->max_new);
    plan *p = malloc(sizeof *p);
    if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    plan_make(p, spec, x, seed);
    int budget = ctx - spec->max_new, lo = spec->task == ORTHROS_RULER_CWE ? 3 * x : 0, hi = budget, n;
    int32_t *ids = NULL;
    /* The largest haystack whose prompt fits: every unit is at least one token, so at most `budget`. */
    if ((rc = encode_at(&ids, &n, NULL, NULL, tok, p, lo, NULL))) goto done;
    free(ids);
    if (n > budget) {
        rc = orthros_error(ORTHROS_EINVAL, "context %d is too short for RULER %s: its instructions, %s and question take "
                           "%d tokens, and %d more are left for the answer", ctx, task_names[spec->task],
                           spec->task == ORTHROS_RULER_CWE ? "the shortest list" : "needles", n, spec->max_new);
        goto done;
    }
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if ((rc = encode_at(&ids, &n, NULL, NULL, tok, p, mid, NULL))) goto done;
        free(ids);
        if (n <= budget) lo = mid;
        else hi = mid - 1;
    }
    if ((rc = encode_at(&s->ids, &s->n_ids, &s->message, &s->answer_prefix, tok, p, lo, s->needle_units))) goto done;
    s->units = lo;
    s->n_needles = spec->task == ORTHROS_RULER_CWE ? 0 : p->n_needles;
    if (spec->task == ORTHROS_RULER_NIAH) {
        /* single and multikey ask the first needle's value; multivalue all four; multiquery each key's value. */
        s->n_answers = spec->variant == ORTHROS_NIAH_SINGLE || spec->variant == ORTHROS_NIAH_MULTIKEY ? 1 : p->n_needles;
        for (int i = 0; i < s->n_answers; i++) memcpy(s->answers[i], p->values[i], ORTHROS_RULER_ANSWER_MAX);
    } else if (spec->task == ORTHROS_RULER_VT) {
        s->n_answers = x + 1;
        for (int i = 0; i <= x; i++) snprintf(s->answers[i], ORTHROS_RULER_ANSWER_MAX, "%s", p->vars[i]);
    } else {
        s->n_answers = x;
        for (int i = 0; i < x; i++) snprintf(s->answers[i], ORTHROS_RULER_ANSWER_MAX, "%s", word(p->order[i]));
    }
done:
    free(p);
    if (rc) orthros_ruler_sample_free(s);
    return rc;
}

void orthros_ruler_sample_free(orthros_ruler_sample *s)
{
    free(s->message);
    free(s->answer_prefix);
    free(s->ids);
    s->message = s->answer_prefix = NULL;
    s->ids = NULL;
}

int orthros_ruler_score(const orthros_ruler_sample *s, const char *generated)
{
    int k = 0;
    for (int i = 0; i < s->n_answers; i++) k += orthros_text_contains(generated, s->answers[i]);
    return k;
}
