/* Ranks as processes that stop or vanish (issue 23): a rank stopped with SIGSTOP, or rank 0 stopped, used to block
 * the launcher and the other ranks for ever; killing the launcher left its ranks running. Here, on the cpu with
 * ORTHROS_TP_PROCESSES=1 and a 3 s heartbeat, each case must end within a bound, with a non-zero status and one line
 * saying which rank went silent; and the ranks must die with their launcher.
 * usage: test_tp_liveness PATH/TO/orthros */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin;
static char dir[4096];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The pid of the child of `parent` whose environment says RANK=rank, or -1. */
static pid_t rank_pid(pid_t parent, int rank)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;
    char want[32];
    snprintf(want, sizeof want, "RANK=%d", rank);
    while (d && (e = readdir(d)) && found < 0) {
        char path[300], buf[8192];
        long pid = strtol(e->d_name, NULL, 10), ppid = -1;
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')'); /* the name may hold spaces: the fields follow its last ')' */
        if (!rp || sscanf(rp + 2, "%*c %ld", &ppid) != 1 || ppid != parent) continue;
        snprintf(path, sizeof path, "/proc/%ld/environ", pid);
        f = fopen(path, "r");
        if (!f) continue;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
            if (!strcmp(buf + i, want)) found = (pid_t)pid;
    }
    if (d) closedir(d);
    return found;
}


/* Starts a 2-rank cpu bench as processes that runs for minutes; returns the launcher's pid once rank 0 runs it. */
static pid_t start(const char *json, const char *log)
{
    char *argv[] = {(char *)bin, "bench", "--model", "preset:tiny", "--device", "cpu", "--tp", "2", "--arch", "transformer",
                    "--ctx", "1024", "--phase", "prefill", "--reps", "100000", "--max-reps", "100000", "--timeout", "600",
                    "--json", (char *)json, "--quiet", NULL};
    unlink(json);
    setenv("ORTHROS_TP_PROCESSES", "1", 1);
    setenv("ORTHROS_TP_HEARTBEAT", "3", 1);
    pid_t pid = tu_spawn(argv, log);
    for (int i = 0; i < 3000 && !tu_lock_held(json); i++) usleep(20000); /* up to 60 s on a loaded machine */
    if (!tu_lock_held(json)) { /* the log says why (it goes with the test's temporary folder) */
        char *s = tu_slurp(log, NULL);
        CHECK(0, "the 2-rank run did not start in 60 s; its log:\n%s", s ? s : "(none)\n");
        free(s);
    }
    return pid;
}

static int lines_of(const char *log)
{
    char *s = tu_slurp(log, NULL);
    int n = 0;
    for (const char *p = s; p && *p; p++) n += *p == '\n';
    free(s);
    return n;
}

/* Stops (or kills) rank `rank` with sig; the launcher must end within `bound` seconds, non-zero, saying `says`. */
static void silent_rank(int rank, int sig, const char *says, int want_lines)
{
    char json[4200], log[4200];
    snprintf(json, sizeof json, "%s/r%d-%d.json", dir, rank, sig);
    snprintf(log, sizeof log, "%s/r%d-%d.log", dir, rank, sig);
    pid_t launcher = start(json, log), victim = rank_pid(launcher, rank), other = rank_pid(launcher, 1 - rank);
    CHECK(victim > 0 && other > 0, "rank %d of the launcher %d not found", rank, (int)launcher);
    if (victim <= 0) {
        kill(launcher, SIGKILL);
        waitpid(launcher, NULL, 0);
        return;
    }
    double t0 = now_s();
    kill(victim, sig);
    int st = 0, done = 0;
    while (now_s() - t0 < 60 && !(done = waitpid(launcher, &st, WNOHANG) == launcher)) usleep(50000);
    double took = now_s() - t0;
    if (!done) {
        kill(launcher, SIGKILL);
        waitpid(launcher, &st, 0);
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    CHECK(done && code != 0, "rank %d given signal %d: the run %s (status %d)", rank, sig, done ? "exited 0" : "hung", code);
    CHECK(took < 30, "rank %d given signal %d: the run took %.1f s to end", rank, sig, took);
    CHECK(tu_log_has(log, says), "rank %d given signal %d: the log lacks \"%s\"", rank, sig, says);
    if (want_lines) CHECK(lines_of(log) == want_lines, "rank %d given signal %d: %d lines on stderr, want %d", rank, sig, lines_of(log), want_lines);
    /* No rank outlives the run. */
    usleep(500000);
    CHECK(kill(victim, 0) != 0 && kill(other, 0) != 0, "a rank outlived the run");
    char *s = tu_slurp(log, NULL);
    printf("rank %d %s: the run ended in %.1f s, status %d: %s", rank, sig == SIGSTOP ? "stopped" : "killed", took, code,
           s ? s : "\n");
    free(s);
}

/* Killing the launcher kills its ranks. */
static void launcher_killed(void)
{
    char json[4200], log[4200];
    snprintf(json, sizeof json, "%s/launcher.json", dir);
    snprintf(log, sizeof log, "%s/launcher.log", dir);
    pid_t launcher = start(json, log), r0 = rank_pid(launcher, 0), r1 = rank_pid(launcher, 1);
    CHECK(r0 > 0 && r1 > 0, "the ranks of the launcher %d not found", (int)launcher);
    kill(launcher, SIGKILL);
    waitpid(launcher, NULL, 0);
    double t0 = now_s();
    /* The ranks become zombies of init, which reaps them: gone or a zombie counts as dead. */
    int alive = 1;
    while (now_s() - t0 < 10 && alive) {
        alive = 0;
        pid_t rs[2] = {r0, r1};
        for (int i = 0; i < 2; i++) {
            char path[64], state = 0, buf[512];
            snprintf(path, sizeof path, "/proc/%d/stat", (int)rs[i]);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            const char *rp = strrchr(buf, ')');
            if (rp && sscanf(rp + 2, "%c", &state) == 1 && state != 'Z' && state != 'X') alive = 1;
        }
        if (alive) usleep(50000);
    }
    CHECK(!alive, "the ranks still run %.1f s after their launcher was killed", now_s() - t0);
    printf("launcher killed: its ranks were gone after %.1f s\n", now_s() - t0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_tp_liveness PATH/TO/orthros\n");
        return 2;
    }
    bin = argv[1];
    char *t = tu_tempdir();
    snprintf(dir, sizeof dir, "%s", t);
    free(t);
    silent_rank(1, SIGSTOP, "rank 0: rank 1 sent no heartbeat for 3 s (stopped or gone)", 1);
    silent_rank(0, SIGSTOP, "rank 1: rank 0 sent no heartbeat for 3 s (stopped or gone)", 1);
    silent_rank(1, SIGKILL, "rank 1", 0);
    launcher_killed();
    if (tu_remove_tree(dir)) fprintf(stderr, "could not remove %s\n", dir);
    return tu_finish();
}
