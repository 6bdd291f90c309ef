/* orthros compare end to end: result files are built here from synthetic samples (lognormal noise from a
 * seeded generator, 15 samples per cell) and compared through the command line; the verdicts, the exit status
 * and, for one small case, U, the exact p and the Holm-adjusted p are checked against values computed by hand.
 * usage: test_compare PATH/TO/orthros */
#define _GNU_SOURCE
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_CELLS 8
#define N_SAMPLES 15
#define MAX_SAMPLES 64
#define ROUNDS 8
#define ROUND_SAMPLES 5

static const char *bin;
static char dir[4096], log_path[4200];

static uint64_t rng_state;

static double uniform01(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

/* Lognormal noise of relative spread sigma around 1 (Box-Muller). */
static double noise(double sigma)
{
    double u = uniform01(), v = uniform01();
    return exp(sigma * sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v));
}

static int log_has(const char *text)
{
    FILE *f = fopen(log_path, "rb");
    char buf[65536];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return strstr(buf, text) != NULL;
}

/* samples[cell][i] of a bench file with cells (arch, phase, ctx) = {transformer, orthros} x {prefill,
 * decode} x {256, 1024}, batch 1; ns samples per cell. */
typedef struct {
    double x[N_CELLS][MAX_SAMPLES];
    int ns;
} sample_set;

static void draw(sample_set *s, uint64_t seed, double sigma, int ns)
{
    static const double medians[N_CELLS] = {0.010, 0.045, 0.00012, 0.00015, 0.008, 0.020, 0.00012, 0.00015};
    rng_state = seed;
    s->ns = ns;
    for (int c = 0; c < N_CELLS; c++)
        for (int i = 0; i < ns; i++) s->x[c][i] = medians[c] * noise(sigma);
}

static void scale(sample_set *out, const sample_set *in, double k)
{
    *out = *in;
    for (int c = 0; c < N_CELLS; c++)
        for (int i = 0; i < in->ns; i++) out->x[c][i] = in->x[c][i] * k;
}

static cJSON *bench_file(const sample_set *s, const char *model, int skip_cell)
{
    static const char *const archs[] = {"transformer", "orthros"}, *const phases[] = {"prefill", "decode"};
    static const int ctxs[] = {256, 1024};
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "schema_version", 1);
    cJSON_AddStringToObject(r, "kind", "bench");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "tool"), "git_commit", "feedfacefeedface");
    cJSON *cfg = cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "run"), "config");
    cJSON_AddStringToObject(cfg, "model", model);
    cJSON_AddNumberToObject(cfg, "decode_tokens", 16);
    cJSON_AddStringToObject(cfg, "device", "cpu");
    cJSON *dev = cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "environment"), "device");
    cJSON_AddStringToObject(dev, "name", "synthetic");
    cJSON *meas = cJSON_AddArrayToObject(r, "measurements");
    for (int c = 0; c < N_CELLS; c++) {
        if (c == skip_cell) continue;
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "arch", archs[c / 4]);
        cJSON_AddStringToObject(m, "phase", phases[(c / 2) % 2]);
        cJSON_AddNumberToObject(m, "ctx", ctxs[c % 2]);
        cJSON_AddNumberToObject(m, "batch", 1);
        cJSON_AddNumberToObject(m, "decode_tokens", (c / 2) % 2 ? 16 : 0);
        cJSON *arr = cJSON_AddArrayToObject(m, "samples");
        for (int i = 0; i < s->ns; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(s->x[c][i]));
        cJSON_AddItemToArray(meas, m);
    }
    return r;
}

static const char *save(const char *name, cJSON *root)
{
    static char paths[16][4200];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 4200, "%s/%s", dir, name);
    tu_write_json(p, root);
    cJSON_Delete(root);
    return p;
}

/* Runs compare BASE NEW [extra] with --json; returns the exit status and the parsed JSON in *out. */
static int compare(cJSON **out, const char *base, const char *cmp, const char *extra_opt, const char *extra_val)
{
    char json[4200];
    snprintf(json, sizeof json, "%s/compare.json", dir);
    unlink(json);
    char *args[] = {(char *)bin, "compare", (char *)base, (char *)cmp, "--json", json, (char *)extra_opt, (char *)extra_val,
                    NULL};
    int rc = tu_run(args, log_path);
    *out = tu_load_json(json);
    return rc;
}

