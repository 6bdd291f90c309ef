/* orthros make-model and orthros eval end to end on the cpu: result files validate against
 * evals/result.schema.json and carry the cells and records the issue asks for; --resume keeps finished cells
 * and refuses another experiment's file; malformed arguments are refused with a clear message and exit 2.
 * usage: test_eval_cli PATH/TO/orthros PATH/TO/evals/result.schema.json */
#define _GNU_SOURCE
#include "schema.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *bin;
static char *dir, logpath[4200], model[4200], out[4200];
static cJSON *schema;

#define run(...) tu_run_args(bin, logpath, __VA_ARGS__)
#define log_has(needle) tu_log_has(logpath, needle)

static void validate(const cJSON *root, const char *what)
{
    char err[512];
    CHECK(root && orthros_schema_validate(schema, root, err, sizeof err) == 0, "%s does not match the schema: %s",
          what, root ? err : "unreadable");
}

static const cJSON *find_cell(const cJSON *root, const char *arch, int ctx, const char *xname, int x)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cells")) if (!strcmp(cJSON_GetObjectItem(c, "arch")->valuestring,
                                                                          arch) &&
                                                                  cJSON_GetObjectItem(c, "ctx")->valueint == ctx &&
                                                                  cJSON_GetObjectItem(c, xname)->valueint == x) return c;
    return NULL;
}

static void test_niah(void)
{
    snprintf(out, sizeof out, "%s/niah.json", dir);
    int rc = run("eval", "niah", "--model", model, "--device", "cpu", "--arch", "transformer,linear", "--ctx", "32,64",
                 "--depths", "0,100", "--samples", "2", "--json", out, NULL);
    CHECK(rc == 0, "eval niah exited %d", rc);
    cJSON *root = tu_load_json(out);
    validate(root, "niah result");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(root, "cells")) == 8, "want 8 cells");
    const cJSON *t = find_cell(root, "transformer", 64, "depth", 100), *l = find_cell(root, "linear", 64, "depth", 0);
    CHECK(t && cJSON_GetObjectItem(t, "accuracy")->valuedouble == 1.0, "transformer cell not 1.0");
    CHECK(l && cJSON_GetObjectItem(l, "accuracy")->valuedouble < 0.5, "linear cell not below 0.5");
    if (t) {
        double lo = cJSON_GetObjectItem(t, "ci95_lo")->valuedouble, hi = cJSON_GetObjectItem(t, "ci95_hi")->valuedouble;
        CHECK(lo > 0.3 && lo < 0.5 && hi == 1.0, "Wilson interval of 2/2 is [%g, %g]", lo, hi);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(t, "records")) == 2, "want 2 records");
    }
    double first_elapsed = t ? cJSON_GetObjectItem(t, "elapsed_s")->valuedouble : -1;
    cJSON_Delete(root);

    /* Resume with one more depth: 4 new cells, the old ones kept as they were. */
    rc = run("eval", "niah", "--model", model, "--device", "cpu", "--arch", "transformer,linear", "--ctx", "32,64",
             "--depths", "0,50,100", "--samples", "2", "--json", out, "--resume", NULL);
    CHECK(rc == 0 && log_has("already in"), "resume exited %d", rc);
    root = tu_load_json(out);
    validate(root, "resumed niah result");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(root, "cells")) == 12, "want 12 cells after resume");
    t = find_cell(root, "transformer", 64, "depth", 100);
    CHECK(t && cJSON_GetObjectItem(t, "elapsed_s")->valuedouble == first_elapsed, "a finished cell was rerun");
    cJSON_Delete(root);
    rc = run("eval", "niah", "--model", model, "--device", "cpu", "--arch", "transformer", "--ctx", "32", "--depths",
             "0", "--samples", "3", "--json", out, "--resume", NULL);
    CHECK(rc == 1 && log_has("cannot resume"), "resuming with other --samples: exit %d", rc);
    /* A file written by another commit: a resume is refused, naming the commit, and the file stays as it was. */
    root = tu_load_json(out);
    cJSON *tool = root ? cJSON_GetObjectItem(root, "tool") : NULL;
    CHECK(tool != NULL, "no tool object in the niah result");
    if (tool) {
        cJSON_ReplaceItemInObject(tool, "git_commit", cJSON_CreateString("0123456789abcdef0123456789abcdef01234567"));
        tu_write_json(out, root);
        size_t len = 0;
        char *before = tu_slurp(out, &len);
        rc = run("eval", "niah", "--model", model, "--device", "cpu", "--arch", "transformer,linear", "--ctx", "32,64",
                 "--depths", "0,50,100", "--samples", "2", "--json", out, "--resume", NULL);
        size_t len2 = 0;
        char *after = tu_slurp(out, &len2);
        CHECK(rc == 1 && log_has("cannot resume") && log_has("0123456789abcdef0123456789abcdef01234567") && before &&
                  after && len == len2 && !memcmp(before, after, len),
              "resuming a file of another commit: exit %d, or the file changed", rc);
        free(before);
        free(after);
    }
    cJSON_Delete(root);

    snprintf(out, sizeof out, "%s/multivalue.json", dir);
    rc = run("eval", "niah", "--model", model, "--device", "cpu", "--arch", "orthros", "--ctx", "48", "--depths", "30",
             "--variant", "multivalue", "--samples", "2", "--json", out, NULL);
    root = tu_load_json(out);
    validate(root, "multivalue result");
    t = root ? find_cell(root, "orthros", 48, "depth", 30) : NULL;
    CHECK(rc == 0 && t && cJSON_GetObjectItem(t, "accuracy")->valuedouble == 1.0, "orthros multivalue not 1.0");
    cJSON_Delete(root);
}

