/* What every `orthros eval` task shares: the common options (architectures, result file, --resume / --force,
 * --save-prompts, the table), the grid of architecture x context x the task's second axis, and the run itself:
 * the result file opened (an earlier run's cells kept with --resume, refused when its configuration differs),
 * each architecture's model loaded once, every cell not yet in the file run by the task and the file rewritten
 * after each, a table row per cell and a summary. The tasks (eval.c: niah, mqar; ppl.c; ruler.c; recall.c) supply
 * the cell function and their configuration. */
#ifndef ORTHROS_EVAL_DRIVER_H
#define ORTHROS_EVAL_DRIVER_H

#include "axes.h"
#include "options.h"
#include "result_eval.h"
#include "result_run.h"
#include "table.h"

#include <stdio.h>

#define EVAL_MAX_AXIS 256

/* The options every eval task takes besides its own. */
typedef struct {
    orthros_model_opts mo;
    const char *task;      /* the task name written to the file: niah, mqar, ruler_niah, ..., ppl, recall */
    const char *archs, *ctxs, *json, *save_prompts, *format, *table_out;
    int samples, resume, force, quiet, wait;
    int limit;             /* --limit: at most this many samples a cell (0: all; the tasks say what a sample is) */
} eval_common;

/* Defaults: every architecture, text table, 4 samples; the model options' defaults with no model. */
void orthros_eval_common_default(eval_common *o, const char *task);
/* Adds --arch (as a list), --json, --resume, --force, --save-prompts (when prompts_help is not NULL), --limit, -o,
 * --table-out, --quiet to a command whose model options are already added. json_default names the default file. */
void orthros_eval_common_add(orthros_cmd *c, eval_common *o, const char *json_default, const char *prompts_help);
/* The usage checks they share (--resume with --force, --json -); fills the default --json; --limit caps --samples
 * of the generated tasks (niah, mqar, ruler). Returns -1 to go on, else the exit status. */
int orthros_eval_common_check(orthros_cmd *c, eval_common *o, const char *json_default);

typedef struct eval_run eval_run;

/* One cell of the grid. */
typedef struct {
    const char *arch;
    int ctx, axis; /* axis: the value on the task's second axis (orthros_eval_axis_name) */
} eval_cell;

/* What a task supplies. */
typedef struct {
    /* Checks a freshly loaded model against the task (its vocabulary, its tokenizer); may be NULL. */
    int (*check_model)(eval_run *r, orthros_model *m);
    /* Runs one cell on model m into *out (records owned by it), writing prompts to r->prompts when open. */
    int (*run_cell)(eval_run *r, orthros_eval_cell *out, orthros_model *m, const eval_cell *c);
    /* The table row of a cell (the columns given to orthros_eval_drive); NULL: the accuracy columns. */
    void (*row)(eval_run *r, const orthros_eval_cell *c, char (*cells)[ORTHROS_NAME_MAX]);
    /* Notes after the table (NULL: the per-architecture pooled accuracy). */
    void (*summary)(eval_run *r);
} eval_task_ops;

struct eval_run {
    const eval_common *o;
    const eval_task_ops *ops;
    void *task;            /* the task's own state */
    char archs[EVAL_MAX_AXIS][ORTHROS_AXIS_NAME_MAX];
    int ctxs[EVAL_MAX_AXIS], xs[EVAL_MAX_AXIS];
    size_t na, nc, nx;     /* nx = 1 with xs[0] = 0 for a task without a second axis */
    int x_from_ctx;        /* the second axis is each cell's ctx (nx = 1) */
    orthros_backend *be;
    orthros_eval_file f;
    orthros_table table;
    FILE *prompts;
    orthros_result_run run; /* the file's lifecycle (result_run.h) */
};

/* Parses --arch into r->archs and a list of integers in [lo, hi] for option `what` (a usage error otherwise). */
int orthros_eval_parse_archs(eval_run *r);
int orthros_eval_parse_ints(int *out, size_t *n, const char *text, const char *what, int64_t lo, int64_t hi);

/* The configuration every task records: task, model, archs, ctx list, samples, seed, device, schedule options.
 * The caller sets the rest (variant, xs, scoring and its own fields) and frees it with orthros_eval_config_free. */
int orthros_eval_config_common(orthros_eval_config *c, const eval_common *o, const char *device);

/* Runs the grid (r->archs x r->ctxs x r->xs, those already in the file skipped); `config` (owned) is the run's
 * configuration; the table has the given columns (none: the task prints its table in its summary). Creates the
 * backend. Returns the exit status. */
int orthros_eval_drive(eval_run *r, int argc, char **argv, orthros_eval_config *config, const orthros_table_col *cols,
               int n_cols);

/* The tasks-file evals (mc, recall): --name checked into name[size] (not empty, no control character); without it,
 * tasks_default's file name less .jsonl when given (mc), else left empty (recall). Returns -1 to go on, else the
 * exit status of the usage error. */
int orthros_eval_task_name(orthros_cmd *c, char *name, size_t size, const char *name_arg, const char *tasks_default);
/* Their one cell per architecture (ctx the longest prompt, n items as the samples) and their configuration: the
 * common part, the tasks file and the few-shot file, then fill(cfg, task) for the task's own fields; runs the grid
 * with orthros_eval_drive. Returns the exit status. */
int orthros_eval_drive_tasks(eval_run *r, eval_common *o, int argc, char **argv, int n, int longest, const char *tasks,
                             const char *fewshot, void (*fill)(orthros_eval_config *cfg, const void *task));

/* The accuracy columns of a cell's table row: arch, ctx, x, n, accuracy, ci95_lo, ci95_hi. */
void orthros_eval_accuracy_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX]);
/* A cell's accuracy fields from its counts, with the Wilson 95% interval. */
void orthros_eval_cell_set_accuracy(orthros_eval_cell *out, int64_t correct, int64_t trials);
/* The frame of a cell whose samples are answers generated greedily (ruler, recall): orthros_eval_gen_cell_begin
 * clears *out (partial NaN), makes its records array, a session of ctx positions and a buffer of max_new tokens;
 * orthros_eval_gen_cell_end, given the loop's rc, sets arch, ctx, axis, the counts, the accuracy and the time when
 * rc is 0, else drops the records, frees the frame either way and returns rc. */
typedef struct {
    orthros_session *sess;
    int32_t *gen;
    double t0;
} gen_cell;
int orthros_eval_gen_cell_begin(gen_cell *g, orthros_eval_cell *out, orthros_model *m, int ctx, int max_new, int chunk);
int orthros_eval_gen_cell_end(gen_cell *g, orthros_eval_cell *out, const eval_cell *c, int rc, int64_t correct,
                              int64_t samples);
/* An array of token ids as JSON. */
cJSON *orthros_eval_ints_json(const int32_t *v, int n);
/* A sample's seed on a record or a saved prompt: "seed" (a JSON number, so rounded above 2^53) and "seed_hex"
 * (16 hex digits, exact). */
void orthros_eval_add_seed(cJSON *o, uint64_t seed);
/* A generated text made fit for a progress line: at most `chars` bytes of it (not cutting a UTF-8 character), line
 * breaks, tabs and other control characters written as \n, \t, \xNN, a backslash as \\, "..." after a cut. */
void orthros_eval_progress_text(char *out, size_t n, const char *text, size_t chars);
/* The command the user typed for a task: "eval ruler" for ruler_niah, ruler_vt and ruler_cwe; "eval TASK" else. */
const char *orthros_eval_command_name(const char *task);
/* Writes one JSON line to the --save-prompts file; takes j. */
int orthros_eval_save_line(FILE *f, cJSON *j);

#endif
