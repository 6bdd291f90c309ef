/* orthros export (docs/converted-models.md#export), on the cpu backend:
 *   - every fixture of data/fixtures (F32, BF16, F16, sharded, GQA, MQA, tied, llama3 RoPE), the shared one, the
 *     GGUF fixture (Q4_1, dequantised), a preset under a hedgehog schedule (its feature maps exported) and an
 *     adapter directory (deltas merged, feature maps, its schedule): the f32 export, loaded again, gives the
 *     logits of the model it came from bit for bit, under the checkpoint's schedule and every named one; the bf16
 *     export within 2e-2 of each row's largest |logit|, the greedy token of most positions the same;
 *   - config.json reads back as the same model config, with the orthros object (and the schedule options given to
 *     export written into it); a directory's tokenizer files are copied as they are;
 *   - SmolLM2 (the GGUF ci/fetch-model.sh fetches; skipped without it, a failure under CI=true): the export's
 *     tokenizer gives the ids transformers' AutoTokenizer gave on it (data/text/smollm2-export.json, made by
 *     data/check_export.py) and the published tokenizer.json's ids on all of data/text/tokenizer-corpus.jsonl; the
 *     engine's logits on the export equal the reference's top-16 logits of transformers on the export within 1e-4
 *     of the row's scale;
 *   - the output folder: a non-empty one is refused without --force (exit 1, one line) and replaced with it, one
 *     holding a folder is never replaced, a failed export leaves nothing behind; usage errors exit 2.
 * usage: test_export [--smollm2 | --no-smollm2] PATH/TO/orthros REPO_ROOT [SHARED_FIXTURE_DIR]
 * (--smollm2: only the SmolLM2 part, which ctest runs as export_smollm2, labelled model; --no-smollm2: all else) */
#define _GNU_SOURCE
#include "adapter.h"
#include "orthros.h"
#include "testutil.h"

#include <dirent.h>
#include <stdarg.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *bin, *repo;
static char *root;
static orthros_backend *cpu;

#define NTOK 40

static int32_t tokens[NTOK];

static float *logits(const char *spec, const char *arch, const orthros_arch_opts *base, int *V)
{
    orthros_arch_opts ao;
    if (base) ao = *base;
    else orthros_arch_opts_default(&ao);
    if (arch) ao.arch = arch;
    return tu_model_logits(cpu, spec, &ao, 3, NULL, tokens, NTOK, 16, V);
}

/* Runs `orthros export` with the NULL-terminated arguments after --model and --out; its exit status. */
static int run_export(const char *model, const char *out, const char *log, ...)
{
    char *argv[32] = {(char *)bin, "export", "--model", (char *)model, "--out", (char *)out};
    int n = 6;
    va_list ap;
    va_start(ap, log);
    for (const char *a; n < 31 && (a = va_arg(ap, const char *));) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return tu_run_capture(argv, NULL, NULL, log);
}

static double row_rel_err(const float *a, const float *b, int rows, int V, int *agree)
{
    double worst = 0;
    *agree = 0;
    for (int r = 0; r < rows; r++) {
        double scale = 0, err = 0;
        int ia = 0, ib = 0;
        for (int j = 0; j < V; j++) {
            const float x = a[(size_t)r * V + j], y = b[(size_t)r * V + j];
            scale = fmax(scale, fabs(x));
            err = isnan(y) ? INFINITY : fmax(err, fabs((double)x - y));
            if (x > a[(size_t)r * V + ia]) ia = j;
            if (y > b[(size_t)r * V + ib]) ib = j;
        }
        worst = fmax(worst, err / scale);
        *agree += ia == ib;
    }
    return worst;
}

/* spec (with opts) exported in f32 and bf16 and loaded again: bit-equal logits under every schedule (f32), within
 * bf16's tolerance (bf16). extra: more export arguments (NULL-terminated list, may be NULL). */
