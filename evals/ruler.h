/* RULER-style synthetic text tasks (Hsieh et al., "RULER: What's the Real Context Size of Your Long-Context
 * Language Models?", 2024), generated with the model's own tokenizer at any length:
 *   niah  needles "One of the special magic numbers for KEY is: VALUE." in a haystack of noise sentences ("The grass
 *         is green. The sky is blue. ..."), values words, 7-digit numbers or UUIDs; variants single (1 needle),
 *         multikey (4 needles of 4 keys, one asked), multivalue (4 values of one key, all asked), multiquery (4 keys,
 *         all asked); the (first) needle at the depth, in percent of the haystack, the others at random depths;
 *   vt    variable tracking: a chain "VAR ABCDE = 12345." then HOPS statements "VAR FGHIJ = VAR ABCDE." spread over
 *         the haystack; the question asks every variable holding the value;
 *   cwe   common-words extraction: a numbered list of words in which WORDS words appear far more often than the
 *         rest; the question asks for them.
 * The prompt (instructions, context, question, then the answer's first words) fills the context less the answer's
 * max-new tokens, to within one sentence (or list entry): the haystack's length is the largest that fits, found by
 * encoding. A sample is correct when every expected string is in the generated text (normalised contains-match, as
 * RULER's string_match_all); the partial score is the fraction found. Every sample is a pure function of (tokenizer,
 * spec, ctx, x, seed). */
#ifndef ORTHROS_RULER_H
#define ORTHROS_RULER_H

#include "tasks.h"
#include "text_eval.h"

#include <stdint.h>

typedef enum { ORTHROS_RULER_NIAH = 0, ORTHROS_RULER_VT = 1, ORTHROS_RULER_CWE = 2 } orthros_ruler_task;
typedef enum { ORTHROS_NEEDLE_WORDS = 0, ORTHROS_NEEDLE_NUMBERS = 1, ORTHROS_NEEDLE_UUIDS = 2 } orthros_needle_kind;

#define ORTHROS_RULER_MAX_ANSWERS 64
#define ORTHROS_RULER_ANSWER_MAX 48

typedef struct {
    orthros_ruler_task task;
    orthros_niah_variant variant; /* niah */
    orthros_needle_kind needle;   /* niah */
    orthros_chat chat;
    int max_new;                  /* tokens left for the answer: the prompt fills ctx - max_new */
} orthros_ruler_spec;

typedef struct {
    char *message;            /* the user message: instructions, context, question */
    char *answer_prefix;      /* the answer's first words (the prompt ends with them) */
    int32_t *ids;             /* [n_ids]: the prompt as the model sees it (chat wrapping included) */
    int n_ids;
    int n_answers;
    char answers[ORTHROS_RULER_MAX_ANSWERS][ORTHROS_RULER_ANSWER_MAX];
    int units;                /* haystack sentences (niah, vt) or list entries (cwe) */
    int n_needles;            /* niah: needles; vt: statements of the chain; cwe: 0 */
    int needle_units[ORTHROS_RULER_MAX_ANSWERS]; /* the haystack sentence each needle precedes (units: at the end) */
} orthros_ruler_sample;

const char *orthros_ruler_task_name(orthros_ruler_task t);   /* niah, vt, cwe */
const char *orthros_ruler_file_task(orthros_ruler_task t);   /* ruler_niah, ruler_vt, ruler_cwe */
int orthros_ruler_task_parse(const char *s, orthros_ruler_task *out);
const char *orthros_needle_name(orthros_needle_kind k);      /* words, numbers, uuids */
int orthros_needle_parse(const char *s, orthros_needle_kind *out);
/* The default --max-new of a task (RULER's tokens_to_generate: niah 128, vt 30, cwe 120). */
int orthros_ruler_default_max_new(orthros_ruler_task t);
/* The range of a task's second axis: niah depth 0..100, vt hops 1..ORTHROS_RULER_MAX_ANSWERS - 1, cwe words
 * 1..ORTHROS_RULER_MAX_ANSWERS. */
void orthros_ruler_x_range(orthros_ruler_task t, int *lo, int *hi);

/* Builds one sample. Refuses (ORTHROS_EINVAL, with a message) an x outside its range and a context too short for
 * the instructions, the needles, the question and max_new. */
int orthros_ruler_sample_make(orthros_ruler_sample *s, const orthros_tokenizer *tok, const orthros_ruler_spec *spec,
                              int ctx, int x, uint64_t seed);
void orthros_ruler_sample_free(orthros_ruler_sample *s);
/* Expected answers found in the generated text. */
int orthros_ruler_score(const orthros_ruler_sample *s, const char *generated);

#endif
