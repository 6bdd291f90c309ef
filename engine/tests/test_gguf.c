/* The GGUF loader:
 *   - dequantisation of every supported type against gguf-py (data/gguf/quants.gguf, quants.f32);
 *   - a Q4_1 / Q8_0 model written by gguf-py as llama.cpp's converter writes one, against transformers' logits for
 *     the same file (data/gguf/tiny-q4_1);
 *   - every fixture in data/fixtures rewritten here as GGUF (q / k rows permuted as the converter does, F32 / BF16
 *     / F16 as stored, tied embeddings, llama3 RoPE as a rope_freqs tensor): the same logits as the safetensors;
 *   - a tokenizer in GGUF metadata (tokens, merges, token types, special ids, chat template);
 *   - malformed files, each refused by the CLI with one line naming the file and the problem (exit 1) and by the
 *     library with an error and no model; truncations and byte mutations of valid files through the fuzz entry;
 *   - orthros export of the GGUF fixtures and of a model with a tokenizer in its metadata: bit-equal logits, the
 *     same token ids; a GGUF with rope_freqs refused.
 * usage: test_gguf PATH/TO/orthros REPO_ROOT */
#define _GNU_SOURCE
#include "gguf.h"
#include "safetensors.h"
#include "targets.h"
#include "testutil.h"
#include "tokenizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *bin, *repo;
static char *tmp;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- a GGUF writer ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (n == 0) return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

typedef struct {
    buf kv, info, data;
    uint64_t n_kv, n_tensors;
    uint32_t version;
} gw;

static void gw_key(gw *w, const char *key, uint32_t type)
{
    put_str(&w->kv, key);
    put_u32(&w->kv, type);
    w->n_kv++;
}
static void gw_u32(gw *w, const char *key, uint32_t v) { gw_key(w, key, ORTHROS_GGUF_UINT32), put_u32(&w->kv, v); }
static void gw_f32(gw *w, const char *key, float v) { gw_key(w, key, ORTHROS_GGUF_FLOAT32), put(&w->kv, &v, 4); }
static void gw_str(gw *w, const char *key, const char *v) { gw_key(w, key, ORTHROS_GGUF_STRING), put_str(&w->kv, v); }
static void gw_bool(gw *w, const char *key, int v)
{
    uint8_t b = (uint8_t)v;
    gw_key(w, key, ORTHROS_GGUF_BOOL);
    put(&w->kv, &b, 1);
}
static void gw_strs(gw *w, const char *key, const char *const *v, int n)
{
    gw_key(w, key, ORTHROS_GGUF_ARRAY);
    put_u32(&w->kv, ORTHROS_GGUF_STRING);
    put_u64(&w->kv, (uint64_t)n);
    for (int i = 0; i < n; i++) put_str(&w->kv, v[i]);
}
static void gw_i32s(gw *w, const char *key, const int32_t *v, int n)
{
    gw_key(w, key, ORTHROS_GGUF_ARRAY);
    put_u32(&w->kv, ORTHROS_GGUF_INT32);
    put_u64(&w->kv, (uint64_t)n);
    put(&w->kv, v, 4 * (size_t)n);
}

/* A tensor info at an explicit offset (no data written). */
static void gw_info(gw *w, const char *name, uint32_t type, int ndim, const int64_t *ne, uint64_t offset)
{
    put_str(&w->info, name);
    put_u32(&w->info, (uint32_t)ndim);
    for (int i = 0; i < ndim; i++) put_u64(&w->info, (uint64_t)ne[i]);
    put_u32(&w->info, type);
    put_u64(&w->info, offset);
    w->n_tensors++;
}

/* A tensor and its data, at the next offset aligned to 32. */
static void gw_tensor(gw *w, const char *name, uint32_t type, int ndim, const int64_t *ne, const void *data, size_t nbytes)
{
    static const uint8_t zero[32];
    put(&w->data, zero, (32 - w->data.n % 32) % 32);
    gw_info(w, name, type, ndim, ne, w->data.n);
    put(&w->data, data, nbytes);
}

static buf gw_finish(gw *w)
{
    static const uint8_t zero[32];
    buf out = {0};
    put(&out, "GGUF", 4);
    put_u32(&out, w->version ? w->version : 3);
    put_u64(&out, w->n_tensors);
    put_u64(&out, w->n_kv);
    put(&out, w->kv.p, w->kv.n);
    put(&out, w->info.p, w->info.n);
    put(&out, zero, (32 - out.n % 32) % 32);
    put(&out, w->data.p, w->data.n);
    free(w->kv.p);
    free(w->info.p);
    free(w->data.p);
    memset(w, 0, sizeof *w);
    return out;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        if (n) fwrite(p, 1, n, f);
        fclose(f);
    }
}

/* ---- model GGUFs ---- */

/* llama.* metadata for c (architecture `arch`), leaving out the key `skip` (or none). */
static void llama_meta(gw *w, const orthros_model_config *c, const char *arch, const char *skip)
{
    gw_str(w, "general.architecture", arch);
    gw_u32(w, "llama.context_length", (uint32_t)(c->max_pos ? c->max_pos : 2048));
    gw_u32(w, "llama.embedding_length", (uint32_t)c->d_model);
    if (!skip || strcmp(skip, "llama.block_count")) gw_u32(w, "llama.block_count", (uint32_t)c->n_layers);
    gw_u32(w, "llama.feed_forward_length", (uint32_t)c->ffn);
    gw_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads);
    gw_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    if (c->head_dim * c->n_heads != c->d_model) {
        gw_u32(w, "llama.attention.key_length", (uint32_t)c->head_dim);
        gw_u32(w, "llama.attention.value_length", (uint32_t)c->head_dim);
    }
    gw_u32(w, "llama.rope.dimension_count", (uint32_t)c->head_dim);
    gw_f32(w, "llama.rope.freq_base", (float)c->rope_theta);
    gw_f32(w, "llama.attention.layer_norm_rms_epsilon", c->norm_eps);
    gw_u32(w, "llama.vocab_size", (uint32_t)c->vocab);
}

/* convert_hf_to_gguf.py's permute, written forward here: HF row h*d + j*(d/2) + i goes to GGUF row h*d + 2i + j. */
static void permute_rows(uint8_t *dst, const uint8_t *src, int heads, int d, size_t row_bytes)
{
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < d / 2; i++)
            for (int j = 0; j < 2; j++)
                memcpy(dst + ((size_t)h * d + 2 * i + j) * row_bytes, src + ((size_t)h * d + j * (d / 2) + i) * row_bytes,
                       row_bytes);
}

static uint32_t ggml_type_of(orthros_dtype t)
{
    return t == ORTHROS_DTYPE_F32 ? ORTHROS_GGML_F32 : t == ORTHROS_DTYPE_BF16 ? ORTHROS_GGML_BF16 : ORTHROS_GGML_F16;
}

