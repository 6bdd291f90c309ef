/* The analytic recall checkpoint: every weight is written down, none is trained (docs/evals.md, "The
 * construction").
 *
 * Why a needle is one token. Under `orthros` every layer runs linear attention over the prompt, and linear
 * attention is position-blind and has no recency, so no layer can bind a key token to the value token after
 * it while prefilling ("the value after key k" needs a previous-token head). A fact token pair(k, v) carries
 * the binding in its embedding, so the layer-1 keys and values of the cache are the same under every
 * architecture, and recall is decided only by the attention at the question, where the architectures differ.
 *
 * Residual stream (D = 192): CONST (1 in every token), PAD (tops every embedding up to |x|^2 = D, so that
 * RMSNorm is the identity on embeddings), VT (1 on value tokens), QKEY[32] (a key token's code), PKEY[32] (a
 * fact token's key code), VAL[32] (a fact token's value, one-hot; the retrieved answer is written here too),
 * SVAL[32] (a value token's identity), EXC[32] (the values already answered), FILL[16] (filler identity).
 * Key codes are the rows of a 32 x 32 Sylvester-Hadamard matrix and their negations (K <= 64): two codes have
 * dot product 32 (same key), 0 or -32.
 *
 * Layer 0, the exclusion head: attends from every position to the value tokens before it (score E against
 * 0 for every other token) and writes the average of their one-hot identities into EXC. In a prompt there are
 * no value tokens (answers only appear in the decode phase), so it writes 0 there under every architecture.
 * Layer 1, the retrieval head: the question's q is its key code (QKEY) scaled so that the matching fact
 * scores S, plus on the value dimensions a class bonus B_v = delta (R - 1 - v mod R) minus H EXC_v; a fact's
 * k is its key code and its one-hot value. Every other token has k = 0 in this head: score 0. Its output
 * writes the attended facts' values into VAL with weight lambda.
 * lm_head: value u reads Lambda VAL_u, NONE reads Lambda lambda / 2 CONST: the retrieved value beats the
 * default exactly when the attention mass on facts holding it is at least one half. MLPs are zero.
 *
 * RoPE: q and k use only rotary pairs 32..63 of head_dim 128; llama3 scaling (factor 1e9) divides their
 * frequencies so that they turn by less than 1e-6 radian across 2^30 positions; the high-frequency pairs are
 * unused (zero in q and k). */
#define _GNU_SOURCE
#include "analytic.h"
#include "orthros.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define AR_D 192
#define AR_HD 128
#define AR_FFN 8
#define AR_LAYERS 2
#define AR_CODE 32
#define AR_FILL_DIMS 16

enum { R_CONST = 0, R_PAD = 1, R_VT = 2, R_QKEY = 3, R_PKEY = 35, R_VAL = 67, R_SVAL = 99, R_EXC = 131, R_FILL = 163 };

/* Construction constants (see orthros_analytic_margins_of). */
#define AR_DELTA 6.0
#define AR_MARGIN 12.0
#define AR_KAPPA 4.0   /* k of a fact on its value dimension */
#define AR_LAMBDA 4.0  /* retrieval output into VAL */
#define AR_LOGIT 4.0   /* lm_head gain */
#define AR_THETA 1e6
#define AR_FACTOR 1e9
#define AR_ORIG_CTX 1024
#define AR_FILL_SEED 0x5eed0f11e5ull

void orthros_analytic_params_default(orthros_analytic_params *p)
{
    *p = (orthros_analytic_params){.keys = 64, .values = 32, .fillers = 64, .max_context = (int64_t)1 << 20};
}

