/* Adapters (docs/converted-models.md#adapters) on the cpu backend:
 *   - SHA-256 against the FIPS 180-4 vectors (and the SmolLM2 GGUF's published hash when it is present);
 *   - merging: an adapter directory, and --adapter FILE over the base, give bit for bit the logits of a checkpoint
 *     whose weights this test merged itself (W + alpha / r * B A, in double, rounded once), for deltas stored as F32,
 *     BF16 and F16, on every projection, under the transformer and orthros schedules; over a GGUF base, over a preset
 *     (merged into its dummy weights, as generated), and over a BF16 base;
 *   - feature maps from the adapter replace the checkpoint's (and give a GGUF base some), with the adapter's
 *     `orthros` object as the schedule;
 *   - --tp 2 shards what was merged: logits within 1e-5 (relative) of --tp 1;
 *   - the base found through .cache/models/ of the current directory; an adapter directory's tokenizer is its base's;
 *   - every refusal, through the CLI (one stderr line naming the file and the tensor or field, exit status 1) and
 *     the library (an error, no model): wrong shapes, a missing base (with the fetch hint), a sha256 that differs,
 *     deltas for tensors the model does not have, lora_A without lora_B, non-finite values, r of 0 or larger than
 *     the weight, duplicates, lora_alpha missing or malformed, window gates (validated, then refused: this build
 *     has no window term), config.json fields outside the schema, chains of adapters, a merge that overflows.
 * With --cuda (ctest adapters_cuda, label gpu; exit 77 without a GPU): the same adapters on the cuda backend, where
 * the merge must happen in fp32 before the conversion to bf16: an adapter's logits equal bit for bit those of the
 * checkpoint this test merged in fp32 (both converted at upload), and stay within the cuda-vs-cpu tolerance of
 * test_cuda_model (90% argmax, 5% of the logit range) of the cpu's.
 * usage: test_adapter [--cuda] PATH/TO/orthros REPO_ROOT */
#define _GNU_SOURCE
#include "adapter.h"
#include "orthros.h"
#include "testutil.h"

#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *bin, *repo;
static char *root;
static orthros_backend *cpu, *gpu;
static char tiny[4096], gguf[4096];

#define NTOK 24

