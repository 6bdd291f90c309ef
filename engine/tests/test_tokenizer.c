/* The byte-level BPE tokenizer against Hugging Face tokenizers' ids on a corpus of awkward text
 * (data/text/tokenizer-corpus.jsonl, made by data/make_text_refs.py), loaded from every spec given (a
 * tokenizer.json, a model directory, a GGUF); then, on the first spec, invalid UTF-8, random bytes, special
 * tokens, decode flags and the API's edges; then small synthetic tokenizer.json files (merges as "a b" strings and
 * as [a, b] lists, ignore_merges, a BOS template) and malformed ones.
 * usage: test_tokenizer CORPUS.jsonl SPEC... A spec that does not exist fails the test under CI=true and
 * skips it (exit 77) elsewhere: the GGUF spec is the fetched model (ci/fetch-model.sh). */
#define _GNU_SOURCE
#include "testutil.h"
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static size_t unhex(char *dst, const char *hex)
{
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        dst[n++] = (char)v;
    }
    return n;
}

static int same_ids(const int32_t *a, int na, const cJSON *want)
{
    if (na != cJSON_GetArraySize(want)) return 0;
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, want) if (a[i++] != e->valueint) return 0;
    return 1;
}

static void check_corpus(const orthros_tokenizer *tok, const char *corpus, const char *label)
{
    FILE *f = fopen(corpus, "r");
    CHECK(f != NULL, "cannot open %s", corpus);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    int lines = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *hex = cJSON_GetObjectItem(o, "hex"), *ids = cJSON_GetObjectItem(o, "ids");
        if (!cJSON_IsString(hex) || !cJSON_IsArray(ids)) {
            CHECK(0, "%s: corpus line %d is malformed", corpus, lines + 1);
            cJSON_Delete(o);
            break;
        }
        char *text = malloc(strlen(hex->valuestring) / 2 + 1);
        size_t len = unhex(text, hex->valuestring);
        int32_t *got = NULL;
        int n = 0;
        int rc = orthros_tokenizer_encode(tok, text, len, ORTHROS_TOK_ADD_SPECIAL, &got, &n);
        int ok = rc == 0 && same_ids(got, n, ids);
        if (!ok && bad++ < 5) {
            char *want = cJSON_PrintUnformatted(ids);
            fprintf(stderr, "%s: line %d \"%.*s\": want %s, got", label, lines + 1, (int)(len > 80 ? 80 : len), text,
                    want);
            for (int i = 0; i < n; i++) fprintf(stderr, "%s%d", i ? "," : " ", got[i]);
            fprintf(stderr, " (rc %d)\n", rc);
            free(want);
        }
        char *back = NULL;
        size_t blen = 0;
        int rt = !rc && !orthros_tokenizer_decode(tok, got, n, 0, &back, &blen) && blen == len && !memcmp(back, text, len);
        if (!rt && bad++ < 5) fprintf(stderr, "%s: line %d does not decode back to its text\n", label, lines + 1);
        free(back);
        free(got);
        free(text);
        cJSON_Delete(o);
        lines++;
    }
    free(line);
    fclose(f);
    CHECK(bad == 0 && lines > 300, "%s: %d of %d corpus texts differ from HF tokenizers (or do not round-trip)", label,
          bad, lines);
    printf("%s: %d corpus texts, %d differences\n", label, lines, bad);
}

static int32_t *enc(const orthros_tokenizer *tok, const char *s, size_t len, int flags, int *n)
{
    int32_t *ids = NULL;
    int rc = orthros_tokenizer_encode(tok, s, len, flags, &ids, n);
    CHECK(rc == 0, "encode failed: %s", orthros_last_error());
    return ids;
}

/* Bytes of any kind: encoded without error and decoded back exactly, less the bytes that have no token (SmolLM2
 * has none for 0x04, 0xc0, 0xff, ...; HF drops those, and so do we). */
