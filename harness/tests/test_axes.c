/* Tests of bench/axes.c: sweep lists and name lists, accepted and rejected. Prints "N passed, N failed"
 * and exits non-zero on any failure. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "axes.h"
#include "orthros.h"
#include "testutil.h"


#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int64_t vals[ORTHROS_AXIS_MAX_VALUES + 8];

/* Parses text with bounds [min_value, max_value] and compares with want[n_want]. */
static void expect_ints(int line, const char *text, int64_t min_value, int64_t max_value, const int64_t *want,
                        size_t n_want)
{
    size_t n = 12345;
    int rc = orthros_axis_parse_int_range(vals, COUNT(vals), &n, text, min_value, max_value);
    if (rc) {
        tu_failed++;
        printf("FAIL line %d: \"%s\" rejected: %s\n", line, text, orthros_last_error());
        return;
    }
    int ok = n == n_want;
    for (size_t i = 0; ok && i < n; i++)
        ok = vals[i] == want[i];
    if (ok) {
        tu_passed++;
        return;
    }
    tu_failed++;
    printf("FAIL line %d: \"%s\" gave %zu values:", line, text, n);
    for (size_t i = 0; i < n && i < 16; i++)
        printf(" %lld", (long long)vals[i]);
    printf("; want %zu:", n_want);
    for (size_t i = 0; i < n_want && i < 16; i++)
        printf(" %lld", (long long)want[i]);
    printf("\n");
}

/* Expects ORTHROS_EINVAL, *n_out untouched, and a message containing `quote` (the bad item). */
static void expect_reject(int line, const char *text, int64_t min_value, int64_t max_value, size_t cap,
                          const char *quote)
{
    size_t n = 777;
    int rc = orthros_axis_parse_int_range(vals, cap, &n, text, min_value, max_value);
    const char *msg = orthros_last_error();
    CHECK(rc == ORTHROS_EINVAL && n == 777, "line %d: \"%s\" gave rc %d n %zu, want rejection", line, text, rc, n);
    CHECK(rc != ORTHROS_EINVAL || strstr(msg, quote), "line %d: message \"%s\" does not quote \"%s\"", line, msg,
          quote);
}

#define EXPECT(text, lo, hi, ...)                                                                            \
    do {                                                                                                     \
        const int64_t want_[] = {__VA_ARGS__};                                                               \
        expect_ints(__LINE__, text, lo, hi, want_, COUNT(want_));                                            \
    } while (0)
#define REJECT(text, lo, hi, quote) expect_reject(__LINE__, text, lo, hi, COUNT(vals), quote)

