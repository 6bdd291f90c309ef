/* The text evals (ppl, ruler, recall) on the cpu, without the real model:
 *   - perplexity against a hand computation: the windows of HF's rule worked out here, and every window's NLL
 *     recomputed from `orthros logits` of the same tokens (preset:tiny, token ids from a file); orthros's count of
 *     linear-phase tokens for two tails;
 *   - RULER samples built with SmolLM2's committed tokenizer.json: a pure function of the seed, fitted to the context,
 *     the needles where the depth says, the answers in the text; VT chains and CWE counts; scoring;
 *   - the contains-match and its normalisation;
 *   - recall JSONL: every kind of malformed line refused with FILE:LINE and the field; the example file reads;
 *   - end to end on a tiny random model that carries the tokenizer: every result file matches
 *     evals/result.schema.json, --resume keeps cells, usage errors exit 2, a malformed tasks file exits 1.
 * With a fifth argument, the SmolLM2 GGUF, it checks the real model instead (the `text_evals_smollm2` test): its
 * perplexity on the committed KJV text is low under transformer and far higher from orthros's linear phase, and it
 * finds a needle at 512 tokens. A missing model fails under CI=true and skips (exit 77) elsewhere.
 * usage: test_text_evals ORTHROS SCHEMA TOKENIZER.json SOURCE_DIR [SMOLLM2.gguf] */
#define _GNU_SOURCE
#include "driver.h"
#include "recall.h"
#include "ruler.h"
#include "schema.h"
#include "testutil.h"
#include "text_eval.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bin, *tokjson, *src;
static char *dir, logpath[4200];
static cJSON *schema;

#define run(...) tu_run_args(bin, logpath, __VA_ARGS__)
#define log_has(needle) tu_log_has(logpath, needle)

static cJSON *load_valid(const char *path, const char *what)
{
    char err[512];
    cJSON *root = tu_load_json(path);
    CHECK(root && orthros_schema_validate(schema, root, err, sizeof err) == 0, "%s does not match the schema: %s", what,
          root ? err : "unreadable");
    return root;
}

static const cJSON *cell_of(const cJSON *root, const char *arch, int ctx)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cells"))
    {
        if (!strcmp(cJSON_GetObjectItem(c, "arch")->valuestring, arch) && cJSON_GetObjectItem(c, "ctx")->valueint == ctx)
            return c;
    }
    return NULL;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* ---- perplexity by hand ---- */

/* NLL of target under row[V], in double. */
static double nll_row(const float *row, int V, int target)
{
    double mx = row[0], s = 0;
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++) s += exp((double)row[v] - mx);
    return mx + log(s) - row[target];
}

