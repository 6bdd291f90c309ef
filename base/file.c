/* Reading a whole file, below everything that reads one: the engine (config.json, the index, tokenizer.json),
 * the harness (result files, token lists), the commands' inputs (prompts, texts, the plot scripts) and the evals;
 * and opening or mapping one (the weight files, a file hashed). A file that is not regular (a folder, a FIFO, a
 * device) or larger than the caller's bound is refused with a message naming it, and never blocks the open. */
#define _GNU_SOURCE
#include "orthros_base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int orthros_open_regular(const char *path, size_t *size, int *exists)
{
    *size = 0;
    if (exists) *exists = 1;
    /* O_NONBLOCK: a FIFO in place of the file must not hang the open; a regular file ignores the flag. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT && exists) {
            *exists = 0;
            return ORTHROS_EIO;
        }
        return orthros_error(ORTHROS_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat sb;
    int rc = 0;
    if (fstat(fd, &sb) != 0) rc = orthros_error(ORTHROS_EIO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode)) rc = orthros_error(ORTHROS_EIO, "%s: not a regular file", path);
    if (rc) {
        close(fd);
        return rc;
    }
    *size = (size_t)sb.st_size;
    return fd;
}

int orthros_map_file(void **map, size_t *size, const char *path, size_t min_map)
{
    *map = NULL;
    int fd = orthros_open_regular(path, size, NULL);
    if (fd < 0) return fd;
    int rc = 0;
    if (*size >= min_map && *size > 0) {
        void *m = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) rc = orthros_error(ORTHROS_EIO, "%s: cannot map: %s", path, strerror(errno));
        else *map = m;
    }
    close(fd); /* the mapping outlives the descriptor */
    return rc;
}

int orthros_read_file(char **out, size_t *len, const char *path, size_t max_bytes, int *exists)
{
    *out = NULL;
    if (len) *len = 0;
    size_t size = 0, got = 0;
    int fd = orthros_open_regular(path, &size, exists);
    if (fd < 0) return exists && !*exists ? 0 : fd;
    int rc = 0;
    char *buf = NULL;
    if ((uint64_t)size > max_bytes) {
        rc = orthros_error(ORTHROS_EFORMAT, "%s: file is larger than %zu bytes", path, max_bytes);
        goto done;
    }
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

int orthros_read_text_file(char **out, const char *path, size_t max_bytes)
{
    size_t len = 0;
    int rc = orthros_read_file(out, &len, path, max_bytes, NULL);
    if (rc) return rc;
    /* Text read as a C string must not end early: what follows a NUL would be silently ignored. */
    const char *z = memchr(*out, '\0', len);
    if (z) {
        rc = orthros_error(ORTHROS_EFORMAT, "%s: holds a NUL byte at offset %zu, not text", path, (size_t)(z - *out));
        free(*out);
        *out = NULL;
    }
    return rc;
}
