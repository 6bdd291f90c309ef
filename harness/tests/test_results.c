/* The result-file layer: every reader refuses a file that does not match its schema, naming the file, the JSON path
 * of the first offending field and what is wrong, and returns nothing half-read; the writers' output reads back
 * identically and matches the JSON schemas; atomic writes leave no temporary file behind.
 * usage: test_results SOURCE_DIR */
#define _GNU_SOURCE
#include "gpu_state.h"
#include "result_bench.h"
#include "result_eval.h"
#include "schema.h"
#include "table.h"
#include "testutil.h"
#include "util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];
static orthros_backend *cpu_be; /* the headers' device: a --tp 2 run on it (environment.world_size, ranks) */

/* A small valid bench file: two architectures, three lengths, one skipped cell, speedups. */
static void make_bench(orthros_bench_file *f)
{
    orthros_bench_file_init(f);
    f->header = orthros_result_new("bench", 0, NULL, 7, cpu_be, 2);
    f->cfg.model = strdup("preset:tiny");
    f->cfg.archs = strdup("transformer,orthros");
    f->cfg.ctxs = strdup("64:256:x2");
    f->cfg.phases = strdup("prefill");
    f->cfg.batches = strdup("1");
    snprintf(f->cfg.device, sizeof f->cfg.device, "cpu");
    snprintf(f->cfg.source, sizeof f->cfg.source, "orthros bench");
    f->cfg.decode_tokens = 16, f->cfg.reps = 4, f->cfg.max_reps = 8, f->cfg.max_noise_pct = 2, f->cfg.timeout_s = 10;
    f->cfg.seed = 7;
    snprintf(f->cfg.sched.feature_map_rope, sizeof f->cfg.sched.feature_map_rope, "after");
    f->cfg.sched.local_window = 64;
    f->ceilings = (orthros_ceilings){1.5, 512, 20, 1 << 20, 25, 1 << 20};
    const char *archs[] = {"transformer", "orthros"};
    for (int a = 0; a < 2; a++)
        for (int ctx = 64; ctx <= 256; ctx *= 2) {
            orthros_bench_cell c;
            orthros_bench_cell_init(&c);
            snprintf(c.arch, sizeof c.arch, "%s", archs[a]);
            snprintf(c.phase, sizeof c.phase, "prefill");
            c.ctx = ctx, c.batch = 1;
            if (a == 1 && ctx == 256) {
                orthros_bench_cell_set_reason(&c, ORTHROS_CELL_SKIPPED, "needs 9 GiB; 1 GiB free");
            } else {
                c.n_samples = 6, c.n_rounds = 2;
                c.samples = malloc(6 * sizeof *c.samples);
                c.round_ends = malloc(2 * sizeof *c.round_ends);
                for (int i = 0; i < 6; i++) c.samples[i] = 1e-3 * ctx * (a ? 0.5 : 1.0) * (1 + 0.01 * i);
                c.round_ends[0] = 3, c.round_ends[1] = 6;
                orthros_stats_fill(&c.stats, c.samples, 6, 0.95, 200, 1);
                snprintf(c.stop_reason, sizeof c.stop_reason, "noise_target");
                c.noise = 0.01, c.chunk = 64, c.flops = 1e9 * ctx, c.attn_flops = 1e8, c.bytes = 1e7;
                c.tflops = 1, c.tbps = 0.1, c.tokens_per_s = 1000, c.frac_gemm = 0.5, c.frac_copy = 0.1, c.frac_read = 0.1;
                c.weights_bytes = 1e6, c.session_bytes = 1e5, c.device_used_bytes = 2e6;
                /* The GPU at the cell's end: transformer's held at the power cap, orthros's not read at 64. */
                if (a == 0) {
                    c.gpu_sm_clock_mhz = 1600 + ctx, c.gpu_sm_clock_max_mhz = 1980, c.gpu_power_w = 693.5;
                    c.gpu_power_limit_w = 700;
                    snprintf(c.gpu_clock_limits, sizeof c.gpu_clock_limits, "%s", ctx == 64 ? "none" : "sw_power_cap");
                } else if (ctx == 128) {
                    c.gpu_sm_clock_mhz = 1980, c.gpu_sm_clock_max_mhz = 1980, c.gpu_power_w = 250;
                    snprintf(c.gpu_clock_limits, sizeof c.gpu_clock_limits, "gpu_idle");
                }
            }
            orthros_bench_file_add(f, &c);
        }
}

static const char *save_json(const char *name, cJSON *root)
{
    static char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tu_write_json(path, root);
    return path;
}

/* Reads a bench file made from `root` after `mutate`; the reader must refuse it with a message holding `want`. */
static void expect_bench_refused(const char *label, cJSON *root, const char *want)
{
    const char *path = save_json("mutated.json", root);
    orthros_bench_file f;
    int rc = orthros_bench_file_read(&f, path, 0, NULL);
    const char *msg = orthros_last_error();
    CHECK(rc == ORTHROS_EFORMAT && strstr(msg, want) && strstr(msg, "mutated.json"), "%s: rc %d, message \"%s\" lacks \"%s\"",
          label, rc, msg, want);
    CHECK(f.n_cells == 0 && !f.cells && !f.header, "%s: a refused file left a half-read struct", label);
    printf("%-44s -> %s\n", label, msg);
    cJSON_Delete(root);
}

static cJSON *bench_json(void)
{
    orthros_bench_file f;
    make_bench(&f);
    cJSON *root = orthros_bench_file_to_json(&f);
    orthros_bench_file_free(&f);
    return root;
}

static cJSON *cell(cJSON *root, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(root, "measurements"), i); }

static void bench_refusals(void)
{
    cJSON *r;
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 0), "stats", cJSON_CreateNull());
    expect_bench_refused("stats: null", r, "measurements[0].stats: not an object");
    r = bench_json();
    cJSON *s = cJSON_CreateArray();
    cJSON_AddItemToArray(s, cJSON_CreateString("x"));
    cJSON_AddItemToArray(s, cJSON_CreateNull());
    cJSON_ReplaceItemInObject(cell(r, 1), "samples", s);
    expect_bench_refused("samples [\"x\", null]", r, "measurements[1].samples: item 0 is not a positive finite number");
    r = bench_json();
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(cell(r, 0), "samples"), 2, cJSON_CreateNumber(0));
    expect_bench_refused("a zero sample", r, "measurements[0].samples: item 2");
    r = bench_json();
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(cell(r, 0), "samples"), 0, cJSON_CreateNumber(-0.5));
    expect_bench_refused("a negative sample", r, "measurements[0].samples: item 0");
    r = bench_json();
    cJSON_DeleteItemFromObject(cell(r, 2), "ctx");
    expect_bench_refused("a cell without ctx", r, "measurements[2].ctx: missing");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 1), "arch", cJSON_CreateNumber(3));
    expect_bench_refused("a numeric arch", r, "measurements[1].arch: not a string");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 1), "arch", cJSON_CreateString(""));
    expect_bench_refused("an empty arch", r, "measurements[1].arch: empty");
    r = bench_json();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cell(r, 1), "gpu"), "clock_limits",
                              cJSON_CreateString("sw_power_cap;reboot"));
    expect_bench_refused("a clock reason with a ';'", r, "measurements[1].gpu.clock_limits: must be comma-separated");
    r = bench_json();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cell(r, 1), "gpu"), "sm_clock_mhz", cJSON_CreateNumber(-5));
    expect_bench_refused("a negative SM clock", r, "measurements[1].gpu.sm_clock_mhz");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 1), "gpu", cJSON_CreateString("hot"));
    expect_bench_refused("gpu: a string", r, "measurements[1].gpu: not an object");
    r = bench_json();
    cJSON_AddItemToArray(cJSON_GetObjectItem(r, "measurements"), cJSON_CreateNumber(1));
    expect_bench_refused("a non-object measurement", r, "measurements[6]: not an object");
    r = bench_json();
    cJSON_AddItemToArray(cJSON_GetObjectItem(r, "measurements"), cJSON_Duplicate(cell(r, 0), 1));
    expect_bench_refused("a cell twice", r, "the cell transformer prefill ctx 64 batch 1 appears twice");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 0), "ctx", cJSON_CreateNumber(64.5));
    expect_bench_refused("a fractional ctx", r, "measurements[0].ctx: 64.5 is not an integer");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 0), "ctx", cJSON_CreateNumber(1e12));
    expect_bench_refused("ctx past int", r, "measurements[0].ctx");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 0), "phase", cJSON_CreateString("prefil"));
    expect_bench_refused("an unknown phase", r, "measurements[0].phase: \"prefil\" is not prefill");
    r = bench_json();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cell(r, 0), "stats"), "n", cJSON_CreateNumber(5));
    expect_bench_refused("stats.n disagreeing", r, "measurements[0].stats: n is not the number of samples");
    r = bench_json();
    cJSON_ReplaceItemInObject(cell(r, 0), "rounds", cJSON_CreateIntArray((int[]){4, 3}, 2));
    expect_bench_refused("rounds not increasing", r, "measurements[0].rounds");
    r = bench_json();
    cJSON_AddStringToObject(cell(r, 0), "skipped", "yes");
    expect_bench_refused("skipped with samples", r, "measurements[0].skipped: a cell with samples cannot be skipped");
    r = bench_json();
    cJSON_ReplaceItemInObject(r, "schema_version", cJSON_CreateNumber(99));
    expect_bench_refused("a future schema version", r, "schema_version: 99");
    r = bench_json();
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(r, "run"), "config");
    expect_bench_refused("no run.config", r, "run.config: missing");
    r = bench_json();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "run"), "config"), "model",
                              cJSON_CreateString("a\nb"));
    expect_bench_refused("a control character", r, "run.config.model: a string holding a control character");
    r = bench_json();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "ceilings"), "gemm_tflops", cJSON_CreateString("fast"));
    expect_bench_refused("a string ceiling", r, "ceilings.gemm_tflops: not a number");
    r = bench_json();
    cJSON_ReplaceItemInObject(r, "kind", cJSON_CreateString("eval"));
    expect_bench_refused("an eval file read as bench", r, "not a bench result file");
}

