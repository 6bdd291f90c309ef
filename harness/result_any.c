/* A result file of any kind (see result_any.h). */
#include "result_any.h"

#include <string.h>

int orthros_any_result_read(orthros_any_result *r, const char *path)
{
    cJSON *root = NULL;
    orthros_result_header h;
    memset(r, 0, sizeof *r);
    r->kind = (orthros_result_kind)-1;
    int rc = orthros_result_load(&root, path, 0);
    if (!rc) rc = orthros_result_header_read(&h, root, path);
    if (!rc) {
        if (h.kind == ORTHROS_RESULT_BENCH) rc = orthros_bench_file_from_json(&r->bench, root, path);
        else if (h.kind == ORTHROS_RESULT_EVAL) rc = orthros_eval_file_from_json(&r->eval, root, path);
        else rc = orthros_anchor_file_from_json(&r->anchors, root, path);
        if (!rc) r->kind = h.kind;
    }
    cJSON_Delete(root);
    return rc;
}

void orthros_any_result_free(orthros_any_result *r)
{
    if (r->kind == ORTHROS_RESULT_BENCH) orthros_bench_file_free(&r->bench);
    else if (r->kind == ORTHROS_RESULT_EVAL) orthros_eval_file_free(&r->eval);
    else if (r->kind == ORTHROS_RESULT_ANCHORS) orthros_anchor_file_free(&r->anchors);
    r->kind = (orthros_result_kind)-1;
}
