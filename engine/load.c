/* Loading a model: its config (config.json, a GGUF's metadata or a preset), this rank's shard of the heads and
 * of the MLP, the weights (a safetensors checkpoint, a GGUF file or a preset's seeded fill), checked in full
 * before any weight memory is claimed, and the ranks of a tensor-parallel model (in-process threads, or processes
 * driven by rank 0 through engine/tp_world.h). The forward schedule is model.c's. */
#define _GNU_SOURCE
#include "adapter.h"
#include "finite.h"
#include "gguf.h"
#include "model.h"
#include "safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The part of a whole weight tensor that a rank holds: `runs` runs of `len` elements, run i read from element
 * src0 + i * stride of the whole tensor and stored at element dst0 + i * len of the rank's tensor. A rank's
 * rows are one run; its columns of a row-major matrix are one run per row. */
typedef struct {
    size_t dst0, src0, runs, len, stride;
} tensor_part;

static tensor_part part_all(size_t n) { return (tensor_part){0, 0, 1, n, n}; }
/* Rows [r0, r0 + nr) of a tensor of rows of `row` elements, stored from element dst0. */
static tensor_part part_rows(size_t r0, size_t nr, size_t row, size_t dst0)
{
    return (tensor_part){dst0, r0 * row, 1, nr * row, nr * row};
}
/* Columns [c0, c0 + nc) of a [rows][cols] matrix. */
static tensor_part part_cols(size_t c0, size_t nc, size_t rows, size_t cols)
{
    return nc == cols ? part_all(rows * cols) : (tensor_part){0, c0, rows, nc, cols};
}

/* One slot per tensor the model holds, in a fixed order, so that allocation, loading, filling and freeing
 * walk the same list. */
typedef struct {
    void **dst;
    size_t numel;     /* elements this rank holds */
    float scale;      /* preset fill: uniform in [-scale, scale]; 0 means "ones" (norm weights) */
    int nparts;       /* where they lie in the whole tensor (preset fill) */
    tensor_part parts[3];
} weight_slot;

/* The most slots weight_slots() writes: the embedding, the final norm and the head, and 8 a layer. */
static int weight_slots_max(const orthros_model *m) { return 8 * m->cfg.n_layers + 8; }

/* The model's weight buffers as slots[0..n), n returned; never more than max (weight_slots_max(m) holds them all). */
static int weight_slots(orthros_model *m, weight_slot *slots, int max)
{
    const orthros_model_config *c = &m->cfg;
    size_t D = (size_t)c->d_model, d = (size_t)c->head_dim, Hq = (size_t)c->n_heads, Hkv = (size_t)c->n_kv_heads;
    size_t F = (size_t)c->ffn, V = (size_t)c->vocab, half = (size_t)m->arch.feature_dim;
    size_t hq = (size_t)m->hq, hkv = (size_t)m->hkv, q0 = (size_t)m->q0, kv0 = (size_t)m->kv0;
    size_t f0 = (size_t)m->f0, ffn = (size_t)m->ffn;
    int n = 0;
#define SLOT(p, count, sc, ...)                                                                                        \
    do {                                                                                                               \
        tensor_part parts_[] = {__VA_ARGS__};                                                                          \
        if (n < max) {                                                                                                 \
            slots[n] = (weight_slot){(void **)&(p), (count), (sc), (int)(sizeof parts_ / sizeof *parts_), {{0}}};     \
            memcpy(slots[n].parts, parts_, sizeof parts_);                                                             \
        }                                                                                                              \
        n++;                                                                                                           \
    } while (0)
    SLOT(m->embed, V * D, 1.0f, part_all(V * D));
    SLOT(m->final_norm, D, 0.0f, part_all(D));
    if (!c->tie_embeddings) SLOT(m->lm_head, V * D, 1.0f / sqrtf((float)D), part_all(V * D));
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *lw = &m->layers[l];
        /* The fused [q | k | v] rows of the rank's heads: its q rows, then its k rows, then its v rows. */
        SLOT(lw->wqkv, (hq + 2 * hkv) * d * D, 1.0f / sqrtf((float)D), part_rows(q0 * d, hq * d, D, 0),
             part_rows((Hq + kv0) * d, hkv * d, D, hq * d * D),
             part_rows((Hq + Hkv + kv0) * d, hkv * d, D, (hq + hkv) * d * D));
        SLOT(lw->wo, D * hq * d, 1.0f / sqrtf((float)(Hq * d)), part_cols(q0 * d, hq * d, D, Hq * d));
        SLOT(lw->w_gu, 2 * ffn * D, 1.0f / sqrtf((float)D), part_rows(f0, ffn, D, 0), part_rows(F + f0, ffn, D, ffn * D));
        SLOT(lw->w_down, D * ffn, 1.0f / sqrtf((float)F), part_cols(f0, ffn, D, F));
        SLOT(lw->attn_norm, D, 0.0f, part_all(D));
        SLOT(lw->mlp_norm, D, 0.0f, part_all(D));
        if (m->has_fmap_weights) {
            SLOT(lw->fmap_q, hq * d * half, 1.0f / sqrtf((float)d), part_rows(q0, hq, d * half, 0));
            SLOT(lw->fmap_k, hkv * d * half, 1.0f / sqrtf((float)d), part_rows(kv0, hkv, d * half, 0));
        }
    }
