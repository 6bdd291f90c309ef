/* Fuzz targets of the result-file readers (harness/result_bench.c, result_eval.c: what bench and eval --resume,
 * plot, compare and the recipe report read) and of the GGUF loader. Beyond crashes, each checks the readers'
 * promises: a refusal is one line naming the file, and an accepted file written back by its writer reads again
 * into the same document (the writer never produces what its reader refuses). */
#include "result_bench.h"
#include "result_eval.h"
#include "targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "fuzz.json"

static void finding(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz finding: %s: %s\n", what, detail);
    abort();
}

static void check_refusal(void)
{
    const char *msg = orthros_last_error();
    if (!msg || !msg[0] || strchr(msg, '\n')) finding("a refusal is not one line", msg ? msg : "(null)");
    if (!strstr(msg, NAME)) finding("a refusal does not name the file", msg);
}

/* Reads `text` as kind K through parse, from_json, to_json, and again. */
#define ROUND_TRIP(type, from_json, to_json, free_fn)                                                                  \
    do {                                                                                                               \
        type f, g;                                                                                                     \
        rc = from_json(&f, root, NAME);                                                                                \
        if (rc) {                                                                                                      \
            check_refusal();                                                                                           \
            break;                                                                                                     \
        }                                                                                                              \
        cJSON *out = to_json(&f);                                                                                      \
        if (!out) finding("the writer failed on an accepted file", NAME);                                              \
        if (from_json(&g, out, NAME)) finding("the writer's output is refused by its reader", orthros_last_error());  \
        /* Compared as text: a number past the double range (1e400 in a header) is inf in both trees, which      \
         * cJSON_Compare calls unequal to itself. */                                                                   \
        cJSON *again = to_json(&g);                                                                                    \
        char *ta = cJSON_PrintUnformatted(out), *tb = again ? cJSON_PrintUnformatted(again) : NULL;                    \
        if (!ta || !tb || strcmp(ta, tb)) finding("a written file does not read back the same", NAME);                \
        free(ta);                                                                                                      \
        free(tb);                                                                                                      \
        cJSON_Delete(out);                                                                                             \
        cJSON_Delete(again);                                                                                           \
        free_fn(&f);                                                                                                   \
        free_fn(&g);                                                                                                   \
    } while (0)

static int result_target(const uint8_t *data, size_t size, int kind)
{
    cJSON *root = NULL;
    int rc = orthros_result_parse(&root, (const char *)data, size, NAME);
    if (rc) {
        check_refusal();
        return rc;
    }
    if (kind == 0) ROUND_TRIP(orthros_bench_file, orthros_bench_file_from_json, orthros_bench_file_to_json, orthros_bench_file_free);
    else if (kind == 1) ROUND_TRIP(orthros_eval_file, orthros_eval_file_from_json, orthros_eval_file_to_json, orthros_eval_file_free);
    else {
        orthros_anchor_file a;
        if ((rc = orthros_anchor_file_from_json(&a, root, NAME))) check_refusal();
        else orthros_anchor_file_free(&a);
    }
    cJSON_Delete(root);
    return rc;
}

int orthros_fuzz_bench_file(const uint8_t *data, size_t size) { return result_target(data, size, 0); }
int orthros_fuzz_eval_file(const uint8_t *data, size_t size) { return result_target(data, size, 1); }
int orthros_fuzz_anchor_file(const uint8_t *data, size_t size) { return result_target(data, size, 2); }

int orthros_fuzz_gguf(const uint8_t *data, size_t size)
{
    int rc = orthros_fuzz_gguf_check_buffer(data, size);
    if (rc) {
        const char *msg = orthros_last_error();
        if (!msg || !msg[0] || strchr(msg, '\n')) finding("a GGUF refusal is not one line", msg ? msg : "(null)");
    }
    return rc;
}

/* Seeds: the committed result files of earlier runs (bench, legacy kernel bench, eval, anchors) and GGUF fixtures. */
static int add_files(orthros_fuzz_corpus *c, const char *root, const char *const *rel, size_t n)
{
    char path[4400];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", root, rel[i]);
        if (orthros_fuzz_corpus_add_file(c, path)) return -1;
    }
    return 0;
}

