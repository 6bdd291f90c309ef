/* Non-finite weights refused at load (see finite.c). */
#ifndef ORTHROS_FINITE_H
#define ORTHROS_FINITE_H

#include "backend.h"

/* 0 when every one of the n values at x (of dtype: F32, BF16 or F16, little-endian, any alignment) is finite;
 * else ORTHROS_EFORMAT naming the tensor, the first non-finite element and its value. */
int orthros_check_finite(const void *x, orthros_dtype dtype, size_t n, const char *tensor);

#endif
