/* Tensor-parallel ranks as processes, above the model (docs/tensor-parallel.md):
 *   - the launch: `orthros CMD --tp N --device cuda` without a launcher's environment starts N copies of this
 *     binary (posix_spawn of /proc/self/exe, no shell) with the environment torchrun gives its workers, waits
 *     for them and returns the worst exit status;
 *   - the ranks: a process started as a rank joins the world (engine/tp_world.h, the transport); rank 0 runs the
 *     command, ranks 1..N-1 serve rank 0 until it sends EXIT (at its exit) or goes away, making on their shard,
 *     through the public API (orthros.h), every model and session call rank 0 makes on its own.
 * The command line is the CLI's: it hands orthros_ranks_main what it parsed (cli/main.c). */
#define _GNU_SOURCE
#include "ranks.h"
#include "tp_world.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define TP_MAX_OBJECTS 256

/* ---- ranks > 0: serve rank 0's calls ---- */

typedef struct {
    int id, batch;
    void *obj;
} tp_object;

static tp_object *object_find(tp_object *t, int id)
{
    for (int i = 0; i < TP_MAX_OBJECTS; i++)
        if (t[i].obj && t[i].id == id) return &t[i];
    return NULL;
}

static int object_add(tp_object *t, int id, int batch, void *obj)
{
    for (int i = 0; i < TP_MAX_OBJECTS; i++)
        if (!t[i].obj) {
            t[i] = (tp_object){id, batch, obj};
            return 0;
        }
    return orthros_error(ORTHROS_ENOMEM, "more than %d models or sessions at once", TP_MAX_OBJECTS);
}

/* One command; a failure that rank 0 does not wait to hear about is fatal (returned), since the ranks would
 * fall out of step. */
static int serve_one(orthros_backend *be, const orthros_tp_cmd *cmd, const char *payload, tp_object *models,
                     tp_object *sessions)
{
    tp_object *o;
    int rc = 0;
    switch (cmd->op) {
    case ORTHROS_TP_LOAD: {
        /* spec, arch and adapter, each NUL-terminated */
        const char *spec = payload, *end = payload ? payload + cmd->payload_bytes : NULL;
        const char *nul = payload ? memchr(spec, '\0', (size_t)cmd->payload_bytes) : NULL;
        const char *arch = nul ? nul + 1 : NULL;
        const char *nul2 = arch && arch < end ? memchr(arch, '\0', (size_t)(end - arch)) : NULL;
        const char *adapter = nul2 ? nul2 + 1 : NULL;
        if (!adapter || adapter >= end || !memchr(adapter, '\0', (size_t)(end - adapter)))
            return orthros_error(ORTHROS_EFORMAT, "a malformed load command from rank 0");
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        ao.arch = *arch ? arch : NULL;
        ao.adapter = *adapter ? adapter : NULL;
        ao.fmap = (int)cmd->a[0], ao.feature_dim = (int)cmd->a[1], ao.tail = (int)cmd->a[2];
        ao.window = (int)cmd->a[3], ao.hybrid_every = (int)cmd->a[4], ao.tp = (int)cmd->a[5], ao.eps = cmd->eps;
        ao.fmap_rope = (int)cmd->a[6], ao.local_window = (int)cmd->a[7];
        orthros_model *m = NULL;
        rc = orthros_model_load(&m, be, spec, &ao, cmd->seed);
        if (!rc && (rc = object_add(models, cmd->id, 0, m))) orthros_model_free(m);
        return orthros_tp_reply(rc);
    }
    case ORTHROS_TP_MODEL_FREE:
        if ((o = object_find(models, cmd->id))) {
            orthros_model_free(o->obj);
            o->obj = NULL;
        }
        return 0;
    case ORTHROS_TP_SESSION_INIT: {
        orthros_session *s = NULL;
        if (!(o = object_find(models, cmd->ref)))
            rc = orthros_error(ORTHROS_EINVAL, "no model %d on this rank", cmd->ref);
        else if (cmd->a[0] < 1 || cmd->a[0] > INT_MAX || cmd->a[1] > INT_MAX || cmd->a[2] > INT_MAX)
            rc = orthros_error(ORTHROS_EINVAL, "a malformed session command from rank 0");
        else if (!(rc = orthros_session_init(&s, o->obj, (int)cmd->a[0], (int)cmd->a[1], (int)cmd->a[2])) &&
                 (rc = object_add(sessions, cmd->id, (int)cmd->a[0], s)))
            orthros_session_free(s);
        return orthros_tp_reply(rc);
    }
    case ORTHROS_TP_SESSION_FREE:
        if ((o = object_find(sessions, cmd->id))) {
            orthros_session_free(o->obj);
            o->obj = NULL;
        }
        return 0;
    case ORTHROS_TP_SET_ARCH:
        if (!payload || !memchr(payload, '\0', (size_t)cmd->payload_bytes))
            return orthros_error(ORTHROS_EFORMAT, "a malformed set-arch command from rank 0");
        if (!(o = object_find(models, cmd->id))) rc = orthros_error(ORTHROS_EINVAL, "no model %d on this rank", cmd->id);
        else rc = orthros_model_set_arch(o->obj, *payload ? payload : NULL);
        return orthros_tp_reply(rc);
    case ORTHROS_TP_ALLREDUCE: {
        double t;
        if (!(o = object_find(models, cmd->id))) return orthros_error(ORTHROS_EINVAL, "no model %d on this rank", cmd->id);
        return orthros_tp_allreduce_time(o->obj, (int)cmd->a[0], (int)cmd->a[1], &t);
    }
    default:
        break;
    }
    if (!(o = object_find(sessions, cmd->id))) return orthros_error(ORTHROS_EINVAL, "no session %d on this rank", cmd->id);
    switch (cmd->op) {
    case ORTHROS_TP_RESET: return orthros_session_reset(o->obj);
    case ORTHROS_TP_REWIND: return orthros_session_rewind(o->obj, (int)cmd->a[0]);
    case ORTHROS_TP_COPY_SEQ:
        if (cmd->a[0] < 0 || cmd->a[0] >= o->batch || cmd->a[1] < 0 || cmd->a[1] >= o->batch)
            return orthros_error(ORTHROS_EFORMAT, "a malformed copy command from rank 0");
        return orthros_session_copy_seq(o->obj, (int)cmd->a[0], (int)cmd->a[1]);
    case ORTHROS_TP_PREFILL:
        if (cmd->a[1] < 1 || (uint64_t)cmd->a[1] * sizeof(int32_t) != cmd->payload_bytes)
            return orthros_error(ORTHROS_EFORMAT, "a malformed prefill command from rank 0");
        return orthros_prefill(o->obj, (int)cmd->a[0], (const int32_t *)payload, (int)cmd->a[1], NULL, NULL);
    case ORTHROS_TP_DECODE:
        if (cmd->a[0] != o->batch || (uint64_t)o->batch * sizeof(int32_t) != cmd->payload_bytes)
            return orthros_error(ORTHROS_EFORMAT, "a malformed decode command from rank 0");
        return orthros_decode(o->obj, (const int32_t *)payload, NULL, NULL);
    default: return orthros_error(ORTHROS_EFORMAT, "unknown command %d from rank 0", cmd->op);
    }
}

