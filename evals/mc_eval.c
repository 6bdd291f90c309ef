/* orthros eval mc: multiple-choice log-likelihood evals in lm-eval's terms (mc.h for the layouts and prompts).
 *
 * Each choice is scored by the log-likelihood of its continuation tokens after the context, as lm-eval's
 * loglikelihood requests do: the tokens fed are context + continuation[:-1], and the log-softmax of each position
 * before a continuation token, at that token, is summed (double precision). acc takes the choice of the largest
 * sum, acc_norm the largest sum per character of the choice (lm-eval's completion_len), both argmax first on ties;
 * their stderr is lm-eval's mean_stderr (the sample standard deviation over sqrt(n)).
 *
 * --score decode (the default) computes it as a deployed model answers: the context is prefilled once per question
 * (under orthros its positions before the tail run linear attention; the last one predicts the first continuation
 * token), the state is copied to one sequence per choice (orthros_session_copy_seq: KV cache and linear state) and
 * the continuations are decoded together as the sequences of one decode batch (full attention under orthros).
 * Winogrande's choices are contexts: each is prefilled on its own sequence and the shared continuation is decoded
 * in one batch. --score prefill prefills each choice's context + continuation[:-1] as one prompt instead, as
 * lm-eval's forward pass does (under orthros the continuation then runs linear attention, except the tail). */
#define _GNU_SOURCE
#include "driver.h"
#include "mc.h"
#include "tables.h"
#include "text_eval.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One question's token requests: the context(s) and each choice's continuation. */
typedef struct {
    int n_ctx;           /* 1 (shared) or n_choices (winogrande) */
    int32_t *ctx[ORTHROS_MC_MAX_CHOICES], *cont[ORTHROS_MC_MAX_CHOICES];
    int ctx_len[ORTHROS_MC_MAX_CHOICES], cont_len[ORTHROS_MC_MAX_CHOICES], chars[ORTHROS_MC_MAX_CHOICES];
} mc_req;

typedef struct {
    const char *tasks, *layout_arg, *fewshot_file, *name_arg, *score;
    int shots, limit;
    char name[64];
    orthros_mc_set set, pool_set;
    const orthros_mc_set *pool;
    orthros_tokenizer *tok;
    int n;               /* questions run: the first min(limit, set.n) */
    mc_req *req;
    int longest;         /* the longest context + continuation: the session's context */
    int max_choices, max_cont;
    int prefill_mode;
} mc_task;

/* log softmax(row)[tok] in double; *top: tok is the argmax (lowest index on ties). */
static double token_logprob(const float *row, int V, int32_t tok, int *top)
{
    int am = 0;
    for (int v = 1; v < V; v++)
        if (row[v] > row[am]) am = v;
    double mx = row[am], s = 0;
    for (int v = 0; v < V; v++) s += exp((double)row[v] - mx);
    *top = am == tok;
    return (double)row[tok] - mx - log(s);
}

