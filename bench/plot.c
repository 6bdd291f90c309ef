/* orthros plot: every figure of DESIGN section 5 from result files only. Each figure's data is extracted into
 * OUT/NAME.dat (gnuplot index blocks, one per series, the first line of each block its title), then gnuplot
 * runs plots/NAME.gp with a few -e variables (output, format, titles, tics, series styles). Inputs are
 * recognised by their content: bench files ("kind": "bench"), eval files ("kind": "eval"; cells of task
 * niah / mqar) and PyTorch SDPA anchor files (a "cases" list of {op, backend, head_dim, ctx, median_s}, as
 * kernels/bench/anchors.py writes). */
#define _GNU_SOURCE
#include "plot.h"
#include "cli.h"
#include "results.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


#define MAX_VARS 24
#define LABEL_MAX 128

extern char **environ;

const char *const orthros_plot_figure_names[ORTHROS_PLOT_FIGURES] = {
    "prefill_latency", "speedup", "decode_latency", "throughput", "niah", "mqar"};

/* ---- series ---- */

typedef struct {
    double x, y, lo, hi, w; /* w: extra column (throughput: TB/s; niah: n) */
} point;

typedef struct {
    char label[LABEL_MAX];
    const char *color;
    int dash, pt;
    double tag; /* mqar: the series' context length */
    point *p;
    size_t n, cap;
} series;

typedef struct {
    series *s;
    size_t n, cap;
} series_list;

static void series_list_free(series_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->s[i].p);
    free(l->s);
    memset(l, 0, sizeof *l);
}

/* The series titled label, created (with its style) when absent; NULL when out of memory. */
static series *series_get(series_list *l, const char *label, const char *color, int dash, int pt)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->s[i].label, label)) return &l->s[i];
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        series *s = realloc(l->s, cap * sizeof *s);
        if (!s) return NULL;
        l->s = s, l->cap = cap;
    }
    series *s = &l->s[l->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->label, sizeof s->label, "%s", label);
    for (char *c = s->label; *c; c++)
        if (*c == '"' || *c == '\\' || *c == '\n') *c = '\''; /* titles sit in double quotes in the data */
    s->color = color, s->dash = dash, s->pt = pt;
    return s;
}

/* Adds a point; a second point at the same x (the same cell in two files) is ignored: first file wins. */
static int series_add(series *s, point p)
{
    if (!s) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n; i++)
        if (s->p[i].x == p.x) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        point *q = realloc(s->p, cap * sizeof *q);
        if (!q) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        s->p = q, s->cap = cap;
    }
    s->p[s->n++] = p;
    return 0;
}

static int cmp_point(const void *a, const void *b)
{
    double x = ((const point *)a)->x, y = ((const point *)b)->x;
    return x < y ? -1 : x > y;
}

/* Writes the series as index blocks (columns x y [lo hi] [w]); ncols 2 to 5. */
static int write_blocks(const char *path, series_list *l, int ncols, const char *comment)
{
    FILE *f = fopen(path, "w");
    if (!f) return orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", path, strerror(errno));
    fprintf(f, "# %s\n# Written by orthros plot from result files; one index block per series.\n", comment);
    static const char *const hdr[] = {"x", "y", "lo", "hi", "w"};
    for (size_t i = 0; i < l->n; i++) {
        series *s = &l->s[i];
        qsort(s->p, s->n, sizeof *s->p, cmp_point);
        fprintf(f, "%s\"%s\"", i ? "\n\n" : "", s->label);
        for (int c = 1; c < ncols; c++) fprintf(f, " %s", hdr[c]);
        fputc('\n', f);
        for (size_t j = 0; j < s->n; j++) {
            const point *p = &s->p[j];
            double v[5] = {p->x, p->y, p->lo, p->hi, p->w};
            for (int c = 0; c < ncols; c++) fprintf(f, c ? " %.9g" : "%.9g", v[c]);
            fputc('\n', f);
        }
    }
    if (fclose(f)) return orthros_error(ORTHROS_EIO, "%s: write failed", path);
    return 0;
}

/* ---- styles ---- */

/* A colour per architecture; the inputs' second and third models get a lighter and a darker shade of it. */
static const char *const arch_names[5] = {"transformer", "orthros", "linear", "swa", "hybrid"};

static int arch_index(const char *arch)
{
    for (int i = 0; i < 5; i++)
        if (!strcmp(arch, arch_names[i])) return i;
    return -1;
}

static const char *arch_color(const char *arch, int model)
{
    static const char *const colors[3][5] = {{"#1f5fa8", "#d1451b", "#2e8b3a", "#8e44ad", "#8c6d1f"},
                                             {"#74a9e0", "#f0936b", "#7fcf8a", "#c39bd3", "#d4b46a"},
                                             {"#0b2e59", "#7a2306", "#14501d", "#4a1f5c", "#4d3b0d"}};
    int a = arch_index(arch);
    return a < 0 ? "#555555" : colors[model % 3][a];
}

/* Filled markers for the first model, open ones for the second, small ones after. */
static int arch_point(const char *arch, int model)
{
    static const int pts[3][5] = {{7, 5, 9, 11, 13}, {6, 4, 8, 10, 12}, {1, 2, 3, 1, 2}};
    int a = arch_index(arch);
    return a < 0 ? 1 : pts[model % 3][a];
}

static int phase_dash(const char *phase)
{
    return !strcmp(phase, "decode") ? 2 : !strcmp(phase, "e2e") ? 4 : 1;
}

/* ---- inputs ---- */

typedef enum { IN_BENCH, IN_EVAL, IN_ANCHORS, IN_KERNELS } input_kind;

