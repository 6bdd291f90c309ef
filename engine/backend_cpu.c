/* The cpu backend: plain C11 with OpenMP, fp32 everywhere. It is the reference that every cuda kernel is
 * tested against, so each op is written for clarity and determinism first: every output element is computed
 * in a fixed order that does not depend on the thread count or on how the caller chunks its rows. */
#define _GNU_SOURCE
#include "backend.h"
#include "tp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CPU_MAX_FEATURE 2048
/* Below about this many elements (or multiply-adds) an op runs on one thread: waking the team costs more, and
 * on a loaded machine a parallel region waits for its slowest thread, which may wait a whole time slice. */
#define CPU_PAR_MIN 16384

static inline float *fp(void *p) { return (float *)p; }
static inline const float *cfp(const void *p) { return (const float *)p; }

/* A dot product with 8 independent partial sums (so that it vectorises) reduced in a fixed order. */
static float dot_f32(const float *a, const float *b, int K)
{
    float acc[8] = {0};
    int k = 0;
    for (; k + 8 <= K; k += 8)
        for (int u = 0; u < 8; u++) acc[u] += a[k + u] * b[k + u];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; k < K; k++) s += a[k] * b[k];
    return s;
}

/* The cpu backend's only state: its timer marks. */
typedef struct {
    double marks[ORTHROS_TIMER_SLOTS];
} cpu_impl;

static void cpu_destroy(orthros_backend *be)
{
    free(be->impl);
    free(be);
}

/* Work on the cpu is done when the call returns, so a mark is the clock now. */
static int cpu_timer_mark(orthros_backend *be, int slot)
{
    if (slot < 0 || slot >= ORTHROS_TIMER_SLOTS) return orthros_error(ORTHROS_EINVAL, "timer slot %d", slot);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ((cpu_impl *)be->impl)->marks[slot] = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return 0;
}

static int cpu_timer_seconds(orthros_backend *be, int a, int b, double *seconds)
{
    if (a < 0 || b < 0 || a >= ORTHROS_TIMER_SLOTS || b >= ORTHROS_TIMER_SLOTS)
        return orthros_error(ORTHROS_EINVAL, "timer slots %d, %d", a, b);
    const double *m = ((cpu_impl *)be->impl)->marks;
    *seconds = m[b] - m[a];
    return 0;
}

static void *cpu_alloc(orthros_backend *be, size_t bytes)
{
    size_t n = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, n ? n : 64);
}

static void cpu_free(orthros_backend *be, void *p)
{
    free(p);
}

static int cpu_zero(orthros_backend *be, void *p, size_t bytes)
{
    memset(p, 0, bytes);
    return 0;
}

static int cpu_mem_info(orthros_backend *be, size_t *free_bytes, size_t *total_bytes)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long avail = 0, total = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            unsigned long long v;
            if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) avail = v * 1024ull;
            if (sscanf(line, "MemTotal: %llu kB", &v) == 1) total = v * 1024ull;
        }
        fclose(f);
    }
    if (!total) total = avail = (size_t)8 << 30; /* no /proc: assume a small machine */
    *free_bytes = (size_t)avail;
    *total_bytes = (size_t)total;
    return 0;
}

static int cpu_sync(orthros_backend *be)
{
    return 0;
}

static int cpu_upload(orthros_backend *be, void *dst, size_t dst_off, const void *src, orthros_dtype dtype, size_t n)
{
    float *d = fp(dst) + dst_off;
    if (dtype == ORTHROS_DTYPE_F32) {
        memcpy(d, src, n * sizeof(float));
    } else if (dtype == ORTHROS_DTYPE_BF16) {
        const uint16_t *s = src;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
        for (size_t i = 0; i < n; i++) d[i] = orthros_bf16_to_f32(s[i]);
    } else {
        const uint16_t *s = src;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
        for (size_t i = 0; i < n; i++) d[i] = orthros_f16_to_f32(s[i]);
    }
    return 0;
}

static int cpu_fill_random(orthros_backend *be, void *dst, size_t n, uint64_t seed, float scale)
{
    float *d = dst;
#pragma omp parallel for schedule(static) if (n > CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) d[i] = (2.0f * orthros_uniform(seed, i) - 1.0f) * scale;
    return 0;
}

static int cpu_fill(orthros_backend *be, void *dst, size_t n, float value)
{
    float *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = value;
    return 0;
}

static int cpu_copy(orthros_backend *be, void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return 0;
}

