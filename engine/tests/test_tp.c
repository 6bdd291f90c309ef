/* Tensor parallel on the cpu backend (ranks as threads, an in-memory all-reduce): a model sharded over N ranks
 * gives the logits of the unsharded model within 1e-5 relative (max |tp N - tp 1| / max |tp 1|) on every
 * fixture whose kv head count N divides and on test checkpoints made for N = 2, 3, 4 (an uneven MLP split
 * included), for every attention kind (hedgehog too), prefill of the whole prompt and in chunks of 7, and
 * batched decode; greedy generation gives the same tokens. Then the rank group itself (sums in rank order, a
 * failing rank releases the others), the ranks as processes (ORTHROS_TP_PROCESSES=1: the launcher, the
 * bootstrap, the control channel and the ranks serving rank 0, as a cuda run uses them, with a TCP all-reduce in
 * the place of NCCL; started by the binary itself and torchrun-style from outside), and the errors: N not
 * dividing the kv heads, N < 1, N too large, and through the CLI a cuda run without GPUs or NCCL.
 * usage: test_tp PATH/TO/orthros FIXTURE_DIR_OR_GGUF... */
#define _GNU_SOURCE
#include "orthros.h"
#include "backend.h"
#include "testutil.h"
#include "tp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOL 1e-5

static orthros_backend *cpu;
static const char *bin;

static orthros_arch_opts case_opts(const tu_arch_case *c, int tp)
{
    orthros_arch_opts o = tu_arch_case_opts(c);
    o.tp = tp;
    return o;
}

static double rel_err(const float *ref, const float *got, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)ref[i] - got[i]);
        if (isnan(got[i])) e = INFINITY;
        num = fmax(num, e);
        den = fmax(den, fabs((double)ref[i]));
    }
    return den > 0 ? num / den : num;
}

/* What one (model, schedule, world size) produces: prefill logits of every position at two chunk sizes, and
 * the logits of `steps` batched decode steps of 3 sequences. */
typedef struct {
    float *whole, *chunked, *decode;
} outputs;

static void outputs_free(outputs *o)
{
    free(o->whole), free(o->chunked), free(o->decode);
    memset(o, 0, sizeof *o);
}

static int run_model(outputs *out, const char *spec, const orthros_arch_opts *ao, const int32_t *tok, int n, int steps)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    memset(out, 0, sizeof *out);
    int rc = orthros_model_load(&m, cpu, spec, ao, 7);
    if (rc) return rc;
    size_t V = (size_t)orthros_model_get_config(m)->vocab;
    out->whole = malloc(sizeof(float) * (size_t)n * V);
    out->chunked = malloc(sizeof(float) * (size_t)n * V);
    out->decode = malloc(sizeof(float) * 3 * (size_t)steps * V);
    int chunks[2] = {n, 7};
    float *dst[2] = {out->whole, out->chunked};
    for (int c = 0; !rc && c < 2; c++) {
        rc = orthros_session_init(&s, m, 1, n, chunks[c]);
        if (!rc) rc = orthros_prefill(s, 0, tok, n, dst[c], NULL);
        orthros_session_free(s);
        s = NULL;
    }
    /* Three sequences of different lengths, then decode steps of the whole batch. */
    int32_t cur[3], nxt[3];
    if (!rc) rc = orthros_session_init(&s, m, 3, n + steps, 5);
    for (int b = 0; !rc && b < 3; b++) rc = orthros_prefill(s, b, tok + b, n - 2 * b, NULL, &cur[b]);
    for (int st = 0; !rc && st < steps; st++) {
        rc = orthros_decode(s, cur, nxt, out->decode + (size_t)st * 3 * V);
        memcpy(cur, nxt, sizeof cur);
    }
    orthros_session_free(s);
    orthros_model_free(m);
    if (rc) outputs_free(out);
    return rc;
}

static int kv_heads_of(const char *spec)
{
    orthros_model_config cfg;
    char path[4200], *text = NULL;
    if (!strncmp(spec, "preset:", 7)) return orthros_preset_config(&cfg, spec + 7) ? 0 : cfg.n_kv_heads;
    size_t len = strlen(spec);
    if (len > 5 && !strcmp(spec + len - 5, ".gguf")) { /* a GGUF file: its metadata, through a load */
        orthros_model *m = NULL;
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        int kv = orthros_model_load(&m, cpu, spec, &ao, 1) ? 0 : orthros_model_get_config(m)->n_kv_heads;
        orthros_model_free(m);
        return kv;
    }
    snprintf(path, sizeof path, "%s/config.json", spec);
    text = tu_slurp(path, NULL);
    int kv = text && !orthros_config_parse(&cfg, text) ? cfg.n_kv_heads : 0;
    free(text);
    return kv;
}