typedef struct {
    const cJSON *root;
    const char *name;
    input_kind kind;
} input;

typedef struct {
    input *in;
    size_t n;
    int multi_model, multi_batch; /* labels name the model / batch only when the inputs hold several */
    char corner[256];
    const orthros_plot_opts *o;
} plot_ctx;

static const char *str_item(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_item(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static int classify(input_kind *k, const cJSON *root, const char *name)
{
    const char *kind = str_item(root, "kind");
    if (kind && !strcmp(kind, "bench")) *k = IN_BENCH;
    else if (kind && !strcmp(kind, "eval")) *k = IN_EVAL;
    else if (!kind && cJSON_IsArray(cJSON_GetObjectItem(root, "cases"))) *k = IN_ANCHORS;
    else if (!kind && cJSON_IsArray(cJSON_GetObjectItem(root, "results"))) *k = IN_KERNELS;
    else
        return orthros_error(ORTHROS_EFORMAT,
                             "%s is not a result file orthros plot knows (bench, eval, or SDPA anchors)", name);
    return 0;
}

static const char *model_of(const cJSON *root)
{
    const char *m = str_item(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "run"), "config"), "model");
    if (!m) return "unknown model";
    if (!strncmp(m, "preset:", 7)) return m + 7;
    const char *slash = strrchr(m, '/');
    return slash && slash[1] ? slash + 1 : m;
}

/* Appends s to a comma-separated list unless already there. */
static void add_unique(char *list, size_t n, const char *s)
{
    size_t len = strlen(s);
    for (const char *p = list; (p = strstr(p, s)); p++)
        if ((p == list || p[-1] == ' ') && (p[len] == ',' || p[len] == '\0')) return;
    size_t used = strlen(list);
    snprintf(list + used, n - used, "%s%s", used ? ", " : "", s);
}

/* "NVIDIA H200, commit 33ba9f3" from the headers of the inputs of the given kinds. */
static void provenance(char *out, size_t n, const plot_ctx *c, int want_bench)
{
    char devs[160] = "", commits[96] = "";
    for (size_t i = 0; i < c->n; i++) {
        const input *in = &c->in[i];
        if ((want_bench && in->kind != IN_BENCH) || (!want_bench && in->kind != IN_EVAL)) continue;
        const char *dev = str_item(cJSON_GetObjectItem(cJSON_GetObjectItem(in->root, "environment"), "device"), "name");
        const char *commit = str_item(cJSON_GetObjectItem(in->root, "tool"), "git_commit");
        int dirty = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(in->root, "tool"), "dirty"));
        char cm[32];
        snprintf(cm, sizeof cm, "%.7s%s", commit ? commit : "unknown", dirty ? "+dirty" : "");
        add_unique(devs, sizeof devs, dev ? dev : "unknown device");
        add_unique(commits, sizeof commits, cm);
    }
    snprintf(out, n, "%s | commit %s", devs, commits);
}

/* A model list for subtitles: "llama3.2-1b, llama3.1-8b (batch 1)". */
static void models_of(char *out, size_t n, const plot_ctx *c, const char *extra)
{
    char models[200] = "";
    for (size_t i = 0; i < c->n; i++)
        if (c->in[i].kind == IN_BENCH) add_unique(models, sizeof models, model_of(c->in[i].root));
    snprintf(out, n, "model %s%s%s", models, extra && extra[0] ? ", " : "", extra ? extra : "");
}

/* The rank of a bench file's model among the inputs' distinct models, in input order. */
static int model_index(const plot_ctx *c, const cJSON *root)
{
    const char *m = model_of(root);
    int k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->in[i].kind != IN_BENCH) continue;
        const char *mi = model_of(c->in[i].root);
        if (!strcmp(mi, m)) return k;
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= c->in[j].kind == IN_BENCH && !strcmp(model_of(c->in[j].root), mi);
        k += !seen;
    }
    return 0;
}

/* The label of a bench series: arch [phase] [(model)] [batch B]. */
static void bench_label(char *out, size_t n, const plot_ctx *c, const cJSON *root, const char *arch, const char *phase,
                        int batch)
{
    char b[32] = "", m[96] = "";
    if (c->multi_model) snprintf(m, sizeof m, " (%s)", model_of(root));
    if (c->multi_batch) snprintf(b, sizeof b, ", batch %d", batch);
    snprintf(out, n, "%s%s%s%s%s", arch, phase ? " " : "", phase ? phase : "", m, b);
}

/* ---- gnuplot ---- */

typedef struct {
    char *v[MAX_VARS];
    int n;
} vars;

static void vars_free(vars *v)
{
    for (int i = 0; i < v->n; i++) free(v->v[i]);
    v->n = 0;
}

/* name="value" for gnuplot -e, the value in double quotes with backslash escapes (a newline as \n). */
static int var_str(vars *v, const char *name, const char *value)
{
    if (v->n == MAX_VARS) return orthros_error(ORTHROS_EINVAL, "too many gnuplot variables");
    size_t len = strlen(name) + 2 * strlen(value) + 8;
    char *s = malloc(len), *p = s;
    if (!s) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    p += sprintf(p, "%s=\"", name);
    for (const char *q = value; *q; q++) {
        if (*q == '\n') {
            *p++ = '\\', *p++ = 'n';
            continue;
        }
        if (*q == '"' || *q == '\\') *p++ = '\\';
        *p++ = *q;
    }
    strcpy(p, "\"");
    v->v[v->n++] = s;
    return 0;
}

static int var_num(vars *v, const char *name, double x)
{
    if (v->n == MAX_VARS) return orthros_error(ORTHROS_EINVAL, "too many gnuplot variables");
    if (asprintf(&v->v[v->n], "%s=%.9g", name, x) < 0) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    v->n++;
    return 0;
}

