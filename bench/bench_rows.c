/* The bench table (bench_rows.h). */
#include "bench_rows.h"

#include <string.h>

const orthros_table_col orthros_bench_cols[ORTHROS_BENCH_COLS] = {
    {"arch", -12, 0},   {"phase", -8, 0},      {"ctx", 8, 1},   {"batch", 5, 1},   {"n", 4, 1},
    {"median_ms", 11, 1}, {"ci95_ms", 23, 0},  {"noise%", 6, 1}, {"stop", -12, 0}, {"tokens/s", 12, 1},
    {"TFLOP/s", 9, 1},  {"%gemm", 6, 1},       {"TB/s", 8, 1},  {"%copy", 6, 1}};

void orthros_bench_row(const orthros_bench_cell *c, char (*v)[ORTHROS_BENCH_CELL_MAX])
{
    enum { W = ORTHROS_BENCH_CELL_MAX };
    for (int i = 0; i < ORTHROS_BENCH_COLS; i++) v[i][0] = '\0';
    snprintf(v[0], W, "%.47s", c->arch);
    snprintf(v[1], W, "%s", c->phase);
    snprintf(v[2], W, "%d", c->ctx);
    snprintf(v[3], W, "%d", c->batch);
    if (c->state == ORTHROS_CELL_MEASURED) {
        snprintf(v[4], W, "%zu", c->n_samples);
        snprintf(v[5], W, "%.4f", c->stats.median * 1e3);
        snprintf(v[6], W, "[%.4f, %.4f]", c->stats.ci_lo * 1e3, c->stats.ci_hi * 1e3);
        snprintf(v[7], W, "%.1f", c->noise * 100);
        snprintf(v[8], W, "%s", c->stop_reason);
        snprintf(v[9], W, "%.1f", c->tokens_per_s);
        snprintf(v[10], W, "%.3f", c->tflops);
        snprintf(v[11], W, "%.1f", c->frac_gemm * 100);
        snprintf(v[12], W, "%.3f", c->tbps);
        snprintf(v[13], W, "%.1f", c->frac_copy * 100);
        if (!strcmp(c->phase, "allreduce")) v[11][0] = v[13][0] = '\0';
    } else {
        snprintf(v[8], W, "%s", c->state == ORTHROS_CELL_SKIPPED ? "skipped" : "failed");
    }
}

void orthros_bench_note_unmeasured(orthros_table *t, const orthros_bench_cell *c)
{
    if (c->state == ORTHROS_CELL_MEASURED) return;
    char line[800];
    snprintf(line, sizeof line, "  %s %s ctx %d batch %d not measured: %.500s", c->arch, c->phase, c->ctx, c->batch,
             c->reason ? c->reason : "unknown");
    orthros_table_note(t, line);
}

int orthros_bench_table(const orthros_bench_file *f, orthros_table_format fmt, FILE *out)
{
    orthros_table t;
    orthros_table_open(&t, fmt, NULL, orthros_bench_cols, ORTHROS_BENCH_COLS);
    t.out = out;
    int rc = 0;
    for (size_t i = 0; i < f->n_cells && !rc; i++) {
        const orthros_bench_cell *c = &f->cells[i];
        char v[ORTHROS_BENCH_COLS][ORTHROS_BENCH_CELL_MAX];
        const char *cells[ORTHROS_BENCH_COLS];
        orthros_bench_row(c, v);
        for (int k = 0; k < ORTHROS_BENCH_COLS; k++) cells[k] = v[k];
        rc = orthros_table_row(&t, cells);
        if (!rc) orthros_bench_note_unmeasured(&t, c);
    }
    for (size_t i = 0; i < f->n_speedups && !rc; i++) {
        const orthros_speedup *e = &f->speedups[i];
        char line[256];
        snprintf(line, sizeof line, "speedup %-10s over transformer, %-7s ctx %8d batch %3d: %8.2fx [%.2f, %.2f]", e->arch,
                 e->phase, e->ctx, e->batch, e->speedup, e->ci_lo, e->ci_hi);
        orthros_table_note(&t, line);
    }
    int crc = orthros_table_close(&t);
    return rc ? rc : crc;
}
