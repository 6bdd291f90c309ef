/* A seeded mutational fuzzer for the targets of fuzz/targets.c, in plain C so that CI runs it with gcc under
 * AddressSanitizer + UndefinedBehaviorSanitizer (the build-asan tree) without clang.
 *
 * Each target gets a share of the time budget (or a fixed number of inputs). Input i of a target is one seed of
 * its corpus (generated seeds, fuzz/corpus/NAME/, data/fixtures) with 1 to 8 stacked mutations drawn from a
 * generator seeded by (seed, target, i) alone, so `--replay I` rebuilds input I exactly: bit flips, byte sets,
 * inserts, deletes, truncation, splices with another seed, dictionary tokens (fuzz/loaders.dict, also
 * libFuzzer's), numbers in the text replaced by edge values, the safetensors header length moved, and the
 * model-directory separator added or removed. A crash or sanitizer report writes the input to a file and the
 * replay command to stderr; an input that runs past --timeout seconds is a hang, reported the same way.
 * At the end it prints how many inputs ran per target and how many were accepted and refused. */
#define _GNU_SOURCE
#include "targets.h"

#include "orthros.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef ORTHROS_SOURCE_DIR
#define ORTHROS_SOURCE_DIR "."
#endif

/* Set by the sanitizer runtimes; weak so that a build without them links. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* ---- the input being mutated ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static int buf_reserve(buf *b, size_t n)
{
    if (n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Replaces b[at, at + del) by ins[0..n_ins). */
static int buf_splice(buf *b, size_t at, size_t del, const void *ins, size_t n_ins)
{
    if (at > b->n) at = b->n;
    if (del > b->n - at) del = b->n - at;
    if (buf_reserve(b, b->n - del + n_ins)) return -1;
    /* (an empty buffer may have no storage: memmove and memcpy are not handed its null pointer) */
    if (b->n - at - del) memmove(b->p + at + n_ins, b->p + at + del, b->n - at - del);
    if (n_ins) memcpy(b->p + at, ins, n_ins);
    b->n = b->n - del + n_ins;
    return 0;
}

/* ---- dictionary (libFuzzer's format: one "token" per line, \xNN and \\ \" escapes) ---- */

static char **dict;
static size_t *dict_len;
static int n_dict;

static void load_dict(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "orthros_fuzz: no dictionary %s (%s); going on without one\n", path, strerror(errno));
        return;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *q = strchr(line, '"'), *e = strrchr(line, '"');
        if (line[0] == '#' || !q || e == q) continue;
        char tok[1024];
        size_t n = 0;
        for (char *s = q + 1; s < e; s++) {
            if (*s == '\\' && s[1] == 'x' && s + 3 < e) {
                unsigned v;
                if (sscanf(s + 2, "%2x", &v) == 1) tok[n++] = (char)v;
                s += 3;
            } else if (*s == '\\' && s + 1 < e) {
                tok[n++] = *++s;
            } else {
                tok[n++] = *s;
            }
        }
        char **d = realloc(dict, (size_t)(n_dict + 1) * sizeof *d);
        size_t *dl = realloc(dict_len, (size_t)(n_dict + 1) * sizeof *dl);
        if (d) dict = d;
        if (dl) dict_len = dl;
        if (!d || !dl || !(dict[n_dict] = malloc(n ? n : 1))) break;
        memcpy(dict[n_dict], tok, n);
        dict_len[n_dict++] = n;
    }
    fclose(f);
}

/* ---- mutations ---- */

static const char *const edge_numbers[] = {
    "0", "1", "-1", "2", "4.5", "1e30", "-0", "1e-320", "2147483647", "2147483648", "4294967295", "4294967296",
    "9007199254740992", "9007199254740993", "18446744073709551615", "18446744073709551616", "1099511627776",
    "1e308", "1e999", "65536", "1048576", "16777217", "512", "513", "256", "257", "null", "true", "\"1\"", "[]", "{}"};

