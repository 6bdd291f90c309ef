/* Fuzz targets of the text inputs: the recall tasks file (evals/recall.c), the multiple-choice tasks file
 * (evals/mc.c) and a tokenizer.json with a text to encode (engine/tokenizer.c). */
#include "mc.h"
#include "recall.h"
#include "targets.h"
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int orthros_fuzz_recall_jsonl(const uint8_t *data, size_t size)
{
    orthros_recall_set set;
    int rc = orthros_recall_parse(&set, (const char *)data, size, "tasks.jsonl");
    if (!rc) orthros_recall_free(&set);
    return rc;
}

static void tok_finding(const char *what)
{
    fprintf(stderr, "fuzz finding: tokenizer: %s\n", what);
    abort();
}

/* The input: a tokenizer.json, then ORTHROS_FUZZ_SEP and the text to encode (a fixed sample without one). The
 * text is encoded with added tokens matched, split and with the tokenizer's affixes: every id inside the vocabulary,
 * the same ids twice, each decoded (strict and lossy). */
int orthros_fuzz_tokenizer(const uint8_t *data, size_t size)
{
    static const char sample[] = "Hello <s> world!! 12 <s><s>\xff\xe4\xbd abab <|im_end|>  \n";
    const uint8_t *sep = NULL;
    size_t sl = strlen(ORTHROS_FUZZ_SEP);
    for (size_t i = 0; i + sl <= size && !sep; i++)
        if (!memcmp(data + i, ORTHROS_FUZZ_SEP, sl)) sep = data + i;
    size_t jlen = sep ? (size_t)(sep - data) : size;
    char *json = malloc(jlen + 1);
    if (!json) return -1;
    memcpy(json, data, jlen);
    json[jlen] = '\0';
    const char *text = sep ? (const char *)sep + sl : sample;
    size_t tlen = sep ? size - jlen - sl : sizeof sample - 1;
    orthros_tokenizer *t = NULL;
    int rc = orthros_tokenizer_from_json(&t, json);
    free(json);
    if (rc) {
        const char *msg = orthros_last_error();
        if (!msg || !msg[0] || strchr(msg, '\n')) tok_finding("a refusal is not one line");
        return rc;
    }
    static const int flag_sets[] = {0, ORTHROS_TOK_ADD_SPECIAL, ORTHROS_TOK_SPLIT_SPECIAL};
    int V = orthros_tokenizer_vocab_size(t);
    for (int f = 0; f < 3 && !rc; f++) {
        int32_t *ids = NULL, *again = NULL;
        int n = 0, m = 0;
        if ((rc = orthros_tokenizer_encode(t, text, tlen, flag_sets[f], &ids, &n))) break;
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= V) tok_finding("an id outside the vocabulary");
        if (orthros_tokenizer_encode(t, text, tlen, flag_sets[f], &again, &m) || m != n ||
            (n && memcmp(ids, again, (size_t)n * sizeof *ids)))
            tok_finding("the same text encodes differently twice");
        char *out = NULL;
        size_t len = 0;
        if (orthros_tokenizer_decode(t, ids, n, 0, &out, &len)) tok_finding("valid ids do not decode");
        free(out);
        if (orthros_tokenizer_decode(t, ids, n, ORTHROS_TOK_SKIP_SPECIAL | ORTHROS_TOK_LOSSY, &out, &len))
            tok_finding("valid ids do not decode (lossy)");
        free(out);
        free(ids);
        free(again);
    }
    orthros_tokenizer_free(t);
    return rc;
}

