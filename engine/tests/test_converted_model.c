/* The committed converted model (data/models/smollm2-135m-orthros: an adapter over the SmolLM2 GGUF that
 * ci/fetch-model.sh fetches) against the conversion code that trained it (convert/model.py, float32 on the cpu;
 * PARITY.json made by `convert/parity.py --write-ref`): for every case (prompt x schedule: orthros tails 1 and 4,
 * linear, hybrid), the 64 largest logits of 8 positions within the file's tolerance of the row's scale on the cpu
 * backend, and the greedy continuation of every prompt under orthros equal token for token.
 * usage: test_converted_model MODEL_DIR PARITY.json   (run from the repository root: the adapter finds its base in
 * .cache/models/). A missing base fails the test under CI=true and skips it (exit 77) elsewhere. */
#define _GNU_SOURCE
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const BASE = ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";

/* The schedule of a case from its `args` (the orthros logits options it was made with). */
static void case_opts(orthros_arch_opts *ao, const cJSON *args)
{
    orthros_arch_opts_default(ao);
    for (int i = 0; i + 1 < cJSON_GetArraySize(args); i += 2) {
        const char *k = cJSON_GetStringValue(cJSON_GetArrayItem(args, i));
        const char *v = cJSON_GetStringValue(cJSON_GetArrayItem(args, i + 1));
        if (!k || !v) continue; /* (not a string: the case's logits then differ, and the test says so) */
        if (!strcmp(k, "--arch")) ao->arch = v;
        else if (!strcmp(k, "--tail")) ao->tail = atoi(v);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_converted_model MODEL_DIR PARITY.json\n");
        return 2;
    }
    struct stat sb;
    if (stat(BASE, &sb) != 0) {
        if (tu_under_ci()) {
            fprintf(stderr, "FAIL: %s is missing under CI (ci/test.sh runs ci/fetch-model.sh first)\n", BASE);
            return 1;
        }
        printf("SKIP: %s is missing (run ci/fetch-model.sh)\n", BASE);
        return 77;
    }
    cJSON *ref = tu_load_json(argv[2]);
    CHECK(ref != NULL, "cannot read %s", argv[2]);
    if (!ref) return tu_finish();
    double tol = cJSON_GetObjectItem(ref, "tolerance")->valuedouble, worst = 0;
    int max_new = cJSON_GetObjectItem(ref, "max_new")->valueint;
    orthros_backend *be = NULL;
    CHECK(orthros_backend_cpu_create(&be) == 0, "cpu backend");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(ref, "cases"))
    {
        orthros_arch_opts ao;
        case_opts(&ao, cJSON_GetObjectItem(c, "args"));
        const char *name = cJSON_GetObjectItem(c, "case")->valuestring;
        int n = 0, V = 0;
        int32_t *ids = tu_json_ints(cJSON_GetObjectItem(c, "prompt"), &n);
        float *logits = tu_model_logits(be, argv[1], &ao, 0, NULL, ids, n, 0, &V);
        CHECK(logits != NULL, "%s, %d tokens: %s", name, n, orthros_last_error());
        double case_worst = 0;
        const cJSON *row;
        cJSON_ArrayForEach(row, cJSON_GetObjectItem(c, "rows"))
        {
            if (!logits) break;
            int pos = cJSON_GetObjectItem(row, "position")->valueint;
            double scale = cJSON_GetObjectItem(row, "scale")->valuedouble;
            int nk = 0, nl = 0;
            int32_t *rid = tu_json_ints(cJSON_GetObjectItem(row, "ids"), &nk);
            double *rl = tu_json_nums(cJSON_GetObjectItem(row, "logits"), &nl);
            CHECK(rid && rl && nk == nl, "%s: a row's ids and logits are not two arrays of one length", name);
            for (int k = 0; rid && rl && k < nk && k < nl; k++) {
                double err = fabs(logits[(size_t)pos * (size_t)V + (size_t)rid[k]] - rl[k]);
                case_worst = fmax(case_worst, err / scale);
            }
            free(rid), free(rl);
        }
        CHECK(case_worst <= tol, "%s, %d tokens: logits differ from convert/'s by %.2e of the row's scale (> %g)", name,
              n, case_worst, tol);
        printf("%-16s %3d tokens: top-64 logits of 8 positions within %.2e of the row's scale\n", name, n, case_worst);
        worst = fmax(worst, case_worst);
        free(logits);
        free(ids);
    }
    /* Greedy under the model's own schedule (orthros, tail 1): the prompt prefilled, then decode. */
    orthros_model *m = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    int rc = orthros_model_load(&m, be, argv[1], &ao, 0);
    CHECK(rc == 0, "load %s: %s", argv[1], orthros_last_error());
    CHECK(!rc && !strcmp(orthros_model_get_arch(m)->name, "orthros"), "%s does not run as orthros by default", argv[1]);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(ref, "greedy"))
    {
        if (rc) break;
        int n = 0, nw = 0;
        int32_t *ids = tu_json_ints(cJSON_GetObjectItem(g, "prompt"), &n);
        int32_t *want = tu_json_ints(cJSON_GetObjectItem(g, "generated"), &nw), *got = malloc((size_t)max_new * sizeof *got);
        orthros_session *s = NULL;
        int count = -1;
        if (orthros_session_init(&s, m, 1, n + max_new, 0) == 0) count = orthros_generate(s, ids, n, max_new, got);
        int same = count == nw;
        for (int i = 0; same && i < count; i++) same = got[i] == want[i];
        CHECK(same, "greedy after %d tokens: the engine's %d tokens differ from convert/'s %d", n, count, nw);
        printf("greedy after %3d tokens: %d tokens %s\n", n, count, same ? "equal" : "DIFFER");
        orthros_session_free(s);
        free(ids);
        free(want);
        free(got);
    }
    printf("worst logit difference %.2e of the row's scale (tolerance %g)\n", worst, tol);
    orthros_model_free(m);
    orthros_backend_free(be);
    cJSON_Delete(ref);
    return tu_finish();
}
