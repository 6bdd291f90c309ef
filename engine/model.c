/* Models and sessions: weight loading (checkpoints and presets) and the one forward schedule, written
 * against the backend interface (DESIGN section 4). */
#define _GNU_SOURCE
#include "gguf.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    void *wqkv;      /* [(Hq + 2 Hkv) d][D] */
    void *wo;        /* [D][Hq d] */
    void *w_gu;      /* [2 F][D]: gate rows then up rows */
    void *w_down;    /* [D][F] */
    void *attn_norm; /* [D] */
    void *mlp_norm;  /* [D] */
    void *fmap_q;    /* hedgehog: [Hq][d][F/2] */
    void *fmap_k;    /* hedgehog: [Hkv][d][F/2] */
} layer_weights;

struct orthros_model {
    orthros_model_config cfg;
    orthros_arch arch;
    orthros_backend *be;
    orthros_rope rope;
    float inv_freq[ORTHROS_MAX_HEAD_DIM / 2];
    void *embed;       /* [V][D] */
    void *final_norm;  /* [D] */
    void *lm_head;     /* [V][D]; == embed when tied */
    layer_weights *layers;
    size_t weight_bytes;
    int has_fmap_weights;      /* hedgehog feature-map weights are held (the schedule at load needed them) */
    orthros_arch_opts opts;    /* the options the schedule was resolved from (arch name excepted) */
    char *orthros_json;        /* config.json's `orthros` object, or NULL */
};

const orthros_model_config *orthros_model_get_config(const orthros_model *m) { return &m->cfg; }
const orthros_arch *orthros_model_get_arch(const orthros_model *m) { return &m->arch; }
orthros_backend *orthros_model_get_backend(orthros_model *m) { return m->be; }
size_t orthros_model_weight_bytes(const orthros_model *m) { return m->weight_bytes; }
size_t orthros_model_act_size(const orthros_model *m) { return m->be->act_size; }

static int arch_needs_hedgehog(const orthros_arch *a, int n_layers)
{
    return a->fmap == ORTHROS_FMAP_HEDGEHOG && orthros_arch_uses_state(a, n_layers);
}

/* One slot per tensor the model holds, in a fixed order, so that allocation, loading, filling and freeing
 * walk the same list. */
typedef struct {
    void **dst;
    size_t numel;
    float scale;      /* preset fill: uniform in [-scale, scale]; 0 means "ones" (norm weights) */
} weight_slot;

static int weight_slots(orthros_model *m, weight_slot *slots, int max)
{
    const orthros_model_config *c = &m->cfg;
    size_t D = (size_t)c->d_model, d = (size_t)c->head_dim, Hq = (size_t)c->n_heads, Hkv = (size_t)c->n_kv_heads;
    size_t F = (size_t)c->ffn, V = (size_t)c->vocab, half = (size_t)m->arch.feature_dim;
    int n = 0;
#define SLOT(p, count, sc)                                                                                             \
    do {                                                                                                               \
        if (n < max) slots[n] = (weight_slot){(void **)&(p), (count), (sc)};                                         \
        n++;                                                                                                           \
    } while (0)
    SLOT(m->embed, V * D, 1.0f);
    SLOT(m->final_norm, D, 0.0f);
    if (!c->tie_embeddings) SLOT(m->lm_head, V * D, 1.0f / sqrtf((float)D));
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *L = &m->layers[l];
        SLOT(L->wqkv, (Hq + 2 * Hkv) * d * D, 1.0f / sqrtf((float)D));
        SLOT(L->wo, D * Hq * d, 1.0f / sqrtf((float)(Hq * d)));
        SLOT(L->w_gu, 2 * F * D, 1.0f / sqrtf((float)D));
        SLOT(L->w_down, D * F, 1.0f / sqrtf((float)F));
        SLOT(L->attn_norm, D, 0.0f);
        SLOT(L->mlp_norm, D, 0.0f);
        if (m->has_fmap_weights) {
            SLOT(L->fmap_q, Hq * d * half, 1.0f / sqrtf((float)d));
            SLOT(L->fmap_k, Hkv * d * half, 1.0f / sqrtf((float)d));
        }
    }
#undef SLOT
    return n;
}

void orthros_model_free(orthros_model *m)
{
    if (!m) return;
    if (m->layers) {
        weight_slot *slots = malloc(sizeof(weight_slot) * (size_t)(8 * m->cfg.n_layers + 8));
        if (slots) {
            int n = weight_slots(m, slots, 8 * m->cfg.n_layers + 8);
            for (int i = 0; i < n; i++)
                if (*slots[i].dst) m->be->free(m->be, *slots[i].dst);
            free(slots);
        }
        free(m->layers);
    }
    free(m->orthros_json);
    free(m);
}

int orthros_model_set_arch(orthros_model *m, const char *arch)
{
    orthros_arch_opts o = m->opts;
    orthros_arch a;
    o.arch = arch;
    int rc = orthros_arch_resolve(&a, &m->cfg, &o, m->orthros_json);
    if (rc) return rc;
    if (arch_needs_hedgehog(&a, m->cfg.n_layers) && !m->has_fmap_weights)
        return orthros_error(ORTHROS_EUNSUPPORTED,
                             "architecture %s needs the hedgehog feature-map weights, which were not loaded: load the "
                             "model under it", a.name);
    m->arch = a;
    return 0;
}

