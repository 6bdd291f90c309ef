/* Option parsing shared by every command: strict (an unknown option, a bad value or one out of range is a usage
 * error). */
#include "options.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void orthros_cmd_init(orthros_cmd *c, const char *name, const char *summary, int max_pos)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->summary = summary;
    c->max_pos = max_pos < ORTHROS_CMD_MAX_POS ? max_pos : ORTHROS_CMD_MAX_POS;
    c->first = 2;
}

orthros_opt *orthros_cmd_add_num(orthros_cmd *c, const char *name, orthros_opt_kind kind, void *dst, double lo, double hi,
                                 const char *metavar, const char *help)
{
    /* A table that overflows is a programming error caught by the first run of the command's tests. */
    if (c->n_opts == ORTHROS_CMD_MAX_OPTS) return &c->opts[ORTHROS_CMD_MAX_OPTS - 1];
    orthros_opt *o = &c->opts[c->n_opts++];
    *o = (orthros_opt){name, kind, dst, metavar, help, lo, hi, 0};
    return o;
}

orthros_opt *orthros_cmd_add(orthros_cmd *c, const char *name, orthros_opt_kind kind, void *dst, const char *metavar,
                             const char *help)
{
    double hi = kind == ORTHROS_OPT_INT ? INT_MAX : HUGE_VAL, lo = kind == ORTHROS_OPT_INT ? INT_MIN : -HUGE_VAL;
    return orthros_cmd_add_num(c, name, kind, dst, lo, hi, metavar, help);
}

orthros_opt *orthros_cmd_opt(orthros_cmd *c, const char *name)
{
    for (int i = 0; i < c->n_opts; i++)
        if (!strcmp(c->opts[i].name, name)) return &c->opts[i];
    return NULL;
}

static void print_help(const orthros_cmd *c)
{
    printf("usage: orthros %s [options]%s\n\n%s\n\noptions:\n", c->name, c->max_pos ? " [FILE...]" : "", c->summary);
    for (int i = 0; i < c->n_opts; i++) {
        const orthros_opt *o = &c->opts[i];
        char left[64];
        /* a one-letter option shown as it is usually written (-o); the parser takes --o as well */
        snprintf(left, sizeof left, "%s%s%s%s", o->name[1] ? "--" : "-", o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        printf("  %-28s %s\n", left, o->help);
    }
    printf("  %-28s %s\n", "--help", "show this help and exit");
}

int orthros_cmd_usage(const orthros_cmd *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "orthros %s: error: ", c->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 2;
}

/* "4k" style suffixes are for axes (axes.c); plain options take plain numbers. */
static int set_value(const orthros_cmd *c, orthros_opt *o, const char *val)
{
    char *end;
    errno = 0;
    if (o->kind == ORTHROS_OPT_STR) {
        *(const char **)o->dst = val;
        return 0;
    }
    if (o->kind == ORTHROS_OPT_INT) {
        long long v = strtoll(val, &end, 10);
        if (errno || end == val || *end)
            return orthros_cmd_usage(c, "option --%s needs an integer, got \"%s\"", o->name, val);
        if ((double)v < o->lo || (double)v > o->hi)
            return orthros_cmd_usage(c, "option --%s must be in %.0f..%.0f, got %s", o->name, o->lo, o->hi, val);
        *(int *)o->dst = (int)v;
        return 0;
    }
    double v = strtod(val, &end);
    if (errno == ERANGE || end == val || *end || !isfinite(v))
        return orthros_cmd_usage(c, "option --%s needs a finite number, got \"%s\"", o->name, val);
    if (v < o->lo || v > o->hi)
        return orthros_cmd_usage(c, "option --%s must be in [%g, %g], got %s", o->name, o->lo, o->hi, val);
    *(double *)o->dst = v;
    return 0;
}

int orthros_cmd_parse(orthros_cmd *c, int argc, char **argv)
{
    c->n_pos = 0;
    for (int i = c->first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(c);
            return 0;
        }
        /* A one-letter option may be written with one dash: -o md. */
        int short_opt = a[0] == '-' && a[1] && a[1] != '-' && !a[2];
        if (!short_opt && (strncmp(a, "--", 2) || !strcmp(a, "--"))) {
            if (!strcmp(a, "--") && i + 1 < argc) a = argv[++i]; /* "--" then a file name that starts with "-" */
            if (c->n_pos >= c->max_pos) return orthros_cmd_usage(c, "unexpected argument \"%s\" (see --help)", a);
            c->pos[c->n_pos++] = a;
            continue;
        }
        const char *name = a + (short_opt ? 1 : 2), *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        orthros_opt *o = NULL;
        for (int j = 0; j < c->n_opts; j++)
            if (strlen(c->opts[j].name) == len && !strncmp(c->opts[j].name, name, len)) o = &c->opts[j];
        if (!o) return orthros_cmd_usage(c, "unknown option \"%.*s\" (see --help)", (int)(len + (short_opt ? 1 : 2)), a);
        o->set = 1;
        if (o->kind == ORTHROS_OPT_FLAG) {
            if (eq) return orthros_cmd_usage(c, "option --%s takes no value", o->name);
            *(int *)o->dst = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val) return orthros_cmd_usage(c, "option --%s needs a value", o->name);
        if (set_value(c, o, val)) return 2;
    }
    return -1;
}

