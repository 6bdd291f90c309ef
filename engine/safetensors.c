/* safetensors: an 8-byte little-endian header length, a JSON header mapping tensor names to
 * {dtype, shape, data_offsets: [begin, end]} (offsets relative to the byte after the header), then data. */
#define _GNU_SOURCE
#include "safetensors.h"

#include "json.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int dtype_parse(const char *s, orthros_dtype *t)
{
    if (!strcmp(s, "F32")) *t = ORTHROS_DTYPE_F32;
    else if (!strcmp(s, "BF16")) *t = ORTHROS_DTYPE_BF16;
    else if (!strcmp(s, "F16")) *t = ORTHROS_DTYPE_F16;
    else {
        static const char *const known[] = {"F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
                                            "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"};
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            if (!strcmp(s, known[i]))
                return orthros_error(ORTHROS_EUNSUPPORTED, "dtype %s is not supported (F32, BF16, F16)", s);
        return orthros_error(ORTHROS_EFORMAT, "unknown dtype \"%s\"", s);
    }
    return 0;
}


static int tensor_cmp(const void *a, const void *b)
{
    return strcmp(((const orthros_st_tensor *)a)->name, ((const orthros_st_tensor *)b)->name);
}

/* Reads a non-negative integer that fits in size_t exactly. */
static int json_size(const cJSON *it, size_t *out)
{
    if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble != floor(it->valuedouble) ||
        it->valuedouble > 9007199254740992.0)
        return -1;
    *out = (size_t)it->valuedouble;
    return 0;
}

static int parse_entry(orthros_st_tensor *t, const cJSON *e, size_t data_size)
{
    if (!cJSON_IsObject(e)) return orthros_error(ORTHROS_EFORMAT, "entry of tensor %s is not an object", e->string);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt)) return orthros_error(ORTHROS_EFORMAT, "tensor %s has no dtype", e->string);
    int rc = dtype_parse(dt->valuestring, &t->dtype);
    if (rc) return orthros_error_prefix(rc, e->string);
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > ORTHROS_ST_MAX_DIMS)
        return orthros_error(ORTHROS_EFORMAT, "tensor %s has no valid shape", e->string);
    size_t numel = 1;
    t->ndim = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh)
    {
        size_t v;
        if (json_size(d, &v) || v > (1ull << 40))
            return orthros_error(ORTHROS_EFORMAT, "tensor %s has a bad dimension in its shape", e->string);
        t->shape[t->ndim++] = (int64_t)v;
        if (v && numel > (SIZE_MAX >> 2) / v)
            return orthros_error(ORTHROS_EFORMAT, "tensor %s: shape too large", e->string);
        numel *= v;
    }
    size_t b, en;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || json_size(cJSON_GetArrayItem(off, 0), &b) ||
        json_size(cJSON_GetArrayItem(off, 1), &en))
        return orthros_error(ORTHROS_EFORMAT, "tensor %s has no valid data_offsets", e->string);
    if (b > en)
        return orthros_error(ORTHROS_EFORMAT, "tensor %s: data_offsets [%zu, %zu] are reversed", e->string, b, en);
    if (en > data_size)
        return orthros_error(ORTHROS_EFORMAT, "tensor %s: data_offsets [%zu, %zu] run past the end of the data (%zu bytes)",
                             e->string, b, en, data_size);
    size_t need = numel * orthros_dtype_size(t->dtype);
    if (en - b != need)
        return orthros_error(ORTHROS_EFORMAT, "tensor %s holds %zu bytes but its shape and dtype %s need %zu", e->string,
                             en - b, dt->valuestring, need);
    t->nbytes = need;
    t->data = (const void *)(uintptr_t)b; /* an offset until the caller rebases it */
    return 0;
}