static const char *const projs[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

/* ---- tensor sets ---- */

typedef struct {
    tu_tensor t[96];
    int n;
} tset;

static tu_tensor *ts_add(tset *s, const char *name, int ndim, int64_t a, int64_t b, int64_t c, uint64_t seed, float scale)
{
    tu_tensor *t = &s->t[s->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%.127s", name);
    t->ndim = ndim;
    t->shape[0] = a, t->shape[1] = b, t->shape[2] = c;
    size_t n = tu_tensor_numel(t);
    t->data = malloc((n ? n : 1) * sizeof(float));
    tu_random(t->data, n, seed, scale);
    return t;
}

/* A new 2-D shape, its data refilled. */
static void ts_reshape(tu_tensor *t, int64_t a, int64_t b)
{
    t->shape[0] = a, t->shape[1] = b;
    free(t->data);
    size_t n = tu_tensor_numel(t);
    t->data = malloc((n ? n : 1) * sizeof(float));
    tu_random(t->data, n, 99, 0.3f);
}

static void ts_free(tset *s)
{
    for (int i = 0; i < s->n; i++) free(s->t[i].data);
    s->n = 0;
}

static tu_tensor *ts_find(tset *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return &s->t[i];
    return NULL;
}

/* The values a file of that dtype holds (what the loader will read back). */
static void ts_round(tset *s, orthros_dtype dt)
{
    for (int i = 0; i < s->n; i++)
        for (size_t j = 0, n = tu_tensor_numel(&s->t[i]); j < n; j++) {
            float v = s->t[i].data[j];
            if (dt == ORTHROS_DTYPE_BF16) s->t[i].data[j] = orthros_bf16_to_f32(orthros_f32_to_bf16(v));
            if (dt == ORTHROS_DTYPE_F16) s->t[i].data[j] = orthros_f16_to_f32(tu_f32_to_f16(v));
        }
}

/* A delta pair for layer l, projection p of a model of config c, rank r. */
static void add_delta_scaled(tset *s, const orthros_model_config *c, int l, int p, int r, uint64_t seed, float scale);
static void add_delta(tset *s, const orthros_model_config *c, int l, int p, int r, uint64_t seed)
{
    add_delta_scaled(s, c, l, p, r, seed, 0.3f);
}

/* A and B uniform in [-scale, scale]: at 0.3 (every test but the cuda-vs-cpu one) a merged weight's deltas have a
 * std of 0.1-0.2, two to three times the fixture's weights (0.05-0.1). */
static void add_delta_scaled(tset *s, const orthros_model_config *c, int l, int p, int r, uint64_t seed, float scale)
{
    int64_t D = c->d_model, q = (int64_t)c->n_heads * c->head_dim, kv = (int64_t)c->n_kv_heads * c->head_dim, F = c->ffn;
    const int64_t shapes[7][2] = {{q, D}, {kv, D}, {kv, D}, {D, q}, {F, D}, {F, D}, {D, F}};
    char name[160];
    snprintf(name, sizeof name, "model.layers.%d.%s.lora_A.weight", l, projs[p]);
    ts_add(s, name, 2, r, shapes[p][1], 0, seed, scale);
    snprintf(name, sizeof name, "model.layers.%d.%s.lora_B.weight", l, projs[p]);
    ts_add(s, name, 2, shapes[p][0], r, 0, seed + 1000, scale);
}

/* ---- directories ---- */

static char *dir_in(const char *name)
{
    char *p = malloc(4200);
    snprintf(p, 4200, "%s/%s", root, name);
    mkdir(p, 0755);
    return p;
}

/* An adapter directory: config.json (orthros_base of `base`, its sha256 or `sha`, the optional fetch hint and
 * `orthros` object) and adapter.safetensors of `ad` in dtype with metadata. */
static char *adapter_dir(const char *name, const char *base, const char *sha, const char *fetch, const char *orthros_obj,
                         const tset *ad, orthros_dtype dt, const char *metadata)
{
    char *dir = dir_in(name), path[4400], hex[65] = "";
    if (!sha) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/model.safetensors", base);
        CHECK(orthros_sha256_file(stat(base, &sb) == 0 && S_ISDIR(sb.st_mode) ? path : base, hex) == 0, "sha256 of %s", base);
        sha = hex;
    }
    cJSON *cfg = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(cfg, "orthros_base");
    cJSON_AddStringToObject(b, "path", base);
    cJSON_AddStringToObject(b, "sha256", sha);
    if (fetch) cJSON_AddStringToObject(b, "fetch", fetch);
    if (orthros_obj) cJSON_AddItemToObject(cfg, "orthros", cJSON_Parse(orthros_obj));
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(tu_write_json(path, cfg) == 0, "write %s", path);
    cJSON_Delete(cfg);
    snprintf(path, sizeof path, "%s/adapter.safetensors", dir);
    CHECK(tu_write_tensors(path, ad->t, ad->n, dt, metadata) == 0, "write %s", path);
    return dir;
}

/* A checkpoint directory: the tensors of base_dir (read as fp32) with every delta of `ad` merged by this test's
 * own arithmetic (double, rounded once), plus `extra` tensors (feature maps), config.json with `orthros_obj`. */
static char *merged_checkpoint(const char *name, const char *base_dir, tset *ad, double alpha, const tset *extra,
                               const char *orthros_obj)
{
    char *dir = dir_in(name), path[4400];
    orthros_st st;
    CHECK(orthros_st_open_dir(&st, base_dir) == 0, "%s", orthros_last_error());
    tset out = {0};
    for (int i = 0; i < st.n_tensors; i++) {
        const orthros_st_tensor *t = &st.tensors[i];
        tu_tensor *o = ts_add(&out, t->name, t->ndim, t->shape[0], t->ndim > 1 ? t->shape[1] : 0,
                              t->ndim > 2 ? t->shape[2] : 0, 0, 0.0f);
        orthros_st_tensor_f32(t, o->data);
        char an[200], bn[200];
        size_t stem = strlen(t->name) - strlen(".weight");
        snprintf(an, sizeof an, "%.*s.lora_A.weight", (int)stem, t->name);
        snprintf(bn, sizeof bn, "%.*s.lora_B.weight", (int)stem, t->name);
        const tu_tensor *A = ad ? ts_find(ad, an) : NULL, *B = ad ? ts_find(ad, bn) : NULL;
        if (!A || !B) continue;
        int64_t r = A->shape[0], in = A->shape[1], outd = B->shape[0];
        for (int64_t oi = 0; oi < outd; oi++)
            for (int64_t ii = 0; ii < in; ii++) {
                double s = 0;
                for (int64_t k = 0; k < r; k++) s += (double)B->data[oi * r + k] * (double)A->data[k * in + ii];
                o->data[oi * in + ii] = (float)((double)o->data[oi * in + ii] + alpha / (double)r * s);
            }
    }
    orthros_st_close(&st);
    for (int i = 0; extra && i < extra->n; i++) {
        tu_tensor *e = ts_find(&out, extra->t[i].name);
        if (!e) e = ts_add(&out, extra->t[i].name, extra->t[i].ndim, extra->t[i].shape[0], extra->t[i].shape[1],
                           extra->t[i].shape[2], 0, 0.0f);
        memcpy(e->data, extra->t[i].data, tu_tensor_numel(e) * sizeof(float));
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(tu_write_tensors(path, out.t, out.n, ORTHROS_DTYPE_F32, NULL) == 0, "write %s", path);
    ts_free(&out);
    snprintf(path, sizeof path, "%s/config.json", base_dir);
    char *text = tu_slurp(path, NULL);
    orthros_model_config cfg;
    CHECK(text && orthros_config_parse(&cfg, text) == 0, "config of %s", base_dir);
    free(text);
    char *cj = tu_config_json(&cfg, orthros_obj);
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_text(path, cj);
    free(cj);
    return dir;
}

/* ---- running models ---- */

static int32_t tokens[NTOK];

/* Logits of every prompt position (malloc'd), or NULL (the error is recorded). */
static float *logits_of(const char *spec, const char *adapter, const char *arch, int tp, int *V)
{
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = arch;
    ao.adapter = adapter;
    ao.tp = tp;
    return tu_model_logits(gpu ? gpu : cpu, spec, &ao, 7, NULL, tokens, NTOK, 5, V);
}

/* a and b (spec + adapter each) give bit-equal logits under arch. */
static void expect_same(const char *label, const char *a, const char *a_ad, const char *b, const char *b_ad, const char *arch)
{
    int Va = 0, Vb = 0;
    float *la = logits_of(a, a_ad, arch, 1, &Va);
    CHECK(la != NULL, "%s: %s: %s", label, a, orthros_last_error());
    float *lb = logits_of(b, b_ad, arch, 1, &Vb);
    CHECK(lb != NULL, "%s: %s: %s", label, b, orthros_last_error());
    if (la && lb) {
        CHECK(Va == Vb && !memcmp(la, lb, sizeof(float) * NTOK * (size_t)Va), "%s (%s): logits differ by up to %g", label,
              arch ? arch : "checkpoint", Va == Vb ? tu_max_abs_diff(la, lb, NTOK * (size_t)Va) : -1.0);
        printf("%-44s %-12s bit-equal\n", label, arch ? arch : "checkpoint");
    }
    free(la);
    free(lb);
}

static orthros_model_config config_of(const char *dir)
{
    orthros_model_config c;
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = tu_slurp(path, NULL);
    CHECK(text && orthros_config_parse(&c, text) == 0, "config of %s", dir);
    free(text);
    return c;
}

/* orthros_model_spec_config of an adapter directory is its base's (what eval ruler checks --ctx against before it
 * builds a sample): the adapter's own config.json is not a model's. */
static void expect_spec_config(const char *label, const char *adir, const char *base)
{
    orthros_model_config a, b;
    int ra = orthros_model_spec_config(&a, adir);
    CHECK(ra == 0, "%s: the adapter directory's config: %s", label, orthros_last_error());
    int rb = orthros_model_spec_config(&b, base);
    CHECK(rb == 0, "%s: the base's config: %s", label, orthros_last_error());
    CHECK(!ra && !rb && a.max_pos > 0 && a.max_pos == b.max_pos && a.n_layers == b.n_layers && a.d_model == b.d_model &&
              a.vocab == b.vocab,
          "%s: the adapter directory's config (max_pos %d, %d layers) is not its base's (%d, %d)", label, a.max_pos,
          a.n_layers, b.max_pos, b.n_layers);
}

/* `orthros export` of a spec to a fresh folder (f32). */
static char *export_of(const char *name, const char *spec, const char *seed)
{
    char *dir = malloc(4200), log[4300];
    snprintf(dir, 4200, "%s/%s", root, name);
    snprintf(log, sizeof log, "%s.log", dir);
    int st = tu_run_args(bin, log, "export", "--model", spec, "--out", dir, "--seed", seed, NULL);
    CHECK(st == 0, "export of %s: exit %d", spec, st);
    if (st) tu_log_has(log, "(print)");
    return dir;
}

/* ---- the tests ---- */

static void test_sha256(void)
{
    static const struct {
        const char *in, *hex;
    } v[] = {{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
             {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
             {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        uint8_t d[32];
        char hex[65];
        orthros_sha256(v[i].in, strlen(v[i].in), d);
        for (int k = 0; k < 32; k++) snprintf(hex + 2 * k, 3, "%02x", d[k]);
        CHECK(!strcmp(hex, v[i].hex), "sha256(\"%s\") = %s", v[i].in, hex);
    }
    /* A million 'a', through the file path (blocks split across reads). */
    char path[4400], hex[65];
    snprintf(path, sizeof path, "%s/million-a", root);
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    FILE *f = fopen(path, "wb");
    fwrite(a, 1, 1000000, f);
    fclose(f);
    free(a);
    CHECK(orthros_sha256_file(path, hex) == 0 && !strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
          "sha256 of a million a: %s", hex);
    snprintf(path, sizeof path, "%s/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf", repo);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        CHECK(orthros_sha256_file(path, hex) == 0 &&
                  !strcmp(hex, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
              "SmolLM2's sha256 (ci/fetch-model.sh's): %s", hex);
    }
    printf("sha256: FIPS 180-4 vectors%s\n", stat(path, &sb) == 0 ? ", SmolLM2's GGUF" : "");
}

/* Deltas on every projection of every layer, stored as dt, over llama-tiny. */
static void test_merge(orthros_dtype dt, const char *dtname)
{
    orthros_model_config c = config_of(tiny);
    tset ad = {0};
    for (int l = 0; l < c.n_layers; l++)
        for (int p = 0; p < 7; p++) add_delta(&ad, &c, l, p, 1 + (l * 7 + p) % 4, 100 + (uint64_t)(l * 7 + p));
    ts_round(&ad, dt);
    char name[64];
    snprintf(name, sizeof name, "merge-%s", dtname);
    char *adir = adapter_dir(name, tiny, NULL, NULL, NULL, &ad, dt, "{\"lora_alpha\": \"6.5\", \"format\": \"pt\"}");
    snprintf(name, sizeof name, "merge-%s-ref", dtname);
    char *ref = merged_checkpoint(name, tiny, &ad, 6.5, NULL, NULL);
    char label[96], file[4400];
    snprintf(label, sizeof label, "adapter dir, %s deltas on every weight", dtname);
    expect_same(label, adir, NULL, ref, NULL, NULL);
    expect_same(label, adir, NULL, ref, NULL, "orthros");
    expect_spec_config(label, adir, tiny);
    snprintf(file, sizeof file, "%s/adapter.safetensors", adir);
    snprintf(label, sizeof label, "--adapter FILE, %s deltas", dtname);
    expect_same(label, tiny, file, ref, NULL, "hybrid");
    /* The adapter changes the logits (the test can fail). */
    int V1 = 0, V2 = 0;
    float *a = logits_of(adir, NULL, NULL, 1, &V1), *b = logits_of(tiny, NULL, NULL, 1, &V2);
    CHECK(a && b && tu_max_abs_diff(a, b, NTOK * (size_t)V1) > 1e-3, "the adapter leaves the logits as they were");
    free(a);
    free(b);
    free(adir);
    free(ref);
    ts_free(&ad);
}

/* A BF16 base (gqa4-bf16-d64: hidden 128 != 8 heads x 64), deltas on a few weights. */
static void test_bf16_base(void)
{
    char base[4200];
    snprintf(base, sizeof base, "%s/data/fixtures/gqa4-bf16-d64", repo);
    orthros_model_config c = config_of(base);
    tset ad = {0};
    add_delta(&ad, &c, 0, 0, 2, 1), add_delta(&ad, &c, 1, 3, 3, 2), add_delta(&ad, &c, 1, 6, 8, 3);
    char *adir = adapter_dir("bf16-base", base, NULL, NULL, NULL, &ad, ORTHROS_DTYPE_F32, "{\"lora_alpha\": \"2\"}");
    char *ref = merged_checkpoint("bf16-base-ref", base, &ad, 2.0, NULL, NULL);
    expect_same("BF16 base, GQA 4:1, q/o/down deltas", adir, NULL, ref, NULL, NULL);
    free(adir);
    free(ref);
    ts_free(&ad);
}

/* Over a GGUF (dequantised, q / k rows unpermuted): the reference merges into the engine's own export of it. */
static void test_gguf_base(void)
{
    char *exp = export_of("gguf-export", gguf, "1");
    orthros_model_config c = config_of(exp);
    tset ad = {0};
    add_delta(&ad, &c, 0, 0, 2, 11), add_delta(&ad, &c, 0, 1, 2, 12), add_delta(&ad, &c, 1, 4, 4, 13);
    char *adir = adapter_dir("gguf-base", gguf, NULL, NULL, NULL, &ad, ORTHROS_DTYPE_F32, "{\"lora_alpha\": \"3\"}");
    char *ref = merged_checkpoint("gguf-base-ref", exp, &ad, 3.0, NULL, NULL);
    expect_same("GGUF base (Q4_1), q/k/gate deltas", adir, NULL, ref, NULL, NULL);
    expect_spec_config("GGUF base", adir, gguf);
    /* Feature maps from the adapter give a GGUF base a hedgehog schedule. */
    tset fm = {0};
    char name[128];
    for (int l = 0; l < c.n_layers; l++) {
        snprintf(name, sizeof name, "model.layers.%d.self_attn.feature_map_q.weight", l);
        ts_add(&fm, name, 3, c.n_heads, c.head_dim, 4, 50 + (uint64_t)l, 0.5f);
        snprintf(name, sizeof name, "model.layers.%d.self_attn.feature_map_k.weight", l);
        ts_add(&fm, name, 3, c.n_kv_heads, c.head_dim, 4, 60 + (uint64_t)l, 0.5f);
    }
    const char *sched = "{\"architecture\": \"orthros\", \"feature_map\": \"hedgehog\", \"feature_dim\": 4, \"tail\": 3}";
    char *fdir = adapter_dir("gguf-fmaps", gguf, NULL, NULL, sched, &fm, ORTHROS_DTYPE_F32, NULL);
    char *fref = merged_checkpoint("gguf-fmaps-ref", exp, NULL, 0, &fm, sched);
    expect_same("GGUF base + the adapter's feature maps", fdir, NULL, fref, NULL, NULL);
    free(exp);
    free(adir);
    free(ref);
    free(fdir);
    free(fref);
    ts_free(&ad);
    ts_free(&fm);
}

/* Over a preset: merged into its dummy weights as generated; the reference merges into its export (seed 7). */
static void test_preset(void)
{
    char *exp = export_of("preset-export", "preset:tiny", "7");
    orthros_model_config c;
    orthros_preset_config(&c, "tiny");
    tset ad = {0};
    for (int p = 0; p < 7; p++) add_delta(&ad, &c, p % 2, p, 2, 70 + (uint64_t)p);
    char file[4400];
    snprintf(file, sizeof file, "%s/preset-adapter.safetensors", root);
    CHECK(tu_write_tensors(file, ad.t, ad.n, ORTHROS_DTYPE_F32, "{\"lora_alpha\": \"4\"}") == 0, "write %s", file);
    char *ref = merged_checkpoint("preset-ref", exp, &ad, 4.0, NULL, NULL);
    expect_same("preset:tiny + --adapter, every projection", "preset:tiny", file, ref, NULL, NULL);
    expect_same("preset:tiny + --adapter, every projection", "preset:tiny", file, ref, NULL, "linear");
    /* Sharded: each rank merges the whole tensor and keeps its part. */
    int V1 = 0, V2 = 0;
    float *a = logits_of("preset:tiny", file, NULL, 1, &V1), *b = logits_of("preset:tiny", file, NULL, 2, &V2);
    double e = a && b ? tu_max_abs_diff(a, b, NTOK * (size_t)V1) : INFINITY;
    CHECK(e < 1e-4, "preset + adapter, --tp 2 against --tp 1: %g", e);
    printf("%-44s --tp 2 vs 1: max |diff| %.3g\n", "preset:tiny + --adapter", e);
    free(a);
    free(b);
    free(exp);
    free(ref);
    ts_free(&ad);
}

/* preset:tiny + --adapter on the backend in use against the fp32 merge into its (cpu) export. */
static void test_preset_cuda(void)
{
    char *exp = export_of("preset-export-cuda", "preset:tiny", "7");
    orthros_model_config c;
    orthros_preset_config(&c, "tiny");
    tset ad = {0};
    for (int p = 0; p < 7; p++) add_delta(&ad, &c, p % 2, p, 2, 170 + (uint64_t)p);
    char file[4400];
    snprintf(file, sizeof file, "%s/preset-cuda-adapter.safetensors", root);
    CHECK(tu_write_tensors(file, ad.t, ad.n, ORTHROS_DTYPE_F32, "{\"lora_alpha\": \"4\"}") == 0, "write %s", file);
    char *ref = merged_checkpoint("preset-cuda-ref", exp, &ad, 4.0, NULL, NULL);
    expect_same("cuda: preset:tiny + --adapter vs the fp32 merge", "preset:tiny", file, ref, NULL, NULL);
    free(exp);
    free(ref);
    ts_free(&ad);
}

static double rel_err(const float *ref, const float *got, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = isnan(got[i]) ? INFINITY : fabs((double)ref[i] - got[i]);
        num = fmax(num, e);
        den = fmax(den, fabs((double)ref[i]));
    }
    return den > 0 ? num / den : num;
}

/* Feature maps and schedule from the adapter directory; --tp 2 against --tp 1. */
static void test_feature_maps_and_tp(void)
{
    orthros_model_config c = config_of(tiny);
    tset ad = {0}, fm = {0};
    add_delta(&ad, &c, 0, 2, 3, 21), add_delta(&ad, &c, 1, 5, 5, 22), add_delta(&ad, &c, 1, 3, 2, 23);
    char name[128];
    for (int l = 0; l < c.n_layers; l++) {
        snprintf(name, sizeof name, "model.layers.%d.self_attn.feature_map_q.weight", l);
        ts_add(&fm, name, 3, c.n_heads, c.head_dim, 6, 30 + (uint64_t)l, 0.5f);
        snprintf(name, sizeof name, "model.layers.%d.self_attn.feature_map_k.weight", l);
        ts_add(&fm, name, 3, c.n_kv_heads, c.head_dim, 6, 40 + (uint64_t)l, 0.5f);
    }
    /* Window gates of the local window (docs/converted-models.md), in (0.05, 2]: the adapter's replace none. */
    int n_fm = fm.n;
    for (int l = 0; l < c.n_layers; l++) {
        snprintf(name, sizeof name, "model.layers.%d.self_attn.window_gate", l);
        ts_add(&fm, name, 1, c.n_heads, 0, 0, 50 + (uint64_t)l, 1.0f);
        for (int h = 0; h < c.n_heads; h++) fm.t[fm.n - 1].data[h] = 1.025f + 0.975f * fm.t[fm.n - 1].data[h];
    }
    tset all = {0}; /* both sets, sharing their data */
    for (int i = 0; i < ad.n; i++) all.t[all.n++] = ad.t[i];
    for (int i = 0; i < fm.n; i++) all.t[all.n++] = fm.t[i];
    const char *sched = "{\"architecture\": \"orthros\", \"feature_map\": \"hedgehog\", \"feature_dim\": 6, \"tail\": 2, "
                        "\"feature_map_rope\": \"after\", \"local_window\": 2}";
    char *adir = adapter_dir("fmaps", tiny, NULL, NULL, sched, &all, ORTHROS_DTYPE_F32, "{\"lora_alpha\": \"1.5\"}");
    char *ref = merged_checkpoint("fmaps-ref", tiny, &ad, 1.5, &fm, sched);
    expect_same("maps + gates + deltas, the adapter's schedule", adir, NULL, ref, NULL, NULL);
    expect_same("maps + gates + deltas, the adapter's schedule", adir, NULL, ref, NULL, "linear");
    {
        /* The gates are read: the same adapter without them gives other logits. */
        tset nogate = {0};
        for (int i = 0; i < ad.n; i++) nogate.t[nogate.n++] = ad.t[i];
        for (int i = 0; i < n_fm; i++) nogate.t[nogate.n++] = fm.t[i];
        char *ndir = adapter_dir("fmaps-nogate", tiny, NULL, NULL, sched, &nogate, ORTHROS_DTYPE_F32,
                                 "{\"lora_alpha\": \"1.5\"}");
        int V1 = 0, V2 = 0;
        float *a = logits_of(adir, NULL, "linear", 1, &V1), *b = logits_of(ndir, NULL, "linear", 1, &V2);
        CHECK(a && b && V1 == V2 && memcmp(a, b, sizeof(float) * NTOK * (size_t)V1),
              "window gates of an adapter change nothing");
        free(a), free(b), free(ndir);
    }
    static const char *const archs[] = {NULL, "transformer", "hybrid"};
    for (int k = 0; k < 3; k++) {
        const char *arch = archs[k];
        int V1 = 0, V2 = 0;
        float *a = logits_of(adir, NULL, arch, 1, &V1), *b = logits_of(adir, NULL, arch, 2, &V2);
        double e = a && b ? rel_err(a, b, NTOK * (size_t)V1) : INFINITY;
        CHECK(e < 1e-5, "adapter dir under %s: --tp 2 against --tp 1: %g relative", arch ? arch : "its schedule", e);
        printf("%-44s %-12s --tp 2 vs 1: %.3g relative\n", "adapter dir (deltas, feature maps)", arch ? arch : "checkpoint", e);
        free(a);
        free(b);
    }
    free(adir);
    free(ref);
    ts_free(&ad);
    ts_free(&fm);
}

/* The base through .cache/models/ of the current directory; the adapter directory's tokenizer is its base's. */
static void test_cache_and_tokenizer(void)
{
    char *cwd = dir_in("cwd"), path[4400], *cache = NULL;
    snprintf(path, sizeof path, "%s/.cache", cwd);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/.cache/models", cwd);
    mkdir(path, 0755);
    cache = strdup(path);
    /* A base with a tokenizer: llama-tiny's files and SmolLM2's tokenizer files. */
    static const char *const files[] = {"config.json", "model.safetensors"};
    char src[4400], dst[4400];
    snprintf(dst, sizeof dst, "%s/tok-base", cache);
    mkdir(dst, 0755);
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/%s", tiny, files[i]);
        snprintf(dst, sizeof dst, "%s/tok-base/%s", cache, files[i]);
        CHECK(symlink(src, dst) == 0, "link %s", dst);
    }
    static const char *const tok[] = {"tokenizer.json", "tokenizer_config.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/data/tokenizers/smollm2/%s", repo, tok[i]);
        snprintf(dst, sizeof dst, "%s/tok-base/%s", cache, tok[i]);
        CHECK(symlink(src, dst) == 0, "link %s", dst);
    }
    orthros_model_config c = config_of(tiny);
    tset ad = {0};
    add_delta(&ad, &c, 1, 1, 2, 90);
    char hex[65];
    snprintf(path, sizeof path, "%s/model.safetensors", tiny);
    orthros_sha256_file(path, hex);
    char *adir = adapter_dir("via-cache", "tok-base", hex, "ci/fetch-model.sh", NULL, &ad, ORTHROS_DTYPE_BF16,
                             "{\"lora_alpha\": \"2\"}");
    char old[4096];
    CHECK(getcwd(old, sizeof old) != NULL, "getcwd");
    CHECK(chdir(cwd) == 0, "chdir %s", cwd);
    orthros_model *m = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    int rc = orthros_model_load(&m, cpu, adir, &ao, 1);
    CHECK(rc == 0, "the base through .cache/models/: %s", orthros_last_error());
    orthros_model_free(m);
    orthros_tokenizer *t = NULL;
    rc = orthros_tokenizer_load(&t, adir);
    CHECK(rc == 0 && orthros_tokenizer_vocab_size(t) == 49152 && orthros_tokenizer_eos(t) == 2,
          "the adapter directory's tokenizer is its base's: %s", rc ? orthros_last_error() : "another one");
    orthros_tokenizer_free(t);
    CHECK(chdir(old) == 0, "chdir back");
    /* From elsewhere the base is not found, and the message says how to fetch it. */
    rc = orthros_model_load(&m, cpu, adir, &ao, 1);
    CHECK(rc == ORTHROS_EIO && m == NULL && strstr(orthros_last_error(), "fetch it with ci/fetch-model.sh"),
          "a base missing from .cache/models/: %s", orthros_last_error());
    printf("base through .cache/models/ of the current directory; tokenizer of the base\n");
    free(cwd);
    free(cache);
    free(adir);
    ts_free(&ad);
}

/* ---- refusals ---- */

/* `orthros logits` on the adapter exits 1 with one stderr line holding want and want2; the library refuses it too. */
static void expect_refused(const char *label, const char *model, const char *adapter, const char *want, const char *want2)
{
    char out[4300], errpath[4300];
    snprintf(out, sizeof out, "%s/logits.out", root);
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", root);
    char *argv[] = {(char *)bin, "logits", "--model", (char *)model, "--tokens", "1,2,3", "--out", out, "--device", "cpu",
                    adapter ? "--adapter" : NULL, (char *)adapter, NULL};
    int st = tu_run_capture(argv, NULL, NULL, errpath);
    size_t len = 0;
    char *err = tu_slurp(errpath, &len);
    char *nl = err ? strchr(err, '\n') : NULL;
    CHECK(st == 1, "%s: exit status %d, not 1", label, st);
    CHECK(err && nl && nl[1] == '\0', "%s: expected exactly one stderr line: %s", label, err ? err : "");
    CHECK(err && strstr(err, want), "%s: stderr \"%s\" lacks \"%s\"", label, err ? err : "", want);
    if (want2) CHECK(err && strstr(err, want2), "%s: stderr \"%s\" lacks \"%s\"", label, err ? err : "", want2);
    printf("%-36s -> %s", label, err && len ? err : "(nothing)\n");
    free(err);
    orthros_model *m = (orthros_model *)1;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.adapter = adapter;
    int rc = orthros_model_load(&m, cpu, model, &ao, 1);
    CHECK(rc < 0 && m == NULL, "%s: library load returned %d", label, rc);
}

/* An adapter over llama-tiny from a tensor set (F32) and metadata. */
static char *bad_dir(const char *name, tset *ad, const char *metadata)
{
    return adapter_dir(name, tiny, NULL, NULL, NULL, ad, ORTHROS_DTYPE_F32, metadata);
}

static void set_config(const char *dir, const char *text)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_text(path, text);
}

static void test_refusals(void)
{
    orthros_model_config c = config_of(tiny);
    const char *alpha = "{\"lora_alpha\": \"8\"}";
    tset s = {0};
    char *d, text[8192], hex[65], path[4400];
    snprintf(path, sizeof path, "%s/model.safetensors", tiny);
    orthros_sha256_file(path, hex);

    /* Shapes. */
    add_delta(&s, &c, 0, 0, 2, 1);
    ts_reshape(&s.t[0], 2, 65);
    d = bad_dir("bad-shape-a", &s, alpha);
    expect_refused("lora_A of the wrong width", d, NULL, "q_proj.lora_A.weight: has shape [2, 65], the model implies [2, 64]",
                   "adapter.safetensors");
    free(d), ts_free(&s);
    add_delta(&s, &c, 1, 6, 2, 1);
    ts_reshape(&s.t[1], 65, 2);
    d = bad_dir("bad-shape-b", &s, alpha);
    expect_refused("lora_B of the wrong height", d, NULL, "down_proj.lora_B.weight: has shape [65, 2]", NULL);
    free(d), ts_free(&s);
    add_delta(&s, &c, 0, 1, 2, 1);
    ts_reshape(&s.t[1], 21, 3);
    d = bad_dir("bad-rank-b", &s, alpha);
    expect_refused("lora_B's r differs from lora_A's", d, NULL, "k_proj.lora_B.weight: has shape [21, 3], the model implies [32, 2]",
                   NULL);
    free(d), ts_free(&s);
    ts_add(&s, "model.layers.0.self_attn.feature_map_q.weight", 3, 4, 16, 8, 1, 0.1f);
    d = adapter_dir("bad-fmap", tiny, NULL, NULL, "{\"feature_map\": \"hedgehog\", \"feature_dim\": 6}", &s,
                    ORTHROS_DTYPE_F32, NULL);
    expect_refused("feature map of another feature dim", d, NULL, "feature_map_q.weight: has shape [4, 16, 8], the model implies [4, 16, 6]",
                   NULL);
    free(d), ts_free(&s);
    ts_add(&s, "model.layers.1.self_attn.window_gate", 1, 3, 0, 0, 1, 0.1f);
    for (int i = 0; i < 3; i++) s.t[0].data[i] = 0.5f;
    d = bad_dir("bad-gate-shape", &s, NULL);
    expect_refused("window gate of the wrong shape", d, NULL, "window_gate: has shape [3], the model implies [4]", NULL);
    free(d), ts_free(&s);

    /* The base. */
    add_delta(&s, &c, 0, 0, 2, 1);
    d = adapter_dir("missing-base", "no-such-base.gguf", hex, "ci/fetch-model.sh", NULL, &s, ORTHROS_DTYPE_F32, alpha);
    expect_refused("a missing base (fetch hint)", d, NULL, "base model no-such-base.gguf not found",
                   "fetch it with ci/fetch-model.sh");
    free(d);
    d = adapter_dir("missing-base-nohint", "no-such-base", hex, NULL, NULL, &s, ORTHROS_DTYPE_F32, alpha);
    expect_refused("a missing base (no hint)", d, NULL, ".cache/models/no-such-base", "no fetch hint");
    free(d);
    d = adapter_dir("bad-sha", tiny, "00000000000000000000000000000000000000000000000000000000000000ff", NULL, NULL, &s,
                    ORTHROS_DTYPE_F32, alpha);
    expect_refused("a base whose sha256 differs", d, NULL, "orthros_base.sha256 says 00000000", hex);
    free(d);
    d = adapter_dir("bad-gguf-sha", gguf, hex, NULL, NULL, &s, ORTHROS_DTYPE_F32, alpha);
    expect_refused("a GGUF base whose sha256 differs", d, NULL, "model.gguf has sha256", "config.json");
    free(d);
    d = adapter_dir("chain", "../bad-sha", hex, NULL, NULL, &s, ORTHROS_DTYPE_F32, alpha);
    expect_refused("a base that is an adapter", d, NULL, "is itself an adapter directory", NULL);
    free(d);
    d = adapter_dir("loop", ".", hex, NULL, NULL, &s, ORTHROS_DTYPE_F32, alpha);
    expect_refused("a base that is the adapter itself", d, NULL, "is itself an adapter directory", NULL);
    snprintf(path, sizeof path, "%s/adapter.safetensors", d);
    expect_refused("--adapter over an adapter directory", d, path, "is an adapter directory already", NULL);
    free(d);

    /* config.json's schema. */
    d = bad_dir("cfg", &s, alpha);
    static const struct {
        const char *label, *fmt, *want;
    } cfgs[] = {
        {"a Llama field in the adapter config", "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%s\"}, \"hidden_size\": 64}",
         "field \"hidden_size\" is not part of an adapter's config"},
        {"an unknown orthros_base field", "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%s\", \"url\": \"x\"}}",
         "orthros_base.url is not a field"},
        {"sha256 not hex", "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%.63sz\"}}", "not 64 hexadecimal digits"},
        {"path not a string", "{\"orthros_base\": {\"path\": 5, \"sha256\": \"%.0s%s\"}}", "orthros_base.path is not a string"},
        {"a key twice", "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%s\", \"path\": \"x\"}}", "appears twice"},
        {"a bad orthros object", "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%s\"}, \"orthros\": {\"tail\": 0}}",
         "tail"},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        snprintf(text, sizeof text, cfgs[i].fmt, tiny, hex);
        set_config(d, text);
        expect_refused(cfgs[i].label, d, NULL, cfgs[i].want, "config.json");
    }
    snprintf(path, sizeof path, "%s/adapter.safetensors", d);
    unlink(path);
    snprintf(text, sizeof text, "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%s\"}}", tiny, hex);
    set_config(d, text);
    expect_refused("no adapter.safetensors", d, NULL, "has no adapter.safetensors", NULL);
    free(d), ts_free(&s);

    /* Tensors the model does not have, pairs, ranks. */
    add_delta(&s, &c, 0, 0, 2, 1);
    snprintf(s.t[0].name, sizeof s.t[0].name, "model.layers.2.self_attn.q_proj.lora_A.weight");
    snprintf(s.t[1].name, sizeof s.t[1].name, "model.layers.2.self_attn.q_proj.lora_B.weight");
    d = bad_dir("no-layer", &s, alpha);
    expect_refused("a delta for layer 2 of 2", d, NULL, "layers.2.self_attn.q_proj.lora_A.weight: the model has no layer 2",
                   NULL);
    free(d);
    snprintf(s.t[0].name, sizeof s.t[0].name, "model.layers.0.self_attn.x_proj.lora_A.weight");
    snprintf(s.t[1].name, sizeof s.t[1].name, "model.layers.0.self_attn.x_proj.lora_B.weight");
    d = bad_dir("no-proj", &s, alpha);
    expect_refused("a delta for x_proj", d, NULL, "a delta for model.layers.0.self_attn.x_proj.weight, which the model does not have",
                   NULL);
    free(d);
    snprintf(s.t[0].name, sizeof s.t[0].name, "lm_head.lora_A.weight");
    snprintf(s.t[1].name, sizeof s.t[1].name, "lm_head.lora_B.weight");
    d = bad_dir("no-lm-head", &s, alpha);
    expect_refused("a delta for lm_head", d, NULL, "a delta for lm_head.weight", NULL);
    free(d);
    snprintf(s.t[0].name, sizeof s.t[0].name, "model.layers.0.self_attn.q_proj.weight");
    s.n = 1;
    d = bad_dir("not-adapter", &s, alpha);
    expect_refused("a base weight in the adapter", d, NULL, "q_proj.weight: not an adapter tensor", NULL);
    s.n = 2;
    free(d), ts_free(&s);
    add_delta(&s, &c, 1, 4, 2, 1);
    s.n = 1;
    d = bad_dir("a-only", &s, alpha);
    expect_refused("lora_A without lora_B", d, NULL,
                   "gate_proj.lora_A.weight: has no model.layers.1.mlp.gate_proj.lora_B.weight to pair with", NULL);
    free(d);
    tu_tensor swap = s.t[0];
    s.t[0] = s.t[1], s.t[1] = swap;
    d = bad_dir("b-only", &s, alpha);
    expect_refused("lora_B without lora_A", d, NULL, "gate_proj.lora_B.weight: has no model.layers.1.mlp.gate_proj.lora_A.weight",
                   NULL);
    free(d);
    s.n = 2;
    ts_free(&s);
    add_delta(&s, &c, 0, 3, 1, 1);
    ts_reshape(&s.t[0], 0, 64), ts_reshape(&s.t[1], 64, 0);
    d = bad_dir("rank-0", &s, alpha);
    expect_refused("r = 0", d, NULL, "o_proj.lora_A.weight: has rank r = 0", NULL);
    free(d), ts_free(&s);
    add_delta(&s, &c, 0, 1, 33, 1);
    d = bad_dir("rank-big", &s, alpha);
    expect_refused("r larger than the weight", d, NULL, "k_proj.lora_A.weight: has rank r = 33, larger than the weight's dimensions [32, 64]",
                   NULL);
    free(d), ts_free(&s);

    /* Values, alpha. */
    add_delta(&s, &c, 1, 2, 2, 1);
    s.t[1].data[5] = NAN;
    d = bad_dir("nan", &s, alpha);
    expect_refused("a NaN in lora_B", d, NULL, "v_proj.lora_B.weight: element 5 is nan, not finite", NULL);
    free(d);
    s.t[1].data[5] = 0.0f;
    s.t[0].data[7] = INFINITY;
    d = bad_dir("inf", &s, alpha);
    expect_refused("an infinity in lora_A", d, NULL, "v_proj.lora_A.weight: element 7 is inf", NULL);
    free(d);
    s.t[0].data[7] = 0.0f;
    d = bad_dir("no-alpha", &s, "{\"format\": \"pt\"}");
    expect_refused("no lora_alpha", d, NULL, "__metadata__ has no lora_alpha", NULL);
    free(d);
    d = bad_dir("bad-alpha", &s, "{\"lora_alpha\": \"0x10\"}");
    expect_refused("lora_alpha 0x10", d, NULL, "lora_alpha \"0x10\" is not a finite decimal number", NULL);
    free(d);
    d = bad_dir("num-alpha", &s, "{\"lora_alpha\": 16}");
    expect_refused("lora_alpha as a number", d, NULL, "__metadata__.lora_alpha is not a string", NULL);
    free(d);
    d = bad_dir("huge-alpha", &s, "{\"lora_alpha\": \"1e308\"}");
    expect_refused("a merge that overflows", d, NULL, "makes model.layers.1.self_attn.v_proj.weight[", "non-finite");
    free(d), ts_free(&s);

    /* Duplicates: a key twice in the header, and a second spelling of a layer. */
    add_delta(&s, &c, 0, 0, 1, 1);
    d = bad_dir("dup", &s, alpha);
    snprintf(path, sizeof path, "%s/adapter.safetensors", d);
    char hdr[1024];
    snprintf(hdr, sizeof hdr,
             "{\"model.layers.0.self_attn.q_proj.lora_A.weight\":{\"dtype\":\"F32\",\"shape\":[1,64],\"data_offsets\":[0,256]},"
             "\"model.layers.0.self_attn.q_proj.lora_B.weight\":{\"dtype\":\"F32\",\"shape\":[64,1],\"data_offsets\":[256,512]},"
             "\"model.layers.0.self_attn.q_proj.lora_A.weight\":{\"dtype\":\"F32\",\"shape\":[1,64],\"data_offsets\":[512,768]},"
             "\"__metadata__\":{\"lora_alpha\":\"1\"}}");
    float zeros[192] = {0};
    tu_write_raw_safetensors(path, hdr, 0, zeros, sizeof zeros);
    expect_refused("a tensor twice in the header", d, NULL, "appears twice", "adapter.safetensors");
    free(d);
    snprintf(s.t[0].name, sizeof s.t[0].name, "model.layers.00.self_attn.q_proj.lora_A.weight");
    d = bad_dir("dup-spelling", &s, alpha);
    expect_refused("layer 0 written 00", d, NULL, "layers.00.self_attn.q_proj.lora_A.weight: its layer index has leading zeros",
                   NULL);
    free(d), ts_free(&s);
    /* A malformed file: the strict reader's message, naming it. */
    add_delta(&s, &c, 0, 0, 1, 1);
    d = bad_dir("truncated", &s, alpha);
    snprintf(path, sizeof path, "%s/adapter.safetensors", d);
    CHECK(truncate(path, 100) == 0, "truncate %s", path);
    expect_refused("a truncated adapter.safetensors", d, NULL, "adapter.safetensors: header length", NULL);
    free(d), ts_free(&s);
    snprintf(path, sizeof path, "%s/missing.safetensors", root);
    expect_refused("--adapter FILE missing", tiny, path, "missing.safetensors: cannot open", NULL);

    /* Window gates: a gate of 0 is refused (the gates that load: test_feature_maps_and_tp). */
    ts_add(&s, "model.layers.1.self_attn.window_gate", 1, 4, 0, 0, 1, 0.1f);
    for (int i = 0; i < 4; i++) s.t[0].data[i] = 0.25f * (float)(i + 1);
    s.t[0].data[2] = 0.0f;
    d = bad_dir("gate-zero", &s, NULL);
    expect_refused("a window gate of 0", d, NULL, "window_gate: element 2 is 0; a gate must be > 0", NULL);
    free(d), ts_free(&s);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* --cuda: adapter directories over a safetensors, a GGUF and a preset base, each against the checkpoint merged in
 * fp32 by this test (bit-equal on cuda: both go to bf16 at upload from the same fp32 values) and against the cpu. */
static int run_cuda(void)
{
    if (!orthros_cuda_available() || orthros_backend_create(&gpu, "cuda")) {
        printf("SKIP: no GPU (or a build without CUDA)\n");
        return 77;
    }
    orthros_model_config c = config_of(tiny);
    tset ad = {0};
    /* Deltas below the fixture's own weights (std 0.01-0.02 at 0.1, alpha 7, rank 1-4). At 0.3 the merged model's
     * attention is so sharp that its transformer logits on cuda (bf16 weights) sat 7.2% of the range from the cpu's,
     * past the 5% test_cuda_model holds the fixtures to, while orthros and linear sat at 2.5%. The adapter itself is
     * checked against the merge bit for bit on cuda above, whatever the scale. */
    for (int l = 0; l < c.n_layers; l++)
        for (int p = 0; p < 7; p++) add_delta_scaled(&ad, &c, l, p, 1 + (l + p) % 4, 300 + (uint64_t)(l * 7 + p), 0.1f);
    ts_round(&ad, ORTHROS_DTYPE_BF16);
    char *adir = adapter_dir("cuda", tiny, NULL, NULL, NULL, &ad, ORTHROS_DTYPE_BF16, "{\"lora_alpha\": \"7\"}");
    char *ref = merged_checkpoint("cuda-ref", tiny, &ad, 7.0, NULL, NULL);
    static const char *const archs[] = {NULL, "orthros", "linear"};
    for (int k = 0; k < 3; k++) {
        expect_same("cuda: adapter dir vs the fp32 merge", adir, NULL, ref, NULL, archs[k]);
        int Vg = 0, Vc = 0;
        float *g = logits_of(adir, NULL, archs[k], 1, &Vg);
        orthros_backend *keep = gpu;
        gpu = NULL;
        float *cl = logits_of(adir, NULL, archs[k], 1, &Vc);
        gpu = keep;
        int agree = 0;
        double err = 0, range = 0;
        if (g && cl && Vg == Vc) tu_logit_agreement(cl, g, NTOK, Vc, &agree, &err, &range);
        CHECK(g && cl && agree >= NTOK * 9 / 10 && err <= 0.05 * range,
              "cuda vs cpu (%s): argmax %d/%d, max error %.3g of range %.3g", archs[k] ? archs[k] : "checkpoint", agree,
              NTOK, err, range);
        printf("cuda vs cpu, adapter dir (%s): argmax %d/%d, max error %.3g of range %.3g\n",
               archs[k] ? archs[k] : "checkpoint", agree, NTOK, err, range);
        free(g);
        free(cl);
    }
    free(adir);
    free(ref);
    ts_free(&ad);
    test_gguf_base();
    test_preset_cuda();
    orthros_backend_free(gpu);
    return -1;
}

int main(int argc, char **argv)
{
    int cuda = argc > 1 && !strcmp(argv[1], "--cuda");
    if (cuda) argc--, argv++;
    if (argc != 3) {
        fprintf(stderr, "usage: test_adapter PATH/TO/orthros REPO_ROOT\n");
        return 2;
    }
    bin = argv[1];
    /* Adapters name their bases by path: absolute ones, wherever the test runs. */
    static char repo_abs[4096];
    if (!realpath(argv[2], repo_abs)) {
        fprintf(stderr, "%s: not found\n", argv[2]);
        return 2;
    }
    repo = repo_abs;
    root = tu_tempdir();
    snprintf(tiny, sizeof tiny, "%s/data/fixtures/llama-tiny", repo);
    snprintf(gguf, sizeof gguf, "%s/data/gguf/tiny-q4_1/model.gguf", repo);
    /* Ids below every base's vocabulary (256). */
    for (int i = 0; i < NTOK; i++) tokens[i] = (int32_t)(orthros_uniform(5, (uint64_t)i) * 250.0f);
    if (!root || orthros_backend_cpu_create(&cpu)) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    if (cuda) {
        int st = run_cuda();
        orthros_backend_free(cpu);
        if (st == 77) return 77;
        if (!tu_failed) nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return tu_finish();
    }
    test_sha256();
    test_merge(ORTHROS_DTYPE_F32, "F32");
    test_merge(ORTHROS_DTYPE_BF16, "BF16");
    test_merge(ORTHROS_DTYPE_F16, "F16");
    test_bf16_base();
    test_gguf_base();
    test_preset();
    test_feature_maps_and_tp();
    test_cache_and_tokenizer();
    test_refusals();
    orthros_backend_free(cpu);
    if (!tu_failed) nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return tu_finish();
}
