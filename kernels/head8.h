/* The decode step's head read through an int8 copy, with the exact argmax kept (ORTHROS_DECODE_HEAD8=1).
 *
 * The head of a greedy decode step (backend.h's norm_logits_argmax) reads all of W [V][K] bf16 to find one index:
 * at the Llama-3.2-1B shape 525 MB, 14% of the step. Here a copy of W as int8 with a scale a row screens the rows,
 * and only those that can still hold the maximum are read in bf16:
 *   - prepared once (orthros_head8_create): q[j][k] = rint(W[j][k] / s_j), s_j = max_k |W[j][k]| / 127, and a bound
 *     c_j (head8_row_bound below) from the row's quantisation error e_j = W_j - s_j q_j and its norm;
 *   - a step, two launches: approx_j = s_j (q_j . x) over every row (V x K bytes: half of W) and, per input row, the
 *     largest lower bound L = max_j (approx_j - B_j) with B_j = c_j ||x||_2; then every row whose
 *     upper bound approx_j + B_j reaches L is a candidate, its logit is computed from W in bf16 (fp32 sums), and ids
 *     is the argmax over the candidates (the lower index on ties, NaN lowest: cpu_argmax's order).
 * The bound: |W_j . x - s_j q_j . x| = |e_j . x| <= ||e_j|| ||x|| (Cauchy-Schwarz), and each fp32 sum of K products
 * is within K u sum_k |w_k x_k| <= K u ||w|| ||x|| of its value (u = 2^-24), the approximate and the exact one both;
 * c_j covers the three with 1% to spare, so |approx_j - exact_j| <= B_j for every row, whatever the inputs, and the
 * row whose computed exact logit is the largest is always a candidate: the ids are those of the exact logits over all
 * rows, up to fp32 rounding (the norm's, the sums' order: as between any two kernels). What it saves depends on how
 * many rows are candidates: those within about 2 B of the largest approximate logit, 0.07-1% of random rows of a
 * trained head's scale in test_head8 (docs/kernels.md, "The head through an int8 copy"); a flat distribution makes
 * more of them, never a wrong id.
 * A row holding a NaN or an infinity has a bound that is not a number and is always a candidate (its exact logit
 * decides); an input row with one makes every row a candidate (every logit is then NaN, and id 0 as cpu_argmax).
 * logits (when given) receive the exact logit of every candidate and approx_j of every other row (within B_j of it).
 *
 * Batch 1-4 (orthros_head8_supported), K a multiple of 16 up to 16384. CPU reference: kernels/head8_ref.h (the same
 * quantisation and bound, the screen in fp32 with sequential sums). Tests: kernels/tests/test_head8.c (cpu: the
 * bound and the selection on random and adversarial rows), the head8 section of test_cuda_ops (the kernels against
 * the reference, the backend's head with the switch against the cpu). Bench: bench_kernels --only gemv --gemv-kind
 * fused-head8 (the head alone). */
#ifndef ORTHROS_KERNEL_HEAD8_H
#define ORTHROS_KERNEL_HEAD8_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORTHROS_HEAD8_MAX_ROWS 4
#define ORTHROS_HEAD8_MAX_K 16384

/* c_j from the row's norms (in double): ||e_j||_2 (its quantisation error), ||W_j||_2, and K. B_j = c_j ||x||_2:
 *   ||e_j|| ||x||                          the int8 copy's error (Cauchy-Schwarz);
 *   (K' + 2) u (||s_j q_j|| + ||W_j||) ||x||  the two fp32 sums of K products and the scale's rounding, with
 *                                         ||s_j q_j|| <= ||W_j|| + ||e_j|| and K' = max(K, 1024);
 * times 1.01 (the fp32 rounding of ||x|| and of the product c_j ||x||), rounded up to a float by the caller. The
 * screen's comparisons (approx_j + B_j against approx_i - B_i, in fp32) round by at most u (|approx| + B) on each
 * side; the 1% covers that where B >= 1e-4 |approx|, which the rounding term alone ensures from K' = 1024 (a row whose
 * int8 copy is exact has no other term, hence the floor on K). */
#ifdef __CUDACC__
#define ORTHROS_HEAD8_HD __host__ __device__
#else
#define ORTHROS_HEAD8_HD
#endif
static inline ORTHROS_HEAD8_HD double head8_row_bound(double err_norm, double w_norm, int K)
{
    const double u = 5.9604644775390625e-08; /* 2^-24 */
    const double terms = (K > 1024 ? K : 1024) + 2;
    return 1.01 * (err_norm + terms * u * (2.0 * w_norm + err_norm));
}

typedef struct orthros_head8 orthros_head8;

/* The int8 copy of W [V][K] bf16 (device memory), made on `stream` (which it synchronizes): q, the scales, the
 * bounds and the per-step scratch, V x K + 24 V + 4 KB bytes. ORTHROS_EINVAL for a shape it does not take. */
int orthros_head8_create(orthros_head8 **out, const void *W, int V, int K, cudaStream_t stream);
void orthros_head8_destroy(orthros_head8 *h);
/* The weights it was made from (their memory freed, the copy must go too), and whether it is the copy of W [V][K]. */
const void *orthros_head8_weights(const orthros_head8 *h);
int orthros_head8_matches(const orthros_head8 *h, const void *W, int V, int K);

typedef struct {
    int32_t *ids;         /* device [n]: the argmax of each row's logits */
    float *logits;        /* device [n][V] fp32, or NULL: exact for the candidates, approx_j for the others */
    const void *x;        /* device [n][K] bf16, the rows before the final norm */
    const void *norm_w;   /* device [K] bf16: the rows are rmsnorm(x) * norm_w rounded to bf16 */
    float eps;
    int n;                /* 1 .. ORTHROS_HEAD8_MAX_ROWS */
    int num_sms;          /* the device's SMs (0: 132) */
    int pdl;              /* 1: both launches programmatic dependents of the kernel before each (sm_90) */
    int depth;            /* the screen's 16-byte chunk steps a lane has in flight, 2-4 (0: 2) */
} orthros_head8_params;

int orthros_head8_supported(int n, int V, int K);
/* One head of a decode step (two launches on stream); capturable. */
int orthros_head8_argmax(orthros_head8 *h, const orthros_head8_params *p, cudaStream_t stream);
/* The candidates of the last call, per row (host [n]; synchronizes the stream): what the screen left to read. */
int orthros_head8_last_candidates(orthros_head8 *h, int n, unsigned *counts, cudaStream_t stream);
/* The copy itself (host buffers: q [V][K], s [V], c [V]; synchronizes the stream), for the tests. */
int orthros_head8_export(const orthros_head8 *h, int8_t *q, float *s, float *c, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
