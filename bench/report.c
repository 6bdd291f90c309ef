/* The reproduce-21.9x report: the paper's claim, the measured speedup per length with its interval, where 21.9x is
 * reached (or not), and how fast the Transformer baseline is against the anchors, since a slow baseline inflates
 * every speedup. Written from result files only. */
#define _GNU_SOURCE
#include "report.h"
#include "result_bench.h"
#include "results.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cell_time(FILE *f, const orthros_bench_cell *c)
{
    if (c && c->state == ORTHROS_CELL_MEASURED) {
        fprintf(f, " %.4g [%.4g, %.4g]", c->stats.median, c->stats.ci_lo, c->stats.ci_hi);
        /* Fewer repetitions than asked (--cell-budget): say how many, since the interval then says little. */
        if (c->reps_reduced) fprintf(f, " (%zu rep%s, no warm-up)", c->n_samples, c->n_samples == 1 ? "" : "s");
        else if (c->n_samples == 1) fprintf(f, " (1 rep)"); /* asked so: the interval is a point */
        if (c->noisy) fprintf(f, " (noisy: %.1f%%)", c->noise * 100);
        fprintf(f, " |");
    } else if (c) {
        fprintf(f, " not run: %s |", c->reason ? c->reason : "unknown");
    } else {
        fprintf(f, " not run |");
    }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The context at which the series y(ctx) first reaches `level`, interpolated in log length and log y; NAN when
 * it does not. */
static double reach(const int *ctx, const double *y, int n, double level)
{
    for (int j = 0; j < n; j++) {
        if (!(y[j] >= level)) continue;
        if (j == 0 || !(y[j - 1] > 0)) return ctx[j];
        double t = (log(level) - log(y[j - 1])) / (log(y[j]) - log(y[j - 1]));
        return exp(log(ctx[j - 1]) + t * (log(ctx[j]) - log(ctx[j - 1])));
    }
    return NAN;
}

/* The SDPA anchor of (op, backend, head_dim, ctx), or NULL. */
static const orthros_anchor_case *anchor(const orthros_anchor_file *a, const char *backend, int hd, int ctx)
{
    for (size_t i = 0; a && i < a->n; i++)
        if (!strcmp(a->cases[i].op, "prefill") && !strcmp(a->cases[i].backend, backend) && a->cases[i].head_dim == hd &&
            a->cases[i].ctx == ctx && a->cases[i].batch == 1)
            return &a->cases[i];
    return NULL;
}

static void model_section(FILE *f, const orthros_bench_file *r, const orthros_anchor_file *anchors, int head_dim)
{
    char dev[200];
    orthros_result_device_text(dev, sizeof dev, &r->hdr);
    if (r->cfg.tp > 1)
        fprintf(f, "## %s, tensor parallel over %d ranks\n\nBoth architectures with the same --tp %d; TFLOP/s are those "
                   "of all the ranks together, the ceilings one GPU's.\n\n",
                r->cfg.model, r->cfg.tp, r->cfg.tp);
    else
        fprintf(f, "## %s\n\n", r->cfg.model);
    fprintf(f, "Device: %s (%s backend), commit %s%s. Ceilings measured in the run: GEMM %.3g TFLOP/s, copy %.3g TB/s, "
               "read %.3g TB/s. Timer: %s.\n\n",
            dev, r->hdr.backend, r->hdr.git_commit, r->hdr.dirty ? " (dirty)" : "", r->ceilings.gemm_tflops,
            r->ceilings.copy_tbps, r->ceilings.read_tbps, r->cfg.timer);
    fprintf(f, "| context | transformer prefill, s [95%% CI] | orthros prefill, s [95%% CI] | speedup [95%% CI] | "
               "transformer TFLOP/s |\n| --- | --- | --- | --- | --- |\n");
    int ctxs[512], n = 0;
    double sp[512] = {0}, lo[512] = {0}, hi[512] = {0};
    for (size_t i = 0; i < r->n_cells && n < 512; i++) {
        const orthros_bench_cell *c = &r->cells[i];
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ctxs[k] == c->ctx;
        if (!seen && !strcmp(c->phase, "prefill") && c->batch == 1) ctxs[n++] = c->ctx;
    }
    qsort(ctxs, (size_t)n, sizeof *ctxs, cmp_int);
    int m = 0, mctx[512] = {0};
    for (int i = 0; i < n; i++) {
        const orthros_bench_cell *t = orthros_bench_file_find(r, "transformer", "prefill", ctxs[i], 1, 0);
        const orthros_bench_cell *o = orthros_bench_file_find(r, "orthros", "prefill", ctxs[i], 1, 0);
        const orthros_speedup *s = NULL;
        for (size_t k = 0; k < r->n_speedups; k++)
            if (!strcmp(r->speedups[k].arch, "orthros") && !strcmp(r->speedups[k].phase, "prefill") &&
                r->speedups[k].ctx == ctxs[i] && r->speedups[k].batch == 1)
                s = &r->speedups[k];
        fprintf(f, "| %d |", ctxs[i]);
        cell_time(f, t);
        cell_time(f, o);
        if (s) {
            fprintf(f, " %.2fx [%.2f, %.2f] |", s->speedup, s->ci_lo, s->ci_hi);
            mctx[m] = ctxs[i], sp[m] = s->speedup, lo[m] = s->ci_lo, hi[m] = s->ci_hi, m++;
        } else {
            fprintf(f, " - |");
        }
        if (t && t->state == ORTHROS_CELL_MEASURED) fprintf(f, " %.3g |\n", t->tflops);
        else fprintf(f, " - |\n");
    }
    double at = reach(mctx, sp, m, 21.9), at_early = reach(mctx, hi, m, 21.9), at_late = reach(mctx, lo, m, 21.9);
    double best = 0;
    for (int i = 0; i < m; i++) best = sp[i] > best ? sp[i] : best;
    if (isfinite(at)) {
        fprintf(f, "\n**21.9x is reached** at a context of about %.0f tokens (interpolated in log length and log speedup "
                   "between the measured points)",
                at);
        if (isfinite(at_early) && isfinite(at_late))
            fprintf(f, "; from the 95%% intervals, between %.0f and %.0f tokens.\n", at_early, at_late);
        else if (isfinite(at_early))
            fprintf(f, "; the interval's upper end reaches it from %.0f tokens, its lower end not in the measured range.\n",
                    at_early);
        else
            fprintf(f, ".\n");
    } else {
        fprintf(f, "\n**21.9x is not reached** in the measured lengths; the largest measured speedup is %.2fx%s.\n", best,
                isfinite(at_early) ? " (the upper end of an interval reaches it)" : "");
    }
    for (size_t k = 0; k < r->n_summary && n > 1; k++) /* (one length measured says nothing of where) */
        if (!strcmp(r->summary[k].arch, "orthros") && !strcmp(r->summary[k].phase, "prefill") && r->summary[k].batch == 1 &&
            isfinite(r->summary[k].crossover_ctx))
            fprintf(f, "Orthros is faster from %.0f tokens on (the shortest measured length with speedup >= 1).\n",
                    r->summary[k].crossover_ctx);
    /* The baseline against the anchors. */
    const orthros_bench_cell *t128 = orthros_bench_file_find(r, "transformer", "prefill", 131072, 1, 1);
    if (!strcmp(r->cfg.model, "preset:llama3.2-1b") && t128)
        fprintf(f, "\nBaseline check: this Transformer prefills 128K tokens of the Llama-3.2-1B shape in %.2f s; Hugging "
                   "Face transformers with SDPA takes 3.07 s on the same kind of GPU (DESIGN section 6), so our baseline "
                   "is %.2fx %s than that anchor.\n",
                t128->stats.median, fmax(t128->stats.median / 3.07, 3.07 / t128->stats.median),
                t128->stats.median > 3.07 ? "slower" : "faster");
    int rows = 0;
    for (int i = 0; anchors && i < n; i++)
        rows += anchor(anchors, "flash", head_dim, ctxs[i]) || anchor(anchors, "cudnn", head_dim, ctxs[i]);
    if (rows) {
        fprintf(f, "\nAttention anchors of this shape (head dim %d) measured on %s, causal SDPA, one layer's attention "
                   "op, TFLOP/s:\n\n| context | flash | cuDNN |\n| --- | --- | --- |\n",
                head_dim, anchors->device_name);
        for (int i = 0; i < n; i++) {
            const orthros_anchor_case *fl = anchor(anchors, "flash", head_dim, ctxs[i]), *cu = anchor(anchors, "cudnn", head_dim, ctxs[i]);
            if (!fl && !cu) continue;
            fprintf(f, "| %d | %.0f | %.0f |\n", ctxs[i], fl ? fl->tflops : NAN, cu ? cu->tflops : NAN);
        }
    }
    fprintf(f, "\n");
}

/* ---- writing a report ---- */

typedef void (*report_intro)(FILE *f, const char *now);
typedef void (*report_section)(FILE *f, const orthros_bench_file *r, const void *ctx);

/* A markdown report of result files, written atomically to md_path: the intro (given the time), then a section per
 * file (a file that does not exist: "Not run."). */
static int write_report(const char *md_path, const char *const *json_paths, int n, report_intro intro,
                        report_section section, const void *ctx)
{
    char *buf = NULL, now[64];
    size_t len = 0;
    int rc = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    orthros_utc_now(now, sizeof now);
    intro(f, now);
    for (int i = 0; i < n && !rc; i++) {
        orthros_bench_file r;
        int exists = 0;
        if ((rc = orthros_bench_file_read(&r, json_paths[i], 1, &exists))) break;
        if (!exists) {
            fprintf(f, "## %s\n\nNot run.\n\n", json_paths[i]);
            continue;
        }
        section(f, &r, ctx);
        orthros_bench_file_free(&r);
    }
    int bad = fclose(f) != 0;
    if (!rc) rc = bad ? orthros_error(ORTHROS_ENOMEM, "out of memory") : orthros_write_file_atomic(md_path, buf, len);
    free(buf);
    return rc;
}

static void reproduce_intro(FILE *f, const char *now)
{
    fprintf(f, "# Reproducing the 21.9x prefill speedup\n\n"
               "Claim (Orthros, arXiv 2610.13735): Orthros attention, linear while prefilling and full softmax attention "
               "while decoding, prefills 21.9x faster than a Transformer of the same size. This report is written by "
               "`orthros bench --recipe reproduce-21.9x` from its result files (%s); every figure below is measured, "
               "each time the median of the repetitions with a bootstrap 95%% interval; cells that were not run say why. "
               "Dummy weights (speed does not depend on their values); batch 1.\n\n",
            now);
}

/* A model's section, with the anchors (ctx: the anchor file, or NULL) of its preset's head dim. */
static void reproduce_section(FILE *f, const orthros_bench_file *r, const void *ctx)
{
    orthros_model_config mc;
    int hd = !strncmp(r->cfg.model, "preset:", 7) && !orthros_preset_config(&mc, r->cfg.model + 7) ? mc.head_dim : 0;
    model_section(f, r, ctx, hd);
}

int orthros_bench_report(const char *md_path, const char *const *json_paths, int n, const char *anchors_path)
{
    orthros_anchor_file anchors = {0};
    int rc = anchors_path ? orthros_anchor_file_read(&anchors, anchors_path) : 0;
    if (rc) return rc;
    rc = write_report(md_path, json_paths, n, reproduce_intro, reproduce_section, anchors_path ? &anchors : NULL);
    orthros_anchor_file_free(&anchors);
    return rc;
}

/* ---- the e2e report (orthros bench --recipe e2e) ---- */

/* One file's section: a prompt of P tokens, then N decoded; per context and architecture the time to first token,
 * the decoded tokens' time and per token against the floor, the total and the prefill's share of it; orthros over
 * transformer on the total and on each part. */
static void e2e_section(FILE *f, const orthros_bench_file *r, const void *ctx)
{
    (void)ctx;
    char dev[200];
    orthros_result_device_text(dev, sizeof dev, &r->hdr);
    const cJSON *env = r->header ? cJSON_GetObjectItemCaseSensitive(r->header, "environment") : NULL;
    const cJSON *device = env ? cJSON_GetObjectItemCaseSensitive(env, "device") : NULL;
    const cJSON *kn = device ? cJSON_GetObjectItemCaseSensitive(device, "kernels") : NULL;
    const char *kernels = cJSON_IsString(kn) && kn->valuestring[0] ? kn->valuestring : "-";
    fprintf(f, "## %s, %d tokens decoded after the prompt\n\n", r->cfg.model, r->cfg.decode_tokens);
    fprintf(f, "Device: %s (%s backend, kernels: %s), commit %s%s. Read ceiling measured in the run: %.3g TB/s.\n\n",
            dev, r->hdr.backend, kernels, r->hdr.git_commit, r->hdr.dirty ? " (dirty)" : "",
            r->ceilings.read_tbps);
    fprintf(f, "| prompt | arch | time to first token, ms | decode, ms | per output token, ms | its floor, ms (%% reached) "
               "| total, ms [95%% CI] | prefill share |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    int ctxs[256], n = 0;
    for (size_t i = 0; i < r->n_cells && n < 256; i++) {
        const orthros_bench_cell *c = &r->cells[i];
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ctxs[k] == c->ctx;
        if (!seen && !strcmp(c->phase, "e2e") && c->batch == 1) ctxs[n++] = c->ctx;
    }
    qsort(ctxs, (size_t)n, sizeof *ctxs, cmp_int);
    static const char *const archs[] = {"transformer", "orthros"};
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 2; a++) {
            const orthros_bench_cell *c = orthros_bench_file_find(r, archs[a], "e2e", ctxs[i], 1, 0);
            fprintf(f, "| %d | %s |", ctxs[i], archs[a]);
            if (!c || c->state != ORTHROS_CELL_MEASURED || !isfinite(c->ttft_s)) {
                fprintf(f, " not run%s%s | | | | | |\n", c && c->reason ? ": " : "", c && c->reason ? c->reason : "");
                continue;
            }
            const double dec = c->tpot_s * c->decode_tokens;
            fprintf(f, " %.2f | %.2f | %.4f | %.4f (%.0f%%) | %.2f [%.2f, %.2f] | %.0f%% |\n", c->ttft_s * 1e3, dec * 1e3,
                    c->tpot_s * 1e3, c->tpot_floor_s * 1e3, 100 * c->tpot_floor_s / c->tpot_s, c->stats.median * 1e3,
                    c->stats.ci_lo * 1e3, c->stats.ci_hi * 1e3, 100 * c->ttft_s / c->stats.median);
        }
    fprintf(f, "\n");
    for (int i = 0; i < n; i++) {
        const orthros_bench_cell *t = orthros_bench_file_find(r, "transformer", "e2e", ctxs[i], 1, 1);
        const orthros_bench_cell *o = orthros_bench_file_find(r, "orthros", "e2e", ctxs[i], 1, 1);
        if (!t || !o || !isfinite(t->ttft_s) || !isfinite(o->ttft_s)) continue;
        const orthros_speedup *sp = NULL;
        for (size_t k = 0; k < r->n_speedups; k++)
            if (!strcmp(r->speedups[k].arch, "orthros") && !strcmp(r->speedups[k].phase, "e2e") &&
                r->speedups[k].ctx == ctxs[i] && r->speedups[k].batch == 1)
                sp = &r->speedups[k];
        fprintf(f, "- %d-token prompt: orthros over transformer end to end %.2fx", ctxs[i], t->stats.median / o->stats.median);
        if (sp) fprintf(f, " [%.2f, %.2f]", sp->ci_lo, sp->ci_hi);
        fprintf(f, "; time to first token %.2fx; per output token %.2fx (both decode with full attention over the same "
                   "cache).\n",
                t->ttft_s / o->ttft_s, t->tpot_s / o->tpot_s);
    }
    fprintf(f, "\n");
}

static void e2e_intro(FILE *f, const char *now)
{
    fprintf(f, "# End to end: a prompt, then generated tokens\n\n"
               "The paper's end-to-end inference gains as the harness measures them, written by `orthros bench --recipe e2e` "
               "from its result files (%s). A sample is the prefill of a prompt of P tokens (its last position's logits "
               "give the first token) and N decode steps of one token each, timed by the backend's timer (CUDA events "
               "on its stream on a GPU); the time to first token is the prefill, the time per output token the decode "
               "steps' time over N (the decode column: that median times N). Medians of the repetitions, bootstrap 95%% intervals on the totals. The floor of a decode step: the "
               "bytes it reads (the weights once, the KV cache up to its position) over the read ceiling measured in "
               "the same run (docs/bench.md). Dummy weights; batch 1. The decode mode in effect is the \"decode ...\" "
               "part of the kernels named (none: the plain step).\n\n",
            now);
}

int orthros_bench_e2e_report(const char *md_path, const char *const *json_paths, int n)
{
    return write_report(md_path, json_paths, n, e2e_intro, e2e_section, NULL);
}
