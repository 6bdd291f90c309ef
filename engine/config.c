/* config.json parsing, presets and attention-schedule resolution (DESIGN sections 2 and 3). */
#define _POSIX_C_SOURCE 200809L
#include "json.h"
#include "orthros.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM (1 << 20)

/* Reads an integer field; `required` makes absence an error, else *out keeps its default. */
static int json_int(const cJSON *obj, const char *key, int *out, int required, long lo, long hi)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) {
        if (required) return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" is missing", key);
        return 0;
    }
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble))
        return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" is not an integer", key);
    if (it->valuedouble < (double)lo || it->valuedouble > (double)hi)
        return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" = %.0f is outside [%ld, %ld]", key, it->valuedouble,
                             lo, hi);
    *out = (int)it->valuedouble;
    return 0;
}

/* Reads a boolean field (true / false; absent or null keeps *out): 1, "yes" and the like are refused, not read as
 * false. */
static int json_bool(const cJSON *obj, const char *key, int *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsBool(it)) return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" is not a boolean", key);
    *out = cJSON_IsTrue(it);
    return 0;
}

/* Reads a string field; absent or null leaves *out NULL. */
static int json_str(const cJSON *obj, const char *key, const char **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsString(it)) return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" is not a string", key);
    *out = it->valuestring;
    return 0;
}

static int json_num(const cJSON *obj, const char *key, double *out, double lo, double hi)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsNumber(it)) return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" is not a number", key);
    if (!(it->valuedouble >= lo && it->valuedouble <= hi))
        return orthros_error(ORTHROS_EFORMAT, "config field \"%s\" = %g is outside [%g, %g]", key, it->valuedouble, lo,
                             hi);
    *out = it->valuedouble;
    return 0;
}

static int parse_rope(orthros_model_config *cfg, const cJSON *rs)
{
    int rc;
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs)) return orthros_error(ORTHROS_EFORMAT, "config field rope_scaling is not an object");
    if ((rc = json_num(rs, "rope_theta", &cfg->rope_theta, 1e-3, 1e12))) return rc;
    const char *type = NULL;
    if ((rc = json_str(rs, "rope_type", &type))) return rc;
    if (!type && (rc = json_str(rs, "type", &type))) return rc;
    if (!type || !strcmp(type, "default")) return 0;
    if (strcmp(type, "llama3"))
        return orthros_error(ORTHROS_EUNSUPPORTED, "rope_type \"%s\" is not supported (default, llama3)", type);
    cfg->rope_llama3 = 1;
    cfg->rope_factor = 8.0;
    cfg->rope_low_freq_factor = 1.0;
    cfg->rope_high_freq_factor = 4.0;
    cfg->rope_orig_max_pos = 8192;
    if ((rc = json_num(rs, "factor", &cfg->rope_factor, 1e-6, 1e9))) return rc;
    if ((rc = json_num(rs, "low_freq_factor", &cfg->rope_low_freq_factor, 1e-9, 1e9))) return rc;
    if ((rc = json_num(rs, "high_freq_factor", &cfg->rope_high_freq_factor, 1e-9, 1e9))) return rc;
    if ((rc = json_int(rs, "original_max_position_embeddings", &cfg->rope_orig_max_pos, 0, 1, 1 << 30))) return rc;
    if (cfg->rope_high_freq_factor <= cfg->rope_low_freq_factor)
        return orthros_error(ORTHROS_EFORMAT, "llama3 rope scaling needs high_freq_factor > low_freq_factor");
    return 0;
}

/* Reads eos_token_id: an integer or a list of integers (at most 8). */
static int parse_eos(orthros_model_config *cfg, const cJSON *eos)
{
    if (!eos || cJSON_IsNull(eos)) return 0;
    const cJSON *e = eos;
    int list = cJSON_IsArray(eos);
    if (list) e = eos->child;
    for (; e; e = list ? e->next : NULL) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble > 2147483647.0)
            return orthros_error(ORTHROS_EFORMAT,
                                 "config field \"eos_token_id\" is not a token id or a list of token ids in [0, 2^31)");
        if (cfg->n_eos == 8)
            return orthros_error(ORTHROS_EUNSUPPORTED, "config field \"eos_token_id\" lists more than 8 ids");
        cfg->eos[cfg->n_eos++] = (int)e->valuedouble;
    }
    return 0;
}

