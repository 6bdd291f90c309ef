/* Tensor-parallel ranks as processes, the transport (docs/tensor-parallel.md): the world of ranks, the control
 * channel and the all-reduce over it; nothing here knows a model or a command.
 *   - the world: a process whose environment names its rank (RANK / WORLD_SIZE / LOCAL_RANK as torchrun sets
 *     them, or OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK as mpirun does) takes GPU LOCAL_RANK, meets the
 *     others over TCP at MASTER_ADDR:MASTER_PORT (rank 0 listens, hands out NCCL's unique id and keeps the
 *     connections as the control channel) and joins the NCCL communicator with ncclCommInitRank, so the same
 *     code runs across nodes;
 *   - the control channel: rank 0 sends every model and session call to the others (orthros_tp_send, from
 *     model.c and load.c) and gathers their answers; ranks 1..N-1 read the calls (orthros_tp_recv) and answer
 *     them (orthros_tp_reply) in the rank server above the model (ranks/ranks.c), until rank 0 sends EXIT (at
 *     its exit) or goes away.
 * NVLink SHARP (multicast objects) is never used: NCCL_NVLS_ENABLE=0 is set in every rank's environment before
 * NCCL starts.
 * With ORTHROS_TP_PROCESSES=1, `--device cpu` runs its ranks the same way, as processes, with an all-reduce over
 * the control connections instead of NCCL (orthros_comm_allreduce_tcp_f32): the whole machinery, tested without
 * GPUs. */
#define _GNU_SOURCE
#define ORTHROS_TP_WORLD_IMPL /* the functions, not the analyzer's models of them (tp_world.h) */
#include "tp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TP_MAGIC 0x5054524fu /* "ORTP" */
#define TP_PROTOCOL (4 + 1000 * (int)sizeof(orthros_tp_cmd) + 100000 * (int)sizeof(orthros_device_info))
#define TP_MAX_PAYLOAD ((uint64_t)1 << 32) /* 1G tokens */

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

/* The others' answers: the first failure, named by its rank. */
static int gather_others(void)
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

int orthros_tp_gather_status(int rc)
{
    char mine[1024];
    snprintf(mine, sizeof mine, "%s", orthros_last_error());
    int rc_others = gather_others();
    return rc ? orthros_error(rc, "%s", mine) : rc_others;
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
    int timeout_s;   /* ORTHROS_TP_TIMEOUT: the bootstrap's wait for the other ranks (1-86400, default 300) */
    int heartbeat_s; /* ORTHROS_TP_HEARTBEAT: a peer's silence that ends the run (0-86400, default 60; 0 off) */
} tp_env;

static const char *env_first(const char *a, const char *b)
{
    const char *v = getenv(a);
    if (v && *v) return v;
    v = getenv(b);
    return v && *v ? v : NULL;
}

static int parse_nonneg(const char *s, long max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max) return -1;
    *out = (int)v;
    return 0;
}

/* A whole number of seconds from lo to hi, digits alone, in the environment variable `name` into *out (dflt where
 * unset or empty); anything else is refused, naming the variable. */
static int env_seconds(const char *name, int lo, int hi, int dflt, int *out)
{
    const char *t = getenv(name);
    *out = dflt;
    if (t && *t && (t[0] < '0' || t[0] > '9' || parse_nonneg(t, hi, out) || *out < lo))
        return orthros_error(ORTHROS_EINVAL, "%s=%.40s: a whole number of seconds, %d-%d", name, t, lo, hi);
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
    /* the two timeouts: refused here, on every rank before any connects */
    int rc = env_seconds("ORTHROS_TP_TIMEOUT", 1, 86400, 300, &e->timeout_s);
    return rc ? rc : env_seconds("ORTHROS_TP_HEARTBEAT", 0, 86400, 60, &e->heartbeat_s);
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
    int lfd = listen_on(e->port), to = e->timeout_s, rc = 0;
    if (lfd < 0) return lfd;
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
    int to = e->timeout_s, fd = -1, err = 0;
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
    if (e->world > 1 &&
        (rc = orthros_tp_heartbeat_start(e->rank, e->world, e->addr, e->port, world.socks, e->heartbeat_s)))
        return rc;
    return 0;
}

/* ---- ranks > 0: the calls from rank 0, and the answers ---- */

int orthros_tp_recv(orthros_tp_cmd *cmd, char **payload)
{
    free(*payload);
    *payload = NULL;
    if (read_all(world.socks[0], cmd, sizeof *cmd))
        return orthros_error(ORTHROS_EDEVICE, "rank 0 closed the control connection (%s) without saying EXIT",
                             errno ? strerror(errno) : "end of stream");
    if (cmd->magic != TP_MAGIC || cmd->payload_bytes > TP_MAX_PAYLOAD)
        return orthros_error(ORTHROS_EFORMAT, "a malformed command from rank 0");
    if (cmd->op == ORTHROS_TP_EXIT || !cmd->payload_bytes) return 0;
    /* int32 tokens are read in place: malloc's alignment suffices */
    if (!(*payload = malloc((size_t)cmd->payload_bytes)))
        return orthros_error(ORTHROS_ENOMEM, "out of host memory for a %llu-byte command",
                             (unsigned long long)cmd->payload_bytes);
    if (read_all(world.socks[0], *payload, (size_t)cmd->payload_bytes))
        return orthros_error(ORTHROS_EDEVICE, "rank 0 closed the control connection mid-command");
    return 0;
}

int orthros_tp_reply(int rc)
{
    tp_reply r = {TP_MAGIC, rc, ""};
    if (rc) snprintf(r.msg, sizeof r.msg, "%s", orthros_last_error());
    return write_all(world.socks[0], &r, sizeof r) ? orthros_error(ORTHROS_EDEVICE, "answering rank 0: %s", strerror(errno))
                                                   : 0;
}

/* ---- joining a launched world ---- */

const char *orthros_tp_env_world_size(void) { return env_first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"); }

int orthros_tp_launch_check(int tp)
{
    int rc = 0;
    if (!ORTHROS_HAVE_CUDA)
        rc = orthros_error(ORTHROS_EUNSUPPORTED, "this build has no CUDA backend (configure with nvcc on the PATH)");
    else if ((rc = orthros_nccl_load()))
        rc = needs_nccl(rc, tp);
    else {
        int count = orthros_cuda_device_count();
        if (count < tp)
            rc = orthros_error(ORTHROS_EINVAL, "--tp %d needs %d GPUs, %d found (one process per GPU)", tp, tp, count);
    }
    return rc;
}

int orthros_tp_join(int tp, int cpu, int *rank, orthros_backend **be)
{
    tp_env e;
    int rc;
    *be = NULL;
    rc = env_read(&e);
    *rank = e.rank;
    if (rc) return rc;
    if (tp != e.world)
        return orthros_error(ORTHROS_EINVAL, "--tp %d, but the launcher started %d ranks (WORLD_SIZE=%d)", tp, e.world, e.world);
    if ((rc = orthros_tp_die_with_launcher())) return rc;
    return join_world(&e, cpu, be);
}
