/* GGUF parsing, dequantisation and the llama.* model config (see gguf.h). Layout, all little-endian:
 *   magic "GGUF", u32 version, u64 tensor_count, u64 kv_count,
 *   kv_count x (string key, u32 type, value), a string being u64 length + bytes, an array u32 type + u64 n + n values,
 *   tensor_count x (string name, u32 n_dims, n_dims x u64 ne, u32 ggml type, u64 offset),
 *   padding to `general.alignment` (default 32), then the data section that the offsets point into. */
#define _GNU_SOURCE
#include "gguf.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_KEY_LEN 65535u
#define MAX_NAME_LEN 64u
#define MAX_ARRAY_DEPTH 4
#define MAX_DIM (1ull << 40)

/* ---- ggml types: block size and bytes per block (ggml's type_traits) ---- */

typedef struct {
    const char *name;
    uint32_t block, bytes;
} ggml_type_info;

static const ggml_type_info *type_info(uint32_t t)
{
    static const ggml_type_info table[] = {
        [0] = {"F32", 1, 4},        [1] = {"F16", 1, 2},         [2] = {"Q4_0", 32, 18},     [3] = {"Q4_1", 32, 20},
        [6] = {"Q5_0", 32, 22},     [7] = {"Q5_1", 32, 24},      [8] = {"Q8_0", 32, 34},     [9] = {"Q8_1", 32, 40},
        [10] = {"Q2_K", 256, 84},   [11] = {"Q3_K", 256, 110},   [12] = {"Q4_K", 256, 144},  [13] = {"Q5_K", 256, 176},
        [14] = {"Q6_K", 256, 210},  [15] = {"Q8_K", 256, 292},   [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
        [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},  [20] = {"IQ4_NL", 32, 18},  [21] = {"IQ3_S", 256, 110},
        [22] = {"IQ2_S", 256, 82},  [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},        [25] = {"I16", 1, 2},
        [26] = {"I32", 1, 4},       [27] = {"I64", 1, 8},        [28] = {"F64", 1, 8},       [29] = {"IQ1_M", 256, 56},
        [30] = {"BF16", 1, 2},      [34] = {"TQ1_0", 256, 54},   [35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},
        [40] = {"NVFP4", 64, 36},   [41] = {"Q1_0", 128, 18},
    };
    if (t >= sizeof table / sizeof *table || !table[t].name) return NULL;
    return &table[t];
}

const char *orthros_ggml_type_name(uint32_t type)
{
    const ggml_type_info *ti = type_info(type);
    return ti ? ti->name : "unknown";
}

int orthros_ggml_type_supported(uint32_t t)
{
    return t == ORTHROS_GGML_F32 || t == ORTHROS_GGML_F16 || t == ORTHROS_GGML_BF16 || t == ORTHROS_GGML_Q8_0 ||
           t == ORTHROS_GGML_Q4_0 || t == ORTHROS_GGML_Q4_1;
}

/* ---- a bounds-checked reader ---- */

typedef struct {
    const uint8_t *p;
    size_t pos, size;
} reader;

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static size_t left(const reader *r) { return r->size - r->pos; }

/* A little-endian integer of `bytes` (4 or 8) bytes. */
static int rd_uint(reader *r, uint64_t *v, size_t bytes, const char *what)
{
    if (left(r) < bytes)
        return orthros_error(ORTHROS_EFORMAT, "truncated: %s at byte %zu runs past the end of the file (%zu bytes)",
                             what, r->pos, r->size);
    *v = bytes == 4 ? le32(r->p + r->pos) : le64(r->p + r->pos);
    r->pos += bytes;
    return 0;
}

static int rd_u64(reader *r, uint64_t *v, const char *what) { return rd_uint(r, v, 8, what); }

static int rd_u32(reader *r, uint32_t *v, const char *what)
{
    uint64_t x = 0;
    int rc = rd_uint(r, &x, 4, what);
    *v = (uint32_t)x;
    return rc;
}

static int rd_str(reader *r, orthros_gguf_str *s, uint64_t max_len, const char *what)
{
    uint64_t len = 0;
    int rc = rd_u64(r, &len, what);
    if (rc) return rc;
    if (len > left(r))
        return orthros_error(ORTHROS_EFORMAT, "%s at byte %zu: length %llu runs past the end of the file (%zu bytes)",
                             what, r->pos - 8, (unsigned long long)len, r->size);
    if (len > max_len)
        return orthros_error(ORTHROS_EFORMAT, "%s at byte %zu: length %llu exceeds %llu", what, r->pos - 8,
                             (unsigned long long)len, (unsigned long long)max_len);
    s->p = (const char *)r->p + r->pos;
    s->len = (size_t)len;
    r->pos += (size_t)len;
    return 0;
}

static size_t scalar_size(uint32_t t)
{
    switch (t) {
    case ORTHROS_GGUF_UINT8: case ORTHROS_GGUF_INT8: case ORTHROS_GGUF_BOOL: return 1;
    case ORTHROS_GGUF_UINT16: case ORTHROS_GGUF_INT16: return 2;
    case ORTHROS_GGUF_UINT32: case ORTHROS_GGUF_INT32: case ORTHROS_GGUF_FLOAT32: return 4;
    case ORTHROS_GGUF_UINT64: case ORTHROS_GGUF_INT64: case ORTHROS_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static const char *value_type_name(uint32_t t)
{
    static const char *const names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                        "bool",  "string", "array", "uint64", "int64", "float64"};
    return t < 13 ? names[t] : "unknown";
}

/* Skips (validating) one value of type t; arrays recurse up to MAX_ARRAY_DEPTH. */
static int skip_value(reader *r, uint32_t t, int depth, const char *key)
{
    size_t sz = scalar_size(t);
    if (sz) {
        if (left(r) < sz)
            return orthros_error(ORTHROS_EFORMAT, "truncated: value of %s runs past the end of the file", key);
        if (t == ORTHROS_GGUF_BOOL && r->p[r->pos] > 1)
            return orthros_error(ORTHROS_EFORMAT, "metadata %s: bool value %u is neither 0 nor 1", key, r->p[r->pos]);
        r->pos += sz;
        return 0;
    }
    if (t == ORTHROS_GGUF_STRING) {
        orthros_gguf_str s;
        return rd_str(r, &s, UINT64_MAX, key);
    }
    if (t != ORTHROS_GGUF_ARRAY)
        return orthros_error(ORTHROS_EFORMAT, "metadata %s: unknown value type %u", key, t);
    if (depth >= MAX_ARRAY_DEPTH)
        return orthros_error(ORTHROS_EFORMAT, "metadata %s: arrays nested deeper than %d", key, MAX_ARRAY_DEPTH);
    uint32_t et = 0;
    uint64_t n = 0;
    int rc;
    if ((rc = rd_u32(r, &et, key)) || (rc = rd_u64(r, &n, key))) return rc;
    size_t esz = scalar_size(et);
    if (esz) {
        if (n > left(r) / esz)
            return orthros_error(ORTHROS_EFORMAT, "metadata %s: array of %llu %s runs past the end of the file", key,
                                 (unsigned long long)n, value_type_name(et));
        if (et == ORTHROS_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (r->p[r->pos + i] > 1)
                    return orthros_error(ORTHROS_EFORMAT, "metadata %s: bool value %u is neither 0 nor 1", key,
                                         r->p[r->pos + i]);
        r->pos += (size_t)(n * esz);
        return 0;
    }
    if (et != ORTHROS_GGUF_STRING && et != ORTHROS_GGUF_ARRAY)
        return orthros_error(ORTHROS_EFORMAT, "metadata %s: unknown array element type %u", key, et);
    /* Each string or array element takes at least 8 or 12 bytes, so n is bounded before the loop. */
    if (n > left(r) / (et == ORTHROS_GGUF_STRING ? 8 : 12))
        return orthros_error(ORTHROS_EFORMAT, "metadata %s: array of %llu %s runs past the end of the file", key,
                             (unsigned long long)n, value_type_name(et));
    for (uint64_t i = 0; i < n; i++)
        if ((rc = skip_value(r, et, depth + 1, key))) return rc;
    return 0;
}

static int parse_kv(reader *r, orthros_gguf_kv *kv, int64_t index)
{
    orthros_gguf_str key;
    char what[64];
    snprintf(what, sizeof what, "metadata key %lld", (long long)index);
    int rc = rd_str(r, &key, MAX_KEY_LEN, what);
    if (rc) return rc;
    if (key.len == 0) return orthros_error(ORTHROS_EFORMAT, "metadata key %lld is empty", (long long)index);
    if (memchr(key.p, 0, key.len)) return orthros_error(ORTHROS_EFORMAT, "metadata key %lld holds a NUL byte", (long long)index);
    kv->key = strndup(key.p, key.len);
    if (!kv->key) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    if ((rc = rd_u32(r, &kv->type, kv->key))) return rc;
    size_t start = r->pos;
    if (kv->type == ORTHROS_GGUF_STRING) return rd_str(r, &kv->str, UINT64_MAX, kv->key);
    if (kv->type == ORTHROS_GGUF_ARRAY) {
        /* Validate first (bounds, nesting), then index string arrays. */
        if ((rc = skip_value(r, kv->type, 0, kv->key))) return rc;
        reader a = {r->p, start, r->size};
        rd_u32(&a, &kv->elem_type, kv->key);
        rd_u64(&a, &kv->n, kv->key);
        kv->data = a.p + a.pos;
        if (kv->elem_type == ORTHROS_GGUF_STRING && kv->n) {
            kv->strs = malloc((size_t)kv->n * sizeof *kv->strs);
            if (!kv->strs) return orthros_error(ORTHROS_ENOMEM, "out of memory for metadata %s", kv->key);
            for (uint64_t i = 0; i < kv->n; i++) rd_str(&a, &kv->strs[i], UINT64_MAX, kv->key);
        }
        return 0;
    }
    if (!scalar_size(kv->type))
        return orthros_error(ORTHROS_EFORMAT, "metadata %s: unknown value type %u", kv->key, kv->type);
    kv->data = r->p + r->pos;
    return skip_value(r, kv->type, 0, kv->key);
}

static int parse_tensor_info(reader *r, orthros_gguf_tensor *t, int64_t index)
{
    orthros_gguf_str name;
    char what[64];
    snprintf(what, sizeof what, "name of tensor %lld", (long long)index);
    int rc = rd_str(r, &name, MAX_NAME_LEN, what);
    if (rc) return rc;
    if (name.len == 0 || memchr(name.p, 0, name.len))
        return orthros_error(ORTHROS_EFORMAT, "tensor %lld has an empty name or one holding a NUL byte", (long long)index);
    t->name = strndup(name.p, name.len);
    if (!t->name) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    uint32_t nd = 0;
    if ((rc = rd_u32(r, &nd, t->name))) return rc;
    if (nd < 1 || nd > ORTHROS_GGUF_MAX_DIMS)
        return orthros_error(ORTHROS_EFORMAT, "tensor %s has %u dimensions (1 to %d)", t->name, nd, ORTHROS_GGUF_MAX_DIMS);
    t->ndim = (int)nd;
    for (int i = 0; i < ORTHROS_GGUF_MAX_DIMS; i++) t->ne[i] = 1;
    for (uint32_t i = 0; i < nd; i++) {
        uint64_t ne = 0;
        if ((rc = rd_u64(r, &ne, t->name))) return rc;
        if (ne < 1 || ne > MAX_DIM)
            return orthros_error(ORTHROS_EFORMAT, "tensor %s: dimension %u is %llu (1 to 2^40)", t->name, i,
                                 (unsigned long long)ne);
        t->ne[i] = (int64_t)ne;
    }
    if ((rc = rd_u32(r, &t->type, t->name)) || (rc = rd_u64(r, &t->offset, t->name))) return rc;
    const ggml_type_info *ti = type_info(t->type);
    if (!ti) return orthros_error(ORTHROS_EFORMAT, "tensor %s has unknown ggml type %u", t->name, t->type);
    if (t->ne[0] % ti->block)
        return orthros_error(ORTHROS_EFORMAT, "tensor %s: row length %lld is not a multiple of the %s block of %u",
                             t->name, (long long)t->ne[0], ti->name, ti->block);
    /* Bytes = blocks per row * block bytes * rows, each step checked against SIZE_MAX. */
    size_t nb = (size_t)(t->ne[0] / ti->block) * ti->bytes;
    for (int i = 1; i < ORTHROS_GGUF_MAX_DIMS; i++) {
        if ((uint64_t)t->ne[i] > SIZE_MAX / nb)
            return orthros_error(ORTHROS_EFORMAT, "tensor %s: size overflows", t->name);
        nb *= (size_t)t->ne[i];
    }
    t->nbytes = nb;
    return 0;
}

/* ---- name indexes: open addressing over the names' hashes, so that duplicate keys and tensor names are found
 * and names looked up in time linear in their count (a pairwise comparison took 26 s for 100k keys) ---- */

typedef const char *(*name_of_fn)(const orthros_gguf *g, int64_t i);

static const char *kv_key(const orthros_gguf *g, int64_t i) { return g->kv[i].key; }
static const char *tensor_name(const orthros_gguf *g, int64_t i) { return g->tensors[i].name; }

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* Room for n names at most half full. Returns nonzero when out of memory. */
static int name_index_init(orthros_gguf_name_index *x, uint64_t n)
{
    size_t cap = 4;
    while (cap < 2 * n + 2) cap *= 2;
    x->slot = malloc(cap * sizeof *x->slot);
    if (!x->slot) return -1;
    memset(x->slot, 0xff, cap * sizeof *x->slot);
    x->mask = cap - 1;
    return 0;
}

static int64_t name_index_find(const orthros_gguf_name_index *x, const char *name, name_of_fn name_of, const orthros_gguf *g)
{
    if (!x->slot) return -1;
    for (size_t h = name_hash(name) & x->mask;; h = (h + 1) & x->mask) {
        int64_t i = x->slot[h];
        if (i < 0) return -1;
        if (!strcmp(name_of(g, i), name)) return i;
    }
}

/* Adds entry i named `name`; returns the earlier entry of that name (and adds nothing), or -1. */
static int64_t name_index_add(orthros_gguf_name_index *x, const char *name, int64_t i, name_of_fn name_of,
                              const orthros_gguf *g)
{
    size_t h = name_hash(name) & x->mask;
    for (; x->slot[h] >= 0; h = (h + 1) & x->mask)
        if (!strcmp(name_of(g, x->slot[h]), name)) return x->slot[h];
    x->slot[h] = i;
    return -1;
}

void orthros_gguf_free(orthros_gguf *g)
{
    if (!g) return;
    for (int64_t i = 0; g->kv && i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].strs);
    }
    for (int64_t i = 0; g->tensors && i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    free(g->kv_index.slot);
    free(g->tensor_index.slot);
    if (g->map) munmap(g->map, g->size);
    free(g->name);
    free(g);
}

int orthros_gguf_parse_buffer(orthros_gguf **out, const void *data, size_t size, const char *name)
{
    int rc = 0;
    orthros_span *spans = NULL;
    *out = NULL;
    orthros_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name ? name : "buffer"))) {
        free(g);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    g->buf = data;
    g->size = size;
    reader r = {data, 0, size};
    if (size < 4 || memcmp(data, "GGUF", 4)) {
        rc = size < 4 ? orthros_error(ORTHROS_EFORMAT, "file is %zu bytes, too short for a GGUF header", size)
                      : orthros_error(ORTHROS_EFORMAT, "bad magic (not a GGUF file)");
        goto fail;
    }
    r.pos = 4;
    uint64_t n_tensors = 0, n_kv = 0;
    if ((rc = rd_u32(&r, &g->version, "version"))) goto fail;
    if (g->version != 2 && g->version != 3) {
        uint32_t sw = __builtin_bswap32(g->version);
        if (sw >= 1 && sw <= 3) rc = orthros_error(ORTHROS_EFORMAT, "big-endian GGUF files are not supported");
        else rc = orthros_error(ORTHROS_EUNSUPPORTED, "GGUF version %u is not supported (2, 3)", g->version);
        goto fail;
    }
    if ((rc = rd_u64(&r, &n_tensors, "tensor count")) || (rc = rd_u64(&r, &n_kv, "metadata count"))) goto fail;
    /* The smallest key/value pair takes 13 bytes and the smallest tensor info 32, so larger counts cannot fit. */
    if (n_kv > left(&r) / 13) {
        rc = orthros_error(ORTHROS_EFORMAT, "metadata count %llu cannot fit in a file of %zu bytes",
                           (unsigned long long)n_kv, size);
        goto fail;
    }
    if (n_tensors > left(&r) / 32) {
        rc = orthros_error(ORTHROS_EFORMAT, "tensor count %llu cannot fit in a file of %zu bytes",
                           (unsigned long long)n_tensors, size);
        goto fail;
    }
    g->kv = calloc((size_t)n_kv + 1, sizeof *g->kv);
    g->tensors = calloc((size_t)n_tensors + 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors || name_index_init(&g->kv_index, n_kv) || name_index_init(&g->tensor_index, n_tensors)) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    for (uint64_t i = 0; i < n_kv; i++) {
        g->n_kv = (int64_t)i + 1;
        if ((rc = parse_kv(&r, &g->kv[i], (int64_t)i))) goto fail;
        if (name_index_add(&g->kv_index, g->kv[i].key, (int64_t)i, kv_key, g) >= 0) {
            rc = orthros_error(ORTHROS_EFORMAT, "metadata key %s appears twice", g->kv[i].key);
            goto fail;
        }
    }
    g->alignment = 32;
    const orthros_gguf_kv *al = orthros_gguf_find(g, "general.alignment");
    if (al) {
        if (al->type != ORTHROS_GGUF_UINT32) {
            rc = orthros_error(ORTHROS_EFORMAT, "general.alignment is a %s, not a uint32", value_type_name(al->type));
            goto fail;
        }
        g->alignment = le32(al->data);
        if (g->alignment == 0 || (g->alignment & (g->alignment - 1)) || g->alignment > (1u << 30)) {
            rc = orthros_error(ORTHROS_EFORMAT, "general.alignment %u is not a power of two", g->alignment);
            goto fail;
        }
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        g->n_tensors = (int64_t)i + 1;
        if ((rc = parse_tensor_info(&r, &g->tensors[i], (int64_t)i))) goto fail;
    }
    size_t pad = (g->alignment - r.pos % g->alignment) % g->alignment;
    g->data_offset = r.pos + pad;
    if (n_tensors && g->data_offset > size) {
        rc = orthros_error(ORTHROS_EFORMAT, "truncated: the data section would start at byte %zu, past the end (%zu bytes)",
                           g->data_offset, size);
        goto fail;
    }
    size_t data_size = g->data_offset <= size ? size - g->data_offset : 0;
    spans = calloc((size_t)n_tensors + 1, sizeof *spans);
    if (!spans) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < g->n_tensors; i++) {
        orthros_gguf_tensor *t = &g->tensors[i];
        if (name_index_add(&g->tensor_index, t->name, i, tensor_name, g) >= 0) {
            rc = orthros_error(ORTHROS_EFORMAT, "tensor %s appears twice", t->name);
            goto fail;
        }
        if (t->offset % g->alignment) {
            rc = orthros_error(ORTHROS_EFORMAT, "tensor %s: offset %llu is not a multiple of the alignment %u", t->name,
                               (unsigned long long)t->offset, g->alignment);
            goto fail;
        }
        if (t->offset > data_size || t->nbytes > data_size - t->offset) {
            rc = orthros_error(ORTHROS_EFORMAT,
                               "tensor %s: bytes [%llu, +%zu) run past the end of the data section (%zu bytes)", t->name,
                               (unsigned long long)t->offset, t->nbytes, data_size);
            goto fail;
        }
        t->data = g->buf + g->data_offset + t->offset;
        spans[i] = (orthros_span){t->offset, t->offset + t->nbytes, t->name}; /* never empty: every dimension is >= 1 */
    }
    if ((rc = orthros_spans_disjoint(spans, (size_t)g->n_tensors))) goto fail;
    free(spans);
    *out = g;
    return 0;
