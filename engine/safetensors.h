/* Memory-mapped safetensors checkpoints, single-file or sharded (model.safetensors.index.json), validated
 * in full before any tensor is used: a malformed file is refused with a message naming it. */
#ifndef ORTHROS_SAFETENSORS_H
#define ORTHROS_SAFETENSORS_H

#include "backend.h"

#define ORTHROS_ST_MAX_DIMS 8

typedef struct {
    char *name;
    orthros_dtype dtype;
    int ndim;
    int64_t shape[ORTHROS_ST_MAX_DIMS];
    const void *data;     /* inside the mapping */
    size_t nbytes;
    int file;             /* index into files */
} orthros_st_tensor;

typedef struct {
    char *path;
    void *map;
    size_t size;
} orthros_st_file;

typedef struct {
    orthros_st_file *files;
    int n_files;
    orthros_st_tensor *tensors;
    int n_tensors;
} orthros_st;

/* Opens DIR/model.safetensors, or the shards that DIR/model.safetensors.index.json names. */
int orthros_st_open_dir(orthros_st *st, const char *dir);
/* Opens one safetensors file (appending its tensors); exposed for tests. */
int orthros_st_open_file(orthros_st *st, const char *path);
const orthros_st_tensor *orthros_st_find(const orthros_st *st, const char *name);
void orthros_st_close(orthros_st *st);
const char *orthros_st_tensor_file(const orthros_st *st, const orthros_st_tensor *t);

/* Reads a whole small text file (config.json, index.json); NUL-terminated, caller frees. */
int orthros_read_text_file(char **out, const char *path, size_t max_bytes);

#endif
