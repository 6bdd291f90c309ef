/* Liveness of a world of ranks as processes (see tp_world.h): a rank that is stopped (SIGSTOP, a debugger, a frozen host)
 * or gone without closing its connection would block the others for ever in a receive that may legitimately
 * take minutes (a load, a long prefill between two all-reduces), so no receive can carry a timeout. Instead every
 * rank runs a thread that sends a small UDP datagram every interval and watches for its peers': rank 0 for every
 * other rank, the others for rank 0. A peer silent for the timeout ends this process with one line and status 1;
 * the launcher (or torchrun, mpirun) then ends the rest. The datagrams go to rank 0's own port number (UDP, beside
 * its TCP listener), so a launch needs no further configuration; where UDP cannot pass, a peer never heard from is
 * never watched (the control connections still report a rank that exits). ORTHROS_TP_HEARTBEAT sets the timeout
 * in seconds (default 60; 0 turns the watch off; read and checked by orthros_tp_join with the rest of the world's
 * environment).
 *
 * The first contact is made before the world runs: rank 0 returns from orthros_tp_heartbeat_start only once it has
 * heard from every rank and sent each one a datagram (or HB_FIRST_MS have passed). Without it a rank stopped in
 * the moment after the world started, before its first datagram reached rank 0 (sent before rank 0's socket was
 * bound, say), was never watched and the run hung for ever (seen under load in the tp_liveness test). */
#define _GNU_SOURCE
#include "tp_world.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HB_MAGIC 0x48425254u /* "TRBH" */
#define HB_FIRST_MS 10000      /* rank 0's wait for the first contact with every rank */

typedef struct {
    uint32_t magic;
    int32_t rank, world, port;
} hb_packet;

static struct {
    int fd, rank, world, port, timeout_ms, interval_ms;
    struct sockaddr_in peer[ORTHROS_TP_MAX_WORLD]; /* where each peer's datagrams come from (rank 0: every rank) */
    struct in_addr expect[ORTHROS_TP_MAX_WORLD];   /* rank 0: each rank's address, from its control connection */
    int heard[ORTHROS_TP_MAX_WORLD];
    int greeted[ORTHROS_TP_MAX_WORLD]; /* rank 0: a datagram was sent to the rank (read by the starting thread) */
    struct timespec last[ORTHROS_TP_MAX_WORLD];
} hb;

