/* Fuzz targets for the checkpoint loaders: a safetensors file parsed from memory, a whole model directory
 * loaded and run for a few tokens, and config.json text. Besides crashes and sanitizer reports, each target
 * checks what the loaders promise and aborts (a finding) when a promise is broken: an accepted tensor lies
 * inside the input, a refusal is one line, and a refused file is named in its message. */
#define _GNU_SOURCE
#include "targets.h"

#include "orthros.h"
#include "safetensors.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


int orthros_fuzz_st_file(const uint8_t *data, size_t size)
{
    orthros_st st = {0};
    int rc = orthros_st_open_memory(&st, "fuzz.safetensors", data, size);
    if (rc) {
        orthros_fuzz_check_refusal(rc, "fuzz.safetensors");
        return rc;
    }
    volatile uint8_t sink = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const orthros_st_tensor *t = &st.tensors[i];
        const uint8_t *p = t->data;
        if (p < data || p > data + size || t->nbytes > (size_t)(data + size - p))
            orthros_fuzz_finding("an accepted tensor outside the file", t->name);
        /* The ends are enough for ASan to see a tensor that leaves the buffer. */
        if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
        if (orthros_st_find(&st, t->name) != t) orthros_fuzz_finding("a tensor that lookup does not find", t->name);
        if (i && strcmp(st.tensors[i - 1].name, t->name) >= 0) orthros_fuzz_finding("tensor table not sorted and unique", t->name);
    }
    (void)sink;
    orthros_st_close(&st);
    return 0;
}

/* ---- model directories ---- */

static char model_dir[4096];
static orthros_backend *cpu_backend;

/* Removes every file of the model directory; -1 when it cannot be read. */
static int clear_model_dir(void)
{
    DIR *d = opendir(model_dir);
    if (!d) return -1;
    struct dirent *e;
    char path[4400];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", model_dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    return 0;
}

static void remove_model_dir(void)
{
    if (!clear_model_dir()) rmdir(model_dir);
    orthros_backend_free(cpu_backend);
    cpu_backend = NULL;
}

static void write_file(const char *name, const uint8_t *data, size_t size)
{
    orthros_fuzz_write_file(model_dir, name, data, size);
}

int orthros_fuzz_model_dir(const uint8_t *data, size_t size)
{
    if (!model_dir[0]) {
        /* A fresh directory per process, on tmpfs where there is one. */
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(model_dir, sizeof model_dir, "%s/orthros-fuzz-XXXXXX", base);
        if (!mkdtemp(model_dir)) orthros_fuzz_finding("cannot make a temporary directory", model_dir);
        if (orthros_backend_cpu_create(&cpu_backend)) orthros_fuzz_finding("cannot create the cpu backend", orthros_last_error());
        atexit(remove_model_dir);
    }
    if (clear_model_dir()) orthros_fuzz_finding("the model directory is gone", model_dir);
    /* Split at the separators: config.json, index, shards. */
    enum { MAX_PARTS = 10 };
    const uint8_t *part[MAX_PARTS];
    size_t len[MAX_PARTS];
    int n = 0;
    const size_t sl = sizeof ORTHROS_FUZZ_SEP - 1;
    const uint8_t *at = data, *end = data + size;
    while (n < MAX_PARTS - 1) {
        const uint8_t *s = memmem(at, (size_t)(end - at), ORTHROS_FUZZ_SEP, sl);
        if (!s) break;
        part[n] = at, len[n++] = (size_t)(s - at);
        at = s + sl;
    }
    part[n] = at, len[n++] = (size_t)(end - at);
    write_file("config.json", part[0], len[0]);
    int has_index = n > 1 && len[1] > 0;
    if (has_index) write_file("model.safetensors.index.json", part[1], len[1]);
    for (int i = 2; i < n; i++) {
        char name[64];
        if (has_index) snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", i - 1, n - 2);
        else snprintf(name, sizeof name, i == 2 ? "model.safetensors" : "extra-%d.safetensors", i - 2);
        write_file(name, part[i], len[i]);
    }

    orthros_arch_opts opts;
    orthros_arch_opts_default(&opts);
    orthros_model *m = NULL;
    int rc = orthros_model_load(&m, cpu_backend, model_dir, &opts, 1);
    return orthros_fuzz_check_load(rc, m, model_dir);
}

