/* Tensor parallel, the engine's internal side (docs/tensor-parallel.md): communicators and the ranks that use
 * them. A model of world size N is N shards (model.c), each on its own backend; the forward schedule runs per
 * rank on its shard and meets the other ranks in a sum all-reduce after the O and the down projection.
 *
 *   - cpu backend: the N ranks are threads of one process (a pool, tp.c), meeting in an in-memory all-reduce;
 *   - cuda backend: one process per GPU (tp_proc.c), meeting in NCCL (tp_nccl.c, loaded at run time). Rank 0
 *     runs the command and drives the others over a TCP control channel: every public call on a model or a
 *     session (load, session init, prefill, decode, reset, rewind, free) is sent to ranks 1..N-1, which make
 *     the same call on their shard. Nothing else runs on them, so every decision the harness takes from a
 *     timing, a file or the free memory is rank 0's alone and the ranks cannot fall out of step. */
#ifndef ORTHROS_TP_H
#define ORTHROS_TP_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHROS_TP_MAX_WORLD 64

struct orthros_comm {
    int rank, world;
    struct tp_group *group; /* in-process ranks (cpu): the state they share */
    void *nccl;             /* ranks as processes (cuda): the ncclComm_t */
    int tcp;                /* cpu ranks as processes (ORTHROS_TP_PROCESSES=1): sums over the control channel */
};

/* ---- in-process ranks (tp.c) ---- */

typedef struct orthros_tp_pool orthros_tp_pool;

/* `world` ranks, one thread each (each with omp_get_max_threads() / world OpenMP threads, at least 1), and
 * their communicator. */
int orthros_tp_pool_create(orthros_tp_pool **out, int world);
void orthros_tp_pool_free(orthros_tp_pool *p);
orthros_comm *orthros_tp_pool_comm(orthros_tp_pool *p, int rank);
/* Runs fn(arg, rank) for every rank on its thread and waits for all. A rank that fails releases the others
 * from their all-reduce (they fail too); the first failure's code and message are returned. */
int orthros_tp_pool_run(orthros_tp_pool *p, int (*fn)(void *arg, int rank), void *arg);
/* x[n] = the sum of every rank's x[n], in rank order 0, 1, ..., N-1 (deterministic, the same bits on every
 * rank). In-process communicators only. */
int orthros_comm_allreduce_f32(orthros_comm *c, float *x, size_t n);

/* ---- NCCL, loaded with dlopen (tp_nccl.c) ---- */

/* Loads libnccl.so.2 (or $ORTHROS_NCCL_LIB) once. On failure the message says what to install. */
int orthros_nccl_load(void);
/* NCCL's version as ncclGetVersion gives it (e.g. 22803), after a successful load. */
int orthros_nccl_version(void);
int orthros_nccl_unique_id(unsigned char id[128]);
int orthros_nccl_comm_init(void **comm, int world, const unsigned char id[128], int rank);
/* x[n] bf16 on the device, summed in place by ncclAllReduce on `stream` (a cudaStream_t). */
int orthros_comm_allreduce_bf16(orthros_comm *c, void *x, size_t n, void *stream);

/* ---- ranks as processes (tp_proc.c) ---- */

/* cpu ranks as processes: x[n] = the sum of every rank's x, added by rank 0 in rank order (the same bits as
 * orthros_comm_allreduce_f32) and sent back over the control connections. For testing the process machinery
 * without GPUs; slow. */
int orthros_comm_allreduce_tcp_f32(orthros_comm *c, float *x, size_t n);

/* This process's communicator when it runs as a rank of a launched world (after orthros_tp_main), else NULL. */
orthros_comm *orthros_tp_world(void);
/* The device of a rank of the launched world (each rank sends its own when the world starts). */
const orthros_device_info *orthros_tp_world_device(int rank);
/* A fresh id for a model or a session that rank 0 drives. */
int orthros_tp_new_id(void);

/* Liveness of a launched world (tp_heartbeat.c): a thread that sends a UDP heartbeat every second (or timeout / 6)
 * to its peers (rank 0 to every rank, the others to rank 0, at MASTER_ADDR on rank 0's port number) and ends this
 * process, with one line and status 1, when a peer it has heard from is silent for the timeout: a stopped or
 * vanished rank ends the run instead of blocking it for ever. socks: rank 0's control connections (the hosts its
 * peers' datagrams must come from). The timeout is ORTHROS_TP_HEARTBEAT seconds (default 60, 0: off). */
int orthros_tp_heartbeat_start(int rank, int world, const char *addr, int port, const int *socks);
int orthros_tp_heartbeat_timeout(void);
/* A rank started by orthros's own launcher (ORTHROS_TP_LAUNCHER_PID in its environment) dies with it
 * (PR_SET_PDEATHSIG, SIGKILL): killing the launcher leaves no rank running. An error when the launcher is already
 * gone. */
int orthros_tp_die_with_launcher(void);

enum {
    ORTHROS_TP_LOAD = 1,     /* id: model; a: fmap, feature_dim, tail, window, hybrid_every, tp; payload: spec, arch */
    ORTHROS_TP_MODEL_FREE,   /* id: model */
    ORTHROS_TP_SESSION_INIT, /* id: session, ref: model; a: batch, max_ctx, chunk */
    ORTHROS_TP_SESSION_FREE, /* id: session */
    ORTHROS_TP_RESET,        /* id: session */
    ORTHROS_TP_REWIND,       /* id: session; a: pos */
    ORTHROS_TP_PREFILL,      /* id: session; a: seq, n; payload: tokens[n] */
    ORTHROS_TP_DECODE,       /* id: session; a: batch; payload: tokens[batch] */
    ORTHROS_TP_ALLREDUCE,    /* id: model; a: rows, iters */
    ORTHROS_TP_SET_ARCH,     /* id: model; payload: the schedule's name ("" for the checkpoint's) */
    ORTHROS_TP_EXIT,
};

typedef struct {
    uint32_t magic;
    int32_t op, id, ref;
    int64_t a[8];
    uint64_t seed;
    double eps;
    uint64_t payload_bytes;
} orthros_tp_cmd;

/* Rank 0: sends cmd (and payload_bytes of payload) to every other rank. */
int orthros_tp_send(orthros_tp_cmd *cmd, const void *payload);
/* Rank 0: after a command the others answer (load, set arch, session init), waits for every answer; the first failure
 * becomes this call's error, named by its rank. */
int orthros_tp_gather_status(void);

#ifdef __cplusplus
}
#endif
#endif