static void test_ppl_by_hand(void)
{
    enum { T = 21, L = 8, S = 4, V = 256 };
    int ids[T];
    char tokens[4300], out[4300], win[4300], lg[4300], text[512];
    size_t k = 0;
    for (int i = 0; i < T; i++) {
        ids[i] = (i * 37 + 11) % V;
        k += (size_t)snprintf(text + k, sizeof text - k, "%s%d", i ? " " : "", ids[i]);
    }
    snprintf(tokens, sizeof tokens, "%s/tokens.txt", dir);
    tu_write_text(tokens, text);
    snprintf(out, sizeof out, "%s/ppl-tiny.json", dir);
    int rc = run("eval", "ppl", "--model", "preset:tiny", "--device", "cpu", "--tokens-file", tokens, "--ctx", "8",
                 "--stride", "4", "--arch", "transformer,orthros", "--tail", "3", "--json", out, "--quiet", NULL);
    CHECK(rc == 0, "eval ppl on preset:tiny exited %d", rc);
    cJSON *root = load_valid(out, "the ppl file");
    if (!root) return;
    /* HF's loop by hand: begin 0, 4, 8, 12, 16; ends 8, 12, 16, 20, 21; scored 7 (not the first token), 4, 4, 4, 1. */
    static const int begin[] = {0, 4, 8, 12, 16}, end[] = {8, 12, 16, 20, 21}, scored[] = {7, 4, 4, 4, 1};
    const char *archs[] = {"transformer", "orthros"};
    for (int a = 0; a < 2; a++) {
        const cJSON *c = cell_of(root, archs[a], L), *r;
        CHECK(c != NULL, "no %s cell", archs[a]);
        if (!c) continue;
        CHECK(num(c, "windows") == 5 && num(c, "tokens") == T - 1 && num(c, "stride") == S, "%s: windows %g, tokens %g",
              archs[a], num(c, "windows"), num(c, "tokens"));
        double total = 0;
        int64_t linear = 0;
        int w = 0;
        cJSON_ArrayForEach(r, cJSON_GetObjectItem(c, "records"))
        {
            if (w >= 5) break;
            CHECK(num(r, "begin") == begin[w] && num(r, "end") == end[w] && num(r, "scored") == scored[w],
                  "%s window %d: [%g, %g) scoring %g", archs[a], w, num(r, "begin"), num(r, "end"), num(r, "scored"));
            /* The window's logits from orthros logits, and its scored tokens' NLL from them. */
            int n = end[w] - begin[w];
            k = 0;
            for (int i = 0; i < n; i++) k += (size_t)snprintf(text + k, sizeof text - k, "%s%d", i ? "," : "", ids[begin[w] + i]);
            snprintf(win, sizeof win, "%s/win.txt", dir);
            snprintf(lg, sizeof lg, "%s/win.f32", dir);
            tu_write_text(win, text);
            rc = run("logits", "--model", "preset:tiny", "--device", "cpu", "--arch", archs[a], "--tail", "3",
                     "--tokens-file", win, "--out", lg, NULL);
            size_t len = 0;
            float *logits = (float *)tu_slurp(lg, &len);
            CHECK(rc == 0 && logits && len == (size_t)n * V * 4, "orthros logits of window %d: exit %d", w, rc);
            double sum = 0;
            int lin = 0;
            for (int j = n - 1 - scored[w]; logits && j < n - 1; j++) {
                sum += nll_row(logits + (size_t)j * V, V, ids[begin[w] + j + 1]);
                lin += a == 1 && j < n - 3; /* orthros with tail 3: rows before n - 3 are linear-phase */
            }
            free(logits);
            CHECK(fabs(sum - num(r, "nll_sum")) <= 1e-9 * (1 + sum), "%s window %d: NLL %.12g by hand, %.12g in the file",
                  archs[a], w, sum, num(r, "nll_sum"));
            CHECK(num(r, "linear_phase_tokens") == lin, "%s window %d: %g linear-phase tokens, %d by hand", archs[a], w,
                  num(r, "linear_phase_tokens"), lin);
            total += sum, linear += lin;
            w++;
        }
        CHECK(w == 5, "%s: %d window records", archs[a], w);
        CHECK(fabs(num(c, "nll") - total / (T - 1)) < 1e-9 && fabs(num(c, "ppl") - exp(total / (T - 1))) < 1e-6 * num(c, "ppl"),
              "%s: nll %.12g, by hand %.12g", archs[a], num(c, "nll"), total / (T - 1));
        CHECK(num(c, "linear_phase_tokens") == linear, "%s: linear-phase tokens %g, by hand %lld", archs[a],
              num(c, "linear_phase_tokens"), (long long)linear);
        CHECK(num(c, "ppl_ci95_lo") <= num(c, "ppl") && num(c, "ppl") <= num(c, "ppl_ci95_hi"), "%s: interval", archs[a]);
    }
    /* With the default tail of 1 every scored token of an orthros window is a linear-phase one. Run as --tp 2: the
     * file records the world, two ranks. */
    snprintf(out, sizeof out, "%s/ppl-tiny-tail1.json", dir);
    rc = run("eval", "ppl", "--model", "preset:tiny", "--device", "cpu", "--tokens-file", tokens, "--ctx", "8", "--arch",
             "orthros", "--tp", "2", "--json", out, NULL);
    cJSON *r1 = load_valid(out, "the ppl file (tail 1)");
    const cJSON *c1 = r1 ? cell_of(r1, "orthros", 8) : NULL;
    /* No stride: windows [0,8) [8,16) [16,21), each scoring all but its first token. */
    CHECK(rc == 0 && c1 && num(c1, "tokens") == 18 && num(c1, "linear_phase_tokens") == 18 && log_has("linear-phase logits"),
          "orthros, tail 1: exit %d, tokens %g, linear-phase %g", rc, c1 ? num(c1, "tokens") : -1,
          c1 ? num(c1, "linear_phase_tokens") : -1);
    const cJSON *env = cJSON_GetObjectItem(r1, "environment");
    const cJSON *rk1 = cJSON_GetArrayItem(cJSON_GetObjectItem(env, "ranks"), 1);
    CHECK(num(env, "world_size") == 2 && cJSON_GetArraySize(cJSON_GetObjectItem(env, "ranks")) == 2 && num(rk1, "rank") == 1,
          "eval ppl --tp 2: the file does not list the world's two ranks");
    cJSON_Delete(r1);
    cJSON_Delete(root);
    /* 17 tokens, windows of 8 (and 4: a later cell): the last window [16, 17) has nothing to predict. It is left out,
     * not scored as 0 tokens (which made the bootstrap refuse the run after every window, writing nothing). */
    k = 0;
    for (int i = 0; i < 17; i++) k += (size_t)snprintf(text + k, sizeof text - k, "%s%d", i ? " " : "", ids[i]);
    tu_write_text(tokens, text);
    snprintf(out, sizeof out, "%s/ppl-tiny-17.json", dir);
    rc = run("eval", "ppl", "--model", "preset:tiny", "--device", "cpu", "--tokens-file", tokens, "--ctx", "8,4", "--arch",
             "transformer", "--json", out, "--quiet", NULL);
    cJSON *r17 = load_valid(out, "the ppl file of 17 tokens");
    const cJSON *c8 = r17 ? cell_of(r17, "transformer", 8) : NULL, *c4 = r17 ? cell_of(r17, "transformer", 4) : NULL;
    CHECK(rc == 0 && c8 && c4 && num(c8, "windows") == 2 && num(c8, "tokens") == 14 && num(c4, "windows") == 4 &&
              num(c4, "tokens") == 12,
          "17 tokens, windows of 8 and 4: exit %d, windows %g / %g, tokens %g / %g", rc, c8 ? num(c8, "windows") : -1,
          c4 ? num(c4, "windows") : -1, c8 ? num(c8, "tokens") : -1, c4 ? num(c4, "tokens") : -1);
    cJSON_Delete(r17);
}

/* ---- two writers of one eval file ---- */

/* While another process (this test) holds the file's lock, eval is refused with one line, or waits with --wait and
 * writes the file once the lock is let go. */
