/* The reproduce-21.9x report: the paper's claim, the measured speedup per length with its interval, where 21.9x is
 * reached (or not), and how fast the Transformer baseline is against the anchors, since a slow baseline inflates
 * every speedup. */
#define _GNU_SOURCE
#include "report.h"
#include "results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItem(o, k); }
static double num(const cJSON *o, const char *k) { return cJSON_IsNumber(get(o, k)) ? get(o, k)->valuedouble : NAN; }
static const char *str(const cJSON *o, const char *k) { return cJSON_IsString(get(o, k)) ? get(o, k)->valuestring : ""; }

static const cJSON *find(const cJSON *meas, const char *arch, int ctx)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, meas) if (!strcmp(str(m, "arch"), arch) && !strcmp(str(m, "phase"), "prefill") &&
                                    (int)num(m, "ctx") == ctx && (int)num(m, "batch") == 1) return m;
    return NULL;
}

static void cell_time(FILE *f, const cJSON *m)
{
    if (m && get(m, "stats")) {
        const cJSON *st = get(m, "stats");
        fprintf(f, " %.4g [%.4g, %.4g]", num(st, "median"), num(st, "ci95_lo"), num(st, "ci95_hi"));
        /* Fewer repetitions than asked (--cell-budget): say how many, since the interval then says little. */
        if (get(m, "reps_reduced")) fprintf(f, " (%d rep%s, no warm-up)", (int)num(st, "n"), num(st, "n") == 1 ? "" : "s");
        fprintf(f, " |");
    } else if (m && (get(m, "skipped") || get(m, "error"))) {
        fprintf(f, " not run: %s |", get(m, "skipped") ? str(m, "skipped") : str(m, "error"));
    } else {
        fprintf(f, " not run |");
    }
}

