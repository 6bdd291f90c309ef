/* orthros eval ppl: token-level negative log-likelihood and perplexity of a text, per architecture and window
 * length, over sliding windows as Hugging Face's perplexity guide computes it: windows of L tokens starting every S
 * tokens, each scoring only the tokens the previous windows did not (the last S of it; all but the first in the
 * first window), so that every token is scored at most once and, with S < L, with at least L - S tokens of context.
 * The interval is a percentile bootstrap over windows of sum(NLL) / sum(tokens).
 *
 * Under orthros a window is one prompt: every position before the tail runs linear attention, so the logits that
 * score its tokens are linear-phase logits (all but the last `tail` positions; the last position predicts the token
 * after the window, which is not scored). The file counts them per cell (linear_phase_tokens) and the table says so. */
#define _GNU_SOURCE
#include "driver.h"
#include "tables.h"
#include "stats.h"
#include "text_eval.h"
#include "axes.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PPL_RESAMPLES 2000

typedef struct {
    const char *text, *tokens_file, *stride_arg, *max_tokens_arg;
    int stride;              /* 0: each window's own length */
    int64_t max_tokens;      /* 0: all */
    int32_t *ids;            /* [n_ids]: the text's tokens */
    int n_ids;
} ppl_task;

/* Window w of a text of T tokens: [begin, end) and the count of its last tokens to score. */
typedef struct {
    int begin, end, scored;
} ppl_window;

/* The windows of HF's loop: begin = 0, S, 2S, ... until a window reaches the end; each scores end - prev_end tokens,
 * less the window's first token (which has no prediction). A last window of one token (T one more than a
 * multiple of S) scores nothing and is left out: HF's loop gives it a NaN loss, and it made the bootstrap refuse
 * the whole cell after every window was computed. Returns the count, or -1 when out of memory. */
static int windows_of(ppl_window **out, int T, int L, int S)
{
    int cap = T / S + 2, n = 0, prev_end = 0;
    ppl_window *w = malloc((size_t)cap * sizeof *w);
    if (!w) return -1;
    for (int begin = 0; begin < T && n < cap; begin += S) {
        int end = begin + L < T ? begin + L : T, trg = end - prev_end;
        if (trg > end - begin - 1) trg = end - begin - 1;
        if (trg > 0) w[n++] = (ppl_window){begin, end, trg};
        prev_end = end;
        if (end == T) break;
    }
    *out = w;
    return n;
}

/* NLL of target under one row of logits, in double: logsumexp(row) - row[target]. */
static double nll_of(const float *row, int V, int32_t target)
{
    double mx = row[0], s = 0;
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++) s += exp((double)row[v] - mx);
    return mx + log(s) - (double)row[target];
}

/* Positions before the orthros tail run linear attention (only when some layer is an orthros layer). */
static int linear_rows(const orthros_model *m, int n)
{
    const orthros_arch *a = orthros_model_get_arch(m);
    int any = 0;
    for (int l = 0; l < orthros_model_get_config(m)->n_layers; l++) any |= a->kind[l] == ORTHROS_ATTN_ORTHROS;
    return any ? (n - a->tail > 0 ? n - a->tail : 0) : 0;
}