/* A run of digits (with sign, dot, exponent) at a random place, replaced by an edge value or a neighbour. */
static void mutate_number(buf *b)
{
    if (!b->n) return;
    size_t start = below(b->n), i;
    for (i = 0; i < b->n; i++) {
        size_t at = (start + i) % b->n;
        if (b->p[at] >= '0' && b->p[at] <= '9') {
            start = at;
            break;
        }
    }
    if (i == b->n) return;
    size_t s = start, e = start;
    while (s > 0 && strchr("0123456789.-+eE", b->p[s - 1])) s--;
    while (e < b->n && strchr("0123456789.-+eE", b->p[e])) e++;
    char num[64];
    if (rnd() & 1) {
        snprintf(num, sizeof num, "%s", edge_numbers[below(sizeof edge_numbers / sizeof *edge_numbers)]);
    } else {
        char old[40];
        size_t n = e - s < sizeof old - 1 ? e - s : sizeof old - 1;
        memcpy(old, b->p + s, n);
        old[n] = '\0';
        /* Unsigned arithmetic wraps instead of overflowing; the text is printed signed. */
        unsigned long long v = (unsigned long long)strtoll(old, NULL, 10);
        static const long long deltas[] = {1, -1, 2, -2, 4, -4, 8, -8, 16, -16, 1024};
        switch (below(3)) {
        case 0: v += (unsigned long long)deltas[below(sizeof deltas / sizeof *deltas)]; break;
        case 1: v *= 2; break;
        default: v = (unsigned long long)((long long)v / 2); break;
        }
        snprintf(num, sizeof num, "%lld", (long long)v);
    }
    buf_splice(b, s, e - s, num, strlen(num));
}

/* A safetensors header length: 8 little-endian bytes followed by '{', anywhere (a framed model has several). */
static void mutate_header_length(buf *b)
{
    size_t hits[16], n = 0;
    for (size_t p = 0; p + 8 < b->n && n < 16; p++) {
        if (b->p[p + 8] != '{') continue;
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--) v = v << 8 | b->p[p + (size_t)k];
        if (v <= b->n - p - 8) hits[n++] = p;
    }
    if (!n) return;
    size_t p = hits[below(n)];
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | b->p[p + (size_t)k];
    switch (below(8)) {
    case 0: v += 1; break;
    case 1: v -= 1; break;
    case 2: v += 1 + below(64); break;
    case 3: v -= below(64); break;
    case 4: v = 0; break;
    case 5: v = b->n - p - 8; break;
    case 6: v = ~0ull - below(16); break;
    default: v = 1ull << below(64); break;
    }
    for (int k = 0; k < 8; k++) b->p[p + (size_t)k] = (uint8_t)(v >> (8 * k));
}

static void mutate_once(buf *b, const orthros_fuzz_corpus *c)
{
    static const uint8_t interesting[] = {0, 0xff, 0x7f, 0x80, '{', '}', '[', ']', '"', ',', ':', '\\', '0', '9', 'e', '-', ' '};
    size_t n = b->n;
    switch (below(12)) {
    case 0:
        if (n) b->p[below(n)] ^= (uint8_t)(1u << below(8));
        break;
    case 1:
        if (n) b->p[below(n)] = below(2) ? interesting[below(sizeof interesting)] : (uint8_t)rnd();
        break;
    case 2: { /* insert random bytes or a copy of a chunk of the input */
        uint8_t tmp[64];
        size_t k = 1 + below(below(2) ? 8 : 64);
        if (n && below(2)) {
            size_t from = below(n);
            if (k > n - from) k = n - from;
            memcpy(tmp, b->p + from, k);
        } else {
            for (size_t i = 0; i < k; i++) tmp[i] = (uint8_t)rnd();
        }
        buf_splice(b, below(n + 1), 0, tmp, k);
        break;
    }
    case 3:
        if (n) buf_splice(b, below(n), 1 + below(below(2) ? 8 : 256), NULL, 0);
        break;
    case 4:
        if (n) b->n = below(n); /* truncate */
        break;
    case 5: { /* splice: our prefix, another seed's suffix */
        const int o = (int)below((size_t)c->n);
        size_t cut = below(n + 1), from = below(c->size[o] + 1);
        b->n = cut;
        buf_splice(b, cut, 0, c->data[o] + from, c->size[o] - from);
        break;
    }
    case 6:
    case 7:
        if (n_dict) {
            int d = (int)below((size_t)n_dict);
            size_t at = below(n + 1);
            /* Insert, or overwrite as many bytes. */
            buf_splice(b, at, below(2) ? dict_len[d] : 0, dict[d], dict_len[d]);
        }
        break;
    case 8:
    case 9: mutate_number(b); break;
    case 10: mutate_header_length(b); break;
    default: { /* the model-directory separator: add one, or remove one */
        const size_t sl = sizeof ORTHROS_FUZZ_SEP - 1;
        size_t from = below(n);
        uint8_t *s = memmem(b->p + from, n - from, ORTHROS_FUZZ_SEP, sl);
        if (s && below(2)) buf_splice(b, (size_t)(s - b->p), sl, NULL, 0);
        else buf_splice(b, below(n + 1), 0, ORTHROS_FUZZ_SEP, sl);
        break;
    }
    }
}