static void test_eval_lock(void)
{
    char tokens[4300], out[4300], lock[4400], wlog[4300];
    snprintf(tokens, sizeof tokens, "%s/lock-tokens.txt", dir);
    snprintf(out, sizeof out, "%s/locked.json", dir);
    snprintf(lock, sizeof lock, "%s.lock", out);
    snprintf(wlog, sizeof wlog, "%s/wait.log", dir);
    tu_write_text(tokens, "5 9 13 17 21 25 29 33 37 41 45 49 53 57 61 65 69");
    int fd = open(lock, O_RDWR | O_CREAT, 0666);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "cannot take %s", lock);
    if (fd >= 0 && pwrite(fd, "pid 4242, since then\n", 21, 0) != 21) CHECK(0, "cannot write %s", lock);
    int rc = run("eval", "ppl", "--model", "preset:tiny", "--device", "cpu", "--tokens-file", tokens, "--ctx", "8", "--arch",
                 "transformer", "--json", out, "--quiet", NULL);
    char *err = tu_slurp(logpath, NULL);
    int lines = 0;
    for (const char *p = err; p && *p; p++) lines += *p == '\n';
    struct stat sb;
    CHECK(rc == 1 && lines == 1 && err && strstr(err, "locked.json is being written by another run (pid 4242") &&
              stat(out, &sb) != 0,
          "eval while another run writes its file: exit %d: %s", rc, err ? err : "");
    free(err);
    char *w[] = {(char *)bin, "eval", "ppl", "--model", "preset:tiny", "--device", "cpu", "--tokens-file", tokens,
                 "--ctx", "8", "--arch", "transformer", "--json", out, "--quiet", "--wait", NULL};
    pid_t pid = tu_spawn(w, wlog);
    usleep(1500000);
    int st = 0;
    CHECK(waitpid(pid, &st, WNOHANG) == 0 && stat(out, &sb) != 0, "eval --wait did not wait for the lock");
    flock(fd, LOCK_UN);
    close(fd);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 && tu_log_has(wlog, "waiting for it"),
          "eval --wait failed once the lock was let go (see %s)", wlog);
    cJSON *r = load_valid(out, "the file written after waiting");
    CHECK(r && cell_of(r, "transformer", 8), "the file written after waiting has no cell");
    cJSON_Delete(r);
}

/* ---- RULER samples ---- */