/* Every schedule of `spec` at world sizes 2..8 that divide its kv heads, against world size 1. */
static void test_model(const char *spec, int has_hedgehog)
{
    int n = 30, steps = 3, kv = kv_heads_of(spec);
    int32_t tok[30];
    CHECK(kv > 0, "%s: cannot read its config", spec);
    for (int i = 0; i < n; i++) tok[i] = (int32_t)(orthros_uniform(42, (uint64_t)i) * 90.0f);
    for (size_t c = 0; c < tu_n_arch_cases; c++) {
        if (tu_arch_cases[c].fmap == ORTHROS_FMAP_HEDGEHOG && !has_hedgehog) continue;
        orthros_arch_opts ao = case_opts(&tu_arch_cases[c], 1);
        outputs ref;
        int rc = run_model(&ref, spec, &ao, tok, n, steps);
        CHECK(rc == 0, "%s %s tp 1: %s", spec, tu_arch_cases[c].label, orthros_last_error());
        if (rc) continue;
        size_t V = 0;
        {
            orthros_model *m = NULL;
            if (!orthros_model_load(&m, cpu, spec, &ao, 7)) V = (size_t)orthros_model_get_config(m)->vocab;
            orthros_model_free(m);
        }
        for (int N = 2; N <= 8; N++) {
            if (N > kv || kv % N) continue;
            ao.tp = N;
            outputs got;
            rc = run_model(&got, spec, &ao, tok, n, steps);
            CHECK(rc == 0, "%s %s tp %d: %s", spec, tu_arch_cases[c].label, N, orthros_last_error());
            if (rc) continue;
            double e1 = rel_err(ref.whole, got.whole, (size_t)n * V), e2 = rel_err(ref.chunked, got.chunked, (size_t)n * V);
            double e3 = rel_err(ref.decode, got.decode, 3 * (size_t)steps * V);
            printf("%-40s %-17s tp %d: rel err prefill %.2g, chunked %.2g, batch-3 decode %.2g\n", spec, tu_arch_cases[c].label,
                   N, e1, e2, e3);
            CHECK(e1 <= TOL && e2 <= TOL && e3 <= TOL, "%s %s tp %d: logits differ from tp 1 (%.3g, %.3g, %.3g)", spec,
                  tu_arch_cases[c].label, N, e1, e2, e3);
            outputs_free(&got);
        }
        outputs_free(&ref);
    }
    if (kv % 2) { /* a model whose kv heads 2 does not divide: the error instead */
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        ao.tp = 2;
        orthros_model *m = (orthros_model *)1;
        int rc = orthros_model_load(&m, cpu, spec, &ao, 7);
        char want[64];
        snprintf(want, sizeof want, "%d kv head", kv);
        CHECK(rc == ORTHROS_EINVAL && !m && strstr(orthros_last_error(), want), "%s tp 2: expected an error naming %s, got %d: %s",
              spec, want, rc, orthros_last_error());
        printf("%-40s tp 2: refused: %s\n", spec, orthros_last_error());
    }
}

/* A sharded model switched to another schedule (orthros_model_set_arch, as the bench's interleaving does) runs
 * it on every rank: the logits of the model loaded under that schedule. */
static void test_set_arch(void)
{
    int n = 20;
    int32_t tok[20];
    for (int i = 0; i < n; i++) tok[i] = (int32_t)(orthros_uniform(8, (uint64_t)i) * 200.0f);
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.tp = 2;
    ao.arch = "orthros";
    outputs want;
    int rc = run_model(&want, "preset:tiny", &ao, tok, n, 2);
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    ao.arch = "transformer";
    float *lg = malloc(sizeof(float) * (size_t)n * 256);
    if (!rc) rc = orthros_model_load(&m, cpu, "preset:tiny", &ao, 7);
    if (!rc) rc = orthros_model_set_arch(m, "orthros");
    if (!rc) rc = orthros_session_init(&s, m, 1, n, n);
    if (!rc) rc = orthros_prefill(s, 0, tok, n, lg, NULL);
    CHECK(rc == 0, "set_arch on a sharded model: %s", orthros_last_error());
    if (!rc) CHECK(!memcmp(lg, want.whole, sizeof(float) * (size_t)n * 256), "set_arch(orthros) on tp 2 differs from loading it");
    orthros_session_free(s);
    orthros_model_free(m);
    free(lg);
    outputs_free(&want);
    printf("set_arch on a tp 2 model switches every rank\n");
}