static void test_mqar(void)
{
    snprintf(out, sizeof out, "%s/mqar.json", dir);
    int rc = run("eval", "mqar", "--model", model, "--device", "cpu", "--arch", "orthros,swa", "--window", "16",
                 "--ctx", "80", "--pairs", "1,16", "--samples", "2", "--json", out, NULL);
    CHECK(rc == 0, "eval mqar exited %d", rc);
    cJSON *root = tu_load_json(out);
    validate(root, "mqar result");
    const cJSON *o = find_cell(root, "orthros", 80, "pairs", 16), *s = find_cell(root, "swa", 80, "pairs", 16);
    CHECK(o && cJSON_GetObjectItem(o, "accuracy")->valuedouble == 1.0 && cJSON_GetObjectItem(o, "n")->valueint == 32,
          "orthros mqar 16 pairs: want accuracy 1 over 32 questions");
    CHECK(s && cJSON_GetObjectItem(s, "accuracy")->valuedouble == 0.0, "swa with the pairs out of its window recalls");
    cJSON_Delete(root);
}

static void test_refusals(void)
{
    snprintf(out, sizeof out, "%s/bad.json", dir);
    struct {
        const char *args[12];
        const char *says;
    } bad[] = {
        {{"eval", "niah", "--model", model, "--depths", "0,120", "--ctx", "64"}, "outside 0..100"},
        {{"eval", "niah", "--model", model, "--depths", "-5", "--ctx", "64"}, "outside 0..100"},
        {{"eval", "niah", "--model", model, "--variant", "multikey", "--ctx", "6"}, "shorter than"},
        {{"eval", "mqar", "--model", model, "--pairs", "65", "--ctx", "1k"}, "only 64 keys"},
        {{"eval", "mqar", "--model", model, "--pairs", "32", "--ctx", "16"}, "shorter than"},
        {{"eval", "niah", "--model", model, "--variant", "twice"}, "unknown NIAH variant"},
        {{"eval", "niah", "--model", "preset:tiny"}, "analytic-recall"},
        {{"eval", "niah", "--model", model, "--arch", "rnn"}, "rnn"},
        {{"eval", "niah", "--model", model, "--samples", "0"}, "samples"},
        {{"eval", "haystack"}, "unknown task"},
        {{"make-model", "analytic-recall"}, "--out is required"},
        {{"make-model", "analytic-recall", "--out", out, "--keys", "65"}, "keys must be"},
        {{"make-model", "analytic-recall", "--out", out, "--max-context", "2g"}, "max-context"},
        {{"make-model", "trained", "--out", out}, "analytic-recall"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char **a = bad[i].args;
        int rc = run(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], NULL);
        CHECK(rc == 2 && log_has(bad[i].says), "case %zu (%s %s ... %s): exit %d", i, a[0], a[1], bad[i].says, rc);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_eval_cli ORTHROS SCHEMA\n");
        return 2;
    }
    bin = argv[1];
    schema = tu_load_json(argv[2]);
    CHECK(schema != NULL, "cannot read %s", argv[2]);
    dir = tu_tempdir();
    if (!schema || !dir) return tu_finish();
    snprintf(logpath, sizeof logpath, "%s/log.txt", dir);
    snprintf(model, sizeof model, "%s/model", dir);
    int rc = run("make-model", "analytic-recall", "--out", model, "--max-context", "64k", NULL);
    CHECK(rc == 0 && log_has("analytic-recall, 64 keys"), "make-model exited %d", rc);
    test_niah();
    test_mqar();
    test_refusals();
    if (tu_remove_tree(dir)) fprintf(stderr, "could not remove %s\n", dir);
    free(dir);
    cJSON_Delete(schema);
    return tu_finish();
}