/* colors, dashes and points: one word per series. */
static int var_styles(vars *v, const series_list *l)
{
    char colors[4096] = "", dashes[1024] = "", points[1024] = "";
    for (size_t i = 0; i < l->n; i++) {
        size_t a = strlen(colors), b = strlen(dashes), c = strlen(points);
        snprintf(colors + a, sizeof colors - a, "%s%s", i ? " " : "", l->s[i].color);
        snprintf(dashes + b, sizeof dashes - b, "%s%d", i ? " " : "", l->s[i].dash);
        snprintf(points + c, sizeof points - c, "%s%d", i ? " " : "", l->s[i].pt);
    }
    int rc;
    if ((rc = var_str(v, "colors", colors)) || (rc = var_str(v, "dashes", dashes)) || (rc = var_str(v, "points", points)) ||
        (rc = var_num(v, "n", (double)l->n)))
        return rc;
    return 0;
}

/* "1K", "256", "1.5K", "1M": K = 1024, as the bench's length lists. */
static void len_label(char *out, size_t n, double x)
{
    if (x >= 1048576 && fmod(x, 1048576) == 0) snprintf(out, n, "%gM", x / 1048576);
    else if (x >= 1024 && fmod(x, 1024) == 0) snprintf(out, n, "%gK", x / 1024);
    else snprintf(out, n, "%g", x);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* xt = '("256" 256, "1K" 1024, ...)' over the distinct x of every series (every other one past 12). With
 * index_positions, the tics sit at 0, 1, 2, ... (the image plots). */
static int var_tics(vars *v, const char *name, const double *xs, size_t n, int index_positions, const char *suffix)
{
    double *u = malloc((n ? n : 1) * sizeof *u);
    if (!u) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    memcpy(u, xs, n * sizeof *u);
    qsort(u, n, sizeof *u, cmp_double);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || u[m - 1] != u[i]) u[m++] = u[i];
    size_t step = m > 12 ? (m + 11) / 12 : 1;
    char buf[4096] = "(";
    for (size_t i = 0; i < m; i += step) {
        char lab[32];
        if (suffix) snprintf(lab, sizeof lab, "%g%s", u[i], suffix);
        else len_label(lab, sizeof lab, u[i]);
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "%s\"%s\" %.9g", i ? ", " : "", lab, index_positions ? (double)i : u[i]);
    }
    strcat(buf, ")");
    free(u);
    return var_str(v, name, buf);
}

static int var_tics_of(vars *v, const series_list *l)
{
    size_t total = 0;
    for (size_t i = 0; i < l->n; i++) total += l->s[i].n;
    double *xs = malloc((total ? total : 1) * sizeof *xs);
    if (!xs) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->s[i].n; j++) xs[k++] = l->s[i].p[j].x;
    int rc = var_tics(v, "xt", xs, k, 0, NULL);
    free(xs);
    return rc;
}

static char *path_join(const char *dir, const char *name, const char *ext)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s%s", dir, name, ext) < 0) return NULL;
    return p;
}

/* Runs gnuplot -e VAR... SCRIPT with the common variables (plotdir, fmt, out, corner, dat) added. */
static int run_gnuplot(const plot_ctx *c, const char *fig, vars *v)
{
    const orthros_plot_opts *o = c->o;
    char *script = path_join(o->scripts_dir, fig, ".gp"), *out = NULL, *dat = NULL;
    char *argv[2 * MAX_VARS + 3];
    int rc = 0, ac = 0, st = 0;
    char ext[8];
    snprintf(ext, sizeof ext, ".%s", o->format);
    out = path_join(o->out_dir, fig, ext);
    dat = path_join(o->out_dir, fig, ".dat");
    if (!script || !out || !dat) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto done;
    }
    struct stat sb;
    if (stat(script, &sb) != 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: the gnuplot script is missing (--scripts names the plots/ folder)", script);
        goto done;
    }
    if ((rc = var_str(v, "plotdir", o->scripts_dir)) || (rc = var_str(v, "fmt", o->format)) ||
        (rc = var_str(v, "out", out)) || (rc = var_str(v, "corner", c->corner)) || (rc = var_str(v, "dat", dat)))
        goto done;
    argv[ac++] = (char *)o->gnuplot;
    for (int i = 0; i < v->n; i++) argv[ac++] = "-e", argv[ac++] = v->v[i];
    argv[ac++] = script;
    argv[ac] = NULL;
    pid_t pid;
    fflush(NULL);
    int err = posix_spawnp(&pid, o->gnuplot, NULL, NULL, argv, environ);
    if (err) {
        rc = orthros_error(ORTHROS_EUNSUPPORTED, "cannot run %s: %s (install gnuplot; on Debian: apt-get install gnuplot-nox)",
                           o->gnuplot, strerror(err));
        goto done;
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            rc = orthros_error(ORTHROS_EIO, "waiting for gnuplot: %s", strerror(errno));
            goto done;
        }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rc = orthros_error(ORTHROS_EINVAL, "gnuplot failed on %s (%s %d; its messages are above)", script,
                           WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        goto done;
    }
    if (stat(out, &sb) != 0 || sb.st_size == 0) {
        rc = orthros_error(ORTHROS_EIO, "gnuplot wrote no %s", out);
        goto done;
    }
    fprintf(stderr, "plot: %s\n", out);
done:
    free(script);
    free(out);
    free(dat);
    return rc;
}

/* ---- figures ---- */

/* Each figure function fills *why and returns 0 without plotting when its data is absent. */
typedef int (*figure_fn)(const plot_ctx *c, const char *fig, const char **why);

