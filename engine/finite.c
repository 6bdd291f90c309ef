/* Non-finite weights refused at load: a NaN or an infinity in a weight or norm makes every logit NaN (generate then
 * picks token 0 and exits 0). One pass over the tensor's bits, branch-free so that it vectorises (an exponent of
 * all ones is an infinity or a NaN, in each of the three float formats), costs far less than reading the file;
 * only a tensor that fails is scanned again, for the message. */
#include "finite.h"

#include <stdint.h>
#include <string.h>

static uint32_t bits32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint32_t bits16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* 1 when element i (of the format's size and exponent mask) is an infinity or a NaN. */
static int bad_at(const uint8_t *p, orthros_dtype dtype, size_t i)
{
    switch (dtype) {
    case ORTHROS_DTYPE_F32: return (bits32(p + 4 * i) & 0x7f800000u) == 0x7f800000u;
    case ORTHROS_DTYPE_BF16: return (bits16(p + 2 * i) & 0x7f80u) == 0x7f80u;
    default: return (bits16(p + 2 * i) & 0x7c00u) == 0x7c00u;
    }
}

static double value_at(const uint8_t *p, orthros_dtype dtype, size_t i)
{
    if (dtype == ORTHROS_DTYPE_F32) {
        uint32_t u = bits32(p + 4 * i);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return dtype == ORTHROS_DTYPE_BF16 ? orthros_bf16_to_f32((uint16_t)bits16(p + 2 * i))
                                       : orthros_f16_to_f32((uint16_t)bits16(p + 2 * i));
}

int orthros_check_finite(const void *x, orthros_dtype dtype, size_t n, const char *tensor)
{
    const uint8_t *p = x;
    unsigned any = 0;
    if (dtype == ORTHROS_DTYPE_F32)
        for (size_t i = 0; i < n; i++) any |= (bits32(p + 4 * i) & 0x7f800000u) == 0x7f800000u;
    else if (dtype == ORTHROS_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) any |= (bits16(p + 2 * i) & 0x7f80u) == 0x7f80u;
    else
        for (size_t i = 0; i < n; i++) any |= (bits16(p + 2 * i) & 0x7c00u) == 0x7c00u;
    if (!any) return 0;
    size_t i = 0;
    while (i < n && !bad_at(p, dtype, i)) i++;
    return orthros_error(ORTHROS_EFORMAT, "tensor %s: element %zu is %g (weights must be finite)", tensor, i,
                         value_at(p, dtype, i));
}