/* Rewrites a safetensors fixture as a GGUF the way llama.cpp's converter lays one out. */
static int fixture_to_gguf(const char *dir, const char *out, orthros_model_config *cfg)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = tu_slurp(path, NULL);
    if (!text || orthros_config_parse(cfg, text)) {
        free(text);
        return -1;
    }
    free(text);
    orthros_st st;
    if (orthros_st_open_dir(&st, dir)) return -1;
    gw w = {0};
    llama_meta(&w, cfg, "llama", NULL);
    if (cfg->rope_llama3) {
        /* llama3 scaling travels as per-frequency divisors, as the converter writes rope_freqs. */
        orthros_model_config plain = *cfg;
        plain.rope_llama3 = 0;
        float base[ORTHROS_MAX_HEAD_DIM / 2], scaled[ORTHROS_MAX_HEAD_DIM / 2], f[ORTHROS_MAX_HEAD_DIM / 2];
        orthros_rope_inv_freq(base, &plain);
        orthros_rope_inv_freq(scaled, cfg);
        for (int i = 0; i < cfg->head_dim / 2; i++) f[i] = base[i] / scaled[i];
        gw_tensor(&w, "rope_freqs.weight", ORTHROS_GGML_F32, 1, (int64_t[]){cfg->head_dim / 2}, f,
                  sizeof(float) * (size_t)(cfg->head_dim / 2));
    }
    for (int i = 0; i < st.n_tensors; i++) {
        const orthros_st_tensor *t = &st.tensors[i];
        char name[160];
        int heads = 0;
        if (orthros_gguf_tensor_name(name, sizeof name, t->name, cfg, &heads)) continue;
        CHECK(t->ndim == 1 || t->ndim == 2, "%s: a tensor of %d dimensions in a fixture", t->name, t->ndim);
        if (t->ndim != 1 && t->ndim != 2) continue;
        int64_t ne[2] = {t->shape[t->ndim - 1], t->ndim == 2 ? t->shape[0] : 1};
        uint8_t *data = malloc(t->nbytes);
        if (heads) permute_rows(data, t->data, heads, cfg->head_dim, (size_t)ne[0] * orthros_dtype_size(t->dtype));
        else memcpy(data, t->data, t->nbytes);
        gw_tensor(&w, name, ggml_type_of(t->dtype), t->ndim, ne, data, t->nbytes);
        free(data);
    }
    orthros_st_close(&st);
    buf b = gw_finish(&w);
    write_file(out, b.p, b.n);
    free(b.p);
    return 0;
}

static float *model_logits(const char *spec, const int32_t *tokens, int n, int *vocab)
{
    orthros_backend *be = NULL;
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    orthros_backend_cpu_create(&be);
    float *logits = NULL;
    if (orthros_model_load(&m, be, spec, &ao, 0) || orthros_session_init(&s, m, 1, n, 0)) {
        CHECK(0, "%s: %s", spec, orthros_last_error());
    } else {
        *vocab = orthros_model_get_config(m)->vocab;
        logits = malloc((size_t)n * (size_t)*vocab * sizeof *logits);
        if (orthros_prefill(s, 0, tokens, n, logits, NULL)) {
            CHECK(0, "%s: prefill: %s", spec, orthros_last_error());
            free(logits);
            logits = NULL;
        }
    }
    orthros_session_free(s);
    orthros_model_free(m);
    orthros_backend_free(be);
    return logits;
}

static int32_t *ref_tokens(const char *dir, int *n)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/ref.json", dir);
    cJSON *ref = tu_load_json(path);
    int32_t *t = tu_json_ints(cJSON_GetObjectItem(ref, "tokens"), n);
    cJSON_Delete(ref);
    return t;
}

static void check_fixtures(void)
{
    static const char *const names[] = {"llama-tiny", "gqa4-bf16-d64", "mqa-d128-tied", "llama3-rope"};
    for (int f = 0; f < 4; f++) {
        char dir[4200], out[4400];
        snprintf(dir, sizeof dir, "%s/data/fixtures/%s", repo, names[f]);
        snprintf(out, sizeof out, "%s/%s.gguf", tmp, names[f]);
        orthros_model_config cfg = {0};
        CHECK(fixture_to_gguf(dir, out, &cfg) == 0, "%s: cannot rewrite as GGUF", names[f]);
        int n = 0, v1 = 0, v2 = 0;
        int32_t *tokens = ref_tokens(dir, &n);
        float *a = model_logits(dir, tokens, n, &v1), *b = model_logits(out, tokens, n, &v2);
        double d = a && b && v1 == v2 ? tu_max_abs_diff(a, b, (size_t)n * (size_t)v1) : INFINITY;
        /* Same weights, same arithmetic: bit-equal, except llama3 whose frequencies go through a division. */
        double tol = cfg.rope_llama3 ? 1e-5 : 0.0;
        CHECK(d <= tol, "%s: GGUF logits differ from safetensors by %g (tolerance %g)", names[f], d, tol);
        printf("fixture %-14s as GGUF: max |diff| %.3g over %d x %d logits\n", names[f], d, n, v1);
        free(a);
        free(b);
        free(tokens);
    }
}

static void check_quants(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/data/gguf/quants.gguf", repo);
    orthros_gguf *g = NULL;
    int rc = orthros_gguf_open(&g, path);
    CHECK(rc == 0, "%s", orthros_last_error());
    snprintf(path, sizeof path, "%s/data/gguf/quants.f32", repo);
    size_t len = 0;
    char *ref = tu_slurp(path, &len);
    CHECK(ref != NULL, "cannot read %s", path);
    if (!g || !ref) {
        orthros_gguf_free(g);
        free(ref);
        return;
    }
    size_t at = 0;
    int types[64] = {0};
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const orthros_gguf_tensor *t = &g->tensors[i];
        size_t n = orthros_gguf_numel(t);
        float *x = malloc(n * sizeof *x);
        CHECK(orthros_gguf_dequantize(x, t) == 0, "%s: %s", t->name, orthros_last_error());
        int ok = at + n * 4 <= len && !memcmp(x, ref + at, n * 4);
        CHECK(ok, "%s (%s): dequantised values differ from gguf-py's", t->name, orthros_ggml_type_name(t->type));
        if (t->type < 64) types[t->type]++;
        at += n * 4;
        free(x);
    }
    CHECK(at == len && g->n_tensors == 12, "%lld tensors, %zu of %zu reference bytes", (long long)g->n_tensors, at, len);
    static const int want[] = {ORTHROS_GGML_F32, ORTHROS_GGML_F16, ORTHROS_GGML_BF16, ORTHROS_GGML_Q8_0, ORTHROS_GGML_Q4_0,
                               ORTHROS_GGML_Q4_1};
    for (int i = 0; i < 6; i++) CHECK(types[want[i]] == 2, "type %s tested %d times", orthros_ggml_type_name(want[i]), types[want[i]]);
    printf("quants: %lld tensors of 6 types equal to gguf-py's dequantisation\n", (long long)g->n_tensors);
    orthros_gguf_free(g);
    free(ref);
}

