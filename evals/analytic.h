/* The analytic recall checkpoint (issue 5): a real Llama-format model built by construction, not trained,
 * that answers key -> value recall queries under full attention at every length up to `max_context`, and
 * answers a fixed default token wherever its attention mass on the right needle is below one half.
 * docs/evals.md derives the construction and its margins; analytic.c holds the numbers.
 *
 * Vocabulary: BOS, NONE (the default answer), QUERY (marks the question), F filler tokens, K key tokens
 * (asked as questions), V value tokens (the answers), and K x V fact tokens pair(k, v) (the needles: one token
 * says "key k has value v", see analytic.c for why a needle is one token). */
#ifndef ORTHROS_ANALYTIC_H
#define ORTHROS_ANALYTIC_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* Largest key / value / filler counts the fixed layout holds. */
#define ORTHROS_ANALYTIC_MAX_KEYS 64
#define ORTHROS_ANALYTIC_MAX_VALUES 32
#define ORTHROS_ANALYTIC_MAX_FILLERS 256
/* Value classes: the tie-break among values of one key (multi-value NIAH asks at most this many). */
#define ORTHROS_ANALYTIC_CLASSES 4

typedef struct {
    int keys, values, fillers;
    int64_t max_context;
} orthros_analytic_params;

/* Token ids of a built model (also written to config.json as `analytic_recall`, read back by the evals). */
typedef struct {
    int keys, values, fillers, classes;
    int bos, none, query, filler0, key0, value0, pair0, vocab;
    int64_t max_context;
} orthros_analytic_layout;

/* The construction's constants and the margins they give (all scores in softmax logit units). */
typedef struct {
    double S;          /* retrieval score of the matching fact over a zero-score token */
    double delta;      /* score step between value classes */
    double H;          /* exclusion penalty per already-answered value (before averaging) */
    double E;          /* exclusion head: score of an answered value token over any other token */
    double gap_filler; /* S - ln(max_context): margin over a haystack of max_context zero-score tokens */
    double gap_keys;   /* S - (R-1) delta - ln(K): margin over the other K - 1 facts */
    double gap_excl;   /* H / (R-1) - (R-1) delta - ln(R): margin of the exclusion over the class bonus */
    double gap_exc_head; /* E - ln(max_context) */
    double rope_max_angle; /* largest rotation (radians) of any used q/k dimension across max_context */
    double rope_theta, rope_factor;
} orthros_analytic_margins;

void orthros_analytic_params_default(orthros_analytic_params *p);
/* Checks p (keys 1..64, values R..32 and a multiple of R, fillers 1..256, max_context 16..2^30). */
int orthros_analytic_check(const orthros_analytic_params *p);
void orthros_analytic_layout_of(orthros_analytic_layout *l, const orthros_analytic_params *p);
void orthros_analytic_margins_of(orthros_analytic_margins *m, const orthros_analytic_params *p);

static inline int orthros_analytic_key(const orthros_analytic_layout *l, int k) { return l->key0 + k; }
static inline int orthros_analytic_value(const orthros_analytic_layout *l, int v) { return l->value0 + v; }
static inline int orthros_analytic_pair(const orthros_analytic_layout *l, int k, int v) { return l->pair0 + k * l->values + v; }
static inline int orthros_analytic_filler(const orthros_analytic_layout *l, int f) { return l->filler0 + f; }
/* Class of value v: values of lower class are answered first in multi-value recall. */
static inline int orthros_analytic_class(int v) { return v % ORTHROS_ANALYTIC_CLASSES; }

/* Writes dir/config.json and dir/model.safetensors (F32, every value representable in bf16 so that the cpu
 * and cuda backends hold identical weights). Deterministic: the same params give the same bytes. */
int orthros_analytic_write(const char *dir, const orthros_analytic_params *p);
/* Builds one named tensor of the checkpoint into a malloc'd float array (for tests); *numel receives its
 * size. Names as in the checkpoint. */
int orthros_analytic_tensor(float **out, size_t *numel, const orthros_analytic_params *p, const char *name);
/* Reads the `analytic_recall` object of dir/config.json. */
int orthros_analytic_layout_load(orthros_analytic_layout *l, const char *dir);
cJSON *orthros_analytic_layout_json(const orthros_analytic_layout *l);

#endif
