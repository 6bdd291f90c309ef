/* The bench table: its columns and a cell's row, shared by `orthros bench` (as cells finish) and `orthros report`
 * (from a file), and the whole table of a bench file with its notes (cells not measured) and its speedups. Beside
 * llama-bench: the run's context (model, size_mib, backend, device, threads, tp, commit; harness/table.h) and a
 * test name per row in llama-bench's terms (pp4096: a prefill of 4096 tokens; tg8 @ d4096: 8 decoded tokens over a
 * cache of 4096; pp4096+tg8: both, end to end). */
#ifndef ORTHROS_BENCH_ROWS_H
#define ORTHROS_BENCH_ROWS_H

#include "result_bench.h"
#include "table.h"

#include <stdio.h>

#define ORTHROS_BENCH_COLS 16
#define ORTHROS_BENCH_CELL_MAX 48
extern const orthros_table_col orthros_bench_cols[ORTHROS_BENCH_COLS];
/* v[ORTHROS_BENCH_COLS][ORTHROS_BENCH_CELL_MAX]: the row of c. */
void orthros_bench_row(const orthros_bench_cell *c, char (*v)[ORTHROS_BENCH_CELL_MAX]);
/* The table's context from the file's header and model; the size: c's weights where c is not NULL, else the first
 * cell that recorded them. */
void orthros_bench_context(orthros_table *t, const orthros_bench_file *f, const orthros_bench_cell *c);
/* The note under a cell that was not measured (skipped or failed) and why; nothing for a measured cell. */
void orthros_bench_note_unmeasured(orthros_table *t, const orthros_bench_cell *c);
/* The speedups of f after its cells: lines in the text format, a table of their own in markdown, nothing in the
 * machine formats (their rows are the cells). */
int orthros_bench_speedups(orthros_table *t, const orthros_bench_file *f);
/* Every cell of f as a row (the "not measured" reason of a cell that was not as a note), then the speedups. */
int orthros_bench_table(const orthros_bench_file *f, orthros_table_format fmt, FILE *out);

#endif
