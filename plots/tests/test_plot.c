/* orthros plot end to end: a small cpu bench run plus hand-made eval and anchor files are turned into every
 * figure, in PNG and in SVG; each file must exist and be a valid image of its format, and gnuplot must not warn.
 * Figures whose data is absent are skipped (named with --verbose), and a missing gnuplot is a clear error. The
 * committed results (data/results) check what a reader sees: runs of different configurations never share a
 * line (a series each, named by what differs; the caption holds only what they share and what ran), a
 * tensor-parallel world's throughput per GPU, our kernels beside the SDPA anchors, RULER's partial score, recall's
 * zero bars and labels, and a refusal naming the difference when one figure cannot hold the configurations.
 * The eval files are written here by hand, in the shape planned for `orthros eval` (a JSON object with
 * "kind": "eval", the bench files' tool / run / environment header, and "cells" of {task, arch, ctx, depth |
 * pairs, n, accuracy, ci95_lo, ci95_hi}), because that command does not exist yet.
 * usage: test_plot PATH/TO/orthros PATH/TO/plots [KEEP_DIR] */
#define _GNU_SOURCE
#include "stats.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The figures, as orthros plot names them. */
#define N_FIGURES 8
static const char *const figures[N_FIGURES] = {"prefill_latency", "speedup", "decode_latency", "throughput",
                                               "attention_op",    "niah",    "mqar",           "decode_step"};

static const char *bin, *scripts;
static char dir[4096], results[4200]; /* results: the source tree's data/results */

static int log_has(const char *log, const char *text)
{
    char *s = tu_slurp(log, NULL);
    int found = s && strstr(s, text);
    free(s);
    return found;
}

static void write_json(const char *path, cJSON *root)
{
    CHECK(tu_write_json(path, root) == 0, "cannot write %s", path);
    cJSON_Delete(root);
}

/* The header every result file carries (results.h), filled by hand. */
static cJSON *header(const char *kind)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "schema_version", 1);
    cJSON_AddStringToObject(r, "kind", kind);
    cJSON *tool = cJSON_AddObjectToObject(r, "tool");
    cJSON_AddStringToObject(tool, "name", "orthros");
    cJSON_AddStringToObject(tool, "git_commit", "0123456789abcdef");
    cJSON_AddBoolToObject(tool, "dirty", 0);
    cJSON *run = cJSON_AddObjectToObject(r, "run");
    cJSON_AddArrayToObject(run, "argv");
    cJSON_AddNumberToObject(run, "seed", 1);
    cJSON *cfg = cJSON_AddObjectToObject(run, "config");
    cJSON_AddStringToObject(cfg, "model", "preset:tiny");
    cJSON_AddStringToObject(cfg, "task", "niah");
    cJSON_AddNumberToObject(cfg, "samples", 20);
    cJSON *env = cJSON_AddObjectToObject(r, "environment");
    cJSON_AddStringToObject(env, "backend", "cpu");
    cJSON *dev = cJSON_AddObjectToObject(env, "device");
    cJSON_AddStringToObject(dev, "name", "hand-made eval file");
    return r;
}

/* A cell with its per-sample records, as the reader requires them: NIAH, n samples of one answer each, k right;
 * MQAR, n questions in samples of 8 (n a multiple of 8), k right, the first samples the right ones. */