static void test_accept(void)
{
    /* 1k = 1024 and 1m = 1048576 = 2^20: doubling from 2^10 to 2^20 gives 11 values. */
    EXPECT("1k:1m:x2", 0, INT64_MAX, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288,
           1048576);
    EXPECT("256,1024", 0, INT64_MAX, 256, 1024);
    EXPECT("0:100:+10", 0, INT64_MAX, 0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100);
    /* Suffixes in either case: 1K = 1024, 2M = 2 * 1048576 = 2097152, 3m = 3145728. */
    EXPECT("1K,2M,3m,5k", 0, INT64_MAX, 1024, 2097152, 3145728, 5120);
    /* END not hit: 1, 3, 9 (27 > 10); 0, 4, 8 (12 > 10). */
    EXPECT("1:10:x3", 0, INT64_MAX, 1, 3, 9);
    EXPECT("0:10:+4", 0, INT64_MAX, 0, 4, 8);
    /* START == END, and a step larger than the range: one value each. */
    EXPECT("5:5:+1", 0, INT64_MAX, 5);
    EXPECT("7:9:x2", 0, INT64_MAX, 7);
    /* Step with a suffix: 0, 64k = 65536, 128k = 131072. */
    EXPECT("0:128k:+64k", 0, INT64_MAX, 0, 65536, 131072);
    /* Upper-case X for the factor; whitespace around items and range parts. */
    EXPECT("1:8:X2", 0, INT64_MAX, 1, 2, 4, 8);
    EXPECT(" 1k , 2k ,\t4 ", 0, INT64_MAX, 1024, 2048, 4);
    EXPECT("1 : 4 : +1", 0, INT64_MAX, 1, 2, 3, 4);
    /* Duplicates dropped, first position kept: 1k, 1024 (dup), 2k, then 1k:4k:x2 adds only 4096. */
    EXPECT("1k,1024,2k,1k:4k:x2", 0, INT64_MAX, 1024, 2048, 4096);
    EXPECT("8,4,8,2", 0, INT64_MAX, 8, 4, 2);
    /* Negative values where the minimum allows them. */
    EXPECT("-5:5:+5,-7", -10, INT64_MAX, -5, 0, 5, -7);
    /* The 64-bit extremes: 2^63 - 1 and -2^63. */
    EXPECT("9223372036854775807", 0, INT64_MAX, INT64_MAX);
    EXPECT("-9223372036854775808", INT64_MIN, INT64_MAX, INT64_MIN);
    /* 2^53 k = 2^63 overflows but 2^52 k = 2^62 = 4611686018427387904 fits. */
    EXPECT("4503599627370496k", 0, INT64_MAX, 4611686018427387904LL);
    /* Ranges near the top must stop without overflowing: powers of 2 up to 2^62 (63 values), and
     * INT64_MAX - 7 + 5 = INT64_MAX - 2 is the last arithmetic value. */
    {
        int64_t want[63];
        for (int i = 0; i < 63; i++)
            want[i] = (int64_t)1 << i;
        expect_ints(__LINE__, "1:9223372036854775807:x2", 0, INT64_MAX, want, 63);
    }
    EXPECT("9223372036854775800:9223372036854775807:+5", 0, INT64_MAX, INT64_MAX - 7, INT64_MAX - 2);
    EXPECT("-9223372036854775808:9223372036854775807:+9223372036854775807", INT64_MIN, INT64_MAX, INT64_MIN, -1,
           INT64_MAX - 1);
    /* Exactly the cap: 1..4096. */
    {
        size_t n = 0;
        int rc = orthros_axis_parse_int(vals, COUNT(vals), &n, "1:4k:+1", 1);
        CHECK(rc == 0 && n == ORTHROS_AXIS_MAX_VALUES && vals[0] == 1 && vals[4095] == 4096,
              "1:4k:+1 gave rc %d n %zu", rc, n);
    }
    /* The 5-argument form has no upper bound. */
    {
        size_t n = 0;
        int rc = orthros_axis_parse_int(vals, COUNT(vals), &n, "3m:12m:x2", 1);
        CHECK(rc == 0 && n == 3 && vals[0] == 3145728 && vals[2] == 12582912, "3m:12m:x2 gave rc %d n %zu", rc, n);
    }
}

