/* Every op of the cuda backend against the cpu backend (the fp32 reference) on fresh random inputs of
 * awkward sizes: n = 1 and tails that no tile divides, B = 1 and 3, GQA 1:1, 4:1 and 8:1, head dims 64, 128
 * and the odd 32 and 80, window on and off, each feature map, linear state carried across calls; the linear formula
 * of a converted model (phi after RoPE, local windows 1 to beyond the prompt) on every linear prefill version.
 *
 * Inputs are drawn on the host in fp32 and rounded to bf16 before both backends see them, so the two
 * compute the same function of the same values. Outputs are poisoned (NaN) before each run; NaN never
 * passes. Per case: max abs error, max abs error over max |ref| ("max rel"), and NMSE = |got - ref|^2 /
 * |ref|^2. Tolerances: outputs rounded to bf16 (or computed from bf16-rounded intermediates, as the linear
 * state is) NMSE < 1e-4, i.e. relative norm error under 1e-2; fp32 outputs from bf16 inputs with fp32
 * accumulation (logits) NMSE < 1e-8; exact ops (fill, upload, embed, argmax) must match exactly.
 * Seed: ORTHROS_TEST_SEED, else the clock (printed, so a failure can be replayed). ORTHROS_TEST_QUICK skips
 * the long cases (for compute-sanitizer); ORTHROS_TEST_ONLY=SECTION runs one section (ops, full, linear,
 * prefill5, read, prefill6, decode6, linear5, decode7, prefill7, readprobe, linear7, window, gemv, decodebound,
 * gemvnorm, gemvearly, gemvchain, decode8, attno, qkvattn, mlp;
 * windowpass: the window pass alone, also part of window). Kernel versions not yet run on a GPU when written come
 * last. Exit 77 without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_full_decode.h"
#include "attn_full_prefill.h"
#include "attn_linear_prefill.h"
#include "attn_linear_window.h"
#include "backend.h"
#include "gemv.h"
#include "head8.h"
#include "head8_ref.h"
#include "mem_read.h"
#include "rmsnorm.h"
#include "step_probe.h"

#define TOL_BF16 1e-4
#define TOL_BF16_2R 6e-4 /* two bf16 roundings in a row, each of which may flip: 2 steps an element, 1.6% rms */
#define TOL_F32 1e-8
/* The host's loops over a tensor (random fill, poison, bf16 download, the comparison) run on the cpu's threads past
 * this many elements (the decode sections' caches hold up to 67M; those sections take most of the program's time). */
#define HOST_PAR_MIN ((size_t)1 << 18)

static orthros_backend *cpu, *gpu;
static orthros_backend *gpu_gemv; /* a cuda backend created with ORTHROS_GEMV=1 (section gemv) */
static uint64_t seed_base;
static int n_fail, n_pass, quick;

static float bf16_round(float x) { return orthros_bf16_to_f32(orthros_f32_to_bf16(x)); }

static void die(const char *what)
{
    fprintf(stderr, "FATAL: %s: %s\n", what, orthros_last_error());
    exit(1);
}

/* One tensor on both backends: act (fp32 on cpu, bf16 on cuda) or fp32 on both. */
typedef struct {
    float *c;
    void *g;
    size_t n;
    int f32;
} pair;

static pair pair_new(size_t n, int f32)
{
    pair t = {NULL, NULL, n, f32};
    t.c = cpu->alloc(cpu, n * sizeof(float));
    t.g = gpu->alloc(gpu, n * (f32 ? sizeof(float) : gpu->act_size));
    if (!t.c || !t.g) die("alloc");
    return t;
}

static void pair_free(pair *t)
{
    cpu->free(cpu, t->c);
    gpu->free(gpu, t->g);
}

static void pair_set(pair *t, const float *h)
{
    memcpy(t->c, h, t->n * sizeof(float));
    if (t->f32) {
        if (gpu->sync(gpu)) die("sync");
        /* The backend's stream does not wait for the legacy stream: finish the copy before returning. */
        if (cudaMemcpy(t->g, h, t->n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaDeviceSynchronize() != cudaSuccess)
            die("cudaMemcpy");
    } else if (gpu->upload(gpu, t->g, 0, h, ORTHROS_DTYPE_F32, t->n)) {
        die("upload");
    }
}

/* Uniform in [bias - scale, bias + scale], rounded to bf16 unless the tensor is fp32. */
static void pair_random(pair *t, uint64_t salt, float scale, float bias)
{
    float *h = malloc(t->n * sizeof(float));
    if (!h) die("malloc");
#pragma omp parallel for schedule(static) if (t->n > HOST_PAR_MIN)
    for (size_t i = 0; i < t->n; i++) {
        float v = bias + (2.0f * orthros_uniform(seed_base ^ (salt * 0x100000001B3ull), i) - 1.0f) * scale;
        h[i] = t->f32 ? v : bf16_round(v);
    }
    pair_set(t, h);
    free(h);
}

static void pair_poison(pair *t)
{
#pragma omp parallel for schedule(static) if (t->n > HOST_PAR_MIN)
    for (size_t i = 0; i < t->n; i++) t->c[i] = NAN;
    if (t->f32) {
        if (gpu->sync(gpu) || cudaMemset(t->g, 0xff, t->n * sizeof(float)) != cudaSuccess ||
            cudaDeviceSynchronize() != cudaSuccess)
            die("poison");
    } else if (gpu->fill(gpu, t->g, t->n, NAN)) {
        die("fill");
    }
}

static float *pair_get_gpu(const pair *t)
{
    float *h = malloc(t->n * sizeof(float));
    if (gpu->sync(gpu)) die("sync");
    if (t->f32) {
        if (gpu->download_f32(gpu, h, t->g, t->n)) die("download");
    } else {
        uint16_t *raw = malloc(t->n * 2);
        if (!raw || cudaMemcpy(raw, t->g, t->n * 2, cudaMemcpyDeviceToHost) != cudaSuccess) die("cudaMemcpy");
#pragma omp parallel for schedule(static) if (t->n > HOST_PAR_MIN)
        for (size_t i = 0; i < t->n; i++) h[i] = orthros_bf16_to_f32(raw[i]);
        free(raw);
    }
    return h;
}

static void report(const char *name, const float *ref, const float *got, size_t n, double tol)
{
    double se = 0, sr = 0, max_abs = 0, max_ref = 0;
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : se, sr) reduction(max : max_abs, max_ref) \
    reduction(| : bad) if (n > HOST_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) || isnan(ref[i]) || isinf(got[i])) {
            bad = 1;
            continue;
        }
        double e = (double)got[i] - ref[i];
        se += e * e;
        sr += (double)ref[i] * ref[i];
        if (fabs(e) > max_abs) max_abs = fabs(e);
        if (fabs(ref[i]) > max_ref) max_ref = fabs(ref[i]);
    }
    double nmse = sr > 0 ? se / sr : se;
    int ok = !bad && (tol == 0 ? se == 0 : nmse < tol);
    printf("%-4s %-58s max_abs %.3e  max_rel %.3e  nmse %.3e  (tol %.0e)%s\n", ok ? "ok" : "FAIL", name, max_abs,
           max_ref > 0 ? max_abs / max_ref : max_abs, nmse, tol, bad ? "  NaN/unwritten" : "");
    if (ok)
        n_pass++;
    else
        n_fail++;
}

/* The cpu's copy set to the gpu's values (both continue from the gpu's). */
static void pair_from_gpu(pair *t)
{
    float *h = pair_get_gpu(t);
    pair_set(t, h);
    free(h);
}

static void check(const char *name, const pair *t, double tol)
{
    float *g = pair_get_gpu(t);
    report(name, t->c, g, t->n, tol);
    free(g);
}

static void op_rc(int rc, const char *name)
{
    if (rc) {
        printf("FAIL %-58s returned %d: %s\n", name, rc, orthros_last_error());
        n_fail++;
    }
}

/* A call that must refuse its arguments: rc ORTHROS_EINVAL passes, anything else fails (what: the call, its arguments) */
static void expect_einval(int rc, const char *what)
{
    if (rc != ORTHROS_EINVAL) {
        printf("FAIL %s: not refused (rc %d, not ORTHROS_EINVAL)\n", what, rc);
        n_fail++;
    } else {
        n_pass++;
    }
}

/* ---- element-wise and GEMM ops ---- */

static void test_fill_upload(void)
{
    char name[128];
    size_t n = 100003;
    pair t = pair_new(n, 0);
    pair_poison(&t);
    uint64_t seed = seed_base + 17;
    op_rc(cpu->fill_random(cpu, t.c, n, seed, 0.37f), "fill_random cpu");
    op_rc(gpu->fill_random(gpu, t.g, n, seed, 0.37f), "fill_random gpu");
    for (size_t i = 0; i < n; i++) t.c[i] = bf16_round(t.c[i]);
    check("fill_random n=100003 (exact after bf16 rounding)", &t, 0);
    pair_poison(&t);
    cpu->fill(cpu, t.c, n, 1.5f);
    op_rc(gpu->fill(gpu, t.g, n, 1.5f), "fill");
    check("fill", &t, 0);

    float *f = malloc(n * sizeof(float));
    uint16_t *h16 = malloc(n * 2), *b16 = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        f[i] = (2.0f * orthros_uniform(seed, i) - 1.0f) * 3.0f;
        b16[i] = orthros_f32_to_bf16(f[i]);
        /* an fp16 with the same value as the bf16, built by hand: small values stay in range */
        float v = orthros_bf16_to_f32(b16[i]);
        h16[i] = 0;
        if (v != 0.0f) {
            uint32_t u;
            memcpy(&u, &v, 4);
            int e = (int)((u >> 23) & 0xff) - 127 + 15;
            if (e > 0 && e < 31) h16[i] = (uint16_t)(((u >> 16) & 0x8000u) | ((uint32_t)e << 10) | ((u >> 13) & 0x3ffu));
        }
    }
    const char *names[3] = {"upload F32", "upload BF16", "upload F16"};
    for (int k = 0; k < 3; k++) {
        pair_poison(&t);
        size_t off = 5;
        const void *src = k == 0 ? (const void *)f : k == 1 ? (const void *)b16 : (const void *)h16;
        orthros_dtype dt = k == 0 ? ORTHROS_DTYPE_F32 : k == 1 ? ORTHROS_DTYPE_BF16 : ORTHROS_DTYPE_F16;
        op_rc(cpu->upload(cpu, t.c, off, src, dt, n - off), names[k]);
        op_rc(gpu->upload(gpu, t.g, off, src, dt, n - off), names[k]);
        cpu->fill(cpu, t.c, off, 0.0f);
        op_rc(gpu->fill(gpu, t.g, off, 0.0f), "fill");
        for (size_t i = 0; i < n; i++) t.c[i] = bf16_round(t.c[i]);
        snprintf(name, sizeof name, "%s at offset 5 (exact)", names[k]);
        check(name, &t, 0);
    }
    free(f);
    free(h16);
    free(b16);
    pair_free(&t);
}

static void test_embed(int n, int D)
{
    int vocab = 1000;
    pair table = pair_new((size_t)vocab * D, 0), x = pair_new((size_t)n * D, 0);
    pair_random(&table, 1, 1.0f, 0.0f);
    pair_poison(&x);
    int32_t *tok = malloc(n * sizeof(int32_t));
    for (int i = 0; i < n; i++) tok[i] = (int32_t)(orthros_uniform(seed_base, 1000 + i) * vocab);
    op_rc(cpu->embed(cpu, x.c, tok, table.c, n, D), "embed cpu");
    op_rc(gpu->embed(gpu, x.g, tok, table.g, n, D), "embed gpu");
    char name[128];
    snprintf(name, sizeof name, "embed n=%d D=%d (exact)", n, D);
    check(name, &x, 0);
    free(tok);
    pair_free(&table);
    pair_free(&x);
}

static void test_rmsnorm(int n, int D, int fused)
{
    pair x = pair_new((size_t)n * D, 0), dl = pair_new((size_t)n * D, 0), w = pair_new(D, 0),
         out = pair_new((size_t)n * D, 0);
    pair_random(&x, 2, 2.0f, 0.0f);
    pair_random(&dl, 3, 1.0f, 0.0f);
    pair_random(&w, 4, 0.5f, 1.0f);
    pair_poison(&out);
    char name[128];
    if (fused) {
        op_rc(cpu->add_rmsnorm(cpu, out.c, x.c, dl.c, w.c, n, D, 1e-5f), "add_rmsnorm cpu");
        op_rc(gpu->add_rmsnorm(gpu, out.g, x.g, dl.g, w.g, n, D, 1e-5f), "add_rmsnorm gpu");
        snprintf(name, sizeof name, "add_rmsnorm n=%d D=%d: out", n, D);
        check(name, &out, TOL_BF16);
        snprintf(name, sizeof name, "add_rmsnorm n=%d D=%d: resid", n, D);
        check(name, &x, TOL_BF16);
    } else {
        op_rc(cpu->rmsnorm(cpu, out.c, x.c, w.c, n, D, 1e-5f), "rmsnorm cpu");
        op_rc(gpu->rmsnorm(gpu, out.g, x.g, w.g, n, D, 1e-5f), "rmsnorm gpu");
        snprintf(name, sizeof name, "rmsnorm n=%d D=%d", n, D);
        check(name, &out, TOL_BF16);
    }
    pair_free(&x);
    pair_free(&dl);
    pair_free(&w);
    pair_free(&out);
}

static void test_gemm(int n, int M, int K, int logits)
{
    pair x = pair_new((size_t)n * K, 0), W = pair_new((size_t)M * K, 0), out = pair_new((size_t)n * M, logits);
    pair_random(&x, 5, 1.0f, 0.0f);
    pair_random(&W, 6, 1.0f / sqrtf((float)K), 0.0f);
    pair_poison(&out);
    char name[128];
    if (logits) {
        op_rc(cpu->logits(cpu, out.c, x.c, W.c, n, M, K), "logits cpu");
        op_rc(gpu->logits(gpu, out.g, x.g, W.g, n, M, K), "logits gpu");
        snprintf(name, sizeof name, "logits n=%d V=%d D=%d (fp32 out)", n, M, K);
        check(name, &out, TOL_F32);
    } else {
        op_rc(cpu->gemm(cpu, out.c, x.c, W.c, n, M, K), "gemm cpu");
        op_rc(gpu->gemm(gpu, out.g, x.g, W.g, n, M, K), "gemm gpu");
        snprintf(name, sizeof name, "gemm n=%d M=%d K=%d", n, M, K);
        check(name, &out, TOL_BF16);
    }
    pair_free(&x);
    pair_free(&W);
    pair_free(&out);
}

/* gemm and logits through a backend made with ORTHROS_GEMM_LT=1 (gemm_lt.h: cuBLASLt, an algorithm tuned per shape on
 * its first call) against the cpu: batch 1-16 (the tuned path) at awkward shapes, batch 37 (cublasGemmEx still), and
 * a shape met first inside a stream capture (the heuristic's first algorithm, no tuning), replayed. */
static void gemm_lt_suite(void)
{
    orthros_backend *plain = gpu, *lt = NULL;
    setenv("ORTHROS_GEMM_LT", "1", 1);
    if (orthros_backend_cuda_create(&lt)) die("cuda backend with ORTHROS_GEMM_LT=1");
    unsetenv("ORTHROS_GEMM_LT");
    gpu = lt;
    test_gemm(1, 96, 64, 0);
    test_gemm(1, 2048, 2048, 0);
    test_gemm(3, 1000, 200, 0);
    test_gemm(16, 3072, 2048, 0);
    test_gemm(16, 2048, 8192, 0);
    test_gemm(9, 1003, 2056, 0);
    test_gemm(37, 1000, 200, 0);
    test_gemm(1, 1003, 256, 1);
    test_gemm(16, 50000, 512, 1);
    test_gemm(1, 96, 64, 0); /* the tuned shape again */
    {
        const int n = 5, M = 777, K = 320;
        pair x = pair_new((size_t)n * K, 0), W = pair_new((size_t)M * K, 0), out = pair_new((size_t)n * M, 0);
        pair_random(&x, 8, 1.0f, 0.0f);
        pair_random(&W, 9, 1.0f / sqrtf((float)K), 0.0f);
        pair_poison(&out);
        op_rc(cpu->gemm(cpu, out.c, x.c, W.c, n, M, K), "gemm cpu");
        void *graph = NULL;
        op_rc(gpu->graph_begin(gpu), "graph begin");
        int rc = gpu->gemm(gpu, out.g, x.g, W.g, n, M, K);
        int erc = gpu->graph_end(gpu, &graph);
        op_rc(rc ? rc : erc, "gemm lt inside a capture");
        op_rc(gpu->graph_launch(gpu, graph), "graph launch");
        op_rc(gpu->sync(gpu), "sync");
        check("gemm lt n=5 M=777 K=320, first met inside a capture", &out, TOL_BF16);
        gpu->graph_free(gpu, graph);
        pair_free(&x);
        pair_free(&W);
        pair_free(&out);
    }
    gpu = plain;
    lt->destroy(lt);
}

static void test_swiglu(int n, int F)
{
    pair gu = pair_new((size_t)n * 2 * F, 0), out = pair_new((size_t)n * F, 0);
    pair_random(&gu, 7, 4.0f, 0.0f);
    pair_poison(&out);
    op_rc(cpu->swiglu(cpu, out.c, gu.c, n, F), "swiglu cpu");
    op_rc(gpu->swiglu(gpu, out.g, gu.g, n, F), "swiglu gpu");
    char name[128];
    snprintf(name, sizeof name, "swiglu n=%d F=%d", n, F);
    check(name, &out, TOL_BF16);
    pair_free(&gu);
    pair_free(&out);
}

static void test_argmax(int n, int V)
{
    pair l = pair_new((size_t)n * V, 1);
    float *h = malloc((size_t)n * V * sizeof(float));
    for (size_t i = 0; i < (size_t)n * V; i++) h[i] = (float)(int)(orthros_uniform(seed_base, 77 + i) * 1000.0f);
    /* row 1: a tie at the maximum (lowest index must win); row 2: NaNs, which lose to everything */
    if (n > 1) {
        h[(size_t)V + 5] = 5000.0f;
        h[(size_t)V + V - 3] = 5000.0f;
    }
    if (n > 2) {
        h[(size_t)2 * V] = NAN;
        h[(size_t)2 * V + 9] = NAN;
    }
    pair_set(&l, h);
    int32_t *ic = malloc(n * sizeof(int32_t)), *ig = malloc(n * sizeof(int32_t));
    op_rc(cpu->argmax(cpu, ic, l.c, n, V), "argmax cpu");
    op_rc(gpu->argmax(gpu, ig, l.g, n, V), "argmax gpu");
    float *fc = malloc(n * sizeof(float)), *fg = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) {
        fc[i] = (float)ic[i];
        fg[i] = (float)ig[i];
    }
    char name[128];
    snprintf(name, sizeof name, "argmax n=%d V=%d with ties and NaN (exact)", n, V);
    report(name, fc, fg, n, 0);
    free(h);
    free(ic);
    free(ig);
    free(fc);
    free(fg);
    pair_free(&l);
}

/* ---- attention ---- */

typedef struct {
    int Hq, Hkv, d;
} geom;

static orthros_attn_layer layer_for(geom g)
{
    orthros_attn_layer L;
    memset(&L, 0, sizeof L);
    L.n_heads = g.Hq;
    L.n_kv_heads = g.Hkv;
    L.head_dim = g.d;
    return L;
}

static void inv_freq_for(float *inv, int d)
{
    orthros_model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.head_dim = d;
    cfg.rope_theta = 500000.0;
    cfg.rope_llama3 = 1;
    cfg.rope_factor = 32.0;
    cfg.rope_low_freq_factor = 1.0;
    cfg.rope_high_freq_factor = 4.0;
    cfg.rope_orig_max_pos = 8192;
    orthros_rope_inv_freq(inv, &cfg);
}

/* rope_cache_write on random qkv into random caches, then (unless rope_only) full attention of the chunk. */
static void test_full(geom g, int B, int n, int cap, int window, const int *pos0, int rotate_from, int decode_op)
{
    int W = (g.Hq + 2 * g.Hkv) * g.d;
    pair qkv = pair_new((size_t)B * n * W, 0), kc = pair_new((size_t)B * cap * g.Hkv * g.d, 0),
         vc = pair_new((size_t)B * cap * g.Hkv * g.d, 0), out = pair_new((size_t)B * n * g.Hq * g.d, 0);
    pair_random(&qkv, 11, 1.5f, 0.0f);
    pair_random(&kc, 12, 1.5f, 0.0f);
    pair_random(&vc, 13, 1.0f, 0.0f);
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    inv_freq_for(inv, g.d);
    orthros_rope rope = {g.Hq, g.Hkv, g.d, inv};
    orthros_attn_layer Lc = layer_for(g), Lg = layer_for(g);
    Lc.k_cache = kc.c;
    Lc.v_cache = vc.c;
    Lg.k_cache = kc.g;
    Lg.v_cache = vc.g;
    Lc.cap = Lg.cap = cap;
    Lc.window = Lg.window = window;
    char tag[160], name[200];
    snprintf(tag, sizeof tag, "B=%d n=%d Hq=%d Hkv=%d d=%d cap=%d win=%d pos0[0]=%d", B, n, g.Hq, g.Hkv, g.d, cap,
             window, pos0[0]);
    op_rc(cpu->rope_cache_write(cpu, qkv.c, &Lc, &rope, pos0, B, n, rotate_from), "rope cpu");
    op_rc(gpu->rope_cache_write(gpu, qkv.g, &Lg, &rope, pos0, B, n, rotate_from), "rope gpu");
    snprintf(name, sizeof name, "rope qkv %s", tag);
    check(name, &qkv, TOL_BF16);
    snprintf(name, sizeof name, "rope k_cache %s", tag);
    check(name, &kc, TOL_BF16);
    snprintf(name, sizeof name, "rope v_cache %s", tag);
    check(name, &vc, 0);
    /* Both backends continue from the gpu's (bf16) rotated values, so attention is tested on equal inputs. */
    float *h = pair_get_gpu(&qkv);
    pair_set(&qkv, h);
    free(h);
    h = pair_get_gpu(&kc);
    pair_set(&kc, h);
    free(h);
    pair_poison(&out);
    int rc_c = (decode_op ? cpu->attn_full_decode : cpu->attn_full_prefill)(cpu, out.c, qkv.c, &Lc, pos0, B, n);
    int rc_g = (decode_op ? gpu->attn_full_decode : gpu->attn_full_prefill)(gpu, out.g, qkv.g, &Lg, pos0, B, n);
    op_rc(rc_c, "attn cpu");
    op_rc(rc_g, "attn gpu");
    snprintf(name, sizeof name, "attn_full_%s %s", decode_op ? "decode" : "prefill", tag);
    check(name, &out, TOL_BF16);
    pair_free(&qkv);
    pair_free(&kc);
    pair_free(&vc);
    pair_free(&out);
}

