/* Every attention kind of DESIGN section 2 on the cpu backend, against naive implementations written here:
 * the O(N^2) masked form of linear attention, a dense windowed softmax, a direct RoPE; and at model level the
 * identities the spec implies (recurrent decode = parallel prefill for linear, orthros with tail N = transformer,
 * a 1-layer orthros model's first generated token = transformer's, chunk-size independence, batched decode =
 * single-sequence decode). The linear formula of a converted model (docs/converted-models.md: phi before or after
 * RoPE, a local softmax window with per-head gates) against its O(N^2) form written here from the raw q, k, v with
 * its own rotation, op by op and for whole models (linear, orthros tails 1 and 4, hybrid; windows 0, 1, 3, 63, 64,
 * 65 and longer than the prompt); chunked prefill bit-equal across chunk sizes 1, 7 and N; a window of 0 bit-equal
 * to the linear attention op as it was before windows existed (a frozen copy below); a window covering the prompt
 * equal to the transformer bit for bit whatever the gates; decode after prefill equal to the naive form. */
#include "orthros.h"
#include "backend.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- naive references, in double ---- */

static void naive_phi(double *f, const double *x, int d, orthros_fmap fm, const float *w, int F)
{
    if (fm == ORTHROS_FMAP_ELU1) {
        for (int j = 0; j < d; j++) f[j] = x[j] > 0 ? x[j] + 1.0 : exp(x[j]);
    } else if (fm == ORTHROS_FMAP_RELU) {
        for (int j = 0; j < d; j++) f[j] = x[j] > 0 ? x[j] : 0.0;
    } else if (fm == ORTHROS_FMAP_HEDGEHOG) {
        int half = F / 2;
        double u[1024], sp = 0, sn = 0;
        for (int c = 0; c < half; c++) {
            u[c] = 0;
            for (int j = 0; j < d; j++) u[c] += (double)x[j] * w[(size_t)j * half + c];
        }
        for (int c = 0; c < half; c++) {
            sp += exp(u[c]);
            sn += exp(-u[c]);
        }
        for (int c = 0; c < half; c++) {
            f[c] = exp(u[c]) / sp;
            f[half + c] = exp(-u[c]) / sn;
        }
    }
}

/* x as doubles, in one of two rotating buffers (two live at a time). */
static const double *dvec(const float *x, int d)
{
    static double buf[2][ORTHROS_MAX_HEAD_DIM];
    static int which;
    double *b = buf[which ^= 1];
    for (int j = 0; j < d; j++) b[j] = x[j];
    return b;
}

/* o_t = sum_{s<=t} (phi(q_t).phi(k_s)) v_s / (sum_{s<=t} phi(q_t).phi(k_s) + eps), rows of one sequence from 0. */
static void naive_linear(float *out, const float *qkv, const orthros_attn_layer *L, int n)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = (Hq + 2 * Hkv) * d, F = L->feature_dim;
    int half = F / 2;
    const orthros_fmap fmap = L->fmap;
    if (Hkv < 1 || Hq < Hkv) return; /* (no layer the tests make) */
    double fq[2048] = {0}, fk[2048] = {0};
    for (int t = 0; t < n; t++)
        for (int h = 0; h < Hq; h++) {
            int kv = h / (Hq / Hkv);
            const float *wq = fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_q + (size_t)h * d * half : NULL;
            const float *wk = fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_k + (size_t)kv * d * half : NULL;
            naive_phi(fq, dvec(qkv + (size_t)t * W + (size_t)h * d, d), d, fmap, wq, F);
            double num[ORTHROS_MAX_HEAD_DIM] = {0}, den = 0;
            for (int s = 0; s <= t; s++) {
                naive_phi(fk, dvec(qkv + (size_t)s * W + (size_t)(Hq + kv) * d, d), d, fmap, wk, F);
                double a = 0;
                for (int f = 0; f < F; f++) a += fq[f] * fk[f];
                const float *v = qkv + (size_t)s * W + (size_t)(Hq + Hkv + kv) * d;
                for (int j = 0; j < d; j++) num[j] += a * v[j];
                den += a;
            }
            for (int j = 0; j < d; j++) out[((size_t)t * Hq + h) * d + j] = (float)(num[j] / (den + L->eps));
        }
}

/* Dense softmax over cached positions (t - W, t], two passes, for B sequences of n rows. */
static void naive_full(float *out, const float *qkv, const orthros_attn_layer *L, const int *pos0, int B, int n)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = (Hq + 2 * Hkv) * d;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++)
            for (int h = 0; h < Hq; h++) {
                int p = pos0[b] + i, kv = h / (Hq / Hkv);
                int lo = L->window ? p - L->window + 1 : 0;
                if (lo < 0) lo = 0;
                const float *q = qkv + ((size_t)b * n + i) * W + (size_t)h * d;
                double mx = -INFINITY, sum = 0, acc[ORTHROS_MAX_HEAD_DIM] = {0};
                double *sc = malloc(sizeof(double) * (size_t)(p - lo + 1));
                for (int s = lo; s <= p; s++) {
                    const float *k = (const float *)L->k_cache + (((size_t)b * L->cap + (size_t)(s % L->cap)) * Hkv + kv) * d;
                    double a = 0;
                    for (int j = 0; j < d; j++) a += (double)q[j] * k[j];
                    sc[s - lo] = a / sqrt((double)d);
                    if (sc[s - lo] > mx) mx = sc[s - lo];
                }
                for (int s = lo; s <= p; s++) {
                    const float *v = (const float *)L->v_cache + (((size_t)b * L->cap + (size_t)(s % L->cap)) * Hkv + kv) * d;
                    double e = exp(sc[s - lo] - mx);
                    sum += e;
                    for (int j = 0; j < d; j++) acc[j] += e * v[j];
                }
                free(sc);
                for (int j = 0; j < d; j++) out[(((size_t)b * n + i) * Hq + h) * d + j] = (float)(acc[j] / sum);
            }
}

