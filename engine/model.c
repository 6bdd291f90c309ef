/* Models and sessions: weight loading (checkpoints and presets) and the one forward schedule, written
 * against the backend interface (DESIGN section 4). A tensor-parallel model is one shard per rank, each with
 * its share of the heads and of the MLP; the schedule runs per rank on its shard (docs/tensor-parallel.md). */
#define _GNU_SOURCE
#include "finite.h"
#include "gguf.h"
#include "safetensors.h"
#include "tp.h"

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
    orthros_model_config cfg;  /* the whole model's, on every rank */
    orthros_arch arch;
    orthros_backend *be;
    orthros_rope rope;
    float inv_freq[ORTHROS_MAX_HEAD_DIM / 2];
    void *embed;       /* [V][D], replicated on every rank */
    void *final_norm;  /* [D] */
    void *lm_head;     /* [V][D]; == embed when tied; replicated */
    layer_weights *layers;
    size_t weight_bytes;
    int has_fmap_weights;      /* hedgehog feature-map weights are held (the schedule at load needed them) */
    orthros_arch_opts opts;    /* the options the schedule was resolved from (arch name excepted) */
    char *orthros_json;        /* config.json's `orthros` object, or NULL */
    /* Tensor parallel: this shard is rank `rank` of `world`; it holds query heads [q0, q0 + hq), kv heads
     * [kv0, kv0 + hkv) and MLP columns [f0, f0 + ffn). With world 1 these are the whole model. */
    int world, rank, hq, hkv, q0, kv0, f0, ffn;
    orthros_comm *comm;        /* the ranks' communicator; NULL for a model that runs alone */
    orthros_model **ranks;     /* in-process ranks (cpu): [world], ranks[0] is this model; else NULL */
    orthros_tp_pool *pool;     /* their threads */
    int owns_be;               /* an in-process rank > 0 made its own backend */
    int remote;                /* rank 0 of ranks that are processes: every call is sent to the others */
    int id;                    /* the id those ranks know this model by */
    void *ar_buf;              /* orthros_tp_allreduce_time's [rows][D] act */
    size_t ar_bytes;
};

const orthros_model_config *orthros_model_get_config(const orthros_model *m) { return &m->cfg; }
const orthros_arch *orthros_model_get_arch(const orthros_model *m) { return &m->arch; }
orthros_backend *orthros_model_get_backend(orthros_model *m) { return m->be; }
int orthros_model_tp(const orthros_model *m) { return m->world; }

size_t orthros_model_weight_bytes(const orthros_model *m)
{
    size_t total = 0;
    for (int r = 0; r < (m->ranks ? m->world : 1); r++) total += (m->ranks ? m->ranks[r] : m)->weight_bytes;
    return total;
}

int orthros_model_devices(const orthros_model *m, orthros_device_info *out, int max)
{
    if (!m->ranks) return orthros_tp_devices(m->be, m->world, out, max);
    for (int r = 0; r < m->world && r < max; r++) out[r] = m->ranks[r]->be->info;
    return m->world;
}
size_t orthros_model_act_size(const orthros_model *m) { return m->be->act_size; }

static int arch_needs_hedgehog(const orthros_arch *a, int n_layers)
{
    return a->fmap == ORTHROS_FMAP_HEDGEHOG && orthros_arch_uses_state(a, n_layers);
}

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
    return n;
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
        weight_slot *slots = malloc(sizeof(weight_slot) * (size_t)(8 * m->cfg.n_layers + 8));
        if (slots) {
            int n = weight_slots(m, slots, 8 * m->cfg.n_layers + 8);
            for (int i = 0; i < n; i++)
                if (*slots[i].dst) m->be->free(m->be, *slots[i].dst);
            free(slots);
        }
        free(m->layers);
    }
    if (m->owns_be) orthros_backend_free(m->be);
    free(m->orthros_json);
    free(m);
}

/* Rank 0 after a command the other ranks answer: waits for all of them; rank 0's own failure rc (with its
 * message) is the one reported when there is one, else the first other rank's. */
static int gather_status(int rc)
{
    char mine[1024];
    snprintf(mine, sizeof mine, "%s", orthros_last_error());
    int rc_others = orthros_tp_gather_status();
    return rc ? orthros_error(rc, "%s", mine) : rc_others;
}

static int set_arch_shard(orthros_model *m, const char *arch)
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