static void add_eval_cell(cJSON *cells, const char *task, const char *arch, int ctx, const char *key, int value, int n,
                          int k)
{
    cJSON *c = cJSON_CreateObject();
    double lo = 0, hi = 1;
    int niah = !strcmp(task, "niah"), per = niah ? 1 : 8, samples = n / per, samples_correct = 0;
    cJSON *recs = cJSON_CreateArray();
    for (int s = 0; s < samples; s++) {
        cJSON *r = cJSON_CreateObject(), *e = cJSON_AddArrayToObject(r, "expected"), *g;
        int right = k - s * per < 0 ? 0 : k - s * per > per ? per : k - s * per;
        cJSON_AddNumberToObject(r, "ctx", ctx);
        cJSON_AddNumberToObject(r, key, value);
        cJSON_AddNumberToObject(r, "seed", 1000 + s);
        if (niah) cJSON_AddItemToObject(r, "needle_positions", cJSON_CreateIntArray((int[]){ctx / 2}, 1));
        g = cJSON_AddArrayToObject(r, "generated");
        for (int q = 0; q < per; q++) {
            cJSON_AddItemToArray(e, cJSON_CreateNumber(40 + q));
            cJSON_AddItemToArray(g, cJSON_CreateNumber(q < right ? 40 + q : 3));
        }
        cJSON_AddNumberToObject(r, "n_correct", right);
        cJSON_AddBoolToObject(r, "correct", right == per);
        samples_correct += right == per;
        cJSON_AddItemToArray(recs, r);
    }
    orthros_stats_wilson(&lo, &hi, k, n, ORTHROS_STATS_Z95);
    cJSON_AddStringToObject(c, "task", task);
    cJSON_AddStringToObject(c, "variant", strcmp(task, "niah") ? "mqar" : "single");
    cJSON_AddStringToObject(c, "arch", arch);
    cJSON_AddNumberToObject(c, "ctx", ctx);
    cJSON_AddNumberToObject(c, key, value);
    cJSON_AddNumberToObject(c, "samples", samples);
    cJSON_AddNumberToObject(c, "samples_correct", samples_correct);
    cJSON_AddNumberToObject(c, "n", n);
    cJSON_AddNumberToObject(c, "correct", k);
    cJSON_AddNumberToObject(c, "accuracy", (double)k / n);
    cJSON_AddNumberToObject(c, "ci95_lo", lo);
    cJSON_AddNumberToObject(c, "ci95_hi", hi);
    cJSON_AddNumberToObject(c, "elapsed_s", 1.5);
    cJSON_AddItemToObject(c, "records", recs);
    cJSON_AddItemToArray(cells, c);
}

/* NIAH: transformer recalls everywhere, linear fails past its state's reach, orthros in between; one cell
 * left out to check that a hole in the grid is drawn as '-'. MQAR: accuracy falls with the number of pairs,
 * faster for linear attention. */
static void write_eval(const char *path, int niah, int mqar)
{
    static const char *const archs[] = {"transformer", "orthros", "linear"};
    static const int ctxs[] = {256, 512, 1024, 2048}, depths[] = {0, 25, 50, 75, 100}, pairs[] = {4, 8, 16, 32, 64};
    cJSON *r = header("eval"), *cells = cJSON_AddArrayToObject(r, "cells");
    for (int a = 0; a < 3; a++) {
        for (int c = 0; niah && c < 4; c++)
            for (int d = 0; d < 5; d++) {
                if (a == 1 && c == 3 && d == 2) continue;
                int n = 20, k = a == 0 ? 20 - (c + d) % 2 : a == 1 ? 20 - c * 2 - (d == 0) : 20 - c * 5 - d;
                add_eval_cell(cells, "niah", archs[a], ctxs[c], "depth", depths[d], n, k < 0 ? 0 : k);
            }
        for (int p = 0; mqar && p < 5; p++) {
            int n = 64, k = a == 0 ? 64 - p : a == 1 ? 62 - 3 * p : 60 - 13 * p;
            add_eval_cell(cells, "mqar", archs[a], 512, "pairs", pairs[p], n, k < 0 ? 0 : k);
        }
    }
    write_json(path, r);
}

/* An anchor file in the shape of bench/kernels/anchors.py's: SDPA prefill times (made up, small lengths). */
static void write_anchors(const char *path)
{
    cJSON *r = cJSON_CreateObject(), *cases = cJSON_AddArrayToObject(r, "cases");
    cJSON_AddStringToObject(r, "device", "hand-made");
    cJSON_AddStringToObject(r, "torch", "2.11 \"q\"#x"); /* quote and '#' cleaned in the caption */
    for (int ctx = 64; ctx <= 256; ctx *= 2) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "op", "prefill");
        cJSON_AddStringToObject(c, "backend", "flash");
        cJSON_AddNumberToObject(c, "head_dim", 64);
        cJSON_AddNumberToObject(c, "ctx", ctx);
        cJSON_AddNumberToObject(c, "batch", 1);
        cJSON_AddNumberToObject(c, "median_s", 1e-6 * ctx * ctx / 64.0);
        cJSON_AddItemToArray(cases, c);
    }
    write_json(path, r);
}