static void check_roundtrip(const char *label, const char *spec, const orthros_arch_opts *opts, char *const *extra)
{
    char f32[4300], b16[4300], log[4400];
    snprintf(f32, sizeof f32, "%s/%s-f32", root, label);
    snprintf(b16, sizeof b16, "%s/%s-bf16", root, label);
    snprintf(log, sizeof log, "%s/%s.log", root, label);
    char *argv[40] = {(char *)bin, "export", "--model", (char *)spec, "--out", f32, "--seed", "3"};
    int n = 8;
    for (int i = 0; extra && extra[i]; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    int st = tu_run_capture(argv, NULL, NULL, log);
    CHECK(st == 0, "%s: export exit %d", label, st);
    if (st) {
        tu_log_has(log, "(print)");
        return;
    }
    argv[5] = b16;
    argv[n++] = "--dtype", argv[n++] = "bf16", argv[n] = NULL;
    st = tu_run_capture(argv, NULL, NULL, log);
    CHECK(st == 0, "%s: bf16 export exit %d", label, st);
    /* The export's config reads back as the model's. */
    orthros_model *m = NULL, *e = NULL;
    orthros_arch_opts ao;
    if (opts) ao = *opts;
    else orthros_arch_opts_default(&ao);
    orthros_arch_opts plain;
    orthros_arch_opts_default(&plain);
    if (!orthros_model_load(&m, cpu, spec, &ao, 3) && !orthros_model_load(&e, cpu, f32, &plain, 3)) {
        CHECK(!memcmp(orthros_model_get_config(m), orthros_model_get_config(e), sizeof(orthros_model_config)),
              "%s: the export's config.json reads back as another model config", label);
        CHECK(!strcmp(orthros_model_get_arch(m)->name, orthros_model_get_arch(e)->name) &&
                  orthros_model_get_arch(m)->fmap == orthros_model_get_arch(e)->fmap,
              "%s: the export's schedule is %s, the model's %s", label, orthros_model_get_arch(e)->name,
              orthros_model_get_arch(m)->name);
    } else {
        CHECK(0, "%s: %s", label, orthros_last_error());
    }
    orthros_model_free(m);
    orthros_model_free(e);
    /* Logits: the checkpoint's schedule and each named one that its weights allow. */
    static const char *const archs[] = {NULL, "transformer", "orthros", "linear", "hybrid", "swa"};
    for (size_t k = 0; k < sizeof archs / sizeof *archs; k++) {
        int V1 = 0, V2 = 0, V3 = 0;
        /* The model as exported (its schedule at load), switched: a preset's dummy weights depend on the schedule
         * it is loaded under (its feature maps take fill seeds). */
        float *a = tu_model_logits(cpu, spec, &ao, 3, archs[k], tokens, NTOK, 16, &V1);
        if (!a) {
            /* A schedule the model cannot run (hedgehog maps not loaded under another): neither can the export. */
            float *b = logits(f32, archs[k], NULL, &V2);
            CHECK(b == NULL, "%s under %s: the model fails (%s), its export runs", label, archs[k], orthros_last_error());
            free(b);
            continue;
        }
        float *b = logits(f32, archs[k], NULL, &V2), *c = logits(b16, archs[k], NULL, &V3);
        CHECK(b && V1 == V2 && !memcmp(a, b, sizeof(float) * NTOK * (size_t)V1), "%s under %s: the f32 export's logits differ%s",
              label, archs[k] ? archs[k] : "its schedule", b ? "" : orthros_last_error());
        int agree = 0;
        double err = c && V3 == V1 ? row_rel_err(a, c, NTOK, V1, &agree) : INFINITY;
        CHECK(err < 2e-2 && agree >= NTOK * 3 / 4, "%s under %s: bf16 export within %.3g of the row scale, greedy same at %d/%d",
              label, archs[k] ? archs[k] : "its schedule", err, agree, NTOK);
        printf("%-22s %-12s f32 export bit-equal%s; bf16 export %.2e of the row scale, greedy %d/%d\n", label,
               archs[k] ? archs[k] : "checkpoint", b && !memcmp(a, b, sizeof(float) * NTOK * (size_t)V1) ? "" : " NOT",
               err, agree, NTOK);
        free(a);
        free(b);
        free(c);
    }
}

static void test_fixtures(const char *shared)
{
    char dir[4200];
    DIR *d;
    snprintf(dir, sizeof dir, "%s/data/fixtures", repo);
    CHECK((d = opendir(dir)) != NULL, "%s", dir);
    struct dirent *e;
    int count = 0;
    while (d && (e = readdir(d))) {
        char path[4500], ref[4600];
        snprintf(path, sizeof path, "%s/%.255s", dir, e->d_name);
        snprintf(ref, sizeof ref, "%s/ref.json", path);
        struct stat sb;
        if (e->d_name[0] == '.' || stat(ref, &sb) != 0) continue;
        check_roundtrip(e->d_name, path, NULL, NULL);
        count++;
    }
    if (d) closedir(d);
    CHECK(count >= 5, "only %d fixtures", count);
    if (shared) check_roundtrip("shared-llama-tiny", shared, NULL, NULL);
    char gguf[4200];
    snprintf(gguf, sizeof gguf, "%s/data/gguf/tiny-q4_1/model.gguf", repo);
    check_roundtrip("gguf-tiny-q4_1", gguf, NULL, NULL);
}

/* A preset under a hedgehog orthros schedule: the schedule options become the export's orthros object. */
static void test_preset(void)
{
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = "orthros";
    ao.fmap = ORTHROS_FMAP_HEDGEHOG;
    ao.feature_dim = 4;
    ao.tail = 3;
    char *extra[] = {"--arch", "orthros", "--feature-map", "hedgehog", "--feature-dim", "4", "--tail", "3", NULL};
    check_roundtrip("preset-tiny-hedgehog", "preset:tiny", &ao, extra);
    char path[4400];
    snprintf(path, sizeof path, "%s/preset-tiny-hedgehog-f32/config.json", root);
    cJSON *cfg = tu_load_json(path);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cfg, "orthros");
    CHECK(o && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "architecture")) &&
              !strcmp(cJSON_GetObjectItemCaseSensitive(o, "feature_map")->valuestring, "hedgehog") &&
              cJSON_GetObjectItemCaseSensitive(o, "feature_dim")->valuedouble == 4,
          "the preset's export has no orthros object with the options given");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    CHECK(cJSON_IsArray(arch) && !strcmp(cJSON_GetArrayItem(arch, 0)->valuestring, "LlamaForCausalLM") &&
              !strcmp(cJSON_GetObjectItemCaseSensitive(cfg, "model_type")->valuestring, "llama") &&
              !strcmp(cJSON_GetObjectItemCaseSensitive(cfg, "dtype")->valuestring, "float32"),
          "config.json lacks transformers' fields");
    cJSON_Delete(cfg);
}

