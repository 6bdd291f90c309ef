/* The tokenize command and text prompts (see text.h). */
#define _POSIX_C_SOURCE 200809L
#include "text.h"
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT_BYTES ((size_t)1 << 30)

/* A whole file's bytes (any content, NUL bytes included), NUL-terminated, malloc'd. */
static int read_bytes(char **out, size_t *len, const char *path)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return orthros_error(ORTHROS_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int rc = 0;
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f)) {
            rc = orthros_error(ORTHROS_EIO, "%s: read failed", path);
            break;
        }
        if (feof(f)) break;
        if (cap >= MAX_TEXT_BYTES) {
            rc = orthros_error(ORTHROS_ERANGE, "%s: larger than %zu bytes", path, MAX_TEXT_BYTES);
            break;
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (!buf) return orthros_error(ORTHROS_ENOMEM, "%s: out of memory", path);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Encodes text[len] with the tokenizer of model (what the tokenizer adds around a text included). */
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

int cli_prompt_tokens(int32_t **tokens, int *n, const char *model, const char *tokens_arg, const char *prompt,
                      const char *prompt_file, int *usage_error)
{
    *tokens = NULL;
    *n = 0;
    *usage_error = (tokens_arg != NULL) + (prompt != NULL) + (prompt_file != NULL) != 1;
    if (*usage_error) return orthros_error(ORTHROS_EINVAL, "give exactly one of --tokens, --prompt, --prompt-file");
    if (tokens_arg) return cli_parse_tokens(tokens, n, tokens_arg);
    if (prompt) return encode_text(tokens, n, model, prompt, strlen(prompt), ORTHROS_TOK_ADD_SPECIAL);
    char *text = NULL;
    size_t len = 0;
    int rc = read_bytes(&text, &len, prompt_file);
    if (!rc) rc = encode_text(tokens, n, model, text, len, ORTHROS_TOK_ADD_SPECIAL);
    free(text);
    return rc;
}

char *cli_decode_text(const char *model, const int32_t *ids, int n)
{
    orthros_tokenizer *tok = NULL;
    char *text = NULL;
    size_t len;
    if (orthros_tokenizer_load(&tok, model)) return NULL;
    if (orthros_tokenizer_decode(tok, ids, n, ORTHROS_TOK_SKIP_SPECIAL | ORTHROS_TOK_LOSSY, &text, &len)) text = NULL;
    orthros_tokenizer_free(tok);
    return text;
}

int orthros_cmd_tokenize(int argc, char **argv)
{
    const char *cmd = "tokenize", *model = NULL, *text_arg = NULL, *text_file = NULL, *ids_arg = NULL;
    int split_special = 0, json = 0;
    cli_opt t[8];
    int n = 0;
    t[n++] = (cli_opt){"model", CLI_STR, &model, "DIR|FILE.gguf|tokenizer.json",
                       "the model whose tokenizer to use (required): a GGUF file, a Hugging Face directory with "
                       "tokenizer.json, or a tokenizer.json"};
    t[n++] = (cli_opt){"text", CLI_STR, &text_arg, "STR", "text to encode"};
    t[n++] = (cli_opt){"text-file", CLI_STR, &text_file, "FILE", "encode the bytes of FILE"};
    t[n++] = (cli_opt){"ids", CLI_STR, &ids_arg, "LIST", "decode these comma-separated token ids instead"};
    t[n++] = (cli_opt){"split-special", CLI_FLAG, &split_special, NULL,
                       "treat the text of special tokens (<|im_end|>, ...) as plain text"};
    t[n++] = (cli_opt){"json", CLI_FLAG, &json, NULL,
                       "print a JSON object: {\"ids\": [...]} (encode) or {\"text\": \"...\"} (decode)"};
    const char *pos[1];
    int npos, pr = cli_parse(argc, argv, 2, t, n, cmd,
                             "Encodes text with a model's tokenizer and prints the ids, comma-separated (the form "
                             "--tokens takes), or decodes ids (--ids) and prints the text.",
                             pos, 0, &npos);
    if (pr) return pr > 0 ? 0 : 2;
    if (!model || (text_arg != NULL) + (text_file != NULL) + (ids_arg != NULL) != 1) {
        fprintf(stderr, "orthros %s: error: --model and exactly one of --text, --text-file, --ids are required (see "
                        "--help)\n", cmd);
        return 2;
    }
    orthros_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    char *text = NULL, *out = NULL;
    size_t len = 0;
    int count = 0, rc, status = 1;
    if ((rc = orthros_tokenizer_load(&tok, model))) goto fail;
    if (ids_arg) {
        if ((rc = cli_parse_tokens(&ids, &count, ids_arg))) goto fail;
        if ((rc = orthros_tokenizer_decode(tok, ids, count, json ? ORTHROS_TOK_LOSSY : 0, &out, &len))) goto fail;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "text", out);
            char *s = cJSON_PrintUnformatted(o);
            printf("%s\n", s);
            free(s);
            cJSON_Delete(o);
        } else {
            fwrite(out, 1, len, stdout);
        }
        status = 0;
        goto fail;
    }
    if (text_arg) {
        len = strlen(text_arg);
    } else if ((rc = read_bytes(&text, &len, text_file))) {
        goto fail;
    }
    int flags = ORTHROS_TOK_ADD_SPECIAL | (split_special ? ORTHROS_TOK_SPLIT_SPECIAL : 0);
    if ((rc = orthros_tokenizer_encode(tok, text_arg ? text_arg : text, len, flags, &ids, &count))) goto fail;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "ids");
        for (int i = 0; i < count; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
        char *s = cJSON_PrintUnformatted(o);
        printf("%s\n", s);
        free(s);
        cJSON_Delete(o);
    } else {
        for (int i = 0; i < count; i++) printf("%s%d", i ? "," : "", ids[i]);
        printf("\n");
    }
    fprintf(stderr, "orthros tokenize: %zu bytes -> %d tokens (vocab %d, pre-tokenizer %s)\n", len, count,
            orthros_tokenizer_vocab_size(tok), orthros_tokenizer_pre(tok));
    status = 0;
fail:
    if (status) cli_fail(cmd, rc);
    free(ids);
    free(text);
    free(out);
    orthros_tokenizer_free(tok);
    return status;
}
