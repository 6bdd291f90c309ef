/* Kernel benchmarks for the cuda backend: the attention ops at the shapes the paper's claims rest on, timed
 * against three ceilings measured in the same run (a device copy and a read-only pass for bandwidth, a cuBLAS
 * GEMM for matrix rate). For each case: the work's FLOPs and the fewest bytes it must move, the floor those give
 * with the measured ceilings (read-bound ops, the attention kernels, against the read ceiling; ops that write as
 * much as they read against the copy ceiling), the median time, and the achieved TFLOP/s and TB/s. Each kept
 * kernel version is timed by name on the shapes of bench/kernels/anchors.py (PyTorch SDPA flash and cuDNN), and
 * every record carries its case (kind, head dim, context, batch, version) so that bench/kernels/summary.py can
 * set them side by side.
 *
 * Timing: each sample is K back-to-back launches between two stream syncs, read on the host clock, divided
 * by K (K is chosen so that a sample lasts a few ms, which drowns the sync); 3 warm-up samples, then 7
 * timed ones; the median is reported and every sample kept in the JSON. The step probes (op step_probe: a kernel
 * boundary, a grid barrier) are timed on CUDA events of their own stream instead, 20 launches a sample; the cluster
 * probe (op cluster_probe) on the SM's clock inside its kernel, printed only.
 * Usage: bench_kernels [out.json] [--quick] [--only OP] [--gemv-kind KIND] [--gemv-proj PROJ]  (--only: just the ops
 * whose name contains OP; --gemv-kind: of the gemv cells' kinds just cuBLAS, the reference, and KIND, e.g. fused-v6;
 * --gemv-proj: of the projections just PROJ, qkv, o, gate_up, down or head: with both, a profiler's first launches of
 * a kernel are that cell's) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn_full_decode.h"
#include "attn_full_prefill.h"
#include "attn_linear_prefill.h"
#include "attn_linear_window.h"
#include "backend.h"
#include "gemv.h"
#include "mem_read.h"
#include "step_probe.h"
#include "result_bench.h"
#include "stats.h"

#define SAMPLES 7
#define WARMUP 3

static orthros_backend *be;
static orthros_backend *sync_be; /* the backend time_op waits for (be, or the one an op runs on) */
static double ceil_tbps = 4.27, ceil_read_tbps = 4.6, ceil_tflops = 700.0;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void must(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "bench: %s failed: %s\n", what, orthros_last_error());
        exit(1);
    }
}

