/* In-context recall questions (the shape of the SQuAD / TriviaQA / SWDE / FDA recall evals): a JSONL file, one
 * object a line, {"context": "...", "question": "...", "answers": ["...", ...]} (an optional "id", string or number;
 * other keys ignored; blank lines skipped). A line that is not such an object is refused with FILE:LINE and the
 * field. */
#ifndef ORTHROS_RECALL_H
#define ORTHROS_RECALL_H

#include <stddef.h>

/* Lines and bytes a tasks file may hold. */
#define ORTHROS_RECALL_MAX_ITEMS 1000000
#define ORTHROS_RECALL_MAX_BYTES ((size_t)1 << 30)

typedef struct {
    int line;            /* 1-based line in the file */
    char *id;            /* as given, or NULL */
    char *context, *question;
    char **answers;      /* [n_answers], each non-empty */
    int n_answers;
} orthros_recall_item;

typedef struct {
    orthros_recall_item *items;
    int n;
} orthros_recall_set;

/* Reads and checks every line of path (all or nothing). */
int orthros_recall_load(orthros_recall_set *set, const char *path);
/* The same over text[len] (named `name` in messages). */
int orthros_recall_parse(orthros_recall_set *set, const char *text, size_t len, const char *name);
void orthros_recall_free(orthros_recall_set *set);

#endif
