/* orthros plot: every figure of DESIGN section 5 from result files only.
 *
 * Safety: nothing read from a result file or an argument reaches a gnuplot command line or a shell. Each figure's
 * numbers and every text that comes from data (series titles, panel titles, the caption naming the model, device
 * and commit) go to data files that gnuplot reads as data (OUT/NAME.dat, OUT/NAME.txt: titles as `columnheader`,
 * texts drawn `with labels`), which gnuplot never evaluates. The script is the fixed plots/common.gp + NAME.gp +
 * overlay.gp, fed on gnuplot's stdin, preceded by variable settings the driver makes from numbers and fixed words
 * only (checked by safe_value()); gnuplot runs with OUT as its working folder, so file names in the script are
 * the fixed relative names NAME.dat, NAME.txt and NAME.png. Its messages go to a file there, read back: warnings
 * are counted (printed with --verbose), and an error carries them.
 *
 * Runs are never mixed (plot.h): each figure collects its points with the run key of the file and architecture
 * they come from (run_key: a text per facet that makes runs differ), then names each series by the facets that
 * differ among the figure's keys and writes the facets they share into the caption. */
#define _GNU_SOURCE
#include "plot.h"
#include "options.h"
#include "result_any.h"
#include "result_bench.h"
#include "result_eval.h"
#include "scripts.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LABEL_MAX 160
#define MAX_INPUTS 64
#define MAX_SERIES 24   /* a line figure of more series is refused, naming what differs */
#define MAX_PANELS 64   /* the same for a heatmap's panels */
#define MAX_ROWS 16     /* heatmap rows (variants) */
#define MAX_COLS 7      /* heatmap panels a row before it wraps */

extern char **environ;

const char *const orthros_plot_figure_names[ORTHROS_PLOT_FIGURES] = {
    "prefill_latency", "speedup", "decode_latency", "throughput", "attention_op", "niah", "mqar",
    "ruler_niah",      "ruler_vt", "ruler_cwe",      "ppl",        "recall",     "decode_step"};

/* ---- series ---- */

typedef struct {
    double x, y, lo, hi, w; /* w: extra column (throughput: TB/s) */
} point;

typedef struct {
    char label[LABEL_MAX];
    const char *color;
    int dash, pt;
    double lw, ps; /* line width and point size; 0: set by series order (pre_styles) */
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

/* A text from a result file made fit for a quoted gnuplot data field: no double quote (it would end the field),
 * no backslash (gnuplot reads escapes there), no '#' (it would start a comment), no control character. */
static void clean_text(char *dst, size_t n, const char *src)
{
    size_t j = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && j + 4 < n; p++) {
        if (*p == '"') dst[j++] = '\'';
        else if (*p == '\\') dst[j++] = '/';
        else if (*p == '#') j += (size_t)snprintf(dst + j, n - j, "no.");
        else if (*p < 0x20 || *p == 0x7f) dst[j++] = ' ';
        else dst[j++] = (char)*p;
    }
    dst[j < n ? j : n - 1] = '\0';
}

/* The series titled label, created (with its style) when absent; NULL when out of memory. */
static series *series_get(series_list *l, const char *label, const char *color, int dash, int pt)
{
    char clean[LABEL_MAX];
    clean_text(clean, sizeof clean, label);
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->s[i].label, clean)) return &l->s[i];
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        series *s = realloc(l->s, cap * sizeof *s);
        if (!s) return NULL;
        l->s = s, l->cap = cap;
    }
    series *s = &l->s[l->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->label, sizeof s->label, "%s", clean);
    s->color = color, s->dash = dash, s->pt = pt;
    return s;
}

/* Adds a point; returns 1 (and adds nothing) when the series has a point at that x already, 0 when added. */
static int series_add(series *s, point p)
{
    if (!s) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n; i++)
        if (s->p[i].x == p.x) return 1;
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

/* ---- files the figure reads ---- */

typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} membuf;

static int mb_open(membuf *m)
{
    memset(m, 0, sizeof *m);
    m->f = open_memstream(&m->buf, &m->len);
    return m->f ? 0 : orthros_error(ORTHROS_ENOMEM, "out of memory");
}

/* Closes the buffer and writes it to DIR/NAME atomically. */
static int mb_save(membuf *m, const char *dir, const char *name)
{
    char *path = NULL;
    int bad = fclose(m->f) != 0, rc;
    m->f = NULL;
    if (bad || asprintf(&path, "%s/%s", dir, name) < 0) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
    else rc = orthros_write_file_atomic(path, m->buf, m->len);
    free(path);
    free(m->buf);
    m->buf = NULL;
    return rc;
}

/* Index blocks, one per series, the first line of each its quoted title; columns x y [lo hi] [w] (ncols 2..5). */
static void write_blocks(FILE *f, series_list *l, int ncols, const char *comment)
{
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
            for (int c = 0; c < ncols; c++) {
                if (isnan(v[c])) fprintf(f, c ? " NaN" : "NaN");
                else fprintf(f, c ? " %.9g" : "%.9g", v[c]);
            }
            fputc('\n', f);
        }
    }
}

/* ---- styles ---- */

/* A colour per architecture; configurations after the first (another model, tp, commit, ...) get other shades. */
static int arch_index(const char *arch)
{
    for (int i = 0; orthros_arch_names[i]; i++)
        if (!strcmp(arch, orthros_arch_names[i])) return i;
    return -1;
}

#define SHADES 4
static const char *arch_color(const char *arch, int shade)
{
    static const char *const colors[SHADES][5] = {{"#1f5fa8", "#d1451b", "#2e8b3a", "#8e44ad", "#8c6d1f"},
                                                  {"#74a9e0", "#f0936b", "#7fcf8a", "#c39bd3", "#d4b46a"},
                                                  {"#0b2e59", "#7a2306", "#14501d", "#4a1f5c", "#4d3b0d"},
                                                  {"#17a2b8", "#e0a800", "#20c997", "#e83e8c", "#6c757d"}};
    int a = arch_index(arch);
    return a < 0 ? "#555555" : colors[shade % SHADES][a];
}

/* Filled markers for the first configuration, open ones for the second, other shapes after. */
static int arch_point(const char *arch, int shade)
{
    static const int pts[SHADES][5] = {{7, 5, 9, 11, 13}, {6, 4, 8, 10, 12}, {1, 2, 3, 1, 2}, {13, 11, 5, 9, 7}};
    int a = arch_index(arch);
    return a < 0 ? 1 : pts[shade % SHADES][a];
}

/* Dash patterns: prefill solid, decode dashed, e2e dash-dot; a tensor-parallel world (tp > 1) dotted, or
 * dash-dot-dot for its decode. */
static int phase_dash(const char *phase, int tp)
{
    int decode = phase && (!strcmp(phase, "decode") || !strcmp(phase, "e2e"));
    if (tp > 1) return decode ? 5 : 3;
    return !phase ? 1 : !strcmp(phase, "decode") ? 2 : !strcmp(phase, "e2e") ? 4 : 1;
}

/* ---- inputs ---- */

typedef struct {
    const char *name;
    orthros_any_result r; /* the file, read and validated (result_any.h) */
} input;

typedef struct {
    input *in;
    size_t n;
    const orthros_plot_opts *o;
    orthros_plot_counts *counts;
} plot_ctx;

static int is_kernel_bench(const input *in)
{
    return in->r.kind == ORTHROS_RESULT_BENCH && !strcmp(in->r.bench.cfg.source, "bench_kernels");
}
static int is_model_bench(const input *in) { return in->r.kind == ORTHROS_RESULT_BENCH && !is_kernel_bench(in); }

/* The file name without its folders. */
static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return !path ? "?" : slash && slash[1] ? slash + 1 : path;
}

/* ---- run keys: what makes two runs differ ---- */

enum {
    K_MODEL, K_TEXT, K_TOKENS, K_TAIL, K_WINDOW, K_PERIOD, K_FORMULA, K_CHUNK, K_BATCH, K_DECODED, K_TP, K_DEVICE,
    K_THREADS, K_KERNELS, K_COMMIT, K_N
};
/* The facets' names in a refusal, and the words before a facet's value in a caption. */
static const char *const facet_names[K_N] = {"model", "text", "token count", "orthros tail", "swa window",
                                             "hybrid period", "linear formula", "prefill chunk", "batch",
                                             "tokens decoded", "tp", "device", "threads", "kernel versions", "commit"};
static const char *const facet_prefix[K_N] = {"model ", "", "", "orthros ", "swa ", "hybrid: ", "", "", "", "", "", "",
                                              "", "kernels ", ""};

/* A facet's text in a run key, at most: the kernel versions and decode switches of a cuda run are the longest. */
#define KEY_MAX 256
typedef struct {
    char v[K_N][KEY_MAX]; /* "" where the facet does not apply (the swa window of a transformer) */
} run_key;

