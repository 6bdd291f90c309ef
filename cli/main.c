/* The orthros command line: one binary, one subcommand per job; this file only dispatches. */
#include "bench.h"
#include "commands.h"
#include "compare.h"
#include "eval.h"
#include "export.h"
#include "orthros.h"
#include "plot.h"
#include "ranks.h"
#include "report_cmd.h"
#include "text.h"
#include "version.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
    int runs_model; /* takes the model options, --tp among them: may run as tensor-parallel ranks */
} command;

static const command commands[] = {
    {"logits", orthros_cmd_logits, "write the logits of every prompt position", 1},
    {"generate", orthros_cmd_generate, "greedy generation, JSON on the last stdout line", 1},
    {"tokenize", orthros_cmd_tokenize, "text to token ids (or ids to text) with a model's tokenizer", 0},
    {"bench", orthros_cmd_bench, "prefill / decode / end-to-end timing sweeps with statistics, JSON results", 1},
    {"plot", orthros_cmd_plot, "PNG / SVG / PDF figures from result files (gnuplot)", 0},
    {"compare", orthros_cmd_compare, "two bench result files cell by cell: FAST / SLOW / SAME / AMBIGUOUS", 0},
    {"report", orthros_cmd_report, "the table of result files (bench, eval) in any -o format, validated, nothing run", 0},
    {"eval", orthros_cmd_eval,
     "evals: niah, mqar (analytic checkpoint); ruler, recall, ppl, mc (a text model)", 1},
    {"make-model", orthros_cmd_make_model, "write a checkpoint built by construction (analytic-recall)", 0},
    {"export", orthros_cmd_export, "any model the engine loads as a Hugging Face directory (merged weights, tokenizer)", 0},
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: orthros COMMAND [options]   (orthros help COMMAND, or orthros COMMAND --help, for its options)\n\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-10s %s\n", "list", "presets, architectures, devices and the GPUs present");
    fprintf(f, "  %-10s %s\n", "version", "print the version and build facts");
}

/* orthros list: what the --model, --arch and --device options accept here. */
static int list_all(void)
{
    static const char *const presets[] = {"tiny", "llama3.2-1b", "llama3.1-8b", "llama3.1-70b", NULL};
    printf("presets (--model preset:NAME; preset:NAME-LN for its first N layers):\n");
    for (int i = 0; presets[i]; i++) {
        orthros_model_config c;
        if (orthros_preset_config(&c, presets[i])) continue;
        printf("  %-14s %d layers, hidden %d, %d q / %d kv heads, head dim %d, FFN %d, vocab %d\n", presets[i], c.n_layers,
               c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn, c.vocab);
    }
    printf("architectures (--arch):");
    for (int i = 0; orthros_arch_names[i]; i++) printf(" %s", orthros_arch_names[i]);
    printf("\ndevices (--device): cpu%s auto\n", ORTHROS_HAVE_CUDA ? " cuda" : "");
    orthros_backend *be = NULL;
    if (orthros_cuda_available() && !orthros_backend_create(&be, "cuda")) {
        orthros_device_info info;
        orthros_backend_device_info(be, &info);
        printf("GPU: %s, %d SMs, %.1f GiB, compute capability %d.%d, kernels: %s\n", info.name, info.sm_count,
               (double)info.mem_total / (1 << 30), info.cc_major, info.cc_minor, info.kernels);
        orthros_backend_free(be);
    } else {
        printf("GPU: none found%s\n", ORTHROS_HAVE_CUDA ? "" : " (this build has no CUDA backend)");
    }
    return 0;
}

/* The value of --NAME V or --NAME=V in argv[2..], or NULL; *help is set when --help / -h is there. */
static const char *arg_value(int argc, char **argv, const char *name, int *help)
{
    size_t len = strlen(name);
    const char *v = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) *help = 1;
        if (strncmp(a, "--", 2) || strncmp(a + 2, name, len)) continue;
        if (a[2 + len] == '=') v = a + 3 + len;
        else if (!a[2 + len] && i + 1 < argc) v = argv[++i];
    }
    return v;
}

/* Tensor parallel as processes (ranks/ranks.h): a model-running command with --tp N may be started as N ranks,
 * or be one of them. --tp and --device are read here for the launcher; the command's own parser checks them
 * again (a bad value is its usage error). Returns 1 when the command was handled, with its exit status. */
static int run_as_ranks(const command *c, int argc, char **argv, int *status)
{
    int help = 0;
    const char *tp_arg = arg_value(argc, argv, "tp", &help), *device = arg_value(argc, argv, "device", &help);
    if (!c->runs_model || help || !tp_arg) return 0;
    char *end;
    errno = 0;
    long tp = strtol(tp_arg, &end, 10);
    if (errno || end == tp_arg || *end || tp < 1 || tp > INT_MAX) return 0;
    orthros_ranks_request r = {(int)tp, device, argv};
    int rank, rc = orthros_ranks_main(&r, status, &rank);
    if (rc >= 0) return rc;
    if (rank >= 0) fprintf(stderr, "orthros %s: rank %d: error: %s\n", c->name, rank, orthros_last_error());
    else fprintf(stderr, "orthros %s: error: %s\n", c->name, orthros_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || (!strcmp(cmd, "help") && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("orthros %s (commit %s%s, %s build, cuda backend %s)\n", ORTHROS_VERSION, orthros_tool_git_commit(),
               orthros_tool_git_dirty() ? ", dirty" : "", orthros_tool_build_type(),
               ORTHROS_HAVE_CUDA ? "built" : "not built");
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        int status;
        if (!strcmp(cmd, commands[i].name) && run_as_ranks(&commands[i], argc, argv, &status)) return status;
    }
    if (!strcmp(cmd, "list") || !strcmp(cmd, "--list")) return list_all();
    if (!strcmp(cmd, "help")) {
        /* orthros help CMD [TASK] is orthros CMD [TASK] --help. */
        char *hargv[5] = {argv[0], argv[2], NULL, NULL, NULL};
        int n = 2;
        if (argc > 3) hargv[n++] = argv[3];
        hargv[n++] = "--help";
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (!strcmp(argv[2], commands[i].name)) return commands[i].run(n, hargv);
        fprintf(stderr, "orthros: error: no command \"%s\" (see orthros help)\n", argv[2]);
        return 2;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc, argv);
    fprintf(stderr, "orthros: error: unknown command \"%s\" (see orthros help)\n", cmd);
    return 2;
}
