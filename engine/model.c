/* Models and sessions: the one forward schedule, written against the backend interface (DESIGN section 4).
 * A tensor-parallel model is one shard per rank, each with its share of the heads and of the MLP; the schedule
 * runs per rank on its shard (docs/tensor-parallel.md). Loading a model is load.c's. */
#define _GNU_SOURCE
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
        rc = orthros_tp_gather_status(rc);
    }
    return rc;
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
    int *kraw_cap;            /* per layer; 0 where the layer keeps no ring of un-rotated keys */
    void **kraw;              /* per layer [B][kraw_cap][hkv][d]: the local window's keys for phi (before RoPE) */
    void *q_rot;              /* [rows][hq][d]: the local window's rotated queries (phi before RoPE); or NULL */
    void *x, *xn, *qkv, *attn, *delta, *gu, *act; /* [rows][...] activations, this rank's heads and MLP columns */
    float *logits;            /* [logit_rows][V] on the backend; rank 0 only */
    float *logits_host;       /* [logit_rows][V] */
    orthros_session **ranks;  /* in-process ranks: [world], ranks[0] is this session; else NULL */
    int id;                   /* the id the other processes know this session by (rank 0 of processes) */
    /* The decode modes (orthros_session_set_decode; docs/kernels.md, "Whole-model decode"): */
    unsigned decode_asked, decode_modes; /* ORTHROS_DECODE_* asked for, and in effect */
    int32_t *step_io;         /* backend [2B]: a step's tokens, then its positions (GRAPHS) */
    int32_t *step_ids;        /* backend [B]: a step's greedy tokens (GRAPHS, FUSED) */
    int32_t *step_host;       /* host [2B]: what step_io is uploaded from */
    int *bound_pos;           /* host [B]: the bucket's last position, for every sequence (GRAPHS) */
    const int *dev_pos;       /* during a GRAPHS step: step_io + B, the positions the attention views carry */
    struct decode_graph *graphs; /* [n_graphs] */
    int n_graphs;
    orthros_decode_stats stats;
};

/* A layer of the linear formula (linear, orthros) with a local window W keeps the last W positions' keys and values
 * beyond a chunk of n <= chunk rows: the window reads positions p - W + 1 .. p and the state takes position p - W,
 * so a ring of W + chunk slots holds every one a call reads after it has written its own rows. */
static int window_ring(const orthros_model *m, int l, int max_ctx, int chunk)
{
    orthros_attn_kind k = m->arch.kind[l];
    long c = (long)m->arch.local_window + chunk;
    if ((k != ORTHROS_ATTN_LINEAR && k != ORTHROS_ATTN_ORTHROS) || m->arch.local_window < 1) return 0;
    return c < max_ctx ? (int)c : max_ctx;
}

/* KV-cache slots of layer l: the whole context (full, orthros), the window plus a chunk (swa), the local window's
 * ring (linear with a window), none (linear). */
static int layer_cap(const orthros_model *m, int l, int max_ctx, int chunk)
{
    orthros_attn_kind k = m->arch.kind[l];
    if (k == ORTHROS_ATTN_LINEAR) return window_ring(m, l, max_ctx, chunk);
    if (k == ORTHROS_ATTN_SWA) {
        long c = (long)m->arch.window + chunk - 1;
        return c < max_ctx ? (int)c : max_ctx;
    }
    return max_ctx;
}

/* Slots of the ring of un-rotated keys: a local window with phi before RoPE (after RoPE phi reads k~ from the cache). */
static int layer_kraw_cap(const orthros_model *m, int l, int max_ctx, int chunk)
{
    return m->arch.fmap_rope == ORTHROS_FMAP_ROPE_BEFORE ? window_ring(m, l, max_ctx, chunk) : 0;
}