static cJSON *env_of(cJSON *root) { return cJSON_GetObjectItem(root, "environment"); }
static cJSON *rank_of(cJSON *root, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(env_of(root), "ranks"), i); }

/* environment.world_size and environment.ranks: the header reader refuses a malformed world, naming the field. */
static void ranks_refusals(void)
{
    cJSON *r = bench_json();
    CHECK(tu_json_num(env_of(r), "world_size") == 2 && cJSON_GetArraySize(cJSON_GetObjectItem(env_of(r), "ranks")) == 2,
          "a --tp 2 header does not record world_size 2 and two ranks");
    const cJSON *host = cJSON_GetObjectItem(rank_of(r, 1), "host"), *be = cJSON_GetObjectItem(rank_of(r, 1), "backend");
    CHECK(cJSON_IsString(host) && host->valuestring[0] && cJSON_IsString(be) && !strcmp(be->valuestring, "cpu"),
          "rank 1 has no host or no backend cpu");
    cJSON_Delete(r);
    r = bench_json();
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(env_of(r), "ranks"), 1, cJSON_CreateString("rank one"));
    expect_bench_refused("a rank that is not an object", r, "environment.ranks[1]: not an object");
    r = bench_json();
    cJSON_DeleteItemFromArray(cJSON_GetObjectItem(env_of(r), "ranks"), 1);
    expect_bench_refused("one rank for a world of two", r, "environment.ranks: 1 entries for a world of 2 ranks");
    r = bench_json();
    cJSON_ReplaceItemInObject(env_of(r), "ranks", cJSON_CreateString("0,1"));
    expect_bench_refused("ranks as a string", r, "environment.ranks: not an array");
    r = bench_json();
    cJSON_ReplaceItemInObject(rank_of(r, 1), "rank", cJSON_CreateNumber(0));
    expect_bench_refused("ranks out of order", r, "environment.ranks[1].rank: 0 where rank 1 belongs");
    r = bench_json();
    cJSON_DeleteItemFromObject(rank_of(r, 1), "host");
    expect_bench_refused("a rank without its host", r, "environment.ranks[1].host: missing");
    r = bench_json();
    cJSON_ReplaceItemInObject(rank_of(r, 0), "backend", cJSON_CreateString("gpu"));
    expect_bench_refused("an unknown backend", r, "environment.ranks[0].backend: \"gpu\" is not cpu or cuda");
    r = bench_json();
    cJSON_ReplaceItemInObject(rank_of(r, 0), "memory_bytes", cJSON_CreateNumber(-1));
    expect_bench_refused("negative memory", r, "environment.ranks[0].memory_bytes: -1 is not an integer");
    r = bench_json();
    cJSON_ReplaceItemInObject(rank_of(r, 1), "uuid", cJSON_CreateString("GPU-\n"));
    expect_bench_refused("a control character in a uuid", r, "environment.ranks[1].uuid: a string holding a control");
    r = bench_json();
    cJSON_ReplaceItemInObject(env_of(r), "world_size", cJSON_CreateNumber(0));
    expect_bench_refused("world size 0", r, "environment.world_size: 0 is not an integer");
    r = bench_json();
    cJSON_DeleteItemFromObject(env_of(r), "world_size");
    expect_bench_refused("ranks without world_size", r, "environment.world_size: missing (world_size and ranks");
    r = bench_json();
    cJSON_DeleteItemFromObject(env_of(r), "ranks");
    expect_bench_refused("world_size without ranks", r, "environment.ranks: missing (world_size and ranks");
    /* A file from before them, with neither, still reads. */
    r = bench_json();
    cJSON_DeleteItemFromObject(env_of(r), "ranks");
    cJSON_DeleteItemFromObject(env_of(r), "world_size");
    const char *path = save_json("no-ranks.json", r);
    orthros_bench_file f;
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == 0 && f.hdr.world_size == 0, "a file without ranks: %s",
          orthros_last_error());
    orthros_bench_file_free(&f);
    cJSON_Delete(r);
}

/* Refusals that happen before the JSON is a tree: duplicate keys, bad JSON, a folder, a NUL byte. */
static void load_refusals(void)
{
    char path[4300];
    orthros_bench_file f;
    snprintf(path, sizeof path, "%s/dup.json", dir);
    tu_write_text(path, "{\"kind\": \"bench\", \"kind\": \"eval\"}");
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == ORTHROS_EFORMAT && strstr(orthros_last_error(), "\"kind\" appears twice"),
          "duplicate keys: %s", orthros_last_error());
    tu_write_text(path, "{\"kind\": \"bench\", \"measurements\": [{\"a\": 1, \"a\": 2}]}");
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == ORTHROS_EFORMAT && strstr(orthros_last_error(), "\"a\" appears twice"),
          "nested duplicate keys: %s", orthros_last_error());
    tu_write_text(path, "{\"kind\": \"bench\", \"measurements\": [");
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == ORTHROS_EFORMAT && strstr(orthros_last_error(), "not valid JSON"),
          "truncated JSON: %s", orthros_last_error());
    tu_write_text(path, "[1, 2]");
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == ORTHROS_EFORMAT && strstr(orthros_last_error(), "not an object"),
          "a top-level array: %s", orthros_last_error());
    CHECK(orthros_bench_file_read(&f, dir, 0, NULL) == ORTHROS_EIO && strstr(orthros_last_error(), "not a regular file"),
          "a folder: %s", orthros_last_error());
    FILE *fp = fopen(path, "wb");
    fwrite("{\"kind\":\"be\0ch\"}", 1, 16, fp);
    fclose(fp);
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == ORTHROS_EFORMAT && strstr(orthros_last_error(), "NUL byte"),
          "a NUL byte: %s", orthros_last_error());
    int exists = 1;
    snprintf(path, sizeof path, "%s/absent.json", dir);
    CHECK(orthros_bench_file_read(&f, path, 1, &exists) == 0 && !exists, "a missing file with missing_ok");
    CHECK(orthros_bench_file_read(&f, path, 0, NULL) == ORTHROS_EIO, "a missing file without missing_ok");
}

/* A header's optional fields read as their defaults when absent: a file without run.seed has seed 0 (it once read
 * as the schema version, the integer read before it). */
static void header_defaults(void)
{
    cJSON *root = bench_json();
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root, "run"), "seed");
    const char *path = save_json("no-seed.json", root);
    cJSON_Delete(root);
    orthros_bench_file f;
    int rc = orthros_bench_file_read(&f, path, 0, NULL);
    CHECK(rc == 0, "a file without run.seed: %s", rc ? orthros_last_error() : "");
    CHECK(rc || (f.hdr.seed == 0 && f.hdr.schema_version > 0), "a file without run.seed reads seed %llu (schema version %d)",
          (unsigned long long)f.hdr.seed, f.hdr.schema_version);
    if (!rc) orthros_bench_file_free(&f);
}

