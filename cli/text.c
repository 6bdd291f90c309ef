/* The tokenize command and text prompts (see text.h). */
#include "text.h"
#include "options.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT_BYTES ((size_t)1 << 30)

/* Encodes text[len] with the tokenizer of model. */
static int encode_text(int32_t **ids, int *n, const char *model, const char *text, size_t len, int flags)
{
    orthros_tokenizer *tok = NULL;
    int rc = orthros_tokenizer_load(&tok, model);
    if (rc) return rc;
    rc = orthros_tokenizer_encode(tok, text, len, flags, ids, n);
    orthros_tokenizer_free(tok);
    if (!rc && *n == 0) {
        free(*ids);
        *ids = NULL;
        rc = orthros_error(ORTHROS_EINVAL, "the prompt is empty (no tokens)");
    }
    return rc;
}

int orthros_cli_text_tokens(int32_t **tokens, int *n, const char *model, const char *prompt, const char *prompt_file)
{
    *tokens = NULL;
    *n = 0;
    if (prompt) return encode_text(tokens, n, model, prompt, strlen(prompt), ORTHROS_TOK_ADD_SPECIAL);
    char *text = NULL;
    size_t len = 0;
    int rc = orthros_read_file(&text, &len, prompt_file, MAX_TEXT_BYTES, NULL);
    if (!rc) rc = encode_text(tokens, n, model, text, len, ORTHROS_TOK_ADD_SPECIAL);
    free(text);
    return rc;
}

char *orthros_cli_decode_text(const char *model, const int32_t *ids, int n, size_t *len)
{
    orthros_tokenizer *tok = NULL;
    char *text = NULL;
    *len = 0;
    if (orthros_tokenizer_load(&tok, model)) return NULL;
    if (orthros_tokenizer_decode(tok, ids, n, ORTHROS_TOK_SKIP_SPECIAL | ORTHROS_TOK_LOSSY, &text, len)) text = NULL;
    orthros_tokenizer_free(tok);
    return text;
}

void orthros_cli_json_add_text(cJSON *o, const char *key, const char *text, size_t len)
{
    if (!memchr(text, '\0', len)) {
        cJSON_AddStringToObject(o, key, text);
        return;
    }
    /* A JSON string literal escaped as cJSON escapes one (its short forms, \u00XX for the other control bytes),
     * NUL included, added as a raw value. */
    char *lit = malloc(6 * len + 3);
    if (!lit) return;
    size_t w = 0;
    lit[w++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (esc) {
            memcpy(lit + w, esc, 2);
            w += 2;
        } else if (c < 0x20) {
            w += (size_t)snprintf(lit + w, 7, "\\u%04x", c);
        } else {
            lit[w++] = (char)c;
        }
    }
    lit[w++] = '"';
    lit[w] = '\0';
    cJSON_AddRawToObject(o, key, lit);
    free(lit);
}

static void print_json(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    printf("%s\n", s ? s : "{}");
    free(s);
    cJSON_Delete(o);
}

int orthros_cmd_tokenize(int argc, char **argv)
{
    const char *cmd = "tokenize", *model = NULL, *text_arg = NULL, *text_file = NULL, *ids_arg = NULL;
    int split_special = 0, json = 0;
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Encodes text with a model's tokenizer and prints the ids, comma-separated (the form --tokens "
                     "takes), or decodes ids (--ids) and prints the text.",
                     0);
    orthros_cmd_add(&c, "model", ORTHROS_OPT_STR, &model, "DIR|FILE.gguf|tokenizer.json",
                    "the model whose tokenizer to use (required): a GGUF file, a Hugging Face directory with "
                    "tokenizer.json, or a tokenizer.json");
    orthros_cmd_add(&c, "text", ORTHROS_OPT_STR, &text_arg, "STR", "text to encode");
    orthros_cmd_add(&c, "text-file", ORTHROS_OPT_STR, &text_file, "FILE", "encode the bytes of FILE");
    orthros_cmd_add(&c, "ids", ORTHROS_OPT_STR, &ids_arg, "LIST", "decode these comma-separated token ids instead");
    orthros_cmd_add(&c, "split-special", ORTHROS_OPT_FLAG, &split_special, NULL,
                    "treat the text of special tokens (<|im_end|>, ...) as plain text");
    orthros_cmd_add(&c, "json", ORTHROS_OPT_FLAG, &json, NULL,
                    "print a JSON object: {\"ids\": [...]} (encode) or {\"text\": \"...\"} (decode)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!model || (text_arg != NULL) + (text_file != NULL) + (ids_arg != NULL) != 1)
        return orthros_cmd_usage(&c, "--model and exactly one of --text, --text-file, --ids are required (see --help)");
    orthros_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    char *text = NULL, *out = NULL;
    size_t len = 0;
    int count = 0, rc, status = 1;
    if (ids_arg && (rc = orthros_opt_parse_token_list(&ids, &count, ids_arg, "--ids"))) return orthros_cmd_fail_usage(cmd, rc);
    if ((rc = orthros_tokenizer_load(&tok, model))) goto fail;
    if (ids_arg) {
        if ((rc = orthros_tokenizer_decode(tok, ids, count, json ? ORTHROS_TOK_LOSSY : 0, &out, &len))) goto fail;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            orthros_cli_json_add_text(o, "text", out, len);
            print_json(o);
        } else {
            fwrite(out, 1, len, stdout);
        }
        status = 0;
        goto fail;
    }
    if (text_arg) len = strlen(text_arg);
    else if ((rc = orthros_read_file(&text, &len, text_file, MAX_TEXT_BYTES, NULL))) goto fail;
    int flags = ORTHROS_TOK_ADD_SPECIAL | (split_special ? ORTHROS_TOK_SPLIT_SPECIAL : 0);
    if ((rc = orthros_tokenizer_encode(tok, text_arg ? text_arg : text, len, flags, &ids, &count))) goto fail;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "ids");
        for (int i = 0; i < count; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
        print_json(o);
    } else {
        for (int i = 0; i < count; i++) printf("%s%d", i ? "," : "", ids[i]);
        printf("\n");
    }
    fprintf(stderr, "orthros tokenize: %zu bytes -> %d tokens (vocab %d, pre-tokenizer %s)\n", len, count,
            orthros_tokenizer_vocab_size(tok), orthros_tokenizer_pre(tok));
    status = 0;
fail:
    if (status) orthros_cmd_fail(cmd, rc);
    free(ids);
    free(text);
    free(out);
    orthros_tokenizer_free(tok);
    return status;
}