/* The checks before a fused op's calls: with must_take, that the call takes the one-launch path (`taken`; else it is
 * only printed in the case's tag), and that the backend has the op at all (a FAIL naming it where it has none). Returns
 * whether the op can be called. */
static int fused_op_ready(const char *op, const char *path, const char *tag, int must_take, int taken, int has_op)
{
    if (must_take) {
        char name[260];
        snprintf(name, sizeof name, "%s takes the %s path %s", op, path, tag);
        float z = 0.0f, w = taken ? 0.0f : 1.0f;
        report(name, &z, &w, 1, 0);
    }
    if (!has_op) {
        printf("FAIL %s: the cuda backend has none (ORTHROS_DECODE_CHAIN=1 in the environment?)\n", op);
        n_fail++;
    }
    return has_op;
}

/* The cpu's and the gpu's layers of geometry g over the caches kc, vc (cap slots), and the gpu's decode attention
 * parameters of a batch of B at positions pos0, one query row a sequence (for the fused ops' plan queries). */
static orthros_attn_full_decode_params decode_layers(geom g, int B, int cap, const int *pos0, const pair *kc,
                                                     const pair *vc, orthros_attn_layer *Lc, orthros_attn_layer *Lg)
{
    *Lc = layer_for(g), *Lg = layer_for(g);
    Lc->k_cache = kc->c, Lc->v_cache = vc->c, Lg->k_cache = kc->g, Lg->v_cache = vc->g;
    Lc->cap = Lg->cap = cap;
    int keys = 0;
    for (int b = 0; b < B; b++) keys = pos0[b] + 1 > keys ? pos0[b] + 1 : keys;
    orthros_attn_full_decode_params pp;
    memset(&pp, 0, sizeof pp);
    pp.B = B, pp.n = 1, pp.Hq = g.Hq, pp.Hkv = g.Hkv, pp.d = g.d, pp.cap = cap, pp.max_keys = keys;
    pp.num_sms = gpu->info.sm_count, pp.k_cache = kc->g, pp.v_cache = vc->g;
    return pp;
}

/* The decode step's attention with O (backend.h attn_decode_o; cuda: decode v8 with the O product in its clusters):
 * the gpu's op against the cpu's attn_full_decode then gemm_add, the attention's output and the residual, twice from
 * the residual the first call left (the counters must be back at 0). must_fuse: the call must take v8's fused path
 * (orthros_attn_full_decode_o_supported); else it is printed. */
