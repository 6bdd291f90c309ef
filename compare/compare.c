/* orthros compare: per cell, a one-sided Mann-Whitney U test in each direction on the raw samples (Holm-
 * corrected across cells, per direction) and a percentile-bootstrap 95% interval of median(NEW) /
 * median(BASE), two-stage (rounds, then samples) when a side has several rounds; the verdict needs both
 * (docs/compare.md). The statistics are those of stats.c. */
#define _GNU_SOURCE
#include "compare.h"
#include "options.h"
#include "result_bench.h"
#include "util.h"
#include <limits.h>
#include "stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 64
#define MAX_ROUNDS 1024

static const char *const verdict_names[] = {"SAME", "FAST", "SLOW", "AMBIGUOUS", "UNMATCHED"};

const char *orthros_verdict_name(orthros_verdict v)
{
    return (unsigned)v < 5 ? verdict_names[v] : "?";
}

void orthros_compare_opts_default(orthros_compare_opts *o)
{
    *o = (orthros_compare_opts){.threshold_pct = 5.0, .alpha = 0.05, .resamples = 5000, .seed = 1};
}

/* ---- collecting cells ---- */

/* One cell of one side: its samples pooled over the side's files (seconds). */
typedef struct {
    char key[192];
    double *x;
    size_t n, cap;
    int files_measured; /* files of the side in which the cell has samples */
    int files_seen;     /* files in which the cell appears at all */
    char why[96];       /* skipped / error text of an unmeasured record */
    size_t ends[MAX_ROUNDS]; /* x cut by round (a file's cell holds one or more): one past each round's last sample */
    int k;              /* rounds so far */
} side_cell;

typedef struct {
    side_cell *c;
    size_t n, cap;
    int n_files;
    size_t *slot, mask; /* key -> 1 + index into c (0 empty), open addressing: matching cells is linear in them */
} side;

static void side_free(side *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->c[i].x);
    free(s->c);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