int orthros_analytic_check(const orthros_analytic_params *p)
{
    if (p->keys < 1 || p->keys > ORTHROS_ANALYTIC_MAX_KEYS)
        return orthros_error(ORTHROS_EINVAL, "keys must be in 1..%d (got %d)", ORTHROS_ANALYTIC_MAX_KEYS, p->keys);
    if (p->values < ORTHROS_ANALYTIC_CLASSES || p->values > ORTHROS_ANALYTIC_MAX_VALUES || p->values % ORTHROS_ANALYTIC_CLASSES)
        return orthros_error(ORTHROS_EINVAL, "values must be a multiple of %d in %d..%d (got %d)", ORTHROS_ANALYTIC_CLASSES,
                             ORTHROS_ANALYTIC_CLASSES, ORTHROS_ANALYTIC_MAX_VALUES, p->values);
    if (p->fillers < 1 || p->fillers > ORTHROS_ANALYTIC_MAX_FILLERS)
        return orthros_error(ORTHROS_EINVAL, "fillers must be in 1..%d (got %d)", ORTHROS_ANALYTIC_MAX_FILLERS, p->fillers);
    if (p->max_context < 16 || p->max_context > ((int64_t)1 << 30))
        return orthros_error(ORTHROS_EINVAL, "max-context must be in 16..2^30 (got %lld)", (long long)p->max_context);
    return 0;
}

void orthros_analytic_layout_of(orthros_analytic_layout *l, const orthros_analytic_params *p)
{
    l->keys = p->keys;
    l->values = p->values;
    l->fillers = p->fillers;
    l->classes = ORTHROS_ANALYTIC_CLASSES;
    l->bos = 0;
    l->none = 1;
    l->query = 2;
    l->filler0 = 3;
    l->key0 = l->filler0 + p->fillers;
    l->value0 = l->key0 + p->keys;
    l->pair0 = l->value0 + p->values;
    l->vocab = l->pair0 + p->keys * p->values;
    l->max_context = p->max_context;
}

/* Inverse frequency of rotary pair j as transformers computes it for this config (llama3 scaling). */
static double ar_inv_freq(int j)
{
    double f = 1.0 / pow(AR_THETA, 2.0 * j / AR_HD), wavelen = 2.0 * M_PI / f;
    double low = AR_ORIG_CTX / 1.0, high = AR_ORIG_CTX / 4.0;
    if (wavelen > low) return f / AR_FACTOR;
    if (wavelen >= high) {
        double s = (AR_ORIG_CTX / wavelen - 1.0) / (4.0 - 1.0);
        return (1.0 - s) * f / AR_FACTOR + s * f;
    }
    return f;
}

/* Margins, each in softmax logit units, required >= AR_MARGIN - (something small) by the tests:
 *  - a haystack of N tokens at score 0 takes at most N e^-S of the mass: S = ln max(N, K) + (R-1) delta + 12;
 *  - the other K - 1 facts score at most delta (their class bonus): margin S - (R-1) delta - ln K;
 *  - values of one key differ by delta per class: the best unanswered one keeps >= 1 - (R-1) e^-delta;
 *  - an answered value loses H / (answers so far) >= H / (R-1); H = (R-1) ((R-1) delta + ln R + 12);
 *  - the exclusion head gives answered values score E = ln N + 12 over everything else. */
void orthros_analytic_margins_of(orthros_analytic_margins *m, const orthros_analytic_params *p)
{
    double R = ORTHROS_ANALYTIC_CLASSES, lnN = log((double)p->max_context);
    /* ln of the larger of the context and the key count: a context shorter than the keys still holds up to
     * K - 1 competing facts. */
    double lnNK = fmax(lnN, log((double)p->keys));
    m->delta = AR_DELTA;
    m->S = lnNK + (R - 1) * AR_DELTA + AR_MARGIN;
    m->H = (R - 1) * ((R - 1) * AR_DELTA + log(R) + AR_MARGIN);
    m->E = lnN + AR_MARGIN;
    m->gap_filler = m->S - lnN;
    m->gap_keys = m->S - (R - 1) * AR_DELTA - log((double)p->keys);
    m->gap_excl = m->H / (R - 1) - (R - 1) * AR_DELTA - log(R);
    m->gap_exc_head = m->E - lnN;
    m->rope_max_angle = (double)p->max_context * ar_inv_freq(AR_HD / 4);
    m->rope_theta = AR_THETA;
    m->rope_factor = AR_FACTOR;
}

static float bf16_exact(double x) { return orthros_bf16_to_f32(orthros_f32_to_bf16((float)x)); }