static void model_section(FILE *f, const cJSON *r, const cJSON *anchors)
{
    const cJSON *cfg = get(get(r, "run"), "config"), *meas = get(r, "measurements"), *dev = get(get(r, "environment"), "device");
    fprintf(f, "## %s\n\n", str(cfg, "model"));
    fprintf(f, "Device: %s (%s backend), commit %s%s, run %s to %s. Ceilings measured in the run: GEMM %.3g TFLOP/s, "
               "copy %.3g TB/s. Timer: %s.\n\n",
            str(dev, "name"), str(get(r, "environment"), "backend"), str(get(r, "tool"), "git_commit"),
            cJSON_IsTrue(get(get(r, "tool"), "dirty")) ? " (dirty)" : "", str(get(r, "run"), "start_time"),
            str(get(r, "run"), "end_time"), num(get(r, "ceilings"), "gemm_tflops"), num(get(r, "ceilings"), "copy_tbps"),
            str(cfg, "timer"));
    fprintf(f, "| context | transformer prefill, s [95%% CI] | orthros prefill, s [95%% CI] | speedup [95%% CI] | "
               "transformer TFLOP/s |\n| --- | --- | --- | --- | --- |\n");
    int ctxs[256], n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, meas)
    {
        int c = (int)num(m, "ctx"), seen = 0;
        for (int i = 0; i < n; i++) seen |= ctxs[i] == c;
        if (!seen && n < 256 && !strcmp(str(m, "phase"), "prefill")) ctxs[n++] = c;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ctxs[j - 1] > ctxs[j]; j--) {
            int t = ctxs[j];
            ctxs[j] = ctxs[j - 1];
            ctxs[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        const cJSON *t = find(meas, "transformer", ctxs[i]), *o = find(meas, "orthros", ctxs[i]), *sp = NULL, *e;
        cJSON_ArrayForEach(e, get(get(r, "speedups"), "cells")) if (!strcmp(str(e, "arch"), "orthros") &&
                                                                     !strcmp(str(e, "phase"), "prefill") &&
                                                                     (int)num(e, "ctx") == ctxs[i] && num(e, "batch") == 1) sp = e;
        fprintf(f, "| %d |", ctxs[i]);
        cell_time(f, t);
        cell_time(f, o);
        if (sp) fprintf(f, " %.2fx [%.2f, %.2f] |", num(sp, "speedup"), num(sp, "ci95_lo"), num(sp, "ci95_hi"));
        else fprintf(f, " - |");
        if (t && get(t, "throughput")) fprintf(f, " %.3g |\n", num(get(t, "throughput"), "tflops"));
        else fprintf(f, " - |\n");
    }
    const cJSON *s;
    cJSON_ArrayForEach(s, get(get(r, "speedups"), "summary"))
    {
        if (strcmp(str(s, "arch"), "orthros") || strcmp(str(s, "phase"), "prefill") || num(s, "batch") != 1) continue;
        if (cJSON_IsTrue(get(s, "reached_21_9x")))
            fprintf(f, "\n**21.9x is reached** at a context of about %.0f tokens (interpolated in log length between the "
                       "measured points).\n",
                    num(s, "ctx_at_21_9x"));
        else
            fprintf(f, "\n**21.9x is not reached** in the measured lengths; the largest measured speedup is %.2fx.\n",
                    num(s, "max_speedup"));
        if (cJSON_IsNumber(get(s, "crossover_ctx")))
            fprintf(f, "Orthros is faster from %.0f tokens on (the shortest measured length with speedup >= 1).\n",
                    num(s, "crossover_ctx"));
    }
    /* The baseline against the anchors. */
    const cJSON *t128 = find(meas, "transformer", 131072);
    if (!strcmp(str(cfg, "model"), "preset:llama3.2-1b") && t128 && get(t128, "stats"))
        fprintf(f, "\nBaseline check: this Transformer prefills 128K tokens of the Llama-3.2-1B shape in %.2f s; Hugging "
                   "Face transformers with SDPA takes 3.07 s on the same GPU (DESIGN section 6), so our baseline is "
                   "%.2fx %s than that anchor.\n",
                num(get(t128, "stats"), "median"), fmax(num(get(t128, "stats"), "median") / 3.07, 3.07 / num(get(t128, "stats"), "median")),
                num(get(t128, "stats"), "median") > 3.07 ? "slower" : "faster");
    if (anchors) {
        fprintf(f, "\nAttention anchors measured on %s (PyTorch %s, causal SDPA, 32 query / 8 kv heads), TFLOP/s:\n\n"
                   "| head dim | context | flash | cuDNN |\n| --- | --- | --- | --- |\n",
                str(anchors, "device"), str(anchors, "torch"));
        const cJSON *a, *b;
        cJSON_ArrayForEach(a, get(anchors, "cases"))
        {
            if (strcmp(str(a, "op"), "prefill") || strcmp(str(a, "backend"), "flash")) continue;
            double cud = NAN;
            cJSON_ArrayForEach(b, get(anchors, "cases")) if (!strcmp(str(b, "op"), "prefill") &&
                                                             !strcmp(str(b, "backend"), "cudnn") &&
                                                             num(b, "ctx") == num(a, "ctx") &&
                                                             num(b, "head_dim") == num(a, "head_dim")) cud = num(b, "tflops");
            fprintf(f, "| %.0f | %.0f | %.0f | %.0f |\n", num(a, "head_dim"), num(a, "ctx"), num(a, "tflops"), cud);
        }
    }
    fprintf(f, "\n");
}

int orthros_bench_report(const char *md_path, const char *const *json_paths, int n, const char *anchors_path)
{
    cJSON *anchors = NULL;
    int rc = anchors_path ? orthros_result_load(&anchors, anchors_path) : 0;
    if (rc) return rc;
    if (anchors_path && !anchors) return orthros_error(ORTHROS_EIO, "%s: no such anchors file", anchors_path);
    FILE *f = fopen(md_path, "w");
    if (!f) {
        cJSON_Delete(anchors);
        return orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", md_path, strerror(errno));
    }
    char now[64];
    orthros_result_now(now, sizeof now);
    fprintf(f, "# Reproducing the 21.9x prefill speedup\n\n"
               "Claim (Orthros, arXiv 2610.13735): Orthros attention, linear while prefilling and full softmax attention "
               "while decoding, prefills 21.9x faster than a Transformer of the same size. This report is written by "
               "`orthros bench --recipe reproduce-21.9x` from its result files (%s); every figure below is measured, "
               "each time the median of the repetitions with a bootstrap 95%% interval; cells that were not run say why. "
               "Dummy weights (speed does not depend on their values); batch 1.\n\n",
            now);
    for (int i = 0; i < n; i++) {
        cJSON *r = NULL;
        if ((rc = orthros_result_load(&r, json_paths[i]))) break;
        if (!r) {
            fprintf(f, "## %s\n\nNot run.\n\n", json_paths[i]);
            continue;
        }
        model_section(f, r, anchors);
        cJSON_Delete(r);
    }
    int ok = fclose(f) == 0;
    cJSON_Delete(anchors);
    if (!rc && !ok) rc = orthros_error(ORTHROS_EIO, "%s: write failed", md_path);
    return rc;
}
