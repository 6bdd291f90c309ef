/* The orthros command line: one binary, one subcommand per job; this file only dispatches. */
#include "bench.h"
#include "commands.h"
#include "compare.h"
#include "eval.h"
#include "orthros.h"
#include "plot.h"
#include "report_cmd.h"
#include "text.h"
#include "version.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"logits", orthros_cmd_logits, "write the logits of every prompt position"},
    {"generate", orthros_cmd_generate, "greedy generation, JSON on the last stdout line"},
    {"tokenize", orthros_cmd_tokenize, "text to token ids (or ids to text) with a model's tokenizer"},
    {"bench", orthros_cmd_bench, "prefill / decode / end-to-end timing sweeps with statistics, JSON results"},
    {"plot", orthros_cmd_plot, "PNG / SVG / PDF figures from result files (gnuplot)"},
    {"compare", orthros_cmd_compare, "two bench result files cell by cell: FAST / SLOW / SAME / AMBIGUOUS"},
    {"report", orthros_cmd_report, "the table of result files (bench, eval) in any -o format, validated, nothing run"},
    {"eval", orthros_cmd_eval, "evals: niah, mqar (analytic checkpoint); ruler, recall, ppl, mc (a text model)"},
    {"make-model", orthros_cmd_make_model, "write a checkpoint built by construction (analytic-recall)"},
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
    int tp_status;
    if (orthros_tp_main(argc, argv, &tp_status)) return tp_status; /* the ranks of a --tp run on cuda */
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