static int run_cell(eval_run *r, orthros_eval_cell *out, orthros_model *m, const eval_cell *c)
{
    const ppl_task *t = r->task;
    const eval_common *o = r->o;
    int V = orthros_model_get_config(m)->vocab, L = c->ctx, S = c->axis;
    int T = t->n_ids;
    ppl_window *w = NULL;
    orthros_session *sess = NULL;
    float *logits = NULL;
    double *num = NULL, *den = NULL, *row_nll = NULL, nll = 0, t0 = orthros_now_s();
    int64_t scored = 0, linear = 0;
    int rc = 0, nw = windows_of(&w, T, L, S);
    memset(out, 0, sizeof *out);
    out->partial = NAN;
    if (nw < 0) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    if (o->limit > 0 && nw > o->limit) nw = o->limit; /* --limit: the first windows only */
    int n_max = T < L ? T : L;
    logits = malloc((size_t)n_max * (size_t)V * sizeof *logits);
    num = malloc((size_t)nw * sizeof *num), den = malloc((size_t)nw * sizeof *den);
    row_nll = malloc((size_t)n_max * sizeof *row_nll);
    if (!logits || !num || !den || !row_nll || !(out->records = cJSON_CreateArray())) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory for the logits of a %d-token window (%.1f GiB)", n_max,
                           (double)n_max * V * 4 / (1 << 30));
        goto fail;
    }
    if ((rc = orthros_session_init(&sess, m, 1, n_max, o->mo.chunk))) goto fail;
    for (int i = 0; i < nw; i++) {
        int n = w[i].end - w[i].begin, lin_rows = linear_rows(m, n);
        double sum = 0;
        int64_t lin = 0;
        if ((rc = orthros_session_reset(sess)) || (rc = orthros_prefill(sess, 0, t->ids + w[i].begin, n, logits, NULL)))
            goto fail;
        /* Row j predicts window token j + 1: the scored targets are the window's last `scored` tokens. The rows'
         * NLLs are computed in parallel (a 49K-entry log-sum-exp each: most of a GPU run's time was spent here on
         * one core) and added in row order, so the sum does not depend on the thread count. */
        int j0 = n - 1 - w[i].scored;
#pragma omp parallel for schedule(static)
        for (int j = j0; j < n - 1; j++) row_nll[j - j0] = nll_of(logits + (size_t)j * V, V, t->ids[w[i].begin + j + 1]);
        for (int j = j0; j < n - 1; j++) {
            sum += row_nll[j - j0];
            lin += j < lin_rows;
        }
        num[i] = sum, den[i] = w[i].scored;
        nll += sum, scored += w[i].scored, linear += lin;
        cJSON *rec = cJSON_CreateObject();
        cJSON_AddNumberToObject(rec, "begin", w[i].begin);
        cJSON_AddNumberToObject(rec, "end", w[i].end);
        cJSON_AddNumberToObject(rec, "scored", w[i].scored);
        cJSON_AddNumberToObject(rec, "nll_sum", sum);
        cJSON_AddNumberToObject(rec, "linear_phase_tokens", (double)lin);
        cJSON_AddItemToArray(out->records, rec);
        if (!o->quiet && nw > 1)
            fprintf(stderr, "  window %d/%d [%d, %d): %d tokens, mean NLL %.4f\n", i + 1, nw, w[i].begin, w[i].end,
                    w[i].scored, sum / w[i].scored);
    }
    snprintf(out->task, sizeof out->task, "ppl");
    snprintf(out->variant, sizeof out->variant, "ppl");
    snprintf(out->arch, sizeof out->arch, "%s", c->arch);
    out->ctx = L, out->axis = S, out->samples = nw, out->n = scored, out->linear_tokens = linear;
    out->nll = nll / (double)scored, out->ppl = exp(out->nll);
    out->ppl_lo = out->ppl_hi = NAN;
    if (nw > 1) {
        double lo, hi;
        if ((rc = orthros_stats_bootstrap_ratio_of_sums_ci(&lo, &hi, num, den, (size_t)nw, 0.95, PPL_RESAMPLES,
                                                          (uint64_t)o->mo.seed)))
            goto fail;
        /* The percentile interval of the ratio holds the ratio itself except by rounding. */
        out->ppl_lo = fmin(exp(lo), out->ppl), out->ppl_hi = fmax(exp(hi), out->ppl);
    }
    out->elapsed_s = orthros_now_s() - t0;
    goto done;
fail:
    cJSON_Delete(out->records);
    out->records = NULL;
done:
    orthros_session_free(sess);
    free(logits);
    free(num);
    free(den);
    free(row_nll);
    free(w);
    return rc;
}

void orthros_eval_ppl_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX])
{
    snprintf(v[0], ORTHROS_NAME_MAX, "%s", c->arch);
    snprintf(v[1], ORTHROS_NAME_MAX, "%d", c->ctx);
    snprintf(v[2], ORTHROS_NAME_MAX, "%d", c->axis);
    snprintf(v[3], ORTHROS_NAME_MAX, "%d", c->samples);
    snprintf(v[4], ORTHROS_NAME_MAX, "%lld", (long long)c->n);
    snprintf(v[5], ORTHROS_NAME_MAX, "%.4f", c->nll);
    snprintf(v[6], ORTHROS_NAME_MAX, "%.3f", c->ppl);
    if (isnan(c->ppl_lo)) v[7][0] = v[8][0] = 0;
    else {
        snprintf(v[7], ORTHROS_NAME_MAX, "%.3f", c->ppl_lo);
        snprintf(v[8], ORTHROS_NAME_MAX, "%.3f", c->ppl_hi);
    }
    snprintf(v[9], ORTHROS_NAME_MAX, "%lld", (long long)c->linear_tokens);
}

