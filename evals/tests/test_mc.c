/* eval mc on the cpu:
 *   - every layout of evals/tests/mc/ read, and the requests lm-eval 0.4.13 builds for them written out here by hand
 *     (prompts, continuations, HellaSwag's preprocessing, Winogrande's partial contexts, OpenBookQA's answerKey, an
 *     empty context, first_n few-shot examples without the question itself);
 *   - malformed lines refused with FILE:LINE and the field;
 *   - lm-eval's token boundary with SmolLM2's committed tokenizer.json (trailing spaces moved to the continuation);
 *   - end to end on a tiny random model carrying that tokenizer: files against the schema, --score prefill giving the
 *     transformer's decode-path log-likelihoods bit for bit, one log-likelihood recomputed from `orthros logits`,
 *     --tp 2 with ranks as processes (the copy command between processes), resume, the tables, usage errors.
 * And eval recall's additions: SQuAD's normalisation, exact match and F1 against values worked out from the official
 * script, the SQuAD v1.1 / v2 / TriviaQA layouts (evals/tests/recall/), and the command with a layout, shots and a
 * limit (the schema, exact match and F1 in every record, lm-eval's table).
 * With a fifth argument, the SmolLM2 GGUF, it is the `eval_mc_parity` test instead: every run of
 * evals/tests/mc/reference.json (made by evals/mc_reference.py through lm-eval's own HFLM) against
 * `orthros eval mc --device cpu --arch transformer`: log-likelihoods within 1e-3 and acc / acc_norm identical, per
 * question and in total. A missing model fails under CI=true and skips (exit 77) elsewhere.
 * usage: test_mc ORTHROS SCHEMA TOKENIZER.json SOURCE_DIR [SMOLLM2.gguf] */
#define _GNU_SOURCE
#include "mc.h"
#include "recall.h"
#include "result_guard.h"
#include "schema.h"
#include "squad.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *bin, *src;
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

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const cJSON *cell_of(const cJSON *root, const char *arch)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cells")) if (!strcmp(cJSON_GetObjectItem(c, "arch")->valuestring, arch)) return c;
    return NULL;
}

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/evals/tests/mc/%s", src, name); }

/* ---- layouts and requests ---- */

static void check_request(const orthros_mc_set *s, int item, int shots, int b, const char *want_ctx, const char *want_cont)
{
    char *ctx = NULL, *cont = NULL;
    int rc = orthros_mc_request(&ctx, &cont, s, &s->items[item], shots, b);
    CHECK(rc == 0 && ctx && !strcmp(ctx, want_ctx), "%s item %d choice %d: context \"%s\", want \"%s\"",
          orthros_mc_layout_name(s->layout), item, b, ctx ? ctx : orthros_last_error(), want_ctx);
    CHECK(rc == 0 && cont && !strcmp(cont, want_cont), "%s item %d choice %d: continuation \"%s\", want \"%s\"",
          orthros_mc_layout_name(s->layout), item, b, cont ? cont : "", want_cont);
    free(ctx), free(cont);
}