/* Validates a whole file image and appends its tensors to st. On success st owns `map` when `mapped`. */
static int st_add(orthros_st *st, const char *path, void *map, size_t size, int mapped)
{
    int rc = 0;
    cJSON *hdr = NULL;
    orthros_span *spans = NULL;
    orthros_st_tensor *tensors = NULL;
    char *pcopy = NULL;
    int n_new = 0;

    if (size == 0) {
        rc = orthros_error(ORTHROS_EFORMAT, "file is empty");
        goto fail;
    }
    if (size < 8) {
        rc = orthros_error(ORTHROS_EFORMAT, "file is %zu bytes, shorter than the 8-byte header length", size);
        goto fail;
    }
    const unsigned char *p = map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | p[i];
    if (hlen > size - 8) {
        rc = orthros_error(ORTHROS_EFORMAT, "header length %llu runs past the end of the file (%zu bytes)",
                           (unsigned long long)hlen, size);
        goto fail;
    }
    if (hlen == 0) {
        rc = orthros_error(ORTHROS_EFORMAT, "header is empty, not JSON");
        goto fail;
    }
    if ((rc = orthros_json_parse(&hdr, (const char *)p + 8, (size_t)hlen))) {
        rc = orthros_error_prefix(rc, "header");
        goto fail;
    }
    if (!cJSON_IsObject(hdr)) {
        rc = orthros_error(ORTHROS_EFORMAT, "header is not a JSON object");
        goto fail;
    }
    size_t data_size = size - 8 - (size_t)hlen;
    const unsigned char *data = p + 8 + hlen;
    int count = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, hdr) if (strcmp(e->string, "__metadata__")) count++;
    if (count > INT_MAX - 1 - st->n_tensors) {
        rc = orthros_error(ORTHROS_EFORMAT, "too many tensors");
        goto fail;
    }
    tensors = calloc((size_t)count + 1, sizeof *tensors);
    spans = calloc((size_t)count + 1, sizeof *spans);
    if (!tensors || !spans) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory reading the header");
        goto fail;
    }
    int n_spans = 0;
    cJSON_ArrayForEach(e, hdr)
    {
        if (!strcmp(e->string, "__metadata__")) continue;
        orthros_st_tensor *t = &tensors[n_new];
        if ((rc = parse_entry(t, e, data_size))) goto fail;
        size_t b = (size_t)(uintptr_t)t->data;
        t->data = data + b;
        t->file = st->n_files;
        t->name = strdup(e->string);
        n_new++;
        if (!t->name) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory reading the header");
            goto fail;
        }
        /* A zero-length tensor holds no bytes and cannot overlap; leaving it out of the sweep keeps it from
         * hiding an overlap of its neighbours. */
        if (t->nbytes) spans[n_spans++] = (orthros_span){b, b + t->nbytes, t->name};
    }
    if ((rc = orthros_spans_disjoint(spans, (size_t)n_spans))) goto fail;

    orthros_st_file *nf = realloc(st->files, (size_t)(st->n_files + 1) * sizeof *nf);
    if (!nf) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    st->files = nf;
    orthros_st_tensor *nt = realloc(st->tensors, (size_t)(st->n_tensors + n_new + 1) * sizeof *nt);
    if (!nt) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    st->tensors = nt;
    pcopy = strdup(path);
    if (!pcopy || (!st->source && !(st->source = strdup(path)))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    /* Keep the table sorted by name: lookups bisect, and a name in two files shows up as a neighbour. */
    memcpy(st->tensors + st->n_tensors, tensors, (size_t)n_new * sizeof *tensors);
    qsort(st->tensors, (size_t)(st->n_tensors + n_new), sizeof *st->tensors, tensor_cmp);
    for (int i = 1; i < st->n_tensors + n_new; i++)
        if (!strcmp(st->tensors[i - 1].name, st->tensors[i].name)) {
            /* One of the two is new (a header cannot name a tensor twice), the other is in an earlier file. */
            const orthros_st_tensor *old = st->tensors[i - 1].file == st->n_files ? &st->tensors[i] : &st->tensors[i - 1];
            rc = orthros_error(ORTHROS_EFORMAT, "tensor %s appears in two files (also in %s)", old->name,
                               st->files[old->file].path);
            /* Take the new tensors back out, restoring the table as it was. */
            int k = 0;
            for (int j = 0; j < st->n_tensors + n_new; j++)
                if (st->tensors[j].file != st->n_files) st->tensors[k++] = st->tensors[j];
            goto fail;
        }
    st->n_tensors += n_new;
    st->files[st->n_files++] = (orthros_st_file){pcopy, map, size, mapped};
    free(tensors);
    free(spans);
    cJSON_Delete(hdr);
    return 0;
fail:
    if (tensors)
        for (int i = 0; i < n_new; i++) free(tensors[i].name);
    free(tensors);
    free(spans);
    free(pcopy);
    cJSON_Delete(hdr);
    return orthros_error_prefix(rc, path);
}

