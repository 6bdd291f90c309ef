/* A set of strings (open addressing over copies), for the checks that would otherwise compare every item with every
 * earlier one: a cell twice in a result file, the cells --resume merges. */
#ifndef ORTHROS_KEYSET_H
#define ORTHROS_KEYSET_H

#include <stddef.h>

typedef struct {
    char **slot;
    size_t mask, n;
} orthros_keyset;

void orthros_keyset_init(orthros_keyset *s);
/* Adds key: 0 when it is new, 1 when it was there already, ORTHROS_ENOMEM. */
int orthros_keyset_add(orthros_keyset *s, const char *key);
int orthros_keyset_has(const orthros_keyset *s, const char *key);
void orthros_keyset_free(orthros_keyset *s);

#endif