static void test_layouts(void)
{
    static const struct {
        const char *file;
        orthros_mc_layout layout;
        int n;
    } files[] = {{"arc.jsonl", ORTHROS_MC_ARC, 6},         {"hellaswag.jsonl", ORTHROS_MC_HELLASWAG, 5},
                 {"piqa.jsonl", ORTHROS_MC_PIQA, 5},       {"openbookqa.jsonl", ORTHROS_MC_OPENBOOKQA, 5},
                 {"winogrande.jsonl", ORTHROS_MC_WINOGRANDE, 5}, {"generic.jsonl", ORTHROS_MC_GENERIC, 5}};
    orthros_mc_set s[6];
    char p[4300];
    for (int i = 0; i < 6; i++) {
        path_of(p, sizeof p, files[i].file);
        int rc = orthros_mc_load(&s[i], p, ORTHROS_MC_AUTO);
        CHECK(rc == 0 && s[i].layout == files[i].layout && s[i].n == files[i].n, "%s: rc %d (%s), layout %d, %d items",
              files[i].file, rc, rc ? orthros_last_error() : "", s[i].layout, s[i].n);
        if (rc) memset(&s[i], 0, sizeof s[i]);
    }
    if (s[0].n == 6) {
        check_request(&s[0], 0, 0, 0, "Question: Which of these is a source of light?\nAnswer:", " the Sun");
        CHECK(s[0].items[2].gold == 1 && s[0].items[3].n_choices == 5, "ARC: numeric labels or five choices read wrong");
        /* two shots: the first two other items, "Q A\n\n" each (item 0 itself is left out of its own context) */
        check_request(&s[0], 0, 2, 1,
                      "Question: What do plants need to make their own food?\nAnswer: sunlight and water\n\n"
                      "Question: Water that is heated until it boils turns into\nAnswer: steam\n\n"
                      "Question: Which of these is a source of light?\nAnswer:",
                      " a rock");
        check_request(&s[0], 3, 1, 0,
                      "Question: Which of these is a source of light?\nAnswer: the Sun\n\n"
                      "Question: Which tool is best for measuring the length of a table?\nAnswer:",
                      " a thermometer");
        char *c = NULL, *d = NULL;
        CHECK(orthros_mc_request(&c, &d, &s[0], &s[0].items[0], 6, 0) == ORTHROS_EINVAL, "6 shots from a pool of 5 others");
        free(c), free(d);
    }
    if (s[1].n == 5) {
        /* ctx_b capitalised (the rest lower case), " [title]" -> ". ", brackets removed, double spaces halved */
        check_request(&s[1], 0, 0, 0,
                      "Making tea: A man fills a kettle with water and puts it on the stove. He",
                      " waits for the water to boil and pours it over a tea bag.");
        check_request(&s[1], 0, 0, 2, "Making tea: A man fills a kettle with water and puts it on the stove. He",
                      " paints the stove blue with a brush.");
        check_request(&s[1], 2, 0, 0,
                      "Home and Garden: How to water a plant. Check the soil. if the top inch of soil is dry, the plant "
                      "needs water.",
                      "  Pour water slowly at the base of the plant until the soil is moist.");
        check_request(&s[1], 2, 0, 2,
                      "Home and Garden: How to water a plant. Check the soil. if the top inch of soil is dry, the plant "
                      "needs water.",
                      "  Paint the leaves Use a bright color.");
        CHECK(s[1].items[3].gold == 2, "HellaSwag: label \"2\" read as %d", s[1].items[3].gold);
    }
    if (s[2].n == 5) check_request(&s[2], 1, 0, 1, "Question: To cool a hot cup of soup quickly,\nAnswer:", " stir it and blow gently across the top.");
    if (s[3].n == 5) {
        check_request(&s[3], 0, 0, 1, "A magnet will attract", " an iron nail");
        CHECK(s[3].items[1].gold == 1, "OpenBookQA: answerKey \" B\" (lstripped) read as %d", s[3].items[1].gold);
    }
    if (s[4].n == 5) {
        /* partial scoring: the sentence up to the blank with each option is the context, the rest the continuation */
        check_request(&s[4], 0, 0, 0, "The trophy did not fit into the suitcase because the trophy", " was too large.");
        check_request(&s[4], 0, 0, 1, "The trophy did not fit into the suitcase because the suitcase", " was too large.");
        check_request(&s[4], 1, 1, 0,
                      "The trophy did not fit into the suitcase because the trophy was too large.\n\n"
                      "Sarah lent her umbrella to Maria because Sarah",
                      " was going to walk home in the rain.");
        CHECK(s[4].items[1].gold == 1 && s[4].items[0].gold == 0, "Winogrande: answers read wrong");
        CHECK(orthros_mc_chars(s[4].items[0].choices[0]) == 59, "Winogrande: acc_norm's length is the context's (%d)",
              orthros_mc_chars(s[4].items[0].choices[0]));
    }
    if (s[5].n == 5) {
        check_request(&s[5], 3, 0, 0, "", " The sky is blue.");
        check_request(&s[5], 0, 0, 2, "The capital of France is", " Madrid");
        CHECK(s[5].items[4].id && !strcmp(s[5].items[4].id, "5"), "generic: a numeric id");
    }
    CHECK(orthros_mc_chars("caf\xc3\xa9") == 4, "characters are code points, not bytes");
    for (int i = 0; i < 6; i++) orthros_mc_free(&s[i]);
    /* A layout forced on another file's lines is refused on its first line. */
    path_of(p, sizeof p, "piqa.jsonl");
    orthros_mc_set t;
    CHECK(orthros_mc_load(&t, p, ORTHROS_MC_ARC) == ORTHROS_EFORMAT && strstr(orthros_last_error(), "piqa.jsonl:1: not a line of the arc layout"),
          "a forced layout: %s", orthros_last_error());
}

static void test_refusals(void)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"{\"question\": \"q\", \"choices\": {\"text\": [\"a\", \"b\"], \"label\": [\"A\", \"B\"]}, \"answerKey\": \"C\"}", "t.jsonl:1: \"answerKey\" \"C\" is not one of the labels"},
        {"{\"question\": \"q\", \"choices\": {\"text\": [\"a\", \"b\"], \"label\": [\"A\"]}, \"answerKey\": \"A\"}", "one label per choice"},
        {"{\"question\": \"q\", \"choices\": [\"a\", \"b\"], \"answerKey\": \"A\"}", "\"choices\" is not an object"},
        {"{\"question\": \"q\", \"choices\": {\"text\": [\"a\"], \"label\": [\"A\"]}, \"answerKey\": \"A\"}", "has 1 choices"},
        {"{\"question\": \"q\", \"choices\": {\"text\": [\"a\", \"\"], \"label\": [\"A\", \"B\"]}, \"answerKey\": \"A\"}", "choice 1 is empty"},
        {"{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\", \"label\": 2}", "\"label\" is outside the 2 choices"},
        {"{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": 5, \"label\": 0}", "\"sol2\" is not a string"},
        {"{\"sentence\": \"no blank here\", \"option1\": \"a\", \"option2\": \"b\", \"answer\": \"1\"}", "has no blank"},
        {"{\"sentence\": \"ends in a blank _\", \"option1\": \"a\", \"option2\": \"b\", \"answer\": \"1\"}", "nothing after its blank"},
        {"{\"sentence\": \"a _ b\", \"option1\": \"a\", \"option2\": \"b\", \"answer\": \"3\"}", "\"answer\" is outside the 2 choices"},
        {"{\"activity_label\": \"x\", \"ctx_a\": \"a\", \"ctx_b\": \"b\", \"endings\": [\"e\", \"f\"], \"label\": \"1.5\"}", "\"label\" is not an index"},
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": -1}", "\"gold\" is outside"},
        /* past long's range (libFuzzer's find: its conversion was undefined), and a fraction */
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": 1e308}", "\"gold\" is not an index"},
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": -1e308}", "\"gold\" is not an index"},
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": 0.5}", "\"gold\" is not an index"},
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"]}", "not a known layout"},
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": 0, \"gold\": 1}", "appears twice"},
        {"{\"context\": \"c\\u0000\", \"choices\": [\"a\", \"b\"], \"gold\": 0}", "\\u0000"},
        {"[1, 2]", "not a JSON object"},
        {"{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": 0} x", "bytes after the JSON value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        orthros_mc_set s;
        int rc = orthros_mc_parse(&s, bad[i].text, strlen(bad[i].text), "t.jsonl", ORTHROS_MC_AUTO);
        CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), bad[i].says), "bad line %zu: rc %d, \"%s\" (want \"%s\")",
              i, rc, orthros_last_error(), bad[i].says);
    }
    /* A line of another layout after the first. */
    const char *mixed = "{\"context\": \"c\", \"choices\": [\"a\", \"b\"], \"gold\": 0}\n\n{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\", \"label\": 0}\n";
    orthros_mc_set s;
    CHECK(orthros_mc_parse(&s, mixed, strlen(mixed), "t.jsonl", ORTHROS_MC_AUTO) == ORTHROS_EFORMAT &&
              strstr(orthros_last_error(), "t.jsonl:3: not a line of the generic layout (it looks like piqa)"),
          "a mixed file: %s", orthros_last_error());
}

