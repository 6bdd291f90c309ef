/* The tables of eval result files (tables.h). */
#define _GNU_SOURCE
#include "tables.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A table on an open stream (the caller's), columns as given. */
static void open_on(orthros_table *t, orthros_table_format fmt, FILE *out, const orthros_table_col *cols, int n)
{
    orthros_table_open(t, fmt, NULL, cols, n);
    t->out = out;
}

static int finish(orthros_table *t)
{
    t->own = 0;
    return orthros_table_close(t);
}

static void fmt4(char *v, double x)
{
    if (isnan(x)) snprintf(v, ORTHROS_NAME_MAX, "N/A");
    else snprintf(v, ORTHROS_NAME_MAX, "%.4f", x);
}

/* The task's name in lm-eval's table: --name, else the tasks file's name without .jsonl. */
static void task_name(char *out, size_t n, const orthros_eval_config *c)
{
    if (c->name[0]) {
        snprintf(out, n, "%s", c->name);
        return;
    }
    const char *t = c->text ? c->text : c->task, *base = strrchr(t, '/') ? strrchr(t, '/') + 1 : t;
    size_t len = strlen(base);
    if (len > 6 && !strcmp(base + len - 6, ".jsonl")) len -= 6;
    snprintf(out, n, "%.*s", (int)(len < n - 1 ? len : n - 1), base);
}

/* lm-eval's metric rows of one cell, sorted by metric name as lm-eval sorts them. */
typedef struct {
    const char *metric;
    double value, stderr_;
} metric_row;

static int cell_metrics(metric_row *m, const orthros_eval_file *f, const orthros_eval_cell *c)
{
    int n = 0;
    if (orthros_eval_is_mc(c->task)) {
        m[n++] = (metric_row){"acc", c->accuracy, c->acc_stderr};
        /* lm-eval's winogrande task lists acc alone */
        if (strcmp(f->cfg.layout, "winogrande")) m[n++] = (metric_row){"acc_norm", c->acc_norm, c->acc_norm_stderr};
    } else if (!strcmp(c->task, "recall")) {
        m[n++] = (metric_row){"contains", c->accuracy, orthros_eval_binary_stderr(c->correct, c->n)};
        if (!isnan(c->exact_match)) {
            m[n++] = (metric_row){"exact_match", c->exact_match, c->exact_match_stderr};
            m[n++] = (metric_row){"f1", c->f1, c->f1_stderr};
        }
    }
    return n;
}