/* Where checkpoint weights come from: a safetensors checkpoint (Hugging Face names) or a GGUF file (llama.cpp
 * names, mapped from the Hugging Face ones). */
typedef struct {
    const orthros_st *st;
    const orthros_gguf *g;
} weight_source;

/* One checkpoint tensor the model needs, and where its elements go. */
typedef struct {
    char name[80];    /* the Hugging Face name */
    void **dst;       /* a weight buffer of weight_slots(), allocated after every need is checked */
    size_t off;       /* element offset inside it */
    int ndim;
    int64_t shape[3];
    const orthros_st_tensor *t;    /* safetensors: set by checkpoint_check */
    const orthros_gguf_tensor *gt; /* GGUF: set by checkpoint_check */
    int heads;        /* GGUF q / k: the heads whose RoPE row permutation is undone at upload; else 0 */
} tensor_need;

static void shape_text(char *buf, size_t cap, int ndim, const int64_t *shape, int reverse)
{
    buf[0] = '\0';
    for (int i = 0; i < ndim; i++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%lld", i ? ", " : "", (long long)shape[reverse ? ndim - 1 - i : i]);
}

/* A GGUF need: its llama.cpp tensor, present, of a type that dequantises, its shape (ggml lists dimensions
 * innermost first) the metadata's. */
static int gguf_check(const orthros_model *m, const orthros_gguf *g, tensor_need *w)
{
    char name[160], got[128], want[128];
    if (orthros_gguf_tensor_name(name, sizeof name, w->name, &m->cfg, &w->heads))
        return orthros_error(ORTHROS_EUNSUPPORTED, "%s: a GGUF file holds no %s", g->name, w->name);
    const orthros_gguf_tensor *t = w->gt = orthros_gguf_find_tensor(g, name);
    if (!t) return orthros_error(ORTHROS_EFORMAT, "%s: missing tensor %s", g->name, name);
    int same = t->ndim == w->ndim;
    for (int i = 0; same && i < w->ndim; i++) same = t->ne[i] == w->shape[w->ndim - 1 - i];
    if (!same) {
        shape_text(got, sizeof got, t->ndim, t->ne, 0);
        shape_text(want, sizeof want, w->ndim, w->shape, 1);
        return orthros_error(ORTHROS_EFORMAT, "%s: tensor %s has shape [%s], the metadata implies [%s] (ggml order)",
                             g->name, name, got, want);
    }
    if (!orthros_ggml_type_supported(t->type)) return orthros_error_prefix(orthros_gguf_dequantize(NULL, t), g->name);
    return 0;
}

/* A GGUF tensor dequantised to float32, the RoPE row permutation of q / k undone, uploaded. */
static int gguf_upload(orthros_model *m, const tensor_need *w)
{
    size_t numel = orthros_gguf_numel(w->gt);
    float *x = malloc(numel * sizeof *x), *tmp = w->heads ? malloc(numel * sizeof *tmp) : NULL;
    int rc = 0;
    if (!x || (w->heads && !tmp)) rc = orthros_error(ORTHROS_ENOMEM, "out of host memory dequantising %s", w->name);
    if (!rc) rc = orthros_gguf_dequantize(x, w->gt);
    if (!rc && w->heads) orthros_gguf_unpermute_rows(x, tmp, w->heads, m->cfg.head_dim, (size_t)w->shape[1]);
    if (!rc) rc = m->be->upload(m->be, *w->dst, w->off, x, ORTHROS_DTYPE_F32, numel);
    free(x);
    free(tmp);
    return rc;
}

/* The tensors a checkpoint must hold for m's config and schedule, in load order; returns how many (at most
 * 11 per layer + 3). */
static int checkpoint_needs(orthros_model *m, tensor_need *needs)
{
    const orthros_model_config *c = &m->cfg;
    int64_t D = c->d_model, d = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads, F = c->ffn, V = c->vocab;
    int64_t half = m->arch.feature_dim;
    int n = 0;
#define NEED(dst_, off_, nd, a, b, cc, ...)                                                                            \
    do {                                                                                                               \
        tensor_need *t_ = &needs[n++];                                                                                 \
        *t_ = (tensor_need){.dst = (void **)&(dst_), .off = (off_), .ndim = (nd), .shape = {a, b, cc}};               \
        snprintf(t_->name, sizeof t_->name, __VA_ARGS__);                                                              \
    } while (0)
    NEED(m->embed, 0, 2, V, D, 0, "model.embed_tokens.weight");
    NEED(m->final_norm, 0, 1, D, 0, 0, "model.norm.weight");
    if (!c->tie_embeddings) NEED(m->lm_head, 0, 2, V, D, 0, "lm_head.weight");
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *L = &m->layers[l];
        size_t off = 0;
        static const char *const qkv[] = {"q", "k", "v"};
        for (int j = 0; j < 3; j++) {
            int64_t rows = (j ? Hkv : Hq) * d;
            NEED(L->wqkv, off, 2, rows, D, 0, "model.layers.%d.self_attn.%s_proj.weight", l, qkv[j]);
            off += (size_t)(rows * D);
        }
        NEED(L->wo, 0, 2, D, Hq * d, 0, "model.layers.%d.self_attn.o_proj.weight", l);
        NEED(L->w_gu, 0, 2, F, D, 0, "model.layers.%d.mlp.gate_proj.weight", l);
        NEED(L->w_gu, (size_t)(F * D), 2, F, D, 0, "model.layers.%d.mlp.up_proj.weight", l);
        NEED(L->w_down, 0, 2, D, F, 0, "model.layers.%d.mlp.down_proj.weight", l);
        NEED(L->attn_norm, 0, 1, D, 0, 0, "model.layers.%d.input_layernorm.weight", l);
        NEED(L->mlp_norm, 0, 1, D, 0, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        if (m->has_fmap_weights) {
            NEED(L->fmap_q, 0, 3, Hq, d, half, "model.layers.%d.self_attn.feature_map_q.weight", l);
            NEED(L->fmap_k, 0, 3, Hkv, d, half, "model.layers.%d.self_attn.feature_map_k.weight", l);
        }
    }
#undef NEED
    return n;
}

/* Finds every needed tensor and checks its shape against config.json, before anything is allocated: a small
 * file must not make the loader claim memory that its config.json promises. (The dtype was checked when the
 * file was opened: F32, BF16 or F16, all of which upload converts.) */
static int checkpoint_check(const orthros_model *m, const weight_source *src, tensor_need *needs, int n)
{
    for (int i = 0; i < n; i++) {
        tensor_need *w = &needs[i];
        if (strstr(w->name, ".feature_map_") && src->g)
            return orthros_error(ORTHROS_EUNSUPPORTED,
                                 "%s: feature map hedgehog needs learned weights, which GGUF files do not hold", src->g->name);
        if (src->g) {
            int rc = gguf_check(m, src->g, w);
            if (rc) return rc;
            continue;
        }
        const orthros_st *st = src->st;
        const orthros_st_tensor *t = w->t = orthros_st_find(st, w->name);
        if (!t) {
            if (strstr(w->name, ".feature_map_"))
                return orthros_error(ORTHROS_EFORMAT, "%s: feature map hedgehog needs learned weights, but the checkpoint has no %s",
                                     st->source, w->name);
            return orthros_error(ORTHROS_EFORMAT, "%s: missing tensor %s", st->source, w->name);
        }
        int same = t->ndim == w->ndim;
        for (int k = 0; same && k < w->ndim; k++) same = t->shape[k] == w->shape[k];
        if (!same) {
            char got[256], want[128];
            shape_text(got, sizeof got, t->ndim, t->shape, 0);
            shape_text(want, sizeof want, w->ndim, w->shape, 0);
            return orthros_error(ORTHROS_EFORMAT, "%s: tensor %s has shape [%s], config.json implies [%s]",
                                 orthros_st_tensor_file(st, t), w->name, got, want);
        }
    }
    return 0;
}

/* Uploads every checked tensor into its (now allocated) weight buffer. */
static int checkpoint_upload(orthros_model *m, const tensor_need *needs, int n)
{
    for (int i = 0; i < n; i++) {
        if (needs[i].gt) {
            int rc = gguf_upload(m, &needs[i]);
            if (rc) return rc;
            continue;
        }
        const orthros_st_tensor *t = needs[i].t;
        size_t esz = orthros_dtype_size(t->dtype), numel = t->nbytes / esz;
        int rc;
        /* Data need not be aligned in a safetensors file; realign through a copy where it is not. */
        if ((uintptr_t)t->data % esz) {
            void *tmp = malloc(t->nbytes);
            if (!tmp) return orthros_error(ORTHROS_ENOMEM, "out of host memory realigning %s", needs[i].name);
            memcpy(tmp, t->data, t->nbytes);
            rc = m->be->upload(m->be, *needs[i].dst, needs[i].off, tmp, t->dtype, numel);
            free(tmp);
        } else {
            rc = m->be->upload(m->be, *needs[i].dst, needs[i].off, t->data, t->dtype, numel);
        }
        if (rc) return rc;
    }
    return 0;
}

/* Reads DIR/config.json: the model config and the text of its optional `orthros` object, which is checked here
 * (without the caller's options) so that its errors name the file. */
static int read_model_config(orthros_model_config *cfg, char **orthros_json, const char *dir)
{
    char path[4096], *text = NULL;
    *orthros_json = NULL;
    if (strlen(dir) + sizeof "/config.json" > sizeof path)
        return orthros_error(ORTHROS_EINVAL, "%.64s...: the model directory's path is too long", dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = orthros_read_text_file(&text, path, 16u << 20);
    if (rc) return rc;
    rc = orthros_config_parse_text(cfg, orthros_json, text, strlen(text));
    free(text);
    if (!rc && *orthros_json) {
        orthros_arch *scratch = malloc(sizeof *scratch);
        orthros_arch_opts none;
        orthros_arch_opts_default(&none);
        rc = scratch ? orthros_arch_resolve(scratch, cfg, &none, *orthros_json)
                     : orthros_error(ORTHROS_ENOMEM, "out of host memory");
        free(scratch);
    }
    if (rc) {
        free(*orthros_json);
        *orthros_json = NULL;
        return orthros_error_prefix(rc, path);
    }
    return 0;
}

int orthros_model_load(orthros_model **out, orthros_backend *be, const char *spec, const orthros_arch_opts *opts,
                       uint64_t seed)
{
    int rc = 0;
    char *orthros_json = NULL;
    orthros_st st = {0};
    orthros_gguf *g = NULL;
    int preset = !strncmp(spec, "preset:", 7);
    struct stat sb;
    /* A file is a GGUF (a directory is a Hugging Face checkpoint). */
    int gguf = !preset && stat(spec, &sb) == 0 && !S_ISDIR(sb.st_mode);
    weight_slot *slots = NULL;
    tensor_need *needs = NULL;
    int n_needs = 0;
    *out = NULL;
    orthros_model *m = calloc(1, sizeof *m);
    if (!m) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    m->be = be;
    if (preset) {
        if ((rc = orthros_preset_config(&m->cfg, spec + 7))) goto fail;
    } else if (gguf) {
        if ((rc = orthros_gguf_open(&g, spec))) goto fail;
        if ((rc = orthros_gguf_model_config(&m->cfg, g))) {
            rc = orthros_error_prefix(rc, spec);
            goto fail;
        }
    } else if ((rc = read_model_config(&m->cfg, &orthros_json, spec))) {
        goto fail;
    }
    if ((rc = orthros_arch_resolve(&m->arch, &m->cfg, opts, orthros_json))) goto fail;
    m->opts = *opts;
    m->opts.arch = NULL;
    m->has_fmap_weights = arch_needs_hedgehog(&m->arch, m->cfg.n_layers);
    if (m->arch.fmap != ORTHROS_FMAP_HEDGEHOG && orthros_arch_feature_size(&m->arch, m->cfg.head_dim) > 2048) {
        rc = orthros_error(ORTHROS_EINVAL, "feature size too large");
        goto fail;
    }
    orthros_rope_inv_freq(m->inv_freq, &m->cfg);
    if (g && (rc = orthros_gguf_rope_adjust(m->inv_freq, m->cfg.head_dim / 2, g))) {
        rc = orthros_error_prefix(rc, spec);
        goto fail;
    }
    m->rope = (orthros_rope){m->cfg.n_heads, m->cfg.n_kv_heads, m->cfg.head_dim, m->inv_freq};
    m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
    int max_slots = 8 * m->cfg.n_layers + 8;
    slots = malloc(sizeof *slots * (size_t)max_slots);
    if (!m->layers || !slots) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
        goto fail;
    }
    /* A checkpoint is checked in full (files, then every needed tensor's presence, dtype and shape) before
     * any weight memory is claimed. */
    if (!preset) {
        if (!gguf && (rc = orthros_st_open_dir(&st, spec))) goto fail;
        needs = malloc(sizeof *needs * (size_t)(11 * m->cfg.n_layers + 3));
        if (!needs) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
            goto fail;
        }
        n_needs = checkpoint_needs(m, needs);
        if ((rc = checkpoint_check(m, &(weight_source){&st, g}, needs, n_needs))) goto fail;
    }
    int n_slots = weight_slots(m, slots, max_slots);
    size_t total = 0;
    for (int i = 0; i < n_slots; i++) {
        /* The config limits keep this far from overflowing; the check keeps that true if they change. */
        if (slots[i].numel > (SIZE_MAX - total) / be->act_size) {
            rc = orthros_error(ORTHROS_ENOMEM, "the weights' size overflows size_t");
            goto fail;
        }
        total += slots[i].numel * be->act_size;
    }
    size_t free_b = 0, total_b = 0;
    be->mem_info(be, &free_b, &total_b);
    if (total > free_b) {
        rc = orthros_error(ORTHROS_ENOMEM, "the weights need %.2f GiB on the %s backend, %.2f GiB is free",
                           (double)total / (1 << 30), be->name, (double)free_b / (1 << 30));
        goto fail;
    }
    for (int i = 0; i < n_slots; i++) {
        *slots[i].dst = be->alloc(be, slots[i].numel * be->act_size);
        if (!*slots[i].dst) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of %s memory allocating %.2f GiB of weights", be->name,
                               (double)total / (1 << 30));
            goto fail;
        }
    }
    m->weight_bytes = total;
    if (preset) {
        for (int i = 0; i < n_slots; i++) {
            if (slots[i].scale == 0.0f) rc = be->fill(be, *slots[i].dst, slots[i].numel, 1.0f);
            else rc = be->fill_random(be, *slots[i].dst, slots[i].numel, seed * 1000003ull + (uint64_t)i, slots[i].scale);
            if (rc) goto fail;
        }
    } else if ((rc = checkpoint_upload(m, needs, n_needs))) {
        goto fail;
    }
    if (m->cfg.tie_embeddings) m->lm_head = m->embed;
    if ((rc = be->sync(be))) goto fail;
    free(needs);
    free(slots);
    m->orthros_json = orthros_json;
    orthros_st_close(&st);
    orthros_gguf_free(g);
    *out = m;
    return 0;
