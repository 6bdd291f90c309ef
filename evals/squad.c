/* SQuAD's exact match and F1 (squad.h). */
#define _GNU_SOURCE
#include "squad.h"

#include <stdlib.h>
#include <string.h>

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }
/* Python's \w: letters, digits, underscore (bytes of non-ASCII characters counted as word characters). */
static int is_word(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80; }
/* string.punctuation */
static int is_punct(unsigned char c) { return c < 0x80 && c > ' ' && c != 0x7f && !is_word(c); }

char *orthros_squad_normalise(const char *s)
{
    size_t n = strlen(s);
    char *a = malloc(n + 1), *b = malloc(n + 1);
    if (!a || !b) {
        free(a), free(b);
        return NULL;
    }
    /* lower, then remove_punc */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_punct(c)) continue;
        a[k++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    a[k] = 0;
    /* remove_articles: re.sub(r'\b(a|an|the)\b', ' ', text) */
    size_t j = 0;
    for (size_t i = 0; i < k;) {
        size_t len = 0;
        if (i == 0 || !is_word((unsigned char)a[i - 1])) {
            if (!strncmp(a + i, "the", 3)) len = 3;
            else if (!strncmp(a + i, "an", 2)) len = 2;
            else if (a[i] == 'a') len = 1;
            if (len && i + len < k && is_word((unsigned char)a[i + len])) len = 0;
        }
        if (len) {
            b[j++] = ' ';
            i += len;
        } else {
            b[j++] = a[i++];
        }
    }
    b[j] = 0;
    /* white_space_fix: ' '.join(text.split()) */
    k = 0;
    for (size_t i = 0; i < j;) {
        while (i < j && is_space((unsigned char)b[i])) i++;
        if (i == j) break;
        if (k) a[k++] = ' ';
        while (i < j && !is_space((unsigned char)b[i])) a[k++] = b[i++];
    }
    a[k] = 0;
    free(b);
    return a;
}

int orthros_squad_exact(const char *gold, const char *pred)
{
    char *g = orthros_squad_normalise(gold), *p = orthros_squad_normalise(pred);
    int same = g && p && !strcmp(g, p);
    free(g), free(p);
    return same;
}

/* The tokens of a normalised text (split on its single spaces), in place: pointers into s. */
static int split(char *s, char ***out)
{
    int n = 0;
    for (char *p = s; *p; p++) n += p == s || p[-1] == ' ' ? *p != ' ' : 0;
    *out = calloc((size_t)(n ? n : 1), sizeof **out);
    if (!*out) return -1;
    int k = 0;
    for (char *p = strtok(s, " "); p; p = strtok(NULL, " ")) (*out)[k++] = p;
    return k;
}

double orthros_squad_f1(const char *gold, const char *pred)
{
    char *g = orthros_squad_normalise(gold), *p = orthros_squad_normalise(pred), **gt = NULL, **pt = NULL;
    double f1 = 0;
    int ng = g ? split(g, &gt) : -1, np = p ? split(p, &pt) : -1;
    if (ng >= 0 && np >= 0) {
        if (!ng || !np) f1 = ng == np; /* either empty: 1 when both are */
        else {
            /* sum over tokens of min(count in gold, count in pred): Counter(gold) & Counter(pred) */
            char *used = calloc((size_t)ng, 1);
            int same = 0;
            for (int i = 0; used && i < np; i++)
                for (int k = 0; k < ng; k++)
                    if (!used[k] && !strcmp(pt[i], gt[k])) {
                        used[k] = 1, same++;
                        break;
                    }
            free(used);
            if (same) {
                double precision = (double)same / np, recall = (double)same / ng;
                f1 = 2 * precision * recall / (precision + recall);
            }
        }
    }
    free(gt), free(pt), free(g), free(p);
    return f1;
}

void orthros_squad_score(const char *const *answers, int n, const char *pred, int *exact, double *f1)
{
    int any = 0;
    *exact = 0, *f1 = 0;
    for (int i = 0; i < n; i++) {
        char *g = orthros_squad_normalise(answers[i]);
        int keep = g && g[0];
        free(g);
        if (!keep) continue;
        any = 1;
        if (orthros_squad_exact(answers[i], pred)) *exact = 1;
        double f = orthros_squad_f1(answers[i], pred);
        if (f > *f1) *f1 = f;
    }
    if (!any) {
        *exact = orthros_squad_exact("", pred);
        *f1 = orthros_squad_f1("", pred);
    }
}