static int serve(orthros_backend *be)
{
    static tp_object models[TP_MAX_OBJECTS], sessions[TP_MAX_OBJECTS];
    int rc = 0;
    char *payload = NULL;
    for (;;) {
        orthros_tp_cmd cmd;
        if ((rc = orthros_tp_recv(&cmd, &payload)) || cmd.op == ORTHROS_TP_EXIT) break;
        if ((rc = serve_one(be, &cmd, payload, models, sessions))) break;
    }
    free(payload);
    for (int i = 0; i < TP_MAX_OBJECTS; i++)
        if (sessions[i].obj) orthros_session_free(sessions[i].obj);
    for (int i = 0; i < TP_MAX_OBJECTS; i++)
        if (models[i].obj) orthros_model_free(models[i].obj);
    return rc;
}

/* ---- the launch on one host ---- */

static volatile sig_atomic_t launch_signal;
static void on_signal(int sig) { launch_signal = sig; }

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

static int is_launch_var(const char *kv)
{
    static const char *const names[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=",
                                        "MASTER_PORT=", "NCCL_NVLS_ENABLE=", "ORTHROS_TP_PORT=",
                                        "TORCHELASTIC_USE_AGENT_STORE=", "OMPI_COMM_WORLD_", "ORTHROS_TP_LAUNCHER_PID="};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strncmp(kv, names[i], strlen(names[i]))) return 1;
    return 0;
}

static int exit_code(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0); }

/* Starts `world` ranks of this binary with argv, waits for them, and returns the worst exit status: the first
 * rank to fail takes the others down (they would wait for it forever). */
