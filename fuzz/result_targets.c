/* Fuzz targets of the result-file readers (harness/result_bench.c, result_eval.c: what bench and eval --resume,
 * plot, compare and the recipe report read) and of the GGUF loader. Beyond crashes, each checks the readers'
 * promises: a refusal is one line naming the file, and an accepted file written back by its writer reads again
 * into the same document (the writer never produces what its reader refuses). */
#include "gguf.h"
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
    int rc = orthros_gguf_check_buffer(data, size);
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

int orthros_fuzz_seeds_bench_file(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const f[] = {"data/results/perf-gate-aa-cpu-2026-11-29/base/bench-r1.json",
                                    "data/results/h200-2026-11-29b/bench-llama3.1-8b.json",
                                    "data/results/reproduce-21.9x-2026-12-01/llama3.1-8b.json"};
    return add_files(c, root, f, sizeof f / sizeof *f);
}

int orthros_fuzz_seeds_eval_file(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const f[] = {"data/results/evals-h200-2026-11-29/niah-1m.json"};
    return add_files(c, root, f, sizeof f / sizeof *f);
}

int orthros_fuzz_seeds_anchor_file(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const f[] = {"data/results/h200-2026-11-29b/anchors.json"};
    return add_files(c, root, f, sizeof f / sizeof *f);
}

int orthros_fuzz_seeds_gguf(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const f[] = {"data/gguf/tiny-q4_1/model.gguf", "data/gguf/quants.gguf"};
    return add_files(c, root, f, sizeof f / sizeof *f);
}
