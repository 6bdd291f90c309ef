/* SQuAD's answer metrics as the official evaluation scripts compute them (evaluate-v2.0.py; v1.1 is the same for
 * answerable questions): the normalisation (lower case, ASCII punctuation removed, the articles a / an / the removed
 * as whole words, white space collapsed), exact match and token F1, each the best over the reference answers, and
 * SQuAD v2's rule for an unanswerable question (no reference answer that normalises to something): right when the
 * prediction normalises to nothing. Case and white space are ASCII's; other bytes are kept as word characters. */
#ifndef ORTHROS_SQUAD_H
#define ORTHROS_SQUAD_H

/* normalize_answer(s), malloc'd (NULL when out of memory). */
char *orthros_squad_normalise(const char *s);
/* compute_exact / compute_f1 of one reference answer and a prediction. */
int orthros_squad_exact(const char *gold, const char *pred);
double orthros_squad_f1(const char *gold, const char *pred);
/* The best of each over answers[n] (those that normalise to nothing dropped; none left: the empty answer). */
void orthros_squad_score(const char *const *answers, int n, const char *pred, int *exact, double *f1);

#endif