static void check_image(const char *fig, const char *fmt, int want)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s/%s.%s", dir, fmt, fig, fmt);
    size_t len = 0;
    char *s = tu_slurp(path, &len);
    if (!want) {
        CHECK(!s, "%s should not have been made", path);
        free(s);
        return;
    }
    CHECK(s && len > 100, "%s is missing or tiny", path);
    if (s && !strcmp(fmt, "pdf")) {
        CHECK(len > 5 && !memcmp(s, "%PDF-", 5), "%s does not start with %%PDF-", path);
    } else if (s && !strcmp(fmt, "png")) {
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        CHECK(len > 8 && !memcmp(s, sig, 8), "%s does not start with the PNG signature", path);
    } else if (s) {
        const char *p = s;
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
        CHECK(!strncmp(p, "<?xml", 5) || !strncmp(p, "<svg", 4), "%s does not start with <?xml or <svg", path);
        CHECK(strstr(s, "<svg") && strstr(s, "</svg>"), "%s lacks an <svg> element or its end", path);
    }
    free(s);
}

/* Strings from result files and the output folder's name never run as commands: a device name, a model, an arch
 * and an output folder carrying backticks and $(...) that would create a file if gnuplot or a shell evaluated
 * them. Malformed cells are refused with the path of the field, and nothing is drawn. */
static void hostile_inputs(const char *bench, const char *eval)
{
    char pwned[4400], path[4400], out[4300], log[4300];
    snprintf(log, sizeof log, "%s/hostile.log", dir);
    /* Short enough for an arch name; a command it ran would create PWNED in gnuplot's or the shell's folder. */
    const char *evil = "x`touch PWNED`$(touch PWNED)\" #";
    cJSON *b = tu_load_json(bench), *e = tu_load_json(eval);
    CHECK(b && e, "cannot reload the inputs");
    if (!b || !e) return;
    cJSON *dev = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "environment"), "device");
    cJSON_ReplaceItemInObject(dev, "name", cJSON_CreateString(evil));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "run"), "config"), "model", cJSON_CreateString(evil));
    cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "measurements"), 0);
    cJSON_ReplaceItemInObject(m0, "arch", cJSON_CreateString(evil));
    /* An eval cell's arch is one of the architectures (refused below); the run's model is free text. */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "run"), "config"), "model", cJSON_CreateString(evil));
    char hb[4300], he[4300];
    snprintf(hb, sizeof hb, "%s/hostile-bench.json", dir);
    snprintf(he, sizeof he, "%s/hostile-eval.json", dir);
    write_json(hb, b);
    write_json(he, e);
    snprintf(out, sizeof out, "%s/out`touch PWNED`$(touch PWNED)", dir);
    char *a[] = {(char *)bin, "plot", hb, he, "--out", out, "--scripts", (char *)scripts, NULL};
    int rc = tu_run(a, log);
    struct stat sb;
    CHECK(rc == 0, "plot of hostile strings exited %d (log %s)", rc, log);
    snprintf(pwned, sizeof pwned, "%s/PWNED", out);
    CHECK(stat(pwned, &sb) != 0 && stat("PWNED", &sb) != 0, "a string from a result file or --out was run as a command");
    snprintf(pwned, sizeof pwned, "%s/PWNED", dir);
    CHECK(stat(pwned, &sb) != 0, "a string from a result file or --out was run as a command");
    snprintf(path, sizeof path, "%s/speedup.png", out);
    CHECK(stat(path, &sb) == 0, "%s is missing", path);

    /* A NIAH cell with an empty arch, a measurement without arch, a negative sample: refused, naming the field. */
    e = tu_load_json(eval);
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "cells"), 0), "arch", cJSON_CreateString(""));
    write_json(he, e);
    char *a2[] = {(char *)bin, "plot", he, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(a2, log) == 1 && log_has(log, "cells[0].arch: \"\" is not an architecture"),
          "an empty arch is not refused by its path");
    e = tu_load_json(eval);
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "cells"), 0), "arch", cJSON_CreateString(evil));
    write_json(he, e);
    CHECK(tu_run(a2, log) == 1 && log_has(log, "cells[0].arch: \"x`touch PWNED`") && log_has(log, "is not an architecture"),
          "a hostile arch in an eval cell is not refused by its path");
    /* A per-sample record whose n_correct is a string: refused (plot and --resume took it as it was). */
    e = tu_load_json(eval);
    cJSON *rec0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "cells"), 0), "records"), 0);
    cJSON_ReplaceItemInObject(rec0, "n_correct", cJSON_CreateString("a`touch PWN`b"));
    write_json(he, e);
    CHECK(tu_run(a2, log) == 1 && log_has(log, "cells[0].records[0].n_correct: not a number"),
          "a record's n_correct string is not refused by its path");
    b = tu_load_json(bench);
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "measurements"), 1), "arch");
    write_json(hb, b);
    char *a3[] = {(char *)bin, "plot", hb, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(a3, log) == 1 && log_has(log, "measurements[1].arch: missing"), "a missing arch is not refused by its path");
    b = tu_load_json(bench);
    cJSON *s0 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "measurements"), 2), "samples");
    cJSON_ReplaceItemInArray(s0, 0, cJSON_CreateNumber(-1));
    write_json(hb, b);
    CHECK(tu_run(a3, log) == 1 && log_has(log, "measurements[2].samples: item 0 is not a positive finite number"),
          "a negative sample is not refused");
}