#undef SLOT
    return n < max ? n : max;
}

/* Fills a rank's part of a preset tensor with the values the whole tensor has at those elements:
 * orthros_uniform(seed, i) is a function of seed + golden * (i + 1), so element `off + i` of a fill with `seed`
 * is element i of a fill with seed + golden * off. A rank's shard of a preset is therefore the same slice of
 * the same model at every world size. */
static int fill_slot(orthros_backend *be, const weight_slot *w, uint64_t seed)
{
    for (int k = 0; k < w->nparts; k++) {
        const tensor_part *p = &w->parts[k];
        for (size_t i = 0; i < p->runs; i++) {
            void *dst = (char *)*w->dst + (p->dst0 + i * p->len) * be->act_size;
            int rc = w->scale == 0.0f ? be->fill(be, dst, p->len, 1.0f)
                                      : be->fill_random(be, dst, p->len,
                                                        seed + 0x9E3779B97F4A7C15ull * (p->src0 + i * p->stride),
                                                        w->scale);
            if (rc) return rc;
        }
    }
    return 0;
}

void orthros_model_free(orthros_model *m)
{
    if (!m) return;
    if (m->remote && m->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_MODEL_FREE, .id = m->id};
        orthros_tp_send(&cmd, NULL);
    }
    if (m->ranks) {
        for (int r = 1; r < m->world; r++) orthros_model_free(m->ranks[r]);
        free(m->ranks);
    }
    orthros_tp_pool_free(m->pool);
    if (m->ar_buf) m->be->free(m->be, m->ar_buf);
    if (m->layers) {
        weight_slot *slots = malloc(sizeof(weight_slot) * (size_t)weight_slots_max(m));
        if (slots) {
            int n = weight_slots(m, slots, weight_slots_max(m));
            for (int i = 0; i < n; i++)
                if (*slots[i].dst) m->be->free(m->be, *slots[i].dst);
            free(slots);
        }
        for (int l = 0; l < m->cfg.n_layers; l++)
            if (m->layers[l].window_gate) m->be->free(m->be, m->layers[l].window_gate);
        free(m->layers);
    }
    if (m->owns_be) orthros_backend_free(m->be);
    free(m->orthros_json);
    free(m);
}

/* One checkpoint tensor the model needs, and where its elements go. */
typedef struct {
    char name[80];
    void **dst;       /* a weight buffer of weight_slots(), allocated after every need is checked */
    tensor_part part; /* this rank's part of it, and where that goes in the buffer */
    int ndim;
    int64_t shape[3];
    const orthros_st_tensor *t;    /* safetensors: set by checkpoint_check */
    const orthros_gguf_tensor *gt; /* GGUF: set by checkpoint_check */
    int heads;        /* GGUF q / k: the heads whose RoPE row permutation is undone at upload; else 0 */
    /* A preset tensor an adapter changes: element e is fill_scale * (2 u(fill_seed, fill_off + e) - 1) (or 1 when
     * fill_scale is 0), as its slot's fill wrote it (see fill_slot). */
    int fill;
    uint64_t fill_seed;
    size_t fill_off;
    float fill_scale;
} tensor_need;

/* Where checkpoint weights come from: a safetensors checkpoint (Hugging Face names) or a GGUF file (llama.cpp
 * names, mapped from the Hugging Face ones). */
typedef struct {
    const orthros_st *st;
    const orthros_gguf *g;
} weight_source;

/* Uploads this rank's part of a whole tensor held on the host (in `dtype`) into its weight buffer. A rank's
 * columns are gathered into one buffer; data need not be aligned in a safetensors file, so it is realigned
 * through the same copy where it is not. */
static int upload_part(orthros_model *m, const tensor_need *w, const void *data, orthros_dtype dtype)
{
    const tensor_part *p = &w->part;
    size_t esz = orthros_dtype_size(dtype), numel = p->runs * p->len;
    const char *src = (const char *)data + p->src0 * esz;
    if (p->runs > 1 || (uintptr_t)src % esz) {
        char *tmp = malloc(numel * esz);
        if (!tmp) return orthros_error(ORTHROS_ENOMEM, "out of host memory copying %s", w->name);
        for (size_t k = 0; k < p->runs; k++) memcpy(tmp + k * p->len * esz, src + k * p->stride * esz, p->len * esz);
        int rc = m->be->upload(m->be, *w->dst, p->dst0, tmp, dtype, numel);
        free(tmp);
        return rc;
    }
    return m->be->upload(m->be, *w->dst, p->dst0, src, dtype, numel);
}

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

static size_t need_numel(const tensor_need *w)
{
    size_t n = 1;
    for (int i = 0; i < w->ndim; i++) n *= (size_t)w->shape[i];
    return n;
}

