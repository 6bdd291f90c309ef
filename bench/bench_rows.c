/* The bench table (bench_rows.h). */
#include "bench_rows.h"

#include <math.h>
#include <string.h>

const orthros_table_col orthros_bench_cols[ORTHROS_BENCH_COLS] = {
    {"test", -14, 0},      {"arch", -11, 0},       {"phase", -7, 0},     {"ctx", 8, 1},          {"batch", 5, 1},
    {"n", 4, 1},           {"median_ms", 11, 1},   {"ci95_lo_ms", 11, 1}, {"ci95_hi_ms", 11, 1}, {"noise_pct", 9, 1},
    {"stop", -12, 0},      {"tokens_per_s", 12, 1}, {"tflops", 8, 1},     {"pct_gemm", 8, 1},     {"tbps", 7, 1},
    {"pct_copy", 8, 1}};

/* llama-bench's test name: pp512, tg128 @ d4096, pp512+tg128. */
static void test_name(char *out, size_t n, const orthros_bench_cell *c)
{
    if (!strcmp(c->phase, "prefill")) snprintf(out, n, "pp%d", c->ctx);
    else if (!strcmp(c->phase, "decode")) snprintf(out, n, "tg%d @ d%d", c->decode_tokens, c->ctx);
    else if (!strcmp(c->phase, "e2e")) snprintf(out, n, "pp%d+tg%d", c->ctx, c->decode_tokens);
    else snprintf(out, n, "%.16s %d", c->phase, c->ctx);
}

void orthros_bench_row(const orthros_bench_cell *c, char (*v)[ORTHROS_BENCH_CELL_MAX])
{
    enum { W = ORTHROS_BENCH_CELL_MAX };
    for (int i = 0; i < ORTHROS_BENCH_COLS; i++) v[i][0] = '\0';
    test_name(v[0], W, c);
    snprintf(v[1], W, "%.47s", c->arch);
    snprintf(v[2], W, "%s", c->phase);
    snprintf(v[3], W, "%d", c->ctx);
    snprintf(v[4], W, "%d", c->batch);
    if (c->state == ORTHROS_CELL_MEASURED) {
        snprintf(v[5], W, "%zu", c->n_samples);
        snprintf(v[6], W, "%.4f", c->stats.median * 1e3);
        if (isfinite(c->stats.ci_lo)) snprintf(v[7], W, "%.4f", c->stats.ci_lo * 1e3);
        if (isfinite(c->stats.ci_hi)) snprintf(v[8], W, "%.4f", c->stats.ci_hi * 1e3);
        snprintf(v[9], W, "%.1f", c->noise * 100);
        snprintf(v[10], W, "%s", c->stop_reason);
        snprintf(v[11], W, "%.1f", c->tokens_per_s);
        snprintf(v[12], W, "%.3f", c->tflops);
        snprintf(v[13], W, "%.1f", c->frac_gemm * 100);
        snprintf(v[14], W, "%.3f", c->tbps);
        snprintf(v[15], W, "%.1f", c->frac_copy * 100);
        if (!strcmp(c->phase, "allreduce")) v[13][0] = v[15][0] = '\0';
    } else {
        snprintf(v[10], W, "%s", c->state == ORTHROS_CELL_SKIPPED ? "skipped" : "failed");
    }
}

void orthros_bench_context(orthros_table *t, const orthros_bench_file *f, const orthros_bench_cell *c)
{
    double weights = c ? c->weights_bytes : NAN;
    for (size_t i = 0; i < f->n_cells && !isfinite(weights); i++) weights = f->cells[i].weights_bytes;
    orthros_table_context(t, f->header, f->cfg.model, weights);
}

void orthros_bench_note_unmeasured(orthros_table *t, const orthros_bench_cell *c)
{
    if (c->state == ORTHROS_CELL_MEASURED) return;
    char line[800];
    snprintf(line, sizeof line, "  %s %s ctx %d batch %d not measured: %.500s", c->arch, c->phase, c->ctx, c->batch,
             c->reason ? c->reason : "unknown");
    orthros_table_note(t, line);
}

int orthros_bench_speedups(orthros_table *t, const orthros_bench_file *f)
{
    static const orthros_table_col cols[] = {{"speedup_of", -11, 0}, {"over", -11, 0}, {"phase", -7, 0}, {"ctx", 8, 1},
                                             {"batch", 5, 1},        {"speedup", 8, 1}, {"ci95_lo", 8, 1}, {"ci95_hi", 8, 1}};
    if (!f->n_speedups || (t->format != ORTHROS_TABLE_TEXT && t->format != ORTHROS_TABLE_MD)) return 0;
    if (t->format == ORTHROS_TABLE_TEXT) {
        for (size_t i = 0; i < f->n_speedups; i++) {
            const orthros_speedup *e = &f->speedups[i];
            char line[256];
            snprintf(line, sizeof line, "speedup %-10s over transformer, %-7s ctx %8d batch %3d: %8.2fx [%.2f, %.2f]", e->arch,
                     e->phase, e->ctx, e->batch, e->speedup, e->ci_lo, e->ci_hi);
            orthros_table_note(t, line);
        }
        return 0;
    }
    int rc = orthros_table_next(t, cols, 8);
    for (size_t i = 0; i < f->n_speedups && !rc; i++) {
        const orthros_speedup *e = &f->speedups[i];
        char v[8][32];
        const char *cells[8];
        snprintf(v[0], sizeof v[0], "%.31s", e->arch);
        snprintf(v[1], sizeof v[1], "transformer");
        snprintf(v[2], sizeof v[2], "%.15s", e->phase);
        snprintf(v[3], sizeof v[3], "%d", e->ctx);
        snprintf(v[4], sizeof v[4], "%d", e->batch);
        snprintf(v[5], sizeof v[5], "%.2f", e->speedup);
        snprintf(v[6], sizeof v[6], "%.2f", e->ci_lo);
        snprintf(v[7], sizeof v[7], "%.2f", e->ci_hi);
        for (int k = 0; k < 8; k++) cells[k] = v[k];
        rc = orthros_table_row(t, cells);
    }
    return rc;
}

int orthros_bench_table(const orthros_bench_file *f, orthros_table_format fmt, FILE *out)
{
    orthros_table t;
    orthros_table_open(&t, fmt, NULL, orthros_bench_cols, ORTHROS_BENCH_COLS);
    t.out = out;
    orthros_bench_context(&t, f, NULL);
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
    if (!rc) rc = orthros_bench_speedups(&t, f);
    int crc = orthros_table_close(&t);
    return rc ? rc : crc;
}