/* The rotated queries of a chunk's rows: a local window with phi before RoPE. */
static int needs_q_rot(const orthros_model *m)
{
    return m->arch.local_window > 0 && m->arch.fmap_rope == ORTHROS_FMAP_ROPE_BEFORE &&
           orthros_arch_uses_state(&m->arch, m->cfg.n_layers);
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
        bytes += (size_t)batch * (size_t)layer_kraw_cap(m, l, max_ctx, chunk) * hkv * d * act;
        orthros_attn_kind k = m->arch.kind[l];
        if (k == ORTHROS_ATTN_LINEAR || k == ORTHROS_ATTN_ORTHROS) bytes += (size_t)batch * hkv * F * (d + 1) * 4;
    }
    size_t rows = (size_t)session_rows(batch, chunk);
    size_t width = 3 * (size_t)c->d_model + (size_t)(m->hq + 2 * m->hkv) * d + (size_t)m->hq * d + 3 * (size_t)m->ffn +
                   (needs_q_rot(m) ? (size_t)m->hq * d : 0);
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

static void decode_graphs_free(orthros_session *s);

static void session_free_shard(orthros_session *s)
{
    if (!s) return;
    orthros_backend *be = s->be;
    decode_graphs_free(s);
    be->free(be, s->step_io);
    be->free(be, s->step_ids);
    free(s->step_host);
    free(s->bound_pos);
    int n_layers = s->m->cfg.n_layers;
    for (int l = 0; l < n_layers; l++) {
        if (s->k_cache) be->free(be, s->k_cache[l]);
        if (s->v_cache) be->free(be, s->v_cache[l]);
        if (s->S) be->free(be, s->S[l]);
        if (s->z) be->free(be, s->z[l]);
        if (s->kraw) be->free(be, s->kraw[l]);
    }
    void *bufs[] = {s->x, s->xn, s->qkv, s->attn, s->delta, s->gu, s->act, s->logits, s->q_rot};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be->free(be, bufs[i]);
    free(s->k_cache);
    free(s->v_cache);
    free(s->S);
    free(s->z);
    free(s->kraw);
    free(s->kraw_cap);
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
    s->kraw = calloc((size_t)n_layers, sizeof *s->kraw);
    s->kraw_cap = calloc((size_t)n_layers, sizeof *s->kraw_cap);
    if (m->rank == 0) s->logits_host = malloc((size_t)s->logit_rows * (size_t)c->vocab * sizeof(float));
    if (!s->pos || !s->cap || !s->k_cache || !s->v_cache || !s->S || !s->z || !s->kraw || !s->kraw_cap ||
        (m->rank == 0 && !s->logits_host))
        goto oom;
    for (int l = 0; l < n_layers; l++) {
        s->cap[l] = layer_cap(m, l, max_ctx, chunk);
        if (s->cap[l]) {
            size_t bytes = (size_t)batch * (size_t)s->cap[l] * hkv * d * act;
            if (!(s->k_cache[l] = be->alloc(be, bytes)) || !(s->v_cache[l] = be->alloc(be, bytes))) goto oom;
        }
        s->kraw_cap[l] = layer_kraw_cap(m, l, max_ctx, chunk);
        if (s->kraw_cap[l] && !(s->kraw[l] = be->alloc(be, (size_t)batch * (size_t)s->kraw_cap[l] * hkv * d * act)))
            goto oom;
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
        (m->rank == 0 && !(s->logits = be->alloc(be, (size_t)s->logit_rows * (size_t)c->vocab * 4))) ||
        (needs_q_rot(m) && !(s->q_rot = be->alloc(be, R * hq * d * act))))
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
        rc = orthros_tp_gather_status(rc);
        if (s) s->id = id; /* freeing s tells the others to drop theirs */
        else {
            orthros_tp_cmd cmd = {.op = ORTHROS_TP_SESSION_FREE, .id = id};
            orthros_tp_send(&cmd, NULL);
        }
    }
    if (!rc) rc = session_reset_local(s);
    if (!rc) rc = orthros_session_set_decode(s, be->decode_modes);
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
    orthros_attn_kind kind = m->arch.kind[l];
    int lin = kind == ORTHROS_ATTN_LINEAR || kind == ORTHROS_ATTN_ORTHROS;
    orthros_attn_layer view = {.n_heads = m->hq, .n_kv_heads = m->hkv, .head_dim = c->head_dim,
                            .cap = s->cap[l], .fmap = m->arch.fmap, .feature_dim = (int)F,
                            .fmap_q = m->layers[l].fmap_q, .fmap_k = m->layers[l].fmap_k, .eps = m->arch.eps};
    view.window = kind == ORTHROS_ATTN_SWA ? m->arch.window : 0;
    if (s->cap[l]) {
        size_t per_seq = (size_t)s->cap[l] * hkv * d;
        view.k_cache = offset(s, s->k_cache[l], (size_t)b0 * per_seq);
        view.v_cache = offset(s, s->v_cache[l], (size_t)b0 * per_seq);
    }
    if (s->S[l]) {
        view.S = s->S[l] + (size_t)b0 * hkv * F * d;
        view.z = s->z[l] + (size_t)b0 * hkv * F;
    }
    /* The linear formula of a converted model (docs/converted-models.md). */
    view.fmap_after = lin && m->arch.fmap_rope == ORTHROS_FMAP_ROPE_AFTER;
    view.local_window = lin ? m->arch.local_window : 0;
    view.window_gate = m->layers[l].window_gate;
    if (s->kraw_cap[l]) {
        view.kraw_cap = s->kraw_cap[l];
        view.kraw_cache = offset(s, s->kraw[l], (size_t)b0 * (size_t)s->kraw_cap[l] * hkv * d);
    }
    if (view.local_window && !view.fmap_after) view.q_rot = s->q_rot;
    view.pos_dev = s->dev_pos;
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