static void check_roundtrip(const orthros_tokenizer *tok, const char *s, size_t len, const char *label)
{
    int n = 0;
    int32_t *ids = enc(tok, s, len, ORTHROS_TOK_SPLIT_SPECIAL, &n);
    char *back = NULL, *kept = malloc(len + 1);
    size_t blen = 0, klen = 0;
    for (size_t i = 0; i < len; i++)
        if (orthros_tokenizer_token_id(tok, s + i, 1) >= 0) kept[klen++] = s[i];
    int rc = orthros_tokenizer_decode(tok, ids, n, 0, &back, &blen);
    CHECK(rc == 0 && blen == klen && !memcmp(back, kept, klen), "%s: bytes do not round-trip", label);
    free(back);
    free(kept);
    free(ids);
}

/* SmolLM2's tokenizer; `with_config`: loaded with its special-token names and chat template (a GGUF, or a
 * directory with tokenizer_config.json), not from a bare tokenizer.json. */
static void check_smollm2(const orthros_tokenizer *tok, int with_config)
{
    CHECK(orthros_tokenizer_vocab_size(tok) == 49152, "vocab %d", orthros_tokenizer_vocab_size(tok));
    CHECK(!strcmp(orthros_tokenizer_pre(tok), "smollm"), "pre %s", orthros_tokenizer_pre(tok));
    if (with_config) {
        CHECK(orthros_tokenizer_bos(tok) == 1 && orthros_tokenizer_eos(tok) == 2 && orthros_tokenizer_unk(tok) == 0 &&
                  orthros_tokenizer_pad(tok) == 2,
              "bos %d eos %d", orthros_tokenizer_bos(tok), orthros_tokenizer_eos(tok));
        const char *tmpl = orthros_tokenizer_chat_template(tok);
        CHECK(tmpl && strstr(tmpl, "<|im_start|>") && strstr(tmpl, "add_generation_prompt"), "chat template missing");
    }
    CHECK(orthros_tokenizer_token_id(tok, "<|im_end|>", 10) == 2, "token id of <|im_end|>");
    CHECK(orthros_tokenizer_is_special(tok, 2) && !orthros_tokenizer_is_special(tok, 100), "special flags");
    size_t len = 0;
    const char *b = orthros_tokenizer_token_bytes(tok, 2, &len);
    CHECK(b && len == 10 && !memcmp(b, "<|im_end|>", 10), "bytes of token 2");
    CHECK(orthros_tokenizer_token_bytes(tok, 49152, &len) == NULL, "bytes of an id past the vocabulary");

    /* Special tokens: matched whole, or as text under SPLIT_SPECIAL. */
    int n = 0, n2 = 0;
    int32_t *a = enc(tok, "<|im_end|>", 10, 0, &n);
    CHECK(n == 1 && a[0] == 2, "<|im_end|> is one token (%d)", n);
    int32_t *c = enc(tok, "<|im_end|>", 10, ORTHROS_TOK_SPLIT_SPECIAL, &n2);
    CHECK(n2 > 1, "<|im_end|> under SPLIT_SPECIAL is plain text (%d tokens)", n2);
    for (int i = 0; i < n2; i++) CHECK(c[i] != 2, "SPLIT_SPECIAL produced the special id");
    free(a);
    free(c);

    /* Decode: skipping special tokens, and lossy replacement of bytes that are not UTF-8. */
    int32_t ids[] = {1, 19556, 2};
    char *text = NULL;
    size_t tl = 0;
    CHECK(orthros_tokenizer_decode(tok, ids, 3, ORTHROS_TOK_SKIP_SPECIAL, &text, &tl) == 0 && tl == 5 &&
              !strcmp(text, "Hello"), "decode skipping specials: \"%s\"", text ? text : "");
    free(text);
    int32_t one = orthros_tokenizer_token_id(tok, "\xe4", 1); /* the byte token of 0xe4, half of a character */
    CHECK(one >= 0, "byte token 0xe4 exists");
    int32_t lossy[] = {19556, one, 19556};
    CHECK(orthros_tokenizer_decode(tok, lossy, 3, ORTHROS_TOK_LOSSY, &text, &tl) == 0 &&
              !strcmp(text, "Hello\xef\xbf\xbdHello"), "lossy decode replaces a lone byte with U+FFFD");
    free(text);
    int32_t bad[] = {5, -1};
    CHECK(orthros_tokenizer_decode(tok, bad, 2, 0, &text, &tl) == ORTHROS_ERANGE && !text, "decode of id -1 refused");
    CHECK(orthros_tokenizer_decode(tok, ids, 0, 0, &text, &tl) == 0 && tl == 0 && text && !text[0], "empty decode");
    free(text);
    int32_t *none = enc(tok, "", 0, ORTHROS_TOK_ADD_SPECIAL, &n);
    CHECK(n == 0, "empty text gives no tokens (%d)", n);
    free(none);

    /* Invalid UTF-8: every byte still encoded, never lost. */
    static const char *const invalid[] = {"\xff", "a\xc3", "\xc3(", "\xe2\x82", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80",
                                          "\xc0\xaf overlong", "ok \x80\x80\x80 bytes", "\xf0\x9f\x98 cut emoji", "12\xff" "34"};
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) check_roundtrip(tok, invalid[i], strlen(invalid[i]), invalid[i]);
    char nul[] = {'a', 0, 'b', 0, 0, ' ', 0};
    check_roundtrip(tok, nul, sizeof nul, "NUL bytes");
    uint64_t seed = 7;
    char buf[512];
    for (int k = 0; k < 200; k++) {
        size_t len2 = 1 + (size_t)(orthros_uniform(seed, (uint64_t)k * 1000) * 400);
        for (size_t i = 0; i < len2; i++) /* a byte 0-255, through unsigned char (128-255 overflow a signed char) */
            buf[i] = (char)(unsigned char)(orthros_uniform(seed + 1, (uint64_t)k * 1000 + i) * 256);
        check_roundtrip(tok, buf, len2, "random bytes");
    }
    /* A long run of spaces is one piece of a few tokens, not a slow path. */
    size_t big = 200000;
    char *spaces = malloc(big);
    memset(spaces, ' ', big);
    check_roundtrip(tok, spaces, big, "200000 spaces");
    free(spaces);
}

