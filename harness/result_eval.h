/* Eval result files (`orthros eval`), typed: one reader (which validates) and one writer, used by the eval
 * command (resume), `orthros plot` and the reports. A cell is one (task, variant, arch, ctx, x) configuration,
 * x the task's second axis (depth in percent for NIAH, key-value pairs for MQAR), with its per-sample records. */
#ifndef ORTHROS_RESULT_EVAL_H
#define ORTHROS_RESULT_EVAL_H

#include "result_bench.h"

typedef struct {
    char task[16];            /* niah, mqar */
    char variant[32];         /* niah: single, multikey, multivalue, multiquery; mqar: mqar */
    char arch[ORTHROS_NAME_MAX];
    int ctx;
    int x;                    /* depth (niah) or pairs (mqar) */
    int samples, samples_correct;
    int64_t n, correct;       /* trials scored (samples for niah, questions for mqar) and those right */
    double accuracy, ci_lo, ci_hi; /* correct / n and its Wilson 95% interval */
    double elapsed_s;
    cJSON *records;           /* per-sample records: an array of objects, as written */
} orthros_eval_cell;

/* The run configuration of an eval file: what was asked for. */
typedef struct {
    char task[16], variant[32];
    char *model, *archs, *ctxs, *xs; /* xs: the depths or pairs list as given */
    int samples, seed;
    char device[16], feature_map[16];
    int chunk, tail, window, hybrid_every, feature_dim;
    double eps;
    char scoring[160];
    cJSON *analytic_recall;   /* the model's token layout, as written */
} orthros_eval_config;

typedef struct {
    orthros_result_header hdr;
    cJSON *header;            /* tool, run (its config excepted) and environment as written */
    orthros_eval_config cfg;
    orthros_eval_cell *cells;
    size_t n_cells, cap_cells;
} orthros_eval_file;

/* "depth" for niah, "pairs" for mqar. */
const char *orthros_eval_x_name(const char *task);
void orthros_eval_file_init(orthros_eval_file *f);
void orthros_eval_file_free(orthros_eval_file *f);
void orthros_eval_config_free(orthros_eval_config *c);
int orthros_eval_file_read(orthros_eval_file *f, const char *path, int missing_ok, int *exists);
int orthros_eval_file_from_json(orthros_eval_file *f, const cJSON *root, const char *name);
cJSON *orthros_eval_file_to_json(const orthros_eval_file *f);
int orthros_eval_file_write(const orthros_eval_file *f, const char *path);
/* Takes ownership of c's records. */
int orthros_eval_file_add(orthros_eval_file *f, orthros_eval_cell *c);
const orthros_eval_cell *orthros_eval_file_find(const orthros_eval_file *f, const char *arch, int ctx, int x);
/* 0 when a file of configuration b can be resumed as one of a (same task, variant, model, samples, seed, device,
 * schedule options); else ORTHROS_EINVAL naming the first field that differs. */
int orthros_eval_config_check_same(const orthros_eval_config *a, const char *a_name, const orthros_eval_config *b,
                                   const char *b_name);

#endif