fail:
    free(needs);
    free(slots);
    free(orthros_json);
    orthros_st_close(&st);
    orthros_gguf_free(g);
    orthros_model_free(m);
    return rc;
}

/* ---- sessions and the forward schedule ---- */

struct orthros_session {
    orthros_model *m;
    orthros_backend *be;
    int B, max_ctx, chunk, rows, logit_rows;
    int *pos;                 /* host [B] */
    int *cap;                 /* per layer; 0 where the layer keeps no cache */
    void **k_cache, **v_cache;/* per layer [B][cap][Hkv][d] */
    float **S, **z;           /* per layer [B][Hkv][F][d], [B][Hkv][F] */
    void *x, *xn, *qkv, *attn, *delta, *gu, *act; /* [rows][...] activations */
    float *logits;            /* [logit_rows][V] on the backend */
    float *logits_host;       /* [logit_rows][V] */
};

static int layer_cap(const orthros_model *m, int l, int max_ctx, int chunk)
{
    orthros_attn_kind k = m->arch.kind[l];
    if (k == ORTHROS_ATTN_LINEAR) return 0;
    if (k == ORTHROS_ATTN_SWA) {
        long c = (long)m->arch.window + chunk - 1;
        return c < max_ctx ? (int)c : max_ctx;
    }
    return max_ctx;
}