int orthros_model_set_arch(orthros_model *m, const char *arch)
{
    /* Every rank takes the schedule: the in-process ranks here, the other processes through rank 0. */
    int rc = 0;
    if (m->remote) {
        size_t la = arch ? strlen(arch) + 1 : 1;
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_SET_ARCH, .id = m->id, .payload_bytes = la};
        if ((rc = orthros_tp_send(&cmd, arch ? arch : ""))) return rc;
    }
    for (int r = 0; !rc && r < (m->ranks ? m->world : 1); r++) rc = set_arch_shard(m->ranks ? m->ranks[r] : m, arch);
    if (m->remote) {
        rc = gather_status(rc);
    }
    return rc;
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

/* A GGUF tensor dequantised to float32, the RoPE row permutation of q / k undone, uploaded. */
static int gguf_upload(orthros_model *m, const tensor_need *w)
{
    size_t numel = orthros_gguf_numel(w->gt);
    float *x = malloc(numel * sizeof *x), *tmp = w->heads ? malloc(numel * sizeof *tmp) : NULL;
    int rc = 0;
    if (!x || (w->heads && !tmp)) rc = orthros_error(ORTHROS_ENOMEM, "out of host memory dequantising %s", w->name);
    if (!rc) rc = orthros_gguf_dequantize(x, w->gt);
    if (!rc) rc = orthros_check_finite(x, ORTHROS_DTYPE_F32, numel, w->gt->name);
    if (!rc && w->heads) orthros_gguf_unpermute_rows(x, tmp, w->heads, m->cfg.head_dim, (size_t)w->shape[1]);
    if (!rc) rc = upload_part(m, w, x, ORTHROS_DTYPE_F32);
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
        const orthros_st *ckpt = src->st;
        const orthros_st_tensor *t = w->t = orthros_st_find(ckpt, w->name);
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

/* Uploads this rank's part of every checked tensor into its (now allocated) weight buffer. */
static int checkpoint_upload(orthros_model *m, const tensor_need *needs, int n)
{
    for (int i = 0; i < n; i++) {
        const orthros_st_tensor *t = needs[i].t;
        int rc = needs[i].gt ? gguf_upload(m, &needs[i])
                             : orthros_check_finite(t->data, t->dtype, t->nbytes / orthros_dtype_size(t->dtype), t->name);
        if (!rc && !needs[i].gt) rc = upload_part(m, &needs[i], t->data, t->dtype);
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
    if ((rc = shard_geometry(m, rank, world))) goto fail;
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
    m->rope = (orthros_rope){m->hq, m->hkv, m->cfg.head_dim, m->inv_freq};
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
        if (!gguf && (rc = orthros_st_open_dir(&ckpt, spec))) goto fail;
        needs = malloc(sizeof *needs * (size_t)(11 * m->cfg.n_layers + 3));
        if (!needs) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
            goto fail;
        }
        n_needs = checkpoint_needs(m, needs);
        if ((rc = checkpoint_check(m, &(weight_source){&ckpt, g}, needs, n_needs))) goto fail;
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
        for (int i = 0; i < n_slots; i++)
            if ((rc = fill_slot(be, &slots[i], seed * 1000003ull + (uint64_t)i))) goto fail;
    } else if ((rc = checkpoint_upload(m, needs, n_needs))) {
        if (rc == ORTHROS_EFORMAT) rc = orthros_error_prefix(rc, spec); /* a non-finite weight, named with its file */
        goto fail;
    }
    if (m->cfg.tie_embeddings) m->lm_head = m->embed;
    if ((rc = be->sync(be))) goto fail;
    free(needs);
    free(slots);
    m->orthros_json = orthros_json;
    orthros_st_close(&ckpt);
    orthros_gguf_free(g);
    *out = m;
    return 0;
fail:
    free(needs);
    free(slots);
    free(orthros_json);
    orthros_st_close(&ckpt);
    orthros_gguf_free(g);
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
    if (world->rank == 0 && world->world > 1) {
        char *payload = malloc(ls + la);
        if (!payload) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
        memcpy(payload, spec, ls);
        memcpy(payload + ls, opts->arch ? opts->arch : "", la);
        id = orthros_tp_new_id();
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_LOAD, .id = id,
                              .a = {opts->fmap, opts->feature_dim, opts->tail, opts->window, opts->hybrid_every, opts->tp},
                              .seed = seed, .eps = opts->eps, .payload_bytes = ls + la};
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
        rc = gather_status(rc);
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

/* ---- sessions and the forward schedule ---- */

struct orthros_session {
    orthros_model *m;          /* this rank's shard */
    orthros_backend *be;
    int B, max_ctx, chunk, rows, logit_rows;
    int *pos;                 /* host [B] */
    int *cap;                 /* per layer; 0 where the layer keeps no cache */
    void **k_cache, **v_cache;/* per layer [B][cap][hkv][d] */
    float **S, **z;           /* per layer [B][hkv][F][d], [B][hkv][F] */
    void *x, *xn, *qkv, *attn, *delta, *gu, *act; /* [rows][...] activations, this rank's heads and MLP columns */
    float *logits;            /* [logit_rows][V] on the backend; rank 0 only */
    float *logits_host;       /* [logit_rows][V] */
    orthros_session **ranks;  /* in-process ranks: [world], ranks[0] is this session; else NULL */
    int id;                   /* the id the other processes know this session by (rank 0 of processes) */
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

/* Bytes of one rank's session: its kv heads of the cache and the state, its activations, and (rank 0) the
 * logits. */
static size_t shard_session_bytes(const orthros_model *m, int batch, int max_ctx, int chunk)
{
    const orthros_model_config *c = &m->cfg;
    size_t act = m->be->act_size, d = (size_t)c->head_dim, hkv = (size_t)m->hkv;
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    size_t bytes = 0;
    for (int l = 0; l < c->n_layers; l++) {
        bytes += 2 * (size_t)batch * (size_t)layer_cap(m, l, max_ctx, chunk) * hkv * d * act;
        orthros_attn_kind k = m->arch.kind[l];
        if (k == ORTHROS_ATTN_LINEAR || k == ORTHROS_ATTN_ORTHROS) bytes += (size_t)batch * hkv * F * (d + 1) * 4;
    }
    size_t rows = (size_t)session_rows(batch, chunk);
    size_t width = 3 * (size_t)c->d_model + (size_t)(m->hq + 2 * m->hkv) * d + (size_t)m->hq * d + 3 * (size_t)m->ffn;
    bytes += rows * width * act;
    if (m->rank == 0) bytes += (size_t)session_logit_rows(batch) * (size_t)c->vocab * 4;
    return bytes;
}

size_t orthros_session_bytes(const orthros_model *m, int batch, int max_ctx, int chunk)
{
    size_t bytes = 0; /* in-process ranks share the host's memory */
    for (int r = 0; r < (m->ranks ? m->world : 1); r++)
        bytes += shard_session_bytes(m->ranks ? m->ranks[r] : m, batch, max_ctx, chunk);
    return bytes;
}

static void session_free_shard(orthros_session *s)
{
    if (!s) return;
    orthros_backend *be = s->be;
    int n_layers = s->m->cfg.n_layers;
    for (int l = 0; l < n_layers; l++) {
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

void orthros_session_free(orthros_session *s)
{
    if (!s) return;
    if (s->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_SESSION_FREE, .id = s->id};
        orthros_tp_send(&cmd, NULL);
    }
    if (s->ranks) {
        for (int r = 1; r < s->m->world; r++) session_free_shard(s->ranks[r]);
        free(s->ranks);
    }
    session_free_shard(s);
}

/* The buffers of one rank's session. */
static int session_alloc_shard(orthros_session **out, orthros_model *m, int batch, int max_ctx, int chunk, size_t need)
{
    orthros_backend *be = m->be;
    const orthros_model_config *c = &m->cfg;
    *out = NULL;
    orthros_session *s = calloc(1, sizeof *s);
    if (!s) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    s->m = m;
    s->be = be;
    s->B = batch;
    s->max_ctx = max_ctx;
    s->chunk = chunk;
    s->rows = session_rows(batch, chunk);
    s->logit_rows = session_logit_rows(batch);
    int n_layers = c->n_layers;
    size_t act = be->act_size, d = (size_t)c->head_dim, hkv = (size_t)m->hkv;
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    s->pos = calloc((size_t)batch, sizeof *s->pos);
    s->cap = calloc((size_t)n_layers, sizeof *s->cap);
    s->k_cache = calloc((size_t)n_layers, sizeof *s->k_cache);
    s->v_cache = calloc((size_t)n_layers, sizeof *s->v_cache);
    s->S = calloc((size_t)n_layers, sizeof *s->S);
    s->z = calloc((size_t)n_layers, sizeof *s->z);
    if (m->rank == 0) s->logits_host = malloc((size_t)s->logit_rows * (size_t)c->vocab * sizeof(float));
    if (!s->pos || !s->cap || !s->k_cache || !s->v_cache || !s->S || !s->z || (m->rank == 0 && !s->logits_host))
        goto oom;
    for (int l = 0; l < n_layers; l++) {
        s->cap[l] = layer_cap(m, l, max_ctx, chunk);
        if (s->cap[l]) {
            size_t bytes = (size_t)batch * (size_t)s->cap[l] * hkv * d * act;
            if (!(s->k_cache[l] = be->alloc(be, bytes)) || !(s->v_cache[l] = be->alloc(be, bytes))) goto oom;
        }
        orthros_attn_kind k = m->arch.kind[l];
        if (k == ORTHROS_ATTN_LINEAR || k == ORTHROS_ATTN_ORTHROS) {
            if (!(s->S[l] = be->alloc(be, (size_t)batch * hkv * F * d * 4)) ||
                !(s->z[l] = be->alloc(be, (size_t)batch * hkv * F * 4)))
                goto oom;
        }
    }
    size_t R = (size_t)s->rows, D = (size_t)c->d_model, hq = (size_t)m->hq;
    if (!(s->x = be->alloc(be, R * D * act)) || !(s->xn = be->alloc(be, R * D * act)) ||
        !(s->delta = be->alloc(be, R * D * act)) || !(s->qkv = be->alloc(be, R * (hq + 2 * hkv) * d * act)) ||
        !(s->attn = be->alloc(be, R * hq * d * act)) || !(s->gu = be->alloc(be, R * 2 * (size_t)m->ffn * act)) ||
        !(s->act = be->alloc(be, R * (size_t)m->ffn * act)) ||
        (m->rank == 0 && !(s->logits = be->alloc(be, (size_t)s->logit_rows * (size_t)c->vocab * 4))))
        goto oom;
    *out = s;
    return 0;
oom:
    session_free_shard(s);
    return orthros_error(ORTHROS_ENOMEM, "out of %s memory allocating a session of %.2f GiB", be->name,
                         (double)need / (1 << 30));
}

/* Positions back to 0 and the linear state zeroed, on this process's ranks. */
static int session_reset_local(orthros_session *s)
{
    for (int r = 0; r < (s->ranks ? s->m->world : 1); r++) {
        orthros_session *t = s->ranks ? s->ranks[r] : s;
        const orthros_model_config *c = &t->m->cfg;
        size_t F = (size_t)orthros_arch_feature_size(&t->m->arch, c->head_dim);
        size_t d = (size_t)c->head_dim, hkv = (size_t)t->m->hkv;
        for (int b = 0; b < t->B; b++) t->pos[b] = 0;
        for (int l = 0; l < c->n_layers; l++) {
            int rc;
            if (t->S[l] && ((rc = t->be->zero(t->be, t->S[l], (size_t)t->B * hkv * F * d * 4)) ||
                            (rc = t->be->zero(t->be, t->z[l], (size_t)t->B * hkv * F * 4))))
                return rc;
        }
    }
    return 0;
}

int orthros_session_init(orthros_session **out, orthros_model *m, int batch, int max_ctx, int chunk)
{
    orthros_backend *be = m->be;
    *out = NULL;
    if (batch < 1) return orthros_error(ORTHROS_EINVAL, "batch must be at least 1 (got %d)", batch);
    if (max_ctx < 1) return orthros_error(ORTHROS_EINVAL, "context must be at least 1 token (got %d)", max_ctx);
    size_t free_b = 0, total_b = 0;
    be->mem_info(be, &free_b, &total_b);
    if (chunk <= 0) {
        /* The largest power-of-two chunk up to the backend's default (16384 on cuda, 256 on cpu) whose session
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
    /* The other processes allocate theirs meanwhile, with the chunk chosen here. */
    int id = 0, rc;
    if (m->remote) {
        id = orthros_tp_new_id();
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_SESSION_INIT, .id = id, .ref = m->id, .a = {batch, max_ctx, chunk}};
        if ((rc = orthros_tp_send(&cmd, NULL))) return rc;
    }
    orthros_session *s = NULL;
    rc = session_alloc_shard(&s, m, batch, max_ctx, chunk, need);
    if (!rc && m->ranks) {
        if (!(s->ranks = calloc((size_t)m->world, sizeof *s->ranks))) rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
        else s->ranks[0] = s;
        for (int r = 1; !rc && r < m->world; r++) rc = session_alloc_shard(&s->ranks[r], m->ranks[r], batch, max_ctx, chunk, need);
    }
    if (m->remote) {
        rc = gather_status(rc);
        if (s) s->id = id; /* freeing s tells the others to drop theirs */
        else {
            orthros_tp_cmd cmd = {.op = ORTHROS_TP_SESSION_FREE, .id = id};
            orthros_tp_send(&cmd, NULL);
        }
    }
    if (!rc) rc = session_reset_local(s);
    if (rc) {
        orthros_session_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int orthros_session_chunk(const orthros_session *s) { return s->chunk; }

int orthros_session_rewind(orthros_session *s, int pos)
{
    for (int b = 0; b < s->B; b++)
        if (pos < 0 || pos > s->pos[b])
            return orthros_error(ORTHROS_EINVAL, "cannot rewind sequence %d from %d to %d", b, s->pos[b], pos);
    if (s->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_REWIND, .id = s->id, .a = {pos}};
        int rc = orthros_tp_send(&cmd, NULL);
        if (rc) return rc;
    }
    for (int r = 0; r < (s->ranks ? s->m->world : 1); r++)
        for (int b = 0; b < s->B; b++) (s->ranks ? s->ranks[r] : s)->pos[b] = pos;
    return 0;
}

int orthros_session_reset(orthros_session *s)
{
    if (s->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_RESET, .id = s->id};
        int rc = orthros_tp_send(&cmd, NULL);
        if (rc) return rc;
    }
    return session_reset_local(s);
}

static void *offset(const orthros_session *s, void *p, size_t elems)
{
    return (char *)p + elems * s->be->act_size;
}

/* The attention view of layer l for sequences [b0, b0 + nb): this rank's heads. */
static orthros_attn_layer attn_view(const orthros_session *s, int l, int b0)
{
    const orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    size_t d = (size_t)c->head_dim, hkv = (size_t)m->hkv;
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    orthros_attn_layer view = {.n_heads = m->hq, .n_kv_heads = m->hkv, .head_dim = c->head_dim,
                            .cap = s->cap[l], .fmap = m->arch.fmap, .feature_dim = (int)F,
                            .fmap_q = m->layers[l].fmap_q, .fmap_k = m->layers[l].fmap_k, .eps = m->arch.eps};
    view.window = m->arch.kind[l] == ORTHROS_ATTN_SWA ? m->arch.window : 0;
    if (s->cap[l]) {
        size_t per_seq = (size_t)s->cap[l] * hkv * d;
        view.k_cache = offset(s, s->k_cache[l], (size_t)b0 * per_seq);
        view.v_cache = offset(s, s->v_cache[l], (size_t)b0 * per_seq);
    }
    if (s->S[l]) {
        view.S = s->S[l] + (size_t)b0 * hkv * F * d;
        view.z = s->z[l] + (size_t)b0 * hkv * F;
    }
    return view;
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
    orthros_attn_layer view = attn_view(s, l, b0);
    orthros_attn_kind kind = s->m->arch.kind[l];
    size_t W = (size_t)(s->m->hq + 2 * s->m->hkv) * (size_t)c->head_dim;
    size_t Wo = (size_t)s->m->hq * (size_t)c->head_dim;
    if (kind == ORTHROS_ATTN_LINEAR)
        return (decode ? be->attn_linear_decode : be->attn_linear_prefill)(be, s->attn, s->qkv, &view, B, n);
    if (kind != ORTHROS_ATTN_ORTHROS || decode) lin_rows = 0;
    TRY(be->rope_cache_write(be, s->qkv, &view, &s->m->rope, pos0, B, n, lin_rows));
    if (lin_rows > 0) TRY(be->attn_linear_prefill(be, s->attn, s->qkv, &view, 1, lin_rows));
    if (lin_rows < n) {
        int p_full = pos0[0] + lin_rows;
        const int *p = lin_rows ? &p_full : pos0;
        TRY((decode ? be->attn_full_decode : be->attn_full_prefill)(be, offset(s, s->attn, (size_t)lin_rows * Wo),
                                                                   offset(s, s->qkv, (size_t)lin_rows * W), &view, p, B,
                                                                   n - lin_rows));
    }
    return 0;
}

/* The decoder stack over `rows` = B * n rows already embedded in s->x; leaves the final-normed rows in s->xn.
 * On a rank of a sharded model the projections and attention cover its heads and MLP columns; the O and down
 * projections give partial sums, which the all-reduce adds up, so that the residual stream x stays the same on
 * every rank. */
static int forward_layers(orthros_session *s, int b0, int B, int n, const int *pos0, int lin_rows, int decode)
{
    orthros_backend *be = s->be;
    orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    int rows = B * n, D = c->d_model, Wqkv = (m->hq + 2 * m->hkv) * c->head_dim;
    int Hd = m->hq * c->head_dim;
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
        if (m->comm) OP("allreduce", be->allreduce_sum(be, m->comm, s->delta, rows, D));
        OP("add_rmsnorm", be->add_rmsnorm(be, s->xn, s->x, s->delta, w->mlp_norm, rows, D, c->norm_eps));
        OP("gate_up_proj", be->gemm(be, s->gu, s->xn, w->w_gu, rows, 2 * m->ffn, D));
        OP("swiglu", be->swiglu(be, s->act, s->gu, rows, m->ffn));
        OP("down_proj", be->gemm(be, s->delta, s->act, w->w_down, rows, D, m->ffn));
        if (m->comm) OP("allreduce", be->allreduce_sum(be, m->comm, s->delta, rows, D));
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

/* Prefill on this rank's shard (positions are not advanced here). The logits are rank 0's work: the residual
 * stream is the same on every rank, and the others pass NULL. */
static int prefill_shard(orthros_session *s, int seq, const int32_t *tokens, int n, float *logits_all, int32_t *next)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    int lin_end = n - s->m->arch.tail; /* prompt rows before the orthros tail */
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
    return be->sync(be);
}

static int decode_shard(orthros_session *s, const int32_t *tokens, int32_t *next, float *logits)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    be->range_push(be, "decode");
    OP("embed", be->embed(be, s->x, tokens, s->m->embed, s->B, c->d_model));
    TRY(forward_layers(s, 0, s->B, 1, s->pos, 0, 1));
    for (int i = 0; (next || logits) && i < s->B; i += s->logit_rows) {
        int nb = s->B - i < s->logit_rows ? s->B - i : s->logit_rows;
        OP("logits", be->logits(be, s->logits, offset(s, s->xn, (size_t)i * (size_t)c->d_model), s->m->lm_head, nb, c->vocab,
                       c->d_model));
        if (logits) TRY(be->download_f32(be, logits + (size_t)i * (size_t)c->vocab, s->logits, (size_t)nb * (size_t)c->vocab));
        if (next) TRY(be->argmax(be, next + i, s->logits, nb, c->vocab));
    }
    be->range_pop(be);
    return be->sync(be);
}

/* One prefill or decode on every rank of this process: the in-process ranks on their threads, or this one. */
typedef struct {
    orthros_session *s;
    int decode, seq, n;
    const int32_t *tokens;
    float *logits;
    int32_t *next;
} shard_job;

static int shard_job_run(void *arg, int rank)
{
    const shard_job *j = arg;
    orthros_session *s = j->s->ranks ? j->s->ranks[rank] : j->s;
    float *lg = rank == 0 ? j->logits : NULL;
    int32_t *nx = rank == 0 ? j->next : NULL;
    return j->decode ? decode_shard(s, j->tokens, nx, lg) : prefill_shard(s, j->seq, j->tokens, j->n, lg, nx);
}

static int run_shards(orthros_session *s, shard_job *j)
{
    return s->m->pool ? orthros_tp_pool_run(s->m->pool, shard_job_run, j) : shard_job_run(j, 0);
}

int orthros_prefill(orthros_session *s, int seq, const int32_t *tokens, int n, float *logits_all, int32_t *next)
{
    if (seq < 0 || seq >= s->B) return orthros_error(ORTHROS_EINVAL, "sequence %d outside the batch of %d", seq, s->B);
    if (n < 1) return orthros_error(ORTHROS_EINVAL, "the prompt is empty");
    if ((long)s->pos[seq] + n > s->max_ctx)
        return orthros_error(ORTHROS_ERANGE, "a prompt of %d tokens after %d cached exceeds the context of %d", n,
                             s->pos[seq], s->max_ctx);
    TRY(check_tokens(s, tokens, n));
    const orthros_arch *a = &s->m->arch;
    for (int l = 0; l < s->m->cfg.n_layers; l++)
        if (a->kind[l] == ORTHROS_ATTN_ORTHROS && a->tail > n)
            return orthros_error(ORTHROS_EINVAL,
                                 "an orthros tail of %d is longer than the prompt of %d tokens: every position would "
                                 "run full attention (a transformer); use a tail of at most %d",
                                 a->tail, n, n);
    if (s->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_PREFILL, .id = s->id, .a = {seq, n},
                              .payload_bytes = (uint64_t)n * sizeof(int32_t)};
        TRY(orthros_tp_send(&cmd, tokens));
    }
    shard_job j = {.s = s, .decode = 0, .seq = seq, .n = n, .tokens = tokens, .logits = logits_all, .next = next};
    TRY(run_shards(s, &j));
    for (int r = 0; r < (s->ranks ? s->m->world : 1); r++) (s->ranks ? s->ranks[r] : s)->pos[seq] += n;
    return 0;
}

int orthros_decode(orthros_session *s, const int32_t *tokens, int32_t *next, float *logits)
{
    for (int b = 0; b < s->B; b++)
        if (s->pos[b] >= s->max_ctx)
            return orthros_error(ORTHROS_ERANGE, "sequence %d is full (context %d)", b, s->max_ctx);
    TRY(check_tokens(s, tokens, s->B));
    if (s->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_DECODE, .id = s->id, .a = {s->B},
                              .payload_bytes = (uint64_t)s->B * sizeof(int32_t)};
        TRY(orthros_tp_send(&cmd, tokens));
    }
    shard_job j = {.s = s, .decode = 1, .tokens = tokens, .logits = logits, .next = next};
    TRY(run_shards(s, &j));
    for (int r = 0; r < (s->ranks ? s->m->world : 1); r++)
        for (int b = 0; b < s->B; b++) (s->ranks ? s->ranks[r] : s)->pos[b]++;
    return 0;
}