static const cJSON *measured(const cJSON *m, const char *phase)
{
    const char *ph = str_item(m, "phase");
    if (!ph || (phase && strcmp(ph, phase)) || !cJSON_GetObjectItem(m, "samples")) return NULL;
    return cJSON_GetObjectItem(m, "stats");
}

/* Median and its interval of a measurement, in seconds; the interval falls back to the median. */
static point stat_point(const cJSON *m, const cJSON *st)
{
    point p = {num_item(m, "ctx", NAN), num_item(st, "median", NAN), 0, 0, 0};
    p.lo = num_item(st, "ci95_lo", p.y);
    p.hi = num_item(st, "ci95_hi", p.y);
    return p;
}

/* The prefill cases of an anchor file, or of a bench file's "anchors" (an object with "cases", or a list). */
static const cJSON *anchor_cases(const input *in)
{
    if (in->kind == IN_ANCHORS) return cJSON_GetObjectItem(in->root, "cases");
    const cJSON *a = cJSON_GetObjectItem(in->root, "anchors");
    return cJSON_IsArray(a) ? a : cJSON_GetObjectItem(a, "cases");
}

/* Writes a figure's series to DIR/FIG.dat (cols columns, a header line) and draws it with plots/FIG.gp under the
 * given subtitle. */
static int draw_series(const plot_ctx *c, const char *fig, series_list *l, vars *v, int cols, const char *header,
                       const char *sub)
{
    char *dat = path_join(c->o->out_dir, fig, ".dat");
    int rc = dat ? write_blocks(dat, l, cols, header) : ORTHROS_ENOMEM;
    free(dat);
    if (!rc && !(rc = var_styles(v, l)) && !(rc = var_tics_of(v, l)) && !(rc = var_str(v, "subtitle", sub)))
        rc = run_gnuplot(c, fig, v);
    return rc;
}

static int fig_prefill(const plot_ctx *c, const char *fig, const char **why)
{
    series_list l = {0};
    vars v = {0};
    int rc = 0, have_bench = 0, have_anchor = 0;
    char lab[LABEL_MAX], sub[512], models[300];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != IN_BENCH) continue;
        int mi = model_index(c, in->root);
        const cJSON *m, *st;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(in->root, "measurements"))
        {
            if (!(st = measured(m, "prefill"))) continue;
            const char *arch = str_item(m, "arch");
            bench_label(lab, sizeof lab, c, in->root, arch, NULL, (int)num_item(m, "batch", 1));
            if ((rc = series_add(series_get(&l, lab, arch_color(arch, mi), 1, arch_point(arch, mi)), stat_point(m, st)))) break;
            have_bench = 1;
        }
    }
    /* Anchors: attention op only (one layer), so they are drawn dashed and named as such. */
    static const char *const anchor_colors[] = {"#444444", "#999999", "#6b6b6b", "#b5b5b5"};
    int na = 0;
    for (size_t i = 0; i < c->n && !rc && have_bench; i++) {
        const cJSON *cs, *a = anchor_cases(&c->in[i]);
        cJSON_ArrayForEach(cs, a)
        {
            const char *op = str_item(cs, "op"), *be = str_item(cs, "backend");
            if (!op || strcmp(op, "prefill") || !be || num_item(cs, "batch", 1) != 1) continue;
            snprintf(lab, sizeof lab, "SDPA %s attention op, d=%g (anchors)", be, num_item(cs, "head_dim", 0));
            series *s = series_get(&l, lab, NULL, 2, 6 + (int)(strcmp(be, "flash") != 0) * 2);
            if (s && !s->color) s->color = anchor_colors[na++ % 4];
            double med = num_item(cs, "median_s", NAN);
            if ((rc = series_add(s, (point){num_item(cs, "ctx", NAN), med, med, med, 0}))) break;
            have_anchor = 1;
        }
    }
    if (!rc && !have_bench) {
        *why = "no prefill measurements in the bench files";
        goto done;
    }
    models_of(models, sizeof models, c, NULL);
    snprintf(sub, sizeof sub, "%s\nmedian with bootstrap 95%% interval%s", models,
             have_anchor ? "; dashed: PyTorch SDPA attention op alone (one layer)" : "");
    if (!rc) rc = draw_series(c, fig, &l, &v, 4, "prefill: ctx median_s ci95_lo_s ci95_hi_s", sub);
done:
    vars_free(&v);
    series_list_free(&l);
    return rc;
}

static int fig_speedup(const plot_ctx *c, const char *fig, const char **why)
{
    series_list l = {0};
    vars v = {0};
    int rc = 0;
    char lab[LABEL_MAX], sub[512], models[300];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != IN_BENCH) continue;
        int mi = model_index(c, in->root);
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(in->root, "speedups"), "cells"))
        {
            const char *arch = str_item(e, "arch"), *phase = str_item(e, "phase");
            if (!arch || !phase) continue;
            bench_label(lab, sizeof lab, c, in->root, arch, phase, (int)num_item(e, "batch", 1));
            point p = {num_item(e, "ctx", NAN), num_item(e, "speedup", NAN), 0, 0, 0};
            p.lo = num_item(e, "ci95_lo", p.y);
            p.hi = num_item(e, "ci95_hi", p.y);
            if ((rc = series_add(series_get(&l, lab, arch_color(arch, mi), phase_dash(phase), arch_point(arch, mi)), p))) break;
        }
    }
    if (!rc && !l.n) {
        *why = "no speedups (the bench files need transformer and another architecture)";
        goto done;
    }
    models_of(models, sizeof models, c, NULL);
    snprintf(sub, sizeof sub, "%s\nmedian(transformer) / median(arch); band: bootstrap 95%% interval of the ratio", models);
    if (!rc) rc = draw_series(c, fig, &l, &v, 4, "speedup over transformer: ctx speedup ci95_lo ci95_hi", sub);