int orthros_cmd_fail(const char *cmd, int rc)
{
    /* A code returned without a recorded message still says what kind of failure it was. */
    const char *msg = orthros_last_error();
    fprintf(stderr, "orthros %s: error: %s\n", cmd, msg && msg[0] ? msg : orthros_strerror(rc));
    return 1;
}

int orthros_cmd_fail_usage(const char *cmd, int rc)
{
    orthros_cmd_fail(cmd, rc);
    return 2;
}

void orthros_model_opts_default(orthros_model_opts *o)
{
    *o = (orthros_model_opts){.model = "preset:tiny", .arch = NULL, .device = "auto", .feature_map = NULL,
                              .feature_map_rope = NULL, .tail = -1, .window = -1, .hybrid_every = -1, .feature_dim = -1,
                              .chunk = 0, .seed = 1, .local_window = -1, .eps = -1.0, .tp = 1, .adapter = NULL};
}

void orthros_model_opts_add(orthros_cmd *c, orthros_model_opts *o)
{
    orthros_cmd_add(c, "model", ORTHROS_OPT_STR, &o->model, "DIR|FILE.gguf|preset:NAME",
                    "checkpoint directory, GGUF file, or preset:tiny|llama3.2-1b|llama3.1-8b|llama3.1-70b (default preset:tiny)");
    orthros_cmd_add(c, "arch", ORTHROS_OPT_STR, &o->arch, "ARCH",
                    "transformer|orthros|linear|swa|hybrid (default: the checkpoint's, else transformer)");
    orthros_cmd_add(c, "device", ORTHROS_OPT_STR, &o->device, "DEV", "cpu|cuda|auto (default auto: cuda when a GPU is present)");
    orthros_cmd_add_num(c, "tail", ORTHROS_OPT_INT, &o->tail, 1, INT_MAX, "T",
                        "orthros: prompt positions run with full attention (>= 1, default 1)");
    orthros_cmd_add(c, "feature-map", ORTHROS_OPT_STR, &o->feature_map, "FM", "linear attention feature map: elu1|relu|hedgehog");
    orthros_cmd_add_num(c, "feature-dim", ORTHROS_OPT_INT, &o->feature_dim, 1, ORTHROS_MAX_HEAD_DIM, "N",
                        "hedgehog feature dim per sign (F = 2N)");
    orthros_cmd_add(c, "feature-map-rope", ORTHROS_OPT_STR, &o->feature_map_rope, "before|after",
                    "linear attention: phi acts on q, k before RoPE (default) or on the rotated q~, k~");
    orthros_cmd_add_num(c, "local-window", ORTHROS_OPT_INT, &o->local_window, 0, 1 << 30, "W",
                        "linear attention: exact softmax over the last W positions, the linear term over older ones "
                        "(default 0: none; docs/converted-models.md)");
    orthros_cmd_add_num(c, "window", ORTHROS_OPT_INT, &o->window, 1, INT_MAX, "W", "swa window in tokens (default 4096)");
    orthros_cmd_add_num(c, "hybrid-every", ORTHROS_OPT_INT, &o->hybrid_every, 1, ORTHROS_MAX_LAYERS, "K",
                        "hybrid: every K-th layer is full (default 4)");
    orthros_cmd_add_num(c, "eps", ORTHROS_OPT_DOUBLE, &o->eps, 1e-30, 1.0, "E", "linear attention denominator epsilon (default 1e-6)");
    orthros_cmd_add_num(c, "chunk", ORTHROS_OPT_INT, &o->chunk, 0, INT_MAX, "N", "prefill chunk size (default 0: from free memory)");
    orthros_cmd_add_num(c, "seed", ORTHROS_OPT_INT, &o->seed, 0, INT_MAX, "S", "seed of preset weights (default 1)");
    orthros_cmd_add_num(c, "tp", ORTHROS_OPT_INT, &o->tp, 1, 64, "N",
                        "tensor-parallel ranks: threads on cpu, one process per GPU on cuda (default 1)");
}

void orthros_model_opts_add_adapter(orthros_cmd *c, orthros_model_opts *o)
{
    orthros_cmd_add(c, "adapter", ORTHROS_OPT_STR, &o->adapter, "FILE",
                    "adapter safetensors (feature maps, low-rank deltas) merged over --model at load; see "
                    "docs/converted-models.md");
}

