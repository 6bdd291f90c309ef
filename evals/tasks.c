/* NIAH and MQAR samples on an analytic checkpoint: building, running, scoring. */
#define _GNU_SOURCE
#include "tasks.h"

#include <stdlib.h>
#include <string.h>

static const char *const variant_names[] = {"single", "multikey", "multivalue", "multiquery"};

const char *orthros_niah_variant_name(orthros_niah_variant v) { return variant_names[v]; }

int orthros_niah_variant_parse(const char *s, orthros_niah_variant *out)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, variant_names[i])) {
            *out = (orthros_niah_variant)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown NIAH variant \"%s\" (single, multikey, multivalue, multiquery)", s);
}

static int n_needles(orthros_niah_variant v) { return v == ORTHROS_NIAH_SINGLE ? 1 : ORTHROS_NIAH_NEEDLES; }
int orthros_niah_min_ctx(orthros_niah_variant v) { return n_needles(v) + 3; }
int orthros_niah_min_keys(orthros_niah_variant v)
{
    return v == ORTHROS_NIAH_MULTIKEY || v == ORTHROS_NIAH_MULTIQUERY ? ORTHROS_NIAH_NEEDLES : 1;
}
int orthros_mqar_min_ctx(int pairs) { return pairs + 3; }

uint64_t orthros_rng_next(orthros_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) (the modulo bias of a 64-bit draw is below 2^-40 for the sizes used here). */
int orthros_rng_below(orthros_rng *r, int n) { return (int)(orthros_rng_next(r) % (uint64_t)n); }

/* k distinct values of [0, n) in random order (partial Fisher-Yates over a scratch permutation). */
void orthros_rng_distinct(orthros_rng *r, int *out, int k, int n, int *scratch)
{
    for (int i = 0; i < n; i++) scratch[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + orthros_rng_below(r, n - i), t = scratch[i];
        scratch[i] = scratch[j];
        scratch[j] = t;
        out[i] = scratch[i];
    }
}

uint64_t orthros_eval_sample_seed(uint64_t seed, const char *task, int a, int b, int index)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the task name, then splitmix over the coordinates */
    for (const char *p = task; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    orthros_rng r = {seed ^ h};
    r.s ^= orthros_rng_next(&r) + (uint64_t)(uint32_t)a;
    r.s ^= orthros_rng_next(&r) + (uint64_t)(uint32_t)b;
    r.s ^= orthros_rng_next(&r) + (uint64_t)(uint32_t)index;
    return orthros_rng_next(&r);
}

static int sample_alloc(orthros_eval_sample *s, int ctx)
{
    memset(s, 0, sizeof *s);
    s->prompt = malloc(sizeof *s->prompt * (size_t)ctx);
    if (!s->prompt) return orthros_error(ORTHROS_ENOMEM, "out of memory for a prompt of %d tokens", ctx);
    s->n_prompt = ctx;
    return 0;
}

/* BOS, then filler, then QUERY and the first key; needles are placed by the caller. */
static void fill_haystack(orthros_eval_sample *s, const orthros_analytic_layout *l, orthros_rng *r, int32_t first_key)
{
    int n = s->n_prompt;
    s->prompt[0] = l->bos;
    for (int i = 1; i < n - 2; i++) s->prompt[i] = orthros_analytic_filler(l, orthros_rng_below(r, l->fillers));
    s->prompt[n - 2] = l->query;
    s->prompt[n - 1] = first_key;
}

int orthros_niah_sample(orthros_eval_sample *s, const orthros_analytic_layout *l, orthros_niah_variant v, int ctx, int depth,
                        uint64_t seed)
{
    memset(s, 0, sizeof *s);
    if (depth < 0 || depth > 100)
        return orthros_error(ORTHROS_EINVAL, "depth %d is outside 0..100 (percent of the context)", depth);
    if (ctx < orthros_niah_min_ctx(v))
        return orthros_error(ORTHROS_EINVAL,
                             "context %d is shorter than the %d tokens that %s NIAH needs (BOS, %d needle%s, QUERY, key)",
                             ctx, orthros_niah_min_ctx(v), orthros_niah_variant_name(v), n_needles(v),
                             n_needles(v) > 1 ? "s" : "");
    if (l->keys < orthros_niah_min_keys(v))
        return orthros_error(ORTHROS_EINVAL, "%s NIAH needs %d keys; the model has %d", orthros_niah_variant_name(v),
                             orthros_niah_min_keys(v), l->keys);
    int rc = sample_alloc(s, ctx);
    if (rc) return rc;
    orthros_rng r = {seed};
    int nn = n_needles(v), keys[ORTHROS_NIAH_NEEDLES], vals[ORTHROS_NIAH_NEEDLES];
    int scratch[ORTHROS_ANALYTIC_MAX_KEYS > ORTHROS_ANALYTIC_MAX_VALUES ? ORTHROS_ANALYTIC_MAX_KEYS : ORTHROS_ANALYTIC_MAX_VALUES];
    if (v == ORTHROS_NIAH_MULTIVALUE) {
        /* One key, one value of each class (so that the construction's tie-break orders them), in random
         * needle order. */
        int key = orthros_rng_below(&r, l->keys), order[ORTHROS_NIAH_NEEDLES];
        orthros_rng_distinct(&r, order, nn, nn, scratch);
        for (int i = 0; i < nn; i++) {
            keys[i] = key;
            vals[i] = order[i] + l->classes * orthros_rng_below(&r, l->values / l->classes);
        }
    } else {
        orthros_rng_distinct(&r, keys, nn, l->keys, scratch);
        for (int i = 0; i < nn; i++) vals[i] = orthros_rng_below(&r, l->values);
    }
    fill_haystack(s, l, &r, orthros_analytic_key(l, keys[0]));
    /* Haystack positions 1..H; the first needle at the depth, the others at distinct random positions. */
    int H = ctx - 3;
    s->needle_pos[0] = 1 + (int)((int64_t)depth * (H - 1) / 100);
    for (int i = 1; i < nn; i++) {
        int p, clash;
        do {
            p = 1 + orthros_rng_below(&r, H);
            clash = 0;
            for (int j = 0; j < i; j++) clash |= s->needle_pos[j] == p;
        } while (clash);
        s->needle_pos[i] = p;
    }
    for (int i = 0; i < nn; i++) s->prompt[s->needle_pos[i]] = orthros_analytic_pair(l, keys[i], vals[i]);
    if (v == ORTHROS_NIAH_SINGLE || v == ORTHROS_NIAH_MULTIKEY) {
        s->n_answers = 1;
        s->expected[0] = orthros_analytic_value(l, vals[0]);
    } else if (v == ORTHROS_NIAH_MULTIVALUE) {
        /* Expected in class order, the order the construction answers in; scored as a set anyway. */
        s->n_answers = nn;
        s->feed_back = 1;
        s->unordered = 1;
        for (int i = 0; i < nn; i++) {
            s->expected[orthros_analytic_class(vals[i])] = orthros_analytic_value(l, vals[i]);
            s->queries[i] = orthros_analytic_key(l, keys[0]);
        }
    } else {
        /* Every needle is asked: the one at the depth first, the others in needle order. */
        s->n_answers = nn;
        for (int i = 0; i < nn; i++) {
            s->queries[i] = orthros_analytic_key(l, keys[i]);
            s->expected[i] = orthros_analytic_value(l, vals[i]);
        }
    }
    return 0;
}

