/* The bench table: its columns and a cell's row, shared by `orthros bench` (as cells finish) and `orthros report`
 * (from a file), and the whole table of a bench file with its notes (cells not measured, the speedups). */
#ifndef ORTHROS_BENCH_ROWS_H
#define ORTHROS_BENCH_ROWS_H

#include "result_bench.h"
#include "table.h"

#include <stdio.h>

#define ORTHROS_BENCH_COLS 14
#define ORTHROS_BENCH_CELL_MAX 48
extern const orthros_table_col orthros_bench_cols[ORTHROS_BENCH_COLS];
/* v[ORTHROS_BENCH_COLS][ORTHROS_BENCH_CELL_MAX]: the row of c. */
void orthros_bench_row(const orthros_bench_cell *c, char (*v)[ORTHROS_BENCH_CELL_MAX]);
/* The note under a cell that was not measured (skipped or failed) and why; nothing for a measured cell. */
void orthros_bench_note_unmeasured(orthros_table *t, const orthros_bench_cell *c);
/* Every cell of f as a row (the "not measured" reason of a cell that was not as a note), then the speedups. */
int orthros_bench_table(const orthros_bench_file *f, orthros_table_format fmt, FILE *out);

#endif
