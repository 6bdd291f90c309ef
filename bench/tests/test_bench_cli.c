/* orthros bench end to end on the cpu: the CI sweep writes a complete file that validates against
 * bench/result.schema.json; a cell that cannot fit is skipped before it runs and the sweep goes on; a killed
 * run resumes without redoing (or losing) its finished cells; invalid lists are refused.
 * usage: test_bench_cli PATH/TO/orthros PATH/TO/result.schema.json */
#define _GNU_SOURCE
#include "schema.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>


static const char *bin;
static cJSON *schema;

static int count_measured(const cJSON *root)
{
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(root, "measurements")) n += cJSON_GetObjectItem(m, "samples") != NULL;
    return n;
}

static void validate(const cJSON *root, const char *what)
{
    char err[512];
    int rc = orthros_schema_validate(schema, root, err, sizeof err);
    CHECK(rc == 0, "%s does not match the schema: %s", what, err);
}

/* A file's bytes, for checking that a refused run left it as it was. */
static char *bytes_of(const char *path, size_t *len) { return tu_slurp(path, len); }

static int same_bytes(const char *path, const char *old, size_t old_len)
{
    size_t len = 0;
    char *now = bytes_of(path, &len);
    int same = now && len == old_len && !memcmp(now, old, len);
    free(now);
    return same;
}

/* Results are never lost and never mixed: nothing replaces an existing file before a cell is measured; a resume
 * with another configuration, or of a file that does not match the schema, is refused and rewrites nothing;
 * --json - writes the file to stdout; out-of-range values and NaN are usage errors. */