/* lm-eval's boundary: the context's trailing spaces begin the continuation; the whole is encoded and split after the
 * context's tokens. */
static void test_encode(const orthros_tokenizer *tok)
{
    int32_t *c = NULL, *k = NULL, *w = NULL, *x = NULL;
    int nc, nk, nw, nx;
    int rc = orthros_mc_encode(&c, &nc, &k, &nk, tok, "Question: why?\nAnswer: ", "because");
    const char *whole = "Question: why?\nAnswer: because", *ctx = "Question: why?\nAnswer:";
    orthros_tokenizer_encode(tok, whole, strlen(whole), ORTHROS_TOK_ADD_SPECIAL, &w, &nw);
    orthros_tokenizer_encode(tok, ctx, strlen(ctx), ORTHROS_TOK_ADD_SPECIAL, &x, &nx);
    CHECK(rc == 0 && nc == nx && !memcmp(c, x, (size_t)nx * sizeof *x) && nc + nk == nw && !memcmp(k, w + nc, (size_t)nk * sizeof *k),
          "the trailing space is not moved to the continuation (%d + %d tokens, whole %d)", nc, nk, nw);
    char *text = NULL;
    size_t len = 0;
    if (!rc && nk >= 1) orthros_tokenizer_decode(tok, k, 1, 0, &text, &len);
    CHECK(text && !strcmp(text, " because"), "the continuation's first token is \"%s\"", text ? text : "");
    free(text), free(c), free(k), free(w), free(x);
    /* An empty context is the BOS token. */
    rc = orthros_mc_encode(&c, &nc, &k, &nk, tok, "", " The sky");
    CHECK(rc == 0 && nc == 1 && c[0] == orthros_tokenizer_bos(tok) && nk >= 2, "an empty context: %d tokens", nc);
    free(c), free(k);
}

/* ---- SQuAD's metrics and the recall layouts ---- */

static void test_squad(void)
{
    static const struct {
        const char *in, *want;
    } norm[] = {{"The Eiffel Tower!", "eiffel tower"}, {"  A  an the  Apple's  ", "apples"}, {"theater an-the", "theater anthe"},
                {"Rye, and BARLEY.", "rye and barley"}, {"a", ""}, {"\tthe\n", ""}};
    for (size_t i = 0; i < sizeof norm / sizeof *norm; i++) {
        char *n = orthros_squad_normalise(norm[i].in);
        CHECK(n && !strcmp(n, norm[i].want), "normalise(\"%s\") = \"%s\", want \"%s\"", norm[i].in, n ? n : "", norm[i].want);
        free(n);
    }
    CHECK(orthros_squad_exact("Paris", "paris.") == 1 && orthros_squad_exact("Paris", "in Paris") == 0, "exact match");
    CHECK(fabs(orthros_squad_f1("the cat sat on the mat", "a cat on a mat") - 6.0 / 7.0) < 1e-12, "F1 of cat / mat: %g",
          orthros_squad_f1("the cat sat on the mat", "a cat on a mat"));
    CHECK(fabs(orthros_squad_f1("x y y", "y y y") - 2.0 / 3.0) < 1e-12, "F1 counts repeated tokens once each");
    CHECK(orthros_squad_f1("Paris", "") == 0 && orthros_squad_f1("", "") == 1, "F1 with an empty side");
    int em;
    double f1;
    const char *ans[] = {"Oda Franke", "the engineer Oda Franke"};
    orthros_squad_score(ans, 2, "engineer Oda Franke", &em, &f1);
    CHECK(em == 1 && f1 == 1, "the best over the answers: %d %g", em, f1);
    orthros_squad_score(ans, 2, "Franke", &em, &f1);
    CHECK(em == 0 && fabs(f1 - 2.0 / 3.0) < 1e-12, "partial credit: %d %g", em, f1);
    orthros_squad_score(NULL, 0, "", &em, &f1);
    CHECK(em == 1 && f1 == 1, "unanswerable, empty answer: %d %g", em, f1);
    orthros_squad_score(NULL, 0, "Paris", &em, &f1);
    CHECK(em == 0 && f1 == 0, "unanswerable, an answer: %d %g", em, f1);
    const char *the[] = {"the"};
    orthros_squad_score(the, 1, "", &em, &f1);
    CHECK(em == 1, "an answer that normalises to nothing is dropped (then the empty answer)");
    /* The layouts. */
    char p[4300];
    orthros_recall_set r;
    snprintf(p, sizeof p, "%s/evals/tests/recall/squad.jsonl", src);
    CHECK(orthros_recall_load(&r, p) == 0 && r.layout == ORTHROS_RECALL_SQUAD && r.n == 3 && r.items[0].n_answers == 2 &&
              !strcmp(r.items[0].id, "orthros-squad-1"),
          "SQuAD: %s", orthros_last_error());
    orthros_recall_free(&r);
    snprintf(p, sizeof p, "%s/evals/tests/recall/squad_v2.jsonl", src);
    CHECK(orthros_recall_load(&r, p) == 0 && r.layout == ORTHROS_RECALL_SQUAD_V2 && r.n == 3 && r.items[1].unanswerable &&
              !r.items[0].unanswerable,
          "SQuAD v2 (detected by its unanswerable question): %s", orthros_last_error());
    orthros_recall_free(&r);
    CHECK(orthros_recall_load_layout(&r, p, ORTHROS_RECALL_SQUAD) == ORTHROS_EFORMAT &&
              strstr(orthros_last_error(), "squad_v2.jsonl:2: \"answers.text\" is empty (an unanswerable question: SQuAD v2"),
          "an unanswerable question under --layout squad: %s", orthros_last_error());
    snprintf(p, sizeof p, "%s/evals/tests/recall/triviaqa.jsonl", src);
    CHECK(orthros_recall_load(&r, p) == 0 && r.layout == ORTHROS_RECALL_TRIVIAQA && r.n == 2 && r.items[0].n_answers == 3 &&
              strstr(r.items[1].context, "Port Kell") && !strcmp(r.items[1].id, "orthros-tqa-2"),
          "TriviaQA: %s", orthros_last_error());
    orthros_recall_free(&r);
    const char *nocontext = "{\"question\": \"q\", \"entity_pages\": {\"wiki_context\": []}, \"answer\": {\"value\": \"v\", \"aliases\": []}}";
    CHECK(orthros_recall_parse(&r, nocontext, strlen(nocontext), "t.jsonl") == ORTHROS_EFORMAT && strstr(orthros_last_error(), "t.jsonl:1: no context"),
          "TriviaQA without a context: %s", orthros_last_error());
}

