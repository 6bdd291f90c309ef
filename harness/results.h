/* Self-describing result files, the part every kind shares: the `tool` / `run` / `environment` header, loading
 * with validation, and atomic writes. The kinds themselves are typed in result_bench.h (bench files, written by
 * `orthros bench` and by the kernel benchmarks, and the PyTorch SDPA anchor files) and result_eval.h (eval
 * files).
 *
 * Every reader validates before it returns: a file or a field that does not match the schema is refused with
 * ORTHROS_EFORMAT and one message naming the file, the JSON path of the first offending field and what is
 * wrong ("r.json: measurements[3].samples[1]: not a positive finite number"); nothing is returned half-read. */
#ifndef ORTHROS_RESULTS_H
#define ORTHROS_RESULTS_H

#include "orthros.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define ORTHROS_RESULT_SCHEMA_VERSION 1
/* Result files are refused past this size (a million cells of samples fit well under it). */
#define ORTHROS_RESULT_MAX_BYTES ((size_t)1 << 30)

typedef enum { ORTHROS_RESULT_BENCH = 0, ORTHROS_RESULT_EVAL = 1, ORTHROS_RESULT_ANCHORS = 2 } orthros_result_kind;

/* What a reader keeps of a file's header: its provenance, typed. */
typedef struct {
    orthros_result_kind kind;
    int schema_version;
    char git_commit[48];   /* "unknown" when not recorded */
    int dirty;
    char device_name[128]; /* environment.device.name: the GPU or CPU the file was measured on */
    char backend[16];      /* environment.backend: cpu or cuda */
    int world_size;        /* environment.world_size: the ranks of the run (tensor parallel); 0 when not recorded */
    uint64_t seed;
} orthros_result_header;

/* Result files name at most this many ranks of a tensor-parallel run. */
#define ORTHROS_RESULT_MAX_RANKS 4096

/* A new result object: schema_version, kind ("bench" / "eval"), tool, run (argv, start time, seed) and
 * environment (host, CPU, threads, load, governor, the backend's device and, with a backend, world_size and
 * ranks: rank, host, backend, device name, memory, PCI bus id and UUID of every rank of a run of `tp` ranks,
 * orthros_tp_devices). The caller adds run.config and the payload. NULL when out of memory. */
cJSON *orthros_result_new(const char *kind, int argc, char **argv, uint64_t seed, const orthros_backend *be, int tp);
/* Records the end of the run in a header made by orthros_result_new: run.end_time and the load average. */
void orthros_result_finish(cJSON *root);
/* Writes root through orthros_write_file_atomic ("-" is stdout). */
int orthros_result_write(const char *path, const cJSON *root);
/* Parses a result file. *out is NULL (and 0 returned) when the file does not exist and `missing_ok`. The file
 * must be JSON with an object at the top and no key twice in any object; the kind-specific readers check the
 * rest. */
int orthros_result_load(cJSON **out, const char *path, int missing_ok);
/* The same from text[0..len) in memory (name for messages). */
int orthros_result_parse(cJSON **out, const char *text, size_t len, const char *name);
/* The kind of a parsed file (anchor files of bench/kernels/anchors.py, which predate the header, are recognised
 * by their "cases" list) and its header. */
int orthros_result_header_read(orthros_result_header *h, const cJSON *root, const char *path);

/* "NVIDIA H200", "NVIDIA H200 (tp 2)" for a file of a 2-rank world, or "unknown device": rank 0's device, for
 * captions and provenance lines. */
void orthros_result_device_text(char *buf, size_t n, const orthros_result_header *h);

/* ---- the typed kinds: what every kind's reader and writer share ---- */

/* A kind of typed result file, described once (orthros_bench_type in result_bench.h, orthros_eval_type in
 * result_eval.h): the scaffolding below reads and writes it, and the lifecycle of a command's result file
 * (result_run.h) opens, resumes and saves it. */