/* Greedy generation of a sharded model gives the unsharded model's tokens. */
static void test_generate(const char *spec)
{
    if (kv_heads_of(spec) % 2) return;
    int32_t prompt[6] = {3, 17, 42, 5, 9, 11}, a[12], b[12];
    int counts[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        ao.arch = "orthros";
        ao.tp = k ? 2 : 1;
        orthros_model *m = NULL;
        orthros_session *s = NULL;
        int rc = orthros_model_load(&m, cpu, spec, &ao, 3);
        if (!rc) rc = orthros_session_init(&s, m, 1, 18, 0);
        counts[k] = rc ? rc : orthros_generate(s, prompt, 6, 12, k ? b : a);
        orthros_session_free(s);
        orthros_model_free(m);
    }
    CHECK(counts[0] > 0 && counts[0] == counts[1] && !memcmp(a, b, sizeof(int32_t) * (size_t)counts[0]),
          "%s: generation with tp 2 differs from tp 1 (%d vs %d tokens)", spec, counts[0], counts[1]);
}

static void remove_dir(char *dir)
{
    CHECK(tu_remove_tree(dir) == 0, "cleanup %s", dir);
    free(dir);
}

/* ---- the rank group ---- */

typedef struct {
    orthros_tp_pool *pool;
    float *bufs[3];
    int fail_rank;
} group_job;

static int group_rank(void *arg, int rank)
{
    group_job *j = arg;
    if (rank == j->fail_rank) return orthros_error(ORTHROS_EINVAL, "rank %d fails on purpose", rank);
    return orthros_comm_allreduce_f32(orthros_tp_pool_comm(j->pool, rank), j->bufs[rank], 1000);
}

static void test_group(void)
{
    group_job j = {.fail_rank = -1};
    CHECK(orthros_tp_pool_create(&j.pool, 3) == 0, "pool: %s", orthros_last_error());
    for (int r = 0; r < 3; r++) {
        j.bufs[r] = malloc(1000 * sizeof(float));
        for (int i = 0; i < 1000; i++) j.bufs[r][i] = (float)(r + 1) * 0.1f + (float)i * 1e-3f;
    }
    CHECK(orthros_tp_pool_run(j.pool, group_rank, &j) == 0, "all-reduce: %s", orthros_last_error());
    int same = 1;
    for (int i = 0; i < 1000; i++) {
        float want = (((0.1f + (float)i * 1e-3f) + (0.2f + (float)i * 1e-3f)) + (0.3f + (float)i * 1e-3f));
        for (int r = 0; r < 3; r++) same &= j.bufs[r][i] == want;
    }
    CHECK(same, "the in-memory all-reduce is not the rank-order sum on every rank");
    /* A rank that fails before the all-reduce releases the two waiting in it; its own error is reported. */
    j.fail_rank = 1;
    int rc = orthros_tp_pool_run(j.pool, group_rank, &j);
    CHECK(rc == ORTHROS_EINVAL && strstr(orthros_last_error(), "rank 1: rank 1 fails on purpose"),
          "a failing rank: got %d: %s", rc, orthros_last_error());
    j.fail_rank = -1;
    CHECK(orthros_tp_pool_run(j.pool, group_rank, &j) == 0, "the group does not recover after a failure: %s",
          orthros_last_error());
    for (int r = 0; r < 3; r++) free(j.bufs[r]);
    orthros_tp_pool_free(j.pool);
    printf("rank group: rank-order sums, a failing rank releases the others\n");
}

/* ---- ranks as processes ---- */

/* orthros logits on dir with --tp 2 on cpu; with `procs` the ranks are processes. Returns the file's bytes. */
static char *cli_logits(const char *dir, const char *out, int procs, int window, size_t *len)
{
    char log[4200];
    snprintf(log, sizeof log, "%s.log", out);
    /* window: phi after RoPE and a local window of 3, which every rank must get from rank 0's load. */
    char *argv[] = {(char *)bin, "logits", "--model", (char *)dir, "--arch", "orthros", "--tail", "4", "--tokens",
                    "5,17,42,9,77,3,101,64,8,33,21,90,12,6", "--out", (char *)out, "--device", "cpu", "--tp", "2",
                    "--chunk", "5", window ? "--local-window" : NULL, "3", "--feature-map-rope", "after", NULL};
    if (procs) setenv("ORTHROS_TP_PROCESSES", "1", 1);
    int st = tu_run(argv, log);
    unsetenv("ORTHROS_TP_PROCESSES");
    CHECK(st == 0, "logits --tp 2%s: exit %d", procs ? " as processes" : "", st);
    return st == 0 ? tu_slurp(out, len) : NULL;
}

