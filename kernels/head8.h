/* The decode step's head read through an int8 copy, with the exact argmax kept (ORTHROS_DECODE_HEAD8=1).
 *
 * The head of a greedy decode step (backend.h's norm_logits_argmax) reads all of W [V][K] bf16 to find one index:
 * at the Llama-3.2-1B shape 525 MB, 14% of the step. Here a copy of W as int8 with a scale a row screens the rows,
 * and only those that can still hold the maximum are read in bf16:
 *   - prepared once (orthros_head8_create): q[j][k] = rint(W[j][k] / s_j), s_j = max_k |W[j][k]| / 127, and a bound
 *     c_j (head8_row_bound below) from the row's quantisation error e_j = W_j - s_j q_j and its norm;
 *   - a step, two launches (or one, orthros_head8_params.one_launch): approx_j = s_j (q_j . x) over every row
 *     (V x K bytes: half of W) and, per input row, the largest lower bound L = max_j (approx_j - B_j) with
 *     B_j = c_j ||x||_2; then every row whose
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
 * Two forms of the screen (orthros_head8_params.dp4a):
 *   - fp32 (0): each int8 converted to a float and multiplied into fp32 sums, approx_j = s_j (q_j . x);
 *   - integer (1, ORTHROS_HEAD8_DP4A=1): each input row split into two int8 vectors by its own scale, x ~ x_q =
 *     sx (hi + lo / 256) with sx = max |x| / 127 (head8_x_split), and the sums exact in int32 (dp4a: four int8
 *     products a lane an instruction, where the fp32 form spends three instructions an int8); approx_j =
 *     s_j sx (A_hi + A_lo / 256) in double, rounded once to fp32 (the same bits on the cpu). Its error adds
 *     s_j q_j . (x - x_q) <= d_j ||x - x_q|| to the copy's: B_j = c_j ||x|| + d_j ex, d_j >= ||s_j q_j|| (with u to
 *     spare) made with the copy, ex >= ||x - x_q|| (1 + 2^-10) a step. x - x_q is about sx / 512 an element at
 *     most (sx / 256 where lo is clamped), so the added term is a small part of the copy's (test_head8 prints it)
 *     and the screen keeps about the rows the fp32 one keeps.
 *     Its c_j carries the fp32 form's sum term it does not need (the spare covers the one rounding of approx_j).
 *     Its shared memory holds both the bf16 rows and the split (4 n K bytes): past 227 KB the fp32 form runs.
 * Batch 1-4 (orthros_head8_supported), K a multiple of 16 up to 16384. CPU reference: kernels/head8_ref.h (the same
 * quantisation and bound, the fp32 screen with sequential sums, the integer screen bit for bit). Tests:
 * kernels/tests/test_head8.c (cpu: the bound and the selection on random and adversarial rows, both forms), the
 * head8 section of test_cuda_ops (the kernels against the reference, the backend's head with the switch against the
 * cpu). Bench: bench_kernels --only gemv --gemv-kind fused-head8 (the head alone). */
#ifndef ORTHROS_KERNEL_HEAD8_H
#define ORTHROS_KERNEL_HEAD8_H

#include <cuda_runtime_api.h>
#include <math.h>
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

/* d_j of the integer screen from ||s_j q_j||_2 (in double): with 2^-20 to spare, rounded up to a float by the caller. */
static inline ORTHROS_HEAD8_HD double head8_row_xbound(double sq_norm) { return sq_norm * (1.0 + 0x1p-20); }

/* The integer screen's split of one element of a normed input row: y = x (1 / sx) (the reciprocal and the product
 * correctly rounded; 0 where sx is 0) into hi = rint(y) and lo = rint((y - hi) 256), each clamped to +-127 (a NaN
 * gives 0: the row's ex is then NaN and every row a candidate). y - hi is exact and the product by 256 too, so the
 * cpu and the kernels agree. */
static inline ORTHROS_HEAD8_HD void head8_x_split(float y, int *hi, int *lo)
{
    float h = rintf(y);
    h = h > 127.0f ? 127.0f : h < -127.0f ? -127.0f : h == h ? h : 0.0f;
    float l = rintf((y - h) * 256.0f);
    l = l > 127.0f ? 127.0f : l < -127.0f ? -127.0f : l == l ? l : 0.0f;
    *hi = (int)h, *lo = (int)l;
}

/* The integer screen's approx_j from the exact sums: A_hi + A_lo / 256 is exact in double (|A| < 2^31), s_j sx too
 * (two floats' product), so their product is rounded once in double and once to fp32, the same on both sides. */
static inline ORTHROS_HEAD8_HD float head8_int_approx(int a_hi, int a_lo, float s_j, float sx)
{
    const double v = (double)a_hi + (double)a_lo * 0.00390625, p = (double)s_j * (double)sx;
    return (float)(v * p);
}

typedef struct orthros_head8 orthros_head8;

/* The int8 copy of W [V][K] bf16 (device memory), made on `stream` (which it synchronizes): q, the scales, the
 * bounds and the per-step scratch, V x K + 28 V + 8 K + 4 KB bytes. ORTHROS_EINVAL for a shape it does not take. */
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
    int num_sms;          /* the device's SMs (0: the count the copy read when it was made; never more than it) */
    int pdl;              /* 1: both launches programmatic dependents of the kernel before each (sm_90) */
    int depth;            /* the screen's 16-byte chunk steps a lane has in flight, 2-4 (0: 2) */
    int dp4a;             /* 1: the integer screen (dp4a), where its shared memory fits; 0: the fp32 one */
    int one_launch;       /* 1: the selection in the screen's launch, after a grid barrier (each warp tests the rows it
                           * screened, with the input its block staged); 0: a second launch (ORTHROS_HEAD8_ONE_LAUNCH) */
    int no_next_pf;       /* 1: a warp does not ask its next rows into L2 as it starts a group of rows (0, the default:
                           * it does; ORTHROS_HEAD8_NEXT_PF=0); the ids are the same either way */
    int even;             /* 1: the screen's grid cut to the fewest blocks that take its rounds of row groups, so that
                           * the last round is (nearly) full (ORTHROS_HEAD8_EVEN=1); 0: the blocks the SMs hold */
} orthros_head8_params;

int orthros_head8_supported(int n, int V, int K);
/* One head of a decode step (two launches on stream, or one with one_launch); capturable. */
int orthros_head8_argmax(orthros_head8 *h, const orthros_head8_params *p, cudaStream_t stream);
/* The candidates of the last call, per row (host [n]; synchronizes the stream): what the screen left to read. */
int orthros_head8_last_candidates(orthros_head8 *h, int n, unsigned *counts, cudaStream_t stream);
/* The copy itself (host buffers: q [V][K], s [V], c [V], d [V]; synchronizes the stream), for the tests. */
int orthros_head8_export(const orthros_head8 *h, int8_t *q, float *s, float *c, float *d, cudaStream_t stream);
/* What the last call's screen read and wrote, for the tests (host buffers, n its rows; synchronizes the stream): x
 * [n][K] the normed input rows as its block 0 staged them (bf16 bits), approx [n][V], ex [n] (0 in the fp32 form),
 * and which form ran (1: integer). */
int orthros_head8_last_screen(const orthros_head8 *h, int n, uint16_t *x, float *approx, float *ex, int *dp4a,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