typedef struct {
    const char *kind;      /* the header's kind: "bench", "eval" */
    size_t size;           /* bytes of the typed file (sizeof (orthros_bench_file), ...) */
    void (*init)(void *f);
    void (*free)(void *f); /* frees what f holds; f is initialised again */
    /* Fills an initialised f from a parsed document, validating as it reads (name for messages). On failure f may
     * hold part of the file: the caller frees it. */
    int (*from_json)(void *f, const cJSON *root, const char *name);
    /* The document of f; NULL when out of memory. */
    cJSON *(*to_json)(const void *f);
    /* The file's header as read, and the header objects kept for rewriting it. */
    orthros_result_header *(*hdr)(void *f);
    cJSON **(*header)(void *f);
    /* For --resume: 0 when a file of configuration `old` can be resumed by a run of configuration `now`, else
     * ORTHROS_EINVAL naming the first field that differs. */
    int (*same_config)(const void *old, const char *old_name, const void *now, const char *now_name);
    /* The cells, for orthros_result_keep_cells: how many f holds; cell i's key (one a cell in a valid file, at most
     * ORTHROS_RESULT_KEY_MAX bytes with its NUL); whether a resumed run keeps f's cell i (NULL: every cell); and
     * old's cell i added to now, taking its buffers. */
    size_t (*n_cells)(const void *f);
    void (*cell_key)(const void *f, size_t i, char *buf, size_t cap);
    int (*cell_kept)(const void *f, size_t i);
    int (*cell_add)(void *now, void *old, size_t i);
} orthros_result_type;

#define ORTHROS_RESULT_KEY_MAX 512

/* For --resume: the cells of `old` (a file of the same configuration) that a resumed run keeps and `now` does not
 * hold yet (by key), moved to `now`: at the start, and before each rewrite, where another writer may have added
 * cells (result_run.h). 0, or ORTHROS_ENOMEM. */
int orthros_result_keep_cells(const orthros_result_type *t, void *now, void *old);

/* f (of kind t) from a parsed document: initialised, filled, and freed again when the document is refused, so
 * that nothing is returned half-read. */
int orthros_result_from_json(const orthros_result_type *t, void *f, const cJSON *root, const char *name);
/* Reads and validates path into f. With missing_ok, a missing file gives *exists = 0 (exists may be NULL
 * otherwise), an empty f and 0. */
int orthros_result_read_file(const orthros_result_type *t, void *f, const char *path, int missing_ok, int *exists);
/* Writes f to path through orthros_result_write ("-" is stdout). */
int orthros_result_write_file(const orthros_result_type *t, const void *f, const char *path);
/* Adds a number to o, or null where it is not finite (NAN: not measured; the readers read null back as NAN with
 * ORTHROS_JR_NULL_NAN). */
void orthros_json_add_num(cJSON *o, const char *key, double v);
/* For the configuration checks of resume and compare: 0 when the two values agree, else ORTHROS_EINVAL with
 * "A and B differ in LABEL: a against b". */
int orthros_result_same_str(const char *a_name, const char *b_name, const char *label, const char *a, const char *b);
int orthros_result_same_num(const char *a_name, const char *b_name, const char *label, double a, double b);
/* For --resume: 0 when the file at path (its read header hdr and header objects old, NULL if none) was written by
 * this build's commit with the kernel versions of the new header now (environment.device.kernels), else
 * ORTHROS_EINVAL naming what differs: cells of two versions of the code in one file would compare a new kernel
 * with an old one. A commit "unknown" on both sides cannot be told apart and passes. */
int orthros_result_same_code(const orthros_result_header *hdr, const cJSON *old, const cJSON *now, const char *path);

/* The first key that appears twice in one object of the tree o (cJSON keeps both and every lookup returns the
 * first), or NULL; for readers of other JSON inputs (the recall tasks' JSONL). */
const char *orthros_json_duplicate_key(const cJSON *o);

/* The header objects of a parsed file kept as written (tool, run without its config, environment), for rewriting
 * the file; NULL when out of memory. */
cJSON *orthros_result_header_keep(const cJSON *root);
/* A new document of `kind` from a kept header (NULL: empty), with `config` (owned) as run.config. */
cJSON *orthros_result_header_emit(const cJSON *kept, const char *kind, cJSON *config);