static int argmax_d(const double *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* The continuations of one question under --score decode: the context(s) prefilled, copied, decoded in a batch. */
static int score_decode(orthros_session *s, int B, int V, const mc_req *q, int K, float *lg, double *ll, int *greedy)
{
    int rc = orthros_session_reset(s), top;
    int32_t tok[ORTHROS_MC_MAX_CHOICES];
    for (int b = 0; !rc && b < K; b++) {
        /* The last context position predicts the first continuation token; a shared context is prefilled once. */
        if (b == 0 || q->n_ctx > 1) {
            int c = q->n_ctx > 1 ? b : 0;
            rc = orthros_prefill_logits(s, c, q->ctx[c], q->ctx_len[c], q->ctx_len[c] - 1, lg, NULL);
        }
        if (!rc) ll[b] = token_logprob(lg, V, q->cont[b][0], &greedy[b]);
    }
    int steps = 0;
    for (int b = 0; b < K; b++) steps = q->cont_len[b] > steps ? q->cont_len[b] : steps;
    for (int b = 1; !rc && q->n_ctx == 1 && b < K; b++)
        if (q->cont_len[b] > 1) rc = orthros_session_copy_seq(s, b, 0);
    for (int t = 1; !rc && t < steps; t++) {
        for (int b = 0; b < B; b++) tok[b] = b < K && t < q->cont_len[b] ? q->cont[b][t - 1] : 0;
        if ((rc = orthros_decode(s, tok, NULL, lg))) break;
        for (int b = 0; b < K; b++)
            if (t < q->cont_len[b]) {
                ll[b] += token_logprob(lg + (size_t)b * V, V, q->cont[b][t], &top);
                greedy[b] &= top;
            }
    }
    return rc;
}

/* --score prefill: each choice's context + continuation[:-1] as one prompt. */
static int score_prefill(orthros_session *s, int V, const mc_req *q, int K, float *lg, int32_t *buf, double *ll, int *greedy)
{
    int rc = 0, top;
    for (int b = 0; !rc && b < K; b++) {
        int c = q->n_ctx > 1 ? b : 0, n = q->ctx_len[c], L = q->cont_len[b];
        memcpy(buf, q->ctx[c], (size_t)n * sizeof *buf);
        memcpy(buf + n, q->cont[b], (size_t)(L - 1) * sizeof *buf);
        if ((rc = orthros_session_reset(s)) || (rc = orthros_prefill_logits(s, 0, buf, n + L - 1, n - 1, lg, NULL))) break;
        ll[b] = 0, greedy[b] = 1;
        for (int t = 0; t < L; t++) {
            ll[b] += token_logprob(lg + (size_t)t * V, V, q->cont[b][t], &top);
            greedy[b] &= top;
        }
    }
    return rc;
}

static cJSON *ints_json(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static int run_cell(eval_run *r, orthros_eval_cell *out, orthros_model *m, const eval_cell *c)
{
    const mc_task *t = r->task;
    const eval_common *o = r->o;
    int V = orthros_model_get_config(m)->vocab, B = t->prefill_mode ? 1 : t->max_choices;
    size_t rows = t->prefill_mode ? (size_t)t->max_cont : (size_t)B;
    orthros_session *s = NULL;
    float *lg = malloc(rows * (size_t)V * sizeof *lg);
    int32_t *buf = malloc((size_t)t->longest * sizeof *buf);
    double t0 = orthros_now_s();
    int64_t acc = 0, acc_norm = 0;
    memset(out, 0, sizeof *out);
    out->partial = NAN;
    int rc = !lg || !buf || !(out->records = cJSON_CreateArray()) ? orthros_error(ORTHROS_ENOMEM, "out of memory") : 0;
    if (!rc) rc = orthros_session_init(&s, m, B, t->longest, o->mo.chunk);
    for (int i = 0; !rc && i < t->n; i++) {
        const orthros_mc_item *it = &t->set.items[i];
        const mc_req *q = &t->req[i];
        int K = it->n_choices, greedy[ORTHROS_MC_MAX_CHOICES];
        double ll[ORTHROS_MC_MAX_CHOICES], norm[ORTHROS_MC_MAX_CHOICES];
        rc = t->prefill_mode ? score_prefill(s, V, q, K, lg, buf, ll, greedy) : score_decode(s, B, V, q, K, lg, ll, greedy);
        if (rc) break;
        for (int b = 0; b < K; b++) norm[b] = ll[b] / (double)q->chars[b];
        int pred = argmax_d(ll, K), pred_norm = argmax_d(norm, K);
        acc += pred == it->gold, acc_norm += pred_norm == it->gold;
        cJSON *rec = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(rec, "loglikelihoods");
        cJSON_AddNumberToObject(rec, "line", it->line);
        if (it->id) cJSON_AddStringToObject(rec, "id", it->id);
        cJSON_AddNumberToObject(rec, "gold", it->gold);
        for (int b = 0; b < K; b++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ll[b]));
        cJSON *g = cJSON_AddArrayToObject(rec, "is_greedy");
        for (int b = 0; b < K; b++) cJSON_AddItemToArray(g, cJSON_CreateBool(greedy[b]));
        cJSON_AddItemToObject(rec, "choice_chars", ints_json(q->chars, K));
        cJSON_AddItemToObject(rec, "ctx_tokens", ints_json(q->ctx_len, q->n_ctx));
        cJSON_AddItemToObject(rec, "cont_tokens", ints_json(q->cont_len, K));
        cJSON_AddNumberToObject(rec, "pred", pred);
        cJSON_AddNumberToObject(rec, "pred_norm", pred_norm);
        cJSON_AddBoolToObject(rec, "acc", pred == it->gold);
        cJSON_AddBoolToObject(rec, "acc_norm", pred_norm == it->gold);
        cJSON_AddItemToArray(out->records, rec);
        if (r->prompts) {
            cJSON *j = cJSON_CreateObject(), *ctxs = cJSON_AddArrayToObject(j, "contexts"), *conts = cJSON_AddArrayToObject(j, "continuations");
            cJSON_AddStringToObject(j, "task", "mc");
            cJSON_AddStringToObject(j, "arch", c->arch);
            cJSON_AddNumberToObject(j, "line", it->line);
            for (int k = 0; k < q->n_ctx; k++) cJSON_AddItemToArray(ctxs, orthros_eval_ints_json(q->ctx[k], q->ctx_len[k]));
            for (int b = 0; b < K; b++) cJSON_AddItemToArray(conts, orthros_eval_ints_json(q->cont[b], q->cont_len[b]));
            cJSON_AddItemToObject(j, "loglikelihoods", cJSON_Duplicate(a, 1));
            rc = orthros_eval_save_line(r->prompts, j);
        }
        if (!o->quiet && (i + 1) % 50 == 0) fprintf(stderr, "  %s: %d of %d questions\n", c->arch, i + 1, t->n);
    }
    orthros_session_free(s);
    free(lg);
    free(buf);
    if (rc) {
        cJSON_Delete(out->records);
        out->records = NULL;
        return rc;
    }
    snprintf(out->task, sizeof out->task, "mc");
    snprintf(out->variant, sizeof out->variant, "%s", orthros_mc_layout_name(t->set.layout));
    snprintf(out->arch, sizeof out->arch, "%s", c->arch);
    out->ctx = c->ctx, out->axis = 0, out->samples = t->n, out->samples_correct = (int)acc;
    out->n = t->n, out->correct = acc, out->correct_norm = acc_norm;
    out->accuracy = (double)acc / t->n, out->acc_norm = (double)acc_norm / t->n;
    out->acc_stderr = orthros_eval_binary_stderr(acc, t->n);
    out->acc_norm_stderr = orthros_eval_binary_stderr(acc_norm, t->n);
    out->ci_lo = out->ci_hi = NAN;
    out->exact_match = out->exact_match_stderr = out->f1 = out->f1_stderr = NAN;
    out->elapsed_s = orthros_now_s() - t0;
    return 0;
}

static int check_model(eval_run *r, orthros_model *m)
{
    const mc_task *t = r->task;
    int max = orthros_model_get_config(m)->max_pos;
    if (max > 0 && t->longest > max)
        return orthros_error(ORTHROS_EINVAL, "%s: a question of %d tokens (context and continuation) is past the model's "
                             "context of %d tokens (lm-eval would cut its context from the left; this eval refuses it)",
                             t->tasks, t->longest, max);
    return 0;
}

static void mc_summary(eval_run *r)
{
    const mc_task *t = r->task;
    orthros_eval_print_lmeval(r);
    if (!r->o->quiet)
        fprintf(stderr, "eval mc: %d questions of %s (layout %s, %d-shot), contexts and continuations of up to %d tokens, "
                "scored in the %s\n", t->n, t->tasks, orthros_mc_layout_name(t->set.layout), t->shots, t->longest, t->score);
}

static void task_free(mc_task *t)
{
    for (int i = 0; t->req && i < t->n; i++) {
        for (int k = 0; k < t->req[i].n_ctx; k++) free(t->req[i].ctx[k]);
        for (int b = 0; b < ORTHROS_MC_MAX_CHOICES; b++) free(t->req[i].cont[b]);
    }
    free(t->req);
    orthros_mc_free(&t->set);
    orthros_mc_free(&t->pool_set);
    orthros_tokenizer_free(t->tok);
}

/* The tasks file, the few-shot pool, the tokenizer and every request, before any model runs. *usage: the failure
 * is the arguments'. */
static int prepare(mc_task *t, const char *model, int *usage)
{
    orthros_mc_layout want;
    int rc;
    *usage = 1;
    if ((rc = orthros_mc_layout_parse(&want, t->layout_arg))) return rc;
    if (strcmp(t->score, "decode") && strcmp(t->score, "prefill"))
        return orthros_error(ORTHROS_EINVAL, "--score %s: decode or prefill", t->score);
    t->prefill_mode = !strcmp(t->score, "prefill");
    *usage = 0;
    if ((rc = orthros_mc_load(&t->set, t->tasks, want))) return rc;
    t->pool = &t->set;
    if (t->fewshot_file) {
        if ((rc = orthros_mc_load(&t->pool_set, t->fewshot_file, t->set.layout))) return rc;
        t->pool = &t->pool_set;
    }
    *usage = 1;
    if ((rc = orthros_tokenizer_load(&t->tok, model))) return rc;
    *usage = 0;
    t->n = t->limit > 0 && t->limit < t->set.n ? t->limit : t->set.n;
    if (!(t->req = calloc((size_t)t->n, sizeof *t->req))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    for (int i = 0; i < t->n; i++) {
        const orthros_mc_item *it = &t->set.items[i];
        mc_req *q = &t->req[i];
        q->n_ctx = it->multi_input ? it->n_choices : 1;
        if (it->n_choices > t->max_choices) t->max_choices = it->n_choices;
        for (int b = 0; b < it->n_choices; b++) {
            char *ctx = NULL, *cont = NULL;
            int32_t *ci = NULL;
            int nci = 0;
            if ((rc = orthros_mc_request(&ctx, &cont, t->pool, it, t->shots, b))) return orthros_error_prefix(rc, t->tasks);
            int c = it->multi_input ? b : 0;
            rc = orthros_mc_encode(&ci, &nci, &q->cont[b], &q->cont_len[b], t->tok, ctx, cont);
            /* lm-eval's length for acc_norm is the choice's (the context, for winogrande's choices) */
            q->chars[b] = orthros_mc_chars(it->choices[b]);
            free(ctx), free(cont);
            if (rc) return orthros_error(rc, "%s:%d: choice %d: %s", t->tasks, it->line, b, orthros_last_error());
            if (b == c) q->ctx[c] = ci, q->ctx_len[c] = nci;
            else free(ci);
            if (q->cont_len[b] < 1)
                return orthros_error(ORTHROS_EFORMAT, "%s:%d: choice %d has no token of its own after the context", t->tasks,
                                     it->line, b);
            int total = q->ctx_len[c] + q->cont_len[b];
            if (q->ctx_len[c] > INT_MAX / 4 || q->cont_len[b] > INT_MAX / 4)
                return orthros_error(ORTHROS_ERANGE, "%s:%d: a request of %d tokens", t->tasks, it->line, total);
            if (total > t->longest) t->longest = total;
            if (q->cont_len[b] > t->max_cont) t->max_cont = q->cont_len[b];
        }
    }
    return 0;
}

/* mc's fields of the run's configuration. */
static void mc_config(orthros_eval_config *cfg, const void *task)
{
    const mc_task *t = task;
    snprintf(cfg->variant, sizeof cfg->variant, "%s", orthros_mc_layout_name(t->set.layout));
    snprintf(cfg->layout, sizeof cfg->layout, "%s", orthros_mc_layout_name(t->set.layout));
    snprintf(cfg->name, sizeof cfg->name, "%s", t->name);
    snprintf(cfg->score, sizeof cfg->score, "%s", t->score);
    cfg->shots = t->shots, cfg->limit = t->limit, cfg->text_tokens = t->set.n;
    snprintf(cfg->scoring, sizeof cfg->scoring,
             "lm-eval 0.4.13 multiple_choice: acc = argmax of the continuations' log-likelihoods, acc_norm = argmax per "
             "character; continuations scored in the %s; n counts questions", t->prefill_mode ? "prefill" : "decode path");
}

int orthros_cmd_eval_mc(int argc, char **argv)
{
    const char *cmd = "eval mc", *json_default = "orthros-eval-mc.json";
    eval_common o;
    mc_task t;
    memset(&t, 0, sizeof t);
    t.layout_arg = "auto", t.score = "decode";
    orthros_eval_common_default(&o, "mc");
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Multiple-choice questions scored by log-likelihood, as lm-evaluation-harness 0.4.13 scores them: "
                     "acc (the choice of the largest log-likelihood of its continuation after the context), acc_norm (per "
                     "character of the choice) and their stderr, from a JSONL file in the layout Hugging Face datasets "
                     "export for ARC, HellaSwag, PIQA, OpenBookQA or Winogrande, or {\"context\", \"choices\", \"gold\"}, "
                     "with lm-eval's prompts. Under orthros the context is prefilled (linear phase) and each choice is "
                     "scored through the decode path (full attention); --score prefill scores it in the prefill. One cell "
                     "per architecture; the table is lm-eval's.",
                     0);
    c.first = 3;
    orthros_model_opts_add(&c, &o.mo);
    orthros_cmd_opt(&c, "model")->help = "a text model: a GGUF file or a Hugging Face directory with tokenizer.json (required)";
    orthros_cmd_add(&c, "tasks", ORTHROS_OPT_STR, &t.tasks, "FILE.jsonl", "the questions, one JSON object a line (required)");
    orthros_cmd_add(&c, "layout", ORTHROS_OPT_STR, &t.layout_arg, "L",
                    "arc|hellaswag|piqa|openbookqa|winogrande|generic|auto (default auto: from the first line's keys)");
    orthros_cmd_add_num(&c, "shots", ORTHROS_OPT_INT, &t.shots, 0, 1000, "K",
                        "few-shot examples before each question (default 0): the first K other items of the pool, as "
                        "lm-eval's first_n sampler");
    orthros_cmd_add(&c, "fewshot-file", ORTHROS_OPT_STR, &t.fewshot_file, "FILE",
                    "the pool of few-shot examples, same layout (default: the tasks file)");
    orthros_cmd_add(&c, "name", ORTHROS_OPT_STR, &t.name_arg, "NAME",
                    "the task's name in the table (default: the tasks file's name without .jsonl)");
    orthros_cmd_add(&c, "score", ORTHROS_OPT_STR, &t.score, "WHERE",
                    "decode (default: the context prefilled once, each continuation through the decode path) or prefill "
                    "(context and continuation as one prompt)");
    orthros_eval_common_add(&c, &o, json_default, "also write every question's token ids and log-likelihoods as JSON lines");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!o.mo.model || !t.tasks) return orthros_cmd_usage(&c, "--model and --tasks are required (see --help)");
    if ((pr = orthros_eval_common_check(&c, &o, json_default)) >= 0) return pr;
    t.limit = o.limit;
    if ((pr = orthros_eval_task_name(&c, t.name, sizeof t.name, t.name_arg, t.tasks)) >= 0) return pr;
    static const eval_task_ops ops = {check_model, run_cell, NULL, mc_summary};
    eval_run r;
    memset(&r, 0, sizeof r);
    r.o = &o, r.ops = &ops, r.task = &t;
    int usage, rc = orthros_eval_parse_archs(&r);
    if (rc) return orthros_cmd_fail_usage(cmd, rc);
    if ((rc = prepare(&t, o.mo.model, &usage))) {
        task_free(&t);
        return usage ? orthros_cmd_fail_usage(cmd, rc) : orthros_cmd_fail(cmd, rc);
    }
    int status = orthros_eval_drive_tasks(&r, &o, argc, argv, t.n, t.longest, t.tasks, t.fewshot_file, mc_config);
    task_free(&t);
    return status;
}
