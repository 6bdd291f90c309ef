/* Fuzz targets of the text evals' inputs: the recall tasks file (evals/recall.c) and the multiple-choice tasks file
 * (evals/mc.c). */
#include "mc.h"
#include "recall.h"
#include "targets.h"

#include <stdio.h>
#include <stdlib.h>

int orthros_fuzz_recall_jsonl(const uint8_t *data, size_t size)
{
    orthros_recall_set set;
    int rc = orthros_recall_parse(&set, (const char *)data, size, "tasks.jsonl");
    if (!rc) orthros_recall_free(&set);
    return rc;
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
