#define _GNU_SOURCE
#include "util.h"
#include "orthros.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double orthros_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void orthros_utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int orthros_mkdir_p(const char *dir)
{
    size_t len = strlen(dir);
    if (!len) return orthros_error(ORTHROS_EINVAL, "an empty folder name");
    char *p = strdup(dir);
    if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    int rc = 0;
    /* Each prefix that ends before a '/', then the whole path. */
    for (size_t i = 1; i <= len && !rc; i++) {
        if (i < len && p[i] != '/') continue;
        char keep = p[i];
        p[i] = '\0';
        struct stat sb;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = orthros_error(ORTHROS_EIO, "%s: cannot create the folder: %s", p, strerror(errno));
        else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
            rc = orthros_error(ORTHROS_EIO, "%s: exists and is not a folder", p);
        p[i] = keep;
    }
    free(p);
    return rc;
}

int orthros_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int orthros_write_file_atomic(const char *path, const void *data, size_t n)
{
    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, n, stdout) != n || fflush(stdout) != 0)
            return orthros_error(ORTHROS_EIO, "cannot write to stdout: %s", strerror(errno));
        return 0;
    }
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return orthros_error(ORTHROS_EIO, "%s: is a folder, not a file", path);
    char *tmp = NULL, *dcopy = strdup(path);
    int fd = -1, rc = 0;
    if (!dcopy || asprintf(&tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid()) < 0) {
        free(dcopy);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        goto done;
    }
    /* mkstemp makes the file 0600; a result file is as readable as any other the user writes. */
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um);
    if (orthros_write_all(fd, data, n) != 0 || fsync(fd) != 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
        goto done;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot replace it: %s", path, strerror(errno));
        goto done;
    }
    /* The rename itself is durable only once the folder is synced. */
    int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(tmp);
    tmp = NULL;
done:
    if (fd >= 0) close(fd);
    if (tmp) unlink(tmp);
    free(tmp);
    free(dcopy);
    return rc;
}