static int session_rows(int batch, int chunk) { return chunk > batch ? chunk : batch; }
static int session_logit_rows(int batch) { return batch > 32 ? batch : 32; }

size_t orthros_session_bytes(const orthros_model *m, int batch, int max_ctx, int chunk)
{
    const orthros_model_config *c = &m->cfg;
    size_t act = m->be->act_size, d = (size_t)c->head_dim, Hkv = (size_t)c->n_kv_heads;
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    size_t bytes = 0;
    for (int l = 0; l < c->n_layers; l++) {
        bytes += 2 * (size_t)batch * (size_t)layer_cap(m, l, max_ctx, chunk) * Hkv * d * act;
        orthros_attn_kind k = m->arch.kind[l];
        if (k == ORTHROS_ATTN_LINEAR || k == ORTHROS_ATTN_ORTHROS) bytes += (size_t)batch * Hkv * F * (d + 1) * 4;
    }
    size_t rows = (size_t)session_rows(batch, chunk);
    size_t width = 3 * (size_t)c->d_model + (size_t)(c->n_heads + 2 * c->n_kv_heads) * d +
                   (size_t)c->n_heads * d + 3 * (size_t)c->ffn;
    bytes += rows * width * act;
    bytes += (size_t)session_logit_rows(batch) * (size_t)c->vocab * 4;
    return bytes;
}

