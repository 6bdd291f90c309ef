/* The decode step's modes (orthros_session_set_decode; docs/kernels.md, "Whole-model decode").
 * On the cpu backend (the `decode_modes` test):
 *   - each fused op of backend.h against its definition, the composition of the plain ops (bit for bit), and
 *     against a naive double-precision reference of its formula (relative error under 1e-5), at awkward sizes:
 *     norm_gemm, gemm_add, norm_gemm_swiglu (gate rows first), norm_qkv_rope (q rotated in place, k as projected
 *     and rotated into the cache at slot pos % cap, v copied), norm_logits_argmax (a tie: the lower index);
 *   - a whole decode in every mode (FUSED, GRAPHS, both) gives the plain step's logits and tokens bit for bit, for
 *     every schedule of tu_arch_cases on preset:tiny and one of each kind and linear formula on every fixture, at
 *     batch 1 and at batch 3 with the sequences at different positions, across a cache-length bucket boundary (256
 *     keys to 257), then after a rewind: a mode whose ops read the bucket's bound instead of the positions held on
 *     the device, or that wires a fused op to the wrong buffer, fails here;
 *   - the op sequence of a step, logged through shims: the plain step issues exactly the ops it issued before the modes
 *     existed (none of the new ones), the fused step 5 a layer, GRAPHS one upload and one download around it;
 *   - the switches: ORTHROS_DECODE_FUSED / ORTHROS_DECODE_GRAPHS = 1 set a new backend's modes and its sessions',
 *     any value but 0 or 1 is refused, a model of two ranks runs the plain step; unset, a backend's default (cuda's:
 *     both; the cpu's: none), 0 turns a mode off; a session of more rows than the fused ops take runs GRAPHS alone.
 * With `cuda` first (the `decode_modes_cuda` GPU test; exit 77 without a GPU): the same whole decodes on the cuda
 * backend, on preset:tiny, the first layers of the Llama-3.2-1B and 3.1-8B shapes and every fixture given, each mode
 * (GRAPHS with cuBLAS, GRAPHS with ORTHROS_GEMV=1, FUSED, FUSED + GRAPHS) against the plain step fed the same
 * tokens (the plain run's): per step the argmax agrees on at least 90% of rows and the logits within 2% of their
 * range, and under GRAPHS every step after a bucket's first is a replay with no failed capture.
 * usage: test_decode_modes [cuda] [FIXTURE_DIR...] */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fused ops against their definitions (cpu) ---- */

static float *rnd(size_t n, uint64_t seed, float scale, float bias)
{
    float *x = malloc(n * sizeof *x);
    tu_random(x, n, seed, scale);
    for (size_t i = 0; i < n; i++) x[i] += bias;
    return x;
}

static double max_rel(const float *got, const double *ref, size_t n)
{
    double err = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, isnan(got[i]) ? INFINITY : fabs(got[i] - ref[i]));
        mx = fmax(mx, fabs(ref[i]));
    }
    return mx > 0 ? err / mx : err;
}

/* xn[n][K] = rmsnorm(x) * w in double. */
static void naive_norm(double *xn, const float *x, const float *w, int n, int K, float eps)
{
    for (int i = 0; i < n; i++) {
        double ss = 0;
        for (int k = 0; k < K; k++) ss += (double)x[(size_t)i * K + k] * x[(size_t)i * K + k];
        double r = 1.0 / sqrt(ss / K + eps);
        for (int k = 0; k < K; k++) xn[(size_t)i * K + k] = w[k] * (x[(size_t)i * K + k] * r);
    }
}

/* out[n][M] = xn[n][K] . W[M][K]^T in double. */
static void naive_product(double *out, const double *xn, const float *W, int n, int M, int K)
{
    for (int i = 0; i < n; i++)
        for (int m = 0; m < M; m++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += xn[(size_t)i * K + k] * W[(size_t)m * K + k];
            out[(size_t)i * M + m] = s;
        }
}

