/* Result tables on stdout (or a file), in the formats users know from llama-bench and nvbench: an aligned text
 * table (the default), markdown, CSV, JSON lines (one object per row, written as rows arrive) and JSON (one
 * array, written at the end). Cells are text; columns declared numeric are written as JSON numbers. Column names
 * are dataframe-safe (letters, digits, underscores: `noise_pct`, `tokens_per_s`), intervals two numeric columns.
 *
 * A table may carry the run's context, as llama-bench's rows do (model, size, backend, device, threads, tp,
 * commit): in markdown, CSV and the JSON formats as columns before every row's own; in the text format as one line
 * above the header. Notes (warnings, summaries) print inline in the text format; in markdown they are kept and
 * written after the table as a list, so that the table stays one table; the other formats leave them out. */
#ifndef ORTHROS_TABLE_H
#define ORTHROS_TABLE_H

#include <cjson/cJSON.h>
#include <stdio.h>

typedef enum { ORTHROS_TABLE_TEXT, ORTHROS_TABLE_MD, ORTHROS_TABLE_CSV, ORTHROS_TABLE_JSONL, ORTHROS_TABLE_JSON } orthros_table_format;

#define ORTHROS_TABLE_MAX_COLS 24
#define ORTHROS_TABLE_CONTEXT_COLS 7
#define ORTHROS_TABLE_CONTEXT_MAX 128

typedef struct {
    const char *name;
    int width;     /* text format: column width (negative: left-aligned) */
    int numeric;   /* JSON formats: the cell is a number (an empty cell is null) */
} orthros_table_col;

typedef struct {
    orthros_table_format format;
    FILE *out;
    int own;       /* out was opened here */
    orthros_table_col cols[ORTHROS_TABLE_MAX_COLS];
    int n_cols;
    int header_done, rows;
    /* The run's context (orthros_table_context): names, values, numeric flags. */
    orthros_table_col ctx_cols[ORTHROS_TABLE_CONTEXT_COLS];
    char ctx_vals[ORTHROS_TABLE_CONTEXT_COLS][ORTHROS_TABLE_CONTEXT_MAX];
    int n_ctx;
    char *notes;   /* markdown: the notes kept for after the table */
    size_t notes_len;
} orthros_table;

/* "text", "md", "csv", "jsonl", "json". */
int orthros_table_format_parse(orthros_table_format *f, const char *s);
/* path NULL or "-": stdout. */
int orthros_table_open(orthros_table *t, orthros_table_format f, const char *path, const orthros_table_col *cols, int n_cols);
/* The run's context of a result file, from its header (tool, environment, as kept by the typed readers and
 * written by orthros_result_new) and its model spec, with the weights' size (NAN: not known): model (a preset's
 * name, else the file or folder name), size_mib, backend, device (the GPU or CPU), threads (the cpu backend's),
 * tp (the ranks) and commit. Call before the first row. */
void orthros_table_context(orthros_table *t, const cJSON *header, const char *model, double weights_bytes);
/* One row of n_cols strings. */
int orthros_table_row(orthros_table *t, const char *const *cells);
/* A line outside the table (a warning, a summary): printed at once in the text format, after the table as a list
 * item in markdown, nowhere in the other formats. */
void orthros_table_note(orthros_table *t, const char *line);
/* Ends the table (its markdown notes written) and starts another on the same stream with other columns and no
 * context (a bench run's speedups under its cells); text and markdown only (ORTHROS_EINVAL otherwise). */
int orthros_table_next(orthros_table *t, const orthros_table_col *cols, int n_cols);
int orthros_table_close(orthros_table *t);

#endif