static int count_word(const char *text, const char *w)
{
    int n = 0;
    size_t len = strlen(w);
    for (const char *p = text; (p = strstr(p, w)); p += len)
        n += (p == text || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\n');
    return n;
}

static void test_ruler_samples(const orthros_tokenizer *tok)
{
    orthros_ruler_spec spec = {ORTHROS_RULER_NIAH, ORTHROS_NIAH_SINGLE, ORTHROS_NEEDLE_NUMBERS, ORTHROS_CHAT_CHATML, 32};
    orthros_ruler_sample a, b, c;
    /* A pure function of the seed. */
    CHECK(orthros_ruler_sample_make(&a, tok, &spec, 1024, 50, 7) == 0, "niah sample: %s", orthros_last_error());
    CHECK(orthros_ruler_sample_make(&b, tok, &spec, 1024, 50, 7) == 0, "niah sample again");
    CHECK(orthros_ruler_sample_make(&c, tok, &spec, 1024, 50, 8) == 0, "niah sample, another seed");
    CHECK(a.n_ids == b.n_ids && !memcmp(a.ids, b.ids, (size_t)a.n_ids * 4) && !strcmp(a.answers[0], b.answers[0]),
          "the same seed gives another sample");
    CHECK(strcmp(a.answers[0], c.answers[0]) != 0, "another seed gives the same needle");
    /* Fitted: at most ctx - max_new tokens, and within one sentence (a few tokens) of it. */
    CHECK(a.n_ids <= 1024 - 32 && a.n_ids > 1024 - 32 - 12, "the prompt has %d tokens for a budget of %d", a.n_ids, 1024 - 32);
    /* The needle, at half the haystack, holding the answer; the question names its key. */
    char needle[128];
    snprintf(needle, sizeof needle, "is: %s.", a.answers[0]);
    const char *at = strstr(a.message, needle);
    CHECK(at != NULL && a.n_answers == 1, "the needle \"%s\" is not in the message", needle);
    if (at) {
        double frac = (double)(at - a.message) / (double)strlen(a.message);
        CHECK(frac > 0.4 && frac < 0.6, "the needle at 50%% depth lies at %.2f of the message", frac);
    }
    CHECK(a.needle_units[0] == (a.units + 1) / 2 || a.needle_units[0] == a.units / 2, "needle before sentence %d of %d",
          a.needle_units[0], a.units);
    CHECK(strstr(a.answer_prefix, "The special magic numbers for") != NULL, "answer prefix: %s", a.answer_prefix);
    /* The wrapping: <|im_start|>user ... <|im_end|> <|im_start|>assistant, then the prefix. */
    int32_t im_start = orthros_tokenizer_token_id(tok, "<|im_start|>", 12);
    CHECK(a.ids[0] == im_start, "the prompt does not open a ChatML turn");
    orthros_ruler_sample_free(&b);
    orthros_ruler_sample_free(&c);
    /* Depth 0 and 100: the first and the last thing in the haystack. */
    CHECK(orthros_ruler_sample_make(&b, tok, &spec, 512, 0, 3) == 0 && b.needle_units[0] == 0, "depth 0: before sentence %d",
          b.needle_units[0]);
    CHECK(orthros_ruler_sample_make(&c, tok, &spec, 512, 100, 3) == 0 && c.needle_units[0] == c.units, "depth 100");
    orthros_ruler_sample_free(&b);
    orthros_ruler_sample_free(&c);
    /* Scoring: whole, case-insensitive. */
    char gen[256];
    snprintf(gen, sizeof gen, " %s.", a.answers[0]);
    CHECK(orthros_ruler_score(&a, gen) == 1, "the answer itself is not found");
    snprintf(gen, sizeof gen, " %s7", a.answers[0]);
    CHECK(orthros_ruler_score(&a, gen) == 0, "a longer number is taken for the answer");
    orthros_ruler_sample_free(&a);
    /* Variants: answers and needles. */
    struct {
        orthros_niah_variant v;
        int answers, needles;
    } vs[] = {{ORTHROS_NIAH_MULTIKEY, 1, 4}, {ORTHROS_NIAH_MULTIVALUE, 4, 4}, {ORTHROS_NIAH_MULTIQUERY, 4, 4}};
    for (size_t i = 0; i < 3; i++) {
        spec.variant = vs[i].v, spec.needle = i == 2 ? ORTHROS_NEEDLE_UUIDS : ORTHROS_NEEDLE_WORDS;
        CHECK(orthros_ruler_sample_make(&a, tok, &spec, 768, 25, 11) == 0, "%s: %s", orthros_niah_variant_name(vs[i].v),
              orthros_last_error());
        CHECK(a.n_answers == vs[i].answers && a.n_needles == vs[i].needles, "%s: %d answers, %d needles",
              orthros_niah_variant_name(vs[i].v), a.n_answers, a.n_needles);
        for (int j = 0; j < a.n_answers; j++)
            CHECK(strstr(a.message, a.answers[j]) != NULL, "%s: answer %s not in the text", orthros_niah_variant_name(vs[i].v),
                  a.answers[j]);
        if (i == 2) CHECK(strlen(a.answers[0]) == 36 && a.answers[0][14] == '4', "not a UUID: %s", a.answers[0]);
        orthros_ruler_sample_free(&a);
    }
    /* Variable tracking: x + 1 variables, the chain in order. */
    spec = (orthros_ruler_spec){ORTHROS_RULER_VT, ORTHROS_NIAH_SINGLE, ORTHROS_NEEDLE_NUMBERS, ORTHROS_CHAT_NONE, 30};
    CHECK(orthros_ruler_sample_make(&a, tok, &spec, 1024, 3, 5) == 0, "vt: %s", orthros_last_error());
    CHECK(a.n_answers == 4, "vt with 3 hops: %d answers", a.n_answers);
    for (int j = 1; j < a.n_answers; j++) {
        char st[64];
        snprintf(st, sizeof st, "VAR %s = VAR %s.", a.answers[j], a.answers[j - 1]);
        const char *p = strstr(a.message, st), *q = strstr(a.message, a.answers[j - 1]);
        CHECK(p && q && q < p, "vt: \"%s\" missing or before its source", st);
    }
    orthros_ruler_sample_free(&a);
    /* Common words: each of the x words outnumbers every other word of the list. */
    spec.task = ORTHROS_RULER_CWE, spec.max_new = 60;
    CHECK(orthros_ruler_sample_make(&a, tok, &spec, 2048, 10, 9) == 0, "cwe: %s", orthros_last_error());
    CHECK(a.n_answers == 10 && a.units > 100, "cwe: %d answers, %d entries", a.n_answers, a.units);
    int least_common = 1 << 30;
    for (int j = 0; j < a.n_answers; j++) {
        int n = count_word(a.message, a.answers[j]);
        least_common = n < least_common ? n : least_common;
    }
    int most_other = 0;
    const char *others[] = {"apple", "dragon", "violin", "quiet", "zebra", "window"};
    for (size_t j = 0; j < sizeof others / sizeof *others; j++) {
        int mine = 0;
        for (int q = 0; q < a.n_answers; q++) mine |= !strcmp(a.answers[q], others[j]);
        int n = mine ? 0 : count_word(a.message, others[j]);
        most_other = n > most_other ? n : most_other;
    }
    CHECK(least_common > most_other && least_common >= 3, "cwe: a common word appears %d times, another word %d",
          least_common, most_other);
    orthros_ruler_sample_free(&a);
    /* Refusals: a context too short, an x out of range. */
    spec = (orthros_ruler_spec){ORTHROS_RULER_NIAH, ORTHROS_NIAH_SINGLE, ORTHROS_NEEDLE_NUMBERS, ORTHROS_CHAT_CHATML, 32};
    CHECK(orthros_ruler_sample_make(&a, tok, &spec, 60, 50, 1) == ORTHROS_EINVAL && strstr(orthros_last_error(), "too short"),
          "a 60-token context: %s", orthros_last_error());
    CHECK(orthros_ruler_sample_make(&a, tok, &spec, 1024, 101, 1) == ORTHROS_EINVAL, "depth 101 accepted");
}

static void test_contains(void)
{
    const char *raw = "  The  Answer\n\tIS\r\n42 ";
    char *n = orthros_text_normalise(raw, strlen(raw));
    CHECK(n && !strcmp(n, "the answer is 42"), "normalised: \"%s\"", n ? n : "");
    free(n);
    struct {
        const char *text, *answer;
        int want;
    } cases[] = {{"It was Edwin  Hale.", "edwin hale", 1}, {"tired", "red", 0},          {"red.", "red", 1},
                 {"12345678", "1234567", 0},             {"7,412 metres", "7,412", 1}, {"anything", " ", 0},
                 {"the Glass Pavilion", "Glass\nPavilion", 1}, {"", "a", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECK(orthros_text_contains(cases[i].text, cases[i].answer) == cases[i].want, "contains(\"%s\", \"%s\") is not %d",
              cases[i].text, cases[i].answer, cases[i].want);
}

/* ---- recall JSONL ---- */

static void test_recall_parsing(void)
{
    struct {
        const char *text, *says;
    } bad[] = {
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"]}\n{\"context\": \"c\"", "t.jsonl:2: not valid JSON"},
        {"{\"question\": \"q\", \"answers\": [\"a\"]}", "t.jsonl:1: \"context\" is missing"},
        {"{\"context\": 3, \"question\": \"q\", \"answers\": [\"a\"]}", "t.jsonl:1: \"context\" is not a string"},
        {"{\"context\": \"c\", \"question\": \"\", \"answers\": [\"a\"]}", "t.jsonl:1: \"question\" is empty"},
        {"\n\n{\"context\": \"c\", \"question\": \"q\", \"answers\": \"a\"}", "t.jsonl:3: \"answers\" is not an array"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": []}", "t.jsonl:1: \"answers\" is empty"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\", 5]}", "t.jsonl:1: \"answers\"[1] is not a string"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"  \"]}", "t.jsonl:1: \"answers\"[0] is empty"},
        {"{\"context\": \"c\", \"context\": \"d\", \"question\": \"q\", \"answers\": [\"a\"]}", "t.jsonl:1: the key \"context\" appears twice"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"]} x", "t.jsonl:1: bytes after the JSON value"},
        {"{\"context\": \"c\\u0000d\", \"question\": \"q\", \"answers\": [\"a\"]}", "t.jsonl:1: a string holds \\u0000"},
        {"[1, 2]", "t.jsonl:1: not a JSON object"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"], \"id\": [1]}", "t.jsonl:1: \"id\" is not a string or a number"},
        /* Ids a double cannot hold were recorded as "inf" or rounded to another id. */
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"], \"id\": 1e400}", "t.jsonl:1: \"id\" inf is not an integer"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"], \"id\": 9007199254740993}",
         "t.jsonl:1: \"id\" 9007199254740992 is not an integer of magnitude below 2^53"},
        {"{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"], \"id\": 0.1}", "t.jsonl:1: \"id\" 0.10000000000000001 is not"},
        {"\n  \n", "t.jsonl: no items"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        orthros_recall_set s;
        int rc = orthros_recall_parse(&s, bad[i].text, strlen(bad[i].text), "t.jsonl");
        CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), bad[i].says), "case %zu: want \"%s\", got \"%s\"", i,
              bad[i].says, rc ? orthros_last_error() : "accepted");
        printf("%-60.60s -> %s\n", bad[i].says, orthros_last_error());
    }
    const char nul[] = "{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"]}\n{\"context\": \"c\0\"}";
    orthros_recall_set s;
    CHECK(orthros_recall_parse(&s, nul, sizeof nul - 1, "t.jsonl") == ORTHROS_EFORMAT &&
              strstr(orthros_last_error(), "t.jsonl:2: a NUL byte"),
          "a NUL byte: %s", orthros_last_error());
    const char ok[] = "\n{\"id\": 7, \"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\", \"b\"], \"extra\": 1}\n\n"
                      "{\"context\": \"d\", \"question\": \"r\", \"answers\": [\"e\"]}";
    CHECK(orthros_recall_parse(&s, ok, sizeof ok - 1, "t.jsonl") == 0 && s.n == 2 && s.items[0].line == 2 &&
              s.items[1].line == 4 && s.items[0].n_answers == 2 && !strcmp(s.items[0].id, "7"),
          "a valid file reads wrong: %s", orthros_last_error());
    orthros_recall_free(&s);
    char path[4300];
    snprintf(path, sizeof path, "%s/data/text/recall-example.jsonl", src);
    CHECK(orthros_recall_load(&s, path) == 0 && s.n >= 30, "the example file: %s", orthros_last_error());
    orthros_recall_free(&s);
}

