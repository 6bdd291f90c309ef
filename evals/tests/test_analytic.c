/* The analytic recall checkpoint: its margins (score gap against ln N for every supported size, the class
 * tie-break, the exclusion, RoPE rotation), the scores its actual weights give, the one-half threshold of the
 * default answer, deterministic writing, and the recall each architecture gets on the cpu engine:
 * transformer and orthros answer every NIAH variant and every MQAR pair count; linear fails at 64 pairs and in
 * haystacks; swa fails exactly when the needle is outside its window. Malformed tasks are refused. */
#define _GNU_SOURCE
#include "analytic.h"
#include "tasks.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D 192
#define HD 128

static orthros_analytic_params P;

static float *tensor(const char *name)
{
    float *w = NULL;
    size_t n = 0;
    int rc = orthros_analytic_tensor(&w, &n, &P, name);
    CHECK(rc == 0 && w, "tensor %s: %s", name, orthros_last_error());
    return w;
}

/* q or k of one layer for a residual row x (RMSNorm of an embedding is the identity up to its eps). */
static void project(double *out, const float *W, const float *x)
{
    for (int i = 0; i < HD; i++) {
        double s = 0;
        for (int j = 0; j < D; j++) s += (double)W[(size_t)i * D + j] * x[j];
        out[i] = s;
    }
}

static double dot(const double *a, const double *b)
{
    double s = 0;
    for (int i = 0; i < HD; i++) s += a[i] * b[i];
    return s / sqrt((double)HD);
}

static void test_margins(void)
{
    int keys[] = {1, 4, 64};
    int64_t ctx[] = {16, 1 << 17, 1 << 20, (int64_t)1 << 30};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            orthros_analytic_params p = P;
            orthros_analytic_margins m;
            p.keys = keys[i];
            p.max_context = ctx[j];
            orthros_analytic_margins_of(&m, &p);
            CHECK(m.gap_filler >= 12 - 1e-9 && m.gap_keys >= 12 - 1e-9 && m.gap_excl >= 12 - 1e-9 &&
                      m.gap_exc_head >= 12 - 1e-9,
                  "keys %d ctx %lld: margins %g %g %g %g below 12", keys[i], (long long)ctx[j], m.gap_filler, m.gap_keys,
                  m.gap_excl, m.gap_exc_head);
            CHECK(m.rope_max_angle < 2e-3, "ctx %lld: rotation %g rad", (long long)ctx[j], m.rope_max_angle);
            /* A haystack of max_context tokens leaves the needle at least 1 - e^-12 of the mass. */
            CHECK(exp(-m.gap_filler) * 1.0 < 1e-5, "filler leak");
        }
}