/* A sum of 64-bit words, kept in a volatile so the compiler cannot drop the reads. */
static int cpu_read(orthros_backend *be, const void *src, size_t bytes)
{
    const uint64_t *w = src;
    uint64_t acc = 0;
    size_t n = bytes / sizeof *w;
#pragma omp parallel for reduction(^ : acc) if (n > ((size_t)1 << 20))
    for (size_t i = 0; i < n; i++) acc ^= w[i];
    /* A result nobody reads would let the compiler drop the loop: keep it behind a volatile. */
    static volatile uint64_t sink;
    sink = acc;
    (void)sink;
    return 0;
}

static int cpu_download_f32(orthros_backend *be, float *host, const float *src, size_t n)
{
    if (host != src) memcpy(host, src, n * sizeof(float));
    return 0;
}

static void cpu_range_push(orthros_backend *be, const char *name) {}
static void cpu_range_pop(orthros_backend *be) {}

static int cpu_embed(orthros_backend *be, void *x, const int32_t *tokens, const void *table, int n, int D)
{
    for (int i = 0; i < n; i++)
        memcpy(fp(x) + (size_t)i * D, cfp(table) + (size_t)tokens[i] * D, (size_t)D * sizeof(float));
    return 0;
}

/* As transformers' LlamaRMSNorm: x * rsqrt(mean(x^2) + eps), then * w. */
static void rmsnorm_row(float *out, const float *x, const float *w, int D, float eps)
{
    float ss = dot_f32(x, x, D);
    float r = 1.0f / sqrtf(ss / (float)D + eps);
    for (int j = 0; j < D; j++) out[j] = w[j] * (x[j] * r);
}

static int cpu_rmsnorm(orthros_backend *be, void *out, const void *x, const void *w, int n, int D, float eps)
{
#pragma omp parallel for schedule(static) if ((size_t)n * D > CPU_PAR_MIN)
    for (int i = 0; i < n; i++) rmsnorm_row(fp(out) + (size_t)i * D, cfp(x) + (size_t)i * D, w, D, eps);
    return 0;
}

static int cpu_add_rmsnorm(orthros_backend *be, void *out, void *resid, const void *delta, const void *w, int n, int D,
                           float eps)
{
#pragma omp parallel for schedule(static) if ((size_t)n * D > CPU_PAR_MIN)
    for (int i = 0; i < n; i++) {
        float *r = fp(resid) + (size_t)i * D;
        const float *dl = cfp(delta) + (size_t)i * D;
        for (int j = 0; j < D; j++) r[j] += dl[j];
        rmsnorm_row(fp(out) + (size_t)i * D, r, w, D, eps);
    }
    return 0;
}

/* The GEMM's register tile: 4 rows of x against 2 rows of W, each of the 8 products accumulated exactly as dot_f32
 * does (8 lanes over k, the same reduction, the same tail), so the tiled product equals the plain one bit for bit;
 * the tile only gives the core 8 independent chains and reuses every load. Written with vector extensions and
 * compiled twice, for AVX2 where the CPU has it (8 lanes in one register) and for the baseline. */
#define GEMM_TR 4
#define GEMM_TC 2
typedef float v8f __attribute__((vector_size(32)));

#define GEMM_TILE_BODY                                                                                                 \
    v8f acc[GEMM_TR][GEMM_TC];                                                                                         \
    memset(acc, 0, sizeof acc);                                                                                        \
    int k = 0;                                                                                                         \
    for (; k + 8 <= K; k += 8) {                                                                                       \
        v8f wv[GEMM_TC];                                                                                               \
        for (int c = 0; c < GEMM_TC; c++) memcpy(&wv[c], w + (size_t)c * K + k, sizeof(v8f));                          \
        for (int r = 0; r < GEMM_TR; r++) {                                                                            \
            v8f xv;                                                                                                    \
            memcpy(&xv, x + (size_t)r * K + k, sizeof(v8f));                                                           \
            for (int c = 0; c < GEMM_TC; c++) acc[r][c] += xv * wv[c];                                                 \
        }                                                                                                              \
    }                                                                                                                  \
    for (int r = 0; r < GEMM_TR; r++)                                                                                  \
        for (int c = 0; c < GEMM_TC; c++) {                                                                            \
            v8f a = acc[r][c];                                                                                         \
            float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                               \
            for (int t = k; t < K; t++) s += x[(size_t)r * K + t] * w[(size_t)c * K + t];                              \
            o[(size_t)r * M + c] = s;                                                                                  \
        }

