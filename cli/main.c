/* The orthros command line: one binary, one subcommand per job. */
#include "cli.h"
#include "backend.h"
#include "bench.h"
#include "compare.h"
#include "eval.h"
#include "plot.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 48

/* Backend, model and a batch-1 session for `ctx` tokens, from the shared options. */
typedef struct {
    orthros_backend *be;
    orthros_model *m;
    orthros_session *s;
} runner;

static void runner_free(runner *r)
{
    orthros_session_free(r->s);
    orthros_model_free(r->m);
    orthros_backend_free(r->be);
    memset(r, 0, sizeof *r);
}

static int runner_open(runner *r, const cli_model_opts *mo, int ctx)
{
    orthros_arch_opts ao;
    int rc;
    memset(r, 0, sizeof *r);
    if ((rc = cli_model_opts_resolve(&ao, mo))) return rc;
    if ((rc = orthros_backend_create(&r->be, mo->device))) return rc;
    if ((rc = orthros_model_load(&r->m, r->be, mo->model, &ao, (uint64_t)mo->seed))) goto fail;
    if ((rc = orthros_session_init(&r->s, r->m, 1, ctx, mo->chunk))) goto fail;
    return 0;
fail:
    runner_free(r);
    return rc;
}

static int cmd_logits(int argc, char **argv)
{
    const char *cmd = "logits", *tokens_arg = NULL, *out_path = NULL;
    cli_model_opts mo;
    cli_model_opts_default(&mo);
    cli_opt t[MAX_OPTS];
    int n = cli_model_opts_table(t, 0, &mo);
    t[n++] = (cli_opt){"tokens", CLI_STR, &tokens_arg, "LIST", "prompt token ids, comma-separated (required)"};
    t[n++] = (cli_opt){"out", CLI_STR, &out_path, "FILE",
                       "write float32 little-endian logits [position][vocab] of every prompt position (required)"};
    const char *pos[1];
    int npos, pr = cli_parse(argc, argv, 2, t, n, cmd,
                             "Runs the prompt through the model and writes the logits of every prompt position, each "
                             "computed as its attention kind prescribes (under orthros, positions before the tail are "
                             "linear-phase outputs).",
                             pos, 0, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    if (!tokens_arg || !out_path) {
        fprintf(stderr, "orthros %s: error: --tokens and --out are required (see --help)\n", cmd);
        return 2;
    }
    int32_t *tokens = NULL;
    int nt = 0, rc, status = 1;
    float *logits = NULL;
    runner r = {0};
    if ((rc = cli_parse_tokens(&tokens, &nt, tokens_arg))) return cli_fail(cmd, rc);
    if ((rc = runner_open(&r, &mo, nt))) goto fail;
    int V = orthros_model_get_config(r.m)->vocab;
    logits = malloc((size_t)nt * (size_t)V * sizeof(float));
    if (!logits) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of host memory for %d x %d logits", nt, V);
        goto fail;
    }
    if ((rc = orthros_prefill(r.s, 0, tokens, nt, logits, NULL))) goto fail;
    FILE *f = fopen(out_path, "wb");
    if (!f) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", out_path, strerror(errno));
        goto fail;
    }
    size_t wrote = fwrite(logits, sizeof(float), (size_t)nt * (size_t)V, f);
    if (fclose(f) != 0 || wrote != (size_t)nt * (size_t)V) {
        rc = orthros_error(ORTHROS_EIO, "%s: write failed", out_path);
        goto fail;
    }
    fprintf(stderr, "orthros logits: %d positions x %d vocab, arch %s, device %s -> %s\n", nt, V,
            orthros_model_get_arch(r.m)->name, orthros_backend_name(r.be), out_path);
    status = 0;
fail:
    if (status) cli_fail(cmd, rc);
    free(logits);
    free(tokens);
    runner_free(&r);
    return status;
}

static int cmd_generate(int argc, char **argv)
{
    const char *cmd = "generate", *tokens_arg = NULL;
    int max_new = 16;
    cli_model_opts mo;
    cli_model_opts_default(&mo);
    cli_opt t[MAX_OPTS];
    int n = cli_model_opts_table(t, 0, &mo);
    t[n++] = (cli_opt){"tokens", CLI_STR, &tokens_arg, "LIST", "prompt token ids, comma-separated (required)"};
    t[n++] = (cli_opt){"max-new", CLI_INT, &max_new, "N",
                       "tokens to generate greedily (default 16; stops early after an end-of-sequence token)"};
    const char *pos[1];
    int npos, pr = cli_parse(argc, argv, 2, t, n, cmd,
                             "Greedy generation. The last stdout line is a JSON object {\"generated\": [ids...]}.", pos,
                             0, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    if (!tokens_arg) {
        fprintf(stderr, "orthros %s: error: --tokens is required (see --help)\n", cmd);
        return 2;
    }
    if (max_new < 1) {
        fprintf(stderr, "orthros %s: error: --max-new must be at least 1 (got %d)\n", cmd, max_new);
        return 2;
    }
    int32_t *tokens = NULL, *gen = NULL;
    int nt = 0, rc, status = 1;
    runner r = {0};
    if ((rc = cli_parse_tokens(&tokens, &nt, tokens_arg))) return cli_fail(cmd, rc);
    gen = malloc((size_t)max_new * sizeof *gen);
    if (!gen) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = runner_open(&r, &mo, nt + max_new))) goto fail;
    int count = orthros_generate(r.s, tokens, nt, max_new, gen);
    if (count < 0) {
        rc = count;
        goto fail;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "generated");
    for (int i = 0; i < count; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(gen[i]));
    char *text = cJSON_PrintUnformatted(o);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
    status = 0;
fail:
    if (status) cli_fail(cmd, rc);
    free(gen);
    free(tokens);
    runner_free(&r);
    return status;
}

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"logits", cmd_logits, "write the logits of every prompt position"},
    {"generate", cmd_generate, "greedy generation, JSON on the last stdout line"},
    {"bench", orthros_cmd_bench, "prefill / decode / end-to-end timing sweeps with statistics, JSON results"},
    {"plot", orthros_cmd_plot, "PNG / SVG figures from result files (gnuplot)"},
    {"compare", orthros_cmd_compare, "two bench result files cell by cell: FAST / SLOW / SAME / AMBIGUOUS"},
    {"eval", orthros_cmd_eval, "recall evals on an analytic checkpoint: niah (context x depth), mqar (context x pairs)"},
    {"make-model", orthros_cmd_make_model, "write a checkpoint built by construction (analytic-recall)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: orthros COMMAND [options]   (orthros COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-10s %s\n", "version", "print the version and build facts");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("orthros %s (commit %s%s, %s build, cuda backend %s)\n", ORTHROS_VERSION, orthros_tool_git_commit(),
               orthros_tool_git_dirty() ? ", dirty" : "", orthros_tool_build_type(),
               ORTHROS_HAVE_CUDA ? "built" : "not built");
        return 0;
    }
    int tp_status;
    if (orthros_tp_main(argc, argv, &tp_status)) return tp_status; /* the ranks of a --tp run on cuda */
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc, argv);
    fprintf(stderr, "orthros: error: unknown command \"%s\" (see orthros --help)\n", argv[1]);
    return 2;
}