/* ---- the reader of mc cells: every metric recomputed from the records ---- */

static void test_reader(void)
{
    char good[4300], bad[4300];
    snprintf(good, sizeof good, "%s/evals/tests/mc/smollm2-generic.json", src);
    snprintf(bad, sizeof bad, "%s/mutated.json", dir);
    cJSON *g = load_valid(good, "the committed mc file");
    int rc = run("report", good, NULL);
    CHECK(rc == 0 && log_has("generic") && log_has("acc_norm"), "report of the committed mc file: exit %d", rc);
    static const struct {
        const char *where, *key, *value, *says;
    } cases[] = {
        {"cell", "acc", "0.9", "cells[0].acc: 0.9"},
        {"cell", "acc_stderr", "0.5", "cells[0].acc_stderr: is not the records' stderr"},
        {"cell", "correct_norm", "5", "cells[0].acc_norm: 0.59"},
        {"cell", "n", "4", "cells[0].n"},
        {"record", "pred", "2", "cells[0].records[0].pred: is not the choice of the largest log-likelihood"},
        {"record", "acc", "false", "cells[0].records[0].acc: disagrees with pred and gold"},
        {"record", "gold", "7", "cells[0].records[0].gold"},
        {"record", "loglikelihoods", "[0.5, -1, -2]", "cells[0].records[0].loglikelihoods: item 0 is not a finite number <= 0"},
        {"record", "loglikelihoods", "[-1]", "cells[0].records[0].loglikelihoods: 1 choices"},
        {"record", "choice_chars", "[0, 1, 1]", "cells[0].records[0].choice_chars: item 0 is not a positive integer"},
        {"record", "choice_chars", "[1, 1]", "cells[0].records[0].choice_chars: 2 lengths for 3 choices"},
        {"config", "score", "\"middle\"", "run.config.score: \"middle\" is not decode or prefill"},
        {"config", "layout", "\"mmlu\"", "run.config.layout: \"mmlu\" is not a multiple-choice layout"},
        /* Every field the writer writes, checked as strictly as the other tasks' records (issue 23). */
        {"record", "is_greedy", "[true, false]", "cells[0].records[0].is_greedy: 2 values for 3 choices"},
        {"record", "is_greedy", "[1, 0, 0]", "cells[0].records[0].is_greedy: item 0 is not true or false"},
        {"record", "is_greedy", "\"yes\"", "cells[0].records[0].is_greedy: not an array"},
        {"record", "ctx_tokens", "[5, 5, 5]", "cells[0].records[0].ctx_tokens: 3 contexts for 3 choices (one, shared)"},
        {"record", "ctx_tokens", "[0]", "cells[0].records[0].ctx_tokens: item 0 is not an integer in 1.."},
        {"record", "ctx_tokens", "[\"5\"]", "cells[0].records[0].ctx_tokens: item 0 is not an integer"},
        {"record", "cont_tokens", "[1, 1]", "cells[0].records[0].cont_tokens: 2 lengths for 3 choices"},
        {"record", "cont_tokens", "[1, 1.5, 1]", "cells[0].records[0].cont_tokens: item 1 is not an integer"},
        {"record", "cont_tokens", "[1, 1, 5]", "cells[0].ctx: 9, but the records' longest request (context and continuation) is 10 tokens"},
        {"record", "choice_chars", "[1e300, 1, 1]", "cells[0].records[0].choice_chars: item 0 is not a positive integer"},
        {"record", "id", "7", "cells[0].records[0].id: not a string"},
        {"record", "line", "3", "cells[0].records[1].line: 2 after line 3"},
        {"cell", "ctx", "12", "cells[0].ctx: 12, but the records' longest request (context and continuation) is 9 tokens"},
        {"cell", "variant", "\"winogrande\"", "cells[0].records[0].ctx_tokens: 1 contexts for 3 choices (winogrande: one a choice)"},
        {"cell", "variant", "\"mmlu\"", "cells[0].variant: \"mmlu\" is not a variant of mc"},
        {"config", "shots", "-1", "run.config.shots: -1 is not an integer in 0.."},
        {"config", "name", "\"\"", "run.config.name: empty"},
        {"config", "limit", "3", "run.config.samples: 5, but the run takes 3 of the 5 items (--limit 3)"},
        {"config", "text_tokens", "4", "run.config.samples: 5, but the run takes 4 of the 4 items (--limit 0)"},
        {"config", "variant", "\"arc\"", "run.config.variant: \"arc\" is not the layout \"generic\""},
        {"config", "max_new", "0", "run.config.max_new: 0 is not an integer in 1.."},
    };
    for (size_t i = 0; g && i < sizeof cases / sizeof *cases; i++) {
        cJSON *m = cJSON_Duplicate(g, 1);
        cJSON *cell = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "cells"), 0);
        cJSON *at = !strcmp(cases[i].where, "cell")     ? cell
                    : !strcmp(cases[i].where, "record") ? cJSON_GetArrayItem(cJSON_GetObjectItem(cell, "records"), 0)
                                                        : cJSON_GetObjectItem(cJSON_GetObjectItem(m, "run"), "config");
        if (cJSON_GetObjectItem(at, cases[i].key)) cJSON_ReplaceItemInObject(at, cases[i].key, cJSON_Parse(cases[i].value));
        else cJSON_AddItemToObject(at, cases[i].key, cJSON_Parse(cases[i].value));
        tu_write_json(bad, m);
        cJSON_Delete(m);
        rc = run("report", bad, "-o", "md", NULL);
        CHECK(rc == 1 && log_has(cases[i].says), "mutation %zu (%s = %s): exit %d", i, cases[i].key, cases[i].value, rc);
    }
    cJSON_Delete(g);
}

