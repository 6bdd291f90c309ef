/* The one table of fuzz targets that both drivers run (see targets.h), and the seed-corpus helpers. */
#include "targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const orthros_fuzz_target orthros_fuzz_targets[] = {
    {"st_file", "one safetensors file, parsed from memory (orthros_st_open_memory), every tensor's bytes read",
     orthros_fuzz_st_file, orthros_fuzz_seeds_st_file},
    {"model_dir", "a model directory (config.json, index, shards) loaded on the cpu backend, then 4 tokens prefilled "
                  "and 1 decoded",
     orthros_fuzz_model_dir, orthros_fuzz_seeds_model_dir},
    {"config", "config.json text: the model fields, then the schedule under every named architecture",
     orthros_fuzz_config, orthros_fuzz_seeds_config},
    {"gguf", "a GGUF file from memory: parse, model config, tokenizer (and a sample encode / decode), every tensor "
             "dequantised (orthros_gguf_check_buffer)",
     orthros_fuzz_gguf, orthros_fuzz_seeds_gguf},
    {"bench_file", "a bench result file (what bench --resume, compare, plot and the report read): validated, then "
                   "written back and read again",
     orthros_fuzz_bench_file, orthros_fuzz_seeds_bench_file},
    {"eval_file", "an eval result file (eval --resume, plot): validated, then written back and read again",
     orthros_fuzz_eval_file, orthros_fuzz_seeds_eval_file},
    {"anchor_file", "a PyTorch SDPA anchors file (plot, the recipe report)", orthros_fuzz_anchor_file,
     orthros_fuzz_seeds_anchor_file},
    {"recall_jsonl", "a recall tasks file (orthros eval recall --tasks): every line parsed and checked",
     orthros_fuzz_recall_jsonl, orthros_fuzz_seeds_recall_jsonl},
    {"tokenizer", "a tokenizer.json, then the separator line and a text: loaded, the text encoded three ways (added "
                  "tokens matched, split, with the affixes), every id checked and decoded",
     orthros_fuzz_tokenizer, orthros_fuzz_seeds_tokenizer},
};
const int orthros_fuzz_n_targets = (int)(sizeof orthros_fuzz_targets / sizeof *orthros_fuzz_targets);

const orthros_fuzz_target *orthros_fuzz_find(const char *name)
{
    for (int i = 0; i < orthros_fuzz_n_targets; i++)
        if (!strcmp(orthros_fuzz_targets[i].name, name)) return &orthros_fuzz_targets[i];
    return NULL;
}

int orthros_fuzz_corpus_add(orthros_fuzz_corpus *c, const void *data, size_t size)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        uint8_t **d = realloc(c->data, (size_t)cap * sizeof *d);
        if (!d) return -1;
        c->data = d;
        size_t *s = realloc(c->size, (size_t)cap * sizeof *s);
        if (!s) return -1;
        c->size = s;
        c->cap = cap;
    }
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return -1;
    if (size) memcpy(copy, data, size);
    c->data[c->n] = copy;
    c->size[c->n++] = size;
    return 0;
}

int orthros_fuzz_corpus_add_file(orthros_fuzz_corpus *c, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        rewind(f);
        buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) rc = orthros_fuzz_corpus_add(c, buf, (size_t)n);
    }
    free(buf);
    fclose(f);
    return rc;
}

void orthros_fuzz_corpus_free(orthros_fuzz_corpus *c)
{
    for (int i = 0; i < c->n; i++) free(c->data[i]);
    free(c->data);
    free(c->size);
    memset(c, 0, sizeof *c);
}
