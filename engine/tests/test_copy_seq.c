/* orthros_session_copy_seq and orthros_prefill_logits on the cpu backend, for every attention schedule of
 * tu_arch_cases, at tp 1 and tp 2 (ranks as threads):
 *   - a shared context prefilled once into sequence 0, copied to sequences 1 and 2, and two continuations of
 *     different lengths decoded there in one batch give, bit for bit, the logits of a fresh batch-1 session that
 *     prefills the context and decodes the same continuation (what a deployed Orthros computes);
 *   - for every schedule without an orthros phase, those logits are also, bit for bit, the logits of one fresh
 *     prefill of context + continuation (the transformer's definition of a continuation's likelihood), and so are
 *     those of a second prefill of the continuation after the copy;
 *   - the source sequence is untouched, a copy of a copy is the same, out-of-range sequences are refused;
 *   - orthros_prefill_logits gives rows [from, n) of orthros_prefill's.
 * The model is preset:tiny (seeded random weights, a small vocabulary).
 * With the argument `cuda` (the `session_copy_seq_cuda` GPU test) the same on the cuda backend at tp 1, where bf16
 * kernels of another batch size may round differently: the copied sequences' logits against a fresh session's must
 * agree in argmax on at least 90% of rows and within 5% of the logits' range (exit 77 without a GPU). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

enum { NCTX = 13, L1 = 5, L2 = 3, MAXCTX = 64 };

static const int32_t ctx[NCTX] = {5, 17, 99, 3, 250, 41, 7, 7, 180, 66, 12, 201, 9};
static const int32_t cont1[L1] = {33, 8, 144, 90, 2}, cont2[L2] = {71, 200, 15};

static int V;

/* The reference of a deployed model: prefill the context (logits of its last position), then decode cont[0..len-1)
 * one at a time; out [len][V]. */
static int reference_decode(orthros_model *m, const int32_t *cont, int len, float *out)
{
    orthros_session *s = NULL;
    int rc = orthros_session_init(&s, m, 1, MAXCTX, 0);
    if (!rc) rc = orthros_prefill_logits(s, 0, ctx, NCTX, NCTX - 1, out, NULL);
    for (int t = 1; !rc && t < len; t++) rc = orthros_decode(s, &cont[t - 1], NULL, out + (size_t)t * V);
    orthros_session_free(s);
    return rc;
}

/* One prefill of context + cont[0..len-1): the logits of its last len positions. */
static int reference_prefill(orthros_model *m, const int32_t *cont, int len, float *out)
{
    int32_t tok[NCTX + L1];
    memcpy(tok, ctx, sizeof ctx);
    memcpy(tok + NCTX, cont, (size_t)(len - 1) * sizeof *tok);
    orthros_session *s = NULL;
    int rc = orthros_session_init(&s, m, 1, MAXCTX, 0);
    if (!rc) rc = orthros_prefill_logits(s, 0, tok, NCTX + len - 1, NCTX - 1, out, NULL);
    orthros_session_free(s);
    return rc;
}

static int exact = 1; /* cpu: bit for bit; cuda: within bf16 tolerance */

static int same(const float *a, const float *b, size_t n)
{
    if (exact) return !memcmp(a, b, n * sizeof *a);
    int agree = 0, rows = (int)(n / (size_t)V);
    double err = 0, range = 0;
    tu_logit_agreement(a, b, rows, V, &agree, &err, &range);
    return agree * 10 >= rows * 9 && err <= 0.05 * range;
}