/* ---- end to end on a tiny model ---- */

static const cJSON *record(const cJSON *cell, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(cell, "records"), i); }

static double item_num(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static double ll_of(const cJSON *cell, int q, int b)
{
    const cJSON *r = record(cell, q);
    return r ? item_num(cJSON_GetObjectItem(r, "loglikelihoods"), b) : NAN;
}


/* Question q's choice b recomputed from `orthros logits` over context + continuation[:-1], with the token ids of the
 * --save-prompts file. */
static double ll_by_hand(const char *model, const char *prompts, const char *arch, int line, int b, int V)
{
    size_t len = 0;
    char *text = tu_slurp(prompts, &len), *save = NULL, tokfile[4300], out[4300];
    double ll = NAN;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
        cJSON *j = cJSON_Parse(l);
        if (!j) continue;
        if (strcmp(cJSON_GetObjectItem(j, "arch")->valuestring, arch) || num(j, "line") != line) {
            cJSON_Delete(j);
            continue;
        }
        const cJSON *ctxs = cJSON_GetObjectItem(j, "contexts"), *conts = cJSON_GetObjectItem(j, "continuations");
        const cJSON *ctx = cJSON_GetArrayItem(ctxs, cJSON_GetArraySize(ctxs) > 1 ? b : 0), *cont = cJSON_GetArrayItem(conts, b);
        int nc = cJSON_GetArraySize(ctx), nk = cJSON_GetArraySize(cont), k = 0;
        char ids[8192];
        for (int i = 0; i < nc; i++) k += snprintf(ids + k, sizeof ids - (size_t)k, "%s%d", k ? "," : "", (int)item_num(ctx, i));
        for (int i = 0; i + 1 < nk; i++) k += snprintf(ids + k, sizeof ids - (size_t)k, ",%d", (int)item_num(cont, i));
        snprintf(tokfile, sizeof tokfile, "%s/hand.txt", dir);
        snprintf(out, sizeof out, "%s/hand.f32", dir);
        tu_write_text(tokfile, ids);
        int rc = run("logits", "--model", model, "--device", "cpu", "--arch", arch, "--tokens-file", tokfile, "--out", out, NULL);
        size_t bytes = 0;
        float *lg = (float *)tu_slurp(out, &bytes);
        if (!rc && lg && bytes == (size_t)(nc + nk - 1) * V * 4) {
            ll = 0;
            for (int t = 0; t < nk; t++) {
                const float *row = lg + (size_t)(nc - 1 + t) * V;
                double mx = row[0], s = 0;
                for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
                for (int v = 0; v < V; v++) s += exp((double)row[v] - mx);
                ll += row[(int)item_num(cont, t)] - mx - log(s);
            }
        }
        free(lg);
        cJSON_Delete(j);
        break;
    }
    free(text);
    return ll;
}