/* ---- one sequence's state copied to another (orthros_session_copy_seq) ----
 *
 * Every buffer of a session that holds state of its own per sequence is listed here, and nowhere else: the copy
 * walks this list. A buffer added to the session that holds per-sequence state (a ring of keys, a cache of another
 * kind) is added to session_seq_buffers and is then copied with the rest; the host array pos is copied by
 * session_copy_seq_shard. */
typedef struct {
    void *base;        /* the buffer: [B][seq_bytes] */
    size_t seq_bytes;  /* bytes of one sequence (the stride between sequences) */
    size_t used_bytes; /* of them, the bytes that hold state after `pos` tokens (from the start of the sequence's part) */
} seq_buffer;

/* Calls fn for every per-sequence buffer of one rank's session, for a sequence at position pos. */
static int session_seq_buffers(const orthros_session *s, int pos, int (*fn)(void *ctx, const seq_buffer *b), void *ctx)
{
    const orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    size_t row = (size_t)m->hkv * (size_t)c->head_dim * s->be->act_size; /* one cached position of a layer */
    size_t F = (size_t)orthros_arch_feature_size(&m->arch, c->head_dim);
    size_t state = (size_t)m->hkv * F * (size_t)c->head_dim * 4, norm = (size_t)m->hkv * F * 4;
    for (int l = 0; l < c->n_layers; l++) {
        if (s->cap[l]) {
            /* Position p lives at slot p % cap: after pos tokens, slots [0, min(pos, cap)) are written. */
            size_t rows = (size_t)(pos < s->cap[l] ? pos : s->cap[l]);
            seq_buffer k = {s->k_cache[l], (size_t)s->cap[l] * row, rows * row};
            seq_buffer v = {s->v_cache[l], (size_t)s->cap[l] * row, rows * row};
            TRY(fn(ctx, &k));
            TRY(fn(ctx, &v));
        }
        if (s->kraw_cap[l]) {
            /* the local window's ring of un-rotated keys: position p at slot p % kraw_cap, as the cache */
            size_t rows = (size_t)(pos < s->kraw_cap[l] ? pos : s->kraw_cap[l]);
            seq_buffer kr = {s->kraw[l], (size_t)s->kraw_cap[l] * row, rows * row};
            TRY(fn(ctx, &kr));
        }
        if (s->S[l]) {
            seq_buffer S = {s->S[l], state, state}, z = {s->z[l], norm, norm};
            TRY(fn(ctx, &S));
            TRY(fn(ctx, &z));
        }
    }
    return 0;
}

typedef struct {
    orthros_backend *be;
    int dst, src;
} seq_copy;

