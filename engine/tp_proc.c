/* Tensor-parallel ranks as processes (the cuda backend), docs/tensor-parallel.md:
 *   - the launch: `orthros CMD --tp N --device cuda` without a launcher's environment starts N copies of this
 *     binary (posix_spawn of /proc/self/exe, no shell) with the environment torchrun gives its workers, waits
 *     for them and returns the worst exit status;
 *   - the world: a process whose environment names its rank (RANK / WORLD_SIZE / LOCAL_RANK as torchrun sets
 *     them, or OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK as mpirun does) takes GPU LOCAL_RANK, meets the
 *     others over TCP at MASTER_ADDR:MASTER_PORT (rank 0 listens, hands out NCCL's unique id and keeps the
 *     connections as the control channel) and joins the NCCL communicator with ncclCommInitRank, so the same
 *     code runs across nodes;
 *   - the control channel: rank 0 runs the command; ranks 1..N-1 run serve() until rank 0 sends EXIT (at its
 *     exit) or goes away, making on their shard every model and session call rank 0 makes on its own.
 * NVLink SHARP (multicast objects) is never used: NCCL_NVLS_ENABLE=0 is set in every rank's environment before
 * NCCL starts.
 * With ORTHROS_TP_PROCESSES=1, `--device cpu` runs its ranks the same way, as processes, with an all-reduce over
 * the control connections instead of NCCL: the whole machinery above, tested without GPUs. */
#define _GNU_SOURCE
#include "tp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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

#define TP_MAGIC 0x5054524fu /* "ORTP" */
#define TP_PROTOCOL (4 + 1000 * (int)sizeof(orthros_tp_cmd) + 100000 * (int)sizeof(orthros_device_info))
#define TP_MAX_PAYLOAD ((uint64_t)1 << 32) /* 1G tokens */
#define TP_MAX_OBJECTS 256

static struct {
    int active;
    orthros_comm comm;
    int socks[ORTHROS_TP_MAX_WORLD];   /* rank 0: to rank r; rank r > 0: socks[0] to rank 0 */
    orthros_device_info devices[ORTHROS_TP_MAX_WORLD];
    int next_id;
} world;

orthros_comm *orthros_tp_world(void) { return world.active ? &world.comm : NULL; }

const orthros_device_info *orthros_tp_world_device(int rank)
{
    return world.active && rank > 0 && rank < world.comm.world ? &world.devices[rank] : NULL;
}

int orthros_tp_devices(const orthros_backend *be, int tp, orthros_device_info *out, int max)
{
    int n = world.active ? world.comm.world : (tp > 0 ? tp : 1);
    for (int r = 0; r < n && r < max; r++)
        out[r] = world.active && r != world.comm.rank ? world.devices[r] : be->info;
    return n;
}

int orthros_tp_new_id(void) { return ++world.next_id; }

/* A string field of a device another rank sent: NUL-terminated within its array, control characters replaced
 * (result files refuse them). */
