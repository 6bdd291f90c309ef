/* The decode step's products through cuBLASLt, an algorithm tuned per shape (gemm_lt.h). */
#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"
#include "gemm_lt.h"

#define LT_MAX_SHAPES 64
#define LT_MAX_ALGOS 16
#define LT_FLUSH_BYTES ((size_t)128 << 20) /* more than the H200's L2 (60 MB): every timed run reads W from DRAM */
#define LT_RUNS 5

typedef struct {
    int n, M, K, out_f32;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} lt_shape;

struct orthros_gemm_lt {
    cublasLtHandle_t h;
    void *ws;
    size_t ws_bytes;
    lt_shape shapes[LT_MAX_SHAPES];
    int n_shapes;
};

static void shape_free(lt_shape *s)
{
    if (s->a) cublasLtMatrixLayoutDestroy(s->a);
    if (s->b) cublasLtMatrixLayoutDestroy(s->b);
    if (s->c) cublasLtMatrixLayoutDestroy(s->c);
    if (s->op) cublasLtMatmulDescDestroy(s->op);
}

extern "C" int orthros_gemm_lt_create(orthros_gemm_lt **out, void *ws, size_t ws_bytes)
{
    *out = NULL;
    orthros_gemm_lt *lt = (orthros_gemm_lt *)calloc(1, sizeof *lt);
    if (!lt) return orthros_error(ORTHROS_ENOMEM, "gemm lt: out of memory");
    cublasStatus_t st = cublasLtCreate(&lt->h);
    if (st != CUBLAS_STATUS_SUCCESS) {
        free(lt);
        return orthros_error(ORTHROS_EDEVICE, "cublasLtCreate failed: %s", cublasGetStatusString(st));
    }
    lt->ws = ws, lt->ws_bytes = ws_bytes;
    *out = lt;
    return 0;
}

extern "C" void orthros_gemm_lt_destroy(orthros_gemm_lt *lt)
{
    if (!lt) return;
    for (int i = 0; i < lt->n_shapes; i++) shape_free(&lt->shapes[i]);
    cublasLtDestroy(lt->h);
    free(lt);
}

/* The descriptors of a shape: column-major out^T [M][n] = W^T (A = W, K x M, transposed) x^T (B, K x n). */
static int shape_init(lt_shape *s, int n, int M, int K, int out_f32)
{
    s->n = n, s->M = M, s->K = K, s->out_f32 = out_f32;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&s->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s->a, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, (int64_t)K));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s->b, CUDA_R_16BF, (uint64_t)K, (uint64_t)n, (int64_t)K));
    const cudaDataType ot = out_f32 ? CUDA_R_32F : CUDA_R_16BF;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s->c, ot, (uint64_t)M, (uint64_t)n, (int64_t)M));
    return 0;
}

/* One product of the shape with the given algorithm, on `stream`. */
static cublasStatus_t matmul(orthros_gemm_lt *lt, const lt_shape *s, const cublasLtMatmulAlgo_t *algo, void *out,
                             const void *x, const void *W, cudaStream_t stream)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(lt->h, s->op, &one, W, s->a, x, s->b, &zero, out, s->c, out, s->c, algo, lt->ws,
                          lt->ws_bytes, stream);
}

/* The heuristic's algorithms for the shape (fp32 split-K reductions only, within the workspace). */
static int heuristics(orthros_gemm_lt *lt, const lt_shape *s, cublasLtMatmulHeuristicResult_t *res, int *found)
{
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = lt->ws_bytes;
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                  sizeof schemes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(lt->h, s->op, s->a, s->b, s->c, s->c, pref, LT_MAX_ALGOS, res, found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS)
        return orthros_error(ORTHROS_EDEVICE, "cuBLASLt heuristic for n %d M %d K %d: %s", s->n, s->M, s->K,
                             cublasGetStatusString(st));
    if (*found < 1)
        return orthros_error(ORTHROS_EDEVICE, "cuBLASLt offers no algorithm for n %d M %d K %d", s->n, s->M, s->K);
    return 0;
}

/* An algorithm's id, tile and split-K count, for the line that names the choice. */
static void algo_name(const cublasLtMatmulAlgo_t *a, char *buf, size_t cap)
{
    int id = -1, tile = -1, splitk = -1, stages = -1;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    snprintf(buf, cap, "id %d tile %d split-k %d stages %d", id, tile, splitk, stages);
}

/* Times each offered algorithm on the call's operands (LT_RUNS runs each, L2 flushed before every run) and keeps the
 * fastest in s->algo. */
