/* Every attention kind of DESIGN section 2 on the cpu backend, against naive implementations written here:
 * the O(N^2) masked form of linear attention, a dense windowed softmax, a direct RoPE; and at model level the
 * identities the spec implies (recurrent decode = parallel prefill for linear, orthros with tail N = transformer,
 * a 1-layer orthros model's first generated token = transformer's, chunk-size independence, batched decode =
 * single-sequence decode). */
#include "orthros.h"
#include "backend.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- naive references, in double ---- */

static void naive_phi(double *f, const float *x, int d, orthros_fmap fm, const float *w, int F)
{
    if (fm == ORTHROS_FMAP_ELU1) {
        for (int j = 0; j < d; j++) f[j] = x[j] > 0 ? x[j] + 1.0 : exp(x[j]);
    } else if (fm == ORTHROS_FMAP_RELU) {
        for (int j = 0; j < d; j++) f[j] = x[j] > 0 ? x[j] : 0.0;
    } else {
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

/* o_t = sum_{s<=t} (phi(q_t).phi(k_s)) v_s / (sum_{s<=t} phi(q_t).phi(k_s) + eps), rows of one sequence from 0. */
static void naive_linear(float *out, const float *qkv, const orthros_attn_layer *L, int n)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = (Hq + 2 * Hkv) * d, F = L->feature_dim;
    int half = F / 2;
    double fq[2048], fk[2048];
    for (int t = 0; t < n; t++)
        for (int h = 0; h < Hq; h++) {
            int kv = h / (Hq / Hkv);
            const float *wq = L->fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_q + (size_t)h * d * half : NULL;
            const float *wk = L->fmap == ORTHROS_FMAP_HEDGEHOG ? (const float *)L->fmap_k + (size_t)kv * d * half : NULL;
            naive_phi(fq, qkv + (size_t)t * W + (size_t)h * d, d, L->fmap, wq, F);
            double num[ORTHROS_MAX_HEAD_DIM] = {0}, den = 0;
            for (int s = 0; s <= t; s++) {
                naive_phi(fk, qkv + (size_t)s * W + (size_t)(Hq + kv) * d, d, L->fmap, wk, F);
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
    be->attn_linear_prefill(be, out, qkv, &L, 1, n1);
    be->attn_linear_prefill(be, out + (size_t)n1 * Hq * d, qkv + (size_t)n1 * W, &L, 1, n2);
    naive_linear(ref, qkv, &L, n);
    double err = tu_max_abs_diff(out, ref, (size_t)n * Hq * d);
    printf("linear op %s Hq %d Hkv %d: max abs err %.3g\n", orthros_fmap_name(fm), Hq, Hkv, err);
    CHECK(err < 1e-4, "linear %s differs from the O(N^2) masked form by %.3g", orthros_fmap_name(fm), err);
    free(qkv), free(out), free(ref), free(wq), free(wk), free(S), free(z);
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
    orthros_model_config a, b;
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

/* Valid only for one sequence prefilled from position 0 in one chunk, which is how it is used below. */
static int naive_linear_op(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, int B, int n)
{
    naive_linear(out, qkv, L, n);
    return 0;
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
    orthros_backend naive = *cpu;
    naive.attn_full_prefill = naive.attn_full_decode = naive_full_op;
    naive.attn_linear_prefill = naive.attn_linear_decode = naive_linear_op;
    naive.destroy = NULL;
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
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
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

    int n = 40, V = 256;
    int32_t tok[40];
    for (int i = 0; i < n; i++) tok[i] = (int32_t)(orthros_uniform(99, (uint64_t)i) * V);
    test_model_against_naive(tok, n, V);
    test_chunk_independence(tok, n, V);
    test_identities(tok, n, V);
    test_one_layer_first_token(tok, n);
    test_batched_decode(tok, 20, V);
    orthros_backend_free(cpu);
    return tu_finish();
}