int orthros_mqar_sample(orthros_eval_sample *s, const orthros_analytic_layout *l, int pairs, int ctx, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    const int n_keys = l->keys;
    if (pairs < 1) return orthros_error(ORTHROS_EINVAL, "pairs must be at least 1 (got %d)", pairs);
    if (n_keys < 1 || pairs > n_keys)
        return orthros_error(ORTHROS_EINVAL, "%d pairs asked, but the model has only %d keys (make-model --keys)", pairs,
                             n_keys);
    if (ctx < orthros_mqar_min_ctx(pairs))
        return orthros_error(ORTHROS_EINVAL, "context %d is shorter than the %d tokens that %d pairs need (BOS, pairs, "
                             "QUERY, key)", ctx, orthros_mqar_min_ctx(pairs), pairs);
    int rc = sample_alloc(s, ctx);
    if (rc) return rc;
    orthros_rng r = {seed};
    int keys[ORTHROS_ANALYTIC_MAX_KEYS], vals[ORTHROS_ANALYTIC_MAX_KEYS], ask[ORTHROS_ANALYTIC_MAX_KEYS], scratch[ORTHROS_ANALYTIC_MAX_KEYS];
    orthros_rng_distinct(&r, keys, pairs, n_keys, scratch);
    for (int i = 0; i < pairs; i++) vals[i] = orthros_rng_below(&r, l->values);
    orthros_rng_distinct(&r, ask, pairs, pairs, scratch);
    fill_haystack(s, l, &r, orthros_analytic_key(l, keys[ask[0]]));
    /* As Zoology lays it out: the pairs first, then the rest of the context, then the questions. */
    for (int i = 0; i < pairs; i++) s->prompt[1 + i] = orthros_analytic_pair(l, keys[i], vals[i]);
    s->n_answers = pairs;
    for (int i = 0; i < pairs; i++) {
        s->queries[i] = orthros_analytic_key(l, keys[ask[i]]);
        s->expected[i] = orthros_analytic_value(l, vals[ask[i]]);
    }
    return 0;
}

void orthros_eval_sample_free(orthros_eval_sample *s)
{
    free(s->prompt);
    s->prompt = NULL;
}

int orthros_eval_decode_tokens(const orthros_eval_sample *s) { return (s->n_answers - 1) * (1 + s->feed_back); }

int orthros_eval_run(orthros_session *sess, const orthros_eval_sample *s, int32_t *generated)
{
    int rc;
    int32_t next;
    if ((rc = orthros_session_reset(sess))) return rc;
    if ((rc = orthros_prefill(sess, 0, s->prompt, s->n_prompt, NULL, &next))) return rc;
    generated[0] = next;
    for (int i = 1; i < s->n_answers; i++) {
        if (s->feed_back && (rc = orthros_decode(sess, &generated[i - 1], &next, NULL))) return rc;
        if ((rc = orthros_decode(sess, &s->queries[i], &next, NULL))) return rc;
        generated[i] = next;
    }
    return 0;
}

int orthros_eval_score(const orthros_eval_sample *s, const int32_t *generated)
{
    int n = 0;
    if (!s->unordered) {
        for (int i = 0; i < s->n_answers; i++) n += generated[i] == s->expected[i];
        return n;
    }
    char used[ORTHROS_EVAL_MAX_ANSWERS] = {0};
    for (int i = 0; i < s->n_answers; i++)
        for (int j = 0; j < s->n_answers; j++)
            if (!used[j] && generated[j] == s->expected[i]) {
                used[j] = 1;
                n++;
                break;
            }
    return n;
}
