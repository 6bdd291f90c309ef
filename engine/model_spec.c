/* A model spec's configuration without its weights (see orthros.h): what a command checks its arguments against
 * before it does work that depends on them. */
#include "gguf.h"
#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int orthros_model_spec_config(orthros_model_config *cfg, const char *spec)
{
    int rc;
    struct stat sb;
    memset(cfg, 0, sizeof *cfg);
    if (!strncmp(spec, "preset:", 7)) return orthros_preset_config(cfg, spec + 7);
    if (stat(spec, &sb) != 0) return orthros_error(ORTHROS_EIO, "%s: no such file or directory", spec);
    if (!S_ISDIR(sb.st_mode)) {
        orthros_gguf *g = NULL;
        if ((rc = orthros_gguf_open(&g, spec))) return rc;
        rc = orthros_gguf_model_config(cfg, g);
        orthros_gguf_free(g);
        return rc ? orthros_error_prefix(rc, spec) : 0;
    }
    char path[4096], *text = NULL;
    if (strlen(spec) + sizeof "/config.json" > sizeof path)
        return orthros_error(ORTHROS_EINVAL, "%.64s...: the model directory's path is too long", spec);
    snprintf(path, sizeof path, "%s/config.json", spec);
    if ((rc = orthros_read_text_file(&text, path, 16u << 20))) return rc;
    rc = orthros_config_parse_text(cfg, NULL, text, strlen(text));
    free(text);
    return rc ? orthros_error_prefix(rc, path) : 0;
}