/* RoPE of x at position pos in double, the angle formed in fp32 as the engine and transformers form it. */
static void naive_rope(double *out, const float *x, const float *inv_freq, int d, int pos)
{
    int half = d / 2;
    for (int j = 0; j < half; j++) {
        double a = (double)(float)((float)pos * inv_freq[j]);
        out[j] = x[j] * cos(a) - x[j + half] * sin(a);
        out[j + half] = x[j + half] * cos(a) + x[j] * sin(a);
    }
}

/* The linear formula of docs/converted-models.md, term by term, for rows 0 .. n - 1 of one sequence from position 0,
 * from the raw (un-rotated) q, k, v of qkv: phi on q, k (before) or on q~, k~ (after); with W >= 1 the window term
 * gamma_h exp(q~.k~ / sqrt(d) - m_t) over the last W positions and the linear term phi.phi over s <= t - W under one
 * denominator, no eps; with W = 0 DESIGN's formula. gates NULL: gamma 1. */
static void naive_linear_window(float *out, const float *qkv, const orthros_attn_layer *L, const float *inv_freq,
                                const float *gates, int n)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, Wd = (Hq + 2 * Hkv) * d, F = L->feature_dim;
    int half = F / 2, win = L->local_window, after = L->fmap_after;
    const orthros_fmap fmap = L->fmap;
    if (Hkv < 1 || Hq < Hkv) return; /* (no layer the tests make) */
    double *qr = calloc((size_t)n * Hq * d, sizeof(double)), *kr = calloc((size_t)n * Hkv * d, sizeof(double));
    double *phik = calloc((size_t)n * Hkv * F, sizeof(double)), *sc = calloc((size_t)n, sizeof(double));
    double fq[2048] = {0};
    for (int t = 0; t < n; t++) {
        for (int h = 0; h < Hq; h++) naive_rope(qr + ((size_t)t * Hq + h) * d, qkv + (size_t)t * Wd + (size_t)h * d, inv_freq, d, t);
        for (int kv = 0; kv < Hkv; kv++) {
            const float *k = qkv + (size_t)t * Wd + (size_t)(Hq + kv) * d;
            double *r = kr + ((size_t)t * Hkv + kv) * d;
            naive_rope(r, k, inv_freq, d, t);
            const float *wk = fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_k + (size_t)kv * d * half : NULL;
            naive_phi(phik + ((size_t)t * Hkv + kv) * F, after ? r : dvec(k, d), d, fmap, wk, F);
        }
    }
    for (int t = 0; t < n; t++)
        for (int h = 0; h < Hq; h++) {
            int kv = h / (Hq / Hkv), lo = win > 0 ? (t - win + 1 > 0 ? t - win + 1 : 0) : t + 1;
            int lin_end = win > 0 ? t - win : t; /* the linear term covers s <= lin_end */
            const double *q = qr + ((size_t)t * Hq + h) * d;
            const float *wq = fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_q + (size_t)h * d * half : NULL;
            naive_phi(fq, after ? q : dvec(qkv + (size_t)t * Wd + (size_t)h * d, d), d, fmap, wq, F);
            double num[ORTHROS_MAX_HEAD_DIM] = {0}, den = 0, mx = -INFINITY;
            double gamma = gates ? gates[h] : 1.0;
            for (int s = lo; s <= t; s++) {
                double a = 0;
                for (int j = 0; j < d; j++) a += q[j] * kr[((size_t)s * Hkv + kv) * d + j];
                sc[s] = a / sqrt((double)d);
                if (sc[s] > mx) mx = sc[s];
            }
            for (int s = lo; s <= t; s++) {
                double a = gamma * exp(sc[s] - mx);
                const float *v = qkv + (size_t)s * Wd + (size_t)(Hq + Hkv + kv) * d;
                for (int j = 0; j < d; j++) num[j] += a * v[j];
                den += a;
            }
            for (int s = 0; s <= lin_end; s++) {
                double b = 0;
                for (int f = 0; f < F; f++) b += fq[f] * phik[((size_t)s * Hkv + kv) * F + f];
                const float *v = qkv + (size_t)s * Wd + (size_t)(Hq + Hkv + kv) * d;
                for (int j = 0; j < d; j++) num[j] += b * v[j];
                den += b;
            }
            if (win == 0) den += L->eps;
            for (int j = 0; j < d; j++) out[((size_t)t * Hq + h) * d + j] = (float)(num[j] / den);
        }
    free(qr), free(kr), free(phik), free(sc);
}

/* The cpu linear attention op as it was before phi after RoPE and local windows (commit 5ab5c75), frozen here:
 * a window of 0 with phi before RoPE must give its output bit for bit. */
static void legacy_feature_map(float *f, const float *x, int d, orthros_fmap fmap, const float *w, int F)
{
    if (fmap == ORTHROS_FMAP_ELU1) {
        for (int j = 0; j < d; j++) f[j] = x[j] > 0.0f ? x[j] + 1.0f : expf(x[j]);
    } else if (fmap == ORTHROS_FMAP_RELU) {
        for (int j = 0; j < d; j++) f[j] = x[j] > 0.0f ? x[j] : 0.0f;
    } else if (fmap == ORTHROS_FMAP_HEDGEHOG) {
        int half = F / 2;
        float mx = -INFINITY, mn = INFINITY;
        for (int c = 0; c < half; c++) {
            float u = 0.0f;
            for (int j = 0; j < d; j++) u += x[j] * w[(size_t)j * half + c];
            f[c] = u;
            if (u > mx) mx = u;
            if (u < mn) mn = u;
        }
        float sp = 0.0f, sn = 0.0f;
        for (int c = 0; c < half; c++) {
            float u = f[c];
            f[c] = expf(u - mx);
            f[half + c] = expf(mn - u);
            sp += f[c];
            sn += f[half + c];
        }
        for (int c = 0; c < half; c++) {
            f[c] /= sp;
            f[half + c] /= sn;
        }
    }
}