static void test_cli(const char *model, int V)
{
    char out[4300], out2[4300], prompts[4300], tasks[4300], tab[4300];
    static const char *const files[] = {"arc.jsonl", "hellaswag.jsonl", "piqa.jsonl", "openbookqa.jsonl", "winogrande.jsonl", "generic.jsonl"};
    for (size_t f = 0; f < 6; f++) {
        path_of(tasks, sizeof tasks, files[f]);
        snprintf(out, sizeof out, "%s/mc-%zu.json", dir, f);
        snprintf(out2, sizeof out2, "%s/mc-%zu-prefill.json", dir, f);
        snprintf(prompts, sizeof prompts, "%s/mc-%zu.prompts.jsonl", dir, f);
        int rc = run("eval", "mc", "--model", model, "--device", "cpu", "--arch", "transformer,orthros", "--tasks", tasks,
                     "--json", out, "--save-prompts", prompts, "--quiet", NULL);
        CHECK(rc == 0, "eval mc %s exited %d", files[f], rc);
        rc = run("eval", "mc", "--model", model, "--device", "cpu", "--arch", "transformer,orthros", "--tasks", tasks,
                 "--score", "prefill", "--json", out2, "--quiet", NULL);
        CHECK(rc == 0, "eval mc --score prefill %s exited %d", files[f], rc);
        cJSON *a = load_valid(out, files[f]), *b = load_valid(out2, files[f]);
        const cJSON *td = a ? cell_of(a, "transformer") : NULL, *tp = b ? cell_of(b, "transformer") : NULL;
        const cJSON *od = a ? cell_of(a, "orthros") : NULL, *op = b ? cell_of(b, "orthros") : NULL;
        CHECK(td && tp && od && op, "%s: cells missing", files[f]);
        if (td && tp && od && op) {
            int n = (int)num(td, "n"), same_t = 1, differs_o = 0;
            for (int q = 0; q < n; q++)
                for (int k = 0; k < cJSON_GetArraySize(cJSON_GetObjectItem(record(td, q), "loglikelihoods")); k++) {
                    same_t &= ll_of(td, q, k) == ll_of(tp, q, k);
                    differs_o |= ll_of(od, q, k) != ll_of(op, q, k);
                }
            CHECK(same_t, "%s: transformer's decode-path log-likelihoods are not its prefill's, bit for bit", files[f]);
            /* under orthros the continuation runs linear attention in the prefill, full attention when decoded */
            CHECK(differs_o || f == 4, "%s: orthros scores the same in the prefill and the decode path", files[f]);
            const cJSON *r0 = record(td, 1);
            double hand = ll_by_hand(model, prompts, "transformer", (int)num(r0, "line"), 1, V);
            CHECK(fabs(hand - ll_of(td, 1, 1)) < 1e-4 * (1 + fabs(hand)), "%s: question 2 choice 2: %.6f, by hand %.6f",
                  files[f], ll_of(td, 1, 1), hand);
        }
        cJSON_Delete(a), cJSON_Delete(b);
    }
    /* Ranks as processes: the copy goes to rank 1 as a command. */
    path_of(tasks, sizeof tasks, "arc.jsonl");
    snprintf(out, sizeof out, "%s/mc-0.json", dir);
    snprintf(out2, sizeof out2, "%s/mc-tp2.json", dir);
    char *argv[] = {(char *)bin, "eval", "mc", "--model", (char *)model, "--device", "cpu", "--arch", "orthros", "--tp", "2",
                    "--tasks", tasks, "--json", out2, "--quiet", NULL};
    int rc = tu_run_capture(argv, "ORTHROS_TP_PROCESSES=1", NULL, logpath);
    cJSON *a = load_valid(out, "mc-0"), *b = rc == 0 ? load_valid(out2, "the tp 2 file") : NULL;
    CHECK(rc == 0 && b, "eval mc --tp 2 (ranks as processes) exited %d", rc);
    if (a && b) {
        const cJSON *x = cell_of(a, "orthros"), *y = cell_of(b, "orthros");
        double worst = 0;
        for (int q = 0; x && y && q < (int)num(x, "n"); q++)
            for (int k = 0; k < 4; k++) worst = fmax(worst, fabs(ll_of(x, q, k) - ll_of(y, q, k)));
        CHECK(x && y && worst < 1e-3, "tp 2 against tp 1: log-likelihoods differ by %g", worst);
    }
    cJSON_Delete(a), cJSON_Delete(b);
    /* Few-shot, a limit, resume, the table formats. */
    snprintf(out, sizeof out, "%s/mc-shots.json", dir);
    snprintf(tab, sizeof tab, "%s/mc.md", dir);
    rc = run("eval", "mc", "--model", model, "--device", "cpu", "--arch", "transformer", "--tasks", tasks, "--shots", "2",
             "--limit", "3", "--name", "arc_easy", "--json", out, "-o", "md", "--table-out", tab, "--quiet", NULL);
    a = load_valid(out, "the few-shot file");
    const cJSON *c0 = a ? cell_of(a, "transformer") : NULL;
    CHECK(rc == 0 && c0 && num(c0, "n") == 3, "eval mc --shots 2 --limit 3: exit %d", rc);
    cJSON_Delete(a);
    char *md = tu_slurp(tab, NULL);
    CHECK(md && strstr(md, "| Tasks | Version | Filter | n-shot | Metric |  | Value |  | Stderr |") &&
              strstr(md, "| arc_easy | 1 | none | 2 | acc | \xe2\x86\x91 |") && strstr(md, "|  |  | none | 2 | acc_norm |") &&
              strstr(md, "limit: 3, num_fewshot: 2"),
          "the markdown table is not lm-eval's:\n%s", md ? md : "");
    free(md);
    rc = run("eval", "mc", "--model", model, "--device", "cpu", "--arch", "transformer,linear", "--tasks", tasks, "--shots",
             "2", "--limit", "3", "--name", "arc_easy", "--json", out, "--resume", "-o", "csv", NULL);
    a = load_valid(out, "the resumed file");
    CHECK(rc == 0 && log_has("already in") && log_has("Arch,Tasks,Version,Filter,n-shot,Metric,Value,Stderr") &&
              log_has("linear,arc_easy,1,none,2,acc_norm,") && a && cJSON_GetArraySize(cJSON_GetObjectItem(a, "cells")) == 2,
          "resume: exit %d", rc);
    cJSON_Delete(a);
    rc = run("eval", "mc", "--model", model, "--device", "cpu", "--arch", "transformer", "--tasks", tasks, "--shots", "1",
             "--limit", "3", "--name", "arc_easy", "--json", out, "--resume", NULL);
    CHECK(rc == 1 && log_has("--shots"), "resume with other shots: exit %d", rc);
    /* eval recall: a layout, shots, a limit; exact match and F1 in every record; lm-eval's table. */
    char rtasks[4300];
    snprintf(rtasks, sizeof rtasks, "%s/evals/tests/recall/squad_v2.jsonl", src);
    snprintf(out2, sizeof out2, "%s/recall-v2.json", dir);
    rc = run("eval", "recall", "--model", model, "--device", "cpu", "--arch", "transformer,orthros", "--tasks", rtasks,
             "--shots", "1", "--limit", "2", "--max-new", "4", "--json", out2, "-o", "md", "--quiet", NULL);
    a = load_valid(out2, "the recall file");
    c0 = a ? cell_of(a, "orthros") : NULL;
    CHECK(rc == 0 && c0 && num(c0, "n") == 2 && !isnan(num(c0, "f1")) && !isnan(num(c0, "exact_match")) &&
              cJSON_IsTrue(cJSON_GetObjectItem(record(c0, 1), "unanswerable")) && log_has("| squad_v2 | N/A | none | 1 | contains |") &&
              log_has("|  |  | none | 1 | exact_match |") && log_has("|  |  | none | 1 | f1 |"),
          "eval recall --layout auto (v2) --shots 1 --limit 2: exit %d", rc);
    cJSON_Delete(a);
    /* eval mc and eval recall hold their result file's lock for the whole run (harness/result_run.c, issue 23): while
     * another run (this test) holds it, each is refused at once with one line naming the file. */
    {
        orthros_result_lock lk;
        struct stat sb;
        char locked[4300];
        snprintf(locked, sizeof locked, "%s/locked.json", dir);
        CHECK(orthros_result_lock_take(&lk, locked, 0) == 0, "cannot take the lock of %s: %s", locked, orthros_last_error());
        rc = run("eval", "mc", "--model", model, "--device", "cpu", "--arch", "transformer", "--tasks", tasks, "--json",
                 locked, NULL);
        CHECK(rc == 1 && log_has("locked.json is being written by another run") && stat(locked, &sb) != 0,
              "eval mc beside a run holding its file: exit %d", rc);
        rc = run("eval", "recall", "--model", model, "--device", "cpu", "--arch", "transformer", "--tasks", rtasks,
                 "--max-new", "4", "--json", locked, "--resume", NULL);
        CHECK(rc == 1 && log_has("locked.json is being written by another run") && stat(locked, &sb) != 0,
              "eval recall --resume beside a run holding its file: exit %d", rc);
        orthros_result_lock_release(&lk);
    }
    /* The report of a file, in every format, without running anything. */
    rc = run("report", out, "-o", "json", NULL);
    CHECK(rc == 0 && log_has("\"Metric\": \"acc_norm\""), "orthros report -o json: exit %d", rc);
    /* Any result file: RULER's pivot, a bench file, a refused file; plot skips mc files with a line. */
    char rf[4300], bf[4300], bad_file[4300];
    snprintf(rf, sizeof rf, "%s/data/results/smollm2-cpu-2026-12-01/ruler-niah-single.json", src);
    snprintf(bf, sizeof bf, "%s/data/results/h200-2026-11-29/bench-llama3.2-1b.json", src);
    rc = run("report", rf, "-o", "md", NULL);
    CHECK(rc == 0 && log_has("| arch | 1K | 2K | 4K | avg |") && log_has("| transformer | 66.7 | 100.0 | 100.0 | 88.9 |"),
          "report of a ruler file (the pivot): exit %d", rc);
    rc = run("report", bf, "-o", "csv", NULL);
    CHECK(rc == 0 && log_has("model,size_mib,backend,device,threads,tp,commit,test,arch,phase,ctx,batch,n,median_ms,ci95_lo_ms,"
                             "ci95_hi_ms,noise_pct,stop,tokens_per_s,tflops,pct_gemm,tbps,pct_copy") &&
              log_has(",cuda,NVIDIA H200,,1,") && log_has(",pp4096,transformer,prefill,4096,1,3,20.4026,"),
          "report of a bench file (llama-bench's context and test names, numeric intervals): exit %d", rc);
    rc = run("report", bf, "-o", "md", NULL);
    CHECK(rc == 0 && log_has("| speedup_of | over | phase |") && log_has("| orthros | transformer | prefill | 4096 |"),
          "report -o md of a bench file: the speedups are not a markdown table: exit %d", rc);
    a = tu_load_json(out);
    if (a) {
        cJSON *cell = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "cells"), 0);
        cJSON_ReplaceItemInObject(cell, "correct", cJSON_CreateNumber(num(cell, "correct") + 1));
        snprintf(bad_file, sizeof bad_file, "%s/mc-bad.json", dir);
        tu_write_json(bad_file, a);
        cJSON_Delete(a);
        rc = run("report", rf, bad_file, NULL);
        CHECK(rc == 1 && log_has("mc-bad.json: cells[0]") && !log_has("| transformer"), "report of a bad file: exit %d", rc);
    }
    snprintf(out2, sizeof out2, "%s/figs", dir);
    char rfile[4300];
    snprintf(rfile, sizeof rfile, "%s/recall-v2.json", dir);
    rc = run("plot", out, rfile, "--out", out2, "--format", "svg", NULL);
    CHECK(rc == 0 && log_has("holds multiple-choice (mc) cells; no figure uses them") && log_has("plot: 1 figure"),
          "plot of an mc file beside a recall file: exit %d", rc);
    /* Usage errors and refusals. */
    struct {
        const char *a[12], *says;
        int code;
    } bad[] = {
        {{"eval", "mc", "--model", model}, "--model and --tasks are required", 2},
        {{"eval", "mc", "--model", model, "--tasks", tasks, "--layout", "mmlu"}, "unknown layout", 2},
        {{"eval", "mc", "--model", model, "--tasks", tasks, "--score", "both"}, "--score both", 2},
        {{"eval", "mc", "--model", model, "--tasks", tasks, "--layout", "piqa"}, "not a line of the piqa layout", 1},
        {{"eval", "mc", "--model", model, "--tasks", tasks, "--shots", "9"}, "9 few-shot examples asked for", 1},
        {{"eval", "mc", "--model", "preset:tiny", "--tasks", tasks}, "preset", 2},
        /* an empty name would be left out of the file, which the reader then refuses (mc requires it) */
        {{"eval", "mc", "--model", model, "--tasks", tasks, "--name", ""}, "--name is empty", 2},
        {{"eval", "recall", "--model", model, "--tasks", rtasks, "--name", ""}, "--name is empty", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *const *x = bad[i].a;
        snprintf(out, sizeof out, "%s/never.json", dir);
        rc = run(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], "--json", out, NULL);
        CHECK(rc == bad[i].code && log_has(bad[i].says), "refusal %zu (%s): exit %d", i, bad[i].says, rc);
    }
}

