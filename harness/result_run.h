/* The lifecycle of the result file a command writes as it runs (bench, eval): one set of rules for every kind.
 *   - open: the file named by --json is read first when it exists; one that does not read is refused, unless
 *     --force (without --resume) replaces it; with --resume its cells are kept when its configuration, commit and
 *     kernel versions are this run's (else "cannot resume: ..."), and the run adds the rest;
 *   - save: the file is rewritten (atomically) after every group of cells, but an existing file is never replaced
 *     before this run has a cell of its own (or with --force or --resume): a run that does nothing leaves it as it
 *     was; the final save records the end of the run. "-" (stdout) gets the file once, at the end;
 *   - two writers: the run holds the file's lock (result_guard.h) from before its work starts to its end, so a
 *     second run is refused with one line (or waits, --wait); with --resume every save first re-reads the file
 *     under the lock and keeps the cells another writer (one that takes no lock) put there since. */
#ifndef ORTHROS_RESULT_RUN_H
#define ORTHROS_RESULT_RUN_H

#include "result_guard.h"
#include "results.h"

typedef struct {
    const orthros_result_type *type;
    void *file;          /* the typed file this run writes (an orthros_bench_file, an orthros_eval_file) */
    const char *cmd;     /* "bench", "eval": the commands' messages start with it */
    const char *nothing; /* the final message when nothing was done: "nothing was measured" */
    const char *path;    /* --json: a file, or "-" */
    int resume, force;
    int wait;            /* --wait: when another run holds the file's lock, wait for it (else refused) */
    /* Called on the file before each write, after --resume's merge (NULL: nothing): bench's speedups, recomputed
     * over every cell. */
    int (*prepare)(void *file, void *arg);
    void *prepare_arg;
    int existed;         /* the file held a result file before this run */
    int measured;        /* cells this run added: an existing file is replaced only once there is one */
    orthros_result_lock lock; /* held from orthros_result_run_lock to orthros_result_run_close */
    int locked;
} orthros_result_run;

/* Takes the lock of r->path for the whole run (nothing for "-"), before any work that depends on the file: when
 * another run holds it, ORTHROS_EINVAL with one line naming the file and that run's pid, or with r->wait a line
 * on stderr and a wait for it. r->path and r->wait must be set. */
int orthros_result_run_lock(orthros_result_run *r);
/* Releases the lock (nothing when none was taken); the typed file stays the caller's. */
void orthros_result_run_close(orthros_result_run *r);

/* Opens the result file of a run: `file` must hold this run's configuration (an initialised typed file with its
 * config set); it gets a fresh header (orthros_result_new with argc, argv, seed, be and tp) and, with --resume, the
 * earlier run's cells. r->type, file, cmd, nothing, path, resume and force must be set; existed is set here. */
int orthros_result_run_open(orthros_result_run *r, int argc, char **argv, uint64_t seed, const orthros_backend *be,
                            int tp);
/* Writes the file unless it would replace an existing one before this run did anything (then, when final, says so
 * on stderr); the final save records the end of the run in the header. With --resume the cells of the file as it
 * is now that this run lacks (those a resume keeps) are added first; a file that no longer reads, or now holds
 * another configuration or code, is an error and nothing is written. */
int orthros_result_run_save(orthros_result_run *r, int final);

#endif
