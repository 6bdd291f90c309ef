/* Adapters over a base checkpoint (adapter.h; docs/converted-models.md#adapters). The adapter's safetensors goes
 * through the strict reader every checkpoint uses (orthros_st_open_file), its config.json and the safetensors
 * header's __metadata__ through the strict JSON reader (engine/json.h). */
#define _GNU_SOURCE
#include "adapter.h"

#include "json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define CONFIG_MAX_BYTES (1u << 20)
#define PATH_CAP 4096

/* The weights a delta may go to, in the order of a layer's table. */
static const char *const projections[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                          "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
#define N_PROJ 7

typedef struct {
    const orthros_st_tensor *A, *B; /* lora_A [r][in], lora_B [out][r] */
    int merged;
} delta;

struct orthros_adapter {
    char *file;          /* the adapter's safetensors, for messages */
    char *config;        /* DIR/config.json of an adapter directory; NULL for --adapter */
    char *base;          /* the spec the weights come from */
    char *orthros_json;  /* the adapter config's `orthros` object, or NULL */
    orthros_st st;
    double alpha;
    int has_alpha;
    int n_layers;        /* of the table below, set by orthros_adapter_check */
    delta *deltas;       /* [n_layers][N_PROJ] */
};

/* A name from a file, for a message: at most 160 bytes, control characters as '?' (a message is one line). */
static const char *clean(char *buf, size_t cap, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap && i < 160; i++) buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = '\0';
    return buf;
}

/* "FILE: tensor NAME: what", one line. */
static int tensor_error(const orthros_adapter *a, const char *tensor, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int tensor_error(const orthros_adapter *a, const char *tensor, int code, const char *fmt, ...)
{
    char msg[512], name[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return orthros_error(code, "%s: tensor %s: %s", a->file, clean(name, sizeof name, tensor), msg);
}

void orthros_adapter_free(orthros_adapter *a)
{
    if (!a) return;
    orthros_st_close(&a->st);
    free(a->file);
    free(a->config);
    free(a->base);
    free(a->orthros_json);
    free(a->deltas);
    free(a);
}

const char *orthros_adapter_base(const orthros_adapter *a) { return a->base; }
const orthros_st *orthros_adapter_st(const orthros_adapter *a) { return &a->st; }

/* ---- the adapter directory's config.json ---- */

/* A string field: text without control characters, 1 to max_len bytes. NULL when absent and not required. */
static int text_field(const char **out, const cJSON *obj, const char *key, size_t max_len, int required,
                      const char *where)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!it) {
        if (required) return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base.%s is missing", where, key);
        return 0;
    }
    if (!cJSON_IsString(it)) return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base.%s is not a string", where, key);
    size_t n = strlen(it->valuestring);
    if (n == 0 || n > max_len)
        return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base.%s must be 1 to %zu bytes long", where, key, max_len);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)it->valuestring[i] < 0x20 || it->valuestring[i] == 0x7f)
            return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base.%s holds a control character", where, key);
    *out = it->valuestring;
    return 0;
}

/* The parsed config of an adapter directory, or *root = NULL when dir is not one (no config.json, one that does
 * not parse, or one without an orthros_base key: the model loader then reads and reports it as usual). */
static void adapter_config_probe(cJSON **root, const char *dir, char *path, size_t cap)
{
    *root = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || strlen(dir) + sizeof "/config.json" > cap) return;
    snprintf(path, cap, "%s/config.json", dir);
    char *text = NULL;
    if (stat(path, &sb) != 0 || orthros_read_text_file(&text, path, CONFIG_MAX_BYTES)) return;
    cJSON *r = NULL;
    if (!orthros_json_parse(&r, text, strlen(text)) && cJSON_IsObject(r) &&
        cJSON_GetObjectItemCaseSensitive(r, "orthros_base"))
        *root = r;
    else
        cJSON_Delete(r);
    free(text);
}

typedef struct {
    const char *path, *sha256, *fetch;
    const cJSON *orthros;
} adapter_config;