/* The phase note: which cells scored tokens from linear-phase logits. */
static void ppl_summary(eval_run *r)
{
    int any = 0;
    for (size_t i = 0; i < r->f.n_cells; i++) {
        const orthros_eval_cell *c = &r->f.cells[i];
        if (!c->linear_tokens) continue;
        char line[320];
        snprintf(line, sizeof line,
                 "note: %s ctx %d: %lld of %lld scored tokens were predicted from linear-phase logits (prompt positions "
                 "before the orthros tail run linear attention; only the tail runs softmax attention)",
                 c->arch, c->ctx, (long long)c->linear_tokens, (long long)c->n);
        orthros_table_note(&r->table, line);
        any = 1;
    }
    if (any)
        orthros_table_note(&r->table, "note: orthros's perplexity here is its prefill (linear) phase's; its decode phase "
                                      "(softmax over the whole cache) is what ruler and recall measure");
}

static int check_model(eval_run *r, orthros_model *m)
{
    const ppl_task *t = r->task;
    int V = orthros_model_get_config(m)->vocab;
    for (int i = 0; i < t->n_ids; i++)
        if (t->ids[i] < 0 || t->ids[i] >= V)
            return orthros_error(ORTHROS_ERANGE, "%s: token %d (id %d) is outside the model's vocabulary of %d",
                                 t->text ? t->text : t->tokens_file, i, t->ids[i], V);
    return 0;
}

const orthros_table_col orthros_eval_ppl_cols[10] = {{"arch", -12, 0}, {"ctx", 7, 1},  {"stride", 7, 1},  {"windows", 8, 1},
                                             {"tokens", 8, 1},  {"nll", 8, 1}, {"ppl", 9, 1},     {"ppl_lo", 9, 1},
                                             {"ppl_hi", 9, 1},  {"linear_phase", 12, 1}};

/* The text's tokens, truncated to --max-tokens. */
static int load_tokens(ppl_task *t, const char *model)
{
    int rc;
    if (t->tokens_file) {
        if ((rc = orthros_opt_read_tokens(&t->ids, &t->n_ids, t->tokens_file))) return rc;
    } else {
        char *text = NULL;
        size_t len = 0;
        orthros_tokenizer *tok = NULL;
        if ((rc = orthros_read_file(&text, &len, t->text, (size_t)1 << 30, NULL))) return rc;
        if (!(rc = orthros_tokenizer_load(&tok, model)))
            rc = orthros_tokenizer_encode(tok, text, len, ORTHROS_TOK_ADD_SPECIAL | ORTHROS_TOK_SPLIT_SPECIAL, &t->ids,
                                          &t->n_ids);
        orthros_tokenizer_free(tok);
        free(text);
        if (rc) return rc;
    }
    if (t->max_tokens && t->n_ids > t->max_tokens) t->n_ids = (int)t->max_tokens;
    if (t->n_ids < 2)
        return orthros_error(ORTHROS_EINVAL, "%s: %d token%s: nothing to score (at least 2 are needed)",
                             t->text ? t->text : t->tokens_file, t->n_ids, t->n_ids == 1 ? "" : "s");
    return 0;
}

