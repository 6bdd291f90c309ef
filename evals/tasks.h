/* Recall tasks on an analytic checkpoint (issue 5): token-level NIAH (RULER's single, multi-key, multi-value
 * and multi-query needles in a filler haystack, at a depth given in percent of the context) and Zoology-style
 * multi-query associative recall (MQAR). A sample is a prompt ending in the first question plus the
 * decode-phase inputs that ask the remaining ones; the answers are generated greedily and scored by exact
 * match. Every sample is a pure function of (layout, task, size, seed). */
#ifndef ORTHROS_TASKS_H
#define ORTHROS_TASKS_H

#include "analytic.h"
#include "orthros.h"

#include <stdint.h>

#define ORTHROS_EVAL_MAX_ANSWERS ORTHROS_ANALYTIC_MAX_KEYS
/* Needles of the multi-needle NIAH variants (RULER uses 4). */
#define ORTHROS_NIAH_NEEDLES 4

typedef enum {
    ORTHROS_NIAH_SINGLE = 0,
    ORTHROS_NIAH_MULTIKEY = 1,
    ORTHROS_NIAH_MULTIVALUE = 2,
    ORTHROS_NIAH_MULTIQUERY = 3,
} orthros_niah_variant;

typedef struct {
    int32_t *prompt;   /* [n_prompt]: BOS, haystack with needles, QUERY, first key */
    int n_prompt;
    int n_answers;
    int32_t queries[ORTHROS_EVAL_MAX_ANSWERS];  /* queries[i], i >= 1: the decode input asking answer i */
    int32_t expected[ORTHROS_EVAL_MAX_ANSWERS];
    int feed_back;     /* multi-value: each answer is fed back before the next question */
    int unordered;     /* multi-value: scored as a set */
    int needle_pos[ORTHROS_NIAH_NEEDLES]; /* prompt positions of the NIAH needles (the first is at the depth) */
} orthros_eval_sample;

/* The samples' generator: splitmix64 (a pure function of the seed). */
typedef struct {
    uint64_t s;
} orthros_rng;
uint64_t orthros_rng_next(orthros_rng *r);
/* Uniform in [0, n), n >= 1. */
int orthros_rng_below(orthros_rng *r, int n);
/* k distinct values of [0, n) in random order into out[k] (scratch[n]: a partial Fisher-Yates shuffle). */
void orthros_rng_distinct(orthros_rng *r, int *out, int k, int n, int *scratch);

const char *orthros_niah_variant_name(orthros_niah_variant v);
int orthros_niah_variant_parse(const char *s, orthros_niah_variant *out);
/* Shortest context a NIAH variant fits in (needles + BOS + QUERY + key), and the fewest keys it needs. */
int orthros_niah_min_ctx(orthros_niah_variant v);
int orthros_niah_min_keys(orthros_niah_variant v);
int orthros_mqar_min_ctx(int pairs);

/* Builds one sample; refuses (ORTHROS_EINVAL, with a message) a depth outside 0..100, a context too short
 * for the needles and the question, or more pairs than the model has keys. */
int orthros_niah_sample(orthros_eval_sample *s, const orthros_analytic_layout *l, orthros_niah_variant v, int ctx, int depth,
                        uint64_t seed);
int orthros_mqar_sample(orthros_eval_sample *s, const orthros_analytic_layout *l, int pairs, int ctx, uint64_t seed);
void orthros_eval_sample_free(orthros_eval_sample *s);
/* Decode-phase tokens a sample feeds after its prompt (the session needs n_prompt + this). */
int orthros_eval_decode_tokens(const orthros_eval_sample *s);
/* Runs a sample on a batch-1 session (reset first): the prompt is prefilled, the first answer is its greedy
 * next token, and each further question is a decode step. generated[n_answers] receives the answers. */
int orthros_eval_run(orthros_session *sess, const orthros_eval_sample *s, int32_t *generated);
/* Answers that match (in order, or as a multiset when unordered); the sample is correct when all do. */
int orthros_eval_score(const orthros_eval_sample *s, const int32_t *generated);

/* The seed of sample `index` of a cell, from the run's seed and the cell's coordinates. */
uint64_t orthros_eval_sample_seed(uint64_t seed, const char *task, int a, int b, int index);

#endif