/* ---- parity with lm-eval on SmolLM2 ---- */

static void test_parity(const char *gguf)
{
    char ref[4300], out[4300], tasks[4300], shots[16];
    snprintf(ref, sizeof ref, "%s/evals/tests/mc/reference.json", src);
    cJSON *r = tu_load_json(ref);
    CHECK(r != NULL, "cannot read %s", ref);
    const cJSON *run_, *runs = r ? cJSON_GetObjectItem(r, "runs") : NULL;
    int k = 0;
    cJSON_ArrayForEach(run_, runs)
    {
        const char *file = cJSON_GetObjectItem(run_, "file")->valuestring;
        snprintf(tasks, sizeof tasks, "%s/%s", src, file);
        snprintf(out, sizeof out, "%s/parity-%d.json", dir, k++);
        snprintf(shots, sizeof shots, "%d", (int)num(run_, "shots"));
        int rc = run("eval", "mc", "--model", gguf, "--device", "cpu", "--arch", "transformer", "--tasks", tasks, "--shots", shots,
                     "--json", out, "--quiet", NULL);
        cJSON *a = load_valid(out, file);
        const cJSON *c = a ? cell_of(a, "transformer") : NULL, *q;
        CHECK(rc == 0 && c, "eval mc %s --shots %s: exit %d", file, shots, rc);
        if (!c) {
            cJSON_Delete(a);
            continue;
        }
        double worst = 0;
        int i = 0, same_acc = 1;
        cJSON_ArrayForEach(q, cJSON_GetObjectItem(run_, "questions"))
        {
            const cJSON *lls = cJSON_GetObjectItem(q, "loglikelihoods"), *rec = record(c, i);
            for (int b = 0; b < cJSON_GetArraySize(lls); b++) worst = fmax(worst, fabs(item_num(lls, b) - ll_of(c, i, b)));
            same_acc &= rec && (num(q, "acc") == 1) == cJSON_IsTrue(cJSON_GetObjectItem(rec, "acc"));
            if (cJSON_GetObjectItem(q, "acc_norm")) same_acc &= rec && (num(q, "acc_norm") == 1) == cJSON_IsTrue(cJSON_GetObjectItem(rec, "acc_norm"));
            i++;
        }
        printf("%s, %s shots: %d questions, log-likelihoods within %.2e of lm-eval's; acc %.4f (lm-eval %.4f)\n", file, shots, i,
               worst, num(c, "acc"), num(run_, "acc"));
        CHECK(i == num(c, "n") && worst < 1e-3, "%s --shots %s: log-likelihoods differ from lm-eval's by %g", file, shots, worst);
        CHECK(same_acc && fabs(num(c, "acc") - num(run_, "acc")) < 1e-12 &&
                  (!cJSON_GetObjectItem(run_, "acc_norm") || fabs(num(c, "acc_norm") - num(run_, "acc_norm")) < 1e-12) &&
                  fabs(num(c, "acc_stderr") - num(run_, "acc_stderr")) < 1e-9,
              "%s --shots %s: acc / acc_norm / stderr differ from lm-eval's", file, shots);
        cJSON_Delete(a);
    }
    CHECK(k >= 8, "%d runs in %s", k, ref);
    cJSON_Delete(r);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: test_mc ORTHROS SCHEMA TOKENIZER.json SOURCE_DIR [SMOLLM2.gguf]\n");
        return 2;
    }
    bin = argv[1], src = argv[4];
    dir = tu_tempdir();
    snprintf(logpath, sizeof logpath, "%s/log.txt", dir);
    schema = tu_load_json(argv[2]);
    CHECK(schema != NULL, "cannot read %s", argv[2]);
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
        test_parity(argv[5]);
        cJSON_Delete(schema);
        return tu_finish();
    }
    orthros_tokenizer *tok = NULL;
    /* the directory: tokenizer.json with tokenizer_config.json (BOS and EOS, which an empty context needs) */
    char tokdir[4300], cfgsrc[4400], cfgdst[4400];
    snprintf(tokdir, sizeof tokdir, "%s", argv[3]);
    if (strrchr(tokdir, '/')) *strrchr(tokdir, '/') = 0;
    snprintf(cfgsrc, sizeof cfgsrc, "%s/tokenizer_config.json", tokdir);
    CHECK(orthros_tokenizer_load(&tok, tokdir) == 0, "cannot load %s: %s", tokdir, orthros_last_error());
    test_layouts();
    test_refusals();
    test_squad();
    test_reader();
    if (tok) test_encode(tok);
    /* A tiny random Llama over SmolLM2's vocabulary, carrying its tokenizer.json. */
    char model[4300], cmd_tok[4400];
    snprintf(model, sizeof model, "%s/text-tiny", dir);
    orthros_model_config cfg;
    orthros_preset_config(&cfg, "tiny");
    cfg.vocab = tok ? orthros_tokenizer_vocab_size(tok) : 49152;
    cfg.tie_embeddings = 1, cfg.max_pos = 4096, cfg.n_eos = 1, cfg.eos[0] = 2;
    char *tj = tu_slurp(argv[3], NULL);
    snprintf(cmd_tok, sizeof cmd_tok, "%s/tokenizer.json", model);
    char *tc = tu_slurp(cfgsrc, NULL);
    snprintf(cfgdst, sizeof cfgdst, "%s/tokenizer_config.json", model);
    CHECK(mkdir(model, 0777) == 0 && tu_write_checkpoint(model, &cfg, 5, ORTHROS_DTYPE_F32, 0) == 0 && tj &&
              tu_write_text(cmd_tok, tj) == 0 && tc && tu_write_text(cfgdst, tc) == 0,
          "cannot write the tiny text model");
    free(tj), free(tc);
    test_cli(model, cfg.vocab);
    orthros_tokenizer_free(tok);
    cJSON_Delete(schema);
    return tu_finish();
}