static void clean_text(char *s, size_t cap)
{
    s[cap - 1] = '\0';
    for (unsigned char *p = (unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) *p = '?';
}

static void clean_info(orthros_device_info *d)
{
    clean_text(d->name, sizeof d->name);
    clean_text(d->kernels, sizeof d->kernels);
    clean_text(d->pci_bus_id, sizeof d->pci_bus_id);
    clean_text(d->uuid, sizeof d->uuid);
    clean_text(d->kind, sizeof d->kind);
    clean_text(d->host, sizeof d->host);
}

/* ---- sockets ---- */

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0 when n bytes were read, -1 on an error or end of stream (errno 0 then). */
static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = 0;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void set_timeout(int fd, int seconds)
{
    struct timeval tv = {seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* commands are small and latency counts */
}

static int timeout_seconds(void)
{
    const char *t = getenv("ORTHROS_TP_TIMEOUT");
    long v = t && *t ? strtol(t, NULL, 10) : 0;
    return v > 0 && v < 86400 ? (int)v : 300;
}

int orthros_tp_send(orthros_tp_cmd *cmd, const void *payload)
{
    if (!world.active || world.comm.rank != 0) return 0;
    cmd->magic = TP_MAGIC;
    for (int r = 1; r < world.comm.world; r++)
        if (write_all(world.socks[r], cmd, sizeof *cmd) ||
            (cmd->payload_bytes && write_all(world.socks[r], payload, (size_t)cmd->payload_bytes)))
            return orthros_error(ORTHROS_EDEVICE, "rank %d is gone (sending to it: %s)", r,
                                 errno ? strerror(errno) : "connection closed");
    return 0;
}

typedef struct {
    uint32_t magic;
    int32_t rc;
    char msg[1016];
} tp_reply;

int orthros_tp_gather_status(void)
{
    if (!world.active || world.comm.rank != 0) return 0;
    int rc = 0;
    char why[1100] = "";
    for (int r = 1; r < world.comm.world; r++) {
        tp_reply rep;
        if (read_all(world.socks[r], &rep, sizeof rep) || rep.magic != TP_MAGIC) {
            if (!rc) {
                rc = ORTHROS_EDEVICE;
                snprintf(why, sizeof why, "rank %d is gone (its answer: %s)", r, errno ? strerror(errno) : "connection closed");
            }
            continue;
        }
        rep.msg[sizeof rep.msg - 1] = '\0';
        if (rep.rc && !rc) {
            rc = rep.rc < 0 && rep.rc >= ORTHROS_ERANGE ? rep.rc : ORTHROS_EDEVICE;
            snprintf(why, sizeof why, "rank %d: %s", r, rep.msg);
        }
    }
    return rc ? orthros_error(rc, "%s", why) : 0;
}

int orthros_comm_allreduce_tcp_f32(orthros_comm *c, float *x, size_t n)
{
    static float *tmp;
    static size_t cap;
    if (!world.active || !c || !c->tcp) return orthros_error(ORTHROS_EINVAL, "all-reduce: not a socket communicator");
    size_t bytes = n * sizeof(float);
    if (c->rank > 0) {
        if (write_all(world.socks[0], x, bytes) || read_all(world.socks[0], x, bytes))
            return orthros_error(ORTHROS_EDEVICE, "all-reduce: rank 0 is gone");
        return 0;
    }
    if (n > cap) {
        free(tmp);
        cap = 0;
        if (!(tmp = malloc(bytes))) return orthros_error(ORTHROS_ENOMEM, "out of host memory for the all-reduce");
        cap = n;
    }
    for (int r = 1; r < c->world; r++) {
        if (read_all(world.socks[r], tmp, bytes)) return orthros_error(ORTHROS_EDEVICE, "all-reduce: rank %d is gone", r);
        for (size_t i = 0; i < n; i++) x[i] += tmp[i];
    }
    for (int r = 1; r < c->world; r++)
        if (write_all(world.socks[r], x, bytes)) return orthros_error(ORTHROS_EDEVICE, "all-reduce: rank %d is gone", r);
    return 0;
}

/* ---- the environment ---- */

typedef struct {
    int rank, world, local_rank;
    const char *addr;
    int port;
} tp_env;

static const char *env_first(const char *a, const char *b)
{
    const char *v = getenv(a);
    if (v && *v) return v;
    v = getenv(b);
    return v && *v ? v : NULL;
}

static int env_is_launched(void) { return env_first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE") != NULL; }

static int parse_nonneg(const char *s, long max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max) return -1;
    *out = (int)v;
    return 0;
}

static int env_read(tp_env *e)
{
    const char *ws = env_first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"), *rk = env_first("RANK", "OMPI_COMM_WORLD_RANK");
    const char *lr = env_first("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
    memset(e, 0, sizeof *e);
    if (!ws || parse_nonneg(ws, ORTHROS_TP_MAX_WORLD, &e->world) || e->world < 1)
        return orthros_error(ORTHROS_EINVAL, "WORLD_SIZE=%s is not a world size in [1, %d]", ws ? ws : "", ORTHROS_TP_MAX_WORLD);
    if (!rk || parse_nonneg(rk, e->world - 1, &e->rank))
        return orthros_error(ORTHROS_EINVAL, "RANK=%s is not a rank of a world of %d", rk ? rk : "(unset)", e->world);
    e->local_rank = e->rank;
    if (lr && parse_nonneg(lr, ORTHROS_TP_MAX_WORLD - 1, &e->local_rank))
        return orthros_error(ORTHROS_EINVAL, "LOCAL_RANK=%s is not a local rank", lr);
    if (e->world == 1) return 0; /* a world of one needs no network */
    e->addr = getenv("MASTER_ADDR");
    const char *mp = getenv("MASTER_PORT"), *own = getenv("ORTHROS_TP_PORT");
    if (!e->addr || !*e->addr || !mp)
        return orthros_error(ORTHROS_EINVAL,
                             "MASTER_ADDR and MASTER_PORT must name rank 0's host and a port (torchrun sets them; "
                             "with mpirun pass -x MASTER_ADDR=HOST -x MASTER_PORT=PORT)");
    if (parse_nonneg(mp, 65535, &e->port) || e->port < 1)
        return orthros_error(ORTHROS_EINVAL, "MASTER_PORT=%s is not a port", mp);
    /* torchrun's agent serves its own store on MASTER_PORT when it says so; orthros then takes the next port. */
    const char *agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    if (agent && !strcmp(agent, "True")) e->port++;
    if (own && (parse_nonneg(own, 65535, &e->port) || e->port < 1))
        return orthros_error(ORTHROS_EINVAL, "ORTHROS_TP_PORT=%s is not a port", own);
    if (e->port > 65535) return orthros_error(ORTHROS_EINVAL, "MASTER_PORT=%s leaves no port for orthros", mp);
    return 0;
}

/* ---- the bootstrap: rank 0 listens, the others connect; NCCL's unique id goes out over these connections ---- */

typedef struct {
    uint32_t magic;
    int32_t protocol, rank, world;
    orthros_device_info info;
} tp_hello;

typedef struct {
    uint32_t magic;
    int32_t world;
    unsigned char id[128];
} tp_welcome;

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) return orthros_error(ORTHROS_EIO, "socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, ORTHROS_TP_MAX_WORLD)) {
        int e = errno;
        close(fd);
        return orthros_error(ORTHROS_EIO, "rank 0 cannot listen on port %d: %s (set ORTHROS_TP_PORT to a free port)",
                             port, strerror(e));
    }
    return fd;
}

static int accept_ranks(const tp_env *e)
{
    int lfd = listen_on(e->port), to = timeout_seconds();
    if (lfd < 0) return lfd;
    int rc = 0;
    for (int k = 1; k < e->world && !rc; k++) {
        struct pollfd p = {lfd, POLLIN, 0};
        int pr;
        do pr = poll(&p, 1, to * 1000);
        while (pr < 0 && errno == EINTR);
        if (pr <= 0) {
            rc = orthros_error(ORTHROS_EDEVICE, "rank 0: %d of %d ranks connected within %d s (ORTHROS_TP_TIMEOUT)", k - 1,
                               e->world - 1, to);
            break;
        }
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            rc = orthros_error(ORTHROS_EIO, "accept: %s", strerror(errno));
            break;
        }
        set_timeout(fd, to);
        tp_hello h;
        if (read_all(fd, &h, sizeof h) || h.magic != TP_MAGIC || h.protocol != TP_PROTOCOL || h.world != e->world ||
            h.rank < 1 || h.rank >= e->world || world.socks[h.rank] > 0) {
            close(fd); /* not one of ours, a different build, or a rank twice */
            rc = orthros_error(ORTHROS_EDEVICE,
                               "rank 0: a connection to port %d is not a rank of this world (another orthros build, or "
                               "a rank started twice)",
                               e->port);
            break;
        }
        world.socks[h.rank] = fd;
        clean_info(&h.info);
        world.devices[h.rank] = h.info;
    }
    close(lfd);
    return rc;
}