static void test_attn_o(geom g, int B, int cap, const int *pos0, int M, int must_fuse)
{
    const int W = (g.Hq + 2 * g.Hkv) * g.d, Hd = g.Hq * g.d;
    pair qkv = pair_new((size_t)B * W, 0), kc = pair_new((size_t)B * cap * g.Hkv * g.d, 0),
         vc = pair_new((size_t)B * cap * g.Hkv * g.d, 0), out = pair_new((size_t)B * Hd, 0),
         x = pair_new((size_t)B * M, 0), tmp = pair_new((size_t)B * M, 0), wo = pair_new((size_t)M * Hd, 0);
    pair_random(&qkv, 21, 1.5f, 0.0f);
    pair_random(&kc, 22, 1.5f, 0.0f);
    pair_random(&vc, 23, 1.0f, 0.0f);
    pair_random(&x, 24, 1.0f, 0.0f);
    pair_random(&wo, 25, 1.0f / sqrtf((float)Hd), 0.0f);
    orthros_attn_layer Lc, Lg;
    orthros_attn_full_decode_params pp = decode_layers(g, B, cap, pos0, &kc, &vc, &Lc, &Lg);
    pp.o_w = wo.g, pp.o_resid = x.g, pp.o_M = M;
    const int fused = orthros_attn_full_decode_o_supported(&pp);
    char tag[160], name[220];
    snprintf(tag, sizeof tag, "B=%d Hq=%d Hkv=%d d=%d pos0[0]=%d M=%d (%s)", B, g.Hq, g.Hkv, g.d, pos0[0], M,
             fused ? "fused" : "apart");
    if (fused_op_ready("attn_decode_o", "fused", tag, must_fuse, fused, gpu->attn_decode_o != NULL)) {
        for (int call = 0; call < 2; call++) {
            pair_poison(&out);
            op_rc(cpu->attn_full_decode(cpu, out.c, qkv.c, &Lc, pos0, B, 1), "attn_decode_o cpu attention");
            op_rc(cpu->gemm_add(cpu, x.c, tmp.c, out.c, wo.c, B, M, Hd), "attn_decode_o cpu gemm_add");
            op_rc(gpu->attn_decode_o(gpu, x.g, tmp.g, out.g, qkv.g, &Lg, pos0, B, wo.g, M), "attn_decode_o gpu");
            snprintf(name, sizeof name, "attn_decode_o attention %s call %d", tag, call);
            check(name, &out, TOL_BF16);
            snprintf(name, sizeof name, "attn_decode_o residual %s call %d", tag, call);
            check(name, &x, TOL_BF16);
            pair_from_gpu(&x); /* both continue from the gpu's residual */
        }
    }
    pair *all[] = {&qkv, &kc, &vc, &out, &x, &tmp, &wo};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

static void attn_o_suite(void)
{
    /* the 1B and 8B layers at batch 1 and 4K (the fused path's shapes), then other groups, batches, widths of O
     * (odd, fewer rows than a cluster has blocks) and a short cache; the calls v8 does not take run apart */
    const geom l1 = {32, 8, 64}, l8 = {32, 8, 128};
    int p1[1] = {4095}, p2[2] = {5000, 17}, p3[3] = {3000, 1, 2999}, ps[1] = {40}, p4[4] = {100, 4000, 7, 2500};
    test_attn_o(l1, 1, 4096, p1, 2048, 1);
    test_attn_o(l8, 1, 4096, p1, 4096, 1);
    test_attn_o(l1, 2, 5001, p2, 1000, 0);
    test_attn_o((geom){16, 2, 128}, 1, 3001, p3, 520, 0);
    test_attn_o((geom){6, 3, 64}, 3, 3001, p3, 333, 0);
    test_attn_o((geom){48, 16, 64}, 1, 4096, p1, 7, 0);
    test_attn_o(l1, 1, 41, ps, 2048, 0);
    test_attn_o(l8, 4, 4001, p4, 4096, 0);
}

/* The decode step's q/k/v projection and attention in one launch (backend.h norm_qkv_rope_attn; cuda: decode v8 with
 * each cluster forming its kv head's q, key and value first): the gpu's op against the cpu's norm_qkv_rope then
 * attn_full_decode, the attention's output, qkv and both caches, twice (the second call on the first's caches).
 * must_fuse: the call must take v8's fused path (orthros_attn_full_decode_qkv_supported); else it is printed. */
static void test_qkv_attn(geom g, int B, int cap, const int *pos0, int K, int must_fuse)
{
    const int W = (g.Hq + 2 * g.Hkv) * g.d, Hd = g.Hq * g.d;
    const float eps = 1e-5f;
    pair x = pair_new((size_t)B * K, 0), nw = pair_new(K, 0), wq = pair_new((size_t)W * K, 0),
         xn = pair_new((size_t)B * K, 0), qkv = pair_new((size_t)B * W, 0),
         kc = pair_new((size_t)B * cap * g.Hkv * g.d, 0), vc = pair_new((size_t)B * cap * g.Hkv * g.d, 0),
         out = pair_new((size_t)B * Hd, 0);
    pair_random(&x, 31, 2.0f, 0.0f);
    pair_random(&nw, 32, 0.5f, 1.0f);
    pair_random(&wq, 33, 2.0f / sqrtf((float)K), 0.0f);
    pair_random(&kc, 34, 1.5f, 0.0f);
    pair_random(&vc, 35, 1.0f, 0.0f);
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    inv_freq_for(inv, g.d);
    orthros_rope rope = {g.Hq, g.Hkv, g.d, inv};
    orthros_attn_layer Lc, Lg;
    orthros_attn_full_decode_params pp = decode_layers(g, B, cap, pos0, &kc, &vc, &Lc, &Lg);
    pp.qkv = qkv.g;
    pp.qkv_w = wq.g, pp.qkv_x = x.g, pp.qkv_norm_w = nw.g, pp.qkv_K = K, pp.qkv_eps = eps;
    const int fused = orthros_attn_full_decode_qkv_supported(&pp);
    char tag[160], name[220];
    snprintf(tag, sizeof tag, "B=%d Hq=%d Hkv=%d d=%d K=%d pos0[0]=%d (%s)", B, g.Hq, g.Hkv, g.d, K, pos0[0],
             fused ? "fused" : "apart");
    if (fused_op_ready("norm_qkv_rope_attn", "fused", tag, must_fuse, fused, gpu->norm_qkv_rope_attn != NULL)) {
        for (int call = 0; call < 2; call++) {
            pair_poison(&out);
            op_rc(cpu->norm_qkv_rope(cpu, qkv.c, xn.c, x.c, nw.c, wq.c, &Lc, &rope, pos0, B, K, eps),
                  "norm_qkv_rope_attn cpu norm_qkv_rope");
            op_rc(cpu->attn_full_decode(cpu, out.c, qkv.c, &Lc, pos0, B, 1), "norm_qkv_rope_attn cpu attention");
            op_rc(gpu->norm_qkv_rope_attn(gpu, out.g, qkv.g, xn.g, x.g, nw.g, wq.g, &Lg, &rope, pos0, B, K, eps),
                  "norm_qkv_rope_attn gpu");
            snprintf(name, sizeof name, "qkv_attn attention %s call %d", tag, call);
            check(name, &out, TOL_BF16);
            snprintf(name, sizeof name, "qkv_attn qkv %s call %d", tag, call);
            check(name, &qkv, TOL_BF16);
            snprintf(name, sizeof name, "qkv_attn k_cache %s call %d", tag, call);
            check(name, &kc, TOL_BF16);
            snprintf(name, sizeof name, "qkv_attn v_cache %s call %d", tag, call);
            check(name, &vc, TOL_BF16);
            pair_from_gpu(&kc); /* the second call from the gpu's caches on both */
            pair_from_gpu(&vc);
        }
    }
    pair *all[] = {&x, &nw, &wq, &xn, &qkv, &kc, &vc, &out};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

static void qkv_attn_suite(void)
{
    /* the 1B and 8B layers at batch 1 and 4K (the fused path's shapes), a batch of 2 and one of 4 with ragged
     * positions, a group of 3 (a block's rows not a multiple of 16), then calls the clusters do not take (a short
     * cache; two kv heads; a K that is not a multiple of 1024), which run the two ops */
    const geom l1 = {32, 8, 64}, l8 = {32, 8, 128};
    int p1[1] = {4095}, p2[2] = {5000, 17}, p4[4] = {100, 4000, 7, 2500}, ps[1] = {40}, p3[1] = {3000};
    test_qkv_attn(l1, 1, 4096, p1, 2048, 1);
    test_qkv_attn(l8, 1, 4096, p1, 4096, 1);
    test_qkv_attn(l1, 2, 5001, p2, 2048, 1);
    test_qkv_attn(l8, 4, 4001, p4, 4096, 1);
    test_qkv_attn((geom){48, 16, 64}, 1, 4096, p1, 2048, 1);
    test_qkv_attn(l1, 1, 41, ps, 2048, 0);
    test_qkv_attn((geom){16, 2, 128}, 1, 3001, p3, 512, 0);
    test_qkv_attn(l1, 1, 4096, p1, 768, 0);
}

/* The decode step's MLP in one launch (backend.h norm_mlp_add; cuda: gemv.cu's ORTHROS_GEMV_MLP): the gpu's op against
 * the cpu's norm_gemm_swiglu then gemm_add, three calls (the accumulator and the ticket must be back at 0 after each):
 * the second from the residual the first left, the third from that same residual again (the same bits as the second:
 * the fixed-point sums do not depend on which block adds first). must_fuse: the call must take the one-launch path
 * (orthros_gemv_supported); else it is printed. */
static void test_mlp(int n, int F, int D, int must_fuse)
{
    const float eps = 1e-5f;
    pair x = pair_new((size_t)n * D, 0), w = pair_new(D, 0), Wgu = pair_new((size_t)2 * F * D, 0),
         Wd = pair_new((size_t)D * F, 0), xn = pair_new((size_t)n * D, 0), gu = pair_new((size_t)n * 2 * F, 0),
         act = pair_new((size_t)n * F, 0), tmp = pair_new((size_t)n * D, 0);
    pair_random(&x, 61, 2.0f, 0.0f);
    pair_random(&w, 62, 0.5f, 1.0f);
    pair_random(&Wgu, 63, 2.0f / sqrtf((float)D), 0.0f);
    pair_random(&Wd, 64, 1.0f / sqrtf((float)F), 0.0f);
    orthros_gemv_params p;
    memset(&p, 0, sizeof p);
    p.out = x.g, p.x = x.g, p.norm_w = w.g, p.eps = eps, p.W = Wgu.g, p.W_down = Wd.g, p.n = n, p.M = 2 * F, p.K = D;
    p.epilogue = ORTHROS_GEMV_MLP, p.num_sms = gpu->info.sm_count;
    const int fused = orthros_gemv_supported(&p);
    char tag[160], name[220], plan[160] = "";
    orthros_gemv_describe(&p, plan, sizeof plan);
    snprintf(tag, sizeof tag, "n=%d F=%d D=%d (%s)", n, F, D, fused ? plan : "apart");
    if (fused_op_ready("norm_mlp_add", "one-launch", tag, must_fuse, fused, gpu->norm_mlp_add != NULL)) {
        float *start = NULL, *second = NULL;
        for (int call = 0; call < 3; call++) {
            if (call == 2) pair_set(&x, start); /* the third from the second's input */
            op_rc(cpu->norm_gemm_swiglu(cpu, act.c, xn.c, gu.c, x.c, w.c, Wgu.c, n, F, D, eps), "norm_mlp_add cpu swiglu");
            op_rc(cpu->gemm_add(cpu, x.c, tmp.c, act.c, Wd.c, n, D, F), "norm_mlp_add cpu gemm_add");
            op_rc(gpu->norm_mlp_add(gpu, x.g, xn.g, gu.g, act.g, tmp.g, w.g, Wgu.g, Wd.g, n, F, D, eps), "norm_mlp_add gpu");
            snprintf(name, sizeof name, "norm_mlp_add residual %s call %d", tag, call);
            check(name, &x, TOL_BF16);
            float *h = pair_get_gpu(&x);
            if (call == 1) second = h;
            else if (call == 2) {
                size_t same = 0;
                for (size_t i = 0; i < x.n; i++) same += memcmp(&h[i], &second[i], sizeof(float)) == 0;
                snprintf(name, sizeof name, "norm_mlp_add the same bits from the same residual %s", tag);
                float a = 0.0f, b = (float)(x.n - same);
                report(name, &a, &b, 1, 0);
            }
            if (call == 0) {
                if (!(start = malloc(x.n * sizeof(float)))) die("norm_mlp_add alloc");
                memcpy(start, h, x.n * sizeof(float));
            }
            /* the next call continues from the gpu's residual */
            pair_set(&x, call == 0 ? start : h);
            if (call != 1) free(h);
        }
        free(start);
        free(second);
    }
    pair *all[] = {&x, &w, &Wgu, &Wd, &xn, &gu, &act, &tmp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

static void mlp_suite(void)
{
    /* the 1B and 8B MLPs at batch 1 (the one-launch path's shapes), batches 2-4, a width past the 64 rows a warp
     * round covers (D 1000: not a multiple of 64), fewer units than blocks (F 96), then calls the kernel does not
     * take (F not a multiple of 32, batch 5) through the two ops */
    test_mlp(1, 8192, 2048, 1);
    test_mlp(1, 14336, 4096, 1);
    test_mlp(2, 8192, 2048, 1);
    test_mlp(3, 1024, 1000, 1);
    test_mlp(4, 96, 520, 1);
    if (!quick) test_mlp(4, 14336, 4096, 1);
    test_mlp(1, 1000, 512, 0);
    test_mlp(5, 256, 256, 0);
}

/* Prefill v5's tile edges (and v7's, 192 rows per block at d 64): 128 rows per block, 64 per consumer
 * warpgroup, 128-key tiles aligned to the block's
 * last key (so the first tile is partial, with negative key coordinates, unless the keys are a multiple of 128),
 * causal masking on the diagonal tile only. Chunks around multiples of 64 and 128, from position 0 and against
 * a longer cache (pos0 > 0, and a second sequence at another position), GQA 1:1, 4:1, 8:1 and 3:1 (a group that
 * does not divide the 128 rows), both head dims; n = 1 needs 32 heads per kv head to reach the prefill kernel
 * (16 rows or fewer go to decode). The cache holds exactly the chunk's keys in some cases (cap = pos0 + n). */
static void prefill_v5_edges(void)
{
    geom gs[] = {{4, 4, 64}, {8, 2, 64}, {16, 2, 64}, {12, 4, 64}, {4, 4, 128}, {8, 2, 128}, {16, 2, 128}, {12, 4, 128}};
    int ns[] = {1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 257, 385, 1000};
    int ng = (int)(sizeof gs / sizeof gs[0]), nn = (int)(sizeof ns / sizeof ns[0]);
    for (int gi = 0; gi < ng; gi++)
        for (int ni = 0; ni < nn; ni++) {
            int n = ns[ni];
            if (quick && n == 1000) continue;
            int pa[2] = {0, 0}, pb[2] = {200, 37};
            test_full(gs[gi], 2, n, n, 0, pa, 0, 0);
            test_full(gs[gi], 2, n, 200 + n + 3, 0, pb, 0, 0);
        }
    /* Chunks of a chunked prefill with GQA groups of 2, 5, 6 and 7 (v1-v4's tests cover 1, 3, 4, 8, 16):
     * three sequences at different positions of a longer cache, n not a multiple of 64. */
    geom odd[] = {{4, 2, 128}, {10, 2, 64}, {12, 2, 128}, {14, 2, 64}};
    int pe[3] = {4096, 1000, 7};
    for (int gi = 0; gi < 4; gi++) {
        test_full(odd[gi], 3, 333, 4500, 0, pe, 0, 0);
        test_full(odd[gi], 3, 64, 4200, 0, pe, 0, 0);
    }
    geom wide[] = {{32, 1, 64}, {32, 1, 128}};
    int pc[2] = {0, 0}, pd[2] = {129, 700};
    for (int gi = 0; gi < 2; gi++) {
        test_full(wide[gi], 2, 1, 1, 0, pc, 0, 0);
        test_full(wide[gi], 2, 1, 701, 0, pd, 0, 0);
        test_full(wide[gi], 2, 5, 705, 0, pd, 0, 0);
        test_full(wide[gi], 2, 63, 763, 0, pd, 0, 0);
    }
}

/* Prefill v6: sliding windows over ring caches, sized as the engine sizes them (cap = window + chunk - 1, so
 * position p sits at slot p % cap and a key tile may wrap), for windows smaller than, equal to and larger than
 * the chunk; chunks that are the first of a prompt, a middle one long after the ring wrapped, and a short tail;
 * three sequences at different positions; rings smaller than one 128-key tile (every tile wraps); a cache that
 * holds exactly the keys read. GQA 1, 2, 3, 4 and 8, both head dims. */
static void prefill_v6_window(void)
{
    geom gs[] = {{4, 4, 64}, {8, 4, 128}, {12, 4, 64}, {16, 4, 128}, {32, 4, 64}, {16, 2, 128}, {8, 1, 64}};
    struct {
        int window, chunk, n, p[3];
    } cs[] = {
        {100, 300, 300, {0, 300, 2100}},    /* window < chunk */
        {300, 300, 300, {2400, 600, 0}},    /* window = chunk */
        {700, 300, 300, {3000, 900, 300}},  /* window > chunk */
        {700, 300, 77, {5003, 301, 0}},     /* a tail shorter than the chunk */
        {1000, 256, 256, {7936, 1024, 0}},  /* tile-aligned chunk and positions */
        {16, 20, 20, {400, 20, 0}},         /* a ring of 35 slots: every tile wraps */
        {50, 200, 129, {999, 200, 3}},
    };
    int ng = (int)(sizeof gs / sizeof gs[0]), nc = (int)(sizeof cs / sizeof cs[0]);
    for (int gi = 0; gi < ng; gi++)
        for (int ci = 0; ci < nc; ci++) {
            if (quick && ci >= 3 && gi % 2) continue;
            int cap = cs[ci].window + cs[ci].chunk - 1;
            test_full(gs[gi], 3, cs[ci].n, cap, cs[ci].window, cs[ci].p, 0, 0);
        }
    /* A cache that holds exactly the keys of the chunk (no wrap, not a multiple of the tile). */
    int pf[1] = {900};
    test_full(gs[1], 1, 211, 311, 101, pf, 0, 0);
    test_full(gs[0], 1, 211, 311, 101, pf, 0, 0);
}

/* Prefill versions first .. last on the tile-edge shapes, then back to the default. A version this build
 * cannot run (v5 or v6 without sm_90a code) is reported as skipped. */
static void prefill_versions(int first, int last)
{
    geom edge[] = {{4, 4, 64}, {2, 2, 128}, {16, 1, 128}, {16, 1, 64}, {32, 1, 64}, {8, 2, 64}};
    for (int v = first; v <= last; v++) {
        int rc = orthros_attn_full_prefill_set_version(v);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("SKIP prefill kernel version %d: %s\n", v, orthros_last_error());
            continue;
        }
        if (rc) die("prefill version");
        printf("prefill kernel version %d\n", v);
        for (int i = 0; i < 6; i++) {
            int pa[3] = {0, 0, 0}, pb[3] = {700, 129, 3}, pc[1] = {1000};
            test_full(edge[i], 1, 300, 300, 0, pa, 0, 0);
            test_full(edge[i], 3, 130, 900, 0, pb, 0, 0);
            test_full(edge[i], 3, 161, 300, 97, pb, 0, 0);
            test_full(edge[i], 1, 1, 1001, 0, pc, 0, 0);
            test_full(edge[i], 1, 3, 1003, 0, pc, 0, 0);
        }
        if (v == 5 || v == 7) prefill_v5_edges();
        if (v >= 6) prefill_v6_window();
    }
    if (orthros_attn_full_prefill_set_version(0)) die("prefill version");
}

static void full_suite(void)
{
    geom gs[] = {{4, 4, 64}, {8, 2, 128}, {16, 2, 64}, {8, 1, 128}, {4, 1, 80}, {6, 3, 32}, {32, 8, 128}};
    int ng = (int)(sizeof gs / sizeof gs[0]);
    for (int gi = 0; gi < ng; gi++) {
        geom g = gs[gi];
        /* first chunk of a prompt, tail chunk, odd lengths */
        int p0[3] = {0, 0, 0};
        test_full(g, 1, 1, 64, 0, p0, 0, 0);
        test_full(g, 1, 77, 128, 0, p0, 0, 0);
        int p1[3] = {130, 5, 61};
        test_full(g, 3, 37, 256, 0, p1, 0, 0);
        test_full(g, 3, 37, 256, 0, p1, 20, 0); /* orthros: only rows >= 20 rotated/used by full */
        /* sliding window over a ring cache that has wrapped */
        int p2[3] = {500, 371, 90};
        test_full(g, 3, 45, 200, 150, p2, 0, 0);
        /* decode: n = 1 against a long cache, sequences of different lengths; also a small n (tail) */
        int p3[3] = {4999, 3000, 17};
        test_full(g, 3, 1, 5000, 0, p3, 0, 1);
        test_full(g, 3, 1, 5000, 300, p3, 0, 1);
        int p4[1] = {2047};
        test_full(g, 1, 2, 4096, 0, p4, 0, 0);
    }
    /* The prefill kernel's tile edges: 128 (query, head) rows per block and 32 per warp, so with GQA 1:1 a
     * block holds 128 queries, with 16:1 only 8; chunks not a multiple of either, windows that start inside a
     * key tile, ring caches that have wrapped, and n = 1 with 32 rows per kv head (too many for decode). */
    /* The kept prefill versions up to the default (they differ in tile shapes); those past the default, not
     * yet run on hardware when written, go last in main (prefill_new_versions), so that a hang there leaves
     * every other result printed. */
    prefill_versions(1, ORTHROS_ATTN_PREFILL_PORTABLE_DEFAULT);
    /* The decode kernel's kept versions up to 5 (v3 without, v4 with the L2 prefetch hint, v5 with the merge
     * fused into the split kernel), then back to the default. v5: every head geometry, GQA 1:1 to 16:1, B up to 3
     * (one ticket counter per (b, kv head)), n > 1 rows per query, a window, and one split (a short cache). v6,
     * not yet run on a GPU when written, goes last in main (decode_v6). */
    for (int v = 3; v <= 5; v++) {
        if (orthros_attn_full_decode_set_version(v)) die("decode version");
        printf("decode kernel version %d\n", v);
        int p3[3] = {4999, 3000, 17};
        test_full(gs[1], 3, 1, 5000, 0, p3, 0, 1);
        test_full(gs[0], 3, 1, 5000, 300, p3, 0, 1);
        if (v == 5) {
            for (int gi = 0; gi < ng; gi++) {
                test_full(gs[gi], 3, 1, 5000, 0, p3, 0, 1);
                test_full(gs[gi], 2, 2, 5001, 0, p3, 0, 1);
                int p5[1] = {40};
                test_full(gs[gi], 1, 1, 41, 0, p5, 0, 1);
            }
        }
    }
    if (orthros_attn_full_decode_set_version(0)) die("decode version");
    if (quick) return;
    /* long prefill chunk against a long cache, one head geometry per mma head dim */
    int p5[1] = {1500};
    geom big[] = {{8, 2, 64}, {8, 2, 128}};
    for (int i = 0; i < 2; i++) test_full(big[i], 1, 600, 2200, 0, p5, 0, 0);
    int p6[1] = {20000};
    geom dec[] = {{32, 8, 128}, {32, 8, 64}};
    for (int i = 0; i < 2; i++) test_full(dec[i], 1, 1, 20001, 0, p6, 0, 1);
}

static void test_linear(geom g, orthros_fmap fmap, int F, int B, int n1, int n2, int ndec)
{
    int W = (g.Hq + 2 * g.Hkv) * g.d, half = F / 2;
    int ntot = n1 > n2 ? n1 : n2;
    pair qkv = pair_new((size_t)B * ntot * W, 0), out = pair_new((size_t)B * ntot * g.Hq * g.d, 0);
    pair S = pair_new((size_t)B * g.Hkv * F * g.d, 1), z = pair_new((size_t)B * g.Hkv * F, 1);
    pair fq = pair_new(fmap == ORTHROS_FMAP_HEDGEHOG ? (size_t)g.Hq * g.d * half : 1, 0);
    pair fk = pair_new(fmap == ORTHROS_FMAP_HEDGEHOG ? (size_t)g.Hkv * g.d * half : 1, 0);
    pair_random(&fq, 21, 1.0f / sqrtf((float)g.d), 0.0f);
    pair_random(&fk, 22, 1.0f / sqrtf((float)g.d), 0.0f);
    float *zero = calloc(S.n, sizeof(float));
    pair_set(&S, zero);
    pair_set(&z, zero);
    free(zero);
    orthros_attn_layer Lc = layer_for(g), Lg = layer_for(g);
    Lc.S = S.c;
    Lc.z = z.c;
    Lg.S = S.g;
    Lg.z = z.g;
    Lc.fmap = Lg.fmap = fmap;
    Lc.feature_dim = Lg.feature_dim = F;
    Lc.fmap_q = fq.c;
    Lc.fmap_k = fk.c;
    Lg.fmap_q = fq.g;
    Lg.fmap_k = fk.g;
    Lc.eps = Lg.eps = 1e-6f;
    char tag[160], name[220];
    snprintf(tag, sizeof tag, "%s F=%d B=%d Hq=%d Hkv=%d d=%d", orthros_fmap_name(fmap), F, B, g.Hq, g.Hkv, g.d);
    int steps[3] = {n1, n2, 0}, pos[3] = {0, 0, 0};
    for (int call = 0; call < 2 + ndec; call++) {
        int n = call < 2 ? steps[call] : 1, decode = call >= 2;
        if (n <= 0) continue;
        /* fresh q, k, v for each call; relu gets a positive bias so that denominators stay away from 0 */
        pair_random(&qkv, 30 + call, 1.0f, fmap == ORTHROS_FMAP_RELU ? 0.3f : 0.0f);
        pair_poison(&out);
        int rc_c = (decode ? cpu->attn_linear_decode : cpu->attn_linear_prefill)(cpu, out.c, qkv.c, &Lc, pos, B, n);
        int rc_g = (decode ? gpu->attn_linear_decode : gpu->attn_linear_prefill)(gpu, out.g, qkv.g, &Lg, pos, B, n);
        for (int b = 0; b < B; b++) pos[b] += n;
        op_rc(rc_c, "linear cpu");
        op_rc(rc_g, "linear gpu");
        pair o = out;
        o.n = (size_t)B * n * g.Hq * g.d;
        snprintf(name, sizeof name, "linear_%s call %d n=%d %s", decode ? "decode" : "prefill", call, n, tag);
        check(name, &o, TOL_BF16);
    }
    snprintf(name, sizeof name, "linear state S after all calls %s", tag);
    check(name, &S, TOL_BF16);
    snprintf(name, sizeof name, "linear state z after all calls %s", tag);
    check(name, &z, TOL_BF16);
    pair_free(&qkv);
    pair_free(&out);
    pair_free(&S);
    pair_free(&z);
    pair_free(&fq);
    pair_free(&fk);
}

/* Linear prefill versions first .. last (the chunked path), then back to the default. */
static void linear_suite(int first, int last)
{
    geom gs[] = {{4, 4, 64}, {8, 2, 128}, {16, 2, 64}, {4, 1, 80}, {6, 3, 32}, {6, 2, 64}, {6, 2, 128}, {4, 4, 128}};
    int ng = (int)(sizeof gs / sizeof gs[0]);
    /* The kept versions of the chunked prefill (4 maps elu1 / relu inside the chunk kernels, 5 walks segments
     * with the state in registers); chunks of 64 with tails of 6, 2, 8, 35 and 0 rows, GQA groups of 1, 2, 3, 4
     * and 8 (a group of 3 leaves the second query tile of chunk_out's last pair empty, and v5's last head pair
     * one head), state carried over calls of different lengths (v5: segments that start inside the state); at
     * head dim 128 groups of 4, 3 (v5's last pair of one head) and 1, and a long sequence of many segments. */
    for (int v = first; v <= last; v++) {
        int rc = orthros_attn_linear_prefill_set_version(v);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("SKIP linear prefill version %d: %s\n", v, orthros_last_error());
            continue;
        }
        if (rc) die("linear prefill version");
        printf("linear prefill version %d\n", v);
        for (int gi = 0; gi < ng; gi++) {
            geom g = gs[gi];
            test_linear(g, ORTHROS_FMAP_ELU1, g.d, 1, 1, 70, 2);
            test_linear(g, ORTHROS_FMAP_ELU1, g.d, 3, 130, 45, 1);
            test_linear(g, ORTHROS_FMAP_RELU, g.d, 3, 200, 64, 1);
            test_linear(g, ORTHROS_FMAP_HEDGEHOG, g.d, 1, 99, 1, 1);    /* F = d: chunked kernels */
            test_linear(g, ORTHROS_FMAP_HEDGEHOG, 40, 3, 33, 70, 1);    /* F = 40: the recurrent fallback */
        }
        if (quick) continue;
        /* long enough for several spans of the chunked path */
        geom gl = {8, 2, 64};
        test_linear(gl, ORTHROS_FMAP_ELU1, 64, 1, 9000, 300, 1);
        test_linear(gl, ORTHROS_FMAP_RELU, 64, 2, 8300, 0, 0);
        test_linear(gl, ORTHROS_FMAP_HEDGEHOG, 64, 3, 3000, 0, 0);
        geom gl128 = {8, 2, 128};
        test_linear(gl128, ORTHROS_FMAP_ELU1, 128, 1, 9000, 300, 1);
    }
    if (orthros_attn_linear_prefill_set_version(0)) die("linear prefill version");
}

/* The linear formula of a converted model (docs/converted-models.md) as the engine runs it: rope_cache_write (k~ and v
 * into a ring of W + chunk slots, the un-rotated k into the raw-key ring and every row's q~ into q_rot before RoPE, q
 * and k rotated in place after), then linear attention with a local window W: the lagging key stream (the call's
 * rows and the ring before them) in the linear kernels, their denominators, and the window pass
 * (attn_linear_window.cu). Calls of n1 and n2 rows then ndec decode steps, B sequences starting at positions start[b]:
 * the rings are filled beforehand with the same random history on both backends (positions before start[b]), the
 * state starts at 0. Both backends continue from the gpu's rotated values (bf16), so the attention is tested on equal
 * inputs. */
static void test_linear_window(geom g, orthros_fmap fmap, int F, int B, int after, int win, int n1, int n2, int ndec,
                               const int *start)
{
    int W = (g.Hq + 2 * g.Hkv) * g.d, half = F / 2, chunk = n1 > n2 ? n1 : n2;
    if (chunk < 1) chunk = 1;
    int cap = win > 0 ? win + chunk : 0, cap1 = cap > 0 ? cap : 1;
    size_t cache = (size_t)B * cap1 * g.Hkv * g.d;
    pair qkv = pair_new((size_t)B * chunk * W, 0), out = pair_new((size_t)B * chunk * g.Hq * g.d, 0);
    pair S = pair_new((size_t)B * g.Hkv * F * g.d, 1), z = pair_new((size_t)B * g.Hkv * F, 1);
    pair fq = pair_new(fmap == ORTHROS_FMAP_HEDGEHOG ? (size_t)g.Hq * g.d * half : 1, 0);
    pair fk = pair_new(fmap == ORTHROS_FMAP_HEDGEHOG ? (size_t)g.Hkv * g.d * half : 1, 0);
    pair kc = pair_new(cache, 0), vc = pair_new(cache, 0), kr = pair_new(cache, 0);
    pair qr = pair_new((size_t)B * chunk * g.Hq * g.d, 0), gate = pair_new((size_t)g.Hq, 0);
    pair_random(&fq, 21, 1.0f / sqrtf((float)g.d), 0.0f);
    pair_random(&fk, 22, 1.0f / sqrtf((float)g.d), 0.0f);
    pair_random(&kc, 23, 1.5f, 0.0f);
    pair_random(&vc, 24, 1.0f, 0.0f);
    pair_random(&kr, 25, 1.0f, 0.0f);
    pair_random(&gate, 26, 0.45f, 0.5f);
    float *zero = calloc(S.n, sizeof(float));
    pair_set(&S, zero);
    pair_set(&z, zero);
    free(zero);
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    inv_freq_for(inv, g.d);
    orthros_rope rope = {g.Hq, g.Hkv, g.d, inv};
    orthros_attn_layer Lc = layer_for(g), Lg = layer_for(g);
    Lc.S = S.c, Lc.z = z.c, Lg.S = S.g, Lg.z = z.g;
    Lc.fmap = Lg.fmap = fmap;
    Lc.feature_dim = Lg.feature_dim = F;
    Lc.fmap_q = fq.c, Lc.fmap_k = fk.c, Lg.fmap_q = fq.g, Lg.fmap_k = fk.g;
    Lc.eps = Lg.eps = 1e-6f;
    Lc.fmap_after = Lg.fmap_after = after;
    Lc.local_window = Lg.local_window = win;
    Lc.window_gate = gate.c, Lg.window_gate = gate.g;
    if (win > 0) {
        Lc.k_cache = kc.c, Lc.v_cache = vc.c, Lg.k_cache = kc.g, Lg.v_cache = vc.g;
        Lc.cap = Lg.cap = cap;
        if (!after) {
            Lc.kraw_cache = kr.c, Lg.kraw_cache = kr.g;
            Lc.kraw_cap = Lg.kraw_cap = cap;
            Lc.q_rot = qr.c, Lg.q_rot = qr.g;
        }
    }
    char tag[200], name[300];
    snprintf(tag, sizeof tag, "%s F=%d B=%d Hq=%d Hkv=%d d=%d phi %s W=%d start=%d", orthros_fmap_name(fmap), F, B, g.Hq,
             g.Hkv, g.d, after ? "after" : "before", win, start[0]);
    int pos[3] = {start[0], B > 1 ? start[1] : 0, B > 2 ? start[2] : 0};
    int steps[2] = {n1, n2};
    for (int call = 0; call < 2 + ndec; call++) {
        int n = call < 2 ? steps[call] : 1, decode = call >= 2;
        if (n <= 0) continue;
        pair_random(&qkv, 30 + call, 1.0f, fmap == ORTHROS_FMAP_RELU ? 0.3f : 0.0f);
        if (win > 0 || after) {
            op_rc(cpu->rope_cache_write(cpu, qkv.c, &Lc, &rope, pos, B, n, after ? 0 : n), "rope cpu");
            op_rc(gpu->rope_cache_write(gpu, qkv.g, &Lg, &rope, pos, B, n, after ? 0 : n), "rope gpu");
            pair o = qkv;
            o.n = (size_t)B * n * W;
            snprintf(name, sizeof name, "window rope qkv call %d n=%d %s", call, n, tag);
            check(name, &o, TOL_BF16);
            if (win > 0) {
                snprintf(name, sizeof name, "window rope k ring call %d %s", call, tag);
                check(name, &kc, TOL_BF16);
            }
            if (win > 0 && !after) {
                snprintf(name, sizeof name, "window rope raw-key ring call %d %s (exact)", call, tag);
                check(name, &kr, 0);
                o = qr;
                o.n = (size_t)B * n * g.Hq * g.d;
                snprintf(name, sizeof name, "window rope q_rot call %d %s", call, tag);
                check(name, &o, TOL_BF16);
            }
            pair *sync[4] = {&qkv, &kc, &kr, &qr};
            for (int i = 0; i < 4; i++) {
                float *h = pair_get_gpu(sync[i]);
                pair_set(sync[i], h);
                free(h);
            }
        }
        pair_poison(&out);
        int rc_c = (decode ? cpu->attn_linear_decode : cpu->attn_linear_prefill)(cpu, out.c, qkv.c, &Lc, pos, B, n);
        int rc_g = (decode ? gpu->attn_linear_decode : gpu->attn_linear_prefill)(gpu, out.g, qkv.g, &Lg, pos, B, n);
        op_rc(rc_c, "linear window cpu");
        op_rc(rc_g, "linear window gpu");
        pair o = out;
        o.n = (size_t)B * n * g.Hq * g.d;
        snprintf(name, sizeof name, "linear_window_%s call %d n=%d %s", decode ? "decode" : "prefill", call, n, tag);
        check(name, &o, TOL_BF16);
        for (int b = 0; b < B; b++) pos[b] += n;
    }
    snprintf(name, sizeof name, "linear window state S %s", tag);
    check(name, &S, TOL_BF16);
    snprintf(name, sizeof name, "linear window state z %s", tag);
    check(name, &z, TOL_BF16);
    pair *all[] = {&qkv, &out, &S, &z, &fq, &fk, &kc, &vc, &kr, &qr, &gate};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

/* The window pass alone (attn_linear_window.cu), version `version`, against its formula computed here in double
 * from the same bf16 inputs: B sequences of n rows from positions pos0[b] over a ring of cap slots (cap = W + n - 1 is
 * the least that holds the window, and wraps for a long history), q~ with row stride q_stride (the engine's q_rot,
 * Hq d, or qkv's (Hq + 2 Hkv) d), o_lin and den random, gates random or absent (1). Every kernel path: v2's (head dims
 * 64 and 128, W <= 64, 16 rows or more), v1's (its mma kernel: the same shapes with any W), the plain kernel (other
 * head dims, fewer than 16 rows). */
static void test_window_pass(int version, geom g, int B, int n, int W, int cap, const int *pos0, int qkv_stride,
                             int gated)
{
    const int d = g.d, grp = g.Hq / g.Hkv;
    const size_t q_stride = (size_t)(qkv_stride ? g.Hq + 2 * g.Hkv : g.Hq) * d;
    pair q = pair_new((size_t)B * n * q_stride, 0), out = pair_new((size_t)B * n * g.Hq * d, 0);
    pair kc = pair_new((size_t)B * cap * g.Hkv * d, 0), vc = pair_new((size_t)B * cap * g.Hkv * d, 0);
    pair den = pair_new((size_t)B * n * g.Hq, 1), gate = pair_new((size_t)g.Hq, 0);
    pair_random(&q, 41, 2.0f, 0.0f);
    pair_random(&kc, 42, 2.0f, 0.0f);
    pair_random(&vc, 43, 1.0f, 0.0f);
    pair_random(&out, 44, 1.0f, 0.0f);
    pair_random(&den, 45, 20.0f, 20.5f); /* 0.5 .. 40.5 */
    pair_random(&gate, 46, 0.45f, 0.5f);
    const float eps = 1e-6f;
    /* The reference, from the host copies (o_lin is out's) into ref. */
    float *ref = malloc(out.n * sizeof(float));
    double *x = malloc((size_t)(W > 0 ? W : 1) * sizeof(double)), acc[ORTHROS_MAX_HEAD_DIM];
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++)
            for (int h = 0; h < g.Hq; h++) {
                const int t = pos0[b] + i, lo = t - W + 1 > 0 ? t - W + 1 : 0, kv = h / grp;
                const float *qr = q.c + ((size_t)b * n + i) * q_stride + (size_t)h * d;
                double m = -INFINITY, l = 0;
                for (int s2 = lo; s2 <= t; s2++) {
                    const float *k = kc.c + (((size_t)b * cap + (size_t)(s2 % cap)) * g.Hkv + kv) * d;
                    double dot = 0;
                    for (int c = 0; c < d; c++) dot += (double)qr[c] * k[c];
                    x[s2 - lo] = dot / sqrt((double)d);
                    if (x[s2 - lo] > m) m = x[s2 - lo];
                }
                for (int c = 0; c < d; c++) acc[c] = 0;
                for (int s2 = lo; s2 <= t; s2++) {
                    const float *v = vc.c + (((size_t)b * cap + (size_t)(s2 % cap)) * g.Hkv + kv) * d;
                    const double e = exp(x[s2 - lo] - m);
                    l += e;
                    for (int c = 0; c < d; c++) acc[c] += e * v[c];
                }
                const size_t row = ((size_t)b * n + i) * g.Hq + h;
                const double gm = gated ? gate.c[h] : 1.0, dn = den.c[row];
                for (int c = 0; c < d; c++)
                    ref[row * d + c] = (float)((out.c[row * d + c] * (dn + eps) + gm * acc[c]) / (dn + gm * l));
            }
    memcpy(out.c, ref, out.n * sizeof(float));
    free(ref);
    free(x);
    int *dpos = NULL;
    if (cudaMalloc((void **)&dpos, (size_t)B * sizeof(int)) != cudaSuccess ||
        cudaMemcpy(dpos, pos0, (size_t)B * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess)
        die("cudaMalloc");
    orthros_attn_linear_window_params p;
    memset(&p, 0, sizeof p);
    p.out = out.g;
    p.den = den.g;
    p.q = q.g;
    p.q_stride = q_stride;
    p.k_cache = kc.g;
    p.v_cache = vc.g;
    p.pos0 = dpos;
    p.gate = gated ? gate.g : NULL;
    p.B = B, p.n = n, p.Hq = g.Hq, p.Hkv = g.Hkv, p.d = d, p.cap = cap, p.window = W;
    p.eps = eps;
    if (orthros_attn_linear_window_set_version(version)) die("window version");
    if (gpu->sync(gpu)) die("sync"); /* the uploads, on the backend's stream, before the default stream runs */
    int rc = orthros_attn_linear_window_bf16(&p, 0);
    if (!rc && cudaDeviceSynchronize() != cudaSuccess) rc = orthros_error(ORTHROS_EDEVICE, "window pass failed");
    char name[200];
    snprintf(name, sizeof name, "window pass v%d B=%d n=%d Hq=%d Hkv=%d d=%d W=%d cap=%d pos0=%d%s%s", version, B, n,
             g.Hq, g.Hkv, d, W, cap, pos0[B - 1], qkv_stride ? " qkv" : "", gated ? " gated" : "");
    op_rc(rc, name);
    if (!rc) check(name, &out, TOL_BF16);
    cudaFree(dpos);
    pair *all[] = {&q, &out, &kc, &vc, &den, &gate};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
    if (orthros_attn_linear_window_set_version(0)) die("window version");
}

/* The window pass's versions at awkward sizes: windows 1, 2, 15, 16, 17 (one and two key groups of v2), 33, 49, 50
 * (the edges of three, four and five groups), 63, 64 (v2's largest), 65 and 100 (v1's kernel under either version);
 * rows 16, 17, 63, 64, 65, 130 and 200 (blocks of 64 with tails; a warp with no row) and 1, 5, 15 (the plain
 * kernel); GQA 1, 3, 4, 8; head dims 64, 128 and 32 (plain); one sequence from 0, three from 0, 5 and 300 over a
 * ring of the least size (so it wraps), and windows beyond the history (W > pos0 + n). */
static void window_pass_suite(void)
{
    geom gs[] = {{4, 4, 64}, {12, 4, 128}, {8, 2, 64}, {16, 2, 128}, {6, 3, 32}};
    int wins[] = {1, 2, 15, 16, 17, 33, 49, 50, 63, 64, 65, 100};
    int ns[] = {16, 17, 63, 64, 65, 130, 200, 1, 5, 15};
    int p1[1] = {0}, p3[3] = {0, 5, 300};
    int ng = (int)(sizeof gs / sizeof gs[0]), nw = (int)(sizeof wins / sizeof wins[0]), nn = (int)(sizeof ns / sizeof ns[0]);
    printf("the window pass, versions 1 .. %d\n", ORTHROS_ATTN_LINEAR_WINDOW_LATEST);
    for (int v = 1; v <= ORTHROS_ATTN_LINEAR_WINDOW_LATEST; v++)
        for (int gi = 0; gi < ng; gi++)
            for (int wi = 0; wi < nw; wi++) {
                const int k = gi + wi, n = ns[(gi * 3 + wi) % nn], B = k % 2 ? 3 : 1, W = wins[wi];
                if (quick && k % 3) continue;
                test_window_pass(v, gs[gi], B, n, W, W + n - 1, B > 1 ? p3 : p1, k % 3 == 1, k % 4 != 3);
            }
    /* every row count on the main shape, W 64, and a long call from far in a sequence (many blocks, the ring wrapped) */
    for (int v = 1; v <= ORTHROS_ATTN_LINEAR_WINDOW_LATEST; v++) {
        for (int ni = 0; ni < nn; ni++) test_window_pass(v, gs[2], 3, ns[ni], 64, 64 + ns[ni] + 17, p3, 0, 1);
        int far[3] = {5000, 77, 1};
        test_window_pass(v, gs[3], 3, 1000, 64, 64 + 1000 - 1, far, 1, 1);
        test_window_pass(v, gs[2], 3, 1000, 17, 17 + 1000 - 1, far, 0, 0);
    }
}

/* The local window on linear prefill versions first .. last: windows of 1, 63, 64, 65 (around the kernels' 64-token
 * chunk), 100 (beyond it), 200 (beyond the engine's chunk of these calls) and 1000 (beyond the prompt); phi before and
 * after RoPE; elu1, relu, hedgehog with F = d (the chunked kernels) and F = 40 (the recurrent fallback); GQA 1, 3, 4;
 * head dims 64 and 128 (the window's mma kernel) and 32 (its plain kernel); B 1 from position 0 and B 3 from
 * positions 0, 5 and 300 (the rings' history); calls of 130 and 45 rows (chunks of 64 with tails), then decode. */
static void window_suite(int first, int last)
{
    geom gs[] = {{4, 4, 64}, {12, 4, 64}, {8, 2, 128}, {6, 2, 128}, {6, 3, 32}};
    int wins[] = {1, 63, 64, 65, 100, 200, 1000};
    int ng = (int)(sizeof gs / sizeof gs[0]), nw = (int)(sizeof wins / sizeof wins[0]);
    int p1[1] = {0}, p3[3] = {0, 5, 300};
    for (int v = first; v <= last; v++) {
        int rc = orthros_attn_linear_prefill_set_version(v);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("SKIP linear prefill version %d (window): %s\n", v, orthros_last_error());
            continue;
        }
        if (rc) die("linear prefill version");
        printf("linear prefill version %d with a local window\n", v);
        for (int gi = 0; gi < ng; gi++) {
            geom g = gs[gi];
            for (int wi = 0; wi < nw; wi++)
                for (int after = 0; after < 2; after++) {
                    int w = wins[wi], k = gi + wi + after;
                    if (quick && k % 3) continue;
                    orthros_fmap fm = (orthros_fmap)(k % 3);
                    test_linear_window(g, fm, g.d, k % 2 ? 3 : 1, after, w, 130, 45, 2, k % 2 ? p3 : p1);
                    if (k % 4 == 0) test_linear_window(g, ORTHROS_FMAP_HEDGEHOG, 40, 3, after, w, 70, 33, 1, p3);
                }
            /* phi after RoPE without a window (rotation only, no cache) */
            test_linear_window(g, ORTHROS_FMAP_ELU1, g.d, 3, 1, 0, 99, 20, 1, p3);
        }
        if (quick) continue;
        /* long calls: many segments of v5-v7's plan, the window inside and across them */
        geom gl[] = {{8, 2, 64}, {8, 2, 128}};
        for (int i = 0; i < 2; i++) {
            test_linear_window(gl[i], ORTHROS_FMAP_ELU1, gl[i].d, 1, 0, 64, 9000, 300, 1, p1);
            test_linear_window(gl[i], ORTHROS_FMAP_RELU, gl[i].d, 2, 1, 65, 3000, 0, 0, p3);
            test_linear_window(gl[i], ORTHROS_FMAP_HEDGEHOG, gl[i].d, 1, 1, 700, 3000, 0, 0, p1);
        }
    }
    if (orthros_attn_linear_prefill_set_version(0)) die("linear prefill version");
}

/* Decode v6 (TMA ring, a block per group of kv heads), v7 (the same ring filled by cp.async) and v8 (v7's blocks
 * one kv head each, a cluster per head merging its splits; calls its clusters do not take run v7): every head
 * geometry (Hkv 1, 2, 3, 8, 16: groups of 1, 2, 1, 8 and 8 heads, so 8, 4, 8, 1 and 1 warps per head), GQA 1 to
 * 16, B 1 to 16 with sequences of very different lengths (one of a single key), n = 2 rows per query, one split
 * (a short cache) and many (a long one), both head dims; and a window, which all three leave to v4. */
static void decode_v6(int version)
{
    int rc = orthros_attn_full_decode_set_version(version);
    if (rc == ORTHROS_EUNSUPPORTED) {
        printf("SKIP decode kernel version %d: %s\n", version, orthros_last_error());
        return;
    }
    if (rc) die("decode version");
    printf("decode kernel version %d\n", version);
    geom gs[] = {{4, 4, 64}, {8, 2, 128}, {16, 2, 64}, {8, 1, 128}, {6, 3, 64}, {32, 8, 128}, {32, 8, 64},
                 {16, 16, 128}, {48, 16, 64}, {4, 1, 64}};
    int ng = (int)(sizeof gs / sizeof gs[0]);
    int p3[3] = {4999, 3000, 0}, p1[1] = {40};
    for (int gi = 0; gi < ng; gi++) {
        test_full(gs[gi], 3, 1, 5000, 0, p3, 0, 1);
        test_full(gs[gi], 1, 1, 41, 0, p1, 0, 1);
        if (gs[gi].Hq / gs[gi].Hkv <= 8) test_full(gs[gi], 2, 2, 5001, 0, p3, 0, 1);
    }
    int p8[8] = {8191, 1, 4095, 0, 5000, 77, 8000, 129};
    int p16[16] = {3000, 2999, 1, 0, 128, 127, 129, 1000, 2047, 2048, 2049, 15, 16, 17, 1500, 2500};
    test_full(gs[5], 8, 1, 8192, 0, p8, 0, 1);
    test_full(gs[6], 8, 1, 8192, 0, p8, 0, 1);
    test_full(gs[5], 16, 1, 3001, 0, p16, 0, 1);
    test_full(gs[6], 16, 1, 3001, 0, p16, 0, 1);
    test_full(gs[0], 3, 1, 5000, 300, p3, 0, 1); /* a window: v4 runs it */
    /* Split counts other than the plan's (orthros_attn_full_decode_force_splits, which the bench's split sweep
     * uses): one split, odd counts whose boundaries fall inside a stage, and more than the combine takes
     * (clamped); a negative count is refused. Written after the last GPU run of the session that added it. */
    const int forced[] = {1, 3, 7, 48, 100000};
    for (int fi = 0; fi < (int)(sizeof forced / sizeof forced[0]); fi++) {
        op_rc(orthros_attn_full_decode_force_splits(forced[fi]), "decode force splits");
        test_full(gs[5], 8, 1, 8192, 0, p8, 0, 1);
        test_full(gs[6], 8, 1, 8192, 0, p8, 0, 1);
    }
    op_rc(orthros_attn_full_decode_force_splits(0), "decode force splits");
    expect_einval(orthros_attn_full_decode_force_splits(-1), "decode force splits -1");
    if (!quick) {
        int p6[1] = {20000};
        test_full(gs[5], 1, 1, 20001, 0, p6, 0, 1);
        test_full(gs[6], 1, 1, 20001, 0, p6, 0, 1);
    }
    if (version == 8) {
        /* The plan at the Llama shapes (32 / 8 heads, batch 1 and 16, 4K and 128K keys), printed; at batch 1 and 4K,
         * the shape v8 was written for, the clusters must take the call. Then v8's clusters over 20001 keys at
         * batch 1 (several stages a block) and at the Llama shapes' batch 1 with one key and 4095 (a cluster of 1,
         * and the planned one). */
        for (int i = 0; i < 8; i++) {
            orthros_attn_full_decode_params pp;
            memset(&pp, 0, sizeof pp);
            pp.B = i % 2 ? 16 : 1, pp.n = 1, pp.Hq = 32, pp.Hkv = 8, pp.d = (i / 2) % 2 ? 128 : 64;
            pp.max_keys = pp.cap = i / 4 ? 131072 : 4096, pp.num_sms = gpu->info.sm_count;
            int ran = 0, ns = 0;
            op_rc(orthros_attn_full_decode_plan(&pp, &ran, &ns), "decode plan");
            printf("decode v8 plan B=%d d=%d keys=%d: v%d, %d splits\n", pp.B, pp.d, pp.max_keys, ran, ns);
            if (pp.B == 1 && pp.max_keys == 4096) {
                if (ran == 8 && ns > 1) {
                    n_pass++;
                } else {
                    printf("FAIL decode v8 plan: batch 1 at 4K keys runs v%d with %d splits, not v8's clusters\n", ran, ns);
                    n_fail++;
                }
            }
        }
        int p6[1] = {20000}, pk[2] = {0, 4095};
        test_full(gs[5], 1, 1, 20001, 0, p6, 0, 1);
        test_full(gs[6], 1, 1, 20001, 0, p6, 0, 1);
        for (int k = 0; k < 2; k++) {
            test_full(gs[5], 1, 1, pk[k] + 1, 0, pk + k, 0, 1);
            test_full(gs[6], 1, 1, pk[k] + 1, 0, pk + k, 0, 1);
        }
    }
    if (orthros_attn_full_decode_set_version(0)) die("decode version");
}

/* decode_v6's cases on v8 (a with_switch suite) */
static void decode_v8_suite(void) { decode_v6(8); }

/* The read ceiling's kernel, variants first .. last, against the host XOR of the same 64-bit words: sizes with a trailing
 * 8-byte word and a few stray bytes (not read), smaller than one block's pass, and several passes of the whole
 * grid (and of a bulk-copy block's 32 KB chunks). */
static void test_read(int first, int last)
{
    size_t sizes[4] = {24, 1003, ((size_t)16 << 20) + 8 + 3, ((size_t)64 << 20) + 16};
    int blocks = orthros_read_blocks(gpu->info.sm_count);
    unsigned long long *partials = NULL, *hp = malloc((size_t)blocks * sizeof *hp);
    if (!hp || cudaMalloc((void **)&partials, (size_t)blocks * sizeof *partials) != cudaSuccess) die("read alloc");
    for (int k = 0; k < 4; k++) {
        size_t bytes = sizes[k], words = bytes / 8;
        uint64_t *h = malloc(words * 8 + 8);
        void *d = NULL;
        if (!h || cudaMalloc(&d, bytes) != cudaSuccess) die("read alloc");
        unsigned long long want = 0;
        for (size_t i = 0; i < words + 1; i++) {
            h[i] = ((uint64_t)(orthros_uniform(seed_base + 91, 2 * i) * 16777216.0f) << 40) ^
                   ((uint64_t)(orthros_uniform(seed_base + 91, 2 * i + 1) * 16777216.0f) << 8) ^ i;
            if (i < words) want ^= h[i];
        }
        if (cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) die("read upload");
        for (int v = first; v <= last; v++) {
            orthros_read_params p = {partials, d, bytes, blocks, v};
            if (cudaMemset(partials, 0xA5, (size_t)blocks * sizeof *partials) != cudaSuccess) die("read memset");
            int rc = orthros_read_xor_u64(&p, 0);
            unsigned long long got = 0;
            if (!rc && cudaMemcpy(hp, partials, (size_t)blocks * sizeof *hp, cudaMemcpyDeviceToHost) == cudaSuccess)
                for (int i = 0; i < blocks; i++) got ^= hp[i];
            char name[200];
            snprintf(name, sizeof name, "read variant %d (%s) bytes=%zu (exact)", v, orthros_read_variant_name(v), bytes);
            float fw = (float)(want == got), one = 1.0f;
            if (rc == ORTHROS_EUNSUPPORTED) printf("SKIP %s: %s\n", name, orthros_last_error());
            else if (rc) op_rc(rc, name);
            else report(name, &one, &fw, 1, 0);
        }
        cudaFree(d);
        free(h);
    }
    cudaFree(partials);
    free(hp);
}

/* ---- the GEMV kernel (gemv.cu) behind ORTHROS_GEMV=1 and the fused decode ops (backend.h) ---- */

/* gemm and logits of few rows through a backend made with ORTHROS_GEMV=1, against the cpu; each twice (the second
 * call finds the split-K tickets the first left, which must be zero again). */
static void test_gemv_plain(int n, int M, int K, int logits)
{
    pair x = pair_new((size_t)n * K, 0), W = pair_new((size_t)M * K, 0), out = pair_new((size_t)n * M, logits);
    pair_random(&x, 51, 1.0f, 0.0f);
    pair_random(&W, 52, 1.0f / sqrtf((float)K), 0.0f);
    char name[160];
    for (int call = 0; call < 2; call++) {
        pair_poison(&out);
        /* the cpu result survives the poison: recompute it */
        op_rc(logits ? cpu->logits(cpu, out.c, x.c, W.c, n, M, K) : cpu->gemm(cpu, out.c, x.c, W.c, n, M, K), "gemv ref");
        op_rc(logits ? gpu_gemv->logits(gpu_gemv, out.g, x.g, W.g, n, M, K) : gpu_gemv->gemm(gpu_gemv, out.g, x.g, W.g, n, M, K),
              "gemv");
        /* gpu_gemv runs on its own non-blocking stream, and check() downloads through gpu's: wait for it first */
        op_rc(gpu_gemv->sync(gpu_gemv), "gemv sync");
        snprintf(name, sizeof name, "gemv %s n=%d M=%d K=%d call %d", logits ? "logits (fp32 out)" : "gemm", n, M, K, call);
        check(name, &out, logits ? TOL_F32 : TOL_BF16);
    }
    pair_free(&x);
    pair_free(&W);
    pair_free(&out);
}

/* The fused ops of backend.h, gpu against cpu: norm_gemm, gemm_add, norm_gemm_swiglu (n rows, width K, M or F
 * outputs), twice each. n > 16 takes the composition path of the cuda backend. */
static void test_fused_products(int n, int M, int K)
{
    const float eps = 1e-5f;
    pair x = pair_new((size_t)n * K, 0), w = pair_new(K, 0), W = pair_new((size_t)2 * M * K, 0);
    pair out = pair_new((size_t)n * M, 0), xn = pair_new((size_t)n * K, 0), gu = pair_new((size_t)n * 2 * M, 0);
    pair resid = pair_new((size_t)n * M, 0), tmp = pair_new((size_t)n * M, 0), act = pair_new((size_t)n * K, 0);
    pair_random(&x, 53, 2.0f, 0.0f);
    pair_random(&w, 54, 0.5f, 1.0f);
    pair_random(&W, 55, 1.0f / sqrtf((float)K), 0.0f);
    pair_random(&act, 56, 1.0f, 0.0f);
    char name[160];
    for (int call = 0; call < 2; call++) {
        pair_poison(&out);
        op_rc(cpu->norm_gemm(cpu, out.c, xn.c, x.c, w.c, W.c, n, M, K, eps), "norm_gemm cpu");
        op_rc(gpu->norm_gemm(gpu, out.g, xn.g, x.g, w.g, W.g, n, M, K, eps), "norm_gemm gpu");
        snprintf(name, sizeof name, "norm_gemm n=%d M=%d K=%d call %d", n, M, K, call);
        check(name, &out, TOL_BF16);
        pair_poison(&out);
        op_rc(cpu->norm_gemm_swiglu(cpu, out.c, xn.c, gu.c, x.c, w.c, W.c, n, M, K, eps), "norm_gemm_swiglu cpu");
        op_rc(gpu->norm_gemm_swiglu(gpu, out.g, xn.g, gu.g, x.g, w.g, W.g, n, M, K, eps), "norm_gemm_swiglu gpu");
        snprintf(name, sizeof name, "norm_gemm_swiglu n=%d F=%d K=%d call %d", n, M, K, call);
        /* two roundings to bf16 (gate and up, then the product), each of whose inputs a sum of K products in
         * another order may put on either side of a rounding boundary: an element may be 2 bf16 steps off (1.6%),
         * which over a few outputs (F 3) is an nmse above TOL_BF16 (1.4e-4 at F 3, K 4104, seed 1796488889 on an
         * H100); a wrong row, norm or activation is off by far more */
        check(name, &out, TOL_BF16_2R);
        if (n <= ORTHROS_GEMV_MAX_ROWS) {
            pair_random(&resid, 57 + call, 1.0f, 0.0f);
            op_rc(cpu->gemm_add(cpu, resid.c, tmp.c, act.c, W.c, n, M, K), "gemm_add cpu");
            op_rc(gpu->gemm_add(gpu, resid.g, tmp.g, act.g, W.g, n, M, K), "gemm_add gpu");
            snprintf(name, sizeof name, "gemm_add n=%d M=%d K=%d call %d", n, M, K, call);
            check(name, &resid, TOL_BF16);
        }
    }
    pair *all[] = {&x, &w, &W, &out, &xn, &gu, &resid, &tmp, &act};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

/* norm_qkv_rope, gpu against cpu: n sequences of one token at positions pos[], a cache of cap slots; the positions
 * staged from the host, then read from device memory (pos_dev) with a larger bound in pos0. */
static void test_fused_qkv_rope(geom g, int n, int K, int cap, const int *pos)
{
    const float eps = 1e-5f;
    const int Wd = (g.Hq + 2 * g.Hkv) * g.d;
    pair x = pair_new((size_t)n * K, 0), w = pair_new(K, 0), W = pair_new((size_t)Wd * K, 0);
    pair qkv = pair_new((size_t)n * Wd, 0), xn = pair_new((size_t)n * K, 0);
    pair kc = pair_new((size_t)n * cap * g.Hkv * g.d, 0), vc = pair_new((size_t)n * cap * g.Hkv * g.d, 0);
    pair_random(&x, 61, 2.0f, 0.0f);
    pair_random(&w, 62, 0.5f, 1.0f);
    pair_random(&W, 63, 1.0f / sqrtf((float)K), 0.0f);
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    inv_freq_for(inv, g.d);
    orthros_rope rope = {g.Hq, g.Hkv, g.d, inv};
    orthros_attn_layer Lc = layer_for(g), Lg = layer_for(g);
    Lc.k_cache = kc.c, Lc.v_cache = vc.c, Lg.k_cache = kc.g, Lg.v_cache = vc.g;
    Lc.cap = Lg.cap = cap;
    int32_t *pos_dev = gpu->alloc(gpu, (size_t)n * sizeof(int32_t));
    int bound[ORTHROS_GEMV_MAX_ROWS + 8];
    for (int i = 0; i < n; i++) bound[i] = cap - 1;
    if (!pos_dev || gpu->upload_ints(gpu, pos_dev, pos, n)) die("positions");
    char tag[160], name[220];
    snprintf(tag, sizeof tag, "n=%d Hq=%d Hkv=%d d=%d K=%d cap=%d pos[0]=%d", n, g.Hq, g.Hkv, g.d, K, cap, pos[0]);
    for (int dev = 0; dev < 2; dev++) {
        pair_random(&kc, 64, 1.0f, 0.0f);
        pair_random(&vc, 65, 1.0f, 0.0f);
        pair_poison(&qkv);
        Lg.pos_dev = dev ? pos_dev : NULL;
        op_rc(cpu->norm_qkv_rope(cpu, qkv.c, xn.c, x.c, w.c, W.c, &Lc, &rope, pos, n, K, eps), "norm_qkv_rope cpu");
        op_rc(gpu->norm_qkv_rope(gpu, qkv.g, xn.g, x.g, w.g, W.g, &Lg, &rope, dev ? bound : pos, n, K, eps),
              "norm_qkv_rope gpu");
        snprintf(name, sizeof name, "norm_qkv_rope qkv %s%s", tag, dev ? " pos_dev" : "");
        check(name, &qkv, TOL_BF16);
        snprintf(name, sizeof name, "norm_qkv_rope k_cache %s%s", tag, dev ? " pos_dev" : "");
        check(name, &kc, TOL_BF16);
        snprintf(name, sizeof name, "norm_qkv_rope v_cache %s%s", tag, dev ? " pos_dev" : "");
        check(name, &vc, TOL_BF16);
    }
    gpu->free(gpu, pos_dev);
    pair *all[] = {&x, &w, &W, &qkv, &xn, &kc, &vc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

/* norm_logits_argmax, gpu against cpu: the logits within the bf16 tolerance of the cpu's normed input rounded to
 * bf16 as the gpu rounds it, times the weights (in double here: the tie rows below are 4x the input, so one bf16
 * rounding of the input moves their logits by up to ~0.4, which is past the tolerance of a row whose other logits
 * are small); the ids exactly the argmax (cpu_argmax's order) of the gpu's own logits; rows with ties at the
 * maximum (two equal weight rows) and, with nan_row, a row whose input is NaN (every logit NaN: id 0). Twice. */
static void test_fused_head(int n, int V, int D, int nan_row)
{
    const float eps = 1e-5f;
    pair x = pair_new((size_t)n * D, 0), w = pair_new(D, 0), W = pair_new((size_t)V * D, 0);
    pair lg = pair_new((size_t)n * V, 1), xn = pair_new((size_t)n * D, 0);
    float *hw = malloc(sizeof(float) * V * D), *hx = malloc(sizeof(float) * n * D);
    for (size_t i = 0; i < (size_t)V * D; i++) hw[i] = bf16_round((2.0f * orthros_uniform(seed_base ^ 71, i) - 1.0f) / sqrtf((float)D));
    for (size_t i = 0; i < (size_t)n * D; i++) hx[i] = bf16_round(2.0f * orthros_uniform(seed_base ^ 72, i) - 1.0f);
    if (V > 10) memcpy(hw + (size_t)(V - 2) * D, hw + (size_t)3 * D, sizeof(float) * D); /* rows 3 and V - 2 tie */
    for (int k = 0; k < D && V > 10; k++) hw[(size_t)3 * D + k] = hw[(size_t)(V - 2) * D + k] = bf16_round(4.0f * hx[k]);
    if (nan_row >= 0 && nan_row < n) hx[(size_t)nan_row * D] = NAN;
    pair_set(&W, hw);
    pair_set(&x, hx);
    pair_random(&w, 73, 0.5f, 1.0f);
    int32_t *ids_g = gpu->alloc(gpu, (size_t)n * sizeof(int32_t)), *ic = malloc(sizeof(int32_t) * n), *ig = malloc(sizeof(int32_t) * n);
    float *xr = malloc(sizeof(float) * D), *ref = malloc(sizeof(float) * V);
    if (!ids_g || !ic || !ig || !xr || !ref) die("alloc");
    char name[200];
    for (int call = 0; call < 2; call++) {
        pair_poison(&lg);
        op_rc(cpu->norm_logits_argmax(cpu, ic, lg.c, xn.c, x.c, w.c, W.c, n, V, D, eps), "norm_logits_argmax cpu");
        op_rc(gpu->norm_logits_argmax(gpu, ids_g, lg.g, xn.g, x.g, w.g, W.g, n, V, D, eps), "norm_logits_argmax gpu");
        float *g = pair_get_gpu(&lg);
        if (gpu->download_ints(gpu, ig, ids_g, n)) die("ids");
        /* the rows without a NaN: logits against the reference; every row: ids against the argmax of the gpu's
         * logits */
        int ids_ok = 0;
        for (int i = 0; i < n; i++) {
            if (i != nan_row) {
                for (int k = 0; k < D; k++) xr[k] = bf16_round(xn.c[(size_t)i * D + k]);
                for (int v = 0; v < V; v++) {
                    double acc = 0.0;
                    for (int k = 0; k < D; k++) acc += (double)hw[(size_t)v * D + k] * (double)xr[k];
                    ref[v] = (float)acc;
                }
                char rn[200];
                snprintf(rn, sizeof rn, "norm_logits_argmax logits n=%d V=%d D=%d row %d call %d", n, V, D, i, call);
                report(rn, ref, g + (size_t)i * V, V, TOL_BF16);
            }
            int32_t want = 0;
            if (cpu->argmax(cpu, &want, g + (size_t)i * V, 1, V)) die("argmax");
            ids_ok += ig[i] == want;
            if (ig[i] != want) printf("     row %d: id %d, the gpu logits' argmax %d\n", i, ig[i], want);
        }
        float fo = (float)ids_ok, fw = (float)n;
        snprintf(name, sizeof name, "norm_logits_argmax ids n=%d V=%d D=%d%s call %d (exact)", n, V, D,
                 nan_row >= 0 ? " with a NaN row" : "", call);
        report(name, &fw, &fo, 1, 0);
        if (gpu->norm_argmax) {
            /* the ids alone (cuda: the int8 copy's head where it takes the shape): the argmax of the exact logits,
             * so the same ids as above, or one whose logit there ties the maximum's within fp32 order (1e-5) */
            int32_t *ia = malloc(sizeof(int32_t) * n);
            if (!ia) die("alloc");
            op_rc(gpu->norm_argmax(gpu, ids_g, lg.g, xn.g, x.g, w.g, W.g, n, V, D, eps), "norm_argmax gpu");
            if (gpu->download_ints(gpu, ia, ids_g, n)) die("ids");
            int same = 0;
            for (int i = 0; i < n; i++) {
                const float *gi = g + (size_t)i * V;
                const int ok = ia[i] == ig[i] || (i != nan_row && ia[i] >= 0 && ia[i] < V &&
                                                  fabsf(gi[ia[i]] - gi[ig[i]]) <= 1e-5f * (fabsf(gi[ig[i]]) + 1.0f));
                same += ok;
                if (!ok) printf("     row %d: norm_argmax id %d, norm_logits_argmax %d\n", i, ia[i], ig[i]);
            }
            fo = (float)same;
            snprintf(name, sizeof name, "norm_argmax ids n=%d V=%d D=%d%s call %d", n, V, D,
                     nan_row >= 0 ? " with a NaN row" : "", call);
            report(name, &fw, &fo, 1, 0);
            free(ia);
        }
        free(g);
    }
    gpu->free(gpu, ids_g);
    free(hw), free(hx), free(ic), free(ig), free(xr), free(ref);
    pair *all[] = {&x, &w, &W, &lg, &xn};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

/* head8 (kernels/head8.h: the head through an int8 copy, the exact argmax kept): the copy against head8_ref_quantize
 * (q and s bit for bit, c and d within 1e-6), then steps on it with x already normed (norm_w 1), in both forms of the
 * screen and at depths 2-4, each against the reference's screen of the rows the kernel staged (read back): the
 * integer form's approx_j bit for bit and its ex within 1e-5, the fp32 form's approx_j within B_j of the
 * reference's; the staged rows within a bf16 step of the reference's norm; the same id, or one whose exact logit
 * ties the reference's within 1e-3 (the kernels' exact sums run in another order); candidates at least 1, at most a
 * tenth of the rows. Rows: sigma 0.02, row 0 zero, row 1 one outlier, rows 2 and 3 equal (a tie on the lower index
 * when the input lifts them). */
static void head8_direct(int n, int V, int K, int lift)
{
    uint16_t *hw = malloc((size_t)V * K * 2), *hx = malloc((size_t)n * K * 2), *h1 = malloc((size_t)K * 2);
    int8_t *qg = malloc((size_t)V * K), *qc = malloc((size_t)V * K), *hi = malloc((size_t)K), *lo = malloc((size_t)K);
    float *sg = malloc(V * sizeof(float)), *sc = malloc(V * sizeof(float)), *cg = malloc(V * sizeof(float));
    float *cc = malloc(V * sizeof(float)), *ap = malloc(V * sizeof(float)), *ex = malloc(V * sizeof(float));
    float *dg = malloc(V * sizeof(float)), *dc = malloc(V * sizeof(float));
    float *bd = malloc(V * sizeof(float)), *xf = malloc((size_t)K * sizeof(float));
    float *apg = malloc((size_t)n * V * sizeof(float));
    uint16_t *xst = malloc((size_t)n * K * 2);
    if (!hw || !hx || !h1 || !qg || !qc || !hi || !lo || !sg || !sc || !cg || !cc || !ap || !ex || !dg || !dc || !bd ||
        !xf || !apg || !xst)
        die("head8 alloc");
    for (size_t i = 0; i < (size_t)V * K; i++)
        hw[i] = orthros_f32_to_bf16(0.04f * (orthros_uniform(seed_base ^ 91, i) + orthros_uniform(seed_base ^ 92, i) - 1.0f));
    for (int k = 0; k < K; k++) {
        hw[k] = 0;
        hw[(size_t)K + k] = orthros_f32_to_bf16(k == 1 ? 2.0f : 0.001f);
        hw[3 * (size_t)K + k] = hw[2 * (size_t)K + k];
        h1[k] = orthros_f32_to_bf16(1.0f);
    }
    for (int r = 0; r < n; r++)
        for (int k = 0; k < K; k++) {
            /* rows of RMS about 1 (normed: norm_w 1 leaves them within a bf16 step); `lift` puts rows 2 and 3 on top */
            const float v = lift ? 25.0f * head8_ref_bf16(hw[2 * (size_t)K + k]) + 0.1f * (orthros_uniform(seed_base ^ 93, (size_t)r * K + k) - 0.5f)
                                 : 2.0f * (orthros_uniform(seed_base ^ 93, (size_t)r * K + k) - 0.5f) * 1.7320508f;
            hx[(size_t)r * K + k] = orthros_f32_to_bf16(v);
        }
    void *dW = NULL, *dx = NULL, *d1 = NULL, *dids = NULL;
    if (cudaMalloc(&dW, (size_t)V * K * 2) || cudaMalloc(&dx, (size_t)n * K * 2) || cudaMalloc(&d1, (size_t)K * 2) ||
        cudaMalloc(&dids, (size_t)n * sizeof(int32_t)) || cudaMemcpy(dW, hw, (size_t)V * K * 2, cudaMemcpyHostToDevice) ||
        cudaMemcpy(dx, hx, (size_t)n * K * 2, cudaMemcpyHostToDevice) || cudaMemcpy(d1, h1, (size_t)K * 2, cudaMemcpyHostToDevice))
        die("head8 upload");
    orthros_head8 *h = NULL;
    if (orthros_head8_create(&h, dW, V, K, 0) || orthros_head8_export(h, qg, sg, cg, dg, 0)) die(orthros_last_error());
    head8_ref_quantize(hw, V, K, qc, sc, cc, dc);
    size_t qbad = 0;
    int sbad = 0, cbad = 0;
    for (size_t i = 0; i < (size_t)V * K; i++) qbad += qg[i] != qc[i];
    for (int j = 0; j < V; j++) {
        sbad += memcmp(&sg[j], &sc[j], sizeof(float)) != 0;
        cbad += !(fabsf(cg[j] - cc[j]) <= 1e-6f * fabsf(cc[j])) + !(fabsf(dg[j] - dc[j]) <= 1e-6f * fabsf(dc[j]));
    }
    char name[160];
    snprintf(name, sizeof name, "head8 copy V=%d K=%d: q, s bit for bit, c, d", V, K);
    const float want0 = 0.0f, got0 = (float)(qbad + (size_t)sbad + (size_t)cbad);
    report(name, &want0, &got0, 1, 0);
    orthros_head8_params hp;
    memset(&hp, 0, sizeof hp);
    hp.ids = dids, hp.x = dx, hp.norm_w = d1, hp.eps = 1e-5f, hp.n = n;
    int32_t ids[ORTHROS_HEAD8_MAX_ROWS] = {0};
    unsigned counts[ORTHROS_HEAD8_MAX_ROWS] = {0};
    /* the fp32 form at the default depth twice (the scratch the first call leaves must serve the second), then
     * depths 3 and 4; the integer form at 2, 3 and 4; then in one launch (the selection after a grid barrier), each
     * form twice (the barrier's word must be left at 0 for the next call); then the integer form 4 deep and the fp32
     * one in one launch without the warps' next rows asked into L2 (no_next_pf), and on the grid cut to whole rounds
     * (even; num_sms 20 in the last two, whose 40 blocks' rounds cut to 32 blocks at V 3001 and 2000) */
    static const struct {
        int depth, dp4a, one, nopf, even, sms;
    } calls[] = {{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {3, 0, 0, 0, 0, 0}, {4, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0},
                 {3, 1, 0, 0, 0, 0}, {4, 1, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0}, {0, 0, 1, 0, 0, 0}, {4, 1, 1, 0, 0, 0},
                 {4, 1, 1, 0, 0, 0}, {4, 1, 0, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, {4, 1, 0, 0, 1, 0}, {4, 1, 0, 0, 1, 20},
                 {0, 0, 1, 0, 1, 20}};
    for (int call = 0; call < (int)(sizeof calls / sizeof *calls); call++) {
        hp.depth = calls[call].depth, hp.dp4a = calls[call].dp4a, hp.one_launch = calls[call].one;
        hp.no_next_pf = calls[call].nopf, hp.even = calls[call].even, hp.num_sms = calls[call].sms;
        float exg[ORTHROS_HEAD8_MAX_ROWS];
        int form = -1;
        if (orthros_head8_argmax(h, &hp, 0) || orthros_head8_last_candidates(h, n, counts, 0) ||
            orthros_head8_last_screen(h, n, xst, apg, exg, &form, 0) ||
            cudaMemcpy(ids, dids, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost))
            die(orthros_last_error());
        int ok = 0;
        for (int r = 0; r < n; r++) {
            /* the reference's normed row, bf16(1 * (x * rsqrt(mean x^2 + eps))), against the kernel's (rsqrtf: a bf16
             * step here and there) */
            double ss = 0.0;
            for (int k = 0; k < K; k++) ss += (double)head8_ref_bf16(hx[(size_t)r * K + k]) * head8_ref_bf16(hx[(size_t)r * K + k]);
            const float rr = (float)(1.0 / sqrt(ss / K + 1e-5));
            int xbad = 0;
            for (int k = 0; k < K; k++) {
                const float want_x = bf16_round(head8_ref_bf16(hx[(size_t)r * K + k]) * rr);
                xf[k] = head8_ref_bf16(xst[(size_t)r * K + k]);
                xbad += !(fabsf(xf[k] - want_x) <= fabsf(want_x) * (1.0f / 128.0f));
            }
            /* the reference's screen of the rows the kernel staged */
            unsigned cnt = 0;
            float sx = 0.0f, exr = 0.0f;
            const int want = hp.dp4a ? head8_ref_screen_int(qc, sc, cc, dc, hw, xf, V, K, hi, lo, ap, ex, bd, &sx, &exr, &cnt)
                                     : head8_ref_screen(qc, sc, cc, hw, xf, V, K, ap, ex, bd, &cnt);
            int abad = 0;
            for (int j = 0; j < V; j++) {
                const float a = apg[(size_t)r * V + j];
                abad += hp.dp4a ? memcmp(&a, &ap[j], sizeof a) != 0 : !(fabsf(a - ap[j]) <= bd[j]);
            }
            const int exok = hp.dp4a ? fabsf(exg[r] - exr) <= 1e-5f * exr : exg[r] == 0.0f;
            const int g = ids[r];
            const int same = g == want || (g >= 0 && g < V && fabsf(ex[g] - ex[want]) <= 1e-3f * (fabsf(ex[want]) + 1.0f));
            const int fair = counts[r] >= 1 && counts[r] * 10u <= (unsigned)V;
            ok += same && fair && (!lift || g == 2) && !xbad && !abad && exok && form == hp.dp4a;
            printf("     head8 n=%d V=%d K=%d row %d call %d (%s): id %d (reference %d), %u candidates (reference %u), "
                   "%d staged x off, %d approx off, ex %.6g (reference %.6g)\n", n, V, K, r, call,
                   form ? "integer" : "fp32", g, want, counts[r], cnt, xbad, abad, (double)exg[r], (double)exr);
        }
        snprintf(name, sizeof name, "head8 step n=%d V=%d K=%d%s call %d depth %d %s%s%s%s sms %d: ids, candidates, approx",
                 n, V, K, lift ? " (a tie on top)" : "", call, hp.depth, hp.dp4a ? "integer" : "fp32",
                 hp.one_launch ? " one launch" : "", hp.no_next_pf ? " no next pf" : "", hp.even ? " even" : "",
                 hp.num_sms);
        const float fw = (float)n, fo = (float)ok;
        report(name, &fw, &fo, 1, 0);
    }
    orthros_head8_destroy(h);
    cudaFree(dW), cudaFree(dx), cudaFree(d1), cudaFree(dids);
    free(hw), free(hx), free(h1), free(qg), free(qc), free(hi), free(lo), free(sg), free(sc), free(cg), free(cc),
        free(ap), free(ex), free(dg), free(dc), free(bd), free(xf), free(apg), free(xst);
}

/* The backend's head with ORTHROS_DECODE_HEAD8=1 against the cpu (test_fused_head) at shapes head8 takes: batch 1-4,
 * K a multiple of 16, a NaN row, the tie of rows 3 and V - 2. */
static void head8_suite(void)
{
    test_fused_head(1, 7, 64, -1);
    test_fused_head(1, 1003, 2048, -1);
    test_fused_head(2, 5003, 1040, -1);
    test_fused_head(3, 20000, 256, 1);
    test_fused_head(4, 3000, 4096, 2);
    if (!quick) test_fused_head(1, 128256, 2048, -1);
}

/* The chain of gemv.cu (ORTHROS_DECODE_CHAIN): a layer's products at batch 1 in one launch against the same products
 * launched one by one with version 3, bit for bit. O adds into the residual x, gate/up (normed) writes act, down adds
 * into x, q/k/v (normed, RoPE, the cache write) reads x: every product but the first reads what an earlier one of the
 * launch wrote. The first nops of them; each chain twice from the same start (the barrier must leave its two words at
 * 0 for the next launch). */
static void test_gemv_chain(int D, int F, int Hq, int Hkv, int d, int cap, int pos, int nops)
{
    const int Hd = Hq * d, Wd = (Hq + 2 * Hkv) * d;
    const size_t nkv = (size_t)cap * Hkv * d;
    const size_t sizes[] = {(size_t)D, (size_t)Hd, (size_t)D * Hd, (size_t)D, (size_t)2 * F * D, (size_t)F,
                            (size_t)D * F, (size_t)D, (size_t)Wd * D, (size_t)Wd, nkv, nkv};
    enum { X, ATTN, WO, N1, WGU, ACT, WD, N2, WQKV, QKV, KC, VC, NB };
    void *dv[NB];
    uint16_t *init[NB], *got[5][NB];
    for (int b = 0; b < NB; b++) {
        init[b] = malloc(sizes[b] * 2);
        got[0][b] = malloc(sizes[b] * 2);
        got[1][b] = malloc(sizes[b] * 2);
        got[2][b] = malloc(sizes[b] * 2);
        got[3][b] = malloc(sizes[b] * 2);
        got[4][b] = malloc(sizes[b] * 2);
        if (!init[b] || !got[0][b] || !got[1][b] || !got[2][b] || !got[3][b] || !got[4][b] ||
            cudaMalloc(&dv[b], sizes[b] * 2) != cudaSuccess)
            die("chain alloc");
        const float scale = b == WO ? 1.0f / sqrtf((float)Hd) : b == WGU || b == WQKV ? 1.0f / sqrtf((float)D)
                            : b == WD ? 1.0f / sqrtf((float)F) : 1.0f;
        for (size_t i = 0; i < sizes[b]; i++) {
            float v = (2.0f * orthros_uniform(seed_base ^ (0x3100u + (unsigned)b), i) - 1.0f) * scale;
            if (b == N1 || b == N2) v = 1.0f + 0.5f * v;
            init[b][i] = orthros_f32_to_bf16(v);
        }
    }
    int *pos_d = NULL;
    void *scratch = NULL;
    if (cudaMalloc((void **)&pos_d, sizeof(int)) != cudaSuccess || cudaMemcpy(pos_d, &pos, sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMalloc(&scratch, orthros_gemv_scratch_bytes()) != cudaSuccess || cudaMemset(scratch, 0, orthros_gemv_scratch_bytes()) != cudaSuccess)
        die("chain alloc");
    orthros_gemv_params ops[4];
    memset(ops, 0, sizeof ops);
    const struct {
        int out, x, norm, W, M, K, epi;
    } sp[4] = {{X, ATTN, -1, WO, D, Hd, ORTHROS_GEMV_ADD},
               {ACT, X, N1, WGU, 2 * F, D, ORTHROS_GEMV_SWIGLU},
               {X, ACT, -1, WD, D, F, ORTHROS_GEMV_ADD},
               {QKV, X, N2, WQKV, Wd, D, ORTHROS_GEMV_ROPE}};
    for (int i = 0; i < 4; i++) {
        orthros_gemv_params *p = &ops[i];
        p->out = dv[sp[i].out], p->x = dv[sp[i].x], p->norm_w = sp[i].norm >= 0 ? dv[sp[i].norm] : NULL, p->eps = 1e-5f;
        p->W = dv[sp[i].W], p->n = 1, p->M = sp[i].M, p->K = sp[i].K, p->epilogue = sp[i].epi;
        p->scratch = scratch, p->num_sms = gpu->info.sm_count;
        if (sp[i].epi == ORTHROS_GEMV_ROPE) {
            p->k_cache = dv[KC], p->v_cache = dv[VC], p->pos = pos_d, p->Hq = Hq, p->Hkv = Hkv, p->d = d, p->cap = cap;
            inv_freq_for(p->inv_freq, d);
        }
    }
    char name[200];
    snprintf(name, sizeof name, "gemv chain of %d (early %d): D %d F %d heads %d/%d d %d pos %d", nops,
             orthros_gemv_early(), D, F, Hq, Hkv, d, pos);
    for (int i = 0; i < nops; i++)
        if (!orthros_gemv_chain_supported(&ops[i])) {
            printf("FAIL %s: product %d not taken by the chain\n", name, i);
            n_fail++;
            goto out;
        }
    int ring = 1; /* the ring chain (sm_90, K a multiple of 256): against one by one within bf16's rounding */
    for (int i = 0; i < nops; i++) ring = ring && orthros_gemv_ring_chain_supported(&ops[i]);
    if (orthros_gemv_set_version(3)) die("gemv version");
    for (int call = 0; call < 2; call++)
        for (int way = 0; way < 2 + 3 * ring; way++) { /* ring: form 0, form 1, form 1 with no lead */
            for (int b = 0; b < NB; b++)
                if (cudaMemcpy(dv[b], init[b], sizes[b] * 2, cudaMemcpyHostToDevice) != cudaSuccess) die("chain upload");
            int rc = 0;
            if (way == 0)
                for (int i = 0; i < nops && !rc; i++) rc = orthros_gemv_bf16(&ops[i], 0);
            else if (way == 1)
                rc = orthros_gemv_chain_bf16(ops, nops, 0);
            else if (!(rc = orthros_gemv_ring_chain_set_form(way == 2 ? 0 : 1)) &&
                     !(rc = orthros_gemv_ring_chain_set_ahead(way == 4 ? 0 : -1)))
                rc = orthros_gemv_ring_chain_bf16(ops, nops, 0);
            if (orthros_gemv_ring_chain_set_form(1) || orthros_gemv_ring_chain_set_ahead(-1)) die("ring chain form");
            if (rc || cudaDeviceSynchronize() != cudaSuccess) {
                op_rc(rc ? rc : ORTHROS_EDEVICE, name);
                goto out;
            }
            for (int b = 0; b < NB; b++)
                if (cudaMemcpy(got[way][b], dv[b], sizes[b] * 2, cudaMemcpyDeviceToHost) != cudaSuccess) die("chain download");
        }
    {
        /* the last call's two ways, element by element; and the barrier's words (arrivals, departures) back at 0 */
        int wrong = 0;
        for (int b = 0; b < NB; b++)
            for (size_t i = 0; i < sizes[b]; i++) wrong += got[0][b][i] != got[1][b][i];
        unsigned count[2] = {1u, 1u};
        if (cudaMemcpy(count, (char *)scratch + (24 << 10), sizeof count, cudaMemcpyDeviceToHost) != cudaSuccess) die("chain sync");
        wrong += (count[0] != 0u) + (count[1] != 0u);
        float z = 0.0f, w = (float)wrong;
        char full[240];
        snprintf(full, sizeof full, "%s (exact against one by one)", name);
        report(full, &z, &w, 1, 0);
    }
    if (!ring) {
        printf("SKIP %s: the ring chain does not take it (sm_90, K a multiple of 256)\n", name);
    } else {
        /* the ring chain's outputs, buffer by buffer, against one by one: other sums' order, so within bf16's rounding
         * carried through the chain; its barrier's words back at 0 */
        static const char *const bn[NB] = {"x", "attn", "wo", "n1", "wgu", "act", "wd", "n2", "wqkv", "qkv", "k cache",
                                           "v cache"};
        static const char *const forms[3] = {"form 0", "form 1", "form 1 ahead 0"};
        for (int form = 0; form < 3; form++)
            for (int b = 0; b < NB; b++) {
                float *r = malloc(sizes[b] * sizeof *r), *q = malloc(sizes[b] * sizeof *q);
                if (!r || !q) die("chain alloc");
                for (size_t i = 0; i < sizes[b]; i++)
                    r[i] = orthros_bf16_to_f32(got[0][b][i]), q[i] = orthros_bf16_to_f32(got[2 + form][b][i]);
                char full[300];
                snprintf(full, sizeof full, "%s: ring chain %s, %s", name, forms[form], bn[b]);
                report(full, r, q, sizes[b], 1e-4);
                free(r), free(q);
            }
        unsigned count[2] = {1u, 1u};
        if (cudaMemcpy(count, (char *)scratch + (24 << 10), sizeof count, cudaMemcpyDeviceToHost) != cudaSuccess)
            die("chain sync");
        float z = 0.0f, w = (float)((count[0] != 0u) + (count[1] != 0u));
        char full[300];
        snprintf(full, sizeof full, "%s: ring chain, barrier words back at 0 (exact)", name);
        report(full, &z, &w, 1, 0);
    }
out:
    if (orthros_gemv_set_version(0)) die("gemv version");
    for (int b = 0; b < NB; b++) {
        cudaFree(dv[b]);
        free(init[b]), free(got[0][b]), free(got[1][b]), free(got[2][b]), free(got[3][b]), free(got[4][b]);
    }
    cudaFree(pos_d);
    cudaFree(scratch);
}

/* The normed products' input against rmsnorm.cu's: rmsnorm_x8_kernel's out fed to the product without a norm, against
 * the product with norm_w (gemv.cu's stage_input forms the RMS with one warp a row, in another order of the fp32
 * sums), within the bf16 tolerance; v3 at n <= 8, v1's kernel above (its K split with the staged range past K). */
static void test_gemv_norm(int n, int M, int K)
{
    const size_t sizes[] = {(size_t)n * K, (size_t)K, (size_t)M * K, (size_t)n * K, (size_t)n * M, (size_t)n * M};
    enum { X, NW, W, XN, OA, OB, NB };
    void *dv[NB];
    for (int b = 0; b < NB; b++) {
        uint16_t *h = malloc(sizes[b] * 2);
        if (!h || cudaMalloc(&dv[b], sizes[b] * 2) != cudaSuccess) die("gemv norm alloc");
        const float scale = b == W ? 1.0f / sqrtf((float)K) : b == X ? 3.0f : 1.0f;
        for (size_t i = 0; i < sizes[b]; i++) {
            float v = (2.0f * orthros_uniform(seed_base ^ (0x3200u + (unsigned)b), i) - 1.0f) * scale;
            if (b == NW) v = 1.0f + 0.5f * v;
            h[i] = orthros_f32_to_bf16(v);
        }
        if (cudaMemcpy(dv[b], h, sizes[b] * 2, cudaMemcpyHostToDevice) != cudaSuccess) die("gemv norm upload");
        free(h);
    }
    void *scratch = NULL;
    if (cudaMalloc(&scratch, orthros_gemv_scratch_bytes()) != cudaSuccess ||
        cudaMemset(scratch, 0, orthros_gemv_scratch_bytes()) != cudaSuccess)
        die("gemv norm scratch");
    const orthros_rmsnorm_params rp = {dv[XN], dv[X], NULL, dv[NW], n, K, 1e-5f};
    orthros_gemv_params a, b;
    memset(&a, 0, sizeof a);
    a.out = dv[OA], a.x = dv[XN], a.eps = 1e-5f, a.W = dv[W], a.n = n, a.M = M, a.K = K;
    a.epilogue = ORTHROS_GEMV_STORE, a.scratch = scratch, a.num_sms = gpu->info.sm_count;
    b = a;
    b.out = dv[OB], b.x = dv[X], b.norm_w = dv[NW];
    float *got[2];
    for (int i = 0; i < 2; i++)
        if (!(got[i] = malloc(sizes[OA] * sizeof(float)))) die("gemv norm alloc");
    uint16_t *raw = malloc(sizes[OA] * 2);
    if (!raw) die("gemv norm alloc");
    char name[200];
    snprintf(name, sizeof name, "gemv norm n=%d M=%d K=%d against rmsnorm + product", n, M, K);
    int rc = orthros_rmsnorm_bf16(&rp, 0);
    if (!rc) rc = orthros_gemv_bf16(&a, 0);
    if (!rc) rc = orthros_gemv_bf16(&b, 0);
    if (rc || cudaDeviceSynchronize() != cudaSuccess) {
        op_rc(rc ? rc : ORTHROS_EDEVICE, name);
    } else {
        for (int i = 0; i < 2; i++) {
            if (cudaMemcpy(raw, dv[i ? OB : OA], sizes[OA] * 2, cudaMemcpyDeviceToHost) != cudaSuccess) die("gemv norm download");
            for (size_t e = 0; e < sizes[OA]; e++) got[i][e] = orthros_bf16_to_f32(raw[e]);
        }
        report(name, got[0], got[1], sizes[OA], TOL_BF16);
    }
    free(raw), free(got[0]), free(got[1]);
    for (int b2 = 0; b2 < NB; b2++) cudaFree(dv[b2]);
    cudaFree(scratch);
}

static void gemv_norm_suite(void)
{
    /* the 1B and 8B widths (a thread's one and two chunks a row), fewer chunks than threads (K 1000), more than a
     * thread holds norm weights for (K 8200: five a thread), batch 1-16 (v1's kernel from 9, its K split with the
     * staged range past K), odd M */
    static const int shapes[][3] = {{1, 2048, 2048}, {1, 517, 4096}, {3, 1000, 1000}, {1, 300, 8200}, {8, 520, 3072},
                                    {5, 64, 2056}, {12, 384, 2048}, {16, 1000, 8200}, {9, 130, 4096}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) test_gemv_norm(shapes[i][0], shapes[i][1], shapes[i][2]);
}

/* v3's early loads (orthros_gemv_set_early: the residual and RoPE's operands loaded before the sums, the first
 * round's L2 hint left out always or on short products) against the same call without them, bit for bit: the output,
 * the caches (ROPE) and the id (ARGMAX) of batch 1, each epilogue with and without a norm where it takes one. */
static void test_gemv_early(int epi, int norm, int M, int K, geom g, int cap, int pos)
{
    const int f32 = epi == ORTHROS_GEMV_STORE_F32 || epi == ORTHROS_GEMV_ARGMAX;
    const size_t ncache = epi == ORTHROS_GEMV_ROPE ? (size_t)cap * g.Hkv * g.d : 1;
    const size_t nout = epi == ORTHROS_GEMV_SWIGLU ? (size_t)M / 2 : (size_t)M;
    const size_t sizes[] = {(size_t)K * 2, (size_t)K * 2, (size_t)M * K * 2, nout * (f32 ? 4 : 2), ncache * 2,
                            ncache * 2};
    enum { X, NW, W, OUT, KC, VC, NB };
    /* got[0] against each other: bit for bit, but 43 (32: the norm's sum of squares in another order) within bf16's
     * tolerance */
    static const int masks[] = {0, 11, 19, 43};
    enum { NM = sizeof masks / sizeof *masks };
    void *dv[NB], *init[NB], *got[NM][NB];
    for (int b = 0; b < NB; b++) {
        uint16_t *h = malloc(sizes[b]);
        if (!h || cudaMalloc(&dv[b], sizes[b]) != cudaSuccess) die("gemv early alloc");
        const float scale = b == W ? 1.0f / sqrtf((float)K) : b == X ? 3.0f : 1.0f;
        for (size_t i = 0; i < sizes[b] / 2; i++) {
            float v = (2.0f * orthros_uniform(seed_base ^ (0x3300u + (unsigned)b), i) - 1.0f) * scale;
            if (b == NW) v = 1.0f + 0.5f * v;
            h[i] = orthros_f32_to_bf16(v);
        }
        init[b] = h;
        for (int e = 0; e < NM; e++)
            if (!(got[e][b] = malloc(sizes[b]))) die("gemv early alloc");
    }
    void *scratch = NULL;
    int32_t *dpos = NULL, *ids = NULL, id[NM] = {-1, -1, -1, -1};
    if (cudaMalloc(&scratch, orthros_gemv_scratch_bytes()) != cudaSuccess ||
        cudaMemset(scratch, 0, orthros_gemv_scratch_bytes()) != cudaSuccess ||
        cudaMalloc((void **)&dpos, sizeof *dpos) != cudaSuccess ||
        cudaMalloc((void **)&ids, sizeof *ids) != cudaSuccess ||
        cudaMemcpy(dpos, &pos, sizeof pos, cudaMemcpyHostToDevice) != cudaSuccess)
        die("gemv early scratch");
    orthros_gemv_params p;
    memset(&p, 0, sizeof p);
    p.out = dv[OUT], p.x = dv[X], p.norm_w = norm ? dv[NW] : NULL, p.eps = 1e-5f, p.W = dv[W];
    p.n = 1, p.M = M, p.K = K;
    p.epilogue = epi, p.scratch = scratch, p.num_sms = gpu->info.sm_count;
    if (epi == ORTHROS_GEMV_ROPE) {
        p.k_cache = dv[KC], p.v_cache = dv[VC], p.pos = dpos, p.Hq = g.Hq, p.Hkv = g.Hkv, p.d = g.d, p.cap = cap;
        inv_freq_for(p.inv_freq, g.d);
    }
    if (epi == ORTHROS_GEMV_ARGMAX) p.ids = ids;
    char name[200];
    const int early0 = orthros_gemv_early();
    int rc = 0;
    for (int e = 0; e < NM && !rc; e++) {
        for (int b = 0; b < NB; b++)
            if (cudaMemcpy(dv[b], init[b], sizes[b], cudaMemcpyHostToDevice) != cudaSuccess) die("gemv early upload");
        if (!(rc = orthros_gemv_set_early(masks[e]))) rc = orthros_gemv_bf16(&p, 0);
        if (!rc && cudaDeviceSynchronize() != cudaSuccess) rc = ORTHROS_EDEVICE;
        for (int b = OUT; b < NB && !rc; b++)
            if (cudaMemcpy(got[e][b], dv[b], sizes[b], cudaMemcpyDeviceToHost) != cudaSuccess)
                die("gemv early download");
        if (!rc && cudaMemcpy(&id[e], ids, sizeof *ids, cudaMemcpyDeviceToHost) != cudaSuccess) die("gemv early ids");
    }
    if (orthros_gemv_set_early(early0)) die("gemv early");
    for (int e = 1; e < NM; e++) {
        const int exact = !(masks[e] & 32);
        snprintf(name, sizeof name, "gemv early %d against 0: epilogue %d%s M=%d K=%d%s", masks[e], epi,
                 norm ? " with a norm" : "", M, K, exact ? " (bytes that differ)" : "");
        if (rc) {
            op_rc(rc, name);
            continue;
        }
        if (!exact) {
            /* the output and the caches as floats, within bf16's tolerance */
            for (int b = OUT; b < NB; b++) {
                const int b32 = b == OUT && f32;
                const size_t n = sizes[b] / (b32 ? 4 : 2);
                float *ref = malloc(n * sizeof(float)), *have = malloc(n * sizeof(float));
                if (!ref || !have) die("gemv early alloc");
                for (size_t i = 0; i < n; i++) {
                    ref[i] = b32 ? ((float *)got[0][b])[i] : orthros_bf16_to_f32(((uint16_t *)got[0][b])[i]);
                    have[i] = b32 ? ((float *)got[e][b])[i] : orthros_bf16_to_f32(((uint16_t *)got[e][b])[i]);
                }
                char bn[240];
                snprintf(bn, sizeof bn, "%s, %s", name, b == OUT ? "out" : b == KC ? "k cache" : "v cache");
                report(bn, ref, have, n, TOL_BF16); /* the normed input moves by a rounding */
                free(ref), free(have);
            }
            continue;
        }
        size_t bad = 0;
        for (int b = OUT; b < NB; b++)
            for (size_t i = 0; i < sizes[b]; i++)
                bad += ((unsigned char *)got[0][b])[i] != ((unsigned char *)got[e][b])[i];
        bad += epi == ORTHROS_GEMV_ARGMAX && id[0] != id[e];
        const float want = 0.0f, have = (float)bad;
        report(name, &want, &have, 1, 0);
    }
    for (int b = 0; b < NB; b++) {
        free(init[b]), cudaFree(dv[b]);
        for (int e = 0; e < NM; e++) free(got[e][b]);
    }
    cudaFree(scratch), cudaFree(dpos), cudaFree(ids);
}

static void gemv_early_suite(void)
{
    /* the 1B and 8B q/k/v, gate/up, O, down and head widths, and awkward ones (odd M, K past a slice's chunks, a
     * head dim of 80, a position that wraps the cache ring) */
    const geom g1 = {32, 8, 64}, g8 = {32, 8, 128}, g80 = {12, 4, 80};
    test_gemv_early(ORTHROS_GEMV_ROPE, 1, 3072, 2048, g1, 4096, 4000);
    test_gemv_early(ORTHROS_GEMV_ROPE, 0, 3072, 2048, g1, 4096, 17);
    test_gemv_early(ORTHROS_GEMV_ROPE, 1, 6144, 4096, g8, 64, 1000);
    test_gemv_early(ORTHROS_GEMV_ROPE, 1, 1600, 1032, g80, 300, 299);
    test_gemv_early(ORTHROS_GEMV_ADD, 0, 2048, 2048, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_ADD, 0, 2048, 8192, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_ADD, 0, 517, 4104, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_ADD, 1, 1003, 200, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_SWIGLU, 1, 16384, 2048, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_SWIGLU, 1, 2000, 520, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_STORE, 1, 1003, 4104, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_STORE, 0, 100, 200, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_STORE_F32, 1, 1003, 72, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_ARGMAX, 1, 50000, 2048, g1, 1, 0);
    test_gemv_early(ORTHROS_GEMV_ARGMAX, 1, 7, 64, g1, 1, 0);
    if (!quick) test_gemv_early(ORTHROS_GEMV_ARGMAX, 1, 128256, 4096, g1, 1, 0);
    /* and with every early load, the fused ops of batch 1 against the cpu */
    const int early0 = orthros_gemv_early();
    if (orthros_gemv_set_early(59)) die("gemv early");
    const int fs[][2] = {{37, 72}, {8192, 2048}, {3, 4104}, {2048, 8192}};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) test_fused_products(1, fs[i][0], fs[i][1]);
    const geom gs[] = {{4, 2, 16}, {32, 8, 64}, {8, 2, 128}, {12, 4, 80}};
    const int pos1[] = {1000};
    for (size_t i = 0; i < sizeof gs / sizeof *gs; i++) test_fused_qkv_rope(gs[i], 1, 256, 64, pos1);
    test_fused_head(1, 7, 64, -1);
    test_fused_head(1, 1003, 2048, 0);
    if (orthros_gemv_set_early(early0)) die("gemv early");
}

static void gemv_chain_suite(void)
{
    /* the 1B layer's shapes, a layer of awkward widths (K not a multiple of 64, an odd F), chains of 2, 3 and 4 */
    test_gemv_chain(2048, 8192, 32, 8, 64, 4096, 4095, 4);
    test_gemv_chain(520, 1000, 6, 2, 64, 300, 17, 4);
    test_gemv_chain(520, 1000, 6, 2, 64, 300, 299, 3);
    test_gemv_chain(512, 768, 4, 2, 64, 300, 123, 4); /* the ring chain's widths, a group or two a block */
    if (!quick) test_gemv_chain(4096, 14336, 32, 8, 128, 64, 5, 2); /* the 8B O and gate/up: 440 MB of buffers */
    /* the normed inputs staged in two trips (stage_input) where the default mask stages them in one (32, rc_stage):
     * the chain must follow the mask to keep one by one's bits */
    const int early0 = orthros_gemv_early();
    if (early0 & 32) {
        if (orthros_gemv_set_early(early0 & ~32)) die("gemv early");
        test_gemv_chain(2048, 8192, 32, 8, 64, 4096, 4095, 4);
        test_gemv_chain(520, 1000, 6, 2, 64, 300, 17, 4);
        if (orthros_gemv_set_early(early0)) die("gemv early");
    }
}

static void gemv_suite(void)
{
    /* plain products through ORTHROS_GEMV: n 1..16, K not a multiple of 64 (or of 16), M not of 16; split K where
     * the rows are few (M 17, 100 against K 4104), none where they are many (M 8200) */
    const int ns[] = {1, 2, 3, 4, 8, 9, 16};
    for (int i = 0; i < 7; i++) {
        test_gemv_plain(ns[i], 17, 4104, 0);
        test_gemv_plain(ns[i], 100, 200, 0);
        test_gemv_plain(ns[i], 1003, 72, 1);
        if (!quick) test_gemv_plain(ns[i], 8200, 2048, 0);
    }
    test_gemv_plain(2, 1, 8, 0);
    test_gemv_plain(5, 2048, 8192, 0);
    test_gemv_plain(1, 50000, 2048, 1);
    /* the fused ops: the staged input split over blocks (n 16, K 4104), the composition path (n 17), split K at one
     * n-tile for every epilogue (n 5, M 40, K 4104: gemm_add's residual add after split K); K 3008 (47 k-blocks:
     * v6's stages of several k-blocks, the last split's last stage past K) */
    const int fs[][3] = {{1, 37, 72}, {3, 1003, 200}, {8, 64, 2048}, {9, 2048, 2048}, {16, 1000, 4104}, {16, 8, 8},
                         {17, 100, 64}, {1, 8192, 2048}, {5, 40, 4104}, {2, 2048, 8192}, {4, 6000, 4096}, {1, 3, 4104},
                         {11, 129, 8200}, {15, 777, 3000}, {12, 2048, 2056}, {16, 2048, 8192}, {13, 777, 3008}};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) {
        if (quick && fs[i][1] * fs[i][2] > 4000000) continue;
        test_fused_products(fs[i][0], fs[i][1], fs[i][2]);
    }
    /* q/k/v with RoPE: head dims 16 to 128 (80: 5 row tiles a block), GQA 1:1 to 8:1, cache rings the positions wrap */
    const geom gs[] = {{4, 2, 16}, {32, 8, 64}, {8, 2, 128}, {12, 4, 80}, {4, 4, 32}, {24, 3, 64}};
    /* n 1 at a position whose rotation is not the identity (pos 0 is in pos16) and whose slot wraps the ring */
    const int pos1[] = {1000}, pos3[] = {700, 5, 37}, pos4[] = {3, 900, 17, 64},
              pos16[] = {0, 1, 2, 3, 99, 100, 101, 102, 7, 8, 9, 10, 255, 256, 257, 511};
    for (size_t i = 0; i < sizeof gs / sizeof *gs; i++) {
        test_fused_qkv_rope(gs[i], 1, 256, 64, pos1);
        test_fused_qkv_rope(gs[i], 3, 200, 41, pos3);
        test_fused_qkv_rope(gs[i], 4, 1032, 300, pos4);
        test_fused_qkv_rope(gs[i], 8, 264, 300, pos16);
        test_fused_qkv_rope(gs[i], 16, 2048, 300, pos16);
    }
    /* the head: ties, a NaN row, a vocabulary of 7 (one block), 1003, 128256 (1002 blocks of 128 rows) */
    test_fused_head(1, 7, 64, -1);
    test_fused_head(3, 1003, 72, 1);
    test_fused_head(16, 50000, 256, 5);
    /* few row blocks and a long K: the argmax epilogue after split K (16 splits at one and two n-tiles), which the
     * vocabularies above never take (their row blocks fill the SMs) */
    test_fused_head(3, 300, 4104, -1);
    test_fused_head(12, 200, 2048, 4);
    test_fused_head(8, 1003, 2048, 2);
    /* batch 16 with a long K staged whole (v6: 133 KB of input beside four TMA stages; v1 splits K) */
    test_fused_head(16, 3000, 4104, 3);
    if (!quick) test_fused_head(2, 128256, 2048, -1);
}

/* The attention decode kernels with the positions in device memory and a larger bound in pos0 (a captured decode
 * step is planned for its cache-length bucket): the split plan is the bound's, every key past a sequence's own
 * position must stay out. Against the cpu at the true positions; every kept version the device runs. */
static void test_decode_bound(geom g, int B, const int *pos, int bound, int cap, int window)
{
    const int W = (g.Hq + 2 * g.Hkv) * g.d;
    pair qkv = pair_new((size_t)B * W, 0), kc = pair_new((size_t)B * cap * g.Hkv * g.d, 0),
         vc = pair_new((size_t)B * cap * g.Hkv * g.d, 0), out = pair_new((size_t)B * g.Hq * g.d, 0);
    pair_random(&qkv, 81, 1.5f, 0.0f);
    pair_random(&kc, 82, 1.5f, 0.0f);
    pair_random(&vc, 83, 1.0f, 0.0f);
    orthros_attn_layer Lc = layer_for(g), Lg = layer_for(g);
    Lc.k_cache = kc.c, Lc.v_cache = vc.c, Lg.k_cache = kc.g, Lg.v_cache = vc.g;
    Lc.cap = Lg.cap = cap;
    Lc.window = Lg.window = window;
    int32_t *pos_dev = gpu->alloc(gpu, (size_t)B * sizeof(int32_t));
    int bounds[8];
    for (int b = 0; b < B; b++) bounds[b] = bound - 1;
    if (!pos_dev || gpu->upload_ints(gpu, pos_dev, pos, B)) die("positions");
    Lg.pos_dev = pos_dev;
    const int vs[] = {4, 7, 8};
    for (int i = 0; i < 3; i++) {
        int rc = orthros_attn_full_decode_set_version(vs[i]);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("SKIP decode bound v%d: %s\n", vs[i], orthros_last_error());
            continue;
        }
        op_rc(rc, "decode version");
        pair_poison(&out);
        op_rc(cpu->attn_full_decode(cpu, out.c, qkv.c, &Lc, pos, B, 1), "attn cpu");
        op_rc(gpu->attn_full_decode(gpu, out.g, qkv.g, &Lg, bounds, B, 1), "attn gpu");
        char name[200];
        snprintf(name, sizeof name, "attn_full_decode v%d B=%d Hq=%d Hkv=%d d=%d pos[0]=%d bound=%d cap=%d win=%d pos_dev",
                 orthros_attn_full_decode_version(), B, g.Hq, g.Hkv, g.d, pos[0], bound, cap, window);
        check(name, &out, TOL_BF16);
    }
    if (orthros_attn_full_decode_set_version(0)) die("decode version");
    gpu->free(gpu, pos_dev);
    pair *all[] = {&qkv, &kc, &vc, &out};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) pair_free(all[i]);
}

static void decode_bound_suite(void)
{
    const geom gs[] = {{32, 8, 64}, {32, 8, 128}, {8, 8, 64}};
    const int p1[] = {4096}, p3[] = {4096, 1000, 7}, p1s[] = {300};
    for (int i = 0; i < 3; i++) {
        test_decode_bound(gs[i], 1, p1, 5120, 6000, 0);
        test_decode_bound(gs[i], 3, p3, 5120, 5120, 0);
        test_decode_bound(gs[i], 1, p1s, 320, 320, 0);
        test_decode_bound(gs[i], 3, p3, 5120, 5120, 64); /* a sliding window (v4 everywhere) */
    }
}

/* The cluster probe against what its loads must read (step_probe.h): every block's own word rank + 1 and the next
 * rank's next + 1, the gather's sums, every segment's cycles counted in the first round and in the later ones (none
 * with one round); clusters of 2, 8 (the portable most) and 9 and 16 (v8's sizes, non-portable). */
static void test_cluster_probe(void)
{
    unsigned long long *cyc = NULL;
    unsigned *err = NULL;
    if (cudaMalloc((void **)&cyc, ORTHROS_CLUSTER_PROBE_WORDS * sizeof *cyc) != cudaSuccess ||
        cudaMalloc((void **)&err, sizeof *err) != cudaSuccess)
        die("cluster probe alloc");
    const int cases[][3] = {{2, 3, 1}, {8, 5, 7}, {9, 8, 20}, {16, 2, 3}}; /* size, clusters, rounds */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int size = cases[i][0], clusters = cases[i][1], rounds = cases[i][2];
        char name[160];
        snprintf(name, sizeof name, "probe cluster, %d clusters of %d, %d rounds: loads read their words (exact)",
                 clusters, size, rounds);
        unsigned long long h[ORTHROS_CLUSTER_PROBE_WORDS];
        unsigned errors = 0;
        if (cudaMemset(cyc, 0, sizeof h) != cudaSuccess || cudaMemset(err, 0, sizeof *err) != cudaSuccess)
            die("cluster probe memset");
        const int rc = orthros_probe_cluster(cyc, err, clusters, size, rounds, 0);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("SKIP %s: %s\n", name, orthros_last_error());
            continue;
        }
        if (rc || cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(h, cyc, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(&errors, err, sizeof errors, cudaMemcpyDeviceToHost) != cudaSuccess) {
            op_rc(rc ? rc : ORTHROS_EDEVICE, name);
            continue;
        }
        /* every segment counted in the first round, and in the later ones where there are later ones (none of
         * them left 0; with one round the later sums must stay 0) */
        int empty = 0;
        for (int k = 0; k < ORTHROS_CLUSTER_PROBE_SEGMENTS; k++)
            empty += (h[ORTHROS_CLUSTER_PROBE_SEGMENTS + k] == 0) + ((h[k] == 0) != (rounds == 1));
        float z = 0.0f, w = (float)errors, e = (float)empty;
        report(name, &z, &w, 1, 0);
        snprintf(name, sizeof name, "probe cluster, %d clusters of %d: every segment counted", clusters, size);
        report(name, &z, &e, 1, 0);
    }
    cudaFree(cyc);
    cudaFree(err);
    /* refused before any launch: no words, 17 blocks, 1 block */
    unsigned long long fake_c = 0;
    unsigned fake_e = 0;
    const int bad[3] = {orthros_probe_cluster(NULL, NULL, 1, 2, 1, 0),
                        orthros_probe_cluster(&fake_c, &fake_e, 1, 17, 1, 0),
                        orthros_probe_cluster(&fake_c, &fake_e, 1, 1, 1, 0)};
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof what, "probe cluster, bad arguments %d", i);
        expect_einval(bad[i], what);
    }
}

/* The step probes against the counts they must leave (step_probe.h): a chain of n kernels adds n to every block's
 * word; a barrier kernel of r rounds sees every block's word at each round, leaves them at r, the arrival count at
 * 0 and the generation advanced by 2 r (the flat barrier: the count at 2 r blocks, the generation 0). */
static void test_step_probe(void)
{
    const int most = 2048;
    unsigned *d = NULL, *h = malloc((size_t)most * sizeof *h);
    if (!h || cudaMalloc((void **)&d, (size_t)(most + 3) * sizeof *d) != cudaSuccess) die("probe alloc");
    const int chains[][2] = {{1, 1}, {7, 0}, {7, 37}, {264, 98}, {1000, 5}};
    for (size_t i = 0; i < sizeof chains / sizeof *chains; i++) {
        const int blocks = chains[i][0], n = chains[i][1];
        char name[160];
        snprintf(name, sizeof name, "probe chain of %d kernels of %d blocks (exact)", n, blocks);
        if (cudaMemset(d, 0, (size_t)blocks * sizeof *d) != cudaSuccess) die("probe memset");
        int rc = orthros_probe_chain(d, blocks, n, 0);
        if (rc || cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(h, d, (size_t)blocks * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess) {
            op_rc(rc ? rc : ORTHROS_EDEVICE, name);
            continue;
        }
        int wrong = 0;
        for (int b = 0; b < blocks; b++) wrong += h[b] != (unsigned)n;
        float z = 0.0f, w = (float)wrong;
        report(name, &z, &w, 1, 0);
    }
    const int sms = gpu->info.sm_count > 0 ? gpu->info.sm_count : 1;
    const int bars[][2] = {{1, 3}, {5, 37}, {sms, 1}, {sms, 97}, {sms - 3 > 0 ? sms - 3 : 1, 11}};
    for (size_t i = 0; i < 2 * (sizeof bars / sizeof *bars); i++) {
        const int blocks = bars[i / 2][0], rounds = bars[i / 2][1], flat = (int)(i % 2);
        char name[160];
        snprintf(name, sizeof name, "probe barrier%s, %d blocks, %d rounds (exact)", flat ? " (flat)" : "", blocks, rounds);
        unsigned *words = d, *sync = d + most, *errors = d + most + 2;
        if (cudaMemset(d, 0, (size_t)(most + 3) * sizeof *d) != cudaSuccess) die("probe memset");
        int rc = orthros_probe_barrier(words, sync, errors, blocks, rounds, flat, 0);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("SKIP %s: %s\n", name, orthros_last_error());
            continue;
        }
        unsigned tail[3];
        if (rc || cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(h, words, (size_t)blocks * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(tail, sync, sizeof tail, cudaMemcpyDeviceToHost) != cudaSuccess) {
            op_rc(rc ? rc : ORTHROS_EDEVICE, name);
            continue;
        }
        const unsigned count = flat ? 2u * (unsigned)rounds * (unsigned)blocks : 0u, gen = flat ? 0u : 2u * (unsigned)rounds;
        int wrong = (int)tail[2] + (tail[0] != count) + (tail[1] != gen);
        for (int b = 0; b < blocks; b++) wrong += h[b] != (unsigned)rounds;
        float z = 0.0f, w = (float)wrong;
        report(name, &z, &w, 1, 0);
    }
    cudaFree(d);
    free(h);
}

/* The stream probe (step_probe.h) against the host: each product's y from its W and the input the probe's rule gives,
 * built from the probe's own y of the product before (bf16-rounded as the kernel rounds it), so every product is
 * checked on its own; the barrier's count left at (products that wait) x blocks; each block's stamps in order. Awkward
 * row counts (fewer rows than blocks, ranges that end mid-stage), K from 256 to 2304, every ring depth; in a second
 * list, split products (their K over the blocks that wrote their input: many phases a thread at M 40 and 8, one at
 * M 4096; the first and last summed in fixed point, read back from acc by the next product), one after a product
 * that waits and one after one that does not. shape: M, K, wait, split. */
#define SP_NP_MAX 8
static void stream_probe_list(const int (*shape)[4], int np, const char *tag)
{
    const int sms = gpu->info.sm_count > 0 ? gpu->info.sm_count : 1;
    const int grids[] = {5, sms};
    orthros_stream_product list[SP_NP_MAX], *list_dev = NULL;
    uint16_t *w[SP_NP_MAX];
    size_t ymax = 0;
    int kmax = 0;
    unsigned *sync = NULL;
    unsigned long long *stamps = NULL;
    void *x0 = NULL;
    if (cudaMalloc((void **)&list_dev, sizeof list) != cudaSuccess || cudaMalloc((void **)&sync, 4) != cudaSuccess ||
        cudaMalloc((void **)&stamps, (size_t)2 * np * sms * 8) != cudaSuccess ||
        cudaMalloc(&x0, 2 * 256) != cudaSuccess)
        die("probe alloc");
    uint16_t hx0[256];
    for (int k = 0; k < 256; k++)
        hx0[k] = orthros_f32_to_bf16(2.0f * orthros_uniform(seed_base ^ 0x5eedull, (uint64_t)k) - 1.0f);
    if (cudaMemcpy(x0, hx0, sizeof hx0, cudaMemcpyHostToDevice) != cudaSuccess) die("probe upload");
    for (int p = 0; p < np; p++) {
        const int M = shape[p][0], K = shape[p][1];
        const size_t e = (size_t)M * K;
        w[p] = malloc(e * 2);
        const float scale = 1.7f / sqrtf((float)K); /* keeps |y| near |x| along the chain */
        for (size_t i = 0; i < e; i++)
            w[p][i] =
                orthros_f32_to_bf16(scale * (2.0f * orthros_uniform(seed_base ^ (0x77ull + (uint64_t)p), i) - 1.0f));
        void *dw = NULL;
        float *dy = NULL;
        unsigned long long *dacc = NULL;
        if (cudaMalloc(&dw, e * 2) != cudaSuccess || cudaMalloc((void **)&dy, (size_t)M * 4) != cudaSuccess ||
            (shape[p][3] == 2 && cudaMalloc((void **)&dacc, (size_t)M * 8) != cudaSuccess) ||
            cudaMemcpy(dw, w[p], e * 2, cudaMemcpyHostToDevice) != cudaSuccess)
            die("probe upload");
        list[p] = (orthros_stream_product){dw, dy, M, K, shape[p][2], shape[p][3], dacc};
        if ((size_t)M > ymax) ymax = (size_t)M;
        if (K > kmax) kmax = K;
    }
    float *y = malloc((size_t)np * ymax * sizeof *y), *ref = malloc(ymax * sizeof *ref), *x = malloc(kmax * sizeof *x);
    unsigned long long *hs = malloc((size_t)2 * np * sms * sizeof *hs), *hacc = malloc(ymax * sizeof *hacc);
    for (size_t g = 0; g < sizeof grids / sizeof *grids; g++)
        for (int way = 0; way < 9; way++) {
            const int blocks = grids[g], stages = 2 + 2 * (way % 3), mode = way / 3;
            char name[160];
            snprintf(name, sizeof name, "probe stream%s, %d blocks, %d stages, %s", tag, blocks, stages,
                     mode == 0 ? "fma" : mode == 1 ? "tensor cores" : "no consumers");
            for (int p = 0; p < np; p++)
                if (cudaMemset(list[p].y, 0xff, (size_t)list[p].M * 4) != cudaSuccess) die("probe memset");
            if (cudaMemset(sync, 0, 4) != cudaSuccess) die("probe memset");
            int rc =
                orthros_probe_stream(list, list_dev, np, x0, sync, stamps, blocks, stages, mode, way % 2 ? 1 : -1, 0);
            if (rc == ORTHROS_EUNSUPPORTED) {
                printf("SKIP %s: %s\n", name, orthros_last_error());
                continue;
            }
            unsigned count = 0;
            if (rc || cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(&count, sync, 4, cudaMemcpyDeviceToHost) ||
                cudaMemcpy(hs, stamps, (size_t)2 * np * blocks * 8, cudaMemcpyDeviceToHost) != cudaSuccess) {
                op_rc(rc ? rc : ORTHROS_EDEVICE, name);
                continue;
            }
            for (int p = 0; p < np; p++) {
                float *yh = y + (size_t)p * ymax;
                if (list[p].split == 2) { /* the fixed-point sums, read as the kernel's next product reads them */
                    if (cudaMemcpy(hacc, list[p].acc, (size_t)list[p].M * 8, cudaMemcpyDeviceToHost) != cudaSuccess)
                        die("probe download");
                    for (int m = 0; m < list[p].M; m++)
                        yh[m] = (float)((double)(long long)hacc[m] * (1.0 / (double)(1ull << ORTHROS_STREAM_PROBE_FIX_SHIFT)));
                } else if (cudaMemcpy(yh, list[p].y, (size_t)list[p].M * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
                    die("probe download");
                }
            }
            for (int p = 0; p < np; p++) {
                const int M = list[p].M, K = list[p].K, dep = p > 0 && list[p - 1].wait, split = list[p].split;
                const float *yp = p > 0 ? y + (size_t)(p - 1) * ymax : NULL;
                for (int k = 0; k < K; k++)
                    x[k] = split ? bf16_round(yp[2 * k] * yp[2 * k + 1])
                           : dep ? bf16_round(yp[k % list[p - 1].M])
                                 : orthros_bf16_to_f32(hx0[k % list[0].K]);
                for (int r = 0; r < M; r++) { /* without consumers y is written as 0 */
                    double s = 0.0;
                    for (int k = 0; k < K && mode < 2; k++)
                        s += (double)orthros_bf16_to_f32(w[p][split ? (size_t)k * M + r : (size_t)r * K + k]) * x[k];
                    ref[r] = (float)s;
                }
                char pn[200];
                snprintf(pn, sizeof pn, "%s: product %d (%d x %d%s)", name, p, M, K,
                         split == 2 ? ", split, fixed point" : split ? ", split" : "");
                report(pn, ref, y + (size_t)p * ymax, (size_t)M, mode < 2 ? 1e-10 : 0);
            }
            int waits = 0, wrong = 0;
            for (int p = 0; p < np; p++) waits += list[p].wait != 0;
            wrong += count != (unsigned)(waits * blocks);
            for (int b = 0; b < blocks; b++) /* a block stages p's input, writes p's y, stages p + 1's ... */
                for (int p = 0; p < np; p++) {
                    const unsigned long long go = hs[(size_t)(np + p) * blocks + b], end = hs[(size_t)p * blocks + b];
                    wrong += end < go || (p > 0 && go < hs[(size_t)(p - 1) * blocks + b]);
                }
            snprintf(name + strlen(name), sizeof name - strlen(name), ": barrier count and stamps (exact)");
            float z = 0.0f, wf = (float)wrong;
            report(name, &z, &wf, 1, 0);
        }
    if (!tag[0]) { /* lists the probe refuses */
        orthros_stream_product bad[3] = {list[0], list[1], list[2]};
        bad[0].K = 300;
        const int rc = orthros_probe_stream(bad, list_dev, 1, x0, sync, NULL, 5, 4, 0, -1, 0);
        const int rc3 = orthros_probe_stream(list, list_dev, np, x0, sync, NULL, 5, 3, 0, -1, 0);
        const int rc4 = orthros_probe_stream(list, list_dev, np, x0, sync, NULL, 5, 4, 3, -1, 0);
        /* a split product after one that waits, one whose input has not 2K rows, a fixed-point one without acc */
        bad[0] = list[1], bad[0].wait = 1; /* 300 rows, then a grid step */
        bad[1] = list[2], bad[1].M = 40, bad[1].K = 150, bad[1].split = 1;
        const int rcs = orthros_probe_stream(bad, list_dev, 2, x0, sync, NULL, 5, 4, 0, -1, 0);
        bad[0] = list[0], bad[1] = list[1]; /* 37 rows and a step, then 300 rows that do not wait */
        bad[2] = list[2], bad[2].M = 8, bad[2].K = 16, bad[2].split = 1;
        const int rcr = orthros_probe_stream(bad, list_dev, 3, x0, sync, NULL, 5, 4, 0, -1, 0);
        bad[2].M = 16, bad[2].K = 150, bad[2].split = 2, bad[2].acc = NULL;
        const int rca = orthros_probe_stream(bad, list_dev, 3, x0, sync, NULL, 5, 4, 0, -1, 0);
        float z = 0.0f;
        float wf = (float)(rc != ORTHROS_EINVAL) + (float)(rc3 != ORTHROS_EINVAL) + (float)(rc4 != ORTHROS_EINVAL) +
                   (float)(rcs != ORTHROS_EINVAL) + (float)(rcr != ORTHROS_EINVAL) + (float)(rca != ORTHROS_EINVAL);
        report("probe stream refuses K 300, 3 stages, consumers 3 and three split products (exact)", &z, &wf, 1, 0);
    }
    for (int p = 0; p < np; p++) {
        cudaFree((void *)list[p].W);
        cudaFree(list[p].y);
        cudaFree(list[p].acc);
        free(w[p]);
    }
    cudaFree(list_dev), cudaFree(sync), cudaFree(stamps), cudaFree(x0);
    free(y), free(ref), free(x), free(hs), free(hacc);
}

static void test_stream_probe(void)
{
    static const int plain[6][4] = {{37, 256, 1, 0},   {300, 512, 0, 0}, {3, 768, 1, 0},
                                    {1000, 1024, 1, 0}, {64, 2304, 0, 0}, {129, 256, 1, 0}};
    static const int split[8][4] = {{37, 256, 1, 0},  {300, 512, 0, 0},  {40, 150, 1, 2}, {1000, 256, 0, 0},
                                    {4096, 500, 0, 1}, {64, 2304, 0, 0}, {8, 32, 1, 2},   {16, 256, 0, 0}};
    stream_probe_list(plain, 6, "");
    stream_probe_list(split, 8, " (split products)");
}

/* A suite run on a cuda backend made with the switch var=val (a backend's own setting) as `gpu`, then the main one. */
static void with_switch(const char *var, const char *val, void (*suite)(void))
{
    orthros_backend *plain_gpu = gpu, *be = NULL;
    setenv(var, val, 1);
    int rc = orthros_backend_cuda_create(&be);
    unsetenv(var);
    if (rc) {
        char what[96];
        snprintf(what, sizeof what, "cuda backend with %s=%s", var, val);
        die(what);
    }
    gpu = be;
    suite();
    gpu = plain_gpu;
    be->destroy(be);
}

/* The sections, in the order main runs them. ORTHROS_TEST_ONLY=S1,S2,... runs those alone (to rerun the last ones when
 * an earlier one hangs, or one at a time under compute-sanitizer: ci/gpu.sh's memcheck step); windowpass is the
 * window section's first pass alone. `test_cuda_ops --sections` prints the names, one a line. Each section run says
 * when it starts, in seconds from the program's start: a run cut by a time limit shows where its time went. */
static const char *const section_names[] = {
    "ops",       "gemmlt",  "full",      "linear",      "prefill5", "read",      "prefill6",  "decode6",
    "linear5",   "decode7", "prefill7",  "readprobe",   "linear7",  "window",    "windowpass", "stepprobe",
    "streamprobe", "clusterprobe", "gemv",  "decodebound", "gemvnorm",  "gemvearly", "gemvchain", "decode8",  "attno",
    "qkvattn",   "head8",   "mlp",
};
#define N_SECTIONS ((int)(sizeof section_names / sizeof section_names[0]))

static double t_start;
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The comma-separated list's item at *p, its length in *len, *p moved past it; NULL past the last item */
static const char *list_item(const char **p, size_t *len)
{
    if (!**p) return NULL;
    const char *s = *p, *e = strchr(s, ',');
    *len = e ? (size_t)(e - s) : strlen(s);
    *p = e ? e + 1 : s + *len;
    return s;
}

/* Whether the item s[0..len) is name */
static int item_is(const char *s, size_t len, const char *name) { return len == strlen(name) && !strncmp(s, name, len); }

/* Whether the comma-separated list holds name as one of its items */
static int list_has(const char *list, const char *name)
{
    size_t len;
    for (const char *p = list, *s; (s = list_item(&p, &len));)
        if (item_is(s, len, name)) return 1;
    return 0;
}

/* ORTHROS_TEST_ONLY's items that name no section (a typo would otherwise run nothing and pass): 0, or 2 with a
 * message naming the bad item and the sections. */
static int check_only(const char *only)
{
    size_t len;
    for (const char *p = only, *s; (s = list_item(&p, &len));) {
        int known = 0;
        for (int i = 0; i < N_SECTIONS && !known; i++) known = item_is(s, len, section_names[i]);
        if (!known) {
            fprintf(stderr, "ORTHROS_TEST_ONLY: no section \"%.*s\"; the sections:", (int)(len > 64 ? 64 : len), s);
            for (int i = 0; i < N_SECTIONS; i++) fprintf(stderr, " %s", section_names[i]);
            fprintf(stderr, "\n");
            return 2;
        }
    }
    return 0;
}

/* Whether section name runs, announcing it when it does */
static int section(const char *name)
{
    int listed = 0;
    for (int i = 0; i < N_SECTIONS; i++) listed |= !strcmp(section_names[i], name);
    if (!listed) {
        fprintf(stderr, "test_cuda_ops: section %s is not in section_names\n", name);
        exit(2);
    }
    const char *only = getenv("ORTHROS_TEST_ONLY");
    const int run = !only || !*only || list_has(only, name);
    if (run) printf("== section %s at %.1f s\n", name, now_s() - t_start);
    return run;
}

int main(int argc, char **argv)
{
    /* Line-buffered even into a pipe: a run killed by a timeout (a hung kernel) keeps what it printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    t_start = now_s();
    if (argc == 2 && !strcmp(argv[1], "--sections")) {
        for (int i = 0; i < N_SECTIONS; i++) printf("%s\n", section_names[i]);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: test_cuda_ops [--sections]  (ORTHROS_TEST_ONLY=S1,S2 runs those sections; "
                        "ORTHROS_TEST_QUICK=1 the quick cases; ORTHROS_TEST_SEED=N replays a seed)\n");
        return 2;
    }
    const char *only_env = getenv("ORTHROS_TEST_ONLY");
    if (only_env && check_only(only_env)) return 2;
    if (!orthros_cuda_available()) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    const char *s = getenv("ORTHROS_TEST_SEED");
    seed_base = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    quick = getenv("ORTHROS_TEST_QUICK") != NULL;
    printf("seed %llu (set ORTHROS_TEST_SEED to replay)\n", (unsigned long long)seed_base);
    if (orthros_backend_cpu_create(&cpu)) die("cpu backend");
    if (orthros_backend_cuda_create(&gpu)) die("cuda backend");

    if (section("ops")) {
        test_fill_upload();
        test_embed(1, 200);
        test_embed(77, 2048);
        test_embed(5, 13);
        for (int fused = 0; fused < 2; fused++) {
            test_rmsnorm(1, 64, fused);
            test_rmsnorm(33, 1000, fused);
            test_rmsnorm(7, 4096, fused);
            test_rmsnorm(5, 1003, fused); /* not a multiple of 8: the scalar kernel */
            test_rmsnorm(9, 2056, fused); /* a multiple of 8, not of 256 threads x 8 */
        }
        test_gemm(1, 96, 64, 0);
        test_gemm(37, 1000, 200, 0);
        test_gemm(128, 512, 4096, 0);
        test_gemm(1, 1003, 256, 1);
        test_gemm(5, 1003, 256, 1);
        test_swiglu(1, 64);
        test_swiglu(45, 1000);
        test_swiglu(3, 8192 + 8); /* several blocks a row */
        test_swiglu(7, 1003);     /* not a multiple of 8: the scalar kernel */
        test_argmax(3, 50000);
        test_argmax(1, 7);
    }
    if (section("gemmlt")) gemm_lt_suite();
    if (section("full")) full_suite();
    if (section("linear")) linear_suite(3, 4);
    /* The wgmma versions (sm_90a builds): v5, run on the H200 and the default there, then the versions not yet
     * run on a GPU when written, last, so that a hang or fault in one of them leaves every other result printed. */
    if (section("prefill5")) prefill_versions(5, 5);
    if (section("read")) test_read(0, 0);
    if (section("prefill6")) prefill_versions(6, 6);
    if (section("decode6")) decode_v6(6);
    if (section("linear5")) linear_suite(5, 6);
    /* Decode v7 and prefill v7 (the defaults on sm_90 / sm_90a), then the read patterns beside the ceiling's
     * (probes). */
    if (section("decode7")) decode_v6(7);
    if (section("prefill7")) prefill_versions(7, 7);
    if (section("readprobe")) test_read(1, ORTHROS_READ_VARIANTS - 1);
    /* Linear prefill v7 (wgmma at head dim 128, the default on sm_90a; first run on the H200 2026-12-01). */
    if (section("linear7")) linear_suite(7, 7);
    /* The local window of a converted model's linear formula, every kept linear prefill version (passing on the H200
     * at e470e63); first the window pass alone, both versions (its v2, the default, written after that run: not yet
     * run). */
    if (section("window") || section("windowpass")) window_pass_suite();
    if (section("window")) window_suite(3, ORTHROS_ATTN_LINEAR_PREFILL_LATEST);
    if (section("stepprobe")) test_step_probe();
    if (section("streamprobe")) test_stream_probe();
    /* The cluster probe (written 2026-12-06, not yet run on a GPU). */
    if (section("clusterprobe")) test_cluster_probe();
    /* The whole-model decode work (docs/kernels.md, "Whole-model decode"; passing on the H200 at 3ba2852): the
     * GEMV kernel through ORTHROS_GEMV and the fused decode ops, then the decode kernels planned for a bound. */
    if (section("gemv")) {
        setenv("ORTHROS_GEMV", "1", 1);
        if (orthros_backend_cuda_create(&gpu_gemv)) die("cuda backend with ORTHROS_GEMV=1");
        unsetenv("ORTHROS_GEMV");
        gemv_suite();
        /* again with gemv.cu's version 1 alone, with version 2 (batch 1-4; the default, version 3, takes the same
         * kernel at batch 1-8 with another plan: U 4 at batch 1, a K split for the fullest waves) and with version 4
         * (v3's groups pipelined, batch 1-4; v3 above), with version 5 (the ring kernel at batch 9-16, v3 below)
         * at each of its ring depths, and with version 6 below */
        for (int v = 1; v <= 4; v += v == 2 ? 2 : 1) {
            printf("-- the gemv section again with gemv.cu's version %d\n", v);
            if (orthros_gemv_set_version(v)) die("gemv version");
            gemv_suite();
        }
        /* v3 with its slices a group forced (orthros_gemv_set_kw: the plan's KW against 1, 2 and 4) */
        if (orthros_gemv_set_version(0)) die("gemv version");
        for (int kw = 1; kw <= 4; kw *= 2) {
            printf("-- the gemv section again with v3's KW forced to %d\n", kw);
            if (orthros_gemv_set_kw(kw)) die("gemv kw");
            gemv_suite();
        }
        if (orthros_gemv_set_kw(0)) die("gemv kw");
        /* v3 with the q/k/v grid capped at 37 blocks (orthros_gemv_set_qkv_blocks: more block rounds a block, the
         * dependent let launch as it starts) */
        printf("-- the gemv section again with v3's q/k/v grid capped at 37 blocks\n");
        if (orthros_gemv_set_qkv_blocks(37)) die("gemv qkv blocks");
        gemv_suite();
        if (orthros_gemv_set_qkv_blocks(0)) die("gemv qkv blocks");
        /* v3 with the grid balanced the other way (orthros_gemv_set_balance: products of several waves) */
        printf("-- the gemv section again with v3's grid balance %d\n", !ORTHROS_GEMV_BALANCE_DEFAULT);
        if (orthros_gemv_set_balance(!ORTHROS_GEMV_BALANCE_DEFAULT)) die("gemv balance");
        gemv_suite();
        if (orthros_gemv_set_balance(ORTHROS_GEMV_BALANCE_DEFAULT)) die("gemv balance");
        for (int slots = 4; slots <= 8; slots += 2) {
            printf("-- the gemv section again with gemv.cu's version 5, %d ring slots a warp\n", slots);
            if (orthros_gemv_set_version(5) || orthros_gemv_set_ring_slots(slots)) die("gemv version 5");
            gemv_suite();
        }
        /* version 6 (the TMA ring at batch 9-16 on sm_90, v3 below; v1 without sm_90): the plan's rows a tile, then
         * each forced */
        const char *rows6[] = {NULL, "32", "64", "128"};
        for (int r = 0; r < 4; r++) {
            printf("-- the gemv section again with gemv.cu's version 6, %s rows a tile\n",
                   rows6[r] ? rows6[r] : "the plan's");
            if (rows6[r]) setenv("ORTHROS_GEMV6_ROWS", rows6[r], 1);
            if (orthros_gemv_set_version(6)) die("gemv version 6");
            gemv_suite();
            unsetenv("ORTHROS_GEMV6_ROWS");
        }
        /* and its stages as bulk copies a row (ORTHROS_GEMV6_BULK=1: K a multiple of 64; TMA boxes else), with the
         * plan's rows and with 32 (SWIGLU's last tile past M: rows not asked) */
        for (int r = 0; r < 2; r++) {
            printf("-- the gemv section again with gemv.cu's version 6, bulk copies, %s rows a tile\n",
                   r ? "32" : "the plan's");
            setenv("ORTHROS_GEMV6_BULK", "1", 1);
            if (r) setenv("ORTHROS_GEMV6_ROWS", "32", 1);
            gemv_suite();
            unsetenv("ORTHROS_GEMV6_ROWS");
            unsetenv("ORTHROS_GEMV6_BULK");
        }
        /* and its TMA stages read by wgmma (ORTHROS_GEMV6_WGMMA=1, sm_90a; 64 or 128 rows a tile, v1 where neither
         * fits), with the plan's rows and each forced */
        const char *rows_wg[] = {NULL, "64", "128"};
        for (int r = 0; r < 3; r++) {
            printf("-- the gemv section again with gemv.cu's version 6 on wgmma, %s rows a tile\n",
                   rows_wg[r] ? rows_wg[r] : "the plan's");
            setenv("ORTHROS_GEMV6_WGMMA", "1", 1);
            if (rows_wg[r]) setenv("ORTHROS_GEMV6_ROWS", rows_wg[r], 1);
            gemv_suite();
            unsetenv("ORTHROS_GEMV6_ROWS");
            unsetenv("ORTHROS_GEMV6_WGMMA");
        }
        if (orthros_gemv_set_version(0) || orthros_gemv_set_ring_slots(0)) die("gemv version");
        gpu_gemv->destroy(gpu_gemv);
        /* again with every GEMV launch a programmatic dependent one (ORTHROS_DECODE_PDL=1): the fused ops through a
         * backend made with it, the plain products through one made with both switches */
        orthros_backend *plain_gpu = gpu, *pdl = NULL;
        setenv("ORTHROS_DECODE_PDL", "1", 1);
        if (orthros_backend_cuda_create(&pdl)) die("cuda backend with ORTHROS_DECODE_PDL=1");
        setenv("ORTHROS_GEMV", "1", 1);
        if (orthros_backend_cuda_create(&gpu_gemv)) die("cuda backend with ORTHROS_GEMV=1 ORTHROS_DECODE_PDL=1");
        unsetenv("ORTHROS_GEMV");
        unsetenv("ORTHROS_DECODE_PDL");
        printf("-- the gemv section again, every GEMV a programmatic dependent launch (ORTHROS_DECODE_PDL=1)\n");
        gpu = pdl;
        gemv_suite();
        gpu = plain_gpu;
        gpu_gemv->destroy(gpu_gemv);
        pdl->destroy(pdl);
    }
    if (section("decodebound")) decode_bound_suite();
    /* The normed products' input against rmsnorm.cu (passing on the H200 at fc6c377). */
    if (section("gemvnorm")) gemv_norm_suite();
    /* v3's early loads at batch 1 (orthros_gemv_set_early; passing on the H200 at 4eb7c85, 129 checks). */
    if (section("gemvearly")) gemv_early_suite();
    /* The chain of gemv.cu (last, so a hang leaves the rest printed). */
    if (section("gemvchain")) gemv_chain_suite();
    /* Decode v8 (clusters merging a head's splits in distributed shared memory; the default on sm_90, passing on the
     * H200 at 05ebf81; the "full" section above runs it as the default too). */
    if (section("decode8")) {
        decode_v6(8);
        /* again with v8 held to 160 registers (orthros_attn_full_decode_set_regs) */
        printf("-- decode v8 again with its kernel held to 160 registers\n");
        if (orthros_attn_full_decode_set_regs(160)) die("decode regs");
        decode_v6(8);
        if (orthros_attn_full_decode_set_regs(0)) die("decode regs");
        /* again with its softmax as written (orthros_attn_full_decode_set_lean(0): every tile masked, the scores
         * scaled, exp2f; the lean form, the default, ran above), and without ORTHROS_TEST_QUICK held to 160 registers
         * too (the same body; only the registers' allocation differs) */
        printf("-- decode v8 again with its softmax as written (lean 0)\n");
        if (orthros_attn_full_decode_set_lean(0)) die("decode lean");
        decode_v6(8);
        if (!quick) {
            if (orthros_attn_full_decode_set_regs(160)) die("decode regs");
            printf("-- decode v8 again with its softmax as written, held to 160 registers\n");
            decode_v6(8);
        }
        if (orthros_attn_full_decode_set_regs(0) || orthros_attn_full_decode_set_lean(ORTHROS_ATTN_DECODE_LEAN_DEFAULT))
            die("decode regs");
        /* again with the merge pushed to each cluster's rank 0 (orthros_attn_full_decode_set_push; the calls whose
         * partials its slots do not hold, multi-row sequences on large clusters, pull as before) */
        printf("-- decode v8 again with its merge pushed to rank 0\n");
        if (orthros_attn_full_decode_set_push(1)) die("decode push");
        decode_v6(8);
        if (orthros_attn_full_decode_set_push(0)) die("decode push");
        /* again with the barriers that only keep shared memory alive arriving with cluster.sync's release
         * (orthros_attn_full_decode_set_relaxed(0); relaxed, the default, passed 1242 checks on an H100 at 24c2c7f) */
        printf("-- decode v8 again with its end barrier's release (relaxed 0)\n");
        if (orthros_attn_full_decode_set_relaxed(0)) die("decode relaxed");
        decode_v6(8);
        if (orthros_attn_full_decode_set_relaxed(ORTHROS_ATTN_DECODE_RELAXED_DEFAULT)) die("decode relaxed");
        /* again with every call's tiles claimed a stage (orthros_attn_full_decode_set_claim(1): from 1 key; off by
         * default): the same sums over other keys a block, checked against the cpu's as every v8 call is; a negative
         * bound refused */
        printf("-- decode v8 again with its tiles claimed (claim from 1 key)\n");
        if (orthros_attn_full_decode_set_claim(1)) die("decode claim");
        decode_v6(8);
        if (orthros_attn_full_decode_set_claim(ORTHROS_ATTN_DECODE_CLAIM_DEFAULT)) die("decode claim");
        expect_einval(orthros_attn_full_decode_set_claim(-1), "decode claim -1");
        /* again with the tile that holds the newest key asked before the dependency wait (ORTHROS_DECODE_ATTN_EARLY=1:
         * its rows below pos0 before, the rest after; passing on an H100 at d8213cf, measured slower: opt-in) */
        printf("-- decode v8 again with ORTHROS_DECODE_ATTN_EARLY=1\n");
        with_switch("ORTHROS_DECODE_ATTN_EARLY", "1", decode_v8_suite);
    }
    /* The decode step's attention with O in v8's clusters (ORTHROS_DECODE_ATTN_O=1; passing on the H200 at d4033e6). */
    if (section("attno")) {
        with_switch("ORTHROS_DECODE_ATTN_O", "1", attn_o_suite);
        setenv("ORTHROS_DECODE_ATTN_EARLY", "1", 1); /* and with the newest key's tile asked early (measured slower: opt-in) */
        with_switch("ORTHROS_DECODE_ATTN_O", "1", attn_o_suite);
        unsetenv("ORTHROS_DECODE_ATTN_EARLY");
        /* and with v8's barriers that only keep shared memory alive arriving with cluster.sync's release (dec8_o's
         * after its gather; relaxed is the default; the backend sets it from the environment as it is made) */
        setenv("ORTHROS_ATTN_DECODE_RELAXED", "0", 1);
        with_switch("ORTHROS_DECODE_ATTN_O", "1", attn_o_suite);
        unsetenv("ORTHROS_ATTN_DECODE_RELAXED");
        if (orthros_attn_full_decode_set_relaxed(ORTHROS_ATTN_DECODE_RELAXED_DEFAULT)) /* process-wide: back */
            die("decode relaxed");
        /* and with v8's tiles claimed a stage (ORTHROS_ATTN_DECODE_CLAIM=1: every call; off by default) */
        setenv("ORTHROS_ATTN_DECODE_CLAIM", "1", 1);
        with_switch("ORTHROS_DECODE_ATTN_O", "1", attn_o_suite);
        unsetenv("ORTHROS_ATTN_DECODE_CLAIM");
        if (orthros_attn_full_decode_set_claim(ORTHROS_ATTN_DECODE_CLAIM_DEFAULT)) die("decode claim");
    }
    /* The decode step's q/k/v projection and attention in one launch (ORTHROS_DECODE_QKV_ATTN=1; passing on the H200
     * at d17a3c7). */
    if (section("qkvattn")) with_switch("ORTHROS_DECODE_QKV_ATTN", "1", qkv_attn_suite);
    /* The head through an int8 copy (ORTHROS_DECODE_HEAD8, the default: its first form passed on the H200 in
     * data/results/h200-2026-12-05-head8, its depths, norm_argmax and the integer screen on an H100 in
     * data/results/h100-2026-12-05-head8-default): the copy and steps on it against the cpu reference, then the
     * backend's head in each form, the default's (the integer screen 4 deep) among them, and off. */
    if (section("head8")) {
        head8_direct(1, 3001, 2048, 0);
        head8_direct(3, 1000, 1040, 0);
        head8_direct(4, 517, 16, 0);
        head8_direct(2, 2000, 2048, 1);
        /* dp4a, depth, one launch, next rows into L2, the grid cut to whole rounds */
        static const char *const forms[][5] = {{"0", "2", "0", "1", "0"}, {"0", "4", "0", "1", "0"},
                                               {"1", "4", "0", "1", "0"}, {"1", "2", "0", "1", "0"},
                                               {"1", "4", "1", "1", "0"}, {"0", "2", "1", "1", "0"},
                                               {"1", "4", "0", "0", "0"}, {"1", "4", "0", "1", "1"}};
        static const char *const vars[5] = {"ORTHROS_HEAD8_DP4A", "ORTHROS_HEAD8_DEPTH", "ORTHROS_HEAD8_ONE_LAUNCH",
                                            "ORTHROS_HEAD8_NEXT_PF", "ORTHROS_HEAD8_EVEN"};
        for (int f = 0; f < (int)(sizeof forms / sizeof *forms); f++) {
            for (int v = 0; v < 5; v++) setenv(vars[v], forms[f][v], 1);
            with_switch("ORTHROS_DECODE_HEAD8", "1", head8_suite);
        }
        for (int v = 0; v < 5; v++) unsetenv(vars[v]);
        with_switch("ORTHROS_DECODE_HEAD8", "0", head8_suite); /* norm_argmax through the bf16 head */
    }
    /* The decode step's MLP in one launch (ORTHROS_DECODE_MLP=1; passing on the H200 at eeab839). */
    if (section("mlp"))
        for (int mode = 1; mode <= 2; mode++) { /* 2: the ring kernel at batch 1, K 2048 and 4096 (passing at 37edfb3
                                                  * with its W_down rows copied one by one; its 2-d box since: not yet
                                                  * run on a GPU) */
            printf("-- the MLP in one launch, ORTHROS_DECODE_MLP=%d\n", mode);
            with_switch("ORTHROS_DECODE_MLP", mode == 1 ? "1" : "2", mlp_suite);
        }

    printf("\n%d passed, %d failed in %.1f s\n", n_pass, n_fail, now_s() - t_start);
    gpu->destroy(gpu);
    cpu->destroy(cpu);
    return n_fail ? 1 : 0;
}