/* A NaN or an infinity in a weight or a norm makes every logit NaN: such a tensor is refused, named with the model
 * (spec) and the tensor. */
static int weight_finite(const void *x, orthros_dtype dtype, size_t n, const char *tensor, const char *spec)
{
    int rc = orthros_check_finite(x, dtype, n, tensor);
    return rc ? orthros_error_prefix(rc, spec) : 0;
}

/* The whole tensor of a need as float32 on the host, in the Hugging Face layout (malloc'd into *out): a GGUF
 * tensor dequantised (and checked finite, in the file's layout) with the RoPE row permutation of q / k undone, a
 * safetensors tensor converted, or a preset tensor generated as its fill wrote it. */
static int need_f32(const orthros_model *m, const tensor_need *w, const char *spec, float **out)
{
    size_t numel = need_numel(w);
    float *x = malloc(numel * sizeof *x), *tmp = w->heads ? malloc(numel * sizeof *tmp) : NULL;
    int rc = 0;
    *out = NULL;
    if (!x || (w->heads && !tmp)) rc = orthros_error(ORTHROS_ENOMEM, "out of host memory reading %s", w->name);
    else if (w->gt) {
        if (!(rc = orthros_gguf_dequantize(x, w->gt))) rc = weight_finite(x, ORTHROS_DTYPE_F32, numel, w->gt->name, spec);
    } else if (w->t) orthros_st_tensor_f32(w->t, x);
    else if (!w->fill) rc = orthros_error(ORTHROS_EINVAL, "%s: no source for this tensor", w->name);
    else
        for (size_t e = 0; e < numel; e++)
            x[e] = w->fill_scale == 0.0f ? 1.0f
                                         : (2.0f * orthros_uniform(w->fill_seed, w->fill_off + e) - 1.0f) * w->fill_scale;
    if (!rc && w->heads) orthros_gguf_unpermute_rows(x, tmp, w->heads, m->cfg.head_dim, (size_t)w->shape[1]);
    free(tmp);
    if (rc) free(x);
    else *out = x;
    return rc;
}

/* A need through the host in float32: the whole tensor read, an adapter's delta merged into it (before any
 * conversion to the backend's dtype, and before the rank's part is taken), this rank's part uploaded. */
static int whole_upload(orthros_model *m, const tensor_need *w, orthros_adapter *ad, const char *spec)
{
    float *x = NULL;
    int rc = need_f32(m, w, spec, &x);
    if (!rc) rc = orthros_adapter_merge(ad, w->name, x, w->shape[0], w->shape[1]);
    if (!rc) rc = upload_part(m, w, x, ORTHROS_DTYPE_F32);
    free(x);
    return rc;
}

/* The tensors a checkpoint must hold for m's config and schedule, in load order; returns how many (at most
 * 11 per layer + 3). */
static int checkpoint_needs(orthros_model *m, tensor_need *needs)
{
    const orthros_model_config *c = &m->cfg;
    int64_t D = c->d_model, d = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads, F = c->ffn, V = c->vocab;
    int64_t half = m->arch.feature_dim;
    size_t hq = (size_t)m->hq, hkv = (size_t)m->hkv, q0 = (size_t)m->q0, kv0 = (size_t)m->kv0;
    size_t f0 = (size_t)m->f0, ffn = (size_t)m->ffn, sD = (size_t)D, sd = (size_t)d;
    int n = 0;
#define NEED(dst_, part_, nd, a, b, cc, ...)                                                                           \
    do {                                                                                                               \
        tensor_need *t_ = &needs[n++];                                                                                 \
        *t_ = (tensor_need){.dst = (void **)&(dst_), .part = (part_), .ndim = (nd), .shape = {a, b, cc}};             \
        snprintf(t_->name, sizeof t_->name, __VA_ARGS__);                                                              \
    } while (0)
    NEED(m->embed, part_all((size_t)(V * D)), 2, V, D, 0, "model.embed_tokens.weight");
    NEED(m->final_norm, part_all(sD), 1, D, 0, 0, "model.norm.weight");
    if (!c->tie_embeddings) NEED(m->lm_head, part_all((size_t)(V * D)), 2, V, D, 0, "lm_head.weight");
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *lw = &m->layers[l];
        /* This rank's heads of q, k and v, one after the other in the fused matrix. */
        NEED(lw->wqkv, part_rows(q0 * sd, hq * sd, sD, 0), 2, Hq * d, D, 0, "model.layers.%d.self_attn.q_proj.weight", l);
        NEED(lw->wqkv, part_rows(kv0 * sd, hkv * sd, sD, hq * sd * sD), 2, Hkv * d, D, 0,
             "model.layers.%d.self_attn.k_proj.weight", l);
        NEED(lw->wqkv, part_rows(kv0 * sd, hkv * sd, sD, (hq + hkv) * sd * sD), 2, Hkv * d, D, 0,
             "model.layers.%d.self_attn.v_proj.weight", l);
        NEED(lw->wo, part_cols(q0 * sd, hq * sd, sD, (size_t)(Hq * d)), 2, D, Hq * d, 0,
             "model.layers.%d.self_attn.o_proj.weight", l);
        NEED(lw->w_gu, part_rows(f0, ffn, sD, 0), 2, F, D, 0, "model.layers.%d.mlp.gate_proj.weight", l);
        NEED(lw->w_gu, part_rows(f0, ffn, sD, ffn * sD), 2, F, D, 0, "model.layers.%d.mlp.up_proj.weight", l);
        NEED(lw->w_down, part_cols(f0, ffn, sD, (size_t)F), 2, D, F, 0, "model.layers.%d.mlp.down_proj.weight", l);
        NEED(lw->attn_norm, part_all(sD), 1, D, 0, 0, "model.layers.%d.input_layernorm.weight", l);
        NEED(lw->mlp_norm, part_all(sD), 1, D, 0, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        if (m->has_fmap_weights) {
            NEED(lw->fmap_q, part_rows(q0, hq, sd * (size_t)half, 0), 3, Hq, d, half,
                 "model.layers.%d.self_attn.feature_map_q.weight", l);
            NEED(lw->fmap_k, part_rows(kv0, hkv, sd * (size_t)half, 0), 3, Hkv, d, half,
                 "model.layers.%d.self_attn.feature_map_k.weight", l);
        }
    }
#undef NEED
    return n;
}

