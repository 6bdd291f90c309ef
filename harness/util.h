/* Small services of the harness: clocks, folders, and files written so that a crash, a full disk or a second
 * process never leaves a partial or mixed file behind. */
#ifndef ORTHROS_UTIL_H
#define ORTHROS_UTIL_H

#include <stddef.h>

/* Seconds on a monotonic clock (for elapsed times; not a date). */
double orthros_now_s(void);
/* ISO-8601 UTC time now, e.g. 2026-12-01T10:00:00Z. */
void orthros_utc_now(char *buf, size_t n);
/* Creates `dir` and every missing parent with mkdir(2) (mode 0777 before the umask); an existing folder is fine. */
int orthros_mkdir_p(const char *dir);
/* Writes data[0..n) to path: into a temporary file of a name unique to this process in the same folder, flushed
 * to disk (fsync), renamed over path, and the folder synced, so that a reader sees the old file or the new one,
 * never a mix; the temporary file is removed on every failure. path "-" writes to stdout instead. */
int orthros_write_file_atomic(const char *path, const void *data, size_t n);
/* Writes data[0..n) to the file descriptor fd, through short writes and EINTR; 0, or -1 (errno set). */
int orthros_write_all(int fd, const void *data, size_t n);
/* (Reading a whole file: orthros_read_file in base/orthros_base.h.) */

#endif
