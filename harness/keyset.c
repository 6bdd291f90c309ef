/* A set of strings (see keyset.h): FNV-1a, linear probing, doubled at half full. */
#define _GNU_SOURCE
#include "keyset.h"
#include "orthros.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h ^ (h >> 29);
}

void orthros_keyset_init(orthros_keyset *s) { memset(s, 0, sizeof *s); }

void orthros_keyset_free(orthros_keyset *s)
{
    for (size_t i = 0; s->slot && i <= s->mask; i++) free(s->slot[i]);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

static size_t probe(const orthros_keyset *s, const char *key)
{
    size_t h = key_hash(key) & s->mask;
    while (s->slot[h] && strcmp(s->slot[h], key)) h = (h + 1) & s->mask;
    return h;
}

int orthros_keyset_has(const orthros_keyset *s, const char *key) { return s->slot && s->slot[probe(s, key)] != NULL; }

int orthros_keyset_add(orthros_keyset *s, const char *key)
{
    if (!s->slot || 2 * (s->n + 1) > s->mask + 1) {
        size_t cap = s->slot ? 2 * (s->mask + 1) : 64;
        orthros_keyset g = {calloc(cap, sizeof *g.slot), cap - 1, s->n};
        if (!g.slot) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        for (size_t i = 0; s->slot && i <= s->mask; i++)
            if (s->slot[i]) g.slot[probe(&g, s->slot[i])] = s->slot[i];
        free(s->slot);
        *s = g;
    }
    size_t h = probe(s, key);
    if (s->slot[h]) return 1;
    if (!(s->slot[h] = strdup(key))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    s->n++;
    return 0;
}
