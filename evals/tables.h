/* The tables of eval result files, printed from the file alone (the eval commands at the end of a run, and
 * `orthros report`):
 *   - mc and recall: lm-evaluation-harness's results table (Tasks | Version | Filter | n-shot | Metric | | Value | |
 *     Stderr), one per architecture in the text and markdown formats (each after a line naming the model, the
 *     architecture and the run, as lm-eval prints its model line); in csv, jsonl and json one table whose rows lead
 *     with the architecture (Arch | Tasks | Version | Filter | n-shot | Metric | Value | Stderr);
 *   - ruler_*: RULER's pivot, one row per architecture, one column per context length and their average (the mean
 *     over the length's cells, weighted by samples, of RULER's partial score, in percent);
 *   - every task: the per-cell table its command prints (orthros_eval_cells_table). */
#ifndef ORTHROS_EVAL_TABLES_H
#define ORTHROS_EVAL_TABLES_H

#include "driver.h"
#include "result_eval.h"
#include "table.h"

#include <stdio.h>

/* The per-cell tables' columns and rows of the eval commands (accuracy cells of niah / mqar, ruler, ppl). */
extern const orthros_table_col orthros_eval_accuracy_cols[7];
extern const orthros_table_col orthros_eval_ruler_cols[8];
extern const orthros_table_col orthros_eval_ppl_cols[10];
void orthros_eval_ruler_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX]);
void orthros_eval_ppl_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX]);
/* The driver's summary of accuracy cells (per architecture, the pooled accuracy with its Wilson interval). */
void orthros_eval_accuracy_summary(eval_run *r);

/* Each writes to out in format fmt; 0 or ORTHROS_EIO. */
int orthros_eval_lmeval_table(const orthros_eval_file *f, orthros_table_format fmt, FILE *out);
int orthros_eval_ruler_pivot(const orthros_eval_file *f, orthros_table_format fmt, FILE *out);
int orthros_eval_cells_table(const orthros_eval_file *f, orthros_table_format fmt, FILE *out);
/* The table of a file's task: lm-eval's for mc and recall, the pivot for ruler_*, the per-cell table otherwise. */
int orthros_eval_report_table(const orthros_eval_file *f, orthros_table_format fmt, FILE *out);
/* The lm-eval table of a run's file to the command's -o / --table-out (eval mc and eval recall). */
void orthros_eval_print_lmeval(const eval_run *r);

#endif