/* Checks the config's schema: {"orthros_base": {"path", "sha256", "fetch"?}, "orthros"?}, nothing else. */
static int adapter_config_read(adapter_config *c, const cJSON *root, const char *where)
{
    memset(c, 0, sizeof *c);
    const cJSON *e;
    cJSON_ArrayForEach(e, root) if (strcmp(e->string, "orthros_base") && strcmp(e->string, "orthros"))
    {
        char k[192];
        return orthros_error(ORTHROS_EFORMAT,
                             "%s: field \"%s\" is not part of an adapter's config (orthros_base, orthros): the Llama "
                             "fields come from the base",
                             where, clean(k, sizeof k, e->string));
    }
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "orthros_base");
    if (!cJSON_IsObject(b)) return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base is not an object", where);
    cJSON_ArrayForEach(e, b) if (strcmp(e->string, "path") && strcmp(e->string, "sha256") && strcmp(e->string, "fetch"))
    {
        char k[192];
        return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base.%s is not a field of orthros_base (path, sha256, fetch)",
                             where, clean(k, sizeof k, e->string));
    }
    int rc;
    if ((rc = text_field(&c->path, b, "path", 2048, 1, where)) || (rc = text_field(&c->sha256, b, "sha256", 64, 1, where)) ||
        (rc = text_field(&c->fetch, b, "fetch", 256, 0, where)))
        return rc;
    int hex = strlen(c->sha256) == 64;
    for (int i = 0; hex && i < 64; i++) hex = strchr("0123456789abcdefABCDEF", c->sha256[i]) != NULL;
    if (!hex) return orthros_error(ORTHROS_EFORMAT, "%s: orthros_base.sha256 is not 64 hexadecimal digits", where);
    c->orthros = cJSON_GetObjectItemCaseSensitive(root, "orthros");
    if (c->orthros && !cJSON_IsObject(c->orthros) && !cJSON_IsNull(c->orthros))
        return orthros_error(ORTHROS_EFORMAT, "%s: orthros is not an object", where);
    return 0;
}

/* The base's path: c->path relative to the adapter directory, then to .cache/models/ (an absolute path as is). A
 * base that is itself an adapter directory is refused (no chains, and no loop through "path": "."). */
static int base_resolve(char **out, const adapter_config *c, const char *dir, const char *where)
{
    char cand[2][PATH_CAP];
    int n = 0;
    int over = 0;
    if (c->path[0] == '/') {
        over |= snprintf(cand[n++], PATH_CAP, "%s", c->path) >= PATH_CAP;
    } else {
        over |= snprintf(cand[n++], PATH_CAP, "%s/%s", dir, c->path) >= PATH_CAP;
        over |= snprintf(cand[n++], PATH_CAP, ".cache/models/%s", c->path) >= PATH_CAP;
    }
    if (over) return orthros_error(ORTHROS_EINVAL, "%s: the base's path is too long", where);
    struct stat sb;
    for (int i = 0; i < n; i++)
        if (stat(cand[i], &sb) == 0) {
            if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
                return orthros_error(ORTHROS_EFORMAT, "%s: base %s is neither a GGUF file nor a model directory", where,
                                     cand[i]);
            char probe_path[PATH_CAP + 64];
            cJSON *inner = NULL;
            adapter_config_probe(&inner, cand[i], probe_path, sizeof probe_path);
            if (inner) {
                cJSON_Delete(inner);
                return orthros_error(ORTHROS_EUNSUPPORTED, "%s: base %s is itself an adapter directory (not supported)",
                                     where, cand[i]);
            }
            if (!(*out = strdup(cand[i]))) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
            return 0;
        }
    if (c->fetch)
        return orthros_error(ORTHROS_EIO, "%s: base model %s not found (looked for %s%s%s); fetch it with %s", where,
                             c->path, cand[0], n > 1 ? " and " : "", n > 1 ? cand[1] : "", c->fetch);
    return orthros_error(ORTHROS_EIO,
                         "%s: base model %s not found (looked for %s%s%s); orthros_base has no fetch hint: put the base "
                         "there",
                         where, c->path, cand[0], n > 1 ? " and " : "", n > 1 ? cand[1] : "");
}