static int copy_seq_buffer(void *ctx, const seq_buffer *b)
{
    const seq_copy *c = ctx;
    if (!b->used_bytes) return 0;
    return c->be->copy(c->be, (char *)b->base + (size_t)c->dst * b->seq_bytes, (char *)b->base + (size_t)c->src * b->seq_bytes,
                       b->used_bytes);
}

int orthros_session_copy_seq(orthros_session *s, int dst, int src)
{
    if (dst < 0 || dst >= s->B || src < 0 || src >= s->B)
        return orthros_error(ORTHROS_EINVAL, "copying sequence %d to %d: outside the batch of %d", src, dst, s->B);
    if (dst == src) return 0;
    if (s->id) {
        orthros_tp_cmd cmd = {.op = ORTHROS_TP_COPY_SEQ, .id = s->id, .a = {dst, src}};
        TRY(orthros_tp_send(&cmd, NULL));
    }
    for (int r = 0; r < (s->ranks ? s->m->world : 1); r++) {
        orthros_session *t = s->ranks ? s->ranks[r] : s;
        seq_copy c = {t->be, dst, src};
        TRY(session_seq_buffers(t, t->pos[src], copy_seq_buffer, &c));
        t->pos[dst] = t->pos[src];
    }
    return 0;
}

/* Attention of layer l for B sequences starting at b0 with n new tokens each, at positions pos0[b] + i.
 * `lin_rows` (orthros prefill only) is how many leading rows are linear-phase positions. The linear formula reads
 * rotated rows when phi acts after RoPE, and the cache (a ring on linear layers) when it has a local window. */
static int attention(orthros_session *s, int l, int b0, int B, int n, const int *pos0, int lin_rows, int decode)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    orthros_attn_layer view = attn_view(s, l, b0);
    orthros_attn_kind kind = s->m->arch.kind[l];
    size_t W = (size_t)(s->m->hq + 2 * s->m->hkv) * (size_t)c->head_dim;
    size_t Wo = (size_t)s->m->hq * (size_t)c->head_dim;
    if (kind == ORTHROS_ATTN_LINEAR) {
        if (view.cap || view.fmap_after)
            TRY(be->rope_cache_write(be, s->qkv, &view, &s->m->rope, pos0, B, n, view.fmap_after ? 0 : n));
        return (decode ? be->attn_linear_decode : be->attn_linear_prefill)(be, s->attn, s->qkv, &view, pos0, B, n);
    }
    if (kind != ORTHROS_ATTN_ORTHROS || decode) lin_rows = 0;
    TRY(be->rope_cache_write(be, s->qkv, &view, &s->m->rope, pos0, B, n, view.fmap_after ? 0 : lin_rows));
    if (lin_rows > 0) TRY(be->attn_linear_prefill(be, s->attn, s->qkv, &view, pos0, 1, lin_rows));
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
static int prefill_shard(orthros_session *s, int seq, const int32_t *tokens, int n, int from, float *logits_all,
                         int32_t *next)
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
        int r0 = from > c0 ? from - c0 : 0; /* logits of positions >= from only */
        if (logits_all && r0 < rows)
            TRY(rows_logits(s, r0, rows - r0, logits_all + (size_t)(c0 + r0 - from) * (size_t)c->vocab, last ? next : NULL));
        else if (last && next) TRY(rows_logits(s, rows - 1, 1, NULL, next));
        be->range_pop(be);
    }
    be->range_pop(be);
    return be->sync(be);
}

/* ---- the decode step's modes (orthros_session_set_decode; docs/kernels.md, "Whole-model decode") ----
 * The plain step (decode_shard below) is untouched by them: a session with no mode in effect runs it as before. */

/* A captured step: one per (cache-length bucket, whether the head runs), in the modes of the session when it was
 * captured (changing them frees every graph). */
typedef struct decode_graph {
    int bound, head;
    unsigned long epoch; /* the backend's graph_epoch at capture: another one makes the graph stale */
    void *graph;         /* NULL: the capture failed; the bucket runs uncaptured */
} decode_graph;

static void decode_graphs_free(orthros_session *s)
{
    for (int i = 0; i < s->n_graphs; i++)
        if (s->graphs[i].graph) s->be->graph_free(s->be, s->graphs[i].graph);
    free(s->graphs);
    s->graphs = NULL;
    s->n_graphs = 0;
    s->stats.graphs = 0;
}

