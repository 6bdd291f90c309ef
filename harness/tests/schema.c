#include "schema.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int type_ok(const char *t, const cJSON *v)
{
    if (!strcmp(t, "object")) return cJSON_IsObject(v);
    if (!strcmp(t, "array")) return cJSON_IsArray(v);
    if (!strcmp(t, "string")) return cJSON_IsString(v);
    if (!strcmp(t, "number")) return cJSON_IsNumber(v);
    if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
    if (!strcmp(t, "null")) return cJSON_IsNull(v);
    return 0;
}

static int fail(char *err, size_t n, const char *path, const char *what)
{
    snprintf(err, n, "%s: %s", path[0] ? path : "(root)", what);
    return -1;
}

static int validate(const cJSON *s, const cJSON *v, const char *path, char *err, size_t n)
{
    char msg[512], sub[1024];
    const cJSON *t = cJSON_GetObjectItem(s, "type");
    if (t) {
        int ok = 0;
        if (cJSON_IsString(t)) ok = type_ok(t->valuestring, v);
        const cJSON *e;
        if (cJSON_IsArray(t)) cJSON_ArrayForEach(e, t) ok |= type_ok(e->valuestring, v);
        if (!ok) return fail(err, n, path, "wrong type");
    }
    const cJSON *en = cJSON_GetObjectItem(s, "enum");
    if (en) {
        int ok = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, en) ok |= cJSON_Compare(e, v, 1);
        if (!ok) return fail(err, n, path, "value not in enum");
    }
    /* oneOf: exactly one of the alternatives holds (the eval files' two kinds of cell). */
    const cJSON *one = cJSON_GetObjectItem(s, "oneOf");
    if (one) {
        int ok = 0, k = 0;
        const cJSON *alt;
        char first[512] = "";
        cJSON_ArrayForEach(alt, one)
        {
            char e2[512];
            if (!validate(alt, v, path, e2, sizeof e2)) ok++;
            else if (!k) snprintf(first, sizeof first, "%s", e2);
            k++;
        }
        if (ok != 1) {
            snprintf(msg, sizeof msg, "matches %d of the oneOf alternatives (the first says: %.400s)", ok, first);
            return fail(err, n, path, msg);
        }
    }
    const cJSON *mn = cJSON_GetObjectItem(s, "minimum");
    if (mn && cJSON_IsNumber(v) && v->valuedouble < mn->valuedouble) return fail(err, n, path, "below minimum");
    const cJSON *mx = cJSON_GetObjectItem(s, "maximum");
    if (mx && cJSON_IsNumber(v) && v->valuedouble > mx->valuedouble) return fail(err, n, path, "above maximum");
    if (cJSON_IsObject(v)) {
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItem(s, "required")) if (!cJSON_GetObjectItem(v, r->valuestring))
        {
            snprintf(msg, sizeof msg, "missing required field \"%s\"", r->valuestring);
            return fail(err, n, path, msg);
        }
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItem(s, "properties"))
        {
            const cJSON *child = cJSON_GetObjectItem(v, p->string);
            if (!child) continue;
            snprintf(sub, sizeof sub, "%s.%s", path, p->string);
            if (validate(p, child, sub, err, n)) return -1;
        }
    }
    if (cJSON_IsArray(v)) {
        const cJSON *mi = cJSON_GetObjectItem(s, "minItems");
        if (mi && cJSON_GetArraySize(v) < mi->valueint) return fail(err, n, path, "too few items");
        const cJSON *items = cJSON_GetObjectItem(s, "items");
        int i = 0;
        const cJSON *e;
        if (items) cJSON_ArrayForEach(e, v)
        {
            snprintf(sub, sizeof sub, "%s[%d]", path, i++);
            if (validate(items, e, sub, err, n)) return -1;
        }
    }
    return 0;
}

int orthros_schema_validate(const cJSON *schema, const cJSON *doc, char *err, size_t errlen)
{
    err[0] = '\0';
    return validate(schema, doc, "", err, errlen);
}