void orthros_session_free(orthros_session *s)
{
    if (!s) return;
    orthros_backend *be = s->be;
    int L = s->m->cfg.n_layers;
    for (int l = 0; l < L; l++) {
        if (s->k_cache) be->free(be, s->k_cache[l]);
        if (s->v_cache) be->free(be, s->v_cache[l]);
        if (s->S) be->free(be, s->S[l]);
        if (s->z) be->free(be, s->z[l]);
    }
    void *bufs[] = {s->x, s->xn, s->qkv, s->attn, s->delta, s->gu, s->act, s->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be->free(be, bufs[i]);
    free(s->k_cache);
    free(s->v_cache);
    free(s->S);
    free(s->z);
    free(s->pos);
    free(s->cap);
    free(s->logits_host);
    free(s);
}

int orthros_session_init(orthros_session **out, orthros_model *m, int batch, int max_ctx, int chunk)
{
    orthros_backend *be = m->be;
    const orthros_model_config *c = &m->cfg;
    *out = NULL;
    if (batch < 1) return orthros_error(ORTHROS_EINVAL, "batch must be at least 1 (got %d)", batch);
    if (max_ctx < 1) return orthros_error(ORTHROS_EINVAL, "context must be at least 1 token (got %d)", max_ctx);
    size_t free_b = 0, total_b = 0;
    be->mem_info(be, &free_b, &total_b);
    if (chunk <= 0) {
        /* The largest power-of-two chunk up to the backend's default (4096 on cuda, 256 on cpu) whose session
         * fits in 90% of free memory: bigger chunks only help the GEMMs, and their activations grow linearly. */
        chunk = be->default_chunk;
        if (chunk > max_ctx) chunk = max_ctx;
        while (chunk > 64 && orthros_session_bytes(m, batch, max_ctx, chunk) > free_b / 10 * 9) chunk /= 2;
    }
    if (chunk > max_ctx) chunk = max_ctx;
    size_t need = orthros_session_bytes(m, batch, max_ctx, chunk);
    if (need > free_b)
        return orthros_error(ORTHROS_ENOMEM,
                             "a session of batch %d and context %d needs %.2f GiB on the %s backend; %.2f GiB is free",
                             batch, max_ctx, (double)need / (1 << 30), be->name, (double)free_b / (1 << 30));
    orthros_session *s = calloc(1, sizeof *s);
    if (!s) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    s->m = m;
    s->be = be;
    s->B = batch;
    s->max_ctx = max_ctx;
    s->chunk = chunk;
    s->rows = session_rows(batch, chunk);
    s->logit_rows = session_logit_rows(batch);
    int L = c->n_layers;
    size_t act = be->act_size, d = (size_t)c->head_dim, Hkv = (size_t)c->n_kv_heads;
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    s->pos = calloc((size_t)batch, sizeof *s->pos);
    s->cap = calloc((size_t)L, sizeof *s->cap);
    s->k_cache = calloc((size_t)L, sizeof *s->k_cache);
    s->v_cache = calloc((size_t)L, sizeof *s->v_cache);
    s->S = calloc((size_t)L, sizeof *s->S);
    s->z = calloc((size_t)L, sizeof *s->z);
    s->logits_host = malloc((size_t)s->logit_rows * (size_t)c->vocab * sizeof(float));
    int rc = 0;
    if (!s->pos || !s->cap || !s->k_cache || !s->v_cache || !s->S || !s->z || !s->logits_host) goto oom;
    for (int l = 0; l < L; l++) {
        s->cap[l] = layer_cap(m, l, max_ctx, chunk);
        if (s->cap[l]) {
            size_t bytes = (size_t)batch * (size_t)s->cap[l] * Hkv * d * act;
            if (!(s->k_cache[l] = be->alloc(be, bytes)) || !(s->v_cache[l] = be->alloc(be, bytes))) goto oom;
        }
        orthros_attn_kind k = m->arch.kind[l];
        if (k == ORTHROS_ATTN_LINEAR || k == ORTHROS_ATTN_ORTHROS) {
            if (!(s->S[l] = be->alloc(be, (size_t)batch * Hkv * F * d * 4)) ||
                !(s->z[l] = be->alloc(be, (size_t)batch * Hkv * F * 4)))
                goto oom;
        }
    }
    size_t R = (size_t)s->rows, D = (size_t)c->d_model, Hq = (size_t)c->n_heads;
    if (!(s->x = be->alloc(be, R * D * act)) || !(s->xn = be->alloc(be, R * D * act)) ||
        !(s->delta = be->alloc(be, R * D * act)) || !(s->qkv = be->alloc(be, R * (Hq + 2 * Hkv) * d * act)) ||
        !(s->attn = be->alloc(be, R * Hq * d * act)) || !(s->gu = be->alloc(be, R * 2 * (size_t)c->ffn * act)) ||
        !(s->act = be->alloc(be, R * (size_t)c->ffn * act)) ||
        !(s->logits = be->alloc(be, (size_t)s->logit_rows * (size_t)c->vocab * 4)))
        goto oom;
    if ((rc = orthros_session_reset(s))) goto fail;
    *out = s;
    return 0;
oom:
    rc = orthros_error(ORTHROS_ENOMEM, "out of %s memory allocating a session of %.2f GiB", be->name,
                       (double)need / (1 << 30));
fail:
    orthros_session_free(s);
    return rc;
}

int orthros_session_chunk(const orthros_session *s) { return s->chunk; }

int orthros_session_rewind(orthros_session *s, int pos)
{
    for (int b = 0; b < s->B; b++) {
        if (pos < 0 || pos > s->pos[b])
            return orthros_error(ORTHROS_EINVAL, "cannot rewind sequence %d from %d to %d", b, s->pos[b], pos);
        s->pos[b] = pos;
    }
    return 0;
}

int orthros_session_reset(orthros_session *s)
{
    const orthros_model_config *c = &s->m->cfg;
    size_t F = (size_t)orthros_arch_feature_size(&s->m->arch, c->head_dim);
    size_t d = (size_t)c->head_dim, Hkv = (size_t)c->n_kv_heads;
    for (int b = 0; b < s->B; b++) s->pos[b] = 0;
    for (int l = 0; l < c->n_layers; l++) {
        int rc;
        if (s->S[l] && ((rc = s->be->zero(s->be, s->S[l], (size_t)s->B * Hkv * F * d * 4)) ||
                        (rc = s->be->zero(s->be, s->z[l], (size_t)s->B * Hkv * F * 4))))
            return rc;
    }
    return 0;
}

static void *offset(const orthros_session *s, void *p, size_t elems)
{
    return (char *)p + elems * s->be->act_size;
}

/* The attention view of layer l for sequences [b0, b0 + nb). */
static orthros_attn_layer attn_view(const orthros_session *s, int l, int b0)
{
    const orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    size_t d = (size_t)c->head_dim, Hkv = (size_t)c->n_kv_heads;
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    orthros_attn_layer L = {.n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads, .head_dim = c->head_dim,
                            .cap = s->cap[l], .fmap = m->arch.fmap, .feature_dim = (int)F,
                            .fmap_q = m->layers[l].fmap_q, .fmap_k = m->layers[l].fmap_k, .eps = m->arch.eps};
    L.window = m->arch.kind[l] == ORTHROS_ATTN_SWA ? m->arch.window : 0;
    if (s->cap[l]) {
        size_t per_seq = (size_t)s->cap[l] * Hkv * d;
        L.k_cache = offset(s, s->k_cache[l], (size_t)b0 * per_seq);
        L.v_cache = offset(s, s->v_cache[l], (size_t)b0 * per_seq);
    }
    if (s->S[l]) {
        L.S = s->S[l] + (size_t)b0 * Hkv * F * d;
        L.z = s->z[l] + (size_t)b0 * Hkv * F;
    }
    return L;
}

#define TRY(call)                                                                                                      \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* One op inside a profiling range named after it (NVTX on cuda, nothing on cpu). */
#define OP(name, call)                                                                                                 \
    do {                                                                                                               \
        be->range_push(be, name);                                                                                      \
        int rc_ = (call);                                                                                              \
        be->range_pop(be);                                                                                             \
        if (rc_) return rc_;                                                                                           \
    } while (0)

/* Attention of layer l for B sequences starting at b0 with n new tokens each, at positions pos0[b] + i.
 * `lin_rows` (orthros prefill only) is how many leading rows are linear-phase positions. */
static int attention(orthros_session *s, int l, int b0, int B, int n, const int *pos0, int lin_rows, int decode)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    orthros_attn_layer L = attn_view(s, l, b0);
    orthros_attn_kind kind = s->m->arch.kind[l];
    size_t W = (size_t)(c->n_heads + 2 * c->n_kv_heads) * (size_t)c->head_dim;
    size_t Wo = (size_t)c->n_heads * (size_t)c->head_dim;
    if (kind == ORTHROS_ATTN_LINEAR)
        return (decode ? be->attn_linear_decode : be->attn_linear_prefill)(be, s->attn, s->qkv, &L, B, n);
    if (kind != ORTHROS_ATTN_ORTHROS || decode) lin_rows = 0;
    TRY(be->rope_cache_write(be, s->qkv, &L, &s->m->rope, pos0, B, n, lin_rows));
    if (lin_rows > 0) TRY(be->attn_linear_prefill(be, s->attn, s->qkv, &L, 1, lin_rows));
    if (lin_rows < n) {
        int p_full = pos0[0] + lin_rows;
        const int *p = lin_rows ? &p_full : pos0;
        TRY((decode ? be->attn_full_decode : be->attn_full_prefill)(be, offset(s, s->attn, (size_t)lin_rows * Wo),
                                                                   offset(s, s->qkv, (size_t)lin_rows * W), &L, p, B,
                                                                   n - lin_rows));
    }
    return 0;
}