static void test_processes(const char *dir)
{
    char *tmp = tu_tempdir(), a[4200], b[4200], log[4200];
    snprintf(a, sizeof a, "%s/threads.f32", tmp);
    snprintf(b, sizeof b, "%s/procs.f32", tmp);
    size_t la = 0, lb = 0;
    char *da = cli_logits(dir, a, 0, 0, &la), *db = cli_logits(dir, b, 1, 0, &lb);
    /* Same shards, same ops, the same rank-order sums: the same bits. */
    CHECK(da && db && la == lb && la > 0 && !memcmp(da, db, la), "logits of ranks as processes differ from ranks as threads");
    printf("%s: --tp 2 as processes gives the logits of --tp 2 as threads, bit for bit\n", dir);
    size_t lc = 0, ld = 0;
    char *dc = cli_logits(dir, a, 0, 1, &lc), *dd = cli_logits(dir, b, 1, 1, &ld);
    CHECK(da && dc && dd && lc == ld && lc == la && !memcmp(dc, dd, lc) && memcmp(dc, da, lc),
          "with a local window, logits of ranks as processes differ from ranks as threads (or from no window)");
    printf("%s: the same with --local-window 3 --feature-map-rope after\n", dir);
    free(da), free(db), free(dc), free(dd);

    /* Started from outside as torchrun starts its workers: RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT. */
    char port[16];
    snprintf(port, sizeof port, "%d", 20000 + (int)(getpid() % 20000));
    char *gen[] = {(char *)bin, "generate", "--model", (char *)dir, "--tokens", "5,17,42,9", "--max-new", "8",
                   "--device", "cpu", "--tp", "2", NULL};
    snprintf(log, sizeof log, "%s/threads.log", tmp);
    CHECK(tu_run(gen, log) == 0, "generate --tp 2");
    char *want = tu_generated_line(log);
    setenv("ORTHROS_TP_PROCESSES", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", port, 1);
    setenv("RANK", "1", 1);
    snprintf(log, sizeof log, "%s/rank1.log", tmp);
    pid_t r1 = tu_spawn(gen, log);
    setenv("RANK", "0", 1);
    snprintf(log, sizeof log, "%s/rank0.log", tmp);
    int st0 = tu_run(gen, log), st1 = -1;
    waitpid(r1, &st1, 0);
    char *got = tu_generated_line(log);
    CHECK(st0 == 0 && WIFEXITED(st1) && WEXITSTATUS(st1) == 0, "torchrun-style ranks: exit %d and %d", st0,
          WIFEXITED(st1) ? WEXITSTATUS(st1) : -1);
    CHECK(want && got && !strcmp(want, got), "torchrun-style ranks generate %s, in-process ranks %s", got ? got : "",
          want ? want : "");
    printf("torchrun-style ranks as processes: %s\n", got ? got : "(nothing)");
    free(want), free(got);
    const char *vars[] = {"WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "RANK"};
    for (int i = 0; i < 4; i++) unsetenv(vars[i]);

    /* The all-reduce bench and decode through the control channel. */
    char json[4200];
    snprintf(json, sizeof json, "%s/bench.json", tmp);
    snprintf(log, sizeof log, "%s/bench.log", tmp);
    char *bv[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--tp", "2", "--arch", "transformer,orthros",
                  "--phase", "decode,allreduce", "--ctx", "64", "--decode-tokens", "2", "--reps", "2", "--max-reps", "2",
                  "--warmup", "0", "--json", json, NULL};
    int st = tu_run(bv, log);
    unsetenv("ORTHROS_TP_PROCESSES");
    cJSON *r = st == 0 ? tu_load_json(json) : NULL;
    const cJSON *meas = cJSON_GetObjectItem(r, "measurements");
    /* Four cells: decode and allreduce of both schedules, switched by orthros_model_set_arch on every rank. */
    CHECK(cJSON_GetArraySize(meas) == 4, "bench as processes: %d cells, want 4", cJSON_GetArraySize(meas));
    const cJSON *dec = cJSON_GetArrayItem(meas, 1), *ar = cJSON_GetArrayItem(meas, 3);
    const cJSON *algbw = cJSON_GetObjectItem(cJSON_GetObjectItem(ar, "throughput"), "tbps");
    CHECK(cJSON_GetObjectItem(dec, "samples") && cJSON_GetObjectItem(ar, "samples") && algbw && algbw->valuedouble > 0,
          "bench decode + allreduce as processes: exit %d, no measurements", st);
    const cJSON *tp = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "run"), "config"), "tp");
    CHECK(tp && tp->valueint == 2, "the bench result does not record tp 2");
    /* Rank 1 sent its host and device to rank 0 when the world started; rank 0 wrote both. */
    const cJSON *env = cJSON_GetObjectItem(r, "environment"), *ws = cJSON_GetObjectItem(env, "world_size");
    const cJSON *rk1 = cJSON_GetArrayItem(cJSON_GetObjectItem(env, "ranks"), 1);
    const char *h0 = cJSON_GetStringValue(cJSON_GetObjectItem(env, "host"));
    const char *h1 = cJSON_GetStringValue(cJSON_GetObjectItem(rk1, "host")), *b1 = cJSON_GetStringValue(cJSON_GetObjectItem(rk1, "backend"));
    const cJSON *n1 = cJSON_GetObjectItem(rk1, "rank"), *mem1 = cJSON_GetObjectItem(rk1, "memory_bytes");
    CHECK(ws && ws->valueint == 2 && cJSON_GetArraySize(cJSON_GetObjectItem(env, "ranks")) == 2 && n1 && n1->valueint == 1 &&
              h0 && h1 && !strcmp(h0, h1) && b1 && !strcmp(b1, "cpu") && mem1 && mem1->valuedouble > 0,
          "the bench result of ranks as processes does not list both ranks with rank 1's host and device");
    cJSON_Delete(r);
    remove_dir(tmp);
}

