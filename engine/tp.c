/* Tensor parallel in one process (the cpu backend): one thread per rank, and the in-memory sum all-reduce they
 * meet in. The threads live as long as the model, so the OpenMP team each rank's ops start is made once per
 * rank and reused (a fresh pthread per call would also get a fresh team). */
#define _GNU_SOURCE
#include "tp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The state the ranks of one group share: a barrier that a failing rank can break, and the buffers of the
 * all-reduce in progress. */
struct tp_group {
    int world;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned gen;
    int aborted;                         /* a rank failed: every barrier of this run fails */
    float *bufs[ORTHROS_TP_MAX_WORLD];   /* [n] each, published before the first barrier */
    size_t lens[ORTHROS_TP_MAX_WORLD];
};

struct orthros_tp_pool;
typedef struct {
    struct orthros_tp_pool *pool;
    int rank;
} tp_worker;

struct orthros_tp_pool {
    int world, omp_threads, started;
    tp_worker workers[ORTHROS_TP_MAX_WORLD];
    pthread_t threads[ORTHROS_TP_MAX_WORLD];
    pthread_mutex_t mu, run_mu;
    pthread_cond_t cv_work, cv_done;
    unsigned job;                        /* incremented per run */
    int pending, quit;
    int (*fn)(void *arg, int rank);
    void *arg;
    int rc[ORTHROS_TP_MAX_WORLD];
    char msg[ORTHROS_TP_MAX_WORLD][1024];
    struct tp_group group;
    orthros_comm comms[ORTHROS_TP_MAX_WORLD];
};

#define ABORTED_MSG "stopped because another rank failed"

/* All ranks wait here until every one arrives; fails once any rank has aborted the run. */
static int group_barrier(struct tp_group *g)
{
    pthread_mutex_lock(&g->mu);
    if (g->aborted) {
        pthread_mutex_unlock(&g->mu);
        return orthros_error(ORTHROS_EDEVICE, ABORTED_MSG);
    }
    unsigned my = g->gen;
    if (++g->arrived == g->world) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
    } else {
        while (g->gen == my && !g->aborted) pthread_cond_wait(&g->cv, &g->mu);
    }
    int failed = g->gen == my; /* released by an abort, not by the last arrival */
    pthread_mutex_unlock(&g->mu);
    return failed ? orthros_error(ORTHROS_EDEVICE, ABORTED_MSG) : 0;
}

static void group_abort(struct tp_group *g)
{
    pthread_mutex_lock(&g->mu);
    g->aborted = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

int orthros_comm_allreduce_f32(orthros_comm *c, float *x, size_t n)
{
    struct tp_group *g = c ? c->group : NULL;
    if (!g) return orthros_error(ORTHROS_EINVAL, "all-reduce: not an in-process communicator");
    if (g->world == 1) return 0;
    g->bufs[c->rank] = x;
    g->lens[c->rank] = n;
    int rc = group_barrier(g);
    if (rc) return rc;
    for (int r = 0; r < g->world; r++)
        if (g->lens[r] != n) {
            group_abort(g);
            return orthros_error(ORTHROS_EINVAL, "all-reduce: rank %d sums %zu values, rank %d %zu", c->rank, n, r,
                                 g->lens[r]);
        }
    /* Rank r sums the r-th slice of every buffer and writes the sum back into all of them: no element is read
     * by one thread while another writes it, and the order of the additions is the rank order. */
    size_t lo = n * (size_t)c->rank / (size_t)g->world, hi = n * (size_t)(c->rank + 1) / (size_t)g->world;
    float *const *b = g->bufs;
    int W = g->world;
#pragma omp parallel for schedule(static) if (hi - lo > 65536)
    for (size_t i = lo; i < hi; i++) {
        float s = b[0][i];
        for (int r = 1; r < W; r++) s += b[r][i];
        for (int r = 0; r < W; r++) b[r][i] = s;
    }
    return group_barrier(g);
}

static void *pool_worker(void *arg)
{
    orthros_tp_pool *p = ((tp_worker *)arg)->pool;
    int rank = ((tp_worker *)arg)->rank;
#ifdef _OPENMP
    omp_set_num_threads(p->omp_threads);
#endif
    unsigned seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->job == seen && !p->quit) pthread_cond_wait(&p->cv_work, &p->mu);
        if (p->quit) break;
        seen = p->job;
        int (*fn)(void *, int) = p->fn;
        void *fa = p->arg;
        pthread_mutex_unlock(&p->mu);
        int rc = fn(fa, rank);
        if (rc) {
            snprintf(p->msg[rank], sizeof p->msg[rank], "%s", orthros_last_error());
            group_abort(&p->group);
        }
        pthread_mutex_lock(&p->mu);
        p->rc[rank] = rc;
        if (--p->pending == 0) pthread_cond_signal(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void orthros_tp_pool_free(orthros_tp_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int r = 0; r < p->started; r++) pthread_join(p->threads[r], NULL);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
    pthread_cond_destroy(&p->group.cv);
    pthread_mutex_destroy(&p->group.mu);
    free(p);
}

int orthros_tp_pool_create(orthros_tp_pool **out, int world)
{
    *out = NULL;
    if (world < 1 || world > ORTHROS_TP_MAX_WORLD)
        return orthros_error(ORTHROS_EINVAL, "tensor-parallel size %d is outside [1, %d]", world, ORTHROS_TP_MAX_WORLD);
    orthros_tp_pool *p = calloc(1, sizeof *p);
    if (!p) return orthros_error(ORTHROS_ENOMEM, "out of host memory");
    p->world = world;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads() / world;
#endif
    p->omp_threads = threads > 0 ? threads : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->run_mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    p->group.world = world;
    pthread_mutex_init(&p->group.mu, NULL);
    pthread_cond_init(&p->group.cv, NULL);
    for (int r = 0; r < world; r++) p->comms[r] = (orthros_comm){.rank = r, .world = world, .group = &p->group};
    for (int r = 0; r < world; r++) {
        p->workers[r] = (tp_worker){p, r};
        int err = pthread_create(&p->threads[r], NULL, pool_worker, &p->workers[r]);
        if (err) {
            orthros_tp_pool_free(p);
            return orthros_error(ORTHROS_ENOMEM, "cannot start the thread of rank %d: %s", r, strerror(err));
        }
        p->started++;
    }
    *out = p;
    return 0;
}

orthros_comm *orthros_tp_pool_comm(orthros_tp_pool *p, int rank)
{
    return rank >= 0 && rank < p->world ? &p->comms[rank] : NULL;
}

int orthros_tp_pool_run(orthros_tp_pool *p, int (*fn)(void *arg, int rank), void *arg)
{
    pthread_mutex_lock(&p->run_mu); /* one run at a time, whichever thread calls */
    pthread_mutex_lock(&p->group.mu);
    p->group.aborted = 0;
    p->group.arrived = 0;
    pthread_mutex_unlock(&p->group.mu);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->world;
    p->job++;
    pthread_cond_broadcast(&p->cv_work);
    while (p->pending > 0) pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    /* The rank that failed first on its own, not one released from a barrier by it. */
    int first = -1;
    for (int r = 0; r < p->world; r++)
        if (p->rc[r] && (first < 0 || (strcmp(p->msg[r], ABORTED_MSG) && !strcmp(p->msg[first], ABORTED_MSG))))
            first = r;
    int rc = 0;
    if (first >= 0)
        rc = p->world > 1 ? orthros_error(p->rc[first], "rank %d: %s", first, p->msg[first])
                          : orthros_error(p->rc[first], "%s", p->msg[first]);
    pthread_mutex_unlock(&p->run_mu);
    return rc;
}
