/* orthros plot end to end: a small cpu bench run plus hand-made eval and anchor files are turned into every
 * figure, in PNG and in SVG; each file must exist and be a valid image of its format. Figures whose data is
 * absent are skipped with a message, and a missing gnuplot is a clear error.
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
#define N_FIGURES 7
static const char *const figures[N_FIGURES] = {"prefill_latency", "speedup",   "decode_latency", "throughput",
                                               "attention_op",    "niah",      "mqar"};

static const char *bin, *scripts;
static char dir[4096];

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

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_plot ORTHROS PLOTS_DIR [KEEP_DIR]\n");
        return 2;
    }
    bin = argv[1], scripts = argv[2];
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
    CHECK(log_has(path, "\"transformer, tp 1\"") && log_has(path, "\"transformer, tp 2\""),
          "%s does not hold one transformer series per --tp", path);

    /* Absent data: the figure is skipped, with its name on stderr; the rest are made. */
    char *p3[] = {(char *)bin, "plot", niah_only, "--out", out3, "--scripts", (char *)scripts, NULL};
    rc = tu_run(p3, log);
    CHECK(rc == 0, "plot of a NIAH-only eval file exited %d", rc);
    CHECK(log_has(log, "prefill_latency skipped") && log_has(log, "mqar skipped"), "skipped figures are not named");
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
    char *p7[] = {(char *)bin, "plot", "--out", out3, NULL};
    CHECK(tu_run(p7, log) == 2, "no inputs is a usage error");
    if (argc > 3) fprintf(stderr, "files kept in %s\n", dir);
    return tu_finish();
}