/* Writer -> reader -> writer gives the same document, which matches the schema. */
static void round_trip(const char *src)
{
    orthros_bench_file f, g;
    make_bench(&f);
    char path[4300], schema_path[4300], err[512];
    snprintf(path, sizeof path, "%s/rt.json", dir);
    CHECK(orthros_bench_file_write(&f, path) == 0, "write: %s", orthros_last_error());
    CHECK(orthros_bench_file_read(&g, path, 0, NULL) == 0, "read back: %s", orthros_last_error());
    cJSON *a = orthros_bench_file_to_json(&f), *b = orthros_bench_file_to_json(&g);
    CHECK(cJSON_Compare(a, b, 1), "the bench file does not survive a round trip");
    CHECK(g.hdr.world_size == 2, "the header reads world_size %d, want 2", g.hdr.world_size);
    CHECK(g.cfg.sched.local_window == 64 && !strcmp(g.cfg.sched.feature_map_rope, "after") &&
              g.cfg.sched.hybrid_every == -1,
          "the schedule options read back wrong (local_window %d, feature_map_rope \"%s\")", g.cfg.sched.local_window,
          g.cfg.sched.feature_map_rope);
    {
        orthros_sched_config other = g.cfg.sched;
        other.local_window = 0;
        CHECK(orthros_sched_config_same(&g.cfg.sched, "a.json", &other, "b.json") == ORTHROS_EINVAL &&
                  strstr(orthros_last_error(), "--local-window"),
              "files of different local windows are the same configuration");
        other = g.cfg.sched;
        snprintf(other.feature_map_rope, sizeof other.feature_map_rope, "before");
        CHECK(orthros_sched_config_same(&g.cfg.sched, "a.json", &other, "b.json") == ORTHROS_EINVAL &&
                  strstr(orthros_last_error(), "--feature-map-rope"),
              "files of different feature-map placements are the same configuration");
    }
    char dev[160];
    orthros_result_device_text(dev, sizeof dev, &g.hdr);
    CHECK(strstr(dev, " (tp 2)") && !strncmp(dev, g.hdr.device_name, strlen(g.hdr.device_name)), "device text \"%s\"", dev);
    CHECK(g.n_cells == 6 && g.cells[0].n_rounds == 2 && g.cells[0].round_ends[0] == 3 && g.cells[5].state == ORTHROS_CELL_SKIPPED,
          "the typed cells read back wrong");
    snprintf(schema_path, sizeof schema_path, "%s/bench/result.schema.json", src);
    cJSON *schema = tu_load_json(schema_path);
    CHECK(schema && orthros_schema_validate(schema, a, err, sizeof err) == 0, "the writer's output breaks the schema: %s", err);
    /* A rank's own GPU state (written for the cuda ranks on rank 0's host) is in the schema, as an object. */
    cJSON *rank1 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "environment"), "ranks"), 1);
    CHECK(rank1 != NULL, "the written file has no ranks[1]");
    if (rank1 && schema) {
        cJSON *st = cJSON_AddObjectToObject(rank1, "state_start");
        cJSON_AddNumberToObject(st, "sm_clock_mhz", 1980);
        cJSON_AddNumberToObject(st, "power_w", 128.5);
        CHECK(orthros_schema_validate(schema, a, err, sizeof err) == 0, "a rank's state_start breaks the schema: %s", err);
        cJSON_AddNumberToObject(rank1, "state_end", 5);
        CHECK(orthros_schema_validate(schema, a, err, sizeof err) != 0, "a rank's state_end of 5 fits the schema");
        cJSON_DeleteItemFromObject(rank1, "state_end");
        cJSON_DeleteItemFromObject(rank1, "state_start");
    }
    cJSON_Delete(schema);
    cJSON_Delete(a);
    cJSON_Delete(b);
    orthros_bench_file_free(&f);
    orthros_bench_file_free(&g);
    /* No temporary file is left beside the result. */
    DIR *d = opendir(dir);
    struct dirent *e;
    int tmp = 0;
    while (d && (e = readdir(d))) tmp += strstr(e->d_name, ".tmp") != NULL;
    if (d) closedir(d);
    CHECK(tmp == 0, "%d temporary files left in %s", tmp, dir);
    /* A result path that is a folder is refused without a stray temporary file. */
    CHECK(orthros_write_file_atomic(dir, "x", 1) == ORTHROS_EIO && strstr(orthros_last_error(), "is a folder"),
          "writing over a folder: %s", orthros_last_error());
    char nodir[4400];
    snprintf(nodir, sizeof nodir, "%s/no/such/folder/r.json", dir);
    CHECK(orthros_write_file_atomic(nodir, "x", 1) == ORTHROS_EIO, "writing into a missing folder");
}

/* Committed result files of earlier runs still read (the legacy kernel-bench format too). */
static void committed_files(const char *src)
{
    const char *files[] = {"data/results/h200-2026-11-29b/bench-llama3.2-1b.json", "data/results/h200-2026-11-29b/bench_kernels.json",
                           "data/results/reproduce-21.9x/llama3.2-1b.json", "data/results/perf-gate-aa-cpu-2026-11-29/base/bench-r1.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", src, files[i]);
        orthros_bench_file f;
        int rc = orthros_bench_file_read(&f, path, 0, NULL);
        CHECK(rc == 0 && f.n_cells > 0, "%s does not read: %s", files[i], rc ? orthros_last_error() : "no cells");
        /* Written before the options existed: read as not given. */
        CHECK(rc || (f.cfg.sched.local_window == -1 && !f.cfg.sched.feature_map_rope[0]),
              "%s: a file without local_window / feature_map_rope reads them as given", files[i]);
        orthros_bench_file_free(&f);
    }
    /* The kernel bench file of 2026-12-01 (the older format, with each record's case) written as a bench file:
     * every case survives and the new file reads back; bench/kernels/summary.py reads both. */
    {
        char path[4300], out[4300];
        snprintf(path, sizeof path, "%s/data/results/h200-2026-12-01/bench_kernels.json", src);
        snprintf(out, sizeof out, "%s/kernels-as-bench.json", dir);
        orthros_bench_file f, g;
        int rc = orthros_bench_file_read(&f, path, 0, NULL);
        CHECK(rc == 0 && !strcmp(f.cfg.source, "bench_kernels"), "the kernel bench file does not read: %s", orthros_last_error());
        if (!rc) {
            int cases = 0;
            for (size_t i = 0; i < f.n_cells; i++) cases += f.cells[i].kind[0] != 0;
            CHECK(cases > 40 && orthros_bench_file_write(&f, out) == 0 && orthros_bench_file_read(&g, out, 0, NULL) == 0,
                  "kernel cells with cases do not round-trip (%d cases)", cases);
            int back = 0;
            for (size_t i = 0; i < g.n_cells && i < f.n_cells; i++)
                back += g.cells[i].kind[0] && g.cells[i].version == f.cells[i].version &&
                        g.cells[i].head_dim == f.cells[i].head_dim && g.cells[i].is_default == f.cells[i].is_default;
            CHECK(back == cases, "%d of %d cases came back", back, cases);
            orthros_bench_file_free(&g);
            orthros_bench_file_free(&f);
            printf("kernel bench file as a bench file: %s (%d cases)\n", out, cases);
        }
    }
    const char *evals[] = {"data/results/evals-h200-2026-11-29/niah-single.json", "data/results/evals-h200-2026-11-29/mqar.json"};
    for (size_t i = 0; i < 2; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", src, evals[i]);
        orthros_eval_file f;
        int rc = orthros_eval_file_read(&f, path, 0, NULL);
        CHECK(rc == 0 && f.n_cells > 0, "%s does not read: %s", evals[i], rc ? orthros_last_error() : "no cells");
        orthros_eval_file_free(&f);
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/data/results/h200-2026-11-29b/anchors.json", src);
    orthros_anchor_file a;
    CHECK(orthros_anchor_file_read(&a, path) == 0 && a.n > 0, "anchors do not read: %s", orthros_last_error());
    orthros_anchor_file_free(&a);
}

/* Every eval result file under dir (its folders too) reads: *n counts them. */
static void eval_files_under(const char *dir_path, const char *src, int *n)
{
    DIR *d = opendir(dir_path);
    struct dirent *e;
    CHECK(d != NULL, "cannot list %s", dir_path);
    while (d && (e = readdir(d))) {
        char path[4300];
        struct stat st;
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir_path, e->d_name);
        if (stat(path, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            eval_files_under(path, src, n);
            continue;
        }
        if (len < 5 || strcmp(e->d_name + len - 5, ".json")) continue;
        cJSON *j = tu_load_json(path);
        const cJSON *kind = j ? cJSON_GetObjectItem(j, "kind") : NULL;
        int is_eval = cJSON_IsString(kind) && !strcmp(kind->valuestring, "eval");
        cJSON_Delete(j);
        if (!is_eval) continue;
        orthros_eval_file f;
        int rc = orthros_eval_file_read(&f, path, 0, NULL);
        CHECK(rc == 0 && f.n_cells > 0, "%s does not read: %s", path + strlen(src) + 1, rc ? orthros_last_error() : "no cells");
        if (!rc) orthros_eval_file_free(&f);
        ++*n;
    }
    if (d) closedir(d);
}

/* The committed eval files (data/results, the mc reference run of evals/tests/mc) read under every check of the
 * reader: niah, mqar, ruler, recall (before SQuAD's scores), ppl and mc. */
static void committed_eval_files(const char *src)
{
    const char *dirs[] = {"data/results", "evals/tests/mc"};
    int n = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", src, dirs[i]);
        eval_files_under(path, src, &n);
    }
    CHECK(n >= 25, "only %d committed eval files found", n);
    printf("committed eval files: %d read\n", n);
}

/* Changes one field of obj (inside the document r) to json (NULL: deletes it), writes r, and expects the eval reader to
 * refuse the file with a message holding want. Frees r. */
static void expect_eval_refused(const char *label, cJSON *r, cJSON *obj, const char *key, const char *json, const char *want)
{
    if (json) {
        if (cJSON_GetObjectItem(obj, key)) cJSON_ReplaceItemInObject(obj, key, cJSON_Parse(json));
        else cJSON_AddItemToObject(obj, key, cJSON_Parse(json));
    } else {
        cJSON_DeleteItemFromObject(obj, key);
    }
    const char *m = save_json("eval-mutated.json", r);
    cJSON_Delete(r);
    orthros_eval_file f;
    int rc = orthros_eval_file_read(&f, m, 0, NULL);
    CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), want), "%s: %s", label, rc ? orthros_last_error() : "accepted");
    if (!rc) orthros_eval_file_free(&f);
    printf("%-44s -> %s\n", label, orthros_last_error());
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A reader's work is near-linear in its file: 100k bench cells (skipped ones, the smallest a reader takes) with the
 * first one again at the end are refused naming it, and the figure is printed. Comparing every cell with every
 * earlier one took 164 s here (a loaded 2-core machine); the bound is generous (a sanitizer build on a loaded machine). */
static void many_cells(const char *src)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/data/results/h200-2026-11-29/bench-llama3.2-1b.json", src);
    cJSON *r = tu_load_json(path);
    CHECK(r != NULL, "cannot load %s", path);
    if (!r) return;
    cJSON_DeleteItemFromObject(r, "speedups");
    cJSON *meas = cJSON_CreateArray();
    for (int i = 0; i <= 100000; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "arch", "transformer");
        cJSON_AddStringToObject(c, "phase", "prefill");
        cJSON_AddNumberToObject(c, "ctx", i < 100000 ? 1 + i : 1);
        cJSON_AddNumberToObject(c, "batch", 1);
        cJSON_AddStringToObject(c, "skipped", "too long for the cell budget");
        cJSON_AddItemToArray(meas, c);
    }
    cJSON_ReplaceItemInObject(r, "measurements", meas);
    const char *m = save_json("many-cells.json", r);
    cJSON_Delete(r);
    orthros_bench_file f;
    double t0 = now_s();
    int rc = orthros_bench_file_read(&f, m, 0, NULL);
    double dt = now_s() - t0;
    CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), "measurements[100000]: the cell transformer prefill ctx 1 batch 1 appears twice"),
          "100k cells and one twice: %s", rc ? orthros_last_error() : "accepted");
    CHECK(dt < 20, "100k cells: the refusal took %.1f s", dt);
    printf("100k bench cells + 1 repeated: refused in %.2f s (reading and validating included)\n", dt);
}

