/* Text in and out of the command line: the tokenize command, and prompts given as text (--prompt,
 * --prompt-file) for logits and generate. */
#ifndef ORTHROS_CLI_TEXT_H
#define ORTHROS_CLI_TEXT_H

#include "orthros.h"

#include <cjson/cJSON.h>

/* orthros tokenize --model M (--text STR | --text-file F | --ids LIST) */
int orthros_cmd_tokenize(int argc, char **argv);

/* The ids of prompt (text) or, when it is NULL, of prompt_file's bytes, encoded with the tokenizer of `model`
 * (what the tokenizer adds around a text included). *tokens is malloc'd; no tokens is an error. */
int orthros_cli_text_tokens(int32_t **tokens, int *n, const char *model, const char *prompt, const char *prompt_file);

/* The text of ids decoded with the tokenizer of `model` (special tokens left out, invalid UTF-8 replaced by
 * U+FFFD; *len bytes, NUL bytes included), or NULL when the model has no tokenizer. malloc'd. */
char *orthros_cli_decode_text(const char *model, const int32_t *ids, int n, size_t *len);

/* Adds the string text[len] to the object o as `key`, NUL bytes included (as \u0000): cJSON's strings end at
 * the first NUL, which cut a decoded text there. text must be valid UTF-8. */
void orthros_cli_json_add_text(cJSON *o, const char *key, const char *text, size_t len);

#endif