static void test_fused_ops(orthros_backend *be)
{
    const float eps = 1e-5f;
    /* norm_gemm */
    {
        const int n = 3, M = 37, K = 72;
        float *x = rnd((size_t)n * K, 1, 2.0f, 0), *w = rnd(K, 2, 0.5f, 1.0f), *W = rnd((size_t)M * K, 3, 0.2f, 0);
        float *out = calloc((size_t)n * M, 4), *ref = calloc((size_t)n * M, 4), *xn = calloc((size_t)n * K, 4);
        double *dxn = malloc(sizeof(double) * n * K), *dref = malloc(sizeof(double) * n * M);
        CHECK(!be->norm_gemm(be, out, xn, x, w, W, n, M, K, eps), "norm_gemm: %s", orthros_last_error());
        CHECK(!be->rmsnorm(be, xn, x, w, n, K, eps) && !be->gemm(be, ref, xn, W, n, M, K), "rmsnorm + gemm");
        CHECK(!memcmp(out, ref, sizeof(float) * n * M), "norm_gemm is not rmsnorm then gemm, bit for bit");
        naive_norm(dxn, x, w, n, K, eps);
        naive_product(dref, dxn, W, n, M, K);
        CHECK(max_rel(out, dref, (size_t)n * M) < 1e-5, "norm_gemm against the formula: %.3g", max_rel(out, dref, (size_t)n * M));
        free(x), free(w), free(W), free(out), free(ref), free(xn), free(dxn), free(dref);
    }
    /* gemm_add */
    {
        const int n = 2, M = 40, K = 24;
        float *x = rnd((size_t)n * K, 4, 1.0f, 0), *W = rnd((size_t)M * K, 5, 0.3f, 0), *resid = rnd((size_t)n * M, 6, 1.0f, 0);
        float *r2 = malloc(sizeof(float) * n * M), *tmp = calloc((size_t)n * M, 4), *delta = calloc((size_t)n * M, 4);
        double *dx = malloc(sizeof(double) * n * K), *dref = malloc(sizeof(double) * n * M);
        memcpy(r2, resid, sizeof(float) * n * M);
        for (int i = 0; i < n * K; i++) dx[i] = x[i];
        naive_product(dref, dx, W, n, M, K);
        for (int i = 0; i < n * M; i++) dref[i] += resid[i];
        CHECK(!be->gemm_add(be, resid, tmp, x, W, n, M, K), "gemm_add: %s", orthros_last_error());
        CHECK(!be->gemm(be, delta, x, W, n, M, K), "gemm");
        for (int i = 0; i < n * M; i++) r2[i] += delta[i];
        CHECK(!memcmp(resid, r2, sizeof(float) * n * M), "gemm_add is not gemm then the residual add, bit for bit");
        CHECK(max_rel(resid, dref, (size_t)n * M) < 1e-5, "gemm_add against the formula");
        free(x), free(W), free(resid), free(r2), free(tmp), free(delta), free(dx), free(dref);
    }
    /* norm_gemm_swiglu: W [2F][K], gate rows first */
    {
        const int n = 3, F = 21, K = 40;
        float *x = rnd((size_t)n * K, 7, 2.0f, 0), *w = rnd(K, 8, 0.5f, 1.0f), *W = rnd((size_t)2 * F * K, 9, 0.4f, 0);
        float *out = calloc((size_t)n * F, 4), *ref = calloc((size_t)n * F, 4), *xn = calloc((size_t)n * K, 4);
        float *gu = calloc((size_t)n * 2 * F, 4);
        double *dxn = malloc(sizeof(double) * n * K), *dgu = malloc(sizeof(double) * n * 2 * F), *dref = malloc(sizeof(double) * n * F);
        CHECK(!be->norm_gemm_swiglu(be, out, xn, gu, x, w, W, n, F, K, eps), "norm_gemm_swiglu: %s", orthros_last_error());
        CHECK(!be->rmsnorm(be, xn, x, w, n, K, eps) && !be->gemm(be, gu, xn, W, n, 2 * F, K) && !be->swiglu(be, ref, gu, n, F),
              "rmsnorm + gemm + swiglu");
        CHECK(!memcmp(out, ref, sizeof(float) * n * F), "norm_gemm_swiglu is not its composition, bit for bit");
        naive_norm(dxn, x, w, n, K, eps);
        naive_product(dgu, dxn, W, n, 2 * F, K);
        for (int i = 0; i < n; i++)
            for (int f = 0; f < F; f++) {
                double g = dgu[(size_t)i * 2 * F + f], u = dgu[(size_t)i * 2 * F + F + f];
                dref[(size_t)i * F + f] = g / (1.0 + exp(-g)) * u;
            }
        CHECK(max_rel(out, dref, (size_t)n * F) < 1e-5, "norm_gemm_swiglu against the formula: %.3g",
              max_rel(out, dref, (size_t)n * F));
        free(x), free(w), free(W), free(out), free(ref), free(xn), free(gu), free(dxn), free(dgu), free(dref);
    }
    /* norm_qkv_rope: 4 q heads, 2 kv heads of 16, 3 sequences at positions 0, 7, 23 of a cache of 11 slots */
    {
        const int n = 3, Hq = 4, Hkv = 2, d = 16, K = 48, cap = 11, Wd = (Hq + 2 * Hkv) * d;
        const int pos[3] = {0, 7, 23};
        orthros_model_config cfg = {.head_dim = d, .rope_theta = 10000.0};
        float inv[ORTHROS_MAX_HEAD_DIM / 2];
        orthros_rope_inv_freq(inv, &cfg);
        orthros_rope rope = {Hq, Hkv, d, inv};
        float *x = rnd((size_t)n * K, 10, 2.0f, 0), *w = rnd(K, 11, 0.5f, 1.0f), *W = rnd((size_t)Wd * K, 12, 0.3f, 0);
        size_t cache = (size_t)n * cap * Hkv * d;
        float *qkv = calloc((size_t)n * Wd, 4), *qkv2 = calloc((size_t)n * Wd, 4), *xn = calloc((size_t)n * K, 4);
        float *kc = rnd(cache, 13, 1.0f, 0), *vc = rnd(cache, 14, 1.0f, 0);
        float *kc2 = malloc(cache * 4), *vc2 = malloc(cache * 4);
        memcpy(kc2, kc, cache * 4), memcpy(vc2, vc, cache * 4);
        double *dxn = malloc(sizeof(double) * n * K), *dq = malloc(sizeof(double) * n * Wd);
        orthros_attn_layer L = {.n_heads = Hq, .n_kv_heads = Hkv, .head_dim = d, .k_cache = kc, .v_cache = vc, .cap = cap};
        orthros_attn_layer L2 = L;
        L2.k_cache = kc2, L2.v_cache = vc2;
        CHECK(!be->norm_qkv_rope(be, qkv, xn, x, w, W, &L, &rope, pos, n, K, eps), "norm_qkv_rope: %s", orthros_last_error());
        CHECK(!be->rmsnorm(be, xn, x, w, n, K, eps) && !be->gemm(be, qkv2, xn, W, n, Wd, K) &&
                  !be->rope_cache_write(be, qkv2, &L2, &rope, pos, n, 1, 0),
              "rmsnorm + gemm + rope_cache_write");
        CHECK(!memcmp(qkv, qkv2, sizeof(float) * n * Wd) && !memcmp(kc, kc2, cache * 4) && !memcmp(vc, vc2, cache * 4),
              "norm_qkv_rope is not its composition, bit for bit");
        naive_norm(dxn, x, w, n, K, eps);
        naive_product(dq, dxn, W, n, Wd, K);
        double worst = 0, mx = 0;
        for (int i = 0; i < n; i++) {
            int slot = pos[i] % cap;
            for (int h = 0; h < Hq + 2 * Hkv; h++)
                for (int j = 0; j < d / 2; j++) {
                    double x1 = dq[(size_t)i * Wd + h * d + j], x2 = dq[(size_t)i * Wd + h * d + j + d / 2];
                    double a = (double)(float)((float)pos[i] * inv[j]), r1 = x1 * cos(a) - x2 * sin(a), r2 = x2 * cos(a) + x1 * sin(a);
                    const float *row = qkv + (size_t)i * Wd + h * d;
                    double e1, e2;
                    if (h < Hq) {
                        e1 = row[j] - r1, e2 = row[j + d / 2] - r2;
                    } else if (h < Hq + Hkv) {
                        const float *kr = kc + (((size_t)i * cap + slot) * Hkv + (h - Hq)) * d;
                        e1 = fmax(fabs(row[j] - x1), fabs(kr[j] - r1));
                        e2 = fmax(fabs(row[j + d / 2] - x2), fabs(kr[j + d / 2] - r2));
                    } else {
                        const float *vr = vc + (((size_t)i * cap + slot) * Hkv + (h - Hq - Hkv)) * d;
                        e1 = fmax(fabs(row[j] - x1), fabs(vr[j] - x1));
                        e2 = fmax(fabs(row[j + d / 2] - x2), fabs(vr[j + d / 2] - x2));
                    }
                    worst = fmax(worst, fmax(fabs(e1), fabs(e2)));
                    mx = fmax(mx, fmax(fabs(x1), fabs(x2)));
                }
        }
        CHECK(worst / mx < 1e-5, "norm_qkv_rope against the formula: %.3g", worst / mx);
        L.q_rot = qkv2;
        CHECK(be->norm_qkv_rope(be, qkv, xn, x, w, W, &L, &rope, pos, n, K, eps) == ORTHROS_EINVAL,
              "norm_qkv_rope takes a layer whose rope writes q_rot");
        free(x), free(w), free(W), free(qkv), free(qkv2), free(xn), free(kc), free(vc), free(kc2), free(vc2), free(dxn), free(dq);
    }
    /* norm_logits_argmax: a tie at the maximum goes to the lower index */
    {
        const int n = 2, V = 50, D = 32;
        float *x = rnd((size_t)n * D, 15, 2.0f, 0), *w = rnd(D, 16, 0.5f, 1.0f), *W = rnd((size_t)V * D, 17, 0.3f, 0);
        memcpy(W + (size_t)41 * D, W + (size_t)9 * D, sizeof(float) * D); /* rows 9 and 41 equal */
        for (int k = 0; k < D; k++) W[(size_t)9 * D + k] = W[(size_t)41 * D + k] = 0.5f * x[D + k];
        float *lg = calloc((size_t)n * V, 4), *ref = calloc((size_t)n * V, 4), *xn = calloc((size_t)n * D, 4);
        int32_t ids[2] = {-1, -1}, rid[2] = {-2, -2};
        double *dxn = malloc(sizeof(double) * n * D), *dref = malloc(sizeof(double) * n * V);
        CHECK(!be->norm_logits_argmax(be, ids, lg, xn, x, w, W, n, V, D, eps), "norm_logits_argmax: %s", orthros_last_error());
        CHECK(!be->rmsnorm(be, xn, x, w, n, D, eps) && !be->logits(be, ref, xn, W, n, V, D) && !be->argmax(be, rid, ref, n, V),
              "rmsnorm + logits + argmax");
        CHECK(!memcmp(lg, ref, sizeof(float) * n * V) && ids[0] == rid[0] && ids[1] == rid[1],
              "norm_logits_argmax is not its composition");
        naive_norm(dxn, x, w, n, D, eps);
        naive_product(dref, dxn, W, n, V, D);
        CHECK(max_rel(lg, dref, (size_t)n * V) < 1e-5, "norm_logits_argmax's logits against the formula");
        for (int i = 0; i < n; i++) {
            int best = 0;
            for (int v = 1; v < V; v++)
                if (lg[(size_t)i * V + v] > lg[(size_t)i * V + best]) best = v;
            CHECK(ids[i] == best, "norm_logits_argmax row %d: %d, the lowest maximum is %d", i, ids[i], best);
        }
        free(x), free(w), free(W), free(lg), free(ref), free(xn), free(dxn), free(dref);
    }
}

/* ---- whole decodes in each mode ---- */

/* V5_B: the batch of the cuda test of gemv.cu's versions 5 and 6, whose ring kernels take batch 9-16 */
enum { STEPS = 10, MAX_B = 3, V5_B = 16 };

typedef struct {
    float *logits;    /* [STEPS + 1][B][V]: the decode steps, then one more after a rewind */
    int32_t *tokens;  /* [STEPS + 1][B] */
    int V;
    orthros_decode_stats stats;
    unsigned modes;   /* in effect */
} decode_run;

