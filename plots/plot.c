/* orthros plot: every figure of DESIGN section 5 from result files only.
 *
 * Safety: nothing read from a result file or an argument reaches a gnuplot command line or a shell. Each figure's
 * numbers and every text that comes from data (series titles, panel titles, the caption naming the model, device
 * and commit) go to data files that gnuplot reads as data (OUT/NAME.dat, OUT/NAME.txt: titles as `columnheader`,
 * texts drawn `with labels`), which gnuplot never evaluates. The script is the fixed plots/common.gp + NAME.gp +
 * overlay.gp, fed on gnuplot's stdin, preceded by variable settings the driver makes from numbers and fixed words
 * only (checked by safe_value()); gnuplot runs with OUT as its working folder, so file names in the script are
 * the fixed relative names NAME.dat, NAME.txt and NAME.png. */
#define _GNU_SOURCE
#include "plot.h"
#include "options.h"
#include "result_bench.h"
#include "result_eval.h"
#include "scripts.h"
#include "util.h"

#include <errno.h>
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

extern char **environ;

const char *const orthros_plot_figure_names[ORTHROS_PLOT_FIGURES] = {
    "prefill_latency", "speedup", "decode_latency", "throughput", "attention_op", "niah", "mqar",
    "ruler_niah",      "ruler_vt", "ruler_cwe",      "ppl",        "recall"};

/* ---- series ---- */

typedef struct {
    double x, y, lo, hi, w; /* w: extra column (throughput: TB/s; heatmaps: n) */
} point;

