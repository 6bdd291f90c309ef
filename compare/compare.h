/* orthros compare: two sets of result files matched cell by cell, with a verdict per cell (DESIGN section 5;
 * the rule is stated in docs/compare.md). Bench files (`orthros bench`) are matched by (arch, phase, ctx,
 * batch); kernel benchmark files (bench_kernels) by (op, shape). Each side may hold several files of one
 * configuration (the rounds of an interleaved run): their samples are pooled per cell for the medians and the
 * test, and the ratio's interval resamples rounds, then samples within rounds. */
#ifndef ORTHROS_COMPARE_H
#define ORTHROS_COMPARE_H

#include "result_bench.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ORTHROS_VERDICT_SAME = 0,
    ORTHROS_VERDICT_FAST = 1,
    ORTHROS_VERDICT_SLOW = 2,
    ORTHROS_VERDICT_AMBIGUOUS = 3,
    ORTHROS_VERDICT_UNMATCHED = 4, /* measured on one side only: not compared */
} orthros_verdict;

typedef struct {
    double threshold_pct; /* SLOW / FAST need the ratio's interval beyond 1 + t (or 1 / (1 + t)); default 5 */
    double alpha;         /* family-wise level of each one-sided test after Holm; default 0.05 */
    size_t resamples;     /* bootstrap resamples of the ratio of medians; default 5000 */
    uint64_t seed;        /* bootstrap seed; default 1 */
} orthros_compare_opts;

/* One matched cell. Times in seconds. The "slow" test asks whether NEW is stochastically greater (slower)
 * than BASE: u_slow counts the (new, base) pairs with new > base, ties 1/2; p_fast is the mirror test. The
 * _holm values are Holm-adjusted across the tested cells, per direction; NAN when the cell was not tested. */
typedef struct {
    char key[192];
    size_t n_base, n_new;
    int rounds_base, rounds_new; /* files (rounds) each side's samples came from */
    double median_base, median_new, ratio, ci_lo, ci_hi;
    double u_slow, p_slow, p_fast, p_slow_holm, p_fast_holm;
    int exact;  /* 1 when the p values are exact (no ties, both sides <= ORTHROS_STATS_MWU_EXACT_MAX) */
    int tested; /* 0 when too few samples for the test to reach alpha, or a side is missing */
    orthros_verdict verdict;
    char note[160];
} orthros_compare_cell;

typedef struct {
    orthros_compare_cell *cells;
    size_t n_cells;
    const char *kind;  /* "bench" or "kernels" */
    int mismatch;      /* some cell is measured on one side (or in some of a side's files) only */
    int max_rounds_base, max_rounds_new; /* most rounds of any one cell per side (1: no interleaving) */
    size_t count[5];   /* cells per verdict, indexed by orthros_verdict */
} orthros_compare_result;

void orthros_compare_opts_default(orthros_compare_opts *o);

/* Compares the files of each side (already parsed; names[] for messages). Fails with ORTHROS_EFORMAT for
 * files that are not bench or kernel result files (an eval file included), and with ORTHROS_EINVAL when the
 * files are of different kinds or their run configurations (model, decode_tokens, device, schedule options)
 * disagree. On success *out owns its cells: free with orthros_compare_result_free. */
int orthros_compare_run(orthros_compare_result *out, const orthros_bench_file *const *base,
                        const char *const *base_names, size_t n_base, const orthros_bench_file *const *cmp,
                        const char *const *cmp_names, size_t n_cmp, const orthros_compare_opts *o);
void orthros_compare_result_free(orthros_compare_result *r);

/* 1 when more than half of the judged cells are AMBIGUOUS. */
int orthros_compare_mostly_ambiguous(const orthros_compare_result *r);
/* 1 when some cell is SLOW; else 2 when the cells do not match, most are AMBIGUOUS, or none is SAME or FAST;
 * else 0. */
int orthros_compare_exit_code(const orthros_compare_result *r);
const char *orthros_verdict_name(orthros_verdict v);

int orthros_cmd_compare(int argc, char **argv);

#endif
