/* Parsing of sweep axes given on the command line (DESIGN section 5: sweeps over architecture x context
 * length x batch x phase).
 *
 * An integer list is comma-separated items, each one of
 *   N            a decimal integer with an optional suffix k (x1024) or m (x1024*1024), either case: 4k, 1M
 *   START:END:xF a geometric range: START, START*F, START*F^2, ... while <= END (F an integer >= 2,
 *                START > 0)
 *   START:END:+S an arithmetic range: START, START+S, ... while <= END (S > 0, suffix allowed)
 * END is included when the progression hits it exactly. "1k:1m:x2" is 1024, 2048, ..., 1048576;
 * "0:100:+10" is 0, 10, ..., 100. Whitespace around items and around the parts of a range is ignored.
 * Values keep the order given; a value already produced is dropped (its first position kept), so a sweep
 * never measures one configuration twice and result files match by configuration without ambiguity.
 *
 * A name list is comma-separated names (letters, digits and _ - . :), optionally checked against an
 * allowed set. Names follow the same rules for order and duplicates.
 *
 * Every bad input fails with ORTHROS_EINVAL and a message (orthros_last_error) quoting the bad item. A list
 * that expands past `cap` or past ORTHROS_AXIS_MAX_VALUES values is an error, not a truncation. Nothing
 * here allocates. *n_out is written only on success; out may hold partial results after a failure. */
#ifndef ORTHROS_AXES_H
#define ORTHROS_AXES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most values one axis may expand to. */
#define ORTHROS_AXIS_MAX_VALUES 4096
/* Bytes of one name, its terminating NUL included. */
#define ORTHROS_AXIS_NAME_MAX 64

/* Parses one integer list into out[cap]; every value, and each range's START and END, must be
 * >= min_value. */
int orthros_axis_parse_int(int64_t *out, size_t cap, size_t *n_out, const char *text, int64_t min_value);

/* The same with an upper bound too; pass INT_MAX for values that will be stored in an int. */
int orthros_axis_parse_int_range(int64_t *out, size_t cap, size_t *n_out, const char *text, int64_t min_value,
                                 int64_t max_value);

/* One integer with an optional k/m suffix (no list, no range), in [min_value, max_value]: for options
 * such as --window 4k. */
int orthros_axis_parse_scalar(int64_t *out, const char *text, int64_t min_value, int64_t max_value);

/* Parses a name list into out[cap]. With `allowed` (a NULL-terminated list) every name must be one of
 * them, compared without regard to case, and out receives the allowed spelling; with allowed == NULL any
 * well-formed name passes. */
int orthros_axis_parse_names(char (*out)[ORTHROS_AXIS_NAME_MAX], size_t cap, size_t *n_out, const char *text,
                             const char *const *allowed);

#ifdef __cplusplus
}
#endif
#endif