static const char *ordinal(int n)
{
    return n % 100 >= 11 && n % 100 <= 13 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static const cJSON *input_header_json(const input *in)
{
    return in->r.kind == ORTHROS_RESULT_BENCH ? in->r.bench.header : in->r.eval.header;
}
static const orthros_result_header *input_hdr(const input *in)
{
    return in->r.kind == ORTHROS_RESULT_BENCH ? &in->r.bench.hdr : &in->r.eval.hdr;
}

/* The run key of the cells of architecture `arch` (and batch, for bench cells: -1 for none; phase, for bench cells:
 * NULL for none) in a bench or eval file. Timing facets (chunk, threads, kernel versions) only for bench files; the
 * tokens decoded after the prompt for e2e cells (files of --decode-tokens 128 and 1024 are different runs). */
static void run_key_of(run_key *k, const input *in, const char *arch, int batch, const char *phase)
{
    memset(k, 0, sizeof *k);
    int bench = in->r.kind == ORTHROS_RESULT_BENCH;
    const orthros_sched_config *s = bench ? &in->r.bench.cfg.sched : &in->r.eval.cfg.sched;
    const orthros_result_header *h = input_hdr(in);
    const cJSON *env = cJSON_GetObjectItem(input_header_json(in), "environment");
    const char *model = bench ? in->r.bench.cfg.model : in->r.eval.cfg.model;
    clean_text(k->v[K_MODEL], sizeof k->v[K_MODEL], model && model[0] ? model : "unknown model");
    if (!bench) {
        const orthros_eval_config *c = &in->r.eval.cfg;
        if (orthros_eval_is_ppl(c->task) || !strcmp(c->task, "recall")) {
            clean_text(k->v[K_TEXT], sizeof k->v[K_TEXT], base_name(c->text));
            snprintf(k->v[K_TOKENS], sizeof k->v[K_TOKENS], "%lld %s", (long long)c->text_tokens,
                     orthros_eval_is_ppl(c->task) ? "tokens" : "questions");
        }
    }
    int is_orthros = !strcmp(arch, "orthros"), lin = is_orthros || !strcmp(arch, "linear") || !strcmp(arch, "hybrid");
    if (is_orthros) snprintf(k->v[K_TAIL], sizeof k->v[K_TAIL], "tail %d", s->tail > 0 ? s->tail : 1);
    if (!strcmp(arch, "swa")) snprintf(k->v[K_WINDOW], sizeof k->v[K_WINDOW], "window %d", s->window > 0 ? s->window : 4096);
    if (!strcmp(arch, "hybrid")) {
        int e = s->hybrid_every > 0 ? s->hybrid_every : 4;
        snprintf(k->v[K_PERIOD], sizeof k->v[K_PERIOD], "every %d%s layer full", e, ordinal(e));
    }
    if (lin) {
        char *f = k->v[K_FORMULA];
        size_t n = sizeof k->v[K_FORMULA];
        if (s->feature_map[0]) snprintf(f + strlen(f), n - strlen(f), "%sphi %.15s", f[0] ? ", " : "", s->feature_map);
        if (s->feature_dim > 0) snprintf(f + strlen(f), n - strlen(f), "%sfeature dim %d", f[0] ? ", " : "", s->feature_dim);
        if (s->eps > 0) snprintf(f + strlen(f), n - strlen(f), "%seps %g", f[0] ? ", " : "", s->eps);
        if (s->feature_map_rope[0]) snprintf(f + strlen(f), n - strlen(f), "%sphi %.15s RoPE", f[0] ? ", " : "", s->feature_map_rope);
        if (s->local_window >= 0) snprintf(f + strlen(f), n - strlen(f), "%slocal window %d", f[0] ? ", " : "", s->local_window);
    }
    if (bench && s->chunk > 0) snprintf(k->v[K_CHUNK], sizeof k->v[K_CHUNK], "chunk %d", s->chunk);
    if (bench && batch >= 0) snprintf(k->v[K_BATCH], sizeof k->v[K_BATCH], "batch %d", batch);
    if (bench && phase && !strcmp(phase, "e2e"))
        snprintf(k->v[K_DECODED], sizeof k->v[K_DECODED], "%d tokens decoded", in->r.bench.cfg.decode_tokens);
    int tp = bench ? in->r.bench.cfg.tp : h->world_size;
    snprintf(k->v[K_TP], sizeof k->v[K_TP], "tp %d", tp > 0 ? tp : 1);
    char dev[160];
    clean_text(dev, sizeof dev, h->device_name[0] ? h->device_name : "unknown device");
    snprintf(k->v[K_DEVICE], sizeof k->v[K_DEVICE], "%.100s%s", dev, !strcmp(h->backend, "cpu") ? " (cpu)" : "");
    const cJSON *threads = cJSON_GetObjectItem(env, "threads");
    if (bench && !strcmp(h->backend, "cpu") && cJSON_IsNumber(threads))
        snprintf(k->v[K_THREADS], sizeof k->v[K_THREADS], "%d threads", threads->valueint);
    const cJSON *kern = cJSON_GetObjectItem(cJSON_GetObjectItem(env, "device"), "kernels");
    if (bench && cJSON_IsString(kern) && kern->valuestring[0]) {
        /* "attn_prefill v7, attn_decode v7, linear_prefill v7" -> "prefill v7, decode v7, linear_prefill v7" */
        char t[KEY_MAX], *o = k->v[K_KERNELS];
        clean_text(t, sizeof t, kern->valuestring);
        size_t j = 0;
        for (const char *p = t; *p && j + 1 < sizeof k->v[K_KERNELS]; p++) {
            if (!strncmp(p, "attn_", 5) && (p == t || p[-1] == ' ')) p += 5;
            o[j++] = *p;
        }
        o[j] = '\0';
    }
    snprintf(k->v[K_COMMIT], sizeof k->v[K_COMMIT], "commit %.7s%s", h->git_commit, h->dirty ? "+dirty" : "");
}

/* ---- collecting a figure's points with their run keys ---- */

typedef struct {
    int key;               /* index into collect.k */
    char head[LABEL_MAX];  /* what names the series before its facets: the architecture [and phase] */
    char arch[ORTHROS_NAME_MAX], phase[16];
    int tp, row;           /* row: a heatmap's row (its variant) */
    size_t seq;            /* the order it came in */
    point p;
    const char *file;
} raw;

typedef struct {
    raw *r;
    size_t n, cap;
    run_key *k;
    size_t nk, capk;
    int varying[K_N];      /* 1: the facet takes two or more values among the keys; 2: left out */
    char kernels_shared[KEY_MAX]; /* where the kernel versions vary: the items of their lists every key has */
} collect;

static void collect_free(collect *c)
{
    free(c->r);
    free(c->k);
    memset(c, 0, sizeof *c);
}

static int collect_add(collect *c, const run_key *k, const char *head, const char *arch, const char *phase, int tp,
                       int row, point p, const char *file)
{
    size_t ki = 0;
    while (ki < c->nk && memcmp(&c->k[ki], k, sizeof *k)) ki++;
    if (ki == c->nk) {
        if (c->nk == c->capk) {
            size_t cap = c->capk ? 2 * c->capk : 8;
            run_key *q = realloc(c->k, cap * sizeof *q);
            if (!q) return orthros_error(ORTHROS_ENOMEM, "out of memory");
            c->k = q, c->capk = cap;
        }
        c->k[c->nk++] = *k;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        raw *q = realloc(c->r, cap * sizeof *q);
        if (!q) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        c->r = q, c->cap = cap;
    }
    raw *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    r->key = (int)ki;
    clean_text(r->head, sizeof r->head, head);
    snprintf(r->arch, sizeof r->arch, "%s", arch);
    snprintf(r->phase, sizeof r->phase, "%s", phase ? phase : "");
    r->tp = tp, r->row = row, r->p = p, r->file = file, r->seq = c->n - 1;
    return 0;
}

/* The model's label: its last path components, as few as set it apart from the figure's other models, two at least
 * for a folder (a preset: its name). */
static void model_labels(collect *c)
{
    enum { MAXM = 64 };
    char full[MAXM][KEY_MAX], lab[MAXM][KEY_MAX];
    size_t nm = 0;
    for (size_t i = 0; i < c->nk && nm < MAXM; i++) {
        size_t j = 0;
        while (j < nm && strcmp(full[j], c->k[i].v[K_MODEL])) j++;
        if (j == nm) memcpy(full[nm++], c->k[i].v[K_MODEL], KEY_MAX);
    }
    for (size_t j = 0; j < nm; j++) {
        const char *m = full[j];
        if (!strncmp(m, "preset:", 7)) {
            snprintf(lab[j], sizeof lab[j], "%s", m + 7);
            continue;
        }
        /* a folder's name alone ("adapter", "model") says little: its parent's name comes with it */
        const char *last = strrchr(m, '/');
        int first = last && last != m && last[1] && !strchr(last + 1, '.') ? 2 : 1;
        for (int parts = first; parts <= 16; parts++) {
            /* the last `parts` components of m, and whether another model ends the same way */
            size_t len = strlen(m);
            while (len > 1 && m[len - 1] == '/') len--;
            const char *p = m + len;
            for (int seen = 0; p > m; p--)
                if (p[-1] == '/' && ++seen == parts) break;
            snprintf(lab[j], sizeof lab[j], "%.*s", (int)(m + len - p), p);
            int clash = 0;
            size_t ll = strlen(lab[j]);
            for (size_t o = 0; o < nm && !clash; o++) {
                size_t lo = strlen(full[o]);
                clash = o != j && lo >= ll && !strcmp(full[o] + lo - ll, lab[j]) && (lo == ll || full[o][lo - ll - 1] == '/');
            }
            if (!clash || p == m) break;
        }
    }
    for (size_t i = 0; i < c->nk; i++)
        for (size_t j = 0; j < nm; j++)
            if (!strcmp(c->k[i].v[K_MODEL], full[j])) {
                memcpy(c->k[i].v[K_MODEL], lab[j], KEY_MAX);
                break;
            }
}

/* Raw points by architecture (transformer, orthros, linear, swa, hybrid), then in the order they came. */
static int cmp_raw(const void *a, const void *b)
{
    const raw *x = a, *y = b;
    int ax = arch_index(x->arch), ay = arch_index(y->arch);
    ax = ax < 0 ? 99 : ax, ay = ay < 0 ? 99 : ay;
    if (ax != ay) return ax < ay ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Whether the ", "-separated list holds the item of len bytes at item. */
static int list_has(const char *list, const char *item, size_t len)
{
    for (const char *p = list; *p;) {
        const char *e = strstr(p, ", ");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, item, len)) return 1;
        if (!e) break;
        p = e + 2;
    }
    return 0;
}

/* Where the kernel versions vary among the keys, each key keeps the items of its list (", "-separated) that not
 * every key has, so that a series is named by what sets it apart ("o pdl1", not the whole list of one mode); the
 * items every key has go to the caption. Keys that differed still differ: only items common to all are taken out. */
static void kernels_differences(collect *c)
{
    char(*own)[KEY_MAX] = calloc(c->nk ? c->nk : 1, sizeof *own);
    if (!own) return; /* the whole lists then */
    c->kernels_shared[0] = '\0';
    for (size_t i = 0; i < c->nk; i++)
        for (const char *p = c->k[i].v[K_KERNELS]; *p;) {
            const char *e = strstr(p, ", ");
            size_t l = e ? (size_t)(e - p) : strlen(p), o = 0;
            while (o < c->nk && list_has(c->k[o].v[K_KERNELS], p, l)) o++;
            char *dst = o < c->nk ? own[i] : i == 0 ? c->kernels_shared : NULL;
            if (dst) {
                size_t u = strlen(dst);
                snprintf(dst + u, KEY_MAX - u, "%s%.*s", u ? ", " : "", (int)l, p);
            }
            if (!e) break;
            p = e + 2;
        }
    for (size_t i = 0; i < c->nk; i++) memcpy(c->k[i].v[K_KERNELS], own[i], KEY_MAX);
    free(own);
}

/* After the last collect_add: points in architecture order, model labels and which facets vary. */
static void collect_finish(collect *c)
{
    qsort(c->r, c->n, sizeof *c->r, cmp_raw);
    model_labels(c);
    for (int f = 0; f < K_N; f++) {
        const char *first = NULL;
        c->varying[f] = 0;
        for (size_t i = 0; i < c->nk; i++) {
            const char *v = c->k[i].v[f];
            if (!v[0]) continue;
            if (!first) first = v;
            else if (strcmp(first, v)) c->varying[f] = 1;
        }
    }
    /* Kernel versions follow the commit: where the commit differs, it names the series and the versions are left
     * out (of the labels and the caption alike). */
    if (c->varying[K_COMMIT]) c->varying[K_KERNELS] = 2;
    if (c->varying[K_KERNELS] == 1) kernels_differences(c);
}

/* ", llama3.1-8b, tp 2": the facets of key ki that vary among the figure's keys. */
static void key_suffix(char *out, size_t n, const collect *c, int ki)
{
    out[0] = '\0';
    for (int f = 0; f < K_N; f++) {
        const char *v = c->k[ki].v[f];
        /* a facet that varies, where the key has it ("tp 1" left out: a series without "tp N" ran on one GPU) */
        if (c->varying[f] != 1 || !v[0] || (f == K_TP && !strcmp(v, "tp 1"))) continue;
        size_t used = strlen(out);
        snprintf(out + used, n - used, ", %s", v);
    }
}

/* "model X; swa window 1024; NVIDIA H200; commit abc1234": the facets every key shares (tp 1 left out). */
static void key_caption(char *out, size_t n, const collect *c)
{
    out[0] = '\0';
    for (int f = 0; f < K_N; f++) {
        if (f == K_KERNELS && c->varying[f] == 1 && c->kernels_shared[0]) {
            /* the kernel versions the series share; each one's own are in its name */
            size_t used = strlen(out);
            snprintf(out + used, n - used, "%s%s%s", used ? "; " : "", facet_prefix[f], c->kernels_shared);
            continue;
        }
        if (c->varying[f]) continue;
        const char *v = NULL;
        for (size_t i = 0; i < c->nk && !v; i++)
            if (c->k[i].v[f][0]) v = c->k[i].v[f];
        if (!v || (f == K_TP && !strcmp(v, "tp 1"))) continue;
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s%s", used ? "; " : "", facet_prefix[f], v);
    }
}

/* "model, commit": the names of the facets that vary. */
static void key_differ(char *out, size_t n, const collect *c)
{
    out[0] = '\0';
    for (int f = 0; f < K_N; f++) {
        if (c->varying[f] != 1) continue;
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s", used ? ", " : "", facet_names[f]);
    }
    if (!out[0]) snprintf(out, n, "nothing but the architecture");
}

/* ---- gnuplot ---- */

/* A gnuplot script being put together: variable settings made by the driver, then the fixed scripts. */
typedef struct {
    char text[16384];
    size_t len;
    int bad;
} prelude;

/* Values the driver puts on gnuplot's command stream: numbers, colours and fixed words only. A value outside
 * this alphabet is a bug in the driver, never data, and is refused. */