/* Finds every needed tensor and checks its shape against config.json, before anything is allocated: a small
 * file must not make the loader claim memory that its config.json promises. (The dtype was checked when the
 * file was opened: F32, BF16 or F16, all of which upload converts.) */
static int checkpoint_check(const orthros_model *m, const weight_source *src, tensor_need *needs, int n,
                            const orthros_adapter *ad)
{
    for (int i = 0; i < n; i++) {
        tensor_need *w = &needs[i];
        /* An adapter's feature maps replace the checkpoint's (and give a GGUF base the ones it cannot hold). */
        const orthros_st_tensor *at = orthros_adapter_tensor(ad, w->name);
        if (!at && strstr(w->name, ".feature_map_") && src->g)
            return orthros_error(ORTHROS_EUNSUPPORTED,
                                 "%s: feature map hedgehog needs learned weights, which GGUF files do not hold", src->g->name);
        if (!at && src->g) {
            int rc = gguf_check(m, src->g, w);
            if (rc) return rc;
            continue;
        }
        const orthros_st *ckpt = at ? orthros_adapter_st(ad) : src->st;
        const orthros_st_tensor *t = w->t = at ? at : orthros_st_find(ckpt, w->name);
        if (!t) {
            if (strstr(w->name, ".feature_map_"))
                return orthros_error(ORTHROS_EFORMAT, "%s: feature map hedgehog needs learned weights, but the checkpoint has no %s",
                                     ckpt->source, w->name);
            return orthros_error(ORTHROS_EFORMAT, "%s: missing tensor %s", ckpt->source, w->name);
        }
        int same = t->ndim == w->ndim;
        for (int k = 0; same && k < w->ndim; k++) same = t->shape[k] == w->shape[k];
        if (!same) {
            char got[256], want[128];
            shape_text(got, sizeof got, t->ndim, t->shape, 0);
            shape_text(want, sizeof want, w->ndim, w->shape, 0);
            return orthros_error(ORTHROS_EFORMAT, "%s: tensor %s has shape [%s], config.json implies [%s]",
                                 orthros_st_tensor_file(ckpt, t), w->name, got, want);
        }
    }
    return 0;
}

/* Uploads this rank's part of every checked tensor into its (now allocated) weight buffer; a weight with an
 * adapter's delta goes through the host in float32, merged. For a preset (needs only when there is an adapter:
 * the fill wrote every tensor) only what the adapter changes. Every tensor read is checked finite first (a GGUF
 * tensor after dequantisation), named with spec. */
static int checkpoint_upload(orthros_model *m, const tensor_need *needs, int n, orthros_adapter *ad, const char *spec)
{
    for (int i = 0; i < n; i++) {
        const tensor_need *w = &needs[i];
        const orthros_st_tensor *t = w->t;
        int rc = t ? weight_finite(t->data, t->dtype, t->nbytes / orthros_dtype_size(t->dtype), t->name, spec) : 0;
        if (!rc && (w->gt || orthros_adapter_has_delta(ad, w->name))) rc = whole_upload(m, w, ad, spec);
        else if (!rc && t) rc = upload_part(m, w, t->data, t->dtype);
        if (rc) return rc;
    }
    return orthros_adapter_all_merged(ad);
}

