/* Backend selection by name. */
#define _GNU_SOURCE /* gethostname */
#include "backend.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int orthros_backend_create(orthros_backend **out, const char *device)
{
    *out = NULL;
    if (!device || !strcmp(device, "auto"))
        return orthros_cuda_available() ? orthros_backend_cuda_create(out) : orthros_backend_cpu_create(out);
    if (!strcmp(device, "cpu")) return orthros_backend_cpu_create(out);
    if (!strcmp(device, "cuda")) return orthros_backend_cuda_create(out);
    return orthros_error(ORTHROS_EINVAL, "unknown device \"%s\" (cpu, cuda, auto)", device);
}

void orthros_backend_free(orthros_backend *be)
{
    if (be) be->destroy(be);
}

const char *orthros_backend_name(const orthros_backend *be)
{
    return be->name;
}

void orthros_backend_device_info(const orthros_backend *be, orthros_device_info *out)
{
    *out = be->info;
}

void orthros_device_info_set_host(orthros_device_info *info, const char *kind)
{
    snprintf(info->kind, sizeof info->kind, "%s", kind);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) || !host[0]) snprintf(host, sizeof host, "unknown");
    snprintf(info->host, sizeof info->host, "%.*s", (int)sizeof info->host - 1, host);
}

int orthros_decode_env(unsigned defaults, unsigned *decode_modes, int *gemv, int *pdl, int *chain)
{
    const struct {
        const char *name;
        unsigned bit; /* a decode mode, or 0 for a switch of the backend's own (flag) */
        int *flag;
    } sw[] = {{"ORTHROS_DECODE_FUSED", ORTHROS_DECODE_FUSED, NULL}, {"ORTHROS_DECODE_GRAPHS", ORTHROS_DECODE_GRAPHS, NULL},
              {"ORTHROS_GEMV", 0, gemv}, {"ORTHROS_DECODE_PDL", 0, pdl}, {"ORTHROS_DECODE_CHAIN", 0, chain}};
    *decode_modes = 0;
    *gemv = *pdl = *chain = 0;
    for (size_t i = 0; i < sizeof sw / sizeof *sw; i++) {
        const char *v = getenv(sw[i].name);
        if (!v || !*v) {
            /* unset: the backend's default for a mode, off for a switch */
            *decode_modes |= sw[i].bit & defaults;
            continue;
        }
        if (!strcmp(v, "0")) continue;
        if (strcmp(v, "1")) return orthros_error(ORTHROS_EINVAL, "%s=%.40s: 0 or 1", sw[i].name, v);
        if (sw[i].flag) *sw[i].flag = 1;
        else *decode_modes |= sw[i].bit;
    }
    return 0;
}

unsigned orthros_backend_caps(const orthros_backend *be) { return be->caps; }
int orthros_backend_default_chunk(const orthros_backend *be) { return be->default_chunk; }
int orthros_backend_head_int8_rows(const orthros_backend *be) { return be->head_int8_rows; }
int orthros_backend_mem_info(orthros_backend *be, size_t *free_bytes, size_t *total_bytes)
{
    return be->mem_info(be, free_bytes, total_bytes);
}
int orthros_backend_sync(orthros_backend *be) { return be->sync(be); }
int orthros_cpu_threads(void) { return omp_get_max_threads(); }
int orthros_timer_mark(orthros_backend *be, int slot) { return be->timer_mark(be, slot); }
int orthros_timer_seconds(orthros_backend *be, int from, int to, double *seconds)
{
    return be->timer_seconds(be, from, to, seconds);
}

/* Median seconds of `reps` timed runs of op(be, arg) after `warm` untimed ones; NAN on failure. */
static double time_op(orthros_backend *be, int (*op)(orthros_backend *, void *), void *arg, int warm, int reps)
{
    double t[16];
    for (int i = 0; i < warm; i++)
        if (op(be, arg)) return NAN;
    if (be->sync(be)) return NAN;
    for (int i = 0; i < reps; i++)
        if (be->timer_mark(be, 0) || op(be, arg) || be->timer_mark(be, 1) || be->timer_seconds(be, 0, 1, &t[i]))
            return NAN;
    return orthros_median_sorting(t, (size_t)reps);
}

typedef struct {
    void *a, *b, *c;
    size_t n;
} ceiling_args;

static int run_gemm(orthros_backend *be, void *p)
{
    ceiling_args *g = p;
    return be->gemm(be, g->c, g->a, g->b, (int)g->n, (int)g->n, (int)g->n);
}

static int run_copy(orthros_backend *be, void *p)
{
    ceiling_args *g = p;
    return be->copy(be, g->b, g->a, g->n);
}

static int run_read(orthros_backend *be, void *p)
{
    ceiling_args *g = p;
    return be->read(be, g->a, g->n);
}

int orthros_measure_ceilings(orthros_backend *be, orthros_ceilings *out)
{
    int gpu = (be->caps & ORTHROS_CAP_GPU) != 0;
    size_t n = gpu ? 8192 : 512, bytes = gpu ? (size_t)2 << 30 : (size_t)256 << 20, elems = n * n;
    *out = (orthros_ceilings){NAN, (int)n, NAN, (double)bytes, NAN, (double)bytes};
    ceiling_args g = {be->alloc(be, elems * be->act_size), be->alloc(be, elems * be->act_size),
                      be->alloc(be, elems * be->act_size), n};
    /* Random operands: a GEMM on zeros runs faster than on real data. */
    if (g.a && g.b && g.c && !be->fill_random(be, g.a, elems, 1, 1.0f) && !be->fill_random(be, g.b, elems, 2, 1.0f))
        out->gemm_tflops = 2.0 * (double)n * (double)n * (double)n / time_op(be, run_gemm, &g, 3, 10) / 1e12;
    if (g.a) be->free(be, g.a);
    if (g.b) be->free(be, g.b);
    if (g.c) be->free(be, g.c);
    g = (ceiling_args){be->alloc(be, bytes), NULL, NULL, bytes};
    g.b = g.a ? be->alloc(be, bytes) : NULL;
    if (g.a && g.b && !be->fill_random(be, g.a, bytes / be->act_size, 3, 1.0f)) {
        out->copy_tbps = 2.0 * (double)bytes / time_op(be, run_copy, &g, 2, 10) / 1e12;
        if (be->read) out->read_tbps = (double)bytes / time_op(be, run_read, &g, 2, 10) / 1e12;
    }
    if (g.a) be->free(be, g.a);
    if (g.b) be->free(be, g.b);
    return 0;
}