/* Scores of the retrieval head computed from the written weights (bf16-exact values). */
static void test_scores(void)
{
    orthros_analytic_layout l;
    orthros_analytic_margins m;
    orthros_analytic_layout_of(&l, &P);
    orthros_analytic_margins_of(&m, &P);
    float *emb = tensor("model.embed_tokens.weight"), *wq = tensor("model.layers.1.self_attn.q_proj.weight");
    float *wk = tensor("model.layers.1.self_attn.k_proj.weight"), *head = tensor("lm_head.weight");
    if (!emb || !wq || !wk || !head) goto done;
    /* Every embedding has |x|^2 = D to within bf16 rounding of PAD, so RMSNorm leaves it alone. */
    double worst_norm = 0;
    for (int t = 0; t < l.vocab; t++) {
        double ss = 0;
        for (int j = 0; j < D; j++) ss += (double)emb[(size_t)t * D + j] * emb[(size_t)t * D + j];
        worst_norm = fmax(worst_norm, fabs(sqrt(ss / D) - 1));
    }
    CHECK(worst_norm < 2e-3, "embedding rms off 1 by %g", worst_norm);
    /* k of every token once, then every key's q against them. */
    double q[HD], k[HD], min_match = INFINITY, max_other_fact = -INFINITY, max_nonfact = -INFINITY;
    double *ks = calloc((size_t)l.vocab * HD, sizeof(double));
    if (!ks) goto done;
    for (int t = 0; t < l.vocab; t++) project(ks + (size_t)t * HD, wk, emb + (size_t)t * D);
    for (int a = 0; a < l.keys; a++) {
        project(q, wq, emb + (size_t)orthros_analytic_key(&l, a) * D);
        for (int b = 0; b < l.keys; b++)
            for (int v = 0; v < l.values; v++) {
                double s = dot(q, ks + (size_t)orthros_analytic_pair(&l, b, v) * HD);
                if (a == b) min_match = fmin(min_match, s);
                else max_other_fact = fmax(max_other_fact, s);
            }
        for (int t = 0; t < l.pair0; t++) max_nonfact = fmax(max_nonfact, dot(q, ks + (size_t)t * HD));
    }
    free(ks);
    double lnN = log((double)P.max_context), lnK = log((double)P.keys);
    CHECK(fabs(min_match - m.S) < 0.01 * m.S, "matching fact scores %g, construction says S = %g", min_match, m.S);
    CHECK(fabs(max_nonfact) < 1e-9, "a non-fact token scores %g, not 0", max_nonfact);
    CHECK(min_match - max_nonfact - lnN >= 12 - 0.01 * m.S, "gap over the haystack %g - ln N below 12",
          min_match - max_nonfact);
    CHECK(min_match - max_other_fact - lnK >= 12 - 0.01 * m.S, "gap over other facts %g - ln K below 12",
          min_match - max_other_fact);
    CHECK(max_other_fact <= (ORTHROS_ANALYTIC_CLASSES - 1) * m.delta + 0.1, "another fact scores %g", max_other_fact);
    /* Class tie-break: two facts of the asked key differ by delta per class. */
    project(q, wq, emb + (size_t)orthros_analytic_key(&l, 5) * D);
    project(k, wk, emb + (size_t)orthros_analytic_pair(&l, 5, 0) * D);
    double s0 = dot(q, k);
    project(k, wk, emb + (size_t)orthros_analytic_pair(&l, 5, 1) * D);
    CHECK(fabs(s0 - dot(q, k) - m.delta) < 0.05, "class step %g, want %g", s0 - dot(q, k), m.delta);
    /* Default answer: value u beats NONE exactly when the mass on u is above one half (residual VAL_u = 4 a). */
    const int VAL = 67;
    double none_w = head[(size_t)l.none * D + 0], val_w = head[(size_t)(l.value0 + 3) * D + VAL + 3];
    CHECK(val_w * 4 * 0.499 < none_w && val_w * 4 * 0.501 > none_w, "threshold is not one half: %g vs %g", val_w * 4,
          none_w);
done:
    free(emb);
    free(wq);
    free(wk);
    free(head);
}

static uint64_t file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint64_t h = 1469598103934665603ull;
    int c;
    while (f && (c = fgetc(f)) != EOF) h = (h ^ (uint64_t)c) * 1099511628211ull;
    if (f) fclose(f);
    return h;
}

static void test_deterministic(const char *dir)
{
    char a[8300], b[8300], d2[4096];
    snprintf(d2, sizeof d2, "%s/again", dir);
    CHECK(orthros_analytic_write(d2, &P) == 0, "second write: %s", orthros_last_error());
    const char *files[] = {"model.safetensors", "config.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", dir, files[i]);
        snprintf(b, sizeof b, "%s/%s", d2, files[i]);
        CHECK(file_hash(a) == file_hash(b), "%s differs between two writes", files[i]);
    }
}

/* Accuracy (fraction of answers right) of `arch` over samples of one task. */
typedef struct {
    const char *task;
    orthros_niah_variant v;
    int ctx, x, samples;
} task_spec;

/* Models loaded once per (arch, window) for the whole test. */
static struct {
    char arch[32];
    int window;
    orthros_model *m;
} models[8];

static orthros_model *model_for(orthros_backend *be, const char *dir, const char *arch, int window)
{
    int i = 0;
    for (; i < 8 && models[i].m; i++)
        if (!strcmp(models[i].arch, arch) && models[i].window == window) return models[i].m;
    if (i == 8) return NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = arch;
    if (window > 0) ao.window = window;
    if (orthros_model_load(&models[i].m, be, dir, &ao, 1)) {
        CHECK(0, "load %s: %s", arch, orthros_last_error());
        return NULL;
    }
    snprintf(models[i].arch, sizeof models[i].arch, "%s", arch);
    models[i].window = window;
    return models[i].m;
}