/* The model fields of a parsed config.json (DESIGN section 3). Limits: hidden_size and intermediate_size
 * up to 2^20, vocab_size up to 2^24, num_hidden_layers up to ORTHROS_MAX_LAYERS, heads up to 4096, head_dim
 * even and up to ORTHROS_MAX_HEAD_DIM: every weight and its byte count then fit in size_t and every row
 * width (heads x head_dim) in an int. */
static int config_from_json(orthros_model_config *cfg, const cJSON *root)
{
    int rc = 0;
    memset(cfg, 0, sizeof *cfg);
    if (!cJSON_IsObject(root)) return orthros_error(ORTHROS_EFORMAT, "config is not a JSON object");
    const char *str;
    if ((rc = json_str(root, "model_type", &str))) return rc;
    if (str && strcmp(str, "llama"))
        return orthros_error(ORTHROS_EUNSUPPORTED, "model_type \"%s\" is not supported (llama)", str);
    if ((rc = json_str(root, "hidden_act", &str))) return rc;
    if (str && strcmp(str, "silu"))
        return orthros_error(ORTHROS_EUNSUPPORTED, "hidden_act \"%s\" is not supported (silu)", str);
    static const char *const biases[] = {"attention_bias", "mlp_bias"};
    for (int i = 0; i < 2; i++) {
        int on = 0;
        if ((rc = json_bool(root, biases[i], &on))) return rc;
        if (on) return orthros_error(ORTHROS_EUNSUPPORTED, "%s = true is not supported", biases[i]);
    }
    if ((rc = json_int(root, "hidden_size", &cfg->d_model, 1, 1, MAX_DIM))) return rc;
    if ((rc = json_int(root, "num_hidden_layers", &cfg->n_layers, 1, 1, ORTHROS_MAX_LAYERS))) return rc;
    if ((rc = json_int(root, "num_attention_heads", &cfg->n_heads, 1, 1, 4096))) return rc;
    cfg->n_kv_heads = cfg->n_heads;
    if ((rc = json_int(root, "num_key_value_heads", &cfg->n_kv_heads, 0, 1, 4096))) return rc;
    if ((rc = json_int(root, "intermediate_size", &cfg->ffn, 1, 1, MAX_DIM))) return rc;
    if ((rc = json_int(root, "vocab_size", &cfg->vocab, 1, 1, 1 << 24))) return rc;
    if ((rc = json_int(root, "head_dim", &cfg->head_dim, 0, 2, ORTHROS_MAX_HEAD_DIM))) return rc;
    if (!cfg->head_dim) {
        if (cfg->d_model % cfg->n_heads)
            return orthros_error(ORTHROS_EFORMAT, "hidden_size %d is not divisible by num_attention_heads %d",
                                 cfg->d_model, cfg->n_heads);
        cfg->head_dim = cfg->d_model / cfg->n_heads;
    }
    if (cfg->head_dim % 2 || cfg->head_dim > ORTHROS_MAX_HEAD_DIM)
        return orthros_error(ORTHROS_EFORMAT, "head_dim %d must be even and at most %d", cfg->head_dim,
                             ORTHROS_MAX_HEAD_DIM);
    if (cfg->n_heads % cfg->n_kv_heads)
        return orthros_error(ORTHROS_EFORMAT, "num_attention_heads %d is not divisible by num_key_value_heads %d",
                             cfg->n_heads, cfg->n_kv_heads);
    cfg->max_pos = 2048;
    if ((rc = json_int(root, "max_position_embeddings", &cfg->max_pos, 0, 1, 1 << 30))) return rc;
    double eps = 1e-6;
    if ((rc = json_num(root, "rms_norm_eps", &eps, 0.0, 1.0))) return rc;
    cfg->norm_eps = (float)eps;
    cfg->rope_theta = 10000.0;
    if ((rc = json_num(root, "rope_theta", &cfg->rope_theta, 1e-3, 1e12))) return rc;
    if ((rc = json_bool(root, "tie_word_embeddings", &cfg->tie_embeddings))) return rc;
    /* transformers 5 writes rope_parameters; earlier versions rope_theta + rope_scaling. */
    if ((rc = parse_rope(cfg, cJSON_GetObjectItemCaseSensitive(root, "rope_scaling")))) return rc;
    if ((rc = parse_rope(cfg, cJSON_GetObjectItemCaseSensitive(root, "rope_parameters")))) return rc;
    return parse_eos(cfg, cJSON_GetObjectItemCaseSensitive(root, "eos_token_id"));
}

