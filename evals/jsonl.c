/* Strict JSON lines (jsonl.h). */
#define _GNU_SOURCE
#include "jsonl.h"
#include "orthros.h"
#include "results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An escaped NUL (\u0000) would cut a string short in cJSON: refused, as the model loaders refuse it. */
static int has_escaped_nul(const char *s, size_t len)
{
    for (size_t i = 0; i + 6 <= len; i++) {
        if (memcmp(s + i, "\\u0000", 6)) continue;
        size_t bs = 0;
        while (bs < i && s[i - 1 - bs] == '\\') bs++;
        if (bs % 2 == 0) return 1;
    }
    return 0;
}

static int parse_line(cJSON **out, const char *s, size_t len, const char *name, int line)
{
    *out = NULL;
    if (memchr(s, 0, len)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: a NUL byte", name, line);
    if (has_escaped_nul(s, len)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: a string holds \\u0000", name, line);
    const char *end = NULL, *dup;
    cJSON *o = cJSON_ParseWithLengthOpts(s, len, &end, 0);
    if (!o) return orthros_error(ORTHROS_EFORMAT, "%s:%d: not valid JSON (near byte %ld of the line)", name, line,
                                 end ? (long)(end - s) : -1L);
    int rc = 0;
    for (const char *p = end; p < s + len && !rc; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r') rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: bytes after the JSON value", name, line);
    if (!rc && !cJSON_IsObject(o)) rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: not a JSON object", name, line);
    if (!rc && (dup = orthros_json_duplicate_key(o)))
        rc = orthros_error(ORTHROS_EFORMAT, "%s:%d: the key \"%.64s\" appears twice", name, line, dup);
    if (rc) cJSON_Delete(o);
    else *out = o;
    return rc;
}

int orthros_jsonl_each(const char *text, size_t len, const char *name, int (*fn)(void *ctx, const cJSON *o, int line),
                       void *ctx)
{
    int rc = 0, line = 0, items = 0;
    for (size_t at = 0; at < len && !rc;) {
        const char *s = text + at, *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl != NULL);
        line++;
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) k++;
        if (k == n) continue;
        if (items == ORTHROS_JSONL_MAX_ITEMS)
            return orthros_error(ORTHROS_EFORMAT, "%s:%d: more than %d items", name, line, ORTHROS_JSONL_MAX_ITEMS);
        cJSON *o;
        if ((rc = parse_line(&o, s, n, name, line))) break;
        rc = fn(ctx, o, line);
        cJSON_Delete(o);
        items++;
    }
    if (!rc && !items) rc = orthros_error(ORTHROS_EFORMAT, "%s: no items (one JSON object a line)", name);
    return rc;
}

int orthros_jsonl_load(const char *path, int (*fn)(void *ctx, const cJSON *o, int line), void *ctx)
{
    char *text = NULL;
    size_t len = 0;
    int rc = orthros_read_file(&text, &len, path, ORTHROS_JSONL_MAX_BYTES, NULL);
    if (!rc) rc = orthros_jsonl_each(text, len, path, fn, ctx);
    free(text);
    return rc;
}

int orthros_jsonl_string(char **out, const cJSON *o, const char *key, const char *name, int line, int empty_ok)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is missing", name, line, key);
    if (!cJSON_IsString(v)) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is not a string", name, line, key);
    if (!empty_ok && !v->valuestring[0]) return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"%s\" is empty", name, line, key);
    if (!(*out = strdup(v->valuestring))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

int orthros_jsonl_id(char **out, const cJSON *o, const char *name, int line)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    char num[64];
    *out = NULL;
    if (!id) return 0;
    /* A numeric id is kept as the integer it is. One a double cannot hold exactly would be recorded as another id
     * (2^53 + 1 is read as 2^53, 1e400 as inf, 0.1 printed as 0.10000000000000001): below 2^53 every integer is
     * exact, and the rest are refused, to be given as strings. */
    if (cJSON_IsNumber(id)) {
        double x = id->valuedouble;
        if (!(fabs(x) < 9007199254740992.0 && x == floor(x)))
            return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"id\" %.17g is not an integer of magnitude below 2^53 (give "
                                 "such an id as a string)", name, line, x);
        snprintf(num, sizeof num, "%lld", (long long)x);
    } else if (!cJSON_IsString(id))
        return orthros_error(ORTHROS_EFORMAT, "%s:%d: \"id\" is not a string or a number", name, line);
    if (!(*out = strdup(cJSON_IsNumber(id) ? num : id->valuestring))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}