static void test_reject(void)
{
    REJECT("", 0, INT64_MAX, "is empty");
    REJECT("   ", 0, INT64_MAX, "is empty");
    REJECT("1,,2", 0, INT64_MAX, "item 2 is empty");
    REJECT("1,", 0, INT64_MAX, "item 2 is empty");
    REJECT(",1", 0, INT64_MAX, "item 1 is empty");
    REJECT("1, ,2", 0, INT64_MAX, "item 2 is empty");
    REJECT("abc", 0, INT64_MAX, "\"abc\"");
    REJECT("1,abc,3", 0, INT64_MAX, "\"abc\"");
    REJECT("1x", 0, INT64_MAX, "\"1x\"");
    REJECT("1kk", 0, INT64_MAX, "\"1kk\"");
    REJECT("1g", 0, INT64_MAX, "\"1g\"");
    REJECT("1.5", 0, INT64_MAX, "\"1.5\"");
    REJECT("+5", 0, INT64_MAX, "\"+5\"");
    REJECT("k", 0, INT64_MAX, "\"k\"");
    REJECT("-", 0, INT64_MAX, "\"-\"");
    REJECT("1 k", 0, INT64_MAX, "\"1 k\"");
    REJECT("0x10", 0, INT64_MAX, "\"0x10\"");
    /* Below the minimum, above the maximum. */
    REJECT("-1", 0, INT64_MAX, "\"-1\"");
    REJECT("4,-1k", 1, INT64_MAX, "\"-1k\"");
    REJECT("0", 1, INT64_MAX, "below the minimum 1");
    REJECT("2147483648", 1, INT_MAX, "\"2147483648\"");
    REJECT("2048m", 1, INT_MAX, "above the maximum 2147483647");
    REJECT("1m:4m:x2", 1, 3 * 1024 * 1024, "END 4194304 is above the maximum");
    REJECT("-4:4:+1", -3, INT64_MAX, "START -4 is below the minimum");
    /* Past the 64-bit range: 2^63, -2^63 - 1, 2^53 k = 2^63, 2^44 m = 2^64, and a 25-digit number. */
    REJECT("9223372036854775808", 0, INT64_MAX, "\"9223372036854775808\"");
    REJECT("-9223372036854775809", INT64_MIN, INT64_MAX, "64-bit");
    REJECT("9007199254740992k", 0, INT64_MAX, "64-bit");
    REJECT("17592186044416m", 0, INT64_MAX, "64-bit");
    REJECT("1234567890123456789012345", 0, INT64_MAX, "64-bit");
    REJECT("1:99999999999999999999:x2", 0, INT64_MAX, "END is outside");
    /* Ranges. */
    REJECT("10:1:+1", 0, INT64_MAX, "START 10 is greater than END 1");
    REJECT("1:8:x1", 0, INT64_MAX, "factor 1 is less than 2");
    REJECT("1:8:x0", 0, INT64_MAX, "\"1:8:x0\"");
    REJECT("1:8:x-2", 0, INT64_MAX, "factor -2");
    REJECT("0:8:x2", 0, INT64_MAX, "START > 0");
    REJECT("1:8:x2k", 0, INT64_MAX, "factor \"2k\"");
    REJECT("1:8:+0", 0, INT64_MAX, "step 0 is not > 0");
    REJECT("1:8:+-1", 0, INT64_MAX, "step -1");
    REJECT("1:8:2", 0, INT64_MAX, "xF (geometric) or +S");
    REJECT("1:8:", 0, INT64_MAX, "\"1:8:\"");
    REJECT("1:8:x", 0, INT64_MAX, "\"1:8:x\"");
    REJECT("1:8", 0, INT64_MAX, "\"1:8\"");
    REJECT("1:2:x2:4", 0, INT64_MAX, "\"1:2:x2:4\"");
    REJECT(":8:x2", 0, INT64_MAX, "START \"\"");
    REJECT("a:8:x2", 0, INT64_MAX, "START \"a\"");
    REJECT("1:b:x2", 0, INT64_MAX, "END \"b\"");
    /* Past the cap: 0..5000 is 5001 values; 1..4097 is one too many; a caller cap of 2. */
    REJECT("0:5000:+1", 0, INT64_MAX, "expands past 4096 values");
    REJECT("1:4097:+1", 0, INT64_MAX, "expands past 4096");
    REJECT("1:1000000000000:+1", 0, INT64_MAX, "expands past");
    expect_reject(__LINE__, "1,2,3", 0, INT64_MAX, 2, "\"3\": the list expands past 2 values");
    /* Duplicates do not count toward the cap: three values fit a cap of 3. */
    {
        size_t n = 0;
        int rc = orthros_axis_parse_int_range(vals, 3, &n, "1,2,1,2,3", 0, INT64_MAX);
        CHECK(rc == 0 && n == 3, "duplicates and cap: rc %d n %zu", rc, n);
    }
    /* Missing arguments and bad bounds. */
    size_t n = 0;
    CHECK(orthros_axis_parse_int(vals, 4, &n, NULL, 0) == ORTHROS_EINVAL, "NULL text");
    CHECK(orthros_axis_parse_int(NULL, 4, &n, "1", 0) == ORTHROS_EINVAL, "NULL out");
    CHECK(orthros_axis_parse_int_range(vals, 4, &n, "1", 5, 4) == ORTHROS_EINVAL, "min > max");
}

static void test_scalar(void)
{
    int64_t v = 0;
    CHECK(orthros_axis_parse_scalar(&v, "4k", 1, INT_MAX) == 0 && v == 4096, "4k -> %lld", (long long)v);
    CHECK(orthros_axis_parse_scalar(&v, " 17 ", 1, INT_MAX) == 0 && v == 17, "17 -> %lld", (long long)v);
    CHECK(orthros_axis_parse_scalar(&v, "-3", -5, 5) == 0 && v == -3, "-3 -> %lld", (long long)v);
    v = 99;
    CHECK(orthros_axis_parse_scalar(&v, "4k,8k", 1, INT_MAX) == ORTHROS_EINVAL && v == 99, "list as scalar");
    CHECK(orthros_axis_parse_scalar(&v, "1:4:x2", 1, INT_MAX) == ORTHROS_EINVAL, "range as scalar");
    CHECK(orthros_axis_parse_scalar(&v, "", 1, INT_MAX) == ORTHROS_EINVAL, "empty scalar");
    CHECK(orthros_axis_parse_scalar(&v, "0", 1, INT_MAX) == ORTHROS_EINVAL, "below minimum");
    CHECK(orthros_axis_parse_scalar(&v, "2m", 1, INT_MAX) == 0 && v == 2097152, "2m");
    CHECK(orthros_axis_parse_scalar(&v, "2048m", 1, INT_MAX) == ORTHROS_EINVAL, "2048m = 2^31 > INT_MAX");
    CHECK(strstr(orthros_last_error(), "\"2048m\"") != NULL, "message: %s", orthros_last_error());
}