typedef struct {
    char label[LABEL_MAX];
    const char *color;
    int dash, pt;
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
 * no '#' (it would start a comment), no control character. */
static void clean_text(char *dst, size_t n, const char *src)
{
    size_t j = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && j + 4 < n; p++) {
        if (*p == '"') dst[j++] = '\'';
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

/* A colour per architecture; the inputs' second and third models get a lighter and a darker shade of it. */
static int arch_index(const char *arch)
{
    for (int i = 0; orthros_arch_names[i]; i++)
        if (!strcmp(arch, orthros_arch_names[i])) return i;
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

static int phase_dash(const char *phase) { return !strcmp(phase, "decode") ? 2 : !strcmp(phase, "e2e") ? 4 : 1; }

/* ---- inputs ---- */

typedef struct {
    const char *name;
    orthros_result_kind kind;
    orthros_bench_file bench;
    orthros_eval_file eval;
    orthros_anchor_file anchors;
} input;

typedef struct {
    input *in;
    size_t n;
    int multi_model, multi_batch, multi_tp; /* labels name the model / batch / --tp only when the inputs hold several */
    const orthros_plot_opts *o;
} plot_ctx;

/* Reads and validates one input file of any kind. */
static int input_read(input *in, const char *path)
{
    cJSON *root = NULL;
    orthros_result_header h;
    memset(in, 0, sizeof *in);
    in->name = path;
    int rc = orthros_result_load(&root, path, 0);
    if (!rc) rc = orthros_result_header_read(&h, root, path);
    if (!rc) {
        in->kind = h.kind;
        if (h.kind == ORTHROS_RESULT_BENCH) rc = orthros_bench_file_from_json(&in->bench, root, path);
        else if (h.kind == ORTHROS_RESULT_EVAL) rc = orthros_eval_file_from_json(&in->eval, root, path);
        else rc = orthros_anchor_file_from_json(&in->anchors, root, path);
    }
    cJSON_Delete(root);
    return rc;
}

static void input_free(input *in)
{
    if (in->kind == ORTHROS_RESULT_BENCH) orthros_bench_file_free(&in->bench);
    else if (in->kind == ORTHROS_RESULT_EVAL) orthros_eval_file_free(&in->eval);
    else orthros_anchor_file_free(&in->anchors);
}

static int is_model_bench(const input *in) { return in->kind == ORTHROS_RESULT_BENCH && strcmp(in->bench.cfg.source, "bench_kernels"); }

/* The rank of a bench file's model among the inputs' distinct models, in input order. */
static int model_index(const plot_ctx *c, const input *in)
{
    const char *m = orthros_bench_model_label(&in->bench);
    int k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!is_model_bench(&c->in[i])) continue;
        const char *mi = orthros_bench_model_label(&c->in[i].bench);
        if (!strcmp(mi, m)) return k;
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= is_model_bench(&c->in[j]) && !strcmp(orthros_bench_model_label(&c->in[j].bench), mi);
        k += !seen;
    }
    return 0;
}

/* The label of a bench series: arch [phase] [(model)] [batch B]. */
static void bench_label(char *out, size_t n, const plot_ctx *c, const input *in, const char *arch, const char *phase,
                        int batch)
{
    char b[32] = "", m[96] = "", t[32] = "";
    if (c->multi_model) snprintf(m, sizeof m, " (%s)", orthros_bench_model_label(&in->bench));
    if (c->multi_tp) snprintf(t, sizeof t, ", tp %d", in->bench.cfg.tp);
    if (c->multi_batch) snprintf(b, sizeof b, ", batch %d", batch);
    snprintf(out, n, "%s%s%s%s%s%s", arch, phase ? " " : "", phase ? phase : "", m, t, b);
}

/* Appends s to a ", "-separated list unless it is already an item of it. */
static void add_item(char *list, size_t n, const char *s)
{
    size_t len = strlen(s), used = strlen(list);
    for (const char *p = list; (p = strstr(p, s)); p++)
        if ((p == list || (p >= list + 2 && p[-2] == ',' && p[-1] == ' ')) && (p[len] == ',' || p[len] == '\0')) return;
    snprintf(list + used, n - used, "%s%s", used ? ", " : "", s);
}

/* "NVIDIA H200, commit 33ba9f3" from the headers of the inputs of one kind. */
static void provenance(char *out, size_t n, const plot_ctx *c, orthros_result_kind kind)
{
    char devs[256] = "", commits[160] = "";
    for (size_t i = 0; i < c->n; i++) {
        const input *in = &c->in[i];
        if (in->kind != kind || kind == ORTHROS_RESULT_ANCHORS) continue;
        const orthros_result_header *h = kind == ORTHROS_RESULT_BENCH ? &in->bench.hdr : &in->eval.hdr;
        char cm[32], dev[160];
        snprintf(cm, sizeof cm, "%.7s%s", h->git_commit, h->dirty ? "+dirty" : "");
        orthros_result_device_text(dev, sizeof dev, h);
        add_item(devs, sizeof devs, dev);
        add_item(commits, sizeof commits, cm);
    }
    snprintf(out, n, "%s, commit %s", devs, commits);
}

/* "llama3.2-1b, llama3.1-8b" over the bench inputs. */
static void models_of(char *out, size_t n, const plot_ctx *c)
{
    out[0] = '\0';
    for (size_t i = 0; i < c->n; i++)
        if (is_model_bench(&c->in[i])) add_item(out, n, orthros_bench_model_label(&c->in[i].bench));
}

/* ---- gnuplot ---- */

/* A gnuplot script being put together: variable settings made by the driver, then the fixed scripts. */
typedef struct {
    char text[8192];
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
    char line[2048];
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

/* n, colors, dashes, points: one word per series. */
static void pre_styles(prelude *p, const series_list *l)
{
    char colors[4096] = "", dashes[1024] = "", points[1024] = "";
    for (size_t i = 0; i < l->n; i++) {
        size_t a = strlen(colors), b = strlen(dashes), c = strlen(points);
        snprintf(colors + a, sizeof colors - a, "%s%s", i ? " " : "", l->s[i].color ? l->s[i].color : "#555555");
        snprintf(dashes + b, sizeof dashes - b, "%s%d", i ? " " : "", l->s[i].dash);
        snprintf(points + c, sizeof points - c, "%s%d", i ? " " : "", l->s[i].pt);
    }
    pre_set(p, "n = %zu", l->n);
    pre_set(p, "colors = \"%s\"", colors);
    pre_set(p, "dashes = \"%s\"", dashes);
    pre_set(p, "points = \"%s\"", points);
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
    if (!(lo > 0) || !(hi >= lo)) return;
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

/* Feeds the script to gnuplot on stdin, in the output folder; waits for it. */
static int spawn_gnuplot(const orthros_plot_opts *o, const char *script, size_t len)
{
    int fds[2], rc = 0, st = 0;
    if (pipe(fds) != 0) return orthros_error(ORTHROS_EIO, "pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    posix_spawn_file_actions_addchdir_np(&fa, o->out_dir);
    char *argv[] = {(char *)o->gnuplot, NULL};
    pid_t pid;
    fflush(NULL);
    int err = posix_spawnp(&pid, o->gnuplot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (err) {
        close(fds[1]);
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
        if (errno != EINTR) return orthros_error(ORTHROS_EIO, "waiting for gnuplot: %s", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        rc = orthros_error(ORTHROS_EINVAL, "gnuplot failed (%s %d; its messages are above)",
                           WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return rc;
}

/* Draws figure `fig` in every requested format: the prelude, common.gp, FIG.gp, the shared body (heatmap.gp for
 * the heatmaps; NULL for none) and overlay.gp. */
static int run_gnuplot(const plot_ctx *c, const char *fig, const prelude *p, const char *body)
{
    const orthros_plot_opts *o = c->o;
    if (p->bad) return orthros_error(ORTHROS_EINVAL, "%s: a figure setting is not a plain number or word (a bug)", fig);
    int rc = 0;
    for (int f = 0; f < ORTHROS_PLOT_FORMATS && !rc; f++) {
        if (!(o->formats & (1 << f))) continue;
        static const char *const ext[] = {"png", "svg", "pdf"};
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        /* Figure sizes in pixels; the heatmaps size themselves by their panel grid (w, h in the prelude). */
        int w = !strcmp(fig, "throughput") ? 1500 : !strcmp(fig, "ppl") || !strcmp(fig, "recall") ? 1300 : 1100;
        int h = !strcmp(fig, "throughput") ? 640 : 620;
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
        if (!rc) rc = spawn_gnuplot(o, text, len);
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

/* The figure's texts (caption and panel titles) as data: index 0 the caption, index 1 panel titles at their
 * screen positions (x, y, text); an index is never empty. */
typedef struct {
    char caption[600];
    double tx[64], ty[64];
    char titles[64][LABEL_MAX];
    int n_titles;
} texts;

static int write_texts(const plot_ctx *c, const char *fig, const texts *t)
{
    membuf m;
    char clean[640], name[64];
    int rc = mb_open(&m);
    if (rc) return rc;
    clean_text(clean, sizeof clean, t->caption);
    fprintf(m.f, "# The texts of %s, drawn by overlay.gp: index 0 the caption (x as a fraction of the width, y in pixels "
                 "from the bottom), index 1 panel titles.\n", fig);
    /* The caption in lines of at most CAPTION_LINE characters, broken after "; " where it can be (3 lines at most). */
    enum { CAPTION_LINE = 150 };
    char *lines[3];
    int nl = 0;
    for (char *p = clean; *p && nl < 3;) {
        lines[nl++] = p;
        size_t len = strlen(p);
        if (len <= CAPTION_LINE || nl == 3) break;
        char *cut = NULL;
        for (char *q = p; q + 2 <= p + CAPTION_LINE; q++)
            if (q[0] == ';' && q[1] == ' ') cut = q + 1;
        if (!cut) cut = p + CAPTION_LINE;
        *cut = '\0';
        for (p = cut + 1; *p == ' '; p++) {}
    }
    for (int i = 0; i < nl; i++) fprintf(m.f, "0.01 %d \"%s\"\n", 12 + 15 * (nl - 1 - i), lines[i]);
    if (!nl) fprintf(m.f, "0.01 12 \"\"\n");
    fprintf(m.f, "\n\n");
    for (int i = 0; i < t->n_titles; i++) fprintf(m.f, "%.4f %.4f \"%s\"\n", t->tx[i], t->ty[i], t->titles[i]);
    if (!t->n_titles) fprintf(m.f, "0.5 0.99 \"\"\n");
    snprintf(name, sizeof name, "%s.txt", fig);
    return mb_save(&m, c->o->out_dir, name);
}

/* ---- the figure skeleton ---- */

/* One figure: its data, its texts, its script and the run that draws it. A figure function fills it from the
 * inputs, or sets `why` when their data is absent (the figure is then skipped); figure_run writes NAME.dat (the
 * series as index blocks of `cols` columns, or what the function wrote into `dat` itself, as the heatmaps do) and
 * NAME.txt, and draws it with the prelude, common.gp, NAME.gp, `body` and overlay.gp. */
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
    const char *why;     /* set when the inputs hold no data for the figure: why it is skipped */
} figure;

/* A figure function: fills f, or sets f->why. */
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
    return run_gnuplot(f->c, f->name, &f->p, f->body);
}

/* ---- figures ---- */

/* Median and interval of a measured cell, in seconds. */
static point cell_point(const orthros_bench_cell *m)
{
    point p = {m->ctx, m->stats.median, m->stats.ci_lo, m->stats.ci_hi, 0};
    if (!isfinite(p.lo)) p.lo = p.y;
    if (!isfinite(p.hi)) p.hi = p.y;
    return p;
}

/* Bench cells of one phase as series per (arch, model, batch); skipped and failed cells go to `skipped` as
 * points at their context with y NaN. */
static int bench_series(const plot_ctx *c, const char *phase, series_list *l, series_list *skipped, int with_phase)
{
    char lab[LABEL_MAX];
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        int mi = model_index(c, in);
        for (size_t k = 0; k < in->bench.n_cells && !rc; k++) {
            const orthros_bench_cell *m = &in->bench.cells[k];
            if (strcmp(m->phase, phase)) continue;
            bench_label(lab, sizeof lab, c, in, m->arch, with_phase ? m->phase : NULL, m->batch);
            series *s = series_get(m->state == ORTHROS_CELL_MEASURED ? l : skipped, lab, arch_color(m->arch, mi),
                                   phase_dash(m->phase), arch_point(m->arch, mi));
            rc = series_add(s, m->state == ORTHROS_CELL_MEASURED ? cell_point(m) : (point){m->ctx, NAN, NAN, NAN, 0});
        }
    }
    return rc;
}

/* Skipped cells are drawn as crosses on the top edge of a latency figure: one block appended after the
 * measured series, at y = top. */
static int add_skipped(series_list *l, const series_list *skipped, double top)
{
    if (!skipped->n) return 0;
    series *s = series_get(l, "not run (skipped or failed)", "#888888", 1, 2);
    for (size_t i = 0; i < skipped->n; i++)
        for (size_t j = 0; j < skipped->s[i].n; j++) {
            int rc = series_add(s, (point){skipped->s[i].p[j].x, top, top, top, 0});
            if (rc) return rc;
        }
    return 0;
}

/* Caption of the bench figures: models, batch, statistic, devices and commits. */
static void bench_caption(char *out, size_t n, const plot_ctx *c, const char *what)
{
    char models[300], prov[400];
    models_of(models, sizeof models, c);
    provenance(prov, sizeof prov, c, ORTHROS_RESULT_BENCH);
    snprintf(out, n, "model %s; %s; %s", models, what, prov);
}

/* A latency figure (prefill or decode): series with error bars on log-log axes, skipped cells marked. */
static int fig_latency(figure *f, const char *phase, double scale)
{
    const plot_ctx *c = f->c;
    series_list skipped = {0};
    double lo, hi;
    int rc = bench_series(c, phase, &f->data, &skipped, 0);
    if (!rc && !f->data.n) {
        f->why = !strcmp(phase, "prefill") ? "no prefill measurements in the bench files" : "no decode measurements in the bench files";
        goto done;
    }
    y_extent(&f->data, &lo, &hi, scale);
    if (!rc) rc = add_skipped(&f->data, &skipped, hi * 1.2 / scale);
    pre_styles(&f->p, &f->data);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", lo, hi * 1.2, "%g");
    pre_set(&f->p, "nskip = %d", skipped.n ? 1 : 0);
    bench_caption(f->t.caption, sizeof f->t.caption, c, "median with its bootstrap 95% interval; crosses on the top edge: not run");
    f->cols = 4;
    f->comment = "latency: ctx median_s ci95_lo_s ci95_hi_s";
done:
    series_list_free(&skipped);
    return rc;
}

static int fig_prefill(figure *f) { return fig_latency(f, "prefill", 1); }
static int fig_decode(figure *f) { return fig_latency(f, "decode", 1e3); }

static int fig_speedup(figure *f)
{
    const plot_ctx *c = f->c;
    char lab[LABEL_MAX];
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        int mi = model_index(c, in);
        for (size_t k = 0; k < in->bench.n_speedups && !rc; k++) {
            const orthros_speedup *e = &in->bench.speedups[k];
            bench_label(lab, sizeof lab, c, in, e->arch, e->phase, e->batch);
            point q = {e->ctx, e->speedup, isfinite(e->ci_lo) ? e->ci_lo : e->speedup, isfinite(e->ci_hi) ? e->ci_hi : e->speedup, 0};
            rc = series_add(series_get(&f->data, lab, arch_color(e->arch, mi), phase_dash(e->phase), arch_point(e->arch, mi)), q);
        }
    }
    if (!rc && !f->data.n) {
        f->why = "no speedups (the bench files need transformer and another architecture)";
        goto done;
    }
    double lo, hi;
    y_extent(&f->data, &lo, &hi, 1);
    pre_styles(&f->p, &f->data);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", fmin(lo, 0.9), fmax(hi, 25), "%gx");
    bench_caption(f->t.caption, sizeof f->t.caption, c, "median(transformer) / median(arch), band: bootstrap 95% interval over rounds");
    f->cols = 4;
    f->comment = "speedup: ctx speedup ci95_lo ci95_hi";
done:
    return rc;
}

static int fig_throughput(figure *f)
{
    const plot_ctx *c = f->c;
    char lab[LABEL_MAX];
    int rc = 0;
    double gemm = NAN, copy = NAN;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (!is_model_bench(in)) continue;
        int mi = model_index(c, in);
        if (isnan(gemm)) gemm = in->bench.ceilings.gemm_tflops, copy = in->bench.ceilings.copy_tbps;
        for (size_t k = 0; k < in->bench.n_cells && !rc; k++) {
            const orthros_bench_cell *m = &in->bench.cells[k];
            if (m->state != ORTHROS_CELL_MEASURED || !isfinite(m->tflops) || !isfinite(m->tbps)) continue;
            bench_label(lab, sizeof lab, c, in, m->arch, m->phase, m->batch);
            rc = series_add(series_get(&f->data, lab, arch_color(m->arch, mi), phase_dash(m->phase), arch_point(m->arch, mi)),
                            (point){m->ctx, m->tflops, m->tbps, 0, 0});
        }
    }
    if (!rc && !f->data.n) {
        f->why = "no measurements with a cost model in the bench files";
        goto done;
    }
    double tlo = INFINITY, thi = 0, blo = INFINITY, bhi = 0;
    for (size_t i = 0; i < f->data.n; i++)
        for (size_t j = 0; j < f->data.s[i].n; j++) {
            const point *q = &f->data.s[i].p[j];
            if (q->y > 0) tlo = fmin(tlo, q->y), thi = fmax(thi, q->y);
            if (q->lo > 0) blo = fmin(blo, q->lo), bhi = fmax(bhi, q->lo);
        }
    pre_styles(&f->p, &f->data);
    pre_xtics(&f->p, &f->data);
    pre_set(&f->p, "gemm = %.6g", isfinite(gemm) ? gemm : -1);
    pre_set(&f->p, "copy = %.6g", isfinite(copy) ? copy : -1);
    pre_logtics(&f->p, "yt1", "yr1", tlo, isfinite(gemm) ? fmax(thi, gemm) : thi, "%g");
    pre_logtics(&f->p, "yt2", "yr2", blo, isfinite(copy) ? fmax(bhi, copy) : bhi, "%g");
    bench_caption(f->t.caption, sizeof f->t.caption, c, "cost-model FLOPs and bytes over the median; dashed: the run's GEMM and copy ceilings");
    f->cols = 3;
    f->comment = "throughput: ctx tflops tbps";
done:
    return rc;
}

/* The attention op alone (one layer, PyTorch SDPA anchors), in its own figure: it is not a whole model's prefill. */
static int fig_attention_op(figure *f)
{
    const plot_ctx *c = f->c;
    char lab[LABEL_MAX], devs[256] = "";
    int rc = 0;
    static const char *const colors[] = {"#444444", "#999999", "#1f5fa8", "#d1451b", "#6b6b6b", "#b5b5b5"};
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != ORTHROS_RESULT_ANCHORS) continue;
        add_item(devs, sizeof devs, in->anchors.device_name[0] ? in->anchors.device_name : "unknown device");
        for (size_t k = 0; k < in->anchors.n && !rc; k++) {
            const orthros_anchor_case *a = &in->anchors.cases[k];
            if (strcmp(a->op, "prefill") || a->batch != 1) continue;
            /* Causal attention FLOPs, 2 N^2 Hq d, where the file does not state the rate. */
            double tf = isfinite(a->tflops) ? a->tflops : 2.0 * a->ctx * (double)a->ctx * a->hq * a->head_dim / a->median_s / 1e12;
            snprintf(lab, sizeof lab, "SDPA %s, head dim %d", a->backend, a->head_dim);
            size_t before = f->data.n;
            series *s = series_get(&f->data, lab, NULL, a->head_dim == 64 ? 1 : 2, strcmp(a->backend, "flash") ? 7 : 5);
            if (s && f->data.n > before) s->color = colors[(f->data.n - 1) % 6];
            rc = series_add(s, (point){a->ctx, tf, 0, 0, 0});
        }
    }
    if (!rc && !f->data.n) {
        f->why = "no prefill cases in the anchor files (bench/kernels/anchors.py)";
        goto done;
    }
    double lo, hi;
    y_extent(&f->data, &lo, &hi, 1);
    pre_styles(&f->p, &f->data);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", lo, hi, "%g");
    snprintf(f->t.caption, sizeof f->t.caption, "causal attention of one layer (32 q / 8 kv heads), TFLOP/s = 2 N^2 Hq d / time; %s", devs);
    f->cols = 2;
    f->comment = "attention_op: ctx tflops";
done:
    return rc;
}

/* ---- heatmaps (NIAH: depth x length; MQAR: pairs x length) ---- */

typedef struct {
    char panel[LABEL_MAX];
    double x, y, k, n; /* coordinates, correct and trials summed over files */
} acc_cell;

typedef struct {
    acc_cell *a;
    size_t n, cap;
} acc_list;

static int acc_add(acc_list *l, const char *panel, double x, double y, double k, double n)
{
    for (size_t j = 0; j < l->n; j++)
        if (!strcmp(l->a[j].panel, panel) && l->a[j].x == x && l->a[j].y == y) {
            l->a[j].k += k, l->a[j].n += n;
            return 0;
        }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        acc_cell *b = realloc(l->a, cap * sizeof *b);
        if (!b) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        l->a = b, l->cap = cap;
    }
    acc_cell *e = &l->a[l->n++];
    clean_text(e->panel, sizeof e->panel, panel);
    e->x = x, e->y = y, e->k = k, e->n = n;
    return 0;
}

/* Panels in a grid of at most 3 columns; the screen box of panel i and its title's position. */
typedef struct {
    int rows, cols;
    double left, right, top, bottom; /* screen fractions of the panel area */
} layout;

static layout layout_of(size_t n)
{
    layout g;
    g.cols = n < 3 ? (int)n : 3;
    g.rows = (int)((n + (size_t)g.cols - 1) / (size_t)g.cols);
    g.left = 0.06, g.right = 0.88, g.top = 0.90, g.bottom = 0.10; /* the colour bar takes the right edge */
    return g;
}

/* A heatmap figure: NAME.dat of one block per panel (every grid cell present, NaN where not run; columns ix iy
 * accuracy n), the panels' titles, and heatmap.gp after NAME.gp. */
static int heatmap(figure *f, const acc_list *a, const char *caption, const char *ylab_suffix)
{
    double *xs = malloc((a->n + 1) * sizeof *xs), *ys = malloc((a->n + 1) * sizeof *ys);
    char panels[64][LABEL_MAX];
    size_t np = 0;
    int rc = xs && ys ? mb_open(&f->dat) : orthros_error(ORTHROS_ENOMEM, "out of memory");
    if (rc) goto done;
    for (size_t j = 0; j < a->n; j++) xs[j] = a->a[j].x, ys[j] = a->a[j].y;
    size_t nx = distinct(xs, a->n), ny = distinct(ys, a->n);
    for (size_t j = 0; j < a->n && np < 64; j++) {
        int seen = 0;
        for (size_t q = 0; q < np; q++) seen |= !strcmp(panels[q], a->a[j].panel);
        if (!seen) snprintf(panels[np++], LABEL_MAX, "%s", a->a[j].panel);
    }
    fprintf(f->dat.f, "# %s: ix iy accuracy n (ix, iy index the sorted distinct lengths and y values); one block per panel\n", f->name);
    for (size_t q = 0; q < np; q++) {
        fprintf(f->dat.f, "%s\"%s\" iy accuracy n\n", q ? "\n\n" : "", panels[q]);
        for (size_t iy = 0; iy < ny; iy++)
            for (size_t ix = 0; ix < nx; ix++) {
                double val = NAN, cnt = 0;
                for (size_t j = 0; j < a->n; j++)
                    if (!strcmp(a->a[j].panel, panels[q]) && a->a[j].x == xs[ix] && a->a[j].y == ys[iy])
                        val = a->a[j].k / a->a[j].n, cnt = a->a[j].n;
                if (isnan(val)) fprintf(f->dat.f, "%zu %zu NaN 0\n", ix, iy);
                else fprintf(f->dat.f, "%zu %zu %.6g %g\n", ix, iy, val, cnt);
            }
    }
    layout g = layout_of(np);
    /* Sizes in pixels, so that a panel keeps its shape however many rows there are. */
    int w = 420 * g.cols + 220, h = 360 * g.rows + 180;
    g.top = 1.0 - 80.0 / h, g.bottom = 70.0 / h; /* below: the x labels, then up to three caption lines */
    double pw = (g.right - g.left) / g.cols, ph = (g.top - g.bottom) / g.rows;
    for (size_t q = 0; q < np; q++) {
        int r = (int)q / g.cols, col = (int)q % g.cols;
        f->t.tx[q] = g.left + (col + 0.5) * pw;
        f->t.ty[q] = g.top - r * ph - 22.0 / h;
        memcpy(f->t.titles[q], panels[q], LABEL_MAX);
    }
    f->t.n_titles = (int)np;
    snprintf(f->t.caption, sizeof f->t.caption, "%s", caption);
    pre_set(&f->p, "n = %zu", np);
    pre_set(&f->p, "nx = %zu", nx);
    pre_set(&f->p, "ny = %zu", ny);
    pre_set(&f->p, "rows = %d", g.rows);
    pre_set(&f->p, "cols = %d", g.cols);
    pre_set(&f->p, "left = %.4f", g.left);
    pre_set(&f->p, "right = %.4f", g.right);
    pre_set(&f->p, "top = %.4f", g.top);
    pre_set(&f->p, "bottom = %.4f", g.bottom);
    pre_set(&f->p, "w = %d", w);
    pre_set(&f->p, "h = %d", h);
    pre_tics(&f->p, "xt", xs, nx, 1, NULL);
    pre_tics(&f->p, "yt", ys, ny, 1, ylab_suffix);
    f->body = "heatmap.gp";
done:
    free(xs);
    free(ys);
    return rc;
}

/* Facts of the eval inputs for a caption: model, samples per cell, the schedule options that shape the
 * architectures (swa window, hybrid period), devices and commits. */
static void eval_caption(char *out, size_t n, const plot_ctx *c, const char *task)
{
    char models[200] = "", samples[64] = "", window[64] = "", hybrid[64] = "", prov[400];
    for (size_t i = 0; i < c->n; i++) {
        const input *in = &c->in[i];
        int has = 0;
        for (size_t k = 0; in->kind == ORTHROS_RESULT_EVAL && k < in->eval.n_cells; k++) has |= !strcmp(in->eval.cells[k].task, task);
        if (!has) continue;
        const char *mdl = in->eval.cfg.model ? in->eval.cfg.model : "unknown";
        const char *slash = strrchr(mdl, '/');
        char v[32];
        add_item(models, sizeof models, slash && slash[1] ? slash + 1 : mdl);
        snprintf(v, sizeof v, "%d", in->eval.cfg.samples);
        if (!orthros_eval_is_ppl(task)) add_item(samples, sizeof samples, v);
        snprintf(v, sizeof v, "%d", in->eval.cfg.sched.window > 0 ? in->eval.cfg.sched.window : 4096);
        add_item(window, sizeof window, v);
        snprintf(v, sizeof v, "%d", in->eval.cfg.sched.hybrid_every > 0 ? in->eval.cfg.sched.hybrid_every : 4);
        add_item(hybrid, sizeof hybrid, v);
    }
    provenance(prov, sizeof prov, c, ORTHROS_RESULT_EVAL);
    snprintf(out, n, "model %s; %s%s%sswa window %s; hybrid: every %s-th layer full; %s", models, samples,
             samples[0] ? (!strcmp(task, "recall") ? " items" : " samples per cell") : "", samples[0] ? "; " : "", window,
             hybrid, prov);
}

static int fig_niah(figure *f)
{
    const plot_ctx *c = f->c;
    acc_list a = {0};
    int rc = 0;
    char panel[LABEL_MAX], caption[600];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != ORTHROS_RESULT_EVAL) continue;
        for (size_t k = 0; k < in->eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->eval.cells[k];
            if (strcmp(e->task, "niah")) continue;
            snprintf(panel, sizeof panel, "%s, %s needle", e->arch, e->variant[0] ? e->variant : "single");
            rc = acc_add(&a, panel, e->ctx, e->axis, (double)e->correct, (double)e->n);
        }
    }
    if (!rc && !a.n) f->why = "no NIAH cells (eval files with task \"niah\")";
    else if (!rc) {
        eval_caption(caption, sizeof caption, c, "niah");
        rc = heatmap(f, &a, caption, "%%");
    }
    free(a.a);
    return rc;
}