static void run_free(decode_run *r)
{
    free(r->logits);
    free(r->tokens);
    memset(r, 0, sizeof *r);
}

/* Sequence b prefills plen - 7 b tokens, then STEPS decode steps of the batch: with plen 250 the longest sequence
 * reads 250 .. 259 keys, across the bucket boundary of 256. Then every sequence is rewound to the shortest one's
 * position and decodes one more step. forced (the plain run's tokens) feeds every step's input when not NULL.
 * ids_only: the steps asked for the ids alone (a greedy step: the backend's norm_argmax), r->logits left zero. */
static int run_decode_as(decode_run *r, orthros_backend *be, const char *spec, const orthros_arch_opts *ao, unsigned modes,
                         int B, int plen, const decode_run *forced, int ids_only)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    int32_t *prompt = NULL, cur[V5_B], nx[V5_B];
    memset(r, 0, sizeof *r);
    if (B < 1 || B > V5_B) return orthros_error(ORTHROS_EINVAL, "run_decode: batch %d (1 to %d)", B, V5_B);
    int rc = orthros_model_load(&m, be, spec, ao, 3);
    if (rc) return rc;
    r->V = orthros_model_get_config(m)->vocab;
    size_t V = (size_t)r->V;
    r->logits = calloc((STEPS + 1) * (size_t)B * V, sizeof(float));
    r->tokens = malloc(sizeof(int32_t) * (STEPS + 1) * (size_t)B);
    prompt = malloc(sizeof(int32_t) * (size_t)plen);
    if (!r->logits || !r->tokens || !prompt) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < plen; i++) prompt[i] = (int32_t)(orthros_uniform(11, (uint64_t)i) * (float)r->V) % r->V;
    if ((rc = orthros_session_init(&s, m, B, plen + STEPS + 8, 64)) || (rc = orthros_session_set_decode(s, modes))) goto done;
    r->modes = orthros_session_decode(s);
    for (int b = 0; b < B && !rc; b++) rc = orthros_prefill(s, b, prompt, plen - 7 * b, NULL, &cur[b]);
    for (int t = 0; t < STEPS && !rc; t++) {
        if (forced)
            for (int b = 0; b < B; b++) cur[b] = t ? forced->tokens[(size_t)(t - 1) * B + b] : cur[b];
        rc = orthros_decode(s, cur, nx, ids_only ? NULL : r->logits + (size_t)t * B * V);
        memcpy(r->tokens + (size_t)t * B, nx, sizeof(int32_t) * (size_t)B);
        memcpy(cur, nx, sizeof cur);
    }
    if (!rc) rc = orthros_session_rewind(s, plen - 7 * (B - 1));
    if (!rc) {
        if (forced) memcpy(cur, forced->tokens + (size_t)(STEPS - 1) * B, sizeof(int32_t) * (size_t)B);
        rc = orthros_decode(s, cur, nx, ids_only ? NULL : r->logits + (size_t)STEPS * B * V);
        memcpy(r->tokens + (size_t)STEPS * B, nx, sizeof(int32_t) * (size_t)B);
    }
    if (s) orthros_session_decode_stats(s, &r->stats);
done:
    orthros_session_free(s);
    orthros_model_free(m);
    free(prompt);
    if (rc) run_free(r);
    return rc;
}

static int run_decode(decode_run *r, orthros_backend *be, const char *spec, const orthros_arch_opts *ao, unsigned modes,
                      int B, int plen, const decode_run *forced)
{
    return run_decode_as(r, be, spec, ao, modes, B, plen, forced, 0);
}

static const char *mode_name(unsigned m)
{
    static const char *const names[] = {"plain", "fused", "graphs", "fused+graphs"};
    return names[m & 3];
}

static int skip_case(const char *spec, const tu_arch_case *ac)
{
    /* The hedgehog maps of a fixture are its own (llama-tiny-converted); the others have none to load. */
    return strncmp(spec, "preset:", 7) && ac->fmap == ORTHROS_FMAP_HEDGEHOG;
}

/* The schedules a fixture runs (preset:tiny runs all): one of each attention kind and of each linear formula. */
static int fixture_case(const tu_arch_case *ac)
{
    static const char *const labels[] = {"transformer", "orthros tail 5", "linear elu1", "swa 5", "orthros lw 4 after",
                                         "hybrid relu lw 3", "orthros hh lw 2"};
    for (size_t i = 0; i < sizeof labels / sizeof *labels; i++)
        if (!strcmp(ac->label, labels[i])) return 1;
    return 0;
}

static void cpu_models(orthros_backend *be, int nspec, char **specs)
{
    for (int f = 0; f < nspec; f++)
        for (size_t a = 0; a < tu_n_arch_cases; a++) {
            const tu_arch_case *ac = &tu_arch_cases[a];
            if (skip_case(specs[f], ac) || (f > 0 && !fixture_case(ac))) continue;
            orthros_arch_opts ao = tu_arch_case_opts(ac);
            for (int B = 1; B <= MAX_B; B += MAX_B - 1) {
                decode_run ref, got;
                if (run_decode(&ref, be, specs[f], &ao, 0, B, 250, NULL)) {
                    CHECK(0, "%s %s B %d plain: %s", specs[f], ac->label, B, orthros_last_error());
                    continue;
                }
                size_t nl = (size_t)(STEPS + 1) * B * (size_t)ref.V;
                for (unsigned mode = 1; mode <= 3; mode++) {
                    if (run_decode(&got, be, specs[f], &ao, mode, B, 250, NULL)) {
                        CHECK(0, "%s %s B %d %s: %s", specs[f], ac->label, B, mode_name(mode), orthros_last_error());
                        continue;
                    }
                    CHECK(got.modes == mode, "%s %s B %d: mode %s asked, %s in effect", specs[f], ac->label, B,
                          mode_name(mode), mode_name(got.modes));
                    CHECK(got.stats.steps == STEPS + 1, "%s: %ld steps counted", ac->label, got.stats.steps);
                    CHECK(!memcmp(got.logits, ref.logits, nl * sizeof(float)) &&
                              !memcmp(got.tokens, ref.tokens, sizeof(int32_t) * (STEPS + 1) * (size_t)B),
                          "%s %s B %d: %s decode differs from the plain step", specs[f], ac->label, B, mode_name(mode));
                    run_free(&got);
                }
                run_free(&ref);
            }
        }
}

