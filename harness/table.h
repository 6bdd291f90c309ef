/* Result tables on stdout (or a file), in the formats users know from llama-bench and nvbench: an aligned text
 * table (the default), markdown, CSV, JSON lines (one object per row, written as rows arrive) and JSON (one
 * array, written at the end). Cells are text; columns declared numeric are written as JSON numbers. */
#ifndef ORTHROS_TABLE_H
#define ORTHROS_TABLE_H

#include <stdio.h>

typedef enum { ORTHROS_TABLE_TEXT, ORTHROS_TABLE_MD, ORTHROS_TABLE_CSV, ORTHROS_TABLE_JSONL, ORTHROS_TABLE_JSON } orthros_table_format;

#define ORTHROS_TABLE_MAX_COLS 24

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
} orthros_table;

/* "text", "md", "csv", "jsonl", "json". */
int orthros_table_format_parse(orthros_table_format *f, const char *s);
/* path NULL or "-": stdout. */
int orthros_table_open(orthros_table *t, orthros_table_format f, const char *path, const orthros_table_col *cols, int n_cols);
/* One row of n_cols strings. */
int orthros_table_row(orthros_table *t, const char *const *cells);
/* A line outside the table (a warning, a summary): printed in the text and markdown formats only. */
void orthros_table_note(orthros_table *t, const char *line);
int orthros_table_close(orthros_table *t);

#endif