static int fig_mqar(figure *f)
{
    const plot_ctx *c = f->c;
    acc_list a = {0};
    int rc = 0;
    char caption[600];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != ORTHROS_RESULT_EVAL) continue;
        for (size_t k = 0; k < in->eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->eval.cells[k];
            if (!strcmp(e->task, "mqar")) rc = acc_add(&a, e->arch, e->ctx, e->axis, (double)e->correct, (double)e->n);
        }
    }
    if (!rc && !a.n) f->why = "no MQAR cells (eval files with task \"mqar\")";
    else if (!rc) {
        eval_caption(caption, sizeof caption, c, "mqar");
        rc = heatmap(f, &a, caption, "");
    }
    free(a.a);
    return rc;
}

/* The RULER heatmaps: ruler_niah depth x length, one panel per architecture, variant and needle; ruler_vt hops x
 * length and ruler_cwe words x length, one panel per architecture. */
static int fig_ruler(figure *f)
{
    const plot_ctx *c = f->c;
    acc_list a = {0};
    int rc = 0, niah = !strcmp(f->name, "ruler_niah");
    char panel[LABEL_MAX], caption[600];
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != ORTHROS_RESULT_EVAL) continue;
        for (size_t k = 0; k < in->eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->eval.cells[k];
            if (strcmp(e->task, f->name)) continue;
            if (niah) snprintf(panel, sizeof panel, "%s, %s needle (%s)", e->arch, e->variant, e->needle);
            else snprintf(panel, sizeof panel, "%s", e->arch);
            rc = acc_add(&a, panel, e->ctx, e->axis, (double)e->correct, (double)e->n);
        }
    }
    if (!rc && !a.n) f->why = niah ? "no RULER NIAH cells (eval files with task \"ruler_niah\")"
                      : !strcmp(f->name, "ruler_vt") ? "no variable-tracking cells (task \"ruler_vt\")"
                                                 : "no common-words cells (task \"ruler_cwe\")";
    else if (!rc) {
        eval_caption(caption, sizeof caption, c, f->name);
        rc = heatmap(f, &a, caption, niah ? "%%" : "");
    }
    free(a.a);
    return rc;
}

