/* Fuzz target for adapters (docs/converted-models.md#adapters): an adapter directory over a fixed small base,
 * loaded on the cpu backend and run for a few tokens. The input is the adapter's config.json, the separator line
 * ORTHROS_FUZZ_SEP, then adapter.safetensors; an empty config.json part loads the base with --adapter FILE
 * instead (the file over a plain model). The base is a generated checkpoint written once per process beside
 * the adapter (WORK/base: 2 layers, hidden 8, 2 q / 1 kv heads of 4, FFN 8, vocab 16), so that the seeds' sha256
 * and relative path "../base" name it. Promises checked besides crashes and sanitizer reports (as model_dir's,
 * orthros_fuzz_check_load): a refusal is one line naming the file (other than ENOMEM / EINVAL), a refused load
 * returns no model, an accepted one runs, its tokens in the vocabulary. */
#define _GNU_SOURCE
#include "targets.h"

#include "adapter.h"
#include "orthros.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char work[4096];
static orthros_backend *cpu;

static const orthros_model_config base_cfg = {.d_model = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 1, .head_dim = 4,
                                              .ffn = 8, .vocab = 16, .max_pos = 64, .norm_eps = 1e-5f,
                                              .rope_theta = 10000.0};

/* The base checkpoint in dir (deterministic: the seeds hash the same bytes). */
static int write_base(const char *dir) { return tu_write_checkpoint(dir, &base_cfg, 42, ORTHROS_DTYPE_F32, 0); }

static void remove_work(void)
{
    static const char *const files[] = {"adapter/config.json", "adapter/adapter.safetensors", "base/config.json",
                                        "base/model.safetensors", "adapter", "base", ""};
    char path[4400];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", work, files[i]);
        remove(path);
    }
    orthros_backend_free(cpu);
    cpu = NULL;
}

static void put_file(const char *name, const uint8_t *data, size_t size) { orthros_fuzz_write_file(work, name, data, size); }

int orthros_fuzz_adapter(const uint8_t *data, size_t size)
{
    char path[4400];
    if (!work[0]) {
        const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(work, sizeof work, "%s/orthros-fuzz-adapter-XXXXXX", tmp);
        if (!mkdtemp(work)) orthros_fuzz_finding("cannot make a temporary directory", work);
        snprintf(path, sizeof path, "%s/base", work);
        mkdir(path, 0755);
        if (write_base(path)) orthros_fuzz_finding("cannot write the base", path);
        snprintf(path, sizeof path, "%s/adapter", work);
        mkdir(path, 0755);
        if (orthros_backend_cpu_create(&cpu)) orthros_fuzz_finding("cannot create the cpu backend", orthros_last_error());
        atexit(remove_work);
    }
    const size_t sl = sizeof ORTHROS_FUZZ_SEP - 1;
    const uint8_t *sep = memmem(data, size, ORTHROS_FUZZ_SEP, sl);
    size_t cl = sep ? (size_t)(sep - data) : size;
    const uint8_t *st = sep ? sep + sl : data + size;
    put_file("adapter/config.json", data, cl);
    put_file("adapter/adapter.safetensors", st, (size_t)(data + size - st));
    orthros_arch_opts opts;
    orthros_arch_opts_default(&opts);
    char spec[4400], file[4400];
    snprintf(file, sizeof file, "%s/adapter/adapter.safetensors", work);
    if (cl == 0) {
        /* --adapter FILE over the plain base (the empty config.json is not read). */
        snprintf(spec, sizeof spec, "%s/base", work);
        opts.adapter = file;
    } else {
        snprintf(spec, sizeof spec, "%s/adapter", work);
    }
    orthros_model *m = NULL;
    /* A refused file is named: the adapter's, or the base beside it (all under WORK). */
    int rc = orthros_model_load(&m, cpu, spec, &opts, 1);
    return orthros_fuzz_check_load(rc, m, work);
}

/* ---- seeds ---- */

/* A seed: config.json text (NULL: the --adapter FILE form), the separator, the safetensors of ts. */
static int add_seed(orthros_fuzz_corpus *c, const char *config, const tu_tensor *ts, int n, orthros_dtype dt,
                    const char *metadata)
{
    char *dir = tu_tempdir(), path[4400];
    if (!dir) return -1;
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    size_t len = 0;
    char *st = tu_write_tensors(path, ts, n, dt, metadata) ? NULL : tu_slurp(path, &len);
    unlink(path);
    rmdir(dir);
    free(dir);
    size_t cl = config ? strlen(config) : 0, sl = sizeof ORTHROS_FUZZ_SEP - 1;
    uint8_t *buf = st ? malloc(cl + sl + len) : NULL;
    int rc = -1;
    if (buf) {
        memcpy(buf, config ? config : "", cl);
        memcpy(buf + cl, ORTHROS_FUZZ_SEP, sl);
        memcpy(buf + cl + sl, st, len);
        rc = orthros_fuzz_corpus_add(c, buf, cl + sl + len);
    }
    free(buf);
    free(st);
    return rc;
}

