/* Strict JSON parsing for checkpoint metadata (see json.h). */
#include "json.h"

#include "orthros.h"

#include <stdlib.h>
#include <string.h>

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Refuses a repeated key in any object under `item`; `parent` names the enclosing key for the message. */
static int unique_keys(const cJSON *item, const char *parent)
{
    if (!cJSON_IsObject(item) && !cJSON_IsArray(item)) return 0;
    const cJSON *c;
    if (cJSON_IsObject(item)) {
        size_t n = 0;
        cJSON_ArrayForEach(c, item) n++;
        if (n > 1) {
            const char **keys = malloc(n * sizeof *keys);
            if (!keys) return orthros_error(ORTHROS_ENOMEM, "out of memory checking JSON keys");
            size_t i = 0;
            cJSON_ArrayForEach(c, item) keys[i++] = c->string;
            qsort(keys, n, sizeof *keys, key_cmp);
            for (i = 1; i < n; i++)
                if (!strcmp(keys[i - 1], keys[i])) {
                    int rc = parent ? orthros_error(ORTHROS_EFORMAT, "key \"%.64s\" appears twice in object \"%.64s\"",
                                                    keys[i], parent)
                                    : orthros_error(ORTHROS_EFORMAT, "key \"%.64s\" appears twice", keys[i]);
                    free(keys);
                    return rc;
                }
            free(keys);
        }
    }
    cJSON_ArrayForEach(c, item)
    {
        int rc = unique_keys(c, cJSON_IsObject(item) ? c->string : parent);
        if (rc) return rc;
    }
    return 0;
}

/* A NUL byte, or a \u0000 escape inside a string. */
static int find_nul(const char *text, size_t len)
{
    const char *z = memchr(text, '\0', len);
    if (z) return orthros_error(ORTHROS_EFORMAT, "holds a NUL byte at offset %zu", (size_t)(z - text));
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') {
            in_str = !in_str;
        } else if (in_str && text[i] == '\\') {
            if (i + 5 < len && text[i + 1] == 'u' && !memcmp(text + i + 2, "0000", 4))
                return orthros_error(ORTHROS_EFORMAT, "a string holds the escape \\u0000 (offset %zu)", i);
            i++; /* the escaped character, which may be a quote */
        }
    }
    return 0;
}

int orthros_json_parse(cJSON **out, const char *text, size_t len)
{
    *out = NULL;
    int rc = find_nul(text, len);
    if (rc) return rc;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return orthros_error(ORTHROS_EFORMAT, "not valid JSON (near byte %zu)", at);
    }
    for (const char *p = end; p < text + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return orthros_error(ORTHROS_EFORMAT, "not valid JSON: bytes follow the value (at byte %zu)",
                                 (size_t)(p - text));
        }
    if ((rc = unique_keys(root, NULL))) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return 0;
}
