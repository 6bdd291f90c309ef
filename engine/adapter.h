/* Adapters (docs/converted-models.md#adapters): a base checkpoint plus a small safetensors of feature maps,
 * window gates and low-rank deltas, merged into the base's weights at load in fp32.
 *
 * Two ways in: a model directory whose config.json has an `orthros_base` object (the base by path and sha256,
 * its `orthros` schedule, and adapter.safetensors beside it), or `--adapter FILE.safetensors` (opts->adapter)
 * over any model spec, presets included. The loader (engine/model.c) calls, in order:
 *   orthros_adapter_open      before anything is read: the spec to load weights from becomes the base;
 *   orthros_adapter_schedule  after the base's config: the adapter's `orthros` object replaces the base's;
 *   orthros_adapter_check     after the schedule: every tensor against the model, before any memory is claimed;
 *   orthros_adapter_tensor    per feature map and window gate: the adapter's tensor replaces the checkpoint's;
 *   orthros_adapter_merge     per weight, on the whole fp32 tensor in Hugging Face layout, before the rank's part
 *                             is uploaded (so --tp shards what was merged, and cuda converts to bf16 after);
 *   orthros_adapter_all_merged at the end: every delta went into a weight.
 * Every error is one line naming the file and the tensor or field. */
#ifndef ORTHROS_ADAPTER_H
#define ORTHROS_ADAPTER_H

#include "safetensors.h"

typedef struct orthros_adapter orthros_adapter;

/* *out = NULL when spec is not an adapter directory and file is NULL (nothing to do). Otherwise opens
 * adapter.safetensors (or `file`) strictly, and for an adapter directory resolves its base (relative to the
 * directory, then to .cache/models/ of the current directory) and checks its sha256. */
int orthros_adapter_open(orthros_adapter **out, const char *spec, const char *file);
void orthros_adapter_free(orthros_adapter *a);
/* The model spec to load the weights and the Llama fields from: the base, or the spec itself (--adapter). */
const char *orthros_adapter_base(const orthros_adapter *a);
/* Replaces *orthros_json (the base's `orthros` object text, or NULL) with the adapter config's when it has one,
 * checked against cfg with errors naming the adapter's config.json. */
int orthros_adapter_schedule(const orthros_adapter *a, const orthros_model_config *cfg, char **orthros_json);
/* Checks every tensor of the adapter against the model: names, shapes, pairs, ranks, finite values (gates > 0),
 * lora_alpha. */
int orthros_adapter_check(orthros_adapter *a, const orthros_model_config *cfg, const orthros_arch *arch);
/* The adapter's tensor of that name when it replaces a checkpoint tensor (a feature map or a window gate), else
 * NULL; and the file it lives in (for messages). a may be NULL. */
const orthros_st_tensor *orthros_adapter_tensor(const orthros_adapter *a, const char *name);
const orthros_st *orthros_adapter_st(const orthros_adapter *a);
/* 1 when the adapter has a low-rank delta for the weight `name` (e.g. model.layers.0.self_attn.q_proj.weight). */
int orthros_adapter_has_delta(const orthros_adapter *a, const char *name);
/* w[rows][cols] += (alpha / r) B A for the delta of weight `name` (nothing when it has none): each element
 * w + (alpha / r) * sum_k B[o][k] A[k][i] computed in double from the fp32 values, rounded once to fp32. A merged
 * weight that is not finite is an error. a may be NULL. */
int orthros_adapter_merge(orthros_adapter *a, const char *name, float *w, int64_t rows, int64_t cols);
/* ORTHROS_EFORMAT naming the first delta that no weight of the model took (a loader that missed one). */
int orthros_adapter_all_merged(const orthros_adapter *a);

/* For the tokenizer and export: when dir is an adapter directory, *base gets its resolved base path (malloc'd;
 * the sha256 is not checked here, the model load checks it); else *base = NULL. Errors as orthros_adapter_open's. */
int orthros_adapter_dir_base(const char *dir, char **base);

/* The SHA-256 of a whole regular file as 64 lowercase hex digits. */
int orthros_sha256_file(const char *path, char hex[65]);
/* The SHA-256 of a buffer (for tests). */
void orthros_sha256(const void *data, size_t n, uint8_t digest[32]);

#endif