/* Input i of target t: a seed and its mutations, a function of (seed, t, i) only. */
static int make_input(buf *b, const orthros_fuzz_corpus *c, int generated, uint64_t seed, int t, uint64_t i,
                      size_t max_len)
{
    rng_state = seed * 0x2545F4914F6CDD1Dull ^ ((uint64_t)t << 56) ^ i * 0x9E3779B97F4A7C15ull;
    rnd();
    /* Half the inputs start from a generated seed (valid models, which reach the forward pass), half from the
     * committed corpus (mostly near-misses that libFuzzer found). The fixtures are megabytes, the generated seeds
     * kilobytes: one input in 8 may start from a big seed. */
    int s = generated > 0 && below(2) ? (int)below((size_t)generated) : (int)below((size_t)c->n);
    for (int tries = 0; below(8) && c->size[s] > (64u << 10) && tries < 64; tries++) s = (int)below((size_t)c->n);
    b->n = 0;
    if (buf_splice(b, 0, 0, c->data[s], c->size[s])) return -1;
    /* Input 0 of each seed index runs unmutated once, so that the seeds themselves are checked. */
    if (i < (uint64_t)c->n) {
        b->n = 0;
        return buf_splice(b, 0, 0, c->data[i], c->size[i]);
    }
    int k = 1 + (int)below(below(4) ? 3 : 8);
    for (int m = 0; m < k; m++) mutate_once(b, c);
    if (b->n > max_len) b->n = max_len;
    return 0;
}

/* ---- crash reporting ---- */

static const char *cur_target = "";
static uint64_t cur_index, cur_seed;
static const uint8_t *cur_data;
static size_t cur_size;
static char crash_dir[4096] = ".";
static double timeout_s = 60;

/* Async-signal-safe enough for a dying process: open, write and close (no stdio, no allocation) and a line formatted
 * into a buffer on the stack. */
static void save_current(const char *why)
{
    char path[4400], msg[5000];
    snprintf(path, sizeof path, "%s/fuzz-%s-%s-%llu.bin", crash_dir, why, cur_target, (unsigned long long)cur_index);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        for (size_t done = 0; done < cur_size;) {
            ssize_t w = write(fd, cur_data + done, cur_size - done);
            if (w <= 0) break;
            done += (size_t)w;
        }
        close(fd);
    }
    int n = snprintf(msg, sizeof msg,
                     "orthros_fuzz: %s on input #%llu of target %s (seed %llu, %zu bytes), saved to %s\n"
                     "orthros_fuzz: replay: orthros_fuzz --target %s --seed %llu --replay %llu   (or: ORTHROS_FUZZ_TARGET=%s "
                     "orthros_libfuzzer %s)\n",
                     why, (unsigned long long)cur_index, cur_target, (unsigned long long)cur_seed, cur_size, path,
                     cur_target, (unsigned long long)cur_seed, (unsigned long long)cur_index, cur_target, path);
    if (write(2, msg, (size_t)n) < 0) return;
}

