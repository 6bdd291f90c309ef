/* Word lists for the RULER-style text tasks (ruler.c): common English adjectives and nouns, written for this
 * project. NIAH keys are "adjective-noun" pairs (as RULER draws them), word values and the common-words list draw
 * from both. */
#ifndef ORTHROS_WORDS_H
#define ORTHROS_WORDS_H

extern const char *const orthros_words_adjectives[];
extern const int orthros_words_n_adjectives;
extern const char *const orthros_words_nouns[];
extern const int orthros_words_n_nouns;

#endif