static int legacy_linear_op(orthros_backend *be, void *out, const void *qkv_, const orthros_attn_layer *L,
                            const int *pos0, int B, int n)
{
    const float *qkv = qkv_;
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = (Hq + 2 * Hkv) * d, group = Hq / Hkv;
    int F = L->feature_dim, half = F / 2;
    const orthros_fmap fmap = L->fmap;
    if (L->local_window || L->fmap_after) return orthros_error(ORTHROS_EINVAL, "the legacy op has no window");
    for (int b = 0; b < B; b++) {
        for (int kv = 0; kv < Hkv; kv++) {
            float *S = L->S + ((size_t)b * Hkv + kv) * F * d;
            float *z = L->z + ((size_t)b * Hkv + kv) * F;
            const float *wk = fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_k + (size_t)kv * d * half : NULL;
            float fk[2048] = {0}, fq[2048] = {0};
            for (int i = 0; i < n; i++) {
                const float *row = qkv + ((size_t)b * n + i) * W;
                const float *k = row + (size_t)(Hq + kv) * d, *v = row + (size_t)(Hq + Hkv + kv) * d;
                legacy_feature_map(fk, k, d, fmap, wk, F);
                for (int f = 0; f < F; f++) {
                    z[f] += fk[f];
                    for (int j = 0; j < d; j++) S[(size_t)f * d + j] += fk[f] * v[j];
                }
                for (int g = 0; g < group; g++) {
                    int h = kv * group + g;
                    const float *wq = fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_q + (size_t)h * d * half : NULL;
                    legacy_feature_map(fq, row + (size_t)h * d, d, fmap, wq, F);
                    float num[ORTHROS_MAX_HEAD_DIM] = {0};
                    float den = 0.0f;
                    for (int f = 0; f < F; f++) {
                        den += fq[f] * z[f];
                        for (int j = 0; j < d; j++) num[j] += fq[f] * S[(size_t)f * d + j];
                    }
                    float *o = (float *)out + (((size_t)b * n + i) * Hq + h) * d;
                    for (int j = 0; j < d; j++) o[j] = num[j] / (den + L->eps);
                }
            }
        }
    }
    return 0;
}

/* ---- op-level checks on random inputs ---- */

static void test_linear_op(orthros_backend *be, orthros_fmap fm, int Hq, int Hkv)
{
    int d = 16, n1 = 20, n2 = 17, n = n1 + n2, half = 12;
    int F = fm == ORTHROS_FMAP_HEDGEHOG ? 2 * half : d, W = (Hq + 2 * Hkv) * d;
    float *qkv = malloc(sizeof(float) * (size_t)n * W), *out = malloc(sizeof(float) * (size_t)n * Hq * d);
    float *ref = malloc(sizeof(float) * (size_t)n * Hq * d);
    float *wq = malloc(sizeof(float) * (size_t)Hq * d * half), *wk = malloc(sizeof(float) * (size_t)Hkv * d * half);
    float *S = calloc((size_t)Hkv * F * d, sizeof(float)), *z = calloc((size_t)Hkv * F, sizeof(float));
    tu_random(qkv, (size_t)n * W, 11 + (uint64_t)fm, 1.0f);
    tu_random(wq, (size_t)Hq * d * half, 12, 0.5f);
    tu_random(wk, (size_t)Hkv * d * half, 13, 0.5f);
    orthros_attn_layer L = {.n_heads = Hq, .n_kv_heads = Hkv, .head_dim = d, .S = S, .z = z, .fmap = fm,
                            .feature_dim = F, .fmap_q = wq, .fmap_k = wk, .eps = 1e-6f};
    /* Two calls, so that the state carried between them is exercised. */
    be->attn_linear_prefill(be, out, qkv, &L, (int[]){0}, 1, n1);
    be->attn_linear_prefill(be, out + (size_t)n1 * Hq * d, qkv + (size_t)n1 * W, &L, (int[]){n1}, 1, n2);
    naive_linear(ref, qkv, &L, n);
    double err = tu_max_abs_diff(out, ref, (size_t)n * Hq * d);
    printf("linear op %s Hq %d Hkv %d: max abs err %.3g\n", orthros_fmap_name(fm), Hq, Hkv, err);
    CHECK(err < 1e-4, "linear %s differs from the O(N^2) masked form by %.3g", orthros_fmap_name(fm), err);
    free(qkv), free(out), free(ref), free(wq), free(wk), free(S), free(z);
}

/* The linear formula of a converted model op by op: rope_cache_write then attn_linear_prefill over chunks of
 * `chunk` rows, as the engine runs them (a ring of W + chunk slots, the raw-key ring and q~ rows for phi before
 * RoPE), against naive_linear_window; out [n][Hq][d] is returned for the chunk-size comparison. */