fail:
    free(spans);
    orthros_gguf_free(g);
    return rc;
}

int orthros_gguf_open(orthros_gguf **out, const char *path)
{
    void *map = NULL;
    size_t size = 0;
    *out = NULL;
    int rc = orthros_map_file(&map, &size, path, 1);
    if (rc) return rc;
    if (!map) return orthros_error(ORTHROS_EFORMAT, "%s: file is empty", path);
    if ((rc = orthros_gguf_parse_buffer(out, map, size, path))) {
        munmap(map, size);
        return orthros_error_prefix(rc, path);
    }
    (*out)->map = map;
    return 0;
}

const orthros_gguf_kv *orthros_gguf_find(const orthros_gguf *g, const char *key)
{
    int64_t i = name_index_find(&g->kv_index, key, kv_key, g);
    return i >= 0 ? &g->kv[i] : NULL;
}

const orthros_gguf_tensor *orthros_gguf_find_tensor(const orthros_gguf *g, const char *name)
{
    int64_t i = name_index_find(&g->tensor_index, name, tensor_name, g);
    return i >= 0 ? &g->tensors[i] : NULL;
}

size_t orthros_gguf_numel(const orthros_gguf_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < ORTHROS_GGUF_MAX_DIMS; i++) n *= (size_t)t->ne[i];
    return n;
}