/* ---- errors ---- */

static void expect_load_error(const char *spec, int tp, const char *want1, const char *want2)
{
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.tp = tp;
    orthros_model *m = (orthros_model *)1;
    int rc = orthros_model_load(&m, cpu, spec, &ao, 1);
    const char *e = orthros_last_error();
    CHECK(rc == ORTHROS_EINVAL && m == NULL && strstr(e, want1) && (!want2 || strstr(e, want2)),
          "%s --tp %d: expected an error with \"%s\", got %d: %s", spec, tp, want1, rc, e);
    printf("%s --tp %d: %s\n", spec, tp, e);
}

/* Runs the CLI with extra environment; one to `nlines` stderr lines, each holding `want` (a line a rank where each
 * rank refuses: the launcher stops the others once one has failed, so a rank may be gone before its line), and the
 * exit status `want_status`. */
static void expect_cli_lines(const char *label, char *const argv[], const char *env, const char *want, int want_status,
                             int nlines)
{
    char *dir = tu_tempdir(), errpath[4200];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    int st = tu_run_capture(argv, env, NULL, errpath);
    size_t len = 0;
    char *err = tu_slurp(errpath, &len);
    int lines = 0, found = 0;
    for (size_t i = 0; err && i < len; i++) lines += err[i] == '\n';
    for (const char *p = err; p && (p = strstr(p, want)); p += strlen(want)) found++;
    CHECK(st == want_status, "%s: exit %d, want %d", label, st, want_status);
    CHECK(err && lines >= 1 && lines <= nlines && found == lines, "%s: stderr \"%s\" is not 1-%d line(s) with \"%s\"",
          label, err ? err : "", nlines, want);
    printf("%-36s -> %s", label, err && *err ? err : "(nothing)\n");
    free(err);
    unlink(errpath);
    rmdir(dir);
    free(dir);
}

static void expect_cli(const char *label, char *const argv[], const char *env, const char *want, int want_status)
{
    expect_cli_lines(label, argv, env, want, want_status, 1);
}

