#include "table.h"
#include "orthros.h"

#include <errno.h>
#include <math.h>
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

/* A markdown cell: '|' escaped, line breaks as spaces. */
static void md_cell(FILE *f, const char *s)
{
    fputs("| ", f);
    for (const char *p = s; *p; p++) {
        if (*p == '|') fputs("\\|", f);
        else if (*p == '\n' || *p == '\r') fputc(' ', f);
        else fputc(*p, f);
    }
    fputc(' ', f);
}

static void header(orthros_table *t)
{
    FILE *f = t->out;
    t->header_done = 1;
    switch (t->format) {
    case ORTHROS_TABLE_TEXT:
        if (t->n_ctx) {
            /* the context once, above the header: "model llama3.2-1b, size_mib 2357.0, backend cuda, ..." */
            int k = 0;
            for (int i = 0; i < t->n_ctx; i++)
                if (t->ctx_vals[i][0]) fprintf(f, "%s%s %s", k++ ? ", " : "", t->ctx_cols[i].name, t->ctx_vals[i]);
            fputc('\n', f);
        }
        for (int i = 0; i < t->n_cols; i++) fprintf(f, "%s%*s", i ? " " : "", t->cols[i].width, t->cols[i].name);
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_MD:
        for (int i = 0; i < t->n_ctx; i++) md_cell(f, t->ctx_cols[i].name);
        for (int i = 0; i < t->n_cols; i++) md_cell(f, t->cols[i].name);
        fprintf(f, "|\n");
        for (int i = 0; i < t->n_ctx; i++) fprintf(f, "| %s ", t->ctx_cols[i].numeric ? "---:" : "---");
        for (int i = 0; i < t->n_cols; i++) fprintf(f, "| %s ", t->cols[i].numeric ? "---:" : "---");
        fprintf(f, "|\n");
        break;
    case ORTHROS_TABLE_CSV:
        for (int i = 0; i < t->n_ctx + t->n_cols; i++) {
            if (i) fputc(',', f);
            csv_field(f, i < t->n_ctx ? t->ctx_cols[i].name : t->cols[i - t->n_ctx].name);
        }
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_JSON: fputs("[\n", f); break;
    case ORTHROS_TABLE_JSONL: break;
    }
}

