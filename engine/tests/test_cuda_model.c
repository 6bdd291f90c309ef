/* The whole model on the cuda backend against the cpu backend, on every fixture in data/fixtures and every
 * architecture: per prompt position the argmax must agree (at least 90% of positions: bf16 weights and
 * activations can flip near-ties) and the logit error must stay under 5% of the logits' range; decode logits
 * after the prompt are compared the same way. The linear formula of a converted model too (docs/converted-models.md):
 * phi after RoPE and local windows of 3, 16 and 64 over prefill chunks of 64 (the window crosses the chunk boundary)
 * on every fixture, and on llama-tiny-converted (hedgehog maps, gates, phi after RoPE, window 4 in its config) every
 * architecture under its own settings. Skips (exit 77) without a GPU.
 * usage: test_cuda_model FIXTURE_DIR... */
#include "orthros.h"
#include "backend.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *arch;
    int window, fmap_rope, local_window; /* -1: the checkpoint's or the default */
} arch_case;

static float *run(orthros_backend *be, const char *dir, const arch_case *a, const int32_t *tok, int n, int *V,
                  float *decode_logits)
{
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    ao.arch = a->arch;
    ao.window = a->window;
    ao.fmap_rope = a->fmap_rope;
    ao.local_window = a->local_window;
    if (a->local_window > 0 || a->fmap_rope > 0) ao.hybrid_every = 2;
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    float *out = NULL;
    int32_t next, nn;
    if (orthros_model_load(&m, be, dir, &ao, 1) || orthros_session_init(&s, m, 1, n + 1, 64)) goto fail;
    *V = orthros_model_get_config(m)->vocab;
    out = malloc(sizeof(float) * (size_t)n * (size_t)*V);
    if (orthros_prefill(s, 0, tok, n, out, &next) || orthros_decode(s, &next, &nn, decode_logits)) {
        free(out);
        out = NULL;
    }
fail:
    if (!out) fprintf(stderr, "%s on %s: %s\n", a->arch, orthros_backend_name(be), orthros_last_error());
    orthros_session_free(s);
    orthros_model_free(m);
    return out;
}

static void compare_rows(const char *label, const float *ref, const float *got, int rows, int V)
{
    int agree;
    double err, range;
    tu_logit_agreement(ref, got, rows, V, &agree, &err, &range);
    double rel = err / range;
    printf("%-40s argmax agreement %3d/%3d, max abs err %.4f (%.2f%% of the logit range)\n", label, agree, rows, err,
           100 * rel);
    CHECK(agree >= (rows * 9 + 9) / 10, "%s: argmax agrees at %d of %d positions", label, agree, rows);
    CHECK(rel < 0.05, "%s: logit error %.4f is %.1f%% of the range", label, err, 100 * rel);
}

int main(int argc, char **argv)
{
    if (!orthros_cuda_available()) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    orthros_backend *cpu = NULL, *gpu = NULL;
    if (orthros_backend_cpu_create(&cpu) || orthros_backend_cuda_create(&gpu)) {
        fprintf(stderr, "backend: %s\n", orthros_last_error());
        return 1;
    }
    static const arch_case archs[] = {{"transformer", -1, -1, -1}, {"orthros", -1, -1, -1}, {"linear", -1, -1, -1},
                                      {"swa", 16, -1, -1},         {"hybrid", -1, -1, -1},
                                      {"orthros", -1, ORTHROS_FMAP_ROPE_AFTER, 64},
                                      {"orthros", -1, ORTHROS_FMAP_ROPE_BEFORE, 16},
                                      {"linear", -1, ORTHROS_FMAP_ROPE_BEFORE, 64},
                                      {"linear", -1, ORTHROS_FMAP_ROPE_AFTER, 0},
                                      {"hybrid", -1, ORTHROS_FMAP_ROPE_AFTER, 3}};
    for (int f = 1; f < argc; f++) {
        int n = 100, V = 0;
        int32_t tok[100];
        for (int i = 0; i < n; i++) tok[i] = (int32_t)(orthros_uniform(77, (uint64_t)i) * 200.0f);
        for (size_t a = 0; a < sizeof archs / sizeof *archs; a++) {
            float *dref = malloc(sizeof(float) * 1024 * 1024), *dgot = malloc(sizeof(float) * 1024 * 1024);
            float *ref = run(cpu, argv[f], &archs[a], tok, n, &V, dref), *got = run(gpu, argv[f], &archs[a], tok, n, &V, dgot);
            char label[256];
            char arch[64];
            snprintf(arch, sizeof arch, "%s", archs[a].arch);
            if (archs[a].fmap_rope >= 0)
                snprintf(arch + strlen(arch), sizeof arch - strlen(arch), " phi %s lw %d",
                         orthros_fmap_rope_name((orthros_fmap_rope)archs[a].fmap_rope), archs[a].local_window);
            snprintf(label, sizeof label, "%s %s prefill", strrchr(argv[f], '/') ? strrchr(argv[f], '/') + 1 : argv[f], arch);
            CHECK(ref && got, "%s: a run failed", label);
            if (ref && got) {
                compare_rows(label, ref, got, n, V);
                snprintf(label + strlen(label) - 7, 8, "decode");
                compare_rows(label, dref, dgot, 1, V);
            }
            free(ref), free(got), free(dref), free(dgot);
        }
    }
    orthros_backend_free(gpu);
    orthros_backend_free(cpu);
    return tu_finish();
}