/* A preset under an adapter: where each need's values come from (its slot's fill) and the adapter's feature maps. */
static void preset_needs(const weight_slot *slots, int n_slots, uint64_t seed, tensor_need *needs, int n,
                         const orthros_adapter *ad)
{
    for (int i = 0; i < n; i++) {
        tensor_need *w = &needs[i];
        w->t = orthros_adapter_tensor(ad, w->name);
        for (int k = 0; k < n_slots; k++)
            for (int p = 0; slots[k].dst == w->dst && p < slots[k].nparts; p++)
                if (slots[k].parts[p].dst0 == w->part.dst0) {
                    /* The need's elements start at this offset of its slot's whole (fused) tensor. */
                    w->fill = 1;
                    w->fill_seed = seed * 1000003ull + (uint64_t)k;
                    w->fill_off = slots[k].parts[p].src0 - w->part.src0;
                    w->fill_scale = slots[k].scale;
                }
    }
}

/* The optional window gates (docs/converted-models.md): model.layers.{i}.self_attn.window_gate, shape [Hq], every
 * value finite and > 0, read from the adapter (when it has one) or else from a safetensors checkpoint (ckpt, NULL
 * for a GGUF or a preset); a layer without one weighs both terms of the local window equally. Checked with the
 * other tensors, before any weight memory is claimed; values held on the host until the upload, this rank's heads
 * only, 0 for a layer without gates (a gate itself is > 0). */
static int window_gates_read(const orthros_model *m, const orthros_st *ckpt, const orthros_adapter *ad, float **host)
{
    const orthros_model_config *c = &m->cfg;
    *host = NULL;
    for (int l = 0; l < c->n_layers; l++) {
        char name[80];
        snprintf(name, sizeof name, "model.layers.%d.self_attn.window_gate", l);
        const orthros_st *st = ad ? orthros_adapter_st(ad) : ckpt;
        const orthros_st_tensor *t = orthros_adapter_tensor(ad, name);
        if (!t) st = ckpt, t = ckpt ? orthros_st_find(ckpt, name) : NULL;
        if (!t) continue;
        if (t->ndim != 1 || t->shape[0] != c->n_heads)
            return orthros_error(ORTHROS_EFORMAT, "%s: tensor %s must have shape [%d] (one gate per query head)",
                                 orthros_st_tensor_file(st, t), name, c->n_heads);
        if (!*host && !(*host = calloc((size_t)c->n_layers * (size_t)m->hq, sizeof **host)))
            return orthros_error(ORTHROS_ENOMEM, "out of host memory");
        float *g = *host + (size_t)l * (size_t)m->hq;
        for (int h = 0; h < m->hq; h++) {
            size_t i = (size_t)(m->q0 + h);
            /* Tensor data need not be aligned in a safetensors file. */
            const unsigned char *src = (const unsigned char *)t->data + i * orthros_dtype_size(t->dtype);
            float x;
            uint16_t u;
            if (t->dtype == ORTHROS_DTYPE_F32) {
                memcpy(&x, src, sizeof x);
            } else {
                memcpy(&u, src, sizeof u);
                x = t->dtype == ORTHROS_DTYPE_BF16 ? orthros_bf16_to_f32(u) : orthros_f16_to_f32(u);
            }
            if (!(x > 0.0f) || isinf(x))
                return orthros_error(ORTHROS_EFORMAT, "%s: tensor %s: gate %zu is %g, not a finite number > 0",
                                     orthros_st_tensor_file(st, t), name, i, (double)x);
            g[h] = x;
        }
    }
    return 0;
}

