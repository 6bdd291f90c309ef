/* Parsing of sweep axes; see axes.h for the syntax and the rules on order and duplicates. */
#include "axes.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "orthros.h"

/* A piece of the input text, not NUL-terminated. */
typedef struct {
    const char *s;
    size_t len;
} span;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static span trim(span t)
{
    while (t.len > 0 && is_space(t.s[0])) {
        t.s++;
        t.len--;
    }
    while (t.len > 0 && is_space(t.s[t.len - 1]))
        t.len--;
    return t;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Records "<kind> item "<item>": <reason>" and returns ORTHROS_EINVAL. */
__attribute__((format(printf, 3, 4))) static int item_error(const char *kind, span item, const char *fmt, ...)
{
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return orthros_error(ORTHROS_EINVAL, "%s item \"%.*s\": %s", kind, (int)item.len, item.s, reason);
}

/* Splits off the next comma-separated item of *rest (trimmed); returns 0 when the text is used up. */
static int next_item(span *item, const char **rest)
{
    if (!*rest)
        return 0;
    const char *comma = strchr(*rest, ',');
    size_t len = comma ? (size_t)(comma - *rest) : strlen(*rest);
    *item = trim((span){*rest, len});
    *rest = comma ? comma + 1 : NULL;
    return 1;
}

static int list_is_blank(const char *text)
{
    return trim((span){text, strlen(text)}).len == 0;
}

/* ---- Integers ---- */

enum { NUM_OK = 0, NUM_SYNTAX = 1, NUM_OVERFLOW = 2 };

/* An optional '-', decimal digits and, when allow_suffix, one of k K m M; nothing else. */
static int parse_number(int64_t *out, span t, int allow_suffix)
{
    size_t i = 0;
    int neg = 0;
    if (i < t.len && t.s[i] == '-') {
        neg = 1;
        i++;
    }
    if (i == t.len || t.s[i] < '0' || t.s[i] > '9')
        return NUM_SYNTAX;
    uint64_t mag = 0;
    int overflow = 0;
    for (; i < t.len && t.s[i] >= '0' && t.s[i] <= '9'; i++) {
        unsigned d = (unsigned)(t.s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            overflow = 1; /* keep scanning so that a syntax error still wins */
        else
            mag = mag * 10 + d;
    }
    if (i < t.len && allow_suffix) {
        uint64_t mult = lower(t.s[i]) == 'k' ? 1024u : lower(t.s[i]) == 'm' ? 1024u * 1024u : 0;
        if (!mult)
            return NUM_SYNTAX;
        i++;
        if (mag > UINT64_MAX / mult)
            overflow = 1;
        else
            mag *= mult;
    }
    if (i != t.len)
        return NUM_SYNTAX;
    /* INT64_MIN's magnitude is one more than INT64_MAX's. */
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    if (overflow || mag > limit)
        return NUM_OVERFLOW;
    if (!neg)
        *out = (int64_t)mag;
    else
        *out = mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag;
    return NUM_OK;
}

/* Parses one part of an item, naming it ("START", "step", ...) in the message when it is bad. */
static int parse_part(int64_t *out, span item, span part, const char *name, int allow_suffix)
{
    int rc = parse_number(out, trim(part), allow_suffix);
    if (rc == NUM_OVERFLOW)
        return item_error("sweep", item, "%s is outside the 64-bit integer range", name);
    if (rc == NUM_SYNTAX)
        return item_error("sweep", item, "%s \"%.*s\" is not an integer%s", name, (int)trim(part).len,
                          trim(part).s, allow_suffix ? " (optional suffix k or m)" : "");
    return 0;
}

static int check_bounds(span item, const char *name, int64_t v, int64_t min_value, int64_t max_value)
{
    if (v < min_value)
        return item_error("sweep", item, "%s %lld is below the minimum %lld", name, (long long)v,
                          (long long)min_value);
    if (v > max_value)
        return item_error("sweep", item, "%s %lld is above the maximum %lld", name, (long long)v,
                          (long long)max_value);
    return 0;
}

typedef struct {
    int64_t *out;
    size_t cap; /* min(caller's cap, ORTHROS_AXIS_MAX_VALUES) */
    size_t n;
} int_list;

/* Appends v unless it is already there. */
static int emit(int_list *l, span item, int64_t v)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->out[i] == v)
            return 0;
    if (l->n >= l->cap)
        return item_error("sweep", item, "the list expands past %zu values", l->cap);
    l->out[l->n++] = v;
    return 0;
}