/* One field of an anchor file changed (or added), the file refused with `want` in its message. */
typedef struct {
    const char *label, *key, *json, *want;
    int top; /* the key at the top of the file, else in its first case */
} anchor_mutation;

static void anchor_mutations(const char *path, const anchor_mutation *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cJSON *r = tu_load_json(path);
        CHECK(r != NULL, "cannot load %s", path);
        if (!r) return;
        cJSON *o = cases[i].top ? r : cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 0);
        if (cJSON_GetObjectItem(o, cases[i].key)) cJSON_ReplaceItemInObject(o, cases[i].key, cJSON_Parse(cases[i].json));
        else cJSON_AddItemToObject(o, cases[i].key, cJSON_Parse(cases[i].json));
        const char *m = save_json("anchors-mutated.json", r);
        cJSON_Delete(r);
        orthros_anchor_file a;
        int rc = orthros_anchor_file_read(&a, m);
        CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), cases[i].want), "%s: %s", cases[i].label,
              rc ? orthros_last_error() : "accepted");
        if (!rc) orthros_anchor_file_free(&a);
        printf("%-44s -> %s\n", cases[i].label, orthros_last_error());
    }
}

/* The file with its case `dup` appended again: refused, naming the later one (`what` its words). */
static void anchor_twice(const char *path, int dup, const char *what)
{
    cJSON *r = tu_load_json(path);
    CHECK(r != NULL, "cannot load %s", path);
    if (!r) return;
    cJSON *cs = cJSON_GetObjectItem(r, "cases");
    int n = cJSON_GetArraySize(cs);
    cJSON_AddItemToArray(cs, cJSON_Duplicate(cJSON_GetArrayItem(cs, dup), 1));
    const char *m = save_json("anchors-mutated.json", r);
    cJSON_Delete(r);
    orthros_anchor_file a;
    char want[128];
    snprintf(want, sizeof want, "cases[%d]: the case %s", n, what);
    int rc = orthros_anchor_file_read(&a, m);
    CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), want) && strstr(orthros_last_error(), "appears twice"),
          "a case twice: %s", rc ? orthros_last_error() : "accepted");
    printf("%-44s -> %s\n", "a case twice", orthros_last_error());
}

/* SDPA anchor files: every field anchors.py writes checked (they were taken as they were). */
static void anchor_refusals(const char *src)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/data/results/h200-2026-12-01/anchors.json", src);
    static const anchor_mutation cases[] = {
        {"an op neither prefill nor decode", "op", "\"train\"", "cases[0].op: \"train\" is not prefill or decode", 0},
        {"a backend with a space", "backend", "\"flash attn\"", "cases[0].backend: \"flash attn\" is not a backend's name", 0},
        {"a median not the samples'", "median_s", "1", "cases[0].median_s: 1 is not the median of samples_s", 0},
        {"a negative sample", "samples_s", "[0.1, -1]", "cases[0].samples_s: item 1 is not a positive finite number", 0},
        {"no samples", "samples_s", "[]", "cases[0].samples_s: empty", 0},
        {"a prefill case with tbps", "tbps", "4.2", "cases[0].tbps: given for a prefill case", 0},
        {"a string batch", "batch", "\"1\"", "cases[0].batch: not a number", 0},
        {"a ceiling that is text", "gemm_tflops", "\"fast\"", "gemm_tflops: not a number", 1},
        {"a negative cudnn version", "cudnn", "-3", "cudnn: -3 is not an integer", 1},
    };
    anchor_mutations(path, cases, sizeof cases / sizeof *cases);
    anchor_twice(path, 3, "prefill");
}

/* decode_anchor.py's files (whole decode steps): the committed one reads as steps of its shapes, and every field it
 * writes is checked. */
static void decode_anchor_refusals(const char *src)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/data/results/h200-2026-12-06-merge4/figures-4a022ad/decode_anchor_compiled.json", src);
    orthros_anchor_file a;
    int rc = orthros_anchor_file_read(&a, path);
    CHECK(rc == 0 && a.steps == 64 && a.n == 3 && !strcmp(a.cases[0].op, "step") && !strcmp(a.cases[0].backend, "compiled") &&
              !strcmp(a.cases[0].model, "llama3.2-1b") && a.cases[0].batch == 1 && a.cases[0].ctx == 4096 &&
              fabs(a.cases[0].median_s - 0.0012430050373077393) < 1e-15 && !strcmp(a.device_name, "NVIDIA H200"),
          "the committed decode anchor file does not read as its three steps: %s", rc ? orthros_last_error() : "misread");
    if (!rc) orthros_anchor_file_free(&a);
    static const anchor_mutation cases[] = {
        {"a step: no steps", "steps", "null", "steps: not a number", 1},
        {"a step: 0 steps", "steps", "0", "steps: 0 is not an integer", 1},
        {"a step: compiled as text", "compiled", "\"yes\"", "compiled: not true or false", 1},
        {"a step: a model with a space", "model", "\"llama 1b\"", "cases[0].model: \"llama 1b\" is not a model shape's name", 0},
        {"a step: a model too long", "model", "\"llama3.2-1b-llama3.2-1b-llama3.2-1b\"", "cases[0].model", 0},
        {"a step: no batch", "batch", "null", "cases[0].batch", 0},
        {"a step: a cache depth of 0", "ctx", "0", "cases[0].ctx: 0 is not an integer", 0},
        {"a step: a median not the samples'", "median_s", "0.5", "cases[0].median_s: 0.5 is not the median of samples", 0},
        {"a step: a negative sample", "samples", "[0.001, -1]", "cases[0].samples: item 1 is not a positive finite number", 0},
        {"a step: no samples", "samples", "[]", "cases[0].samples: empty", 0},
        {"a step: a negative wall time", "wall_s", "-1", "cases[0].wall_s", 0},
    };
    anchor_mutations(path, cases, sizeof cases / sizeof *cases);
    anchor_twice(path, 1, "llama3.2-1b ctx 131072 batch 1");
}

static void eval_refusals(const char *src)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/data/results/evals-h200-2026-11-29/mqar.json", src);
    struct {
        const char *label, *key, *want;
        double value;
    } cases[] = {{"accuracy not correct / n", "accuracy", "cells[0].accuracy: is not correct / n", 0.5},
                 {"n = 0", "n", "cells[0].n: 0 is not an integer", 0},
                 {"correct > n", "correct", "cells[0].correct", 1e9},
                 {"pairs 0", "pairs", "cells[0].pairs: 0 is not an integer", 0},
                 {"samples not the records'", "samples", "records for 1000 samples", 1000}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *r = tu_load_json(path);
        CHECK(r != NULL, "cannot load %s", path);
        if (!r) return;
        cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0), cases[i].key,
                                  cJSON_CreateNumber(cases[i].value));
        const char *m = save_json("eval-mutated.json", r);
        cJSON_Delete(r);
        orthros_eval_file f;
        int rc = orthros_eval_file_read(&f, m, 0, NULL);
        CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), cases[i].want), "%s: %s", cases[i].label,
              orthros_last_error());
        printf("%-44s -> %s\n", cases[i].label, orthros_last_error());
    }
    /* The analytic tasks' records: token ids, as many generated as expected. */
    struct {
        const char *label, *key, *json, *want;
    } rec_cases[] = {
        {"generated ids fewer than expected", "generated", "[]", "cells[0].records[0].generated: 0 answers for"},
        {"an expected id that is text", "expected", "[\"x\"]", "cells[0].records[0].expected: item 0 is not an integer"},
        {"a record without its seed", "seed", NULL, "cells[0].records[0].seed: missing"},
        {"a record without pairs", "pairs", NULL, "cells[0].records[0].pairs: missing"},
        {"correct a string", "correct", "\"yes\"", "cells[0].records[0].correct: not true or false"},
    };
    for (size_t i = 0; i < sizeof rec_cases / sizeof *rec_cases; i++) {
        cJSON *r = tu_load_json(path);
        if (!r) return;
        cJSON *rec0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0), "records"), 0);
        expect_eval_refused(rec_cases[i].label, r, rec0, rec_cases[i].key, rec_cases[i].json, rec_cases[i].want);
    }
}

