/* Multiple-choice questions in lm-evaluation-harness's terms (lm-eval 0.4.13, its task YAMLs): the JSONL layouts
 * that Hugging Face datasets export, the prompt each task writes, the few-shot context, and the token boundary of a
 * (context, continuation) request as lm-eval's HFLM encodes it. The scoring and the command are in mc_eval.c.
 *
 *   layout      a line                                                    lm-eval task: prompt -> continuations
 *   arc         question, choices {text, label}, answerKey               arc_easy / arc_challenge: "Question: Q\nAnswer:"
 *   hellaswag   activity_label, ctx_a, ctx_b, endings, label             hellaswag: preprocess(label ": " ctx), endings
 *   piqa        goal, sol1, sol2, label                                  piqa: "Question: GOAL\nAnswer:" -> sol1, sol2
 *   openbookqa  question_stem, choices {text, label}, answerKey          openbookqa: the stem
 *   winogrande  sentence, option1, option2, answer ("1" or "2")          winogrande: partial scoring (below)
 *   generic     context, choices [...], gold                             the context -> the choices
 *
 * Each continuation is the target delimiter " " and the choice. Winogrande's are "partial": the sentence up to the
 * blank with each option is a context of its own, and the shared continuation is the rest of the sentence. */
#ifndef ORTHROS_MC_H
#define ORTHROS_MC_H

#include "orthros.h"

#include <stddef.h>

typedef enum {
    ORTHROS_MC_ARC,
    ORTHROS_MC_HELLASWAG,
    ORTHROS_MC_PIQA,
    ORTHROS_MC_OPENBOOKQA,
    ORTHROS_MC_WINOGRANDE,
    ORTHROS_MC_GENERIC,
    ORTHROS_MC_AUTO, /* from the first line's keys */
} orthros_mc_layout;

typedef struct {
    int line;          /* 1-based line in the file */
    char *id;          /* as given, or NULL */
    int n_choices;     /* 2 .. ORTHROS_MC_MAX_CHOICES */
    int multi_input;   /* winogrande: the choices are contexts and `target` the one continuation */
    char *query;       /* lm-eval's doc_to_text (NULL for winogrande) */
    char **choices;    /* lm-eval's doc_to_choice, each non-empty */
    char *target;      /* winogrande: the sentence after the blank, stripped */
    int gold;          /* the right choice */
} orthros_mc_item;

typedef struct {
    orthros_mc_item *items;
    int n;
    orthros_mc_layout layout;
} orthros_mc_set;

/* "arc", "hellaswag", "piqa", "openbookqa", "winogrande", "generic", "auto". */
int orthros_mc_layout_parse(orthros_mc_layout *out, const char *name);
const char *orthros_mc_layout_name(orthros_mc_layout l);
/* lm-eval's task version of a layout's task ("1" for each of these in 0.4.13; "N/A" for generic). */
const char *orthros_mc_layout_version(orthros_mc_layout l);

/* Reads and checks every line (all or nothing); `want` a layout or ORTHROS_MC_AUTO. Refusals name FILE:LINE and the
 * field. */
int orthros_mc_load(orthros_mc_set *set, const char *path, orthros_mc_layout want);
int orthros_mc_parse(orthros_mc_set *set, const char *text, size_t len, const char *name, orthros_mc_layout want);
void orthros_mc_free(orthros_mc_set *set);

/* lm-eval's hellaswag preprocess (ASCII white space): strip, " [title]" -> ". ", "[...]" removed, "  " -> " ". */
char *orthros_mc_hellaswag_preprocess(const char *text);

/* The request of choice b of `it` as lm-eval builds it: *ctx the few-shot context (the first `shots` items of `pool`
 * that are not equal to `it`, lm-eval's first_n sampler, each "QUESTION ANSWER\n\n") and the prompt, *cont the
 * continuation (" " and the choice, or winogrande's " " and the rest of the sentence). Both malloc'd. Fewer than
 * `shots` other items in the pool is an error. */
int orthros_mc_request(char **ctx, char **cont, const orthros_mc_set *pool, const orthros_mc_item *it, int shots, int b);

/* The tokens of a (context, continuation) request as lm-eval's HFLM makes them (causal models): the context's
 * trailing white space moved to the continuation, the whole encoded and the context encoded, the continuation's
 * tokens those of the whole after the context's count; an empty context is the BOS token (else EOS). Encoded with
 * the tokenizer's own special tokens added, as transformers' encode does by default. *ctx_ids and *cont_ids
 * malloc'd. */
int orthros_mc_encode(int32_t **ctx_ids, int *n_ctx, int32_t **cont_ids, int *n_cont, const orthros_tokenizer *tok,
                      const char *ctx, const char *cont);

/* Characters of a UTF-8 string as Python counts them (code points): lm-eval's acc_norm divides by it. */
int orthros_mc_chars(const char *s);

#endif
