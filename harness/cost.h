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
/* One decode step of B sequences at cache depth L (L tokens already cached). */
orthros_cost orthros_cost_decode(const orthros_model_config *c, const orthros_arch *a, double L, int B,
                                 double act_size);

#endif
