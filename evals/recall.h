/* In-context recall questions (the shape of the SQuAD / TriviaQA / SWDE / FDA recall evals): a JSONL file, one
 * object a line (blank lines skipped; other keys ignored), in one of these layouts:
 *   generic    {"context", "question", "answers": ["...", ...]} (an optional "id", string or number);
 *   squad      the Hugging Face datasets export of SQuAD v1.1: {"id", "title", "context", "question",
 *              "answers": {"text": [...], "answer_start": [...]}};
 *   squad_v2   the same, "answers.text" empty for an unanswerable question;
 *   triviaqa   the export of TriviaQA (rc): {"question", "question_id", "entity_pages": {"wiki_context": [...]},
 *              "search_results": {"search_context": [...]}, "answer": {"value", "aliases": [...]}}: the context is
 *              the pages, then the search results; the answers the value and its aliases.
 * A line that is not such an object is refused with FILE:LINE and the field. */
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
    int unanswerable;    /* squad_v2: no answer (n_answers 0) */
} orthros_recall_item;

typedef enum {
    ORTHROS_RECALL_GENERIC,
    ORTHROS_RECALL_SQUAD,
    ORTHROS_RECALL_SQUAD_V2,
    ORTHROS_RECALL_TRIVIAQA,
    ORTHROS_RECALL_AUTO, /* from the first line's keys; SQuAD with an unanswerable question is v2 */
} orthros_recall_layout;

typedef struct {
    orthros_recall_item *items;
    int n;
    orthros_recall_layout layout;
} orthros_recall_set;

int orthros_recall_layout_parse(orthros_recall_layout *out, const char *name);
const char *orthros_recall_layout_name(orthros_recall_layout l);
/* The same as below in a given layout (or ORTHROS_RECALL_AUTO). */
int orthros_recall_load_layout(orthros_recall_set *set, const char *path, orthros_recall_layout want);
int orthros_recall_parse_layout(orthros_recall_set *set, const char *text, size_t len, const char *name,
                                orthros_recall_layout want);

/* Reads and checks every line of path (all or nothing), the layout from the first line. */
int orthros_recall_load(orthros_recall_set *set, const char *path);
/* The same over text[len] (named `name` in messages). */
int orthros_recall_parse(orthros_recall_set *set, const char *text, size_t len, const char *name);
void orthros_recall_free(orthros_recall_set *set);

#endif
