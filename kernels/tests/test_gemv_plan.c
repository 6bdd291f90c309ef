/* gemv.cu's launch plans, host only (no GPU is touched, so it runs on every machine that builds the CUDA code):
 * which version takes which batch, the K split each version picks for the decode shapes (docs/kernels.md, "The GEMV
 * kernel, version 2" and "Version 3"), and the refusals (a version out of range, a shape the kernel does not take). */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "gemv.h"
#include "orthros_base.h"
#include "testutil.h"

/* The plan of one call at `version` as text (empty when refused); rc its return. */
static const char *plan(int version, int epilogue, int n, int M, int K, int d, int norm, int *rc)
{
    static char buf[256];
    void *fake = (void *)(uintptr_t)256;
    orthros_gemv_params p;
    memset(&p, 0, sizeof p);
    p.out = fake, p.x = fake, p.W = fake, p.n = n, p.M = M, p.K = K, p.epilogue = epilogue;
    p.num_sms = 132;
    if (norm) p.norm_w = fake;
    if (epilogue == ORTHROS_GEMV_ARGMAX) p.ids = fake;
    if (epilogue == ORTHROS_GEMV_MLP) p.W_down = fake;
    if (epilogue == ORTHROS_GEMV_ROPE) {
        p.k_cache = fake, p.v_cache = fake, p.pos = fake, p.d = d, p.cap = 4096, p.Hkv = 8;
        p.Hq = M / d - 16;
    }
    if (orthros_gemv_set_version(version)) {
        *rc = -1;
        return "";
    }
    *rc = orthros_gemv_describe(&p, buf, sizeof buf);
    orthros_gemv_set_version(0);
    return buf;
}

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* v6's plans over shapes, epilogues and settings (the stage bytes, the rows a tile, bulk copies, wgmma) hold what the
 * kernel needs: the stages a multiple of the k-slices and at least two and as many as the slices (the mbarriers'
 * parity wait and thread 0's refill; a plan of 2 stages for 4 slices hung on the H200), each split's k-blocks whole
 * stages, the splits covering K with none empty, the row tiles covering M, at most 16 stages, within 200 KB; on
 * wgmma, tiles of 64 or 128 rows (a warpgroup's 64; SWIGLU 128, a warpgroup a box), two stages a slice at least
 * (a warpgroup frees a stage after asking its next) and room for 16 staged input rows. Returns the plans checked. */
static int v6_plan_properties(void)
{
    const int ns[] = {9, 13, 16}, Ms[] = {8, 40, 777, 2048, 6144, 28672, 128256};
    const int Ks[] = {64, 1000, 2048, 3008, 4104, 8192, 14336, 16384};
    const int eps[] = {ORTHROS_GEMV_STORE, ORTHROS_GEMV_ADD, ORTHROS_GEMV_SWIGLU, ORTHROS_GEMV_ARGMAX,
                       ORTHROS_GEMV_ROPE};
    const char *kbs[] = {NULL, "4", "16", "64"}, *rows[] = {NULL, "32", "128"};
    const char *forms[] = {NULL, "ORTHROS_GEMV6_BULK", "ORTHROS_GEMV6_WGMMA"};
    int checked = 0;
    for (size_t a = 0; a < sizeof kbs / sizeof *kbs; a++)
        for (size_t b = 0; b < sizeof rows / sizeof *rows; b++)
            for (size_t c = 0; c < sizeof forms / sizeof *forms; c++) {
                const int wg = c == 2;
                if (kbs[a]) setenv("ORTHROS_GEMV6_STAGE_KB", kbs[a], 1);
                if (rows[b]) setenv("ORTHROS_GEMV6_ROWS", rows[b], 1);
                if (forms[c]) setenv(forms[c], "1", 1);
                for (size_t e = 0; e < sizeof eps / sizeof *eps; e++)
                    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
                        for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
                            for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++) {
                                const int ep = eps[e], n = ns[i], M = Ms[m], K = Ks[k], d = M % 128 == 0 ? 128 : 64;
                                if (ep == ORTHROS_GEMV_ROPE && (M % d || M / d <= 16)) continue; /* Hq = M / d - 16 */
                                int rc;
                                const char *s = plan(6, ep, n, M, K, d, ep != ORTHROS_GEMV_ADD, &rc);
                                if (rc || !starts(s, "v6:")) continue; /* v1 takes it (a refusal is checked above) */
                                CHECK(!strstr(s, "read by wgmma") == !wg, "v6 form: wgmma %d: \"%s\"", wg, s);
                                int MT, nblk, KS, kbsz, blocks, most, S, kst, sb;
                                size_t smem;
                                const char *sh = strstr(s, " B shared");
                                const int got = sscanf(s,
                                                       "v6: %d rows a block, %d row tiles x %d K splits of %d "
                                                       "k-blocks, %d blocks (%d tiles a block at most), %d stages of "
                                                       "%d k-blocks (%d B)",
                                                       &MT, &nblk, &KS, &kbsz, &blocks, &most, &S, &kst, &sb);
                                while (sh && sh > s && sh[-1] != ' ') sh--;
                                CHECK(got == 9 && sh && sscanf(sh, "%zu", &smem) == 1, "v6 plan unparsed: \"%s\"", s);
                                if (got != 9 || !sh) continue;
                                const int TM = MT / 16, WS = 8 / TM, nkb = (K + 63) / 64;
                                const int rows_needed = ep == ORTHROS_GEMV_SWIGLU ? M / 2 : M;
                                const int tile_rows = ep == ORTHROS_GEMV_SWIGLU ? MT / 2 : MT;
                                CHECK(MT % 16 == 0 && TM >= 1 && TM <= 8 && S % WS == 0 && S >= WS && S >= 2 &&
                                          S <= 16,
                                      "v6 stages against slices: n %d M %d K %d ep %d: \"%s\"", n, M, K, ep, s);
                                CHECK(kbsz % kst == 0 && (long)KS * kbsz >= nkb && (long)(KS - 1) * kbsz < nkb &&
                                          (kst == 1 || K % 64 == 0),
                                      "v6 K split: n %d M %d K %d ep %d: \"%s\"", n, M, K, ep, s);
                                CHECK((long)nblk * tile_rows >= rows_needed && blocks % KS == 0 &&
                                          (long)most * (blocks / KS) >= nblk && smem <= 200 * 1024 &&
                                          smem >= (size_t)S * (size_t)sb,
                                      "v6 tiles, blocks, shared memory: n %d M %d K %d ep %d: \"%s\"", n, M, K, ep,
                                      s);
                                CHECK(!wg || ((MT == 64 || MT == 128) && (ep != ORTHROS_GEMV_SWIGLU || MT == 128) &&
                                              S >= 2 * WS &&
                                              smem >= (size_t)S * (size_t)sb + (size_t)16 * kbsz * 128),
                                      "v6 on wgmma: rows a tile, the staged input: n %d M %d K %d ep %d: \"%s\"", n,
                                      M, K, ep, s);
                                checked++;
                            }
                unsetenv("ORTHROS_GEMV6_STAGE_KB");
                unsetenv("ORTHROS_GEMV6_ROWS");
                if (forms[c]) unsetenv(forms[c]);
            }
    return checked;
}

int main(void)
{
    int rc;
    const char *s;
    /* the default is version 3 */
    CHECK(orthros_gemv_version() == 3, "default version %d", orthros_gemv_version());
    /* the KW checks below are of fill rule 1, the block slots' fill alone; the default rule 3 with the others after */
    CHECK(orthros_gemv_set_fill(1) == 0, "set_fill 1");
    /* which version takes which batch: v2 1-4, v3 1-8 (the default), v5 9-16 at version 5, v6 at 6, v1 the rest
     * (and everything at version 1) */
    for (int n = 1; n <= 16; n++) {
        s = plan(0, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, n <= 8 ? "v3:" : "v1:"), "default, n %d: rc %d \"%s\"", n, rc, s);
        s = plan(2, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, n <= 4 ? "v2:" : "v1:"), "version 2, n %d: rc %d \"%s\"", n, rc, s);
        s = plan(3, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, n <= 8 ? "v3:" : "v1:"), "version 3, n %d: rc %d \"%s\"", n, rc, s);
        s = plan(1, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, "v1:"), "version 1, n %d: rc %d \"%s\"", n, rc, s);
        s = plan(4, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, n <= 4 ? "v4:" : n <= 8 ? "v3:" : "v1:"), "version 4, n %d: rc %d \"%s\"", n, rc, s);
        s = plan(5, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, n <= 8 ? "v3:" : "v5:"), "version 5, n %d: rc %d \"%s\"", n, rc, s);
        s = plan(6, ORTHROS_GEMV_STORE, n, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && starts(s, n <= 8 ? "v3:" : "v6:"), "version 6, n %d: rc %d \"%s\"", n, rc, s);
    }
    /* v6 (batch 9-16, TMA stages of a row tile's k-blocks): v5's grid; rows a tile 32, 64 or 128 by v5's cost (a head
     * for ROPE, 128 for ARGMAX), 32 KB a stage, the most stages up to 16 that fit beside the staged input, all within
     * 200 KB. Not
     * from make_plan: the 8B head at batch 16, whose staged input v1 cannot hold, is v6's. */
    if (!getenv("ORTHROS_GEMV6_ROWS")) {
        s = plan(6, ORTHROS_GEMV_ADD, 16, 2048, 2048, 0, 0, &rc); /* 1B O: 32-row tiles, 8 k-blocks a stage */
        CHECK(rc == 0 && strstr(s, "v6: 32 rows a block, 64 row tiles x 2 K splits of 16 k-blocks, 128 blocks") &&
                  strstr(s, "4 stages of 8 k-blocks (32768 B), 165120 B shared"),
              "v6 1B o \"%s\"", s);
        s = plan(6, ORTHROS_GEMV_SWIGLU, 16, 16384, 2048, 0, 1, &rc); /* 1B gate/up: 4 stages of 32 KB */
        CHECK(rc == 0 && strstr(s, "128 rows a block, 128 row tiles x 1 K splits") &&
                  strstr(s, "4 stages of 2 k-blocks (32768 B), 197888 B shared"),
              "v6 1B gate_up \"%s\"", s);
        s = plan(6, ORTHROS_GEMV_ROPE, 16, 6144, 4096, 128, 1, &rc); /* 8B q/k/v: a head a tile, 8 splits */
        CHECK(rc == 0 && strstr(s, "128 rows a block, 48 row tiles x 8 K splits of 8 k-blocks, 128 blocks"),
              "v6 8B qkv \"%s\"", s);
        s = plan(6, ORTHROS_GEMV_ARGMAX, 16, 128256, 4096, 0, 1, &rc); /* 8B head: 131 KB staged, 2 stages */
        CHECK(rc == 0 && strstr(s, "1002 row tiles x 1 K splits of 64 k-blocks, 132 blocks (8 tiles") &&
                  strstr(s, "2 stages of 2 k-blocks (32768 B)"),
              "v6 8B head \"%s\"", s);
        if (!getenv("ORTHROS_GEMV6_BULK")) {
            /* bulk copies a row: the same tiles, a 16-byte skew a row; not where K is not a multiple of 64 */
            setenv("ORTHROS_GEMV6_BULK", "1", 1);
            s = plan(6, ORTHROS_GEMV_ADD, 16, 2048, 2048, 0, 0, &rc);
            CHECK(rc == 0 && strstr(s, "4 stages of 8 k-blocks (32768 B) by bulk copies a row, 167168 B shared"),
                  "v6 bulk 1B o \"%s\"", s);
            s = plan(6, ORTHROS_GEMV_ADD, 16, 2048, 2056, 0, 0, &rc);
            CHECK(rc == 0 && starts(s, "v6:") && !strstr(s, "bulk"), "v6 bulk, K 2056 \"%s\"", s);
            unsetenv("ORTHROS_GEMV6_BULK");
        }
        if (!getenv("ORTHROS_GEMV6_BULK") && !getenv("ORTHROS_GEMV6_WGMMA")) {
            /* read by wgmma: 64 or 128 rows a tile, 16 input rows staged without the skew */
            setenv("ORTHROS_GEMV6_WGMMA", "1", 1);
            s = plan(6, ORTHROS_GEMV_ADD, 16, 2048, 2048, 0, 0, &rc); /* 1B O: 32-row tiles are not wgmma's */
            CHECK(rc == 0 && strstr(s, "v6: 64 rows a block, 32 row tiles x 4 K splits of 8 k-blocks, 128 blocks") &&
                      strstr(s, "4 stages of 4 k-blocks (32768 B) read by wgmma, 148480 B shared"),
                  "v6 wgmma 1B o \"%s\"", s);
            s = plan(6, ORTHROS_GEMV_SWIGLU, 16, 16384, 2048, 0, 1, &rc); /* gate/up: a box a warpgroup */
            CHECK(rc == 0 && strstr(s, "128 rows a block, 128 row tiles x 1 K splits") &&
                      strstr(s, "4 stages of 2 k-blocks (32768 B) read by wgmma, 197632 B shared"),
                  "v6 wgmma 1B gate_up \"%s\"", s);
            s = plan(6, ORTHROS_GEMV_ADD, 9, 2048, 2048, 0, 0, &rc); /* 16 rows staged at any batch */
            CHECK(rc == 0 && strstr(s, "read by wgmma, 148480 B shared"), "v6 wgmma n 9 \"%s\"", s);
            setenv("ORTHROS_GEMV6_ROWS", "32", 1); /* forced rows wgmma cannot take: the call is v1's */
            s = plan(6, ORTHROS_GEMV_ADD, 16, 2048, 2048, 0, 0, &rc);
            CHECK(rc == 0 && starts(s, "v1:"), "v6 wgmma, 32 rows forced \"%s\"", s);
            unsetenv("ORTHROS_GEMV6_ROWS");
            setenv("ORTHROS_GEMV6_BULK", "1", 1); /* wgmma over bulk copies where both are asked */
            s = plan(6, ORTHROS_GEMV_ADD, 16, 2048, 2048, 0, 0, &rc);
            CHECK(rc == 0 && strstr(s, "read by wgmma"), "v6 wgmma and bulk \"%s\"", s);
            unsetenv("ORTHROS_GEMV6_BULK");
            unsetenv("ORTHROS_GEMV6_WGMMA");
        }
        s = plan(5, ORTHROS_GEMV_ARGMAX, 16, 128256, 4096, 0, 1, &rc); /* v1's plan refuses it, and so v5 */
        CHECK(rc == ORTHROS_EUNSUPPORTED, "v5 8B head: rc %d \"%s\"", rc, s);
    }
    /* v5 (batch 9-16): v1's row tiles (32 rows for SWIGLU), KS splits of K times as many blocks a split as fill one
     * block an SM, the split with the least time for the busiest block (its tiles' bytes and a fixed cost a tile), the
     * staged input and the rings within 200 KB */
    CHECK(orthros_gemv_set_ring_slots(6) == 0, "6 ring slots refused");
    s = plan(5, ORTHROS_GEMV_ADD, 16, 2048, 2048, 0, 0, &rc); /* 1B O: 64 row tiles, two splits, a tile a block */
    CHECK(rc == 0 && strstr(s, "64 row tiles x 2 K splits of 16 k-blocks, 128 blocks (1 tiles") &&
              strstr(s, "6 ring slots") && strstr(s, "132096 B shared"),
          "v5 1B o \"%s\"", s);
    s = plan(5, ORTHROS_GEMV_ADD, 16, 2048, 8192, 0, 0, &rc); /* 1B down: the staged input fits from 3 splits */
    CHECK(rc == 0 && strstr(s, "x 4 K splits of 32 k-blocks, 132 blocks (2 tiles"), "v5 1B down \"%s\"", s);
    s = plan(5, ORTHROS_GEMV_SWIGLU, 16, 16384, 2048, 0, 1, &rc); /* 1B gate/up: 512 tiles of 32 rows on 132 blocks */
    CHECK(rc == 0 && strstr(s, "32 rows a block, 512 row tiles x 1 K splits") && strstr(s, "(4 tiles"),
          "v5 1B gate_up \"%s\"", s);
    s = plan(5, ORTHROS_GEMV_ROPE, 12, 3072, 2048, 64, 1, &rc); /* 1B q/k/v: a head a tile */
    CHECK(rc == 0 && strstr(s, "64 rows a block, 48 row tiles x 2 K splits"), "v5 1B qkv \"%s\"", s);
    CHECK(orthros_gemv_set_ring_slots(8) == 0, "8 ring slots refused");
    s = plan(5, ORTHROS_GEMV_ADD, 16, 4096, 14336, 0, 0, &rc); /* 8B down: 128 KB of rings leave 72 KB staged */
    CHECK(rc == 0 && strstr(s, "x 8 K splits of 28 k-blocks, 128 blocks") && strstr(s, "8 ring slots"),
          "v5 8B down \"%s\"", s);
    /* unasked, the plan takes the most slots that fit beside its staged input */
    CHECK(orthros_gemv_set_ring_slots(0) == 0, "ring slots 0 refused");
    if (!getenv("ORTHROS_GEMV5_STAGES")) {
        s = plan(5, ORTHROS_GEMV_ARGMAX, 16, 128256, 2048, 0, 1, &rc); /* the head: 65 KB staged, 128 KB of rings */
        CHECK(rc == 0 && strstr(s, "1002 row tiles x 1 K splits") && strstr(s, "8 ring slots"), "v5 1B head \"%s\"", s);
        s = plan(5, ORTHROS_GEMV_SWIGLU, 16, 28672, 4096, 0, 1, &rc); /* 8B gate/up: all of K staged, 4 slots */
        CHECK(rc == 0 && strstr(s, "896 row tiles x 1 K splits") && strstr(s, "(7 tiles") && strstr(s, "4 ring slots"),
              "v5 8B gate_up \"%s\"", s);
    }
    CHECK(orthros_gemv_set_ring_slots(5) == ORTHROS_EINVAL && orthros_gemv_set_ring_slots(0) == 0, "ring slots 5");
    /* v4: v3's plan, U 4 at batch 1 and 2 above, the input always staged (raw without a norm); over 64 KB staged it
     * leaves the call to v3 */
    s = plan(4, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
    CHECK(rc == 0 && strstr(s, "KW 2,") && strstr(s, "U 4,") && strstr(s, "768 block rounds"), "v4 8B qkv \"%s\"", s);
    s = plan(4, ORTHROS_GEMV_ADD, 1, 2048, 8192, 0, 0, &rc);
    CHECK(rc == 0 && starts(s, "v4:") && strstr(s, "16384 B staged"), "v4 1B down \"%s\"", s);
    s = plan(4, ORTHROS_GEMV_ADD, 3, 2048, 8192, 0, 0, &rc);
    CHECK(rc == 0 && starts(s, "v4:") && strstr(s, "U 2,") && strstr(s, "49152 B staged"), "v4 n 3 \"%s\"", s);
    s = plan(4, ORTHROS_GEMV_STORE, 4, 2048, 16384, 0, 0, &rc);
    CHECK(rc == 0 && starts(s, "v3:"), "v4 n 4, K 16384 \"%s\"", s);
    /* the K splits of the decode shapes at batch 1 (docs/kernels.md) */
    s = plan(2, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc); /* 8B q/k/v: 3072 groups */
    CHECK(rc == 0 && strstr(s, "3072 groups") && strstr(s, "KW 1,") && strstr(s, "U 8,"), "v2 8B qkv \"%s\"", s);
    s = plan(3, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
    CHECK(rc == 0 && strstr(s, "KW 2,") && strstr(s, "U 4,") && strstr(s, "768 block rounds"), "v3 8B qkv \"%s\"", s);
    s = plan(2, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc); /* 1B q/k/v: 1536 groups */
    CHECK(rc == 0 && strstr(s, "KW 2,"), "v2 1B qkv \"%s\"", s);
    s = plan(3, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc);
    CHECK(rc == 0 && strstr(s, "KW 4,"), "v3 1B qkv \"%s\"", s);
    s = plan(2, ORTHROS_GEMV_SWIGLU, 1, 16384, 2048, 0, 1, &rc); /* 1B gate/up: 8192 groups, resident grid */
    CHECK(rc == 0 && strstr(s, "8192 groups") && strstr(s, "KW 1,") && strstr(s, "264 blocks"), "v2 1B gate_up \"%s\"", s);
    s = plan(2, ORTHROS_GEMV_ADD, 1, 2048, 8192, 0, 0, &rc); /* 1B down: too few groups, K split in two */
    CHECK(rc == 0 && strstr(s, "1024 groups") && strstr(s, "KW 2,") && strstr(s, "256 blocks"), "v2 1B down \"%s\"", s);
    s = plan(3, ORTHROS_GEMV_ARGMAX, 8, 128256, 4096, 0, 1, &rc); /* 8B head at batch 8: 64 KB staged, U 2 */
    CHECK(rc == 0 && strstr(s, "U 2,") && strstr(s, "65536 B staged"), "v3 8B head n 8 \"%s\"", s);
    /* a K so short that no slice keeps a chunk a lane: no split */
    s = plan(3, ORTHROS_GEMV_STORE, 1, 17, 72, 0, 0, &rc);
    CHECK(rc == 0 && strstr(s, "9 groups") && strstr(s, "KW 1,"), "v3 M 17 K 72 \"%s\"", s);
    /* KW forced (orthros_gemv_set_kw): v3 alone, the largest up to it that K allows, 0 the plan's again; anything
     * but 0, 1, 2 and 4 refused */
    const int kws[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        CHECK(orthros_gemv_set_kw(kws[k]) == 0, "set_kw %d", kws[k]);
        char want[16];
        snprintf(want, sizeof want, "KW %d,", kws[k]);
        s = plan(3, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc);
        CHECK(rc == 0 && strstr(s, want), "v3 1B qkv, KW %d forced \"%s\"", kws[k], s);
        s = plan(3, ORTHROS_GEMV_STORE, 1, 17, 72, 0, 0, &rc); /* 9 chunks a row: no slice of 32 */
        CHECK(rc == 0 && strstr(s, "KW 1,"), "v3 M 17 K 72, KW %d forced: 1 \"%s\"", kws[k], s);
        s = plan(3, ORTHROS_GEMV_STORE, 1, 64, 512, 0, 0, &rc); /* 64 chunks a row: at most 2 slices */
        CHECK(rc == 0 && strstr(s, kws[k] == 1 ? "KW 1," : "KW 2,"), "v3 K 512, KW %d forced \"%s\"", kws[k], s);
        s = plan(2, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc);
        CHECK(rc == 0 && strstr(s, "KW 2,"), "v2 1B qkv keeps its plan with KW %d forced \"%s\"", kws[k], s);
    }
    CHECK(orthros_gemv_set_kw(0) == 0 && orthros_gemv_kw() == 0, "set_kw 0: the plan's");
    s = plan(3, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc);
    CHECK(rc == 0 && strstr(s, "KW 4,"), "v3 1B qkv, the plan's again \"%s\"", s);
    const int bad_kw[] = {-1, 3, 8};
    for (int k = 0; k < 3; k++)
        CHECK(orthros_gemv_set_kw(bad_kw[k]) == ORTHROS_EINVAL && orthros_gemv_kw() == 0, "set_kw %d refused", bad_kw[k]);
    /* the fill rule (orthros_gemv_set_fill): 2 counts a product of at most one block round an SM against the SMs, so
     * that the 1B O and down (1024 groups, 128 block rounds at KW 1) take KW 1 where rule 1 takes 2; the q/k/v
     * products (192 and 384 block rounds at KW 1) and the 8B O (256) keep rule 1's KW; 3 gives the 1B q/k/v (192
     * block rounds at KW 1, one wave of 264 slots) KW 1 and nothing else another KW; anything but 1-3 refused */
    for (int rule = 1; rule <= 3; rule++) {
        CHECK(orthros_gemv_set_fill(rule) == 0, "set_fill %d", rule);
        s = plan(3, ORTHROS_GEMV_ADD, 1, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && strstr(s, rule == 2 ? "KW 1," : "KW 2,"), "v3 1B o, fill %d \"%s\"", rule, s);
        s = plan(3, ORTHROS_GEMV_ADD, 1, 2048, 8192, 0, 0, &rc);
        CHECK(rc == 0 && strstr(s, rule == 2 ? "KW 1," : "KW 2,"), "v3 1B down, fill %d \"%s\"", rule, s);
        s = plan(3, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc);
        CHECK(rc == 0 && strstr(s, rule == 3 ? "KW 1," : "KW 4,"), "v3 1B qkv, fill %d \"%s\"", rule, s);
        s = plan(3, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
        CHECK(rc == 0 && strstr(s, "KW 2,"), "v3 8B qkv, fill %d \"%s\"", rule, s);
        s = plan(3, ORTHROS_GEMV_ADD, 1, 4096, 4096, 0, 0, &rc);
        CHECK(rc == 0 && strstr(s, "KW 1,"), "v3 8B o, fill %d \"%s\"", rule, s);
    }
    CHECK(orthros_gemv_set_fill(0) == ORTHROS_EINVAL && orthros_gemv_set_fill(4) == ORTHROS_EINVAL, "set_fill 0, 4");
    /* the q/k/v grid capped (orthros_gemv_set_qkv_blocks): the 8B q/k/v's 264 blocks to 192, its KW kept; the O
     * product and v2's plan unchanged; 0 the plan's again; past 4096 or below 0 refused */
    CHECK(orthros_gemv_set_qkv_blocks(192) == 0, "set_qkv_blocks 192");
    s = plan(3, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
    CHECK(rc == 0 && strstr(s, "KW 2,") && strstr(s, "192 blocks, 768 block rounds"), "v3 8B qkv, 192 blocks \"%s\"", s);
    s = plan(3, ORTHROS_GEMV_ADD, 1, 4096, 4096, 0, 0, &rc);
    CHECK(rc == 0 && strstr(s, "256 blocks"), "v3 8B o, no cap \"%s\"", s);
    s = plan(2, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
    CHECK(rc == 0 && strstr(s, "264 blocks"), "v2 8B qkv, no cap \"%s\"", s);
    CHECK(orthros_gemv_set_qkv_blocks(4097) == ORTHROS_EINVAL && orthros_gemv_set_qkv_blocks(-1) == ORTHROS_EINVAL,
          "set_qkv_blocks 4097, -1 refused");
    CHECK(orthros_gemv_set_qkv_blocks(0) == 0, "set_qkv_blocks 0");
    s = plan(3, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
    CHECK(rc == 0 && strstr(s, "264 blocks"), "v3 8B qkv, the plan's grid again \"%s\"", s);
    /* the balanced grid (orthros_gemv_set_balance): the 8B gate/up's 1792 block rounds on 256 blocks of 7 (264 with
     * 1: 7 and 6), the heads' 8016 on 259 (31 waves kept), a product of one wave unchanged */
    for (int on = 0; on <= 1; on++) {
        CHECK(orthros_gemv_set_balance(on) == 0, "set_balance %d", on);
        s = plan(3, ORTHROS_GEMV_SWIGLU, 1, 28672, 4096, 0, 1, &rc);
        CHECK(rc == 0 && strstr(s, on ? "256 blocks, 1792 block rounds" : "264 blocks, 1792 block rounds"),
              "v3 8B gate/up, balance %d \"%s\"", on, s);
        s = plan(3, ORTHROS_GEMV_ARGMAX, 1, 128256, 2048, 0, 1, &rc);
        CHECK(rc == 0 && strstr(s, on ? "259 blocks, 8016 block rounds" : "264 blocks, 8016 block rounds"),
              "v3 1B head, balance %d \"%s\"", on, s);
        s = plan(3, ORTHROS_GEMV_ADD, 1, 2048, 2048, 0, 0, &rc);
        CHECK(rc == 0 && strstr(s, "256 blocks, 256 block rounds"), "v3 1B o, one wave, balance %d \"%s\"", on, s);
        s = plan(3, ORTHROS_GEMV_ROPE, 1, 6144, 4096, 128, 1, &rc);
        CHECK(rc == 0 && strstr(s, on ? "256 blocks, 768 block rounds" : "264 blocks, 768 block rounds"),
              "v3 8B qkv, balance %d \"%s\"", on, s);
    }
    CHECK(orthros_gemv_set_balance(2) == ORTHROS_EINVAL && orthros_gemv_set_balance(-1) == ORTHROS_EINVAL,
          "set_balance 2, -1 refused");
    CHECK(orthros_gemv_set_balance(ORTHROS_GEMV_BALANCE_DEFAULT) == 0, "set_balance default");
    CHECK(ORTHROS_GEMV_FILL_DEFAULT == 3 && orthros_gemv_set_fill(ORTHROS_GEMV_FILL_DEFAULT) == 0, "set_fill default");
    s = plan(3, ORTHROS_GEMV_ROPE, 1, 3072, 2048, 64, 1, &rc);
    CHECK(rc == 0 && strstr(s, "KW 1,"), "v3 1B qkv, the default fill rule \"%s\"", s);
    /* the staged input over 64 KB: v2 leaves the call to v1 */
    s = plan(2, ORTHROS_GEMV_STORE, 4, 2048, 16384, 0, 1, &rc);
    CHECK(rc == 0 && starts(s, "v1:"), "v2 n 4, K 16384 normed \"%s\"", s);
    /* the MLP in one launch (any version): units of 32 columns of F, as many blocks as fit at once (two an SM) up to
     * the units; refused past batch 4, F not a multiple of 32, the staged input and sums over 96 KB, no W_down */
    s = plan(0, ORTHROS_GEMV_MLP, 1, 16384, 2048, 0, 1, &rc); /* 1B: 256 units */
    CHECK(rc == 0 && strstr(s, "mlp: 256 units") && strstr(s, "256 blocks") && strstr(s, "12288 B shared"), "1B mlp \"%s\"", s);
    s = plan(1, ORTHROS_GEMV_MLP, 1, 28672, 4096, 0, 1, &rc); /* 8B: 448 units */
    CHECK(rc == 0 && strstr(s, "mlp: 448 units") && strstr(s, "264 blocks"), "8B mlp \"%s\"", s);
    s = plan(0, ORTHROS_GEMV_MLP, 4, 28672, 4096, 0, 1, &rc);
    CHECK(rc == 0 && strstr(s, "98304 B shared"), "8B mlp n 4 \"%s\"", s);
    s = plan(0, ORTHROS_GEMV_MLP, 5, 16384, 2048, 0, 1, &rc);
    CHECK(rc == ORTHROS_EUNSUPPORTED && s[0] == '\0', "mlp n 5: rc %d \"%s\"", rc, s);
    s = plan(0, ORTHROS_GEMV_MLP, 1, 2000, 2048, 0, 1, &rc);
    CHECK(rc == ORTHROS_EUNSUPPORTED, "mlp F 1000: rc %d \"%s\"", rc, s);
    s = plan(0, ORTHROS_GEMV_MLP, 4, 16384, 4104, 0, 1, &rc);
    CHECK(rc == ORTHROS_EUNSUPPORTED, "mlp n 4 K 4104 (over 96 KB): rc %d \"%s\"", rc, s);
    s = plan(0, ORTHROS_GEMV_MLP, 1, 128, 64, 0, 1, &rc); /* F 64: two units, two blocks */
    CHECK(rc == 0 && strstr(s, "2 units") && strstr(s, "2 blocks"), "mlp F 64 \"%s\"", s);
    /* refusals: versions out of range, a K that is not a multiple of 8 (nothing written) */
    const int checked6 = v6_plan_properties();
    CHECK(checked6 > 1000, "v6 plans checked: %d", checked6);
    printf("v6 plans checked: %d\n", checked6);
    CHECK(orthros_gemv_set_version(7) == ORTHROS_EINVAL, "version 7 taken");
    CHECK(orthros_gemv_set_version(-1) == ORTHROS_EINVAL, "version -1 taken");
    CHECK(orthros_gemv_version() == 3, "a refused version changed it: %d", orthros_gemv_version());
    s = plan(2, ORTHROS_GEMV_STORE, 1, 64, 12, 0, 0, &rc);
    CHECK(rc == ORTHROS_EUNSUPPORTED && s[0] == '\0', "K 12: rc %d \"%s\"", rc, s);
    return tu_finish();
}
