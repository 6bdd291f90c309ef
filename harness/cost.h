/* The stated cost model of a measurement: floating-point operations and the fewest bytes of device memory
 * traffic, from the model's shape and schedule (docs/bench.md writes the formulas out). */
#ifndef ORTHROS_COST_H
#define ORTHROS_COST_H

#include "orthros.h"

typedef struct {
    double flops;           /* all of it */
    double attn_flops;      /* the attention part alone */
    double bytes;           /* weights read + KV cache / state traffic + activations written once */
} orthros_cost;

/* Prefill of N prompt tokens for each of B sequences, logits of the last position only. */
orthros_cost orthros_cost_prefill(const orthros_model_config *c, const orthros_arch *a, double N, int B,
                                  double act_size, int chunk);
/* One decode step of B sequences at cache depth `depth` (that many tokens already cached). head_int8: the LM head
 * read through its int8 copy (a greedy step on cuda, orthros_backend_head_int8_rows): vocab x d_model bytes plus
 * 8 + 8 B a row (its scale and bound, each sequence's approximate logit written and read back) in place of
 * vocab x d_model x act_size; the candidates' bf16 rows, a fraction of a percent, are not counted. */
orthros_cost orthros_cost_decode(const orthros_model_config *c, const orthros_arch *a, double depth, int B,
                                 double act_size, int head_int8);

/* The link the cost model assumes between tensor-parallel ranks: NVLink 4 of an H100 / H200 SXM, 18 links of
 * 25 GB/s per direction, which is the bus bandwidth (as nccl-tests define it) an all-reduce can reach at best. */
#define ORTHROS_COST_LINK_BUS_BYTES_PER_S 450e9

/* Seconds of a sum all-reduce of `bytes` over `world` ranks at that bandwidth: 2 (world - 1) / world x bytes
 * cross each rank's link (a ring's reduce-scatter and all-gather). 0 for one rank. */
double orthros_cost_allreduce_seconds(double bytes, int world);

#endif