static void file_safety(const char *json, const char *log)
{
    char *base[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx",
                    "64", "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--json", (char *)json, NULL};
    unlink(json);
    CHECK(tu_run(base, log) == 0, "the base run failed (see %s)", log);
    size_t len = 0;
    char *orig = bytes_of(json, &len);
    CHECK(orig != NULL, "no result file");
    if (!orig) return;
    /* A model that does not exist: the run fails, the file stays. */
    char *a1[] = {(char *)bin, "bench", "--model", "/nonexistent", "--device", "cpu", "--json", (char *)json, NULL};
    CHECK(tu_run(a1, log) == 1 && same_bytes(json, orig, len), "a failed run replaced the existing result file");
    /* Resume with another seed / tail / chunk / noise target: refused, naming the field; the file stays. */
    const char *other[][2] = {{"--seed", "5"}, {"--tail", "2"}, {"--chunk", "32"}, {"--max-noise", "7"}, {"--window", "16"}};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        char *a[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx",
                     "64,128", "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--json", (char *)json, "--resume",
                     (char *)other[i][0], (char *)other[i][1], NULL};
        int rc = tu_run(a, log);
        char *l = tu_slurp(log, NULL);
        CHECK(rc == 1 && l && strstr(l, "cannot resume") && strstr(l, other[i][0]) && same_bytes(json, orig, len),
              "resume with %s %s: status %d, log: %s", other[i][0], other[i][1], rc, l ? l : "");
        free(l);
    }
    /* A file measured by other code (another commit, other kernel versions): a resume is refused, naming what
     * differs, and rewrites nothing. */
    const char *code[][3] = {{"tool", "git_commit", "0123456789abcdef0123456789abcdef01234567"},
                             {"environment", "kernels", "attn_prefill v99"}};
    for (size_t i = 0; i < sizeof code / sizeof *code; i++) {
        cJSON *r = tu_load_json(json);
        cJSON *o = cJSON_GetObjectItem(r, code[i][0]);
        if (i == 1) o = cJSON_GetObjectItem(o, "device");
        CHECK(o != NULL, "no %s in the result file", code[i][0]);
        if (o) cJSON_ReplaceItemInObject(o, code[i][1], cJSON_CreateString(code[i][2]));
        tu_write_json(json, r);
        cJSON_Delete(r);
        size_t olen = 0;
        char *other_code = bytes_of(json, &olen);
        char *a[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx",
                     "64,128", "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--json", (char *)json, "--resume", NULL};
        int rc = tu_run(a, log);
        char *l = tu_slurp(log, NULL);
        CHECK(rc == 1 && l && strstr(l, "cannot resume") && strstr(l, i ? "kernels" : "commit") &&
                  strstr(l, code[i][2]) && same_bytes(json, other_code, olen),
              "resume of a file by other code (%s): status %d, log: %s", code[i][1], rc, l ? l : "");
        free(l);
        free(other_code);
        tu_write_text(json, orig);
    }
    /* A file with a malformed cell: refused by its path, not rewritten. */
    cJSON *r = tu_load_json(json);
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "measurements"), 0), "stats", cJSON_CreateNull());
    tu_write_json(json, r);
    cJSON_Delete(r);
    size_t blen = 0;
    char *broken = bytes_of(json, &blen);
    char *a2[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx", "64",
                  "--phase", "prefill", "--reps", "2", "--json", (char *)json, "--resume", NULL};
    char *l = NULL;
    CHECK(tu_run(a2, log) == 1 && (l = tu_slurp(log, NULL)) && strstr(l, "measurements[0].stats: not an object") &&
              same_bytes(json, broken, blen),
          "resuming a malformed file: %s", l ? l : "");
    free(l);
    free(broken);
    /* --json -: the result file on stdout, the table on stderr, no file named "-". */
    char *a3[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx", "64",
                  "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--json", "-", "--quiet", "--table-out", "/dev/null", NULL};
    char out_path[4200];
    snprintf(out_path, sizeof out_path, "%s.stdout", log);
    CHECK(tu_run_capture(a3, NULL, out_path, log) == 0, "--json - failed");
    cJSON *j = tu_load_json(out_path);
    CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "measurements")) == 1, "--json - did not print a result file");
    cJSON_Delete(j);
    struct stat sb;
    CHECK(stat("-", &sb) != 0, "--json - made a file named -");
    /* Out of range and not-a-number values are usage errors (exit 2). */
    const char *bad[][2] = {{"--timeout", "nan"}, {"--max-noise", "inf"}, {"--cell-budget", "-1"}, {"--eps", "nan"},
                            {"--window", "-1"}, {"--tail", "-1"},        {"--hybrid-every", "-1"}, {"--feature-dim", "-1"},
                            {"--decode-tokens", "2147483647"}, {"--reps", "0"}, {"--local-window", "-1"},
                            {"--feature-map-rope", "sideways"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *a[] = {(char *)bin, "bench", "--device", "cpu", (char *)bad[i][0], (char *)bad[i][1], "--json", (char *)json, NULL};
        int rc = tu_run(a, log);
        CHECK(rc == 2, "%s %s: status %d, want 2", bad[i][0], bad[i][1], rc);
    }
    /* A session per round (the path of cells whose sessions do not fit in memory together), decode too: the
     * cells are complete and valid. */
    setenv("ORTHROS_BENCH_SESSION_PER_ROUND", "1", 1);
    char *a5[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros", "--ctx",
                  "64", "--phase", "prefill,decode", "--decode-tokens", "2", "--reps", "2", "--max-reps", "2", "--json",
                  (char *)json, "--force", NULL};
    CHECK(tu_run(a5, log) == 0, "a session per round failed (see %s)", log);
    unsetenv("ORTHROS_BENCH_SESSION_PER_ROUND");
    cJSON *fr = tu_load_json(json);
    CHECK(fr && count_measured(fr) == 4, "a session per round measured %d of 4 cells", fr ? count_measured(fr) : -1);
    const cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(fr, "measurements"), 0);
    CHECK(m0 && cJSON_GetObjectItem(m0, "chunk") && cJSON_GetObjectItem(m0, "chunk")->valueint == 64,
          "a session per round lost the cell's chunk");
    cJSON_Delete(fr);
    /* A folder as --json: a clear message, not "out of memory". */
    char folder[4200];
    snprintf(folder, sizeof folder, "%s.d", json);
    mkdir(folder, 0777);
    char *a4[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx", "64",
                  "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--json", folder, NULL};
    CHECK(tu_run(a4, log) == 1 && (l = tu_slurp(log, NULL)) && (strstr(l, "not a regular file") || strstr(l, "is a folder")),
          "a folder as --json: %s", l ? l : "");
    free(l);
    rmdir(folder);
    free(orig);
}

