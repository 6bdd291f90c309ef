/* Fuzz targets: one function per input format, `int target(const uint8_t *data, size_t size)`, returning 0 when
 * the input was accepted and a negative ORTHROS_E* code when it was refused. Refusing is the expected outcome
 * for most inputs; a crash, a sanitizer report, a leak or a hang is a bug. Both drivers (fuzz/mutate.c, plain
 * C with gcc, and fuzz/libfuzzer.c, clang's libFuzzer) run the targets of the one table in fuzz/targets.c.
 *
 * Adding a target: write the function (a file per format: loader_targets.c holds the checkpoint loaders),
 * optionally a seed generator, add one row to orthros_fuzz_targets[] in targets.c, and commit a few small seeds
 * under fuzz/corpus/NAME/ (README.md says how to grow and minimize them). */
#ifndef ORTHROS_FUZZ_TARGETS_H
#define ORTHROS_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

/* Seed inputs collected for a target before mutation starts. */
typedef struct {
    uint8_t **data;
    size_t *size;
    int n, cap;
} orthros_fuzz_corpus;

/* Appends a copy of data[0..size); 0 or -1 (out of memory). */
int orthros_fuzz_corpus_add(orthros_fuzz_corpus *c, const void *data, size_t size);
/* Appends a whole file (missing files are skipped: returns 0 and adds nothing). */
int orthros_fuzz_corpus_add_file(orthros_fuzz_corpus *c, const char *path);
void orthros_fuzz_corpus_free(orthros_fuzz_corpus *c);

typedef struct {
    const char *name;
    const char *about;
    int (*run)(const uint8_t *data, size_t size);
    /* Appends generated seeds (may be NULL); `root` is the source tree, for fixtures under data/. 0 or -1. */
    int (*seeds)(orthros_fuzz_corpus *c, const char *root);
} orthros_fuzz_target;

extern const orthros_fuzz_target orthros_fuzz_targets[];
extern const int orthros_fuzz_n_targets;
const orthros_fuzz_target *orthros_fuzz_find(const char *name);

/* Promises every target checks (targets.c). A broken one is reported the way a sanitizer reports, so that both
 * drivers treat it as a crash. */
void orthros_fuzz_finding(const char *what, const char *detail) __attribute__((noreturn));
/* A refusal must be one non-empty line that names `must_name` (when not NULL). */
void orthros_fuzz_check_refusal(int rc, const char *must_name);
/* Writes dir/name (a finding when it cannot). */
void orthros_fuzz_write_file(const char *dir, const char *name, const uint8_t *data, size_t size);
struct orthros_model;
/* After orthros_model_load returned rc and m: a refusal is checked (one line, naming must_name unless it is
 * ENOMEM or EINVAL; no model) and returned; an accepted model must prefill 4 tokens and decode 1, its tokens in
 * the vocabulary; it is freed and 0 returned. */
int orthros_fuzz_check_load(int rc, struct orthros_model *m, const char *must_name);

/* The model-directory framing: the files of one model directory in one input, separated by this line. Part 0 is
 * config.json, part 1 model.safetensors.index.json (left out when empty), parts 2.. the safetensors files:
 * model.safetensors when there is no index, else model-0000K-of-0000N.safetensors. */
#define ORTHROS_FUZZ_SEP "\n--8<-- orthros file --8<--\n"

/* The checkpoint loaders (loader_targets.c). */
int orthros_fuzz_st_file(const uint8_t *data, size_t size);
int orthros_fuzz_model_dir(const uint8_t *data, size_t size);
int orthros_fuzz_config(const uint8_t *data, size_t size);
int orthros_fuzz_seeds_st_file(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_seeds_model_dir(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_seeds_config(orthros_fuzz_corpus *c, const char *root);

/* The result-file readers and the GGUF loader (result_targets.c). */
int orthros_fuzz_bench_file(const uint8_t *data, size_t size);
int orthros_fuzz_eval_file(const uint8_t *data, size_t size);
int orthros_fuzz_anchor_file(const uint8_t *data, size_t size);
int orthros_fuzz_gguf(const uint8_t *data, size_t size);
/* The GGUF loader's whole path over one buffer (gguf_check.c): parse, model config, tokenizer (when the metadata
 * has one), dequantisation of every tensor of a supported type. Returns 0 or an error code; never crashes. */
int orthros_fuzz_gguf_check_buffer(const void *data, size_t size);
int orthros_fuzz_seeds_bench_file(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_seeds_eval_file(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_seeds_anchor_file(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_seeds_gguf(orthros_fuzz_corpus *c, const char *root);

/* The text inputs (text_targets.c): the recall and multiple-choice tasks files, a tokenizer.json with a text to
   encode. */
int orthros_fuzz_recall_jsonl(const uint8_t *data, size_t size);
int orthros_fuzz_seeds_recall_jsonl(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_mc_jsonl(const uint8_t *data, size_t size);
int orthros_fuzz_seeds_mc_jsonl(orthros_fuzz_corpus *c, const char *root);
int orthros_fuzz_tokenizer(const uint8_t *data, size_t size);
int orthros_fuzz_seeds_tokenizer(orthros_fuzz_corpus *c, const char *root);

/* Adapters over a fixed base (adapter_target.c): config.json, ORTHROS_FUZZ_SEP, adapter.safetensors. */
int orthros_fuzz_adapter(const uint8_t *data, size_t size);
int orthros_fuzz_seeds_adapter(orthros_fuzz_corpus *c, const char *root);

#endif
