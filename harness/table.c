#include "table.h"
#include "orthros.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int orthros_table_format_parse(orthros_table_format *f, const char *s)
{
    static const char *const names[] = {"text", "md", "csv", "jsonl", "json"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) {
            *f = (orthros_table_format)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown output format \"%s\" (text, md, csv, jsonl, json)", s);
}

int orthros_table_open(orthros_table *t, orthros_table_format f, const char *path, const orthros_table_col *cols, int n_cols)
{
    memset(t, 0, sizeof *t);
    t->format = f;
    t->out = stdout;
    if (n_cols > ORTHROS_TABLE_MAX_COLS) n_cols = ORTHROS_TABLE_MAX_COLS;
    memcpy(t->cols, cols, (size_t)n_cols * sizeof *cols);
    t->n_cols = n_cols;
    if (path && strcmp(path, "-")) {
        if (!(t->out = fopen(path, "w"))) return orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", path, strerror(errno));
        t->own = 1;
    }
    return 0;
}

/* A JSON string literal of s (control characters escaped). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* A CSV field, quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static void header(orthros_table *t)
{
    FILE *f = t->out;
    t->header_done = 1;
    switch (t->format) {
    case ORTHROS_TABLE_TEXT:
        for (int i = 0; i < t->n_cols; i++) fprintf(f, "%s%*s", i ? " " : "", t->cols[i].width, t->cols[i].name);
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_MD:
        for (int i = 0; i < t->n_cols; i++) fprintf(f, "| %s ", t->cols[i].name);
        fprintf(f, "|\n");
        for (int i = 0; i < t->n_cols; i++) fprintf(f, "| %s ", t->cols[i].numeric ? "---:" : "---");
        fprintf(f, "|\n");
        break;
    case ORTHROS_TABLE_CSV:
        for (int i = 0; i < t->n_cols; i++) {
            if (i) fputc(',', f);
            csv_field(f, t->cols[i].name);
        }
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_JSON: fputs("[\n", f); break;
    case ORTHROS_TABLE_JSONL: break;
    }
}

int orthros_table_row(orthros_table *t, const char *const *cells)
{
    FILE *f = t->out;
    if (!t->header_done) header(t);
    switch (t->format) {
    case ORTHROS_TABLE_TEXT:
        for (int i = 0; i < t->n_cols; i++) fprintf(f, "%s%*s", i ? " " : "", t->cols[i].width, cells[i]);
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_MD:
        for (int i = 0; i < t->n_cols; i++) {
            fputs("| ", f);
            for (const char *p = cells[i]; *p; p++) fputs(*p == '|' ? "\\|" : (char[]){*p, 0}, f);
            fputc(' ', f);
        }
        fprintf(f, "|\n");
        break;
    case ORTHROS_TABLE_CSV:
        for (int i = 0; i < t->n_cols; i++) {
            if (i) fputc(',', f);
            csv_field(f, cells[i]);
        }
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_JSON:
    case ORTHROS_TABLE_JSONL:
        if (t->format == ORTHROS_TABLE_JSON) fputs(t->rows ? ",\n  " : "  ", f);
        fputc('{', f);
        for (int i = 0; i < t->n_cols; i++) {
            if (i) fputs(", ", f);
            json_str(f, t->cols[i].name);
            fputs(": ", f);
            if (t->cols[i].numeric) {
                char *end;
                strtod(cells[i], &end);
                if (cells[i][0] && !*end && strcmp(cells[i], "nan") && strcmp(cells[i], "inf")) fputs(cells[i], f);
                else fputs("null", f);
            } else {
                json_str(f, cells[i]);
            }
        }
        fputc('}', f);
        if (t->format == ORTHROS_TABLE_JSONL) fputc('\n', f);
        break;
    }
    t->rows++;
    fflush(f);
    return ferror(f) ? orthros_error(ORTHROS_EIO, "cannot write the table") : 0;
}

void orthros_table_note(orthros_table *t, const char *line)
{
    if (t->format == ORTHROS_TABLE_TEXT) fprintf(t->out, "%s\n", line);
    else if (t->format == ORTHROS_TABLE_MD) fprintf(t->out, "\n%s\n", line);
    fflush(t->out);
}

int orthros_table_close(orthros_table *t)
{
    if (t->format == ORTHROS_TABLE_JSON) {
        if (!t->header_done) header(t);
        fputs("\n]\n", t->out);
    }
    int bad = ferror(t->out) != 0;
    if (t->own) bad |= fclose(t->out) != 0;
    else fflush(t->out);
    t->out = NULL;
    return bad ? orthros_error(ORTHROS_EIO, "cannot write the table") : 0;
}