static void test_names(void)
{
    static const char *const archs[] = {"transformer", "orthros", "linear", "swa", "hybrid", NULL};
    char names[8][ORTHROS_AXIS_NAME_MAX];
    size_t n = 0;
    int rc;

    rc = orthros_axis_parse_names(names, 8, &n, "transformer,orthros", archs);
    CHECK(rc == 0 && n == 2 && !strcmp(names[0], "transformer") && !strcmp(names[1], "orthros"),
          "transformer,orthros: rc %d n %zu", rc, n);
    /* Case-insensitive match, canonical spelling out, whitespace trimmed, duplicates dropped. */
    rc = orthros_axis_parse_names(names, 8, &n, " Orthros , SWA,orthros,linear ", archs);
    CHECK(rc == 0 && n == 3 && !strcmp(names[0], "orthros") && !strcmp(names[1], "swa") &&
              !strcmp(names[2], "linear"),
          "canonical names: rc %d n %zu", rc, n);

    n = 55;
    rc = orthros_axis_parse_names(names, 8, &n, "transformer,mamba", archs);
    CHECK(rc == ORTHROS_EINVAL && n == 55, "unknown name accepted");
    CHECK(strstr(orthros_last_error(), "\"mamba\"") && strstr(orthros_last_error(), "transformer, orthros"),
          "message: %s", orthros_last_error());
    /* A prefix of an allowed name is not that name. */
    CHECK(orthros_axis_parse_names(names, 8, &n, "orth", archs) == ORTHROS_EINVAL, "prefix accepted");
    CHECK(orthros_axis_parse_names(names, 8, &n, "orthrosx", archs) == ORTHROS_EINVAL, "extension accepted");
    CHECK(orthros_axis_parse_names(names, 8, &n, "", archs) == ORTHROS_EINVAL, "empty list");
    CHECK(orthros_axis_parse_names(names, 8, &n, "orthros,,swa", archs) == ORTHROS_EINVAL, "empty item");
    CHECK(strstr(orthros_last_error(), "item 2 is empty") != NULL, "message: %s", orthros_last_error());
    CHECK(orthros_axis_parse_names(names, 8, &n, "orthros,", archs) == ORTHROS_EINVAL, "trailing comma");
    CHECK(orthros_axis_parse_names(names, 1, &n, "orthros,swa", archs) == ORTHROS_EINVAL, "past cap");
    CHECK(orthros_axis_parse_names(names, 1, &n, "orthros,orthros", archs) == 0 && n == 1, "dup within cap");

    /* No allowed set: any well-formed name, spelling kept. */
    rc = orthros_axis_parse_names(names, 8, &n, "niah-single,MQAR,swa:4096,v1.2_x", NULL);
    CHECK(rc == 0 && n == 4 && !strcmp(names[0], "niah-single") && !strcmp(names[1], "MQAR") &&
              !strcmp(names[2], "swa:4096") && !strcmp(names[3], "v1.2_x"),
          "free names: rc %d n %zu", rc, n);
    CHECK(orthros_axis_parse_names(names, 8, &n, "ok,bad name", NULL) == ORTHROS_EINVAL, "space inside");
    CHECK(strstr(orthros_last_error(), "\"bad name\"") != NULL, "message: %s", orthros_last_error());
    CHECK(orthros_axis_parse_names(names, 8, &n, "a/b", NULL) == ORTHROS_EINVAL, "slash");
    CHECK(orthros_axis_parse_names(names, 8, &n, "x\"y", NULL) == ORTHROS_EINVAL, "quote");
    /* 63 characters fit ORTHROS_AXIS_NAME_MAX = 64 with the NUL; 64 do not. */
    char longname[80];
    memset(longname, 'a', 63);
    longname[63] = '\0';
    rc = orthros_axis_parse_names(names, 8, &n, longname, NULL);
    CHECK(rc == 0 && n == 1 && strlen(names[0]) == 63, "63-character name: rc %d", rc);
    memset(longname, 'a', 64);
    longname[64] = '\0';
    CHECK(orthros_axis_parse_names(names, 8, &n, longname, NULL) == ORTHROS_EINVAL, "64-character name");
    CHECK(orthros_axis_parse_names(names, 8, &n, NULL, NULL) == ORTHROS_EINVAL, "NULL text");
}

int main(void)
{
    test_accept();
    test_reject();
    test_scalar();
    test_names();
    return tu_finish();
}
