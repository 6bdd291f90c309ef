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
    int mapped;           /* 1: our mapping, unmapped on close; 0: the caller's memory (orthros_st_open_memory) */
} orthros_st_file;

typedef struct {
    orthros_st_file *files;
    int n_files;
    orthros_st_tensor *tensors; /* sorted by name, names unique across files */
    int n_tensors;
    char *source;         /* what was opened: model.safetensors, the index, or the first file; for messages */
} orthros_st;

/* Opens DIR/model.safetensors, or the shards that DIR/model.safetensors.index.json names. */
int orthros_st_open_dir(orthros_st *st, const char *dir);
/* Opens one safetensors file (appending its tensors); st must be zeroed before the first call. */
int orthros_st_open_file(orthros_st *st, const char *path);
/* Parses one safetensors file held in memory (appending its tensors), with `label` standing for its path in
 * messages. The tensors point into data, which the caller keeps alive until orthros_st_close. */
int orthros_st_open_memory(orthros_st *st, const char *label, const void *data, size_t size);
const orthros_st_tensor *orthros_st_find(const orthros_st *st, const char *name);
void orthros_st_close(orthros_st *st);
const char *orthros_st_tensor_file(const orthros_st *st, const orthros_st_tensor *t);
/* out[numel] = the tensor's values as fp32 (F32, BF16 or F16; the data need not be aligned). */
void orthros_st_tensor_f32(const orthros_st_tensor *t, float *out);

#endif