static int hadamard(int i, int j) { return __builtin_popcount((unsigned)(i & j)) & 1 ? -1 : 1; }
/* Code of key k on dimension j: rows of H_32 for k < 32, their negations after. */
static float key_code(int k, int j) { return (float)(k < AR_CODE ? hadamard(k, j) : -hadamard(k - AR_CODE, j)); }
/* Head dimension of key-code entry j and of value v: rotary pairs 32..47 and 48..63 (both halves). */
static int head_key_dim(int j) { return j < 16 ? 32 + j : 96 + (j - 16); }
static int head_val_dim(int v) { return v < 16 ? 48 + v : 112 + (v - 16); }

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void embed_row(float *x, const orthros_analytic_layout *l, int tok)
{
    memset(x, 0, sizeof(float) * AR_D);
    x[R_CONST] = 1.0f;
    if (tok >= l->filler0 && tok < l->key0) {
        uint64_t s = AR_FILL_SEED + (uint64_t)(tok - l->filler0) * 1000003ull;
        for (int j = 0; j < AR_FILL_DIMS; j++) x[R_FILL + j] = splitmix(&s) & 1 ? 1.0f : -1.0f;
    } else if (tok >= l->key0 && tok < l->value0) {
        for (int j = 0; j < AR_CODE; j++) x[R_QKEY + j] = key_code(tok - l->key0, j);
    } else if (tok >= l->value0 && tok < l->pair0) {
        x[R_VT] = 1.0f;
        x[R_SVAL + tok - l->value0] = 1.0f;
    } else if (tok >= l->pair0) {
        int k = (tok - l->pair0) / l->values, v = (tok - l->pair0) % l->values;
        for (int j = 0; j < AR_CODE; j++) x[R_PKEY + j] = key_code(k, j);
        x[R_VAL + v] = 1.0f;
    }
    double ss = 0;
    for (int j = 0; j < AR_D; j++) ss += (double)x[j] * x[j];
    x[R_PAD] = bf16_exact(sqrt((double)AR_D - ss));
}

/* Fills one tensor (already zeroed) by name; returns 0, or ORTHROS_EINVAL for an unknown name. */
static int fill_tensor(float *w, const char *name, const orthros_analytic_params *p)
{
    orthros_analytic_layout l;
    orthros_analytic_margins m;
    orthros_analytic_layout_of(&l, p);
    orthros_analytic_margins_of(&m, p);
    double sq = sqrt((double)AR_HD), R = ORTHROS_ANALYTIC_CLASSES;
    int layer = -1;
    char rest[128] = "";
    if (!strcmp(name, "model.embed_tokens.weight")) {
        for (int t = 0; t < l.vocab; t++) embed_row(w + (size_t)t * AR_D, &l, t);
        return 0;
    }
    if (!strcmp(name, "lm_head.weight")) {
        w[(size_t)l.none * AR_D + R_CONST] = (float)(AR_LOGIT * AR_LAMBDA / 2);
        for (int v = 0; v < l.values; v++) w[(size_t)(l.value0 + v) * AR_D + R_VAL + v] = (float)AR_LOGIT;
        return 0;
    }
    if (!strcmp(name, "model.norm.weight")) {
        for (int j = 0; j < AR_D; j++) w[j] = 1.0f;
        return 0;
    }
    if (sscanf(name, "model.layers.%d.%127s", &layer, rest) != 2 || layer < 0 || layer >= AR_LAYERS)
        return ORTHROS_EINVAL;
    if (!strcmp(rest, "input_layernorm.weight") || !strcmp(rest, "post_attention_layernorm.weight")) {
        for (int j = 0; j < AR_D; j++) w[j] = 1.0f;
        return 0;
    }
    if (!strncmp(rest, "mlp.", 4)) return 0;
    int q = !strcmp(rest, "self_attn.q_proj.weight"), k = !strcmp(rest, "self_attn.k_proj.weight");
    int v = !strcmp(rest, "self_attn.v_proj.weight"), o = !strcmp(rest, "self_attn.o_proj.weight");
    if (!q && !k && !v && !o) return ORTHROS_EINVAL;
#define W_IN(row, col) w[(size_t)(row) * AR_D + (col)]  /* q/k/v: [AR_HD][AR_D] */
#define W_OUT(row, col) w[(size_t)(row) * AR_HD + (col)] /* o: [AR_D][AR_HD] */
    if (layer == 0) {
        /* Exclusion head: score E on value tokens (VT) from every query (CONST), on rotary pair 63. */
        double e = sqrt(m.E * sq);
        if (q) W_IN(63, R_CONST) = bf16_exact(e);
        if (k) W_IN(63, R_VT) = bf16_exact(e);
        for (int u = 0; u < l.values; u++) {
            if (v) W_IN(u, R_SVAL + u) = 1.0f;
            if (o) W_OUT(R_EXC + u, u) = 1.0f;
        }
        return 0;
    }
    /* Retrieval head. Key codes: alpha beta 32 / sqrt(d) = S. */
    double ab = sqrt(m.S * sq / AR_CODE);
    for (int j = 0; j < AR_CODE; j++) {
        if (q) W_IN(head_key_dim(j), R_QKEY + j) = bf16_exact(ab);
        if (k) W_IN(head_key_dim(j), R_PKEY + j) = bf16_exact(ab);
    }
    for (int u = 0; u < l.values; u++) {
        double bonus = m.delta * (R - 1 - orthros_analytic_class(u));
        if (q) {
            W_IN(head_val_dim(u), R_CONST) = bf16_exact(sq / AR_KAPPA * bonus);
            W_IN(head_val_dim(u), R_EXC + u) = bf16_exact(-sq / AR_KAPPA * m.H);
        }
        if (k) W_IN(head_val_dim(u), R_VAL + u) = (float)AR_KAPPA;
        if (v) W_IN(u, R_VAL + u) = 1.0f;
        if (o) W_OUT(R_VAL + u, u) = (float)AR_LAMBDA;
    }
#undef W_IN
#undef W_OUT
    return 0;
}