done:
    vars_free(&v);
    series_list_free(&l);
    return rc;
}

static int fig_decode(const plot_ctx *c, const char *fig, const char **why)
{
    series_list l = {0};
    vars v = {0};
    int rc = 0, max_batch = 1;
    char lab[LABEL_MAX], sub[512], models[300];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != IN_BENCH) continue;
        int mi = model_index(c, in->root);
        const cJSON *m, *st;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(in->root, "measurements"))
        {
            if (!(st = measured(m, "decode"))) continue;
            const char *arch = str_item(m, "arch");
            int batch = (int)num_item(m, "batch", 1);
            if (batch > max_batch) max_batch = batch;
            bench_label(lab, sizeof lab, c, in->root, arch, NULL, batch);
            if ((rc = series_add(series_get(&l, lab, arch_color(arch, mi), 1, arch_point(arch, mi)), stat_point(m, st)))) break;
        }
    }
    if (!rc && !l.n) {
        *why = "no decode measurements in the bench files";
        goto done;
    }
    models_of(models, sizeof models, c, NULL);
    snprintf(sub, sizeof sub, "%s\none decode step at the given cache depth; median with bootstrap 95%% interval", models);
    if (!rc)
        rc = var_str(&v, "ylab", max_batch > 1 ? "time per decode step of the whole batch (ms)" : "time per generated token (ms)");
    if (!rc) rc = draw_series(c, fig, &l, &v, 4, "decode: ctx median_s ci95_lo_s ci95_hi_s (one step)", sub);
done:
    vars_free(&v);
    series_list_free(&l);
    return rc;
}

static int fig_throughput(const plot_ctx *c, const char *fig, const char **why)
{
    series_list l = {0}, ceil = {0};
    vars v = {0};
    int rc = 0;
    char lab[LABEL_MAX], sub[512], models[300];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != IN_BENCH) continue;
        int mi = model_index(c, in->root);
        const cJSON *m;
        double lo = INFINITY, hi = -INFINITY;
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(in->root, "measurements"))
        {
            const cJSON *thr = cJSON_GetObjectItem(m, "throughput");
            const char *arch = str_item(m, "arch"), *phase = str_item(m, "phase");
            if (!measured(m, NULL) || !thr || !arch) continue;
            bench_label(lab, sizeof lab, c, in->root, arch, phase, (int)num_item(m, "batch", 1));
            point p = {num_item(m, "ctx", NAN), num_item(thr, "tflops", NAN), num_item(thr, "tbps", NAN), 0, 0};
            if ((rc = series_add(series_get(&l, lab, arch_color(arch, mi), phase_dash(phase), arch_point(arch, mi)), p))) break;
            if (p.x < lo) lo = p.x;
            if (p.x > hi) hi = p.x;
        }
        const cJSON *cl = cJSON_GetObjectItem(in->root, "ceilings");
        double g = num_item(cl, "gemm_tflops", NAN), cp = num_item(cl, "copy_tbps", NAN);
        if (rc || lo > hi || isnan(g) || isnan(cp)) continue;
        snprintf(lab, sizeof lab, "ceiling: GEMM %.3g TFLOP/s, copy %.3g TB/s%s%s%s", g, cp, c->multi_model ? " (" : "",
                 c->multi_model ? model_of(in->root) : "", c->multi_model ? ")" : "");
        series *s = series_get(&ceil, lab, "#222222", 1, 0);
        if ((rc = series_add(s, (point){lo, g, cp, 0, 0})) || (rc = series_add(s, (point){hi, g, cp, 0, 0}))) break;
    }
    if (!rc && !l.n) {
        *why = "no measurements with throughput in the bench files";
        goto done;
    }
    models_of(models, sizeof models, c, NULL);
    snprintf(sub, sizeof sub, "%s\nceilings (black) measured in the same run: an n^3 GEMM and a device copy", models);
    char *dat = path_join(c->o->out_dir, fig, ".dat"), *cdat = path_join(c->o->out_dir, fig, "-ceilings.dat");
    if (!rc) rc = dat ? write_blocks(dat, &l, 3, "throughput: ctx tflops tbps") : ORTHROS_ENOMEM;
    if (!rc) rc = cdat ? write_blocks(cdat, &ceil, 3, "ceilings: ctx gemm_tflops copy_tbps") : ORTHROS_ENOMEM;
    if (!rc && !(rc = var_styles(&v, &l)) && !(rc = var_tics_of(&v, &l)) && !(rc = var_str(&v, "subtitle", sub)) &&
        !(rc = var_str(&v, "ceil", cdat)) && !(rc = var_num(&v, "nc", (double)ceil.n)))
        rc = run_gnuplot(c, fig, &v);
    free(dat);
    free(cdat);
done:
    vars_free(&v);
    series_list_free(&l);
    series_list_free(&ceil);
    return rc;
}

/* ---- eval figures (the planned eval file: cells of {task, arch, ctx, depth | pairs, n, accuracy, ci95_lo,
 * ci95_hi}) ---- */

