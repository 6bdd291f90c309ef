/* Tensor parallel on the cuda backend, through the orthros binary (docs/tensor-parallel.md):
 *   - --tp 1 through the NCCL communicator: run as rank 0 of a launched world of one (WORLD_SIZE=1, as
 *     `torchrun --nproc-per-node 1` would start it), every layer's two all-reduces go through NCCL; the logits
 *     and the generated tokens must be those of the plain run, bit for bit (a one-rank sum is the identity);
 *   - with 2 or more GPUs, --tp 2 (the binary starts its two processes itself) against --tp 1: per position the
 *     argmax agrees (at least 90%: bf16 partial sums can flip near-ties) and the logit error stays under 2% of
 *     the logits' range, for transformer and orthros; generate and the all-reduce bench run;
 *   - with fewer GPUs than --tp asks for, a clear error.
 * Skips (exit 77) without a GPU or without NCCL.
 * usage: test_tp_cuda PATH/TO/orthros FIXTURE_DIR... */
#define _GNU_SOURCE
#include "orthros.h"
#include "backend.h"
#include "testutil.h"
#include "tp.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *bin;
static char *tmp;

static const char *const tokens = "5,17,42,9,77,3,101,64,8,33,21,90,12,6,55,71,2,39,48,27,13,88,60,4,31,19,50,7,95,11";
#define NTOK 30

/* Runs `orthros logits` on dir and returns its [NTOK][V] logits (V set), or NULL. */
static float *logits(const char *dir, const char *arch, int tp, int world1, int *V)
{
    char out[4200], log[4200], tps[16];
    snprintf(out, sizeof out, "%s/logits-%d-%d.f32", tmp, tp, world1);
    snprintf(log, sizeof log, "%s/logits.log", tmp);
    snprintf(tps, sizeof tps, "%d", tp);
    char *argv[] = {(char *)bin, "logits", "--model", (char *)dir, "--arch", (char *)arch, "--tokens", (char *)tokens,
                    "--out", out, "--device", "cuda", "--tp", tps, NULL};
    if (world1) { /* rank 0 of a world of one: torchrun --nproc-per-node 1 */
        setenv("WORLD_SIZE", "1", 1);
        setenv("RANK", "0", 1);
        setenv("LOCAL_RANK", "0", 1);
    }
    int st = tu_run(argv, log);
    unsetenv("WORLD_SIZE");
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    size_t len = 0;
    char *data = st == 0 ? tu_slurp(out, &len) : NULL;
    if (!data || len % (NTOK * sizeof(float))) {
        char *l = tu_slurp(log, NULL);
        fprintf(stderr, "logits %s %s --tp %d%s: exit %d\n%s", dir, arch, tp, world1 ? " (WORLD_SIZE=1)" : "", st,
                l ? l : "");
        free(l);
        free(data);
        return NULL;
    }
    *V = (int)(len / (NTOK * sizeof(float)));
    return (float *)data;
}

static void compare(const char *label, const float *ref, const float *got, int V, int exact)
{
    int agree;
    double err, range;
    tu_logit_agreement(ref, got, NTOK, V, &agree, &err, &range);
    double rel = err / range;
    printf("%-50s argmax agreement %2d/%2d, max abs err %.4g (%.3f%% of the logit range)\n", label, agree, NTOK, err,
           100 * rel);
    if (exact) {
        CHECK(err == 0, "%s: the logits through a one-rank NCCL communicator differ from the plain run by %.3g", label, err);
    } else {
        CHECK(agree >= (NTOK * 9 + 9) / 10, "%s: argmax agrees at %d of %d positions", label, agree, NTOK);
        CHECK(rel < 0.02, "%s: logit error %.4g is %.2f%% of the range", label, err, 100 * rel);
    }
}

static int kv_heads_of(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = tu_slurp(path, NULL);
    orthros_model_config cfg;
    int kv = text && !orthros_config_parse(&cfg, text) ? cfg.n_kv_heads : 0;
    free(text);
    return kv;
}