/* An eval file of the text tasks' cells: a RULER NIAH cell, a recall cell and a perplexity cell with its windows. */
static void make_text_eval(orthros_eval_file *f)
{
    orthros_eval_file_init(f);
    f->header = orthros_result_new("eval", 0, NULL, 3, NULL, 1);
    snprintf(f->cfg.task, sizeof f->cfg.task, "ppl");
    snprintf(f->cfg.variant, sizeof f->cfg.variant, "ppl");
    f->cfg.model = strdup("model.gguf");
    f->cfg.archs = strdup("transformer,orthros");
    f->cfg.ctxs = strdup("8");
    f->cfg.text = strdup("text.txt");
    f->cfg.text_tokens = 21, f->cfg.stride = 4, f->cfg.samples = 1, f->cfg.seed = 3;
    snprintf(f->cfg.device, sizeof f->cfg.device, "cpu");
    snprintf(f->cfg.sched.feature_map_rope, sizeof f->cfg.sched.feature_map_rope, "before");
    f->cfg.sched.local_window = 1;
    orthros_eval_cell c;
    memset(&c, 0, sizeof c);
    snprintf(c.task, sizeof c.task, "ruler_niah");
    snprintf(c.variant, sizeof c.variant, "single");
    snprintf(c.needle, sizeof c.needle, "numbers");
    snprintf(c.arch, sizeof c.arch, "transformer");
    c.ctx = 1024, c.axis = 50, c.samples = 4, c.samples_correct = 3, c.n = 4, c.correct = 3, c.accuracy = 0.75;
    orthros_stats_wilson(&c.ci_lo, &c.ci_hi, 3, 4, ORTHROS_STATS_Z95);
    c.partial = 0.8, c.nll = c.ppl = c.ppl_lo = c.ppl_hi = NAN, c.elapsed_s = 12;
    /* Four samples, three right; partial (1 + 1 + 1 + 1/5) / 4 = 0.8. */
    c.records = cJSON_CreateArray();
    for (int i = 0; i < 4; i++) {
        char rec[600];
        snprintf(rec, sizeof rec,
                 "{\"ctx\": 1024, \"depth\": 50, \"seed\": %d, \"seed_hex\": \"%016x\", \"prompt_tokens\": 990, "
                 "\"haystack_sentences\": 40, \"needle_sentences\": [20], \"expected\": %s, \"generated\": \" 1234567.\", "
                 "\"generated_tokens\": 9, \"n_correct\": 1, \"correct\": %s}",
                 9 + i, 9 + i, i < 3 ? "[\"1234567\"]" : "[\"1234567\", \"2\", \"3\", \"4\", \"5\"]", i < 3 ? "true" : "false");
        cJSON_AddItemToArray(c.records, cJSON_Parse(rec));
    }
    orthros_eval_file_add(f, &c);
    memset(&c, 0, sizeof c);
    snprintf(c.task, sizeof c.task, "recall");
    snprintf(c.variant, sizeof c.variant, "contains");
    snprintf(c.arch, sizeof c.arch, "linear");
    c.ctx = 300, c.samples = 2, c.samples_correct = 1, c.n = 2, c.correct = 1, c.accuracy = 0.5;
    orthros_stats_wilson(&c.ci_lo, &c.ci_hi, 1, 2, ORTHROS_STATS_Z95);
    c.partial = c.nll = c.ppl = c.ppl_lo = c.ppl_hi = NAN, c.elapsed_s = 3;
    c.records = cJSON_Parse("[{\"line\": 1, \"prompt_tokens\": 90, \"expected\": [\"a\"], \"generated\": \"a\", "
                            "\"generated_tokens\": 2, \"n_correct\": 1, \"correct\": true}, {\"line\": 2, \"prompt_tokens\": 80, "
                            "\"expected\": [\"b\"], \"generated\": \"c\", \"generated_tokens\": 2, \"n_correct\": 0, \"correct\": false}]");
    orthros_eval_file_add(f, &c);
    memset(&c, 0, sizeof c);
    snprintf(c.task, sizeof c.task, "ppl");
    snprintf(c.variant, sizeof c.variant, "ppl");
    snprintf(c.arch, sizeof c.arch, "orthros");
    c.ctx = 8, c.axis = 4, c.samples = 2, c.n = 11, c.linear_tokens = 11;
    c.nll = (10.0 + 12.0) / 11, c.ppl = exp(c.nll), c.ppl_lo = c.ppl * 0.9, c.ppl_hi = c.ppl * 1.1, c.partial = NAN;
    c.elapsed_s = 1;
    c.records = cJSON_Parse("[{\"begin\": 0, \"end\": 8, \"scored\": 7, \"nll_sum\": 10, \"linear_phase_tokens\": 7}, "
                            "{\"begin\": 4, \"end\": 12, \"scored\": 4, \"nll_sum\": 12, \"linear_phase_tokens\": 4}]");
    orthros_eval_file_add(f, &c);
}

/* --resume's merge (orthros_result_keep_cells): a bench run keeps the measured cells of the file it resumes that it
 * lacks, not the skipped or failed ones (they run again) and not a second copy of one it holds; an eval run keeps
 * every cell it lacks. */
static void keep_cells(void)
{
    orthros_bench_file now, old;
    make_bench(&now);
    make_bench(&old);
    while (now.n_cells > 1) orthros_bench_file_remove(&now, now.n_cells - 1); /* the transformer's 64 */
    CHECK(!orthros_result_keep_cells(&orthros_bench_type, &now, &old), "bench keep_cells: %s", orthros_last_error());
    int skipped = 0, t64 = 0;
    for (size_t i = 0; i < now.n_cells; i++) {
        skipped += now.cells[i].state != ORTHROS_CELL_MEASURED;
        t64 += !strcmp(now.cells[i].arch, "transformer") && now.cells[i].ctx == 64;
    }
    CHECK(now.n_cells == 5 && !skipped && t64 == 1,
          "bench resume: %zu cells (want 5: the one held and the 4 other measured), %d not measured, %d of "
          "transformer 64", now.n_cells, skipped, t64);
    orthros_bench_file_free(&now);
    orthros_bench_file_free(&old);

    orthros_eval_file e, held, disk;
    make_text_eval(&held);
    make_text_eval(&disk);
    orthros_eval_file_init(&e);
    CHECK(!orthros_result_keep_cells(&orthros_eval_type, &held, &disk), "eval keep_cells: %s", orthros_last_error());
    CHECK(held.n_cells == 3, "eval resume of a file holding every cell: %zu cells (want 3)", held.n_cells);
    orthros_eval_file_free(&disk);
    make_text_eval(&disk);
    CHECK(!orthros_result_keep_cells(&orthros_eval_type, &e, &disk), "eval keep_cells: %s", orthros_last_error());
    CHECK(e.n_cells == 3, "eval resume into an empty run: %zu cells (want 3)", e.n_cells);
    orthros_eval_file_free(&e);
    orthros_eval_file_free(&held);
    orthros_eval_file_free(&disk);
}