static int launch(char **argv, int world_size)
{
    int port = free_port();
    if (port < 0) {
        fprintf(stderr, "orthros: error: no free local port for the ranks to meet on\n");
        return 1;
    }
    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    char **envp = calloc(n_env + 9, sizeof *envp);
    char vars[8][64];
    if (!envp) {
        fprintf(stderr, "orthros: error: out of memory\n");
        return 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (!is_launch_var(environ[i])) envp[k++] = environ[i];
    size_t base = k;
    pid_t pids[ORTHROS_TP_MAX_WORLD];
    int done[ORTHROS_TP_MAX_WORLD] = {0}, codes[ORTHROS_TP_MAX_WORLD] = {0}, started = 0, status = 0;
    struct sigaction sa = {.sa_handler = on_signal}, old[3];
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);
    for (int r = 0; r < world_size; r++) {
        k = base;
        snprintf(vars[0], sizeof vars[0], "RANK=%d", r);
        snprintf(vars[1], sizeof vars[1], "LOCAL_RANK=%d", r);
        snprintf(vars[2], sizeof vars[2], "WORLD_SIZE=%d", world_size);
        snprintf(vars[3], sizeof vars[3], "LOCAL_WORLD_SIZE=%d", world_size);
        snprintf(vars[4], sizeof vars[4], "MASTER_ADDR=127.0.0.1");
        snprintf(vars[5], sizeof vars[5], "MASTER_PORT=%d", port);
        snprintf(vars[6], sizeof vars[6], "NCCL_NVLS_ENABLE=0");
        /* The ranks die with this process (engine/tp_heartbeat.c), not left running when it is killed. */
        snprintf(vars[7], sizeof vars[7], "ORTHROS_TP_LAUNCHER_PID=%ld", (long)getpid());
        for (int v = 0; v < 8; v++) envp[k++] = vars[v];
        envp[k] = NULL;
        int err = posix_spawn(&pids[r], "/proc/self/exe", NULL, NULL, argv, envp);
        if (err) {
            fprintf(stderr, "orthros: error: cannot start rank %d: %s\n", r, strerror(err));
            status = 1;
            break;
        }
        started++;
    }
    free(envp);
    if (status)
        for (int r = 0; r < started; r++) kill(pids[r], SIGTERM);
    /* Wait. Rank 0 tells the others to exit when it does (its atexit), so after a normal exit of rank 0 they get
     * a grace period (60 s after success, 10 s after a failure, when one may be stuck in a collective waiting for
     * it); a rank > 0 that fails, rank 0 killed by a signal, or a signal to this process stops the rest at once
     * (SIGTERM, then SIGKILL 10 s later). */
    int remaining = started, first_fail = -1, stopping = status != 0, killed = 0, grace = 10;
    struct timespec t_stop = {0}, now;
    if (stopping) clock_gettime(CLOCK_MONOTONIC, &t_stop);
    while (remaining > 0) {
        for (int r = 0; r < started; r++) {
            int st;
            if (done[r] || waitpid(pids[r], &st, WNOHANG) != pids[r]) continue;
            done[r] = 1;
            remaining--;
            codes[r] = exit_code(st);
            if (stopping || (!codes[r] && r > 0)) continue;
            if (codes[r] && first_fail < 0) first_fail = r;
            if (r > 0 || !WIFEXITED(st)) {
                /* A rank that exits has said why on its own line; one killed by a signal could not. */
                if (remaining && !WIFEXITED(st))
                    fprintf(stderr, "orthros: rank %d exited with status %d; stopping the other ranks\n", r, codes[r]);
                for (int q = 0; q < started; q++)
                    if (!done[q]) kill(pids[q], SIGTERM);
            } else {
                grace = codes[r] ? 10 : 60;
            }
            stopping = 1;
            clock_gettime(CLOCK_MONOTONIC, &t_stop);
        }
        if (launch_signal && !stopping) {
            for (int q = 0; q < started; q++)
                if (!done[q]) kill(pids[q], launch_signal);
            stopping = 1;
            clock_gettime(CLOCK_MONOTONIC, &t_stop);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited = stopping ? (long)(now.tv_sec - t_stop.tv_sec) : 0;
        if (stopping && remaining && !killed && waited >= grace) {
            for (int q = 0; q < started; q++)
                if (!done[q]) kill(pids[q], SIGKILL);
            killed = 1;
        }
        if (remaining) usleep(20000);
    }
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
    if (first_fail >= 0) return codes[first_fail];
    if (launch_signal) return 128 + launch_signal;
    for (int r = 0; r < started; r++)
        if (codes[r] > status) status = codes[r];
    return status;
}

/* ---- the entry ---- */

int orthros_ranks_main(const orthros_ranks_request *r, int *status, int *rank)
{
    int tp = r->tp;
    const char *device = r->device;
    *status = 0;
    *rank = -1;
    if (!device || !strcmp(device, "auto")) device = orthros_cuda_available() ? "cuda" : "cpu";
    const char *ws = orthros_tp_env_world_size();
    int launched = ws != NULL;
    const char *procs = getenv("ORTHROS_TP_PROCESSES");
    int cpu = !strcmp(device, "cpu") && procs && !strcmp(procs, "1");
    if (strcmp(device, "cuda") && !cpu) {
        if (launched && !strcmp(device, "cpu") && strcmp(ws, "1")) {
            *status = 2;
            return orthros_error(ORTHROS_EINVAL,
                                 "--device cpu runs every rank as a thread of one process; do not start it as %s ranks "
                                 "(WORLD_SIZE) unless ORTHROS_TP_PROCESSES=1",
                                 ws);
        }
        return 0; /* cpu: the ranks are threads (model.c); an unknown device is the command's error */
    }
    int rc = 0;
    if (!launched) {
        if (tp == 1) return 0;
        if (!cpu && (rc = orthros_tp_launch_check(tp))) {
            *status = 1;
            return rc;
        }
        *status = launch(r->argv, tp);
        return 1;
    }
    orthros_backend *be = NULL;
    rc = orthros_tp_join(tp, cpu, rank, &be);
    if (!rc && *rank == 0) return 0; /* rank 0 runs the command */
    if (!rc) rc = serve(be);
    orthros_backend_free(be);
    *status = rc ? 1 : 0;
    return rc ? rc : 1;
}
