/* The evals that run on a text model (a model with a tokenizer: a GGUF file or a Hugging Face directory with
 * tokenizer.json): perplexity (ppl.c), RULER-style synthetic tasks (ruler.c) and JSONL recall questions (recall.c),
 * and what they share (textgen.c): the chat wrapping of a prompt, greedy generation that stops at an end token,
 * and the normalised contains-match that scores the generated text. */
#ifndef ORTHROS_TEXT_EVAL_H
#define ORTHROS_TEXT_EVAL_H

#include "orthros.h"

#include <stddef.h>
#include <stdint.h>

int orthros_cmd_eval_ppl(int argc, char **argv);
int orthros_cmd_eval_ruler(int argc, char **argv);
int orthros_cmd_eval_recall(int argc, char **argv);
int orthros_cmd_eval_mc(int argc, char **argv);

/* How a prompt is wrapped: plain text, or ChatML (SmolLM2's template without its default system turn):
 * "<|im_start|>user\n" MESSAGE "<|im_end|>\n<|im_start|>assistant\n" ANSWER_PREFIX. */
typedef enum { ORTHROS_CHAT_NONE = 0, ORTHROS_CHAT_CHATML = 1 } orthros_chat;

/* "none", "chatml" or "auto" (chatml when the tokenizer has the <|im_start|> and <|im_end|> tokens, else none);
 * chatml on a tokenizer without them is an error. */
int orthros_chat_resolve(orthros_chat *out, const char *name, const orthros_tokenizer *tok);
const char *orthros_chat_name(orthros_chat c);

/* The token ids of a prompt: the user message wrapped as `chat` says, then the answer prefix (may be NULL or
 * empty) where the model's answer begins. Special-token text inside the message is plain text (split), so a
 * document cannot close the turn. *ids malloc'd. */
int orthros_text_prompt(int32_t **ids, int *n, const orthros_tokenizer *tok, orthros_chat chat, const char *message,
                        size_t message_len, const char *answer_prefix);

/* Greedy generation on a batch-1 session (reset first): the prompt prefilled, then decode steps until an end
 * token (the model's end-of-sequence ids, the tokenizer's, and <|im_end|> under chatml) or max_new tokens.
 * out[max_new] receives the tokens, *n_out their number (the end token included); *text (malloc'd) the decoded
 * text without special tokens. */
int orthros_text_generate(orthros_session *s, const orthros_model *m, const orthros_tokenizer *tok, orthros_chat chat,
                          const int32_t *ids, int n, int max_new, int32_t *out, int *n_out, char **text);

/* The form answers are compared in: ASCII letters lowercased, every run of white space one space, none at either
 * end. Returns a malloc'd string (NULL when out of memory). */
char *orthros_text_normalise(const char *s, size_t len);
/* 1 when the normalised `text` holds the normalised `answer` as a whole: not inside a longer run of letters and
 * digits ("red" is not found in "tired"). An empty answer is never found. */
int orthros_text_contains(const char *text, const char *answer);

#endif