static void check_tiny_q41(void)
{
    char dir[4200], path[4400];
    snprintf(dir, sizeof dir, "%s/data/gguf/tiny-q4_1", repo);
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    int n = 0, v = 0;
    int32_t *tokens = ref_tokens(dir, &n);
    float *a = model_logits(path, tokens, n, &v);
    snprintf(path, sizeof path, "%s/logits.f32", dir);
    size_t len = 0;
    char *ref = tu_slurp(path, &len);
    double d = a && ref && len == (size_t)n * (size_t)v * 4 ? tu_max_abs_diff(a, (const float *)ref, (size_t)n * (size_t)v)
                                                             : INFINITY;
    CHECK(d <= 1e-4, "tiny Q4_1 GGUF: logits differ from transformers' by %g", d);
    printf("tiny-q4_1 (gguf-py, Q4_1 + Q8_0 + F32) vs transformers: max |diff| %.3g\n", d);
    free(a);
    free(ref);
    free(tokens);
}

/* ---- a tokenizer in GGUF metadata ---- */

/* The token string of byte b in GPT-2's byte-level alphabet (UTF-8, NUL-terminated, static). */
static const char *byte_token(int b)
{
    static char store[256][4];
    int cp = ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) ? b
             : 256 + (b <= 32 ? b : b <= 160 ? 33 + (b - 127) : 67);
    if (cp < 0x80) store[b][0] = (char)cp, store[b][1] = 0;
    else store[b][0] = (char)(0xc0 | cp >> 6), store[b][1] = (char)(0x80 | (cp & 0x3f)), store[b][2] = 0;
    return store[b];
}

/* The 256 byte tokens in GPT-2's alphabet, then merges' results, then one control token. */
static void tokenizer_meta(gw *w, const char *model, const char *pre, const char *bad_merge)
{
    const char *toks[262];
    int32_t types[262];
    for (int b = 0; b < 256; b++) toks[b] = byte_token(b), types[b] = 1;
    toks[256] = "ab", toks[257] = "\xc4\xa0" "a", toks[258] = "\xc4\xa0" "ab", toks[259] = "<|end|>";
    toks[260] = "aa", toks[261] = "12";
    for (int i = 256; i < 262; i++) types[i] = i == 259 ? 3 : 1;
    const char *merges[] = {"a b", "\xc4\xa0 a", "\xc4\xa0" "a b", "a a", "1 2", bad_merge};
    gw_str(w, "tokenizer.ggml.model", model);
    if (pre) gw_str(w, "tokenizer.ggml.pre", pre);
    gw_strs(w, "tokenizer.ggml.tokens", toks, 262);
    gw_i32s(w, "tokenizer.ggml.token_type", types, 262);
    gw_strs(w, "tokenizer.ggml.merges", merges, bad_merge ? 6 : 5);
    gw_u32(w, "tokenizer.ggml.bos_token_id", 259);
    gw_u32(w, "tokenizer.ggml.eos_token_id", 259);
    gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
    gw_str(w, "tokenizer.chat_template", "{{ messages }}");
}

static void check_gguf_tokenizer(void)
{
    for (int scheme = 0; scheme < 2; scheme++) {
        gw w = {0};
        gw_str(&w, "general.architecture", "llama");
        tokenizer_meta(&w, "gpt2", scheme ? "smollm" : NULL, NULL);
        buf b = gw_finish(&w);
        orthros_gguf *g = NULL;
        orthros_tokenizer *t = NULL;
        int rc = orthros_gguf_parse_buffer(&g, b.p, b.n, "tok.gguf");
        if (!rc) rc = orthros_tokenizer_from_gguf(&t, g);
        CHECK(rc == 0, "GGUF tokenizer: %s", orthros_last_error());
        if (t) {
            int32_t *ids = NULL;
            int n = 0;
            const char *text = "ab ab<|end|>aa 12";
            orthros_tokenizer_encode(t, text, strlen(text), ORTHROS_TOK_ADD_SPECIAL, &ids, &n);
            /* bos, ab, then " ab" is Ġ (byte 32) + ab ((a, b) outranks (Ġ, a)), <|end|>, aa, Ġ, then "12" whole
             * (gpt2: " 12" is one piece and merges 1 2) or 1, 2 (smollm isolates digits first). */
            static const int32_t gpt2[] = {259, 256, 32, 256, 259, 260, 32, 261};
            static const int32_t smol[] = {259, 256, 32, 256, 259, 260, 32, '1', '2'};
            const int32_t *want = scheme ? smol : gpt2;
            int nw = scheme ? 9 : 8, same = n == nw;
            for (int i = 0; same && i < n; i++) same = ids[i] == want[i];
            CHECK(same, "GGUF tokenizer (%s): \"%s\" gives %d ids", scheme ? "smollm" : "gpt2", text, n);
            CHECK(orthros_tokenizer_bos(t) == 259 && orthros_tokenizer_is_special(t, 259) &&
                      !strcmp(orthros_tokenizer_chat_template(t), "{{ messages }}"),
                  "GGUF tokenizer specials and template");
            free(ids);
        }
        orthros_tokenizer_free(t);
        orthros_gguf_free(g);
        free(b.p);
    }
}

/* A byte-level BPE tokenizer in GGUF metadata: the 256 byte tokens, then extra[n] of types[n] (3: control, a
 * special token), no merges; pre names the pre-tokenizer (NULL: none). The refusal's code, or 0 with *out. */
static int tok_from_tokens(orthros_tokenizer **out, const char *const *extra, const int32_t *extra_types, int n,
                           const char *pre, int byte_tokens)
{
    int total = (byte_tokens ? 256 : 0) + n;
    const char **toks = malloc(sizeof *toks * (size_t)total);
    int32_t *types = malloc(sizeof *types * (size_t)total);
    int at = 0;
    for (int b = 0; byte_tokens && b < 256; b++, at++) toks[at] = byte_token(b), types[at] = 1;
    for (int i = 0; i < n; i++, at++) toks[at] = extra[i], types[at] = extra_types[i];
    gw w = {0};
    gw_str(&w, "tokenizer.ggml.model", "gpt2");
    /* pre is written with its NUL and what follows it: 14 bytes, "smollm\0garbage". */
    if (pre) gw_key(&w, "tokenizer.ggml.pre", ORTHROS_GGUF_STRING), put_u64(&w.kv, 14), put(&w.kv, pre, 14);
    gw_strs(&w, "tokenizer.ggml.tokens", toks, total);
    gw_i32s(&w, "tokenizer.ggml.token_type", types, total);
    gw_strs(&w, "tokenizer.ggml.merges", NULL, 0);
    buf b = gw_finish(&w);
    orthros_gguf *g = NULL;
    *out = NULL;
    int rc = orthros_gguf_parse_buffer(&g, b.p, b.n, "tok.gguf");
    if (!rc) rc = orthros_tokenizer_from_gguf(out, g);
    orthros_gguf_free(g);
    free(b.p);
    free(toks);
    free(types);
    return rc;
}

/* What leftmost-longest matching of the added tokens gives, written the slow obvious way: at each position the
 * longest added token that starts there (the first listed on a tie), the text between encoded alone. */