/* The text tasks' cells: a round trip through the writer and the reader, the schema, and their refusals. */
static void text_eval_cells(const char *src)
{
    orthros_eval_file f, g;
    char path[4300], schema_path[4300], err[512];
    make_text_eval(&f);
    snprintf(path, sizeof path, "%s/text-eval.json", dir);
    CHECK(orthros_eval_file_write(&f, path) == 0, "write: %s", orthros_last_error());
    CHECK(orthros_eval_file_read(&g, path, 0, NULL) == 0, "read back: %s", orthros_last_error());
    cJSON *a = orthros_eval_file_to_json(&f), *b = orthros_eval_file_to_json(&g);
    CHECK(cJSON_Compare(a, b, 1), "the text eval file does not survive a round trip");
    CHECK(g.n_cells == 3 && !strcmp(g.cells[0].needle, "numbers") && g.cells[0].partial == 0.8 && g.cells[2].samples == 2 &&
              g.cells[2].linear_tokens == 11 && g.cfg.stride == 4 && g.cfg.text_tokens == 21 &&
              g.cfg.sched.local_window == 1 && !strcmp(g.cfg.sched.feature_map_rope, "before"),
          "the typed text cells read back wrong");
    snprintf(schema_path, sizeof schema_path, "%s/evals/result.schema.json", src);
    cJSON *schema = tu_load_json(schema_path);
    CHECK(schema && orthros_schema_validate(schema, a, err, sizeof err) == 0, "the text eval file breaks the schema: %s", err);
    cJSON_Delete(b);
    orthros_eval_file_free(&g);
    /* Each mutation of one field is refused with the path of that field. */
    struct {
        const char *label, *want;
        int cell;
        const char *key;
        const char *json; /* the field's new value */
    } cases[] = {
        {"ppl not exp(nll)", "cells[2].ppl: is not exp(nll)", 2, "ppl", "3"},
        {"a ppl below 1", "cells[2].ppl: 0.5 is outside", 2, "ppl", "0.5"},
        {"tokens not the windows'", "cells[2].tokens: 12, but the windows score 11", 2, "tokens", "12"},
        {"more linear tokens than tokens", "cells[2].linear_phase_tokens", 2, "linear_phase_tokens", "12"},
        {"no interval with two windows", "cells[2].ppl_ci95_lo: null with 2 windows", 2, "ppl_ci95_lo", "null"},
        {"windows not the records", "cells[2].records: 2 records for 3 windows", 2, "windows", "3"},
        {"a window past its length", "cells[2].records[1].end", 2, "records",
         "[{\"begin\": 0, \"end\": 8, \"scored\": 7, \"nll_sum\": 10, \"linear_phase_tokens\": 7}, "
         "{\"begin\": 4, \"end\": 13, \"scored\": 4, \"nll_sum\": 12, \"linear_phase_tokens\": 4}]"},
        {"RULER without its partial score", "cells[0].partial_score: missing", 0, "partial_score", NULL},
        {"an unknown needle", "cells[0].needle: \"emoji\" is not words, numbers or uuids", 0, "needle", "\"emoji\""},
        {"an unknown task", "cells[1].task: \"squad\" is not niah", 1, "task", "\"squad\""},
        {"recall n not its samples", "cells[1].n: 3 is not the 2 samples", 1, "n", "3"},
        {"RULER depth 101", "cells[0].depth: 101 is not an integer in 0..100", 0, "depth", "101"},
        {"a cell without records", "cells[1].records: missing", 1, "records", NULL},
        {"an unknown variant", "cells[1].variant: \"exact\" is not a variant of recall", 1, "variant", "\"exact\""},
        {"an unknown architecture", "cells[1].arch: \"mamba\" is not an architecture", 1, "arch", "\"mamba\""},
        {"a cell without elapsed_s", "cells[1].elapsed_s: missing", 1, "elapsed_s", NULL},
        /* Per-sample records, as issue 23 found them accepted and written back by --resume. */
        {"n_correct a string", "cells[1].records[0].n_correct: not a number", 1, "records",
         "[{\"line\": 1, \"prompt_tokens\": 90, \"expected\": [\"a\"], \"generated\": \"a\", \"generated_tokens\": 2, "
         "\"n_correct\": \"a`touch PWN`b\", \"correct\": true}, {\"line\": 2, \"prompt_tokens\": 80, \"expected\": [\"b\"], "
         "\"generated\": \"c\", \"generated_tokens\": 2, \"n_correct\": 0, \"correct\": false}]"},
        {"generated an object", "cells[1].records[1].generated: not a string", 1, "records",
         "[{\"line\": 1, \"prompt_tokens\": 90, \"expected\": [\"a\"], \"generated\": \"a\", \"generated_tokens\": 2, "
         "\"n_correct\": 1, \"correct\": true}, {\"line\": 2, \"prompt_tokens\": 80, \"expected\": [\"b\"], "
         "\"generated\": {}, \"generated_tokens\": 2, \"n_correct\": 0, \"correct\": false}]"},
        {"one record for two samples", "cells[1].records: 1 records for 2 samples", 1, "records",
         "[{\"line\": 1, \"prompt_tokens\": 90, \"expected\": [\"a\"], \"generated\": \"a\", \"generated_tokens\": 2, "
         "\"n_correct\": 1, \"correct\": true}]"},
        {"a record without expected", "cells[1].records[0].expected: missing", 1, "records",
         "[{\"line\": 1, \"prompt_tokens\": 90, \"generated\": \"a\", \"generated_tokens\": 2, \"n_correct\": 1, "
         "\"correct\": true}, {\"line\": 2, \"prompt_tokens\": 80, \"expected\": [\"b\"], \"generated\": \"c\", "
         "\"generated_tokens\": 2, \"n_correct\": 0, \"correct\": false}]"},
        {"correct not what n_correct says", "cells[1].records[1].correct: true with 0 of 1 right", 1, "records",
         "[{\"line\": 1, \"prompt_tokens\": 90, \"expected\": [\"a\"], \"generated\": \"a\", \"generated_tokens\": 2, "
         "\"n_correct\": 1, \"correct\": true}, {\"line\": 2, \"prompt_tokens\": 80, \"expected\": [\"b\"], "
         "\"generated\": \"c\", \"generated_tokens\": 2, \"n_correct\": 0, \"correct\": true}]"},
        {"a record's prompt past the context", "cells[1].records[0].prompt_tokens: 301 is longer than the cell's context", 1,
         "records",
         "[{\"line\": 1, \"prompt_tokens\": 301, \"expected\": [\"a\"], \"generated\": \"a\", \"generated_tokens\": 2, "
         "\"n_correct\": 1, \"correct\": true}, {\"line\": 2, \"prompt_tokens\": 80, \"expected\": [\"b\"], "
         "\"generated\": \"c\", \"generated_tokens\": 2, \"n_correct\": 0, \"correct\": false}]"},
        {"RULER partial not the records'", "cells[0].partial_score: 0.90000000000000002 is not the records'", 0,
         "partial_score", "0.9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *r = cJSON_Duplicate(a, 1), *cell = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), cases[i].cell);
        expect_eval_refused(cases[i].label, r, cell, cases[i].key, cases[i].json, cases[i].want);
    }
    /* One field of the first RULER record changed: each refused with its path. */
    struct {
        const char *label, *key, *json, *want;
    } rec_cases[] = {
        {"a RULER record without ctx", "ctx", NULL, "cells[0].records[0].ctx: missing"},
        {"a RULER record of another depth", "depth", "40", "cells[0].records[0].depth: 40 is not the cell's 50"},
        {"a seed_hex not the seed", "seed_hex", "\"0000000000000001\"", "cells[0].records[0].seed_hex: 0000000000000001 is not the seed"},
        {"a seed_hex in capitals", "seed_hex", "\"000000000000000A\"", "cells[0].records[0].seed_hex: not 16 lowercase hex"},
        {"a negative needle sentence", "needle_sentences", "[-1]", "cells[0].records[0].needle_sentences: item 0 is not an integer"},
        {"expected ids in a text task", "expected", "[1234567]", "cells[0].records[0].expected: item 0 is not a string"},
        {"no expected strings", "expected", "[]", "cells[0].records[0].expected: empty"},
        {"n_correct past the expected", "n_correct", "2", "cells[0].records[0].n_correct: 2 is not an integer in 0..1"},
    };
    for (size_t i = 0; i < sizeof rec_cases / sizeof *rec_cases; i++) {
        cJSON *r = cJSON_Duplicate(a, 1);
        cJSON *rec0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0), "records"), 0);
        expect_eval_refused(rec_cases[i].label, r, rec0, rec_cases[i].key, rec_cases[i].json, rec_cases[i].want);
    }
    /* A perplexity cell is no accuracy cell: the schema takes exactly one kind. */
    cJSON *r = cJSON_Duplicate(a, 1);
    cJSON_AddNumberToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 2), "accuracy", 1);
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 2), "ppl");
    CHECK(schema && orthros_schema_validate(schema, r, err, sizeof err) != 0 && strstr(err, "oneOf"),
          "a ppl cell without ppl passes the schema: %s", err);
    cJSON_Delete(r);
    cJSON_Delete(schema);
    cJSON_Delete(a);
    orthros_eval_file_free(&f);
}

/* recall's SQuAD scores and the tasks-file options (issue 26) under the record checks of issue 23: a recall file with
 * exact_match and f1 and an unanswerable SQuAD v2 question reads, survives a round trip and fits the schema; each
 * mutation of one of the new fields (or of what they must agree with) is refused with its path. */
