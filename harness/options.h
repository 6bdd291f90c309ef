/* Command-line machinery shared by every command: a command's option table and its parsing, the options of the
 * commands that run a model, and token lists. Parsing is strict: an unknown option, a missing or malformed value,
 * or a value outside the option's range is a usage error (exit status 2) with one line on stderr. */
#ifndef ORTHROS_OPTIONS_H
#define ORTHROS_OPTIONS_H

#include "orthros.h"
#include "results.h"

#include <stdint.h>

/* ORTHROS_OPT_INT and _DOUBLE carry a range [lo, hi]; a double must also be finite. */
typedef enum { ORTHROS_OPT_STR, ORTHROS_OPT_INT, ORTHROS_OPT_DOUBLE, ORTHROS_OPT_FLAG } orthros_opt_kind;

typedef struct {
    const char *name;     /* without the leading "--" */
    orthros_opt_kind kind;
    void *dst;            /* const char **, int *, double *, int * */
    const char *metavar;
    const char *help;
    double lo, hi;        /* INT / DOUBLE: accepted range, both ends included */
    int set;              /* 1 once the option was given */
} orthros_opt;

#define ORTHROS_CMD_MAX_OPTS 64
#define ORTHROS_CMD_MAX_POS 64

/* One command's arguments: its name ("bench"), its --help summary, the option table and the positional
 * arguments found. */
typedef struct {
    const char *name;
    const char *summary;
    orthros_opt opts[ORTHROS_CMD_MAX_OPTS];
    int n_opts;
    const char *pos[ORTHROS_CMD_MAX_POS];
    int max_pos, n_pos;
    int first;            /* argv index of the first option: 2 ("orthros bench ..."), 3 for "orthros eval niah ..." */
} orthros_cmd;

void orthros_cmd_init(orthros_cmd *c, const char *name, const char *summary, int max_pos);
/* Appends an option; for ORTHROS_OPT_INT / _DOUBLE use orthros_cmd_add_num. Returns the option (its `set` field
 * tells after parsing whether it was given). */
orthros_opt *orthros_cmd_add(orthros_cmd *c, const char *name, orthros_opt_kind kind, void *dst, const char *metavar,
                             const char *help);
orthros_opt *orthros_cmd_add_num(orthros_cmd *c, const char *name, orthros_opt_kind kind, void *dst, double lo, double hi,
                                 const char *metavar, const char *help);
/* The option named `name` (without "--"), or NULL. */
orthros_opt *orthros_cmd_opt(orthros_cmd *c, const char *name);
/* Parses argv[first..argc). Returns -1 to go on, or the exit status the command should return: 0 after --help was
 * printed, 2 after a usage error was printed. */
int orthros_cmd_parse(orthros_cmd *c, int argc, char **argv);
/* Prints "orthros NAME: error: MSG" and returns 2 (a usage error). */
int orthros_cmd_usage(const orthros_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "orthros CMD: error: " and the last recorded error, and returns exit status 1 (a run that failed). */
int orthros_cmd_fail(const char *cmd, int rc);
/* The same for an error found while checking arguments: exit status 2. */
int orthros_cmd_fail_usage(const char *cmd, int rc);

/* The options every model-running command shares (logits, generate, bench, eval). */
typedef struct {
    const char *model, *arch, *device, *feature_map, *feature_map_rope;
    int tail, window, hybrid_every, feature_dim, chunk, seed, local_window;
    double eps;
    int tp; /* tensor-parallel ranks (ranks/ranks.h starts the processes of a cuda run) */
    const char *adapter; /* --adapter FILE (logits, generate, export), or NULL */
} orthros_model_opts;

void orthros_model_opts_default(orthros_model_opts *o);
/* Appends the shared options to the command's table. */
void orthros_model_opts_add(orthros_cmd *c, orthros_model_opts *o);
/* Appends --adapter FILE (an adapter safetensors merged over --model). Only the commands whose outputs do not
 * record the model (logits, generate, export) take it: bench and eval take an adapter directory as --model, whose
 * path their result files record. */
void orthros_model_opts_add_adapter(orthros_cmd *c, orthros_model_opts *o);
/* Resolves them to engine options: options not given keep the checkpoint's value or the default. An unknown
 * feature map or placement is an error. */
int orthros_model_opts_resolve(orthros_arch_opts *out, const orthros_model_opts *o);
/* The schedule options as a result file records them (-1 / "" where not given). */
void orthros_model_opts_sched(orthros_sched_config *s, const orthros_model_opts *o);

/* "1,2,3" -> tokens (malloc'd). An empty list is an error. */
int orthros_opt_parse_tokens(int32_t **out, int *n, const char *text);
/* The same for the option `what` ("--ids"), which its errors name. */
int orthros_opt_parse_token_list(int32_t **out, int *n, const char *text, const char *what);
/* Token ids from a file: integers separated by commas and/or white space (a prompt too long for a command
 * line). */
int orthros_opt_read_tokens(int32_t **out, int *n, const char *path);

#endif