static int safe_value(const char *v)
{
    for (const char *p = v; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 #.,:()[]+-_%'\"=", *p)) return 0;
    return 1;
}

static void pre_set(prelude *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pre_set(prelude *p, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof line || !safe_value(line) || p->len + (size_t)w + 2 > sizeof p->text) {
        p->bad = 1;
        return;
    }
    memcpy(p->text + p->len, line, (size_t)w);
    p->len += (size_t)w;
    p->text[p->len++] = '\n';
    p->text[p->len] = '\0';
}

/* The width of a key outside on the right, in characters (`set rmargin rm`), from its longest title. */
static int key_chars(const series_list *l, size_t longest)
{
    for (size_t i = 0; i < l->n; i++) longest = strlen(l->s[i].label) > longest ? strlen(l->s[i].label) : longest;
    return 10 + (int)(0.86 * (double)(longest < 90 ? longest : 90));
}

/* n, colors, dashes, points, widths, sizes: one word per series; rm: the width of the key, whose longest title
 * (key_min characters at least: titles the script adds) sets it. Widths and sizes not set by the figure fall with
 * the series' order (the first drawn widest), so that lines on top of each other stay visible. */
static void pre_styles(prelude *p, const series_list *l, size_t key_min)
{
    char colors[4096] = "", dashes[1024] = "", points[1024] = "", widths[1024] = "", sizes[1024] = "";
    size_t m = 0;
    for (size_t i = 0; i < l->n; i++) m += l->s[i].lw == 0;
    for (size_t i = 0, k = 0; i < l->n; i++) {
        const series *s = &l->s[i];
        double lw = s->lw, ps = s->ps;
        if (lw == 0) lw = 1.5 + 2.0 * (double)(m - 1 - k) / (double)m, ps = 1.5 - 0.6 * (double)k / (double)m, k++;
        size_t a = strlen(colors), b = strlen(dashes), c = strlen(points), d = strlen(widths), e = strlen(sizes);
        snprintf(colors + a, sizeof colors - a, "%s%s", i ? " " : "", s->color ? s->color : "#555555");
        snprintf(dashes + b, sizeof dashes - b, "%s%d", i ? " " : "", s->dash);
        snprintf(points + c, sizeof points - c, "%s%d", i ? " " : "", s->pt);
        snprintf(widths + d, sizeof widths - d, "%s%.3f", i ? " " : "", lw);
        snprintf(sizes + e, sizeof sizes - e, "%s%.3f", i ? " " : "", ps);
    }
    pre_set(p, "rm = %d", key_chars(l, key_min));
    pre_set(p, "n = %zu", l->n);
    pre_set(p, "colors = \"%s\"", colors);
    pre_set(p, "dashes = \"%s\"", dashes);
    pre_set(p, "points = \"%s\"", points);
    pre_set(p, "widths = \"%s\"", widths);
    pre_set(p, "sizes = \"%s\"", sizes);
}

/* "1K", "256", "1.5K", "1M": K = 1024, as the bench's length lists. */
static void len_label(char *out, size_t n, double x)
{
    if (x >= 1048576 && fmod(x, 1048576) == 0) snprintf(out, n, "%gM", x / 1048576);
    else if (x >= 1024 && fmod(x, 1024) == 0) snprintf(out, n, "%gK", x / 1024);
    else snprintf(out, n, "%g", x);
}

/* The distinct values of xs[n], sorted, in place; returns their count. */
static size_t distinct(double *xs, size_t n)
{
    qsort(xs, n, sizeof *xs, orthros_cmp_double);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || xs[m - 1] != xs[i]) xs[m++] = xs[i];
    return m;
}

/* name = '("256" 256, "1K" 1024, ...)': tics at the distinct sorted xs (every other one past 12). With
 * index_positions the tics sit at 0, 1, 2, ... (heatmaps). suffix: plain numbers with it; NULL: lengths. */
static void pre_tics(prelude *p, const char *name, double *xs, size_t n, int index_positions, const char *suffix)
{
    size_t m = distinct(xs, n), step = m > 12 ? (m + 11) / 12 : 1;
    char buf[4096] = "(";
    for (size_t i = 0; i < m; i += step) {
        char lab[32];
        if (suffix) snprintf(lab, sizeof lab, "%g%s", xs[i], suffix);
        else len_label(lab, sizeof lab, xs[i]);
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "%s\"%s\" %.9g", i ? ", " : "", lab, index_positions ? (double)i : xs[i]);
    }
    strcat(buf, ")");
    pre_set(p, "%s = '%s'", name, buf);
}

/* Tics of every series' x. */
static void pre_xtics(prelude *p, const series_list *l)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < l->n; i++) total += l->s[i].n;
    double *xs = malloc((total ? total : 1) * sizeof *xs);
    if (!xs) {
        p->bad = 1;
        return;
    }
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->s[i].n; j++) xs[k++] = l->s[i].p[j].x;
    pre_tics(p, "xt", xs, k, 0, NULL);
    free(xs);
}

/* Labelled tics on a log axis over [lo, hi]: 1-2-5 steps, finer (1, 1.5, 2, 3, 5, 7) when the range holds fewer
 * than three, so that a log axis shows numbers even under one decade; also the range itself, padded. */
static void pre_logtics(prelude *p, const char *name, const char *range, double lo, double hi, const char *fmt)
{
    if (!(lo > 0) || !(hi >= lo)) {
        p->bad = 1;
        return;
    }
    static const double coarse[] = {1, 2, 5}, fine[] = {1, 1.5, 2, 3, 4, 5, 7};
    char buf[2048] = "(";
    for (int pass = 0; pass < 2; pass++) {
        const double *m = pass ? fine : coarse;
        int nm = pass ? 7 : 3, count = 0;
        buf[1] = '\0';
        for (int e = (int)floor(log10(lo)) - 1; e <= (int)ceil(log10(hi)) + 1; e++)
            for (int k = 0; k < nm; k++) {
                double v = m[k] * pow(10, e);
                if (v < lo / 1.15 || v > hi * 1.15) continue;
                char lab[32];
                snprintf(lab, sizeof lab, fmt, v);
                size_t used = strlen(buf);
                snprintf(buf + used, sizeof buf - used, "%s\"%s\" %.9g", count++ ? ", " : "", lab, v);
            }
        if (count >= 3) break;
    }
    strcat(buf, ")");
    pre_set(p, "%s = '%s'", name, buf);
    pre_set(p, "%s = '[%.9g:%.9g]'", range, lo / 1.25, hi * 1.25);
}

/* The y range of every series (columns y, lo, hi), for pre_logtics. */
static void y_extent(const series_list *l, double *lo, double *hi, double scale)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->s[i].n; j++) {
            const point *q = &l->s[i].p[j];
            double v[3] = {q->y, q->lo, q->hi};
            for (int k = 0; k < 3; k++)
                if (isfinite(v[k]) && v[k] > 0) *lo = fmin(*lo, v[k] * scale), *hi = fmax(*hi, v[k] * scale);
        }
}

/* Reads a script into m: from the folder dir, or the copy compiled into the binary when dir is NULL. */
static int append_script(FILE *m, const char *dir, const char *name)
{
    char *path = NULL, *text = NULL;
    if (!dir) {
        size_t len = 0;
        const char *s = orthros_plot_embedded_script(name, &len);
        if (!s) return orthros_error(ORTHROS_EIO, "%s: no such script compiled into this binary", name);
        fwrite(s, 1, len, m);
        fputc('\n', m);
        return 0;
    }
    if (asprintf(&path, "%s/%s", dir, name) < 0) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int rc = orthros_read_file(&text, NULL, path, (size_t)1 << 20, NULL);
    if (rc) orthros_error(rc, "%s (--scripts names the folder of the gnuplot scripts)", orthros_last_error());
    else fprintf(m, "%s\n", text);
    free(path);
    free(text);
    return rc;
}

/* The messages gnuplot wrote (its stderr, sent to a file in the output folder), trimmed: *text malloc'd, or NULL
 * when there were none. The file is removed. */
static char *read_messages(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (orthros_read_file(&text, &len, path, (size_t)1 << 20, NULL)) text = NULL;
    unlink(path);
    if (!text) return NULL;
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ')) text[--len] = '\0';
    if (!len) {
        free(text);
        return NULL;
    }
    return text;
}

/* Feeds the script to gnuplot on stdin, in the output folder, its messages to FIG.gnuplot.log there; waits for it.
 * *messages: what it wrote (malloc'd; NULL when nothing). */