static double accuracy(orthros_backend *be, const char *dir, const char *arch, int window, const task_spec *t,
                       const orthros_analytic_layout *l)
{
    orthros_model *m = model_for(be, dir, arch, window);
    orthros_session *s = NULL;
    int right = 0, total = 0;
    if (!m) return -1;
    for (int i = 0; i < t->samples; i++) {
        orthros_eval_sample smp;
        uint64_t seed = orthros_eval_sample_seed(7, t->task, t->ctx, t->x, i);
        int rc = strcmp(t->task, "niah") ? orthros_mqar_sample(&smp, l, t->x, t->ctx, seed)
                                         : orthros_niah_sample(&smp, l, t->v, t->ctx, t->x, seed);
        if (rc) {
            CHECK(0, "sample: %s", orthros_last_error());
            break;
        }
        if (!s && orthros_session_init(&s, m, 1, smp.n_prompt + orthros_eval_decode_tokens(&smp), 0)) {
            CHECK(0, "session: %s", orthros_last_error());
            orthros_eval_sample_free(&smp);
            break;
        }
        int32_t gen[ORTHROS_EVAL_MAX_ANSWERS];
        CHECK(orthros_eval_run(s, &smp, gen) == 0, "run: %s", orthros_last_error());
        right += orthros_eval_score(&smp, gen);
        total += smp.n_answers;
        orthros_eval_sample_free(&smp);
    }
    orthros_session_free(s);
    return total ? (double)right / total : -1;
}

static void test_recall(const char *dir)
{
    orthros_backend *be = NULL;
    orthros_analytic_layout l;
    CHECK(orthros_analytic_layout_load(&l, dir) == 0, "layout: %s", orthros_last_error());
    if (orthros_backend_create(&be, "cpu")) {
        CHECK(0, "cpu backend: %s", orthros_last_error());
        return;
    }
    static const char *const full[] = {"transformer", "orthros"};
    int ctxs[] = {24, 160}, depths[] = {0, 50, 100};
    for (int a = 0; a < 2; a++)
        for (int v = 0; v < 4; v++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 3; d++) {
                    task_spec t = {"niah", (orthros_niah_variant)v, ctxs[c], depths[d], 1};
                    double acc = accuracy(be, dir, full[a], 0, &t, &l);
                    CHECK(acc == 1.0, "%s niah %s ctx %d depth %d: accuracy %g, want 1", full[a],
                          orthros_niah_variant_name((orthros_niah_variant)v), ctxs[c], depths[d], acc);
                }
    int pairs[] = {1, 8, 64};
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 3; p++) {
            task_spec t = {"mqar", 0, 96, pairs[p], 2};
            double acc = accuracy(be, dir, full[a], 0, &t, &l);
            CHECK(acc == 1.0, "%s mqar %d pairs: accuracy %g, want 1", full[a], pairs[p], acc);
        }
    /* Linear attention only retrieves a diluted average. */
    task_spec mq = {"mqar", 0, 70, 64, 2}, hay = {"niah", ORTHROS_NIAH_SINGLE, 200, 50, 4};
    double acc = accuracy(be, dir, "linear", 0, &mq, &l);
    CHECK(acc >= 0 && acc < 0.5, "linear mqar 64 pairs: accuracy %g, want < 0.5", acc);
    acc = accuracy(be, dir, "linear", 0, &hay, &l);
    CHECK(acc >= 0 && acc < 0.5, "linear niah ctx 200: accuracy %g, want < 0.5", acc);
    /* swa with a 32-token window: the needle at depth 0 of 200 tokens is out of reach, at depth 100 in it. */
    task_spec out = {"niah", ORTHROS_NIAH_SINGLE, 200, 0, 4}, in = {"niah", ORTHROS_NIAH_SINGLE, 200, 100, 4};
    acc = accuracy(be, dir, "swa", 32, &out, &l);
    CHECK(acc == 0.0, "swa window 32, needle 199 tokens back: accuracy %g, want 0", acc);
    acc = accuracy(be, dir, "swa", 32, &in, &l);
    CHECK(acc == 1.0, "swa window 32, needle 2 tokens back: accuracy %g, want 1", acc);
    for (int i = 0; i < 8; i++) orthros_model_free(models[i].m);
    orthros_backend_free(be);
}

