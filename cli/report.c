/* orthros report FILE...: the table of any result file (bench, eval, PyTorch anchors), validated first, in any -o format;
 * nothing is run. */
#include "bench_rows.h"
#include "options.h"
#include "report_cmd.h"
#include "result_any.h"
#include "result_bench.h"
#include "result_eval.h"
#include "results.h"
#include "tables.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The PyTorch anchors: one row per case (an SDPA op, or a whole decode step of a model shape); a number a case has
 * not (a step's head dim and heads, a rate the file does not give) is left empty (null in the JSON formats). */
static int anchors_table(const orthros_anchor_file *f, orthros_table_format fmt, FILE *out)
{
    static const orthros_table_col cols[] = {{"op", -8, 0},      {"backend", -8, 0}, {"model", -12, 0}, {"head_dim", 8, 1},
                                             {"ctx", 8, 1},      {"batch", 5, 1},    {"hq", 4, 1},      {"hkv", 4, 1},
                                             {"median_ms", 11, 1}, {"tflops", 9, 1}, {"tbps", 8, 1}};
    enum { NC = sizeof cols / sizeof *cols };
    orthros_table t;
    orthros_table_open(&t, fmt, NULL, cols, NC);
    t.out = out;
    int rc = 0;
    for (size_t i = 0; i < f->n && !rc; i++) {
        const orthros_anchor_case *c = &f->cases[i];
        char v[NC][48];
        const char *cells[NC];
        const int ints[] = {c->head_dim, c->ctx, c->batch, c->hq, c->hkv};
        snprintf(v[0], 48, "%s", c->op);
        snprintf(v[1], 48, "%s", c->backend);
        snprintf(v[2], 48, "%s", c->model[0] ? c->model : "-");
        for (int k = 0; k < 5; k++) {
            if (ints[k] > 0) snprintf(v[3 + k], 48, "%d", ints[k]);
            else v[3 + k][0] = '\0';
        }
        snprintf(v[8], 48, "%.4f", c->median_s * 1e3);
        if (isnan(c->tflops)) v[9][0] = '\0';
        else snprintf(v[9], 48, "%.3f", c->tflops);
        if (isnan(c->tbps)) v[10][0] = '\0';
        else snprintf(v[10], 48, "%.3f", c->tbps);
        for (int k = 0; k < NC; k++) cells[k] = v[k];
        rc = orthros_table_row(&t, cells);
    }
    int crc = orthros_table_close(&t);
    return rc ? rc : crc;
}

int orthros_cmd_report(int argc, char **argv)
{
    const char *cmd = "report", *format = "text", *table_out = NULL;
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Prints the table of result files without running anything: bench files (the bench table and its "
                     "speedups), eval files (mc and recall: lm-eval's results table; ruler: RULER's pivot, architecture x "
                     "length with the average; the other tasks: the per-cell table of their command) and PyTorch anchor "
                     "files (SDPA of bench/kernels/anchors.py, decode steps of decode_anchor.py). Every file is "
                     "validated first; one that does not match its schema is refused, naming the file and the field.\n"
                     "  orthros report FILE... [-o text|md|csv|jsonl|json] [--table-out FILE]",
                     2);
    orthros_cmd_add(&c, "o", ORTHROS_OPT_STR, &format, "FMT", "table format: text|md|csv|jsonl|json (default text)");
    orthros_cmd_add(&c, "table-out", ORTHROS_OPT_STR, &table_out, "FILE", "write the tables to FILE instead of stdout");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    orthros_table_format tf;
    if (orthros_table_format_parse(&tf, format)) return orthros_cmd_usage(&c, "-o: %s", orthros_last_error());
    if (c.n_pos < 1) return orthros_cmd_usage(&c, "name at least one result file (see --help)");
    if ((tf == ORTHROS_TABLE_JSON || tf == ORTHROS_TABLE_CSV) && c.n_pos > 1)
        return orthros_cmd_usage(&c, "-o %s holds one table: name one file", format);
    orthros_any_result *in = calloc((size_t)c.n_pos, sizeof *in);
    if (!in) return orthros_cmd_fail(cmd, orthros_error(ORTHROS_ENOMEM, "out of memory"));
    int rc = 0, n = 0;
    /* Every file read and validated before anything is printed. */
    for (; n < c.n_pos && !rc; n++) rc = orthros_any_result_read(&in[n], c.pos[n]);
    FILE *out = stdout;
    if (!rc && table_out && strcmp(table_out, "-") && !(out = fopen(table_out, "w")))
        rc = orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", table_out, strerror(errno));
    for (int i = 0; !rc && i < c.n_pos; i++) {
        if (c.n_pos > 1 && (tf == ORTHROS_TABLE_TEXT || tf == ORTHROS_TABLE_MD))
            fprintf(out, "%s%s%s\n\n", i ? "\n" : "", tf == ORTHROS_TABLE_MD ? "### " : "== ", c.pos[i]);
        if (in[i].kind == ORTHROS_RESULT_BENCH) rc = orthros_bench_table(&in[i].bench, tf, out);
        else if (in[i].kind == ORTHROS_RESULT_EVAL) rc = orthros_eval_report_table(&in[i].eval, tf, out);
        else rc = anchors_table(&in[i].anchors, tf, out);
    }
    if (out && out != stdout && fclose(out) && !rc) rc = orthros_error(ORTHROS_EIO, "%s: cannot write", table_out);
    for (int i = 0; i < n; i++) orthros_any_result_free(&in[i]);
    free(in);
    return rc ? orthros_cmd_fail(cmd, rc) : 0;
}
