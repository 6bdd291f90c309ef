/* A Hugging Face fixture directory (config.json, model.safetensors, logits.f32, ref.json made by transformers):
 * the cpu backend's `transformer` logits must lie within the tolerance of the reference at every position, and
 * the greedy continuation must match exactly.
 * usage: test_fixtures DIR [TOLERANCE] */
#include "orthros.h"
#include "safetensors.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_fixtures DIR [TOLERANCE]\n");
        return 2;
    }
    const char *dir = argv[1];
    double tol = argc > 2 ? atof(argv[2]) : 1e-4;
    char path[4096], *text = NULL;
    snprintf(path, sizeof path, "%s/ref.json", dir);
    if (orthros_read_text_file(&text, path, 1 << 24)) {
        fprintf(stderr, "cannot read %s: %s\n", path, orthros_last_error());
        return 1;
    }
    cJSON *ref = cJSON_Parse(text);
    free(text);
    int n = 0, np = 0, ng = 0;
    int32_t *tokens = tu_json_ints(cJSON_GetObjectItem(ref, "tokens"), &n);
    const cJSON *greedy = cJSON_GetObjectItem(ref, "greedy");
    int32_t *prompt = tu_json_ints(cJSON_GetObjectItem(greedy, "prompt"), &np);
    int32_t *want = tu_json_ints(cJSON_GetObjectItem(greedy, "generated"), &ng);
    const cJSON *lfj = cJSON_GetObjectItem(ref, "logits_file");
    if (!tokens || !prompt || !want || !cJSON_IsString(lfj)) {
        fprintf(stderr, "%s: tokens, greedy.prompt, greedy.generated or logits_file missing or malformed\n", path);
        free(tokens), free(prompt), free(want);
        return 1;
    }
    const char *lf = lfj->valuestring;

    orthros_backend *be = NULL;
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = "transformer";
    int rc = orthros_backend_cpu_create(&be);
    if (!rc) rc = orthros_model_load(&m, be, dir, &ao, 0);
    CHECK(rc == 0, "load %s: %s", dir, orthros_last_error());
    if (rc) {
        free(tokens), free(prompt), free(want);
        return tu_finish();
    }
    int V = orthros_model_get_config(m)->vocab;

    float *ref_logits = malloc(sizeof(float) * (size_t)n * (size_t)V), *got = malloc(sizeof(float) * (size_t)n * (size_t)V);
    snprintf(path, sizeof path, "%s/%s", dir, lf);
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(ref_logits, sizeof(float), (size_t)n * (size_t)V, f) == (size_t)n * (size_t)V, "read %s", path);
    if (f) fclose(f);

    /* Two chunk sizes: the whole prompt at once, and an awkward one. */
    int chunks[2] = {n, 7};
    for (int c = 0; c < 2; c++) {
        rc = orthros_session_init(&s, m, 1, n, chunks[c]);
        CHECK(rc == 0, "session: %s", orthros_last_error());
        if (rc) break;
        rc = orthros_prefill(s, 0, tokens, n, got, NULL);
        CHECK(rc == 0, "prefill: %s", orthros_last_error());
        double err = tu_max_abs_diff(got, ref_logits, (size_t)n * (size_t)V);
        int worst_pos = 0;
        for (int i = 0; i < n; i++)
            if (tu_max_abs_diff(got + (size_t)i * V, ref_logits + (size_t)i * V, (size_t)V) >= err) worst_pos = i;
        printf("%s: chunk %d: max abs logit error %.3g over %d positions (worst at %d), tolerance %.3g\n", dir, chunks[c],
               err, n, worst_pos, tol);
        CHECK(err <= tol, "logits differ by %.3g > %.3g", err, tol);
        orthros_session_free(s);
        s = NULL;
    }

    int32_t *gen = calloc((size_t)ng + 1, sizeof *gen);
    rc = orthros_session_init(&s, m, 1, np + ng, 0);
    int count = rc ? rc : orthros_generate(s, prompt, np, ng, gen);
    CHECK(count == ng, "generated %d tokens, expected %d (%s)", count, ng, count < 0 ? orthros_last_error() : "");
    int same = count == ng;
    for (int i = 0; same && i < ng; i++) same = gen[i] == want[i];
    CHECK(same, "greedy continuation differs from transformers'");
    printf("%s: greedy %s (%d tokens)\n", dir, same ? "matches" : "DIFFERS", ng);

    orthros_session_free(s);
    orthros_model_free(m);
    orthros_backend_free(be);
    cJSON_Delete(ref);
    free(tokens);
    free(prompt);
    free(want);
    free(gen);
    free(ref_logits);
    free(got);
    return tu_finish();
}