static int parse_range(int_list *l, span item, const char *c1, const char *c2, int64_t min_value,
                       int64_t max_value)
{
    span p_start = {item.s, (size_t)(c1 - item.s)};
    span p_end = {c1 + 1, (size_t)(c2 - c1 - 1)};
    span p_step = trim((span){c2 + 1, (size_t)(item.s + item.len - c2 - 1)});
    int64_t start, end, by;
    int rc = parse_part(&start, item, p_start, "START", 1);
    if (!rc)
        rc = parse_part(&end, item, p_end, "END", 1);
    if (rc)
        return rc;
    if (start > end)
        return item_error("sweep", item, "START %lld is greater than END %lld", (long long)start, (long long)end);
    if ((rc = check_bounds(item, "START", start, min_value, max_value)) ||
        (rc = check_bounds(item, "END", end, min_value, max_value)))
        return rc;
    if (p_step.len == 0 || (p_step.s[0] != 'x' && p_step.s[0] != 'X' && p_step.s[0] != '+'))
        return item_error("sweep", item, "the third part must be xF (geometric) or +S (arithmetic)");
    int geometric = p_step.s[0] != '+';
    span num = {p_step.s + 1, p_step.len - 1};
    if ((rc = parse_part(&by, item, num, geometric ? "factor" : "step", !geometric)))
        return rc;

    if (geometric) {
        if (by < 2)
            return item_error("sweep", item, "factor %lld is less than 2", (long long)by);
        if (start <= 0)
            return item_error("sweep", item, "a geometric range needs START > 0, got %lld", (long long)start);
        /* v * by <= end exactly when v <= end / by (all positive), which also rules out overflow. */
        for (int64_t v = start;; v *= by) {
            if ((rc = emit(l, item, v)))
                return rc;
            if (v > end / by)
                break;
        }
    } else {
        if (by <= 0)
            return item_error("sweep", item, "step %lld is not > 0", (long long)by);
        /* The distance to END in unsigned arithmetic cannot overflow, since start <= v <= end. */
        for (int64_t v = start;; v += by) {
            if ((rc = emit(l, item, v)))
                return rc;
            if ((uint64_t)end - (uint64_t)v < (uint64_t)by)
                break;
        }
    }
    return 0;
}

int orthros_axis_parse_int_range(int64_t *out, size_t cap, size_t *n_out, const char *text, int64_t min_value,
                                 int64_t max_value)
{
    if (!out || !n_out || !text)
        return orthros_error(ORTHROS_EINVAL, "sweep list: missing argument");
    if (min_value > max_value)
        return orthros_error(ORTHROS_EINVAL, "sweep list: minimum %lld above maximum %lld", (long long)min_value,
                             (long long)max_value);
    if (list_is_blank(text))
        return orthros_error(ORTHROS_EINVAL, "sweep list \"%s\" is empty", text);
    int_list l = {out, cap < ORTHROS_AXIS_MAX_VALUES ? cap : ORTHROS_AXIS_MAX_VALUES, 0};
    const char *rest = text;
    span item;
    size_t index = 0;
    while (next_item(&item, &rest)) {
        index++;
        if (item.len == 0)
            return orthros_error(ORTHROS_EINVAL, "sweep list \"%s\": item %zu is empty", text, index);
        const char *c1 = memchr(item.s, ':', item.len);
        int rc;
        if (!c1) {
            int64_t v;
            if ((rc = parse_part(&v, item, item, "value", 1)) ||
                (rc = check_bounds(item, "value", v, min_value, max_value)) || (rc = emit(&l, item, v)))
                return rc;
            continue;
        }
        const char *c2 = memchr(c1 + 1, ':', (size_t)(item.s + item.len - c1 - 1));
        if (!c2 || memchr(c2 + 1, ':', (size_t)(item.s + item.len - c2 - 1)))
            return item_error("sweep", item, "a range is START:END:xF or START:END:+S");
        if ((rc = parse_range(&l, item, c1, c2, min_value, max_value)))
            return rc;
    }
    *n_out = l.n;
    return 0;
}