static float *window_op(orthros_backend *be, orthros_fmap fm, int Hq, int Hkv, int after, int win, int n, int chunk,
                        int gated, double *err)
{
    int d = 16, half = 12, F = fm == ORTHROS_FMAP_HEDGEHOG ? 2 * half : d, W = (Hq + 2 * Hkv) * d;
    float *raw = malloc(sizeof(float) * (size_t)n * W), *qkv = malloc(sizeof(float) * (size_t)chunk * W);
    float *out = malloc(sizeof(float) * (size_t)n * Hq * d), *ref = malloc(sizeof(float) * (size_t)n * Hq * d);
    float *wq = malloc(sizeof(float) * (size_t)Hq * d * half), *wk = malloc(sizeof(float) * (size_t)Hkv * d * half);
    float *S = calloc((size_t)Hkv * F * d, sizeof(float)), *z = calloc((size_t)Hkv * F, sizeof(float));
    float gates[64];
    int cap = win > 0 ? (win + chunk < n ? win + chunk : n) : 0;
    float *kc = malloc(sizeof(float) * (size_t)(cap ? cap : 1) * Hkv * d), *vc = malloc(sizeof(float) * (size_t)(cap ? cap : 1) * Hkv * d);
    float *kr = malloc(sizeof(float) * (size_t)(cap ? cap : 1) * Hkv * d), *qr = malloc(sizeof(float) * (size_t)chunk * Hq * d);
    tu_random(raw, (size_t)n * W, 41 + (uint64_t)fm, 1.0f);
    tu_random(wq, (size_t)Hq * d * half, 42, 0.5f);
    tu_random(wk, (size_t)Hkv * d * half, 43, 0.5f);
    for (int h = 0; h < Hq; h++) gates[h] = 0.05f + 0.95f * orthros_uniform(44, (uint64_t)h);
    orthros_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.head_dim = d;
    cfg.rope_theta = 10000.0;
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    orthros_rope_inv_freq(inv, &cfg);
    orthros_rope rope = {Hq, Hkv, d, inv};
    orthros_attn_layer L = {.n_heads = Hq, .n_kv_heads = Hkv, .head_dim = d, .S = S, .z = z, .fmap = fm,
                            .feature_dim = F, .fmap_q = wq, .fmap_k = wk, .eps = 1e-6f, .fmap_after = after,
                            .local_window = win, .window_gate = gated ? gates : NULL};
    if (win > 0) {
        L.k_cache = kc, L.v_cache = vc, L.cap = cap;
        if (!after) L.kraw_cache = kr, L.kraw_cap = cap, L.q_rot = qr;
    }
    int rc = 0;
    for (int c0 = 0; !rc && c0 < n; c0 += chunk) {
        int rows = n - c0 < chunk ? n - c0 : chunk;
        memcpy(qkv, raw + (size_t)c0 * W, sizeof(float) * (size_t)rows * W);
        if (win > 0 || after) rc = be->rope_cache_write(be, qkv, &L, &rope, &c0, 1, rows, after ? 0 : rows);
        if (!rc) rc = be->attn_linear_prefill(be, out + (size_t)c0 * Hq * d, qkv, &L, &c0, 1, rows);
    }
    CHECK(rc == 0, "window op: %s", orthros_last_error());
    naive_linear_window(ref, raw, &L, inv, gated ? gates : NULL, n);
    *err = tu_max_abs_diff(out, ref, (size_t)n * Hq * d);
    free(raw), free(qkv), free(ref), free(wq), free(wk), free(S), free(z), free(kc), free(vc), free(kr), free(qr);
    return out;
}

static void test_window_ops(orthros_backend *be)
{
    static const int wins[] = {0, 1, 3, 63, 64, 65, 150, 400};
    static const struct {
        orthros_fmap fm;
        int Hq, Hkv;
    } gs[] = {{ORTHROS_FMAP_ELU1, 4, 2}, {ORTHROS_FMAP_RELU, 3, 1}, {ORTHROS_FMAP_HEDGEHOG, 4, 4}, {ORTHROS_FMAP_ELU1, 8, 2}};
    int n = 150;
    double worst = 0;
    for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++)
        for (int after = 0; after < 2; after++)
            for (size_t wi = 0; wi < sizeof wins / sizeof *wins; wi++) {
                int win = wins[wi];
                double e1, e7, en;
                float *o1 = window_op(be, gs[gi].fm, gs[gi].Hq, gs[gi].Hkv, after, win, n, 1, 1, &e1);
                float *o7 = window_op(be, gs[gi].fm, gs[gi].Hq, gs[gi].Hkv, after, win, n, 7, 1, &e7);
                float *on = window_op(be, gs[gi].fm, gs[gi].Hq, gs[gi].Hkv, after, win, n, n, 1, &en);
                size_t cnt = (size_t)n * gs[gi].Hq * 16;
                char label[128];
                snprintf(label, sizeof label, "%s Hq %d Hkv %d phi %s window %d", orthros_fmap_name(gs[gi].fm), gs[gi].Hq,
                         gs[gi].Hkv, after ? "after" : "before", win);
                CHECK(e1 < 1e-4 && e7 < 1e-4 && en < 1e-4, "window op %s differs from the O(N^2) form by %.3g / %.3g / %.3g",
                      label, e1, e7, en);
                CHECK(!memcmp(o1, on, sizeof(float) * cnt) && !memcmp(o7, on, sizeof(float) * cnt),
                      "window op %s: chunks of 1, 7 and %d differ", label, n);
                worst = fmax(worst, fmax(e1, fmax(e7, en)));
                free(o1), free(o7), free(on);
            }
    printf("linear formula ops (phi before / after RoPE, windows 0 to 400, gated): max abs err %.3g against the O(N^2) "
           "form, chunks of 1, 7 and %d bit-equal\n", worst, n);
    /* Gamma 1 where a layer has no gates, and the legacy op for a window of 0 before RoPE. */
    double e;
    free(window_op(be, ORTHROS_FMAP_ELU1, 4, 2, 1, 5, 40, 9, 0, &e));
    CHECK(e < 1e-4, "window op without gates differs from the O(N^2) form by %.3g", e);
    for (int fm = 0; fm < 3; fm++) {
        orthros_backend legacy = *be;
        legacy.attn_linear_prefill = legacy_linear_op;
        float *a = window_op(be, (orthros_fmap)fm, 4, 2, 0, 0, 60, 13, 1, &e);
        float *b = window_op(&legacy, (orthros_fmap)fm, 4, 2, 0, 0, 60, 13, 1, &e);
        CHECK(!memcmp(a, b, sizeof(float) * 60 * 4 * 16), "%s: a window of 0 differs from the op before windows",
              orthros_fmap_name(fm));
        free(a), free(b);
    }
}