static int spawn_gnuplot(const orthros_plot_opts *o, const char *fig, const char *script, size_t len, char **messages)
{
    int fds[2], rc = 0, st = 0;
    char logname[96], *logpath = NULL;
    *messages = NULL;
    snprintf(logname, sizeof logname, "%s.gnuplot.log", fig);
    if (asprintf(&logpath, "%s/%s", o->out_dir, logname) < 0) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    if (pipe(fds) != 0) {
        free(logpath);
        return orthros_error(ORTHROS_EIO, "pipe: %s", strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    posix_spawn_file_actions_addchdir_np(&fa, o->out_dir);
    posix_spawn_file_actions_addopen(&fa, 2, logname, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char *argv[] = {(char *)o->gnuplot, NULL};
    pid_t pid;
    fflush(NULL);
    int err = posix_spawnp(&pid, o->gnuplot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (err) {
        close(fds[1]);
        unlink(logpath);
        free(logpath);
        return orthros_error(ORTHROS_EUNSUPPORTED, "cannot run %s: %s (install gnuplot; on Debian: apt-get install gnuplot-nox)",
                             o->gnuplot, strerror(err));
    }
    /* gnuplot may stop reading on an error: a broken pipe is then reported by its exit status, not a signal. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fds[1], script + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(fds[1]);
    signal(SIGPIPE, old);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            free(logpath);
            return orthros_error(ORTHROS_EIO, "waiting for gnuplot: %s", strerror(errno));
        }
    *messages = read_messages(logpath);
    free(logpath);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        rc = orthros_error(ORTHROS_EINVAL, "gnuplot failed (%s %d): %.1500s", WIFEXITED(st) ? "exit status" : "signal",
                           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), *messages ? *messages : "no message");
    return rc;
}

/* Counts gnuplot's warnings in its messages and prints them with --verbose. */
static void note_messages(const plot_ctx *c, const char *fig, const char *ext, const char *messages)
{
    if (!messages) return;
    int k = 0;
    for (const char *p = messages; (p = strstr(p, "warning:")); p++) k++;
    c->counts->warnings += k ? k : 1;
    if (c->o->verbose) fprintf(stderr, "plot: %s.%s: gnuplot said:\n%s\n", fig, ext, messages);
}

/* Draws figure `fig` in every requested format: the prelude, common.gp, FIG.gp, the shared body (heatmap.gp for
 * the heatmaps; NULL for none) and overlay.gp. w, h: its size in pixels. */
static int run_gnuplot(const plot_ctx *c, const char *fig, const prelude *p, const char *body, int w, int h)
{
    const orthros_plot_opts *o = c->o;
    if (p->bad) return orthros_error(ORTHROS_EINVAL, "%s: a figure setting is not a plain number or word (a bug)", fig);
    int rc = 0;
    for (int f = 0; f < ORTHROS_PLOT_FORMATS && !rc; f++) {
        if (!(o->formats & (1 << f))) continue;
        static const char *const ext[] = {"png", "svg", "pdf"};
        char *text = NULL, *messages = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        /* gnuplot writes NAME.part.EXT, renamed to NAME.EXT once it succeeded: no half-drawn image under the name. */
        fprintf(m, "w = %d\nh = %d\nfmt = '%s'\nout = '%s.part.%s'\ndat = '%s.dat'\ntxt = '%s.txt'\n%s", w, h, ext[f],
                fig, ext[f], fig, fig, p->text);
        rc = append_script(m, o->scripts_dir, "common.gp");
        if (!rc) {
            char name[64];
            snprintf(name, sizeof name, "%s.gp", fig);
            rc = append_script(m, o->scripts_dir, name);
        }
        if (!rc && body) rc = append_script(m, o->scripts_dir, body);
        if (!rc) rc = append_script(m, o->scripts_dir, "overlay.gp");
        if (fclose(m) != 0 && !rc) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        if (!rc) rc = spawn_gnuplot(o, fig, text, len, &messages);
        if (!rc) note_messages(c, fig, ext[f], messages);
        free(messages);
        free(text);
        if (rc) {
            char *part = NULL;
            if (asprintf(&part, "%s/%s.part.%s", o->out_dir, fig, ext[f]) >= 0) unlink(part);
            free(part);
            break;
        }
        char *out = NULL, *part = NULL;
        struct stat sb;
        if (asprintf(&out, "%s/%s.%s", o->out_dir, fig, ext[f]) < 0 || asprintf(&part, "%s/%s.part.%s", o->out_dir, fig, ext[f]) < 0) {
            free(out);
            return orthros_error(ORTHROS_ENOMEM, "out of memory");
        }
        if (stat(part, &sb) != 0 || sb.st_size == 0) rc = orthros_error(ORTHROS_EIO, "gnuplot wrote no %s", part);
        else if (rename(part, out) != 0) rc = orthros_error(ORTHROS_EIO, "%s: cannot rename it to %s: %s", part, out, strerror(errno));
        else fprintf(stderr, "plot: %s\n", out);
        if (rc) unlink(part);
        free(out);
        free(part);
    }
    return rc;
}

/* The figure's texts as data: index 0 the caption, index 1 panel titles at their screen positions (x, y, text),
 * index 2 row headings (x, y, text; drawn left-aligned and larger); an index is never empty. */
typedef struct {
    char caption[900];
    double tx[MAX_PANELS], ty[MAX_PANELS];
    char titles[MAX_PANELS][LABEL_MAX];
    int n_titles;
    double rx[MAX_ROWS * 2], ry[MAX_ROWS * 2];
    char rows[MAX_ROWS * 2][LABEL_MAX];
    int n_rows;
} texts;

static int write_texts(const plot_ctx *c, const char *fig, const texts *t)
{
    membuf m;
    char clean[960] = "", name[64]; /* (zero-filled for the analyzer: ci/analyze.sh) */
    int rc = mb_open(&m);
    if (rc) return rc;
    clean_text(clean, sizeof clean, t->caption);
    fprintf(m.f, "# The texts of %s, drawn by overlay.gp: index 0 the caption (x as a fraction of the width, y in pixels "
                 "from the bottom), index 1 panel titles, index 2 row headings.\n", fig);
    /* The caption in lines of at most CAPTION_LINE characters, broken after "; " where it can be (4 lines at most). */
    enum { CAPTION_LINE = 150, CAPTION_LINES = 4 };
    char *lines[CAPTION_LINES];
    int nl = 0;
    for (char *p = clean; *p && nl < CAPTION_LINES;) {
        lines[nl++] = p;
        size_t len = strlen(p);
        if (len <= CAPTION_LINE || nl == CAPTION_LINES) break;
        char *cut = NULL;
        for (char *q = p; q + 2 <= p + CAPTION_LINE; q++)
            if (q[0] == ';' && q[1] == ' ') cut = q + 1;
        if (!cut)
            for (char *q = p; q + 2 <= p + CAPTION_LINE; q++)
                if (q[0] == ',' && q[1] == ' ') cut = q + 1;
        if (!cut) cut = p + CAPTION_LINE;
        *cut = '\0';
        for (p = cut + 1; *p == ' '; p++) {}
    }
    for (int i = 0; i < nl; i++) fprintf(m.f, "0.01 %d \"%s\"\n", 12 + 15 * (nl - 1 - i), lines[i]);
    if (!nl) fprintf(m.f, "0.01 12 \"\"\n");
    fprintf(m.f, "\n\n");
    for (int i = 0; i < t->n_titles; i++) fprintf(m.f, "%.4f %.4f \"%s\"\n", t->tx[i], t->ty[i], t->titles[i]);
    if (!t->n_titles) fprintf(m.f, "0.5 0.99 \"\"\n");
    fprintf(m.f, "\n\n");
    for (int i = 0; i < t->n_rows; i++) fprintf(m.f, "%.4f %.4f \"%s\"\n", t->rx[i], t->ry[i], t->rows[i]);
    if (!t->n_rows) fprintf(m.f, "0.5 0.99 \"\"\n");
    snprintf(name, sizeof name, "%s.txt", fig);
    return mb_save(&m, c->o->out_dir, name);
}

/* ---- the figure skeleton ---- */

/* One figure: its data, its texts, its script and the run that draws it. A figure function fills it from the
 * inputs, or sets `why` when their data is absent (the figure is then skipped) or `refused` when they hold more
 * configurations than one figure can show; figure_run writes NAME.dat (the series as index blocks of `cols`
 * columns, or what the function wrote into `dat` itself, as the heatmaps do) and NAME.txt, and draws it with the
 * prelude, common.gp, NAME.gp, `body` and overlay.gp. */
typedef struct {
    const plot_ctx *c;
    const char *name;    /* prefill_latency, ...: NAME.dat, NAME.txt, NAME.gp, NAME.png */
    series_list data;    /* the series drawn */
    int cols;            /* columns of a point in NAME.dat: x y [lo hi] [w] (2..5) */
    const char *comment; /* NAME.dat's first line */
    membuf dat;          /* NAME.dat as the figure wrote it itself, when open */
    texts t;             /* the caption and the panel titles */
    prelude p;           /* the variables the scripts are given */
    const char *body;    /* a shared script after NAME.gp (heatmap.gp), or NULL */
    int w, h;            /* size in pixels (0: 1100 x 620, wider for a long key) */
    size_t key_min;      /* the longest title the script adds to the key (the 21.9x line's) */
    const char *why;     /* set when the inputs hold no data for the figure: why it is skipped */
    char refused[400];   /* set when the figure is refused: why */
} figure;

/* A figure function: fills f, or sets f->why or f->refused. */
typedef int (*figure_fn)(figure *f);

static void figure_free(figure *f)
{
    series_list_free(&f->data);
    if (f->dat.f) fclose(f->dat.f);
    free(f->dat.buf);
    f->dat.f = NULL, f->dat.buf = NULL;
}

/* Writes NAME.dat and NAME.txt and draws the figure. */
static int figure_run(figure *f)
{
    char name[64];
    int rc = 0;
    if (!f->dat.f) {
        if ((rc = mb_open(&f->dat))) return rc;
        write_blocks(f->dat.f, &f->data, f->cols, f->comment);
    }
    snprintf(name, sizeof name, "%s.dat", f->name);
    if ((rc = mb_save(&f->dat, f->c->o->out_dir, name)) || (rc = write_texts(f->c, f->name, &f->t))) return rc;
    /* A line figure grows to the right with its key (about 9 pixels a character of rm). */
    int w = f->w ? f->w : 850 + 9 * key_chars(&f->data, f->key_min);
    return run_gnuplot(f->c, f->name, &f->p, f->body, w < 1100 ? 1100 : w, f->h ? f->h : 620);
}

/* The shade of a configuration: its rank among the configurations of its architecture, in order of appearance. */
typedef struct {
    char suffix[MAX_SERIES * 2][LABEL_MAX], arch[MAX_SERIES * 2][ORTHROS_NAME_MAX];
    size_t n;
} shades;

static int shade_of(shades *s, const char *arch, const char *suffix)
{
    int shade = 0;
    size_t j = 0;
    for (; j < s->n && !(!strcmp(s->suffix[j], suffix) && !strcmp(s->arch[j], arch)); j++) shade += !strcmp(s->arch[j], arch);
    if (j == s->n && s->n < MAX_SERIES * 2) {
        snprintf(s->suffix[s->n], LABEL_MAX, "%s", suffix);
        snprintf(s->arch[s->n++], ORTHROS_NAME_MAX, "%s", arch);
    }
    return shade;
}

/* The series of a figure from its collected points: each named by its head and the facets of its key that vary;
 * a colour per architecture, a shade and marker per configuration of that architecture (in order of appearance), a dash per phase and tensor-parallel world. Two points of one configuration at the same x (the
 * same cell in two files) draw the first, with a warning. More than MAX_SERIES series: refused. */
static int collect_series(figure *f, const collect *c)
{
    shades sh = {0};
    int rc = 0, warned = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const raw *r = &c->r[i];
        char suffix[LABEL_MAX], label[LABEL_MAX * 2];
        key_suffix(suffix, sizeof suffix, c, r->key);
        int shade = shade_of(&sh, r->arch, suffix);
        snprintf(label, sizeof label, "%s%s", r->head, suffix);
        size_t before = f->data.n;
        series *s = series_get(&f->data, label, arch_color(r->arch, shade), phase_dash(r->phase[0] ? r->phase : NULL, r->tp),
                               arch_point(r->arch, shade));
        if (f->data.n > MAX_SERIES && f->data.n > before) {
            char differ[300];
            key_differ(differ, sizeof differ, c);
            snprintf(f->refused, sizeof f->refused, "more than %d series: the inputs differ in %s; plot fewer files at a time",
                     MAX_SERIES, differ);
            return 0;
        }
        rc = series_add(s, r->p);
        if (rc == 1) {
            if (!warned++)
                fprintf(stderr, "plot: %s: \"%s\" has two cells at %g (the second from %s): the same configuration twice; "
                                "the first is drawn\n", f->name, s->label, r->p.x, r->file);
            rc = 0;
        }
    }
    return rc;
}

/* The caption of a figure from its collected keys: `what` (the statistic), then the facets its series share. */
static void collect_caption(figure *f, const collect *c, const char *what)
{
    char shared[700];
    key_caption(shared, sizeof shared, c);
    /* (at most 440 + 2 + 450 characters: write_texts draws four lines of 150) */
    snprintf(f->t.caption, sizeof f->t.caption, "%.440s%s%.450s", what, what[0] && shared[0] ? "; " : "", shared);
}

/* ---- line figures of bench files ---- */

/* Median and interval of a measured cell, in seconds. */
static point cell_point(const orthros_bench_cell *m)
{
    point p = {m->ctx, m->stats.median, m->stats.ci_lo, m->stats.ci_hi, 0};
    if (!isfinite(p.lo)) p.lo = p.y;
    if (!isfinite(p.hi)) p.hi = p.y;
    return p;
}

/* Batch is a facet only when the inputs hold several. */
static int multi_batch(const plot_ctx *c)
{
    int b0 = -1;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; is_model_bench(&c->in[i]) && k < c->in[i].r.bench.n_cells; k++) {
            int b = c->in[i].r.bench.cells[k].batch;
            if (b0 >= 0 && b != b0) return 1;
            b0 = b;
        }
    return 0;
}

/* A latency figure (prefill or decode): series with error bars on log-log axes, cells not run marked as crosses
 * on the top edge (one block after the measured series). */
static int fig_latency(figure *f, const char *phase, double scale)
{
    const plot_ctx *c = f->c;
    collect col = {0};
    series_list skipped = {0};
    int rc = 0, mb = multi_batch(c);
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        for (size_t k = 0; k < in->r.bench.n_cells && !rc; k++) {
            const orthros_bench_cell *m = &in->r.bench.cells[k];
            if (strcmp(m->phase, phase)) continue;
            if (m->state != ORTHROS_CELL_MEASURED) {
                rc = series_add(series_get(&skipped, "x", NULL, 1, 2), (point){m->ctx, NAN, NAN, NAN, 0}) < 0;
                continue;
            }
            run_key key;
            run_key_of(&key, in, m->arch, mb ? m->batch : -1, phase);
            rc = collect_add(&col, &key, m->arch, m->arch, phase, in->r.bench.cfg.tp, 0, cell_point(m), in->name);
        }
    }
    if (!rc && !col.n) {
        f->why = !strcmp(phase, "prefill") ? "no prefill measurements in the bench files" : "no decode measurements in the bench files";
        goto done;
    }
    collect_finish(&col);
    if (rc || (rc = collect_series(f, &col)) || f->refused[0]) goto done;
    double lo, hi;
    y_extent(&f->data, &lo, &hi, scale);
    if (skipped.n) {
        series *s = series_get(&f->data, "not run (skipped or failed)", "#888888", 1, 2);
        s->lw = 1, s->ps = 2;
        for (size_t j = 0; j < skipped.s[0].n && !rc; j++) rc = series_add(s, (point){skipped.s[0].p[j].x, hi * 1.2 / scale, 0, 0, 0}) < 0;
    }
    pre_styles(&f->p, &f->data, f->key_min);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", lo, hi * 1.2, "%g");
    pre_set(&f->p, "nskip = %d", skipped.n ? 1 : 0);
    collect_caption(f, &col, skipped.n ? "median with its bootstrap 95% interval; crosses on the top edge: not run"
                                       : "median with its bootstrap 95% interval");
    f->cols = 4;
    f->comment = "latency: ctx median_s ci95_lo_s ci95_hi_s";
done:
    series_list_free(&skipped);
    collect_free(&col);
    return rc;
}

static int fig_prefill(figure *f) { return fig_latency(f, "prefill", 1); }
static int fig_decode(figure *f) { return fig_latency(f, "decode", 1e3); }

/* The paper's claim is drawn where the speedups come within a factor of four of it; below, the caption gives the
 * largest speedup instead of an axis stretched to 21.9x. */
#define CLAIM 21.9

static int fig_speedup(figure *f)
{
    const plot_ctx *c = f->c;
    collect col = {0};
    int rc = 0, mb = multi_batch(c), phases = 0;
    char phase0[16] = "";
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; is_model_bench(&c->in[i]) && k < c->in[i].r.bench.n_speedups; k++) {
            const char *ph = c->in[i].r.bench.speedups[k].phase;
            if (!phase0[0]) snprintf(phase0, sizeof phase0, "%s", ph);
            else if (strcmp(phase0, ph)) phases = 1;
        }
    double best = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        for (size_t k = 0; k < in->r.bench.n_speedups && !rc; k++) {
            const orthros_speedup *e = &in->r.bench.speedups[k];
            char head[LABEL_MAX];
            snprintf(head, sizeof head, "%s%s%s", e->arch, phases ? " " : "", phases ? e->phase : "");
            run_key key;
            run_key_of(&key, in, e->arch, mb ? e->batch : -1, e->phase);
            point q = {e->ctx, e->speedup, isfinite(e->ci_lo) ? e->ci_lo : e->speedup, isfinite(e->ci_hi) ? e->ci_hi : e->speedup, 0};
            best = fmax(best, q.hi);
            rc = collect_add(&col, &key, head, e->arch, e->phase, in->r.bench.cfg.tp, 0, q, in->name);
        }
    }
    if (!rc && !col.n) {
        f->why = "no speedups (the bench files need transformer and another architecture)";
        goto done;
    }
    collect_finish(&col);
    if (rc || (rc = collect_series(f, &col)) || f->refused[0]) goto done;
    double lo, hi;
    int claim = best >= CLAIM / 4;
    f->key_min = claim ? 34 : 12;
    y_extent(&f->data, &lo, &hi, 1);
    pre_styles(&f->p, &f->data, f->key_min);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", fmin(lo, 0.9), claim ? fmax(hi, 25) : fmax(hi, 1.1), "%gx");
    pre_set(&f->p, "claim = %d", claim);
    char what[300];
    snprintf(what, sizeof what, "median(transformer) / median(arch), band: bootstrap 95%% interval over rounds%s",
             claim ? "" : "; the paper's 21.9x prefill claim is off this scale");
    collect_caption(f, &col, what);
    f->cols = 4;
    f->comment = "speedup: ctx speedup ci95_lo ci95_hi";
done:
    collect_free(&col);
    return rc;
}

