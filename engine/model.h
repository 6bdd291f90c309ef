/* The model as the engine holds it, shared by its loader (load.c: weights, shards, the checkpoint readers) and
 * the forward schedule (model.c: sessions, prefill, decode). Internal to engine/; the public API is orthros.h. */
#ifndef ORTHROS_MODEL_H
#define ORTHROS_MODEL_H

#include "tp.h"

/* One layer's weights on this rank: its heads' rows of the fused QKV, its columns of O, its MLP columns. */
typedef struct {
    void *wqkv;      /* [(Hq + 2 Hkv) d][D] */
    void *wo;        /* [D][Hq d] */
    void *w_gu;      /* [2 F][D]: gate rows then up rows */
    void *w_down;    /* [D][F] */
    void *attn_norm; /* [D] */
    void *mlp_norm;  /* [D] */
    void *fmap_q;    /* hedgehog: [Hq][d][F/2] */
    void *fmap_k;    /* hedgehog: [Hkv][d][F/2] */
    void *window_gate; /* [hq]: gamma_h of the local window, where the checkpoint has it (else NULL: 1) */
} layer_weights;

/* A model, or one rank's shard of it. */
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

static inline int arch_needs_hedgehog(const orthros_arch *a, int n_layers)
{
    return a->fmap == ORTHROS_FMAP_HEDGEHOG && orthros_arch_uses_state(a, n_layers);
}

#endif
