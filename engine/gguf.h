/* GGUF files (llama.cpp's single-file model format, versions 2 and 3; the spec is ggml's docs/gguf.md):
 * a header, metadata key/value pairs, tensor infos, then the tensor data at `general.alignment`.
 * Everything is validated before use (every count, length and offset against the buffer, overflow-safe), so
 * that a malformed file is refused with one message and nothing reads past the buffer. Tensors of types
 * F32, F16, BF16, Q8_0, Q4_0 and Q4_1 dequantise to float32; other ggml types are refused by name. */
#ifndef ORTHROS_GGUF_H
#define ORTHROS_GGUF_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, as the file writes them. */
enum {
    ORTHROS_GGUF_UINT8 = 0,
    ORTHROS_GGUF_INT8 = 1,
    ORTHROS_GGUF_UINT16 = 2,
    ORTHROS_GGUF_INT16 = 3,
    ORTHROS_GGUF_UINT32 = 4,
    ORTHROS_GGUF_INT32 = 5,
    ORTHROS_GGUF_FLOAT32 = 6,
    ORTHROS_GGUF_BOOL = 7,
    ORTHROS_GGUF_STRING = 8,
    ORTHROS_GGUF_ARRAY = 9,
    ORTHROS_GGUF_UINT64 = 10,
    ORTHROS_GGUF_INT64 = 11,
    ORTHROS_GGUF_FLOAT64 = 12,
};

/* ggml tensor types the loader dequantises (others are known by name only). */
enum {
    ORTHROS_GGML_F32 = 0,
    ORTHROS_GGML_F16 = 1,
    ORTHROS_GGML_Q4_0 = 2,
    ORTHROS_GGML_Q4_1 = 3,
    ORTHROS_GGML_Q8_0 = 8,
    ORTHROS_GGML_BF16 = 30,
};

#define ORTHROS_GGUF_MAX_DIMS 4

/* A string inside the buffer: not NUL-terminated. */
typedef struct {
    const char *p;
    size_t len;
} orthros_gguf_str;

typedef struct {
    char *key;                  /* NUL-terminated copy */
    uint32_t type;              /* ORTHROS_GGUF_* */
    uint32_t elem_type;         /* ARRAY: the element type */
    uint64_t n;                 /* ARRAY: element count */
    const uint8_t *data;        /* scalar: its little-endian bytes; ARRAY of fixed-size elements: the first one */
    orthros_gguf_str str;       /* STRING */
    orthros_gguf_str *strs;     /* ARRAY of STRING: n entries (owned) */
} orthros_gguf_kv;

typedef struct {
    char *name;                 /* NUL-terminated copy */
    uint32_t type;              /* ggml type */
    int ndim;
    int64_t ne[ORTHROS_GGUF_MAX_DIMS]; /* ne[0] is the contiguous dimension (a row); unused ones are 1 */
    uint64_t offset;            /* from the start of the data section */
    size_t nbytes;
    const uint8_t *data;        /* inside the buffer */
} orthros_gguf_tensor;

/* An open-addressing hash of names to entry indexes (-1: empty), sized at parse time. */
typedef struct {
    int64_t *slot;
    size_t mask;
} orthros_gguf_name_index;

typedef struct orthros_gguf {
    char *name;                 /* the file name, for messages */
    const uint8_t *buf;
    size_t size;
    void *map;                  /* the mapping when opened from a file */
    uint32_t version;
    uint32_t alignment;
    size_t data_offset;         /* start of the data section */
    orthros_gguf_kv *kv;
    int64_t n_kv;
    orthros_gguf_tensor *tensors;
    int64_t n_tensors;
    orthros_gguf_name_index kv_index, tensor_index; /* key / tensor name -> index */
} orthros_gguf;

/* Parses a GGUF held in memory (data must outlive *out; nothing is copied but names). `name` labels
 * messages. On error *out is NULL and orthros_last_error() names the problem (not the file). This is the
 * entry point for fuzzing the parser. */
int orthros_gguf_parse_buffer(orthros_gguf **out, const void *data, size_t size, const char *name);
/* Maps and parses a file; errors are prefixed with its path. */
int orthros_gguf_open(orthros_gguf **out, const char *path);
void orthros_gguf_free(orthros_gguf *g);

const orthros_gguf_kv *orthros_gguf_find(const orthros_gguf *g, const char *key);
/* Typed getters: 0 and *out set; ORTHROS_EFORMAT when present with another type or out of range; when absent,
 * ORTHROS_EFORMAT if `required`, else 0 with *out untouched. Integers of any width are accepted. */
int orthros_gguf_get_int(const orthros_gguf *g, const char *key, int64_t *out, int required, int64_t lo, int64_t hi);
int orthros_gguf_get_float(const orthros_gguf *g, const char *key, double *out, int required);
int orthros_gguf_get_bool(const orthros_gguf *g, const char *key, int *out);
/* A STRING value (pointer into the buffer) or NULL when absent; ORTHROS_EFORMAT when not a string. */
int orthros_gguf_get_str(const orthros_gguf *g, const char *key, orthros_gguf_str *out);

const orthros_gguf_tensor *orthros_gguf_find_tensor(const orthros_gguf *g, const char *name);
const char *orthros_ggml_type_name(uint32_t type);
int orthros_ggml_type_supported(uint32_t type);
/* dst[numel] = the tensor's values as float32 (ORTHROS_EUNSUPPORTED, naming the type, for other types). */
int orthros_gguf_dequantize(float *dst, const orthros_gguf_tensor *t);
/* Number of elements of a tensor. */
size_t orthros_gguf_numel(const orthros_gguf_tensor *t);

/* The model config from `general.architecture` == "llama" and its llama.* keys (vocab from the token list,
 * tied embeddings when there is no output.weight). */
int orthros_gguf_model_config(orthros_model_config *cfg, const orthros_gguf *g);
/* Applies the file's RoPE frequency changes to inv_freq[head_dim / 2]: linear scaling (rope.scaling.type
 * "linear", divide by rope.scaling.factor) and per-frequency factors (the rope_freqs.weight tensor that
 * llama3 conversions write: divide by factor i). Other scaling types are refused. */
int orthros_gguf_rope_adjust(float *inv_freq, int half, const orthros_gguf *g);
/* The GGUF tensor name that holds the Hugging Face tensor hf_name, and how its rows are permuted:
 * *permute_heads is 0, or the head count of the RoPE row interleave that llama.cpp's converter applies to
 * q_proj / k_proj (which the loader undoes). Returns 0, or ORTHROS_EINVAL for a name with no GGUF twin. */
int orthros_gguf_tensor_name(char *out, size_t cap, const char *hf_name, const orthros_model_config *cfg,
                             int *permute_heads);
/* Undoes the converter's permutation in place: rows [heads][d/2][2] -> [heads][2][d/2], each of `cols`
 * floats (tmp: rows * cols floats of scratch). */
void orthros_gguf_unpermute_rows(float *w, float *tmp, int heads, int head_dim, size_t cols);

#ifdef __cplusplus
}
#endif
#endif