int orthros_st_open_memory(orthros_st *st, const char *label, const void *data, size_t size)
{
    return st_add(st, label, (void *)(uintptr_t)data, size, 0);
}

int orthros_st_open_file(orthros_st *st, const char *path)
{
    void *map = NULL;
    size_t size = 0;
    int rc = orthros_map_file(&map, &size, path, 8);
    if (rc) return rc;
    /* st_add checks the size first, so a file too short to map is refused there with the reason. */
    rc = st_add(st, path, map, size, 1);
    if (rc && map) munmap(map, size);
    return rc;
}

int orthros_st_open_dir(orthros_st *st, const char *dir)
{
    memset(st, 0, sizeof *st);
    if (strlen(dir) > 4096 - 2 - NAME_MAX)
        return orthros_error(ORTHROS_EINVAL, "%.64s...: the model directory's path is too long", dir);
    char path[4096], idx[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    if (access(path, F_OK) == 0) return orthros_st_open_file(st, path);
    if (access(idx, F_OK) != 0)
        return orthros_error(ORTHROS_EIO, "%s: no model.safetensors or model.safetensors.index.json", dir);
    char *text = NULL;
    cJSON *root = NULL;
    int rc = orthros_read_text_file(&text, idx, 64u << 20);
    if (rc) return rc;
    if ((rc = orthros_json_parse(&root, text, strlen(text)))) goto fail_idx;
    const cJSON *wm = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(wm)) {
        rc = orthros_error(ORTHROS_EFORMAT, "not a JSON object with a weight_map object");
        goto fail_idx;
    }
    if (!(st->source = strdup(idx))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, wm)
    {
        /* A name longer than NAME_MAX would be cut by snprintf below and could then stand for another file. */
        if (!cJSON_IsString(e) || !e->valuestring[0] || strlen(e->valuestring) > NAME_MAX ||
            strchr(e->valuestring, '/') || !strcmp(e->valuestring, ".") || !strcmp(e->valuestring, "..")) {
            rc = orthros_error(ORTHROS_EFORMAT, "weight_map entry %s is not a file name", e->string);
            goto fail_idx;
        }
        snprintf(path, sizeof path, "%s/%s", dir, e->valuestring);
        int seen = 0;
        for (int i = 0; i < st->n_files && !seen; i++) seen = !strcmp(st->files[i].path, path);
        if (!seen && (rc = orthros_st_open_file(st, path))) goto fail;
    }
    cJSON_ArrayForEach(e, wm)
    {
        const orthros_st_tensor *t = orthros_st_find(st, e->string);
        snprintf(path, sizeof path, "%s/%s", dir, e->valuestring);
        if (!t || strcmp(st->files[t->file].path, path)) {
            rc = orthros_error(ORTHROS_EFORMAT, "names tensor %s in %s, which does not hold it", e->string,
                               e->valuestring);
            goto fail_idx;
        }
    }
    goto fail;
fail_idx:
    rc = orthros_error_prefix(rc, idx);
fail:
    cJSON_Delete(root);
    free(text);
    if (rc) orthros_st_close(st);
    return rc;
}

const orthros_st_tensor *orthros_st_find(const orthros_st *st, const char *name)
{
    if (!st->n_tensors) return NULL;
    orthros_st_tensor key = {.name = (char *)name};
    return bsearch(&key, st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, tensor_cmp);
}

const char *orthros_st_tensor_file(const orthros_st *st, const orthros_st_tensor *t)
{
    return st->files[t->file].path;
}

void orthros_st_tensor_f32(const orthros_st_tensor *t, float *out)
{
    size_t n = t->nbytes / orthros_dtype_size(t->dtype);
    if (t->dtype == ORTHROS_DTYPE_F32) {
        memcpy(out, t->data, t->nbytes);
        return;
    }
    const unsigned char *p = t->data;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        out[i] = t->dtype == ORTHROS_DTYPE_BF16 ? orthros_bf16_to_f32(h) : orthros_f16_to_f32(h);
    }
}

void orthros_st_close(orthros_st *st)
{
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].mapped && st->files[i].map) munmap(st->files[i].map, st->files[i].size);
        free(st->files[i].path);
    }
    free(st->tensors);
    free(st->files);
    free(st->source);
    memset(st, 0, sizeof *st);
}