/* ---- the all-reduce alone, for the bench ---- */

typedef struct {
    orthros_model *m;
    int rows, iters;
    double *seconds;
} allreduce_job;

static int allreduce_shard(void *arg, int rank)
{
    const allreduce_job *j = arg;
    orthros_model *m = j->m->ranks ? j->m->ranks[rank] : j->m;
    orthros_backend *be = m->be;
    size_t bytes = (size_t)j->rows * (size_t)m->cfg.d_model * be->act_size;
    if (bytes > m->ar_bytes) {
        if (m->ar_buf) be->free(be, m->ar_buf);
        m->ar_bytes = 0;
        if (!(m->ar_buf = be->alloc(be, bytes)))
            return orthros_error(ORTHROS_ENOMEM, "out of %s memory for a %zu-byte all-reduce", be->name, bytes);
        m->ar_bytes = bytes;
        TRY(be->zero(be, m->ar_buf, bytes));
    }
    TRY(be->allreduce_sum(be, m->comm, m->ar_buf, j->rows, m->cfg.d_model));
    TRY(be->timer_mark(be, 2));
    for (int i = 0; i < j->iters; i++) TRY(be->allreduce_sum(be, m->comm, m->ar_buf, j->rows, m->cfg.d_model));
    TRY(be->timer_mark(be, 3));
    double t = 0;
    TRY(be->timer_seconds(be, 2, 3, &t));
    if (rank == 0 && j->seconds) *j->seconds = t / j->iters;
    return be->sync(be);
}

int orthros_tp_allreduce_time(orthros_model *m, int rows, int iters, double *seconds)
{
    if (!m->comm)
        return orthros_error(ORTHROS_EINVAL, "the model runs on one rank without a communicator: no all-reduce to time");
    if (rows < 1 || iters < 1)
        return orthros_error(ORTHROS_EINVAL, "all-reduce timing needs rows >= 1 and iters >= 1 (got %d, %d)", rows, iters);
    if (m->remote) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_ALLREDUCE, .id = m->id, .a = {rows, iters}};
        TRY(orthros_tp_send(&cmd, NULL));
    }
    allreduce_job j = {m, rows, iters, seconds};
    return m->pool ? orthros_tp_pool_run(m->pool, allreduce_shard, &j) : allreduce_shard(&j, 0);
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