int orthros_config_parse_text(orthros_model_config *cfg, char **orthros_json, const char *text, size_t len)
{
    cJSON *root = NULL;
    if (orthros_json) *orthros_json = NULL;
    int rc = orthros_json_parse(&root, text, len);
    if (rc) return rc;
    if ((rc = config_from_json(cfg, root))) goto fail;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "orthros");
    if (orthros_json && o && !cJSON_IsNull(o) && !(*orthros_json = cJSON_PrintUnformatted(o)))
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
fail:
    cJSON_Delete(root);
    return rc;
}

int orthros_config_parse(orthros_model_config *cfg, const char *json_text)
{
    return orthros_config_parse_text(cfg, NULL, json_text, strlen(json_text));
}

static int preset_shape(orthros_model_config *cfg, const char *name)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->norm_eps = 1e-5f;
    if (!strcmp(name, "tiny")) {
        *cfg = (orthros_model_config){.d_model = 64, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 16,
                                      .ffn = 160, .vocab = 256, .max_pos = 1 << 20, .norm_eps = 1e-5f,
                                      .rope_theta = 10000.0};
        return 0;
    }
    if (!strcmp(name, "llama3.2-1b")) {
        *cfg = (orthros_model_config){.d_model = 2048, .n_layers = 16, .n_heads = 32, .n_kv_heads = 8, .head_dim = 64,
                                      .ffn = 8192, .vocab = 128256, .max_pos = 131072, .tie_embeddings = 1,
                                      .norm_eps = 1e-5f, .rope_theta = 500000.0, .rope_llama3 = 1, .rope_factor = 32.0,
                                      .rope_low_freq_factor = 1.0, .rope_high_freq_factor = 4.0,
                                      .rope_orig_max_pos = 8192};
        return 0;
    }
    if (!strcmp(name, "llama3.1-8b")) {
        *cfg = (orthros_model_config){.d_model = 4096, .n_layers = 32, .n_heads = 32, .n_kv_heads = 8, .head_dim = 128,
                                      .ffn = 14336, .vocab = 128256, .max_pos = 131072, .norm_eps = 1e-5f,
                                      .rope_theta = 500000.0, .rope_llama3 = 1, .rope_factor = 8.0,
                                      .rope_low_freq_factor = 1.0, .rope_high_freq_factor = 4.0,
                                      .rope_orig_max_pos = 8192};
        return 0;
    }
    if (!strcmp(name, "llama3.1-70b")) {
        /* The shape of Llama-3.1-70B: 141 GB of bf16 weights, so it runs sharded (--tp 2 and up). */
        *cfg = (orthros_model_config){.d_model = 8192, .n_layers = 80, .n_heads = 64, .n_kv_heads = 8, .head_dim = 128,
                                      .ffn = 28672, .vocab = 128256, .max_pos = 131072, .norm_eps = 1e-5f,
                                      .rope_theta = 500000.0, .rope_llama3 = 1, .rope_factor = 8.0,
                                      .rope_low_freq_factor = 1.0, .rope_high_freq_factor = 4.0,
                                      .rope_orig_max_pos = 8192};
        return 0;
    }
    return orthros_error(ORTHROS_EINVAL, "unknown preset \"%s\" (tiny, llama3.2-1b, llama3.1-8b, llama3.1-70b; NAME-LN: "
                         "its first N layers)", name);
}

int orthros_preset_config(orthros_model_config *cfg, const char *name)
{
    /* NAME-LN: the first N layers of NAME's shape (the 70B shape on fewer GPUs than its 80 layers need). */
    const char *dash = strrchr(name, '-');
    size_t nd = dash && dash[1] == 'L' ? strspn(dash + 2, "0123456789") : 0;
    if (!nd || dash[2 + nd] != '\0') return preset_shape(cfg, name);
    char base[64];
    if ((size_t)(dash - name) >= sizeof base) return orthros_error(ORTHROS_EINVAL, "unknown preset \"%.80s\"", name);
    memcpy(base, name, (size_t)(dash - name));
    base[dash - name] = '\0';
    int rc = preset_shape(cfg, base);
    if (rc) return rc;
    long layers = nd > 6 ? 0 : strtol(dash + 2, NULL, 10);
    if (layers < 1 || layers > cfg->n_layers)
        return orthros_error(ORTHROS_ERANGE, "preset \"%s\": %s has %d layers; -L takes 1 to %d", name, base,
                             cfg->n_layers, cfg->n_layers);
    cfg->n_layers = (int)layers;
    return 0;
}