/* Perplexity vs window length, one line per architecture (and stride, when the inputs hold several), with the
 * bootstrap interval over windows as error bars. */
static int fig_ppl(figure *f)
{
    const plot_ctx *c = f->c;
    char lab[LABEL_MAX], texts_of[200] = "";
    int rc = 0, strides = 0, linear = 0;
    double stride0 = -1;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; c->in[i].kind == ORTHROS_RESULT_EVAL && k < c->in[i].eval.n_cells; k++) {
            const orthros_eval_cell *e = &c->in[i].eval.cells[k];
            if (!orthros_eval_is_ppl(e->task)) continue;
            /* Strides equal to the window are one series; other strides get series of their own. */
            double s = e->axis == e->ctx ? 0 : e->axis;
            strides |= stride0 >= 0 && s != stride0;
            stride0 = s;
        }
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != ORTHROS_RESULT_EVAL) continue;
        int any = 0;
        for (size_t k = 0; k < in->eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->eval.cells[k];
            if (!orthros_eval_is_ppl(e->task)) continue;
            any = 1;
            linear |= e->linear_tokens > 0;
            if (strides && e->axis != e->ctx) snprintf(lab, sizeof lab, "%s, stride %d", e->arch, e->axis);
            else snprintf(lab, sizeof lab, "%s%s", e->arch, e->linear_tokens > 0 ? " (linear-phase logits)" : "");
            point q = {e->ctx, e->ppl, isfinite(e->ppl_lo) ? e->ppl_lo : e->ppl, isfinite(e->ppl_hi) ? e->ppl_hi : e->ppl, 0};
            rc = series_add(series_get(&f->data, lab, arch_color(e->arch, 0), 1, arch_point(e->arch, 0)), q);
        }
        if (any) {
            const char *txt = in->eval.cfg.text ? in->eval.cfg.text : "?", *slash = strrchr(txt, '/');
            char item[160];
            snprintf(item, sizeof item, "%s (%lld tokens)", slash && slash[1] ? slash + 1 : txt, (long long)in->eval.cfg.text_tokens);
            add_item(texts_of, sizeof texts_of, item);
        }
    }
    if (!rc && !f->data.n) {
        f->why = "no perplexity cells (eval files with task \"ppl\")";
        goto done;
    }
    double lo, hi;
    y_extent(&f->data, &lo, &hi, 1);
    pre_styles(&f->p, &f->data);
    pre_xtics(&f->p, &f->data);
    pre_logtics(&f->p, "yt", "yr", lo, hi, "%g");
    char models[400];
    eval_caption(models, sizeof models, c, "ppl");
    snprintf(f->t.caption, sizeof f->t.caption, "%s; bars: bootstrap 95%% over windows%s; %s", texts_of,
             linear ? "; orthros: linear-phase logits" : "", models);
    f->cols = 4;
    f->comment = "perplexity: window ppl ci95_lo ci95_hi";