/* Achieved TFLOP/s and TB/s per GPU: a tensor-parallel world's rate over its ranks, against the one-GPU ceilings
 * measured in each run (a dashed line per distinct ceiling, as series of their own: blocks m.. for GEMM, then
 * copy). */
static int fig_throughput(figure *f)
{
    const plot_ctx *c = f->c;
    collect col = {0};
    int rc = 0, mb = multi_batch(c), any_tp = 0;
    double xlo = INFINITY, xhi = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        int tp = in->r.bench.cfg.tp > 0 ? in->r.bench.cfg.tp : 1;
        for (size_t k = 0; k < in->r.bench.n_cells && !rc; k++) {
            const orthros_bench_cell *m = &in->r.bench.cells[k];
            if (m->state != ORTHROS_CELL_MEASURED || !isfinite(m->tflops) || !isfinite(m->tbps) || !strcmp(m->phase, "allreduce")) continue;
            char head[LABEL_MAX];
            snprintf(head, sizeof head, "%s %s", m->arch, m->phase);
            run_key key;
            run_key_of(&key, in, m->arch, mb ? m->batch : -1, m->phase);
            any_tp |= tp > 1;
            xlo = fmin(xlo, m->ctx), xhi = fmax(xhi, m->ctx);
            rc = collect_add(&col, &key, head, m->arch, m->phase, tp, 0, (point){m->ctx, m->tflops / tp, m->tbps / tp, 0, 0}, in->name);
        }
    }
    if (!rc && !col.n) {
        f->why = "no measurements with a cost model in the bench files";
        goto done;
    }
    collect_finish(&col);
    if (rc || (rc = collect_series(f, &col)) || f->refused[0]) goto done;
    double tlo = INFINITY, thi = 0, blo = INFINITY, bhi = 0;
    for (size_t i = 0; i < f->data.n; i++)
        for (size_t j = 0; j < f->data.s[i].n; j++) {
            const point *q = &f->data.s[i].p[j];
            if (q->y > 0) tlo = fmin(tlo, q->y), thi = fmax(thi, q->y);
            if (q->lo > 0) blo = fmin(blo, q->lo), bhi = fmax(bhi, q->lo);
        }
    size_t m = f->data.n;
    /* The ceilings: one line per distinct value (within 2%), named by the device it was measured on. */
    int ng = 0, nc = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        double seen[MAX_INPUTS];
        int ns = 0;
        for (size_t i = 0; i < c->n && !rc; i++) {
            const input *in = &c->in[i];
            if (!is_model_bench(in)) continue;
            double v = pass ? in->r.bench.ceilings.copy_tbps : in->r.bench.ceilings.gemm_tflops;
            if (!isfinite(v) || v <= 0) continue;
            int dup = 0;
            for (int s = 0; s < ns; s++) dup |= fabs(seen[s] - v) <= 0.02 * v;
            if (dup || ns == MAX_INPUTS) continue;
            seen[ns++] = v;
            char lab[LABEL_MAX], dev[96];
            clean_text(dev, sizeof dev, in->r.bench.hdr.device_name);
            snprintf(lab, sizeof lab, "%s ceiling, one %.90s: %.3g %s", pass ? "copy" : "GEMM", dev, v, pass ? "TB/s" : "TFLOP/s");
            series *s = series_get(&f->data, lab, "#222222", 2 + ns - 1, 0);
            if (!s) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            else {
                s->lw = 2, s->ps = 0.01;
                rc = series_add(s, pass ? (point){xlo, NAN, v, 0, 0} : (point){xlo, v, NAN, 0, 0}) < 0;
                if (!rc) rc = series_add(s, pass ? (point){xhi, NAN, v, 0, 0} : (point){xhi, v, NAN, 0, 0}) < 0;
            }
            if (pass) nc++, blo = fmin(blo, v), bhi = fmax(bhi, v);
            else ng++, tlo = fmin(tlo, v), thi = fmax(thi, v);
        }
    }
    if (rc) goto done;
    pre_styles(&f->p, &f->data, f->key_min);
    pre_xtics(&f->p, &f->data);
    pre_set(&f->p, "m = %zu", m);
    pre_set(&f->p, "ng = %d", ng);
    pre_set(&f->p, "nc = %d", nc);
    pre_set(&f->p, "pergpu = %d", any_tp);
    pre_logtics(&f->p, "yt1", "yr1", tlo, thi, "%g");
    pre_logtics(&f->p, "yt2", "yr2", blo, bhi, "%g");
    collect_caption(f, &col, any_tp ? "cost-model FLOPs and bytes over the median, per GPU (a tp N world's rate / N); dashed: "
                                      "the one-GPU ceilings measured in each run"
                                    : "cost-model FLOPs and bytes over the median; dashed: the ceilings measured in each run");
    f->cols = 3;
    f->comment = "throughput: ctx tflops_per_gpu tbps_per_gpu";
    f->w = 1500, f->h = 700;
done:
    collect_free(&col);
    return rc;
}

/* One layer's attention op alone: the project's kernels (bench_kernels files: each head dim's default prefill
 * version, full causal attention from position 0, batch 1) beside the PyTorch SDPA anchors (flash, cuDNN), in a
 * figure of its own: it is not a whole model's prefill. */
static int fig_attention_op(figure *f)
{
    const plot_ctx *c = f->c;
    char lab[LABEL_MAX], ours[400] = "", anchors[400] = "", shape[64] = "";
    int rc = 0, n_ours = 0, n_anchor = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_kernel_bench(in)) continue;
        for (size_t k = 0; k < in->r.bench.n_cells && !rc; k++) {
            const orthros_bench_cell *m = &in->r.bench.cells[k];
            if (m->state != ORTHROS_CELL_MEASURED || strcmp(m->kind, "prefill") || !m->is_default || m->pos0 != 0 ||
                m->window != 0 || m->batch != 1 || m->ctx < 1024 || !isfinite(m->tflops))
                continue;
            snprintf(lab, sizeof lab, "ours (v%d), head dim %d", m->version, m->head_dim);
            series *s = series_get(&f->data, lab, m->head_dim == 64 ? "#1f5fa8" : "#d1451b", m->head_dim == 64 ? 1 : 2,
                                   m->head_dim == 64 ? 7 : 5);
            if (s) s->lw = 2.5, s->ps = 1.4;
            if ((rc = series_add(s, (point){m->ctx, m->tflops, 0, 0, 0})) < 0) break;
            rc = 0;
            if (!n_ours++) {
                char dev[128];
                clean_text(dev, sizeof dev, in->r.bench.hdr.device_name);
                snprintf(ours, sizeof ours, "ours: bench_kernels on %s, commit %.7s", dev, in->r.bench.hdr.git_commit);
            }
        }
    }
    static const char *const grays[] = {"#555555", "#999999", "#333333", "#b5b5b5"};
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->r.kind != ORTHROS_RESULT_ANCHORS) continue;
        for (size_t k = 0; k < in->r.anchors.n && !rc; k++) {
            const orthros_anchor_case *a = &in->r.anchors.cases[k];
            if (strcmp(a->op, "prefill") || a->batch != 1) continue;
            /* Causal attention FLOPs, 2 N^2 Hq d, where the file does not state the rate. */
            double tf = isfinite(a->tflops) ? a->tflops : 2.0 * a->ctx * (double)a->ctx * a->hq * a->head_dim / a->median_s / 1e12;
            char be[16];
            clean_text(be, sizeof be, a->backend);
            snprintf(lab, sizeof lab, "SDPA %s, head dim %d", be, a->head_dim);
            int cudnn = !strcmp(a->backend, "cudnn");
            series *s = series_get(&f->data, lab, grays[(cudnn ? 0 : 1) + (a->head_dim == 64 ? 0 : 2)], a->head_dim == 64 ? 1 : 2,
                                   cudnn ? 9 : 8);
            if (s) s->lw = 1.5, s->ps = 1.1;
            if ((rc = series_add(s, (point){a->ctx, tf, 0, 0, 0})) < 0) break;
            rc = 0;
            if (a->hq > 0 && !shape[0]) snprintf(shape, sizeof shape, "%d q / %d kv heads", a->hq, a->hkv);
            if (!n_anchor++) {
                char dev[128], torch[64];
                clean_text(dev, sizeof dev, in->r.anchors.device_name[0] ? in->r.anchors.device_name : "unknown device");
                clean_text(torch, sizeof torch, in->r.anchors.torch);
                snprintf(anchors, sizeof anchors, "anchors: PyTorch %s SDPA on %s", torch, dev);
            }
        }
    }
    if (!rc && !f->data.n) {
        f->why = "no prefill cases in the kernel bench (bench_kernels) or anchor (bench/kernels/anchors.py) files";
        goto done;
    }
    double lo, hi;
    y_extent(&f->data, &lo, &hi, 1);
    pre_styles(&f->p, &f->data, f->key_min);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", lo, hi, "%g");
    snprintf(f->t.caption, sizeof f->t.caption, "causal attention of one layer (%s), batch 1, TFLOP/s = 2 N^2 Hq d / time%s%s%s%s",
             shape[0] ? shape : "32 q / 8 kv heads", ours[0] ? "; " : "", ours, anchors[0] ? "; " : "", anchors);
    if (!n_ours) strncat(f->t.caption, "; no kernel bench file among the inputs (bench_kernels --json)", sizeof f->t.caption - strlen(f->t.caption) - 1);
    f->cols = 2;
    f->comment = "attention_op: ctx tflops";
done:
    return rc;
}

/* ---- heatmaps: one row per variant, one panel per configuration ---- */

/* A heatmap's cells are collected as raw points {x: ctx, y: the value (NaN: not run), lo: the value on the y axis,
 * w: the cell's samples}; raw.row is the variant. */

/* The index of name in rows[*n], appended when absent (-1 when full). */
static int row_of(char (*rows)[LABEL_MAX], int *n, const char *name)
{
    for (int r = 0; r < *n; r++)
        if (!strcmp(rows[r], name)) return r;
    if (*n == MAX_ROWS) return -1;
    clean_text(rows[*n], LABEL_MAX, name);
    return (*n)++;
}

/* "8 samples a cell", "2-10 samples a cell": the samples of the cells of row r (every row: r -1). */
static void samples_text(char *out, size_t n, const collect *c, int r)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < c->n; i++)
        if (r < 0 || c->r[i].row == r) lo = fmin(lo, c->r[i].p.w), hi = fmax(hi, c->r[i].p.w);
    if (!(hi > 0)) snprintf(out, n, "no samples");
    else if (lo == hi) snprintf(out, n, "%g sample%s a cell", lo, lo == 1 ? "" : "s");
    else snprintf(out, n, "%g-%g samples a cell", lo, hi);
}