/* ---- end to end on a tiny model with SmolLM2's tokenizer ---- */

/* Progress lines show generated text escaped: line breaks and control characters as escapes, UTF-8 whole, cut. */
static void test_progress_text(void)
{
    char out[64];
    orthros_eval_progress_text(out, sizeof out, "a\nb\tc\\d\x01" "e", 60);
    CHECK(!strcmp(out, "a\\nb\\tc\\\\d\\x01e"), "escaped: %s", out);
    orthros_eval_progress_text(out, sizeof out, "\xc3\xa9t\xc3\xa9 long", 3);
    CHECK(!strcmp(out, "\xc3\xa9t..."), "cut after whole characters: %s", out);
    orthros_eval_progress_text(out, sizeof out, "\xc3", 10);
    CHECK(!strcmp(out, "\\xc3"), "a broken UTF-8 sequence: %s", out);
    orthros_eval_progress_text(out, 12, "0123456789abcdef", 60);
    CHECK(strlen(out) < 12, "the buffer is overrun: %s", out);
}

static void test_cli(const char *model)
{
    char out[4300], out2[4300], bad[4300], path[4300];
    /* RULER NIAH: 2 archs x 1 ctx x 2 depths, 2 samples; the same samples in a second file; resume. */
    snprintf(out, sizeof out, "%s/ruler.json", dir);
    int rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--arch", "transformer,orthros", "--ctx", "300",
                 "--depths", "0,100", "--samples", "2", "--max-new", "6", "--json", out, "--quiet", NULL);
    CHECK(rc == 0, "eval ruler exited %d", rc);
    cJSON *r = load_valid(out, "the ruler file");
    CHECK(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "cells")) == 4, "want 4 ruler cells");
    snprintf(out2, sizeof out2, "%s/ruler2.json", dir);
    rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--arch", "transformer", "--ctx", "300", "--depths", "100",
             "--samples", "2", "--max-new", "6", "--json", out2, "--quiet", NULL);
    cJSON *r2 = load_valid(out2, "the second ruler file");
    const cJSON *c1 = NULL, *c2 = r2 ? cJSON_GetArrayItem(cJSON_GetObjectItem(r2, "cells"), 0) : NULL, *c;
    const cJSON *cells = r ? cJSON_GetObjectItem(r, "cells") : NULL;
    cJSON_ArrayForEach(c, cells)
    {
        if (!strcmp(cJSON_GetObjectItem(c, "arch")->valuestring, "transformer") && num(c, "depth") == 100) c1 = c;
    }
    CHECK(rc == 0 && c1 && c2 &&
              cJSON_Compare(cJSON_GetObjectItem(c1, "records"), cJSON_GetObjectItem(c2, "records"), 1),
          "a cell's samples depend on what else ran");
    cJSON_Delete(r2);
    cJSON_Delete(r);
    rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--arch", "transformer,orthros", "--ctx", "300",
             "--depths", "0,50,100", "--samples", "2", "--max-new", "6", "--json", out, "--resume", NULL);
    r = load_valid(out, "the resumed ruler file");
    CHECK(rc == 0 && log_has("already in") && r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "cells")) == 6,
          "resume: exit %d", rc);
    cJSON_Delete(r);
    /* VT and CWE. */
    snprintf(out, sizeof out, "%s/vt.json", dir);
    rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--task", "vt", "--arch", "swa", "--window", "64",
             "--ctx", "400", "--hops", "2,3", "--samples", "1", "--max-new", "5", "--json", out, "--quiet", NULL);
    r = load_valid(out, "the vt file");
    CHECK(rc == 0 && r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "cells")) == 2, "eval ruler --task vt: exit %d", rc);
    cJSON_Delete(r);
    snprintf(out, sizeof out, "%s/cwe.json", dir);
    rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--task", "cwe", "--arch", "hybrid", "--ctx", "500",
             "--words", "5", "--samples", "1", "--max-new", "5", "--chat", "none", "--json", out, "--quiet", NULL);
    r = load_valid(out, "the cwe file");
    CHECK(rc == 0 && r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "cells")) == 1, "eval ruler --task cwe: exit %d", rc);
    cJSON_Delete(r);
    /* Recall on the example file. */
    snprintf(out, sizeof out, "%s/recall.json", dir);
    snprintf(path, sizeof path, "%s/data/text/recall-example.jsonl", src);
    rc = run("eval", "recall", "--model", model, "--device", "cpu", "--arch", "transformer,linear", "--tasks", path,
             "--max-new", "4", "--json", out, "--quiet", NULL);
    r = load_valid(out, "the recall file");
    const cJSON *rc0 = r ? cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0) : NULL;
    CHECK(rc == 0 && r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "cells")) == 2 && rc0 && num(rc0, "n") >= 30,
          "eval recall: exit %d", rc);
    cJSON_Delete(r);
    /* Perplexity of a text through the tokenizer. */
    snprintf(out, sizeof out, "%s/ppl-text.json", dir);
    rc = run("eval", "ppl", "--model", model, "--device", "cpu", "--arch", "linear", "--text", path, "--ctx", "128,256",
             "--max-tokens", "512", "--json", out, "--quiet", NULL);
    r = load_valid(out, "the ppl file of a text");
    const cJSON *p0 = r ? cell_of(r, "linear", 128) : NULL;
    CHECK(rc == 0 && p0 && num(p0, "windows") == 4 && num(p0, "tokens") == 512 - 4, "eval ppl --text: exit %d", rc);
    cJSON_Delete(r);
    /* --limit on every eval (issue 28): ruler and niah cap --samples, ppl takes the first windows of each length,
     * recall the first questions; the file records it. Progress lines give the time left and seconds a sample, and
     * the generated text they show is escaped (one line each). */
    snprintf(out2, sizeof out2, "%s/ruler-limit.json", dir);
    rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--arch", "transformer", "--ctx", "300", "--depths", "0,100",
             "--samples", "3", "--limit", "1", "--max-new", "6", "--json", out2, NULL);
    r = load_valid(out2, "the ruler file of --limit 1");
    c = r ? cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0) : NULL;
    CHECK(rc == 0 && c && num(c, "samples") == 1 && num(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "run"), "config"), "limit") == 1,
          "eval ruler --limit 1: exit %d", rc);
    CHECK(log_has("[1/2] done in ") && log_has(" s a sample); elapsed ") && log_has(" left\n"),
          "eval ruler's progress lines lack the time a sample or the time left");
    char *lg = tu_slurp(logpath, NULL);
    int lines_ok = lg != NULL;
    for (char *l = lg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        if (!strncmp(l, "  sample ", 9)) {
            char *end = strchr(l, '\n');
            lines_ok &= end && end > l && end[-1] == '"' && strstr(l, ": \"") != NULL;
        }
    CHECK(lines_ok, "a sample's progress line is not one line with its text quoted");
    free(lg);
    cJSON_Delete(r);
    snprintf(out2, sizeof out2, "%s/ppl-limit.json", dir);
    rc = run("eval", "ppl", "--model", model, "--device", "cpu", "--arch", "linear", "--text", path, "--ctx", "128",
             "--max-tokens", "512", "--limit", "2", "--json", out2, "--quiet", NULL);
    r = load_valid(out2, "the ppl file of --limit 2");
    p0 = r ? cell_of(r, "linear", 128) : NULL;
    CHECK(rc == 0 && p0 && num(p0, "windows") == 2 && num(p0, "tokens") == 2 * 127, "eval ppl --limit 2: exit %d", rc);
    cJSON_Delete(r);
    snprintf(out2, sizeof out2, "%s/recall-limit.json", dir);
    rc = run("eval", "recall", "--model", model, "--device", "cpu", "--arch", "transformer", "--tasks", path, "--max-new", "4",
             "--limit", "3", "--json", out2, "--quiet", NULL);
    r = load_valid(out2, "the recall file of --limit 3");
    c = r ? cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0) : NULL;
    CHECK(rc == 0 && c && num(c, "n") == 3, "eval recall --limit 3: exit %d", rc);
    cJSON_Delete(r);
    /* An error of a ruler run names the command typed (eval ruler), not the file's task (ruler_niah). */
    tu_write_text(out2, "{\"not\": \"a result file\"}");
    rc = run("eval", "ruler", "--model", model, "--device", "cpu", "--arch", "transformer", "--ctx", "300", "--depths", "0",
             "--samples", "1", "--max-new", "4", "--json", out2, NULL);
    CHECK(rc == 1 && log_has("orthros eval ruler: error: ") && !log_has("ruler_niah:"),
          "an eval ruler error names the internal task: exit %d", rc);
    /* generate times its two phases: tokens/s of the prefill and of the decode, on stderr and in its JSON line. */
    rc = run("generate", "--model", model, "--device", "cpu", "--prompt", "The capital of France is", "--max-new", "4", NULL);
    CHECK(rc == 0 && log_has(",\"timing\":{\"prefill_tokens\":") && log_has("\"decode_tokens\":3,") &&
              log_has("\"decode_tokens_per_s\":") && log_has("orthros generate: prefill ") && log_has(" tokens/s), decode 3 tokens in "),
          "generate prints no timing: exit %d", rc);
    /* orthros --help names every eval, the text ones too. */
    rc = run("--help", NULL);
    CHECK(rc == 0 && log_has("eval ") && log_has("ruler, recall, ppl, mc"), "orthros --help: the evals of a text model are missing");
    /* A malformed tasks file: one line naming it, exit 1. */
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    tu_write_text(bad, "{\"context\": \"c\", \"question\": \"q\", \"answers\": [\"a\"]}\n{\"context\": \"c\", \"question\": \"q\"}\n");
    rc = run("eval", "recall", "--model", model, "--device", "cpu", "--tasks", bad, "--json", out, NULL);
    CHECK(rc == 1 && log_has("bad.jsonl:2: \"answers\" is missing"), "a malformed tasks file: exit %d", rc);
    /* Usage errors: exit 2 with a line. */
    struct {
        const char *a[12], *says;
    } usage[] = {
        {{"eval", "ruler", "--model", model, "--task", "vt", "--depths", "50"}, "takes --hops"},
        {{"eval", "ruler", "--model", model, "--task", "cwe", "--variant", "multikey"}, "--variant and --needle are niah's"},
        {{"eval", "ruler", "--model", model, "--ctx", "60", "--max-new", "8"}, "too short"},
        {{"eval", "ruler", "--model", model, "--ctx", "40"}, "leaves no room"},
        {{"eval", "ruler", "--model", model, "--needle", "emoji"}, "unknown needle"},
        {{"eval", "ruler", "--model", model, "--chat", "jinja"}, "unknown --chat"},
        {{"eval", "ppl", "--model", model, "--ctx", "8", "--stride", "16", "--text", path}, "longer than the window"},
        {{"eval", "ppl", "--model", model, "--ctx", "8"}, "--text, --tokens-file are required"},
        {{"eval", "recall", "--model", model}, "--tasks are required"},
        {{"eval", "niah", "--model", model}, "orthros eval ruler --task niah"},
        /* Past the model's 4096 tokens: refused before any sample is built (a 1M-token haystack took 19 s first). */
        {{"eval", "ruler", "--model", model, "--ctx", "1k,1m", "--device", "cpu"}, "--ctx 1048576 is past the model's context of 4096"},
    };
    for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
        const char *const *a = usage[i].a;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = run(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        CHECK(rc == 2 && log_has(usage[i].says), "usage case %zu (%s): exit %d", i, usage[i].says, rc);
        /* The refusal of a 1M context comes before any sample is built (it took 20 s after building one). */
        if (strstr(usage[i].says, "past the model's context"))
            CHECK(s < 10, "usage case %zu (%s) took %.1f s", i, usage[i].says, s);
    }
    /* orthros plot draws the new cells: the RULER heatmaps, perplexity and recall. */
    char figs[4200], rfile[4300], pfile[4300], qfile[4300];
    snprintf(figs, sizeof figs, "%s/figs", dir);
    snprintf(rfile, sizeof rfile, "%s/ruler.json", dir);
    snprintf(pfile, sizeof pfile, "%s/ppl-tiny.json", dir);
    snprintf(qfile, sizeof qfile, "%s/recall.json", dir);
    char vfile[4300], cfile[4300];
    snprintf(vfile, sizeof vfile, "%s/vt.json", dir);
    snprintf(cfile, sizeof cfile, "%s/cwe.json", dir);
    rc = run("plot", rfile, vfile, cfile, pfile, qfile, "--out", figs, "--format", "svg,png", NULL);
    CHECK(rc == 0, "plot of the text evals exited %d", rc);
    const char *names[] = {"ruler_niah", "ruler_vt", "ruler_cwe", "ppl", "recall"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s.svg", figs, names[i]);
        size_t len = 0;
        char *t = tu_slurp(path, &len);
        CHECK(t && len > 1000, "%s is missing or tiny", path);
        free(t);
    }
}