static int connect_rank0(const tp_env *e, const orthros_device_info *info)
{
    char port[16];
    snprintf(port, sizeof port, "%d", e->port);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gr = getaddrinfo(e->addr, port, &hints, &res);
    if (gr) return orthros_error(ORTHROS_EIO, "MASTER_ADDR=%s: %s", e->addr, gai_strerror(gr));
    int to = timeout_seconds(), fd = -1, err = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) { /* rank 0 may not be listening yet */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) break;
        err = errno;
        if (fd >= 0) close(fd);
        fd = -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= to) break;
        usleep(100000);
    }
    freeaddrinfo(res);
    if (fd < 0)
        return orthros_error(ORTHROS_EDEVICE, "rank %d could not reach rank 0 at %s:%d within %d s: %s", e->rank, e->addr,
                             e->port, to, strerror(err));
    set_timeout(fd, to);
    tp_hello h = {TP_MAGIC, TP_PROTOCOL, e->rank, e->world, *info};
    if (write_all(fd, &h, sizeof h)) {
        close(fd);
        return orthros_error(ORTHROS_EDEVICE, "rank %d: sending to rank 0: %s", e->rank, strerror(errno));
    }
    world.socks[0] = fd;
    return 0;
}

/* Rank 0 at exit: the other ranks stop serving and exit too. */
static void world_shutdown(void)
{
    orthros_tp_cmd cmd = {.op = ORTHROS_TP_EXIT};
    orthros_tp_send(&cmd, NULL);
    for (int r = 1; r < world.comm.world; r++) close(world.socks[r]);
}