static int window_gates_upload(orthros_model *m, const float *host)
{
    for (int l = 0; host && l < m->cfg.n_layers; l++) {
        const float *g = host + (size_t)l * (size_t)m->hq;
        if (m->hq < 1 || g[0] == 0.0f) continue; /* no gates in this layer */
        size_t bytes = (size_t)m->hq * m->be->act_size;
        if (!(m->layers[l].window_gate = m->be->alloc(m->be, bytes)))
            return orthros_error(ORTHROS_ENOMEM, "out of %s memory for the window gates", m->be->name);
        m->weight_bytes += bytes;
        int rc = m->be->upload(m->be, m->layers[l].window_gate, 0, g, ORTHROS_DTYPE_F32, (size_t)m->hq);
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

/* The configuration of spec: preset:NAME, a GGUF file (a file; its open file in *g) or a Hugging Face directory's
 * config.json (its orthros object in *orthros_json, NULL when it has none). g may be NULL: the file is closed. */
static int spec_config(orthros_model_config *cfg, char **orthros_json, orthros_gguf **g, const char *spec)
{
    struct stat sb;
    *orthros_json = NULL;
    if (g) *g = NULL;
    if (!strncmp(spec, "preset:", 7)) return orthros_preset_config(cfg, spec + 7);
    if (stat(spec, &sb) != 0 || S_ISDIR(sb.st_mode)) return read_model_config(cfg, orthros_json, spec);
    orthros_gguf *file = NULL;
    int rc = orthros_gguf_open(&file, spec);
    if (!rc && (rc = orthros_gguf_model_config(cfg, file))) rc = orthros_error_prefix(rc, spec);
    if (!rc && g) *g = file;
    else orthros_gguf_free(file);
    return rc;
}

int orthros_model_spec_config(orthros_model_config *cfg, const char *spec)
{
    char *base = NULL, *orthros_json = NULL;
    memset(cfg, 0, sizeof *cfg);
    /* An adapter directory: its base's (an adapter changes no field of the configuration, at most the schedule). */
    int rc = strncmp(spec, "preset:", 7) ? orthros_adapter_dir_base(spec, &base) : 0;
    if (!rc) rc = spec_config(cfg, &orthros_json, NULL, base ? base : spec);
    free(orthros_json);
    free(base);
    return rc;
}

/* This rank's share of the heads and of the MLP. Every rank needs whole GQA groups, so the world size must
 * divide the kv heads; the MLP columns may split unevenly. */
static int shard_geometry(orthros_model *m, int rank, int world)
{
    const orthros_model_config *c = &m->cfg;
    if (world < 1) return orthros_error(ORTHROS_EINVAL, "tensor-parallel size (--tp) must be at least 1 (got %d)", world);
    if (world > c->n_kv_heads)
        return orthros_error(ORTHROS_EINVAL,
                             "tensor-parallel size (--tp) %d is larger than the model's %d kv head%s: each rank needs "
                             "at least one",
                             world, c->n_kv_heads, c->n_kv_heads == 1 ? "" : "s");
    if (c->n_kv_heads % world)
        return orthros_error(ORTHROS_EINVAL, "tensor-parallel size (--tp) %d does not divide the model's %d kv heads",
                             world, c->n_kv_heads);
    m->world = world;
    m->rank = rank;
    m->hkv = c->n_kv_heads / world;
    m->hq = c->n_heads / world;
    m->kv0 = rank * m->hkv;
    m->q0 = rank * m->hq;
    m->f0 = (int)((long)c->ffn * rank / world);
    m->ffn = (int)((long)c->ffn * (rank + 1) / world) - m->f0;
    return 0;
}

/* Loads rank `rank`'s shard of a world of `world` onto be. */
static int load_shard(orthros_model **out, orthros_backend *be, const char *spec, const orthros_arch_opts *opts,
                      uint64_t seed, int rank, int world)
{
    int rc = 0;
    char *orthros_json = NULL;
    orthros_st ckpt = {0};
    orthros_gguf *g = NULL;
    orthros_adapter *ad = NULL;
    *out = NULL;
    struct stat sb;
    /* A spec that names nothing: said so, not as a folder's missing config.json. */
    if (strncmp(spec, "preset:", 7) && stat(spec, &sb) != 0)
        return orthros_error(ORTHROS_EIO, "%s: %s (a model is a Hugging Face folder, a .gguf file or preset:NAME)", spec,
                             errno == ENOENT ? "no such file or directory" : strerror(errno));
    /* An adapter directory loads its base; --adapter goes over the spec itself. */
    if ((rc = orthros_adapter_open(&ad, spec, opts->adapter))) return rc;
    if (ad) spec = orthros_adapter_base(ad);
    int preset = !strncmp(spec, "preset:", 7), gguf = 0;
    weight_slot *slots = NULL;
    tensor_need *needs = NULL;
    int n_needs = 0;
    float *gates = NULL;
    orthros_model *m = calloc(1, sizeof *m);
    if (!m) {
        orthros_adapter_free(ad);
        return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    }
    m->be = be;
    /* A file is a GGUF (a directory is a Hugging Face checkpoint). */
    if ((rc = spec_config(&m->cfg, &orthros_json, &g, spec))) goto fail;
    gguf = g != NULL;
    if (ad && (rc = orthros_adapter_schedule(ad, &m->cfg, &orthros_json))) goto fail;
    if ((rc = shard_geometry(m, rank, world))) goto fail;
    if ((rc = orthros_arch_resolve(&m->arch, &m->cfg, opts, orthros_json))) goto fail;
    if (ad && (rc = orthros_adapter_check(ad, &m->cfg, &m->arch))) goto fail;
    m->opts = *opts;
    m->opts.arch = NULL;
    m->opts.adapter = NULL;
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
    m->rope = (orthros_rope){m->hq, m->hkv, m->cfg.head_dim, m->inv_freq};
    m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
    int max_slots = weight_slots_max(m);
    slots = malloc(sizeof *slots * (size_t)max_slots);
    if (!m->layers || !slots) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
        goto fail;
    }
    /* A checkpoint is checked in full (files, then every needed tensor's presence, dtype and shape) before
     * any weight memory is claimed. */
    if (!preset || ad) {
        if (!preset && !gguf && (rc = orthros_st_open_dir(&ckpt, spec))) goto fail;
        needs = malloc(sizeof *needs * (size_t)(11 * m->cfg.n_layers + 3));
        if (!needs) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
            goto fail;
        }
        n_needs = checkpoint_needs(m, needs);
        if (!preset && (rc = checkpoint_check(m, &(weight_source){&ckpt, g}, needs, n_needs, ad))) goto fail;
        if ((rc = window_gates_read(m, !preset && !gguf ? &ckpt : NULL, ad, &gates))) goto fail;
    }
    int n_slots = weight_slots(m, slots, max_slots);
    if (preset && ad) preset_needs(slots, n_slots, seed, needs, n_needs, ad);
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
        for (int i = 0; i < n_slots; i++)
            if ((rc = fill_slot(be, &slots[i], seed * 1000003ull + (uint64_t)i))) goto fail;
    }
    if ((!preset || ad) && (rc = checkpoint_upload(m, needs, n_needs, ad, spec))) goto fail;
    if ((rc = window_gates_upload(m, gates))) goto fail;
    if (m->cfg.tie_embeddings) m->lm_head = m->embed;
    if ((rc = be->sync(be))) goto fail;
    free(gates);
    free(needs);
    free(slots);
    m->orthros_json = orthros_json;
    orthros_st_close(&ckpt);
    orthros_gguf_free(g);
    orthros_adapter_free(ad);
    *out = m;
    return 0;