static int int_value(const orthros_gguf_kv *kv, int64_t *out)
{
    const uint8_t *p = kv->data;
    uint64_t u;
    switch (kv->type) {
    case ORTHROS_GGUF_UINT8: *out = p[0]; return 0;
    case ORTHROS_GGUF_INT8: *out = (int8_t)p[0]; return 0;
    case ORTHROS_GGUF_UINT16: *out = le16(p); return 0;
    case ORTHROS_GGUF_INT16: *out = (int16_t)le16(p); return 0;
    case ORTHROS_GGUF_UINT32: *out = le32(p); return 0;
    case ORTHROS_GGUF_INT32: *out = (int32_t)le32(p); return 0;
    case ORTHROS_GGUF_INT64: u = le64(p); memcpy(out, &u, 8); return 0;
    case ORTHROS_GGUF_UINT64:
        u = le64(p);
        if (u > INT64_MAX) return -1;
        *out = (int64_t)u;
        return 0;
    default: return -1;
    }
}

int orthros_gguf_get_int(const orthros_gguf *g, const char *key, int64_t *out, int required, int64_t lo, int64_t hi)
{
    const orthros_gguf_kv *kv = orthros_gguf_find(g, key);
    if (!kv) return required ? orthros_error(ORTHROS_EFORMAT, "metadata %s is missing", key) : 0;
    int64_t v;
    if (kv->type == ORTHROS_GGUF_ARRAY)
        return orthros_error(ORTHROS_EUNSUPPORTED, "metadata %s is an array (per-layer values are not supported)", key);
    if (int_value(kv, &v))
        return orthros_error(ORTHROS_EFORMAT, "metadata %s is a %s, not an integer", key, value_type_name(kv->type));
    if (v < lo || v > hi)
        return orthros_error(ORTHROS_EFORMAT, "metadata %s = %lld is outside [%lld, %lld]", key, (long long)v,
                             (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int orthros_gguf_get_float(const orthros_gguf *g, const char *key, double *out, int required)
{
    const orthros_gguf_kv *kv = orthros_gguf_find(g, key);
    if (!kv) return required ? orthros_error(ORTHROS_EFORMAT, "metadata %s is missing", key) : 0;
    int64_t v;
    if (kv->type == ORTHROS_GGUF_FLOAT32) {
        uint32_t u = le32(kv->data);
        float f;
        memcpy(&f, &u, 4);
        *out = f;
    } else if (kv->type == ORTHROS_GGUF_FLOAT64) {
        uint64_t u = le64(kv->data);
        memcpy(out, &u, 8);
    } else if (!int_value(kv, &v)) {
        *out = (double)v;
    } else {
        return orthros_error(ORTHROS_EFORMAT, "metadata %s is a %s, not a number", key, value_type_name(kv->type));
    }
    return 0;
}

int orthros_gguf_get_bool(const orthros_gguf *g, const char *key, int *out)
{
    const orthros_gguf_kv *kv = orthros_gguf_find(g, key);
    if (!kv) return 0;
    if (kv->type != ORTHROS_GGUF_BOOL)
        return orthros_error(ORTHROS_EFORMAT, "metadata %s is a %s, not a bool", key, value_type_name(kv->type));
    *out = kv->data[0] != 0;
    return 0;
}

int orthros_gguf_get_str(const orthros_gguf *g, const char *key, orthros_gguf_str *out)
{
    const orthros_gguf_kv *kv = orthros_gguf_find(g, key);
    out->p = NULL;
    out->len = 0;
    if (!kv) return 0;
    if (kv->type != ORTHROS_GGUF_STRING)
        return orthros_error(ORTHROS_EFORMAT, "metadata %s is a %s, not a string", key, value_type_name(kv->type));
    /* A NUL would cut the value wherever it is read as a C string ("smollm\0garbage" read as "smollm"). */
    const char *z = memchr(kv->str.p, 0, kv->str.len);
    if (z) return orthros_error(ORTHROS_EFORMAT, "metadata %s holds a NUL byte (at byte %zu of %zu)", key,
                                (size_t)(z - kv->str.p), kv->str.len);
    *out = kv->str;
    return 0;
}

/* ---- dequantisation (ggml's block layouts; values = d * q (+ m) in float32, as ggml and gguf-py compute) ---- */

int orthros_gguf_dequantize(float *dst, const orthros_gguf_tensor *t)
{
    size_t n = orthros_gguf_numel(t);
    const uint8_t *p = t->data;
    switch (t->type) {
    case ORTHROS_GGML_F32:
        for (size_t i = 0; i < n; i++) {
            uint32_t u = le32(p + 4 * i);
            memcpy(&dst[i], &u, 4);
        }
        return 0;
    case ORTHROS_GGML_F16:
        for (size_t i = 0; i < n; i++) dst[i] = orthros_f16_to_f32(le16(p + 2 * i));
        return 0;
    case ORTHROS_GGML_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = orthros_bf16_to_f32(le16(p + 2 * i));
        return 0;
    case ORTHROS_GGML_Q8_0: /* half d, int8 q[32] */
        for (size_t b = 0; b < n / 32; b++, p += 34) {
            float d = orthros_f16_to_f32(le16(p));
            for (int j = 0; j < 32; j++) dst[b * 32 + j] = (float)(int8_t)p[2 + j] * d;
        }
        return 0;
    case ORTHROS_GGML_Q4_0: /* half d, 16 bytes: low nibbles are values 0-15, high nibbles 16-31, offset 8 */
        for (size_t b = 0; b < n / 32; b++, p += 18) {
            float d = orthros_f16_to_f32(le16(p));
            for (int j = 0; j < 16; j++) {
                dst[b * 32 + j] = (float)((int)(p[2 + j] & 0x0f) - 8) * d;
                dst[b * 32 + j + 16] = (float)((int)(p[2 + j] >> 4) - 8) * d;
            }
        }
        return 0;
    case ORTHROS_GGML_Q4_1: /* half d, half m, 16 bytes of nibbles as Q4_0, value q * d + m */
        for (size_t b = 0; b < n / 32; b++, p += 20) {
            float d = orthros_f16_to_f32(le16(p)), m = orthros_f16_to_f32(le16(p + 2));
            for (int j = 0; j < 16; j++) {
                float lo = (float)(p[4 + j] & 0x0f) * d, hi = (float)(p[4 + j] >> 4) * d;
                dst[b * 32 + j] = lo + m;
                dst[b * 32 + j + 16] = hi + m;
            }
        }
        return 0;
    default:
        return orthros_error(ORTHROS_EUNSUPPORTED, "tensor %s has type %s, which is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1)",
                             t->name, orthros_ggml_type_name(t->type));
    }
}

/* ---- the llama model config ---- */

int orthros_gguf_model_config(orthros_model_config *cfg, const orthros_gguf *g)
{
    int rc;
    char key[128];
    orthros_gguf_str arch;
    memset(cfg, 0, sizeof *cfg);
    if ((rc = orthros_gguf_get_str(g, "general.architecture", &arch))) return rc;
    if (!arch.p) return orthros_error(ORTHROS_EFORMAT, "metadata general.architecture is missing");
    if (arch.len != 5 || memcmp(arch.p, "llama", 5))
        return orthros_error(ORTHROS_EUNSUPPORTED, "architecture \"%.*s\" is not supported (llama)",
                             (int)(arch.len > 64 ? 64 : arch.len), arch.p);
    int64_t v;
#define GET_INT(name, dst, req, lo, hi)                                                                                \
    do {                                                                                                               \
        v = (dst);                                                                                                     \
        if ((rc = orthros_gguf_get_int(g, "llama." name, &v, (req), (lo), (hi)))) return rc;                          \
        (dst) = (int)v;                                                                                                \
    } while (0)
    GET_INT("embedding_length", cfg->d_model, 1, 1, 1 << 20);
    GET_INT("block_count", cfg->n_layers, 1, 1, ORTHROS_MAX_LAYERS);
    GET_INT("feed_forward_length", cfg->ffn, 1, 1, 1 << 20);
    GET_INT("attention.head_count", cfg->n_heads, 1, 1, 4096);
    cfg->n_kv_heads = cfg->n_heads;
    GET_INT("attention.head_count_kv", cfg->n_kv_heads, 0, 1, 4096);
    cfg->max_pos = 2048;
    GET_INT("context_length", cfg->max_pos, 0, 1, 1 << 30);
    int64_t experts = 0;
    if ((rc = orthros_gguf_get_int(g, "llama.expert_count", &experts, 0, 0, 1 << 20))) return rc;
    if (experts > 0) return orthros_error(ORTHROS_EUNSUPPORTED, "mixture-of-experts models are not supported");
    if (cfg->d_model % cfg->n_heads)
        return orthros_error(ORTHROS_EFORMAT, "embedding_length %d is not divisible by head_count %d", cfg->d_model,
                             cfg->n_heads);
    cfg->head_dim = cfg->d_model / cfg->n_heads;
    int kl = cfg->head_dim, vl = cfg->head_dim, rot = cfg->head_dim;
    GET_INT("attention.key_length", kl, 0, 2, ORTHROS_MAX_HEAD_DIM);
    GET_INT("attention.value_length", vl, 0, 2, ORTHROS_MAX_HEAD_DIM);
    if (kl != vl) return orthros_error(ORTHROS_EUNSUPPORTED, "key_length %d != value_length %d is not supported", kl, vl);
    cfg->head_dim = kl;
    GET_INT("rope.dimension_count", rot, 0, 0, ORTHROS_MAX_HEAD_DIM);
#undef GET_INT
    if (rot != cfg->head_dim)
        return orthros_error(ORTHROS_EUNSUPPORTED, "rope.dimension_count %d != head dim %d (partial RoPE) is not supported",
                             rot, cfg->head_dim);
    if (cfg->head_dim % 2 || cfg->head_dim > ORTHROS_MAX_HEAD_DIM)
        return orthros_error(ORTHROS_EFORMAT, "head dim %d must be even and at most %d", cfg->head_dim, ORTHROS_MAX_HEAD_DIM);
    if (cfg->n_heads % cfg->n_kv_heads)
        return orthros_error(ORTHROS_EFORMAT, "head_count %d is not divisible by head_count_kv %d", cfg->n_heads,
                             cfg->n_kv_heads);
    double eps = 1e-5, theta = 10000.0;
    if ((rc = orthros_gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &eps, 0))) return rc;
    if ((rc = orthros_gguf_get_float(g, "llama.rope.freq_base", &theta, 0))) return rc;
    if (!(eps >= 0.0 && eps <= 1.0)) return orthros_error(ORTHROS_EFORMAT, "layer_norm_rms_epsilon %g is outside [0, 1]", eps);
    if (!(theta >= 1e-3 && theta <= 1e12)) return orthros_error(ORTHROS_EFORMAT, "rope.freq_base %g is outside [1e-3, 1e12]", theta);
    cfg->norm_eps = (float)eps;
    cfg->rope_theta = theta;
    /* Vocabulary: the token list when there is one, else llama.vocab_size, else the embedding's rows. */
    const orthros_gguf_kv *toks = orthros_gguf_find(g, "tokenizer.ggml.tokens");
    const orthros_gguf_tensor *emb = orthros_gguf_find_tensor(g, "token_embd.weight");
    if (toks && toks->type == ORTHROS_GGUF_ARRAY && toks->elem_type == ORTHROS_GGUF_STRING) {
        if (toks->n < 1 || toks->n > (1 << 24))
            return orthros_error(ORTHROS_EFORMAT, "tokenizer.ggml.tokens holds %llu tokens (1 to 2^24)",
                                 (unsigned long long)toks->n);
        cfg->vocab = (int)toks->n;
    } else if (toks) {
        return orthros_error(ORTHROS_EFORMAT, "tokenizer.ggml.tokens is not an array of strings");
    } else {
        v = 0;
        if ((rc = orthros_gguf_get_int(g, "llama.vocab_size", &v, 0, 1, 1 << 24))) return rc;
        if (!v && emb && emb->ndim == 2 && emb->ne[1] <= (1 << 24)) v = emb->ne[1];
        if (!v) return orthros_error(ORTHROS_EFORMAT, "no vocabulary size (no token list, llama.vocab_size or token_embd.weight)");
        cfg->vocab = (int)v;
    }
    cfg->tie_embeddings = orthros_gguf_find_tensor(g, "output.weight") == NULL;
    snprintf(key, sizeof key, "blk.0.attn_q.bias");
    if (orthros_gguf_find_tensor(g, key)) return orthros_error(ORTHROS_EUNSUPPORTED, "attention biases are not supported");
    /* Generation stops after eos (and a distinct end-of-turn token where the file names one). */
    static const char *const stops[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"};
    for (int i = 0; i < 2; i++) {
        v = -1;
        if ((rc = orthros_gguf_get_int(g, stops[i], &v, 0, 0, cfg->vocab - 1))) return rc;
        if (v >= 0 && !(cfg->n_eos && cfg->eos[0] == v)) cfg->eos[cfg->n_eos++] = (int)v;
    }
    /* Scaling is applied to inv_freq by orthros_gguf_rope_adjust; refuse the kinds it cannot apply up front. */
    orthros_gguf_str st;
    if ((rc = orthros_gguf_get_str(g, "llama.rope.scaling.type", &st))) return rc;
    if (st.p && !(st.len == 4 && !memcmp(st.p, "none", 4)) && !(st.len == 6 && !memcmp(st.p, "linear", 6)))
        return orthros_error(ORTHROS_EUNSUPPORTED, "rope.scaling.type \"%.*s\" is not supported (none, linear)",
                             (int)(st.len > 64 ? 64 : st.len), st.p);
    return 0;
}

int orthros_gguf_rope_adjust(float *inv_freq, int half, const orthros_gguf *g)
{
    int rc;
    orthros_gguf_str st;
    if ((rc = orthros_gguf_get_str(g, "llama.rope.scaling.type", &st))) return rc;
    if (st.p && st.len == 6 && !memcmp(st.p, "linear", 6)) {
        double f = 1.0;
        if ((rc = orthros_gguf_get_float(g, "llama.rope.scaling.factor", &f, 1))) return rc;
        if (!(f > 0.0 && f < 1e9)) return orthros_error(ORTHROS_EFORMAT, "rope.scaling.factor %g must be positive", f);
        for (int i = 0; i < half; i++) inv_freq[i] = (float)(inv_freq[i] / f);
    }
    const orthros_gguf_tensor *ff = orthros_gguf_find_tensor(g, "rope_freqs.weight");
    if (ff) {
        if (ff->type != ORTHROS_GGML_F32 || ff->ndim != 1 || ff->ne[0] != half)
            return orthros_error(ORTHROS_EFORMAT, "rope_freqs.weight must be F32 of shape [%d] (is %s, %lld elements)",
                                 half, orthros_ggml_type_name(ff->type), (long long)orthros_gguf_numel(ff));
        float f[ORTHROS_MAX_HEAD_DIM / 2] = {0};
        if ((rc = orthros_gguf_dequantize(f, ff))) return rc;
        for (int i = 0; i < half; i++) {
            /* An infinite factor makes the frequency 0 (that dimension never rotates); NaN compares false. */
            if (!(f[i] > 0.0f && f[i] <= FLT_MAX))
                return orthros_error(ORTHROS_EFORMAT, "rope_freqs.weight[%d] = %g is not a positive finite number", i, f[i]);
            inv_freq[i] /= f[i];
        }
    }
    return 0;
}

int orthros_gguf_tensor_name(char *out, size_t cap, const char *hf, const orthros_model_config *cfg, int *permute_heads)
{
    static const struct {
        const char *hf, *gguf;
        int permute; /* 1: q heads, 2: kv heads */
    } layer_map[] = {
        {"self_attn.q_proj.weight", "attn_q.weight", 1},   {"self_attn.k_proj.weight", "attn_k.weight", 2},
        {"self_attn.v_proj.weight", "attn_v.weight", 0},   {"self_attn.o_proj.weight", "attn_output.weight", 0},
        {"mlp.gate_proj.weight", "ffn_gate.weight", 0},    {"mlp.up_proj.weight", "ffn_up.weight", 0},
        {"mlp.down_proj.weight", "ffn_down.weight", 0},    {"input_layernorm.weight", "attn_norm.weight", 0},
        {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
    };
    *permute_heads = 0;
    if (!strcmp(hf, "model.embed_tokens.weight")) return snprintf(out, cap, "token_embd.weight") < 0;
    if (!strcmp(hf, "model.norm.weight")) return snprintf(out, cap, "output_norm.weight") < 0;
    if (!strcmp(hf, "lm_head.weight")) return snprintf(out, cap, "output.weight") < 0;
    int layer, used = 0;
    if (sscanf(hf, "model.layers.%d.%n", &layer, &used) == 1 && used > 0) {
        for (size_t i = 0; i < sizeof layer_map / sizeof *layer_map; i++)
            if (!strcmp(hf + used, layer_map[i].hf)) {
                snprintf(out, cap, "blk.%d.%s", layer, layer_map[i].gguf);
                *permute_heads = layer_map[i].permute == 1 ? cfg->n_heads : layer_map[i].permute == 2 ? cfg->n_kv_heads : 0;
                return 0;
            }
    }
    return ORTHROS_EINVAL;
}

void orthros_gguf_unpermute_rows(float *w, float *tmp, int heads, int head_dim, size_t cols)
{
    /* convert_hf_to_gguf.py's permute: reshape(heads, 2, d/2, cols).swapaxes(1, 2), so GGUF row h*d + 2i + j
     * holds Hugging Face row h*d + j*(d/2) + i. */
    size_t d = (size_t)head_dim, half = d / 2;
    memcpy(tmp, w, (size_t)heads * d * cols * sizeof *w);
    for (size_t h = 0; h < (size_t)heads; h++)
        for (size_t i = 0; i < half; i++)
            for (size_t j = 0; j < 2; j++)
                memcpy(w + (h * d + j * half + i) * cols, tmp + (h * d + 2 * i + j) * cols, cols * sizeof *w);
}
