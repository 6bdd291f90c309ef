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
/* Whether the tests run under CI (CI set, and not "false"): a test whose model or file is missing fails there and
 * skips elsewhere. */
int tu_under_ci(void);

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
/* The same with window gates (model.layers.{i}.self_attn.window_gate): random in [0.05, 1] per query head and layer,
 * or one of the malformed forms the loader must refuse. */
enum { TU_GATES_NONE, TU_GATES_RANDOM, TU_GATES_ZERO, TU_GATES_NAN, TU_GATES_SHAPE };
int tu_write_checkpoint_gated(const char *dir, const orthros_model_config *cfg, uint64_t seed, orthros_dtype dtype,
                              int hedgehog_half, int window_gates);
/* A tensor to write: its name, shape and fp32 values. */
typedef struct {
    char name[128];
    int ndim;
    int64_t shape[3];
    float *data;
} tu_tensor;
size_t tu_tensor_numel(const tu_tensor *t);
/* Writes ts[n] as a safetensors file in dtype (F32, BF16 or F16, rounded to nearest even), with the JSON object
 * text `metadata` as its __metadata__ when not NULL. 0 or -1. */
int tu_write_tensors(const char *path, const tu_tensor *ts, int n, orthros_dtype dtype, const char *metadata);
/* fp32 -> IEEE half, rounded to nearest even. */
uint16_t tu_f32_to_f16(float f);
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
/* A reference file's JSON array of integers (of numbers) as a malloc'd array, *n its length; NULL (*n 0) when arr is
 * not such an array, so that a test fails on a malformed reference instead of reading past it. */
int32_t *tu_json_ints(const cJSON *arr, int *n);
double *tu_json_nums(const cJSON *arr, int *n);
/* o's number at key, NaN when absent or not a number (so that a comparison with it fails); its string, "" then. */
double tu_json_num(const cJSON *o, const char *key);
const char *tu_json_str(const cJSON *o, const char *key);
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
/* Seconds after which a child of tu_run_capture is killed by SIGALRM (its status then 128 + 14), so that a command
 * that hangs fails the test instead of holding it; 0 (the default): no bound. */
extern unsigned tu_child_alarm;
/* The first line of a file that starts with `prefix` (malloc'd, without its newline), or NULL. */
char *tu_line_starting(const char *path, const char *prefix);
/* `orthros generate`'s JSON line in a log without its "timing" (which differs from run to run): the ids and the text,
 * to compare (malloc'd), or NULL. */
char *tu_generated_line(const char *log);

/* Per row of [rows][V] logits: how many rows' argmax agree, the largest |ref - got| (infinite on a NaN) and the
 * range of ref. */
void tu_logit_agreement(const float *ref, const float *got, int rows, int V, int *agree, double *max_err, double *range);

/* The attention schedules the model-level tests run: every kind, both orthros tails, every feature map. */
typedef struct {
    const char *label, *arch;
    int fmap, tail, window, hybrid_every, fmap_rope, local_window; /* -1: not set */
} tu_arch_case;
extern const tu_arch_case tu_arch_cases[];
extern const size_t tu_n_arch_cases;
orthros_arch_opts tu_arch_case_opts(const tu_arch_case *c);

/* The logits of every position of tok[n] (malloc'd [n][*V]) from spec loaded on be under ao (seed for presets),
 * then switched to the schedule `then` when not NULL (orthros_model_set_arch: the same weights), prefilled in
 * chunks of `chunk`; NULL on an error (recorded, as orthros_last_error() says). */
float *tu_model_logits(orthros_backend *be, const char *spec, const orthros_arch_opts *ao, uint64_t seed,
                       const char *then, const int32_t *tok, int n, int chunk, int *V);
/* 1 when another process holds the result-file lock of json (flock on json.lock), tried without taking it. */
int tu_lock_held(const char *json);

/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp). */
char *tu_tempdir(void);
/* Removes path and all under it (files, folders, links themselves; never a link's target); 0 when done. */
int tu_remove_tree(const char *path);

#endif