/* An adapter directory over llama-tiny (deltas on q and down, feature maps, a hedgehog orthros schedule). */
static void test_adapter(void)
{
    char tiny[4200], dir[4300], path[4400], hex[65];
    snprintf(tiny, sizeof tiny, "%s/data/fixtures/llama-tiny", repo);
    snprintf(dir, sizeof dir, "%s/adapter", root);
    mkdir(dir, 0755);
    tu_tensor t[8] = {0};
    int n = 0;
#define T(nm, nd, a, b, c, seed)                                                                                       \
    do {                                                                                                               \
        snprintf(t[n].name, sizeof t[n].name, "%s", nm);                                                               \
        t[n].ndim = nd, t[n].shape[0] = a, t[n].shape[1] = b, t[n].shape[2] = c;                                       \
        t[n].data = malloc(tu_tensor_numel(&t[n]) * sizeof(float));                                                    \
        tu_random(t[n].data, tu_tensor_numel(&t[n]), seed, 0.3f);                                                      \
        n++;                                                                                                           \
    } while (0)
    T("model.layers.0.self_attn.q_proj.lora_A.weight", 2, 3, 64, 0, 1);
    T("model.layers.0.self_attn.q_proj.lora_B.weight", 2, 64, 3, 0, 2);
    T("model.layers.1.mlp.down_proj.lora_A.weight", 2, 4, 160, 0, 3);
    T("model.layers.1.mlp.down_proj.lora_B.weight", 2, 64, 4, 0, 4);
    for (int l = 0; l < 2; l++) {
        char nm[96];
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.feature_map_q.weight", l);
        T(nm, 3, 4, 16, 5, 10 + (uint64_t)l);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.feature_map_k.weight", l);
        T(nm, 3, 2, 16, 5, 20 + (uint64_t)l);
    }
#undef T
    snprintf(path, sizeof path, "%s/adapter.safetensors", dir);
    CHECK(tu_write_tensors(path, t, n, ORTHROS_DTYPE_BF16, "{\"lora_alpha\": \"5\"}") == 0, "write %s", path);
    for (int i = 0; i < n; i++) free(t[i].data);
    snprintf(path, sizeof path, "%s/model.safetensors", tiny);
    CHECK(orthros_sha256_file(path, hex) == 0, "sha256");
    char cfg[8192];
    snprintf(cfg, sizeof cfg,
             "{\"orthros_base\": {\"path\": \"%s\", \"sha256\": \"%s\"}, \"orthros\": {\"architecture\": \"orthros\", "
             "\"feature_map\": \"hedgehog\", \"feature_dim\": 5, \"tail\": 2}}",
             tiny, hex);
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_text(path, cfg);
    check_roundtrip("adapter-dir", dir, NULL, NULL);
    /* --adapter FILE over the base, exported: the same weights under the base's (transformer) schedule. */
    snprintf(path, sizeof path, "%s/adapter.safetensors", dir);
    char out[4400], log[4400], out2[4400];
    snprintf(out, sizeof out, "%s/adapter-file", root);
    snprintf(out2, sizeof out2, "%s/adapter-dir-f32", root);
    snprintf(log, sizeof log, "%s/adapter-file.log", root);
    CHECK(run_export(tiny, out, log, "--adapter", path, "--feature-map", "hedgehog", "--feature-dim", "5", "--arch", "orthros",
                     "--tail", "2", NULL) == 0,
          "export --adapter FILE");
    char a[4500], b[4500];
    snprintf(a, sizeof a, "%s/model.safetensors", out);
    snprintf(b, sizeof b, "%s/model.safetensors", out2);
    size_t la = 0, lb = 0;
    char *ta = tu_slurp(a, &la), *tb = tu_slurp(b, &lb);
    CHECK(ta && tb && la == lb && !memcmp(ta, tb, la), "--adapter FILE and the adapter directory export other weights");
    free(ta);
    free(tb);
    printf("adapter: --adapter FILE over the base exports the same model.safetensors as the adapter directory\n");
}