/* A --tp 2 run on the cpu (its ranks are threads of one process) records the world: environment.world_size 2 and
 * one entry per rank with its host and device; the schema and the reader (a --resume) accept the file. */
static void tp_world(const char *json, const char *log)
{
    char *a[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--tp", "2", "--arch", "transformer",
                 "--ctx", "64", "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--warmup", "0", "--json",
                 (char *)json, "--force", NULL};
    CHECK(tu_run(a, log) == 0, "bench --tp 2 failed (see %s)", log);
    cJSON *r = tu_load_json(json);
    const cJSON *env = cJSON_GetObjectItem(r, "environment"), *ws = cJSON_GetObjectItem(env, "world_size");
    const cJSON *ranks = cJSON_GetObjectItem(env, "ranks"), *rk;
    CHECK(r && ws && ws->valueint == 2 && cJSON_GetArraySize(ranks) == 2, "bench --tp 2: the file records %s ranks",
          ws ? "not 2" : "no");
    const char *host0 = cJSON_GetStringValue(cJSON_GetObjectItem(env, "host"));
    int i = 0;
    cJSON_ArrayForEach(rk, ranks)
    {
        const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(rk, "host")),
                   *b = cJSON_GetStringValue(cJSON_GetObjectItem(rk, "backend"));
        const cJSON *n = cJSON_GetObjectItem(rk, "rank"), *mem = cJSON_GetObjectItem(rk, "memory_bytes");
        CHECK(n && n->valueint == i && h && host0 && !strcmp(h, host0) && b && !strcmp(b, "cpu") && mem &&
                  mem->valuedouble > 0 && cJSON_GetStringValue(cJSON_GetObjectItem(rk, "name")),
              "bench --tp 2: ranks[%d] does not describe rank %d on this host's cpu", i, i);
        i++;
    }
    if (r) validate(r, "the --tp 2 sweep");
    cJSON_Delete(r);
    char *b[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--tp", "2", "--arch", "transformer",
                 "--ctx", "64", "--phase", "prefill", "--reps", "2", "--max-reps", "2", "--warmup", "0", "--json",
                 (char *)json, "--resume", NULL};
    CHECK(tu_run(b, log) == 0, "resuming the --tp 2 file failed (see %s)", log);
    printf("--tp 2: environment.world_size 2, two ranks, resumed\n");
}


static time_t mtime_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_mtime * 1000000000L + sb.st_mtim.tv_nsec : 0;
}

/* Two writers of one file (issue 23: two bench --resume runs at once both exited 0 and the file kept only the second
 * run's cells). A second run is refused with one line while the first holds the file, or waits for it with --wait
 * and then keeps every cell; and a cell another writer put into the file during a --resume run (one that took no
 * lock, as an older binary) is merged before the run's next rename, not overwritten. */