static int naive_encode(const orthros_tokenizer *t, const char *const *added, const int32_t *ids, int n_added,
                        const char *text, size_t len, int32_t *out)
{
    int n = 0;
    size_t start = 0, i = 0;
    while (i <= len) {
        int best = -1;
        size_t bl = 0;
        for (int k = 0; i < len && k < n_added; k++) {
            size_t l = strlen(added[k]);
            if (l > bl && l <= len - i && !memcmp(text + i, added[k], l)) best = k, bl = l;
        }
        if (best < 0 && i < len) {
            i++;
            continue;
        }
        int32_t *part = NULL;
        int np = 0;
        if (i > start && orthros_tokenizer_encode(t, text + start, i - start, 0, &part, &np)) return -1;
        if (np) memcpy(out + n, part, sizeof *part * (size_t)np);
        n += np;
        free(part);
        if (best < 0) break;
        out[n++] = ids[best];
        i += bl;
        start = i;
    }
    return n;
}

/* Special tokens: matched in one pass whatever their number (a crafted 49,152-token vocabulary took 25 s over
 * 100 KB before), the same matches as the obvious scan on random overlapping tokens, and the degenerate
 * vocabularies refused. */
static void check_special_tokens(void)
{
    /* 50k control tokens sharing the prefix "<|ctl_", and 100 KB of text: 70 KB of "<" (each the first byte of
     * every token), then near-misses with a match now and then. The old scan took 7 s here. */
    enum { NSPEC = 50000 };
    char **names = malloc(sizeof *names * NSPEC);
    int32_t *types = malloc(sizeof *types * NSPEC);
    for (int i = 0; i < NSPEC; i++) {
        names[i] = malloc(24);
        snprintf(names[i], 24, "<|ctl_%d|>", i);
        types[i] = 3;
    }
    orthros_tokenizer *t = NULL;
    double t0 = now_s();
    int rc = tok_from_tokens(&t, (const char *const *)names, types, NSPEC, NULL, 1);
    double load_s = now_s() - t0;
    CHECK(rc == 0, "50k special tokens: %s", orthros_last_error());
    size_t len = 100000, at = 70000;
    char *text = malloc(len + 32);
    int want_specials = 0;
    memset(text, '<', at);
    for (int k = 0; at < len; k++) {
        if (k % 50 == 49) at += (size_t)snprintf(text + at, 32, "<|ctl_%d|>", (k * 7919) % NSPEC), want_specials++;
        else at += (size_t)snprintf(text + at, 32, "<|ctl_%d", k % NSPEC);
    }
    len = at;
    int32_t *ids = NULL;
    int n = 0;
    t0 = now_s();
    rc = t ? orthros_tokenizer_encode(t, text, len, 0, &ids, &n) : -1;
    double dt = now_s() - t0;
    int specials = 0;
    for (int i = 0; i < n; i++) specials += ids[i] >= 256;
    CHECK(rc == 0 && specials == want_specials, "50k special tokens: %d of %d matched", specials, want_specials);
    CHECK(dt < 2.0 && load_s < 10.0, "50k special tokens: loading took %.2f s, encoding %zu bytes %.2f s", load_s, len, dt);
    printf("%d special tokens: loaded in %.3f s, %zu bytes of text encoded in %.3f s (%d tokens, %d special)\n", NSPEC,
           load_s, len, dt, n, specials);
    free(ids);
    free(text);
    orthros_tokenizer_free(t);
    for (int i = 0; i < NSPEC; i++) free(names[i]);
    free(names);
    free(types);

    /* Random overlapping tokens over a small alphabet, against the obvious scan. */
    int mismatches = 0, cases = 0;
    for (int trial = 0; trial < 200; trial++) {
        static const char alpha[] = "ab<|";
        char store[12][8];
        const char *added[12];
        int32_t ty[12], idv[12];
        int na = 1 + (int)(orthros_uniform(41, (uint64_t)trial) * 11);
        for (int k = 0; k < na; k++) {
            int l = 1 + (int)(orthros_uniform(43, (uint64_t)(trial * 64 + k)) * 5);
            for (int j = 0; j < l; j++) store[k][j] = alpha[(int)(orthros_uniform(47, (uint64_t)(trial * 4096 + k * 64 + j)) * 4)];
            store[k][l] = 0;
            added[k] = store[k];
            ty[k] = 3;
        }
        orthros_tokenizer *tt = NULL;
        if (tok_from_tokens(&tt, added, ty, na, NULL, 1)) {
            CHECK(0, "random added tokens: %s", orthros_last_error());
            continue;
        }
        /* An added token's id: the first of its content among the extra tokens, as the loader keeps. */
        for (int k = 0; k < na; k++) {
            idv[k] = 256 + k;
            for (int j = 0; j < k; j++)
                if (!strcmp(added[j], added[k])) {
                    idv[k] = idv[j];
                    break;
                }
        }
        char tx[96];
        size_t tl = (size_t)(orthros_uniform(53, (uint64_t)trial) * 95);
        for (size_t j = 0; j < tl; j++) tx[j] = "ab<| c"[(int)(orthros_uniform(59, (uint64_t)trial * 128 + j) * 6)];
        int32_t *got = NULL, want[200];
        int ng = 0, nw = naive_encode(tt, added, idv, na, tx, tl, want);
        orthros_tokenizer_encode(tt, tx, tl, 0, &got, &ng);
        int same = ng == nw;
        for (int j = 0; same && j < ng; j++) same = got[j] == want[j];
        mismatches += !same;
        cases++;
        for (int k = 0; k < na; k++)
            CHECK(orthros_tokenizer_token_id(tt, added[k], strlen(added[k])) == idv[k], "token id of added \"%s\"", added[k]);
        free(got);
        orthros_tokenizer_free(tt);
    }
    CHECK(mismatches == 0, "random added tokens: %d of %d texts encode unlike the obvious scan", mismatches, cases);
    printf("random added tokens: %d texts, %d unlike the obvious leftmost-longest scan\n", cases, mismatches);

    /* Every token empty: refused (it read token bytes through a null pointer, and encoded every text to nothing). */
    const char *empty[300];
    int32_t ety[300];
    for (int i = 0; i < 300; i++) empty[i] = "", ety[i] = i % 2 ? 3 : 1;
    t = NULL;
    rc = tok_from_tokens(&t, empty, ety, 300, NULL, 0);
    CHECK(rc == ORTHROS_EFORMAT && !t && strstr(orthros_last_error(), "no token for any single byte"),
          "a vocabulary of empty tokens: rc %d: %s", rc, orthros_last_error());
    orthros_tokenizer_free(t);
    /* A NUL inside a metadata string is not read as the part before it. */
    t = NULL;
    rc = tok_from_tokens(&t, NULL, NULL, 0, "smollm\0garbage", 1);
    CHECK(rc == ORTHROS_EFORMAT && !t && strstr(orthros_last_error(), "tokenizer.ggml.pre") &&
              strstr(orthros_last_error(), "NUL"),
          "tokenizer.ggml.pre \"smollm\\0garbage\": rc %d: %s", rc, orthros_last_error());
    orthros_tokenizer_free(t);
}

/* ---- malformed files ---- */