static int needs_nccl(int rc, int tp)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "--tp %d needs NCCL", tp);
    return orthros_error_prefix(rc, prefix);
}

/* Joins the launched world as rank e->rank: its GPU, the bootstrap, the NCCL communicator. Ranks > 0 create
 * their backend here (*be) and send its device description to rank 0. */
static int join_world(const tp_env *e, int cpu, orthros_backend **be)
{
    *be = NULL;
    int rc = 0;
    if (cpu) {
        if (e->rank > 0 && (rc = orthros_backend_cpu_create(be))) return rc;
    } else {
        setenv("NCCL_NVLS_ENABLE", "0", 1);
        /* NCCL's buffers at init rather than at the first all-reduce, so that the free memory a session is sized
         * from already counts them. */
        setenv("NCCL_RUNTIME_CONNECT", "0", 0);
        if ((rc = orthros_nccl_load())) return needs_nccl(rc, e->world);
        int count = orthros_cuda_device_count(), dev = e->local_rank;
        if (count < 1) return orthros_error(ORTHROS_EDEVICE, "rank %d: no usable CUDA device", e->rank);
        if (dev >= count) {
            if (count != 1) /* one GPU visible per process (CUDA_VISIBLE_DEVICES set per rank) is fine */
                return orthros_error(ORTHROS_EDEVICE, "rank %d has LOCAL_RANK %d, but this host has %d GPUs", e->rank,
                                     dev, count);
            dev = 0;
        }
        if ((rc = orthros_cuda_set_device(dev))) return rc;
        if (e->rank > 0 && (rc = orthros_backend_cuda_create(be))) return rc;
    }
    unsigned char id[128] = {0};
    tp_welcome w = {TP_MAGIC, e->world, {0}};
    for (int r = 0; r < ORTHROS_TP_MAX_WORLD; r++) world.socks[r] = -1;
    if (e->rank == 0) {
        if (e->world > 1 && (rc = accept_ranks(e))) return rc;
        if (!cpu && (rc = orthros_nccl_unique_id(id))) return rc;
        memcpy(w.id, id, sizeof id);
        for (int r = 1; r < e->world; r++)
            if (write_all(world.socks[r], &w, sizeof w))
                return orthros_error(ORTHROS_EDEVICE, "rank 0: sending NCCL's id to rank %d: %s", r, strerror(errno));
    } else {
        if ((rc = connect_rank0(e, &(*be)->info))) return rc;
        if (read_all(world.socks[0], &w, sizeof w) || w.magic != TP_MAGIC || w.world != e->world)
            return orthros_error(ORTHROS_EDEVICE, "rank %d: no answer from rank 0 at %s:%d", e->rank, e->addr, e->port);
        memcpy(id, w.id, sizeof id);
    }
    void *comm = NULL;
    if (!cpu && (rc = orthros_nccl_comm_init(&comm, e->world, id, e->rank))) return rc;
    /* From here on a rank waits as long as it takes (a 70B load, a 1M-token prefill): no timeouts. */
    for (int r = 0; r < e->world; r++)
        if (world.socks[r] >= 0) set_timeout(world.socks[r], 0);
    world.comm = (orthros_comm){.rank = e->rank, .world = e->world, .nccl = comm, .tcp = cpu};
    world.active = 1;
    if (e->rank == 0) atexit(world_shutdown);
    /* A stopped or vanished peer ends the run (tp_heartbeat.c), since no receive here may time out. */
    if (e->world > 1 && (rc = orthros_tp_heartbeat_start(e->rank, e->world, e->addr, e->port, world.socks))) return rc;
    return 0;
}

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

