/* Two runs writing one result file: an advisory lock for the whole run (issue 23: two `bench --resume` runs at once
 * both exited 0 and the file kept only the second run's cells). The lifecycle of a result file (result_run.h) takes
 * it, and merges what the file holds under it before each rewrite with --resume.
 *
 * The lock is flock(2) on a side file, PATH.lock, created beside the result and left there (the result itself is
 * replaced by rename at every save, so it cannot carry the lock; removing the side file on exit would let a run
 * that opened it a moment before lock a file no one else sees). The side file holds the holder's pid and start,
 * for the message. flock needs a file system that honours it (local ones do; some network ones do not): the
 * merge under the lock is what keeps cells there. */
#ifndef ORTHROS_RESULT_GUARD_H
#define ORTHROS_RESULT_GUARD_H

#include "orthros.h"

typedef struct {
    int fd;                   /* the side file, -1 when no lock is held */
    char path[4200];          /* PATH.lock */
} orthros_result_lock;

/* Locks the result file `path` for this run (nothing for "-", stdout). When another run holds it: ORTHROS_EINVAL
 * with one line naming the file and the other run's pid, or, with `wait`, a line on stderr and a wait for it. */
int orthros_result_lock_take(orthros_result_lock *l, const char *path, int wait);
/* Releases it (and is a no-op on a lock never taken); the side file stays. */
void orthros_result_lock_release(orthros_result_lock *l);

#endif