static void expect_refusal(const char *label, const char *path, const char *cmd, const char *want)
{
    char errpath[4300], out[4300];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", tmp);
    snprintf(out, sizeof out, "%s/out.f32", tmp);
    char *argv_logits[] = {(char *)bin, "logits", "--model", (char *)path, "--tokens", "1,2,3", "--out", out,
                           "--device", "cpu", NULL};
    char *argv_tok[] = {(char *)bin, "tokenize", "--model", (char *)path, "--text", "hello", NULL};
    /* A refused run prints nothing on stdout, so the log holds stderr alone. */
    int status = tu_run(!strcmp(cmd, "tokenize") ? argv_tok : argv_logits, errpath);
    size_t len = 0;
    char *err = tu_slurp(errpath, &len);
    int lines = 0;
    for (size_t i = 0; err && i < len; i++) lines += err[i] == '\n';
    CHECK(status == 1, "%s: exit status %d, want 1 (128 + N: killed by signal N)", label, status);
    CHECK(lines == 1, "%s: %d stderr lines, want 1: %s", label, lines, err ? err : "");
    CHECK(err && strstr(err, want), "%s: stderr lacks \"%s\": %s", label, want, err ? err : "");
    CHECK(err && strstr(err, path), "%s: stderr does not name the file: %s", label, err ? err : "");
    printf("%-28s -> %s", label, err && len ? err : "(nothing)\n");
    free(err);
    if (!strcmp(cmd, "logits")) {
        orthros_backend *be = NULL;
        orthros_model *m = (orthros_model *)1;
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        orthros_backend_cpu_create(&be);
        int rc = orthros_model_load(&m, be, path, &ao, 0);
        CHECK(rc < 0 && m == NULL, "%s: library load returned %d", label, rc);
        orthros_backend_free(be);
    }
}

enum {
    M_NONE, M_Q5_0, M_SHAPE, M_MISSING, M_ARCH, M_NO_BLOCKS, M_YARN, M_TOK_MODEL, M_TOK_MERGE, M_GOOD_TOK,
    M_VOCAB_MISMATCH, M_ZERO_NORM, M_INF_ROPE, M_NAN_WEIGHT, M_INF_NORM, M_Q8_INF_SCALE,
};

/* A small valid model (random F32 weights, tied) with one defect. */
static buf model_gguf(int defect)
{
    orthros_model_config c;
    orthros_preset_config(&c, "tiny");
    c.tie_embeddings = 1;
    gw w = {0};
    llama_meta(&w, &c, defect == M_ARCH ? "qwen2" : "llama", defect == M_NO_BLOCKS ? "llama.block_count" : NULL);
    if (defect == M_YARN) gw_str(&w, "llama.rope.scaling.type", "yarn");
    int has_tok = (defect >= M_TOK_MODEL && defect <= M_GOOD_TOK) || defect == M_ZERO_NORM;
    if (has_tok)
        tokenizer_meta(&w, defect == M_TOK_MODEL ? "llama" : "gpt2", NULL, defect == M_TOK_MERGE ? "a zz" : NULL);
    /* The vocabulary: 256, or the 262 tokens of tokenizer_meta. */
    size_t D = 64, F = 160, V = defect == M_VOCAB_MISMATCH ? 255 : has_tok ? 262 : 256;
    float *x = malloc(V * D * sizeof *x);
    tu_random(x, V * D, 3, 0.5f);
    gw_tensor(&w, "token_embd.weight", ORTHROS_GGML_F32, 2, (int64_t[]){64, (int64_t)V}, x, V * D * 4);
    if (defect == M_INF_ROPE) {
        /* Per-frequency divisors with an infinite one: that dimension would never rotate. */
        float f[ORTHROS_MAX_HEAD_DIM / 2];
        for (int i = 0; i < c.head_dim / 2; i++) f[i] = i == 1 ? INFINITY : 1.0f;
        gw_tensor(&w, "rope_freqs.weight", ORTHROS_GGML_F32, 1, (int64_t[]){c.head_dim / 2}, f, sizeof(float) * (size_t)(c.head_dim / 2));
    }
    /* A zero final norm makes every logit 0, so that greedy decoding picks token 0 (the byte 0x00). */
    static const float zeros[64];
    gw_tensor(&w, "output_norm.weight", ORTHROS_GGML_F32, 1, (int64_t[]){64}, defect == M_ZERO_NORM ? zeros : x, D * 4);
    char name[64];
    for (int l = 0; l < 2; l++) {
        static const char *const mats[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
        for (int k = 0; k < 7; k++) {
            int64_t rows = k == 0 || k == 3 ? 64 : k < 3 ? 32 : k < 6 ? (int64_t)F : 64;
            int64_t cols = k == 6 ? (int64_t)F : 64;
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, mats[k]);
            if (defect == M_MISSING && l == 1 && k == 5) continue;
            if (defect == M_SHAPE && l == 0 && k == 1) rows = 48;
            if (defect == M_Q8_INF_SCALE && l == 0 && k == 2) {
                /* Q8_0 blocks of scale 1 and values 1, the third block's scale an f16 infinity: finite bytes that
                 * dequantise to infinities. */
                size_t nb = (size_t)(rows * cols / 32);
                uint8_t *q = calloc(nb, 34);
                for (size_t b = 0; b < nb; b++) {
                    q[b * 34] = 0x00, q[b * 34 + 1] = b == 2 ? 0x7c : 0x3c;
                    memset(q + b * 34 + 2, 1, 32);
                }
                gw_tensor(&w, name, ORTHROS_GGML_Q8_0, 2, (int64_t[]){cols, rows}, q, nb * 34);
                free(q);
                continue;
            }
            if (defect == M_NAN_WEIGHT && l == 1 && k == 5) {
                float *y = malloc((size_t)(rows * cols) * 4);
                memcpy(y, x, (size_t)(rows * cols) * 4);
                y[77] = NAN;
                gw_tensor(&w, name, ORTHROS_GGML_F32, 2, (int64_t[]){cols, rows}, y, (size_t)(rows * cols) * 4);
                free(y);
                continue;
            }
            if (defect == M_Q5_0 && l == 1 && k == 4) {
                /* A valid Q5_0 layout (22 bytes per 32 values) that the loader does not dequantise. */
                gw_tensor(&w, name, 6, 2, (int64_t[]){cols, rows}, x, (size_t)(rows * cols / 32) * 22);
                continue;
            }
            gw_tensor(&w, name, ORTHROS_GGML_F32, 2, (int64_t[]){cols, rows}, x, (size_t)(rows * cols) * 4);
        }
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        float norm[64];
        memcpy(norm, x, sizeof norm);
        if (defect == M_INF_NORM && l == 1) norm[63] = -INFINITY;
        gw_tensor(&w, name, ORTHROS_GGML_F32, 1, (int64_t[]){64}, norm, D * 4);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", l);
        gw_tensor(&w, name, ORTHROS_GGML_F32, 1, (int64_t[]){64}, x, D * 4);
    }
    free(x);
    return gw_finish(&w);
}