static int tune(orthros_gemm_lt *lt, lt_shape *s, const cublasLtMatmulHeuristicResult_t *res, int found, void *out,
                const void *x, const void *W, cudaStream_t stream)
{
    void *flush = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    float best = -1.0f, first = -1.0f;
    int best_i = 0, rc = 0, tried = 0;
    if (cudaMalloc(&flush, LT_FLUSH_BYTES) != cudaSuccess) {
        /* no room for the flush (a model filling the device): the heuristic's first, untuned, and said so */
        cudaGetLastError();
        fprintf(stderr, "orthros: gemm lt: n %d M %d K %d: no %zu MB for the tuning's flush; the heuristic's first "
                        "algorithm, untuned\n", s->n, s->M, s->K, LT_FLUSH_BYTES >> 20);
        return 0;
    }
    if (cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess) {
        cudaGetLastError();
        rc = orthros_error(ORTHROS_EDEVICE, "gemm lt: the tuning's events");
    }
    for (int i = 0; i < found && !rc; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        float total = 0.0f;
        /* one run untimed: a kernel's first launch loads its module (CUDA's lazy loading, ~1 ms) */
        int ok = matmul(lt, s, &res[i].algo, out, x, W, stream) == CUBLAS_STATUS_SUCCESS;
        for (int r = 0; r < LT_RUNS && ok && !rc; r++) {
            float ms = 0.0f;
            if (cudaMemsetAsync(flush, r & 1, LT_FLUSH_BYTES, stream) != cudaSuccess ||
                cudaEventRecord(ev[0], stream) != cudaSuccess) {
                rc = orthros_error(ORTHROS_EDEVICE, "gemm lt: the tuning's flush");
                break;
            }
            ok = matmul(lt, s, &res[i].algo, out, x, W, stream) == CUBLAS_STATUS_SUCCESS;
            if (cudaEventRecord(ev[1], stream) != cudaSuccess || cudaEventSynchronize(ev[1]) != cudaSuccess ||
                cudaEventElapsedTime(&ms, ev[0], ev[1]) != cudaSuccess)
                rc = orthros_error(ORTHROS_EDEVICE, "gemm lt: the tuning's timing");
            total += ms;
        }
        if (!ok || rc) continue; /* an algorithm that fails to launch is not a candidate */
        tried++;
        if (i == 0) first = total / LT_RUNS;
        if (best < 0 || total / LT_RUNS < best) best = total / LT_RUNS, best_i = i;
    }
    if (flush) cudaFree(flush);
    for (int e = 0; e < 2; e++)
        if (ev[e]) cudaEventDestroy(ev[e]);
    if (rc) return rc;
    if (!tried) return orthros_error(ORTHROS_EDEVICE, "gemm lt: no algorithm ran for n %d M %d K %d", s->n, s->M, s->K);
    s->algo = res[best_i].algo;
    char name[96];
    algo_name(&s->algo, name, sizeof name);
    fprintf(stderr,
            "orthros: gemm lt: n %d M %d K %d %s: heuristic #%d of %d tried (%s), %.1f us (the first: %.1f us)\n",
            s->n, s->M, s->K, s->out_f32 ? "f32" : "bf16", best_i, tried, name, best * 1e3, first * 1e3);
    return 0;
}

extern "C" int orthros_gemm_lt_bf16(orthros_gemm_lt *lt, void *out, int out_f32, const void *x, const void *W, int n,
                                    int M, int K, int capturing, cudaStream_t stream)
{
    if (n <= 0 || M <= 0) return 0;
    lt_shape *s = NULL;
    for (int i = 0; i < lt->n_shapes && !s; i++) {
        lt_shape *t = &lt->shapes[i];
        if (t->n == n && t->M == M && t->K == K && t->out_f32 == out_f32) s = t;
    }
    if (!s) {
        if (lt->n_shapes == LT_MAX_SHAPES)
            return orthros_error(ORTHROS_EUNSUPPORTED, "gemm lt: more than %d shapes", LT_MAX_SHAPES);
        lt_shape fresh;
        memset(&fresh, 0, sizeof fresh);
        cublasLtMatmulHeuristicResult_t res[LT_MAX_ALGOS];
        int found = 0;
        int rc = shape_init(&fresh, n, M, K, out_f32);
        if (!rc) rc = heuristics(lt, &fresh, res, &found);
        if (!rc) {
            fresh.algo = res[0].algo;
            if (!capturing) rc = tune(lt, &fresh, res, found, out, x, W, stream);
        }
        if (rc) {
            shape_free(&fresh);
            return rc;
        }
        s = &lt->shapes[lt->n_shapes++];
        *s = fresh;
    }
    CUBLAS_CHECK(matmul(lt, s, &s->algo, out, x, W, stream));
    return 0;
}