static void test_full_op(orthros_backend *be, int window, int Hq, int Hkv)
{
    int d = 16, B = 2, n = 9, W = (Hq + 2 * Hkv) * d;
    int pos0[2] = {0, 23};
    int cap = window ? window + n - 1 : 64;
    float *qkv = malloc(sizeof(float) * (size_t)B * n * W), *out = malloc(sizeof(float) * (size_t)B * n * Hq * d);
    float *ref = malloc(sizeof(float) * (size_t)B * n * Hq * d);
    float *kc = malloc(sizeof(float) * (size_t)B * cap * Hkv * d), *vc = malloc(sizeof(float) * (size_t)B * cap * Hkv * d);
    tu_random(qkv, (size_t)B * n * W, 21, 1.5f);
    tu_random(kc, (size_t)B * cap * Hkv * d, 22, 1.5f);
    tu_random(vc, (size_t)B * cap * Hkv * d, 23, 1.0f);
    orthros_attn_layer L = {.n_heads = Hq, .n_kv_heads = Hkv, .head_dim = d, .k_cache = kc, .v_cache = vc, .cap = cap,
                            .window = window};
    be->attn_full_prefill(be, out, qkv, &L, pos0, B, n);
    naive_full(ref, qkv, &L, pos0, B, n);
    double err = tu_max_abs_diff(out, ref, (size_t)B * n * Hq * d);
    printf("full op window %d Hq %d Hkv %d: max abs err %.3g\n", window, Hq, Hkv, err);
    CHECK(err < 1e-5, "full attention (window %d) differs from the dense softmax by %.3g", window, err);
    free(qkv), free(out), free(ref), free(kc), free(vc);
}

static void test_rope_op(orthros_backend *be)
{
    orthros_model_config cfg;
    orthros_preset_config(&cfg, "llama3.2-1b"); /* llama3 scaling on */
    int d = cfg.head_dim, Hq = 2, Hkv = 1, n = 3, W = (Hq + 2 * Hkv) * d, cap = 8192;
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    orthros_rope_inv_freq(inv, &cfg);
    orthros_rope rope = {Hq, Hkv, d, inv};
    float *qkv = malloc(sizeof(float) * (size_t)n * W), *orig = malloc(sizeof(float) * (size_t)n * W);
    float *kc = calloc((size_t)cap * Hkv * d, sizeof(float)), *vc = calloc((size_t)cap * Hkv * d, sizeof(float));
    tu_random(qkv, (size_t)n * W, 31, 1.0f);
    memcpy(orig, qkv, sizeof(float) * (size_t)n * W);
    orthros_attn_layer L = {.n_heads = Hq, .n_kv_heads = Hkv, .head_dim = d, .k_cache = kc, .v_cache = vc, .cap = cap};
    int pos0 = 5000;
    be->rope_cache_write(be, qkv, &L, &rope, &pos0, 1, n, 1); /* row 0 keeps its q un-rotated */
    double err = 0;
    for (int i = 0; i < n; i++) {
        int p = pos0 + i;
        for (int h = 0; h < Hq + Hkv; h++) {
            const float *x = orig + (size_t)i * W + (size_t)h * d;
            const float *got = h < Hq ? qkv + (size_t)i * W + (size_t)h * d : kc + ((size_t)(p % cap) * Hkv) * d;
            for (int j = 0; j < d / 2; j++) {
                double a = (double)(float)((float)p * inv[j]);
                double r1 = x[j] * cos(a) - x[j + d / 2] * sin(a), r2 = x[j + d / 2] * cos(a) + x[j] * sin(a);
                if (h < Hq && i == 0) r1 = x[j], r2 = x[j + d / 2];
                err = fmax(err, fmax(fabs(got[j] - r1), fabs(got[j + d / 2] - r2)));
            }
        }
        err = fmax(err, tu_max_abs_diff(vc + (size_t)(p % cap) * d, orig + (size_t)i * W + (size_t)(Hq + Hkv) * d, (size_t)d));
    }
    printf("rope + cache write: max abs err %.3g\n", err);
    CHECK(err < 1e-5, "rope differs from the direct rotation by %.3g", err);
    free(qkv), free(orig), free(kc), free(vc);
}

/* transformers 5 writes rope settings as one `rope_parameters` object; older versions as top-level rope_theta
 * plus rope_scaling. Both must give the same frequencies. */
static void test_rope_config_layouts(void)
{
    const char *classic = "{\"hidden_size\": 128, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                          "\"intermediate_size\": 64, \"vocab_size\": 32, \"rope_theta\": 500000.0, "
                          "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                          "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}}";
    const char *v5 = "{\"hidden_size\": 128, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                     "\"intermediate_size\": 64, \"vocab_size\": 32, \"rope_parameters\": {\"rope_theta\": 500000.0, "
                     "\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                     "\"original_max_position_embeddings\": 64}}";
    orthros_model_config a = {0}, b = {0};
    CHECK(orthros_config_parse(&a, classic) == 0 && orthros_config_parse(&b, v5) == 0, "parse rope layouts: %s",
          orthros_last_error());
    float fa[32], fb[32];
    orthros_rope_inv_freq(fa, &a);
    orthros_rope_inv_freq(fb, &b);
    CHECK(a.head_dim == 64 && a.rope_llama3 && b.rope_llama3, "rope layouts parsed wrong");
    CHECK(memcmp(fa, fb, sizeof fa) == 0, "rope_parameters and rope_scaling layouts give different frequencies");
    const char *yarn = "{\"hidden_size\": 128, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                       "\"intermediate_size\": 64, \"vocab_size\": 32, \"rope_scaling\": {\"rope_type\": \"yarn\"}}";
    CHECK(orthros_config_parse(&a, yarn) == ORTHROS_EUNSUPPORTED, "an unsupported rope type must be refused");
}

/* ---- model-level checks ---- */

static orthros_backend *cpu;

static int naive_full_op(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, const int *pos0,
                         int B, int n)
{
    naive_full(out, qkv, L, pos0, B, n);
    return 0;
}

/* The naive backend's rope: the cpu's (whose cache the naive full attention reads), after keeping the raw rows and
 * the frequencies, from which the naive linear formula makes its own q~, k~. */
static struct {
    const void *qkv;
    float *raw;
    size_t cap;
    const float *inv_freq;
} stash;

static int naive_rope_op(orthros_backend *be, void *qkv, const orthros_attn_layer *L, const orthros_rope *rope,
                         const int *pos0, int B, int n, int rotate_q_from)
{
    size_t count = (size_t)B * n * (size_t)(L->n_heads + 2 * L->n_kv_heads) * (size_t)L->head_dim;
    if (count > stash.cap) {
        free(stash.raw);
        stash.raw = malloc(sizeof(float) * count);
        stash.cap = count;
    }
    memcpy(stash.raw, qkv, sizeof(float) * count);
    stash.qkv = qkv;
    stash.inv_freq = rope->inv_freq;
    return cpu->rope_cache_write(cpu, qkv, L, rope, pos0, B, n, rotate_q_from);
}

