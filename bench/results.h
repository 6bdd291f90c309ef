/* Self-describing result files (bench and eval): the shared `tool` / `run` / `environment` header, atomic
 * writes, and loading for --resume. */
#ifndef ORTHROS_RESULTS_H
#define ORTHROS_RESULTS_H

#include "backend.h"

#include <cjson/cJSON.h>

#define ORTHROS_RESULT_SCHEMA_VERSION 1

/* A new result object: schema_version, kind ("bench" / "eval"), tool, run (argv, start time, seed) and
 * environment (host, CPU, and the backend's device). The caller adds run.config, the payload and
 * run.end_time. */
cJSON *orthros_result_new(const char *kind, int argc, char **argv, uint64_t seed, const orthros_backend *be);
/* ISO-8601 UTC time now. */
void orthros_result_now(char *buf, size_t n);
/* Writes root to path through a temporary file and rename, so that a crash leaves the old or the new file. */
int orthros_result_write(const char *path, const cJSON *root);
/* Loads a result file; *out is NULL (and 0 returned) when the file does not exist. */
int orthros_result_load(cJSON **out, const char *path);

#endif
