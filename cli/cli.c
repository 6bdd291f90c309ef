/* Option parsing shared by every subcommand: strict (an unknown option or a bad value is an error). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_help(const char *cmd, const char *summary, const cli_opt *opts, int n)
{
    printf("usage: orthros %s [options]\n\n%s\n\noptions:\n", cmd, summary);
    for (int i = 0; i < n; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].metavar ? " " : "",
                 opts[i].metavar ? opts[i].metavar : "");
        printf("  %-28s %s\n", left, opts[i].help);
    }
    printf("  %-28s %s\n", "--help", "show this help and exit");
}

static int parse_int(int *out, const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < INT_MIN || v > INT_MAX) return -1;
    *out = (int)v;
    return 0;
}

int cli_parse(int argc, char **argv, int first, const cli_opt *opts, int n_opts, const char *cmd, const char *summary,
              const char **pos, int max_pos, int *n_pos)
{
    *n_pos = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(cmd, summary, opts, n_opts);
            return 1;
        }
        if (strncmp(a, "--", 2)) {
            if (*n_pos >= max_pos) {
                fprintf(stderr, "orthros %s: error: unexpected argument \"%s\" (see --help)\n", cmd, a);
                return -1;
            }
            pos[(*n_pos)++] = a;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = NULL;
        for (int j = 0; j < n_opts; j++)
            if (strlen(opts[j].name) == len && !strncmp(opts[j].name, name, len)) o = &opts[j];
        if (!o) {
            fprintf(stderr, "orthros %s: error: unknown option \"%.*s\" (see --help)\n", cmd, (int)(len + 2), a);
            return -1;
        }
        if (o->kind == CLI_FLAG) {
            if (eq) {
                fprintf(stderr, "orthros %s: error: option --%s takes no value\n", cmd, o->name);
                return -1;
            }
            *(int *)o->dst = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val) {
            fprintf(stderr, "orthros %s: error: option --%s needs a value\n", cmd, o->name);
            return -1;
        }
        if (o->kind == CLI_STR) {
            *(const char **)o->dst = val;
        } else if (o->kind == CLI_INT) {
            if (parse_int(o->dst, val)) {
                fprintf(stderr, "orthros %s: error: option --%s needs an integer, got \"%s\"\n", cmd, o->name, val);
                return -1;
            }
        } else {
            char *end;
            errno = 0;
            double v = strtod(val, &end);
            if (errno || end == val || *end) {
                fprintf(stderr, "orthros %s: error: option --%s needs a number, got \"%s\"\n", cmd, o->name, val);
                return -1;
            }
            *(double *)o->dst = v;
        }
    }
    return 0;
}

void cli_model_opts_default(cli_model_opts *o)
{
    *o = (cli_model_opts){.model = "preset:tiny", .arch = NULL, .device = "auto", .feature_map = NULL, .tail = -1,
                          .window = -1, .hybrid_every = -1, .feature_dim = -1, .chunk = 0, .seed = 1, .eps = -1.0,
                          .tp = 1};
}

int cli_model_opts_table(cli_opt *t, int n, cli_model_opts *o)
{
    t[n++] = (cli_opt){"model", CLI_STR, &o->model, "DIR|preset:NAME",
                       "checkpoint directory, or preset:tiny|llama3.2-1b|llama3.1-8b|llama3.1-70b (default preset:tiny)"};
    t[n++] = (cli_opt){"arch", CLI_STR, &o->arch, "ARCH",
                       "transformer|orthros|linear|swa|hybrid (default: the checkpoint's, else transformer)"};
    t[n++] = (cli_opt){"device", CLI_STR, &o->device, "DEV", "cpu|cuda|auto (default auto: cuda when a GPU is present)"};
    t[n++] = (cli_opt){"tail", CLI_INT, &o->tail, "T", "orthros: prompt positions run with full attention (>= 1, default 1)"};
    t[n++] = (cli_opt){"feature-map", CLI_STR, &o->feature_map, "FM", "linear attention feature map: elu1|relu|hedgehog"};
    t[n++] = (cli_opt){"feature-dim", CLI_INT, &o->feature_dim, "N", "hedgehog feature dim per sign (F = 2N)"};
    t[n++] = (cli_opt){"window", CLI_INT, &o->window, "W", "swa window in tokens (default 4096)"};
    t[n++] = (cli_opt){"hybrid-every", CLI_INT, &o->hybrid_every, "K", "hybrid: every K-th layer is full (default 4)"};
    t[n++] = (cli_opt){"eps", CLI_DOUBLE, &o->eps, "E", "linear attention denominator epsilon (default 1e-6)"};
    t[n++] = (cli_opt){"chunk", CLI_INT, &o->chunk, "N", "prefill chunk size (default: from free memory)"};
    t[n++] = (cli_opt){"seed", CLI_INT, &o->seed, "S", "seed of preset weights (default 1)"};
    t[n++] = (cli_opt){"tp", CLI_INT, &o->tp, "N",
                       "tensor-parallel ranks: threads on cpu, one process per GPU on cuda (default 1)"};
    return n;
}

int cli_model_opts_resolve(orthros_arch_opts *out, const cli_model_opts *o)
{
    orthros_arch_opts_default(out);
    out->arch = o->arch;
    if (o->feature_map) {
        orthros_fmap f;
        int rc = orthros_fmap_parse(o->feature_map, &f);
        if (rc) return rc;
        out->fmap = (int)f;
    }
    if (o->tail != -1) {
        if (o->tail < 1) return orthros_error(ORTHROS_EINVAL, "tail must be at least 1 (got %d)", o->tail);
        out->tail = o->tail;
    }
    if (o->window != -1) {
        if (o->window < 1) return orthros_error(ORTHROS_EINVAL, "window must be at least 1 (got %d)", o->window);
        out->window = o->window;
    }
    if (o->hybrid_every != -1) {
        if (o->hybrid_every < 1)
            return orthros_error(ORTHROS_EINVAL, "hybrid-every must be at least 1 (got %d)", o->hybrid_every);
        out->hybrid_every = o->hybrid_every;
    }
    if (o->feature_dim != -1) {
        if (o->feature_dim < 1) return orthros_error(ORTHROS_EINVAL, "feature-dim must be at least 1");
        out->feature_dim = o->feature_dim;
    }
    if (o->eps != -1.0) {
        if (!(o->eps > 0)) return orthros_error(ORTHROS_EINVAL, "eps must be positive");
        out->eps = o->eps;
    }
    if (o->chunk < 0) return orthros_error(ORTHROS_EINVAL, "chunk must be positive");
    if (o->tp < 1) return orthros_error(ORTHROS_EINVAL, "--tp must be at least 1 (got %d)", o->tp);
    out->tp = o->tp;
    return 0;
}

int cli_parse_tokens(int32_t **out, int *n, const char *text)
{
    *out = NULL;
    *n = 0;
    size_t cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    int32_t *t = malloc(cap * sizeof *t);
    if (!t) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    const char *p = text;
    int count = 0;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < INT32_MIN || v > INT32_MAX || (*end && *end != ',')) {
            free(t);
            return orthros_error(ORTHROS_EINVAL, "bad token list near \"%.20s\" (comma-separated integers)", p);
        }
        t[count++] = (int32_t)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) {
            free(t);
            return orthros_error(ORTHROS_EINVAL, "bad token list: trailing comma");
        }
    }
    if (!count) {
        free(t);
        return orthros_error(ORTHROS_EINVAL, "the prompt is empty");
    }
    *out = t;
    *n = count;
    return 0;
}

int cli_fail(const char *cmd, int rc)
{
    fprintf(stderr, "orthros %s: error: %s\n", cmd, orthros_last_error());
    (void)rc;
    return 1;
}