/* o[r][c] (row stride M) = x[r][K] . w[c][K] for the 4 x 2 tile. */
static void gemm_tile(float *o, const float *x, const float *w, int M, int K) { GEMM_TILE_BODY }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static void gemm_tile_avx2(float *o, const float *x, const float *w, int M, int K)
{
    GEMM_TILE_BODY
}
#endif

/* out[n][M] = x[n][K] . W[M][K]^T in blocks of 64 x 64 outputs (one thread each; the block's rows of x and W stay
 * in cache), each block in 4 x 2 tiles and its ragged edges with dot_f32. */
static int cpu_gemm(orthros_backend *be, void *out, const void *x, const void *W, int n, int M, int K)
{
    const float *X = x, *Wt = W;
    float *O = out;
    void (*tile)(float *, const float *, const float *, int, int) = gemm_tile;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx2")) tile = gemm_tile_avx2;
#endif
    enum { BLOCK = 64 };
    int nbi = (n + BLOCK - 1) / BLOCK, nbj = (M + BLOCK - 1) / BLOCK;
    /* One parallel region for the whole product (not one per block of rows), and none for a product too small
     * to pay for waking the threads: on a loaded machine each region waits for its slowest, descheduled thread. */
#pragma omp parallel for collapse(2) schedule(static) if ((double)n * M * K > 16.0 * CPU_PAR_MIN)
    for (int bi = 0; bi < nbi; bi++)
        for (int bj = 0; bj < nbj; bj++) {
            int i0 = bi * BLOCK, i1 = i0 + BLOCK < n ? i0 + BLOCK : n;
            int j0 = bj * BLOCK, j1 = j0 + BLOCK < M ? j0 + BLOCK : M, j = j0;
            for (; j + GEMM_TC <= j1; j += GEMM_TC) {
                int i = i0;
                for (; i + GEMM_TR <= i1; i += GEMM_TR)
                    tile(O + (size_t)i * M + j, X + (size_t)i * K, Wt + (size_t)j * K, M, K);
                for (; i < i1; i++)
                    for (int c = 0; c < GEMM_TC; c++)
                        O[(size_t)i * M + j + c] = dot_f32(X + (size_t)i * K, Wt + (size_t)(j + c) * K, K);
            }
            for (; j < j1; j++)
                for (int i = i0; i < i1; i++) O[(size_t)i * M + j] = dot_f32(X + (size_t)i * K, Wt + (size_t)j * K, K);
        }
    return 0;
}