int orthros_eval_lmeval_table(const orthros_eval_file *f, orthros_table_format fmt, FILE *out)
{
    static const orthros_table_col human[] = {{"Tasks", -16, 0}, {"Version", 7, 1}, {"Filter", -6, 0}, {"n-shot", 6, 1},
                                              {"Metric", -11, 0}, {"", 1, 0},       {"Value", 8, 1},   {"", 1, 0},
                                              {"Stderr", 8, 1}};
    static const orthros_table_col machine[] = {{"Arch", -12, 0}, {"Tasks", -16, 0}, {"Version", 7, 0}, {"Filter", -6, 0},
                                                {"n-shot", 6, 1}, {"Metric", -11, 0}, {"Value", 8, 1},  {"Stderr", 8, 1}};
    int per_arch = fmt == ORTHROS_TABLE_TEXT || fmt == ORTHROS_TABLE_MD;
    orthros_table t;
    open_on(&t, fmt, out, per_arch ? human : machine, per_arch ? 9 : 8);
    if (!per_arch) orthros_table_context(&t, f->header, f->cfg.model, NAN); /* lm-eval's model line names it otherwise */
    char name[64], version[16], shots[16];
    task_name(name, sizeof name, &f->cfg);
    snprintf(version, sizeof version, "%s",
             orthros_eval_is_mc(f->cfg.task) && strcmp(f->cfg.layout, "generic") ? "1" : "N/A");
    snprintf(shots, sizeof shots, "%d", f->cfg.shots > 0 ? f->cfg.shots : 0);
    for (size_t i = 0; i < f->n_cells; i++) {
        const orthros_eval_cell *c = &f->cells[i];
        metric_row m[4];
        int n = cell_metrics(m, f, c);
        if (!n) continue;
        if (per_arch) {
            /* lm-eval's model line, then its table */
            char line[1400], limit[32];
            if (f->cfg.limit > 0) snprintf(limit, sizeof limit, "%lld", (long long)f->cfg.limit);
            else snprintf(limit, sizeof limit, "None");
            snprintf(line, sizeof line, "orthros (model=%.600s,arch=%s,device=%s%s%s), limit: %s, num_fewshot: %s, samples: %lld",
                     f->cfg.model ? f->cfg.model : "?", c->arch, f->cfg.device, f->cfg.score[0] ? ",score=" : "",
                     f->cfg.score, limit, shots, (long long)c->n);
            if (t.rows || i) fputc('\n', out);
            fprintf(out, "%s\n", line);
            if (fmt == ORTHROS_TABLE_MD) fputc('\n', out);
            t.header_done = 0;
        }
        for (int k = 0; k < n; k++) {
            char v[9][ORTHROS_NAME_MAX];
            const char *cells[9];
            int j = 0;
            if (!per_arch) snprintf(v[j++], ORTHROS_NAME_MAX, "%s", c->arch);
            snprintf(v[j++], ORTHROS_NAME_MAX, "%s", k && per_arch ? "" : name);
            snprintf(v[j++], ORTHROS_NAME_MAX, "%s", k && per_arch ? "" : version);
            snprintf(v[j++], ORTHROS_NAME_MAX, "none");
            snprintf(v[j++], ORTHROS_NAME_MAX, "%s", shots);
            snprintf(v[j++], ORTHROS_NAME_MAX, "%s", m[k].metric);
            if (per_arch) snprintf(v[j++], ORTHROS_NAME_MAX, "\xe2\x86\x91"); /* higher is better */
            fmt4(v[j++], m[k].value);
            if (per_arch) snprintf(v[j++], ORTHROS_NAME_MAX, "%s", isnan(m[k].stderr_) ? "" : "\xc2\xb1");
            fmt4(v[j++], m[k].stderr_);
            for (int x = 0; x < j; x++) cells[x] = v[x];
            int rc = orthros_table_row(&t, cells);
            if (rc) return rc;
        }
    }
    return finish(&t);
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int orthros_eval_ruler_pivot(const orthros_eval_file *f, orthros_table_format fmt, FILE *out)
{
    enum { MAXL = ORTHROS_TABLE_MAX_COLS - 2, MAXA = 64 };
    int lens[MAXL], nl = 0, na = 0;
    char archs[MAXA][ORTHROS_NAME_MAX];
    for (size_t i = 0; i < f->n_cells; i++) {
        const orthros_eval_cell *c = &f->cells[i];
        int k = 0, a = 0;
        while (k < nl && lens[k] != c->ctx) k++;
        if (k == nl && nl < MAXL) lens[nl++] = c->ctx;
        while (a < na && strcmp(archs[a], c->arch)) a++;
        if (a == na && na < MAXA) snprintf(archs[na++], ORTHROS_NAME_MAX, "%s", c->arch);
    }
    qsort(lens, (size_t)nl, sizeof *lens, cmp_int);
    orthros_table_col cols[ORTHROS_TABLE_MAX_COLS];
    char names[ORTHROS_TABLE_MAX_COLS][24];
    cols[0] = (orthros_table_col){"arch", -12, 0};
    for (int k = 0; k < nl; k++) {
        if (lens[k] % 1024 == 0) snprintf(names[k], sizeof names[k], "%dK", lens[k] / 1024);
        else snprintf(names[k], sizeof names[k], "%d", lens[k]);
        cols[1 + k] = (orthros_table_col){names[k], 7, 1};
    }
    cols[1 + nl] = (orthros_table_col){"avg", 7, 1};
    orthros_table t;
    open_on(&t, fmt, out, cols, nl + 2);
    orthros_table_context(&t, f->header, f->cfg.model, NAN);
    for (int a = 0; a < na; a++) {
        char v[ORTHROS_TABLE_MAX_COLS][ORTHROS_NAME_MAX];
        const char *cells[ORTHROS_TABLE_MAX_COLS];
        double sum = 0;
        int have = 0;
        snprintf(v[0], ORTHROS_NAME_MAX, "%.*s", ORTHROS_NAME_MAX - 1, archs[a]);
        for (int k = 0; k < nl; k++) {
            double num = 0, den = 0;
            for (size_t i = 0; i < f->n_cells; i++) {
                const orthros_eval_cell *c = &f->cells[i];
                if (c->ctx != lens[k] || strcmp(c->arch, archs[a]) || isnan(c->partial)) continue;
                num += c->partial * c->samples, den += c->samples;
            }
            v[1 + k][0] = 0;
            if (den > 0) {
                snprintf(v[1 + k], ORTHROS_NAME_MAX, "%.1f", 100 * num / den);
                sum += 100 * num / den, have++;
            }
        }
        if (have == nl && nl) snprintf(v[1 + nl], ORTHROS_NAME_MAX, "%.1f", sum / nl);
        else v[1 + nl][0] = 0; /* not every length was run */
        for (int x = 0; x < nl + 2; x++) cells[x] = v[x];
        int rc = orthros_table_row(&t, cells);
        if (rc) return rc;
    }
    if (fmt == ORTHROS_TABLE_TEXT || fmt == ORTHROS_TABLE_MD)
        orthros_table_note(&t, "RULER's pivot: per architecture and length, the mean partial score (percent) over the "
                               "cells of that length, weighted by samples; avg over the lengths");
    return finish(&t);
}

int orthros_eval_cells_table(const orthros_eval_file *f, orthros_table_format fmt, FILE *out)
{
    const char *task = f->cfg.task, *xn = orthros_eval_axis_name(task);
    orthros_table_col cols[10];
    int n;
    void (*row)(eval_run *, const orthros_eval_cell *, char (*)[ORTHROS_NAME_MAX]) = orthros_eval_accuracy_row;
    if (orthros_eval_is_ppl(task)) {
        memcpy(cols, orthros_eval_ppl_cols, sizeof orthros_eval_ppl_cols), n = 10, row = orthros_eval_ppl_row;
    } else if (orthros_eval_is_ruler(task)) {
        memcpy(cols, orthros_eval_ruler_cols, sizeof orthros_eval_ruler_cols), n = 8, row = orthros_eval_ruler_row;
    } else {
        memcpy(cols, orthros_eval_accuracy_cols, sizeof orthros_eval_accuracy_cols), n = 7;
    }
    if (!orthros_eval_is_ppl(task)) cols[2].name = xn ? xn : "x";
    if (orthros_eval_is_mc(task)) return orthros_eval_lmeval_table(f, fmt, out);
    orthros_table t;
    open_on(&t, fmt, out, cols, n);
    orthros_table_context(&t, f->header, f->cfg.model, NAN);
    for (size_t i = 0; i < f->n_cells; i++) {
        char v[ORTHROS_TABLE_MAX_COLS][ORTHROS_NAME_MAX];
        const char *cells[ORTHROS_TABLE_MAX_COLS];
        for (int k = 0; k < ORTHROS_TABLE_MAX_COLS; k++) v[k][0] = 0, cells[k] = v[k];
        row(NULL, &f->cells[i], v);
        int rc = orthros_table_row(&t, cells);
        if (rc) return rc;
    }
    return finish(&t);
}

int orthros_eval_report_table(const orthros_eval_file *f, orthros_table_format fmt, FILE *out)
{
    if (orthros_eval_is_mc(f->cfg.task) || !strcmp(f->cfg.task, "recall")) return orthros_eval_lmeval_table(f, fmt, out);
    if (orthros_eval_is_ruler(f->cfg.task)) return orthros_eval_ruler_pivot(f, fmt, out);
    return orthros_eval_cells_table(f, fmt, out);
}

void orthros_eval_print_lmeval(const eval_run *r)
{
    orthros_table_format tf = ORTHROS_TABLE_TEXT;
    orthros_table_format_parse(&tf, r->o->format);
    FILE *out = stdout;
    if (r->o->table_out && strcmp(r->o->table_out, "-") && !(out = fopen(r->o->table_out, "w"))) {
        fprintf(stderr, "eval %s: %s: cannot open for writing: %s\n", r->o->task, r->o->table_out, strerror(errno));
        return;
    }
    if (orthros_eval_lmeval_table(&r->f, tf, out)) fprintf(stderr, "eval %s: the table: %s\n", r->o->task, orthros_last_error());
    if (out != stdout) fclose(out);
}