typedef struct {
    char name[96];
    int64_t rows, cols; /* cols == 0: a vector */
} ar_tensor;

static int tensor_list(ar_tensor *t, const orthros_analytic_layout *l)
{
    int n = 0;
    t[n++] = (ar_tensor){"model.embed_tokens.weight", l->vocab, AR_D};
    t[n++] = (ar_tensor){"lm_head.weight", l->vocab, AR_D};
    t[n++] = (ar_tensor){"model.norm.weight", AR_D, 0};
    for (int i = 0; i < AR_LAYERS; i++) {
        static const struct {
            const char *s;
            int rows, cols;
        } parts[] = {{"input_layernorm.weight", AR_D, 0},       {"post_attention_layernorm.weight", AR_D, 0},
                     {"self_attn.q_proj.weight", AR_HD, AR_D}, {"self_attn.k_proj.weight", AR_HD, AR_D},
                     {"self_attn.v_proj.weight", AR_HD, AR_D}, {"self_attn.o_proj.weight", AR_D, AR_HD},
                     {"mlp.gate_proj.weight", AR_FFN, AR_D},   {"mlp.up_proj.weight", AR_FFN, AR_D},
                     {"mlp.down_proj.weight", AR_D, AR_FFN}};
        for (size_t j = 0; j < sizeof parts / sizeof *parts; j++) {
            snprintf(t[n].name, sizeof t[n].name, "model.layers.%d.%s", i, parts[j].s);
            t[n].rows = parts[j].rows;
            t[n].cols = parts[j].cols;
            n++;
        }
    }
    return n;
}

int orthros_analytic_tensor(float **out, size_t *numel, const orthros_analytic_params *p, const char *name)
{
    orthros_analytic_layout l;
    ar_tensor t[3 + 9 * AR_LAYERS];
    int rc = orthros_analytic_check(p);
    *out = NULL;
    if (rc) return rc;
    orthros_analytic_layout_of(&l, p);
    int n = tensor_list(t, &l);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].name, name)) continue;
        *numel = (size_t)t[i].rows * (size_t)(t[i].cols ? t[i].cols : 1);
        float *w = calloc(*numel, sizeof *w);
        if (!w) return orthros_error(ORTHROS_ENOMEM, "out of memory building %s", name);
        fill_tensor(w, name, p);
        *out = w;
        return 0;
    }
    return orthros_error(ORTHROS_EINVAL, "the analytic checkpoint has no tensor %s", name);
}