static int cpu_swiglu(orthros_backend *be, void *out, const void *gu, int n, int F)
{
#pragma omp parallel for schedule(static) if ((size_t)n * F > CPU_PAR_MIN)
    for (int i = 0; i < n; i++) {
        const float *g = cfp(gu) + (size_t)i * 2 * F, *u = g + F;
        float *o = fp(out) + (size_t)i * F;
        for (int j = 0; j < F; j++) o[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
    }
    return 0;
}

static int cpu_logits(orthros_backend *be, float *out, const void *x, const void *W, int n, int V, int D)
{
    return cpu_gemm(be, out, x, W, n, V, D);
}

static int cpu_argmax(orthros_backend *be, int32_t *ids, const float *logits, int n, int V)
{
    for (int i = 0; i < n; i++) {
        const float *l = logits + (size_t)i * V;
        int best = 0;
        for (int j = 1; j < V; j++)
            if (l[j] > l[best] || (isnan(l[best]) && !isnan(l[j]))) best = j;
        ids[i] = best;
    }
    return 0;
}

static inline int qkv_width(const orthros_attn_layer *L)
{
    return (L->n_heads + 2 * L->n_kv_heads) * L->head_dim;
}

/* Hugging Face's rotate_half convention: pairs (j, j + d/2). The angle is formed in fp32 as transformers
 * forms it (position times inv_freq), its cosine and sine in double then rounded. */
static void rope_row(float *dst, const float *src, const float *inv_freq, int d, int pos)
{
    int half = d / 2;
    for (int j = 0; j < half; j++) {
        float ang = (float)pos * inv_freq[j];
        float c = (float)cos((double)ang), s = (float)sin((double)ang);
        float x1 = src[j], x2 = src[j + half];
        dst[j] = x1 * c - x2 * s;
        dst[j + half] = x2 * c + x1 * s;
    }
}

static int cpu_rope_cache_write(orthros_backend *be, void *qkv, const orthros_attn_layer *L, const orthros_rope *rope,
                                const int *pos0, int B, int n, int rotate_q_from)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = qkv_width(L);
    const int *pos = L->pos_dev ? L->pos_dev : pos0; /* backend memory is host memory here */
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * n * (Hq + Hkv) * d > CPU_PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < n; i++) {
            float *row = fp(qkv) + ((size_t)b * n + i) * W;
            int p = pos[b] + i;
            for (int h = 0; h < Hkv; h++) {
                float *k = row + (size_t)(Hq + h) * d, kr[ORTHROS_MAX_HEAD_DIM];
                rope_row(kr, k, rope->inv_freq, d, p);
                if (L->kraw_cache) {
                    size_t slot = (size_t)b * L->kraw_cap + (size_t)(p % L->kraw_cap);
                    memcpy(fp(L->kraw_cache) + (slot * Hkv + h) * d, k, (size_t)d * sizeof(float));
                }
                if (L->cap > 0) {
                    size_t slot = (size_t)b * L->cap + (size_t)(p % L->cap);
                    memcpy(fp(L->k_cache) + (slot * Hkv + h) * d, kr, (size_t)d * sizeof(float));
                    memcpy(fp(L->v_cache) + (slot * Hkv + h) * d, row + (size_t)(Hq + Hkv + h) * d, (size_t)d * sizeof(float));
                }
                if (L->fmap_after) memcpy(k, kr, (size_t)d * sizeof(float));
            }
            if (i >= rotate_q_from || L->q_rot)
                for (int h = 0; h < Hq; h++) {
                    float tmp[ORTHROS_MAX_HEAD_DIM];
                    rope_row(tmp, row + (size_t)h * d, rope->inv_freq, d, p);
                    if (L->q_rot) memcpy(fp(L->q_rot) + (((size_t)b * n + i) * Hq + h) * d, tmp, (size_t)d * sizeof(float));
                    if (i >= rotate_q_from) memcpy(row + (size_t)h * d, tmp, (size_t)d * sizeof(float));
                }
        }
    }
    return 0;
}

/* Query heads of one kv head that one pass over the keys serves (each with its own running softmax), and keys
 * whose scores are formed before the softmax walks over them. */
#define ATTN_GROUP_MAX 8
#define ATTN_KEY_BLOCK 16

/* dot_f32 in vector form: lane u sums a[k + u] b[k + u] over k, the same reduction and tail, so the same float. */
#define DOT8(out, a, b, K)                                                                                             \
    do {                                                                                                               \
        v8f acc8_ = {0};                                                                                               \
        int k8_ = 0;                                                                                                   \
        for (; k8_ + 8 <= (K); k8_ += 8) {                                                                             \
            v8f x8_, y8_;                                                                                              \
            memcpy(&x8_, (a) + k8_, sizeof x8_);                                                                       \
            memcpy(&y8_, (b) + k8_, sizeof y8_);                                                                       \
            acc8_ += x8_ * y8_;                                                                                        \
        }                                                                                                              \
        float s8_ = ((acc8_[0] + acc8_[1]) + (acc8_[2] + acc8_[3])) + ((acc8_[4] + acc8_[5]) + (acc8_[6] + acc8_[7])); \
        for (; k8_ < (K); k8_++) s8_ += (a)[k8_] * (b)[k8_];                                                           \
        (out) = s8_;                                                                                                   \
    } while (0)

/* Softmax attention of query heads h0 .. h0 + G - 1 (sharing kv head kv) of one query row at position p over the
 * cached positions lo .. p in increasing order, with an online (running max) softmax per head: every head's sums
 * are formed exactly as one head alone would form them, one key at a time. The scores of a block of keys are
 * computed first (independent dot products the core can overlap), and the G heads share the loads of each key.
 * With lsum NULL o gets the normalised output; else o gets sum_s exp(x_s - m) v_s and lsum[g] sum_s exp(x_s - m),
 * m the max over lo .. p (the local window of the linear formula). Compiled twice, like the GEMM tile. */