static char *generate(const char *dir, int tp, int world1)
{
    char log[4200], tps[16];
    snprintf(log, sizeof log, "%s/generate-%d-%d.log", tmp, tp, world1);
    snprintf(tps, sizeof tps, "%d", tp);
    char *argv[] = {(char *)bin, "generate", "--model", (char *)dir, "--arch", "orthros", "--tokens", "5,17,42,9,77,3",
                    "--max-new", "12", "--device", "cuda", "--tp", tps, NULL};
    if (world1) {
        setenv("WORLD_SIZE", "1", 1);
        setenv("RANK", "0", 1);
    }
    int st = tu_run(argv, log);
    unsetenv("WORLD_SIZE");
    unsetenv("RANK");
    char *line = tu_generated_line(log);
    CHECK(st == 0 && line, "generate --tp %d%s: exit %d (log %s)", tp, world1 ? " (WORLD_SIZE=1)" : "", st, log);
    return line;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_tp_cuda PATH/TO/orthros FIXTURE_DIR...\n");
        return 2;
    }
    bin = argv[1];
    int gpus = orthros_cuda_device_count();
    if (!orthros_cuda_available() || gpus < 1) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    if (orthros_nccl_load()) {
        printf("SKIP: no NCCL: %s\n", orthros_last_error());
        return 77;
    }
    printf("%d GPU(s), NCCL %d\n", gpus, orthros_nccl_version());
    tmp = tu_tempdir();
    static const char *const archs[] = {"transformer", "orthros"};
    for (int f = 2; f < argc; f++)
        for (int a = 0; a < 2; a++) {
            int V = 0, V1 = 0;
            char label[512];
            float *plain = logits(argv[f], archs[a], 1, 0, &V), *nccl1 = logits(argv[f], archs[a], 1, 1, &V1);
            snprintf(label, sizeof label, "%s %s, NCCL world of 1", strrchr(argv[f], '/') + 1, archs[a]);
            CHECK(plain && nccl1 && V == V1, "%s: a run failed", label);
            if (plain && nccl1 && V == V1) compare(label, plain, nccl1, V, 1);
            /* A fixture whose kv heads 2 does not divide is refused (the cpu test checks the message). */
            if (gpus >= 2 && kv_heads_of(argv[f]) % 2 == 0) {
                float *tp2 = logits(argv[f], archs[a], 2, 0, &V1);
                snprintf(label, sizeof label, "%s %s, --tp 2 vs --tp 1", strrchr(argv[f], '/') + 1, archs[a]);
                CHECK(plain && tp2 && V == V1, "%s: a run failed", label);
                if (plain && tp2 && V == V1) compare(label, plain, tp2, V, 0);
                free(tp2);
            }
            free(plain), free(nccl1);
        }
    char *g1 = generate(argv[2], 1, 0), *gw = generate(argv[2], 1, 1);
    CHECK(g1 && gw && !strcmp(g1, gw), "generate through a one-rank NCCL communicator: %s vs %s", g1 ? g1 : "",
          gw ? gw : "");
    free(gw);
    char log[4200], want[64];
    snprintf(log, sizeof log, "%s/err.log", tmp);
    if (gpus >= 2) {
        char *g2 = generate(argv[2], 2, 0);
        printf("generate --tp 1: %s\ngenerate --tp 2: %s\n", g1 ? g1 : "", g2 ? g2 : "");
        free(g2);
        /* The all-reduce alone, measured by the bench. */
        char json[4200];
        snprintf(json, sizeof json, "%s/allreduce.json", tmp);
        char *bv[] = {(char *)bin, "bench", "--model", (char *)argv[2], "--device", "cuda", "--tp", "2", "--arch",
                      "transformer", "--phase", "allreduce", "--ctx", "1,4096", "--reps", "3", "--json", json, NULL};
        int st = tu_run(bv, log);
        cJSON *r = st == 0 ? tu_load_json(json) : NULL;
        const cJSON *m = r ? cJSON_GetArrayItem(cJSON_GetObjectItem(r, "measurements"), 1) : NULL;
        const cJSON *algbw = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "throughput"), "tbps");
        CHECK(algbw && algbw->valuedouble > 0, "bench --phase allreduce --tp 2: exit %d, no bandwidth", st);
        /* Bus bandwidth of 2 ranks: 2 (2 - 1) / 2 = 1 times the algorithm bandwidth. */
        if (algbw) printf("all-reduce of 4096 rows: bus bandwidth %.1f GB/s\n", algbw->valuedouble * 1e3);
        cJSON_Delete(r);
    }
    free(g1);
    /* More ranks than GPUs: refused before anything starts. */
    char tps[16];
    snprintf(tps, sizeof tps, "%d", gpus + 1);
    char *ev[] = {(char *)bin, "logits", "--model", (char *)argv[2], "--tokens", "1,2", "--out", "/dev/null", "--device",
                  "cuda", "--tp", tps, NULL};
    int st = tu_run(ev, log);
    char *text = tu_slurp(log, NULL);
    snprintf(want, sizeof want, "needs %d GPUs, %d found", gpus + 1, gpus);
    CHECK(st == 1 && text && strstr(text, want), "--tp %d on %d GPUs: exit %d, %s", gpus + 1, gpus, st, text ? text : "");
    printf("--tp %d on %d GPU(s): %s", gpus + 1, gpus, text ? text : "\n");
    free(text);
    CHECK(tu_remove_tree(tmp) == 0, "cleanup");
    free(tmp);
    return tu_finish();
}
