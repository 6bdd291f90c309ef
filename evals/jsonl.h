/* JSON lines task files (recall and multiple-choice questions), read strictly: one JSON object a line, blank lines
 * skipped; a line that is not valid JSON, holds a NUL byte or \u0000, has bytes after its value, is not an object or
 * holds a key twice is refused with FILE:LINE. */
#ifndef ORTHROS_JSONL_H
#define ORTHROS_JSONL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Lines and bytes a tasks file may hold. */
#define ORTHROS_JSONL_MAX_ITEMS 1000000
#define ORTHROS_JSONL_MAX_BYTES ((size_t)1 << 30)

/* Calls fn(ctx, object, line) for every non-blank line of text[len] (named `name` in messages), in order; stops at
 * the first refusal or at fn's first non-zero return, which it returns. A file of no object is refused. */
int orthros_jsonl_each(const char *text, size_t len, const char *name, int (*fn)(void *ctx, const cJSON *o, int line),
                       void *ctx);
/* The same over a file's bytes (at most ORTHROS_JSONL_MAX_BYTES). */
int orthros_jsonl_load(const char *path, int (*fn)(void *ctx, const cJSON *o, int line), void *ctx);

/* A required string field of a task line (copied; *out malloc'd), refused with FILE:LINE when missing, not a string
 * or (unless empty_ok) empty. */
int orthros_jsonl_string(char **out, const cJSON *o, const char *key, const char *name, int line, int empty_ok);
/* An optional "id": a string, or a number that is an integer of magnitude below 2^53 (refused otherwise), as text
 * (*out NULL when absent). */
int orthros_jsonl_id(char **out, const cJSON *o, const char *name, int line);

#endif
