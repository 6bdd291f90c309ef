/* The converted fixture (data/fixtures/llama-tiny-converted, made by data/make_converted_fixture.py): llama-tiny's
 * weights with hedgehog feature maps, window gates and an `orthros` object, and reference logits of the linear formula
 * of docs/converted-models.md computed by that script in float64 from the formula itself. For every case (orthros
 * tails 1 and 4, linear, hybrid; phi before and after RoPE; windows 0, 1, 4 and longer than the prompt) the cpu
 * backend's logits of every prompt position must lie within the tolerance of the reference, at two chunk sizes that
 * agree bit for bit; decoding the last positions after a shorter prefill must give the same rows (for orthros, a
 * prefill with tail 1 followed by 3 decoded tokens is the reference of tail 4). The checkpoint's own schedule (its
 * `orthros` object, options unset) must be the case it names.
 * usage: test_converted DIR [TOLERANCE] */
#include "orthros.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static orthros_backend *cpu;

/* Prefill logits [n][V] of tok under ao at the given chunk size, or, with n1 < n, prefill n1 then decode the rest. */
static float *run(const char *dir, const orthros_arch_opts *ao, const int32_t *tok, int n, int n1, int chunk, int V)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    float *out = malloc(sizeof(float) * (size_t)n * (size_t)V);
    int32_t next;
    int rc = orthros_model_load(&m, cpu, dir, ao, 0);
    if (!rc) rc = orthros_session_init(&s, m, 1, n, chunk);
    if (!rc) rc = orthros_prefill(s, 0, tok, n1, out, &next);
    for (int i = n1; !rc && i < n; i++) rc = orthros_decode(s, &tok[i], &next, out + (size_t)i * V);
    if (rc) {
        fprintf(stderr, "%s: %s\n", dir, orthros_last_error());
        free(out);
        out = NULL;
    }
    orthros_session_free(s);
    orthros_model_free(m);
    return out;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(it) ? it->valuestring : "";
}

static int int_of(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(it) ? (int)it->valuedouble : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_converted DIR [TOLERANCE]\n");
        return 2;
    }
    const char *dir = argv[1];
    double tol = argc > 2 ? atof(argv[2]) : 1e-4;
    char path[4096];
    snprintf(path, sizeof path, "%s/converted.json", dir);
    cJSON *ref = tu_load_json(path);
    if (!ref) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(ref, "tokens"), *cases = cJSON_GetObjectItemCaseSensitive(ref, "cases");
    int n = 0, V = int_of(ref, "vocab"), nc = cJSON_GetArraySize(cases);
    int32_t *tok = tu_json_ints(toks, &n);
    if (!tok) {
        fprintf(stderr, "%s: tokens missing or malformed\n", path);
        return 1;
    }
    size_t per = (size_t)n * (size_t)V;
    float *want = malloc(sizeof(float) * per * (size_t)nc);
    snprintf(path, sizeof path, "%s/%s", dir, str_of(ref, "logits_file"));
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(want, sizeof(float), per * (size_t)nc, f) == per * (size_t)nc, "read %s", path);
    if (f) fclose(f);
    if (orthros_backend_cpu_create(&cpu)) {
        free(tok), free(want);
        return 1;
    }

    double worst = 0;
    for (int c = 0; c < nc; c++) {
        const cJSON *cs = cJSON_GetArrayItem(cases, c);
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        ao.arch = str_of(cs, "arch");
        ao.tail = int_of(cs, "tail");
        ao.hybrid_every = int_of(cs, "hybrid_every");
        orthros_fmap_rope r = ORTHROS_FMAP_ROPE_BEFORE;
        CHECK(orthros_fmap_rope_parse(str_of(cs, "feature_map_rope"), &r) == 0, "case %d: placement", c);
        ao.fmap_rope = (int)r;
        ao.local_window = int_of(cs, "local_window");
        const float *ref_c = want + per * (size_t)int_of(cs, "index");
        char label[128];
        snprintf(label, sizeof label, "%s tail %d every %d phi %s window %d", ao.arch, ao.tail, ao.hybrid_every,
                 str_of(cs, "feature_map_rope"), ao.local_window);
        float *whole = run(dir, &ao, tok, n, n, n, V), *chunked = run(dir, &ao, tok, n, n, 5, V);
        CHECK(whole && chunked, "%s: a run failed", label);
        if (whole && chunked) {
            double err = tu_max_abs_diff(whole, ref_c, per);
            worst = fmax(worst, err);
            printf("%-44s max abs logit error %.3g (tolerance %.3g)\n", label, err, tol);
            CHECK(err <= tol, "%s: logits differ from the reference by %.3g", label, err);
            CHECK(!memcmp(whole, chunked, sizeof(float) * per), "%s: chunks of %d and 5 differ", label, n);
        }
        free(whole), free(chunked);
        /* Decoding the last positions. */
        int n1 = n - 4;
        if (!strcmp(ao.arch, "orthros")) {
            if (ao.tail != 4) continue;
            ao.tail = 1, n1 = n - 3;
        }
        float *dec = run(dir, &ao, tok, n, n1, 7, V);
        double err = dec ? tu_max_abs_diff(dec, ref_c, per) : INFINITY;
        printf("%-44s prefill %d + decode %d: max abs logit error %.3g\n", label, n1, n - n1, err);
        CHECK(err <= tol, "%s: prefill %d + decode differs from the reference by %.3g", label, n1, err);
        free(dec);
    }
    /* The checkpoint's own schedule: its orthros object names orthros, tail 1, phi after, window 4. */
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    float *own = run(dir, &ao, tok, n, n, n, V);
    int found = 0;
    for (int c = 0; c < nc; c++) {
        const cJSON *cs = cJSON_GetArrayItem(cases, c);
        if (strcmp(str_of(cs, "arch"), "orthros") || int_of(cs, "tail") != 1 ||
            strcmp(str_of(cs, "feature_map_rope"), "after") || int_of(cs, "local_window") != 4)
            continue;
        found = 1;
        double err = own ? tu_max_abs_diff(own, want + per * (size_t)int_of(cs, "index"), per) : INFINITY;
        printf("the checkpoint's own schedule (options unset): max abs logit error %.3g\n", err);
        CHECK(err <= tol, "the checkpoint's own schedule differs from its case by %.3g", err);
    }
    CHECK(found, "no case of orthros tail 1, phi after, window 4");
    printf("%d cases: max abs logit error %.3g\n", nc, worst);
    free(own);
    free(tok);
    free(want);
    cJSON_Delete(ref);
    orthros_backend_free(cpu);
    return tu_finish();
}