#define ATTN_ROW_BODY                                                                                                  \
    float acc[ATTN_GROUP_MAX][ORTHROS_MAX_HEAD_DIM], m[ATTN_GROUP_MAX], l[ATTN_GROUP_MAX];                             \
    float sc[ATTN_GROUP_MAX][ATTN_KEY_BLOCK];                                                                          \
    const float *kp[ATTN_KEY_BLOCK], *vp[ATTN_KEY_BLOCK];                                                              \
    for (int g = 0; g < G; g++) {                                                                                      \
        m[g] = -INFINITY, l[g] = 0.0f;                                                                                 \
        for (int j = 0; j < d; j++) acc[g][j] = 0.0f;                                                                  \
    }                                                                                                                  \
    size_t slot = (size_t)(lo % L->cap);                                                                               \
    for (int s0 = lo; s0 <= p; s0 += ATTN_KEY_BLOCK) {                                                                 \
        int nb = p + 1 - s0 < ATTN_KEY_BLOCK ? p + 1 - s0 : ATTN_KEY_BLOCK;                                            \
        for (int t = 0; t < nb; t++) {                                                                                 \
            kp[t] = kc + slot * Hkv * d, vp[t] = vc + slot * Hkv * d;                                                  \
            if (++slot == (size_t)L->cap) slot = 0;                                                                    \
        }                                                                                                              \
        for (int g = 0; g < G; g++)                                                                                    \
            for (int t = 0; t < nb; t++) {                                                                             \
                DOT8(sc[g][t], q + (size_t)g * d, kp[t], d);                                                           \
                sc[g][t] *= scale;                                                                                     \
            }                                                                                                          \
        for (int t = 0; t < nb; t++)                                                                                   \
            for (int g = 0; g < G; g++) {                                                                              \
                float x = sc[g][t];                                                                                    \
                if (x > m[g]) {                                                                                        \
                    float r = expf(m[g] - x);                                                                          \
                    l[g] *= r;                                                                                         \
                    for (int j = 0; j < d; j++) acc[g][j] *= r;                                                        \
                    m[g] = x;                                                                                          \
                }                                                                                                      \
                float e = expf(x - m[g]);                                                                              \
                l[g] += e;                                                                                             \
                for (int j = 0; j < d; j++) acc[g][j] += e * vp[t][j];                                                 \
            }                                                                                                          \
    }                                                                                                                  \
    for (int g = 0; g < G; g++) {                                                                                      \
        if (lsum) lsum[g] = l[g];                                                                                      \
        for (int j = 0; j < d; j++) o[(size_t)g * d + j] = lsum ? acc[g][j] : acc[g][j] / l[g];                        \
    }

/* q [G][d], o [G][d], lsum NULL or [G]; kc, vc: the sequence's caches [cap][Hkv][d] offset to kv head kv. */
static void attn_row(float *o, float *lsum, const float *q, const float *kc, const float *vc, const orthros_attn_layer *L,
                     int G, int lo, int p, float scale)
{
    int d = L->head_dim, Hkv = L->n_kv_heads;
    ATTN_ROW_BODY
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static void attn_row_avx2(float *o, float *lsum, const float *q, const float *kc,
                                                          const float *vc, const orthros_attn_layer *L, int G, int lo,
                                                          int p, float scale)
{
    int d = L->head_dim, Hkv = L->n_kv_heads;
    ATTN_ROW_BODY
}
#endif

typedef void (*attn_row_fn)(float *, float *, const float *, const float *, const float *, const orthros_attn_layer *,
                            int, int, int, float);

static attn_row_fn attn_row_pick(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx2")) return attn_row_avx2;
#endif
    return attn_row;
}

/* Softmax attention, one query row and one group of query heads at a time (attn_row). */
static int cpu_attn_full(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, const int *pos0,
                         int B, int n)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = qkv_width(L), group = Hq / Hkv;
    int per_kv = (group + ATTN_GROUP_MAX - 1) / ATTN_GROUP_MAX, units = Hkv * per_kv;
    float scale = 1.0f / sqrtf((float)d);
    attn_row_fn row = attn_row_pick();
    const int *pos = L->pos_dev ? L->pos_dev : pos0;
    /* Work bound: every row reads at most its position + 1 keys (or the window); pos0 bounds pos. */
    int keys = 0;
    for (int b = 0; b < B; b++) keys = pos0[b] + n > keys ? pos0[b] + n : keys;
    if (L->window > 0 && L->window < keys) keys = L->window;
#pragma omp parallel for collapse(3) schedule(dynamic, 4) if ((double)B * n * Hq * keys * d > 16.0 * CPU_PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < n; i++) {
            for (int u = 0; u < units; u++) {
                int kv = u / per_kv, h0 = kv * group + (u % per_kv) * ATTN_GROUP_MAX;
                int G = kv * group + group - h0 < ATTN_GROUP_MAX ? kv * group + group - h0 : ATTN_GROUP_MAX;
                int p = pos[b] + i, lo = L->window > 0 ? p - L->window + 1 : 0;
                if (lo < 0) lo = 0;
                size_t seq = (size_t)b * L->cap * Hkv * d;
                row(fp(out) + (((size_t)b * n + i) * Hq + h0) * d, NULL, cfp(qkv) + ((size_t)b * n + i) * W + (size_t)h0 * d,
                    cfp(L->k_cache) + seq + (size_t)kv * d, cfp(L->v_cache) + seq + (size_t)kv * d, L, G, lo, p, scale);
            }
        }
    }
    return 0;
}