int orthros_axis_parse_int(int64_t *out, size_t cap, size_t *n_out, const char *text, int64_t min_value)
{
    return orthros_axis_parse_int_range(out, cap, n_out, text, min_value, INT64_MAX);
}

int orthros_axis_parse_scalar(int64_t *out, const char *text, int64_t min_value, int64_t max_value)
{
    if (!out || !text)
        return orthros_error(ORTHROS_EINVAL, "integer option: missing argument");
    span t = trim((span){text, strlen(text)});
    int64_t v;
    int rc = parse_number(&v, t, 1);
    if (rc == NUM_OVERFLOW)
        return orthros_error(ORTHROS_EINVAL, "\"%s\" is outside the 64-bit integer range", text);
    if (rc == NUM_SYNTAX)
        return orthros_error(ORTHROS_EINVAL, "\"%s\" is not an integer (optional suffix k or m)", text);
    if (v < min_value || v > max_value)
        return orthros_error(ORTHROS_EINVAL, "\"%s\" is outside [%lld, %lld]", text, (long long)min_value,
                             (long long)max_value);
    *out = v;
    return 0;
}

/* ---- Names ---- */

static int name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == ':';
}

static int span_equals_nocase(span a, const char *b)
{
    size_t i = 0;
    for (; i < a.len && b[i]; i++)
        if (lower(a.s[i]) != lower(b[i]))
            return 0;
    return i == a.len && b[i] == '\0';
}

/* "a, b, c" into buf, truncated with "..." when it does not fit. */
static void join_names(char *buf, size_t size, const char *const *names)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; names[i]; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= size - used) {
            if (size >= 4)
                memcpy(buf + size - 4, "...", 4);
            return;
        }
        used += (size_t)w;
    }
}

int orthros_axis_parse_names(char (*out)[ORTHROS_AXIS_NAME_MAX], size_t cap, size_t *n_out, const char *text,
                             const char *const *allowed)
{
    if (!out || !n_out || !text)
        return orthros_error(ORTHROS_EINVAL, "name list: missing argument");
    if (list_is_blank(text))
        return orthros_error(ORTHROS_EINVAL, "name list \"%s\" is empty", text);
    size_t lim = cap < ORTHROS_AXIS_MAX_VALUES ? cap : ORTHROS_AXIS_MAX_VALUES, n = 0, index = 0;
    const char *rest = text;
    span item;
    while (next_item(&item, &rest)) {
        index++;
        if (item.len == 0)
            return orthros_error(ORTHROS_EINVAL, "name list \"%s\": item %zu is empty", text, index);
        if (item.len >= ORTHROS_AXIS_NAME_MAX)
            return item_error("name", item, "longer than %d characters", ORTHROS_AXIS_NAME_MAX - 1);
        for (size_t i = 0; i < item.len; i++)
            if (!name_char_ok(item.s[i]))
                return item_error("name", item, "only letters, digits and _ - . : are allowed");
        char name[ORTHROS_AXIS_NAME_MAX];
        if (allowed) {
            size_t a = 0;
            while (allowed[a] && !span_equals_nocase(item, allowed[a]))
                a++;
            if (!allowed[a]) {
                char choices[128];
                join_names(choices, sizeof choices, allowed);
                return item_error("name", item, "not one of %s", choices);
            }
            snprintf(name, sizeof name, "%s", allowed[a]);
        } else {
            memcpy(name, item.s, item.len);
            name[item.len] = '\0';
        }
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = strcmp(out[i], name) == 0;
        if (dup)
            continue;
        if (n >= lim)
            return item_error("name", item, "the list has more than %zu names", lim);
        memcpy(out[n++], name, sizeof name);
    }
    *n_out = n;
    return 0;
}