/* Valid only for one sequence prefilled from position 0 in one chunk, which is how it is used below. */
static int naive_linear_op(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, const int *pos0,
                           int B, int n)
{
    if (!L->local_window && !L->fmap_after) {
        naive_linear(out, qkv, L, n);
        return 0;
    }
    if (stash.qkv != qkv || B != 1 || pos0[0] != 0)
        return orthros_error(ORTHROS_EINVAL, "the naive linear formula runs one sequence from 0 after its rope");
    naive_linear_window(out, stash.raw, L, stash.inv_freq, L->window_gate, n);
    return 0;
}

static orthros_backend naive_backend(void)
{
    orthros_backend naive = *cpu;
    naive.attn_full_prefill = naive.attn_full_decode = naive_full_op;
    naive.attn_linear_prefill = naive.attn_linear_decode = naive_linear_op;
    naive.rope_cache_write = naive_rope_op;
    naive.destroy = NULL;
    return naive;
}

static float *run_logits(orthros_backend *be, const char *spec, const orthros_arch_opts *ao, const int32_t *tok, int n,
                         int chunk)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    float *out = NULL;
    if (orthros_model_load(&m, be, spec, ao, 7) || orthros_session_init(&s, m, 1, n, chunk)) goto fail;
    out = malloc(sizeof(float) * (size_t)n * (size_t)orthros_model_get_config(m)->vocab);
    if (orthros_prefill(s, 0, tok, n, out, NULL)) {
        free(out);
        out = NULL;
    }
fail:
    if (!out) fprintf(stderr, "run_logits: %s\n", orthros_last_error());
    orthros_session_free(s);
    orthros_model_free(m);
    return out;
}

static void test_model_against_naive(const int32_t *tok, int n, int V)
{
    orthros_backend naive = naive_backend();
    for (size_t c = 0; c < tu_n_arch_cases; c++) {
        orthros_arch_opts ao = tu_arch_case_opts(&tu_arch_cases[c]);
        float *a = run_logits(cpu, "preset:tiny", &ao, tok, n, n), *b = run_logits(&naive, "preset:tiny", &ao, tok, n, n);
        CHECK(a && b, "%s: run failed", tu_arch_cases[c].label);
        if (a && b) {
            double err = tu_max_abs_diff(a, b, (size_t)n * V);
            printf("model %-18s vs naive attention: max abs logit err %.3g\n", tu_arch_cases[c].label, err);
            CHECK(err < 1e-4, "%s: engine and naive attention differ by %.3g", tu_arch_cases[c].label, err);
        }
        free(a), free(b);
    }
}

static void test_chunk_independence(const int32_t *tok, int n, int V)
{
    for (size_t c = 0; c < tu_n_arch_cases; c++) {
        orthros_arch_opts ao = tu_arch_case_opts(&tu_arch_cases[c]);
        float *whole = run_logits(cpu, "preset:tiny", &ao, tok, n, n);
        int chunks[2] = {1, 7};
        for (int k = 0; k < 2; k++) {
            float *part = run_logits(cpu, "preset:tiny", &ao, tok, n, chunks[k]);
            CHECK(whole && part, "%s: run failed", tu_arch_cases[c].label);
            if (whole && part) {
                double err = tu_max_abs_diff(whole, part, (size_t)n * V);
                CHECK(err <= 1e-6, "%s: chunk %d differs from chunk %d by %.3g", tu_arch_cases[c].label, chunks[k], n, err);
            }
            free(part);
        }
        free(whole);
    }
    printf("chunk sizes 1, 7 and %d agree for %zu schedules\n", n, tu_n_arch_cases);
}

/* Logits of prefill(tok[0]) then decode(tok[1..n)), row by row. */
static float *run_recurrent(const orthros_arch_opts *ao, const int32_t *tok, int n, int V)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    float *out = malloc(sizeof(float) * (size_t)n * V);
    int32_t next;
    int rc = orthros_model_load(&m, cpu, "preset:tiny", ao, 7);
    if (!rc) rc = orthros_session_init(&s, m, 1, n, 0);
    if (!rc) rc = orthros_prefill(s, 0, tok, 1, out, &next);
    for (int i = 1; !rc && i < n; i++) rc = orthros_decode(s, &tok[i], &next, out + (size_t)i * V);
    CHECK(rc == 0, "recurrent run: %s", orthros_last_error());
    orthros_session_free(s);
    orthros_model_free(m);
    return out;
}

static void test_identities(const int32_t *tok, int n, int V)
{
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    /* linear: recurrent decode equals parallel prefill, for each feature map. */
    for (int fm = 0; fm < 3; fm++) {
        ao.arch = "linear";
        ao.fmap = fm;
        float *par = run_logits(cpu, "preset:tiny", &ao, tok, n, n), *rec = run_recurrent(&ao, tok, n, V);
        double err = par && rec ? tu_max_abs_diff(par, rec, (size_t)n * V) : INFINITY;
        printf("linear %s: recurrent decode vs parallel prefill max abs err %.3g\n", orthros_fmap_name(fm), err);
        CHECK(err <= 1e-5, "linear %s: recurrent decode differs from prefill by %.3g", orthros_fmap_name(fm), err);
        free(par), free(rec);
    }
    /* orthros with tail N is the transformer. */
    orthros_arch_opts_default(&ao);
    ao.arch = "transformer";
    float *tr = run_logits(cpu, "preset:tiny", &ao, tok, n, 7);
    ao.arch = "orthros";
    ao.tail = n;
    float *orth = run_logits(cpu, "preset:tiny", &ao, tok, n, 7);
    double err = tr && orth ? tu_max_abs_diff(tr, orth, (size_t)n * V) : INFINITY;
    CHECK(err == 0.0, "orthros with tail = N differs from transformer by %.3g", err);
    /* ... and with tail 1 it is not (the test would be vacuous otherwise). */
    ao.tail = 1;
    float *orth1 = run_logits(cpu, "preset:tiny", &ao, tok, n, 7);
    err = tr && orth1 ? tu_max_abs_diff(tr, orth1, (size_t)n * V) : 0;
    CHECK(err > 1e-3, "orthros tail 1 equals transformer: the linear phase did not run");
    free(tr), free(orth), free(orth1);
}

