/* Strict JSON for the files a model is read from (config.json, model.safetensors.index.json, the safetensors
 * header): cJSON accepts inputs that would make a loader lie, so these checks come first. */
#ifndef ORTHROS_JSON_H
#define ORTHROS_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Parses text[0..len) into *out, refusing (ORTHROS_EFORMAT, a message without the file name: callers prefix it)
 * what cJSON would take silently:
 *  - a NUL byte in the text, and the escape \u0000 in a string (cJSON cuts the string there, so "a\u0000x"
 *    would alias the key "a");
 *  - anything but whitespace after the value;
 *  - a key that appears twice in one object, at any depth, compared after unescaping (cJSON keeps both and
 *    every lookup returns the first).
 * The caller frees *out with cJSON_Delete. */
int orthros_json_parse(cJSON **out, const char *text, size_t len);

#endif