static int fig_niah(const plot_ctx *c, const char *fig, const char **why)
{
    /* Cells pooled per (arch, ctx, depth): accuracy = sum(k) / sum(n) with k = accuracy * n. */
    typedef struct {
        char arch[32];
        double ctx, depth, k, n;
    } acc;
    acc *a = NULL;
    size_t na = 0, cap = 0;
    double *xs = NULL, *ys = NULL;
    char archs[256] = "", sub[512];
    series_list l = {0};
    vars v = {0};
    int rc = 0, multi_variant = 0;
    const char *variant0 = NULL;
    /* NIAH variants (single needle, multi-key, ...): a panel per (arch, variant) when the inputs hold several. */
    for (size_t i = 0; i < c->n; i++) {
        const cJSON *e;
        if (c->in[i].kind != IN_EVAL) continue;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c->in[i].root, "cells"))
        {
            const char *task = str_item(e, "task"), *var = str_item(e, "variant");
            if (!task || strcmp(task, "niah") || !var) continue;
            if (variant0 && strcmp(variant0, var)) multi_variant = 1;
            variant0 = var;
        }
    }
    for (size_t i = 0; i < c->n && !rc; i++) {
        if (c->in[i].kind != IN_EVAL) continue;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c->in[i].root, "cells"))
        {
            const char *task = str_item(e, "task"), *arch = str_item(e, "arch"), *var = str_item(e, "variant");
            char panel[32];
            if (arch && multi_variant && var) {
                snprintf(panel, sizeof panel, "%.15s/%.15s", arch, var);
                for (char *q = panel; *q; q++)
                    if (*q == ' ') *q = '_'; /* panel titles are gnuplot words */
                arch = panel;
            }
            double ctx = num_item(e, "ctx", NAN), depth = num_item(e, "depth", NAN), n = num_item(e, "n", NAN),
                   accv = num_item(e, "accuracy", NAN);
            if (!task || strcmp(task, "niah") || !arch || isnan(ctx) || isnan(depth) || !(n > 0) || isnan(accv)) continue;
            size_t j = 0;
            while (j < na && (strcmp(a[j].arch, arch) || a[j].ctx != ctx || a[j].depth != depth)) j++;
            if (j == na) {
                if (na == cap) {
                    cap = cap ? 2 * cap : 64;
                    acc *b = realloc(a, cap * sizeof *b);
                    if (!b) {
                        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
                        break;
                    }
                    a = b;
                }
                a[na] = (acc){"", ctx, depth, 0, 0};
                snprintf(a[na].arch, sizeof a[na].arch, "%s", arch);
                na++;
            }
            a[j].k += accv * n, a[j].n += n;
        }
    }
    if (!rc && !na) {
        *why = "no NIAH cells (eval files with task \"niah\")";
        goto done;
    }
    xs = malloc((na ? na : 1) * sizeof *xs), ys = malloc((na ? na : 1) * sizeof *ys);
    if (!rc && (!xs || !ys)) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t j = 0; j < na && !rc; j++) xs[j] = a[j].ctx, ys[j] = a[j].depth;
    /* Distinct lengths and depths, sorted: the grid's columns and rows. */
    size_t nx = 0, ny = 0;
    if (!rc) {
        qsort(xs, na, sizeof *xs, cmp_double);
        qsort(ys, na, sizeof *ys, cmp_double);
        for (size_t j = 0; j < na; j++) {
            if (!nx || xs[nx - 1] != xs[j]) xs[nx++] = xs[j];
            if (!ny || ys[ny - 1] != ys[j]) ys[ny++] = ys[j];
        }
    }
    /* One block per architecture, every grid cell present (NaN where not run), row by row. */
    for (size_t j = 0; j < na && !rc; j++) {
        series *s = series_get(&l, a[j].arch, "", 1, 0);
        if (!s) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        if (s->n) continue;
        add_unique(archs, sizeof archs, a[j].arch);
        for (size_t iy = 0; iy < ny && !rc; iy++)
            for (size_t ix = 0; ix < nx && !rc; ix++) {
                double val = NAN, cnt = 0;
                for (size_t q = 0; q < na; q++)
                    if (!strcmp(a[q].arch, a[j].arch) && a[q].ctx == xs[ix] && a[q].depth == ys[iy])
                        val = a[q].k / a[q].n, cnt = a[q].n;
                /* x sorts the block; ix + iy * nx keeps the row-major order gnuplot's image wants. */
                rc = series_add(s, (point){(double)(iy * nx + ix), (double)ix, (double)iy, val, cnt});
            }
    }
    if (rc) goto done;
    /* The blocks hold (ix, iy, accuracy, n): rewrite the points' columns into that order. */
    for (size_t j = 0; j < l.n; j++)
        for (size_t q = 0; q < l.s[j].n; q++) {
            point *p = &l.s[j].p[q];
            *p = (point){p->y, p->lo, p->hi, p->w, 0};
        }
    char *dat = path_join(c->o->out_dir, fig, ".dat");
    FILE *f = dat ? fopen(dat, "w") : NULL;
    if (!f) {
        rc = dat ? orthros_error(ORTHROS_EIO, "%s: cannot open for writing", dat) : ORTHROS_ENOMEM;
        free(dat);
        goto done;
    }
    fprintf(f, "# niah: ix iy accuracy n (ix, iy index the lengths and depths); one block per architecture\n");
    for (size_t j = 0; j < l.n; j++) {
        fprintf(f, "%s\"%s\" iy accuracy n\n", j ? "\n\n" : "", l.s[j].label);
        for (size_t q = 0; q < l.s[j].n; q++) {
            const point *p = &l.s[j].p[q];
            if (isnan(p->lo)) fprintf(f, "%g %g NaN 0\n", p->x, p->y);
            else fprintf(f, "%g %g %.6g %g\n", p->x, p->y, p->lo, p->hi);
        }
    }
    int bad = fclose(f) != 0;
    free(dat);
    if (bad) {
        rc = orthros_error(ORTHROS_EIO, "niah.dat: write failed");
        goto done;
    }
    int cols = l.n <= 3 ? (int)l.n : (int)((l.n + 1) / 2), rows = l.n <= 3 ? 1 : 2;
    snprintf(sub, sizeof sub, "colour and number: accuracy of each cell");
    for (char *p = archs; *p; p++)
        if (*p == ',') *p = ' ';
    if ((rc = var_tics(&v, "xt", xs, nx, 1, NULL)) || (rc = var_tics(&v, "yt", ys, ny, 1, "%%")) /* gnuplot reads tic labels as formats */ ||
        (rc = var_num(&v, "n", (double)l.n)) || (rc = var_str(&v, "archs", archs)) || (rc = var_num(&v, "rows", rows)) ||
        (rc = var_num(&v, "cols", cols)) || (rc = var_str(&v, "subtitle", sub)) || (rc = var_num(&v, "w", 480.0 * cols + 100)) ||
        (rc = var_num(&v, "h", 420.0 * rows + 130)))
        goto done;
    rc = run_gnuplot(c, fig, &v);