/* Logits of prefill(tok[0 .. n1)) then decode(tok[n1 .. n)), row by row. */
static float *run_prefill_decode(const char *spec, const orthros_arch_opts *ao, const int32_t *tok, int n, int n1, int V)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    float *out = malloc(sizeof(float) * (size_t)n * V);
    int32_t next;
    int rc = orthros_model_load(&m, cpu, spec, ao, 7);
    if (!rc) rc = orthros_session_init(&s, m, 1, n, 0);
    if (!rc) rc = orthros_prefill(s, 0, tok, n1, out, &next);
    for (int i = n1; !rc && i < n; i++) rc = orthros_decode(s, &tok[i], &next, out + (size_t)i * V);
    CHECK(rc == 0, "prefill + decode: %s", orthros_last_error());
    orthros_session_free(s);
    orthros_model_free(m);
    if (rc) {
        free(out);
        out = NULL;
    }
    return out;
}

/* Whole models under the linear formula of a converted model, on a checkpoint with hedgehog maps and random window
 * gates: linear, orthros (tails 1 and 4) and hybrid, phi before and after RoPE, windows 0, 1, 3, 63, 64, 65 and
 * longer than the prompt, the three feature maps in turn. Each against the naive form (prefill, and prefill then
 * decode), chunks of 1, 7 and N bit-equal, a window covering the prompt equal to the transformer bit for bit, a
 * window of 0 before RoPE equal to the op before windows bit for bit. */
static void test_window_models(void)
{
    char *dir = tu_tempdir();
    orthros_model_config cfg;
    orthros_preset_config(&cfg, "tiny");
    CHECK(dir && tu_write_checkpoint_gated(dir, &cfg, 9, ORTHROS_DTYPE_F32, cfg.head_dim / 2, TU_GATES_RANDOM) == 0,
          "write a gated checkpoint");
    enum { N = 80, N1 = 68 };
    int V = cfg.vocab;
    int32_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (int32_t)(orthros_uniform(123, (uint64_t)i) * V);
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = "transformer";
    float *tr = run_logits(cpu, dir, &ao, tok, N, N);
    orthros_backend naive = naive_backend(), legacy = *cpu;
    legacy.attn_linear_prefill = legacy.attn_linear_decode = legacy_linear_op;
    legacy.destroy = NULL;
    static const struct {
        const char *arch;
        int tail;
    } archs[] = {{"linear", -1}, {"orthros", 1}, {"orthros", 4}, {"hybrid", -1}};
    static const int wins[] = {0, 1, 3, 63, 64, 65, N, N + 20};
    double worst = 0, worst_dec = 0;
    int configs = 0;
    for (size_t a = 0; a < sizeof archs / sizeof *archs; a++)
        for (int after = 0; after < 2; after++)
            for (size_t wi = 0; wi < sizeof wins / sizeof *wins; wi++) {
                int win = wins[wi];
                orthros_arch_opts_default(&ao);
                ao.arch = archs[a].arch;
                ao.tail = archs[a].tail;
                ao.hybrid_every = 2;
                ao.fmap = (int)((wi + a) % 3);
                ao.fmap_rope = after;
                ao.local_window = win;
                char label[96];
                snprintf(label, sizeof label, "%s tail %d %s phi %s window %d", archs[a].arch, archs[a].tail,
                         orthros_fmap_name((orthros_fmap)ao.fmap), after ? "after" : "before", win);
                float *whole = run_logits(cpu, dir, &ao, tok, N, N), *c1 = run_logits(cpu, dir, &ao, tok, N, 1);
                float *c7 = run_logits(cpu, dir, &ao, tok, N, 7), *nv = run_logits(&naive, dir, &ao, tok, N, N);
                CHECK(whole && c1 && c7 && nv, "%s: a run failed", label);
                if (whole && c1 && c7 && nv) {
                    double err = tu_max_abs_diff(whole, nv, (size_t)N * V);
                    worst = fmax(worst, err);
                    CHECK(err < 1e-4, "%s: the engine differs from the naive form by %.3g", label, err);
                    CHECK(!memcmp(whole, c1, sizeof(float) * N * V) && !memcmp(whole, c7, sizeof(float) * N * V),
                          "%s: chunks of 1, 7 and %d give different logits", label, N);
                    if (win >= N)
                        CHECK(tr && !memcmp(whole, tr, sizeof(float) * N * V),
                              "%s: a window covering the prompt differs from the transformer", label);
                    else
                        CHECK(tr && tu_max_abs_diff(whole, tr, (size_t)N * V) > 1e-3,
                              "%s: equals the transformer, the linear term did not run", label);
                }
                if (win == 0 && !after) {
                    float *old = run_logits(&legacy, dir, &ao, tok, N, 7);
                    CHECK(whole && old && !memcmp(whole, old, sizeof(float) * N * V),
                          "%s: differs from the linear attention op before windows", label);
                    free(old);
                }
                /* Prefill then decode: the naive form of the same positions (an orthros tail grows by the decoded
                 * tokens: they run full attention). */
                float *dec = run_prefill_decode(dir, &ao, tok, N, N1, V);
                if (archs[a].tail > 0) ao.tail = archs[a].tail + (N - N1);
                float *nd = ao.tail == archs[a].tail ? NULL : run_logits(&naive, dir, &ao, tok, N, N);
                const float *want = nd ? nd : nv;
                if (dec && want) {
                    double err = tu_max_abs_diff(dec, want, (size_t)N * V);
                    worst_dec = fmax(worst_dec, err);
                    CHECK(err < 1e-4, "%s: prefill %d + decode differs from the naive form by %.3g", label, N1, err);
                }
                free(whole), free(c1), free(c7), free(nv), free(dec), free(nd);
                configs++;
            }
    printf("linear formula models (%d configurations, gated checkpoint): max abs logit err %.3g against the naive form, "
           "%.3g after decode; chunks 1, 7, %d bit-equal; windows >= %d equal the transformer\n",
           configs, worst, worst_dec, N, N);
    free(tr);
    CHECK(tu_remove_tree(dir) == 0, "cleanup");
    free(dir);
}