static size_t key_hash(const char *k)
{
    size_t h = 1469598103934665603ull;
    for (; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* The slot of key: where it is, or the empty one where it would go. */
static size_t side_slot(const side *s, const char *key)
{
    size_t h = key_hash(key) & s->mask;
    while (s->slot[h] && strcmp(s->c[s->slot[h] - 1].key, key)) h = (h + 1) & s->mask;
    return h;
}

static side_cell *side_find(const side *s, const char *key)
{
    if (!s->slot) return NULL;
    size_t h = side_slot(s, key);
    return s->slot[h] ? &s->c[s->slot[h] - 1] : NULL;
}

static int side_get(side_cell **out, side *s, const char *key)
{
    if ((*out = side_find(s, key))) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        side_cell *c = realloc(s->c, cap * sizeof *c);
        size_t *slot = calloc(2 * cap, sizeof *slot);
        if (!c || !slot) {
            if (c) s->c = c;
            free(slot);
            return orthros_error(ORTHROS_ENOMEM, "out of memory collecting cells");
        }
        s->c = c, s->cap = cap;
        free(s->slot);
        s->slot = slot, s->mask = 2 * cap - 1;
        for (size_t i = 0; i < s->n; i++) s->slot[side_slot(s, s->c[i].key)] = i + 1;
    }
    *out = &s->c[s->n++];
    memset(*out, 0, sizeof **out);
    snprintf((*out)->key, sizeof (*out)->key, "%s", key);
    s->slot[side_slot(s, (*out)->key)] = s->n;
    return 0;
}

/* Appends a file's record of a cell: its samples as one round per round of the cell, or the reason it has none. */
static int side_add(side *s, const orthros_bench_cell *cell, int *seen_in_file)
{
    side_cell *c;
    char key[192];
    orthros_bench_cell_key(key, sizeof key, cell);
    int rc = side_get(&c, s, key);
    if (rc) return rc;
    /* A cell repeated within one file counts once toward files_seen / files_measured. */
    int first = !*seen_in_file;
    *seen_in_file = 1;
    if (first) c->files_seen++;
    if (cell->state != ORTHROS_CELL_MEASURED) {
        if (!c->why[0]) snprintf(c->why, sizeof c->why, "%s", cell->reason ? cell->reason : "not measured");
        return 0;
    }
    if (c->n + cell->n_samples > c->cap) {
        size_t cap = 2 * (c->n + cell->n_samples);
        double *x = realloc(c->x, cap * sizeof *x);
        if (!x) return orthros_error(ORTHROS_ENOMEM, "out of memory collecting samples");
        c->x = x, c->cap = cap;
    }
    size_t base = c->n;
    memcpy(c->x + c->n, cell->samples, cell->n_samples * sizeof *c->x);
    c->n += cell->n_samples;
    for (size_t r = 0; r < cell->n_rounds; r++) {
        if (c->k == MAX_ROUNDS) return orthros_error(ORTHROS_EINVAL, "more than %d rounds of cell %s on one side", MAX_ROUNDS, key);
        c->ends[c->k++] = base + cell->round_ends[r];
    }
    if (first || c->files_measured < c->files_seen) c->files_measured++;
    return 0;
}

static int collect(side *s, const orthros_bench_file *f)
{
    int rc = 0;
    s->n_files++;
    /* seen[i]: cell i of this file repeats an earlier cell of the same file (the reader refuses that, so every
     * flag starts fresh). */
    for (size_t i = 0; i < f->n_cells && !rc; i++) {
        int seen = 0;
        rc = side_add(s, &f->cells[i], &seen);
    }
    return rc;
}

static int is_kernels(const orthros_bench_file *f) { return !strcmp(f->cfg.source, "bench_kernels"); }

/* ---- statistics per cell ---- */

/* log of the number of ways to split nb + nn values into the two samples: the exact test's smallest p is
 * 1 / C(nb + nn, nb). */
static double log_binom(size_t n, size_t k)
{
    return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

static void set_note(orthros_compare_cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_note(orthros_compare_cell *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note, sizeof c->note, fmt, ap);
    va_end(ap);
}

/* The median of each round of a side's cell. */
static int round_medians(double *out, const side_cell *s)
{
    for (int r = 0; r < s->k; r++) {
        size_t lo = r ? s->ends[r - 1] : 0;
        int rc = orthros_stats_median(&out[r], s->x + lo, s->ends[r] - lo);
        if (rc) return rc;
    }
    return 0;
}

static int test_cell(orthros_compare_cell *c, const side_cell *b, const side_cell *n, const orthros_compare_opts *o)
{
    int rc;
    orthros_mwu slow, fast;
    c->n_base = b->n, c->n_new = n->n;
    if ((rc = orthros_stats_median(&c->median_base, b->x, b->n)) || (rc = orthros_stats_median(&c->median_new, n->x, n->n)))
        return rc;
    c->ratio = c->median_new / c->median_base;
    for (size_t i = 0; i < b->n; i++)
        if (b->x[i] <= 0) {
            set_note(c, "a BASE sample is not positive");
            return 0;
        }
    c->rounds_base = b->k, c->rounds_new = n->k;
    if ((rc = orthros_stats_bootstrap_ratio_ci_grouped(&c->ci_lo, &c->ci_hi, n->x, n->n, n->ends, (size_t)n->k, b->x,
                                                       b->n, b->ends, (size_t)b->k, 0.95, o->resamples, o->seed)))
        return rc;
    /* With rounds on both sides the rounds are the independent units: a whole process or a stretch of time can
     * sit a few percent off, so its samples are not independent of each other. The test then compares the
     * rounds' medians; the samples are tested only when a side has a single round. */
    double mb[MAX_ROUNDS], mn[MAX_ROUNDS];
    const double *tb = b->x, *tn = n->x;
    size_t kb = b->n, kn = n->n;
    int by_rounds = b->k >= 2 && n->k >= 2;
    if (by_rounds) {
        if ((rc = round_medians(mb, b)) || (rc = round_medians(mn, n))) return rc;
        tb = mb, tn = mn, kb = (size_t)b->k, kn = (size_t)n->k;
    }
    if ((rc = orthros_stats_mann_whitney(&slow, tn, kn, tb, kb)) || (rc = orthros_stats_mann_whitney(&fast, tb, kb, tn, kn)))
        return rc;
    c->u_slow = slow.u, c->p_slow = slow.p, c->p_fast = fast.p, c->exact = slow.exact;
    if (-log_binom(kb + kn, kb) >= log(o->alpha) - 1e-9) {
        set_note(c, "too few %s: with %zu and %zu the test cannot reach p < %g", by_rounds ? "rounds" : "samples", kb, kn,
                 o->alpha);
        return 0;
    }
    c->tested = 1;
    return 0;
}

static void decide(orthros_compare_cell *c, const orthros_compare_opts *o)
{
    double up = 1.0 + o->threshold_pct / 100.0, down = 1.0 / up;
    if (!c->tested) {
        c->verdict = ORTHROS_VERDICT_AMBIGUOUS;
        return;
    }
    int sig_slow = c->p_slow_holm < o->alpha, sig_fast = c->p_fast_holm < o->alpha;
    if (sig_slow && c->ci_lo > up) {
        c->verdict = ORTHROS_VERDICT_SLOW;
    } else if (sig_fast && c->ci_hi < down) {
        c->verdict = ORTHROS_VERDICT_FAST;
    } else if (c->ci_lo >= down && c->ci_hi <= up) {
        c->verdict = ORTHROS_VERDICT_SAME;
    } else {
        c->verdict = ORTHROS_VERDICT_AMBIGUOUS;
        if (c->ci_lo > up || c->ci_hi < down)
            set_note(c, "interval beyond the threshold but the test is not significant after Holm");
        else if (c->ci_hi - c->ci_lo > up - down)
            set_note(c, "too noisy: the interval is wider than the band [%.3f, %.3f]", down, up);
        else
            set_note(c, "the interval straddles the threshold");
    }
}

int orthros_compare_run(orthros_compare_result *out, const orthros_bench_file *const *base,
                        const char *const *base_names, size_t n_base, const orthros_bench_file *const *cmp,
                        const char *const *cmp_names, size_t n_cmp, const orthros_compare_opts *o)
{
    side sb = {0}, sn = {0};
    int rc = 0;
    double *p = NULL, *adj = NULL;
    size_t *idx = NULL;
    memset(out, 0, sizeof *out);
    if (!n_base || !n_cmp) return orthros_error(ORTHROS_EINVAL, "each side needs at least one file");
    if (!(o->alpha > 0 && o->alpha < 1) || !(o->threshold_pct >= 0) || o->resamples < 100 ||
        o->resamples > ORTHROS_STATS_MAX_RESAMPLES)
        return orthros_error(ORTHROS_EINVAL, "need 0 < alpha < 1, threshold >= 0 and 100 <= resamples <= %d",
                             ORTHROS_STATS_MAX_RESAMPLES);
    for (size_t side_i = 0; side_i < 2; side_i++) {
        const orthros_bench_file *const *f = side_i ? cmp : base;
        const char *const *names = side_i ? cmp_names : base_names;
        size_t nf = side_i ? n_cmp : n_base;
        for (size_t i = 0; i < nf; i++) {
            if (is_kernels(f[i]) != is_kernels(base[0])) {
                rc = orthros_error(ORTHROS_EINVAL, "the files do not match: %s and %s are of different kinds", base_names[0],
                                   names[i]);
                goto fail;
            }
            if (!is_kernels(f[i]) &&
                (rc = orthros_bench_config_check_same(&base[0]->cfg, base_names[0], &f[i]->cfg, names[i]))) {
                orthros_error(rc, "the files do not match: %s", orthros_last_error());
                goto fail;
            }
            if ((rc = collect(side_i ? &sn : &sb, f[i]))) goto fail;
        }
    }
    out->kind = is_kernels(base[0]) ? "kernels" : "bench";
    for (size_t i = 0; i < sb.n; i++) out->max_rounds_base = sb.c[i].k > out->max_rounds_base ? sb.c[i].k : out->max_rounds_base;
    for (size_t i = 0; i < sn.n; i++) out->max_rounds_new = sn.c[i].k > out->max_rounds_new ? sn.c[i].k : out->max_rounds_new;

    /* Every cell of either side, BASE's order first. */
    size_t cap = sb.n + sn.n;
    out->cells = calloc(cap ? cap : 1, sizeof *out->cells);
    p = malloc((cap ? cap : 1) * sizeof *p);
    adj = malloc((cap ? cap : 1) * sizeof *adj);
    idx = malloc((cap ? cap : 1) * sizeof *idx);
    if (!out->cells || !p || !adj || !idx) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t s = 0; s < 2; s++) {
        const side *here = s ? &sn : &sb, *there = s ? &sb : &sn;
        for (size_t i = 0; i < here->n; i++) {
            const side_cell *hc = &here->c[i], *tc = side_find(there, hc->key);
            if (s && tc) continue; /* already taken from BASE */
            orthros_compare_cell *c = &out->cells[out->n_cells++];
            const side_cell *b = s ? tc : hc, *n = s ? hc : tc;
            snprintf(c->key, sizeof c->key, "%s", hc->key);
            c->median_base = c->median_new = c->ratio = c->ci_lo = c->ci_hi = NAN;
            c->u_slow = c->p_slow = c->p_fast = c->p_slow_holm = c->p_fast_holm = NAN;
            c->n_base = b ? b->n : 0, c->n_new = n ? n->n : 0;
            int b_all = b && b->files_measured == sb.n_files, n_all = n && n->files_measured == sn.n_files;
            int b_none = !b || b->files_measured == 0, n_none = !n || n->files_measured == 0;
            if (b_none && n_none) {
                /* Not measured anywhere (e.g. skipped for memory on both sides): not a mismatch. */
                c->verdict = ORTHROS_VERDICT_UNMATCHED;
                set_note(c, "not measured in either: %s", b && b->why[0] ? b->why : n && n->why[0] ? n->why : "absent");
                continue;
            }
            if (!b_all || !n_all) out->mismatch = 1;
            if (b_none || n_none) {
                c->verdict = ORTHROS_VERDICT_UNMATCHED;
                const side_cell *miss = b_none ? b : n;
                set_note(c, "measured in %s only%s%s", b_none ? "NEW" : "BASE", miss && miss->why[0] ? "; other side: " : "",
                         miss && miss->why[0] ? miss->why : "");
                continue;
            }
            if ((rc = test_cell(c, b, n, o))) goto fail;
            if (!b_all || !n_all) set_note(c, "missing from some of the %s files", !b_all ? "BASE" : "NEW");
        }
    }
    /* Holm across the tested cells, each direction on its own. */
    for (int dir = 0; dir < 2; dir++) {
        size_t m = 0;
        for (size_t i = 0; i < out->n_cells; i++)
            if (out->cells[i].tested) {
                idx[m] = i;
                p[m++] = dir ? out->cells[i].p_fast : out->cells[i].p_slow;
            }
        if (m && (rc = orthros_stats_holm(adj, p, m))) goto fail;
        for (size_t j = 0; j < m; j++) {
            if (dir) out->cells[idx[j]].p_fast_holm = adj[j];
            else out->cells[idx[j]].p_slow_holm = adj[j];
        }
    }
    for (size_t i = 0; i < out->n_cells; i++) {
        orthros_compare_cell *c = &out->cells[i];
        if (c->verdict != ORTHROS_VERDICT_UNMATCHED) {
            char keep[sizeof c->note];
            snprintf(keep, sizeof keep, "%s", c->note);
            c->note[0] = '\0';
            decide(c, o);
            if (!c->tested || !c->note[0]) snprintf(c->note, sizeof c->note, "%s", keep);
            else if (keep[0]) {
                char both[2 * sizeof c->note + 4];
                snprintf(both, sizeof both, "%s; %s", keep, c->note);
                memcpy(c->note, both, sizeof c->note - 1); /* truncated to the note's size */
                c->note[sizeof c->note - 1] = '\0';
            }
        }
        out->count[c->verdict]++;
    }
    rc = 0;
    goto done;
fail:
    orthros_compare_result_free(out);
done:
    free(p);
    free(adj);
    free(idx);
    side_free(&sb);
    side_free(&sn);
    return rc;
}

void orthros_compare_result_free(orthros_compare_result *r)
{
    free(r->cells);
    memset(r, 0, sizeof *r);
}

int orthros_compare_mostly_ambiguous(const orthros_compare_result *r)
{
    size_t judged = r->count[ORTHROS_VERDICT_SAME] + r->count[ORTHROS_VERDICT_FAST] + r->count[ORTHROS_VERDICT_SLOW] +
                    r->count[ORTHROS_VERDICT_AMBIGUOUS];
    return 2 * r->count[ORTHROS_VERDICT_AMBIGUOUS] > judged;
}

int orthros_compare_exit_code(const orthros_compare_result *r)
{
    if (r->count[ORTHROS_VERDICT_SLOW]) return 1;
    if (r->mismatch || orthros_compare_mostly_ambiguous(r) ||
        r->count[ORTHROS_VERDICT_SAME] + r->count[ORTHROS_VERDICT_FAST] == 0)
        return 2;
    return 0;
}

/* ---- the command ---- */

/* A time with a unit that keeps three or four significant digits. */
static void fmt_time(char *buf, size_t n, double s)
{
    if (isnan(s)) snprintf(buf, n, "-");
    else if (s >= 1.0) snprintf(buf, n, "%.4g s", s);
    else if (s >= 1e-3) snprintf(buf, n, "%.4g ms", s * 1e3);
    else snprintf(buf, n, "%.4g us", s * 1e6);
}

static void fmt_num(char *buf, size_t n, const char *f, double v)
{
    if (isnan(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, f, v);
}

/* "commit abc1234567 on NVIDIA H200" for a file's header line. */
static void describe(char *buf, size_t n, const orthros_bench_file *f)
{
    char dev[160];
    orthros_result_device_text(dev, sizeof dev, &f->hdr);
    snprintf(buf, n, "commit %.10s on %s", f->hdr.git_commit, dev);
}

static const char *rule_text(char *buf, size_t n, const orthros_compare_opts *o)
{
    double up = 1 + o->threshold_pct / 100;
    snprintf(buf, n,
             "SLOW: Holm-adjusted one-sided Mann-Whitney p(NEW slower) < %g and the 95%% bootstrap interval (rounds, then "
             "samples within rounds) of "
             "median(NEW)/median(BASE) entirely above %.4g; FAST: p(NEW faster) < %g and the interval entirely below "
             "%.4g; SAME: the interval within [%.4g, %.4g]; AMBIGUOUS otherwise (too few samples, too noisy)",
             o->alpha, up, o->alpha, 1 / up, 1 / up, up);
    return buf;
}

static void print_table(FILE *f, const orthros_compare_result *r, int markdown)
{
    if (markdown)
        fprintf(f, "| cell | n base | n new | median base | median new | ratio | 95%% CI | p slow (Holm) | p fast (Holm) "
                   "| verdict | note |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | --- |\n");
    else
        fprintf(f, "%-44s %6s %6s %11s %11s %7s %17s %8s %8s  %-9s %s\n", "cell", "n_base", "n_new", "base", "new",
                "ratio", "95% CI", "p_slow", "p_fast", "verdict", "note");
    for (size_t i = 0; i < r->n_cells; i++) {
        const orthros_compare_cell *c = &r->cells[i];
        char mb[32], mn[32], ra[32], ci[48], ps[32], pf[32];
        fmt_time(mb, sizeof mb, c->n_base ? c->median_base : NAN);
        fmt_time(mn, sizeof mn, c->n_new ? c->median_new : NAN);
        fmt_num(ra, sizeof ra, "%.4f", c->ratio);
        if (isnan(c->ci_lo)) snprintf(ci, sizeof ci, "-");
        else snprintf(ci, sizeof ci, "[%.4f, %.4f]", c->ci_lo, c->ci_hi);
        fmt_num(ps, sizeof ps, "%.2g", c->p_slow_holm);
        fmt_num(pf, sizeof pf, "%.2g", c->p_fast_holm);
        if (markdown)
            fprintf(f, "| %s | %zu | %zu | %s | %s | %s | %s | %s | %s | **%s** | %s |\n", c->key, c->n_base, c->n_new, mb, mn,
                    ra, ci, ps, pf, orthros_verdict_name(c->verdict), c->note);
        else
            fprintf(f, "%-44s %6zu %6zu %11s %11s %7s %17s %8s %8s  %-9s %s\n", c->key, c->n_base, c->n_new, mb, mn, ra, ci,
                    ps, pf, orthros_verdict_name(c->verdict), c->note);
    }
}

static void summary_line(char *buf, size_t n, const orthros_compare_result *r)
{
    snprintf(buf, n, "%zu SLOW, %zu FAST, %zu SAME, %zu AMBIGUOUS, %zu unmatched%s%s -> exit %d",
             r->count[ORTHROS_VERDICT_SLOW], r->count[ORTHROS_VERDICT_FAST], r->count[ORTHROS_VERDICT_SAME],
             r->count[ORTHROS_VERDICT_AMBIGUOUS], r->count[ORTHROS_VERDICT_UNMATCHED],
             r->mismatch ? " (the files' cells do not match)" : "",
             orthros_compare_mostly_ambiguous(r) ? " (mostly AMBIGUOUS: this comparison could not detect a change)" : "",
             orthros_compare_exit_code(r));
}

static cJSON *result_json(const orthros_compare_result *r, const orthros_compare_opts *o, const char *base_arg,
                          const char *new_arg)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "kind", "compare");
    cJSON_AddStringToObject(root, "files_kind", r->kind);
    cJSON_AddStringToObject(root, "base", base_arg);
    cJSON_AddStringToObject(root, "new", new_arg);
    cJSON_AddNumberToObject(root, "threshold_pct", o->threshold_pct);
    cJSON_AddNumberToObject(root, "alpha", o->alpha);
    cJSON_AddNumberToObject(root, "resamples", (double)o->resamples);
    cJSON_AddNumberToObject(root, "seed", (double)o->seed);
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (size_t i = 0; i < r->n_cells; i++) {
        const orthros_compare_cell *c = &r->cells[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "cell", c->key);
        cJSON_AddNumberToObject(e, "n_base", (double)c->n_base);
        cJSON_AddNumberToObject(e, "n_new", (double)c->n_new);
        cJSON_AddNumberToObject(e, "rounds_base", c->rounds_base);
        cJSON_AddNumberToObject(e, "rounds_new", c->rounds_new);
        cJSON_AddNumberToObject(e, "median_base", c->median_base); /* cJSON writes NAN as null */
        cJSON_AddNumberToObject(e, "median_new", c->median_new);
        cJSON_AddNumberToObject(e, "ratio", c->ratio);
        cJSON_AddNumberToObject(e, "ci95_lo", c->ci_lo);
        cJSON_AddNumberToObject(e, "ci95_hi", c->ci_hi);
        cJSON_AddNumberToObject(e, "u_slow", c->u_slow);
        cJSON_AddNumberToObject(e, "p_slow", c->p_slow);
        cJSON_AddNumberToObject(e, "p_fast", c->p_fast);
        cJSON_AddNumberToObject(e, "p_slow_holm", c->p_slow_holm);
        cJSON_AddNumberToObject(e, "p_fast_holm", c->p_fast_holm);
        cJSON_AddBoolToObject(e, "exact", c->exact);
        cJSON_AddBoolToObject(e, "tested", c->tested);
        cJSON_AddStringToObject(e, "verdict", orthros_verdict_name(c->verdict));
        cJSON_AddStringToObject(e, "note", c->note);
        cJSON_AddItemToArray(cells, e);
    }
    cJSON *s = cJSON_AddObjectToObject(root, "summary");
    for (int v = 0; v < 5; v++) cJSON_AddNumberToObject(s, verdict_names[v], (double)r->count[v]);
    cJSON_AddBoolToObject(s, "mismatch", r->mismatch);
    cJSON_AddNumberToObject(root, "exit_code", orthros_compare_exit_code(r));
    return root;
}