fail:
    free(gates);
    free(needs);
    free(slots);
    free(orthros_json);
    orthros_st_close(&ckpt);
    orthros_gguf_free(g);
    orthros_adapter_free(ad);
    orthros_model_free(m);
    return rc;
}

/* Every rank in this process: rank 0 on the caller's backend, ranks 1..world-1 on cpu backends of their own,
 * each run by a thread of the pool. */
static int load_in_process(orthros_model **out, orthros_backend *be, const char *spec, const orthros_arch_opts *opts,
                           uint64_t seed, int world)
{
    orthros_model *m = NULL;
    int rc = load_shard(&m, be, spec, opts, seed, 0, world);
    if (rc) return rc;
    if (!(m->ranks = calloc((size_t)world, sizeof *m->ranks))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
        goto fail;
    }
    m->ranks[0] = m;
    if ((rc = orthros_tp_pool_create(&m->pool, world))) goto fail;
    m->comm = orthros_tp_pool_comm(m->pool, 0);
    for (int r = 1; r < world; r++) {
        orthros_backend *rb = NULL;
        if ((rc = orthros_backend_cpu_create(&rb))) goto fail;
        if ((rc = load_shard(&m->ranks[r], rb, spec, opts, seed, r, world))) {
            orthros_backend_free(rb);
            goto fail;
        }
        m->ranks[r]->owns_be = 1;
        m->ranks[r]->comm = orthros_tp_pool_comm(m->pool, r);
    }
    *out = m;
    return 0;
fail:
    orthros_model_free(m);
    return rc;
}

/* Rank `world->rank` of ranks that are processes. Rank 0 sends the load to the others first, so that every
 * rank reads its shard at the same time, then waits for their answers. */
static int load_as_process(orthros_model **out, orthros_backend *be, const char *spec, const orthros_arch_opts *opts,
                           uint64_t seed, orthros_comm *world)
{
    if (!!(orthros_backend_caps(be) & ORTHROS_CAP_GPU) == !!world->tcp)
        return orthros_error(ORTHROS_EINVAL,
                             "this process is rank %d of %d launched ranks (WORLD_SIZE): its shard runs on the %s "
                             "backend, not on %s",
                             world->rank, world->world, world->tcp ? "cpu" : "cuda", be->name);
    if (opts->tp != world->world)
        return orthros_error(ORTHROS_EINVAL, "--tp %d, but this process is one of %d launched ranks (WORLD_SIZE=%d)",
                             opts->tp, world->world, world->world);
    int id = 0, rc, sent = 0;
    size_t ls = strlen(spec) + 1, la = opts->arch ? strlen(opts->arch) + 1 : 1;
    size_t lad = opts->adapter ? strlen(opts->adapter) + 1 : 1;
    if (world->rank == 0 && world->world > 1) {
        /* spec, arch and adapter, each NUL-terminated ("" for none) */
        char *payload = malloc(ls + la + lad);
        if (!payload) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
        memcpy(payload, spec, ls);
        memcpy(payload + ls, opts->arch ? opts->arch : "", la);
        memcpy(payload + ls + la, opts->adapter ? opts->adapter : "", lad);
        id = orthros_tp_new_id();
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_LOAD, .id = id,
                              .a = {opts->fmap, opts->feature_dim, opts->tail, opts->window, opts->hybrid_every, opts->tp,
                                    opts->fmap_rope, opts->local_window},
                              .seed = seed, .eps = opts->eps, .payload_bytes = ls + la + lad};
        rc = orthros_tp_send(&cmd, payload);
        free(payload);
        if (rc) return rc;
        sent = 1;
    }
    orthros_model *m = NULL;
    rc = load_shard(&m, be, spec, opts, seed, world->rank, world->world);
    if (m) {
        m->comm = world;
        m->id = id;
        m->remote = sent;
    }
    if (sent) {
        rc = orthros_tp_gather_status(rc);
        if (rc) {
            if (m) orthros_model_free(m); /* tells the others to drop theirs */
            else {
                orthros_tp_cmd cmd = {.op = ORTHROS_TP_MODEL_FREE, .id = id};
                orthros_tp_send(&cmd, NULL);
            }
            return rc;
        }
    }
    *out = m;
    return rc;
}