/* The text of the figure's NAME.dat / NAME.txt in out, or NULL. */
static char *fig_file(const char *out, const char *fig, const char *ext)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s.%s", out, fig, ext);
    return tu_slurp(path, NULL);
}

/* The committed results, as a reader plots them (the cases of issue 28). */
static void committed_results(void)
{
    char log[4300], out[4300], a[4400], b[4400], c[4400], d[4400], e[4400];
    snprintf(log, sizeof log, "%s/committed.log", dir);
    struct stat sb;
    snprintf(a, sizeof a, "%s/smollm2-h200-2026-12-01/ppl.json", results);
    if (stat(a, &sb) != 0) {
        fprintf(stderr, "SKIP committed results: %s absent\n", a);
        return;
    }
    /* A 32K-token run beside a 4K-token cpu check of the same text: two transformer series, each with its own 1K
     * point (13.47 and 6.40), named by the token count and device; the caption names neither. */
    snprintf(out, sizeof out, "%s/mixed", dir);
    snprintf(b, sizeof b, "%s/smollm2-h200-2026-12-01/ppl-check-cpu.json", results);
    char *m1[] = {(char *)bin, "plot", a, b, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m1, log) == 0 && !log_has(log, "gnuplot warned"), "plot of ppl.json and ppl-check-cpu.json (log %s)", log);
    char *dat = fig_file(out, "ppl", "dat"), *txt = fig_file(out, "ppl", "txt");
    const char *t32 = dat ? strstr(dat, "\"transformer, 32768 tokens, NVIDIA H200\"") : NULL;
    const char *t4 = dat ? strstr(dat, "\"transformer, 4096 tokens, Intel(R) Xeon(R) Processor (cpu)\"") : NULL;
    CHECK(t32 && t4, "ppl.dat does not hold a transformer series per token count and device");
    CHECK(t32 && strstr(t32, "\n1024 13.466"), "the 32K-token series' 1K point is not 13.47");
    CHECK(t4 && strstr(t4, "\n1024 6.397"), "the 4K-token series' 1K point is not 6.40");
    CHECK(txt && !strstr(txt, "4096 tokens") && !strstr(txt, "32768 tokens") && strstr(txt, "swa window 1024") &&
              strstr(txt, "kjv-genesis-exodus.txt") && !strstr(txt, "4096, 1024"),
          "the caption names what differs or misses what the runs share: %s", txt ? txt : "(none)");
    free(dat), free(txt);

    /* Recall: zero bars drawn and labelled with their counts, the architectures on the x axis; RULER's partial
     * score in the common-words heatmap (accuracy 0, partial 0.05); a caption without hybrid or swa when they did
     * not run. */
    snprintf(a, sizeof a, "%s/smollm2-h200-2026-12-01/recall.json", results);
    snprintf(b, sizeof b, "%s/smollm2-h200-2026-12-01/ruler-cwe.json", results);
    char *m2[] = {(char *)bin, "plot", a, b, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m2, log) == 0 && !log_has(log, "gnuplot warned"), "plot of recall.json and ruler-cwe.json (log %s)", log);
    dat = fig_file(out, "recall", "dat");
    CHECK(dat && strstr(dat, "\"orthros\" \"0/32\"") && strstr(dat, "\"transformer\" \"24/32\""),
          "recall.dat lacks the labels and counts of its bars");
    free(dat);
    dat = fig_file(out, "ruler_cwe", "dat");
    CHECK(dat && strstr(dat, "\n0 0 0.05 8\n"), "ruler_cwe.dat does not hold RULER's partial score (0.05 at 1K)");
    free(dat);
    snprintf(a, sizeof a, "%s/smollm2-converted-h200-2026-12-01/grid/base-recall.json", results);
    snprintf(b, sizeof b, "%s/smollm2-converted-h200-2026-12-01/grid/conv-recall.json", results);
    char *m3[] = {(char *)bin, "plot", a, b, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m3, log) == 0, "plot of two recall files (log %s)", log);
    txt = fig_file(out, "recall", "txt"), dat = fig_file(out, "recall", "dat");
    CHECK(txt && !strstr(txt, "swa") && !strstr(txt, "hybrid") && strstr(txt, "orthros tail 1"),
          "the recall caption names settings of architectures that did not run: %s", txt ? txt : "(none)");
    CHECK(dat && strstr(dat, "\"transformer\\nSmolLM2-135M-Instruct.Q4_1.gguf\"") && strstr(dat, "\"orthros\\ns2-16M/adapter\""),
          "recall.dat does not name each bar by its model");
    free(txt), free(dat);

    /* The recipe's files with the tensor-parallel 1M cell (another commit) and the kernels beside the anchors:
     * series per model and commit, the tp 2 world dotted, its throughput per GPU under the GEMM ceiling. */
    snprintf(a, sizeof a, "%s/reproduce-21.9x-2026-12-01c/llama3.2-1b.json", results);
    snprintf(b, sizeof b, "%s/reproduce-21.9x-2026-12-01c/llama3.1-8b.json", results);
    snprintf(c, sizeof c, "%s/reproduce-21.9x-2026-12-01c/llama3.1-8b-tp2.json", results);
    snprintf(d, sizeof d, "%s/h200-2026-12-01-v7-defaults/anchors.json", results);
    snprintf(e, sizeof e, "%s/h200-2026-12-01-v7-defaults/bench_kernels.json", results);
    char *m4[] = {(char *)bin, "plot", a, b, c, d, e, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m4, log) == 0 && !log_has(log, "gnuplot warned") && !log_has(log, "kernel benchmark file"),
          "plot of the recipe's files (log %s)", log);
    dat = fig_file(out, "throughput", "dat");
    const char *tp2 = dat ? strstr(dat, "\"transformer prefill, llama3.1-8b, tp 2, commit e8bc15e\"") : NULL;
    double per_gpu = 0;
    if (tp2 && (tp2 = strstr(tp2, "\n1048576 "))) per_gpu = strtod(tp2 + 9, NULL);
    CHECK(per_gpu > 300 && per_gpu < 784, "the tp 2 world's throughput %g TFLOP/s is not per GPU, under the ceiling", per_gpu);
    CHECK(dat && strstr(dat, "\"GEMM ceiling, one NVIDIA H200: 804 TFLOP/s\""), "throughput.dat lacks the run's GEMM ceiling");
    free(dat);
    txt = fig_file(out, "throughput", "txt");
    CHECK(txt && strstr(txt, "per GPU"), "the throughput caption does not say per GPU");
    free(txt);
    dat = fig_file(out, "speedup", "dat");
    CHECK(dat && strstr(dat, "\"orthros, llama3.2-1b, commit e2f3049\"") && strstr(dat, "\"orthros, llama3.1-8b, tp 2, commit e8bc15e\""),
          "speedup.dat does not hold a series per model, tp and commit");
    free(dat);
    dat = fig_file(out, "attention_op", "dat");
    CHECK(dat && strstr(dat, "\"ours (v7), head dim 64\"") && strstr(dat, "\"SDPA cudnn, head dim 64\""),
          "attention_op.dat lacks our kernels or the anchors");
    free(dat);

    /* The e2e recipe's two files (128 and 1024 tokens decoded after the same prompts): a series each, not one series
     * whose points collide at the same lengths. */
    snprintf(a, sizeof a, "%s/h200-2026-12-02-decode-v3/e2e/llama3.2-1b-n128.json", results);
    snprintf(b, sizeof b, "%s/h200-2026-12-02-decode-v3/e2e/llama3.2-1b-n1024.json", results);
    char *m5[] = {(char *)bin, "plot", a, b, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m5, log) == 0 && !log_has(log, "gnuplot warned"), "plot of the e2e recipe's files (log %s)", log);
    dat = fig_file(out, "speedup", "dat");
    const char *s128 = dat ? strstr(dat, "\"orthros, 128 tokens decoded\"") : NULL;
    const char *s1024 = dat ? strstr(dat, "\"orthros, 1024 tokens decoded\"") : NULL;
    CHECK(s128 && s1024 && strstr(s128, "\n131072 4.21") && strstr(s1024, "\n131072 1.89"),
          "speedup.dat does not hold a series per number of tokens decoded (4.21x and 1.90x at 128K): %s",
          dat ? dat : "(none)");
    free(dat);

    /* The decode step against its floor and PyTorch (an H200 run's default mode at batch 1 and 16, both models, and
     * decode_anchor.py's files eager and compiled): a category per shape with its floor, ours one series across
     * the models and batches with the % of the floor it reaches, each anchor a series with its time over ours. */
    const char *dec = "h200-2026-12-04-pdllate/figures-7c0efcb";
    snprintf(a, sizeof a, "%s/%s/decode/llama3.2-1b-b1-default.json", results, dec);
    snprintf(b, sizeof b, "%s/%s/decode/llama3.2-1b-b16-default.json", results, dec);
    snprintf(c, sizeof c, "%s/%s/decode/llama3.1-8b-b1-default.json", results, dec);
    snprintf(d, sizeof d, "%s/%s/decode_anchor.json", results, dec);
    snprintf(e, sizeof e, "%s/%s/decode_anchor_compiled.json", results, dec);
    char *m6[] = {(char *)bin, "plot", a, b, c, d, e, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m6, log) == 0 && !log_has(log, "gnuplot warned"), "plot of the decode files and anchors (log %s)", log);
    dat = fig_file(out, "decode_step", "dat");
    const char *ours = dat ? strstr(dat, "\n\"orthros\" x median_s") : NULL;
    const char *eager = dat ? strstr(dat, "\"PyTorch eager + CUDA graph, NVIDIA H200\"") : NULL;
    const char *comp = dat ? strstr(dat, "\"PyTorch torch.compile + CUDA graph, NVIDIA H200\"") : NULL;
    CHECK(dat && strstr(dat, "\n0 0.000590972523 \"llama3.2-1b b1 4K\"\n1 0.00153424052 \"llama3.2-1b b1 128K\"\n") &&
              strstr(dat, "\"llama3.1-8b b1 4K\"") && !strstr(dat, "llama3.1-8b b16") && ours && eager && comp &&
              strstr(ours, " 0.000874629259 0.000873022497 0.000875127971 \"68%\"") &&
              strstr(comp, " 0.00124635804 0.00124635804 0.00124635804 \"1.43x\"") && strstr(eager, "\"2.70x\""),
          "decode_step.dat does not hold the shapes with their floors, ours at 68%% of the 1B 4K floor and the compiled "
          "anchor 1.43x ours: %s", dat ? dat : "(none)");
    free(dat);
    txt = fig_file(out, "decode_step", "txt");
    CHECK(txt && strstr(txt, "anchors: PyTorch 2.11.0+cu130") && strstr(txt, "commit 7c0efcb") && !strstr(txt, "model "),
          "the decode_step caption lacks the anchors or the commit, or names a model: %s", txt ? txt : "(none)");
    free(txt);

    /* Two decode modes of one commit: each series named by the kernel items that set it apart (here what the run's
     * truncated lists end with), the items both share in the caption. */
    snprintf(a, sizeof a, "%s/%s/decode/llama3.2-1b-b1-default.json", results, dec);
    snprintf(b, sizeof b, "%s/%s/decode/llama3.2-1b-b1-fused-graphs-opdl1.json", results, dec);
    char *m7[] = {(char *)bin, "plot", a, b, "--out", out, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(m7, log) == 0 && !log_has(log, "gnuplot warned"), "plot of two decode modes (log %s)", log);
    dat = fig_file(out, "decode_latency", "dat"), txt = fig_file(out, "decode_latency", "txt");
    CHECK(dat && strstr(dat, "\"orthros, decode fu\"") && strstr(dat, "\"orthros, o pdl1, d\"") && txt &&
              strstr(txt, "kernels prefill v7, decode v8, linear_prefill v7, gemv v3, attn pdl, gemv pdl late;"),
          "two modes' series are not named by the kernel items that differ, with the shared ones in the caption: %s %s",
          dat ? dat : "(none)", txt ? txt : "(none)");
    free(dat), free(txt);

    /* Too many configurations for one figure: refused, naming what differs (models here); the rest is drawn. */
    snprintf(a, sizeof a, "%s/smollm2-h200-2026-12-01/ppl-check-cpu.json", results);
    cJSON *base = tu_load_json(a);
    CHECK(base != NULL, "cannot read %s", a);
    if (!base) return;
    enum { COPIES = 30 };
    char *args[COPIES + 8];
    static char paths[COPIES][4400];
    int k = 0;
    args[k++] = (char *)bin, args[k++] = "plot";
    for (int i = 0; i < COPIES; i++) {
        cJSON *copy = cJSON_Duplicate(base, 1);
        char model[64];
        snprintf(model, sizeof model, "models/m%d.gguf", i);
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(copy, "run"), "config"), "model", cJSON_CreateString(model));
        snprintf(paths[i], sizeof paths[i], "%s/many-%d.json", dir, i);
        write_json(paths[i], copy);
        args[k++] = paths[i];
    }
    cJSON_Delete(base);
    args[k++] = "--out", args[k++] = out, args[k++] = "--scripts", args[k++] = (char *)scripts, args[k] = NULL;
    CHECK(tu_run(args, log) == 1 && log_has(log, "ppl refused: more than 24 series: the inputs differ in model"),
          "thirty models on one perplexity figure are not refused by name (log %s)", log);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_plot ORTHROS PLOTS_DIR [KEEP_DIR]\n");
        return 2;
    }
    bin = argv[1], scripts = argv[2];
    snprintf(results, sizeof results, "%s/../data/results", scripts);
    if (argc > 3) {
        snprintf(dir, sizeof dir, "%s", argv[3]);
        mkdir(dir, 0777);
    } else {
        char *t = tu_tempdir();
        snprintf(dir, sizeof dir, "%s", t ? t : "/tmp");
        free(t);
    }
    char bench[4200], eval[4200], anchors[4200], niah_only[4200], log[4200], out_png[4200], out_svg[4200], out3[4200];
    snprintf(bench, sizeof bench, "%s/bench.json", dir);
    snprintf(eval, sizeof eval, "%s/eval.json", dir);
    snprintf(niah_only, sizeof niah_only, "%s/eval-niah.json", dir);
    snprintf(anchors, sizeof anchors, "%s/anchors.json", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    snprintf(out_png, sizeof out_png, "%s/png", dir);
    snprintf(out_svg, sizeof out_svg, "%s/svg", dir);
    snprintf(out3, sizeof out3, "%s/partial", dir);

    char *b[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros,linear",
                 "--ctx", "64:256:x2", "--phase", "prefill,decode", "--reps", "3", "--max-reps", "3", "--decode-tokens",
                 "4", "--json", bench, NULL};
    int rc = tu_run(b, log);
    CHECK(rc == 0, "bench exited %d (log %s)", rc, log);
    write_eval(eval, 1, 1);
    write_eval(niah_only, 1, 0);
    write_anchors(anchors);

    /* Every figure, PNG then SVG (and PDF beside the PNG). */
    char *p1[] = {(char *)bin, "plot", bench, eval, anchors, "--out", out_png, "--format", "png,pdf", "--scripts",
                  (char *)scripts, NULL};
    rc = tu_run(p1, log);
    CHECK(rc == 0, "plot --format png exited %d (log %s)", rc, log);
    CHECK(!log_has(log, "warning") && !log_has(log, "gnuplot warned"), "gnuplot warned (log %s)", log);
    char *p2[] = {(char *)bin, "plot", bench, eval, anchors, "--out", out_svg, "--format", "svg", "--scripts", (char *)scripts, NULL};
    rc = tu_run(p2, log);
    CHECK(rc == 0, "plot --format svg exited %d (log %s)", rc, log);
    for (int f = 0; f < N_FIGURES; f++) {
        check_image(figures[f], "png", 1);
        check_image(figures[f], "svg", 1);
        char pdf[4300];
        snprintf(pdf, sizeof pdf, "%s/%s.pdf", out_png, figures[f]);
        struct stat pb;
        CHECK(stat(pdf, &pb) == 0 && pb.st_size > 100, "%s is missing", pdf);
        char dat[4300];
        struct stat sb;
        snprintf(dat, sizeof dat, "%s/%s.dat", out_png, figures[f]);
        CHECK(stat(dat, &sb) == 0 && sb.st_size > 0, "%s is missing", dat);
    }
    /* The anchors reach the attention-op figure's data (not the model's prefill), the hole in the NIAH grid is NaN. */
    char path[4300];
    snprintf(path, sizeof path, "%s/attention_op.dat", out_png);
    CHECK(log_has(path, "SDPA flash, head dim 64"), "the anchor series is not in %s", path);
    snprintf(path, sizeof path, "%s/attention_op.txt", out_png);
    CHECK(log_has(path, "anchors: PyTorch 2.11 'q'no.x SDPA on hand-made"), "the anchors' caption is not in %s", path);
    snprintf(path, sizeof path, "%s/prefill_latency.dat", out_png);
    CHECK(!log_has(path, "SDPA"), "the anchors are drawn with the model's prefill in %s", path);
    snprintf(path, sizeof path, "%s/niah.dat", out_png);
    CHECK(log_has(path, "NaN"), "the missing NIAH cell is not NaN in %s", path);

    /* Files of another --tp beside them: a series each, labelled by the ranks (once the later file's cells were
     * dropped as repeats of the first's). */
    char bench_tp2[4200], out_tp[4200];
    snprintf(bench_tp2, sizeof bench_tp2, "%s/bench-tp2.json", dir);
    snprintf(out_tp, sizeof out_tp, "%s/tp", dir);
    char *b2[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--tp", "2", "--arch", "transformer",
                  "--ctx", "64:256:x2", "--phase", "prefill", "--reps", "3", "--max-reps", "3", "--json", bench_tp2, NULL};
    CHECK(tu_run(b2, log) == 0, "bench --tp 2 failed (log %s)", log);
    char *p8[] = {(char *)bin, "plot", bench, bench_tp2, "--out", out_tp, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(p8, log) == 0, "plot of a --tp 1 and a --tp 2 file failed (log %s)", log);
    snprintf(path, sizeof path, "%s/prefill_latency.dat", out_tp);
    CHECK(log_has(path, "\"transformer\"") && log_has(path, "\"transformer, tp 2\"") && !log_has(path, "tp 1"),
          "%s does not hold one transformer series per --tp (one GPU unnamed, tp 2 named)", path);

    /* Absent data: the figure is skipped, named only with --verbose; the rest are made. */
    char *p3[] = {(char *)bin, "plot", niah_only, "--out", out3, "--scripts", (char *)scripts, NULL};
    rc = tu_run(p3, log);
    CHECK(rc == 0, "plot of a NIAH-only eval file exited %d", rc);
    CHECK(!log_has(log, "skipped") && log_has(log, "12 without data in these files (--verbose names them)"),
          "skipped figures are listed without --verbose");
    char *p3v[] = {(char *)bin, "plot", niah_only, "--out", out3, "--scripts", (char *)scripts, "--verbose", NULL};
    rc = tu_run(p3v, log);
    CHECK(rc == 0 && log_has(log, "prefill_latency skipped") && log_has(log, "mqar skipped"),
          "skipped figures are not named with --verbose");
    snprintf(path, sizeof path, "%s/niah.png", out3);
    struct stat sb;
    CHECK(stat(path, &sb) == 0, "%s is missing", path);
    snprintf(path, sizeof path, "%s/mqar.png", out3);
    CHECK(stat(path, &sb) != 0, "%s should not exist", path);

    /* A missing gnuplot, an unknown format, a file of unknown kind, no inputs. */
    char *p4[] = {(char *)bin, "plot", bench, "--out", out3, "--scripts", (char *)scripts, "--gnuplot",
                  "/nonexistent/gnuplot", NULL};
    rc = tu_run(p4, log);
    CHECK(rc == 1 && log_has(log, "cannot run /nonexistent/gnuplot") && log_has(log, "gnuplot-nox"),
          "a missing gnuplot: exit %d, want 1 and a clear message", rc);
    char *p5[] = {(char *)bin, "plot", bench, "--out", out3, "--format", "jpg", NULL};
    CHECK(tu_run(p5, log) == 2, "an unknown format is a usage error");
    snprintf(path, sizeof path, "%s/other.json", dir);
    tu_write_text(path, "{\"hello\": 1}");
    char *p6[] = {(char *)bin, "plot", path, "--out", out3, "--scripts", (char *)scripts, NULL};
    CHECK(tu_run(p6, log) == 1 && log_has(log, "not an orthros result file"), "a file of unknown kind is refused");
    hostile_inputs(bench, eval);
    committed_results();
    char *p7[] = {(char *)bin, "plot", "--out", out3, NULL};
    CHECK(tu_run(p7, log) == 2, "no inputs is a usage error");
    if (argc > 3) fprintf(stderr, "files kept in %s\n", dir);
    return tu_finish();
}