static int reply(int rc)
{
    tp_reply r = {TP_MAGIC, rc, ""};
    if (rc) snprintf(r.msg, sizeof r.msg, "%s", orthros_last_error());
    return write_all(world.socks[0], &r, sizeof r) ? orthros_error(ORTHROS_EDEVICE, "answering rank 0: %s", strerror(errno))
                                                   : 0;
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
        const char *spec = payload, *nul = payload ? memchr(payload, '\0', (size_t)cmd->payload_bytes) : NULL;
        const char *arch = nul ? nul + 1 : NULL;
        if (!nul || !memchr(arch, '\0', (size_t)cmd->payload_bytes - (size_t)(arch - payload)))
            return orthros_error(ORTHROS_EFORMAT, "a malformed load command from rank 0");
        orthros_arch_opts ao;
        orthros_arch_opts_default(&ao);
        ao.arch = *arch ? arch : NULL;
        ao.fmap = (int)cmd->a[0], ao.feature_dim = (int)cmd->a[1], ao.tail = (int)cmd->a[2];
        ao.window = (int)cmd->a[3], ao.hybrid_every = (int)cmd->a[4], ao.tp = (int)cmd->a[5], ao.eps = cmd->eps;
        orthros_model *m = NULL;
        rc = orthros_model_load(&m, be, spec, &ao, cmd->seed);
        if (!rc && (rc = object_add(models, cmd->id, 0, m))) orthros_model_free(m);
        return reply(rc);
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
        return reply(rc);
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
        return reply(rc);
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
        if (read_all(world.socks[0], &cmd, sizeof cmd)) {
            rc = orthros_error(ORTHROS_EDEVICE, "rank 0 closed the control connection (%s) without saying EXIT",
                               errno ? strerror(errno) : "end of stream");
            break;
        }
        if (cmd.magic != TP_MAGIC || cmd.payload_bytes > TP_MAX_PAYLOAD) {
            rc = orthros_error(ORTHROS_EFORMAT, "a malformed command from rank 0");
            break;
        }
        if (cmd.op == ORTHROS_TP_EXIT) break;
        free(payload);
        payload = NULL;
        if (cmd.payload_bytes) {
            /* int32 tokens are read in place: malloc's alignment suffices */
            if (!(payload = malloc((size_t)cmd.payload_bytes))) {
                rc = orthros_error(ORTHROS_ENOMEM, "out of host memory for a %llu-byte command",
                                   (unsigned long long)cmd.payload_bytes);
                break;
            }
            if (read_all(world.socks[0], payload, (size_t)cmd.payload_bytes)) {
                rc = orthros_error(ORTHROS_EDEVICE, "rank 0 closed the control connection mid-command");
                break;
            }
        }
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
        /* The ranks die with this process (tp_heartbeat.c), not left running when it is killed. */
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

/* ---- main's entry ---- */

static int is_model_command(const char *c)
{
    return !strcmp(c, "logits") || !strcmp(c, "generate") || !strcmp(c, "bench") || !strcmp(c, "eval");
}

/* The value of --NAME V or --NAME=V in argv[2..], or NULL; *help is set when --help / -h is there. */
static const char *arg_value(int argc, char **argv, const char *name, int *help)
{
    size_t len = strlen(name);
    const char *v = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) *help = 1;
        if (strncmp(a, "--", 2) || strncmp(a + 2, name, len)) continue;
        if (a[2 + len] == '=') v = a + 3 + len;
        else if (!a[2 + len] && i + 1 < argc) v = argv[++i];
    }
    return v;
}