static void concurrent_writers(const char *json, const char *log)
{
    char log2[600], log3[600];
    snprintf(log2, sizeof log2, "%s.b", log);
    snprintf(log3, sizeof log3, "%s.c", log);
    char *a[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros", "--ctx",
                 "256,512,1024,2048", "--phase", "prefill", "--reps", "3", "--max-reps", "3", "--json", (char *)json,
                 "--resume", NULL};
    char *w[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros", "--ctx",
                 "256,512,1024,2048", "--phase", "prefill", "--reps", "3", "--max-reps", "3", "--json", (char *)json,
                 "--resume", "--wait", NULL};
    unlink(json);
    pid_t first = tu_spawn(a, log);
    int held = 0;
    for (int i = 0; i < 30000 && !held; i++) { /* the first run locks before it loads anything */
        usleep(1000);
        held = tu_lock_held(json);
    }
    CHECK(held, "the first run never held the lock of %s", json);
    /* The second run is refused at once, with one line naming the file and the first run's pid. */
    time_t t0 = time(NULL);
    int rc = tu_run(a, log2);
    char *err = tu_slurp(log2, NULL), pid_text[32];
    snprintf(pid_text, sizeof pid_text, "pid %ld", (long)first);
    int lines = 0;
    for (const char *p = err; p && *p; p++) lines += *p == '\n';
    CHECK(rc == 1 && lines == 1 && err && strstr(err, "is being written by another run") && strstr(err, pid_text) &&
              strstr(err, "--wait"),
          "a second writer: exit %d, %d lines: %s", rc, lines, err ? err : "");
    CHECK(time(NULL) - t0 < 10, "the refusal took %ld s", (long)(time(NULL) - t0));
    if (err) printf("second writer: %s", err);
    free(err);
    /* A third with --wait waits for the first, then keeps what it measured (nothing is left to run). */
    pid_t third = tu_spawn(w, log3);
    int st1 = -1, st3 = -1;
    waitpid(first, &st1, 0);
    waitpid(third, &st3, 0);
    CHECK(WIFEXITED(st1) && WEXITSTATUS(st1) == 0, "the first run failed (see %s)", log);
    CHECK(WIFEXITED(st3) && WEXITSTATUS(st3) == 0 && tu_log_has(log3, "waiting for it") && tu_log_has(log3, "already in"),
          "the waiting run failed or did not wait (see %s)", log3);
    cJSON *r = tu_load_json(json);
    CHECK(r && count_measured(r) == 8, "after two writers the file holds %d of 8 cells", r ? count_measured(r) : -1);
    if (r) validate(r, "the file of two writers");
    printf("two writers: the second refused, the third waited; %d of 8 cells kept\n", r ? count_measured(r) : 0);

    /* A writer without the lock adds a cell while a --resume run goes on: the run's next save merges it. The cell is
     * the 2048-token orthros cell of the file just made, put into the new run's file after its first save; the run
     * then keeps it (it is in the file) instead of measuring it. */
    cJSON *injected = NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(r, "measurements"))
        if (cJSON_GetObjectItem(m, "ctx")->valueint == 2048 && !strcmp(cJSON_GetObjectItem(m, "arch")->valuestring, "orthros"))
            injected = cJSON_Duplicate(m, 1);
    CHECK(injected != NULL, "no 2048-token orthros cell to inject");
    unlink(json);
    pid_t run = tu_spawn(a, log);
    time_t seen = 0;
    cJSON *f = NULL;
    for (int i = 0; i < 30000 && !f; i++) { /* its first save (the 256-token group) */
        usleep(10000);
        cJSON *p = tu_load_json(json);
        if (p && count_measured(p) >= 1) f = p, seen = mtime_of(json);
        else cJSON_Delete(p);
    }
    CHECK(f != NULL, "the run wrote nothing");
    if (f && injected) {
        cJSON *meas = cJSON_GetObjectItem(f, "measurements");
        while (cJSON_GetArraySize(meas)) cJSON_DeleteItemFromArray(meas, 0);
        cJSON_AddItemToArray(meas, cJSON_Duplicate(injected, 1));
        /* Written as a writer does (a temporary file renamed over it), only if the run has not saved again since. */
        char tmp[700];
        snprintf(tmp, sizeof tmp, "%s.other", json);
        tu_write_json(tmp, f);
        CHECK(mtime_of(json) == seen, "the run saved again before the injection (a loaded machine): the test is void");
        CHECK(rename(tmp, json) == 0, "rename the injected file");
    }
    int st = -1;
    waitpid(run, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the run with an injected cell failed (see %s)", log);
    cJSON *g = tu_load_json(json);
    const cJSON *kept = NULL;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(g, "measurements"))
        if (cJSON_GetObjectItem(m, "ctx")->valueint == 2048 && !strcmp(cJSON_GetObjectItem(m, "arch")->valuestring, "orthros"))
            kept = m;
    CHECK(g && count_measured(g) == 8, "the merged file holds %d of 8 cells", g ? count_measured(g) : -1);
    CHECK(kept && injected && cJSON_Compare(cJSON_GetObjectItem(kept, "samples"), cJSON_GetObjectItem(injected, "samples"), 1),
          "the injected cell was overwritten, not merged");
    printf("a cell written by another writer during a --resume run: %s\n", kept ? "merged and kept" : "lost");
    cJSON_Delete(g);
    cJSON_Delete(f);
    cJSON_Delete(injected);
    cJSON_Delete(r);
}