static void one_case(const tu_arch_case *ac, int tp, orthros_backend *be)
{
    orthros_arch_opts o = tu_arch_case_opts(ac);
    o.tp = tp;
    orthros_model *m = NULL;
    if (orthros_model_load(&m, be, "preset:tiny", &o, 7)) {
        CHECK(0, "%s tp %d: cannot load preset:tiny: %s", ac->label, tp, orthros_last_error());
        return;
    }
    V = orthros_model_get_config(m)->vocab;
    int orthros_phase = !strcmp(ac->arch, "orthros");
    size_t row = (size_t)V;
    float *r1 = malloc(L1 * row * sizeof(float)), *r2 = malloc(L2 * row * sizeof(float));
    float *p1 = malloc(L1 * row * sizeof(float)), *p2 = malloc(L2 * row * sizeof(float));
    float *last = malloc(row * sizeof(float)), *step = malloc(3 * row * sizeof(float));
    float *g1 = malloc(L1 * row * sizeof(float)), *g2 = malloc(L2 * row * sizeof(float));
    float *src_before = malloc(row * sizeof(float)), *src_after = malloc(row * sizeof(float));
    orthros_session *s = NULL;
    int rc = reference_decode(m, cont1, L1, r1) || reference_decode(m, cont2, L2, r2) ||
             reference_prefill(m, cont1, L1, p1) || reference_prefill(m, cont2, L2, p2);
    CHECK(!rc, "%s tp %d: the references: %s", ac->label, tp, orthros_last_error());
    /* The shared context once, copied to 1 and 2, the continuations in one decode batch (seq 0 decodes a filler). */
    if (!rc) rc = orthros_session_init(&s, m, 3, MAXCTX, 0);
    if (!rc) rc = orthros_prefill_logits(s, 0, ctx, NCTX, NCTX - 1, last, NULL);
    if (!rc) rc = orthros_session_copy_seq(s, 1, 0);
    if (!rc) rc = orthros_session_copy_seq(s, 2, 1); /* a copy of the copy */
    CHECK(!rc, "%s tp %d: prefill and copy: %s", ac->label, tp, orthros_last_error());
    if (!rc) {
        memcpy(g1, last, row * sizeof(float));
        memcpy(g2, last, row * sizeof(float));
        for (int t = 1; !rc && t < L1; t++) {
            int32_t in[3] = {1, cont1[t - 1], t < L2 ? cont2[t - 1] : 4};
            rc = orthros_decode(s, in, NULL, step);
            memcpy(g1 + (size_t)t * row, step + row, row * sizeof(float));
            if (t < L2) memcpy(g2 + (size_t)t * row, step + 2 * row, row * sizeof(float));
            if (t == 1) memcpy(src_after, step, row * sizeof(float));
        }
        CHECK(!rc, "%s tp %d: batched decode: %s", ac->label, tp, orthros_last_error());
        CHECK(same(g1, r1, L1 * row) && same(g2, r2, L2 * row),
              "%s tp %d: the copied sequences' logits differ from a fresh prefill + decode (max %g, %g)", ac->label, tp,
              tu_max_abs_diff(g1, r1, L1 * row), tu_max_abs_diff(g2, r2, L2 * row));
        if (!orthros_phase)
            CHECK(same(g1, p1, L1 * row) && same(g2, p2, L2 * row),
                  "%s tp %d: decode after a copy differs from one prefill of context + continuation (max %g, %g)",
                  ac->label, tp, tu_max_abs_diff(g1, p1, L1 * row), tu_max_abs_diff(g2, p2, L2 * row));
    }
    /* The source is untouched by the copies: its first decode step equals a fresh session's. */
    if (!rc) {
        orthros_session *f = NULL;
        int32_t one = 1;
        rc = orthros_session_init(&f, m, 1, MAXCTX, 0);
        if (!rc) rc = orthros_prefill(f, 0, ctx, NCTX, NULL, NULL);
        if (!rc) rc = orthros_decode(f, &one, NULL, src_before);
        orthros_session_free(f);
        CHECK(!rc && same(src_before, src_after, row), "%s tp %d: the copy changed the source sequence", ac->label, tp);
    }
    /* A continuation prefilled after the copy (the transformer's form of scoring). */
    if (!rc && !orthros_phase) {
        rc = orthros_session_reset(s);
        if (!rc) rc = orthros_prefill(s, 0, ctx, NCTX, NULL, NULL);
        if (!rc) rc = orthros_session_copy_seq(s, 2, 0);
        float *q = malloc((L1 - 1) * row * sizeof(float));
        if (!rc) rc = orthros_prefill_logits(s, 2, cont1, L1 - 1, 0, q, NULL);
        CHECK(!rc && same(q, p1 + row, (L1 - 1) * row), "%s tp %d: a prefill after the copy differs from one prefill",
              ac->label, tp);
        free(q);
    }
    /* Refusals. */
    if (s) {
        CHECK(orthros_session_copy_seq(s, 3, 0) == ORTHROS_EINVAL && orthros_session_copy_seq(s, 0, -1) == ORTHROS_EINVAL,
              "%s tp %d: out-of-range sequences are not refused", ac->label, tp);
        CHECK(orthros_session_copy_seq(s, 1, 1) == 0, "%s tp %d: a copy onto itself fails", ac->label, tp);
        CHECK(orthros_prefill_logits(s, 1, ctx, 4, 4, last, NULL) == ORTHROS_EINVAL,
              "%s tp %d: logits from past the prompt are not refused", ac->label, tp);
    }
    orthros_session_free(s);
    free(r1), free(r2), free(p1), free(p2), free(last), free(step), free(g1), free(g2), free(src_before), free(src_after);
    orthros_model_free(m);
}