int orthros_tp_main(int argc, char **argv, int *status)
{
    if (argc < 2 || !is_model_command(argv[1])) return 0;
    int help = 0, tp = 0;
    const char *tp_arg = arg_value(argc, argv, "tp", &help), *device = arg_value(argc, argv, "device", &help);
    /* Without --tp, or with a bad value (the command's own parser reports it), nothing to do here. */
    if (help || !tp_arg || parse_nonneg(tp_arg, INT_MAX, &tp) || tp < 1) return 0;
    if (!device || !strcmp(device, "auto")) device = orthros_cuda_available() ? "cuda" : "cpu";
    int launched = env_is_launched();
    const char *procs = getenv("ORTHROS_TP_PROCESSES");
    int cpu = !strcmp(device, "cpu") && procs && !strcmp(procs, "1");
    if (strcmp(device, "cuda") && !cpu) {
        const char *ws = env_first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
        if (launched && !strcmp(device, "cpu") && strcmp(ws, "1")) {
            fprintf(stderr,
                    "orthros %s: error: --device cpu runs every rank as a thread of one process; do not start it as "
                    "%s ranks (WORLD_SIZE) unless ORTHROS_TP_PROCESSES=1\n",
                    argv[1], ws);
            *status = 2;
            return 1;
        }
        return 0; /* cpu: the ranks are threads (model.c); an unknown device is the command's error */
    }
    int rc = 0;
    if (!launched) {
        if (tp == 1) return 0;
        int count = orthros_cuda_device_count();
        if (cpu)
            rc = 0;
        else if (!ORTHROS_HAVE_CUDA)
            rc = orthros_error(ORTHROS_EUNSUPPORTED, "this build has no CUDA backend (configure with nvcc on the PATH)");
        else if ((rc = orthros_nccl_load()))
            rc = needs_nccl(rc, tp);
        else if (count < tp)
            rc = orthros_error(ORTHROS_EINVAL, "--tp %d needs %d GPUs, %d found (one process per GPU)", tp, tp, count);
        if (rc) {
            fprintf(stderr, "orthros %s: error: %s\n", argv[1], orthros_last_error());
            *status = 1;
            return 1;
        }
        *status = launch(argv, tp);
        return 1;
    }
    tp_env e;
    orthros_backend *be = NULL;
    if (!(rc = env_read(&e)) && tp != e.world)
        rc = orthros_error(ORTHROS_EINVAL, "--tp %d, but the launcher started %d ranks (WORLD_SIZE=%d)", tp, e.world, e.world);
    if (!rc) rc = orthros_tp_die_with_launcher();
    if (!rc) rc = join_world(&e, cpu, &be);
    if (!rc && e.rank == 0) return 0; /* rank 0 runs the command */
    if (!rc) rc = serve(be);
    orthros_backend_free(be);
    if (rc) fprintf(stderr, "orthros %s: rank %d: error: %s\n", argv[1], e.rank, orthros_last_error());
    *status = rc ? 1 : 0;
    return 1;
}
