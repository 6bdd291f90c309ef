/* The result file's lock (see result_guard.h). */
#define _GNU_SOURCE
#include "result_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* What the side file says of its holder ("pid 123, since 2026-12-01T16:00:00Z"), or "unknown". */
static void holder_text(char *buf, size_t n, int fd)
{
    char text[128];
    ssize_t r = pread(fd, text, sizeof text - 1, 0);
    size_t len = r > 0 ? (size_t)r : 0;
    text[len] = '\0';
    text[strcspn(text, "\n")] = '\0';
    /* Only what this code writes: digits, letters, spaces and a few marks (the file may be anyone's). */
    for (size_t i = 0; i < len && text[i]; i++)
        if (!strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,:-", text[i])) text[i] = '?';
    snprintf(buf, n, "%s", text[0] ? text : "unknown");
}

int orthros_result_lock_take(orthros_result_lock *l, const char *path, int wait)
{
    l->fd = -1;
    l->path[0] = '\0';
    if (!strcmp(path, "-")) return 0;
    if (strlen(path) + sizeof ".lock" > sizeof l->path)
        return orthros_error(ORTHROS_EINVAL, "%.64s...: the result path is too long", path);
    snprintf(l->path, sizeof l->path, "%s.lock", path);
    int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return orthros_error(ORTHROS_EIO, "%s: cannot open its lock %s: %s", path, l->path, strerror(errno));
    int rc;
    while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (rc != 0 && errno == EWOULDBLOCK) {
        char who[160];
        holder_text(who, sizeof who, fd);
        if (!wait) {
            close(fd);
            return orthros_error(ORTHROS_EINVAL,
                                 "%s is being written by another run (%s; lock %s): wait for it with --wait, or write "
                                 "another file", path, who, l->path);
        }
        fprintf(stderr, "orthros: %s is being written by another run (%s); waiting for it (--wait)\n", path, who);
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
        }
    }
    if (rc != 0) {
        int e = errno;
        close(fd);
        return orthros_error(ORTHROS_EIO, "%s: cannot lock %s: %s", path, l->path, strerror(e));
    }
    /* Who holds it, for the message of a run refused meanwhile. */
    char line[96], when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int k = snprintf(line, sizeof line, "pid %ld, since %s\n", (long)getpid(), when);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)k, 0) != k) {
        /* The lock holds without its note; the message of a refused run then says "unknown". */
    }
    l->fd = fd;
    return 0;
}

void orthros_result_lock_release(orthros_result_lock *l)
{
    if (l->fd < 0) return;
    if (ftruncate(l->fd, 0) != 0) {
        /* A stale note is harmless: the lock, not the note, says who writes. */
    }
    flock(l->fd, LOCK_UN);
    close(l->fd);
    l->fd = -1;
}