/* Splits a comma-separated list of files into names[] (pointers into buf) and reads each (validated). */
static int load_side(orthros_bench_file *files, const char **names, size_t *n, char *buf)
{
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_FILES) return orthros_error(ORTHROS_EINVAL, "more than %d files on one side", MAX_FILES);
        names[*n] = t;
        int rc = orthros_bench_file_read(&files[*n], t, 0, NULL);
        if (rc) return rc;
        (*n)++;
    }
    if (!*n) return orthros_error(ORTHROS_EINVAL, "an empty list of files");
    return 0;
}

/* The table, the rule and the summary as markdown. */
static int write_markdown(const char *path, const orthros_compare_result *r, const char *base_arg, const char *db,
                          const char *new_arg, const char *dn, const char *rule, const char *sum)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    fprintf(f, "### orthros compare\n\nBASE `%s` (%s) vs NEW `%s` (%s).\n\nRule: %s.\n\n", base_arg, db, new_arg, dn, rule);
    print_table(f, r, 1);
    fprintf(f, "\n**%s**\n", sum);
    int bad = fclose(f) != 0;
    int rc = bad ? orthros_error(ORTHROS_ENOMEM, "out of memory") : orthros_write_file_atomic(path, buf, len);
    free(buf);
    return rc;
}

int orthros_cmd_compare(int argc, char **argv)
{
    const char *cmd = "compare", *md_path = NULL, *json_path = NULL;
    orthros_compare_opts o;
    orthros_compare_opts_default(&o);
    int resamples = (int)o.resamples, seed = (int)o.seed;
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "orthros compare BASE.json NEW.json: compares two benchmark result files (orthros bench, or\n"
                     "bench/kernels/bench_kernels) cell by cell.\n"
                     "Cells are matched by (arch, phase, ctx, batch) (kernel files: by op and shape); run.config's model,\n"
                     "device, seed, decode_tokens, schedule options and noise target must agree. BASE and NEW may each be a\n"
                     "comma-separated list of files of one configuration (rounds of an interleaved run): samples are\n"
                     "pooled per cell, and every file's rounds are kept apart for the interval.\n\n"
                     "Per cell, with r = median(NEW) / median(BASE), t = threshold / 100:\n"
                     "  p_slow, p_fast: one-sided Mann-Whitney U tests on the raw samples (NEW slower; NEW faster),\n"
                     "                  each Holm-corrected across the tested cells;\n"
                     "  [lo, hi]:       bootstrap 95% interval of r, resampling rounds, then samples within rounds;\n"
                     "  SLOW       when p_slow < alpha and lo > 1 + t;\n"
                     "  FAST       when p_fast < alpha and hi < 1 / (1 + t);\n"
                     "  SAME       when 1 / (1 + t) <= lo and hi <= 1 + t;\n"
                     "  AMBIGUOUS  otherwise, and whenever the exact test could not reach alpha with the sample counts\n"
                     "             (1 / C(n_base + n_new, n_base) >= alpha: too few samples).\n"
                     "Exit status: 1 when some cell is SLOW; else 2 when the files do not match (a cell measured on one\n"
                     "side only, different configurations, not bench files), when most cells are AMBIGUOUS, or when no\n"
                     "cell is SAME or FAST; else 0. See docs/compare.md.",
                     3);
    orthros_cmd_add_num(&c, "threshold", ORTHROS_OPT_DOUBLE, &o.threshold_pct, 0, 1000, "PCT",
                        "smallest change that counts, in percent of the BASE median (default 5)");
    orthros_cmd_add_num(&c, "alpha", ORTHROS_OPT_DOUBLE, &o.alpha, 1e-12, 0.5, "A",
                        "level of each one-sided test after Holm's correction (default 0.05)");
    orthros_cmd_add(&c, "markdown", ORTHROS_OPT_STR, &md_path, "FILE", "also write the table as markdown");
    orthros_cmd_add(&c, "json", ORTHROS_OPT_STR, &json_path, "FILE", "also write every cell's statistics as JSON");
    orthros_cmd_add_num(&c, "resamples", ORTHROS_OPT_INT, &resamples, 100, ORTHROS_STATS_MAX_RESAMPLES, "N",
                        "bootstrap resamples of the ratio of medians (default 5000)");
    orthros_cmd_add_num(&c, "seed", ORTHROS_OPT_INT, &seed, 0, INT_MAX, "S", "bootstrap seed (default 1)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (c.n_pos != 2) return orthros_cmd_usage(&c, "need two arguments, BASE.json and NEW.json (see --help)");
    o.resamples = (size_t)resamples, o.seed = (uint64_t)seed;
    orthros_bench_file fb[MAX_FILES] = {0}, fn[MAX_FILES] = {0};
    const orthros_bench_file *pb[MAX_FILES], *pn[MAX_FILES];
    const char *nb_names[MAX_FILES], *nn_names[MAX_FILES];
    size_t nb = 0, nn = 0;
    char *bbuf = strdup(c.pos[0]), *nbuf = strdup(c.pos[1]);
    orthros_compare_result r = {0};
    int rc, status = 2;
    if (!bbuf || !nbuf) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = load_side(fb, nb_names, &nb, bbuf)) || (rc = load_side(fn, nn_names, &nn, nbuf))) goto fail;
    for (size_t i = 0; i < nb; i++) pb[i] = &fb[i];
    for (size_t i = 0; i < nn; i++) pn[i] = &fn[i];
    if ((rc = orthros_compare_run(&r, pb, nb_names, nb, pn, nn_names, nn, &o))) goto fail;
    status = orthros_compare_exit_code(&r);

    char db[200], dn[200], rule[512], sum[300];
    describe(db, sizeof db, &fb[0]);
    describe(dn, sizeof dn, &fn[0]);
    rule_text(rule, sizeof rule, &o);
    summary_line(sum, sizeof sum, &r);
    printf("compare (%s files): BASE %s (%zu file%s, %s) vs NEW %s (%zu file%s, %s)\nrule: %s\n\n", r.kind, c.pos[0], nb,
           nb > 1 ? "s" : "", db, c.pos[1], nn, nn > 1 ? "s" : "", dn, rule);
    print_table(stdout, &r, 0);
    printf("\nsummary: %s\n", sum);
    if (r.max_rounds_base <= 1 || r.max_rounds_new <= 1)
        fprintf(stderr,
                "warning: %s holds a single round of each cell: a drift of the machine between the two runs cannot be "
                "told from a change (run rounds of both, interleaved: ci/perf-gate.sh, or bench --rounds)\n",
                r.max_rounds_base <= 1 ? "BASE" : "NEW");
    if (orthros_compare_mostly_ambiguous(&r))
        fprintf(stderr, "warning: %zu of the compared cells are AMBIGUOUS: this comparison could not have detected a "
                        "regression; it exits 2 (take more samples or rounds, or quiet the machine)\n",
                r.count[ORTHROS_VERDICT_AMBIGUOUS]);
    if (md_path && (rc = write_markdown(md_path, &r, c.pos[0], db, c.pos[1], dn, rule, sum))) {
        status = 2;
        goto fail;
    }
    if (json_path) {
        cJSON *j = result_json(&r, &o, c.pos[0], c.pos[1]);
        rc = orthros_result_write(json_path, j);
        cJSON_Delete(j);
        if (rc) {
            status = 2;
            goto fail;
        }
    }
    rc = 0;
fail:
    if (rc) orthros_cmd_fail(cmd, rc);
    orthros_compare_result_free(&r);
    for (size_t i = 0; i < MAX_FILES; i++) {
        orthros_bench_file_free(&fb[i]);
        orthros_bench_file_free(&fn[i]);
    }
    free(bbuf);
    free(nbuf);
    return status;
}
