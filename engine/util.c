/* Helpers shared by the engine: dtype sizes, RoPE frequencies (the bf16 / fp16 conversions are in base/numeric.c)
 * and reading a whole file. */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

size_t orthros_dtype_size(orthros_dtype t)
{
    return t == ORTHROS_DTYPE_F32 ? 4 : 2;
}

/* As transformers computes it: inv_freq = 1 / theta^(2i/d) in fp32, then llama3 scaling (a per-frequency
 * division by `factor` for long wavelengths, a smooth blend between the two cut-offs). */
void orthros_rope_inv_freq(float *inv_freq, const orthros_model_config *cfg)
{
    int half = cfg->head_dim / 2;
    for (int i = 0; i < half; i++) {
        float expo = (float)(2 * i) / (float)cfg->head_dim;
        float f = 1.0f / powf((float)cfg->rope_theta, expo);
        if (cfg->rope_llama3) {
            double old_ctx = cfg->rope_orig_max_pos;
            double low_wavelen = old_ctx / cfg->rope_low_freq_factor;
            double high_wavelen = old_ctx / cfg->rope_high_freq_factor;
            double wavelen = 2.0 * M_PI / f;
            double g = f;
            if (wavelen > low_wavelen) {
                g = f / cfg->rope_factor;
            } else if (wavelen >= high_wavelen) {
                double smooth = (old_ctx / wavelen - cfg->rope_low_freq_factor) /
                                (cfg->rope_high_freq_factor - cfg->rope_low_freq_factor);
                g = (1.0 - smooth) * f / cfg->rope_factor + smooth * f;
            }
            f = (float)g;
        }
        inv_freq[i] = f;
    }
}

int orthros_read_file(char **out, size_t *len, const char *path, size_t max_bytes, int *exists)
{
    *out = NULL;
    if (len) *len = 0;
    if (exists) *exists = 1;
    /* O_NONBLOCK: a FIFO in place of the file must not hang the open; a regular file ignores the flag. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT && exists) {
            *exists = 0;
            return 0;
        }
        return orthros_error(ORTHROS_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    int rc = 0;
    char *buf = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = orthros_error(ORTHROS_EIO, "%s: not a regular file", path);
        goto done;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        rc = orthros_error(ORTHROS_EFORMAT, "%s: file is larger than %zu bytes", path, max_bytes);
        goto done;
    }
    size_t size = (size_t)sb.st_size, got = 0;
    if (!(buf = malloc(size + 1))) {
        rc = orthros_error(ORTHROS_ENOMEM, "%s: out of memory reading it", path);
        goto done;
    }
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            rc = orthros_error(ORTHROS_EIO, "%s: short read%s%s", path, r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
            goto done;
        }
        got += (size_t)r;
    }
    buf[size] = '\0';
    *out = buf;
    if (len) *len = size;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return rc;
}