/* orthros_prefill_logits(from) is rows [from, n) of orthros_prefill's, across prefill chunks. */
static void test_logits_from(orthros_backend *be)
{
    orthros_arch_opts o;
    orthros_arch_opts_default(&o);
    o.arch = "transformer";
    orthros_model *m = NULL;
    if (orthros_model_load(&m, be, "preset:tiny", &o, 3)) {
        CHECK(0, "cannot load preset:tiny: %s", orthros_last_error());
        return;
    }
    int Vm = orthros_model_get_config(m)->vocab;
    float *all = malloc((size_t)NCTX * Vm * sizeof(float)), *part = malloc((size_t)NCTX * Vm * sizeof(float));
    int32_t next_all = -1, next_part = -2;
    orthros_session *s = NULL;
    int rc = orthros_session_init(&s, m, 1, MAXCTX, 4); /* chunks of 4: from falls inside the third */
    if (!rc) rc = orthros_prefill(s, 0, ctx, NCTX, all, &next_all);
    for (int from = 0; !rc && from < NCTX; from += 5) {
        if (!(rc = orthros_session_reset(s))) rc = orthros_prefill_logits(s, 0, ctx, NCTX, from, part, &next_part);
        CHECK(!rc && same(part, all + (size_t)from * Vm, (size_t)(NCTX - from) * Vm) && next_part == next_all,
              "logits from %d differ from orthros_prefill's rows", from);
    }
    CHECK(!rc, "prefill: %s", orthros_last_error());
    orthros_session_free(s);
    orthros_model_free(m);
    free(all), free(part);
}

int main(int argc, char **argv)
{
    orthros_backend *be = NULL;
    int cuda = argc > 1 && !strcmp(argv[1], "cuda");
    if (cuda && !orthros_cuda_available()) {
        fprintf(stderr, "SKIP: no GPU (or a build without CUDA): the copy is tested on the cpu by session_copy_seq\n");
        return 77;
    }
    if (orthros_backend_create(&be, cuda ? "cuda" : "cpu")) {
        fprintf(stderr, "cannot create the %s backend: %s\n", cuda ? "cuda" : "cpu", orthros_last_error());
        return 1;
    }
    exact = !cuda;
    if (!cuda) test_logits_from(be);
    for (size_t i = 0; i < tu_n_arch_cases; i++)
        for (int tp = 1; tp <= (cuda ? 1 : 2); tp++) one_case(&tu_arch_cases[i], tp, be);
    orthros_backend_free(be);
    return tu_finish();
}