done:
    free(a);
    free(xs);
    free(ys);
    vars_free(&v);
    series_list_free(&l);
    return rc;
}

static int fig_mqar(const plot_ctx *c, const char *fig, const char **why)
{
    series_list l = {0};
    vars v = {0};
    int rc = 0, multi_ctx = 0;
    double ctx0 = NAN;
    char lab[LABEL_MAX], sub[512];
    for (size_t i = 0; i < c->n; i++) {
        const cJSON *e;
        if (c->in[i].kind != IN_EVAL) continue;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c->in[i].root, "cells"))
        {
            const char *task = str_item(e, "task");
            double ctx = num_item(e, "ctx", NAN);
            if (!task || strcmp(task, "mqar")) continue;
            if (isnan(ctx0)) ctx0 = ctx;
            else if (ctx != ctx0) multi_ctx = 1;
        }
    }
    for (size_t i = 0; i < c->n && !rc; i++) {
        const cJSON *e;
        if (c->in[i].kind != IN_EVAL) continue;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c->in[i].root, "cells"))
        {
            const char *task = str_item(e, "task"), *arch = str_item(e, "arch");
            if (!task || strcmp(task, "mqar") || !arch) continue;
            char cl[32];
            len_label(cl, sizeof cl, num_item(e, "ctx", 0));
            if (multi_ctx) snprintf(lab, sizeof lab, "%s, context %s", arch, cl);
            else snprintf(lab, sizeof lab, "%s", arch);
            point p = {num_item(e, "pairs", NAN), num_item(e, "accuracy", NAN), 0, 0, 0};
            p.lo = num_item(e, "ci95_lo", p.y);
            p.hi = num_item(e, "ci95_hi", p.y);
            if (isnan(p.x) || isnan(p.y)) continue;
            series *s = series_get(&l, lab, arch_color(arch, 0), 1, arch_point(arch, 0));
            if (s) s->tag = num_item(e, "ctx", 0);
            if ((rc = series_add(s, p))) break;
        }
    }
    if (!rc && !l.n) {
        *why = "no MQAR cells (eval files with task \"mqar\")";
        goto done;
    }
    /* Several lengths of one architecture: same colour, a dash pattern per length (by rank). */
    for (size_t i = 0; i < l.n; i++) {
        int rank = 0;
        for (size_t j = 0; j < l.n; j++) {
            int lower = 1;
            for (size_t q = 0; q < j; q++) lower &= l.s[q].tag != l.s[j].tag; /* count each length once */
            rank += lower && l.s[j].tag < l.s[i].tag;
        }
        l.s[i].dash = 1 + rank % 5;
    }
    if (multi_ctx) snprintf(sub, sizeof sub, "one line per architecture and context length");
    else {
        char cl[32];
        len_label(cl, sizeof cl, ctx0);
        snprintf(sub, sizeof sub, "context %s tokens; one line per architecture", cl);
    }
    char *dat = path_join(c->o->out_dir, fig, ".dat");
    if (!rc) rc = dat ? write_blocks(dat, &l, 4, "mqar: pairs accuracy ci95_lo ci95_hi (Wilson)") : ORTHROS_ENOMEM;
    free(dat);
    if (!rc && !(rc = var_styles(&v, &l)) && !(rc = var_str(&v, "subtitle", sub))) {
        size_t total = 0, k = 0;
        for (size_t i = 0; i < l.n; i++) total += l.s[i].n;
        double *xs = malloc((total ? total : 1) * sizeof *xs);
        if (!xs) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        for (size_t i = 0; i < l.n && xs; i++)
            for (size_t j = 0; j < l.s[i].n; j++) xs[k++] = l.s[i].p[j].x;
        if (!rc) rc = var_tics(&v, "xt", xs, k, 0, "");
        free(xs);
        if (!rc) rc = run_gnuplot(c, fig, &v);
    }
done:
    vars_free(&v);
    series_list_free(&l);
    return rc;
}

static const figure_fn figure_fns[ORTHROS_PLOT_FIGURES] = {fig_prefill,    fig_speedup, fig_decode,
                                                           fig_throughput, fig_niah,    fig_mqar};