/* Draws the collected cells: a row of panels per variant (wrapping after MAX_COLS), a panel per configuration (its
 * head and the facets that vary), each panel with the lengths and y values it ran (a hole inside them: 'not
 * run'); panels sized by the largest grid; heatmap.gp after NAME.gp. The samples a cell go to the row headings
 * (or, with one unnamed row, to the caption). */
static int heatmap(figure *f, collect *c, char (*rows)[LABEL_MAX], int nrows, const char *ylab_suffix, const char *what)
{
    enum { HEAD = 30, TOP = 56, BOTTOM = 84, LEFT = 14, RIGHT = 110 };
    char panels[MAX_PANELS][LABEL_MAX];
    int prow[MAX_PANELS], np = 0, rc = 0;
    int *panel_of = malloc((c->n + 1) * sizeof *panel_of);
    double *xs = malloc((c->n + 1) * sizeof *xs), *ys = malloc((c->n + 1) * sizeof *ys);
    if (!panel_of || !xs || !ys) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto done;
    }
    char differ[300];
    key_differ(differ, sizeof differ, c);
    for (size_t i = 0; i < c->n; i++) {
        char suffix[LABEL_MAX], label[LABEL_MAX * 2];
        key_suffix(suffix, sizeof suffix, c, c->r[i].key);
        snprintf(label, sizeof label, "%s%s", c->r[i].head, suffix);
        int q = 0;
        while (q < np && !(prow[q] == c->r[i].row && !strncmp(panels[q], label, LABEL_MAX - 1))) q++;
        if (q == np) {
            if (np == MAX_PANELS) {
                snprintf(f->refused, sizeof f->refused, "more than %d panels: the inputs differ in %s; plot fewer files at a time",
                         MAX_PANELS, differ);
                goto done;
            }
            snprintf(panels[np], LABEL_MAX, "%.*s", LABEL_MAX - 1, label);
            prow[np++] = c->r[i].row;
        }
        panel_of[i] = q;
    }
    /* Each panel's x and y values, and the largest grid, which sizes every panel. */
    size_t pnx[MAX_PANELS], pny[MAX_PANELS], mx = 1, my = 1;
    for (int q = 0; q < np; q++) {
        size_t nx = 0, ny = 0;
        for (size_t i = 0; i < c->n; i++)
            if (panel_of[i] == q) xs[nx++] = c->r[i].p.x, ys[ny++] = c->r[i].p.lo;
        pnx[q] = distinct(xs, nx), pny[q] = distinct(ys, ny);
        mx = pnx[q] > mx ? pnx[q] : mx, my = pny[q] > my ? pny[q] : my;
    }
    size_t longest = 0;
    for (int q = 0; q < np; q++) longest = strlen(panels[q]) > longest ? strlen(panels[q]) : longest;
    /* wide enough for its grid and for its title (about 7.5 pixels a character), centred over the grid */
    int PW = 96 + (int)fmax(fmax(230, 34.0 * (double)mx), 7.5 * (double)longest - 40), PH = 92 + (int)fmax(180, 17.0 * (double)my);
    /* Panels by variant (stably), in grid rows of at most MAX_COLS. */
    int order[MAX_PANELS], no = 0, grow[MAX_PANELS], gcol[MAX_PANELS], gvar[MAX_PANELS], ngrid = 0, cols = 1;
    for (int r = 0; r < nrows; r++)
        for (int q = 0; q < np; q++)
            if (prow[q] == r) order[no++] = q;
    for (int k = 0; k < no; k++) {
        int q = order[k];
        if (k == 0 || prow[order[k - 1]] != prow[q] || gcol[order[k - 1]] == MAX_COLS - 1) {
            gvar[ngrid] = prow[q];
            grow[q] = ngrid++, gcol[q] = 0;
        } else {
            grow[q] = grow[order[k - 1]], gcol[q] = gcol[order[k - 1]] + 1;
        }
        if (gcol[q] + 1 > cols) cols = gcol[q] + 1;
    }
    if (ngrid > MAX_ROWS * 2) {
        snprintf(f->refused, sizeof f->refused, "more than %d rows of panels: the inputs differ in %s; plot fewer files at a time",
                 MAX_ROWS * 2, differ);
        goto done;
    }
    int named = nrows > 1 || rows[0][0];
    int w = LEFT + cols * PW + RIGHT, h = TOP + ngrid * (PH + (named ? HEAD : 0)) + BOTTOM;
    if ((rc = mb_open(&f->dat))) goto done;
    fprintf(f->dat.f, "# %s: ix iy value n (ix, iy index the sorted distinct lengths and y values of the panel; value NaN "
                      "and n 0: not run); one block per panel\n", f->name);
    char pl[2048] = "", pr[2048] = "", pt[2048] = "", pb[2048] = "";
    int holes = 0;
    for (int k = 0; k < no; k++) {
        int q = order[k], g = grow[q];
        size_t nx = 0, ny = 0;
        for (size_t i = 0; i < c->n; i++)
            if (panel_of[i] == q) xs[nx++] = c->r[i].p.x, ys[ny++] = c->r[i].p.lo;
        nx = distinct(xs, nx), ny = distinct(ys, ny);
        char name[16];
        pre_set(&f->p, "nx%d = %zu", k, nx);
        pre_set(&f->p, "ny%d = %zu", k, ny);
        snprintf(name, sizeof name, "xt%d", k);
        pre_tics(&f->p, name, xs, nx, 1, NULL);
        snprintf(name, sizeof name, "yt%d", k);
        pre_tics(&f->p, name, ys, ny, 1, ylab_suffix);
        fprintf(f->dat.f, "%s\"%s\" iy value n\n", k ? "\n\n" : "", panels[q]);
        for (size_t iy = 0; iy < ny; iy++)
            for (size_t ix = 0; ix < nx; ix++) {
                const raw *hit = NULL;
                for (size_t i = 0; i < c->n && !hit; i++)
                    if (panel_of[i] == q && c->r[i].p.x == xs[ix] && c->r[i].p.lo == ys[iy]) hit = &c->r[i];
                if (!hit || isnan(hit->p.y)) fprintf(f->dat.f, "%zu %zu NaN 0\n", ix, iy), holes = 1;
                else fprintf(f->dat.f, "%zu %zu %.6g %g\n", ix, iy, hit->p.y, hit->p.w);
            }
        /* The panel's box in screen fractions, and its title above it. */
        double y0 = h - TOP - g * (PH + (named ? HEAD : 0)) - (named ? HEAD : 0); /* the top of its grid row, pixels up */
        double x0 = LEFT + gcol[q] * PW;
        double left = (x0 + 72) / w, right = (x0 + PW - 16) / w, top = (y0 - 26) / h, bottom = (y0 - PH + 46) / h;
        size_t a = strlen(pl), b = strlen(pr), d = strlen(pt), e = strlen(pb);
        snprintf(pl + a, sizeof pl - a, "%s%.4f", a ? " " : "", left);
        snprintf(pr + b, sizeof pr - b, "%s%.4f", b ? " " : "", right);
        snprintf(pt + d, sizeof pt - d, "%s%.4f", d ? " " : "", top);
        snprintf(pb + e, sizeof pb - e, "%s%.4f", e ? " " : "", bottom);
        pre_set(&f->p, "pc%d = %d", k, gcol[q]);
        int t = f->t.n_titles++;
        f->t.tx[t] = (left + right) / 2, f->t.ty[t] = top + 13.0 / h;
        memcpy(f->t.titles[t], panels[q], LABEL_MAX);
        /* The variant's heading, above its first grid row, with its samples a cell. */
        if (named && gcol[q] == 0 && (g == 0 || gvar[g - 1] != gvar[g]) && f->t.n_rows < MAX_ROWS * 2) {
            char smp[64];
            samples_text(smp, sizeof smp, c, gvar[g]);
            int r = f->t.n_rows++;
            f->t.rx[r] = (LEFT + 4.0) / w, f->t.ry[r] = (y0 + HEAD / 2.0) / h;
            snprintf(f->t.rows[r], LABEL_MAX, "%.90s%s%.60s", rows[gvar[g]], rows[gvar[g]][0] ? ", " : "", smp);
        }
    }
    pre_set(&f->p, "n = %d", no);
    pre_set(&f->p, "pl = '%s'", pl);
    pre_set(&f->p, "pr = '%s'", pr);
    pre_set(&f->p, "pt = '%s'", pt);
    pre_set(&f->p, "pb = '%s'", pb);
    pre_set(&f->p, "cbx = %.4f", (LEFT + cols * PW + 24.0) / w);
    pre_set(&f->p, "cby = %.4f", (double)BOTTOM / h);
    pre_set(&f->p, "cbw = %.4f", 18.0 / w);
    pre_set(&f->p, "cbh = %.4f", fmin(600.0, (double)(h - TOP - BOTTOM - (named ? HEAD : 0))) / h);
    char whole[400], smp[64] = "";
    if (!named) samples_text(smp, sizeof smp, c, -1);
    snprintf(whole, sizeof whole, "%s%s%s%s", what, smp[0] ? "; " : "", smp, holes ? "; a dash: not run" : "");
    collect_caption(f, c, whole);
    f->body = "heatmap.gp";
    f->w = w, f->h = h;
done:
    free(panel_of);
    free(xs);
    free(ys);
    return rc;
}

/* The order variants are drawn in. */
static int variant_rank(const char *v)
{
    static const char *const order[] = {"single", "multikey", "multivalue", "multiquery"};
    for (int i = 0; i < 4; i++)
        if (!strncmp(v, order[i], strlen(order[i]))) return i;
    return 4;
}

/* Heatmap rows sorted by variant_rank, keeping the raw points' row indices right. */
static void sort_rows(collect *c, char (*rows)[LABEL_MAX], int nrows)
{
    int perm[MAX_ROWS], inv[MAX_ROWS];
    for (int r = 0; r < nrows; r++) perm[r] = r;
    for (int a = 1; a < nrows; a++)
        for (int b = a; b > 0 && variant_rank(rows[perm[b]]) < variant_rank(rows[perm[b - 1]]); b--) {
            int t = perm[b];
            perm[b] = perm[b - 1], perm[b - 1] = t;
        }
    char tmp[MAX_ROWS][LABEL_MAX];
    for (int r = 0; r < nrows; r++) memcpy(tmp[r], rows[perm[r]], LABEL_MAX), inv[perm[r]] = r;
    memcpy(rows, tmp, (size_t)nrows * LABEL_MAX);
    for (size_t i = 0; i < c->n; i++) c->r[i].row = inv[c->r[i].row];
}

/* The accuracy heatmaps: niah (analytic checkpoint: depth x length, a row per variant), mqar (pairs x length),
 * ruler_niah (a row per variant and needle kind), ruler_vt (hops x length), ruler_cwe (words x length). RULER's cells
 * show its partial score (the mean fraction of a sample's expected answers found), the others the accuracy. */
static int fig_heatmap(figure *f)
{
    const plot_ctx *c = f->c;
    collect col = {0};
    char rows[MAX_ROWS][LABEL_MAX];
    int nrows = 0, rc = 0, ruler = !strncmp(f->name, "ruler_", 6), by_variant = !strcmp(f->name, "niah") || !strcmp(f->name, "ruler_niah");
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->r.kind != ORTHROS_RESULT_EVAL) continue;
        for (size_t k = 0; k < in->r.eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->r.eval.cells[k];
            if (strcmp(e->task, f->name)) continue;
            char row[LABEL_MAX] = "";
            if (by_variant && ruler) snprintf(row, sizeof row, "%s needle, %s", e->variant, e->needle);
            else if (by_variant) snprintf(row, sizeof row, "%s needle", e->variant[0] ? e->variant : "single");
            int r = row_of(rows, &nrows, row);
            if (r < 0) {
                snprintf(f->refused, sizeof f->refused, "more than %d variants", MAX_ROWS);
                goto done;
            }
            run_key key;
            run_key_of(&key, in, e->arch, -1, NULL);
            double v = ruler && isfinite(e->partial) ? e->partial : e->accuracy;
            rc = collect_add(&col, &key, e->arch, e->arch, NULL, 1, r, (point){e->ctx, v, e->axis, 0, (double)e->samples}, in->name);
        }
    }
    if (!rc && !col.n) {
        f->why = !strcmp(f->name, "niah") ? "no NIAH cells (eval files with task \"niah\")"
               : !strcmp(f->name, "mqar") ? "no MQAR cells (eval files with task \"mqar\")"
               : !strcmp(f->name, "ruler_niah") ? "no RULER NIAH cells (eval files with task \"ruler_niah\")"
               : !strcmp(f->name, "ruler_vt") ? "no variable-tracking cells (task \"ruler_vt\")"
                                              : "no common-words cells (task \"ruler_cwe\")";
        goto done;
    }
    if (rc) goto done;
    sort_rows(&col, rows, nrows);
    collect_finish(&col);
    rc = heatmap(f, &col, rows, nrows, !strcmp(f->name, "niah") || !strcmp(f->name, "ruler_niah") ? "%%" : "",
                 ruler ? "colour and number: RULER's partial score (the mean fraction of a sample's expected answers found; "
                         "a single needle scores all or nothing)"
                       : "colour and number: accuracy");
    f->comment = "heatmap";