/* ---- config.json ---- */

int orthros_fuzz_config(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return ORTHROS_ENOMEM;
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    orthros_model_config cfg;
    char *oj = NULL;
    int rc = orthros_config_parse_text(&cfg, &oj, text, size);
    free(text);
    if (rc) {
        orthros_fuzz_check_refusal(rc, NULL);
        return rc;
    }
    float inv_freq[ORTHROS_MAX_HEAD_DIM / 2];
    orthros_rope_inv_freq(inv_freq, &cfg);
    static const char *const archs[] = {NULL, "transformer", "orthros", "linear", "swa", "hybrid"};
    orthros_arch *arch = malloc(sizeof *arch);
    for (int i = 0; arch && i < 6; i++) {
        orthros_arch_opts opts;
        orthros_arch_opts_default(&opts);
        opts.arch = archs[i];
        int r = orthros_arch_resolve(arch, &cfg, &opts, oj);
        if (r) {
            orthros_fuzz_check_refusal(r, NULL);
            if (!i) rc = r;
        } else if (orthros_arch_feature_size(arch, cfg.head_dim) < 1) {
            orthros_fuzz_finding("a schedule with no features", arch->name);
        }
    }
    free(arch);
    free(oj);
    return rc;
}

/* ---- seeds ---- */

/* Small checkpoints written by the test helpers: a config and the `orthros` object it carries. */
typedef struct {
    orthros_model_config cfg;
    orthros_dtype dtype;
    int hedgehog_half;
    const char *orthros_obj;
    int window_gates; /* TU_GATES_* */
} gen_model;

static gen_model gen_models[] = {
    {{.d_model = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 1, .head_dim = 4, .ffn = 8, .vocab = 16,
      .max_pos = 64, .norm_eps = 1e-5f, .rope_theta = 10000.0},
     ORTHROS_DTYPE_F32, 0, NULL, TU_GATES_NONE},
    {{.d_model = 8, .n_layers = 1, .n_heads = 2, .n_kv_heads = 2, .head_dim = 4, .ffn = 4, .vocab = 8,
      .max_pos = 64, .norm_eps = 1e-5f, .rope_theta = 500000.0, .tie_embeddings = 1},
     ORTHROS_DTYPE_BF16, 0, "{\"architecture\": \"orthros\", \"tail\": 2}", TU_GATES_NONE},
    {{.d_model = 4, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 2, .ffn = 4, .vocab = 8,
      .max_pos = 64, .norm_eps = 1e-6f, .rope_theta = 10000.0},
     ORTHROS_DTYPE_F32, 2,
     "{\"architecture\": [\"orthros\", \"linear\"], \"feature_map\": \"hedgehog\", \"feature_dim\": 2, \"eps\": 1e-5}",
     TU_GATES_NONE},
    {{.d_model = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 1, .head_dim = 4, .ffn = 8, .vocab = 16,
      .max_pos = 64, .norm_eps = 1e-5f, .rope_theta = 10000.0},
     ORTHROS_DTYPE_BF16, 0, "{\"architecture\": [\"swa:2\", \"full\"], \"hybrid_every\": 2, \"window\": 3}",
     TU_GATES_NONE},
    /* A converted model: hedgehog maps after RoPE, a local window and its gates. */
    {{.d_model = 4, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 2, .ffn = 4, .vocab = 8,
      .max_pos = 64, .norm_eps = 1e-6f, .rope_theta = 10000.0},
     ORTHROS_DTYPE_BF16, 2,
     "{\"architecture\": [\"orthros\", \"linear\"], \"feature_map\": \"hedgehog\", \"feature_dim\": 2, "
     "\"feature_map_rope\": \"after\", \"local_window\": 3}",
     TU_GATES_RANDOM},
};
#define N_GEN ((int)(sizeof gen_models / sizeof *gen_models))

