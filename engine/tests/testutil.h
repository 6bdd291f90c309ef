/* Helpers shared by the engine tests: a tiny check framework, random data, and a writer of small
 * Llama-format checkpoints (config.json + model.safetensors) for building test models and malformed files. */
#ifndef ORTHROS_TESTUTIL_H
#define ORTHROS_TESTUTIL_H

#include "backend.h"

#include <cjson/cJSON.h>
#include <stdio.h>

extern int tu_passed, tu_failed;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            tu_passed++;                                                                                               \
        } else {                                                                                                       \
            tu_failed++;                                                                                               \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
        }                                                                                                              \
    } while (0)

/* Prints "N passed, N failed" and returns the exit status. */
int tu_finish(void);

/* Fills x[n] with uniform values in [-scale, scale] from a seeded generator. */
void tu_random(float *x, size_t n, uint64_t seed, float scale);
/* Largest |a - b| over n values. */
double tu_max_abs_diff(const float *a, const float *b, size_t n);

/* A config.json text for cfg (classic keys), with an optional raw `orthros` object appended. */
char *tu_config_json(const orthros_model_config *cfg, const char *orthros_obj);
/* Writes dir/config.json and dir/model.safetensors holding every tensor of cfg, random, in dtype (F32 or BF16). hedgehog_half
 * > 0 adds feature-map tensors of that many columns. Returns 0 or -1. */
int tu_write_checkpoint(const char *dir, const orthros_model_config *cfg, uint64_t seed, orthros_dtype dtype,
                        int hedgehog_half);
/* Writes a safetensors file from a raw header text and raw data bytes (header length as given in hlen_override
 * when nonzero, else the true length). */
int tu_write_raw_safetensors(const char *path, const char *header, uint64_t hlen_override, const void *data,
                             size_t data_len);
int tu_write_text(const char *path, const char *text);
/* root printed as JSON into path; 0, or -1 when it cannot be printed or written. */
int tu_write_json(const char *path, const cJSON *root);
/* A whole file as a NUL-terminated string (malloc'd; *len, if not NULL, gets its length), or NULL. */
char *tu_slurp(const char *path, size_t *len);
/* A file parsed as JSON, or NULL. */
cJSON *tu_load_json(const char *path);
/* Starts argv (argv[0] the program) with stdout and stderr into log; tu_run waits and returns its exit status
 * (128 + the signal when killed). */
int tu_spawn(char *const *argv, const char *log);
int tu_run(char *const *argv, const char *log);
/* Runs bin with the NULL-terminated arguments after it (at most 62), output into log; its exit status. */
int tu_run_args(const char *bin, const char *log, const char *first, ...);
/* 1 when log holds needle; else 0, after printing the log to stderr. */
int tu_log_has(const char *log, const char *needle);

/* Runs argv with stdout into out_path and stderr into err_path (either NULL: /dev/null) and, if env is not NULL, one
 * more "NAME=VALUE" in its environment; returns its exit status (128 + the signal when killed). */
int tu_run_capture(char *const *argv, const char *env, const char *out_path, const char *err_path);
/* The first line of a file that starts with `prefix` (malloc'd, without its newline), or NULL. */
char *tu_line_starting(const char *path, const char *prefix);

/* Per row of [rows][V] logits: how many rows' argmax agree, the largest |ref - got| (infinite on a NaN) and the
 * range of ref. */
void tu_logit_agreement(const float *ref, const float *got, int rows, int V, int *agree, double *max_err, double *range);

/* The attention schedules the model-level tests run: every kind, both orthros tails, every feature map. */
typedef struct {
    const char *label, *arch;
    int fmap, tail, window, hybrid_every;
} tu_arch_case;
extern const tu_arch_case tu_arch_cases[];
extern const size_t tu_n_arch_cases;
orthros_arch_opts tu_arch_case_opts(const tu_arch_case *c);

/* 1 when another process holds the result-file lock of json (flock on json.lock), tried without taking it. */
int tu_lock_held(const char *json);

/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp). */
char *tu_tempdir(void);

#endif
