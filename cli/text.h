/* Text in and out of the command line: the tokenize command, and prompts given as text (--prompt,
 * --prompt-file) for logits and generate. */
#ifndef ORTHROS_CLI_TEXT_H
#define ORTHROS_CLI_TEXT_H

#include "orthros.h"

/* orthros tokenize --model M (--text STR | --text-file F | --ids LIST) */
int orthros_cmd_tokenize(int argc, char **argv);

/* The prompt's token ids from exactly one of tokens_arg ("1,2,3"), prompt (text) or prompt_file (a file's
 * bytes), the text ones encoded with the tokenizer of `model`. Returns 0, ORTHROS_EINVAL with a usage message
 * (exit 2) when not exactly one is given, or another error. *tokens is malloc'd. */
int cli_prompt_tokens(int32_t **tokens, int *n, const char *model, const char *tokens_arg, const char *prompt,
                      const char *prompt_file, int *usage_error);

/* The text of ids decoded with the tokenizer of `model` (special tokens left out, invalid UTF-8 replaced by
 * U+FFFD), or NULL when the model has no tokenizer. malloc'd. */
char *cli_decode_text(const char *model, const int32_t *ids, int n);

#endif
