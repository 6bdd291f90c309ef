/* Tensor parallel as processes, for the command line (ranks/ranks.c, docs/tensor-parallel.md): the launcher
 * that starts one process per GPU, and the server that ranks 1..N-1 run. Above the engine: it calls the public
 * model API (orthros.h) and the transport of the ranks (engine/tp_world.h). */
#ifndef ORTHROS_RANKS_H
#define ORTHROS_RANKS_H

#include "orthros.h"

/* What the command line says about the ranks of a model-running command (logits, generate, bench, eval). */
typedef struct {
    int tp;             /* --tp N, at least 1 */
    const char *device; /* --device as given, or NULL (auto) */
    char **argv;        /* the whole command line, NULL-terminated: each rank the launcher starts gets it */
} orthros_ranks_request;

/* Call before the command runs. Returns 0 when the command runs in this process (no processes to start, or this
 * is rank 0 of a launched world, whose communicator is then ready); 1 when the command was handled here, with
 * its exit status in *status: `--tp N` on cuda without a launcher's environment started N processes of this
 * binary (one per GPU) and waited for them, or this process is rank > 0 of a launched world and served rank 0
 * until it finished. A negative ORTHROS_E* code when it failed: *status is the exit status to return (2 for a
 * usage error), *rank this process's rank in a launched world (-1 outside one), for the message. */
int orthros_ranks_main(const orthros_ranks_request *r, int *status, int *rank);

#endif