static void *dalloc(size_t bytes)
{
    void *p = be->alloc(be, bytes);
    if (!p) {
        fprintf(stderr, "bench: cannot allocate %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

typedef int (*run_fn)(void *ctx);

/* Times fn: returns the median seconds per call; samples[] receives every timed sample. */
static double time_op(run_fn fn, void *ctx, double *samples)
{
    orthros_backend *sb = sync_be ? sync_be : be;
    must(sb->sync(sb), "sync");
    double t0 = now_s();
    must(fn(ctx), "op");
    must(sb->sync(sb), "sync");
    double once = now_s() - t0;
    int K = once > 0 ? (int)(4e-3 / once) : 100;
    if (K < 1) K = 1;
    if (K > 200) K = 200;
    for (int s = 0; s < WARMUP + SAMPLES; s++) {
        must(sb->sync(sb), "sync");
        double a = now_s();
        for (int k = 0; k < K; k++) must(fn(ctx), "op");
        must(sb->sync(sb), "sync");
        double t = (now_s() - a) / K;
        if (s >= WARMUP) samples[s - WARMUP] = t;
    }
    double sorted[SAMPLES];
    memcpy(sorted, samples, sizeof sorted);
    return orthros_median_sorting(sorted, SAMPLES);
}

/* --gemv-kind KIND, --gemv-proj PROJ: the gemv cells of cuBLAS and KIND alone, of PROJ alone (NULL: every one) */
static const char *gemv_kind = NULL, *gemv_proj = NULL;

/* --only OP: run only the benchmarks of ops whose name contains OP (for a profiler run of one kernel). The
 * ceilings always run: every figure is reported against them. */
static const char *only;
static int want(const char *op) { return !only || strstr(op, only) != NULL; }

/* The result file (a bench result file of kernel cells, the format `orthros bench` writes, read by compare and
 * bench/kernels/summary.py), rewritten atomically after every record so that a kernel that hangs or faults (the
 * process is then killed) loses only its own figure. */
static orthros_bench_file out_file;
static const char *out_path;

static int save_json(void)
{
    if (!out_path) return 0;
    out_file.ceilings = (orthros_ceilings){ceil_tflops, 8192, ceil_tbps, (double)((size_t)2 << 30), ceil_read_tbps,
                                           (double)((size_t)4 << 30)};
    int rc = orthros_bench_file_write(&out_file, out_path);
    if (rc) fprintf(stderr, "bench: %s\n", orthros_last_error());
    return rc ? 1 : 0;
}

/* What a record measured, for matching it with the anchors: kind ("prefill", "decode", "linear_prefill", ...),
 * head dim, context (prefill: the chunk's tokens; decode: the cache), batch, window, the kernel version that ran
 * and whether it is the default. */
typedef struct {
    const char *kind;
    int head_dim, ctx, batch, pos0, window, version, is_default;
} bench_case;

/* read: the op's bytes are (almost all) reads, judged against the read ceiling; else against the copy ceiling. */
static void record_case(const char *op, const char *shape, const bench_case *bc, int read, double flops, double bytes,
                        double sec, const double *samples)
{
    double bw = read ? ceil_read_tbps : ceil_tbps;
    double floor_s = fmax(flops / (ceil_tflops * 1e12), bytes / (bw * 1e12));
    double tf = flops / sec / 1e12, tb = bytes / sec / 1e12;
    orthros_bench_cell c;
    orthros_bench_cell_init(&c);
    /* The GPU right after the last sample: the SM clock it ran at, and what held it below its maximum. */
    orthros_bench_cell_set_gpu(&c, be->info.pci_bus_id);
    char gpu[200] = "";
    if (isfinite(c.gpu_sm_clock_mhz))
        snprintf(gpu, sizeof gpu, "  sm %.0f/%.0f MHz %.0f W %s", c.gpu_sm_clock_mhz, c.gpu_sm_clock_max_mhz, c.gpu_power_w,
                 c.gpu_clock_limits);
    printf("%-22s %-40s %10.3f %10.3f %8.1f %8.2f %7.2f%s\n", op, shape, sec * 1e3, floor_s * 1e3, tf, tb,
           floor_s / sec, gpu);
    fflush(stdout);
    snprintf(c.op, sizeof c.op, "%s", op);
    snprintf(c.shape, sizeof c.shape, "%s", shape);
    snprintf(c.ceiling, sizeof c.ceiling, "%s", read ? "read" : "copy");
    c.flops = flops, c.bytes = bytes, c.tflops = tf, c.tbps = tb, c.floor_s = floor_s;
    c.frac_gemm = tf / ceil_tflops;
    c.frac_copy = tb / ceil_tbps;
    c.frac_read = tb / ceil_read_tbps;
    if (bc) {
        snprintf(c.kind, sizeof c.kind, "%s", bc->kind);
        c.head_dim = bc->head_dim, c.ctx = bc->ctx, c.batch = bc->batch, c.pos0 = bc->pos0, c.window = bc->window;
        c.version = bc->version, c.is_default = bc->is_default;
    }
    c.samples = malloc(SAMPLES * sizeof *c.samples);
    c.round_ends = malloc(sizeof *c.round_ends);
    if (!c.samples || !c.round_ends) must(ORTHROS_ENOMEM, "out of memory");
    memcpy(c.samples, samples, SAMPLES * sizeof *c.samples);
    c.n_samples = SAMPLES, c.round_ends[0] = SAMPLES, c.n_rounds = 1;
    snprintf(c.stop_reason, sizeof c.stop_reason, "max_reps");
    must(orthros_stats_fill(&c.stats, c.samples, SAMPLES, 0.95, 0, 1), "statistics");
    c.noise = (c.stats.q3 - c.stats.q1) / 1.349 / c.stats.median;
    must(orthros_bench_file_add(&out_file, &c), "adding a cell");
    save_json();
}

static void record(const char *op, const char *shape, double flops, double bytes, double sec, const double *samples)
{
    record_case(op, shape, NULL, 0, flops, bytes, sec, samples);
}

/* ---- ceilings ---- */

typedef struct {
    void *a, *b, *c;
    size_t bytes;
    int n;
} ceil_ctx;

static int run_copy(void *p)
{
    ceil_ctx *c = p;
    return be->copy(be, c->b, c->a, c->bytes);
}

static int run_read(void *p)
{
    ceil_ctx *c = p;
    return be->read(be, c->a, c->bytes);
}

/* A read pattern of mem_read.cu launched directly (the default stream), synchronised after every pass so that
 * time_op's clock covers it (~5 us of a ~1 ms pass). */
typedef struct {
    orthros_read_params p;
    int passes; /* passes a timed call (0: 1) */
} probe_ctx;

static int run_read_variant(void *ctx)
{
    probe_ctx *c = ctx;
    int rc = 0;
    for (int i = 0; i < (c->passes > 1 ? c->passes : 1) && !rc; i++) rc = orthros_read_xor_u64(&c->p, 0);
    if (!rc && cudaDeviceSynchronize() != cudaSuccess) rc = orthros_error(ORTHROS_EDEVICE, "read variant %d failed", c->p.variant);
    return rc;
}

/* Every read pattern of mem_read.cu over the same 4 GiB as the read ceiling: which one reaches the HBM's rate
 * (the probes behind the decode kernels' read pattern; variant 0 is the ceiling's own, the control). */
static void read_probes(void)
{
    if (!want("read_probe") || !(be->caps & ORTHROS_CAP_GPU)) return;
    double samples[SAMPLES];
    const size_t bytes = (size_t)4 << 30;
    probe_ctx c = {{0}, 0};
    void *src = dalloc(bytes);
    must(be->fill_random(be, src, bytes / 2, 4, 1.0f), "fill");
    c.p.blocks = orthros_read_blocks(be->info.sm_count);
    c.p.partials = dalloc((size_t)c.p.blocks * sizeof(unsigned long long));
    c.p.src = src, c.p.bytes = bytes;
    must(be->sync(be), "sync"); /* the fill, on the backend's stream, before the default stream reads */
    for (int v = 0; v < ORTHROS_READ_VARIANTS; v++) {
        c.p.variant = v;
        int rc = run_read_variant(&c);
        char shape[160];
        snprintf(shape, sizeof shape, "4 GiB read-only, variant %d: %s", v, orthros_read_variant_name(v));
        if (rc) {
            printf("read_probe %s: not run: %s\n", shape, orthros_last_error());
            continue;
        }
        double t = time_op(run_read_variant, &c, samples);
        record_case("read_probe", shape, NULL, 1, 0, (double)bytes, t, samples);
    }
    /* The cp.async ring (variant 5, one block an SM) on part of the SMs, over a 128K-key layer's cache of the 1B shape
     * (256 MiB): decode v8 at batch 1 streams it on 72 SMs (9-block clusters, 8 kv heads); is that enough SMs to
     * read at the ceiling, or do more SMs (more bytes in flight) read faster? 8 passes a timed call, so that the
     * synchronisation after them is ~1% of it. */
    const int sm_counts[] = {48, 72, 96, 128, be->info.sm_count};
    for (int i = 0; i < (int)(sizeof sm_counts / sizeof *sm_counts); i++) {
        if (sm_counts[i] <= 0 || sm_counts[i] > be->info.sm_count) continue;
        c.p.variant = 5, c.p.bytes = (size_t)256 << 20, c.p.blocks = orthros_read_blocks(sm_counts[i]), c.passes = 8;
        char shape[160];
        snprintf(shape, sizeof shape, "256 MiB read-only, variant 5 on %d SMs", sm_counts[i]);
        if (run_read_variant(&c)) {
            printf("read_probe %s: not run: %s\n", shape, orthros_last_error());
            break;
        }
        double t = time_op(run_read_variant, &c, samples);
        for (int k = 0; k < SAMPLES; k++) samples[k] /= c.passes;
        record_case("read_probe", shape, NULL, 1, 0, (double)c.p.bytes, t / c.passes, samples);
    }
    be->free(be, c.p.partials);
    be->free(be, src);
}

static int run_gemm(void *p)
{
    ceil_ctx *c = p;
    return be->gemm(be, c->c, c->a, c->b, c->n, c->n, c->n);
}

static void ceilings(void)
{
    double samples[SAMPLES];
    ceil_ctx c = {0};
    c.bytes = (size_t)2 << 30;
    c.a = dalloc(c.bytes);
    c.b = dalloc(c.bytes);
    must(be->fill_random(be, c.a, c.bytes / 2, 1, 1.0f), "fill");
    double t = time_op(run_copy, &c, samples);
    ceil_tbps = 2.0 * (double)c.bytes / t / 1e12;
    record("ceiling_copy", "2 GiB device to device", 0, 2.0 * (double)c.bytes, t, samples);
    be->free(be, c.a);
    be->free(be, c.b);
    /* The read ceiling: a read-only pass over 4 GiB (the XOR of its words, one word written per block). */
    c.bytes = (size_t)4 << 30;
    c.a = dalloc(c.bytes);
    must(be->fill_random(be, c.a, c.bytes / 2, 4, 1.0f), "fill");
    t = time_op(run_read, &c, samples);
    ceil_read_tbps = (double)c.bytes / t / 1e12;
    record_case("ceiling_read", "4 GiB read-only", NULL, 1, 0, (double)c.bytes, t, samples);
    be->free(be, c.a);
    c.n = 8192;
    size_t e = (size_t)c.n * c.n;
    c.a = dalloc(e * 2);
    c.b = dalloc(e * 2);
    c.c = dalloc(e * 2);
    must(be->fill_random(be, c.a, e, 2, 1.0f), "fill");
    must(be->fill_random(be, c.b, e, 3, 1.0f), "fill");
    t = time_op(run_gemm, &c, samples);
    ceil_tflops = 2.0 * (double)c.n * c.n * c.n / t / 1e12;
    record("ceiling_gemm_bf16", "8192^3 cuBLAS", 2.0 * (double)c.n * c.n * c.n, 3.0 * e * 2, t, samples);
    be->free(be, c.a);
    be->free(be, c.b);
    be->free(be, c.c);
}

/* ---- attention ---- */

typedef struct {
    orthros_attn_layer L;
    void *qkv, *out;
    int B, n;
    int pos0[64];
    int decode, linear;
} attn_ctx;

static int run_attn(void *p)
{
    attn_ctx *a = p;
    if (a->linear)
        return (a->decode ? be->attn_linear_decode : be->attn_linear_prefill)(be, a->out, a->qkv, &a->L, a->pos0, a->B, a->n);
    return (a->decode ? be->attn_full_decode : be->attn_full_prefill)(be, a->out, a->qkv, &a->L, a->pos0, a->B, a->n);
}

static void setup_attn(attn_ctx *a, int Hq, int Hkv, int d, int B, int n, int cap)
{
    memset(a, 0, sizeof *a);
    a->L.n_heads = Hq;
    a->L.n_kv_heads = Hkv;
    a->L.head_dim = d;
    a->B = B;
    a->n = n;
    size_t W = (size_t)(Hq + 2 * Hkv) * d;
    a->qkv = dalloc((size_t)B * n * W * 2);
    a->out = dalloc((size_t)B * n * Hq * d * 2);
    must(be->fill_random(be, a->qkv, (size_t)B * n * W, 7, 1.0f), "fill");
    if (cap > 0) {
        size_t ce = (size_t)B * cap * Hkv * d;
        a->L.cap = cap;
        a->L.k_cache = dalloc(ce * 2);
        a->L.v_cache = dalloc(ce * 2);
        must(be->fill_random(be, a->L.k_cache, ce, 8, 1.0f), "fill");
        must(be->fill_random(be, a->L.v_cache, ce, 9, 1.0f), "fill");
    }
}

static void free_attn(attn_ctx *a)
{
    be->free(be, a->qkv);
    be->free(be, a->out);
    if (a->L.k_cache) be->free(be, a->L.k_cache);
    if (a->L.v_cache) be->free(be, a->L.v_cache);
    if (a->L.S) be->free(be, a->L.S);
    if (a->L.z) be->free(be, a->L.z);
}

/* One query token per sequence after an L-key cache (32 q / 8 kv heads, head dim d, B sequences), and what a
 * decode step over it reads (the K and V rows) and computes. */
static void setup_decode(attn_ctx *a, int d, int B, int L, double *bytes, double *flops)
{
    setup_attn(a, 32, 8, d, B, 1, L);
    a->decode = 1;
    for (int b = 0; b < B; b++) a->pos0[b] = L - 1;
    *bytes = 2.0 * B * (double)L * 8 * d * 2;
    *flops = 4.0 * B * (double)L * 32 * d;
}

/* Decode of one query token per sequence over an L-key cache, B sequences, for each version in vs[0..nv)
 * (0: the default), on one allocation. A version this build or device cannot run is reported as skipped. */
static void bench_decode_vs(int d, int B, int L, const int *vs, int nv)
{
    if (!want("attn_full_decode")) return;
    attn_ctx a;
    double samples[SAMPLES], bytes, flops;
    setup_decode(&a, d, B, L, &bytes, &flops);
    for (int i = 0; i < nv; i++) {
        int rc = orthros_attn_full_decode_set_version(vs[i]);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("%-22s B=%d cache=%d d=%d v%d skipped: %s\n", "attn_full_decode", B, L, d, vs[i], orthros_last_error());
            continue;
        }
        must(rc, "decode version");
        double t = time_op(run_attn, &a, samples);
        const int v = orthros_attn_full_decode_version();
        char shape[96];
        snprintf(shape, sizeof shape, "B=%d cache=%d Hq=32 Hkv=8 d=%d v%d%s", B, L, d, v, vs[i] ? "" : " (default)");
        bench_case bc = {"decode", d, L, B, L - 1, 0, v, v == ORTHROS_ATTN_DECODE_DEFAULT};
        record_case("attn_full_decode", shape, &bc, 1, flops, bytes, t, samples);
    }
    free_attn(&a);
    must(orthros_attn_full_decode_set_version(0), "decode version");
}

/* The default decode (v7 on Hopper) with its split plan overridden: each split count in ns (0: the plan's), for
 * tuning the plan where it sits near the read ceiling (op attn_full_decode_splits; --only decode_splits). */
static void bench_decode_splits(int d, int B, int L, const int *ns, int nn)
{
    if (!want("attn_full_decode_splits")) return;
    attn_ctx a;
    double samples[SAMPLES], bytes, flops;
    setup_decode(&a, d, B, L, &bytes, &flops);
    const int v = orthros_attn_full_decode_version();
    for (int i = 0; i < nn; i++) {
        must(orthros_attn_full_decode_force_splits(ns[i]), "decode splits");
        double t = time_op(run_attn, &a, samples);
        char shape[96];
        if (ns[i])
            snprintf(shape, sizeof shape, "B=%d cache=%d Hq=32 Hkv=8 d=%d v%d splits=%d", B, L, d, v, ns[i]);
        else
            snprintf(shape, sizeof shape, "B=%d cache=%d Hq=32 Hkv=8 d=%d v%d planned", B, L, d, v);
        bench_case bc = {"decode_splits", d, L, B, L - 1, 0, v, ns[i] == 0};
        record_case("attn_full_decode_splits", shape, &bc, 1, flops, bytes, t, samples);
    }
    must(orthros_attn_full_decode_force_splits(0), "decode splits");
    free_attn(&a);
}

/* Decode v8 (clusters merging each head's splits, no combine kernel) against v7 on one allocation (op
 * attn_full_decode_cluster; --only decode_cluster), v8 held to 160 registers (regs=160), v8 with its softmax as
 * written (lean=0; the lean form is the default) and v8 with its merge pushed to rank 0 (push=1). A v8 row names the
 * cluster size it planned, or says that the call ran v7. v8 first: in the first runs (v7 first) the two rows of a 1K
 * cache, where both calls run v7, differed by 17-24%, the second faster, so the order can favour the second. */
static void bench_decode_cluster(int d, int B, int L)
{
    if (!want("attn_full_decode_cluster")) return;
    attn_ctx a;
    double samples[SAMPLES], bytes, flops;
    setup_decode(&a, d, B, L, &bytes, &flops);
    orthros_attn_full_decode_params p;
    memset(&p, 0, sizeof p);
    p.k_cache = a.L.k_cache, p.v_cache = a.L.v_cache;
    p.B = B, p.n = 1, p.Hq = 32, p.Hkv = 8, p.d = d, p.cap = L, p.max_keys = L, p.num_sms = be->info.sm_count;
    for (int v = 8; v >= 7; v--) {
        int rc = orthros_attn_full_decode_set_version(v);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("%-22s B=%d cache=%d d=%d v%d skipped: %s\n", "attn_full_decode", B, L, d, v, orthros_last_error());
            continue;
        }
        must(rc, "decode version");
        int ran = 0, ns = 0;
        must(orthros_attn_full_decode_plan(&p, &ran, &ns), "decode plan");
        double t = time_op(run_attn, &a, samples);
        char shape[96];
        snprintf(shape, sizeof shape, "B=%d cache=%d Hq=32 Hkv=8 d=%d v%d ran v%d splits=%d", B, L, d, v, ran, ns);
        bench_case bc = {"decode_cluster", d, L, B, L - 1, 0, ran, 0};
        record_case("attn_full_decode_cluster", shape, &bc, 1, flops, bytes, t, samples);
        /* v8 in its other forms, the same call alone: held to 160 registers (orthros_attn_full_decode_set_regs), its
         * softmax as written (orthros_attn_full_decode_set_lean), its merge pushed (orthros_attn_full_decode_set_push),
         * its end barrier with cluster.sync's release (orthros_attn_full_decode_set_relaxed); each set, timed, put
         * back to its default */
        static const struct {
            int (*set)(int);
            int on, dflt;
            const char *tag;
        } forms[] = {{orthros_attn_full_decode_set_regs, 160, 0, "regs=160"},
                     {orthros_attn_full_decode_set_lean, 0, ORTHROS_ATTN_DECODE_LEAN_DEFAULT, "lean=0"},
                     {orthros_attn_full_decode_set_push, 1, 0, "push=1"},
                     {orthros_attn_full_decode_set_relaxed, 0, ORTHROS_ATTN_DECODE_RELAXED_DEFAULT, "relaxed=0"}};
        for (size_t f = 0; v == 8 && ran == 8 && f < sizeof forms / sizeof *forms; f++) {
            must(forms[f].set(forms[f].on), "decode form");
            t = time_op(run_attn, &a, samples);
            must(forms[f].set(forms[f].dflt), "decode form");
            snprintf(shape, sizeof shape, "B=%d cache=%d Hq=32 Hkv=8 d=%d v8 ran v8 splits=%d %s", B, L, d, ns,
                     forms[f].tag);
            record_case("attn_full_decode_cluster", shape, &bc, 1, flops, bytes, t, samples);
        }
    }
    must(orthros_attn_full_decode_set_version(0), "decode version");
    free_attn(&a);
}

/* Causal prefill of n tokens at positions pos0.. against a cache of pos0 + n keys (cap, when > 0, sizes a ring as
 * the engine does for a sliding window: window + n - 1), for each version in vs (0: the default). */
static void bench_prefill_vs(int d, int n, int pos0, int window, const int *vs, int nv)
{
    if (!want("attn_full_prefill")) return;
    attn_ctx a;
    double samples[SAMPLES];
    int cap = window > 0 ? window + n - 1 : pos0 + n;
    setup_attn(&a, 32, 8, d, 1, n, cap);
    a.pos0[0] = pos0;
    a.L.window = window;
    /* QK^T and PV over the causal triangle and the earlier keys each query reads (all, or its window). */
    double keys = 0;
    if (window > 0) {
        for (int i = 0; i < n; i++) keys += fmin((double)window, (double)(pos0 + i + 1));
    } else {
        keys = (double)n * ((double)pos0 + (n + 1) / 2.0);
    }
    double flops = 4.0 * 32.0 * d * keys;
    double bytes = 2.0 * (double)(window > 0 && window + n - 1 < pos0 + n ? window + n - 1 : pos0 + n) * 8.0 * d * 2 +
                   2.0 * n * 32.0 * d * 2;
    for (int i = 0; i < nv; i++) {
        int rc = orthros_attn_full_prefill_set_version(vs[i]);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("%-22s n=%d pos0=%d window=%d d=%d v%d skipped: %s\n", "attn_full_prefill", n, pos0, window, d,
                   vs[i], orthros_last_error());
            continue;
        }
        must(rc, "prefill version");
        double t = time_op(run_attn, &a, samples);
        const int v = orthros_attn_full_prefill_version();
        char shape[112];
        snprintf(shape, sizeof shape, "n=%d pos0=%d%s Hq=32 Hkv=8 d=%d v%d%s", n, pos0, window ? " swa" : "", d, v,
                 vs[i] ? "" : " (default)");
        if (window) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " window=%d", window);
        bench_case bc = {"prefill", d, n, 1, pos0, window, v, v == orthros_attn_full_prefill_default_version()};
        record_case("attn_full_prefill", shape, &bc, 1, flops, bytes, t, samples);
    }
    free_attn(&a);
    must(orthros_attn_full_prefill_set_version(0), "prefill version");
}

