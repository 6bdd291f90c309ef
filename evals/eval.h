/* The `eval` and `make-model` commands (issue 5). */
#ifndef ORTHROS_EVAL_H
#define ORTHROS_EVAL_H

/* orthros eval niah|mqar ...: recall evals on an analytic checkpoint, JSON results with resume. */
int orthros_cmd_eval(int argc, char **argv);
/* orthros make-model analytic-recall --out DIR ...: writes the analytic recall checkpoint. */
int orthros_cmd_make_model(int argc, char **argv);

#endif
