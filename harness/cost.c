/* Cost model. Notation: D model width, Hq/Hkv heads, d head dim, Fm MLP width, V vocab, F feature size,
 * P = D (Hq + 2 Hkv) d + Hq d D + 3 D Fm the matmul weights of a layer.
 *   matmuls:      2 P per token per layer, plus 2 V D per logits row;
 *   full / swa:   4 Hq d per (query, key) pair attended (QK^T and PV), i.e. 2 N^2 Hq d per layer for a
 *                 causal prefill of N tokens, the figure DESIGN section 6 uses;
 *   linear:       per token, 2 F d per kv head for the state update and (2 F d + 2 F) per query head for the
 *                 read-out, plus the feature map (hedgehog: 2 d F/2 per head of q and k);
 *   orthros:      linear for the N - T positions before the tail, full for the T tail positions;
 *   local window: the linear formula's positions add 4 Hq d per (query, key) pair of the window (min(t + 1, W)
 *                 keys), and a linear layer writes and reads its ring of k~, v (docs/converted-models.md).
 * Bytes: weights read once per prefill chunk (and once per decode step), the KV cache written once
 * (prefill) or read once (decode), the linear state read and written once per chunk or step. */
#include "cost.h"

/* Sum over query positions t in [t0, t1) of the keys each attends: min(t + 1, W) (W = 0: t + 1). */
static double pairs(double t0, double t1, double W)
{
    if (t1 <= t0) return 0;
    if (W <= 0) return (t1 * (t1 + 1) - t0 * (t0 + 1)) / 2;
    double full_end = t1 < W ? t1 : W; /* for t + 1 <= W, i.e. t < W */
    double s = 0;
    if (t0 < full_end) s += (full_end * (full_end + 1) - t0 * (t0 + 1)) / 2;
    double lo = t0 > W ? t0 : W;
    if (t1 > lo) s += (t1 - lo) * W;
    return s;
}

static double layer_params(const orthros_model_config *c)
{
    double D = c->d_model, d = c->head_dim;
    return D * (c->n_heads + 2.0 * c->n_kv_heads) * d + c->n_heads * d * D + 3.0 * D * c->ffn;
}

static double linear_flops_per_token(const orthros_model_config *c, const orthros_arch *a)
{
    double d = c->head_dim, F = orthros_arch_feature_size(a, c->head_dim);
    double fmap = a->fmap == ORTHROS_FMAP_HEDGEHOG ? (c->n_heads + c->n_kv_heads) * 2.0 * d * (F / 2) : 0;
    return c->n_kv_heads * 2.0 * F * d + c->n_heads * (2.0 * F * d + 2.0 * F) + fmap;
}

orthros_cost orthros_cost_prefill(const orthros_model_config *c, const orthros_arch *a, double N, int B,
                                  double act_size, int chunk)
{
    orthros_cost k = {0};
    double d = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads, F = orthros_arch_feature_size(a, c->head_dim);
    double P = layer_params(c), chunks = chunk > 0 ? (double)(long)((N + chunk - 1) / chunk) : 1;
    for (int l = 0; l < c->n_layers; l++) {
        double attn = 0, state_bytes = 0;
        switch (a->kind[l]) {
        case ORTHROS_ATTN_FULL: attn = 4 * Hq * d * pairs(0, N, 0); break;
        case ORTHROS_ATTN_SWA: attn = 4 * Hq * d * pairs(0, N, a->window); break;
        case ORTHROS_ATTN_LINEAR:
            attn = N * linear_flops_per_token(c, a) + (a->local_window > 0 ? 4 * Hq * d * pairs(0, N, a->local_window) : 0);
            state_bytes = 2 * chunks * Hkv * F * (d + 1) * 4;
            break;
        case ORTHROS_ATTN_ORTHROS: {
            double lin = N - a->tail > 0 ? N - a->tail : 0;
            attn = lin * linear_flops_per_token(c, a) + 4 * Hq * d * pairs(lin, N, 0) +
                   (a->local_window > 0 ? 4 * Hq * d * pairs(0, lin, a->local_window) : 0);
            state_bytes = 2 * chunks * Hkv * F * (d + 1) * 4;
            break;
        }
        }
        double kv_write = a->kind[l] == ORTHROS_ATTN_LINEAR && a->local_window < 1 ? 0 : 2 * N * Hkv * d * act_size;
        k.attn_flops += B * attn;
        k.flops += B * (2 * P * N + attn);
        k.bytes += B * (chunks * P * act_size + kv_write + state_bytes);
    }
    double head = 2.0 * c->vocab * c->d_model;
    k.flops += B * head;
    k.bytes += B * (c->vocab * (double)c->d_model * act_size + N * c->d_model * act_size);
    return k;
}

orthros_cost orthros_cost_decode(const orthros_model_config *c, const orthros_arch *a, double depth, int B,
                                 double act_size, int head_int8)
{
    orthros_cost k = {0};
    double d = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads, F = orthros_arch_feature_size(a, c->head_dim);
    double P = layer_params(c);
    for (int l = 0; l < c->n_layers; l++) {
        double keys = 0, attn, state = 0;
        switch (a->kind[l]) {
        case ORTHROS_ATTN_SWA: keys = depth + 1 < a->window ? depth + 1 : a->window; break;
        case ORTHROS_ATTN_LINEAR: keys = a->local_window > 0 ? (depth + 1 < a->local_window ? depth + 1 : a->local_window) : 0; break;
        default: keys = depth + 1; break;
        }
        if (a->kind[l] == ORTHROS_ATTN_LINEAR) {
            attn = linear_flops_per_token(c, a) + 4 * Hq * d * keys;
            state = 2 * Hkv * F * (d + 1) * 4;
        } else {
            attn = 4 * Hq * d * keys;
        }
        k.attn_flops += B * attn;
        k.flops += B * (2 * P + attn);
        k.bytes += P * act_size + B * (2 * keys * Hkv * d * act_size + state);
    }
    k.flops += B * 2.0 * c->vocab * c->d_model;
    k.bytes += head_int8 ? c->vocab * ((double)c->d_model + 8.0 + 8.0 * B) : c->vocab * (double)c->d_model * act_size;
    return k;
}

double orthros_cost_allreduce_seconds(double bytes, int world)
{
    return world > 1 ? 2.0 * (world - 1) / world * bytes / ORTHROS_COST_LINK_BUS_BYTES_PER_S : 0;
}