/* e2e cells carry the time to first token of every sample and the medians of the split (time to first token, time
 * per output token, its floor); decode cells their floor; both read back, and the e2e recipe writes its files and
 * report. */
static void e2e_split(const char *dir, const char *log)
{
    char json[300], out[300], md[340];
    snprintf(json, sizeof json, "%s/e2e.json", dir);
    snprintf(out, sizeof out, "%s/e2e-recipe", dir);
    snprintf(md, sizeof md, "%s/report.md", out);
    char *a[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros", "--ctx",
                 "128", "--phase", "e2e,decode", "--decode-tokens", "4", "--reps", "3", "--json", json, NULL};
    CHECK(tu_run(a, log) == 0, "the e2e bench failed (see %s)", log);
    CHECK(tu_log_has(log, "time to first token") && tu_log_has(log, "against its floor"), "no split or floor lines");
    cJSON *r = tu_load_json(json);
    CHECK(r != NULL, "no e2e result file");
    int e2e = 0, dec = 0;
    const cJSON *m, *cells = r ? cJSON_GetObjectItem(r, "measurements") : NULL;
    cJSON_ArrayForEach(m, cells)
    {
        const char *phase = cJSON_GetStringValue(cJSON_GetObjectItem(m, "phase"));
        const cJSON *smp = cJSON_GetObjectItem(m, "samples"), *tt = cJSON_GetObjectItem(m, "ttft_samples");
        if (phase && !strcmp(phase, "e2e")) {
            e2e++;
            int nt = 0, ns = 0;
            double *ttv = tu_json_nums(tt, &nt), *smv = tu_json_nums(smp, &ns);
            CHECK(ttv && smv && nt == ns, "an e2e cell without a ttft per sample");
            for (int i = 0; ttv && smv && i < nt && i < ns; i++)
                CHECK(ttv[i] <= smv[i], "a time to first token past its sample");
            free(ttv), free(smv);
            const cJSON *e = cJSON_GetObjectItem(m, "e2e");
            const char *keys[] = {"ttft_s", "tpot_s", "tpot_floor_s"};
            for (int k = 0; k < 3; k++)
                CHECK(e && cJSON_IsNumber(cJSON_GetObjectItem(e, keys[k])) && cJSON_GetObjectItem(e, keys[k])->valuedouble > 0,
                      "e2e.%s missing or not positive", keys[k]);
        } else if (phase && !strcmp(phase, "decode")) {
            dec++;
            const cJSON *f = cJSON_GetObjectItem(m, "floor_s");
            CHECK(cJSON_IsNumber(f) && f->valuedouble > 0, "a decode cell without its floor");
            CHECK(!tt, "a decode cell with ttft samples");
        }
    }
    CHECK(e2e == 2 && dec == 2, "expected 2 e2e and 2 decode cells, got %d and %d", e2e, dec);
    if (r) validate(r, "an e2e and decode sweep");
    cJSON_Delete(r);
    char *rep[] = {(char *)bin, "report", json, NULL};
    CHECK(tu_run(rep, log) == 0, "orthros report refuses the e2e file (see %s)", log);
    char *rc[] = {(char *)bin, "bench", "--recipe", "e2e", "--device", "cpu", "--models", "preset:tiny", "--ctx", "64",
                  "--decode-tokens", "2", "--reps", "2", "--quiet", "--out-dir", out, NULL};
    CHECK(tu_run(rc, log) == 0, "the e2e recipe failed (see %s)", log);
    char f2[340];
    snprintf(f2, sizeof f2, "%s/tiny-n2.json", out);
    r = tu_load_json(f2);
    CHECK(r != NULL, "the e2e recipe wrote no %s", f2);
    if (r) validate(r, "the e2e recipe's file");
    cJSON_Delete(r);
    char *text = tu_slurp(md, NULL);
    CHECK(text && strstr(text, "| 64 | orthros |") && strstr(text, "time to first token"), "the e2e report lacks its table");
    free(text);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_bench_cli ORTHROS SCHEMA\n");
        return 2;
    }
    bin = argv[1];
    schema = tu_load_json(argv[2]);
    CHECK(schema != NULL, "cannot read schema %s", argv[2]);
    char dir[] = "/tmp/orthros-bench-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char json[256], log[256];
    snprintf(json, sizeof json, "%s/r.json", dir);
    snprintf(log, sizeof log, "%s/log", dir);

    /* 1. The sweep CI runs. */
    char *a1[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros",
                  "--ctx", "256,1024", "--phase", "prefill,decode", "--decode-tokens", "8", "--reps", "3", "--json",
                  json, NULL};
    time_t t0 = time(NULL);
    CHECK(tu_run(a1, log) == 0, "the CI bench command failed (see %s)", log);
    cJSON *r = tu_load_json(json);
    CHECK(r != NULL, "no result file");
    if (r) {
        validate(r, "the CI sweep");
        CHECK(count_measured(r) == 8, "expected 8 measured cells, got %d", count_measured(r));
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(r, "measurements"))
            CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(m, "samples")) >= 3, "a cell has fewer than --reps samples");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "speedups"), "cells")) == 4,
              "expected 4 speedup cells");
        CHECK(strlen(tu_json_str(cJSON_GetObjectItem(r, "run"), "end_time")) > 0, "no end time");
    }
    printf("CI sweep: %ld s, %d cells measured\n", (long)(time(NULL) - t0), r ? count_measured(r) : 0);
    cJSON_Delete(r);

    e2e_split(dir, log);
    tp_world(json, log);
    concurrent_writers(json, log);

    /* 2. A cell that cannot fit is skipped up front; the sweep goes on. */
    char *a2[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx",
                  "1073741824,128", "--phase", "prefill", "--reps", "2", "--json", json, NULL};
    CHECK(tu_run(a2, log) == 0, "a sweep with an impossible cell failed");
    r = tu_load_json(json);
    if (r) {
        validate(r, "the memory-check sweep");
        const cJSON *big = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "measurements"), 0);
        const cJSON *why = cJSON_GetObjectItem(big, "skipped");
        CHECK(why && strstr(why->valuestring, "GiB"), "the 1G-token cell was not skipped with a reason");
        CHECK(!cJSON_GetObjectItem(big, "samples"), "the skipped cell has samples");
        CHECK(count_measured(r) == 1, "the sweep did not go on after the skipped cell");
        if (why) printf("skipped cell: %s\n", why->valuestring);
    }
    cJSON_Delete(r);

    /* 3. Kill a run after its first cell, then resume it. */
    char *a3[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer,orthros",
                  "--ctx", "512,2048", "--phase", "prefill", "--reps", "4", "--max-reps", "4", "--json", json,
                  "--resume", NULL};
    unlink(json);
    pid_t pid = tu_spawn(a3, log);
    cJSON *before = NULL;
    for (int i = 0; i < 30000 && !before; i++) { /* up to 300 s for the first cell on a loaded machine */
        usleep(10000);
        cJSON *p = tu_load_json(json);
        if (p && count_measured(p) >= 1) before = p;
        else cJSON_Delete(p);
    }
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    CHECK(before != NULL, "the run wrote no measurement before it was killed");
    int done_before = before ? count_measured(before) : 0;
    CHECK(done_before < 4, "the run finished before it could be killed; the resume test proves nothing");
    CHECK(tu_run(a3, log) == 0, "resume failed");
    r = tu_load_json(json);
    if (r && before) {
        validate(r, "the resumed sweep");
        CHECK(count_measured(r) == 4, "resumed file has %d of 4 cells", count_measured(r));
        const cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(before, "measurements"), 0);
        const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "measurements"), 0);
        CHECK(cJSON_Compare(cJSON_GetObjectItem(m0, "samples"), cJSON_GetObjectItem(r0, "samples"), 1),
              "the first cell was re-run or lost on resume");
        printf("resume: %d cells before the kill, %d after resuming\n", done_before, count_measured(r));
    }
    cJSON_Delete(before);
    cJSON_Delete(r);

    /* 3b. --cell-budget with room for one repetition but not for warm-up + --reps: as many as fit, no warm-up.
     * Made deterministic by resuming from a file whose 256-token cell claims 100 s a run, so the prediction for
     * 1024 tokens is exactly 100 s x flops(1024) / flops(256); the budget is 2.5 times that: 2 repetitions. */
    {
        char *a5[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer", "--ctx",
                      "256,1024", "--phase", "prefill", "--reps", "3", "--json", json, NULL};
        unlink(json);
        CHECK(tu_run(a5, log) == 0, "the two-cell sweep failed (see %s)", log);
        cJSON *f = tu_load_json(json);
        cJSON *meas = cJSON_GetObjectItem(f, "measurements");
        cJSON *c256 = cJSON_GetArrayItem(meas, 0), *c1024 = cJSON_GetArrayItem(meas, 1);
        CHECK(c256 && c1024 && cJSON_GetObjectItem(c1024, "ctx")->valueint == 1024, "unexpected cells");
        if (c256 && c1024) {
            double f256 = tu_json_num(cJSON_GetObjectItem(c256, "cost"), "flops");
            double f1024 = tu_json_num(cJSON_GetObjectItem(c1024, "cost"), "flops");
            cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(c256, "stats"), "median"), 100.0);
            cJSON_DeleteItemFromArray(meas, 1);
            tu_write_json(json, f);
            char budget[64];
            snprintf(budget, sizeof budget, "%.6f", 2.5 * 100.0 * f1024 / f256);
            char *a6[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--arch", "transformer",
                          "--ctx", "256,1024", "--phase", "prefill", "--warmup", "1", "--reps", "5", "--cell-budget",
                          budget, "--json", json, "--resume", NULL};
            CHECK(tu_run(a6, log) == 0, "the budgeted resume failed (see %s)", log);
            cJSON *g = tu_load_json(json);
            const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "measurements"), 1);
            const cJSON *red = cJSON_GetObjectItem(m, "reps_reduced");
            CHECK(m && !cJSON_GetObjectItem(m, "skipped") && cJSON_GetArraySize(cJSON_GetObjectItem(m, "samples")) == 2,
                  "the 1024 cell should run exactly 2 repetitions, has %d",
                  m ? cJSON_GetArraySize(cJSON_GetObjectItem(m, "samples")) : -1);
            CHECK(red && strstr(red->valuestring, "2 repetitions and no warm-up"), "no reps_reduced note");
            if (g) validate(g, "the budgeted sweep");
            if (red) printf("reduced: %s\n", red->valuestring);
            cJSON_Delete(g);
        }
        cJSON_Delete(f);
    }

    /* 4. The recipe on a tiny model: a resumable sweep, a cell skipped by --cell-budget, and the report. */
    char rdir[300], rjson[400], rmd[400];
    snprintf(rdir, sizeof rdir, "%s/recipe", dir);
    snprintf(rjson, sizeof rjson, "%s/tiny.json", rdir);
    snprintf(rmd, sizeof rmd, "%s/report.md", rdir);
    char *a4[] = {(char *)bin, "bench", "--recipe", "reproduce-21.9x", "--models", "preset:tiny", "--device", "cpu",
                  "--ctx", "128,256,1m", "--reps", "2", "--cell-budget", "5", "--out-dir", rdir, NULL};
    CHECK(tu_run(a4, log) == 0, "the recipe failed (see %s)", log);
    r = tu_load_json(rjson);
    CHECK(r != NULL, "the recipe wrote no result file");
    if (r) {
        validate(r, "the recipe's sweep");
        const cJSON *m, *skipped = NULL;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(r, "measurements")) if (cJSON_GetObjectItem(m, "ctx")->valueint == 1048576 &&
                                                                           !strcmp(cJSON_GetObjectItem(m, "arch")->valuestring, "transformer")) skipped = m;
        const cJSON *why = skipped ? cJSON_GetObjectItem(skipped, "skipped") : NULL;
        CHECK(why && strstr(why->valuestring, "--cell-budget"), "the 1M transformer cell was not skipped by the budget");
        CHECK(count_measured(r) >= 4, "the recipe measured %d cells, expected the 4 short ones", count_measured(r));
    }
    cJSON_Delete(r);
    FILE *rf = fopen(rmd, "r");
    char text[8192] = "";
    size_t got = rf ? fread(text, 1, sizeof text - 1, rf) : 0;
    text[got] = '\0';
    if (rf) fclose(rf);
    CHECK(strstr(text, "# Reproducing the 21.9x prefill speedup") && strstr(text, "| 256 |") && strstr(text, "not run: predicted"),
          "the report lacks its title, a measured row or the skipped cell");
    /* The same recipe with --tp 2: its own file beside the TP=1 one (resume would refuse to mix them), and the
     * report holds both sections. */
    char *a6[] = {(char *)bin, "bench", "--recipe", "reproduce-21.9x", "--models", "preset:tiny", "--device", "cpu",
                  "--tp", "2", "--ctx", "128", "--reps", "2", "--out-dir", rdir, NULL};
    CHECK(tu_run(a6, log) == 0, "the recipe with --tp 2 failed (see %s)", log);
    snprintf(rjson, sizeof rjson, "%s/tiny-tp2.json", rdir);
    r = tu_load_json(rjson);
    CHECK(r != NULL, "the recipe with --tp 2 wrote no tiny-tp2.json");
    cJSON_Delete(r);
    rf = fopen(rmd, "r");
    got = rf ? fread(text, 1, sizeof text - 1, rf) : 0;
    text[got] = '\0';
    if (rf) fclose(rf);
    CHECK(strstr(text, "## preset:tiny\n") && strstr(text, "## preset:tiny, tensor parallel over 2 ranks") &&
              strstr(text, "(tp 2)"),
          "the report does not hold both the TP=1 and the TP=2 sections:\n%s", text);
    char *a5[] = {(char *)bin, "bench", "--recipe", "reproduce-22x", "--device", "cpu", NULL};
    CHECK(tu_run(a5, log) == 2, "an unknown recipe was accepted");

    /* 5. Invalid lists and names. */
    char *bad[][20] = {
        {(char *)bin, "bench", "--device", "cpu", "--ctx", "1k:2k:x1", "--json", json, NULL},
        {(char *)bin, "bench", "--device", "cpu", "--arch", "transformer,mamba", "--json", json, NULL},
        {(char *)bin, "bench", "--device", "cpu", "--phase", "prefill,train", "--json", json, NULL},
        {(char *)bin, "bench", "--device", "cpu", "--batch", "0", "--json", json, NULL},
        {(char *)bin, "bench", "--device", "cpu", "--ctx", "", "--json", json, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = tu_run(bad[i], log);
        CHECK(rc == 2, "invalid bench arguments %zu: status %d, want 2 (a usage error)", i, rc);
    }
    file_safety(json, log);

    CHECK(tu_remove_tree(dir) == 0, "cleanup");
    cJSON_Delete(schema);
    return tu_finish();
}