/* The modes a session can run: only one rank (the fused ops and the captured step have no all-reduce); FUSED up to
 * the fused ops' rows and with every product's width a multiple of 8 (the GEMV's 16-byte rows). */
static unsigned decode_modes_for(const orthros_session *s, unsigned asked)
{
    const orthros_model *m = s->m;
    const orthros_backend *be = s->be;
    unsigned modes = 0;
    if (m->world != 1 || m->comm || s->ranks || s->id) return 0;
    if ((asked & ORTHROS_DECODE_FUSED) && be->norm_gemm && s->B <= be->fused_max_rows && m->cfg.d_model % 8 == 0 &&
        m->ffn % 8 == 0 && (m->hq * m->cfg.head_dim) % 8 == 0)
        modes |= ORTHROS_DECODE_FUSED;
    if ((asked & ORTHROS_DECODE_GRAPHS) && be->upload_ints) modes |= ORTHROS_DECODE_GRAPHS;
    return modes;
}

int orthros_session_set_decode(orthros_session *s, unsigned modes)
{
    if (modes & ~(ORTHROS_DECODE_FUSED | ORTHROS_DECODE_GRAPHS))
        return orthros_error(ORTHROS_EINVAL, "decode modes 0x%x: unknown bits", modes);
    orthros_backend *be = s->be;
    decode_graphs_free(s);
    s->decode_asked = modes;
    s->decode_modes = decode_modes_for(s, modes);
    if (s->decode_modes && !s->step_ids) {
        size_t B = (size_t)s->B;
        s->step_io = be->alloc(be, 2 * B * sizeof(int32_t));
        s->step_ids = be->alloc(be, B * sizeof(int32_t));
        s->step_host = malloc(2 * B * sizeof(int32_t));
        s->bound_pos = malloc(B * sizeof(int));
        if (!s->step_io || !s->step_ids || !s->step_host || !s->bound_pos) {
            s->decode_modes = 0;
            return orthros_error(ORTHROS_ENOMEM, "out of memory for a decode step's buffers");
        }
    }
    return 0;
}

unsigned orthros_session_decode(const orthros_session *s) { return s->decode_modes; }

void orthros_session_decode_stats(const orthros_session *s, orthros_decode_stats *out) { *out = s->stats; }

/* The cache-length bucket of a step whose longest sequence reads `keys` keys: 256, then four buckets an octave
 * (a multiple of a quarter of the power of two below), at most the context. A step is planned (split counts,
 * scratch) for its bucket's bound, so one graph serves every step in the bucket. */
static int decode_bucket(int keys, int max_ctx)
{
    long b = 256;
    if (keys > 256) {
        long p = 256;
        while (p * 2 < keys) p *= 2; /* p < keys <= 2p */
        long q = p / 4;
        b = (keys + q - 1) / q * q;
    }
    return b < max_ctx ? (int)b : max_ctx;
}

/* The weights of the step's next product (rows x K), as a hint to the backend (l2_next; NULL: none). */
static void hint_next(orthros_session *s, const void *W, long rows, long K)
{
    if (s->be->l2_next) s->be->l2_next(s->be, W, W ? (size_t)rows * (size_t)K * s->be->act_size : 0);
}

/* The backend's decode chain (backend.h decode_chain; a no-op where there is none): open 1, or close 0. */
static int chain(orthros_session *s, int open) { return s->be->decode_chain ? s->be->decode_chain(s->be, open) : 0; }

/* The fused step's layers over B rows of one token: the q/k/v projection with its RMSNorm (and RoPE, where the
 * layer's rope writes only the KV cache), attention, the O projection added into the residual stream, the gate/up
 * projection with its RMSNorm and SwiGLU, the down projection added. The products from one layer's O to the next
 * layer's q/k/v go to the backend between a chain's open and close (with ORTHROS_DECODE_CHAIN on cuda: one launch). */