static void on_death(void) { save_current("crash"); }
static void on_signal(int sig)
{
    save_current(sig == SIGALRM ? "hang" : "crash");
    signal(sig, SIG_DFL);
    if (sig == SIGALRM) _exit(1);
    raise(sig);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void load_corpus_dir(orthros_fuzz_corpus *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            orthros_fuzz_corpus_add_file(c, path);
        }
    closedir(d);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: orthros_fuzz [--target NAME|all] [--seconds S | --runs N] [--seed N] [--replay I]\n"
               "                    [--root DIR] [--corpus DIR] [--max-len BYTES] [--timeout S] [--crash-dir DIR]\n"
               "                    [--write-seeds DIR] [--list]\n"
               "  --seconds S       time budget in total, shared by the targets (default 30)\n"
               "  --runs N          run exactly N inputs per target instead\n"
               "  --replay I        run input I of --target only (after a crash report)\n"
               "  --root DIR        source tree, for data/fixtures and fuzz/ (default %s)\n"
               "  --corpus DIR      seeds from DIR/NAME/ (default ROOT/fuzz/corpus)\n"
               "  --write-seeds DIR write every target's generated seeds to DIR/NAME/ and stop (a start for libFuzzer)\n",
            ORTHROS_SOURCE_DIR);
}

/* The input being built, one for the process (the driver's exits on an error leave it to the system). */
static buf input;

