/* A validator for the subset of JSON Schema (draft-07) that the result schemas use: type (one or a list),
 * required, properties, items, enum (strings and numbers), minimum, minItems, oneOf. */
#ifndef ORTHROS_SCHEMA_H
#define ORTHROS_SCHEMA_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Returns 0 when doc conforms; else -1 with the first violation (and its JSON path) in err. */
int orthros_schema_validate(const cJSON *schema, const cJSON *doc, char *err, size_t errlen);

#endif