static void bench_prefill(int d, int n, int pos0)
{
    int v0 = 0;
    bench_prefill_vs(d, n, pos0, 0, &v0, 1);
}

/* version 0: the default chunked prefill; else that numbered version of attn_linear_prefill.cu. */
static void bench_linear(int d, int B, int n, orthros_fmap fmap, int decode, int version)
{
    if (!want(decode ? "attn_linear_decode" : "attn_linear_prefill")) return;
    if (version) {
        int rc = orthros_attn_linear_prefill_set_version(version);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("%-22s n=%d d=%d v%d skipped: %s\n", "attn_linear_prefill", n, d, version, orthros_last_error());
            return;
        }
        must(rc, "linear prefill version");
    }
    attn_ctx a;
    double samples[SAMPLES];
    setup_attn(&a, 32, 8, d, B, n, 0);
    int F = d;
    a.linear = 1;
    a.decode = decode;
    a.L.fmap = fmap;
    a.L.feature_dim = F;
    a.L.eps = 1e-6f;
    size_t se = (size_t)B * 8 * F * d;
    a.L.S = dalloc(se * 4);
    a.L.z = dalloc((size_t)B * 8 * F * 4);
    must(be->zero(be, a.L.S, se * 4), "zero");
    must(be->zero(be, a.L.z, (size_t)B * 8 * F * 4), "zero");
    void *wq = NULL, *wk = NULL;
    if (fmap == ORTHROS_FMAP_HEDGEHOG) {
        wq = dalloc((size_t)32 * d * F / 2 * 2);
        wk = dalloc((size_t)8 * d * F / 2 * 2);
        must(be->fill_random(be, wq, (size_t)32 * d * F / 2, 10, 0.1f), "fill");
        must(be->fill_random(be, wk, (size_t)8 * d * F / 2, 11, 0.1f), "fill");
        a.L.fmap_q = wq;
        a.L.fmap_k = wk;
    }
    double t = time_op(run_attn, &a, samples);
    must(orthros_attn_linear_prefill_set_version(0), "linear prefill version");
    double flops, bytes;
    if (decode) {
        flops = 2.0 * B * 8 * F * d + 2.0 * B * 32 * F * d;
        bytes = 2.0 * B * 8 * F * d * 4;
    } else {
        /* per token: Phi_k^T V per kv head; per query head the intra-chunk QK^T and AV (64-token chunks) and
         * Phi_q S (counted once, as a normalised chunked kernel does it). */
        flops = (double)B * n * (8 * 2.0 * F * d + 32 * (2.0 * 64 * F + 2.0 * 64 * d + 2.0 * F * d));
        bytes = (double)B * n * ((32 + 16) * d * 2.0 + 32 * d * 2.0);
    }
    char shape[96];
    snprintf(shape, sizeof shape, "B=%d n=%d Hq=32 Hkv=8 d=%d %s", B, n, d, orthros_fmap_name(fmap));
    if (version) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " v%d", version);
    /* Decode reads the state and writes little: the read ceiling. Prefill writes o as it reads q, k, v: copy. */
    bench_case bc = {decode ? "linear_decode" : "linear_prefill", d, n, B, 0, 0,
                     decode ? 0 : version ? version : orthros_attn_linear_prefill_default_version(),
                     decode || !version || version == orthros_attn_linear_prefill_default_version()};
    record_case(decode ? "attn_linear_decode" : "attn_linear_prefill", shape, &bc, decode, flops, bytes, t, samples);
    if (wq) be->free(be, wq);
    if (wk) be->free(be, wk);
    free_attn(&a);
}

/* The linear formula of a converted model (docs/converted-models.md) as a linear layer runs it, at window W (0: none):
 * the linear op of the default version over the key stream W positions behind (the ring of W + n slots, the raw-key
 * ring of phi before RoPE, q~ in q_rot, gates), writing its denominators, then the window pass (attn_linear_window.cu).
 * Op attn_linear_window, one sequence of n tokens, 32 q / 8 kv heads, elu1; W 0 and 64 side by side (the issue's
 * target: W 64 at most 1.5x W 0 at 128K). The rope and cache write of the chunk are not counted (a separate op). */
static void bench_linear_window(int d, int n, int W)
{
    if (!want("attn_linear_window")) return;
    attn_ctx a;
    double samples[SAMPLES];
    int cap = W > 0 ? W + n : 0;
    setup_attn(&a, 32, 8, d, 1, n, cap);
    a.linear = 1;
    a.L.fmap = ORTHROS_FMAP_ELU1;
    a.L.feature_dim = d;
    a.L.eps = 1e-6f;
    a.L.local_window = W;
    size_t se = (size_t)8 * d * d;
    a.L.S = dalloc(se * 4);
    a.L.z = dalloc((size_t)8 * d * 4);
    must(be->zero(be, a.L.S, se * 4), "zero");
    must(be->zero(be, a.L.z, (size_t)8 * d * 4), "zero");
    void *kraw = NULL, *qrot = NULL, *gate = NULL;
    if (W > 0) {
        kraw = dalloc((size_t)cap * 8 * d * 2);
        qrot = dalloc((size_t)n * 32 * d * 2);
        gate = dalloc(32 * 2);
        must(be->fill_random(be, kraw, (size_t)cap * 8 * d, 12, 1.0f), "fill");
        must(be->fill_random(be, qrot, (size_t)n * 32 * d, 13, 1.0f), "fill");
        must(be->fill(be, gate, 32, 0.25f), "fill");
        a.L.kraw_cache = kraw;
        a.L.kraw_cap = cap;
        a.L.q_rot = qrot;
        a.L.window_gate = gate;
    }
    double t = time_op(run_attn, &a, samples);
    /* The linear op's count (as bench_linear) plus the window's 4 Hq d per (query, key) pair; bytes: q, k, v read and
     * o written once, and the window pass's q~ read, o read and rewritten, den, k~ and v once. */
    double keys = 0;
    for (int i = 0; W > 0 && i < n; i++) keys += fmin((double)W, (double)(i + 1));
    double flops = (double)n * (8 * 2.0 * d * d + 32 * (2.0 * 64 * d + 2.0 * 64 * d + 2.0 * d * d)) + 4.0 * 32 * d * keys;
    double bytes = (double)n * ((32 + 16) * d * 2.0 + 32 * d * 2.0) +
                   (W > 0 ? (double)n * (3 * 32 * d * 2.0 + 32 * 4.0 + 16 * d * 2.0) : 0);
    char shape[96];
    snprintf(shape, sizeof shape, "B=1 n=%d Hq=32 Hkv=8 d=%d elu1 window=%d", n, d, W);
    bench_case bc = {"linear_window", d, n, 1, 0, W, orthros_attn_linear_prefill_version(), 1};
    record_case("attn_linear_window", shape, &bc, 0, flops, bytes, t, samples);
    if (kraw) be->free(be, kraw);
    if (qrot) be->free(be, qrot);
    if (gate) be->free(be, gate);
    free_attn(&a);
}

/* The window pass alone (attn_linear_window.cu) by version, launched on the default stream and synchronised after
 * every pass (~5 us of a ~0.5-2 ms pass): one sequence of n rows from position 0, 32 q / 8 kv heads, q~ in its own
 * [n][Hq][d] buffer (the engine's q_rot), a ring of W + n - 1 slots, gates. Its floor: q~ read, o read and written,
 * den read, the window's k~ and v once (the neighbouring blocks' overlap from L2). */
typedef struct {
    orthros_attn_linear_window_params p;
} window_ctx;

static int run_window_pass(void *ctx)
{
    window_ctx *c = ctx;
    int rc = orthros_attn_linear_window_bf16(&c->p, 0);
    if (!rc && cudaDeviceSynchronize() != cudaSuccess) rc = orthros_error(ORTHROS_EDEVICE, "window pass failed");
    return rc;
}

static void bench_window_pass(int d, int n, int W, int version)
{
    if (!want("attn_linear_window_pass") || !(be->caps & ORTHROS_CAP_GPU)) return;
    if (orthros_attn_linear_window_set_version(version)) {
        printf("attn_linear_window_pass v%d: %s\n", version, orthros_last_error());
        return;
    }
    double samples[SAMPLES];
    const int Hq = 32, Hkv = 8, cap = W + n - 1;
    window_ctx c;
    memset(&c, 0, sizeof c);
    orthros_attn_linear_window_params *p = &c.p;
    p->out = dalloc((size_t)n * Hq * d * 2);
    p->q = dalloc((size_t)n * Hq * d * 2);
    p->k_cache = dalloc((size_t)cap * Hkv * d * 2);
    p->v_cache = dalloc((size_t)cap * Hkv * d * 2);
    p->den = dalloc((size_t)n * Hq * 4);
    p->gate = dalloc((size_t)Hq * 2);
    int *pos0 = dalloc(sizeof(int));
    p->pos0 = pos0;
    must(be->fill_random(be, p->out, (size_t)n * Hq * d, 14, 1.0f), "fill");
    must(be->fill_random(be, (void *)p->q, (size_t)n * Hq * d, 15, 1.0f), "fill");
    must(be->fill_random(be, (void *)p->k_cache, (size_t)cap * Hkv * d, 16, 1.0f), "fill");
    must(be->fill_random(be, (void *)p->v_cache, (size_t)cap * Hkv * d, 17, 1.0f), "fill");
    must(be->fill(be, (void *)p->gate, Hq, 0.5f), "fill");
    must(be->zero(be, (void *)p->den, (size_t)n * Hq * 4), "zero");
    must(be->zero(be, pos0, sizeof(int)), "zero");
    must(be->sync(be), "sync"); /* the fills, on the backend's stream, before the default stream reads */
    p->q_stride = (size_t)Hq * d;
    p->B = 1, p->n = n, p->Hq = Hq, p->Hkv = Hkv, p->d = d, p->cap = cap, p->window = W, p->eps = 1e-6f;
    double t = time_op(run_window_pass, &c, samples);
    double keys = 0;
    for (int i = 0; i < n; i++) keys += fmin((double)W, (double)(i + 1));
    const double flops = 4.0 * Hq * d * keys;
    const double bytes = (double)n * (3.0 * Hq * d * 2 + Hq * 4.0 + 2.0 * Hkv * d * 2);
    char shape[96];
    snprintf(shape, sizeof shape, "B=1 n=%d Hq=32 Hkv=8 d=%d window=%d v%d", n, d, W, version);
    bench_case bc = {"linear_window_pass", d, n, 1, 0, W, version, version == ORTHROS_ATTN_LINEAR_WINDOW_DEFAULT};
    record_case("attn_linear_window_pass", shape, &bc, 0, flops, bytes, t, samples);
    void *bufs[] = {p->out, (void *)p->q, (void *)p->k_cache, (void *)p->v_cache, (void *)p->den, (void *)p->gate, pos0};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be->free(be, bufs[i]);
    must(orthros_attn_linear_window_set_version(0), "window version");
}

/* ---- matrix-vector products of the decode step (gemv.cu) beside cuBLAS ----
 * Each projection of a layer of the Llama-3.2-1B and 3.1-8B shapes, and the LM head, at batch 1, 4, 8 and 16, these
 * ways: cuBLAS (the default backend's gemm / logits), cuBLASLt with the algorithm tuned for the shape (a backend made
 * with ORTHROS_GEMM_LT=1, gemm_lt.h), the GEMV kernel (a backend made with ORTHROS_GEMV=1) and the
 * fused op that the FUSED decode mode runs in its place (GEMV kernels with the RMSNorm, the residual add, SwiGLU,
 * RoPE and the cache write, or the argmax in them), and that op again through a backend made with
 * ORTHROS_DECODE_PDL=1 (each call a programmatic dependent launch of the one before it: its weights stream into L2
 * under the previous call's tail). The floor: the weights' bytes (and the input and output, which
 * are small) over the read ceiling. A call is a few microseconds, less than the host takes to launch it: R calls
 * are captured as one CUDA graph and the graph is timed, R / the figure per call; each call reads its own copy of
 * the weights (copies enough for 512 MB, so that L2 holds none of them), as a decode step reads every weight once. */
