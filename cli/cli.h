/* Shared command-line machinery: option tables, model options, token lists. */
#ifndef ORTHROS_CLI_H
#define ORTHROS_CLI_H

#include "orthros.h"

typedef enum { CLI_STR, CLI_INT, CLI_DOUBLE, CLI_FLAG } cli_kind;

typedef struct {
    const char *name;     /* without the leading "--" */
    cli_kind kind;
    void *dst;            /* const char **, int *, double *, int * */
    const char *metavar;
    const char *help;
} cli_opt;

/* Parses argv[first..argc) against opts; positional arguments are collected into pos (at most max_pos).
 * Returns 0, 1 when --help was printed (exit 0), or -1 after printing one error line (exit 2). */
int cli_parse(int argc, char **argv, int first, const cli_opt *opts, int n_opts, const char *cmd, const char *summary,
              const char **pos, int max_pos, int *n_pos);

/* The options every model-running command shares. */
typedef struct {
    const char *model, *arch, *device, *feature_map;
    int tail, window, hybrid_every, feature_dim, chunk, seed;
    double eps;
    int tp; /* tensor-parallel ranks (orthros_tp_main starts the processes of a cuda run) */
} cli_model_opts;

void cli_model_opts_default(cli_model_opts *o);
/* Appends the shared options to table (returns the new count). */
int cli_model_opts_table(cli_opt *table, int n, cli_model_opts *o);
/* Resolves them to engine options (an unknown feature map is an error). */
int cli_model_opts_resolve(orthros_arch_opts *out, const cli_model_opts *o);

/* "1,2,3" -> tokens (malloc'd). An empty list is an error. */
int cli_parse_tokens(int32_t **out, int *n, const char *text);

/* Prints "orthros CMD: error: MSG" on stderr and returns exit status 1. */
int cli_fail(const char *cmd, int rc);

/* Build facts, for --version and result files. */
const char *orthros_tool_git_commit(void);
int orthros_tool_git_dirty(void);
const char *orthros_tool_build_type(void);
const char *orthros_tool_c_compiler(void);
const char *orthros_tool_cuda_compiler(void);

#endif