void orthros_arch_opts_default(orthros_arch_opts *o)
{
    *o = (orthros_arch_opts){.arch = NULL, .fmap = ORTHROS_UNSET, .feature_dim = ORTHROS_UNSET, .tail = ORTHROS_UNSET,
                             .eps = ORTHROS_UNSET, .window = ORTHROS_UNSET, .hybrid_every = ORTHROS_UNSET,
                             .fmap_rope = ORTHROS_UNSET, .local_window = ORTHROS_UNSET, .tp = 1, .adapter = NULL};
}

const char *orthros_fmap_name(orthros_fmap f)
{
    static const char *const names[] = {"elu1", "relu", "hedgehog"};
    return (unsigned)f < 3 ? names[f] : "?";
}

int orthros_fmap_parse(const char *s, orthros_fmap *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, orthros_fmap_name((orthros_fmap)i))) {
            *out = (orthros_fmap)i;
            return 0;
        }
    return orthros_error(ORTHROS_EINVAL, "unknown feature map \"%s\" (elu1, relu, hedgehog)", s);
}

const char *orthros_fmap_rope_name(orthros_fmap_rope r)
{
    return r == ORTHROS_FMAP_ROPE_BEFORE ? "before" : r == ORTHROS_FMAP_ROPE_AFTER ? "after" : "?";
}

int orthros_fmap_rope_parse(const char *s, orthros_fmap_rope *out)
{
    if (!strcmp(s, "before")) *out = ORTHROS_FMAP_ROPE_BEFORE;
    else if (!strcmp(s, "after")) *out = ORTHROS_FMAP_ROPE_AFTER;
    else return orthros_error(ORTHROS_EINVAL, "unknown feature-map placement \"%s\" (before, after)", s);
    return 0;
}

int orthros_arch_feature_size(const orthros_arch *a, int head_dim)
{
    return a->fmap == ORTHROS_FMAP_HEDGEHOG ? 2 * a->feature_dim : head_dim;
}

int orthros_arch_uses_state(const orthros_arch *a, int n_layers)
{
    for (int i = 0; i < n_layers; i++)
        if (a->kind[i] == ORTHROS_ATTN_LINEAR || a->kind[i] == ORTHROS_ATTN_ORTHROS) return 1;
    return 0;
}

static int kind_parse(const char *s, orthros_attn_kind *k, int *window)
{
    if (!strcmp(s, "full")) *k = ORTHROS_ATTN_FULL;
    else if (!strcmp(s, "linear")) *k = ORTHROS_ATTN_LINEAR;
    else if (!strcmp(s, "orthros")) *k = ORTHROS_ATTN_ORTHROS;
    else if (!strcmp(s, "swa")) *k = ORTHROS_ATTN_SWA;
    else if (!strncmp(s, "swa:", 4)) {
        char *end = NULL;
        long w = s[4] >= '0' && s[4] <= '9' ? strtol(s + 4, &end, 10) : 0; /* digits only: no sign or space */
        if (!end || *end || w < 1 || w > (1L << 30))
            return orthros_error(ORTHROS_EINVAL, "bad sliding window in \"%s\" (swa:W, W >= 1)", s);
        *k = ORTHROS_ATTN_SWA;
        *window = (int)w;
    } else {
        return orthros_error(ORTHROS_EINVAL, "unknown attention kind \"%s\" (full, linear, swa, swa:W, orthros)", s);
    }
    return 0;
}

const char *const orthros_arch_names[] = {"transformer", "orthros", "linear", "swa", "hybrid", NULL};