#define GEMV_COPY_BYTES ((size_t)512 << 20)

typedef struct {
    orthros_backend *b;
    const char *kind; /* cublas, cublaslt, gemv, fused, fused-pdl (the fused op, every GEMV a programmatic dependent
                       * launch), fused-v1, fused-v2, fused-v4 (the fused op through gemv.cu's version 1, 2 or 4; fused
                       * is the default, 3) */
    const char *proj; /* qkv, o, gate_up, down, head */
    int n, M, K, copies;
    void **W;
    void *x, *out, *xn, *gu, *norm_w, *k_cache, *v_cache;
    int32_t *ids, *pos_dev;
    orthros_attn_layer L;
    orthros_rope rope;
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    int pos[16];
    void *graph;
} gemv_ctx;

static int gemv_call(gemv_ctx *g, int i)
{
    orthros_backend *b = g->b;
    const void *W = g->W[i % g->copies];
    const float eps = 1e-5f;
    int head = !strcmp(g->proj, "head"), resid = !strcmp(g->proj, "o") || !strcmp(g->proj, "down");
    if (strncmp(g->kind, "fused", 5)) {
        if (head) return b->logits(b, g->out, g->x, W, g->n, g->M, g->K);
        return b->gemm(b, g->out, g->x, W, g->n, g->M, g->K);
    }
    if (head && !strcmp(g->kind, "fused-head8") && b->norm_argmax) /* the ids alone: the int8 copy's head */
        return b->norm_argmax(b, g->ids, g->out, g->xn, g->x, g->norm_w, W, g->n, g->M, g->K, eps);
    if (head) return b->norm_logits_argmax(b, g->ids, g->out, g->xn, g->x, g->norm_w, W, g->n, g->M, g->K, eps);
    if (resid) return b->gemm_add(b, g->out, g->xn, g->x, W, g->n, g->M, g->K);
    if (!strcmp(g->proj, "gate_up")) return b->norm_gemm_swiglu(b, g->out, g->xn, g->gu, g->x, g->norm_w, W, g->n, g->M / 2, g->K, eps);
    return b->norm_qkv_rope(b, g->out, g->xn, g->x, g->norm_w, W, &g->L, &g->rope, g->pos, g->n, g->K, eps);
}

static int run_gemv_graph(void *ctx)
{
    gemv_ctx *g = ctx;
    return g->b->graph_launch(g->b, g->graph);
}

/* The gemv.cu plan of a cell (not cuBLAS's), printed under it: what the call would get with the version in use, from
 * its shape alone (orthros_gemv_describe; the pointers only need to be non-null and aligned, the SM count is the
 * plan's default, the H200's 132). */
static void print_gemv_plan(const char *kind, const char *proj, int n, int M, int K, int Hq, int Hkv, int d)
{
    if (!strncmp(kind, "cublas", 6)) return;
    if (!strcmp(kind, "fused-head8")) { /* not gemv.cu's: head8.cu's two launches */
        printf("%-22s   plan: head8: an int8 screen of %d x %d, then the candidates' bf16 rows\n", "", M, K);
        return;
    }
    void *fake = (void *)(uintptr_t)256;
    orthros_gemv_params p;
    memset(&p, 0, sizeof p);
    p.out = fake, p.x = fake, p.W = fake, p.n = n, p.M = M, p.K = K;
    const int head = !strcmp(proj, "head");
    if (strncmp(kind, "fused", 5)) {
        p.epilogue = head ? ORTHROS_GEMV_STORE_F32 : ORTHROS_GEMV_STORE;
    } else if (head) {
        p.epilogue = ORTHROS_GEMV_ARGMAX, p.ids = fake, p.norm_w = fake;
    } else if (!strcmp(proj, "qkv")) {
        p.epilogue = ORTHROS_GEMV_ROPE, p.norm_w = fake, p.k_cache = fake, p.v_cache = fake, p.pos = fake;
        p.Hq = Hq, p.Hkv = Hkv, p.d = d, p.cap = 4096;
    } else if (!strcmp(proj, "gate_up")) {
        p.epilogue = ORTHROS_GEMV_SWIGLU, p.norm_w = fake;
    } else {
        p.epilogue = ORTHROS_GEMV_ADD;
    }
    char buf[256];
    if (!orthros_gemv_describe(&p, buf, sizeof buf)) printf("%-22s   plan: %s\n", "", buf);
}

/* One cell: the shape of model `model` (its d, Hq, Hkv for RoPE) and projection proj, n rows, `kind`. */
static void bench_gemv_case(orthros_backend *b, const char *model, const char *proj, const char *kind, int n, int M, int K,
                            int Hq, int Hkv, int d)
{
    if (!want("gemv") || !b || !b->graph_begin) return;
    gemv_ctx g;
    memset(&g, 0, sizeof g);
    g.b = b, g.kind = kind, g.proj = proj, g.n = n, g.M = M, g.K = K;
    const size_t wbytes = (size_t)M * K * 2;
    g.copies = (int)((GEMV_COPY_BYTES + wbytes - 1) / wbytes);
    if (g.copies > 64) g.copies = 64;
    /* fused-head8: one copy. The backend keeps the int8 copy of the head last met alone, so a second weight copy
     * would make every call a new head (a capture would then take the bf16 head); a head (525 MB at 1B) is ten
     * times L2 on its own. */
    if (!strcmp(kind, "fused-head8")) g.copies = 1;
    g.W = calloc((size_t)g.copies, sizeof *g.W);
    if (!g.W) must(ORTHROS_ENOMEM, "out of memory");
    for (int i = 0; i < g.copies; i++) {
        g.W[i] = dalloc(wbytes);
        must(be->fill_random(be, g.W[i], (size_t)M * K, 20 + (uint64_t)i, 1.0f / sqrtf((float)K)), "fill");
    }
    const int head = !strcmp(proj, "head");
    g.x = dalloc((size_t)n * K * 2);
    g.xn = dalloc((size_t)n * (K > M ? K : M) * 2);
    g.gu = dalloc((size_t)n * M * 2);
    g.out = dalloc((size_t)n * M * (head ? 4 : 2));
    g.norm_w = dalloc((size_t)K * 2);
    g.ids = dalloc(16 * sizeof(int32_t));
    must(be->fill_random(be, g.x, (size_t)n * K, 5, 1.0f), "fill");
    must(be->fill(be, g.norm_w, (size_t)K, 1.0f), "fill");
    must(be->fill_random(be, g.out, (size_t)n * M * (head ? 2 : 1), 6, 1.0f), "fill");
    if (!strcmp(proj, "qkv")) {
        const int cap = 4096;
        g.k_cache = dalloc((size_t)n * cap * Hkv * d * 2);
        g.v_cache = dalloc((size_t)n * cap * Hkv * d * 2);
        g.L.n_heads = Hq, g.L.n_kv_heads = Hkv, g.L.head_dim = d, g.L.cap = cap;
        g.L.k_cache = g.k_cache, g.L.v_cache = g.v_cache;
        orthros_model_config cfg = {.head_dim = d, .rope_theta = 500000.0};
        orthros_rope_inv_freq(g.inv, &cfg);
        g.rope = (orthros_rope){Hq, Hkv, d, g.inv};
        for (int i = 0; i < n; i++) g.pos[i] = 4000 + i;
        /* positions on the device, as a captured decode step reads them */
        g.pos_dev = dalloc(16 * sizeof(int32_t));
        must(b->upload_ints(b, g.pos_dev, g.pos, n), "positions");
        g.L.pos_dev = g.pos_dev;
    }
    must(be->sync(be), "sync");
    /* one uncaptured round first (scratch, kernel attributes), then the capture of every copy once */
    for (int i = 0; i < g.copies; i++) must(gemv_call(&g, i), kind);
    must(b->sync(b), "sync");
    must(b->graph_begin(b), "graph capture");
    int rc = 0;
    for (int i = 0; i < g.copies && !rc; i++) rc = gemv_call(&g, i);
    int erc = b->graph_end(b, &g.graph);
    must(rc ? rc : erc, "graph capture");
    double samples[SAMPLES];
    sync_be = b;
    double t = time_op(run_gemv_graph, &g, samples) / g.copies;
    sync_be = NULL;
    for (int i = 0; i < SAMPLES; i++) samples[i] /= g.copies;
    const double out_bytes = head ? 4.0 : 2.0;
    const int fused = !strncmp(kind, "fused", 5);
    double bytes = (double)wbytes + 2.0 * n * K + out_bytes * n * (strcmp(proj, "gate_up") || !fused ? M : M / 2);
    if (!strcmp(proj, "o") || !strcmp(proj, "down")) bytes += fused ? 2.0 * n * M : 0; /* the residual read */
    char shape[128];
    snprintf(shape, sizeof shape, "%s %s n=%d M=%d K=%d %s", model, proj, n, M, K, kind);
    const char *kn = !strcmp(kind, "cublas") ? "gemv_cublas" : !strcmp(kind, "cublaslt") ? "gemv_cublaslt"
                     : !strcmp(kind, "gemv") ? "gemv"
                     : !strcmp(kind, "fused-pdl") ? "gemv_fused_pdl"
                     : !strcmp(kind, "fused-head8") ? "head8" : "gemv_fused";
    bench_case bc = {kn, d, K, n, M, 0, !strncmp(kind, "cublas", 6) ? 0 : orthros_gemv_version(),
                     strcmp(kind, "cublas") == 0};
    record_case("gemv", shape, &bc, 1, 2.0 * n * (double)M * K, bytes, t, samples);
    print_gemv_plan(kind, proj, n, M, K, Hq, Hkv, d);
    b->graph_free(b, g.graph);
    /* freed through the backend that ran them: one that keeps a copy of a head (ORTHROS_DECODE_HEAD8) drops it */
    for (int i = 0; i < g.copies; i++) b->free(b, g.W[i]);
    free(g.W);
    void *bufs[] = {g.x, g.xn, g.gu, g.out, g.norm_w, g.ids, g.k_cache, g.v_cache, g.pos_dev};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) be->free(be, bufs[i]);
}

/* Every projection of one model shape at batch n, each way, and the step's products summed (L layers and the head)
 * against their floor. */