/* A directory's tokenizer files travel as they are. */
static void test_tokenizer_copy(void)
{
    char dir[4300], src[4600], dst[4600];
    snprintf(dir, sizeof dir, "%s/with-tokenizer", root);
    mkdir(dir, 0755);
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(src, sizeof src, "%s/%s/%s", repo, i < 2 ? "data/fixtures/llama-tiny" : "data/tokenizers/smollm2", files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        CHECK(symlink(src, dst) == 0, "link %s", dst);
    }
    char out[4400], log[4400];
    snprintf(out, sizeof out, "%s/with-tokenizer-export", root);
    snprintf(log, sizeof log, "%s/with-tokenizer.log", root);
    CHECK(run_export(dir, out, log, NULL) == 0, "export of a directory with a tokenizer");
    for (int i = 2; i < 4; i++) {
        snprintf(src, sizeof src, "%s/data/tokenizers/smollm2/%s", repo, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", out, files[i]);
        size_t la = 0, lb = 0;
        char *a = tu_slurp(src, &la), *b = tu_slurp(dst, &lb);
        CHECK(a && b && la == lb && !memcmp(a, b, la), "%s is not a copy of %s", dst, src);
        free(a);
        free(b);
    }
    snprintf(dst, sizeof dst, "%s/config.json", out);
    cJSON *cfg = tu_load_json(dst);
    CHECK(cJSON_GetObjectItemCaseSensitive(cfg, "bos_token_id") &&
              cJSON_GetObjectItemCaseSensitive(cfg, "bos_token_id")->valuedouble == 1,
          "config.json's bos_token_id is not the tokenizer's (<|im_start|> = 1)");
    cJSON_Delete(cfg);
    printf("tokenizer.json and tokenizer_config.json of a directory copied as they are\n");
}

/* ---- SmolLM2 against the transformers reference ---- */

static void test_smollm2(void)
{
    char gguf[4200], refp[4200], out[4300], log[4400];
    snprintf(gguf, sizeof gguf, "%s/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf", repo);
    snprintf(refp, sizeof refp, "%s/data/text/smollm2-export.json", repo);
    struct stat sb;
    if (stat(gguf, &sb) != 0) {
        int ci = tu_under_ci();
        CHECK(!ci, "%s is missing under CI (ci/test.sh runs ci/fetch-model.sh first)", gguf);
        printf("SKIP SmolLM2 export: %s is missing (ci/fetch-model.sh fetches it)\n", gguf);
        return;
    }
    snprintf(out, sizeof out, "%s/smollm2", root);
    snprintf(log, sizeof log, "%s/smollm2.log", root);
    int st = run_export(gguf, out, log, NULL);
    CHECK(st == 0, "SmolLM2 export: exit %d", st);
    if (st) return;
    cJSON *ref = tu_load_json(refp);
    CHECK(ref != NULL, "%s", refp);
    orthros_tokenizer *tok = NULL;
    CHECK(orthros_tokenizer_load(&tok, out) == 0, "the export's tokenizer: %s", orthros_last_error());
    if (!ref || !tok) return;
    orthros_model *m = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    CHECK(orthros_model_load(&m, cpu, out, &ao, 1) == 0, "%s", orthros_last_error());
    int V = m ? orthros_model_get_config(m)->vocab : 0;
    double worst = 0;
    int rows = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(ref, "prompts"))
    {
        const char *text = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        int n_want = 0;
        int32_t *want = tu_json_ints(cJSON_GetObjectItemCaseSensitive(p, "ids"), &n_want);
        int32_t *ids = NULL;
        int n = 0;
        CHECK(orthros_tokenizer_encode(tok, text, strlen(text), ORTHROS_TOK_ADD_SPECIAL, &ids, &n) == 0, "encode");
        int same = want && n == n_want;
        for (int i = 0; same && i < n; i++) same = ids[i] == want[i];
        free(want);
        CHECK(same, "the export's tokenizer: other ids than AutoTokenizer's for \"%.40s\"", text);
        if (!m || !same) {
            free(ids);
            continue;
        }
        float *lg = malloc(sizeof(float) * (size_t)n * (size_t)V);
        orthros_session *s = NULL;
        CHECK(orthros_session_init(&s, m, 1, n, 0) == 0 && orthros_prefill(s, 0, ids, n, lg, NULL) == 0, "%s",
              orthros_last_error());
        orthros_session_free(s);
        const cJSON *row;
        cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(p, "rows"))
        {
            int pos = (int)cJSON_GetObjectItemCaseSensitive(row, "position")->valuedouble;
            int nk = 0, nv = 0;
            int32_t *tid = tu_json_ints(cJSON_GetObjectItemCaseSensitive(row, "top_ids"), &nk);
            double *tv = tu_json_nums(cJSON_GetObjectItemCaseSensitive(row, "top_logits"), &nv);
            CHECK(tid && tv && nk == nv && nv > 0, "\"%.30s\" position %d: top ids and logits are not two arrays of one length",
                  text, pos);
            double scale = 0, err = 0;
            for (int k = 0; tv && k < nv; k++) scale = fmax(scale, fabs(tv[k]));
            for (int k = 0; tid && tv && k < nk && k < nv; k++)
                err = fmax(err, fabs(lg[(size_t)pos * V + tid[k]] - tv[k]));
            free(tid), free(tv);
            /* The reference is rounded to 5 decimals. */
            CHECK(err <= 1e-4 * scale + 1e-5, "\"%.30s\" position %d: %.3g from transformers' logits (scale %.3g)", text, pos,
                  err, scale);
            worst = fmax(worst, err / scale);
            rows++;
        }
        free(lg);
        free(ids);
    }
    /* The whole tokenizer corpus: the ids of SmolLM2's published tokenizer.json. */
    char corpus[4200];
    snprintf(corpus, sizeof corpus, "%s/data/text/tokenizer-corpus.jsonl", repo);
    FILE *f = fopen(corpus, "r");
    char *line = NULL;
    size_t cap = 0;
    int texts = 0, equal = 0;
    while (f && getline(&line, &cap, f) > 0) {
        cJSON *rec = cJSON_Parse(line);
        const cJSON *hx = cJSON_GetObjectItemCaseSensitive(rec, "hex");
        CHECK(cJSON_IsString(hx), "%s: a line without its text as \"hex\"", corpus);
        if (!cJSON_IsString(hx)) {
            cJSON_Delete(rec);
            continue;
        }
        const char *hex = hx->valuestring;
        size_t len = strlen(hex) / 2;
        char *text = malloc(len + 1);
        for (size_t i = 0; i < len; i++) sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&text[i]);
        int32_t *ids = NULL;
        int n = 0;
        int n_want = 0;
        int32_t *want = tu_json_ints(cJSON_GetObjectItemCaseSensitive(rec, "ids"), &n_want);
        int same = want && orthros_tokenizer_encode(tok, text, len, ORTHROS_TOK_ADD_SPECIAL, &ids, &n) == 0 &&
                   n == n_want;
        for (int i = 0; same && i < n; i++) same = ids[i] == want[i];
        free(want);
        texts++;
        equal += same;
        free(ids);
        free(text);
        cJSON_Delete(rec);
    }
    free(line);
    if (f) fclose(f);
    CHECK(texts > 300 && equal == texts, "the export's tokenizer gives the published ids on %d of %d corpus texts", equal, texts);
    printf("SmolLM2 export: %d rows within %.2e of transformers' (on the export) row scale; tokenizer: the reference's "
           "prompt ids, %d/%d corpus texts\n", rows, worst, equal, texts);
    orthros_model_free(m);
    orthros_tokenizer_free(tok);
    cJSON_Delete(ref);
}