done:
    return rc;
}

/* Recall accuracy per architecture with its Wilson interval, one bar each (one group per input file). */
static int fig_recall(figure *f)
{
    const plot_ctx *c = f->c;
    char lab[LABEL_MAX], files[200] = "";
    int rc = 0, x = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        const input *in = &c->in[i];
        if (in->kind != ORTHROS_RESULT_EVAL) continue;
        int any = 0;
        for (size_t k = 0; k < in->eval.n_cells && !rc; k++) {
            const orthros_eval_cell *e = &in->eval.cells[k];
            if (strcmp(e->task, "recall")) continue;
            any = 1;
            snprintf(lab, sizeof lab, "%s (%lld of %lld)", e->arch, (long long)e->correct, (long long)e->n);
            point q = {x++, e->accuracy, e->ci_lo, e->ci_hi, 0};
            rc = series_add(series_get(&f->data, lab, arch_color(e->arch, 0), 1, arch_point(e->arch, 0)), q);
        }
        if (any) {
            const char *txt = in->eval.cfg.text ? in->eval.cfg.text : "?", *slash = strrchr(txt, '/');
            add_item(files, sizeof files, slash && slash[1] ? slash + 1 : txt);
            x++;
        }
    }
    if (!rc && !f->data.n) {
        f->why = "no recall cells (eval files with task \"recall\")";
        goto done;
    }
    char models[400];
    eval_caption(models, sizeof models, c, "recall");
    pre_styles(&f->p, &f->data);
    pre_set(&f->p, "xmax = %d", x);
    snprintf(f->t.caption, sizeof f->t.caption, "%s; bars: Wilson 95%%; %s", files, models);
    f->cols = 4;
    f->comment = "recall: position accuracy ci95_lo ci95_hi";
