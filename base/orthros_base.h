/* The base of the project, below both the engine and the kernels: error codes and the last-error message, the
 * limits and enums a kernel needs (the feature maps, the largest head dim), the bf16 / fp16 conversions and the
 * counter-based uniform generator that every backend fills tensors with, and the one whole-file reader. Plain
 * C11, and includable from CUDA (orthros_uniform is __host__ __device__ there). engine/orthros.h includes it;
 * kernels/ include nothing else of the project. Built as the orthros_base library (base/error.c,
 * base/numeric.c, base/file.c). */
#ifndef ORTHROS_BASE_H
#define ORTHROS_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ORTHROS_HD __host__ __device__
#else
#define ORTHROS_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHROS_MAX_LAYERS 512
#define ORTHROS_MAX_HEAD_DIM 256

enum {
    ORTHROS_OK = 0,
    ORTHROS_EINVAL = -1,      /* bad argument or option value */
    ORTHROS_EIO = -2,         /* a file could not be opened, read or mapped */
    ORTHROS_EFORMAT = -3,     /* a file is malformed */
    ORTHROS_ENOMEM = -4,      /* host or device memory exhausted, or a request that cannot fit */
    ORTHROS_EUNSUPPORTED = -5,/* valid but not supported (dtype, backend not built) */
    ORTHROS_EDEVICE = -6,     /* CUDA or cuBLAS failure */
    ORTHROS_ERANGE = -7,      /* a value out of range (token id, length) */
};

const char *orthros_strerror(int code);
/* Records a formatted message for the calling thread and returns code, so that callers can write
 * `return orthros_error(ORTHROS_EINVAL, "...")`. */
int orthros_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *orthros_last_error(void);
/* Prepends "prefix: " to the recorded message (for adding the file name) and returns code. */
int orthros_error_prefix(int code, const char *prefix);
#if defined(__clang_analyzer__) && !defined(ORTHROS_ERROR_IMPL)
/* The static analyzer (ci/analyze.sh) reads one file at a time: it is told here that both return their code, so
 * that it does not follow paths where a failed call reads as success. */
#define orthros_error(code, ...) (orthros_error((code), __VA_ARGS__), (code))
#define orthros_error_prefix(code, prefix) (orthros_error_prefix((code), (prefix)), (code))
#endif

/* Opens a regular file read-only (a folder, a FIFO or a device is refused with a message naming it; a FIFO never
 * blocks the open) and returns its descriptor, its size in *size, or a negative code with the message. With exists
 * not NULL, a missing file sets *exists = 0 and returns ORTHROS_EIO with no message (base/file.c). */
int orthros_open_regular(const char *path, size_t *size, int *exists);
/* The same file mapped read-only and private in *map when its size is min_map or more and not 0 (else *map = NULL,
 * for the caller to refuse with its own reason); the size in *size; the caller unmaps it. */
int orthros_map_file(void **map, size_t *size, const char *path, size_t min_map);
/* Reads a whole regular file (a folder, a FIFO or a device is refused with a message naming it) into *out,
 * NUL-terminated, *len (when not NULL) its length; the caller frees it. Fails with ORTHROS_EIO naming the file when
 * it cannot be read and ORTHROS_EFORMAT when it is larger than max_bytes. With exists not NULL, a missing file sets
 * *exists = 0 and returns 0 (base/file.c). */
int orthros_read_file(char **out, size_t *len, const char *path, size_t max_bytes, int *exists);
/* The same for a text read as a C string (config.json, an index, tokenizer.json): a file holding a NUL byte is
 * refused, since what follows it would be silently ignored. */
int orthros_read_text_file(char **out, const char *path, size_t max_bytes);

/* The feature maps phi of linear attention (DESIGN section 2). */
typedef enum {
    ORTHROS_FMAP_ELU1 = 0,
    ORTHROS_FMAP_RELU = 1,
    ORTHROS_FMAP_HEDGEHOG = 2,
} orthros_fmap;

float orthros_bf16_to_f32(uint16_t h);
uint16_t orthros_f32_to_bf16(float f);     /* round to nearest even; NaN stays NaN */
float orthros_f16_to_f32(uint16_t h);

/* The qsort order of doubles (ascending; a NaN compares equal to everything). */
int orthros_cmp_double(const void *a, const void *b);
/* Sorts x[n] (n >= 1) in place and returns its median: the middle value, or the mean of the two middle ones. */
double orthros_median_sorting(double *x, size_t n);

/* Counter-based uniform in [0, 1) from (seed, i): splitmix64 of seed ^ golden * (i + 1), top 24 bits. */
static inline ORTHROS_HD float orthros_uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

#ifdef __cplusplus
}
#endif
#endif