/* Writes gen_models[i] under a temporary directory and reads back its config.json text and safetensors bytes. */
static int gen_read(int i, char **config, size_t *config_len, uint8_t **st, size_t *st_len)
{
    char *dir = tu_tempdir(), path[4400];
    if (!dir) return -1;
    int rc = tu_write_checkpoint_gated(dir, &gen_models[i].cfg, (uint64_t)i + 1, gen_models[i].dtype,
                                       gen_models[i].hedgehog_half, gen_models[i].window_gates);
    char *cfg_text = rc ? NULL : tu_config_json(&gen_models[i].cfg, gen_models[i].orthros_obj);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    *st = cfg_text ? (uint8_t *)tu_slurp(path, st_len) : NULL;
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
    if (!*st) {
        free(cfg_text);
        return -1;
    }
    *config = cfg_text;
    *config_len = strlen(cfg_text);
    return 0;
}

/* config + SEP + index + SEP + shards..., as orthros_fuzz_model_dir splits it. */
static int add_framed(orthros_fuzz_corpus *c, const char *config, const char *index, uint8_t *const *shards,
                      const size_t *shard_len, int n_shards)
{
    const size_t sl = sizeof ORTHROS_FUZZ_SEP - 1;
    size_t total = strlen(config) + sl + (index ? strlen(index) : 0);
    for (int i = 0; i < n_shards; i++) total += sl + shard_len[i];
    uint8_t *buf = malloc(total), *p = buf;
    if (!buf) return -1;
#define PUT(src, n)                                                                                                    \
    do {                                                                                                               \
        memcpy(p, src, n);                                                                                             \
        p += (n);                                                                                                      \
    } while (0)
    PUT(config, strlen(config));
    PUT(ORTHROS_FUZZ_SEP, sl);
    if (index) PUT(index, strlen(index));
    for (int i = 0; i < n_shards; i++) {
        PUT(ORTHROS_FUZZ_SEP, sl);
        PUT(shards[i], shard_len[i]);
    }
#undef PUT
    int rc = orthros_fuzz_corpus_add(c, buf, total);
    free(buf);
    return rc;
}

/* An index that puts every tensor of a single safetensors file into shard `file`. */
static char *index_for(const uint8_t *st, size_t st_len, const char *file)
{
    if (st_len < 8) return NULL;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | st[i];
    if (hlen > st_len - 8) return NULL;
    cJSON *h = cJSON_ParseWithLength((const char *)st + 8, (size_t)hlen), *idx = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(idx, "metadata"), *wm = cJSON_AddObjectToObject(idx, "weight_map");
    cJSON_AddNumberToObject(meta, "total_size", (double)(st_len - 8 - hlen));
    const cJSON *e;
    cJSON_ArrayForEach(e, h) if (strcmp(e->string, "__metadata__")) cJSON_AddStringToObject(wm, e->string, file);
    char *text = cJSON_Print(idx);
    cJSON_Delete(h);
    cJSON_Delete(idx);
    return text;
}

static const char *const fixtures[] = {"llama-tiny", "gqa4-bf16-d64", "llama3-rope", "mqa-d128-tied", "sharded-f16"};

int orthros_fuzz_seeds_st_file(orthros_fuzz_corpus *c, const char *root)
{
    for (int i = 0; i < N_GEN; i++) {
        char *cfg;
        uint8_t *st;
        size_t cl, sl;
        if (gen_read(i, &cfg, &cl, &st, &sl)) return -1;
        int rc = orthros_fuzz_corpus_add(c, st, sl);
        free(cfg);
        free(st);
        if (rc) return -1;
    }
    char path[4400];
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        snprintf(path, sizeof path, "%s/data/fixtures/%s/model.safetensors", root, fixtures[f]);
        if (orthros_fuzz_corpus_add_file(c, path)) return -1;
        for (int k = 1; k <= 3; k++) {
            snprintf(path, sizeof path, "%s/data/fixtures/%s/model-%05d-of-00003.safetensors", root, fixtures[f], k);
            if (orthros_fuzz_corpus_add_file(c, path)) return -1;
        }
    }
    return 0;
}