/* The decoder stack over `rows` = B * n rows already embedded in s->x; leaves the final-normed rows in s->xn. */
static int forward_layers(orthros_session *s, int b0, int B, int n, const int *pos0, int lin_rows, int decode)
{
    orthros_backend *be = s->be;
    orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    int rows = B * n, D = c->d_model, Wqkv = (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    int Hd = c->n_heads * c->head_dim;
    char label[32];
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        snprintf(label, sizeof label, "layer %d", l);
        be->range_push(be, label);
        if (l == 0) OP("rmsnorm", be->rmsnorm(be, s->xn, s->x, w->attn_norm, rows, D, c->norm_eps));
        else OP("add_rmsnorm", be->add_rmsnorm(be, s->xn, s->x, s->delta, w->attn_norm, rows, D, c->norm_eps));
        OP("qkv_proj", be->gemm(be, s->qkv, s->xn, w->wqkv, rows, Wqkv, D));
        OP("attention", attention(s, l, b0, B, n, pos0, lin_rows, decode));
        OP("o_proj", be->gemm(be, s->delta, s->attn, w->wo, rows, D, Hd));
        OP("add_rmsnorm", be->add_rmsnorm(be, s->xn, s->x, s->delta, w->mlp_norm, rows, D, c->norm_eps));
        OP("gate_up_proj", be->gemm(be, s->gu, s->xn, w->w_gu, rows, 2 * c->ffn, D));
        OP("swiglu", be->swiglu(be, s->act, s->gu, rows, c->ffn));
        OP("down_proj", be->gemm(be, s->delta, s->act, w->w_down, rows, D, c->ffn));
        be->range_pop(be);
    }
    OP("final_norm", be->add_rmsnorm(be, s->xn, s->x, s->delta, m->final_norm, rows, D, c->norm_eps));
    return 0;
}