static int forward_decode_fused_layers(orthros_session *s, const int *pos0)
{
    orthros_backend *be = s->be;
    orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    int B = s->B, D = c->d_model, Wqkv = (m->hq + 2 * m->hkv) * c->head_dim, Hd = m->hq * c->head_dim;
    char label[32];
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        orthros_attn_layer view = attn_view(s, l, 0);
        int rope_fused = m->arch.kind[l] != ORTHROS_ATTN_LINEAR && view.cap > 0 && !view.kraw_cache && !view.q_rot &&
                         !view.fmap_after;
        snprintf(label, sizeof label, "layer %d", l);
        be->range_push(be, label);
        /* each op's hint: the product after it (the q/k/v projection's and attention's: O) */
        hint_next(s, w->wo, D, Hd);
        if (rope_fused && be->norm_qkv_rope_attn) {
            /* the q/k/v projection and the attention (one launch on cuda) */
            OP("chain", chain(s, 0));
            OP("qkv_attention", be->norm_qkv_rope_attn(be, s->attn, s->qkv, s->xn, s->x, w->attn_norm, w->wqkv, &view,
                                                       &m->rope, pos0, B, D, c->norm_eps));
        } else if (rope_fused) {
            OP("qkv_rope", be->norm_qkv_rope(be, s->qkv, s->xn, s->x, w->attn_norm, w->wqkv, &view, &m->rope, pos0, B, D,
                                             c->norm_eps));
            OP("chain", chain(s, 0));
            if (be->attn_decode_o) {
                /* the attention with O after it (one launch on cuda) */
                hint_next(s, w->w_gu, 2L * m->ffn, D);
                OP("attention_o", be->attn_decode_o(be, s->x, s->delta, s->attn, s->qkv, &view, pos0, B, w->wo, D));
            } else {
                OP("attention", be->attn_full_decode(be, s->attn, s->qkv, &view, pos0, B, 1));
            }
        } else {
            OP("qkv_proj", be->norm_gemm(be, s->qkv, s->xn, s->x, w->attn_norm, w->wqkv, B, Wqkv, D, c->norm_eps));
            OP("chain", chain(s, 0));
            OP("attention", attention(s, l, 0, B, 1, pos0, 0, 1));
        }
        OP("chain", chain(s, 1));
        hint_next(s, w->w_gu, 2L * m->ffn, D);
        if (!(rope_fused && be->attn_decode_o)) OP("o_proj_add", be->gemm_add(be, s->x, s->delta, s->attn, w->wo, B, D, Hd));
        /* the product after the MLP: the next layer's q/k/v, or the head */
        const void *after = l + 1 < c->n_layers ? m->layers[l + 1].wqkv : m->lm_head;
        const long after_rows = l + 1 < c->n_layers ? Wqkv : c->vocab;
        if (be->norm_mlp_add) {
            /* gate/up and down as one op (one launch on cuda) */
            hint_next(s, after, after_rows, D);
            OP("mlp", be->norm_mlp_add(be, s->x, s->xn, s->gu, s->act, s->delta, w->mlp_norm, w->w_gu, w->w_down, B,
                                       m->ffn, D, c->norm_eps));
        } else {
            hint_next(s, w->w_down, D, m->ffn);
            OP("gate_up_swiglu", be->norm_gemm_swiglu(be, s->act, s->xn, s->gu, s->x, w->mlp_norm, w->w_gu, B, m->ffn,
                                                      D, c->norm_eps));
            hint_next(s, after, after_rows, D);
            OP("down_proj_add", be->gemm_add(be, s->x, s->delta, s->act, w->w_down, B, D, m->ffn));
        }
        be->range_pop(be);
    }
    return 0;
}

/* The layers, the hints cleared and the chain closed after them whether they ran or failed (neither outlives the
 * step). */
static int forward_decode_fused(orthros_session *s, const int *pos0)
{
    int rc = forward_decode_fused_layers(s, pos0);
    hint_next(s, NULL, 0, 0);
    int rc2 = chain(s, 0);
    return rc ? rc : rc2;
}

/* One step in the session's modes: the embedding (the tokens from the host, or from step_io under GRAPHS), the
 * layers (plain or fused) at positions pos0 (under GRAPHS the bucket's bound; the views carry the real ones) and,
 * with `head`, the argmax of every row's logits into step_ids, and at head 2 the logits into s->logits (at head 1 the
 * backend's norm_argmax may leave anything there). */
