/* What the text evals share: chat wrapping, greedy generation to an end token, normalised contains-match. */
#define _GNU_SOURCE
#include "text_eval.h"

#include <stdlib.h>
#include <string.h>

static const char *const chat_names[] = {"none", "chatml"};

const char *orthros_chat_name(orthros_chat c) { return chat_names[c]; }

static int32_t special(const orthros_tokenizer *tok, const char *text)
{
    return orthros_tokenizer_token_id(tok, text, strlen(text));
}

int orthros_chat_resolve(orthros_chat *out, const char *name, const orthros_tokenizer *tok)
{
    int chatml = special(tok, "<|im_start|>") >= 0 && special(tok, "<|im_end|>") >= 0;
    if (!strcmp(name, "auto")) {
        *out = chatml ? ORTHROS_CHAT_CHATML : ORTHROS_CHAT_NONE;
        return 0;
    }
    if (!strcmp(name, "none")) {
        *out = ORTHROS_CHAT_NONE;
        return 0;
    }
    if (!strcmp(name, "chatml")) {
        if (!chatml)
            return orthros_error(ORTHROS_EINVAL, "--chat chatml: the tokenizer has no <|im_start|> / <|im_end|> tokens");
        *out = ORTHROS_CHAT_CHATML;
        return 0;
    }
    return orthros_error(ORTHROS_EINVAL, "unknown --chat \"%s\" (auto, chatml, none)", name);
}

/* Appends the ids of text[len] (flags as orthros_tokenizer_encode takes them) to *ids[*n] (capacity *cap). */
static int append(int32_t **ids, int *n, int *cap, const orthros_tokenizer *tok, const char *text, size_t len, int flags)
{
    int32_t *part = NULL;
    int k = 0, rc;
    if (!len) return 0;
    if ((rc = orthros_tokenizer_encode(tok, text, len, flags, &part, &k))) return rc;
    if (!k) { /* nothing to append (and memcpy may not be handed a null pointer, even for 0 bytes) */
        free(part);
        return 0;
    }
    if (*n + k > *cap || !*ids) {
        int c2 = (*n + k) * 2;
        int32_t *p = realloc(*ids, (size_t)c2 * sizeof *p);
        if (!p) {
            free(part);
            return orthros_error(ORTHROS_ENOMEM, "out of memory for a prompt of %d tokens", *n + k);
        }
        *ids = p, *cap = c2;
    }
    memcpy(*ids + *n, part, (size_t)k * sizeof *part);
    *n += k;
    free(part);
    return 0;
}

int orthros_text_prompt(int32_t **ids, int *n, const orthros_tokenizer *tok, orthros_chat chat, const char *message,
                        size_t message_len, const char *answer_prefix)
{
    int cap = 0, rc = 0;
    *ids = NULL, *n = 0;
    /* The wrapping's special tokens are matched; the message's text never is. */
    static const char head[] = "<|im_start|>user\n", tail[] = "<|im_end|>\n<|im_start|>assistant\n";
    if (chat == ORTHROS_CHAT_CHATML) rc = append(ids, n, &cap, tok, head, sizeof head - 1, 0);
    /* Plain text gets what the tokenizer adds around a text (a BOS for Llama's). */
    if (!rc) rc = append(ids, n, &cap, tok, message, message_len,
                         ORTHROS_TOK_SPLIT_SPECIAL | (chat == ORTHROS_CHAT_NONE ? ORTHROS_TOK_ADD_SPECIAL : 0));
    if (!rc && chat == ORTHROS_CHAT_CHATML) rc = append(ids, n, &cap, tok, tail, sizeof tail - 1, 0);
    /* In plain text the answer follows the question after a space (RULER's templates). */
    if (!rc && answer_prefix && answer_prefix[0] && chat == ORTHROS_CHAT_NONE)
        rc = append(ids, n, &cap, tok, " ", 1, ORTHROS_TOK_SPLIT_SPECIAL);
    if (!rc && answer_prefix && answer_prefix[0])
        rc = append(ids, n, &cap, tok, answer_prefix, strlen(answer_prefix), ORTHROS_TOK_SPLIT_SPECIAL);
    if (!rc && *n == 0) rc = orthros_error(ORTHROS_EINVAL, "the prompt is empty (no tokens)");
    if (rc) {
        free(*ids);
        *ids = NULL, *n = 0;
    }
    return rc;
}

static int is_end(const orthros_model *m, const orthros_tokenizer *tok, orthros_chat chat, int32_t t)
{
    const orthros_model_config *c = orthros_model_get_config(m);
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos[i] == t) return 1;
    return t == orthros_tokenizer_eos(tok) || (chat == ORTHROS_CHAT_CHATML && t == special(tok, "<|im_end|>"));
}

int orthros_text_generate(orthros_session *s, const orthros_model *m, const orthros_tokenizer *tok, orthros_chat chat,
                          const int32_t *ids, int n, int max_new, int32_t *out, int *n_out, char **text)
{
    int rc, k = 0;
    size_t len;
    int32_t next;
    *n_out = 0, *text = NULL;
    if (max_new < 1) return orthros_error(ORTHROS_EINVAL, "max-new must be at least 1");
    if ((rc = orthros_session_reset(s)) || (rc = orthros_prefill(s, 0, ids, n, NULL, &next))) return rc;
    out[k++] = next;
    while (k < max_new && !is_end(m, tok, chat, next)) {
        if ((rc = orthros_decode(s, &next, &next, NULL))) return rc;
        out[k++] = next;
    }
    *n_out = k;
    return orthros_tokenizer_decode(tok, out, k, ORTHROS_TOK_SKIP_SPECIAL | ORTHROS_TOK_LOSSY, text, &len);
}

char *orthros_text_normalise(const char *s, size_t len)
{
    char *o = malloc(len + 1);
    size_t k = 0;
    int space = 0;
    if (!o) return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
            space = k > 0;
            continue;
        }
        if (space) o[k++] = ' ';
        space = 0;
        o[k++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    o[k] = 0;
    return o;
}

static int alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

int orthros_text_contains(const char *text, const char *answer)
{
    char *t = orthros_text_normalise(text, strlen(text)), *a = orthros_text_normalise(answer, strlen(answer));
    int yes = 0;
    size_t n = a ? strlen(a) : 0;
    /* A match must stand alone: "red" is not found in "tired", nor 1234567 in 12345678. */
    for (const char *p = t && n ? t : NULL; p && (p = strstr(p, a)); p++)
        if ((p == t || !alnum(p[-1]) || !alnum(a[0])) && (!alnum(p[n]) || !alnum(a[n - 1]))) {
            yes = 1;
            break;
        }
    free(t);
    free(a);
    return yes;
}