static int check_tokens(const orthros_session *s, const int32_t *tokens, int n)
{
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->m->cfg.vocab)
            return orthros_error(ORTHROS_ERANGE, "token id %d at position %d is outside the vocabulary [0, %d)",
                                 tokens[i], i, s->m->cfg.vocab);
    return 0;
}

/* Logits of `rows` final-normed rows starting at row r0 of s->xn, in blocks of logit_rows. */
static int rows_logits(orthros_session *s, int r0, int rows, float *host, int32_t *next_of_last)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    size_t V = (size_t)c->vocab;
    for (int i = 0; i < rows; i += s->logit_rows) {
        int nb = rows - i < s->logit_rows ? rows - i : s->logit_rows;
        OP("logits", be->logits(be, s->logits, offset(s, s->xn, (size_t)(r0 + i) * (size_t)c->d_model), s->m->lm_head, nb,
                       c->vocab, c->d_model));
        if (host) TRY(be->download_f32(be, host + (size_t)i * V, s->logits, (size_t)nb * V));
        if (next_of_last && i + nb == rows)
            TRY(be->argmax(be, next_of_last, s->logits + (size_t)(nb - 1) * V, 1, c->vocab));
    }
    return 0;
}

int orthros_prefill(orthros_session *s, int seq, const int32_t *tokens, int n, float *logits_all, int32_t *next)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    if (seq < 0 || seq >= s->B) return orthros_error(ORTHROS_EINVAL, "sequence %d outside the batch of %d", seq, s->B);
    if (n < 1) return orthros_error(ORTHROS_EINVAL, "the prompt is empty");
    if ((long)s->pos[seq] + n > s->max_ctx)
        return orthros_error(ORTHROS_ERANGE, "a prompt of %d tokens after %d cached exceeds the context of %d", n,
                             s->pos[seq], s->max_ctx);
    TRY(check_tokens(s, tokens, n));
    const orthros_arch *a = &s->m->arch;
    for (int l = 0; l < c->n_layers; l++)
        if (a->kind[l] == ORTHROS_ATTN_ORTHROS && a->tail > n)
            return orthros_error(ORTHROS_EINVAL,
                                 "an orthros tail of %d is longer than the prompt of %d tokens: every position would "
                                 "run full attention (a transformer); use a tail of at most %d",
                                 a->tail, n, n);
    int lin_end = n - a->tail; /* prompt rows before the orthros tail */
    be->range_push(be, "prefill");
    for (int c0 = 0; c0 < n; c0 += s->chunk) {
        int rows = n - c0 < s->chunk ? n - c0 : s->chunk;
        int pos0 = s->pos[seq] + c0;
        int lin_rows = lin_end - c0;
        lin_rows = lin_rows < 0 ? 0 : lin_rows > rows ? rows : lin_rows;
        be->range_push(be, "chunk");
        OP("embed", be->embed(be, s->x, tokens + c0, s->m->embed, rows, c->d_model));
        TRY(forward_layers(s, seq, 1, rows, &pos0, lin_rows, 0));
        int last = c0 + rows == n;
        if (logits_all) TRY(rows_logits(s, 0, rows, logits_all + (size_t)c0 * (size_t)c->vocab, last ? next : NULL));
        else if (last && next) TRY(rows_logits(s, rows - 1, 1, NULL, next));
        be->range_pop(be);
    }
    be->range_pop(be);
    s->pos[seq] += n;
    return be->sync(be);
}