static orthros_tokenizer *tok_json(const char *json, int *rc)
{
    orthros_tokenizer *t = NULL;
    *rc = orthros_tokenizer_from_json(&t, json);
    return t;
}

/* A tiny vocabulary over the bytes 'a', 'b', ' ' (Ġ in the byte-level spelling), '1', with merges. */
static const char *tiny_json(const char *merges, const char *extra_model, const char *pre, const char *post)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true}],"
             " \"normalizer\": null, \"pre_tokenizer\": %s, \"post_processor\": %s,"
             " \"decoder\": {\"type\": \"ByteLevel\"},"
             " \"model\": {\"type\": \"BPE\", \"dropout\": null, %s \"vocab\": {\"a\": 0, \"b\": 1, \"\\u0120\": 2, \"1\": 3,"
             " \"ab\": 4, \"\\u0120a\": 5, \"\\u0120ab\": 6, \"aa\": 7, \"abab\": 8, \"<s>\": 9}, \"merges\": %s}}",
             pre, post, extra_model, merges);
    return buf;
}

static void check_ids(const orthros_tokenizer *t, const char *text, int flags, const int32_t *want, int nwant,
                      const char *label)
{
    int n = 0;
    int32_t *ids = enc(t, text, strlen(text), flags, &n);
    int ok = n == nwant;
    for (int i = 0; ok && i < n; i++) ok = ids[i] == want[i];
    CHECK(ok, "%s: \"%s\" gives %d ids, not the expected %d", label, text, n, nwant);
    free(ids);
}