cJSON *orthros_analytic_layout_json(const orthros_analytic_layout *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddNumberToObject(o, "keys", l->keys);
    cJSON_AddNumberToObject(o, "values", l->values);
    cJSON_AddNumberToObject(o, "fillers", l->fillers);
    cJSON_AddNumberToObject(o, "classes", l->classes);
    cJSON_AddNumberToObject(o, "bos", l->bos);
    cJSON_AddNumberToObject(o, "none", l->none);
    cJSON_AddNumberToObject(o, "query", l->query);
    cJSON_AddNumberToObject(o, "filler0", l->filler0);
    cJSON_AddNumberToObject(o, "key0", l->key0);
    cJSON_AddNumberToObject(o, "value0", l->value0);
    cJSON_AddNumberToObject(o, "pair0", l->pair0);
    cJSON_AddNumberToObject(o, "max_context", (double)l->max_context);
    return o;
}

static cJSON *config_json(const orthros_analytic_params *p)
{
    orthros_analytic_layout l;
    orthros_analytic_margins m;
    orthros_analytic_layout_of(&l, p);
    orthros_analytic_margins_of(&m, p);
    cJSON *c = cJSON_CreateObject();
    cJSON *ar = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(ar, cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(c, "model_type", "llama");
    cJSON_AddNumberToObject(c, "hidden_size", AR_D);
    cJSON_AddNumberToObject(c, "intermediate_size", AR_FFN);
    cJSON_AddNumberToObject(c, "num_hidden_layers", AR_LAYERS);
    cJSON_AddNumberToObject(c, "num_attention_heads", 1);
    cJSON_AddNumberToObject(c, "num_key_value_heads", 1);
    cJSON_AddNumberToObject(c, "head_dim", AR_HD);
    cJSON_AddNumberToObject(c, "vocab_size", l.vocab);
    cJSON_AddNumberToObject(c, "max_position_embeddings", (double)p->max_context);
    cJSON_AddNumberToObject(c, "rms_norm_eps", 1e-5);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    cJSON_AddBoolToObject(c, "attention_bias", 0);
    cJSON_AddBoolToObject(c, "mlp_bias", 0);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", 0);
    cJSON_AddNumberToObject(c, "bos_token_id", l.bos);
    cJSON_AddNumberToObject(c, "rope_theta", AR_THETA);
    cJSON *rs = cJSON_AddObjectToObject(c, "rope_scaling");
    cJSON_AddStringToObject(rs, "rope_type", "llama3");
    cJSON_AddNumberToObject(rs, "factor", AR_FACTOR);
    cJSON_AddNumberToObject(rs, "low_freq_factor", 1.0);
    cJSON_AddNumberToObject(rs, "high_freq_factor", 4.0);
    cJSON_AddNumberToObject(rs, "original_max_position_embeddings", AR_ORIG_CTX);
    cJSON_AddStringToObject(c, "torch_dtype", "float32");
    cJSON *lay = orthros_analytic_layout_json(&l);
    cJSON *mg = cJSON_AddObjectToObject(lay, "margins");
    cJSON_AddNumberToObject(mg, "S", m.S);
    cJSON_AddNumberToObject(mg, "delta", m.delta);
    cJSON_AddNumberToObject(mg, "H", m.H);
    cJSON_AddNumberToObject(mg, "E", m.E);
    cJSON_AddNumberToObject(mg, "gap_filler", m.gap_filler);
    cJSON_AddNumberToObject(mg, "gap_keys", m.gap_keys);
    cJSON_AddNumberToObject(mg, "gap_exclusion", m.gap_excl);
    cJSON_AddNumberToObject(mg, "gap_exclusion_head", m.gap_exc_head);
    cJSON_AddNumberToObject(mg, "rope_max_angle", m.rope_max_angle);
    cJSON_AddItemToObject(c, "analytic_recall", lay);
    return c;
}

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

int orthros_analytic_write(const char *dir, const orthros_analytic_params *p)
{
    int rc = orthros_analytic_check(p);
    if (rc) return rc;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return orthros_error(ORTHROS_EIO, "%s: cannot create the directory: %s", dir, strerror(errno));
    orthros_analytic_layout l;
    orthros_analytic_layout_of(&l, p);
    ar_tensor t[3 + 9 * AR_LAYERS];
    int n = tensor_list(t, &l);
    cJSON *h = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    cJSON_AddStringToObject(meta, "made_by", "orthros make-model analytic-recall");
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t numel = (size_t)t[i].rows * (size_t)(t[i].cols ? t[i].cols : 1);
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(e, "dtype", "F32");
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].rows));
        if (t[i].cols) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].cols));
        cJSON *off = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)total));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(total + numel * 4)));
        total += numel * 4;
    }
    char *htext = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    cJSON *cfg = config_json(p);
    char *ctext = cJSON_Print(cfg);
    cJSON_Delete(cfg);
    char path[4096];
    FILE *f = NULL;
    rc = 0;
    if (!htext || !ctext) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory writing the analytic checkpoint");
        goto done;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!(f = fopen(path, "wb")) || write_all(f, ctext, strlen(ctext)) || fputc('\n', f) == EOF) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot write: %s", path, strerror(errno));
        goto done;
    }
    if (fclose(f)) {
        f = NULL;
        rc = orthros_error(ORTHROS_EIO, "%s: cannot write: %s", path, strerror(errno));
        goto done;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!(f = fopen(path, "wb"))) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", path, strerror(errno));
        goto done;
    }
    /* The header is padded with spaces to a multiple of 8 bytes, so that every tensor is 8-byte aligned. */
    size_t hlen = strlen(htext), padded = (hlen + 7) / 8 * 8;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int bad = write_all(f, len8, 8) || write_all(f, htext, hlen);
    for (size_t i = hlen; i < padded && !bad; i++) bad = fputc(' ', f) == EOF;
    for (int i = 0; i < n && !bad; i++) {
        float *w = NULL;
        size_t numel = 0;
        if ((rc = orthros_analytic_tensor(&w, &numel, p, t[i].name))) break;
        bad = write_all(f, w, numel * 4);
        free(w);
    }
    if (fclose(f) || bad) rc = rc ? rc : orthros_error(ORTHROS_EIO, "%s: write failed", path);
    f = NULL;