/* The base's sha256 against the config's: of the GGUF file, or of the directory's model.safetensors (else its
 * index), the file the loader reads first. */
static int base_verify(const char *base, const adapter_config *c, const char *where)
{
    struct stat sb;
    char path[PATH_CAP + 64], hex[65];
    const char *hashed = base;
    if (stat(base, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(path, sizeof path, "%s/model.safetensors", base);
        if (stat(path, &sb) != 0) snprintf(path, sizeof path, "%s/model.safetensors.index.json", base);
        if (stat(path, &sb) != 0)
            return orthros_error(ORTHROS_EIO, "%s: base %s has no model.safetensors or model.safetensors.index.json",
                                 where, base);
        hashed = path;
    }
    int rc = orthros_sha256_file(hashed, hex);
    if (rc) return orthros_error_prefix(rc, where);
    if (strcasecmp(hex, c->sha256))
        return orthros_error(ORTHROS_EFORMAT, "%s: base %s has sha256 %s, orthros_base.sha256 says %s", where, hashed, hex,
                             c->sha256);
    return 0;
}

int orthros_adapter_dir_base(const char *dir, char **base)
{
    char path[PATH_CAP + 64];
    cJSON *root = NULL;
    adapter_config c;
    *base = NULL;
    adapter_config_probe(&root, dir, path, sizeof path);
    if (!root) return 0;
    int rc = adapter_config_read(&c, root, path);
    if (!rc) rc = base_resolve(base, &c, dir, path);
    cJSON_Delete(root);
    return rc;
}

/* ---- the safetensors and its metadata ---- */

/* A decimal number written as text: digits, sign, point and exponent only (no hex, inf or nan), finite. */
static int parse_decimal(const char *s, double *out)
{
    if (!*s || strspn(s, "0123456789+-.eE") != strlen(s)) return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (!end || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* lora_alpha from the header's __metadata__ (a map of strings, as safetensors defines it). */
static int read_metadata(orthros_adapter *a)
{
    const orthros_st_file *f = &a->st.files[0];
    const unsigned char *p = f->map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | p[i];
    cJSON *hdr = NULL;
    int rc = orthros_json_parse(&hdr, (const char *)p + 8, (size_t)hlen); /* already checked by the reader */
    if (rc) return orthros_error_prefix(rc, a->file);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(hdr, "__metadata__");
    if (meta && !cJSON_IsObject(meta)) {
        rc = orthros_error(ORTHROS_EFORMAT, "%s: __metadata__ is not an object", a->file);
        goto done;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, meta) if (!cJSON_IsString(e))
    {
        char k[192];
        rc = orthros_error(ORTHROS_EFORMAT, "%s: __metadata__.%s is not a string (safetensors metadata is text)", a->file,
                           clean(k, sizeof k, e->string));
        goto done;
    }
    const cJSON *al = meta ? cJSON_GetObjectItemCaseSensitive(meta, "lora_alpha") : NULL;
    if (al) {
        if (parse_decimal(al->valuestring, &a->alpha)) {
            char v[192];
            rc = orthros_error(ORTHROS_EFORMAT, "%s: __metadata__.lora_alpha \"%s\" is not a finite decimal number",
                               a->file, clean(v, sizeof v, al->valuestring));
            goto done;
        }
        a->has_alpha = 1;
    }
done:
    cJSON_Delete(hdr);
    return rc;
}

int orthros_adapter_open(orthros_adapter **out, const char *spec, const char *file)
{
    char cfg_path[PATH_CAP + 64], st_path[PATH_CAP + 64];
    cJSON *root = NULL;
    int rc = 0;
    *out = NULL;
    if (strncmp(spec, "preset:", 7)) adapter_config_probe(&root, spec, cfg_path, sizeof cfg_path);
    if (!root && !file) return 0;
    orthros_adapter *a = calloc(1, sizeof *a);
    if (!a) {
        cJSON_Delete(root);
        return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    }
    if (root && file) {
        rc = orthros_error(ORTHROS_EINVAL,
                           "%s is an adapter directory already: --adapter applies to a plain model (one adapter at a "
                           "time)",
                           spec);
        goto fail;
    }
    if (root) {
        adapter_config c;
        if (!(a->config = strdup(cfg_path))) goto oom;
        if ((rc = adapter_config_read(&c, root, cfg_path)) || (rc = base_resolve(&a->base, &c, spec, cfg_path)) ||
            (rc = base_verify(a->base, &c, cfg_path)))
            goto fail;
        if (c.orthros && cJSON_IsObject(c.orthros) && !(a->orthros_json = cJSON_PrintUnformatted(c.orthros))) goto oom;
        snprintf(st_path, sizeof st_path, "%s/adapter.safetensors", spec);
        struct stat sb;
        if (stat(st_path, &sb) != 0) {
            rc = orthros_error(ORTHROS_EIO, "%s: the adapter directory has no adapter.safetensors", spec);
            goto fail;
        }
        file = st_path;
    } else if (!(a->base = strdup(spec))) {
        goto oom;
    }
    if (!(a->file = strdup(file))) goto oom;
    if ((rc = orthros_st_open_file(&a->st, file)) || (rc = read_metadata(a))) goto fail;
    cJSON_Delete(root);
    *out = a;
    return 0;
oom:
    rc = orthros_error(ORTHROS_ENOMEM, "out of host memory");
fail:
    cJSON_Delete(root);
    orthros_adapter_free(a);
    return rc;
}

int orthros_adapter_schedule(const orthros_adapter *a, const orthros_model_config *cfg, char **orthros_json)
{
    if (!a->orthros_json) return 0;
    orthros_arch *scratch = malloc(sizeof *scratch);
    orthros_arch_opts none;
    orthros_arch_opts_default(&none);
    int rc = scratch ? orthros_arch_resolve(scratch, cfg, &none, a->orthros_json)
                     : orthros_error(ORTHROS_ENOMEM, "out of host memory");
    free(scratch);
    if (rc) return orthros_error_prefix(rc, a->config);
    char *copy = strdup(a->orthros_json);
    if (!copy) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    free(*orthros_json);
    *orthros_json = copy;
    return 0;
}

/* ---- the tensors ---- */

enum { T_FMAP_Q, T_FMAP_K, T_GATE, T_LORA_A, T_LORA_B };

/* "model.layers.{i}.REST": the layer and REST; -2 when i is not written as the model writes it (leading zeros:
 * "01" would be a second name of layer 1), -1 when the name does not start so. */
static int layer_of(const char *name, int *layer, const char **rest)
{
    static const char prefix[] = "model.layers.";
    if (strncmp(name, prefix, sizeof prefix - 1)) return -1;
    const char *p = name + sizeof prefix - 1;
    size_t nd = strspn(p, "0123456789");
    if (nd == 0 || p[nd] != '.') return -1;
    if ((nd > 1 && p[0] == '0') || nd > 6) return -2;
    *layer = atoi(p);
    *rest = p + nd + 1;
    return 0;
}

/* Classifies an adapter tensor name: its kind, layer and (deltas) projection; ORTHROS_EFORMAT naming it when it is
 * none of the adapter's tensors. */
static int classify(const orthros_adapter *a, const char *name, int *kind, int *layer, int *proj)
{
    const char *rest = NULL;
    int lr = layer_of(name, layer, &rest);
    if (lr == -2)
        return tensor_error(a, name, ORTHROS_EFORMAT,
                            "its layer index has leading zeros (a second name for a tensor, so a duplicate could hide)");
    if (lr == 0) {
        static const struct {
            const char *rest;
            int kind;
        } fixed[] = {{"self_attn.feature_map_q.weight", T_FMAP_Q},
                     {"self_attn.feature_map_k.weight", T_FMAP_K},
                     {"self_attn.window_gate", T_GATE}};
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
            if (!strcmp(rest, fixed[i].rest)) {
                *kind = fixed[i].kind;
                return 0;
            }
    }
    size_t n = strlen(name);
    static const char sa[] = ".lora_A.weight", sb[] = ".lora_B.weight";
    int is_a = n > sizeof sa - 1 && !strcmp(name + n - (sizeof sa - 1), sa);
    int is_b = n > sizeof sb - 1 && !strcmp(name + n - (sizeof sb - 1), sb);
    if (!is_a && !is_b)
        return tensor_error(a, name, ORTHROS_EFORMAT,
                            "not an adapter tensor (model.layers.{i}.self_attn.feature_map_q/k.weight, "
                            ".self_attn.window_gate, or .{self_attn.q/k/v/o,mlp.gate/up/down}_proj.lora_A/B.weight)");
    *kind = is_a ? T_LORA_A : T_LORA_B;
    size_t stem = n - (sizeof sa - 1);
    for (int p = 0; lr == 0 && p < N_PROJ; p++)
        if (strlen(projections[p]) == stem - (size_t)(rest - name) && !strncmp(rest, projections[p], strlen(projections[p]))) {
            *proj = p;
            return 0;
        }
    char weight[256];
    snprintf(weight, sizeof weight, "%.*s.weight", (int)(stem > 200 ? 200 : stem), name);
    char w[192];
    return tensor_error(a, name, ORTHROS_EFORMAT,
                        "a delta for %s, which the model does not have (deltas go to q/k/v/o/gate/up/down of a layer)",
                        clean(w, sizeof w, weight));
}

static size_t numel(const orthros_st_tensor *t) { return t->nbytes / orthros_dtype_size(t->dtype); }

/* A whole tensor as fp32 (malloc'd), or NULL. */
static float *to_f32(const orthros_st_tensor *t)
{
    size_t n = numel(t);
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (x) orthros_st_tensor_f32(t, x);
    return x;
}

/* Every value finite (and > 0 for a gate). */
static int check_values(const orthros_adapter *a, const orthros_st_tensor *t, int positive)
{
    float *x = to_f32(t);
    if (!x) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    int rc = 0;
    for (size_t k = 0, n = numel(t); !rc && k < n; k++) {
        if (!isfinite(x[k])) rc = tensor_error(a, t->name, ORTHROS_EFORMAT, "element %zu is %g, not finite", k, x[k]);
        else if (positive && !(x[k] > 0.0f))
            rc = tensor_error(a, t->name, ORTHROS_EFORMAT, "element %zu is %g; a gate must be > 0", k, x[k]);
    }
    free(x);
    return rc;
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    buf[0] = '\0';
    for (int i = 0; i < ndim; i++) snprintf(buf + strlen(buf), cap - strlen(buf), "%s%lld", i ? ", " : "", (long long)shape[i]);
}

static int expect_shape(const orthros_adapter *a, const orthros_st_tensor *t, int ndim, const int64_t *want,
                        const char *what)
{
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == want[i];
    if (same) return 0;
    char got[160], exp[160];
    shape_str(got, sizeof got, t->ndim, t->shape);
    shape_str(exp, sizeof exp, ndim, want);
    return tensor_error(a, t->name, ORTHROS_EFORMAT, "has shape [%s], the model implies [%s] (%s)", got, exp, what);
}

/* A delta's weight shape [out, in]. */
static void proj_shape(const orthros_model_config *c, int p, int64_t *out, int64_t *in)
{
    int64_t D = c->d_model, q = (int64_t)c->n_heads * c->head_dim, kv = (int64_t)c->n_kv_heads * c->head_dim, F = c->ffn;
    const int64_t shapes[N_PROJ][2] = {{q, D}, {kv, D}, {kv, D}, {D, q}, {F, D}, {F, D}, {D, F}};
    *out = shapes[p][0];
    *in = shapes[p][1];
}

int orthros_adapter_check(orthros_adapter *a, const orthros_model_config *cfg, const orthros_arch *arch)
{
    free(a->deltas);
    a->n_layers = cfg->n_layers;
    if (!(a->deltas = calloc((size_t)cfg->n_layers * N_PROJ, sizeof *a->deltas)))
        return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    int64_t Hq = cfg->n_heads, Hkv = cfg->n_kv_heads, d = cfg->head_dim;
    int hedgehog = arch->fmap == ORTHROS_FMAP_HEDGEHOG, n_deltas = 0;
    for (int i = 0; i < a->st.n_tensors; i++) {
        const orthros_st_tensor *t = &a->st.tensors[i];
        int kind = 0, layer = 0, proj = 0, rc;
        if ((rc = classify(a, t->name, &kind, &layer, &proj))) return rc;
        if (layer >= cfg->n_layers)
            return tensor_error(a, t->name, ORTHROS_EFORMAT, "the model has no layer %d (it has %d layers)", layer,
                                cfg->n_layers);
        if ((rc = check_values(a, t, kind == T_GATE))) return rc;
        if (kind == T_FMAP_Q || kind == T_FMAP_K) {
            /* The schedule's feature dim when it runs hedgehog; else (maps carried, not used) any in [1, 1024]. */
            int64_t half = hedgehog ? arch->feature_dim : t->ndim == 3 ? t->shape[2] : 0;
            if (!hedgehog && (half < 1 || half > 1024)) half = 1;
            int64_t want[3] = {kind == T_FMAP_Q ? Hq : Hkv, d, half};
            if ((rc = expect_shape(a, t, 3, want, kind == T_FMAP_Q ? "[Hq, head_dim, feature_dim]"
                                                                    : "[Hkv, head_dim, feature_dim]")))
                return rc;
        } else if (kind == T_GATE) {
            if ((rc = expect_shape(a, t, 1, &Hq, "[Hq]"))) return rc;
        } else {
            delta *dl = &a->deltas[layer * N_PROJ + proj];
            if (kind == T_LORA_A) dl->A = t;
            else dl->B = t;
        }
    }
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < N_PROJ; p++) {
            const delta *dl = &a->deltas[l * N_PROJ + p];
            if (!dl->A && !dl->B) continue;
            char other[160];
            snprintf(other, sizeof other, "model.layers.%d.%s.lora_%c.weight", l, projections[p], dl->A ? 'B' : 'A');
            if (!dl->A || !dl->B)
                return tensor_error(a, (dl->A ? dl->A : dl->B)->name, ORTHROS_EFORMAT, "has no %s to pair with", other);
            int64_t out, in;
            proj_shape(cfg, p, &out, &in);
            if (dl->A->ndim != 2 || dl->B->ndim != 2)
                return tensor_error(a, (dl->A->ndim != 2 ? dl->A : dl->B)->name, ORTHROS_EFORMAT,
                                    "is not a matrix (lora_A is [r, in], lora_B [out, r])");
            int64_t r = dl->A->shape[0];
            if (r == 0) return tensor_error(a, dl->A->name, ORTHROS_EFORMAT, "has rank r = 0 (no rows)");
            int64_t want_a[2] = {r, in}, want_b[2] = {out, r};
            int rc;
            if ((rc = expect_shape(a, dl->A, 2, want_a, "[r, in]")) || (rc = expect_shape(a, dl->B, 2, want_b, "[out, r]")))
                return rc;
            if (r > (in < out ? in : out))
                return tensor_error(a, dl->A->name, ORTHROS_EFORMAT, "has rank r = %lld, larger than the weight's "
                                    "dimensions [%lld, %lld] allow", (long long)r, (long long)out, (long long)in);
            n_deltas++;
        }
    if (n_deltas && !a->has_alpha)
        return orthros_error(ORTHROS_EFORMAT, "%s: __metadata__ has no lora_alpha, which its %d low-rank delta%s need%s",
                             a->file, n_deltas, n_deltas == 1 ? "" : "s", n_deltas == 1 ? "s" : "");
    return 0;
}

const orthros_st_tensor *orthros_adapter_tensor(const orthros_adapter *a, const char *name)
{
    return a && (strstr(name, ".feature_map_") || strstr(name, ".window_gate")) ? orthros_st_find(&a->st, name) : NULL;
}

/* The delta of weight `name`, or NULL. */
static delta *find_delta(const orthros_adapter *a, const char *name)
{
    int layer;
    const char *rest;
    if (!a || !a->deltas || layer_of(name, &layer, &rest) || layer >= a->n_layers) return NULL;
    for (int p = 0; p < N_PROJ; p++) {
        size_t lp = strlen(projections[p]);
        if (!strncmp(rest, projections[p], lp) && !strcmp(rest + lp, ".weight")) {
            delta *d = &a->deltas[layer * N_PROJ + p];
            return d->A ? d : NULL;
        }
    }
    return NULL;
}

int orthros_adapter_has_delta(const orthros_adapter *a, const char *name) { return find_delta(a, name) != NULL; }

int orthros_adapter_merge(orthros_adapter *a, const char *name, float *w, int64_t rows, int64_t cols)
{
    delta *d = find_delta(a, name);
    if (!d) return 0;
    int64_t r = d->A->shape[0], in = d->A->shape[1], out = d->B->shape[0];
    if (rows != out || cols != in)
        return tensor_error(a, d->A->name, ORTHROS_EFORMAT, "the weight is [%lld, %lld], the delta [%lld, %lld]",
                            (long long)rows, (long long)cols, (long long)out, (long long)in);
    int threads = omp_get_max_threads();
    float *fa = to_f32(d->A), *fb = to_f32(d->B);
    double *acc = malloc(sizeof *acc * (size_t)in * (size_t)threads);
    int rc = 0;
    if (!fa || !fb || !acc) rc = orthros_error(ORTHROS_ENOMEM, "out of host memory merging %s", name);
    double scale = a->alpha / (double)r;
    int64_t bad = -1;
#pragma omp parallel for schedule(static) num_threads(threads) if (out * in * r > (1 << 16))
    for (int64_t o = 0; o < out; o++) {
        if (rc) continue;
        double *s = acc + (size_t)omp_get_thread_num() * (size_t)in;
        for (int64_t i = 0; i < in; i++) s[i] = 0.0;
        for (int64_t k = 0; k < r; k++) {
            double b = fb[o * r + k];
            const float *ak = fa + k * in;
            for (int64_t i = 0; i < in; i++) s[i] += b * ak[i];
        }
        float *wo = w + o * in;
        for (int64_t i = 0; i < in; i++) {
            float v = (float)((double)wo[i] + scale * s[i]);
            if (!isfinite(v)) {
#pragma omp critical
                if (bad < 0 || o * in + i < bad) bad = o * in + i;
            }
            wo[i] = v;
        }
    }
    if (!rc && bad >= 0)
        rc = tensor_error(a, d->A->name, ORTHROS_EFORMAT, "merging it (lora_alpha %g) makes %s[%lld][%lld] non-finite",
                          a->alpha, name, (long long)(bad / in), (long long)(bad % in));
    if (!rc) d->merged = 1;
    free(fa);
    free(fb);
    free(acc);
    return rc;
}

int orthros_adapter_all_merged(const orthros_adapter *a)
{
    for (int i = 0; a && a->deltas && i < a->n_layers * N_PROJ; i++)
        if (a->deltas[i].A && !a->deltas[i].merged)
            return tensor_error(a, a->deltas[i].A->name, ORTHROS_EFORMAT, "no weight of the model took this delta");
    return 0;
}