static void check_synthetic(void)
{
    static const char gpt2[] = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
    int rc;
    /* Merges as "a b" strings and as [a, b] lists give the same tokenizer. */
    static const char *const merge_forms[] = {"[\"a b\", \"\\u0120 a\", \"\\u0120a b\", \"a a\", \"ab ab\"]",
                                              "[[\"a\", \"b\"], [\"\\u0120\", \"a\"], [\"\\u0120a\", \"b\"], [\"a\", \"a\"], [\"ab\", \"ab\"]]"};
    for (int f = 0; f < 2; f++) {
        orthros_tokenizer *t = tok_json(tiny_json(merge_forms[f], "", gpt2, "null"), &rc);
        CHECK(rc == 0, "tiny tokenizer.json (merges form %d): %s", f, orthros_last_error());
        if (!t) continue;
        /* " ab": (a, b) outranks (Ġ, a) and nothing merges Ġ with ab, so Ġ stays alone. */
        check_ids(t, "ab ab", 0, (int32_t[]){4, 2, 4}, 3, "merges by rank");
        check_ids(t, "ab  a", 0, (int32_t[]){4, 2, 5}, 3, "space run");
        /* "aaa": the pair at position 0 merges first (leftmost on equal rank), leaving a. */
        check_ids(t, "aaa", 0, (int32_t[]){7, 0}, 2, "leftmost tie");
        /* "abab": ab + ab then ab ab -> abab (rank 4). */
        check_ids(t, "abab", 0, (int32_t[]){8}, 1, "merge of merges");
        check_ids(t, "a<s>b", 0, (int32_t[]){0, 9, 1}, 3, "added token");
        check_ids(t, "a1b", 0, (int32_t[]){0, 3, 1}, 3, "gpt2 split of letters and digits");
        orthros_tokenizer_free(t);
    }
    /* ignore_merges: a whole piece in the vocabulary is one token even without a merge path. */
    orthros_tokenizer *t = tok_json(tiny_json("[\"a b\"]", "\"ignore_merges\": true,", gpt2, "null"), &rc);
    CHECK(rc == 0, "ignore_merges: %s", orthros_last_error());
    if (t) check_ids(t, "aa", 0, (int32_t[]){7}, 1, "ignore_merges");
    orthros_tokenizer_free(t);
    /* A TemplateProcessing post-processor adds <s> under ADD_SPECIAL only; Digits + ByteLevel is smollm. */
    t = tok_json(tiny_json("[\"a b\"]", "",
                           "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true},"
                           " {\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}",
                           "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}, {\"Sequence\":"
                           " {\"id\": \"A\"}}], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [9]}}}"),
                 &rc);
    CHECK(rc == 0, "template tokenizer: %s", orthros_last_error());
    if (t) {
        CHECK(!strcmp(orthros_tokenizer_pre(t), "smollm"), "Digits + ByteLevel is smollm");
        check_ids(t, "ab", ORTHROS_TOK_ADD_SPECIAL, (int32_t[]){9, 4}, 2, "bos template");
        check_ids(t, "ab", 0, (int32_t[]){4}, 1, "no bos without ADD_SPECIAL");
        check_ids(t, "11", 0, (int32_t[]){3, 3}, 2, "digits one by one");
    }
    orthros_tokenizer_free(t);

    /* Malformed or unsupported tokenizer.json: refused with a message, nothing held. */
    static const struct {
        const char *label, *json, *want;
    } bad[] = {
        {"not json", "{\"model\": ", "not valid JSON"},
        {"unigram", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "Unigram is not supported"},
        {"no merges", "{\"model\": {\"type\": \"BPE\", \"vocab\": {}}, \"decoder\": {\"type\": \"ByteLevel\"}}", "no vocab object or merges"},
        /* A few tokens naming an id of millions: a 300-byte file sized a 2M-token vocabulary (a fuzz hang under ASan). */
        {"a sparse id space",
         "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"decoder\": {\"type\": \"ByteLevel\"}, "
         "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 2097152, \"b\": 1}, \"merges\": []}}",
         "token ids run up to 2097152 for 2 tokens: the id space is too sparse"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t = tok_json(bad[i].json, &rc);
        CHECK(rc < 0 && !t && strstr(orthros_last_error(), bad[i].want), "%s: rc %d, \"%s\"", bad[i].label, rc,
              orthros_last_error());
    }
    static const struct {
        const char *label, *merges, *pre, *want;
    } bad2[] = {
        {"merge of unknown token", "[\"a x\"]", gpt2, "missing from the vocabulary"},
        {"merge without space", "[\"ab\"]", gpt2, "neither"},
        {"prefix space", "[\"a b\"]", "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", "is not supported"},
        {"other split", "[\"a b\"]", "{\"type\": \"Whitespace\"}", "is not supported"},
    };
    for (size_t i = 0; i < sizeof bad2 / sizeof *bad2; i++) {
        t = tok_json(tiny_json(bad2[i].merges, "", bad2[i].pre, "null"), &rc);
        CHECK(rc < 0 && !t && strstr(orthros_last_error(), bad2[i].want), "%s: rc %d, \"%s\"", bad2[i].label, rc,
              orthros_last_error());
    }
    t = tok_json(tiny_json("[\"a b\"]", "\"byte_fallback\": true,", gpt2, "null"), &rc);
    CHECK(rc == ORTHROS_EUNSUPPORTED && !t, "byte_fallback refused");
    CHECK(orthros_tokenizer_load(&t, "preset:tiny") == ORTHROS_EUNSUPPORTED && !t, "a preset has no tokenizer");
}

/* The gpt2 split itself, on cases whose pieces are easy to state. */
static void check_split(void)
{
    static const struct {
        const char *scheme, *text, *pieces; /* pieces separated by | */
    } cases[] = {
        {"gpt2", "Hello world", "Hello| world"},
        {"gpt2", "a  b", "a| | b"},
        {"gpt2", "a \tb", "a| |\t|b"},
        {"gpt2", "end  ", "end|  "},
        {"gpt2", "I'm 'll're", "I|'m| '|ll|'re"},
        {"gpt2", "x123 45", "x|123| 45"},
        {"gpt2", "?!  ..a", "?!| | ..|a"},
        {"smollm", "x123 45", "x|1|2|3| |4|5"},
        {"smollm", "a\xc2\xb2" "b", "a|\xc2\xb2|b"},
        {"gpt2", "\xff\xfe" "a", "\xff\xfe|a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t *ends = NULL;
        int n = 0;
        const char *txt = cases[i].text;
        int rc = orthros_pretokenize(cases[i].scheme, txt, strlen(txt), &ends, &n);
        char got[256] = "";
        size_t start = 0;
        for (int k = 0; !rc && k < n; k++) {
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%.*s", k ? "|" : "", (int)(ends[k] - start), txt + start);
            start = ends[k];
        }
        CHECK(rc == 0 && !strcmp(got, cases[i].pieces), "%s split of \"%s\": \"%s\", want \"%s\"", cases[i].scheme, txt, got,
              cases[i].pieces);
        free(ends);
    }
    size_t *ends = NULL;
    int n = 0;
    CHECK(orthros_pretokenize("llama3", "x", 1, &ends, &n) == ORTHROS_EINVAL, "an unknown scheme is refused");
    CHECK(orthros_unicode_class(0x1c89) == ORTHROS_CC_LETTER && orthros_unicode_class(0x3000) == ORTHROS_CC_SPACE &&
              orthros_unicode_class(0x1f600) == ORTHROS_CC_OTHER && orthros_unicode_class(0x0663) == ORTHROS_CC_NUMBER,
          "Unicode classes");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_tokenizer CORPUS.jsonl SPEC...\n");
        return 2;
    }
    int missing = 0;
    for (int i = 2; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            missing++;
            continue;
        }
        orthros_tokenizer *tok = NULL;
        int rc = orthros_tokenizer_load(&tok, argv[i]);
        CHECK(rc == 0, "%s: %s", argv[i], orthros_last_error());
        if (!tok) continue;
        check_corpus(tok, argv[1], argv[i]);
        size_t L = strlen(argv[i]);
        check_smollm2(tok, !(L > 5 && !strcmp(argv[i] + L - 5, ".json")));
        orthros_tokenizer_free(tok);
    }
    if (missing) {
        if (tu_under_ci()) {
            fprintf(stderr, "FAIL: %d tokenizer spec(s) missing under CI (ci/test.sh runs ci/fetch-model.sh first)\n", missing);
            return 1;
        }
        printf("SKIP: %d tokenizer spec(s) missing (run ci/fetch-model.sh for the GGUF)\n", missing);
        if (missing == argc - 2) return 77;
    }
    check_split();
    check_synthetic();
    return tu_finish();
}