/* phi(x) for one head: x [d] -> f [F]. Hedgehog: w [d][F/2]. */
static void feature_map(float *f, const float *x, int d, orthros_fmap fmap, const float *w, int F)
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

/* Linear attention, token by token in order: (S, z) += (phi(k) v^T, phi(k)), then every query head of the
 * group reads the updated state. With a local window W (docs/converted-models.md) the key that enters the state
 * at position p is that of position p - W (from kf, the ring or cache of the keys phi reads, and v_cache), and each
 * head's output adds the window term: attn_row over positions max(0, p - W + 1) .. p, exactly as full computes its
 * scores, unnormalised, weighed by gamma_h, under one denominator with the state's. While no position has left the
 * window (p < W) the state is empty and gamma cancels: the output is computed as full's, acc / l. */
static int cpu_attn_linear(orthros_backend *be, void *out, const void *qkv, const orthros_attn_layer *L, const int *pos0,
                           int B, int n)
{
    int d = L->head_dim, Hq = L->n_heads, Hkv = L->n_kv_heads, W = qkv_width(L), group = Hq / Hkv, F = L->feature_dim;
    int half = F / 2, win = L->local_window;
    const orthros_fmap fmap = L->fmap;
    const float *kf_ring = L->fmap_after ? cfp(L->k_cache) : cfp(L->kraw_cache);
    int kf_cap = L->fmap_after ? L->cap : L->kraw_cap;
    if (win > 0 && (!L->k_cache || !L->v_cache || !kf_ring || L->cap < 1 || kf_cap < 1 || (!L->fmap_after && !L->q_rot)))
        return orthros_error(ORTHROS_EINVAL, "linear attention with a local window of %d: the layer has no window cache",
                             win);
    float scale = 1.0f / sqrtf((float)d);
    attn_row_fn row_fn = attn_row_pick();
    const int *pos = L->pos_dev ? L->pos_dev : pos0;
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * n * Hq * (F + win) * d > CPU_PAR_MIN)
    for (int b = 0; b < B; b++) {
        for (int kv = 0; kv < Hkv; kv++) {
            float *S = L->S + ((size_t)b * Hkv + kv) * F * d;
            float *z = L->z + ((size_t)b * Hkv + kv) * F;
            const float *wk = fmap == ORTHROS_FMAP_HEDGEHOG ? cfp(L->fmap_k) + (size_t)kv * d * half : NULL;
            float fk[CPU_MAX_FEATURE], fq[CPU_MAX_FEATURE];
            float accw[ATTN_GROUP_MAX * ORTHROS_MAX_HEAD_DIM], lw[ATTN_GROUP_MAX];
            for (int i = 0; i < n; i++) {
                const float *row = cfp(qkv) + ((size_t)b * n + i) * W;
                const float *k = row + (size_t)(Hq + kv) * d, *v = row + (size_t)(Hq + Hkv + kv) * d;
                int p = pos[b] + i, enters = 1;
                if (win > 0) {
                    /* The key of position p - W leaves the window and enters the state (none while p < W). */
                    int s = p - win;
                    enters = s >= 0;
                    if (enters) {
                        k = kf_ring + (((size_t)b * kf_cap + (size_t)(s % kf_cap)) * Hkv + kv) * d;
                        v = cfp(L->v_cache) + (((size_t)b * L->cap + (size_t)(s % L->cap)) * Hkv + kv) * d;
                    }
                }
                if (enters) {
                    feature_map(fk, k, d, fmap, wk, F);
                    for (int f = 0; f < F; f++) {
                        z[f] += fk[f];
                        for (int j = 0; j < d; j++) S[(size_t)f * d + j] += fk[f] * v[j];
                    }
                }
                for (int h0 = kv * group; h0 < kv * group + group; h0 += ATTN_GROUP_MAX) {
                    int G = kv * group + group - h0 < ATTN_GROUP_MAX ? kv * group + group - h0 : ATTN_GROUP_MAX;
                    if (win > 0) {
                        const float *qr = L->fmap_after ? row : cfp(L->q_rot) + ((size_t)b * n + i) * Hq * d;
                        size_t seq = (size_t)b * L->cap * Hkv * d;
                        int lo = p - win + 1 < 0 ? 0 : p - win + 1;
                        row_fn(accw, lw, qr + (size_t)h0 * d, cfp(L->k_cache) + seq + (size_t)kv * d,
                               cfp(L->v_cache) + seq + (size_t)kv * d, L, G, lo, p, scale);
                    }
                    for (int g = 0; g < G; g++) {
                        int h = h0 + g;
                        const float *wq = fmap == ORTHROS_FMAP_HEDGEHOG ? cfp(L->fmap_q) + (size_t)h * d * half : NULL;
                        float *o = fp(out) + (((size_t)b * n + i) * Hq + h) * d;
                        if (win > 0 && p < win) {
                            for (int j = 0; j < d; j++) o[j] = accw[(size_t)g * d + j] / lw[g];
                            continue;
                        }
                        feature_map(fq, row + (size_t)h * d, d, fmap, wq, F);
                        float num[ORTHROS_MAX_HEAD_DIM] = {0};
                        float den = 0.0f;
                        for (int f = 0; f < F; f++) {
                            den += fq[f] * z[f];
                            for (int j = 0; j < d; j++) num[j] += fq[f] * S[(size_t)f * d + j];
                        }
                        if (win > 0) {
                            float gamma = L->window_gate ? cfp(L->window_gate)[h] : 1.0f;
                            float dsum = den + gamma * lw[g];
                            for (int j = 0; j < d; j++) o[j] = (num[j] + gamma * accw[(size_t)g * d + j]) / dsum;
                        } else {
                            for (int j = 0; j < d; j++) o[j] = num[j] / (den + L->eps);
                        }
                    }
                }
            }
        }
    }
    return 0;
}