static int schedule_named(orthros_arch *arch, const char *name, int n_layers)
{
    int which = -1;
    for (int i = 0; orthros_arch_names[i]; i++)
        if (!strcmp(name, orthros_arch_names[i])) which = i;
    if (which < 0)
        return orthros_error(ORTHROS_EINVAL, "unknown architecture \"%s\" (transformer, orthros, linear, swa, hybrid)",
                             name);
    snprintf(arch->name, sizeof arch->name, "%s", name);
    for (int i = 0; i < n_layers; i++) {
        switch (which) {
        case 0: arch->kind[i] = ORTHROS_ATTN_FULL; break;
        case 1: arch->kind[i] = ORTHROS_ATTN_ORTHROS; break;
        case 2: arch->kind[i] = ORTHROS_ATTN_LINEAR; break;
        case 3: arch->kind[i] = ORTHROS_ATTN_SWA; break;
        default:
            arch->kind[i] = (i + 1) % arch->hybrid_every == 0 ? ORTHROS_ATTN_FULL : ORTHROS_ATTN_LINEAR;
            break;
        }
    }
    return 0;
}

int orthros_arch_resolve(orthros_arch *arch, const orthros_model_config *cfg, const orthros_arch_opts *opts,
                         const char *orthros_json)
{
    int rc = 0;
    cJSON *oj = NULL;
    memset(arch, 0, sizeof *arch);
    arch->fmap = ORTHROS_FMAP_ELU1;
    arch->feature_dim = cfg->head_dim / 2 > 0 ? cfg->head_dim / 2 : 1;
    arch->tail = 1;
    arch->eps = 1e-6f;
    arch->window = 4096;
    arch->hybrid_every = 4;
    const cJSON *sched = NULL;
    if (orthros_json) {
        if ((rc = orthros_json_parse(&oj, orthros_json, strlen(orthros_json)))) {
            rc = orthros_error_prefix(rc, "config field \"orthros\"");
            goto fail;
        }
        if (!cJSON_IsObject(oj)) {
            rc = orthros_error(ORTHROS_EFORMAT, "config field \"orthros\" is not a JSON object");
            goto fail;
        }
        const char *fm = NULL;
        if ((rc = json_str(oj, "feature_map", &fm))) goto fail;
        if (fm && orthros_fmap_parse(fm, &arch->fmap)) {
            rc = orthros_error_prefix(ORTHROS_EFORMAT, "orthros.feature_map");
            goto fail;
        }
        const char *fr = NULL;
        if ((rc = json_str(oj, "feature_map_rope", &fr))) goto fail;
        if (fr && orthros_fmap_rope_parse(fr, &arch->fmap_rope)) {
            rc = orthros_error_prefix(ORTHROS_EFORMAT, "orthros.feature_map_rope");
            goto fail;
        }
        if ((rc = json_int(oj, "local_window", &arch->local_window, 0, 0, 1 << 30))) goto fail;
        double eps = arch->eps;
        if ((rc = json_int(oj, "feature_dim", &arch->feature_dim, 0, 1, 1024))) goto fail;
        if ((rc = json_int(oj, "tail", &arch->tail, 0, 1, 1 << 30))) goto fail;
        if ((rc = json_int(oj, "window", &arch->window, 0, 1, 1 << 30))) goto fail;
        if ((rc = json_int(oj, "hybrid_every", &arch->hybrid_every, 0, 1, ORTHROS_MAX_LAYERS))) goto fail;
        if ((rc = json_num(oj, "eps", &eps, 0.0, 1.0))) goto fail;
        arch->eps = (float)eps;
        if (!(arch->eps > 0.0f)) {
            rc = orthros_error(ORTHROS_EFORMAT, "config field \"eps\" = %g must be positive", eps);
            goto fail;
        }
        sched = cJSON_GetObjectItemCaseSensitive(oj, "architecture");
    }
    /* ORTHROS_UNSET leaves the checkpoint's value or the default; any other value is taken, then checked. */
    if (opts->fmap != ORTHROS_UNSET) {
        if (opts->fmap < 0 || opts->fmap > ORTHROS_FMAP_HEDGEHOG) {
            rc = orthros_error(ORTHROS_EINVAL, "feature map %d is not one of 0 (elu1), 1 (relu), 2 (hedgehog)",
                               opts->fmap);
            goto fail;
        }
        arch->fmap = (orthros_fmap)opts->fmap;
    }
    if (opts->feature_dim != ORTHROS_UNSET) arch->feature_dim = opts->feature_dim;
    if (opts->tail != ORTHROS_UNSET) arch->tail = opts->tail;
    if (opts->window != ORTHROS_UNSET) arch->window = opts->window;
    if (opts->hybrid_every != ORTHROS_UNSET) arch->hybrid_every = opts->hybrid_every;
    if (opts->fmap_rope != ORTHROS_UNSET) {
        if (opts->fmap_rope != ORTHROS_FMAP_ROPE_BEFORE && opts->fmap_rope != ORTHROS_FMAP_ROPE_AFTER) {
            rc = orthros_error(ORTHROS_EINVAL, "feature-map placement %d is not one of 0 (before), 1 (after)",
                               opts->fmap_rope);
            goto fail;
        }
        arch->fmap_rope = (orthros_fmap_rope)opts->fmap_rope;
    }
    if (opts->local_window != ORTHROS_UNSET) {
        if (opts->local_window < 0 || opts->local_window > (1 << 30)) {
            rc = orthros_error(ORTHROS_EINVAL, "local window must be in [0, 2^30] (got %d)", opts->local_window);
            goto fail;
        }
        arch->local_window = opts->local_window;
    }
    if (opts->eps != ORTHROS_UNSET) {
        /* Checked before the conversion: a double out of float's range does not convert. */
        if (!(opts->eps > 0.0 && opts->eps <= 1.0) || !((float)opts->eps > 0.0f)) {
            rc = orthros_error(ORTHROS_EINVAL, "eps must be in (0, 1] and representable as a float (got %g)", opts->eps);
            goto fail;
        }
        arch->eps = (float)opts->eps;
    }
    if (arch->tail < 1) {
        rc = orthros_error(ORTHROS_EINVAL, "tail must be at least 1 (got %d)", arch->tail);
        goto fail;
    }
    if (arch->window < 1) {
        rc = orthros_error(ORTHROS_EINVAL, "window must be at least 1 (got %d)", arch->window);
        goto fail;
    }
    if (arch->hybrid_every < 1) {
        rc = orthros_error(ORTHROS_EINVAL, "hybrid-every must be at least 1 (got %d)", arch->hybrid_every);
        goto fail;
    }
    if (arch->feature_dim < 1 || arch->feature_dim > 1024) {
        rc = orthros_error(ORTHROS_EINVAL, "feature dim must be in [1, 1024] (got %d)", arch->feature_dim);
        goto fail;
    }
    if (opts->arch) {
        rc = schedule_named(arch, opts->arch, cfg->n_layers);
    } else if (cJSON_IsString(sched)) {
        rc = schedule_named(arch, sched->valuestring, cfg->n_layers);
        if (rc) rc = orthros_error_prefix(ORTHROS_EFORMAT, "orthros.architecture");
    } else if (cJSON_IsArray(sched)) {
        if (cJSON_GetArraySize(sched) != cfg->n_layers) {
            rc = orthros_error(ORTHROS_EFORMAT, "orthros.architecture lists %d layers, the model has %d",
                               cJSON_GetArraySize(sched), cfg->n_layers);
            goto fail;
        }
        int i = 0, window = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, sched)
        {
            if (!cJSON_IsString(e)) {
                rc = orthros_error(ORTHROS_EFORMAT, "orthros.architecture[%d] is not a string", i);
                goto fail;
            }
            int w = 0;
            if ((rc = kind_parse(e->valuestring, &arch->kind[i], &w))) {
                rc = orthros_error_prefix(ORTHROS_EFORMAT, "orthros.architecture");
                goto fail;
            }
            /* One window per model: the backends take one. */
            if (w && window && w != window) {
                rc = orthros_error(ORTHROS_EUNSUPPORTED,
                                   "orthros.architecture gives swa layers different windows (%d and %d); one window "
                                   "per model is supported",
                                   window, w);
                goto fail;
            }
            if (w) window = w;
            i++;
        }
        /* An explicit window option wins over the checkpoint's swa:W. */
        if (window && opts->window == ORTHROS_UNSET) arch->window = window;
        snprintf(arch->name, sizeof arch->name, "checkpoint");
    } else if (sched && !cJSON_IsNull(sched)) {
        rc = orthros_error(ORTHROS_EFORMAT, "orthros.architecture is neither a name nor a list");
    } else {
        rc = schedule_named(arch, "transformer", cfg->n_layers);
    }
fail:
    cJSON_Delete(oj);
    return rc;
}