static int decode_body(orthros_session *s, const int32_t *tokens, const int *pos0, int head)
{
    orthros_backend *be = s->be;
    orthros_model *m = s->m;
    const orthros_model_config *c = &m->cfg;
    int B = s->B;
    if (s->decode_modes & ORTHROS_DECODE_GRAPHS) OP("embed", be->embed_dev(be, s->x, s->step_io, m->embed, B, c->d_model));
    else OP("embed", be->embed(be, s->x, tokens, m->embed, B, c->d_model));
    if (s->decode_modes & ORTHROS_DECODE_FUSED) {
        TRY(forward_decode_fused(s, pos0));
        if (head == 1 && be->norm_argmax) /* ids only: the backend's cheaper head, if it has one */
            OP("head", be->norm_argmax(be, s->step_ids, s->logits, s->xn, s->x, m->final_norm, m->lm_head, B, c->vocab,
                                       c->d_model, c->norm_eps));
        else if (head)
            OP("head", be->norm_logits_argmax(be, s->step_ids, s->logits, s->xn, s->x, m->final_norm, m->lm_head, B,
                                              c->vocab, c->d_model, c->norm_eps));
        return 0;
    }
    TRY(forward_layers(s, 0, B, 1, pos0, 0, 1));
    if (head) {
        OP("logits", be->logits(be, s->logits, s->xn, m->lm_head, B, c->vocab, c->d_model));
        OP("argmax", be->argmax_dev(be, s->step_ids, s->logits, B, c->vocab));
    }
    return 0;
}

/* A GRAPHS step on a backend that captures: the bucket's graph replayed; at its first step (or when stale) the step
 * runs uncaptured (its output is this step's, and it grows whatever scratch the bucket needs) and is then captured,
 * not run, for the next ones. A capture that fails leaves the bucket uncaptured (stats say why). */
static int decode_graph_step(orthros_session *s, int bound, int head)
{
    orthros_backend *be = s->be;
    decode_graph *g = NULL;
    for (int i = 0; i < s->n_graphs && !g; i++)
        if (s->graphs[i].bound == bound && s->graphs[i].head == head) g = &s->graphs[i];
    if (g && g->epoch == be->graph_epoch(be)) {
        if (!g->graph) return decode_body(s, NULL, s->bound_pos, head);
        be->range_push(be, "decode graph replay");
        int rc = be->graph_launch(be, g->graph);
        be->range_pop(be);
        if (!rc) s->stats.replays++;
        return rc;
    }
    TRY(decode_body(s, NULL, s->bound_pos, head));
    if (!g) {
        decode_graph *grown = realloc(s->graphs, (size_t)(s->n_graphs + 1) * sizeof *grown);
        if (!grown) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
        s->graphs = grown;
        g = &s->graphs[s->n_graphs++];
        memset(g, 0, sizeof *g);
        g->bound = bound;
        g->head = head;
    } else if (g->graph) {
        be->graph_free(be, g->graph);
        g->graph = NULL;
        s->stats.graphs--;
    }
    g->epoch = be->graph_epoch(be);
    void *graph = NULL;
    be->range_push(be, "decode graph capture");
    int rc = be->graph_begin(be);
    if (!rc) {
        int brc = decode_body(s, NULL, s->bound_pos, head);
        int erc = be->graph_end(be, &graph);
        rc = brc ? brc : erc;
    }
    be->range_pop(be);
    if (rc) {
        if (graph) be->graph_free(be, graph);
        s->stats.capture_failures++;
        snprintf(s->stats.last_failure, sizeof s->stats.last_failure, "bucket %d: %s", bound, orthros_last_error());
        return 0; /* this step's output came from the uncaptured run */
    }
    g->graph = graph;
    s->stats.captures++;
    s->stats.graphs++;
    return 0;
}

/* A step in the session's modes. Under GRAPHS the host uploads the step's tokens and positions in one copy, and
 * every op reads them from there. */