static void recall_squad_cells(const char *src)
{
    static const char records[] =
        "[{\"line\": 1, \"id\": \"q1\", \"prompt_tokens\": 90, \"expected\": [\"a\"], \"generated\": \"a\", "
        "\"generated_tokens\": 2, \"n_correct\": 1, \"correct\": true, \"exact_match\": 1, \"f1\": 1}, "
        "{\"line\": 2, \"id\": \"q2\", \"prompt_tokens\": 80, \"expected\": [\"\"], \"unanswerable\": true, "
        "\"generated\": \"c\", \"generated_tokens\": 2, \"n_correct\": 0, \"correct\": false, \"exact_match\": 0, \"f1\": 0}]";
    orthros_eval_file f, g;
    orthros_eval_file_init(&g); /* (the read below is skipped when the write fails, and the checks read g) */
    char path[4300], schema_path[4300], err[512];
    make_text_eval(&f);
    cJSON *plain = orthros_eval_file_to_json(&f); /* the three cells of text_eval_cells, a recall cell without SQuAD */
    orthros_eval_file_free(&f);
    cJSON *a = cJSON_Duplicate(plain, 1), *cells = cJSON_GetObjectItem(a, "cells");
    cJSON *cfg = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "run"), "config");
    cJSON_DeleteItemFromArray(cells, 2);
    cJSON_DeleteItemFromArray(cells, 0);
    cJSON *cell = cJSON_GetArrayItem(cells, 0);
    cJSON_ReplaceItemInObject(cell, "records", cJSON_Parse(records));
    /* Exact match and F1 (1, 0) and (1, 0): means 0.5, stderr sqrt(0.5) / sqrt(2) = 0.5. */
    cJSON_AddNumberToObject(cell, "exact_match", 0.5);
    cJSON_AddNumberToObject(cell, "exact_match_stderr", 0.5);
    cJSON_AddNumberToObject(cell, "f1", 0.5);
    cJSON_AddNumberToObject(cell, "f1_stderr", 0.5);
    cJSON_ReplaceItemInObject(cfg, "task", cJSON_CreateString("recall"));
    cJSON_ReplaceItemInObject(cfg, "variant", cJSON_CreateString("contains"));
    cJSON_ReplaceItemInObject(cfg, "samples", cJSON_CreateNumber(2));
    cJSON_ReplaceItemInObject(cfg, "text_tokens", cJSON_CreateNumber(3));
    cJSON_DeleteItemFromObject(cfg, "stride");
    cJSON_AddNumberToObject(cfg, "max_new", 32);
    cJSON_AddStringToObject(cfg, "layout", "squad_v2");
    cJSON_AddStringToObject(cfg, "name", "squad_v2");
    cJSON_AddNumberToObject(cfg, "shots", 1);
    cJSON_AddNumberToObject(cfg, "limit", 2);
    cJSON_AddStringToObject(cfg, "fewshot", "pool.jsonl");
    const char *good = save_json("recall-squad.json", a);
    CHECK(orthros_eval_file_read(&f, good, 0, NULL) == 0, "the recall file with SQuAD's scores: %s", orthros_last_error());
    snprintf(path, sizeof path, "%s/recall-squad-2.json", dir);
    CHECK(orthros_eval_file_write(&f, path) == 0 && orthros_eval_file_read(&g, path, 0, NULL) == 0, "round trip: %s",
          orthros_last_error());
    cJSON *b = orthros_eval_file_to_json(&g);
    CHECK(cJSON_Compare(cJSON_GetObjectItem(a, "cells"), cJSON_GetObjectItem(b, "cells"), 1) &&
              cJSON_Compare(cfg, cJSON_GetObjectItem(cJSON_GetObjectItem(b, "run"), "config"), 1),
          "the recall file with SQuAD's scores does not survive a round trip");
    CHECK(g.n_cells == 1 && g.cells[0].exact_match == 0.5 && g.cells[0].f1_stderr == 0.5 && g.cfg.shots == 1 &&
              g.cfg.limit == 2 && !strcmp(g.cfg.layout, "squad_v2"),
          "the recall cell reads back wrong");
    snprintf(schema_path, sizeof schema_path, "%s/evals/result.schema.json", src);
    cJSON *schema = tu_load_json(schema_path);
    CHECK(schema && orthros_schema_validate(schema, b, err, sizeof err) == 0, "the recall file breaks the schema: %s", err);
    cJSON *over = cJSON_Duplicate(b, 1);
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(over, "cells"), 0),
                                                                      "records"), 0),
                              "f1", cJSON_CreateNumber(1.5));
    CHECK(schema && orthros_schema_validate(schema, over, err, sizeof err) != 0 && strstr(err, "above maximum"),
          "an f1 of 1.5 fits the schema: %s", err);
    cJSON_Delete(over);
    cJSON_Delete(schema);
    cJSON_Delete(b);
    orthros_eval_file_free(&f);
    orthros_eval_file_free(&g);
    /* One field of a record ('r' 0 or 1), of the cell ('c') or of run.config ('o'), each refused with its path. */
    struct {
        const char *label;
        char where;
        const char *key, *json, *want;
    } cases[] = {
        {"an exact match of 0.5", '0', "exact_match", "0.5", "cells[0].records[0].exact_match: neither 0 nor 1"},
        {"an F1 of 1.5", '0', "f1", "1.5", "cells[0].records[0].f1: 1.5 is outside [0, 1]"},
        {"an F1 a string", '0', "f1", "\"1\"", "cells[0].records[0].f1: not a number"},
        {"an exact match without F1 1", '0', "f1", "0.5", "cells[0].records[0].f1: 0.5 with an exact match"},
        {"a record without its exact match", '0', "exact_match", NULL, "cells[0].records[0].exact_match: missing"},
        {"a record without its F1", '1', "f1", NULL, "cells[0].records[1].f1: missing"},
        {"unanswerable not a boolean", '1', "unanswerable", "\"yes\"", "cells[0].records[1].unanswerable: not true or false"},
        {"an unanswerable question with an answer", '1', "expected", "[\"b\"]",
         "cells[0].records[1].expected: not [\"\"] for an unanswerable question"},
        {"an unanswerable question with two", '1', "expected", "[\"\", \"b\"]",
         "cells[0].records[1].expected: not [\"\"] for an unanswerable question"},
        {"\"\" expected of an answerable question", '0', "expected", "[\"a\", \"\"]",
         "cells[0].records[0].expected: item 1 is empty (\"\" is expected only for an unanswerable question)"},
        {"\"\" expected without unanswerable", '1', "unanswerable", NULL, "cells[0].records[1].expected: item 0 is empty"},
        {"an unanswerable F1 not its exact match", '1', "f1", "0.5",
         "cells[0].records[1].f1: 0.5, but an unanswerable question's exact_match is 0"},
        {"a record id a number", '0', "id", "7", "cells[0].records[0].id: not a string"},
        {"records out of the file's order", '0', "line", "3", "cells[0].records[1].line: 2 after line 3"},
        {"a prompt and answer past the context", '0', "generated_tokens", "211",
         "cells[0].records[0].generated_tokens: 211 after a prompt of 90 tokens: past the cell's context of 300"},
        {"exact_match not the records' mean", 'c', "exact_match", "0.25", "cells[0].exact_match: 0.25, but the records give 0.5"},
        {"f1 above 1", 'c', "f1", "2", "cells[0].f1: 2 is outside [0, 1]"},
        {"a stderr not the records'", 'c', "exact_match_stderr", "0.1", "cells[0].exact_match_stderr: is not the records' stderr"},
        {"a cell without f1_stderr", 'c', "f1_stderr", NULL, "cells[0].f1_stderr: missing"},
        {"the n of another count", 'c', "n", "3", "cells[0].n: 3 is not the 2 samples"},
        {"a recall layout of mc", 'o', "layout", "\"arc\"", "run.config.layout: \"arc\" is not a recall layout"},
        {"mc's --score in recall", 'o', "score", "\"decode\"", "run.config.score: given for a recall run (mc only)"},
        {"shots -1", 'o', "shots", "-1", "run.config.shots: -1 is not an integer in 0.."},
        {"an empty name", 'o', "name", "\"\"", "run.config.name: empty"},
        {"an empty few-shot file", 'o', "fewshot", "\"\"", "run.config.fewshot: empty"},
        {"samples not what --limit leaves", 'o', "limit", "1", "run.config.samples: 2, but the run takes 1 of the 3 items (--limit 1)"},
        {"samples past the items", 'o', "limit", "0", "run.config.samples: 2, but the run takes 3 of the 3 items (--limit 0)"},
        {"a limit that is text", 'o', "limit", "\"2\"", "run.config.limit: not a number"},
        {"text_tokens 0", 'o', "text_tokens", "0", "run.config.text_tokens: 0 is not an integer in 1.."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *r = cJSON_Duplicate(a, 1), *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0), *obj;
        cJSON *recs = cJSON_GetObjectItem(c0, "records");
        obj = cases[i].where == 'c'   ? c0
              : cases[i].where == 'o' ? cJSON_GetObjectItem(cJSON_GetObjectItem(r, "run"), "config")
                                      : cJSON_GetArrayItem(recs, cases[i].where - '0');
        expect_eval_refused(cases[i].label, r, obj, cases[i].key, cases[i].json, cases[i].want);
    }
    /* An unanswerable question right by contains but not by exact match (n_correct and correct agree). */
    {
        cJSON *r = cJSON_Duplicate(a, 1), *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0);
        cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(c0, "records"), 1);
        cJSON_ReplaceItemInObject(r1, "correct", cJSON_CreateTrue());
        expect_eval_refused("an unanswerable question right, not by EM", r, r1, "n_correct", "1",
                            "cells[0].records[1].n_correct: 1, but an unanswerable question's exact_match is 0");
    }
    /* The SQuAD fields belong to recall, and to a recall cell that has the means. */
    struct {
        const char *label;
        int cell, record; /* record -1: the cell itself */
        const char *key, *json, *want;
    } other[] = {
        {"an exact match in a recall file before SQuAD", 1, 0, "exact_match", "1",
         "cells[1].records[0].exact_match: given, but the cell has no exact_match and f1"},
        {"unanswerable in a recall file before SQuAD", 1, 1, "unanswerable", "false",
         "cells[1].records[1].unanswerable: given, but the cell has no exact_match and f1"},
        {"an F1 in a RULER record", 0, 0, "f1", "1", "cells[0].records[0].f1: given in a ruler_niah record (recall's only)"},
        {"exact_match in a RULER cell", 0, -1, "exact_match", "1", "cells[0].exact_match: given in a ruler_niah cell (recall's only)"},
        {"a layout in a ppl file", -1, 0, "layout", "\"squad\"", "run.config.layout: given for a ppl run (mc and recall only)"},
        {"shots in a ppl file", -1, 0, "shots", "2", "run.config.shots: given for a ppl run (mc and recall only)"},
        {"a few-shot file in a ppl file", -1, 0, "fewshot", "\"pool.jsonl\"", "run.config.fewshot: given for a ppl run"},
    };
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        cJSON *r = cJSON_Duplicate(plain, 1), *obj;
        cJSON *c = other[i].cell >= 0 ? cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), other[i].cell) : NULL;
        obj = !c                    ? cJSON_GetObjectItem(cJSON_GetObjectItem(r, "run"), "config")
              : other[i].record < 0 ? c
                                    : cJSON_GetArrayItem(cJSON_GetObjectItem(c, "records"), other[i].record);
        expect_eval_refused(other[i].label, r, obj, other[i].key, other[i].json, other[i].want);
    }
    /* "shots": 0, which eval wrote into every task's file between issue 26 and this check (committed ppl and ruler
     * files hold it), read as not given: the file reads, and is written back without it. Every eval takes --limit
     * (0: none), so a ppl file's limit reads and is written back as it is. */
    {
        cJSON *r = cJSON_Duplicate(plain, 1), *c = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "run"), "config");
        cJSON_AddNumberToObject(c, "shots", 0);
        cJSON_AddNumberToObject(c, "limit", 3);
        const char *m = save_json("ppl-shots-0.json", r);
        cJSON_Delete(r);
        int rc = orthros_eval_file_read(&f, m, 0, NULL);
        CHECK(rc == 0 && f.cfg.shots == -1 && f.cfg.limit == 3, "a ppl file with shots 0 and limit 3: %s",
              rc ? orthros_last_error() : "read otherwise");
        if (!rc) {
            cJSON *back = orthros_eval_file_to_json(&f);
            const cJSON *bc = cJSON_GetObjectItem(cJSON_GetObjectItem(back, "run"), "config");
            const cJSON *lim = cJSON_GetObjectItem(bc, "limit");
            CHECK(!cJSON_GetObjectItem(bc, "shots") && lim && lim->valuedouble == 3, "shots 0 / limit 3 written back");
            cJSON_Delete(back);
            orthros_eval_file_free(&f);
        }
    }
    cJSON_Delete(a);
    cJSON_Delete(plain);
}