int orthros_fuzz_seeds_tokenizer(orthros_fuzz_corpus *c, const char *root)
{
    (void)root;
    /* Byte tokens for a, b, space (\u0120), 1, merges, and added tokens that overlap (<s>, <s><s>, <|im_end|>, s>). */
    static const char *const seeds[] = {
        "{\"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true}, {\"id\": 10, \"content\": "
        "\"<s><s>\", \"special\": true}, {\"id\": 11, \"content\": \"<|im_end|>\", \"special\": true}, {\"id\": 12, "
        "\"content\": \"s>\", \"special\": false}], \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", "
        "\"add_prefix_space\": false, \"use_regex\": true}, \"post_processor\": null, \"decoder\": {\"type\": "
        "\"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"dropout\": null, \"vocab\": {\"a\": 0, \"b\": 1, \"\\u0120\": 2, "
        "\"1\": 3, \"ab\": 4, \"\\u0120a\": 5, \"\\u0120ab\": 6, \"aa\": 7, \"abab\": 8}, \"merges\": [\"a b\", "
        "\"\\u0120 a\", \"\\u0120a b\", \"a a\", \"ab ab\"]}}" ORTHROS_FUZZ_SEP "ab <s><s><s>s> <|im_end|><|im_end 11 aab",
        "{\"added_tokens\": [{\"id\": 5, \"content\": \"<|x|>\", \"special\": true}], \"pre_tokenizer\": {\"type\": "
        "\"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true}, {\"type\": "
        "\"ByteLevel\", \"add_prefix_space\": false}]}, \"post_processor\": {\"type\": \"TemplateProcessing\", "
        "\"single\": [{\"SpecialToken\": {\"id\": \"<|x|>\"}}, {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": "
        "{\"<|x|>\": {\"id\": \"<|x|>\", \"ids\": [5]}}}, \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": "
        "{\"type\": \"BPE\", \"unk_token\": \"a\", \"vocab\": {\"a\": 0, \"b\": 1, \"1\": 2, \"2\": 3, \"ab\": 4}, "
        "\"merges\": [[\"a\", \"b\"]]}}" ORTHROS_FUZZ_SEP "12ab<|x|><|x<|x|>|>zz",
    };
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++)
        if (orthros_fuzz_corpus_add(c, seeds[i], strlen(seeds[i]))) return -1;
    return 0;
}

int orthros_fuzz_seeds_recall_jsonl(orthros_fuzz_corpus *c, const char *root)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data/text/recall-example.jsonl", root);
    static const char small[] = "{\"id\": 1, \"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\", \"b\"]}\n\n"
                                "{\"context\": \"\\u00e9t\\u00e9\", \"question\": \"q?\", \"answers\": [\"x\"], \"more\": {}}\n";
    if (orthros_fuzz_corpus_add_file(c, path) || orthros_fuzz_corpus_add(c, small, sizeof small - 1)) return -1;
    static const char *const more[] = {"squad.jsonl", "squad_v2.jsonl", "triviaqa.jsonl"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/evals/tests/recall/%s", root, more[i]);
        if (orthros_fuzz_corpus_add_file(c, path)) return -1;
    }
    return 0;
}

/* Every line parsed and checked, then every choice's request built with one few-shot example (the prompt text). */
int orthros_fuzz_mc_jsonl(const uint8_t *data, size_t size)
{
    orthros_mc_set set;
    int rc = orthros_mc_parse(&set, (const char *)data, size, "tasks.jsonl", ORTHROS_MC_AUTO);
    if (rc) return rc;
    for (int i = 0; i < set.n && !rc; i++)
        for (int b = 0; b < set.items[i].n_choices; b++) {
            char *ctx = NULL, *cont = NULL;
            if (orthros_mc_request(&ctx, &cont, &set, &set.items[i], set.n > 1, b) == 0 && (!ctx || !cont)) rc = -1;
            free(ctx), free(cont);
        }
    orthros_mc_free(&set);
    return rc;
}

int orthros_fuzz_seeds_mc_jsonl(orthros_fuzz_corpus *c, const char *root)
{
    static const char *const files[] = {"arc.jsonl", "hellaswag.jsonl", "piqa.jsonl", "openbookqa.jsonl", "winogrande.jsonl",
                                        "generic.jsonl"};
    char path[4096];
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/evals/tests/mc/%s", root, files[i]);
        if (orthros_fuzz_corpus_add_file(c, path)) return -1;
    }
    return 0;
}
