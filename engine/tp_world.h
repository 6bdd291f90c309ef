/* Tensor-parallel ranks as processes, the transport (engine/tp_world.c, docs/tensor-parallel.md): the world a
 * process joins when a launcher (the orthros command's, in ranks/, or torchrun / mpirun) started it as one rank,
 * and the control channel over which rank 0 drives the others. Below the model: model.c and load.c send every
 * call on a model or a session to the other ranks; the rank server above the model (ranks/ranks.c) receives
 * them and makes the same calls through the public API (orthros.h). Nothing here knows a model or a command. */
#ifndef ORTHROS_TP_WORLD_H
#define ORTHROS_TP_WORLD_H

#include "orthros.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHROS_TP_MAX_WORLD 64

/* The ranks of a tensor-parallel model and how they meet (engine/tp.h). */
typedef struct orthros_comm orthros_comm;

/* This process's communicator when it runs as a rank of a launched world (after orthros_tp_join), else NULL. */
orthros_comm *orthros_tp_world(void);
/* The device of a rank of the launched world (each rank sends its own when the world starts). */
const orthros_device_info *orthros_tp_world_device(int rank);
/* A fresh id for a model or a session that rank 0 drives. */
int orthros_tp_new_id(void);

enum {
    ORTHROS_TP_LOAD = 1,     /* id: model; a: fmap, feature_dim, tail, window, hybrid_every, tp, fmap_rope,
                              * local_window; payload: spec, arch, adapter */
    ORTHROS_TP_MODEL_FREE,   /* id: model */
    ORTHROS_TP_SESSION_INIT, /* id: session, ref: model; a: batch, max_ctx, chunk */
    ORTHROS_TP_SESSION_FREE, /* id: session */
    ORTHROS_TP_RESET,        /* id: session */
    ORTHROS_TP_REWIND,       /* id: session; a: pos */
    ORTHROS_TP_PREFILL,      /* id: session; a: seq, n; payload: tokens[n] */
    ORTHROS_TP_DECODE,       /* id: session; a: batch; payload: tokens[batch] */
    ORTHROS_TP_ALLREDUCE,    /* id: model; a: rows, iters */
    ORTHROS_TP_SET_ARCH,     /* id: model; payload: the schedule's name ("" for the checkpoint's) */
    ORTHROS_TP_COPY_SEQ,     /* id: session; a: dst, src (orthros_session_copy_seq) */
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

/* ---- rank 0 ---- */

/* Sends cmd (and payload_bytes of payload) to every other rank. */
int orthros_tp_send(orthros_tp_cmd *cmd, const void *payload);
/* After a command the others answer (load, set arch, session init): waits for every answer. rc is rank 0's own
 * outcome of the same call: when it failed, its code and message are the ones returned; else the first other
 * rank's failure, named by its rank. */
int orthros_tp_gather_status(int rc);
#if defined(__clang_analyzer__) && !defined(ORTHROS_TP_WORLD_IMPL)
/* ci/analyze.sh: a failure of this rank's stays a failure */
#define orthros_tp_gather_status(rc) ((rc) ? (orthros_tp_gather_status(rc), (rc)) : orthros_tp_gather_status(rc))
#endif

/* ---- ranks > 0 ---- */

/* The next command from rank 0 into *cmd and its payload into *payload (malloc'd, NULL when it has none; the
 * previous one is freed). A command with op ORTHROS_TP_EXIT ends the service. */
int orthros_tp_recv(orthros_tp_cmd *cmd, char **payload);
/* Answers the command just made (those rank 0 gathers): rc and, when it failed, the last error message. */
int orthros_tp_reply(int rc);

/* ---- joining ---- */

/* WORLD_SIZE (or OMPI_COMM_WORLD_SIZE) as the launcher set it, or NULL when this process was not launched as a
 * rank. */
const char *orthros_tp_env_world_size(void);
/* Whether this host can start `tp` ranks on cuda, one per GPU: a CUDA build, NCCL and as many GPUs; the error
 * says what is missing. */
int orthros_tp_launch_check(int tp);
/* Joins the launched world named by the environment as one of `tp` ranks: *rank is this process's rank (-1
 * before the environment was read); its GPU (LOCAL_RANK), the bootstrap over TCP, the NCCL communicator (cuda)
 * or the all-reduce over the control connections (cpu). Ranks > 0 get their backend in *be (rank 0 makes its
 * own through the command). Rank 0 tells the others to exit when it exits. */
int orthros_tp_join(int tp, int cpu, int *rank, orthros_backend **be);

/* ---- liveness (tp_heartbeat.c) ---- */

/* A thread that sends a UDP heartbeat every second (or timeout / 6) to its peers (rank 0 to every rank, the others
 * to rank 0, at MASTER_ADDR on rank 0's port number) and ends this process, with one line and status 1, when a
 * peer it has heard from is silent for the timeout: a stopped or vanished rank ends the run instead of blocking it
 * for ever. socks: rank 0's control connections (the hosts its peers' datagrams must come from). timeout: seconds,
 * 0 off (ORTHROS_TP_HEARTBEAT, which orthros_tp_join reads, default 60). orthros_tp_join starts it. */
int orthros_tp_heartbeat_start(int rank, int world, const char *addr, int port, const int *socks, int timeout);
/* A rank started by orthros's own launcher (ORTHROS_TP_LAUNCHER_PID in its environment, set by ranks/ranks.c) dies
 * with it (PR_SET_PDEATHSIG, SIGKILL): killing the launcher leaves no rank running. An error when the launcher is
 * already gone. orthros_tp_join calls it. */
int orthros_tp_die_with_launcher(void);

#ifdef __cplusplus
}
#endif
#endif