int orthros_fuzz_seeds_model_dir(orthros_fuzz_corpus *c, const char *root)
{
    for (int i = 0; i < N_GEN; i++) {
        char *cfg, *idx = NULL;
        uint8_t *st;
        size_t cl, sl;
        if (gen_read(i, &cfg, &cl, &st, &sl)) return -1;
        int rc = add_framed(c, cfg, NULL, &st, &sl, 1);
        /* The same checkpoint as a one-shard index. */
        if (!rc) rc = !(idx = index_for(st, sl, "model-00001-of-00001.safetensors")) ||
                      add_framed(c, cfg, idx, &st, &sl, 1);
        free(idx);
        free(cfg);
        free(st);
        if (rc) return -1;
    }
    /* The fixtures (up to 1.7 MB each: few, but with real transformers-written files). */
    char path[4400];
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        orthros_fuzz_corpus files = {0};
        snprintf(path, sizeof path, "%s/data/fixtures/%s/config.json", root, fixtures[f]);
        int rc = orthros_fuzz_corpus_add_file(&files, path);
        snprintf(path, sizeof path, "%s/data/fixtures/%s/model.safetensors.index.json", root, fixtures[f]);
        if (!rc) rc = orthros_fuzz_corpus_add_file(&files, path);
        int has_index = files.n == 2;
        snprintf(path, sizeof path, "%s/data/fixtures/%s/model.safetensors", root, fixtures[f]);
        if (!rc) rc = orthros_fuzz_corpus_add_file(&files, path);
        for (int k = 1; !rc && k <= 3; k++) {
            snprintf(path, sizeof path, "%s/data/fixtures/%s/model-%05d-of-00003.safetensors", root, fixtures[f], k);
            rc = orthros_fuzz_corpus_add_file(&files, path);
        }
        if (!rc && files.n >= 2) {
            char *cfg = strndup((const char *)files.data[0], files.size[0]);
            char *idx = has_index ? strndup((const char *)files.data[1], files.size[1]) : NULL;
            rc = !cfg || add_framed(c, cfg, idx, files.data + 1 + has_index, files.size + 1 + has_index,
                                    files.n - 1 - has_index);
            free(cfg);
            free(idx);
        }
        orthros_fuzz_corpus_free(&files);
        if (rc) return -1;
    }
    return 0;
}

int orthros_fuzz_seeds_config(orthros_fuzz_corpus *c, const char *root)
{
    for (int i = 0; i < N_GEN; i++) {
        char *text = tu_config_json(&gen_models[i].cfg, gen_models[i].orthros_obj);
        int rc = !text || orthros_fuzz_corpus_add(c, text, strlen(text));
        free(text);
        if (rc) return -1;
    }
    /* Fields the generated configs do not write. */
    static const char *const extra[] = {
        "{\"model_type\": \"llama\", \"hidden_act\": \"silu\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"intermediate_size\": 160, \"vocab_size\": 256, \"attention_bias\": false, "
        "\"mlp_bias\": false, \"rope_theta\": 500000.0, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 32.0, "
        "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}, "
        "\"eos_token_id\": [128001, 128008, 128009], \"tie_word_embeddings\": true}",
        "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": null, "
        "\"intermediate_size\": 160, \"vocab_size\": 256, \"rope_parameters\": {\"rope_type\": \"default\", "
        "\"rope_theta\": 10000.0}, \"eos_token_id\": 2, \"orthros\": {\"architecture\": \"hybrid\", \"hybrid_every\": 2, "
        "\"feature_map\": \"relu\", \"feature_dim\": 8, \"tail\": 4, \"window\": 16, \"eps\": 1e-6, "
        "\"feature_map_rope\": \"before\", \"local_window\": 64}}",
    };
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        if (orthros_fuzz_corpus_add(c, extra[i], strlen(extra[i]))) return -1;
    char path[4400];
    for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
        snprintf(path, sizeof path, "%s/data/fixtures/%s/config.json", root, fixtures[f]);
        if (orthros_fuzz_corpus_add_file(c, path)) return -1;
    }
    return 0;
}