int orthros_fuzz_seeds_adapter(orthros_fuzz_corpus *c, const char *root)
{
    /* The base's sha256, from the same bytes the target writes. */
    char *dir = tu_tempdir(), path[4400], hex[65] = "";
    if (!dir) return -1;
    int rc = write_base(dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!rc) rc = orthros_sha256_file(path, hex);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
    if (rc) return -1;
    /* Tensors: deltas on q (r 2), v (r 1), o and down (r 1), feature maps of 3 columns, a window gate. */
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[3];
    } spec[] = {
        {"model.layers.0.self_attn.q_proj.lora_A.weight", 2, {2, 8}},
        {"model.layers.0.self_attn.q_proj.lora_B.weight", 2, {8, 2}},
        {"model.layers.1.self_attn.v_proj.lora_A.weight", 2, {1, 8}},
        {"model.layers.1.self_attn.v_proj.lora_B.weight", 2, {4, 1}},
        {"model.layers.1.self_attn.o_proj.lora_A.weight", 2, {1, 8}},
        {"model.layers.1.self_attn.o_proj.lora_B.weight", 2, {8, 1}},
        {"model.layers.0.mlp.down_proj.lora_A.weight", 2, {1, 8}},
        {"model.layers.0.mlp.down_proj.lora_B.weight", 2, {8, 1}},
        {"model.layers.0.self_attn.feature_map_q.weight", 3, {2, 4, 3}},
        {"model.layers.0.self_attn.feature_map_k.weight", 3, {1, 4, 3}},
        {"model.layers.1.self_attn.feature_map_q.weight", 3, {2, 4, 3}},
        {"model.layers.1.self_attn.feature_map_k.weight", 3, {1, 4, 3}},
        {"model.layers.1.self_attn.window_gate", 1, {2}},
    };
    enum { N = sizeof spec / sizeof *spec };
    tu_tensor ts[N];
    memset(ts, 0, sizeof ts);
    for (int i = 0; i < N; i++) {
        snprintf(ts[i].name, sizeof ts[i].name, "%s", spec[i].name);
        ts[i].ndim = spec[i].ndim;
        memcpy(ts[i].shape, spec[i].shape, sizeof ts[i].shape);
        size_t n = tu_tensor_numel(&ts[i]);
        ts[i].data = malloc(n * sizeof(float));
        if (!ts[i].data) rc = -1;
        else tu_random(ts[i].data, n, 7 + (uint64_t)i, 0.5f);
        if (i == N - 1 && ts[i].data) ts[i].data[0] = 0.5f, ts[i].data[1] = 0.25f; /* gates > 0 */
    }
    char plain[512], sched[768];
    snprintf(plain, sizeof plain, "{\"orthros_base\": {\"path\": \"../base\", \"sha256\": \"%s\", \"fetch\": \"ci/fetch-model.sh\"}}",
             hex);
    snprintf(sched, sizeof sched,
             "{\"orthros_base\": {\"path\": \"../base\", \"sha256\": \"%s\"}, \"orthros\": {\"architecture\": [\"orthros\", "
             "\"linear\"], \"feature_map\": \"hedgehog\", \"feature_dim\": 3, \"tail\": 2}}",
             hex);
    const char *alpha = "{\"lora_alpha\": \"4\", \"format\": \"pt\"}";
    if (!rc) rc = add_seed(c, plain, ts, 8, ORTHROS_DTYPE_F32, alpha);        /* deltas */
    if (!rc) rc = add_seed(c, sched, ts, 12, ORTHROS_DTYPE_BF16, alpha);      /* deltas, feature maps, schedule */
    if (!rc) rc = add_seed(c, sched, ts + 8, 4, ORTHROS_DTYPE_F16, NULL);     /* feature maps alone */
    if (!rc) rc = add_seed(c, plain, ts + 12, 1, ORTHROS_DTYPE_F32, NULL);    /* a window gate: refused */
    if (!rc) rc = add_seed(c, NULL, ts, 8, ORTHROS_DTYPE_F32, alpha);         /* --adapter FILE */
    if (!rc) rc = add_seed(c, plain, ts, 1, ORTHROS_DTYPE_F32, alpha);        /* lora_A alone: refused */
    for (int i = 0; i < N; i++) free(ts[i].data);
    (void)root;
    return rc;
}