static void test_refusals(const char *dir)
{
    orthros_analytic_layout l;
    orthros_eval_sample s;
    orthros_analytic_layout_load(&l, dir);
    CHECK(orthros_niah_sample(&s, &l, ORTHROS_NIAH_SINGLE, 100, 101, 1) == ORTHROS_EINVAL &&
              strstr(orthros_last_error(), "outside 0..100"),
          "depth 101 accepted or unclear: %s", orthros_last_error());
    CHECK(orthros_niah_sample(&s, &l, ORTHROS_NIAH_SINGLE, 100, -1, 1) == ORTHROS_EINVAL, "depth -1 accepted");
    CHECK(orthros_niah_sample(&s, &l, ORTHROS_NIAH_MULTIKEY, 6, 0, 1) == ORTHROS_EINVAL &&
              strstr(orthros_last_error(), "shorter than"),
          "a 6-token multikey context accepted or unclear: %s", orthros_last_error());
    CHECK(orthros_niah_sample(&s, &l, ORTHROS_NIAH_SINGLE, 4, 0, 1) == 0, "the shortest single context refused");
    orthros_eval_sample_free(&s);
    CHECK(orthros_mqar_sample(&s, &l, 65, 1000, 1) == ORTHROS_EINVAL && strstr(orthros_last_error(), "only 64 keys"),
          "65 pairs accepted or unclear: %s", orthros_last_error());
    CHECK(orthros_mqar_sample(&s, &l, 8, 10, 1) == ORTHROS_EINVAL && strstr(orthros_last_error(), "shorter than"),
          "8 pairs in 10 tokens accepted: %s", orthros_last_error());
    orthros_analytic_params p = P;
    p.values = 6;
    CHECK(orthros_analytic_check(&p) == ORTHROS_EINVAL, "6 values accepted");
    p = P;
    p.keys = 65;
    CHECK(orthros_analytic_check(&p) == ORTHROS_EINVAL, "65 keys accepted");
    /* a checkpoint whose max_context is no whole number in 0..2^30 (1e300 was converted unchecked before) */
    char *bad = tu_tempdir();
    CHECK(bad != NULL, "tempdir");
    if (!bad) return;
    const char *const vals[] = {"1e300", "-1", "2.5", "\"4096\""};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        orthros_analytic_params q = P;
        CHECK(orthros_analytic_write(bad, &q) == 0, "write: %s", orthros_last_error());
        char path[4200];
        snprintf(path, sizeof path, "%s/config.json", bad);
        cJSON *root = tu_load_json(path);
        cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "analytic_recall");
        CHECK(ar && cJSON_ReplaceItemInObjectCaseSensitive(ar, "max_context", cJSON_Parse(vals[i])) &&
                  tu_write_json(path, root) == 0,
              "rewrite max_context %s", vals[i]);
        cJSON_Delete(root);
        int rc = orthros_analytic_layout_load(&l, bad);
        CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), "max_context"), "max_context %s: rc %d, %s", vals[i],
              rc, orthros_last_error());
    }
    if (tu_remove_tree(bad)) fprintf(stderr, "could not remove %s\n", bad);
    free(bad);
}

int main(void)
{
    orthros_analytic_params_default(&P);
    char *dir = tu_tempdir();
    CHECK(dir != NULL, "tempdir");
    if (!dir) return tu_finish();
    CHECK(orthros_analytic_write(dir, &P) == 0, "write: %s", orthros_last_error());
    test_margins();
    test_scores();
    test_deterministic(dir);
    test_refusals(dir);
    test_recall(dir);
    if (tu_remove_tree(dir)) fprintf(stderr, "could not remove %s\n", dir);
    free(dir);
    return tu_finish();
}