/* A committed result file with the world of a two-GPU tensor-parallel run added (environment.world_size,
 * environment.ranks), for files from before those fields. */
static int add_with_ranks(orthros_fuzz_corpus *c, const char *root, const char *rel)
{
    char path[4400], *text = NULL;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    cJSON *doc = NULL;
    if (orthros_result_load(&doc, path, 1) || !doc) return 0; /* missing or unreadable: no seed */
    cJSON *env = cJSON_GetObjectItem(doc, "environment"), *ranks = cJSON_CreateArray();
    for (int r = 0; env && ranks && r < 2; r++) {
        char bus[32], uuid[48];
        snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + r);
        snprintf(uuid, sizeof uuid, "GPU-0c1d2e3f-4a5b-6c7d-8e9f-00000000000%d", r);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", r);
        cJSON_AddStringToObject(o, "host", r ? "node-b" : "node-a");
        cJSON_AddStringToObject(o, "backend", "cuda");
        cJSON_AddStringToObject(o, "name", "NVIDIA H200");
        cJSON_AddNumberToObject(o, "memory_bytes", 150754820096.0);
        cJSON_AddStringToObject(o, "pci_bus_id", bus);
        cJSON_AddStringToObject(o, "uuid", uuid);
        cJSON_AddItemToArray(ranks, o);
    }
    if (env && ranks) {
        cJSON_AddNumberToObject(env, "world_size", 2);
        cJSON_AddItemToObject(env, "ranks", ranks);
        ranks = NULL;
        text = cJSON_PrintUnformatted(doc);
    }
    cJSON_Delete(ranks);
    cJSON_Delete(doc);
    int rc = text ? orthros_fuzz_corpus_add(c, text, strlen(text)) : 0;
    free(text);
    return rc;
}

int orthros_fuzz_seeds_bench_file(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const f[] = {"data/results/perf-gate-aa-cpu-2026-11-29/base/bench-r1.json",
                                    "data/results/h200-2026-11-29b/bench-llama3.1-8b.json",
                                    "data/results/reproduce-21.9x-2026-12-01/llama3.1-8b.json"};
    if (add_files(c, root, f, sizeof f / sizeof *f)) return -1;
    return add_with_ranks(c, root, f[0]);
}

int orthros_fuzz_seeds_eval_file(orthros_fuzz_corpus *c, const char *root)
{
    /* The analytic tasks' files, the text evals' (ppl windows, recall items, the RULER tasks' records) and an mc
     * file (per-question records). */
    static const char *const f[] = {"data/results/evals-h200-2026-11-29/niah-1m.json",
                                    "data/results/smollm2-cpu-2026-12-01/ppl.json",
                                    "data/results/smollm2-cpu-2026-12-01/recall.json",
                                    "data/results/smollm2-cpu-2026-12-01/ruler-cwe.json",
                                    "data/results/smollm2-cpu-2026-12-01/ruler-vt.json",
                                    "data/results/smollm2-cpu-2026-12-01/ruler-niah-multikey.json",
                                    "evals/tests/mc/smollm2-generic.json"};
    if (add_files(c, root, f, sizeof f / sizeof *f)) return -1;
    return add_with_ranks(c, root, f[0]);
}

int orthros_fuzz_seeds_anchor_file(orthros_fuzz_corpus *c, const char *root)
{
    /* anchors.py's SDPA cases and decode_anchor.py's whole decode steps */
    static const char *const f[] = {"data/results/h200-2026-11-29b/anchors.json",
                                    "data/results/h200-2026-12-06-merge4/figures-4a022ad/decode_anchor_compiled.json"};
    return add_files(c, root, f, sizeof f / sizeof *f);
}

int orthros_fuzz_seeds_gguf(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const f[] = {"data/gguf/tiny-q4_1/model.gguf", "data/gguf/quants.gguf"};
    return add_files(c, root, f, sizeof f / sizeof *f);
}