static void test_switches(void)
{
    orthros_backend *be = NULL;
    setenv("ORTHROS_DECODE_GRAPHS", "1", 1);
    setenv("ORTHROS_DECODE_FUSED", "0", 1);
    int rc = orthros_backend_cpu_create(&be);
    CHECK(!rc && be->decode_modes == ORTHROS_DECODE_GRAPHS, "ORTHROS_DECODE_GRAPHS=1: modes %u", be ? be->decode_modes : 0);
    if (be) {
        orthros_model *m = NULL;
        orthros_session *s = NULL;
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        if (!orthros_model_load(&m, be, "preset:tiny", &ao, 1) && !orthros_session_init(&s, m, 2, 16, 0)) {
            CHECK(orthros_session_decode(s) == ORTHROS_DECODE_GRAPHS, "a new session takes the backend's modes");
            CHECK(orthros_session_set_decode(s, 4) == ORTHROS_EINVAL, "unknown mode bits are refused");
        } else {
            CHECK(0, "preset:tiny: %s", orthros_last_error());
        }
        orthros_session_free(s);
        orthros_model_free(m);
        /* Tensor parallel (ranks as threads here): the plain step. */
        m = NULL;
        s = NULL;
        ao.tp = 2;
        if (!orthros_model_load(&m, be, "preset:tiny", &ao, 1) && !orthros_session_init(&s, m, 2, 16, 0)) {
            CHECK(!orthros_session_set_decode(s, ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS) && orthros_session_decode(s) == 0,
                  "a model of two ranks runs the plain step");
        } else {
            CHECK(0, "preset:tiny tp 2: %s", orthros_last_error());
        }
        orthros_session_free(s);
        orthros_model_free(m);
        orthros_backend_free(be);
        be = NULL;
    }
    /* A switch other than 0 or 1 is refused, naming it. */
    const char *const bad[][2] = {{"ORTHROS_DECODE_FUSED", "yes"}, {"ORTHROS_DECODE_PDL", "2"},
                                  {"ORTHROS_DECODE_CHAIN", "2"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv(bad[i][0], bad[i][1], 1);
        rc = orthros_backend_cpu_create(&be);
        CHECK(rc == ORTHROS_EINVAL && !be && strstr(orthros_last_error(), bad[i][0]), "%s=%s is refused (rc %d: %s)",
              bad[i][0], bad[i][1], rc, orthros_last_error());
        orthros_backend_free(be);
        be = NULL;
        unsetenv(bad[i][0]);
    }
    /* ORTHROS_DECODE_PDL: 0 or 1 like the others (a launch detail of cuda: the cpu backend's modes do not change) */
    setenv("ORTHROS_DECODE_PDL", "1", 1);
    rc = orthros_backend_cpu_create(&be);
    CHECK(!rc && be && be->decode_modes == ORTHROS_DECODE_GRAPHS, "ORTHROS_DECODE_PDL=1 on the cpu: rc %d, modes %u",
          rc, be ? be->decode_modes : 0);
    orthros_backend_free(be);
    unsetenv("ORTHROS_DECODE_PDL");
    unsetenv("ORTHROS_DECODE_GRAPHS");
    unsetenv("ORTHROS_DECODE_FUSED");

    /* A backend's default (cuda's: FUSED + GRAPHS): unset variables take it, 0 turns a mode off, 1 asks for it. */
    unsigned modes = 0;
    int gemv = 0, pdl = 0, chain = 0;
    const unsigned both = ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS;
    CHECK(!orthros_decode_env(both, &modes, &gemv, &pdl, &chain) && modes == both, "unset: the default's modes (%u)", modes);
    setenv("ORTHROS_DECODE_GRAPHS", "0", 1);
    CHECK(!orthros_decode_env(both, &modes, &gemv, &pdl, &chain) && modes == ORTHROS_DECODE_FUSED,
          "GRAPHS=0 over the default: modes %u", modes);
    setenv("ORTHROS_DECODE_FUSED", "0", 1);
    CHECK(!orthros_decode_env(both, &modes, &gemv, &pdl, &chain) && modes == 0, "both 0 over the default: modes %u", modes);
    unsetenv("ORTHROS_DECODE_GRAPHS");
    unsetenv("ORTHROS_DECODE_FUSED");
    CHECK(!orthros_decode_env(0, &modes, &gemv, &pdl, &chain) && modes == 0, "no default, nothing set: modes %u", modes);
    setenv("ORTHROS_DECODE_FUSED", "1", 1);
    CHECK(!orthros_decode_env(0, &modes, &gemv, &pdl, &chain) && modes == ORTHROS_DECODE_FUSED, "FUSED=1: modes %u", modes);
    unsetenv("ORTHROS_DECODE_FUSED");

    /* Both modes asked: a session of more rows than the fused ops take (cuda's stop at 8; here a cpu backend told they
     * stop at 2) runs the captured plain step. */
    if (!orthros_backend_cpu_create(&be)) {
        orthros_model *m = NULL;
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        be->fused_max_rows = 2;
        be->decode_modes = both;
        if (!orthros_model_load(&m, be, "preset:tiny", &ao, 1)) {
            for (int batch = 1; batch <= 3; batch += 2) {
                orthros_session *s = NULL;
                const unsigned want = batch <= 2 ? both : ORTHROS_DECODE_GRAPHS;
                if (!orthros_session_init(&s, m, batch, 16, 0))
                    CHECK(orthros_session_decode(s) == want, "batch %d: modes %u, want %u", batch,
                          orthros_session_decode(s), want);
                else
                    CHECK(0, "session of batch %d: %s", batch, orthros_last_error());
                orthros_session_free(s);
            }
        } else {
            CHECK(0, "preset:tiny: %s", orthros_last_error());
        }
        orthros_model_free(m);
        orthros_backend_free(be);
    } else {
        CHECK(0, "cpu backend: %s", orthros_last_error());
    }
}

/* ---- the op sequence of a step: the plain step's is the one it always was ---- */

static orthros_backend real; /* the cpu backend's ops, called through the shims below */
static char oplog[4096];

static void logop(const char *name)
{
    size_t n = strlen(oplog);
    snprintf(oplog + n, sizeof oplog - n, "%s%s", n ? " " : "", name);
}

static int s_embed(orthros_backend *be, void *x, const int32_t *t, const void *tab, int n, int D)
{
    logop("embed");
    return real.embed(be, x, t, tab, n, D);
}
static int s_rmsnorm(orthros_backend *be, void *o, const void *x, const void *w, int n, int D, float e)
{
    logop("rmsnorm");
    return real.rmsnorm(be, o, x, w, n, D, e);
}
static int s_add_rmsnorm(orthros_backend *be, void *o, void *r, const void *d, const void *w, int n, int D, float e)
{
    logop("add_rmsnorm");
    return real.add_rmsnorm(be, o, r, d, w, n, D, e);
}
static int s_gemm(orthros_backend *be, void *o, const void *x, const void *W, int n, int M, int K)
{
    logop("gemm");
    return real.gemm(be, o, x, W, n, M, K);
}
static int s_swiglu(orthros_backend *be, void *o, const void *gu, int n, int F)
{
    logop("swiglu");
    return real.swiglu(be, o, gu, n, F);
}
static int s_logits(orthros_backend *be, float *o, const void *x, const void *W, int n, int V, int D)
{
    logop("logits");
    return real.logits(be, o, x, W, n, V, D);
}
static int s_argmax(orthros_backend *be, int32_t *ids, const float *l, int n, int V)
{
    logop("argmax");
    return real.argmax(be, ids, l, n, V);
}
static int s_rope(orthros_backend *be, void *qkv, const orthros_attn_layer *L, const orthros_rope *r, const int *p, int B,
                  int n, int q)
{
    logop("rope_cache_write");
    return real.rope_cache_write(be, qkv, L, r, p, B, n, q);
}
static int s_attn(orthros_backend *be, void *o, const void *qkv, const orthros_attn_layer *L, const int *p, int B, int n)
{
    logop("attn_full_decode");
    return real.attn_full_decode(be, o, qkv, L, p, B, n);
}
static int s_upload_ints(orthros_backend *be, int32_t *d, const int32_t *h, int n)
{
    logop("upload_ints");
    return real.upload_ints(be, d, h, n);
}
static int s_download_ints(orthros_backend *be, int32_t *h, const int32_t *d, int n)
{
    logop("download_ints");
    return real.download_ints(be, h, d, n);
}
static int s_embed_dev(orthros_backend *be, void *x, const int32_t *t, const void *tab, int n, int D)
{
    logop("embed_dev");
    return real.embed_dev(be, x, t, tab, n, D);
}
static int s_argmax_dev(orthros_backend *be, int32_t *ids, const float *l, int n, int V)
{
    logop("argmax_dev");
    return real.argmax_dev(be, ids, l, n, V);
}
static int s_norm_gemm(orthros_backend *be, void *o, void *xn, const void *x, const void *w, const void *W, int n, int M,
                       int K, float e)
{
    logop("norm_gemm");
    return real.norm_gemm(be, o, xn, x, w, W, n, M, K, e);
}
static int s_gemm_add(orthros_backend *be, void *r, void *t, const void *x, const void *W, int n, int M, int K)
{
    logop("gemm_add");
    return real.gemm_add(be, r, t, x, W, n, M, K);
}
static int s_swiglu_f(orthros_backend *be, void *o, void *xn, void *gu, const void *x, const void *w, const void *W, int n,
                      int F, int K, float e)
{
    logop("norm_gemm_swiglu");
    return real.norm_gemm_swiglu(be, o, xn, gu, x, w, W, n, F, K, e);
}
static int s_qkv_rope(orthros_backend *be, void *qkv, void *xn, const void *x, const void *w, const void *W,
                      const orthros_attn_layer *L, const orthros_rope *r, const int *p, int n, int K, float e)
{
    logop("norm_qkv_rope");
    return real.norm_qkv_rope(be, qkv, xn, x, w, W, L, r, p, n, K, e);
}
static int s_head(orthros_backend *be, int32_t *ids, float *l, void *xn, const void *x, const void *w, const void *W, int n,
                  int V, int D, float e)
{
    logop("norm_logits_argmax");
    return real.norm_logits_argmax(be, ids, l, xn, x, w, W, n, V, D, e);
}
static int s_head_ids(orthros_backend *be, int32_t *ids, float *l, void *xn, const void *x, const void *w, const void *W,
                      int n, int V, int D, float e)
{
    logop("norm_argmax");
    return real.norm_argmax(be, ids, l, xn, x, w, W, n, V, D, e);
}

/* One decode step of preset:tiny (2 layers, transformer) in each mode, its ops logged: the plain step issues exactly
 * the ops it issued before the modes existed (decode_shard at 5d831fe), none of the new ones; the fused step its
 * 5 a layer; GRAPHS one upload and one download around the step. */
static void test_op_sequence(orthros_backend *be)
{
    real = *be;
    be->embed = s_embed, be->rmsnorm = s_rmsnorm, be->add_rmsnorm = s_add_rmsnorm, be->gemm = s_gemm;
    be->swiglu = s_swiglu, be->logits = s_logits, be->argmax = s_argmax, be->rope_cache_write = s_rope;
    be->attn_full_decode = s_attn, be->upload_ints = s_upload_ints, be->download_ints = s_download_ints;
    be->embed_dev = s_embed_dev, be->argmax_dev = s_argmax_dev, be->norm_gemm = s_norm_gemm, be->gemm_add = s_gemm_add;
    be->norm_gemm_swiglu = s_swiglu_f, be->norm_qkv_rope = s_qkv_rope, be->norm_logits_argmax = s_head;
    be->norm_argmax = real.norm_argmax ? s_head_ids : NULL;
    /* a greedy step wants the ids alone: the backend's ids-only head where it has one */
    const char *const head = real.norm_argmax ? "norm_argmax" : "norm_logits_argmax";
    static const char *const layer_plain = "gemm rope_cache_write attn_full_decode gemm add_rmsnorm gemm swiglu gemm";
    static const char *const layer_fused = "norm_qkv_rope attn_full_decode gemm_add norm_gemm_swiglu gemm_add";
    char want[4][1024];
    snprintf(want[0], sizeof want[0], "embed rmsnorm %s add_rmsnorm %s add_rmsnorm logits argmax", layer_plain, layer_plain);
    snprintf(want[1], sizeof want[1], "embed %s %s %s download_ints", layer_fused, layer_fused, head);
    snprintf(want[2], sizeof want[2], "upload_ints embed_dev rmsnorm %s add_rmsnorm %s add_rmsnorm logits argmax_dev "
             "download_ints", layer_plain, layer_plain);
    snprintf(want[3], sizeof want[3], "upload_ints embed_dev %s %s %s download_ints", layer_fused, layer_fused, head);
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = "transformer";
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    int32_t tok[4] = {5, 17, 99, 3}, cur, nx;
    if (orthros_model_load(&m, be, "preset:tiny", &ao, 1) || orthros_session_init(&s, m, 1, 16, 0)) {
        CHECK(0, "preset:tiny: %s", orthros_last_error());
    } else {
        for (unsigned mode = 0; mode <= 3; mode++) {
            int rc = orthros_session_reset(s);
            if (!rc) rc = orthros_session_set_decode(s, mode);
            if (!rc) rc = orthros_prefill(s, 0, tok, 4, NULL, &cur);
            oplog[0] = '\0';
            if (!rc) rc = orthros_decode(s, &cur, &nx, NULL);
            CHECK(!rc, "%s step: %s", mode_name(mode), orthros_last_error());
            CHECK(!strcmp(oplog, want[mode]), "the %s step's ops:\n  %s\nexpected:\n  %s", mode_name(mode), oplog, want[mode]);
        }
    }
    orthros_session_free(s);
    orthros_model_free(m);
    *be = real;
}

/* The modes a run asked for are those in effect, and under GRAPHS no capture failed and the steps replayed. */
static void check_run_modes(const char *label, const decode_run *got, unsigned mode)
{
    CHECK(got->modes == mode, "%s: %s in effect", label, mode_name(got->modes));
    if (mode & ORTHROS_DECODE_GRAPHS) {
        CHECK(got->stats.capture_failures == 0, "%s: a capture failed: %s", label, got->stats.last_failure);
        CHECK(got->stats.captures >= 1 && got->stats.replays >= STEPS - 4, "%s: %ld captures, %ld replays", label,
              got->stats.captures, got->stats.replays);
    }
}

/* ---- the cuda backend: each mode against the plain step ---- */

static void compare_cuda(const char *label, const decode_run *ref, const decode_run *got, int B, unsigned mode)
{
    int worst_agree = B;
    double worst = 0;
    for (int t = 0; t <= STEPS; t++) {
        int agree;
        double err, range;
        tu_logit_agreement(ref->logits + (size_t)t * B * ref->V, got->logits + (size_t)t * B * ref->V, B, ref->V, &agree,
                           &err, &range);
        worst_agree = agree < worst_agree ? agree : worst_agree;
        worst = fmax(worst, range > 0 ? err / range : err);
    }
    printf("%-58s argmax agreement (worst step) %d/%d, max err %.3f%% of the range, %ld captures, %ld replays, %ld failed\n",
           label, worst_agree, B, 100 * worst, got->stats.captures, got->stats.replays, got->stats.capture_failures);
    /* Across the steps: at least 90% of rows in all agree. */
    int agree_all = 0;
    for (int t = 0; t <= STEPS; t++) {
        int agree;
        double err, range;
        tu_logit_agreement(ref->logits + (size_t)t * B * ref->V, got->logits + (size_t)t * B * ref->V, B, ref->V, &agree,
                           &err, &range);
        agree_all += agree;
    }
    CHECK(agree_all * 10 >= (STEPS + 1) * B * 9, "%s: argmax agrees on %d of %d rows", label, agree_all, (STEPS + 1) * B);
    CHECK(worst < 0.02, "%s: logits differ by %.2f%% of their range", label, 100 * worst);
    check_run_modes(label, got, mode);
}

/* A run that asked for the ids alone (run_decode_as's ids_only) against the plain run, both fed the plain run's
 * tokens: its ids are the argmax of its own step's logits (the fused step's, exact up to the order of fp32 sums,
 * whatever head the backend takes), so at least 90% of rows in all agree with the plain run's, as in compare_cuda. */
static void compare_ids(const char *label, const decode_run *ref, const decode_run *got, int B, unsigned mode)
{
    int agree = 0;
    for (int i = 0; i < (STEPS + 1) * B; i++) agree += ref->tokens[i] == got->tokens[i];
    printf("%-58s ids agree on %d of %d rows, %ld captures, %ld replays, %ld failed\n", label, agree, (STEPS + 1) * B,
           got->stats.captures, got->stats.replays, got->stats.capture_failures);
    CHECK(agree * 10 >= (STEPS + 1) * B * 9, "%s: ids agree on %d of %d rows", label, agree, (STEPS + 1) * B);
    check_run_modes(label, got, mode);
}

/* The fused step under graphs (and, with both, uncaptured too) of backend `be` (named by tag) against the plain step
 * at batch B on the two shapes given (the real shapes' first layers), for the transformer and orthros tail 1: the
 * backends that set a process-wide kernel choice (gemv.cu's version, its KW), each made just before its runs. */
static void fused_against_plain_len(orthros_backend *plain, orthros_backend *be, const char *tag, int B, int both,
                                    const char *const shapes[2], int plen)
{
    const unsigned modes[] = {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, ORTHROS_DECODE_FUSED};
    for (int f = 0; f < 2; f++)
        for (size_t a = 0; a < tu_n_arch_cases; a++) {
            const tu_arch_case *ac = &tu_arch_cases[a];
            if (strcmp(ac->label, "transformer") && strcmp(ac->label, "orthros tail 1")) continue;
            orthros_arch_opts ao = tu_arch_case_opts(ac);
            decode_run ref, got;
            if (run_decode(&ref, plain, shapes[f], &ao, 0, B, plen, NULL)) {
                CHECK(0, "%s %s B %d plain: %s", shapes[f], ac->label, B, orthros_last_error());
                continue;
            }
            for (int w = 0; w < (both ? 2 : 1); w++) {
                char label[200];
                snprintf(label, sizeof label, "%s %s B %d %s, %s", shapes[f], ac->label, B,
                         w ? "fused" : "fused + graphs", tag);
                if (run_decode(&got, be, shapes[f], &ao, modes[w], B, plen, &ref)) {
                    CHECK(0, "%s: %s", label, orthros_last_error());
                    continue;
                }
                compare_cuda(label, &ref, &got, B, modes[w]);
                run_free(&got);
            }
            run_free(&ref);
        }
}

/* ... from a prompt of 250 tokens */
static void fused_against_plain(orthros_backend *plain, orthros_backend *be, const char *tag, int B, int both,
                                const char *const shapes[2])
{
    fused_against_plain_len(plain, be, tag, B, both, shapes, 250);
}

/* A cuda backend made with var=val in the environment (unset again after). */
static int cuda_with(const char *var, const char *val, orthros_backend **out)
{
    setenv(var, val, 1);
    int rc = orthros_backend_cuda_create(out);
    unsetenv(var);
    return rc;
}

/* A backend made with the switch env=value, named `tag` in its kernels line, against the plain step: a 2000-token
 * prompt, so that v8's clusters take the call (at 250 keys v7 runs, and an op fused into v8 runs as the two ops), the
 * fused step under graphs and uncaptured at batch 1 and MAX_B. */
static void v8_switch_against_plain(orthros_backend *plain, const char *env, const char *value, const char *tag,
                                    const char *const shapes[2])
{
    orthros_backend *be = NULL;
    if (cuda_with(env, value, &be)) {
        CHECK(0, "cuda backend with %s=%s: %s", env, value, orthros_last_error());
    } else {
        CHECK(strstr(be->info.kernels, tag) != NULL, "%s=%s named in \"%s\"", env, value, be->info.kernels);
        char label[96];
        snprintf(label, sizeof label, "%s, 2000 tokens", tag);
        for (int B = 1; B <= MAX_B; B += MAX_B - 1) fused_against_plain_len(plain, be, label, B, 1, shapes, 2000);
    }
    orthros_backend_free(be);
}

static int cuda_models(int nspec, char **specs)
{
    if (!orthros_cuda_available()) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    orthros_backend *plain = NULL, *gemv = NULL, *pdl = NULL, *l2pf = NULL, *chain = NULL, *attn_o = NULL, *o_pdl = NULL,
                   *o_pdl3 = NULL, *attn_pdl = NULL, *mlp = NULL, *mlp_ring = NULL, *chain_ring = NULL,
                   *pdl_late = NULL, *pdl_late2 = NULL, *no_late = NULL, *pdl_lead = NULL, *head8 = NULL,
                   *no_head8 = NULL, *head8_one = NULL, *kvpf = NULL, *attn_early = NULL;
    unsetenv("ORTHROS_DECODE_GRAPHS");
    unsetenv("ORTHROS_DECODE_FUSED");
    unsetenv("ORTHROS_GEMV");
    unsetenv("ORTHROS_DECODE_PDL");
    int rc = orthros_backend_cuda_create(&plain);
    /* the kernels line whole: its last item, the default's decode modes, in it (cut at 95 characters, the line lost
     * the switches past them) */
    if (!rc)
        CHECK(strstr(plain->info.kernels, ", decode fused+graphs") != NULL, "the default's kernels line lacks its decode "
              "modes: \"%s\"", plain->info.kernels);
    if (!rc) rc = cuda_with("ORTHROS_GEMV", "1", &gemv);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_PDL", "1", &pdl);
    /* ORTHROS_DECODE_L2PF: 0-2, the cap 1-1024 MiB, ORTHROS_GEMV_EARLY 0-63 without bit 4, v5's and v6's variables
     * their listed values, anything else refused naming the variable */
    const char *const bad[][2] = {{"ORTHROS_DECODE_L2PF", "3"}, {"ORTHROS_DECODE_L2PF", "1x"},
                                  {"ORTHROS_DECODE_L2PF_MB", "0"}, {"ORTHROS_DECODE_L2PF_MB", "2048"},
                                  {"ORTHROS_DECODE_CHAIN", "2"}, {"ORTHROS_DECODE_ATTN_O", "2"},
                                  {"ORTHROS_DECODE_QKV_ATTN", "2"},
                                  {"ORTHROS_DECODE_O_PDL", "4"}, {"ORTHROS_DECODE_ATTN_PDL", "x"},
                                  {"ORTHROS_DECODE_PDL_LATE", "3"}, {"ORTHROS_GEMV_KW", "3"},
                                  {"ORTHROS_GEMV_KW", "8"}, {"ORTHROS_GEMV_FILL", "0"}, {"ORTHROS_GEMV_FILL", "4"},
                                  {"ORTHROS_GEMV_BALANCE", "2"}, {"ORTHROS_GEMV_CARVEOUT", "101"},
                                  {"ORTHROS_GEMV_CARVEOUT", "-1"}, {"ORTHROS_GEMV_CARVEOUT", "50%"},
                                  {"ORTHROS_DECODE_PDL_LEAD", "4"}, {"ORTHROS_GEMV_QKV_BLOCKS", "4097"},
                                  {"ORTHROS_GEMV_QKV_BLOCKS", "12x"}, {"ORTHROS_ATTN_DECODE_REGS", "128"},
                                  {"ORTHROS_ATTN_DECODE_LEAN", "2"}, {"ORTHROS_ATTN_DECODE_PUSH", "2"},
                                  {"ORTHROS_ATTN_DECODE_RELAXED", "2"}, {"ORTHROS_ATTN_DECODE_CLAIM", "-1"},
                                  {"ORTHROS_ATTN_DECODE_CLAIM", "4k"},
                                  {"ORTHROS_DECODE_MLP", "3"}, {"ORTHROS_DECODE_CHAIN_RING", "2"},
                                  {"ORTHROS_DECODE_HEAD8", "2"}, {"ORTHROS_HEAD8_DP4A", "2"},
                                  {"ORTHROS_HEAD8_ONE_LAUNCH", "2"}, {"ORTHROS_HEAD8_NEXT_PF", "2"}, {"ORTHROS_HEAD8_EVEN", "2"},
                                  {"ORTHROS_DECODE_ATTN_EARLY", "2"},
                                  {"ORTHROS_DECODE_KVPF_MB", "1025"}, {"ORTHROS_DECODE_KVPF_MB", "-1"},
                                  {"ORTHROS_DECODE_KVPF_MB", "16M"},
                                  {"ORTHROS_GEMV_EARLY", "4"}, {"ORTHROS_GEMV_EARLY", "64"},
                                  {"ORTHROS_GEMV_EARLY", "07"}, {"ORTHROS_GEMV_EARLY", "1x"},
                                  {"ORTHROS_GEMV5_STAGES", "5"}, {"ORTHROS_GEMV6_ROWS", "48"},
                                  {"ORTHROS_GEMV6_STAGE_KB", "32k"}, {"ORTHROS_GEMV6_WGMMA", "yes"},
                                  {"ORTHROS_GEMV6_BULK", "2"}};
    for (size_t i = 0; !rc && i < sizeof bad / sizeof *bad; i++) {
        orthros_backend *be = NULL;
        int r = cuda_with(bad[i][0], bad[i][1], &be);
        CHECK(r == ORTHROS_EINVAL && !be && strstr(orthros_last_error(), bad[i][0]), "cuda %s=%s is refused (rc %d: %s)",
              bad[i][0], bad[i][1], r, orthros_last_error());
        orthros_backend_free(be);
    }
#ifndef ORTHROS_STAMPS
    /* a build whose kernels read no clock (no -DORTHROS_STAMPS=ON) refuses ORTHROS_STEP_STAMPS, naming it */
    if (!rc) {
        orthros_backend *be = NULL;
        int r = cuda_with("ORTHROS_STEP_STAMPS", "stamps.txt", &be);
        CHECK(r == ORTHROS_EUNSUPPORTED && !be && strstr(orthros_last_error(), "ORTHROS_STEP_STAMPS"),
              "cuda ORTHROS_STEP_STAMPS in a build without stamps is refused (rc %d: %s)", r, orthros_last_error());
        orthros_backend_free(be);
    }
#endif
    /* the attention with O in its clusters; O a dependent launch of the attention, the hint asked into L2 */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_ATTN_O", "1", &attn_o);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_O_PDL", "2", &o_pdl);
    /* the attention asking O's first MiB into L2 once its blocks' streams are asked (3; a hint: the same tokens) */
    setenv("ORTHROS_DECODE_L2PF_MB", "1", 1);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_O_PDL", "3", &o_pdl3);
    unsetenv("ORTHROS_DECODE_L2PF_MB");
    /* The two dependent launches, both on by default on sm_90 (`plain` holds them): every product a dependent launch
     * that asks nothing into L2, its predecessor letting it launch late (ORTHROS_DECODE_PDL_LATE), and the attention
     * a dependent launch of the q/k/v projection (ORTHROS_DECODE_ATTN_PDL); here each alone, neither, and the late
     * launch asking its blocks' first group into L2 before its wait (2) */
    setenv("ORTHROS_DECODE_PDL_LATE", "0", 1);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_ATTN_PDL", "1", &attn_pdl);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_ATTN_PDL", "0", &no_late);
    unsetenv("ORTHROS_DECODE_PDL_LATE");
    setenv("ORTHROS_DECODE_ATTN_PDL", "0", 1);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_PDL_LATE", "1", &pdl_late);
    unsetenv("ORTHROS_DECODE_ATTN_PDL");
    if (!rc) rc = cuda_with("ORTHROS_DECODE_PDL_LATE", "2", &pdl_late2);
    /* the late launch let happen two block rounds before each block's last group */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_PDL_LEAD", "2", &pdl_lead);
    /* the MLP in one launch */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_MLP", "1", &mlp);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_MLP", "2", &mlp_ring);
    /* The head of a greedy step through an int8 copy, the exact argmax kept (kernels/head8.h), is the default, its
     * screen in the integer form 4 chunk steps deep (`plain`); here its fp32 form at depth 2, and the bf16 head */
    setenv("ORTHROS_HEAD8_DP4A", "0", 1);
    if (!rc) rc = cuda_with("ORTHROS_HEAD8_DEPTH", "2", &head8);
    unsetenv("ORTHROS_HEAD8_DP4A");
    if (!rc) rc = cuda_with("ORTHROS_DECODE_HEAD8", "0", &no_head8);
    /* the default's screen with the selection in its launch */
    if (!rc) rc = cuda_with("ORTHROS_HEAD8_ONE_LAUNCH", "1", &head8_one);
    /* the attention's tile that holds the newest key asked before its wait, but for the rows the q/k/v product
     * writes (read after it): a row read too early is a stale key or value, which these steps' tokens would show */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_ATTN_EARLY", "1", &attn_early);
    /* the q/k/v product asking the layer's K and V caches into L2 for the attention (batch 1) */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_KVPF_MB", "16", &kvpf);
    /* the hints as evict_last, 64 MiB each: more than the step's products between two of them */
    setenv("ORTHROS_DECODE_L2PF_MB", "64", 1);
    if (!rc) rc = cuda_with("ORTHROS_DECODE_L2PF", "2", &l2pf);
    unsetenv("ORTHROS_DECODE_L2PF_MB");
    /* the chain: a layer's products from O to the next layer's q/k/v as one launch */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_CHAIN", "1", &chain);
    /* the same with the products streamed through a shared-memory ring (sm_90; elsewhere no chain) */
    if (!rc) rc = cuda_with("ORTHROS_DECODE_CHAIN_RING", "1", &chain_ring);
    if (rc) {
        fprintf(stderr, "cuda backend: %s\n", orthros_last_error());
        return 1;
    }
    /* The real shapes' kernels (the GEMV's split plans, decode attention v7) on their first layers, and the tiny ones
     * on every schedule. */
    const char *presets[] = {"preset:tiny", "preset:llama3.2-1b-L2", "preset:llama3.1-8b-L1"};
    const int np = 3, total = np + nspec;
    for (int f = 0; f < total; f++) {
        const char *spec = f < np ? presets[f] : specs[f - np];
        int big = f == 1 || f == 2;
        for (size_t a = 0; a < tu_n_arch_cases; a++) {
            const tu_arch_case *ac = &tu_arch_cases[a];
            if (skip_case(spec, ac)) continue;
            /* The big shapes: the schedules the benchmarks time, and one of each linear formula. */
            if (big && strcmp(ac->label, "transformer") && strcmp(ac->label, "orthros tail 1") &&
                strcmp(ac->label, "orthros lw 4 after") && strcmp(ac->label, "hybrid relu lw 3") && strcmp(ac->label, "swa 5"))
                continue;
            orthros_arch_opts ao = tu_arch_case_opts(ac);
            for (int B = 1; B <= MAX_B; B += MAX_B - 1) {
                decode_run ref, got;
                if (run_decode(&ref, plain, spec, &ao, 0, B, 250, NULL)) {
                    CHECK(0, "%s %s B %d plain: %s", spec, ac->label, B, orthros_last_error());
                    continue;
                }
                const struct {
                    unsigned mode;
                    orthros_backend *be;
                    const char *tag;
                    int ids_only; /* the steps ask for the ids alone: the backend's norm_argmax */
                } ways[] = {{ORTHROS_DECODE_GRAPHS, plain, "graphs", 0},
                            {ORTHROS_DECODE_GRAPHS, gemv, "graphs + gemv", 0},
                            {ORTHROS_DECODE_FUSED, plain, "fused", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, plain, "fused + graphs", 0},
                            {ORTHROS_DECODE_FUSED, pdl, "fused + pdl", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, pdl, "fused + graphs + pdl", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, l2pf, "fused + graphs + l2pf", 0},
                            {ORTHROS_DECODE_FUSED, chain, "fused + chain", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, chain, "fused + graphs + chain", 0},
                            {ORTHROS_DECODE_FUSED, chain_ring, "fused + chain ring", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, chain_ring, "fused + graphs + chain ring", 0},
                            {ORTHROS_DECODE_FUSED, attn_o, "fused + attn_o", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, attn_o, "fused + graphs + attn_o", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, o_pdl, "fused + graphs + o_pdl 2", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, o_pdl3, "fused + graphs + o_pdl 3", 0},
                            {ORTHROS_DECODE_FUSED, attn_pdl, "fused + attn_pdl", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, attn_pdl, "fused + graphs + attn_pdl", 0},
                            {ORTHROS_DECODE_FUSED, pdl_late, "fused + pdl late", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, pdl_late, "fused + graphs + pdl late", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, pdl_late2, "fused + graphs + pdl late 2", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, pdl_lead, "fused + graphs + pdl lead 2", 0},
                            {ORTHROS_DECODE_FUSED, plain, "fused + head8 dp4a d4, ids only", 1},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, plain, "fused + graphs + head8 dp4a d4, ids only",
                             1},
                            {ORTHROS_DECODE_FUSED, head8, "fused + head8 fp32 d2, ids only", 1},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, head8, "fused + graphs + head8 fp32 d2, ids only",
                             1},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, no_head8, "fused + graphs, bf16 head, ids only",
                             1},
                            {ORTHROS_DECODE_FUSED, head8_one, "fused + head8 one launch, ids only", 1},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, head8_one,
                             "fused + graphs + head8 one launch, ids only", 1},
                            {ORTHROS_DECODE_FUSED, attn_early, "fused + attn early rows", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, attn_early, "fused + graphs + attn early rows",
                             0},
                            {ORTHROS_DECODE_FUSED, kvpf, "fused + kv l2", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, kvpf, "fused + graphs + kv l2", 0},
                            {ORTHROS_DECODE_FUSED, no_late, "fused, no pdl late or attn_pdl", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, no_late,
                             "fused + graphs, no pdl late or attn_pdl", 0},
                            {ORTHROS_DECODE_FUSED, mlp, "fused + mlp", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, mlp, "fused + graphs + mlp", 0},
                            {ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS, mlp_ring, "fused + graphs + mlp ring", 0}};
                for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
                    char label[200];
                    snprintf(label, sizeof label, "%s %s B %d %s", spec, ac->label, B, ways[w].tag);
                    if (run_decode_as(&got, ways[w].be, spec, &ao, ways[w].mode, B, 250, &ref, ways[w].ids_only)) {
                        CHECK(0, "%s: %s", label, orthros_last_error());
                        continue;
                    }
                    if (ways[w].ids_only) compare_ids(label, &ref, &got, B, ways[w].mode);
                    else compare_cuda(label, &ref, &got, B, ways[w].mode);
                    run_free(&got);
                }
                run_free(&ref);
            }
        }
    }
    /* gemv.cu's versions 5 and 6 (ORTHROS_GEMV_VERSION=5, 6; 6 again with its stages read by wgmma,
     * ORTHROS_GEMV6_WGMMA=1, on sm_90a): the fused step up to batch 16, the version's ring kernel at 9-16, against
     * the plain step at batch 16 on the real shapes' first layers. The version and the form are process-wide: the
     * backend made with them sets the version last (the plain step, the reference, runs no gemv.cu kernel); the form
     * is read as each call is planned, so it is set around the run (without sm_90a the calls take v1's plan). */
    for (int v = 5; v <= 7; v++) {
        orthros_backend *vb = NULL;
        const char *vs = v == 5 ? "5" : "6";
        if (cuda_with("ORTHROS_GEMV_VERSION", vs, &vb) || vb->fused_max_rows < V5_B) {
            CHECK(0, "cuda backend with ORTHROS_GEMV_VERSION=%s: %s", vs,
                  vb ? "fused step below batch 16" : orthros_last_error());
            orthros_backend_free(vb);
            continue;
        }
        if (v == 7) setenv("ORTHROS_GEMV6_WGMMA", "1", 1);
        fused_against_plain(plain, vb, v == 5 ? "gemv v5" : v == 6 ? "gemv v6" : "gemv v6 on wgmma", V5_B, 1,
                            presets + 1);
        unsetenv("ORTHROS_GEMV6_WGMMA");
        orthros_backend_free(vb);
    }
    /* v3's slices a group forced (ORTHROS_GEMV_KW=1, 2, 4; process-wide, as the version is): the fused step under
     * graphs against the plain step at batch 1 and MAX_B. */
    for (int kw = 1; kw <= 4; kw *= 2) {
        orthros_backend *kb = NULL;
        const char kws[2] = {(char)('0' + kw), 0};
        if (cuda_with("ORTHROS_GEMV_KW", kws, &kb)) {
            CHECK(0, "cuda backend with ORTHROS_GEMV_KW=%s: %s", kws, orthros_last_error());
            continue;
        }
        char tag[32];
        snprintf(tag, sizeof tag, "gemv kw %d", kw);
        for (int B = 1; B <= MAX_B; B += MAX_B - 1) fused_against_plain(plain, kb, tag, B, 0, presets + 1);
        orthros_backend_free(kb);
    }
    /* the q/k/v grid capped (ORTHROS_GEMV_QKV_BLOCKS=192; process-wide, as the KW is), its dependent let launch as it
     * starts, and with it v8 held to 160 registers (ORTHROS_ATTN_DECODE_REGS=160, process-wide too): the fused step
     * under graphs against the plain step at batch 1 and MAX_B */
    {
        orthros_backend *qb = NULL;
        setenv("ORTHROS_ATTN_DECODE_REGS", "160", 1);
        if (cuda_with("ORTHROS_GEMV_QKV_BLOCKS", "192", &qb)) {
            CHECK(0, "cuda backend with ORTHROS_GEMV_QKV_BLOCKS=192: %s", orthros_last_error());
        } else {
            for (int B = 1; B <= MAX_B; B += MAX_B - 1)
                fused_against_plain(plain, qb, "qkv blocks 192, attn regs 160", B, 0, presets + 1);
        }
        unsetenv("ORTHROS_ATTN_DECODE_REGS");
        orthros_backend_free(qb);
    }
    /* v8's softmax as written (ORTHROS_ATTN_DECODE_LEAN=0; the lean form is the default), then its merge pushed to
     * rank 0 (ORTHROS_ATTN_DECODE_PUSH=1): process-wide, so the plain step's attention takes each too and this checks
     * the step around it (test_cuda_ops' decode8 section checks its sums against the cpu's). Then the q/k/v
     * projection in the attention's clusters (ORTHROS_DECODE_QKV_ATTN=1, a backend's own switch), whose backend puts
     * the default forms back (its environment has neither switch). */
    v8_switch_against_plain(plain, "ORTHROS_ATTN_DECODE_LEAN", "0", "attn lean 0", presets + 1);
    v8_switch_against_plain(plain, "ORTHROS_ATTN_DECODE_PUSH", "1", "attn push", presets + 1);
    /* v8's end barrier with cluster.sync's release (ORTHROS_ATTN_DECODE_RELAXED=0; relaxed is the default;
     * process-wide likewise) */
    v8_switch_against_plain(plain, "ORTHROS_ATTN_DECODE_RELAXED", "0", "attn relaxed 0", presets + 1);
    /* v8's tiles claimed a stage in every call (ORTHROS_ATTN_DECODE_CLAIM=1; off by default; process-wide likewise) */
    v8_switch_against_plain(plain, "ORTHROS_ATTN_DECODE_CLAIM", "1", "attn claim 1", presets + 1);
    v8_switch_against_plain(plain, "ORTHROS_DECODE_QKV_ATTN", "1", "qkv+attn", presets + 1);
    /* the grid balanced or not (ORTHROS_GEMV_BALANCE 0 and 1, process-wide, as the KW is): the fused step under graphs
     * against the plain step at batch 1 and MAX_B */
    for (int on = 0; on <= 1; on++) {
        orthros_backend *bb = NULL;
        if (cuda_with("ORTHROS_GEMV_BALANCE", on ? "1" : "0", &bb)) {
            CHECK(0, "cuda backend with ORTHROS_GEMV_BALANCE=%d: %s", on, orthros_last_error());
        } else {
            for (int B = 1; B <= MAX_B; B += MAX_B - 1)
                fused_against_plain(plain, bb, on ? "gemv balance 1" : "gemv balance 0", B, 0, presets + 1);
        }
        orthros_backend_free(bb);
    }
    /* the products asking the largest L1 after v8's blocks (ORTHROS_GEMV_CARVEOUT=0, a launch attribute kept by the
     * graphs; process-wide, so later backends made without it put the driver's choice back) */
    v8_switch_against_plain(plain, "ORTHROS_GEMV_CARVEOUT", "0", "gemv carveout 0", presets + 1);
    orthros_backend_free(chain);
    orthros_backend_free(chain_ring);
    orthros_backend_free(attn_o);
    orthros_backend_free(o_pdl);
    orthros_backend_free(o_pdl3);
    orthros_backend_free(attn_pdl);
    orthros_backend_free(pdl_late);
    orthros_backend_free(pdl_late2);
    orthros_backend_free(no_late);
    orthros_backend_free(pdl_lead);
    orthros_backend_free(mlp);
    orthros_backend_free(mlp_ring);
    orthros_backend_free(head8);
    orthros_backend_free(no_head8);
    orthros_backend_free(head8_one);
    orthros_backend_free(kvpf);
    orthros_backend_free(attn_early);
    orthros_backend_free(l2pf);
    orthros_backend_free(pdl);
    orthros_backend_free(gemv);
    orthros_backend_free(plain);
    return tu_finish();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "cuda")) return cuda_models(argc - 2, argv + 2);
    unsetenv("ORTHROS_DECODE_GRAPHS");
    unsetenv("ORTHROS_DECODE_FUSED");
    orthros_backend *be = NULL;
    if (orthros_backend_cpu_create(&be)) {
        fprintf(stderr, "cpu backend: %s\n", orthros_last_error());
        return 1;
    }
    test_fused_ops(be);
    test_op_sequence(be);
    char *specs[64];
    int nspec = 0;
    specs[nspec++] = "preset:tiny";
    for (int i = 1; i < argc && nspec < 64; i++) specs[nspec++] = argv[i];
    cpu_models(be, nspec, specs);
    orthros_backend_free(be);
    test_switches();
    return tu_finish();
}