/* ---- reading fields with validation (used by the kind-specific readers) ---- */

/* The position being read, for messages: file name and the JSON path so far. */
typedef struct {
    const char *file;
    char path[256];
    size_t len;
} orthros_jr;

#define ORTHROS_JR_REQUIRED 1 /* absent is an error */
#define ORTHROS_JR_NULL_NAN 2 /* numbers: null reads as NAN (cJSON writes NAN as null) */
#define ORTHROS_JR_POSITIVE 4 /* numbers: > 0 */

void orthros_jr_init(orthros_jr *j, const char *file);
/* Appends ".key" or "[i]" to the path and returns the length to restore with orthros_jr_pop. */
size_t orthros_jr_push_key(orthros_jr *j, const char *key);
size_t orthros_jr_push_index(orthros_jr *j, int i);
void orthros_jr_pop(orthros_jr *j, size_t len);
/* Records "FILE: PATH[.key]: MSG" and returns ORTHROS_EFORMAT. */
int orthros_jr_fail(const orthros_jr *j, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#if defined(__clang_analyzer__) && !defined(ORTHROS_RESULTS_IMPL)
#define orthros_jr_fail(j, key, ...) (orthros_jr_fail((j), (key), __VA_ARGS__), ORTHROS_EFORMAT) /* ci/analyze.sh */
#endif
/* An object (no key twice) / an array at key; *out NULL when absent and not required. */
int orthros_jr_object(const cJSON **out, const orthros_jr *j, const cJSON *o, const char *key, int flags);
int orthros_jr_array(const cJSON **out, const orthros_jr *j, const cJSON *o, const char *key, int flags);
/* A string copied into dst[cap] (too long, or holding a control character, is an error); dst unchanged when
 * absent and not required. */
int orthros_jr_string(char *dst, size_t cap, const orthros_jr *j, const cJSON *o, const char *key, int flags);
/* The same, malloc'd (*dst NULL when absent). */
int orthros_jr_strdup(char **dst, const orthros_jr *j, const cJSON *o, const char *key, int flags);
/* An integral number in [lo, hi]. */
int orthros_jr_int(int64_t *dst, const orthros_jr *j, const cJSON *o, const char *key, int64_t lo, int64_t hi, int flags);
/* A finite number in [lo, hi] (with ORTHROS_JR_POSITIVE, also > 0). */
int orthros_jr_num(double *dst, const orthros_jr *j, const cJSON *o, const char *key, double lo, double hi, int flags);
int orthros_jr_bool(int *dst, const orthros_jr *j, const cJSON *o, const char *key, int flags);
/* An array of finite numbers > 0 (timing samples); *x malloc'd. */
int orthros_jr_positive_array(double **x, size_t *n, const orthros_jr *j, const cJSON *o, const char *key, int flags);

/* The schedule options a run was given, as bench and eval files record them in run.config: -1 (eps -1, an empty
 * feature map) where not given, so that the checkpoint's or the default applied. */
typedef struct {
    int chunk, tail, window, hybrid_every, feature_dim;
    double eps;
    char feature_map[16];
    char feature_map_rope[16]; /* --feature-map-rope; files before it have none ("") */
    int local_window;          /* --local-window; files before it have none (-1) */
} orthros_sched_config;

/* All not given. */
void orthros_sched_config_init(orthros_sched_config *s);
/* 0 when a and b agree, else ORTHROS_EINVAL naming the first option that differs (orthros_result_same_*). */
int orthros_sched_config_same(const orthros_sched_config *a, const char *a_name, const orthros_sched_config *b,
                              const char *b_name);
/* Reads the keys present in the config object o (j at o); absent ones stay as they are. */
int orthros_sched_config_read(orthros_sched_config *s, const orthros_jr *j, const cJSON *o);
/* Adds chunk, tail, window, hybrid_every, feature_dim, eps, feature_map, feature_map_rope and local_window to o. */
void orthros_sched_config_write(cJSON *o, const orthros_sched_config *s);

#endif