/* The real model: a few hundred tokens of each eval. */
static void test_smollm2(const char *gguf)
{
    char out[4300], text[4300];
    snprintf(text, sizeof text, "%s/data/text/kjv-genesis-exodus.txt", src);
    snprintf(out, sizeof out, "%s/smollm2-ppl.json", dir);
    int rc = run("eval", "ppl", "--model", gguf, "--device", "cpu", "--arch", "transformer,orthros", "--text", text, "--ctx",
                 "256", "--max-tokens", "512", "--json", out, "--quiet", NULL);
    cJSON *r = load_valid(out, "SmolLM2's ppl file");
    const cJSON *t = r ? cell_of(r, "transformer", 256) : NULL, *o = r ? cell_of(r, "orthros", 256) : NULL;
    CHECK(rc == 0 && t && o, "eval ppl on SmolLM2: exit %d", rc);
    if (t && o) {
        printf("SmolLM2 on Genesis, windows of 256: transformer ppl %.3f, orthros (linear phase) %.3f\n", num(t, "ppl"), num(o, "ppl"));
        CHECK(num(t, "ppl") > 1 && num(t, "ppl") < 12, "transformer perplexity %g on a text it knows", num(t, "ppl"));
        CHECK(num(o, "ppl") > 4 * num(t, "ppl") && num(o, "linear_phase_tokens") == num(o, "tokens"),
              "orthros's linear-phase perplexity %g vs transformer's %g", num(o, "ppl"), num(t, "ppl"));
    }
    cJSON_Delete(r);
    snprintf(out, sizeof out, "%s/smollm2-niah.json", dir);
    rc = run("eval", "ruler", "--model", gguf, "--device", "cpu", "--arch", "transformer", "--ctx", "512", "--depths", "50",
             "--samples", "1", "--max-new", "16", "--json", out, "--quiet", NULL);
    r = load_valid(out, "SmolLM2's ruler file");
    const cJSON *c = r ? cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cells"), 0) : NULL;
    CHECK(rc == 0 && c && num(c, "accuracy") == 1.0, "SmolLM2 under transformer misses the needle at 512 tokens (exit %d)", rc);
    cJSON_Delete(r);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: test_text_evals ORTHROS SCHEMA TOKENIZER.json SOURCE_DIR\n");
        return 2;
    }
    bin = argv[1], tokjson = argv[3], src = argv[4];
    dir = tu_tempdir();
    snprintf(logpath, sizeof logpath, "%s/log.txt", dir);
    schema = tu_load_json(argv[2]);
    CHECK(schema != NULL, "cannot read %s", argv[2]);
    orthros_tokenizer *tok = NULL;
    CHECK(orthros_tokenizer_load(&tok, tokjson) == 0, "cannot load %s: %s", tokjson, orthros_last_error());
    if (argc > 5) {
        FILE *f = fopen(argv[5], "rb");
        if (!f) {
            if (tu_under_ci()) {
                fprintf(stderr, "FAIL: %s is missing under CI (ci/test.sh runs ci/fetch-model.sh first)\n", argv[5]);
                return 1;
            }
            fprintf(stderr, "SKIP: %s is absent (ci/fetch-model.sh fetches it)\n", argv[5]);
            return 77;
        }
        fclose(f);
        test_smollm2(argv[5]);
        orthros_tokenizer_free(tok);
        cJSON_Delete(schema);
        return tu_finish();
    }
    test_contains();
    test_progress_text();
    test_recall_parsing();
    if (tok) test_ruler_samples(tok);
    test_ppl_by_hand();
    test_eval_lock();
    /* A tiny random Llama over SmolLM2's vocabulary, carrying its tokenizer.json. */
    char model[4300], cmd_tok[4400];
    snprintf(model, sizeof model, "%s/text-tiny", dir);
    orthros_model_config cfg;
    orthros_preset_config(&cfg, "tiny");
    cfg.vocab = orthros_tokenizer_vocab_size(tok ? tok : NULL);
    cfg.tie_embeddings = 1, cfg.max_pos = 4096, cfg.n_eos = 1, cfg.eos[0] = 2;
    char *tj = tu_slurp(tokjson, NULL);
    snprintf(cmd_tok, sizeof cmd_tok, "%s/tokenizer.json", model);
    CHECK(mkdir(model, 0777) == 0 && tu_write_checkpoint(model, &cfg, 5, ORTHROS_DTYPE_F32, 0) == 0 && tj && tu_write_text(cmd_tok, tj) == 0,
          "cannot write the tiny text model");
    free(tj);
    test_cli(model);
    orthros_tokenizer_free(tok);
    cJSON_Delete(schema);
    return tu_finish();
}