static int decode_shard_modes(orthros_session *s, const int32_t *tokens, int32_t *next, float *logits)
{
    orthros_backend *be = s->be;
    const orthros_model_config *c = &s->m->cfg;
    const int B = s->B, head = logits ? 2 : next ? 1 : 0; /* 2: the logits too (exact), 1: the ids alone */
    int rc;
    s->stats.steps++;
    be->range_push(be, "decode");
    if (s->decode_modes & ORTHROS_DECODE_GRAPHS) {
        int keys = 0;
        for (int b = 0; b < B; b++) {
            s->step_host[b] = tokens[b];
            s->step_host[B + b] = s->pos[b];
            keys = s->pos[b] + 1 > keys ? s->pos[b] + 1 : keys;
        }
        const int bound = decode_bucket(keys, s->max_ctx);
        for (int b = 0; b < B; b++) s->bound_pos[b] = bound - 1;
        rc = be->upload_ints(be, s->step_io, s->step_host, 2 * B);
        s->dev_pos = s->step_io + B;
        if (!rc) rc = be->graph_begin ? decode_graph_step(s, bound, head) : decode_body(s, NULL, s->bound_pos, head);
        s->dev_pos = NULL;
    } else {
        rc = decode_body(s, tokens, s->pos, head);
    }
    be->range_pop(be);
    if (rc) return rc;
    if (logits) TRY(be->download_f32(be, logits, s->logits, (size_t)B * (size_t)c->vocab));
    if (next) TRY(be->download_ints(be, next, s->step_ids, B));
    return be->sync(be);
}

static int decode_shard(orthros_session *s, const int32_t *tokens, int32_t *next, float *logits)
{
    if (s->decode_modes) return decode_shard_modes(s, tokens, next, logits);
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
    int decode, seq, n, from;
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
    return j->decode ? decode_shard(s, j->tokens, nx, lg) : prefill_shard(s, j->seq, j->tokens, j->n, j->from, lg, nx);
}

static int run_shards(orthros_session *s, shard_job *j)
{
    return s->m->pool ? orthros_tp_pool_run(s->m->pool, shard_job_run, j) : shard_job_run(j, 0);
}

int orthros_prefill(orthros_session *s, int seq, const int32_t *tokens, int n, float *logits_all, int32_t *next)
{
    return orthros_prefill_logits(s, seq, tokens, n, 0, logits_all, next);
}

int orthros_prefill_logits(orthros_session *s, int seq, const int32_t *tokens, int n, int from, float *logits,
                           int32_t *next)
{
    if (from < 0 || (from >= n && n >= 1))
        return orthros_error(ORTHROS_EINVAL, "logits from position %d of a prompt of %d tokens", from, n);
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
    shard_job j = {.s = s, .decode = 0, .seq = seq, .n = n, .from = from, .tokens = tokens, .logits = logits, .next = next};
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int orthros_generate(orthros_session *s, const int32_t *prompt, int n, int max_new, int32_t *out)
{
    return orthros_generate_timed(s, prompt, n, max_new, out, NULL, NULL);
}

int orthros_generate_timed(orthros_session *s, const int32_t *prompt, int n, int max_new, int32_t *out, double *prefill_s,
                           double *decode_s)
{
    if (s->B != 1) return orthros_error(ORTHROS_EINVAL, "generate needs a batch-1 session");
    if (max_new < 1) return orthros_error(ORTHROS_EINVAL, "max-new must be at least 1");
    if ((long)n + max_new - 1 > s->max_ctx)
        return orthros_error(ORTHROS_ERANGE, "prompt %d + %d new tokens exceed the context of %d", n, max_new,
                             s->max_ctx);
    int32_t tok = -1; /* written by the prefill's last rank-0 shard */
    double t0 = now_s();
    TRY(orthros_prefill(s, 0, prompt, n, NULL, &tok));
    double t1 = now_s();
    int count = 0;
    out[count++] = tok;
    while (count < max_new && !is_eos(&s->m->cfg, tok)) {
        TRY(orthros_decode(s, &tok, &tok, NULL));
        out[count++] = tok;
    }
    if (prefill_s) *prefill_s = t1 - t0;
    if (decode_s) *decode_s = now_s() - t1;
    return count;
}