/* Header-level defects, written by hand. */
static buf raw_header(int kind)
{
    gw w = {0};
    buf b = {0};
    switch (kind) {
    case 0: return b;                                   /* empty */
    case 1: put(&b, "GGU", 3); return b;                /* too short */
    case 2: put(&b, "GGML\3\0\0\0", 8); return b;       /* bad magic */
    case 3: w.version = 1; return gw_finish(&w);
    case 4: w.version = 0x03000000u; return gw_finish(&w); /* big-endian */
    case 5: w.version = 7; return gw_finish(&w);
    case 6: put(&b, "GGUF\3\0\0\0\0\0", 10); return b;  /* truncated in the tensor count */
    case 7: put(&b, "GGUF\3\0\0\0", 8), put_u64(&b, 0), put_u64(&b, 1ull << 60); return b;
    case 8: put(&b, "GGUF\3\0\0\0", 8), put_u64(&b, 1ull << 40), put_u64(&b, 0); return b;
    case 9:
        put(&b, "GGUF\3\0\0\0", 8), put_u64(&b, 0), put_u64(&b, 1), put_u64(&b, 1ull << 50);
        put(&b, (uint8_t[16]){0}, 16);
        return b;
    case 10: gw_key(&w, "k", ORTHROS_GGUF_STRING), put_u64(&w.kv, 1ull << 62); return gw_finish(&w);
    case 11: gw_key(&w, "k", ORTHROS_GGUF_ARRAY), put_u32(&w.kv, ORTHROS_GGUF_UINT64), put_u64(&w.kv, 1ull << 61);
        return gw_finish(&w);
    case 12: gw_key(&w, "k", 13), put_u32(&w.kv, 0); return gw_finish(&w);
    case 13:
        gw_key(&w, "k", ORTHROS_GGUF_ARRAY);
        for (int i = 0; i < 6; i++) put_u32(&w.kv, ORTHROS_GGUF_ARRAY), put_u64(&w.kv, 1);
        put_u32(&w.kv, ORTHROS_GGUF_UINT8), put_u64(&w.kv, 0);
        return gw_finish(&w);
    case 14: gw_bool(&w, "flag", 2); return gw_finish(&w);
    case 15: gw_u32(&w, "k", 1), gw_u32(&w, "k", 2); return gw_finish(&w);
    case 16: gw_u32(&w, "general.alignment", 24); return gw_finish(&w);
    case 17: gw_str(&w, "general.alignment", "32"); return gw_finish(&w);
    case 18: gw_info(&w, "t", ORTHROS_GGML_F32, 5, (int64_t[]){1, 1, 1, 1, 1}, 0); return gw_finish(&w);
    case 19: gw_info(&w, "t", ORTHROS_GGML_F32, 2, (int64_t[]){4, 0}, 0); return gw_finish(&w);
    case 20: gw_info(&w, "t", 99, 1, (int64_t[]){4}, 0); return gw_finish(&w);
    case 21: gw_info(&w, "t", ORTHROS_GGML_Q4_1, 1, (int64_t[]){48}, 0); return gw_finish(&w);
    case 22: gw_info(&w, "t", ORTHROS_GGML_F32, 1, (int64_t[]){4}, 8); return gw_finish(&w);
    case 23: gw_info(&w, "t", ORTHROS_GGML_F32, 1, (int64_t[]){4}, 1ull << 40); return gw_finish(&w);
    case 24:
        gw_info(&w, "a", ORTHROS_GGML_F32, 1, (int64_t[]){16}, 0);
        gw_info(&w, "b", ORTHROS_GGML_F32, 1, (int64_t[]){16}, 32);
        put(&w.data, (uint8_t[128]){0}, 128);
        return gw_finish(&w);
    case 25:
        gw_tensor(&w, "a", ORTHROS_GGML_F32, 1, (int64_t[]){4}, (float[4]){0}, 16);
        gw_tensor(&w, "a", ORTHROS_GGML_F32, 1, (int64_t[]){4}, (float[4]){0}, 16);
        return gw_finish(&w);
    case 26: /* data cut short */
        gw_tensor(&w, "a", ORTHROS_GGML_F32, 1, (int64_t[]){64}, (float[64]){0}, 256);
        b = gw_finish(&w);
        b.n -= 100;
        return b;
    case 27: gw_info(&w, "t", ORTHROS_GGML_F32, 2, (int64_t[]){1ll << 40, 1ll << 40}, 0); return gw_finish(&w);
    default: return b;
    }
}

static void check_malformed(void)
{
    static const char *const header_want[] = {
        "file is empty", "too short for a GGUF header", "bad magic", "GGUF version 1 is not supported",
        "big-endian GGUF files are not supported", "GGUF version 7 is not supported", "truncated: tensor count",
        "metadata count 1152921504606846976 cannot fit", "tensor count 1099511627776 cannot fit",
        "metadata key 0 at byte 24: length 1125899906842624 runs past the end", "k at byte 37: length",
        "array of 2305843009213693952 uint64 runs past the end", "unknown value type 13", "nested deeper than 4",
        "bool value 2 is neither 0 nor 1", "metadata key k appears twice", "general.alignment 24 is not a power of two",
        "general.alignment is a string, not a uint32", "tensor t has 5 dimensions", "dimension 1 is 0",
        "unknown ggml type 99", "row length 48 is not a multiple of the Q4_1 block of 32",
        "offset 8 is not a multiple of the alignment 32", "run past the end of the data section", "overlap in the data",
        "tensor a appears twice", "run past the end of the data section", "size overflows"};
    char path[4300];
    for (int k = 0; k < (int)(sizeof header_want / sizeof *header_want); k++) {
        buf b = raw_header(k);
        snprintf(path, sizeof path, "%s/bad-header-%02d.gguf", tmp, k);
        write_file(path, b.p, b.n);
        CHECK(orthros_fuzz_gguf_check_buffer(b.p ? b.p : (uint8_t *)"", b.n) < 0, "header %d: the fuzz entry accepted it", k);
        char label[64];
        snprintf(label, sizeof label, "header defect %d", k);
        expect_refusal(label, path, "logits", header_want[k]);
        free(b.p);
    }
    static const struct {
        int defect;
        const char *cmd, *want;
    } model_cases[] = {
        {M_Q5_0, "logits", "tensor blk.1.ffn_gate.weight has type Q5_0, which is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1)"},
        {M_SHAPE, "logits", "tensor blk.0.attn_k.weight has shape [64, 48], the metadata implies [64, 32]"},
        {M_MISSING, "logits", "missing tensor blk.1.ffn_up.weight"},
        {M_ARCH, "logits", "architecture \"qwen2\" is not supported (llama)"},
        {M_NO_BLOCKS, "logits", "metadata llama.block_count is missing"},
        {M_YARN, "logits", "rope.scaling.type \"yarn\" is not supported"},
        {M_TOK_MODEL, "tokenize", "tokenizer.ggml.model \"llama\" is not supported"},
        {M_TOK_MERGE, "tokenize", "merge 5 (\"a\" \"zz\") names a token missing from the vocabulary"},
        {M_VOCAB_MISMATCH, "logits", "tensor token_embd.weight has shape [64, 255], the metadata implies [64, 256]"},
        {M_NONE, "tokenize", "tokenizer.ggml.model is missing"},
        {M_INF_ROPE, "logits", "rope_freqs.weight[1] = inf is not a positive finite number"},
        /* Non-finite weights, after dequantisation: every logit was NaN and generate picked token 0, exit 0. */
        {M_NAN_WEIGHT, "logits", "tensor blk.1.ffn_up.weight: element 77 is nan (weights must be finite)"},
        {M_INF_NORM, "logits", "tensor blk.1.attn_norm.weight: element 63 is -inf (weights must be finite)"},
        {M_Q8_INF_SCALE, "logits", "tensor blk.0.attn_v.weight: element 64 is inf (weights must be finite)"},
    };
    for (size_t k = 0; k < sizeof model_cases / sizeof *model_cases; k++) {
        buf b = model_gguf(model_cases[k].defect);
        snprintf(path, sizeof path, "%s/bad-model-%02zu.gguf", tmp, k);
        write_file(path, b.p, b.n);
        char label[64];
        snprintf(label, sizeof label, "model defect %zu", k);
        expect_refusal(label, path, model_cases[k].cmd, model_cases[k].want);
        free(b.p);
    }
    /* The defect-free base really loads (so each refusal above is its defect's). */
    buf b = model_gguf(M_GOOD_TOK);
    snprintf(path, sizeof path, "%s/good-model.gguf", tmp);
    write_file(path, b.p, b.n);
    int v = 0;
    float *l = model_logits(path, (int32_t[]){1, 2, 3}, 3, &v);
    CHECK(l && v == 262, "the base model of the defect cases loads");
    orthros_tokenizer *t = NULL;
    CHECK(orthros_tokenizer_load(&t, path) == 0, "the base model's tokenizer loads: %s", orthros_last_error());
    orthros_tokenizer_free(t);
    free(l);
    free(b.p);
}