/* Tables: CSV quoting, JSON escaping and numeric columns, markdown pipes. */
static void tables(void)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/table.txt", dir);
    const orthros_table_col cols[] = {{"name", -8, 0}, {"value", 6, 1}};
    const char *row1[] = {"a,\"b\"|c", "1.5"}, *row2[] = {"x\ny", "nan"};
    struct {
        orthros_table_format f;
        const char *want;
    } cases[] = {{ORTHROS_TABLE_CSV, "\"a,\"\"b\"\"|c\",1.5"},
                 {ORTHROS_TABLE_JSONL, "{\"name\": \"x\\u000ay\", \"value\": null}"},
                 {ORTHROS_TABLE_JSON, "\"value\": 1.5}"},
                 {ORTHROS_TABLE_MD, "| a,\"b\"\\|c | 1.5 |"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        orthros_table t;
        CHECK(orthros_table_open(&t, cases[i].f, path, cols, 2) == 0, "table open");
        orthros_table_row(&t, row1);
        orthros_table_row(&t, row2);
        CHECK(orthros_table_close(&t) == 0, "table close");
        char *s = tu_slurp(path, NULL);
        CHECK(s && strstr(s, cases[i].want), "table format %d lacks %s:\n%s", (int)cases[i].f, cases[i].want, s ? s : "");
        if (cases[i].f == ORTHROS_TABLE_JSON) {
            cJSON *j = cJSON_Parse(s);
            CHECK(cJSON_IsArray(j) && cJSON_GetArraySize(j) == 2, "the JSON table is not an array of 2 rows");
            cJSON_Delete(j);
        }
        free(s);
    }
    /* The run's context (llama-bench's per-row model, size, backend, device, threads, tp, commit): columns in the
     * machine formats and markdown, one line above the header in text; notes after a markdown table, as a list, so
     * that it stays one table; a second markdown table (bench's speedups) on the same stream. */
    cJSON *hdr = cJSON_Parse("{\"tool\": {\"git_commit\": \"0123456789abcdef\", \"dirty\": true}, \"environment\": "
                             "{\"backend\": \"cpu\", \"threads\": 8, \"world_size\": 2, \"device\": {\"name\": \"Some CPU\"}}}");
    struct {
        orthros_table_format f;
        const char *want[3];
    } ctx[] = {{ORTHROS_TABLE_CSV, {"model,size_mib,backend,device,threads,tp,commit,name,value\n",
                                    "m.gguf,2.0,cpu,Some CPU,8,2,0123456+dirty,\"a,\"\"b\"\"|c\",1.5\n", NULL}},
               {ORTHROS_TABLE_JSONL, {"{\"model\": \"m.gguf\", \"size_mib\": 2.0, \"backend\": \"cpu\", \"device\": \"Some CPU\", "
                                      "\"threads\": 8, \"tp\": 2, \"commit\": \"0123456+dirty\", \"name\"", NULL, NULL}},
               {ORTHROS_TABLE_TEXT, {"model m.gguf, size_mib 2.0, backend cpu, device Some CPU, threads 8, tp 2, commit 0123456+dirty\nname",
                                     "\na note\n", NULL}},
               {ORTHROS_TABLE_MD, {"| m.gguf | 2.0 | cpu | Some CPU | 8 | 2 | 0123456+dirty | x y | nan |\n\n- a note\n\n| k |",
                                   "| k |\n| ---: |\n| 3 |\n", NULL}}};
    for (size_t i = 0; i < sizeof ctx / sizeof *ctx; i++) {
        orthros_table t;
        CHECK(orthros_table_open(&t, ctx[i].f, path, cols, 2) == 0, "table open");
        orthros_table_context(&t, hdr, "/models/m.gguf", 2.0 * 1048576);
        orthros_table_row(&t, row1);
        orthros_table_note(&t, "a note");
        orthros_table_row(&t, row2);
        if (ctx[i].f == ORTHROS_TABLE_MD) {
            const orthros_table_col kc[] = {{"k", 3, 1}};
            const char *r3[] = {"3"};
            CHECK(orthros_table_next(&t, kc, 1) == 0, "a second markdown table");
            orthros_table_row(&t, r3);
        } else if (ctx[i].f != ORTHROS_TABLE_TEXT) {
            const orthros_table_col kc[] = {{"k", 3, 1}};
            CHECK(orthros_table_next(&t, kc, 1) == ORTHROS_EINVAL, "a second table in a machine format is refused");
        }
        CHECK(orthros_table_close(&t) == 0, "table close");
        char *s = tu_slurp(path, NULL);
        for (int k = 0; k < 3 && ctx[i].want[k]; k++)
            CHECK(s && strstr(s, ctx[i].want[k]), "table format %d with a context lacks %s:\n%s", (int)ctx[i].f,
                  ctx[i].want[k], s ? s : "");
        CHECK(s && (ctx[i].f == ORTHROS_TABLE_TEXT || ctx[i].f == ORTHROS_TABLE_MD || !strstr(s, "a note")),
              "a note in a machine format:\n%s", s ? s : "");
        free(s);
    }
    /* a conversion job's adapter folder is named by its job: RUNS/s2-4M-before/adapter -> s2-4M-before/adapter */
    const char *models[][2] = {{"runs/s2-4M-before/adapter/", "s2-4M-before/adapter"}, {"adapter", "adapter"},
                               {"/adapter", "adapter"}, {"x/adapters", "adapters"}, {"preset:tiny", "tiny"}};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        orthros_table t;
        CHECK(orthros_table_open(&t, ORTHROS_TABLE_JSONL, path, cols, 2) == 0, "table open");
        orthros_table_context(&t, hdr, models[i][0], NAN);
        CHECK(!strcmp(t.ctx_vals[0], models[i][1]), "model %s labelled \"%s\", not \"%s\"", models[i][0],
              t.ctx_vals[0], models[i][1]);
        orthros_table_row(&t, row1);
        CHECK(orthros_table_close(&t) == 0, "table close");
    }
    cJSON_Delete(hdr);
}

/* The clock event reasons as text (and the reader's check of that text), and the run's line on clock-held cells. */
static void gpu_clock_text(void)
{
    char b[160];
    CHECK(!strcmp(orthros_gpu_reasons_text(0, b, sizeof b), "none"), "no reason: \"%s\"", b);
    CHECK(!strcmp(orthros_gpu_reasons_text(0x5, b, sizeof b), "gpu_idle,sw_power_cap"), "0x5: \"%s\"", b);
    CHECK(!strcmp(orthros_gpu_reasons_text(0xC8, b, sizeof b), "hw_slowdown,hw_thermal_slowdown,hw_power_brake"),
          "0xc8: \"%s\"", b);
    CHECK(!strcmp(orthros_gpu_reasons_text(0x204, b, sizeof b), "sw_power_cap,0x200"), "an unnamed bit: \"%s\"", b);
    CHECK(!strcmp(orthros_gpu_reasons_text(0x1FF, b, 20), "gpu_idle,app_clocks"), "a short buffer keeps whole names: "
          "\"%s\"", b);
    CHECK(orthros_gpu_reasons_valid(orthros_gpu_reasons_text(~0ULL, b, sizeof b)), "every bit's text reads back: %s", b);
    const char *bad[] = {"", ",", "sw_power_cap,", ",sw", "a,,b", "Sw_power_cap", "sw power", "x;y", "$(id)"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(!orthros_gpu_reasons_valid(bad[i]), "\"%s\" passes as clock reasons", bad[i]);
    CHECK(orthros_gpu_reasons_valid("sw_power_cap,0x200") && orthros_gpu_reasons_valid("none"), "valid reasons refused");
    /* NVML cannot be read without a bus id: nothing is recorded. */
    orthros_gpu_state st;
    CHECK(orthros_gpu_state_read("", &st) == ORTHROS_EUNSUPPORTED && isnan(st.sm_clock_mhz) && !st.have_reasons,
          "a state read with no bus id");

    orthros_bench_file f;
    make_bench(&f);
    char note[512];
    orthros_bench_clock_note(&f, note, sizeof note);
    /* transformer 128 and 256 at sw_power_cap (SM 1728, 1856); 64 "none" and orthros 128 "gpu_idle" not held. */
    CHECK(!strcmp(note, "the GPU clock was held below its maximum at the end of 2 of 4 cells (sw_power_cap 2): SM "
                        "1728-1856 of 1980 MHz"),
          "clock note: \"%s\"", note);
    orthros_bench_clock_note(&f, note, 40);
    CHECK(strlen(note) == 39, "a clock note cut to its buffer: \"%s\"", note);
    for (size_t i = 0; i < f.n_cells; i++) snprintf(f.cells[i].gpu_clock_limits, sizeof f.cells[i].gpu_clock_limits, "none");
    CHECK(!orthros_bench_clock_note(&f, note, sizeof note)[0], "a note where no cell was held: \"%s\"", note);
    orthros_bench_file_free(&f);
}

int main(int argc, char **argv)
{
    const char *src = argc > 1 ? argv[1] : ".";
    char *t = tu_tempdir();
    snprintf(dir, sizeof dir, "%s", t ? t : "/tmp");
    free(t);
    if (orthros_backend_create(&cpu_be, "cpu")) {
        fprintf(stderr, "FAIL: no cpu backend: %s\n", orthros_last_error());
        return 1;
    }
    bench_refusals();
    ranks_refusals();
    load_refusals();
    header_defaults();
    round_trip(src);
    committed_files(src);
    committed_eval_files(src);
    eval_refusals(src);
    anchor_refusals(src);
    decode_anchor_refusals(src);
    many_cells(src);
    text_eval_cells(src);
    keep_cells();
    recall_squad_cells(src);
    tables();
    gpu_clock_text();
    orthros_backend_free(cpu_be);
    return tu_finish();
}