/* In a 1-layer model the tail's full attention reads the same k~, v (functions of the embeddings alone) as the
 * transformer's, so the last position's logits, and the first generated token, are the same. */
static void test_one_layer_first_token(const int32_t *tok, int n)
{
    char *dir = tu_tempdir();
    orthros_model_config cfg;
    orthros_preset_config(&cfg, "tiny");
    cfg.n_layers = 1;
    CHECK(dir && tu_write_checkpoint(dir, &cfg, 5, ORTHROS_DTYPE_F32, 0) == 0, "write 1-layer checkpoint");
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = "transformer";
    float *tr = run_logits(cpu, dir, &ao, tok, n, 7);
    ao.arch = "orthros";
    float *orth = run_logits(cpu, dir, &ao, tok, n, 7);
    ao.arch = "linear";
    float *lin = run_logits(cpu, dir, &ao, tok, n, 7);
    if (tr && orth && lin) {
        int V = cfg.vocab;
        const float *a = tr + (size_t)(n - 1) * V, *b = orth + (size_t)(n - 1) * V;
        int ia = 0, ib = 0;
        for (int j = 1; j < V; j++) {
            if (a[j] > a[ia]) ia = j;
            if (b[j] > b[ib]) ib = j;
        }
        double err = tu_max_abs_diff(a, b, (size_t)V);
        printf("1-layer: first token transformer %d orthros %d, last-row logit diff %.3g\n", ia, ib, err);
        CHECK(ia == ib, "first generated token differs: transformer %d, orthros %d", ia, ib);
        CHECK(err < 1e-5, "1-layer last-position logits differ by %.3g", err);
        CHECK(tu_max_abs_diff(tr, orth, (size_t)(n - 1) * V) > 1e-3, "earlier positions should be linear-phase");
    } else {
        CHECK(0, "1-layer runs failed");
    }
    free(tr), free(orth), free(lin);
    CHECK(tu_remove_tree(dir) == 0, "cleanup");
    free(dir);
}

/* A batch of 3 sequences decoded together gives each sequence's batch-1 logits. */
static void test_batched_decode(const int32_t *tok, int n, int V)
{
    static const char *const archs[] = {"transformer", "orthros", "linear", "swa"};
    for (int a = 0; a < 4; a++) {
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        ao.arch = archs[a];
        ao.window = 4;
        orthros_model *m = NULL;
        orthros_session *sb = NULL, *s1 = NULL;
        int B = 3, steps = 4, rc = orthros_model_load(&m, cpu, "preset:tiny", &ao, 7);
        if (!rc) rc = orthros_session_init(&sb, m, B, n + steps, 5);
        if (!rc) rc = orthros_session_init(&s1, m, 1, n + steps, 5);
        float *lb = malloc(sizeof(float) * (size_t)B * V), *l1 = malloc(sizeof(float) * (size_t)V);
        double err = 0;
        int32_t cur[3], nxt[3];
        for (int b = 0; !rc && b < B; b++) rc = orthros_prefill(sb, b, tok + b, n - b, NULL, &cur[b]);
        int32_t start[3];
        memcpy(start, cur, sizeof start);
        for (int st = 0; !rc && st < steps; st++) {
            rc = orthros_decode(sb, cur, nxt, lb);
            memcpy(cur, nxt, sizeof cur);
        }
        for (int b = 0; !rc && b < B; b++) {
            int32_t t, o;
            rc = orthros_session_reset(s1);
            if (!rc) rc = orthros_prefill(s1, 0, tok + b, n - b, NULL, &t);
            for (int st = 0; !rc && st < steps; st++) {
                rc = orthros_decode(s1, &t, &o, l1);
                t = o;
            }
            if (!rc) err = fmax(err, tu_max_abs_diff(lb + (size_t)b * V, l1, (size_t)V));
        }
        CHECK(rc == 0, "%s batched decode: %s", archs[a], orthros_last_error());
        printf("%s: batch-3 decode vs batch-1 max abs logit err %.3g\n", archs[a], err);
        CHECK(err <= 1e-6, "%s: batched decode differs by %.3g", archs[a], err);
        free(lb), free(l1);
        orthros_session_free(sb);
        orthros_session_free(s1);
        orthros_model_free(m);
    }
}

int main(void)
{
    if (orthros_backend_cpu_create(&cpu)) return 1;
    for (int fm = 0; fm < 3; fm++) {
        test_linear_op(cpu, (orthros_fmap)fm, 4, 2);
        test_linear_op(cpu, (orthros_fmap)fm, 4, 1);
    }
    test_linear_op(cpu, ORTHROS_FMAP_ELU1, 3, 3);
    test_full_op(cpu, 0, 4, 2);
    test_full_op(cpu, 5, 4, 2);
    test_full_op(cpu, 3, 8, 1);
    test_full_op(cpu, 0, 2, 2);
    test_rope_op(cpu);
    test_rope_config_layouts();
    test_window_ops(cpu);

    int n = 40, V = 256;
    int32_t tok[40];
    for (int i = 0; i < n; i++) tok[i] = (int32_t)(orthros_uniform(99, (uint64_t)i) * V);
    test_model_against_naive(tok, n, V);
    test_chunk_independence(tok, n, V);
    test_identities(tok, n, V);
    test_one_layer_first_token(tok, n);
    test_batched_decode(tok, 20, V);
    test_window_models();
    free(stash.raw);
    orthros_backend_free(cpu);
    return tu_finish();
}
