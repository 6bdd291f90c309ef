/* Numeric helpers shared by the backends: dtype conversion and RoPE frequencies. */
#include "backend.h"

#include <math.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

float orthros_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t orthros_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float orthros_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

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
