/* Forced into every C file that ci/analyze.sh hands the static analyzer (clang's -include): the library functions
 * whose results steer a path, written as what they compute, since the analyzer sees one file at a time and cannot
 * read cJSON's source. Never part of a build. */
#ifndef ORTHROS_ANALYZER_MODELS_H
#define ORTHROS_ANALYZER_MODELS_H
#include <cjson/cJSON.h>

#define ORTHROS_CJSON_IS(it, t) ((it) != NULL && ((it)->type & 0xFF) == (t))
#define cJSON_IsFalse(it) ORTHROS_CJSON_IS(it, cJSON_False)
#define cJSON_IsTrue(it) ORTHROS_CJSON_IS(it, cJSON_True)
#define cJSON_IsBool(it) ((it) != NULL && ((it)->type & (cJSON_True | cJSON_False)) != 0)
#define cJSON_IsNull(it) ORTHROS_CJSON_IS(it, cJSON_NULL)
#define cJSON_IsNumber(it) ORTHROS_CJSON_IS(it, cJSON_Number)
#define cJSON_IsString(it) ORTHROS_CJSON_IS(it, cJSON_String)
#define cJSON_IsArray(it) ORTHROS_CJSON_IS(it, cJSON_Array)
#define cJSON_IsObject(it) ORTHROS_CJSON_IS(it, cJSON_Object)
/* a lookup in no object finds nothing (the macro names itself: the call inside is the function's) */
#define cJSON_GetObjectItem(o, k) ((o) ? cJSON_GetObjectItem((o), (k)) : NULL)
#define cJSON_GetObjectItemCaseSensitive(o, k) ((o) ? cJSON_GetObjectItemCaseSensitive((o), (k)) : NULL)
#define cJSON_GetArrayItem(a, i) ((a) ? cJSON_GetArrayItem((a), (i)) : NULL)
#endif