/* ---- work bounded by the input's size ---- */

/* n distinct metadata keys (or n tensor infos of distinct names), then the first one again: the refusal names the
 * repeated one. Before the name index this took 26 s at 100k keys and 40 minutes at 1M (a pairwise comparison);
 * the bounds are generous (a sanitizer build on a loaded machine), the printed time is the figure. */
static void check_many_names(void)
{
    static const int counts[] = {100000, 1000000};
    for (int tensors = 0; tensors < 2; tensors++)
        for (int k = 0; k < 2; k++) {
            int n = counts[k];
            gw w = {0};
            char name[64];
            for (int i = 0; i <= n; i++) {
                snprintf(name, sizeof name, tensors ? "t.%d" : "general.key.%d", i < n ? i : 0);
                if (tensors) gw_info(&w, name, ORTHROS_GGML_F32, 1, (int64_t[]){8}, 32 * (uint64_t)i);
                else gw_u32(&w, name, (uint32_t)i);
            }
            if (tensors) {
                /* Each tensor its own 32 bytes, so that the repetition is the only defect. */
                size_t bytes = 32 * ((size_t)(unsigned)n + 1);
                uint8_t *zero = calloc(bytes, 1);
                put(&w.data, zero, bytes);
                free(zero);
            }
            buf b = gw_finish(&w);
            orthros_gguf *g = NULL;
            double t0 = now_s();
            int rc = orthros_gguf_parse_buffer(&g, b.p, b.n, "many.gguf");
            double dt = now_s() - t0;
            const char *want = tensors ? "tensor t.0 appears twice" : "metadata key general.key.0 appears twice";
            CHECK(rc == ORTHROS_EFORMAT && g == NULL && strstr(orthros_last_error(), want),
                  "%d %s: rc %d: %s", n, tensors ? "tensors" : "keys", rc, orthros_last_error());
            CHECK(dt < (n > 100000 ? 30.0 : 5.0), "%d %s: the refusal took %.2f s", n, tensors ? "tensors" : "keys", dt);
            printf("%7d %-7s + 1 repeated (%.1f MB): refused in %.3f s\n", n, tensors ? "tensors" : "keys",
                   (double)b.n / 1e6, dt);
            free(b.p);
        }
    /* Lookups go through the same index: a file of 100k keys whose last one is looked up. */
    gw w = {0};
    char name[64];
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof name, "general.key.%d", i);
        gw_u32(&w, name, (uint32_t)i);
    }
    buf b = gw_finish(&w);
    orthros_gguf *g = NULL;
    CHECK(orthros_gguf_parse_buffer(&g, b.p, b.n, "many.gguf") == 0, "100k keys: %s", orthros_last_error());
    int64_t v = -1;
    CHECK(g && orthros_gguf_get_int(g, "general.key.99999", &v, 1, 0, 1 << 30) == 0 && v == 99999 &&
              !orthros_gguf_find(g, "general.key.100000") && !orthros_gguf_find_tensor(g, "t"),
          "100k keys: lookups");
    orthros_gguf_free(g);
    free(b.p);
}

/* Text with NUL bytes through the commands' JSON: tokenize --ids --json and generate's "text" cut it at the first
 * NUL ({"text":"a"} for "a\0a"); --ids errors named --tokens. */
static void check_cli_text(void)
{
    char path[4300], out[4300], err[4300];
    buf b = model_gguf(M_ZERO_NORM);
    snprintf(path, sizeof path, "%s/zero-norm.gguf", tmp);
    snprintf(out, sizeof out, "%s/cli.out", tmp);
    snprintf(err, sizeof err, "%s/cli.err", tmp);
    write_file(path, b.p, b.n);
    free(b.p);
    char *tok_argv[] = {(char *)bin, "tokenize", "--model", path, "--ids", "97,0,97,10", "--json", NULL};
    int st = tu_run_capture(tok_argv, NULL, out, err);
    char *text = tu_slurp(out, NULL);
    CHECK(st == 0 && text && !strcmp(text, "{\"text\":\"a\\u0000a\\n\"}\n"), "tokenize --ids 97,0,97,10 --json: status %d: %s",
          st, text ? text : "");
    free(text);
    char *gen_argv[] = {(char *)bin, "generate", "--model", path, "--tokens", "97,98", "--max-new", "3", "--device", "cpu",
                        NULL};
    st = tu_run_capture(gen_argv, NULL, out, err);
    text = tu_slurp(out, NULL);
    CHECK(st == 0 && text && strstr(text, "{\"generated\":[0,0,0],\"text\":\"\\u0000\\u0000\\u0000\","),
          "generate with a zero final norm: status %d: %s", st, text ? text : "");
    free(text);
    char *bad_argv[] = {(char *)bin, "tokenize", "--model", path, "--ids", "1,x", NULL};
    st = tu_run_capture(bad_argv, NULL, out, err);
    text = tu_slurp(err, NULL);
    CHECK(st == 2 && text && strstr(text, "--ids: bad token list") && !strstr(text, "--tokens"),
          "tokenize --ids 1,x: status %d: %s", st, text ? text : "");
    free(text);
    printf("NUL bytes kept in tokenize --json and generate's text; --ids errors name --ids\n");
}

/* Truncations and mutations of valid files through the fuzz entry: an error or success, never a crash (the
 * sanitizer build checks every read). */