done:
    collect_free(&col);
    return rc;
}

/* Perplexity vs window length: a line per architecture and configuration (text and token count among them; a
 * stride other than the window a series of its own), the bootstrap interval over windows as error bars. */
static int fig_ppl(figure *f)
{
    const plot_ctx *c = f->c;
    collect col = {0};
    char head[LABEL_MAX];
    int rc = 0, strides = 0, linear = 0;
    double stride0 = -1;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; c->in[i].r.kind == ORTHROS_RESULT_EVAL && k < c->in[i].r.eval.n_cells; k++) {
            const orthros_eval_cell *e = &c->in[i].r.eval.cells[k];
            if (!orthros_eval_is_ppl(e->task)) continue;
            /* Strides equal to the window are one series; other strides get series of their own. */
            double s = e->axis == e->ctx ? 0 : e->axis;
            strides |= stride0 >= 0 && s != stride0;
            stride0 = s;
        }
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->r.kind != ORTHROS_RESULT_EVAL) continue;
        for (size_t k = 0; k < in->r.eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->r.eval.cells[k];
            if (!orthros_eval_is_ppl(e->task)) continue;
            linear |= e->linear_tokens > 0;
            if (strides && e->axis != e->ctx) snprintf(head, sizeof head, "%s, stride %d", e->arch, e->axis);
            else snprintf(head, sizeof head, "%s%s", e->arch, e->linear_tokens > 0 ? " (linear-phase logits)" : "");
            run_key key;
            run_key_of(&key, in, e->arch, -1, NULL);
            point q = {e->ctx, e->ppl, isfinite(e->ppl_lo) ? e->ppl_lo : e->ppl, isfinite(e->ppl_hi) ? e->ppl_hi : e->ppl, 0};
            rc = collect_add(&col, &key, head, e->arch, NULL, 1, 0, q, in->name);
        }
    }
    if (!rc && !col.n) {
        f->why = "no perplexity cells (eval files with task \"ppl\")";
        goto done;
    }
    collect_finish(&col);
    if (rc || (rc = collect_series(f, &col)) || f->refused[0]) goto done;
    double lo, hi;
    y_extent(&f->data, &lo, &hi, 1);
    pre_styles(&f->p, &f->data, f->key_min);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", lo, hi, "%g");
    collect_caption(f, &col, linear ? "bars: bootstrap 95% over windows; orthros scores linear-phase (prefill) logits"
                                    : "bars: bootstrap 95% over windows");
    f->cols = 4;
    f->comment = "perplexity: window ppl ci95_lo ci95_hi";
done:
    collect_free(&col);
    return rc;
}

/* Recall accuracy per configuration, one bar each with its Wilson interval and its count above it (a bar of 0 is
 * a sliver on the axis with "0/N" above), the configurations named on the x axis. */
static int fig_recall(figure *f)
{
    const plot_ctx *c = f->c;
    collect col = {0};
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->r.kind != ORTHROS_RESULT_EVAL) continue;
        for (size_t k = 0; k < in->r.eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->r.eval.cells[k];
            if (strcmp(e->task, "recall")) continue;
            run_key key;
            run_key_of(&key, in, e->arch, -1, NULL);
            point q = {0, e->accuracy, e->ci_lo, e->ci_hi, (double)e->n};
            rc = collect_add(&col, &key, e->arch, e->arch, NULL, 1, 0, q, in->name);
        }
    }
    if (!rc && !col.n) {
        f->why = "no recall cells (eval files with task \"recall\")";
        goto done;
    }
    if (rc) goto done;
    collect_finish(&col);
    if (col.n > MAX_SERIES) {
        char differ[300];
        key_differ(differ, sizeof differ, &col);
        snprintf(f->refused, sizeof f->refused, "more than %d bars: the inputs differ in %s; plot fewer files at a time",
                 MAX_SERIES, differ);
        goto done;
    }
    if ((rc = mb_open(&f->dat))) goto done;
    fprintf(f->dat.f, "# recall: x accuracy ci95_lo ci95_hi colour(0xRRGGBB) label count; one bar per configuration\n");
    char last[LABEL_MAX] = "";
    shades sh = {0};
    size_t longest = 0; /* the longest line of a tic label */
    int lines = 1;
    double x = 0;
    for (size_t i = 0; i < col.n; i++) {
        const raw *r = &col.r[i];
        char suffix[LABEL_MAX], label[LABEL_MAX * 2];
        key_suffix(suffix, sizeof suffix, &col, r->key);
        int shade = shade_of(&sh, r->arch, suffix);
        if (i && strcmp(last, suffix)) x += 0.5; /* a gap between configurations */
        snprintf(last, sizeof last, "%s", suffix);
        /* The tic label: the architecture, then each varying facet on a line of its own ("\n", which gnuplot
         * reads in a quoted data field as a line break). */
        size_t j = (size_t)snprintf(label, sizeof label, "%.60s", r->head), line = j;
        int nl = 1;
        longest = line > longest ? line : longest;
        for (const char *p = suffix; *p && j + 3 < sizeof label; p++) {
            if (p[0] == ',' && p[1] == ' ') {
                label[j++] = '\\', label[j++] = 'n', p++, nl++, line = 0;
                continue;
            }
            label[j++] = *p, line++;
            longest = line > longest ? line : longest;
        }
        label[j] = '\0';
        lines = nl > lines ? nl : lines;
        long colour = strtol(arch_color(r->arch, shade) + 1, NULL, 16);
        long long k = llround(r->p.y * r->p.w);
        fprintf(f->dat.f, "%g %.6g %.6g %.6g %ld \"%s\" \"%lld/%lld\"\n", x, r->p.y, r->p.lo, r->p.hi, colour, label, k,
                (long long)r->p.w);
        x += 1;
    }
    pre_set(&f->p, "xmax = %g", x - 1);
    pre_set(&f->p, "bm = %d", 3 + (int)(1.3 * lines));
    collect_caption(f, &col, "bars: Wilson 95% intervals");
    f->comment = "recall";
    /* wide enough for the tic labels side by side (about 7 pixels a character) */
    int need = 160 + (int)(x + 0.5) * (int)(fmin((double)longest, 40) * 7.2 + 16);
    f->w = need > 1100 ? need : 1100, f->h = 600 + 18 * lines;
done:
    collect_free(&col);
    return rc;
}

/* ---- the whole decode step against its floor and PyTorch ---- */

/* A shape of the decode_step figure: the model's preset name (or its file's name), batch and cache depth; its floor
 * (the lowest of the inputs' cells of the shape: the bytes a step reads over the run's read ceiling). */
typedef struct {
    char model[64];
    int batch, ctx, order, id; /* order: the model's first appearance among the inputs; id: the shape's as first seen */
    double floor;
} step_shape;

static const char *step_model(const char *model) { return !strncmp(model, "preset:", 7) ? model + 7 : base_name(model); }

static int cmp_step_shape(const void *a, const void *b)
{
    const step_shape *x = a, *y = b;
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
    return x->ctx < y->ctx ? -1 : x->ctx > y->ctx;
}

/* The shape's index, or -1. */
static int step_shape_find(const step_shape *sh, int n, const char *model, int batch, int ctx)
{
    for (int i = 0; i < n; i++)
        if (sh[i].batch == batch && sh[i].ctx == ctx && !strcmp(sh[i].model, model)) return i;
    return -1;
}

/* The decode step of each shape (model, batch, cache depth) in the bench files' decode cells that state their floor,
 * a category each on a log axis of ms a step of the batch: the floor as a bar across it, a series per configuration
 * of ours (as fig_latency names them, the model and batch being the categories) and one per PyTorch anchor file of
 * bench/kernels/decode_anchor.py (its cases of the same shapes), each point with a note above it: ours the
 * fraction of the floor it reaches, an anchor its time over ours (when one configuration of ours ran the shape). */