/* The ranks of a cpu model are threads of this process: they sum in memory, in rank order (or, run as
 * processes for testing, through rank 0 in the same order). */
static int cpu_allreduce_sum(orthros_backend *be, orthros_comm *comm, void *x, int n, int D)
{
    if (comm && comm->tcp) return orthros_comm_allreduce_tcp_f32(comm, x, (size_t)n * (size_t)D);
    return orthros_comm_allreduce_f32(comm, x, (size_t)n * (size_t)D);
}

/* ---- the decode step with its inputs in backend memory: host memory here ---- */

static int cpu_upload_ints(orthros_backend *be, int32_t *dst, const int32_t *src, int n)
{
    if (n > 0 && dst != src) memcpy(dst, src, (size_t)n * sizeof *dst);
    return 0;
}

static int cpu_download_ints(orthros_backend *be, int32_t *host, const int32_t *src, int n)
{
    return cpu_upload_ints(be, host, src, n);
}

/* ---- fused decode ops: the compositions they are defined as (backend.h), the reference of the cuda kernels ---- */

static int cpu_norm_gemm(orthros_backend *be, void *out, void *xn, const void *x, const void *norm_w, const void *W,
                         int n, int M, int K, float eps)
{
    int rc = cpu_rmsnorm(be, xn, x, norm_w, n, K, eps);
    return rc ? rc : cpu_gemm(be, out, xn, W, n, M, K);
}

static int cpu_gemm_add(orthros_backend *be, void *resid, void *tmp, const void *x, const void *W, int n, int M, int K)
{
    int rc = cpu_gemm(be, tmp, x, W, n, M, K);
    if (rc) return rc;
    float *r = resid;
    const float *t = tmp;
    for (size_t i = 0; i < (size_t)n * M; i++) r[i] += t[i]; /* add_rmsnorm's residual add */
    return 0;
}

static int cpu_norm_gemm_swiglu(orthros_backend *be, void *out, void *xn, void *gu, const void *x, const void *norm_w,
                                const void *W_gu, int n, int F, int K, float eps)
{
    int rc = cpu_norm_gemm(be, gu, xn, x, norm_w, W_gu, n, 2 * F, K, eps);
    return rc ? rc : cpu_swiglu(be, out, gu, n, F);
}