/* ---- the output folder ---- */

static int count_hidden(void)
{
    DIR *d = opendir(root);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void expect_status(const char *label, int want, const char *log, const char *needle, int st)
{
    CHECK(st == want, "%s: exit %d, not %d", label, st, want);
    size_t len = 0;
    char *err = tu_slurp(log, &len);
    char *nl = err ? strchr(err, '\n') : NULL;
    CHECK(err && nl && nl[1] == '\0', "%s: not one stderr line: %s", label, err ? err : "");
    CHECK(err && strstr(err, needle), "%s: stderr \"%s\" lacks \"%s\"", label, err ? err : "", needle);
    printf("%-40s -> %s", label, err && len ? err : "(nothing)\n");
    free(err);
}

static void test_out_folder(void)
{
    char out[4300], log[4400], path[4500];
    snprintf(out, sizeof out, "%s/out", root);
    snprintf(log, sizeof log, "%s/out.log", root);
    mkdir(out, 0755);
    CHECK(run_export("preset:tiny", out, log, NULL) == 0, "an empty folder is filled");
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    struct stat sb;
    CHECK(stat(path, &sb) == 0, "no model.safetensors");
    int hidden = count_hidden();
    expect_status("a non-empty folder without --force", 1, log, "is not empty: --force replaces it",
                  run_export("preset:tiny", out, log, "--seed", "2", NULL));
    CHECK(run_export("preset:tiny", out, log, "--seed", "2", "--force", NULL) == 0, "--force replaces the export");
    snprintf(path, sizeof path, "%s/sub", out);
    mkdir(path, 0755);
    expect_status("a folder holding a folder, --force", 1, log, "which is not a regular file",
                  run_export("preset:tiny", out, log, "--force", NULL));
    snprintf(path, sizeof path, "%s/a-file", root);
    tu_write_text(path, "x");
    expect_status("--out naming a file", 1, log, "exists and is not a folder", run_export("preset:tiny", path, log, NULL));
    snprintf(path, sizeof path, "%s/never", root);
    expect_status("a model that does not load", 1, log, "no-such-model", run_export("no-such-model", path, log, NULL));
    CHECK(stat(path, &sb) != 0, "a failed export left %s", path);
    CHECK(count_hidden() == hidden, "a failed or replaced export left a temporary folder behind");
    char gguf[4200];
    snprintf(path, sizeof path, "%s/never2", root);
    snprintf(gguf, sizeof gguf, "%s/data/gguf/tiny-q4_1/model.gguf", repo);
    expect_status("--dtype f16", 2, log, "--dtype f16: f32 or bf16", run_export(gguf, path, log, "--dtype", "f16", NULL));
    char *argv[] = {(char *)bin, "export", "--model", "preset:tiny", NULL};
    expect_status("no --out", 2, log, "--model and --out are required", tu_run_capture(argv, NULL, NULL, log));
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

int main(int argc, char **argv)
{
    int parts = 3; /* 1: the SmolLM2 part, 2: the rest */
    if (argc > 1 && !strcmp(argv[1], "--smollm2")) parts = 1, argc--, argv++;
    else if (argc > 1 && !strcmp(argv[1], "--no-smollm2")) parts = 2, argc--, argv++;
    if (argc < 3) {
        fprintf(stderr, "usage: test_export [--smollm2 | --no-smollm2] PATH/TO/orthros REPO_ROOT [SHARED_FIXTURE_DIR]\n");
        return 2;
    }
    bin = argv[1];
    static char repo_abs[4096];
    if (!realpath(argv[2], repo_abs)) return 2;
    repo = repo_abs;
    root = tu_tempdir();
    if (!root || orthros_backend_cpu_create(&cpu)) return 1;
    for (int i = 0; i < NTOK; i++) tokens[i] = (int32_t)(orthros_uniform(9, (uint64_t)i) * 250.0f);
    if (parts & 2) {
        test_fixtures(argc > 3 ? argv[3] : NULL);
        test_preset();
        test_adapter();
        test_tokenizer_copy();
        test_out_folder();
    }
    if (parts & 1) test_smollm2();
    orthros_backend_free(cpu);
    if (!tu_failed) nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return tu_finish();
}