void orthros_model_opts_sched(orthros_sched_config *s, const orthros_model_opts *o)
{
    s->chunk = o->chunk, s->tail = o->tail, s->window = o->window, s->hybrid_every = o->hybrid_every;
    s->feature_dim = o->feature_dim, s->eps = o->eps, s->local_window = o->local_window;
    snprintf(s->feature_map, sizeof s->feature_map, "%s", o->feature_map ? o->feature_map : "");
    snprintf(s->feature_map_rope, sizeof s->feature_map_rope, "%s", o->feature_map_rope ? o->feature_map_rope : "");
}

int orthros_model_opts_resolve(orthros_arch_opts *out, const orthros_model_opts *o)
{
    orthros_arch_opts_default(out);
    out->arch = o->arch;
    if (o->arch) {
        int known = 0;
        for (int i = 0; orthros_arch_names[i]; i++) known |= !strcmp(o->arch, orthros_arch_names[i]);
        if (!known)
            return orthros_error(ORTHROS_EINVAL, "unknown architecture \"%s\" (transformer, orthros, linear, swa, hybrid)",
                                 o->arch);
    }
    if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda") && strcmp(o->device, "auto"))
        return orthros_error(ORTHROS_EINVAL, "unknown device \"%s\" (cpu, cuda, auto)", o->device);
    if (o->feature_map) {
        orthros_fmap f;
        int rc = orthros_fmap_parse(o->feature_map, &f);
        if (rc) return rc;
        out->fmap = (int)f;
    }
    if (o->feature_map_rope) {
        orthros_fmap_rope r;
        int rc = orthros_fmap_rope_parse(o->feature_map_rope, &r);
        if (rc) return rc;
        out->fmap_rope = (int)r;
    }
    if (o->local_window != -1) out->local_window = o->local_window;
    /* The table's ranges already refused values below 1 (and with them the -1 that stands for "not given"). */
    if (o->tail != -1) out->tail = o->tail;
    if (o->window != -1) out->window = o->window;
    if (o->hybrid_every != -1) out->hybrid_every = o->hybrid_every;
    if (o->feature_dim != -1) out->feature_dim = o->feature_dim;
    if (o->eps != -1.0) out->eps = o->eps;
    out->tp = o->tp;
    out->adapter = o->adapter;
    return 0;
}

/* Token ids separated by any of `seps`; an empty list is an error. */
static int parse_token_text(int32_t **out, int *n, const char *text, const char *seps, const char *what)
{
    *out = NULL;
    *n = 0;
    size_t cap = 1;
    for (const char *p = text; *p; p++) cap += strchr(seps, *p) != NULL;
    int32_t *t = malloc(cap * sizeof *t);
    if (!t) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    const char *p = text;
    size_t count = 0;
    int rc = 0;
    while (*p) {
        while (*p && strchr(seps, *p) && *p != ',') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < INT32_MIN || v > INT32_MAX || (*end && !strchr(seps, *end))) {
            rc = orthros_error(ORTHROS_EINVAL, "%s: bad token list near \"%.20s\" (integers separated by %s)", what, p,
                               seps[1] ? "commas or white space" : "commas");
            goto fail;
        }
        if (count == INT_MAX) {
            rc = orthros_error(ORTHROS_ERANGE, "%s: more than %d tokens", what, INT_MAX);
            goto fail;
        }
        t[count++] = (int32_t)v;
        p = end;
        while (*p && *p != ',' && strchr(seps, *p)) p++;
        if (*p == ',') {
            p++;
            const char *q = p;
            while (*q && *q != ',' && strchr(seps, *q)) q++;
            if (!*q || *q == ',') {
                rc = orthros_error(ORTHROS_EINVAL, "%s: bad token list: an empty item after a comma", what);
                goto fail;
            }
        }
    }
    if (!count) {
        rc = orthros_error(ORTHROS_EINVAL, "%s: the prompt is empty", what);
        goto fail;
    }
    *out = t;
    *n = (int)count;
    return 0;
fail:
    free(t);
    return rc;
}

int orthros_opt_parse_tokens(int32_t **out, int *n, const char *text)
{
    return parse_token_text(out, n, text, ",", "--tokens");
}

int orthros_opt_parse_token_list(int32_t **out, int *n, const char *text, const char *what)
{
    return parse_token_text(out, n, text, ",", what);
}

int orthros_opt_read_tokens(int32_t **out, int *n, const char *path)
{
    char *text = NULL;
    /* 16 bytes a token at most for 2^27 tokens: far past any context a session can hold. */
    int rc = orthros_read_file(&text, NULL, path, (size_t)1 << 31, NULL);
    if (rc) return rc;
    rc = parse_token_text(out, n, text, ", \t\r\n", path);
    free(text);
    return rc;
}