done:
    return rc;
}

static const figure_fn figure_fns[ORTHROS_PLOT_FIGURES] = {fig_prefill, fig_speedup, fig_decode, fig_throughput,
                                                           fig_attention_op, fig_niah, fig_mqar, fig_ruler,
                                                           fig_ruler, fig_ruler, fig_ppl, fig_recall};

int orthros_plot_run(int *made, const char *const *paths, size_t n, const orthros_plot_opts *o)
{
    plot_ctx c = {0};
    int rc = 0;
    *made = 0;
    if (!o->formats || o->formats >= (1 << ORTHROS_PLOT_FORMATS)) return orthros_error(ORTHROS_EINVAL, "no output format");
    if (n > MAX_INPUTS) return orthros_error(ORTHROS_EINVAL, "more than %d input files", MAX_INPUTS);
    c.in = calloc(n ? n : 1, sizeof *c.in);
    c.o = o;
    if (!c.in) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    const char *model0 = NULL;
    int batch0 = -1, tp0 = 0;
    for (size_t i = 0; i < n; i++, c.n++) {
        /* Every input is read and validated before anything is drawn. */
        if ((rc = input_read(&c.in[i], paths[i]))) goto done;
        if (c.in[i].kind == ORTHROS_RESULT_BENCH && !is_model_bench(&c.in[i]))
            fprintf(stderr, "plot: %s is a kernel benchmark file; no figure uses it\n", paths[i]);
        if (c.in[i].kind == ORTHROS_RESULT_EVAL && orthros_eval_is_mc(c.in[i].eval.cfg.task))
            fprintf(stderr, "plot: %s holds multiple-choice (mc) cells; no figure uses them (orthros report prints their "
                            "table)\n", paths[i]);
        if (!is_model_bench(&c.in[i])) continue;
        const char *m = orthros_bench_model_label(&c.in[i].bench);
        if (model0 && strcmp(model0, m)) c.multi_model = 1;
        model0 = m;
        if (tp0 && c.in[i].bench.cfg.tp != tp0) c.multi_tp = 1; /* TP=1 beside TP=2: one series each */
        tp0 = c.in[i].bench.cfg.tp;
        for (size_t k = 0; k < c.in[i].bench.n_cells; k++) {
            int b = c.in[i].bench.cells[k].batch;
            if (batch0 >= 0 && b != batch0) c.multi_batch = 1;
            batch0 = b;
        }
    }
    if ((rc = orthros_mkdir_p(o->out_dir))) goto done;
    for (int k = 0; k < ORTHROS_PLOT_FIGURES && !rc; k++) {
        figure *f = calloc(1, sizeof *f);
        if (!f) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        f->c = &c, f->name = orthros_plot_figure_names[k];
        if (!(rc = figure_fns[k](f)) && !f->why) rc = figure_run(f);
        if (rc) orthros_error_prefix(rc, f->name);
        else if (f->why) fprintf(stderr, "plot: %s skipped: %s\n", f->name, f->why);
        else (*made)++;
        figure_free(f);
        free(f);
    }
done:
    for (size_t i = 0; i < c.n; i++) input_free(&c.in[i]);
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
    orthros_plot_opts o = {.out_dir = NULL, .formats = 0, .scripts_dir = NULL, .gnuplot = NULL};
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "orthros plot RESULT.json... --out DIR: figures from result files only, through gnuplot.\n"
                     "Inputs are recognised by content: bench files (orthros bench), eval files (orthros eval: NIAH,\n"
                     "MQAR, RULER, recall and perplexity cells) and PyTorch SDPA anchor files (bench/kernels/anchors.py); each is validated first.\n"
                     "Figures, each as DIR/NAME.png, .svg or .pdf with its data in DIR/NAME.dat and texts in DIR/NAME.txt:\n"
                     "  prefill_latency  model prefill time vs context length, log-log, per architecture\n"
                     "  speedup          speedup over transformer vs length, 95% band, the 21.9x line\n"
                     "  decode_latency   decode time per token vs cache length\n"
                     "  throughput       achieved TFLOP/s and TB/s against the run's measured ceilings\n"
                     "  attention_op     one layer's attention op alone: the PyTorch SDPA anchors\n"
                     "  niah             NIAH accuracy heatmaps, depth x length, one panel per architecture and variant\n"
                     "  mqar             MQAR accuracy heatmaps, pairs x length, one panel per architecture\n"
                     "  ruler_niah       RULER NIAH heatmaps (text models), depth x length, per architecture, variant, needle\n"
                     "  ruler_vt         variable-tracking heatmaps, hops x length, one panel per architecture\n"
                     "  ruler_cwe        common-words heatmaps, words x length, one panel per architecture\n"
                     "  ppl              perplexity vs window length per architecture, bootstrap 95% bars\n"
                     "  recall           recall accuracy per architecture, Wilson 95% bars\n"
                     "A figure whose data is absent from the inputs is skipped with a line on stderr.",
                     ORTHROS_CMD_MAX_POS);
    orthros_cmd_add(&c, "out", ORTHROS_OPT_STR, &o.out_dir, "DIR", "output folder, created when absent (required)");
    orthros_cmd_add(&c, "format", ORTHROS_OPT_STR, &format, "LIST", "png, svg, pdf, or a comma-separated list (default png)");
    orthros_cmd_add(&c, "scripts", ORTHROS_OPT_STR, &o.scripts_dir, "DIR",
                    "take the gnuplot scripts from DIR (default $ORTHROS_PLOTS_DIR, else the copies compiled into this "
                    "binary from plots/)");
    orthros_cmd_add(&c, "gnuplot", ORTHROS_OPT_STR, &o.gnuplot, "PROG", "the gnuplot program (default $ORTHROS_GNUPLOT, else gnuplot)");
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
    int made = 0, rc = orthros_plot_run(&made, c.pos, (size_t)c.n_pos, &o);
    if (rc) return orthros_cmd_fail(cmd, rc);
    fprintf(stderr, "plot: %d figure%s in %s\n", made, made == 1 ? "" : "s", o.out_dir);
    return made ? 0 : 1;
}