static int count_verdict(const cJSON *r, const char *v)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "cells")) n += !strcmp(cJSON_GetObjectItem(c, "verdict")->valuestring, v);
    return n;
}

static double cell_num(const cJSON *r, int i, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), i), k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One side of an interleaved run: ROUNDS files of ROUND_SAMPLES samples per cell, every sample of a round
 * scaled by that round's drift (lognormal, relative spread `drift`: clocks or temperature that stay put for a
 * round, then move) and by `factor`. Writes the files, returns them comma-separated in list[] and all the
 * samples pooled as one set in *pooled. */
static void rounds_side(char *list, size_t n, const char *prefix, uint64_t seed, double drift, double factor,
                        sample_set *pooled)
{
    list[0] = 0;
    pooled->ns = 0;
    for (int r = 0; r < ROUNDS; r++) {
        sample_set one;
        draw(&one, seed * 131 + (uint64_t)r, 0.01, ROUND_SAMPLES);
        double k = factor * noise(drift); /* after draw(): the generator continues from the round's seed */
        for (int c = 0; c < N_CELLS; c++)
            for (int i = 0; i < ROUND_SAMPLES; i++) pooled->x[c][pooled->ns + i] = one.x[c][i] *= k;
        pooled->ns += ROUND_SAMPLES;
        char name[64];
        snprintf(name, sizeof name, "%s-r%d.json", prefix, r);
        const char *f = save(name, bench_file(&one, "preset:tiny", -1));
        snprintf(list + strlen(list), n - strlen(list), "%s%s", r ? "," : "", f);
    }
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_compare ORTHROS\n");
        return 2;
    }
    bin = argv[1];
    char *t = tu_tempdir();
    snprintf(dir, sizeof dir, "%s", t ? t : "/tmp");
    free(t);
    snprintf(log_path, sizeof log_path, "%s/log.txt", dir);
    sample_set a, b, s;
    cJSON *r = NULL;
    int rc;

    /* Identical files: every cell SAME (all values tied pairwise: the normal approximation, p near 1/2). */
    draw(&a, 1, 0.02, N_SAMPLES);
    const char *base = save("base.json", bench_file(&a, "preset:tiny", -1));
    rc = compare(&r, base, base, NULL, NULL);
    CHECK(rc == 0 && r && count_verdict(r, "SAME") == N_CELLS, "identical files: exit %d, %d SAME of %d", rc,
          r ? count_verdict(r, "SAME") : -1, N_CELLS);
    CHECK(r && near(cell_num(r, 0, "ratio"), 1.0), "identical files: ratio of medians %g, want 1", cell_num(r, 0, "ratio"));
    CHECK(log_has("summary: 0 SLOW, 0 FAST, 8 SAME"), "the stdout table has no summary line");
    cJSON_Delete(r);

    /* A/A: independent draws of one distribution never give SLOW (five pairs of draws). */
    for (uint64_t seed = 10; seed < 15; seed++) {
        draw(&a, seed, 0.02, N_SAMPLES);
        draw(&b, seed + 100, 0.02, N_SAMPLES);
        const char *fa = save("aa-base.json", bench_file(&a, "preset:tiny", -1));
        const char *fb = save("aa-new.json", bench_file(&b, "preset:tiny", -1));
        rc = compare(&r, fa, fb, NULL, NULL);
        CHECK(rc == 0 && r && count_verdict(r, "SLOW") == 0 && count_verdict(r, "FAST") == 0,
              "A/A seed %d: exit %d, %d SLOW, %d FAST", (int)seed, rc, r ? count_verdict(r, "SLOW") : -1,
              r ? count_verdict(r, "FAST") : -1);
        cJSON_Delete(r);
    }

    /* NEW = BASE x 1.2: SLOW everywhere, exit 1; x 0.83: FAST everywhere, exit 0. */
    draw(&a, 7, 0.02, N_SAMPLES);
    base = save("base.json", bench_file(&a, "preset:tiny", -1));
    scale(&s, &a, 1.2);
    const char *slow = save("slow.json", bench_file(&s, "preset:tiny", -1));
    rc = compare(&r, base, slow, NULL, NULL);
    CHECK(rc == 1 && r && count_verdict(r, "SLOW") == N_CELLS, "x1.2: exit %d, %d SLOW", rc, r ? count_verdict(r, "SLOW") : -1);
    CHECK(r && near(cell_num(r, 3, "ratio"), 1.2) && cell_num(r, 3, "ci95_lo") > 1.05,
          "x1.2: ratio %g, interval lower end %g", cell_num(r, 3, "ratio"), cell_num(r, 3, "ci95_lo"));
    /* 15 against 15 with NEW entirely above BASE: U = 225, exact p = 1 / C(30, 15) = 1 / 155117520. */
    CHECK(r && near(cell_num(r, 0, "u_slow"), 225) && near(cell_num(r, 0, "p_slow"), 1.0 / 155117520.0),
          "x1.2: U %g, p %g", cell_num(r, 0, "u_slow"), cell_num(r, 0, "p_slow"));
    cJSON_Delete(r);
    scale(&s, &a, 0.83);
    const char *fast = save("fast.json", bench_file(&s, "preset:tiny", -1));
    rc = compare(&r, base, fast, NULL, NULL);
    CHECK(rc == 0 && r && count_verdict(r, "FAST") == N_CELLS, "x0.83: exit %d, %d FAST", rc, r ? count_verdict(r, "FAST") : -1);
    cJSON_Delete(r);
    /* A 3% change is SAME under a 10% threshold; under 1% it is never SAME and some cells are SLOW (the others
     * AMBIGUOUS: the interval of a 2%-noise ratio of 15 samples is about +-2% wide). */
    scale(&s, &a, 1.03);
    const char *small = save("small.json", bench_file(&s, "preset:tiny", -1));
    rc = compare(&r, base, small, "--threshold", "10");
    CHECK(rc == 0 && r && count_verdict(r, "SAME") == N_CELLS, "x1.03 at 10%%: exit %d", rc);
    cJSON_Delete(r);
    rc = compare(&r, base, small, "--threshold", "1");
    CHECK(rc == 1 && r && count_verdict(r, "SLOW") > 0 && count_verdict(r, "SAME") == 0, "x1.03 at 1%%: exit %d", rc);
    cJSON_Delete(r);

    /* Several files per side: samples pooled per cell (15 + 15 = 30 per side). */
    char pooled[8500];
    snprintf(pooled, sizeof pooled, "%s,%s", base, base);
    rc = compare(&r, pooled, slow, NULL, NULL);
    CHECK(rc == 1 && r && near(cell_num(r, 0, "n_base"), 30) && near(cell_num(r, 0, "n_new"), 15),
          "pooled files: exit %d, n_base %g", rc, cell_num(r, 0, "n_base"));
    cJSON_Delete(r);

    /* Mismatches: a cell missing from NEW, another model, an eval file, a missing file: exit 2. */
    const char *missing = save("missing.json", bench_file(&a, "preset:tiny", 5));
    rc = compare(&r, base, missing, NULL, NULL);
    CHECK(rc == 2 && r && near(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "UNMATCHED")->valuedouble, 1),
          "a cell missing from NEW: exit %d", rc);
    cJSON_Delete(r);
    /* ... even when the other cells are SLOW, SLOW wins (exit 1). */
    scale(&s, &a, 1.2);
    const char *slow_missing = save("slow-missing.json", bench_file(&s, "preset:tiny", 5));
    rc = compare(&r, base, slow_missing, NULL, NULL);
    CHECK(rc == 1, "SLOW cells and a missing one: exit %d, want 1", rc);
    cJSON_Delete(r);
    const char *other = save("other.json", bench_file(&a, "preset:llama3.2-1b", -1));
    rc = compare(&r, base, other, NULL, NULL);
    CHECK(rc == 2 && !r && log_has("differ in the model"), "another model: exit %d, want 2 naming the model", rc);
    /* The message wraps the config check's own, whole (once garbled: the wrapper wrote over what it quoted). */
    char whole[8600];
    snprintf(whole, sizeof whole, "error: the files do not match: %s and %s differ in the model", base, other);
    CHECK(log_has(whole), "another model: the message does not read \"%s\"", whole);
    cJSON_Delete(r);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "kind", "eval");
    cJSON_AddArrayToObject(ev, "cells");
    const char *eval = save("eval.json", ev);
    rc = compare(&r, base, eval, NULL, NULL);
    CHECK(rc == 2 && log_has("\"eval\" result file"), "an eval file: exit %d, want 2", rc);
    cJSON_Delete(r);
    rc = compare(&r, base, "/nonexistent.json", NULL, NULL);
    CHECK(rc == 2 && log_has("No such file"), "a missing file: exit %d, want 2", rc);
    cJSON_Delete(r);

    /* A/A across rounds with drift: each round's clock moves by ~6% (lognormal) while samples within a round
     * vary by 1%. Compared as 8 rounds a side (the test on round medians, the interval resampling rounds), no cell is ever SLOW or FAST over
     * ten seeds. The same samples pooled as one file a side look like 20 precise samples and some cells come
     * out SLOW or FAST: that the pooled comparison is fooled is what makes this test able to fail. */
    {
        char lb[8 * 4200], ln[8 * 4200];
        sample_set pb, pn;
        int fooled = 0;
        for (uint64_t seed = 20; seed < 30; seed++) {
            rounds_side(lb, sizeof lb, "drift-base", seed, 0.06, 1.0, &pb);
            rounds_side(ln, sizeof ln, "drift-new", seed + 1000, 0.06, 1.0, &pn);
            rc = compare(&r, lb, ln, NULL, NULL);
            CHECK(rc != 1 && r && count_verdict(r, "SLOW") == 0 && count_verdict(r, "FAST") == 0,
                  "A/A with drift, seed %d: exit %d, %d SLOW, %d FAST", (int)seed, rc,
                  r ? count_verdict(r, "SLOW") : -1, r ? count_verdict(r, "FAST") : -1);
            CHECK(r && near(cell_num(r, 0, "rounds_base"), ROUNDS) && near(cell_num(r, 0, "n_new"), ROUNDS * ROUND_SAMPLES),
                  "rounds: %g, samples %g", cell_num(r, 0, "rounds_base"), cell_num(r, 0, "n_new"));
            cJSON_Delete(r);
            const char *fb = save("drift-pooled-base.json", bench_file(&pb, "preset:tiny", -1));
            const char *fn = save("drift-pooled-new.json", bench_file(&pn, "preset:tiny", -1));
            rc = compare(&r, fb, fn, NULL, NULL);
            CHECK(r, "pooled A/A with drift, seed %d: exit %d and no comparison", (int)seed, rc);
            if (r) fooled += count_verdict(r, "SLOW") + count_verdict(r, "FAST");
            cJSON_Delete(r);
        }
        printf("A/A with drift: pooled as one file a side, %d of %d cells SLOW or FAST; as rounds, none\n", fooled,
               10 * N_CELLS);
        CHECK(fooled > 0, "the pooled comparison was never fooled: the drift test proves nothing");
        /* A real 20% slowdown still shows through the same drift: every cell SLOW. */
        rounds_side(lb, sizeof lb, "drift-base", 40, 0.06, 1.0, &pb);
        rounds_side(ln, sizeof ln, "drift-new", 41, 0.06, 1.2, &pn);
        rc = compare(&r, lb, ln, NULL, NULL);
        CHECK(rc == 1 && r && count_verdict(r, "SLOW") == N_CELLS, "x1.2 with drift: exit %d, %d SLOW", rc,
              r ? count_verdict(r, "SLOW") : -1);
        cJSON_Delete(r);
    }

    /* Two samples per cell: the exact test's smallest p is 1 / C(4, 2) = 1/6 > 0.05, so every cell is
     * AMBIGUOUS (too few samples), even at x1.2: exit 2. */
    draw(&a, 3, 0.02, 2);
    scale(&s, &a, 1.2);
    const char *few_a = save("few-a.json", bench_file(&a, "preset:tiny", -1));
    const char *few_b = save("few-b.json", bench_file(&s, "preset:tiny", -1));
    rc = compare(&r, few_a, few_b, NULL, NULL);
    CHECK(rc == 2 && r && count_verdict(r, "AMBIGUOUS") == N_CELLS, "two samples per cell: exit %d, %d AMBIGUOUS", rc,
          r ? count_verdict(r, "AMBIGUOUS") : -1);
    cJSON_Delete(r);

    /* Hand-computed: two cells, BASE = {10, 11, 12, 13} in both, 4 against 4 values (C(8, 4) = 70 orderings).
     *   cell 0, NEW = {12.5, 14, 15, 16}: pairs NEW > BASE: 12.5 beats 10, 11, 12 (3), the others beat all four
     *     (12): U = 15. Under H0, U of 4 + 4 values has counts 1 1 2 3 5 5 7 7 8 7 7 5 5 3 2 1 1 for U = 0..16,
     *     so p = P(U >= 15) = (1 + 1) / 70 = 0.0285714.
     *   cell 1, NEW = {10.5, 11.5, 13.5, 14}: 1 + 2 + 4 + 4 = 11, p = P(U >= 11) = (5+5+3+2+1+1) / 70 = 17/70
     *     = 0.2428571.
     *   Holm over the two: the smaller p times 2, 4/70 = 0.0571429; the larger times 1, 17/70, kept >= 4/70.
     *   So cell 0 is not SLOW at alpha 0.05 although its raw p is 0.029: AMBIGUOUS.
     *   The mirror test (NEW faster): U' = 16 - U = 1 and 5, p = 69/70 and 58/70; Holm: 2 x 58/70 capped at 1,
     *   then max(1, 69/70) = 1: both 1.
     *   Ratios of medians: 14.5 / 11.5 = 1.2608696 and 12.5 / 11.5 = 1.0869565. */
    {
        static const double bx[4] = {10, 11, 12, 13}, n0[4] = {12.5, 14, 15, 16}, n1[4] = {10.5, 11.5, 13.5, 14};
        sample_set hb = {.ns = 4}, hn = {.ns = 4};
        for (int c = 0; c < N_CELLS; c++)
            for (int i = 0; i < 4; i++) hb.x[c][i] = bx[i], hn.x[c][i] = c == 0 ? n0[i] : n1[i];
        /* Only cells 0 and 1 kept: the others are dropped from both files by comparing 2-cell files. */
        cJSON *fb = bench_file(&hb, "preset:tiny", -1), *fn = bench_file(&hn, "preset:tiny", -1);
        for (int k = N_CELLS - 1; k >= 2; k--) {
            cJSON_DeleteItemFromArray(cJSON_GetObjectItem(fb, "measurements"), k);
            cJSON_DeleteItemFromArray(cJSON_GetObjectItem(fn, "measurements"), k);
        }
        const char *hbase = save("hand-base.json", fb), *hnew = save("hand-new.json", fn);
        rc = compare(&r, hbase, hnew, NULL, NULL);
        CHECK(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "cells")) == 2, "hand case: two cells");
        CHECK(near(cell_num(r, 0, "u_slow"), 15) && near(cell_num(r, 1, "u_slow"), 11), "U: %g and %g, want 15 and 11",
              cell_num(r, 0, "u_slow"), cell_num(r, 1, "u_slow"));
        CHECK(near(cell_num(r, 0, "p_slow"), 2.0 / 70) && near(cell_num(r, 1, "p_slow"), 17.0 / 70),
              "exact p: %.7f and %.7f, want 0.0285714 and 0.2428571", cell_num(r, 0, "p_slow"), cell_num(r, 1, "p_slow"));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0), "exact")),
              "the hand case is exact");
        CHECK(near(cell_num(r, 0, "p_slow_holm"), 4.0 / 70) && near(cell_num(r, 1, "p_slow_holm"), 17.0 / 70),
              "Holm p: %.7f and %.7f, want 0.0571429 and 0.2428571", cell_num(r, 0, "p_slow_holm"),
              cell_num(r, 1, "p_slow_holm"));
        CHECK(near(cell_num(r, 0, "p_fast"), 69.0 / 70) && near(cell_num(r, 1, "p_fast"), 58.0 / 70) &&
                  near(cell_num(r, 0, "p_fast_holm"), 1) && near(cell_num(r, 1, "p_fast_holm"), 1),
              "mirror test: p %.7f %.7f, Holm %.7f %.7f", cell_num(r, 0, "p_fast"), cell_num(r, 1, "p_fast"),
              cell_num(r, 0, "p_fast_holm"), cell_num(r, 1, "p_fast_holm"));
        CHECK(near(cell_num(r, 0, "ratio"), 14.5 / 11.5) && near(cell_num(r, 1, "ratio"), 12.5 / 11.5),
              "ratios %.7f %.7f", cell_num(r, 0, "ratio"), cell_num(r, 1, "ratio"));
        CHECK(count_verdict(r, "SLOW") == 0 && count_verdict(r, "AMBIGUOUS") == 2 && rc == 2,
              "hand case: Holm keeps cell 0 from SLOW (exit %d)", rc);
        cJSON_Delete(r);
    }

    /* Usage errors. */
    char *u1[] = {(char *)bin, "compare", (char *)base, NULL};
    CHECK(tu_run(u1, log_path) == 2, "one file is a usage error");
    char *u2[] = {(char *)bin, "compare", (char *)base, (char *)base, "--alpha", "2", NULL};
    CHECK(tu_run(u2, log_path) == 2, "alpha 2 is refused");
    return tu_finish();
}