int main(int argc, char **argv)
{
    const char *target = "all", *root = ORTHROS_SOURCE_DIR, *corpus = NULL, *write_seeds = NULL;
    double seconds = 30;
    long long runs = -1, replay = -1;
    unsigned long long seed = 1;
    size_t max_len = 4u << 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        errno = 0;
#define NEEDV                                                                                                          \
    if (!v) {                                                                                                          \
        fprintf(stderr, "orthros_fuzz: %s needs a value\n", a);                                                        \
        return 2;                                                                                                      \
    }                                                                                                                  \
    i++
        if (!strcmp(a, "--target")) { NEEDV; target = v; }
        else if (!strcmp(a, "--seconds")) { NEEDV; seconds = strtod(v, &end); }
        else if (!strcmp(a, "--runs")) { NEEDV; runs = strtoll(v, &end, 10); }
        else if (!strcmp(a, "--seed")) { NEEDV; seed = strtoull(v, &end, 10); }
        else if (!strcmp(a, "--replay")) { NEEDV; replay = strtoll(v, &end, 10); }
        else if (!strcmp(a, "--root")) { NEEDV; root = v; }
        else if (!strcmp(a, "--corpus")) { NEEDV; corpus = v; }
        else if (!strcmp(a, "--max-len")) { NEEDV; max_len = (size_t)strtoull(v, &end, 10); }
        else if (!strcmp(a, "--timeout")) { NEEDV; timeout_s = strtod(v, &end); }
        else if (!strcmp(a, "--crash-dir")) { NEEDV; snprintf(crash_dir, sizeof crash_dir, "%s", v); }
        else if (!strcmp(a, "--write-seeds")) { NEEDV; write_seeds = v; }
        else if (!strcmp(a, "--list")) {
            for (int t = 0; t < orthros_fuzz_n_targets; t++)
                printf("%-12s %s\n", orthros_fuzz_targets[t].name, orthros_fuzz_targets[t].about);
            return 0;
        } else if (!strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "orthros_fuzz: unknown option \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
#undef NEEDV
        if (end && (*end || errno || end == v)) {
            fprintf(stderr, "orthros_fuzz: bad value \"%s\" for %s\n", v, a);
            return 2;
        }
    }
    if (!(seconds > 0) || !(timeout_s > 0) || max_len == 0 || (replay >= 0 && !strcmp(target, "all"))) {
        fprintf(stderr, "orthros_fuzz: --seconds, --timeout and --max-len must be positive; --replay needs --target\n");
        return 2;
    }
    int first = 0, last = orthros_fuzz_n_targets;
    if (strcmp(target, "all")) {
        const orthros_fuzz_target *t = orthros_fuzz_find(target);
        if (!t) {
            fprintf(stderr, "orthros_fuzz: unknown target \"%s\" (--list shows them)\n", target);
            return 2;
        }
        first = (int)(t - orthros_fuzz_targets);
        last = first + 1;
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/fuzz/loaders.dict", root);
    load_dict(path);
    /* Under a sanitizer its runtime reports faults (with a stack) and calls on_death; without one, we catch them. */
    if (__sanitizer_set_death_callback) {
        __sanitizer_set_death_callback(on_death);
    } else {
        signal(SIGSEGV, on_signal);
        signal(SIGBUS, on_signal);
        signal(SIGFPE, on_signal);
    }
    signal(SIGABRT, on_signal); /* a broken promise of a target (finding()) */
    signal(SIGALRM, on_signal);
    cur_seed = seed;

    double share = seconds / (last - first);
    unsigned long long total_runs = 0;
    for (int t = first; t < last; t++) {
        const orthros_fuzz_target *tg = &orthros_fuzz_targets[t];
        orthros_fuzz_corpus c = {0};
        if (tg->seeds && tg->seeds(&c, root)) {
            fprintf(stderr, "orthros_fuzz: %s: cannot make the seeds\n", tg->name);
            return 1;
        }
        int generated = c.n;
        snprintf(path, sizeof path, "%s/%s", corpus ? corpus : "", tg->name);
        if (!corpus) snprintf(path, sizeof path, "%s/fuzz/corpus/%s", root, tg->name);
        if (!write_seeds) load_corpus_dir(&c, path);
        if (!c.n) {
            fprintf(stderr, "orthros_fuzz: %s: no seeds (generated none, and %s is empty)\n", tg->name, path);
            return 1;
        }
        if (write_seeds) {
            snprintf(path, sizeof path, "%s/%s", write_seeds, tg->name);
            if ((mkdir(write_seeds, 0755) && errno != EEXIST) || (mkdir(path, 0755) && errno != EEXIST)) {
                fprintf(stderr, "orthros_fuzz: cannot make %s: %s\n", path, strerror(errno));
                return 1;
            }
            for (int i = 0; i < c.n; i++) {
                char out[4400];
                snprintf(out, sizeof out, "%s/%s/seed-%03d", write_seeds, tg->name, i);
                FILE *f = fopen(out, "wb");
                if (!f || fwrite(c.data[i], 1, c.size[i], f) != c.size[i] || fclose(f)) return 1;
            }
            printf("%s: %d seeds written to %s/%s\n", tg->name, c.n, write_seeds, tg->name);
            orthros_fuzz_corpus_free(&c);
            continue;
        }
        cur_target = tg->name;
        unsigned long long n = 0, accepted = 0, refused = 0, by_code[8] = {0};
        double t0 = now(), slowest = 0;
        for (uint64_t i = replay >= 0 ? (uint64_t)replay : 0;; i++) {
            if (replay >= 0 ? n == 1 : runs >= 0 ? n >= (unsigned long long)runs : now() - t0 >= share) break;
            if (make_input(&input, &c, generated, seed, t, i, max_len)) {
                fprintf(stderr, "orthros_fuzz: out of memory\n");
                return 1;
            }
            /* An exact-size copy, so that a read one byte past the input is an ASan report. */
            uint8_t *in = malloc(input.n ? input.n : 1);
            if (!in) {
                fprintf(stderr, "orthros_fuzz: out of memory\n");
                return 1;
            }
            if (input.n) memcpy(in, input.p, input.n);
            cur_index = i, cur_data = in, cur_size = input.n;
            double r0 = now();
            alarm((unsigned)(timeout_s + 0.999));
            int rc = tg->run(in, input.n);
            alarm(0);
            if (now() - r0 > slowest) slowest = now() - r0;
            free(in);
            n++;
            if (rc == 0) accepted++;
            else refused++, by_code[-rc < 8 && -rc > 0 ? -rc : 0]++;
            if (replay >= 0) printf("input #%lld of %s: %s\n", replay, tg->name, rc ? orthros_last_error() : "accepted");
        }
        double el = now() - t0;
        printf("%-10s %9llu inputs in %5.1f s (%d seeds: %d generated, %d from files): %llu accepted, %llu refused "
               "(format %llu, io %llu, unsupported %llu, inval %llu, nomem %llu, range %llu); slowest %.3f s\n",
               tg->name, n, el, c.n, generated, c.n - generated, accepted, refused, by_code[-ORTHROS_EFORMAT],
               by_code[-ORTHROS_EIO], by_code[-ORTHROS_EUNSUPPORTED], by_code[-ORTHROS_EINVAL], by_code[-ORTHROS_ENOMEM],
               by_code[-ORTHROS_ERANGE], slowest);
        total_runs += n;
        orthros_fuzz_corpus_free(&c);
    }
    free(input.p);
    input = (buf){0};
    for (int i = 0; i < n_dict; i++) free(dict[i]);
    free(dict);
    free(dict_len);
    if (!write_seeds) printf("total      %9llu inputs, seed %llu, no crash\n", total_runs, seed);
    return 0;
}