done:
    if (f) fclose(f);
    free(htext);
    free(ctext);
    return rc;
}

static int layout_int(const cJSON *o, const char *key, int *out, const char *path)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it))
        return orthros_error(ORTHROS_EFORMAT, "%s: analytic_recall.%s is missing or not a number", path, key);
    *out = it->valueint;
    return 0;
}

int orthros_analytic_layout_load(orthros_analytic_layout *l, const char *dir)
{
    char path[4096], *text = NULL;
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = orthros_read_text_file(&text, path, 16u << 20);
    if (rc) return rc;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "analytic_recall");
    if (!cJSON_IsObject(ar)) {
        cJSON_Delete(root);
        return orthros_error(ORTHROS_EINVAL,
                             "%s has no analytic_recall object: the evals need a model made by `orthros make-model "
                             "analytic-recall` (its token layout says which tokens are keys, values and filler)",
                             path);
    }
    memset(l, 0, sizeof *l);
    const char *keys[] = {"keys", "values", "fillers", "classes", "bos", "none", "query", "filler0", "key0", "value0", "pair0"};
    int *dst[] = {&l->keys, &l->values, &l->fillers, &l->classes, &l->bos, &l->none, &l->query, &l->filler0, &l->key0,
                  &l->value0, &l->pair0};
    for (size_t i = 0; i < sizeof keys / sizeof *keys && !rc; i++) rc = layout_int(ar, keys[i], dst[i], path);
    /* a whole number in 0..2^30 before it is converted (one outside int64's range would be undefined) */
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(ar, "max_context");
    const double mcv = cJSON_IsNumber(mc) ? mc->valuedouble : 0.0;
    if (!rc && mc && !(cJSON_IsNumber(mc) && mcv >= 0.0 && mcv <= (double)((int64_t)1 << 30) && mcv == floor(mcv)))
        rc = orthros_error(ORTHROS_EFORMAT, "%s: analytic_recall.max_context is not a whole number in 0..2^30", path);
    l->max_context = rc ? 0 : (int64_t)mcv;
    l->vocab = l->pair0 + l->keys * l->values;
    if (!rc && (l->keys < 1 || l->values < 1 || l->fillers < 1 || l->classes != ORTHROS_ANALYTIC_CLASSES))
        rc = orthros_error(ORTHROS_EFORMAT, "%s: analytic_recall has an impossible layout", path);
    cJSON_Delete(root);
    return rc;
}
