/* Fuzz targets of the text evals' inputs: the recall tasks file (evals/recall.c). */
#include "recall.h"
#include "targets.h"

#include <stdio.h>

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
    return orthros_fuzz_corpus_add_file(c, path) || orthros_fuzz_corpus_add(c, small, sizeof small - 1) ? -1 : 0;
}