int orthros_model_load(orthros_model **out, orthros_backend *be, const char *spec, const orthros_arch_opts *opts,
                       uint64_t seed)
{
    *out = NULL;
    int world = opts->tp;
    if (world < 1) return orthros_error(ORTHROS_EINVAL, "tensor-parallel size (--tp) must be at least 1 (got %d)", world);
    if (world > ORTHROS_TP_MAX_WORLD)
        return orthros_error(ORTHROS_EINVAL, "tensor-parallel size (--tp) %d is larger than %d", world, ORTHROS_TP_MAX_WORLD);
    orthros_comm *pw = orthros_tp_world();
    if (pw) return load_as_process(out, be, spec, opts, seed, pw);
    if (world == 1) return load_shard(out, be, spec, opts, seed, 0, 1);
    if (orthros_backend_caps(be) & ORTHROS_CAP_GPU)
        return orthros_error(ORTHROS_EINVAL,
                             "--tp %d on the %s backend runs one process per GPU: start it with the orthros command "
                             "(which starts them), torchrun or mpirun, not through the library alone",
                             world, be->name);
    return load_in_process(out, be, spec, opts, seed, world);
}

/* ---- the weights read back (orthros export) ---- */

const char *orthros_model_orthros_json(const orthros_model *m) { return m->orthros_json; }
const float *orthros_model_rope_inv_freq(const orthros_model *m) { return m->inv_freq; }

/* The needs of a loaded model of one rank: every tensor it holds, by its Hugging Face name, and where it lies. */
static int held_needs(orthros_model *m, tensor_need **out, int *n)
{
    *out = NULL;
    if (m->world != 1)
        return orthros_error(ORTHROS_EUNSUPPORTED, "reading weights back needs a model of one rank (it has %d)", m->world);
    tensor_need *needs = malloc(sizeof *needs * (size_t)(11 * m->cfg.n_layers + 3));
    if (!needs) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    *n = checkpoint_needs(m, needs);
    *out = needs;
    return 0;
}

/* The layer whose window gate `name` is (model.layers.{i}.self_attn.window_gate, held by the model), or -1. */
static int gate_layer(const orthros_model *m, const char *name)
{
    for (int l = 0; l < m->cfg.n_layers; l++) {
        char g[80];
        snprintf(g, sizeof g, "model.layers.%d.self_attn.window_gate", l);
        if (m->layers[l].window_gate && !strcmp(name, g)) return l;
    }
    return -1;
}

int orthros_model_weights(orthros_model *m, orthros_weight_info **out, int *n)
{
    tensor_need *needs = NULL;
    *out = NULL;
    *n = 0;
    int count = 0, rc = held_needs(m, &needs, &count), gates = 0;
    if (rc) return rc;
    for (int l = 0; l < m->cfg.n_layers; l++) gates += m->layers[l].window_gate != NULL;
    orthros_weight_info *info = calloc((size_t)(count + gates), sizeof *info);
    if (!info) {
        free(needs);
        return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    }
    for (int i = 0; i < count; i++) {
        snprintf(info[i].name, sizeof info[i].name, "%s", needs[i].name);
        info[i].ndim = needs[i].ndim;
        memcpy(info[i].shape, needs[i].shape, sizeof info[i].shape);
    }
    /* The window gates, which no need names (a layer may have none). */
    for (int l = 0; l < m->cfg.n_layers; l++) {
        if (!m->layers[l].window_gate) continue;
        orthros_weight_info *w = &info[count++];
        snprintf(w->name, sizeof w->name, "model.layers.%d.self_attn.window_gate", l);
        w->ndim = 1, w->shape[0] = m->hq;
    }
    free(needs);
    *out = info;
    *n = count;
    return 0;
}

int orthros_model_weight_read(orthros_model *m, const char *name, float *out)
{
    if (m->be->act_size != sizeof(float))
        return orthros_error(ORTHROS_EUNSUPPORTED, "reading weights back as fp32 needs the cpu backend (this model is on %s)",
                             m->be->name);
    int gl = gate_layer(m, name);
    if (gl >= 0 && m->world == 1) return m->be->download_f32(m->be, out, (const float *)m->layers[gl].window_gate, (size_t)m->hq);
    tensor_need *needs = NULL;
    int n = 0, rc = held_needs(m, &needs, &n);
    if (rc) return rc;
    int i = 0;
    while (i < n && strcmp(needs[i].name, name)) i++;
    if (i == n) rc = orthros_error(ORTHROS_EINVAL, "the model holds no tensor %.100s", name);
    /* One rank: every part is one run, at dst0 of its buffer. */
    else rc = m->be->download_f32(m->be, out, (const float *)*needs[i].dst + needs[i].part.dst0,
                                   needs[i].part.runs * needs[i].part.len);
    free(needs);
    return rc;
}