static void bench_gemv_model(orthros_backend *gemv_be, orthros_backend *pdl_be, orthros_backend *lt_be,
                             orthros_backend *h8_be, const char *model, int D, int Hq, int Hkv, int d, int F, int V, int L,
                             int n)
{
    if (!want("gemv")) return;
    const struct {
        const char *proj;
        int M, K;
    } ps[] = {{"qkv", (Hq + 2 * Hkv) * d, D}, {"o", D, Hq * d}, {"gate_up", 2 * F, D}, {"down", D, F}, {"head", V, D}};
    /* fused-v1, fused-v2, fused-v4, fused-v5: the fused op with gemv.cu's version 1 alone (the tensor-core kernel),
     * with version 2 (v3's kernel at batch 1-4, another plan), with version 4 (v3's groups pipelined, batch 1-4) and
     * with version 5 (v1's tiles through a ring of cp.async slots, batch 9-16: not timed below 9, where it is v3)
     * and with version 6 (v5's tiles from TMA stages, batch 9-16 likewise; fused-v6wg: its stages read by wgmma,
     * ORTHROS_GEMV6_WGMMA=1, set around its cells), beside the default (version 3, gemv_version 0); fused-head8: the
     * head alone at batch 1-4 through a backend made with ORTHROS_DECODE_HEAD8=1 (its int8 copy, kernels/head8.h; the
     * bf16 head's bytes are the cell's, so its floor is the bf16 head's), left out of the step's sums */
    const struct {
        const char *kind;
        orthros_backend *b;
        int gemv_version;
        const char *env; /* a switch set to 1 around the kind's cells */
    } ks[] = {{"cublas", be, 0, NULL},     {"cublaslt", lt_be, 0, NULL}, {"gemv", gemv_be, 0, NULL},
              {"fused", be, 0, NULL},      {"fused-pdl", pdl_be, 0, NULL}, {"fused-v1", be, 1, NULL},
              {"fused-v2", be, 2, NULL},   {"fused-v4", be, 4, NULL},    {"fused-v5", be, 5, NULL},
              {"fused-v6", be, 6, NULL},   {"fused-v6wg", be, 6, "ORTHROS_GEMV6_WGMMA"},
              {"fused-head8", h8_be, 0, NULL}};
    enum { NK = sizeof ks / sizeof *ks };
    double sum[NK] = {0}, floor_s = 0;
    int known = !gemv_kind, known_proj = !gemv_proj;
    for (int k = 0; k < NK; k++) known |= gemv_kind && !strcmp(gemv_kind, ks[k].kind);
    for (int i = 0; i < 5; i++) known_proj |= gemv_proj && !strcmp(gemv_proj, ps[i].proj);
    if (!known) must(orthros_error(ORTHROS_EINVAL, "--gemv-kind %s: no such kind", gemv_kind), "gemv kind");
    if (!known_proj) must(orthros_error(ORTHROS_EINVAL, "--gemv-proj %s: no such projection", gemv_proj), "gemv proj");
    for (int k = 0; k < NK; k++)
        for (int i = 0; i < 5; i++) {
            if (ks[k].gemv_version >= 5 && n <= 8) continue;
            const int head8 = ks[k].b == h8_be;
            if (head8 && (strcmp(ps[i].proj, "head") || n > 4)) continue;
            if (k > 0 && gemv_kind && strcmp(gemv_kind, ks[k].kind)) continue;
            if (gemv_proj && strcmp(gemv_proj, ps[i].proj)) continue;
            size_t before = out_file.n_cells;
            must(orthros_gemv_set_version(ks[k].gemv_version), "gemv version");
            if (ks[k].env) setenv(ks[k].env, "1", 1);
            bench_gemv_case(ks[k].b, model, ps[i].proj, ks[k].kind, n, ps[i].M, ps[i].K, Hq, Hkv, d);
            if (ks[k].env) unsetenv(ks[k].env);
            must(orthros_gemv_set_version(0), "gemv version");
            if (out_file.n_cells == before) continue;
            const orthros_bench_cell *c = &out_file.cells[out_file.n_cells - 1];
            const double times = !strcmp(ps[i].proj, "head") ? 1 : L;
            if (head8) continue; /* the head alone: no step's sum */
            sum[k] += times * c->stats.median;
            if (k == 0) floor_s += times * c->floor_s;
        }
    printf("%-22s %s n=%d, the step's products (%d layers and the head), ms and %% of the floor (%.3f ms):",
           "gemv step", model, n, L, floor_s * 1e3);
    for (int k = 0; k < NK; k++)
        if (sum[k] > 0)
            printf(" %s %.3f (%.0f%%)%s", ks[k].kind, sum[k] * 1e3, 100 * floor_s / sum[k], k < NK - 1 ? "," : "");
    printf("\n");
}

static void cuda_must(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) must(orthros_error(ORTHROS_EDEVICE, "%s: %s", what, cudaGetErrorString(e)), what);
}

/* The stream probe (kernels/step_probe.h): the products of a whole decode step's layers (the Llama-3.2-1B and
 * Llama-3.1-8B shapes at batch 1: q/k/v, O, gate/up, down, distinct weights a layer; no attention, norms or head)
 * streamed through one shared-memory ring a block in one resident kernel, with a grid barrier and the data dependency
 * after every product ("dep"), after O and down only ("dep2"), or with neither ("stream": the ring's own rate); the
 * consumers on the FMA units, the tensor cores or none; the producer's lead into a product before its input is staged
 * limited or not ("ahead"). bytes: the weights; the floor is theirs at the read ceiling. From the stamps of one more
 * launch, per kind of product: the step into it (the last block's y of the product before to the last block past the
 * barrier with the input staged) and the product itself (from there to the last block's y), us. */