static void check_mutations(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/data/gguf/tiny-q4_1/model.gguf", repo);
    size_t len = 0;
    uint8_t *orig = (uint8_t *)tu_slurp(path, &len);
    buf tokb = model_gguf(M_GOOD_TOK);
    const uint8_t *files[] = {orig, tokb.p};
    size_t lens[] = {len, tokb.n};
    int refused = 0, runs = 0;
    for (int f = 0; f < 2; f++) {
        if (!files[f]) continue;
        size_t n = lens[f];
        uint8_t *copy = malloc(n);
        CHECK(orthros_fuzz_gguf_check_buffer(files[f], n) == 0, "file %d: the valid file is refused: %s", f, orthros_last_error());
        for (size_t cut = 0; cut < n; cut += cut < 4096 ? 7 : n / 97 + 1) {
            memcpy(copy, files[f], cut);
            refused += orthros_fuzz_gguf_check_buffer(copy, cut) < 0;
            runs++;
        }
        for (int k = 0; k < 300; k++) {
            memcpy(copy, files[f], n);
            int flips = 1 + (int)(orthros_uniform(99 + (uint64_t)f, (uint64_t)k * 64) * 4);
            for (int j = 0; j < flips; j++) {
                /* Most flips land in the header and metadata, where the parser's decisions are. */
                size_t span = orthros_uniform(5, (uint64_t)k * 64 + (uint64_t)j) < 0.8 ? (n < 8192 ? n : 8192) : n;
                size_t at = (size_t)(orthros_uniform(7, (uint64_t)k * 64 + (uint64_t)j) * (double)span);
                copy[at] = (uint8_t)(orthros_uniform(11, (uint64_t)k * 64 + (uint64_t)j) * 256);
            }
            orthros_fuzz_gguf_check_buffer(copy, n);
            runs++;
        }
        free(copy);
    }
    CHECK(runs > 600 && refused > 100, "%d mutated buffers, %d truncations refused", runs, refused);
    printf("mutations: %d buffers through orthros_fuzz_gguf_check_buffer, %d truncations refused, no crash\n", runs, refused);
    free(orig);
    free(tokb.p);
}

/* ---- orthros export of GGUF models (docs/converted-models.md#export) ---- */

/* `orthros export` of a GGUF: the export gives the GGUF's logits bit for bit (the same dequantised, unpermuted
 * weights), and its tokenizer files the GGUF's ids; a GGUF whose RoPE frequencies a config.json cannot carry
 * (rope_freqs) is refused with one line. */
static void check_export(void)
{
    static const char *const names[] = {"llama-tiny", "gqa4-bf16-d64", "mqa-d128-tied", "llama3-rope", "tok-model"};
    buf tb = model_gguf(M_GOOD_TOK);
    char path[4600];
    snprintf(path, sizeof path, "%s/tok-model.gguf", tmp);
    write_file(path, tb.p, tb.n);
    free(tb.p);
    for (int f = 0; f < 5; f++) {
        char gguf[4400], out[4400], log[4400];
        snprintf(gguf, sizeof gguf, "%s/%s.gguf", tmp, names[f]);
        snprintf(out, sizeof out, "%s/%s-export", tmp, names[f]);
        snprintf(log, sizeof log, "%s/%s-export.log", tmp, names[f]);
        int st = tu_run_args(bin, log, "export", "--model", gguf, "--out", out, NULL);
        if (!strcmp(names[f], "llama3-rope")) {
            CHECK(st == 1 && tu_log_has(log, "RoPE frequencies (a GGUF's linear scaling or rope_freqs factors) are not "
                                              "those of a Llama config.json"),
                  "export of a GGUF with rope_freqs: exit %d", st);
            printf("export of %-14s refused: rope_freqs has no config.json field\n", names[f]);
            continue;
        }
        CHECK(st == 0 && tu_log_has(log, "orthros export:"), "export of %s: exit %d", gguf, st);
        int32_t tokens[20];
        for (int i = 0; i < 20; i++) tokens[i] = (int32_t)(orthros_uniform(4, (uint64_t)i) * 250.0f);
        int v1 = 0, v2 = 0;
        float *a = model_logits(gguf, tokens, 20, &v1), *b = model_logits(out, tokens, 20, &v2);
        CHECK(a && b && v1 == v2 && !memcmp(a, b, sizeof(float) * 20 * (size_t)v1), "export of %s: other logits", gguf);
        free(a);
        free(b);
        if (f == 4) {
            /* The tokenizer: the same ids (bos added by a TemplateProcessing post-processor), specials by text. */
            orthros_tokenizer *tg = NULL, *te = NULL;
            CHECK(orthros_tokenizer_load(&tg, gguf) == 0 && orthros_tokenizer_load(&te, out) == 0, "tokenizers: %s",
                  orthros_last_error());
            int32_t *ia = NULL, *ib = NULL;
            int na = 0, nb = 0;
            const char *text = "ab ab<|end|>aa 12 \xff";
            if (tg && te) {
                orthros_tokenizer_encode(tg, text, strlen(text), ORTHROS_TOK_ADD_SPECIAL, &ia, &na);
                orthros_tokenizer_encode(te, text, strlen(text), ORTHROS_TOK_ADD_SPECIAL, &ib, &nb);
            }
            CHECK(na > 2 && na == nb && !memcmp(ia, ib, sizeof *ia * (size_t)na) && ia[0] == 259,
                  "the exported tokenizer encodes \"%s\" to other ids", text);
            free(ia);
            free(ib);
            orthros_tokenizer_free(tg);
            orthros_tokenizer_free(te);
            snprintf(path, sizeof path, "%s/tokenizer.json", out);
            cJSON *tj = tu_load_json(path);
            const cJSON *pp = cJSON_GetObjectItemCaseSensitive(tj, "post_processor");
            CHECK(pp && !strcmp(cJSON_GetObjectItemCaseSensitive(pp, "type")->valuestring, "TemplateProcessing"),
                  "add_bos_token: no TemplateProcessing post-processor");
            cJSON_Delete(tj);
            snprintf(path, sizeof path, "%s/config.json", out);
            cJSON *cj = tu_load_json(path);
            CHECK(cJSON_GetObjectItemCaseSensitive(cj, "bos_token_id")->valuedouble == 259 &&
                      cJSON_GetObjectItemCaseSensitive(cj, "eos_token_id")->valuedouble == 259,
                  "config.json's bos / eos are not the tokenizer's");
            cJSON_Delete(cj);
        }
        printf("export of %-14s loads again with the GGUF's logits bit for bit%s\n", names[f],
               f == 4 ? ", its tokenizer's ids" : "");
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_gguf PATH/TO/orthros REPO_ROOT\n");
        return 2;
    }
    bin = argv[1];
    repo = argv[2];
    tmp = tu_tempdir();
    check_quants();
    check_tiny_q41();
    check_fixtures();
    check_gguf_tokenizer();
    check_special_tokens();
    check_malformed();
    check_export();
    check_many_names();
    check_cli_text();
    check_mutations();
    if (tu_remove_tree(tmp)) fprintf(stderr, "could not remove %s\n", tmp);
    free(tmp);
    return tu_finish();
}
