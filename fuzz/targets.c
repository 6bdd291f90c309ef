/* The one table of fuzz targets that both drivers run (see targets.h), and the seed-corpus helpers. */
#include "targets.h"

#include "orthros_base.h"
#include "orthros.h"

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
             "dequantised (orthros_fuzz_gguf_check_buffer)",
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
    {"adapter", "an adapter directory (config.json, then adapter.safetensors; an empty config: --adapter FILE) over a "
                "fixed base, loaded on the cpu backend, then 4 tokens prefilled and 1 decoded",
     orthros_fuzz_adapter, orthros_fuzz_seeds_adapter},
    {"mc_jsonl", "a multiple-choice tasks file (orthros eval mc --tasks): every line parsed and checked in its layout, every "
                 "choice's lm-eval request built",
     orthros_fuzz_mc_jsonl, orthros_fuzz_seeds_mc_jsonl},
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
    char *buf = NULL;
    size_t n = 0;
    int exists = 1;
    if (orthros_read_file(&buf, &n, path, SIZE_MAX, &exists)) return -1;
    int rc = exists ? orthros_fuzz_corpus_add(c, buf, n) : 0;
    free(buf);
    return rc;
}

void orthros_fuzz_corpus_free(orthros_fuzz_corpus *c)
{
    for (int i = 0; i < c->n; i++) free(c->data[i]);
    free(c->data);
    free(c->size);
    memset(c, 0, sizeof *c);
}

/* ---- promises shared by the targets ---- */

void orthros_fuzz_finding(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz finding: %s: %s\n", what, detail);
    abort();
}

void orthros_fuzz_check_refusal(int rc, const char *must_name)
{
    const char *msg = orthros_last_error();
    if (rc >= 0) orthros_fuzz_finding("a refusal without a negative code", msg);
    if (!msg[0] || strchr(msg, '\n') || strchr(msg, '\r')) orthros_fuzz_finding("a refusal that is not one line", msg);
    if (must_name && !strstr(msg, must_name)) orthros_fuzz_finding("a refusal that does not name the file", msg);
}

void orthros_fuzz_write_file(const char *dir, const char *name, const uint8_t *data, size_t size)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        orthros_fuzz_finding("cannot write the input's files", path);
}

int orthros_fuzz_check_load(int rc, orthros_model *m, const char *must_name)
{
    if (rc) {
        orthros_fuzz_check_refusal(rc, rc == ORTHROS_ENOMEM || rc == ORTHROS_EINVAL ? NULL : must_name);
        if (m) orthros_fuzz_finding("a refused load that returned a model", orthros_last_error());
        return rc;
    }
    /* An accepted model must run: 4 prompt tokens, then one decode step. */
    const orthros_model_config *c = orthros_model_get_config(m);
    orthros_session *s = NULL;
    int32_t tok[4], next = 0;
    for (int i = 0; i < 4; i++) tok[i] = (int32_t)(i * 7 % c->vocab);
    int run = orthros_session_init(&s, m, 1, 8, 0);
    if (!run) run = orthros_prefill(s, 0, tok, 4, NULL, &next);
    if (!run && (next < 0 || next >= c->vocab)) orthros_fuzz_finding("a generated token outside the vocabulary", "prefill");
    if (!run) run = orthros_decode(s, &next, &next, NULL);
    if (!run && (next < 0 || next >= c->vocab)) orthros_fuzz_finding("a generated token outside the vocabulary", "decode");
    if (run) orthros_fuzz_check_refusal(run, NULL);
    orthros_session_free(s);
    orthros_model_free(m);
    return 0;
}
