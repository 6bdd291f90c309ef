/* A result file of any kind (bench, eval or PyTorch SDPA anchors), read by its header's kind and validated: what
 * `orthros report` and `orthros plot` take on their command lines. */
#ifndef ORTHROS_RESULT_ANY_H
#define ORTHROS_RESULT_ANY_H

#include "result_eval.h"

typedef struct {
    orthros_result_kind kind; /* (orthros_result_kind)-1 when the read failed: nothing to free */
    orthros_bench_file bench;
    orthros_eval_file eval;
    orthros_anchor_file anchors;
} orthros_any_result;

/* Reads path into r (the member of its kind); on failure r holds nothing and the error names the file. */
int orthros_any_result_read(orthros_any_result *r, const char *path);
void orthros_any_result_free(orthros_any_result *r);

#endif