#define STEP_SHAPES 32
static int fig_decode_step(figure *f)
{
    const plot_ctx *c = f->c;
    step_shape sh[STEP_SHAPES];
    char models[STEP_SHAPES][64], anchors[400] = "";
    int nsh = 0, nmod = 0, rc = 0, n_anchor = 0, left_out = 0;
    collect col = {0};
    /* Every measured decode cell with a floor: its shape (a category, numbered as it first comes) and its point, in
     * a series per configuration of ours whose key leaves the model and batch out (they are the categories). */
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        char model[64];
        clean_text(model, sizeof model, step_model(in->r.bench.cfg.model));
        for (size_t k = 0; k < in->r.bench.n_cells && !rc; k++) {
            const orthros_bench_cell *m = &in->r.bench.cells[k];
            if (strcmp(m->phase, "decode") || m->state != ORTHROS_CELL_MEASURED || !(m->floor_s > 0)) continue;
            int s = step_shape_find(sh, nsh, model, m->batch, m->ctx);
            if (s < 0) {
                if (nsh == STEP_SHAPES) {
                    snprintf(f->refused, sizeof f->refused, "more than %d shapes (model, batch, cache depth) of decode "
                             "cells with a floor; plot fewer files at a time", STEP_SHAPES);
                    goto done;
                }
                int o = 0;
                while (o < nmod && strcmp(models[o], model)) o++;
                if (o == nmod) snprintf(models[nmod++], sizeof models[0], "%s", model);
                s = nsh++;
                snprintf(sh[s].model, sizeof sh[s].model, "%s", model);
                sh[s].batch = m->batch, sh[s].ctx = m->ctx, sh[s].order = o, sh[s].id = s, sh[s].floor = m->floor_s;
            }
            sh[s].floor = fmin(sh[s].floor, m->floor_s);
            run_key key;
            run_key_of(&key, in, m->arch, -1, "decode");
            key.v[K_MODEL][0] = '\0';
            point q = cell_point(m);
            q.x = s;
            rc = collect_add(&col, &key, m->arch, m->arch, "decode", in->r.bench.cfg.tp, 0, q, in->name);
        }
    }
    if (rc) goto done;
    if (!col.n) {
        f->why = "no decode cells with a floor (the bytes a step reads over the read ceiling) in the bench files";
        goto done;
    }
    /* the categories in order (model as first seen, batch, depth), each point moved with its own */
    int place[STEP_SHAPES];
    qsort(sh, (size_t)nsh, sizeof *sh, cmp_step_shape);
    for (int i = 0; i < nsh; i++) place[sh[i].id] = i;
    for (size_t i = 0; i < col.n; i++) col.r[i].p.x = place[(int)col.r[i].p.x];
    collect_finish(&col);
    if ((rc = collect_series(f, &col)) || f->refused[0]) goto done;
    size_t n_ours = f->data.n;
    /* The anchors: a series per file, grey, of its cases whose shape is among ours. */
    static const char *const grays[] = {"#555555", "#999999", "#333333", "#b5b5b5"};
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->r.kind != ORTHROS_RESULT_ANCHORS || !in->r.anchors.steps) continue;
        char lab[LABEL_MAX], dev[128], torch[64];
        clean_text(dev, sizeof dev, in->r.anchors.device_name[0] ? in->r.anchors.device_name : "unknown device");
        clean_text(torch, sizeof torch, in->r.anchors.torch);
        int compiled = in->r.anchors.n && !strcmp(in->r.anchors.cases[0].backend, "compiled");
        snprintf(lab, sizeof lab, "PyTorch %s, %.60s", compiled ? "torch.compile + CUDA graph" : "eager + CUDA graph", dev);
        series *s = NULL; /* made at the file's first case of a shape among ours: no series without points */
        for (size_t k = 0; k < in->r.anchors.n && !rc; k++) {
            const orthros_anchor_case *a = &in->r.anchors.cases[k];
            int at = step_shape_find(sh, nsh, a->model, a->batch, a->ctx);
            if (at < 0) {
                left_out++;
                continue;
            }
            if (!s) {
                size_t before = f->data.n;
                s = series_get(&f->data, lab, grays[(compiled ? 0 : 1) + 2 * (n_anchor / 2 % 2)], 1, compiled ? 9 : 8);
                if (!s) {
                    rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
                    break;
                }
                if (f->data.n > before && f->data.n > MAX_SERIES) {
                    snprintf(f->refused, sizeof f->refused, "more than %d series: plot fewer anchor files at a time",
                             MAX_SERIES);
                    goto done;
                }
                s->lw = 1.5, s->ps = 1.4;
            }
            rc = series_add(s, (point){at, a->median_s, a->median_s, a->median_s, 0});
            if (rc == 1) {
                fprintf(stderr, "plot: %s: \"%s\" has two cases of %s batch %d ctx %d (the second from %s); the first is "
                                "drawn\n", f->name, s->label, a->model, a->batch, a->ctx, in->name);
                rc = 0;
            }
        }
        if (!s) continue;
        if (!n_anchor++) snprintf(anchors, sizeof anchors, "anchors: PyTorch %s, bench/kernels/decode_anchor.py", torch);
    }
    if (rc) goto done;
    /* The data: index 0 the shapes, then the series, each point with its note; the series spread across the
     * category. */
    double lo = INFINITY, hi = 0;
    if ((rc = mb_open(&f->dat))) goto done;
    fprintf(f->dat.f, "# decode_step: index 0 the shapes (x floor_s name), then one block per series (x median_s "
                      "ci95_lo_s ci95_hi_s note)\n# Written by orthros plot from result files.\n");
    fprintf(f->dat.f, "\"floor\" x floor_s shape\n");
    for (int i = 0; i < nsh; i++) {
        char ctx[32];
        len_label(ctx, sizeof ctx, sh[i].ctx);
        fprintf(f->dat.f, "%d %.9g \"%s b%d %s\"\n", i, sh[i].floor, sh[i].model, sh[i].batch, ctx);
        lo = fmin(lo, sh[i].floor), hi = fmax(hi, sh[i].floor);
    }
    const size_t S = f->data.n;
    for (size_t j = 0; j < S; j++) {
        series *s = &f->data.s[j];
        qsort(s->p, s->n, sizeof *s->p, cmp_point);
        fprintf(f->dat.f, "\n\n\"%s\" x median_s ci95_lo_s ci95_hi_s note\n", s->label);
        double off = S > 1 ? ((double)j - (double)(S - 1) / 2) * (0.6 / (double)(S - 1)) : 0;
        for (size_t k = 0; k < s->n; k++) {
            const point *q = &s->p[k];
            int at = (int)q->x;
            char note[32] = "";
            if (j < n_ours) {
                snprintf(note, sizeof note, "%.0f%%", 100 * sh[at].floor / q->y);
            } else if (n_ours) {
                /* over ours, where one configuration of ours ran the shape */
                const point *ours = NULL;
                int count = 0;
                for (size_t o = 0; o < n_ours; o++)
                    for (size_t m = 0; m < f->data.s[o].n; m++)
                        if ((int)f->data.s[o].p[m].x == at) ours = &f->data.s[o].p[m], count++;
                if (count == 1) snprintf(note, sizeof note, "%.2fx", q->y / ours->y);
            }
            fprintf(f->dat.f, "%.4f %.9g %.9g %.9g \"%s\"\n", at + off, q->y, q->lo, q->hi, note);
            lo = fmin(lo, fmin(q->y, q->lo)), hi = fmax(hi, fmax(q->y, q->hi));
        }
    }
    pre_styles(&f->p, &f->data, 44);
    pre_set(&f->p, "nshape = %d", nsh);
    pre_logtics(&f->p, "yt", "yr", lo * 1e3, hi * 1e3 * 1.3, "%g");
    char what[600];
    snprintf(what, sizeof what, "ms a step of the batch; ours: median with its bootstrap 95%% interval, the %% of the "
             "floor it reaches above it%s%s%s", n_anchor ? "; PyTorch: its median, its time over ours above it" : "",
             anchors[0] ? "; " : "", anchors);
    if (left_out)
        snprintf(what + strlen(what), sizeof what - strlen(what), "; %d anchor case%s of shapes not among ours left out",
                 left_out, left_out == 1 ? "" : "s");
    collect_caption(f, &col, what);
    f->h = 680; /* (the width grows with the key, as a line figure's) */
done:
    collect_free(&col);
    return rc;
}

static const figure_fn figure_fns[ORTHROS_PLOT_FIGURES] = {fig_prefill, fig_speedup, fig_decode, fig_throughput,
                                                           fig_attention_op, fig_heatmap, fig_heatmap, fig_heatmap,
                                                           fig_heatmap, fig_heatmap, fig_ppl, fig_recall,
                                                           fig_decode_step};

int orthros_plot_run(orthros_plot_counts *counts, const char *const *paths, size_t n, const orthros_plot_opts *o)
{
    plot_ctx c = {0};
    int rc = 0;
    memset(counts, 0, sizeof *counts);
    if (!o->formats || o->formats >= (1 << ORTHROS_PLOT_FORMATS)) return orthros_error(ORTHROS_EINVAL, "no output format");
    if (n > MAX_INPUTS) return orthros_error(ORTHROS_EINVAL, "more than %d input files", MAX_INPUTS);
    c.in = calloc(n ? n : 1, sizeof *c.in);
    c.o = o, c.counts = counts;
    if (!c.in) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++, c.n++) {
        /* Every input is read and validated before anything is drawn. */
        c.in[i].name = paths[i];
        if ((rc = orthros_any_result_read(&c.in[i].r, paths[i]))) goto done;
        if (c.in[i].r.kind == ORTHROS_RESULT_EVAL && orthros_eval_is_mc(c.in[i].r.eval.cfg.task))
            fprintf(stderr, "plot: %s holds multiple-choice (mc) cells; no figure uses them (orthros report prints their "
                            "table)\n", paths[i]);
    }
    if ((rc = orthros_mkdir_p(o->out_dir))) goto done;
    for (int k = 0; k < ORTHROS_PLOT_FIGURES && !rc; k++) {
        figure *f = calloc(1, sizeof *f);
        if (!f) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        f->c = &c, f->name = orthros_plot_figure_names[k];
        if (!(rc = figure_fns[k](f)) && !f->why && !f->refused[0]) rc = figure_run(f);
        if (rc) orthros_error_prefix(rc, f->name);
        else if (f->refused[0]) {
            fprintf(stderr, "plot: %s refused: %s\n", f->name, f->refused);
            counts->refused++;
        } else if (f->why) {
            if (o->verbose) fprintf(stderr, "plot: %s skipped: %s\n", f->name, f->why);
            counts->skipped++;
        } else {
            counts->made++;
        }
        figure_free(f);
        free(f);
    }
done:
    for (size_t i = 0; i < c.n; i++) orthros_any_result_free(&c.in[i].r);
    free(c.in);
    return rc;
}

/* "png,svg,pdf" -> a mask of formats. */
static int parse_formats(unsigned *mask, const char *s)
{
    static const char *const names[] = {"png", "svg", "pdf"};
    *mask = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < ORTHROS_PLOT_FORMATS; i++)
            if (!strcmp(t, names[i])) *mask |= 1u << i, found = 1;
        if (!found) return -1;
    }
    return *mask ? 0 : -1;
}

int orthros_cmd_plot(int argc, char **argv)
{
    const char *cmd = "plot", *format = "png";
    orthros_plot_opts o = {.out_dir = NULL, .formats = 0, .scripts_dir = NULL, .gnuplot = NULL, .verbose = 0};
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "orthros plot RESULT.json... --out DIR: figures from result files only, through gnuplot.\n"
                     "Inputs are recognised by content: bench files (orthros bench), kernel bench files (bench_kernels),\n"
                     "eval files (orthros eval: NIAH, MQAR, RULER, recall and perplexity cells) and PyTorch anchor files\n"
                     "(bench/kernels/anchors.py's SDPA, decode_anchor.py's decode steps); each is validated first. Runs\n"
                     "are never mixed: a series (or panel) per configuration, named by what differs between the inputs\n"
                     "(model, text, tail, window, tp, device, kernels, commit, ...); what they share goes to the caption.\n"
                     "Figures, each as DIR/NAME.png, .svg or .pdf with its data in DIR/NAME.dat and texts in DIR/NAME.txt:\n"
                     "  prefill_latency  model prefill time vs context length, log-log, per architecture\n"
                     "  speedup          speedup over transformer vs length, 95% band (the 21.9x line when in reach)\n"
                     "  decode_latency   decode time per token vs cache length\n"
                     "  throughput       achieved TFLOP/s and TB/s per GPU against the runs' measured ceilings\n"
                     "  attention_op     one layer's attention op: our kernels (bench_kernels) beside the SDPA anchors\n"
                     "  niah             NIAH accuracy heatmaps, depth x length, a row per variant\n"
                     "  mqar             MQAR accuracy heatmaps, pairs x length\n"
                     "  ruler_niah       RULER NIAH heatmaps (text models), depth x length, a row per variant and needle,\n"
                     "                   RULER's partial score\n"
                     "  ruler_vt         variable-tracking heatmaps, hops x length, partial score\n"
                     "  ruler_cwe        common-words heatmaps, words x length, partial score\n"
                     "  ppl              perplexity vs window length, bootstrap 95% bars\n"
                     "  recall           recall accuracy per configuration, Wilson 95% bars\n"
                     "  decode_step      the decode step per shape (model, batch, cache depth) against its floor and\n"
                     "                   the PyTorch decode-step anchors\n"
                     "A figure whose data is absent from the inputs is skipped (--verbose names it).",
                     ORTHROS_CMD_MAX_POS);
    orthros_cmd_add(&c, "out", ORTHROS_OPT_STR, &o.out_dir, "DIR", "output folder, created when absent (required)");
    orthros_cmd_add(&c, "format", ORTHROS_OPT_STR, &format, "LIST", "png, svg, pdf, or a comma-separated list (default png)");
    orthros_cmd_add(&c, "scripts", ORTHROS_OPT_STR, &o.scripts_dir, "DIR",
                    "take the gnuplot scripts from DIR (default $ORTHROS_PLOTS_DIR, else the copies compiled into this "
                    "binary from plots/)");
    orthros_cmd_add(&c, "gnuplot", ORTHROS_OPT_STR, &o.gnuplot, "PROG", "the gnuplot program (default $ORTHROS_GNUPLOT, else gnuplot)");
    orthros_cmd_add(&c, "verbose", ORTHROS_OPT_FLAG, &o.verbose, NULL,
                    "name the figures skipped for want of data, and print gnuplot's warnings");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!c.n_pos || !o.out_dir) return orthros_cmd_usage(&c, "need result files and --out DIR (see --help)");
    if (parse_formats(&o.formats, format)) return orthros_cmd_usage(&c, "--format takes png, svg, pdf or a list of them (got \"%s\")", format);
    if (!o.scripts_dir) o.scripts_dir = getenv("ORTHROS_PLOTS_DIR");
    if (o.scripts_dir && !*o.scripts_dir) o.scripts_dir = NULL; /* ORTHROS_PLOTS_DIR= : the compiled-in scripts */
    if (!o.gnuplot) o.gnuplot = getenv("ORTHROS_GNUPLOT");
    if (!o.gnuplot) o.gnuplot = "gnuplot";
    /* The output folder is gnuplot's working folder: the scripts' path must not be relative to ours. */
    char scripts_abs[4200];
    if (o.scripts_dir && o.scripts_dir[0] != '/' && realpath(o.scripts_dir, scripts_abs)) o.scripts_dir = scripts_abs;
    orthros_plot_counts n;
    int rc = orthros_plot_run(&n, c.pos, (size_t)c.n_pos, &o);
    if (rc) return orthros_cmd_fail(cmd, rc);
    char extra[200] = "";
    if (n.skipped && !o.verbose) snprintf(extra, sizeof extra, "; %d without data in these files (--verbose names them)", n.skipped);
    if (n.warnings && !o.verbose)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "; gnuplot warned %d time%s (--verbose shows)", n.warnings,
                 n.warnings == 1 ? "" : "s");
    fprintf(stderr, "plot: %d figure%s in %s%s%s\n", n.made, n.made == 1 ? "" : "s", o.out_dir,
            n.refused ? ", some refused (above)" : "", extra);
    return n.made && !n.refused ? 0 : 1;
}