int orthros_decode(orthros_session *s, const int32_t *tokens, int32_t *next, float *logits)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    for (int b = 0; b < s->B; b++)
        if (s->pos[b] >= s->max_ctx)
            return orthros_error(ORTHROS_ERANGE, "sequence %d is full (context %d)", b, s->max_ctx);
    TRY(check_tokens(s, tokens, s->B));
    be->range_push(be, "decode");
    OP("embed", be->embed(be, s->x, tokens, s->m->embed, s->B, c->d_model));
    TRY(forward_layers(s, 0, s->B, 1, s->pos, 0, 1));
    for (int i = 0; i < s->B; i += s->logit_rows) {
        int nb = s->B - i < s->logit_rows ? s->B - i : s->logit_rows;
        OP("logits", be->logits(be, s->logits, offset(s, s->xn, (size_t)i * (size_t)c->d_model), s->m->lm_head, nb, c->vocab,
                       c->d_model));
        if (logits) TRY(be->download_f32(be, logits + (size_t)i * (size_t)c->vocab, s->logits, (size_t)nb * (size_t)c->vocab));
        TRY(be->argmax(be, next + i, s->logits, nb, c->vocab));
    }
    be->range_pop(be);
    for (int b = 0; b < s->B; b++) s->pos[b]++;
    return be->sync(be);
}

static int is_eos(const orthros_model_config *c, int32_t t)
{
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos[i] == t) return 1;
    return 0;
}

int orthros_generate(orthros_session *s, const int32_t *prompt, int n, int max_new, int32_t *out)
{
    if (s->B != 1) return orthros_error(ORTHROS_EINVAL, "generate needs a batch-1 session");
    if (max_new < 1) return orthros_error(ORTHROS_EINVAL, "max-new must be at least 1");
    if ((long)n + max_new - 1 > s->max_ctx)
        return orthros_error(ORTHROS_ERANGE, "prompt %d + %d new tokens exceed the context of %d", n, max_new,
                             s->max_ctx);
    int32_t tok;
    TRY(orthros_prefill(s, 0, prompt, n, NULL, &tok));
    int count = 0;
    out[count++] = tok;
    while (count < max_new && !is_eos(&s->m->cfg, tok)) {
        TRY(orthros_decode(s, &tok, &tok, NULL));
        out[count++] = tok;
    }
    return count;
}