int orthros_plot_run(int *made, const cJSON *const *files, const char *const *names, size_t n,
                     const orthros_plot_opts *o)
{
    plot_ctx c = {0};
    int rc = 0;
    *made = 0;
    if (strcmp(o->format, "png") && strcmp(o->format, "svg"))
        return orthros_error(ORTHROS_EINVAL, "unknown format \"%s\" (png, svg)", o->format);
    c.in = calloc(n ? n : 1, sizeof *c.in);
    c.n = n, c.o = o;
    if (!c.in) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    const char *model0 = NULL;
    int batch0 = -1;
    for (size_t i = 0; i < n; i++) {
        c.in[i] = (input){files[i], names[i], IN_BENCH};
        if ((rc = classify(&c.in[i].kind, files[i], names[i]))) goto done;
        if (c.in[i].kind == IN_KERNELS)
            fprintf(stderr, "plot: %s is a kernel benchmark file; no figure uses it\n", names[i]);
        if (c.in[i].kind != IN_BENCH) continue;
        const char *m = model_of(files[i]);
        if (model0 && strcmp(model0, m)) c.multi_model = 1;
        model0 = m;
        const cJSON *meas;
        cJSON_ArrayForEach(meas, cJSON_GetObjectItem(files[i], "measurements"))
        {
            int b = (int)num_item(meas, "batch", 1);
            if (batch0 >= 0 && b != batch0) c.multi_batch = 1;
            batch0 = b;
        }
    }
    provenance(c.corner, sizeof c.corner, &c, 1);
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot create: %s", o->out_dir, strerror(errno));
        goto done;
    }
    for (int f = 0; f < ORTHROS_PLOT_FIGURES; f++) {
        const char *why = NULL;
        /* The eval figures carry the eval files' provenance. */
        if (f >= 4) provenance(c.corner, sizeof c.corner, &c, 0);
        if ((rc = figure_fns[f](&c, orthros_plot_figure_names[f], &why))) {
            orthros_error_prefix(rc, orthros_plot_figure_names[f]);
            goto done;
        }
        if (why) fprintf(stderr, "plot: %s skipped: %s\n", orthros_plot_figure_names[f], why);
        else (*made)++;
    }
done:
    free(c.in);
    return rc;
}

/* The plots/ folder of the source tree the binary was built in (BUILD/orthros -> BUILD/../plots), else
 * ./plots. */
static const char *default_scripts_dir(char *buf, size_t n)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, n, "%s/../plots", exe);
            char probe[4300];
            snprintf(probe, sizeof probe, "%s/common.gp", buf);
            struct stat sb;
            if (stat(probe, &sb) == 0) return buf;
        }
    }
    return "plots";
}

int orthros_cmd_plot(int argc, char **argv)
{
    const char *cmd = "plot";
    orthros_plot_opts o = {.out_dir = NULL, .format = "png", .scripts_dir = NULL, .gnuplot = NULL};
    cli_opt t[4];
    int n = 0;
    t[n++] = (cli_opt){"out", CLI_STR, &o.out_dir, "DIR", "output directory, created when absent (required)"};
    t[n++] = (cli_opt){"format", CLI_STR, &o.format, "png|svg", "image format (default png)"};
    t[n++] = (cli_opt){"scripts", CLI_STR, &o.scripts_dir, "DIR",
                       "the folder of gnuplot scripts (default $ORTHROS_PLOTS_DIR, else the source tree's plots/)"};
    t[n++] = (cli_opt){"gnuplot", CLI_STR, &o.gnuplot, "PROG", "the gnuplot program (default $ORTHROS_GNUPLOT, else gnuplot)"};
    const char *pos[64];
    int npos, pr = cli_parse(argc, argv, 2, t, n, cmd,
                             "orthros plot RESULT.json... --out DIR: figures from result files only, through gnuplot.\n"
                             "Inputs are recognised by content: bench files (orthros bench), eval files (orthros eval: NIAH\n"
                             "and MQAR cells) and PyTorch SDPA anchor files (kernels/bench/anchors.py). Figures, each as\n"
                             "DIR/NAME.png or .svg with its data in DIR/NAME.dat:\n"
                             "  prefill_latency  prefill time vs context length, log-log, per architecture (+ anchors)\n"
                             "  speedup          speedup over transformer vs length, 95% band, the 21.9x line\n"
                             "  decode_latency   decode time per token vs cache length\n"
                             "  throughput       achieved TFLOP/s and TB/s against the run's measured ceilings\n"
                             "  niah             NIAH accuracy heatmap, depth x length, one panel per architecture\n"
                             "  mqar             MQAR accuracy vs number of pairs\n"
                             "A figure whose data is absent from the inputs is skipped with a line on stderr.",
                             pos, 64, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    if (!npos || !o.out_dir) {
        fprintf(stderr, "orthros %s: error: need result files and --out DIR (see --help)\n", cmd);
        return 2;
    }
    if (strcmp(o.format, "png") && strcmp(o.format, "svg")) {
        fprintf(stderr, "orthros %s: error: --format must be png or svg (got \"%s\")\n", cmd, o.format);
        return 2;
    }
    if (!o.scripts_dir) o.scripts_dir = getenv("ORTHROS_PLOTS_DIR");
    char found[4200];
    if (!o.scripts_dir) o.scripts_dir = default_scripts_dir(found, sizeof found);
    if (!o.gnuplot) o.gnuplot = getenv("ORTHROS_GNUPLOT");
    if (!o.gnuplot) o.gnuplot = "gnuplot";
    cJSON *roots[64] = {0};
    int rc = 0, made = 0;
    for (int i = 0; i < npos && !rc; i++) {
        rc = orthros_result_load(&roots[i], pos[i]);
        if (!rc && !roots[i]) rc = orthros_error(ORTHROS_EIO, "%s: no such file", pos[i]);
    }
    if (!rc) rc = orthros_plot_run(&made, (const cJSON *const *)roots, pos, (size_t)npos, &o);
    for (int i = 0; i < npos; i++) cJSON_Delete(roots[i]);
    if (rc) return cli_fail(cmd, rc);
    fprintf(stderr, "plot: %d figure%s in %s\n", made, made == 1 ? "" : "s", o.out_dir);
    return made ? 0 : 1;
}