static void bench_stream_probe(int sms)
{
    if (!want("stream_probe")) return;
    static const struct {
        const char *name;
        int layers, m[4], k[4];
    } models[] = {{"1B", 16, {3072, 2048, 16384, 2048}, {2048, 2048, 2048, 8192}},
                  {"8B", 32, {6144, 4096, 28672, 4096}, {4096, 4096, 4096, 14336}}};
    static const char *kinds[4] = {"qkv", "o", "gateup", "down"};
    /* consumers (fma, tensor cores, none), stages, steps: 1 after every product, 2 after O and down only (two grid
     * steps a layer, as a step whose gate/up-down and attention-O seams need none would have), 0 none, 3 after
     * q/k/v, O and down, down split over the blocks' own gate/up pairs (no step into it: its input is each block's
     * own, its sums added into y; step_probe.h's split), 4 the same in 64-bit fixed point (split 2); and the
     * producer's stages ahead of a product's staged input (-1: no limit) */
    static const int ways[][4] = {{0, 6, 1, -1}, {0, 6, 1, 0},  {0, 6, 1, 1},  {0, 6, 1, 2},  {0, 6, 2, -1},
                                  {0, 6, 0, -1}, {1, 6, 1, -1}, {2, 6, 1, -1}, {2, 6, 1, 1},  {2, 6, 0, -1},
                                  {0, 6, 3, -1}, {0, 6, 3, 2},  {0, 6, 4, -1}};
    static const char *modes[3] = {"fma", "tc", "none"};
    static const char *steps[5] = {"stream", "dep", "dep2", "split down", "split down, fixed point"};
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        const int L = models[mi].layers, n = 4 * L;
        size_t wbytes = 0, ybytes = 0;
        for (int j = 0; j < 4; j++) {
            wbytes += (size_t)L * models[mi].m[j] * models[mi].k[j] * 2;
            ybytes += (size_t)L * models[mi].m[j] * 4;
        }
        unsigned char *W = NULL;
        float *Y = NULL;
        unsigned long long *ACC = NULL; /* the fixed-point split's sums */
        void *x0 = NULL;
        unsigned *sync = NULL;
        unsigned long long *stamps = NULL;
        orthros_stream_product *list = malloc((size_t)n * sizeof *list), *list_dev = NULL;
        unsigned long long *hs = malloc((size_t)n * 2 * sms * sizeof *hs);
        cuda_must(cudaMalloc((void **)&W, wbytes), "alloc");
        cuda_must(cudaMalloc((void **)&Y, ybytes), "alloc");
        cuda_must(cudaMalloc((void **)&ACC, 2 * ybytes), "alloc");
        cuda_must(cudaMalloc(&x0, 2 * 4096), "alloc");
        cuda_must(cudaMalloc((void **)&sync, 4), "alloc");
        cuda_must(cudaMalloc((void **)&stamps, (size_t)n * 2 * sms * 8), "alloc");
        cuda_must(cudaMalloc((void **)&list_dev, (size_t)n * sizeof *list_dev), "alloc");
        cuda_must(cudaMemset(W, 0x3c, wbytes), "memset"); /* bf16 0x3c3c: 0.0115, no zero pages */
        cuda_must(cudaMemset(x0, 0x3c, 2 * 4096), "memset");
        size_t wo = 0, yo = 0;
        for (int l = 0; l < L; l++)
            for (int j = 0; j < 4; j++) {
                const int M = models[mi].m[j], K = models[mi].k[j];
                list[4 * l + j] = (orthros_stream_product){W + wo, Y + yo, M, K, 1, 0, ACC + yo};
                wo += (size_t)M * K * 2, yo += (size_t)M;
            }
        cudaEvent_t e0, e1;
        cuda_must(cudaEventCreate(&e0), "event");
        cuda_must(cudaEventCreate(&e1), "event");
        for (size_t wi = 0; wi < sizeof ways / sizeof *ways; wi++) {
            const int blocks = sms, stages = ways[wi][1], mode = ways[wi][0], ahead = ways[wi][3];
            const int split = ways[wi][2] >= 3;
            for (int p = 0; p < n; p++) {
                list[p].wait = ways[wi][2] == 1 || (ways[wi][2] == 2 && p % 2 == 1) || (split && p % 4 != 2);
                list[p].split = split && p % 4 == 3 ? ways[wi][2] - 2 : 0;
            }
            double samples[SAMPLES], sorted[SAMPLES];
            int rc = 0;
            for (int s = 0; s < WARMUP + SAMPLES && !rc; s++) {
                cuda_must(cudaMemsetAsync(sync, 0, 4, 0), "memset");
                cuda_must(cudaEventRecord(e0, 0), "event");
                rc = orthros_probe_stream(list, list_dev, n, x0, sync, NULL, blocks, stages, mode, ahead, 0);
                cuda_must(cudaEventRecord(e1, 0), "event");
                cuda_must(cudaEventSynchronize(e1), "sync");
                float ms = 0.0f;
                cuda_must(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
                if (s >= WARMUP) samples[s - WARMUP] = ms * 1e-3;
            }
            char shape[160];
            snprintf(shape, sizeof shape, "%s x%d, %d stages, %s, %s, ahead %d", models[mi].name, L, stages,
                     modes[mode], steps[ways[wi][2]], ahead);
            if (rc) {
                printf("stream_probe %s: %s\n", shape, orthros_last_error());
                continue;
            }
            memcpy(sorted, samples, sizeof sorted);
            const double med = orthros_median_sorting(sorted, SAMPLES);
            record_case("stream_probe", shape, NULL, 1, 0.0, (double)wbytes, med, samples);
            printf("stream_probe %s: %.2f us a layer\n", shape, med * 1e6 / L);
            /* the spans, from one more launch with stamps */
            cuda_must(cudaMemsetAsync(sync, 0, 4, 0), "memset");
            must(orthros_probe_stream(list, list_dev, n, x0, sync, stamps, blocks, stages, mode, ahead, 0),
                 "probe stream");
            cuda_must(cudaMemcpy(hs, stamps, (size_t)2 * n * blocks * 8, cudaMemcpyDeviceToHost), "download");
            /* per kind: the step into the product (the last block's y of the one before to the last block past the
             * barrier with its input staged) and the product itself (from there to the last block's y) */
            double into[4] = {0, 0, 0, 0}, body[4] = {0, 0, 0, 0};
            unsigned long long prev = 0;
            for (int p = 0; p < n; p++) {
                unsigned long long go = 0, end = 0;
                for (int bl = 0; bl < blocks; bl++) {
                    const unsigned long long g = hs[(size_t)(n + p) * blocks + bl], e = hs[(size_t)p * blocks + bl];
                    go = g > go ? g : go, end = e > end ? e : end;
                }
                if (p > 0) into[p % 4] += (double)(go - prev) * 1e-3 / (p % 4 ? L : L - 1);
                body[p % 4] += (double)(end - go) * 1e-3 / L;
                prev = end;
            }
            printf("stream_probe %s: us a product, into it + itself (bytes' floor at the read ceiling):", shape);
            for (int j = 0; j < 4; j++)
                printf(" %s %.2f + %.2f (%.2f)", kinds[j], into[j], body[j],
                       (double)models[mi].m[j] * models[mi].k[j] * 2 / (ceil_read_tbps * 1e12) * 1e6);
            printf("\n");
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cudaFree(W), cudaFree(Y), cudaFree(ACC), cudaFree(x0), cudaFree(sync), cudaFree(stamps), cudaFree(list_dev);
        free(list), free(hs);
    }
}

/* A captured graph of `copies` copies of a call, instantiated and replayed WARMUP + SAMPLES times between events on
 * st: samples the seconds a copy of each timed replay, the median returned (the ring chain's and fused_parts'). */
static double time_graph(cudaGraph_t graph, cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, int copies,
                         double *samples)
{
    cudaGraphExec_t exec;
    cuda_must(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    for (int s = 0; s < WARMUP + SAMPLES; s++) {
        cuda_must(cudaEventRecord(e0, st), "event");
        cuda_must(cudaGraphLaunch(exec, st), "replay");
        cuda_must(cudaEventRecord(e1, st), "event");
        cuda_must(cudaEventSynchronize(e1), "sync");
        float ms = 0.0f;
        cuda_must(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        if (s >= WARMUP) samples[s - WARMUP] = ms * 1e-3 / copies;
    }
    cudaGraphExecDestroy(exec);
    double sorted[SAMPLES];
    memcpy(sorted, samples, sizeof sorted);
    return orthros_median_sorting(sorted, SAMPLES);
}

/* The ring chain (gemv.cu; the decode step's ORTHROS_DECODE_CHAIN_RING) against the products it replaces: a layer's
 * O (adding into the residual), gate/up (normed, SwiGLU), down (adding) and the next layer's q/k/v (normed, RoPE, the
 * cache write at position 4000 of 4096) at batch 1, the Llama-3.2-1B and 3.1-8B shapes, four ways: one by one (gemv v3,
 * four launches), the chain (v3, one launch), the ring chain's form 0 and form 1 (with the producer's lead into a
 * product bounded to 3, 2, 1 or 0 stages before its input is staged, and not). Each way runs C layers' copies of
 * the weights (512 MB or more, so that L2 holds none) as C chains captured in one graph, timed per layer; bytes: the
 * weights. Then one launch of each ring-chain form with stamps: per product, the step into it (from the last block
 * past the barrier before it, or the first block's start, to the last block with its input staged), its rows' sums
 * (to the last block done with them), its epilogue (to the last block done with it) and its barrier, us. */
static void bench_ring_chain(int sms)
{
    const int early0 = orthros_gemv_early();
    if (!want("ring_chain")) return;
    static const struct {
        const char *name;
        int D, F, Hq, Hkv, d;
    } models[] = {{"1B", 2048, 8192, 32, 8, 64}, {"8B", 4096, 14336, 32, 8, 128}};
    static const char *prod[4] = {"o", "gate/up", "down", "qkv"};
    /* the ways: 0 one by one, 1 the chain, 2 the ring chain with the form and the producer's lead given */
    static const struct {
        int kind, form, ahead, early;
        const char *name;
    } ways[] = {{0, 0, -1, 0, "one by one (v3), early 0"},
                {0, 0, -1, 11, "one by one (v3), early 11"},
                {0, 0, -1, 19, "one by one (v3), early 19"},
                {0, 0, -1, 43, "one by one (v3), early 43"},
                {1, 0, -1, -1, "chain (v3)"},
                {2, 0, -1, -1, "ring chain form 0"},
                {2, 1, -1, -1, "ring chain form 1"},
                {2, 1, 3, -1, "ring chain form 1, ahead 3"},
                {2, 1, 2, -1, "ring chain form 1, ahead 2"},
                {2, 1, 1, -1, "ring chain form 1, ahead 1"},
                {2, 1, 0, -1, "ring chain form 1, ahead 0"}};
    cudaStream_t st;
    cuda_must(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    cudaEvent_t e0, e1;
    cuda_must(cudaEventCreate(&e0), "event");
    cuda_must(cudaEventCreate(&e1), "event");
    unsigned long long *stamps = NULL, *hs = malloc((size_t)17 * sms * sizeof *hs);
    cuda_must(cudaMalloc((void **)&stamps, (size_t)17 * sms * sizeof *stamps), "alloc");
    if (!hs) must(ORTHROS_ENOMEM, "out of memory");
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        const int D = models[mi].D, F = models[mi].F, Hq = models[mi].Hq, Hkv = models[mi].Hkv, d = models[mi].d;
        const int Hd = Hq * d, Wd = (Hq + 2 * Hkv) * d, cap = 4096, pos = 4000;
        const size_t nw[4] = {(size_t)D * Hd, (size_t)2 * F * D, (size_t)D * F, (size_t)Wd * D};
        const size_t wl = 2 * (nw[0] + nw[1] + nw[2] + nw[3]);
        int C = (int)((GEMV_COPY_BYTES + wl - 1) / wl);
        C = C < 2 ? 2 : C > 8 ? 8 : C;
        void *W[8][4], *X = dalloc(2 * (size_t)D), *attn = dalloc(2 * (size_t)Hd), *n1 = dalloc(2 * (size_t)D);
        void *act = dalloc(2 * (size_t)F), *n2 = dalloc(2 * (size_t)D), *qkv = dalloc(2 * (size_t)Wd);
        void *kc = dalloc(2 * (size_t)cap * Hkv * d), *vc = dalloc(2 * (size_t)cap * Hkv * d);
        void *scratch = dalloc(orthros_gemv_scratch_bytes());
        int32_t *pos_d = dalloc(sizeof(int32_t));
        for (int c = 0; c < C; c++)
            for (int j = 0; j < 4; j++) {
                W[c][j] = dalloc(2 * nw[j]);
                const int K = j == 0 ? Hd : j == 2 ? F : D;
                must(be->fill_random(be, W[c][j], nw[j], 40 + 4 * (uint64_t)c + j, 1.0f / sqrtf((float)K)), "fill");
            }
        must(be->fill_random(be, X, D, 50, 1.0f), "fill");
        must(be->fill_random(be, attn, Hd, 51, 1.0f), "fill");
        must(be->fill(be, n1, D, 1.0f), "fill");
        must(be->fill(be, n2, D, 1.0f), "fill");
        must(be->zero(be, scratch, orthros_gemv_scratch_bytes()), "zero");
        must(be->upload_ints(be, pos_d, &pos, 1), "position");
        must(be->sync(be), "sync");
        orthros_gemv_params ops[8][4];
        memset(ops, 0, sizeof ops);
        float inv[ORTHROS_MAX_HEAD_DIM / 2];
        orthros_model_config cfg = {.head_dim = d, .rope_theta = 500000.0};
        orthros_rope_inv_freq(inv, &cfg);
        for (int c = 0; c < C; c++) {
            const struct {
                void *out, *x, *norm;
                int M, K, epi;
            } sp[4] = {{X, attn, NULL, D, Hd, ORTHROS_GEMV_ADD},
                       {act, X, n1, 2 * F, D, ORTHROS_GEMV_SWIGLU},
                       {X, act, NULL, D, F, ORTHROS_GEMV_ADD},
                       {qkv, X, n2, Wd, D, ORTHROS_GEMV_ROPE}};
            for (int j = 0; j < 4; j++) {
                orthros_gemv_params *p = &ops[c][j];
                p->out = sp[j].out, p->x = sp[j].x, p->norm_w = sp[j].norm, p->eps = 1e-5f, p->W = W[c][j];
                p->n = 1, p->M = sp[j].M, p->K = sp[j].K, p->epilogue = sp[j].epi, p->scratch = scratch;
                p->num_sms = sms;
                if (sp[j].epi == ORTHROS_GEMV_ROPE) {
                    p->k_cache = kc, p->v_cache = vc, p->pos = pos_d, p->Hq = Hq, p->Hkv = Hkv, p->d = d, p->cap = cap;
                    memcpy(p->inv_freq, inv, sizeof inv[0] * (size_t)(d / 2));
                }
            }
        }
        for (size_t wi = 0; wi < sizeof ways / sizeof *ways; wi++) {
            const int way = ways[wi].kind;
            must(orthros_gemv_set_version(way < 2 ? 3 : 0), "gemv version");
            must(orthros_gemv_ring_chain_set_form(ways[wi].form), "ring chain form");
            must(orthros_gemv_ring_chain_set_ahead(ways[wi].ahead), "ring chain lead");
            must(orthros_gemv_set_early(ways[wi].early >= 0 ? ways[wi].early : early0), "gemv early");
            int rc = 0;
            /* one round uncaptured (attributes, plans), then C chains captured */
            for (int pass = 0; pass < 2 && !rc; pass++) {
                if (pass == 1) cuda_must(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "capture");
                for (int c = 0; c < C && !rc; c++) {
                    if (way == 0)
                        for (int j = 0; j < 4 && !rc; j++) rc = orthros_gemv_bf16(&ops[c][j], st);
                    else if (way == 1)
                        rc = orthros_gemv_chain_bf16(ops[c], 4, st);
                    else
                        rc = orthros_gemv_ring_chain_bf16(ops[c], 4, st);
                }
                if (pass == 0) cuda_must(cudaStreamSynchronize(st), "sync");
            }
            cudaGraph_t graph = NULL;
            enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
            cuda_must(cudaStreamIsCapturing(st, &cs), "capture");
            if (cs != cudaStreamCaptureStatusNone) cuda_must(cudaStreamEndCapture(st, &graph), "capture");
            char shape[160];
            snprintf(shape, sizeof shape, "%s layer (o, gate/up, down, qkv) batch 1, %s", models[mi].name,
                     ways[wi].name);
            if (rc) {
                printf("ring_chain %s: %s\n", shape, orthros_last_error());
                if (graph) cudaGraphDestroy(graph);
                continue;
            }
            double samples[SAMPLES];
            const double med = time_graph(graph, st, e0, e1, C, samples);
            record_case("ring_chain", shape, NULL, 1, 0.0, (double)wl, med, samples);
            printf("ring_chain %s: %.2f us a layer (the weights' floor %.2f us)\n", shape, med * 1e6,
                   (double)wl / (ceil_read_tbps * 1e12) * 1e6);
            cudaGraphDestroy(graph);
            if (way < 2) continue;
            /* the spans, from one more launch with stamps */
            must(orthros_gemv_ring_chain_stamped(ops[0], 4, stamps, st), "ring chain stamped");
            cuda_must(cudaStreamSynchronize(st), "sync");
            cuda_must(cudaMemcpy(hs, stamps, (size_t)17 * sms * sizeof *hs, cudaMemcpyDeviceToHost), "download");
            unsigned long long prev = ~0ull;
            for (int b = 0; b < sms; b++) prev = hs[(size_t)16 * sms + b] < prev ? hs[(size_t)16 * sms + b] : prev;
            printf("ring_chain %s: us a product, into it (staged) + rows + epilogue + barrier:", shape);
            for (int j = 0; j < 4; j++) {
                unsigned long long last[4] = {0, 0, 0, 0};
                for (int k = 0; k < 4; k++)
                    for (int b = 0; b < sms; b++) {
                        const unsigned long long t = hs[((size_t)j * 4 + k) * sms + b];
                        last[k] = t > last[k] ? t : last[k];
                    }
                printf(" %s %.2f + %.2f + %.2f + %.2f", prod[j], (double)(last[0] - prev) * 1e-3,
                       (double)(last[1] - last[0]) * 1e-3, (double)(last[2] - last[1]) * 1e-3,
                       (double)(last[3] - last[2]) * 1e-3);
                prev = last[3];
            }
            printf("\n");
        }
        must(orthros_gemv_set_version(0), "gemv version");
        must(orthros_gemv_set_early(early0), "gemv early");
        must(orthros_gemv_ring_chain_set_form(1), "ring chain form");
        must(orthros_gemv_ring_chain_set_ahead(-1), "ring chain lead");
        for (int c = 0; c < C; c++)
            for (int j = 0; j < 4; j++) be->free(be, W[c][j]);
        void *bufs[] = {X, attn, n1, act, n2, qkv, kc, vc, scratch, pos_d};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be->free(be, bufs[i]);
    }
    cudaFree(stamps);
    free(hs);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(st);
}

/* The pieces of the step's fused products at batch 1 (gemv.cu v3; op fused_parts): each decode projection of the 1B
 * and 8B shapes as a plain product (STORE, STORE_F32 for the head), with the norm alone (the normed ones), and fused as
 * the step runs it (the norm and the epilogue: RoPE with the cache write, SwiGLU, the residual add, the argmax), each
 * with orthros_gemv_set_early's masks (runs[] below). C copies of the weights in one captured graph, as the gemv op's
 * cells; us a call. What the norm and each epilogue add to a product, and what loading their operands early takes
 * off. */
static void bench_fused_parts(int sms)
{
    if (!want("fused_parts")) return;
    static const struct {
        const char *name;
        int D, F, Hq, Hkv, d, V;
    } models[] = {{"1B", 2048, 8192, 32, 8, 64, 128256}, {"8B", 4096, 14336, 32, 8, 128, 128256}};
    cudaStream_t st;
    cuda_must(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    cudaEvent_t e0, e1;
    cuda_must(cudaEventCreate(&e0), "event");
    cuda_must(cudaEventCreate(&e1), "event");
    const int early0 = orthros_gemv_early();
    must(orthros_gemv_set_version(3), "gemv version");
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        const int D = models[mi].D, F = models[mi].F, Hq = models[mi].Hq, Hkv = models[mi].Hkv, d = models[mi].d;
        const int cap = 4096, pos = 4000;
        const struct {
            const char *proj;
            int M, K, epi, norm;
        } ps[] = {{"qkv", (Hq + 2 * Hkv) * d, D, ORTHROS_GEMV_ROPE, 1},
                  {"o", D, Hq * d, ORTHROS_GEMV_ADD, 0},
                  {"gate_up", 2 * F, D, ORTHROS_GEMV_SWIGLU, 1},
                  {"down", D, F, ORTHROS_GEMV_ADD, 0},
                  {"head", models[mi].V, D, ORTHROS_GEMV_ARGMAX, 1}};
        float inv[ORTHROS_MAX_HEAD_DIM / 2];
        orthros_model_config cfg = {.head_dim = d, .rope_theta = 500000.0};
        orthros_rope_inv_freq(inv, &cfg);
        void *x = dalloc(2 * (size_t)F), *norm_w = dalloc(2 * (size_t)F), *out = dalloc(4 * (size_t)models[mi].V);
        void *kc = dalloc(2 * (size_t)cap * Hkv * d), *vc = dalloc(2 * (size_t)cap * Hkv * d);
        void *scratch = dalloc(orthros_gemv_scratch_bytes());
        int32_t *pos_d = dalloc(sizeof(int32_t)), *ids = dalloc(16 * sizeof(int32_t));
        must(be->fill_random(be, x, (size_t)F, 60, 1.0f), "fill");
        must(be->fill(be, norm_w, (size_t)F, 1.0f), "fill");
        must(be->fill_random(be, out, 2 * (size_t)models[mi].V, 61, 1.0f), "fill");
        must(be->zero(be, scratch, orthros_gemv_scratch_bytes()), "zero");
        must(be->upload_ints(be, pos_d, &pos, 1), "position");
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
            const int M = ps[pi].M, K = ps[pi].K, head = ps[pi].epi == ORTHROS_GEMV_ARGMAX;
            const size_t wbytes = (size_t)M * K * 2;
            int C = (int)((GEMV_COPY_BYTES + wbytes - 1) / wbytes);
            C = C > 64 ? 64 : C;
            void *W[64];
            for (int c = 0; c < C; c++) {
                W[c] = dalloc(wbytes);
                must(be->fill_random(be, W[c], (size_t)M * K, 70 + (uint64_t)c, 1.0f / sqrtf((float)K)), "fill");
            }
            must(be->sync(be), "sync");
            /* the ways (0 plain, 1 with the norm, 2 fused) and the early masks each is timed with */
            static const struct {
                int way, early;
            } runs[] = {{0, 0}, {1, 0}, {1, 8}, {1, 40}, {2, 0}, {2, 1}, {2, 2}, {2, 8}, {2, 11}, {2, 19}, {2, 43}};
            static const char *way_name[3] = {"plain", "+norm", "fused"};
            char line[512];
            size_t used = (size_t)snprintf(line, sizeof line,
                                           "fused_parts %s %s (floor %.2f us), us a call (early mask):", models[mi].name,
                                           ps[pi].proj, (double)wbytes / (ceil_read_tbps * 1e12) * 1e6);
            for (size_t ri = 0; ri < sizeof runs / sizeof *runs; ri++) {
                const int w = runs[ri].way, early = runs[ri].early;
                if (w == 1 && !ps[pi].norm) continue;
                must(orthros_gemv_set_early(early), "gemv early");
                orthros_gemv_params p;
                memset(&p, 0, sizeof p);
                p.out = out, p.x = x, p.norm_w = w >= 1 && ps[pi].norm ? norm_w : NULL, p.eps = 1e-5f;
                p.n = 1, p.M = M, p.K = K, p.scratch = scratch, p.num_sms = sms;
                p.epilogue = w < 2 ? (head ? ORTHROS_GEMV_STORE_F32 : ORTHROS_GEMV_STORE) : ps[pi].epi;
                if (p.epilogue == ORTHROS_GEMV_ROPE) {
                    p.k_cache = kc, p.v_cache = vc, p.pos = pos_d, p.Hq = Hq, p.Hkv = Hkv, p.d = d, p.cap = cap;
                    memcpy(p.inv_freq, inv, sizeof inv[0] * (size_t)(d / 2));
                }
                if (p.epilogue == ORTHROS_GEMV_ARGMAX) p.ids = ids;
                int rc = 0;
                /* one round uncaptured (attributes, plans), then the C copies captured */
                for (int pass = 0; pass < 2 && !rc; pass++) {
                    if (pass == 1) cuda_must(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "capture");
                    for (int c = 0; c < C && !rc; c++) {
                        p.W = W[c];
                        rc = orthros_gemv_bf16(&p, st);
                    }
                    if (pass == 0) cuda_must(cudaStreamSynchronize(st), "sync");
                }
                cudaGraph_t graph = NULL;
                cuda_must(cudaStreamEndCapture(st, &graph), "capture");
                must(rc, "fused_parts");
                double samples[SAMPLES];
                const double med = time_graph(graph, st, e0, e1, C, samples);
                char shape[160];
                snprintf(shape, sizeof shape, "%s %s n=1 M=%d K=%d %s, early %d", models[mi].name, ps[pi].proj, M, K,
                         way_name[w], early);
                record_case("fused_parts", shape, NULL, 1, 2.0 * M * K, (double)wbytes, med, samples);
                if (used < sizeof line)
                    used += (size_t)snprintf(line + used, sizeof line - used, " %s (%d) %.2f", way_name[w], early,
                                             med * 1e6);
                cudaGraphDestroy(graph);
            }
            printf("%s\n", line);
            for (int c = 0; c < C; c++) be->free(be, W[c]);
        }
        void *bufs[] = {x, norm_w, out, kc, vc, scratch, pos_d, ids};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be->free(be, bufs[i]);
    }
    must(orthros_gemv_set_early(early0), "gemv early");
    must(orthros_gemv_set_version(0), "gemv version");
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(st);
}

/* The two fixed costs a persistent decode step trades (kernels/step_probe.h): the time a kernel boundary costs in a
 * captured chain of kernels as small as a kernel can be (98 of 2 blocks an SM: the 1B step's kernel count and the
 * products' grid), and the time one grid-wide barrier costs inside a resident kernel of one block an SM (1000
 * barriers in one launch). Each is microseconds a boundary; there is no floor (0 bytes). */
static void bench_step_probe(int sms)
{
    if (!want("step_probe")) return;
    const int nk = 98, blocks = 2 * sms, rounds = 500, reps = 20;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    unsigned *d = NULL;
    cuda_must(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    cuda_must(cudaEventCreate(&e0), "event");
    cuda_must(cudaEventCreate(&e1), "event");
    cuda_must(cudaMalloc((void **)&d, (size_t)(blocks + 3) * sizeof *d), "alloc");
    cuda_must(cudaMemset(d, 0, (size_t)(blocks + 3) * sizeof *d), "memset");
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cuda_must(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "capture");
    int rc = orthros_probe_chain(d, blocks, nk, st);
    cuda_must(cudaStreamEndCapture(st, &graph), "capture");
    must(rc, "probe chain");
    cuda_must(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    double samples[SAMPLES], sorted[SAMPLES];
    for (int way = 0; way < 3; way++) {
        if (way >= 1) {
            /* the flat barrier's count never resets: it is zeroed before every launch (a memset of 4 bytes in the
             * stream, timed with the launch: about a microsecond over 1000 barriers) */
            if (way == 2) cuda_must(cudaMemsetAsync(d + blocks, 0, sizeof *d, st), "memset");
            rc = orthros_probe_barrier(d, d + blocks, d + blocks + 2, sms, rounds, way == 2, st);
            if (rc == ORTHROS_EUNSUPPORTED) {
                printf("step_probe barrier: %s\n", orthros_last_error());
                break;
            }
            must(rc, "probe barrier");
            cuda_must(cudaStreamSynchronize(st), "sync");
        }
        for (int s = 0; s < WARMUP + SAMPLES; s++) {
            cuda_must(cudaEventRecord(e0, st), "event");
            for (int r = 0; r < reps && !rc; r++)
                if (way == 0) cuda_must(cudaGraphLaunch(exec, st), "replay");
                else {
                    if (way == 2) cuda_must(cudaMemsetAsync(d + blocks, 0, sizeof *d, st), "memset");
                    rc = orthros_probe_barrier(d, d + blocks, d + blocks + 2, sms, rounds, way == 2, st);
                }
            must(rc, "probe barrier");
            cuda_must(cudaEventRecord(e1, st), "event");
            cuda_must(cudaEventSynchronize(e1), "sync");
            float ms = 0.0f;
            cuda_must(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
            if (s >= WARMUP) samples[s - WARMUP] = ms * 1e-3 / reps / (way == 0 ? nk : 2.0 * rounds);
        }
        memcpy(sorted, samples, sizeof sorted);
        char shape[128];
        if (way == 0) snprintf(shape, sizeof shape, "a kernel boundary: %d kernels of %d blocks, one graph", nk, blocks);
        else snprintf(shape, sizeof shape, "a grid barrier%s: %d in one kernel of %d blocks", way == 2 ? " (flat)" : "",
                      2 * rounds, sms);
        record_case("step_probe", shape, NULL, 1, 0.0, 0.0, orthros_median_sorting(sorted, SAMPLES), samples);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(d);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(st);
}

/* The cluster probe (step_probe.h): v8's cluster shape at batch 1 (8 clusters of 9 blocks) and one of 2, 2000 rounds;
 * each segment's mean cycles a block and round after the first, and a block's in the first round (its code cold), in
 * ns at the device's clock too. Printed, not recorded (cycles from the SM's own clock, not a time of the run's
 * kind). */
static void bench_cluster_probe(void)
{
    if (!want("cluster_probe")) return;
    static const char *what[ORTHROS_CLUSTER_PROBE_SEGMENTS] = {
        "cluster.sync", "own load after it", "remote load after cluster.sync", "arrive.relaxed + wait",
        "own load after that", "own load after __syncthreads", "remote load, no barrier before",
        "fence.acq_rel.cluster + relaxed", "remote load after that",
        "gather's loads, every rank", "the same from own memory"};
    unsigned long long *cyc = NULL, h[ORTHROS_CLUSTER_PROBE_WORDS];
    unsigned *err = NULL, errors = 0;
    int dev = 0, khz = 0;
    cuda_must(cudaGetDevice(&dev), "device");
    cuda_must(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev), "clock");
    cuda_must(cudaMalloc((void **)&cyc, sizeof h), "alloc");
    cuda_must(cudaMalloc((void **)&err, sizeof errors), "alloc");
    const int shapes[][2] = {{8, 9}, {8, 2}}, rounds = 2000;
    for (int i = 0; i < 2; i++) {
        const int clusters = shapes[i][0], size = shapes[i][1];
        cuda_must(cudaMemset(cyc, 0, sizeof h), "memset");
        cuda_must(cudaMemset(err, 0, sizeof errors), "memset");
        const int rc = orthros_probe_cluster(cyc, err, clusters, size, rounds, 0);
        if (rc == ORTHROS_EUNSUPPORTED) {
            printf("cluster_probe: %s\n", orthros_last_error());
            break;
        }
        must(rc, "probe cluster");
        cuda_must(cudaDeviceSynchronize(), "sync");
        cuda_must(cudaMemcpy(h, cyc, sizeof h, cudaMemcpyDeviceToHost), "copy");
        cuda_must(cudaMemcpy(&errors, err, sizeof errors, cudaMemcpyDeviceToHost), "copy");
        if (errors) must(orthros_error(ORTHROS_EDEVICE, "probe cluster: %u loads read a wrong word", errors), "probe");
        const double blocks = (double)clusters * size, n = blocks * (rounds - 1);
        printf("%-22s %d clusters of %d, %d rounds, cycles a block and round after the first (ns at %d MHz), then "
               "the first round's (the code cold):\n",
               "cluster_probe", clusters, size, rounds, khz / 1000);
        for (int k = 0; k < ORTHROS_CLUSTER_PROBE_SEGMENTS; k++) {
            const double w = h[k] / n, f = h[ORTHROS_CLUSTER_PROBE_SEGMENTS + k] / blocks;
            printf("%-22s   %-34s %8.1f (%7.1f ns)  first %8.1f (%7.1f ns)\n", "", what[k], w, w / (khz * 1e-6), f,
                   f / (khz * 1e-6));
        }
    }
    cudaFree(cyc);
    cudaFree(err);
}

int main(int argc, char **argv)
{
    const char *json_path = NULL;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--gemv-kind") && i + 1 < argc) {
            gemv_kind = argv[++i];
        } else if (!strcmp(argv[i], "--gemv-proj") && i + 1 < argc) {
            gemv_proj = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr,
                    "usage: bench_kernels [OUT.json] [--quick] [--only OP] [--gemv-kind KIND] [--gemv-proj PROJ]\n");
            return 2;
        } else {
            json_path = argv[i];
        }
    }
    if (!orthros_cuda_available()) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    must(orthros_backend_cuda_create(&be), "cuda backend");
    /* The header of every result file (tool, argv, environment with the device and its kernel versions in use). */
    orthros_bench_file_init(&out_file);
    out_file.header = orthros_result_new("bench", argc, argv, 0, be, 1);
    out_file.cfg.model = strdup("kernels");
    out_file.cfg.archs = strdup("");
    out_file.cfg.ctxs = strdup("");
    out_file.cfg.phases = strdup("");
    out_file.cfg.batches = strdup("");
    if (!out_file.header || !out_file.cfg.model || !out_file.cfg.archs || !out_file.cfg.ctxs || !out_file.cfg.phases ||
        !out_file.cfg.batches)
        must(ORTHROS_ENOMEM, "out of memory");
    snprintf(out_file.cfg.source, sizeof out_file.cfg.source, "bench_kernels");
    snprintf(out_file.cfg.device, sizeof out_file.cfg.device, "cuda");
    snprintf(out_file.cfg.timer, sizeof out_file.cfg.timer, "host clock around K launches after a sync, per sample");
    out_file.cfg.reps = out_file.cfg.max_reps = SAMPLES, out_file.cfg.warmup = WARMUP;
    orthros_sched_config_init(&out_file.cfg.sched);
    out_path = json_path;
    printf("device: %s, %d SMs\n", be->info.name, be->info.sm_count);
    printf("%-22s %-40s %10s %10s %8s %8s %7s\n", "op", "shape", "ms", "floor_ms", "TFLOP/s", "TB/s", "floor%");

    ceilings();
    /* Decode: batch 1, 8, 16 over 32K, 64K and 128K caches (the anchors' shapes), every kept version run on a GPU
     * by name (v6, v7 and v8, the default on sm_90, at the end). --quick: 128K only. */
    const int dec_vs[] = {3, 4, 5}, dec_new[] = {6, 7, 8};
    const int Ls[] = {32768, 65536, 131072}, Bs[] = {1, 8, 16};
    for (int di = 0; di < 2; di++)
        for (int bi = 0; bi < 3; bi++)
            for (int li = quick ? 2 : 0; li < 3; li++) bench_decode_vs(di ? 128 : 64, Bs[bi], Ls[li], dec_vs, 3);
    /* Prefill: the causal sweep of the anchors (one sequence, 16K to 128K) with the default; v1-v4 by name at 16K,
     * v4 (the fallback on other GPUs, and the default before v5) at every length; a chunk against a longer cache
     * and one token against 128K. */
    const int pre_lo[] = {1, 2, 3, 4}, v4[] = {4};
    const int Ns[] = {16384, 32768, 65536, 131072};
    for (int di = 0; di < 2; di++) {
        int d = di ? 128 : 64;
        bench_prefill_vs(d, 16384, 0, 0, pre_lo, 4);
        for (int ni = 0; ni < 4; ni++) {
            if (quick && ni != 0 && ni != 2) continue;
            bench_prefill(d, Ns[ni], 0);
            if (ni) bench_prefill_vs(d, Ns[ni], 0, 0, v4, 1);
        }
        bench_prefill(d, 4096, 28672);
        bench_prefill(d, 1, 131071);
    }
    for (int di = 0; di < 2; di++) {
        int d = di ? 128 : 64;
        bench_linear(d, 1, quick ? 16384 : 131072, ORTHROS_FMAP_ELU1, 0, 0);
        /* Each kept version of the chunked prefill run on a GPU (the default above, then by name); v5 last. */
        for (int v = 3; v <= 4; v++) bench_linear(d, 1, quick ? 16384 : 131072, ORTHROS_FMAP_ELU1, 0, v);
        bench_linear(d, 1, 16384, ORTHROS_FMAP_HEDGEHOG, 0, 0);
        bench_linear(d, 1, 1, ORTHROS_FMAP_ELU1, 1, 0);
        bench_linear(d, 16, 1, ORTHROS_FMAP_ELU1, 1, 0);
    }

    /* Versions not yet run on hardware when written, last: a hang there, killed by the caller's timeout, keeps
     * every figure above in the JSON. Decode v6 and v7 on the same shapes as above; prefill v6 on sliding-window
     * chunks (window 4096, chunk 4096, a ring of 8191 slots that the chunk's tiles wrap around) against v4, which
     * ran them before; linear prefill v5. */
    for (int di = 0; di < 2; di++)
        for (int bi = 0; bi < 3; bi++)
            for (int li = quick ? 2 : 0; li < 3; li++) bench_decode_vs(di ? 128 : 64, Bs[bi], Ls[li], dec_new, 3);
    const int swa_vs[] = {4, 6};
    for (int di = 0; di < 2; di++) {
        int d = di ? 128 : 64;
        bench_prefill_vs(d, 4096, 65536, 4096, swa_vs, 2);
        bench_prefill_vs(d, 16384, 0, 4096, swa_vs, 2);
    }

    /* Linear prefill v5 (segments with the state in registers) and v6 (v5 with the map 8 values a step and the
     * empty causal tiles skipped), 128K and 16K tokens, both head dims. */
    for (int di = 0; di < 2; di++)
        for (int v = 5; v <= 6; v++) {
            bench_linear(di ? 128 : 64, 1, quick ? 16384 : 131072, ORTHROS_FMAP_ELU1, 0, v);
            if (!quick) bench_linear(di ? 128 : 64, 1, 16384, ORTHROS_FMAP_ELU1, 0, v);
        }

    /* Prefill v6 (two consumer warpgroups, the default before v7's three at head dim 64) on the causal sweep at
     * head dim 64, beside the default's figures above. */
    const int pre_v6[] = {6};
    for (int ni = 0; ni < 4; ni++) {
        if (quick && ni != 0 && ni != 2) continue;
        bench_prefill_vs(64, Ns[ni], 0, 0, pre_v6, 1);
    }

    /* The read patterns of mem_read.cu (probes beside the ceiling's pattern). */
    read_probes();

    /* The decode split plan against fixed split counts, on the cells nearest the read ceiling (batch 8-16); the
     * plan's pick is the "planned" row. Not with --quick. */
    if (!quick) {
        const int ns[] = {0, 4, 6, 8, 12, 16, 24, 33, 48};
        const int nsn = (int)(sizeof ns / sizeof ns[0]);
        for (int li = 1; li < 3; li++)
            for (int bi = 1; bi < 3; bi++) {
                bench_decode_splits(128, Bs[bi], Ls[li], ns, nsn);
                bench_decode_splits(64, Bs[bi], Ls[li], ns, nsn);
            }
        /* Batch 1 at 4K, the decode step's attention at the first target (the 8B and 1B head dims): the plan
         * takes the most splits one wave holds (128), each split kernel and its combine a fixed cost of the step. The
         * plan's row last and 128 first: the first cell of a sweep was the noisiest in the first run (0db7424). */
        const int ns1[] = {128, 96, 64, 48, 32, 24, 16, 0};
        bench_decode_splits(128, 1, 4096, ns1, (int)(sizeof ns1 / sizeof ns1[0]));
        bench_decode_splits(64, 1, 4096, ns1, (int)(sizeof ns1 / sizeof ns1[0]));
    }

    /* Decode v8 against v7 (first run on the H200 at 05ebf81; v8 the default on sm_90 since): batch 1 from 1K to 128K
     * keys, batch 2-16 at 4K and batch 16 at 32K and 128K, both head dims. --quick: batch 1 at 4K and 32K. */
    {
        const int Lc[] = {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072}, Bc[] = {2, 4, 8, 16};
        for (int di = 0; di < 2; di++) {
            for (int li = 0; li < 8; li++)
                if (!quick || Lc[li] == 4096 || Lc[li] == 32768) bench_decode_cluster(di ? 128 : 64, 1, Lc[li]);
            for (int bi = 0; bi < 4 && !quick; bi++) bench_decode_cluster(di ? 128 : 64, Bc[bi], 4096);
            if (!quick) {
                bench_decode_cluster(di ? 128 : 64, 16, 32768);
                bench_decode_cluster(di ? 128 : 64, 16, 131072);
            }
        }
    }

    /* Linear prefill v7 by name (the output pass on wgmma at head dim 128; the default on sm_90a), beside v5 and v6. */
    bench_linear(128, 1, quick ? 16384 : 131072, ORTHROS_FMAP_ELU1, 0, 7);
    if (!quick) bench_linear(128, 1, 16384, ORTHROS_FMAP_ELU1, 0, 7);

    /* A converted model's local window, last (where the window pass's v2, written without a GPU, first ran; measured
     * since: data/results/h200-2026-12-02-window-lag): W 0 and 64 at 128K, the default linear version, both head
     * dims. */
    for (int di = 0; di < 2; di++)
        for (int w = 0; w <= 64; w += 64) bench_linear_window(di ? 128 : 64, quick ? 16384 : 131072, w);
    /* The window pass alone at 128K: each version at W 64, and v2 at W 16 (2 key groups a warp where W 64 takes 5). */
    for (int di = 0; di < 2; di++) {
        for (int v = 1; v <= ORTHROS_ATTN_LINEAR_WINDOW_LATEST; v++)
            bench_window_pass(di ? 128 : 64, quick ? 16384 : 131072, 64, v);
        bench_window_pass(di ? 128 : 64, quick ? 16384 : 131072, 16, ORTHROS_ATTN_LINEAR_WINDOW_LATEST);
    }

    bench_step_probe(be->info.sm_count > 0 ? be->info.sm_count : 132);
    bench_stream_probe(be->info.sm_count > 0 ? be->info.sm_count : 132);
    bench_cluster_probe();
    /* the ring chain's diagnosis: not with --quick (the perf gate's rounds) unless asked for by name */
    if (!quick || only) bench_ring_chain(be->info.sm_count > 0 ? be->info.sm_count : 132);
    if (!quick || only) bench_fused_parts(be->info.sm_count > 0 ? be->info.sm_count : 132);
    /* The decode step's matrix-vector products (gemv.cu), last. */
    if (want("gemv")) {
        orthros_backend *gemv_be = NULL, *pdl_be = NULL, *lt_be = NULL, *h8_be = NULL;
        setenv("ORTHROS_GEMV", "1", 1);
        must(orthros_backend_cuda_create(&gemv_be), "cuda backend with ORTHROS_GEMV=1");
        unsetenv("ORTHROS_GEMV");
        setenv("ORTHROS_DECODE_PDL", "1", 1);
        must(orthros_backend_cuda_create(&pdl_be), "cuda backend with ORTHROS_DECODE_PDL=1");
        unsetenv("ORTHROS_DECODE_PDL");
        setenv("ORTHROS_GEMM_LT", "1", 1);
        must(orthros_backend_cuda_create(&lt_be), "cuda backend with ORTHROS_GEMM_LT=1");
        unsetenv("ORTHROS_GEMM_LT");
        setenv("ORTHROS_DECODE_HEAD8", "1", 1);
        must(orthros_backend_cuda_create(&h8_be), "cuda backend with ORTHROS_DECODE_HEAD8=1");
        unsetenv("ORTHROS_DECODE_HEAD8");
        const int gb[] = {1, 4, 8, 16};
        for (int i = 0; i < 4; i++) {
            if (quick && (gb[i] == 4 || gb[i] == 8)) continue;
            bench_gemv_model(gemv_be, pdl_be, lt_be, h8_be, "1B", 2048, 32, 8, 64, 8192, 128256, 16, gb[i]);
            bench_gemv_model(gemv_be, pdl_be, lt_be, h8_be, "8B", 4096, 32, 8, 128, 14336, 128256, 32, gb[i]);
        }
        h8_be->destroy(h8_be);
        lt_be->destroy(lt_be);
        pdl_be->destroy(pdl_be);
        gemv_be->destroy(gemv_be);
    }

    orthros_result_finish(out_file.header);
    if (save_json()) return 1;
    orthros_bench_file_free(&out_file);
    be->destroy(be);
    return 0;
}