/* A JSON value of a cell: a number for a numeric column (null when empty or not a finite number), else a string. */
static void json_cell(FILE *f, const orthros_table_col *c, const char *v)
{
    json_str(f, c->name);
    fputs(": ", f);
    if (c->numeric) {
        char *end;
        double x = strtod(v, &end);
        if (v[0] && !*end && isfinite(x)) fputs(v, f);
        else fputs("null", f);
    } else {
        json_str(f, v);
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
        for (int i = 0; i < t->n_ctx; i++) md_cell(f, t->ctx_vals[i]);
        for (int i = 0; i < t->n_cols; i++) md_cell(f, cells[i]);
        fprintf(f, "|\n");
        break;
    case ORTHROS_TABLE_CSV:
        for (int i = 0; i < t->n_ctx + t->n_cols; i++) {
            if (i) fputc(',', f);
            csv_field(f, i < t->n_ctx ? t->ctx_vals[i] : cells[i - t->n_ctx]);
        }
        fputc('\n', f);
        break;
    case ORTHROS_TABLE_JSON:
    case ORTHROS_TABLE_JSONL:
        if (t->format == ORTHROS_TABLE_JSON) fputs(t->rows ? ",\n  " : "  ", f);
        fputc('{', f);
        for (int i = 0; i < t->n_ctx + t->n_cols; i++) {
            if (i) fputs(", ", f);
            if (i < t->n_ctx) json_cell(f, &t->ctx_cols[i], t->ctx_vals[i]);
            else json_cell(f, &t->cols[i - t->n_ctx], cells[i - t->n_ctx]);
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
    if (t->format == ORTHROS_TABLE_TEXT) {
        fprintf(t->out, "%s\n", line);
        fflush(t->out);
    } else if (t->format == ORTHROS_TABLE_MD) {
        /* kept for after the table: a line between rows would end it */
        while (*line == ' ') line++;
        size_t len = strlen(line);
        char *n = realloc(t->notes, t->notes_len + len + 4);
        if (!n) return;
        t->notes = n;
        t->notes_len += (size_t)sprintf(t->notes + t->notes_len, "- %s\n", line);
    }
}

/* Markdown: the notes kept, as a list after a blank line. */
static void flush_notes(orthros_table *t)
{
    if (t->format == ORTHROS_TABLE_MD && t->notes_len) {
        /* markdown would read a '|' or a leading '#' of a note as something else */
        fputc('\n', t->out);
        for (const char *p = t->notes; *p; p++) fputs(*p == '|' ? "\\|" : (char[]){*p, 0}, t->out);
    }
    free(t->notes);
    t->notes = NULL, t->notes_len = 0;
    fflush(t->out);
}

void orthros_table_context(orthros_table *t, const cJSON *header, const char *model, double weights_bytes)
{
    static const orthros_table_col cols[ORTHROS_TABLE_CONTEXT_COLS] = {
        {"model", 0, 0}, {"size_mib", 0, 1}, {"backend", 0, 0}, {"device", 0, 0}, {"threads", 0, 1}, {"tp", 0, 1}, {"commit", 0, 0}};
    const cJSON *tool = cJSON_GetObjectItem(header, "tool"), *env = cJSON_GetObjectItem(header, "environment");
    const cJSON *backend = cJSON_GetObjectItem(env, "backend"), *dev = cJSON_GetObjectItem(cJSON_GetObjectItem(env, "device"), "name");
    const cJSON *threads = cJSON_GetObjectItem(env, "threads"), *world = cJSON_GetObjectItem(env, "world_size");
    const cJSON *commit = cJSON_GetObjectItem(tool, "git_commit"), *dirty = cJSON_GetObjectItem(tool, "dirty");
    memcpy(t->ctx_cols, cols, sizeof cols);
    t->n_ctx = ORTHROS_TABLE_CONTEXT_COLS;
    char (*v)[ORTHROS_TABLE_CONTEXT_MAX] = t->ctx_vals;
    for (int i = 0; i < t->n_ctx; i++) v[i][0] = '\0';
    const char *m = model ? model : "";
    if (!strncmp(m, "preset:", 7)) m += 7;
    else {
        size_t len = strlen(m);
        while (len > 1 && m[len - 1] == '/') len--;
        const char *p = m + len;
        while (p > m && p[-1] != '/') p--;
        /* convert/'s jobs keep their adapter in JOB/adapter: the job's name says which model it is */
        if (m + len - p == 7 && !strncmp(p, "adapter", 7) && p - 1 > m)
            for (p--; p > m && p[-1] != '/'; p--) {}
        snprintf(v[0], sizeof v[0], "%.*s", (int)(m + len - p), p);
        m = NULL;
    }
    if (m) snprintf(v[0], sizeof v[0], "%s", m);
    if (isfinite(weights_bytes) && weights_bytes > 0) snprintf(v[1], sizeof v[1], "%.1f", weights_bytes / 1048576.0);
    if (cJSON_IsString(backend)) snprintf(v[2], sizeof v[2], "%s", backend->valuestring);
    if (cJSON_IsString(dev)) snprintf(v[3], sizeof v[3], "%s", dev->valuestring);
    if (cJSON_IsNumber(threads) && cJSON_IsString(backend) && !strcmp(backend->valuestring, "cpu"))
        snprintf(v[4], sizeof v[4], "%d", threads->valueint);
    snprintf(v[5], sizeof v[5], "%d", cJSON_IsNumber(world) && world->valueint > 0 ? world->valueint : 1);
    if (cJSON_IsString(commit))
        snprintf(v[6], sizeof v[6], "%.7s%s", commit->valuestring, cJSON_IsTrue(dirty) ? "+dirty" : "");
    for (int i = 0; i < t->n_ctx; i++)
        for (char *p = v[i]; *p; p++)
            if ((unsigned char)*p < 0x20) *p = ' ';
}

int orthros_table_next(orthros_table *t, const orthros_table_col *cols, int n_cols)
{
    if (t->format != ORTHROS_TABLE_TEXT && t->format != ORTHROS_TABLE_MD)
        return orthros_error(ORTHROS_EINVAL, "a second table in one %s stream", t->format == ORTHROS_TABLE_CSV ? "CSV" : "JSON");
    flush_notes(t);
    if (t->header_done) fputc('\n', t->out);
    if (n_cols > ORTHROS_TABLE_MAX_COLS) n_cols = ORTHROS_TABLE_MAX_COLS;
    memcpy(t->cols, cols, (size_t)n_cols * sizeof *cols);
    t->n_cols = n_cols, t->n_ctx = 0, t->header_done = 0, t->rows = 0;
    return 0;
}

int orthros_table_close(orthros_table *t)
{
    if (t->format == ORTHROS_TABLE_JSON) {
        if (!t->header_done) header(t);
        fputs("\n]\n", t->out);
    }
    flush_notes(t);
    int bad = ferror(t->out) != 0;
    if (t->own) bad |= fclose(t->out) != 0;
    else fflush(t->out);
    t->out = NULL;
    return bad ? orthros_error(ORTHROS_EIO, "cannot write the table") : 0;
}