int orthros_cmd_eval_ppl(int argc, char **argv)
{
    const char *json_default = "orthros-eval-ppl.json", *cmd = "eval ppl";
    eval_common o;
    ppl_task t;
    memset(&t, 0, sizeof t);
    orthros_eval_common_default(&o, "ppl");
    o.samples = 1;
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Perplexity of a text under each architecture: the text is tokenized with the model's tokenizer "
                     "(or read as token ids), cut into windows of --ctx tokens every --stride tokens, and every token "
                     "is scored once, from the logits of the position before it (Hugging Face's sliding-window "
                     "perplexity). Writes per-window records and per-cell mean NLL, perplexity and a bootstrap 95% "
                     "interval over windows. Under orthros the scored logits are linear-phase (prefill) logits, and "
                     "the file and the table say how many.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_cmd_opt(&c, "model")->help = "the model: a GGUF file or a Hugging Face directory (required; with "
                                         "--tokens-file any model, presets included)";
    orthros_cmd_add(&c, "text", ORTHROS_OPT_STR, &t.text, "FILE", "the text to score (its bytes, UTF-8)");
    orthros_cmd_add(&c, "tokens-file", ORTHROS_OPT_STR, &t.tokens_file, "FILE",
                    "score these token ids instead (integers separated by commas or white space)");
    orthros_cmd_add(&c, "ctx", ORTHROS_OPT_STR, &o.ctxs, "LIST", "window lengths in tokens: 1k,4k or 1k:8k:x2 (required)");
    orthros_cmd_add(&c, "stride", ORTHROS_OPT_STR, &t.stride_arg, "S",
                    "a window every S tokens, at most every window length (default: each window's length, no overlap)");
    orthros_cmd_add(&c, "max-tokens", ORTHROS_OPT_STR, &t.max_tokens_arg, "N",
                    "score only the text's first N tokens, e.g. 16k (default: all)");
    orthros_eval_common_add(&c, &o, json_default, NULL);
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model || (t.text != NULL) + (t.tokens_file != NULL) != 1 || !o.ctxs)
        return orthros_cmd_usage(&c, "--model, --ctx and one of --text, --tokens-file are required (see --help)");
    if ((pr = orthros_eval_common_check(&c, &o, json_default)) >= 0) return pr;
    int64_t v;
    int rc;
    if (t.stride_arg) {
        if (orthros_axis_parse_scalar(&v, t.stride_arg, 1, INT_MAX / 2))
            return orthros_cmd_usage(&c, "--stride: %s", orthros_last_error());
        t.stride = (int)v;
    }
    if (t.max_tokens_arg) {
        if (orthros_axis_parse_scalar(&v, t.max_tokens_arg, 2, INT_MAX))
            return orthros_cmd_usage(&c, "--max-tokens: %s", orthros_last_error());
        t.max_tokens = v;
    }
    static const eval_task_ops ops = {check_model, run_cell, orthros_eval_ppl_row, ppl_summary};
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = &o, r.ops = &ops, r.task = &t;
    if ((rc = orthros_eval_parse_archs(&r)) ||
        (rc = orthros_eval_parse_ints(r.ctxs, &r.nc, o.ctxs, "ctx", 2, INT_MAX / 2)))
        return orthros_cmd_fail_usage(cmd, rc);
    for (size_t i = 0; i < r.nc; i++)
        if (t.stride > r.ctxs[i])
            return orthros_cmd_usage(&c, "--stride %d is longer than the window of %d tokens: tokens between windows "
                                         "would never be scored", t.stride, r.ctxs[i]);
    if ((rc = load_tokens(&t, o.mo.model))) {
        free(t.ids);
        return orthros_cmd_fail(cmd, rc);
    }
    /* A cell is (arch, window, stride): one stride per window length. */
    r.nx = 1;
    r.xs[0] = t.stride;
    /* Without --stride every window length is its own stride: the second axis follows the first. */
    r.x_from_ctx = !t.stride;
    orthros_eval_config cfg;
    if ((rc = orthros_eval_config_common(&cfg, &o, ""))) {
        free(t.ids);
        return orthros_cmd_fail(cmd, rc);
    }
    snprintf(cfg.variant, sizeof cfg.variant, "ppl");
    cfg.text = strdup(t.text ? t.text : t.tokens_file);
    cfg.text_tokens = t.n_ids, cfg.stride = t.stride, cfg.limit = o.limit;
    snprintf(cfg.scoring, sizeof cfg.scoring,
             "token NLL in nats from the position before; HF sliding windows, each token scored at most once; "
             "ppl = exp(mean NLL); 95%% percentile bootstrap over windows; orthros: linear-phase logits");
    int status;
    if (!cfg.text) {
        orthros_eval_config_free(&cfg);
        status = orthros_cmd_fail(cmd, orthros_error(ORTHROS_ENOMEM, "out of memory"));
    } else {
        status = orthros_eval_drive(&r, argc, argv, &cfg, orthros_eval_ppl_cols, 10);
    }
    free(t.ids);
    return status;
}