static void test_errors(const char *kv4)
{
    expect_load_error("preset:tiny", 0, "at least 1", NULL);
    expect_load_error("preset:tiny", -2, "at least 1", NULL);
    expect_load_error("preset:tiny", 4, "4", "2 kv heads");
    expect_load_error(kv4, 3, "3 does not divide", "4 kv heads");
    expect_load_error("preset:llama3.1-70b", 3, "3 does not divide", "8 kv heads");
    expect_load_error("preset:tiny", 1000, "1000", NULL);

    char *lo[] = {(char *)bin, "logits", "--model", "preset:tiny", "--tokens", "1,2", "--out", "/dev/null",
                  "--device", "cpu", "--tp", "0", NULL};
    expect_cli("--tp 0", lo, NULL, "option --tp must be in 1..64, got 0", 2);
    lo[3] = (char *)kv4;
    lo[11] = "3";
    expect_cli("--tp 3, 4 kv heads", lo, NULL, "3 does not divide the model's 4 kv heads", 1);
    lo[3] = "preset:tiny";
    lo[11] = "4";
    expect_cli("--tp 4, 2 kv heads", lo, NULL, "4 is larger than the model's 2 kv heads", 1);
    lo[11] = "2";
    expect_cli("--device cpu under WORLD_SIZE=2", lo, "WORLD_SIZE=2", "thread of one process", 2);
    /* the ranks' timeouts out of range or not numbers: each rank refuses before any connects, naming the variable */
    setenv("ORTHROS_TP_PROCESSES", "1", 1);
    expect_cli_lines("ORTHROS_TP_TIMEOUT=5m", lo, "ORTHROS_TP_TIMEOUT=5m",
                     "ORTHROS_TP_TIMEOUT=5m: a whole number of seconds, 1-86400", 1, 2);
    expect_cli_lines("ORTHROS_TP_TIMEOUT=0", lo, "ORTHROS_TP_TIMEOUT=0", "ORTHROS_TP_TIMEOUT=0: a whole number of seconds",
                     1, 2);
    expect_cli_lines("ORTHROS_TP_HEARTBEAT=-1", lo, "ORTHROS_TP_HEARTBEAT=-1",
                     "ORTHROS_TP_HEARTBEAT=-1: a whole number of seconds, 0-86400", 1, 2);
    unsetenv("ORTHROS_TP_PROCESSES");
    if (!orthros_cuda_available()) {
        /* The cuda launch is refused before any process starts: no CUDA build, no NCCL, or too few GPUs. */
        lo[9] = "cuda";
        expect_cli("--tp 2 --device cuda, no GPU", lo, NULL,
                   ORTHROS_HAVE_CUDA ? "--tp 2 needs 2 GPUs, 0 found" : "no CUDA backend", 1);
        if (ORTHROS_HAVE_CUDA)
            expect_cli("--tp 2 --device cuda, no NCCL", lo, "ORTHROS_NCCL_LIB=/nonexistent/libnccl.so.2",
                       "--tp 2 needs NCCL: /nonexistent/libnccl.so.2 not found", 1);
    }
}

static char *write_test_checkpoint(int heads, int kv, int d_model, int ffn)
{
    char *dir = tu_tempdir();
    orthros_model_config cfg;
    orthros_preset_config(&cfg, "tiny");
    cfg.n_heads = heads;
    cfg.n_kv_heads = kv;
    cfg.d_model = d_model;
    cfg.ffn = ffn;
    CHECK(dir && tu_write_checkpoint_gated(dir, &cfg, 11, ORTHROS_DTYPE_F32, cfg.head_dim / 2, TU_GATES_RANDOM) == 0, "write checkpoint");
    return dir;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_tp PATH/TO/orthros FIXTURE_DIR...\n");
        return 2;
    }
    bin = argv[1];
    if (orthros_backend_cpu_create(&cpu)) return 1;
    test_group();
    test_set_arch();
    /* 4 kv heads (world sizes 2 and 4, an MLP of 150 split 37/38/37/38), 3 (world size 3) and 8 (world sizes 2, 4
     * and 8, as the 8B and 70B shapes shard on 8 GPUs; an MLP of 200 split in 25s), with hedgehog feature maps and
     * window gates (each rank holds its heads' gates). */
    char *kv4 = write_test_checkpoint(8, 4, 64, 150), *kv3 = write_test_checkpoint(6, 3, 48, 100),
         *kv8 = write_test_checkpoint(16, 8, 64, 200);
    test_model("preset:tiny", 1);
    test_model(kv4, 1);
    test_model(kv3, 1);
    test_model(kv8, 1);
    for (int i = 2; i < argc; i++) {
        test_model(argv[i], 0);
        test_generate(argv[i]);
    }
    if (argc > 2) test_processes(argv[2]);
    test_errors(kv4);
    remove_dir(kv4);
    remove_dir(kv3);
    remove_dir(kv8);
    orthros_backend_free(cpu);
    return tu_finish();
}