static long ms_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* Ends this process: the one line, then _exit (the other threads may be blocked in a receive that never returns). */
static void die(int who)
{
    char line[256];
    int n = snprintf(line, sizeof line,
                     "orthros: rank %d: rank %d sent no heartbeat for %d s (stopped or gone); ending the run "
                     "(ORTHROS_TP_HEARTBEAT)\n",
                     hb.rank, who, hb.timeout_ms / 1000);
    if (n > 0 && write(2, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0) {
        /* nothing left to tell */
    }
    _exit(1);
}

static void send_to(const struct sockaddr_in *to)
{
    hb_packet p = {HB_MAGIC, hb.rank, hb.world, hb.port};
    sendto(hb.fd, &p, sizeof p, MSG_DONTWAIT, (const struct sockaddr *)to, sizeof *to);
}

static void *watch(void *arg)
{
    (void)arg;
    struct timespec last_send = {0};
    for (;;) {
        struct pollfd pf = {hb.fd, POLLIN, 0};
        int pr = poll(&pf, 1, hb.interval_ms);
        if (pr > 0) {
            hb_packet p;
            struct sockaddr_in from = {0};
            socklen_t fl = sizeof from;
            ssize_t n = recvfrom(hb.fd, &p, sizeof p, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
            /* Only this world's: the magic, the world size and port, a rank that makes sense, from its host. */
            if (n == (ssize_t)sizeof p && p.magic == HB_MAGIC && p.world == hb.world && p.port == hb.port &&
                p.rank >= 0 && p.rank < hb.world && p.rank != hb.rank && (hb.rank == 0 || p.rank == 0) &&
                (hb.rank != 0 || from.sin_addr.s_addr == hb.expect[p.rank].s_addr)) {
                if (hb.rank == 0) {
                    if (!hb.heard[p.rank]) last_send = (struct timespec){0}; /* a rank's first: answered at once */
                    hb.peer[p.rank] = from;
                }
                hb.heard[p.rank] = 1;
                clock_gettime(CLOCK_MONOTONIC, &hb.last[p.rank]);
            }
        }
        if (ms_since(&last_send) >= hb.interval_ms) {
            clock_gettime(CLOCK_MONOTONIC, &last_send);
            if (hb.rank == 0) {
                for (int r = 1; r < hb.world; r++)
                    if (hb.heard[r]) {
                        send_to(&hb.peer[r]);
                        __atomic_store_n(&hb.greeted[r], 1, __ATOMIC_RELEASE);
                    }
            } else {
                send_to(&hb.peer[0]);
            }
        }
        for (int r = 0; r < hb.world; r++)
            if (r != hb.rank && hb.heard[r] && ms_since(&hb.last[r]) > hb.timeout_ms) die(r);
    }
    return NULL;
}

int orthros_tp_die_with_launcher(void)
{
    const char *lp = getenv("ORTHROS_TP_LAUNCHER_PID");
    if (!lp || !*lp) return 0;
    char *end;
    long pid = strtol(lp, &end, 10);
    if (*end || pid < 1) return orthros_error(ORTHROS_EINVAL, "ORTHROS_TP_LAUNCHER_PID=%s is not a pid", lp);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return orthros_error(ORTHROS_EIO, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
    /* The launcher may have gone between the spawn and the prctl: then no signal will come. */
    if (getppid() != (pid_t)pid) return orthros_error(ORTHROS_EDEVICE, "the launcher (pid %ld) is gone", pid);
    return 0;
}

int orthros_tp_heartbeat_start(int rank, int world, const char *addr, int port, const int *socks, int timeout)
{
    if (world < 2 || timeout == 0) return 0;
    memset(&hb, 0, sizeof hb);
    hb.rank = rank, hb.world = world, hb.port = port;
    hb.timeout_ms = timeout * 1000;
    hb.interval_ms = hb.timeout_ms / 6 < 1000 ? (hb.timeout_ms / 6 > 100 ? hb.timeout_ms / 6 : 100) : 1000;
    hb.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (hb.fd < 0) return orthros_error(ORTHROS_EIO, "heartbeat socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (rank == 0) {
        /* rank 0 listens on its own port number; each rank's datagrams must come from its control connection's host */
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        for (int r = 1; r < world; r++) {
            struct sockaddr_in pa;
            socklen_t pl = sizeof pa;
            if (socks[r] >= 0 && getpeername(socks[r], (struct sockaddr *)&pa, &pl) == 0) hb.expect[r] = pa.sin_addr;
        }
    } else {
        char ps[16];
        snprintf(ps, sizeof ps, "%d", port);
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *res = NULL;
        int gr = getaddrinfo(addr, ps, &hints, &res);
        if (gr || !res) {
            close(hb.fd);
            return orthros_error(ORTHROS_EIO, "heartbeat: MASTER_ADDR=%s: %s", addr, gai_strerror(gr));
        }
        memcpy(&hb.peer[0], res->ai_addr, sizeof hb.peer[0]);
        freeaddrinfo(res);
        a.sin_addr.s_addr = htonl(INADDR_ANY); /* an ephemeral port: rank 0 answers where the datagrams come from */
    }
    if (bind(hb.fd, (struct sockaddr *)&a, sizeof a)) {
        /* Not a reason to refuse the run: it goes on unwatched, and says so. */
        fprintf(stderr, "orthros: rank %d: no heartbeat (UDP port %d: %s): a stopped rank will not be noticed\n", rank,
                rank == 0 ? port : 0, strerror(errno));
        close(hb.fd);
        return 0;
    }
    pthread_attr_t at;
    pthread_t th;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int err = pthread_create(&th, &at, watch, NULL);
    pthread_attr_destroy(&at);
    if (err) {
        close(hb.fd);
        return orthros_error(ORTHROS_EIO, "heartbeat thread: %s", strerror(err));
    }
    if (rank > 0) {
        send_to(&hb.peer[0]); /* at once: rank 0 learns where this rank is */
        return 0;
    }
    /* Rank 0: the first contact with every rank (see the top), each rank's next datagram at most an interval away. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 1; r < world; r++) {
        while (!__atomic_load_n(&hb.greeted[r], __ATOMIC_ACQUIRE) && ms_since(&t0) < HB_FIRST_MS) usleep(2000);
        if (!__atomic_load_n(&hb.greeted[r], __ATOMIC_ACQUIRE))
            fprintf(stderr, "orthros: rank 0: no heartbeat from rank %d within %d s (UDP blocked?): a stopped rank %d "
                            "will not be noticed\n", r, HB_FIRST_MS / 1000, r);
    }
    return 0;
}
