/* Helpers shared by the engine: dtype sizes, RoPE frequencies, the checkpoint readers' overlap check (the bf16 / fp16 conversions are in
 * base/numeric.c, reading a whole file in base/file.c). */
#define _GNU_SOURCE
#include "backend.h"

#include <math.h>
#include <stdlib.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

size_t orthros_dtype_size(orthros_dtype t)
{
    return t == ORTHROS_DTYPE_F32 ? 4 : 2;
}

/* As transformers computes it: inv_freq = 1 / theta^(2i/d) in fp32, then llama3 scaling (a per-frequency
 * division by `factor` for long wavelengths, a smooth blend between the two cut-offs). */
void orthros_rope_inv_freq(float *inv_freq, const orthros_model_config *cfg)
{
    int half = cfg->head_dim / 2;
    for (int i = 0; i < half; i++) {
        float expo = (float)(2 * i) / (float)cfg->head_dim;
        float f = 1.0f / powf((float)cfg->rope_theta, expo);
        if (cfg->rope_llama3) {
            double old_ctx = cfg->rope_orig_max_pos;
            double low_wavelen = old_ctx / cfg->rope_low_freq_factor;
            double high_wavelen = old_ctx / cfg->rope_high_freq_factor;
            double wavelen = 2.0 * M_PI / f;
            double g = f;
            if (wavelen > low_wavelen) {
                g = f / cfg->rope_factor;
            } else if (wavelen >= high_wavelen) {
                double smooth = (old_ctx / wavelen - cfg->rope_low_freq_factor) /
                                (cfg->rope_high_freq_factor - cfg->rope_low_freq_factor);
                g = (1.0 - smooth) * f / cfg->rope_factor + smooth * f;
            }
            f = (float)g;
        }
        inv_freq[i] = f;
    }
}

static int span_cmp(const void *a, const void *b)
{
    const orthros_span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

int orthros_spans_disjoint(orthros_span *spans, size_t n)
{
    qsort(spans, n, sizeof *spans, span_cmp);
    /* In begin order, a span overlaps an earlier one exactly when it begins before the furthest end so far. */
    for (size_t i = 1, far = 0; i < n; i++) {
        if (spans[i].begin < spans[far].end)
            return orthros_error(ORTHROS_EFORMAT, "tensors %s and %s overlap in the data", spans[far].name, spans[i].name);
        if (spans[i].end > spans[far].end) far = i;
    }
    return 0;
}