static int cpu_norm_qkv_rope(orthros_backend *be, void *qkv, void *xn, const void *x, const void *norm_w,
                             const void *Wqkv, const orthros_attn_layer *L, const orthros_rope *rope, const int *pos0,
                             int n, int K, float eps)
{
    if (L->cap <= 0 || !L->k_cache || !L->v_cache || L->kraw_cache || L->q_rot || L->fmap_after)
        return orthros_error(ORTHROS_EINVAL, "norm_qkv_rope: a layer whose rope writes more than its KV cache");
    int rc = cpu_norm_gemm(be, qkv, xn, x, norm_w, Wqkv, n, qkv_width(L), K, eps);
    return rc ? rc : cpu_rope_cache_write(be, qkv, L, rope, pos0, n, 1, 0);
}

static int cpu_norm_logits_argmax(orthros_backend *be, int32_t *ids, float *logits, void *xn, const void *x,
                                  const void *norm_w, const void *W, int n, int V, int D, float eps)
{
    int rc = cpu_norm_gemm(be, logits, xn, x, norm_w, W, n, V, D, eps);
    return rc ? rc : cpu_argmax(be, ids, logits, n, V);
}

static void cpu_fill_info(orthros_device_info *info)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(info->name, sizeof info->name, "%s", colon + 2);
            info->name[strcspn(info->name, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
    if (!info->name[0]) snprintf(info->name, sizeof info->name, "unknown cpu");
    info->sm_count = (int)sysconf(_SC_NPROCESSORS_ONLN);
    size_t free_b = 0;
    cpu_mem_info(NULL, &free_b, &info->mem_total);
    orthros_device_info_set_host(info, "cpu");
}

int orthros_backend_cpu_create(orthros_backend **out)
{
    unsigned modes;
    int gemv, pdl, chain; /* cuda's alone */
    *out = NULL;
    /* No mode by default: the cpu's plain step is the reference the modes are tested against. */
    int rc = orthros_decode_env(0, &modes, &gemv, &pdl, &chain);
    if (rc) return rc;
    orthros_backend *be = calloc(1, sizeof *be);
    cpu_impl *impl = calloc(1, sizeof *impl);
    if (!be || !impl) {
        free(be);
        free(impl);
        return orthros_error(ORTHROS_ENOMEM, "out of host memory creating the cpu backend");
    }
    be->impl = impl;
    be->name = "cpu";
    be->caps = 0;
    be->default_chunk = 256;
    be->decode_modes = modes;
    cpu_fill_info(&be->info);
    be->act_size = sizeof(float);
    be->destroy = cpu_destroy;
    be->alloc = cpu_alloc;
    be->free = cpu_free;
    be->zero = cpu_zero;
    be->mem_info = cpu_mem_info;
    be->sync = cpu_sync;
    be->upload = cpu_upload;
    be->fill_random = cpu_fill_random;
    be->fill = cpu_fill;
    be->copy = cpu_copy;
    be->read = cpu_read;
    be->download_f32 = cpu_download_f32;
    be->timer_mark = cpu_timer_mark;
    be->timer_seconds = cpu_timer_seconds;
    be->range_push = cpu_range_push;
    be->range_pop = cpu_range_pop;
    be->embed = cpu_embed;
    be->rmsnorm = cpu_rmsnorm;
    be->add_rmsnorm = cpu_add_rmsnorm;
    be->gemm = cpu_gemm;
    be->swiglu = cpu_swiglu;
    be->logits = cpu_logits;
    be->argmax = cpu_argmax;
    be->rope_cache_write = cpu_rope_cache_write;
    be->attn_full_prefill = cpu_attn_full;
    be->attn_full_decode = cpu_attn_full;
    be->attn_linear_prefill = cpu_attn_linear;
    be->attn_linear_decode = cpu_attn_linear;
    be->allreduce_sum = cpu_allreduce_sum;
    be->upload_ints = cpu_upload_ints;
    be->download_ints = cpu_download_ints;
    be->embed_dev = cpu_embed;
    be->argmax_dev = cpu_argmax;
    be->fused_max_rows = 1 << 30;
    be->norm_gemm = cpu_norm_gemm;
    be->gemm_add = cpu_gemm_add;
    be->norm_gemm_swiglu = cpu_norm_gemm_swiglu;
    be->norm_qkv_rope = cpu_norm_qkv_rope;
    be->norm_logits_argmax = cpu_norm_logits_argmax;
    *out = be;
    return 0;
}
