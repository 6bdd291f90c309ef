/* Byte-level BPE (GPT-2 style) as Hugging Face tokenizers runs it:
 *   1. added tokens (special ones such as <|im_end|>) are matched whole in the text, leftmost-longest;
 *   2. each stretch between them is split by the model's pre-tokenizer: "gpt2" is the regex
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (written out by hand below,
 *      with generated Unicode tables), "smollm" first isolates every \p{N} character (HF's Digits with
 *      individual_digits, llama.cpp's smollm pre-tokenizer) and then splits the rest as gpt2;
 *   3. each piece's bytes become symbols (one per byte, GPT-2's byte-to-unicode alphabet) and the lowest-ranked
 *      merge is applied first, leftmost on ties (a binary heap, as HF's word.rs), O(k log k) per piece of k bytes.
 * Invalid UTF-8 (which HF cannot take) is split as punctuation, one byte per character, and each byte is encoded
 * by its byte token, so decode(encode(x)) == x for every byte the vocabulary has a token for (a byte without one
 * is dropped, as HF does). Tokens are stored as the bytes they decode to. */
#define _GNU_SOURCE
#include "tokenizer.h"
#include "adapter.h"
#include "gguf.h"
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { PRE_GPT2 = 0, PRE_SMOLLM = 1 };
enum { TF_SPECIAL = 1, TF_ADDED = 2 };
#define MAX_VOCAB (1 << 24)
#define MAX_AFFIX 8

typedef struct {
    char *content;
    size_t len;
    int32_t id;
} added_token;

/* An Aho-Corasick automaton over the added tokens' bytes reversed. Run over the text from its end, the state at
 * byte i names the longest added token that starts at i (the longest pattern ending there in the reversed text),
 * so the leftmost-longest matches of every added token take one pass, linear in the text, however many added
 * tokens there are (comparing each position with each token took 25 s for 49,152 tokens and 100 KB). */
typedef struct {
    int32_t n_nodes;
    int32_t *fail;            /* [n_nodes] the longest proper suffix of the node's string that is a node */
    int32_t *term;            /* [n_nodes] the added token (index) whose reversed bytes are the node's string, or -1 */
    int32_t *best;            /* [n_nodes] the longest added token that is a suffix of the node's string, or -1 */
    int32_t *first, *sibling; /* [n_nodes] children as lists, for the breadth-first pass */
    uint8_t *byte;            /* [n_nodes] the byte on the edge into the node */
    uint64_t *ckey;           /* children: (parent << 8 | byte) + 1 -> node; 0 empty */
    int32_t *cval;
    size_t cmask;
} added_matcher;

struct orthros_tokenizer {
    int n_vocab;
    char *arena;              /* every token's bytes, back to back */
    size_t arena_len, arena_cap;
    size_t *off;              /* [n_vocab] */
    uint32_t *len;            /* [n_vocab] */
    uint8_t *flags;           /* [n_vocab] TF_* */
    int32_t *vhash;           /* open addressing over token bytes -> id; -1 empty */
    size_t vmask;
    uint64_t *mkey;           /* merges: (left << 32 | right) + 1, 0 empty */
    uint32_t *mrank;
    int32_t *mnew;
    size_t mmask;
    int32_t byte_id[256];     /* the token of each single byte, -1 if none */
    added_token *added;
    int n_added, cap_added;
    added_matcher am;         /* every added token, matched whole in one pass over the text */
    int pre, ignore_merges;
    int32_t bos, eos, unk, pad;
    int32_t bpe_unk;          /* what a byte without a token becomes: the BPE model's unk_token, or -1 (dropped) */
    int n_prefix, n_suffix;
    int32_t prefix[MAX_AFFIX], suffix[MAX_AFFIX];
    char *chat_template;
};

/* ---- Unicode ---- */

static int in_ranges(uint32_t cp, const uint32_t (*r)[2], int n)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid - 1;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int orthros_unicode_class(uint32_t cp)
{
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return ORTHROS_CC_LETTER;
        if (cp >= '0' && cp <= '9') return ORTHROS_CC_NUMBER;
        if ((cp >= 9 && cp <= 13) || cp == ' ') return ORTHROS_CC_SPACE;
        return ORTHROS_CC_OTHER;
    }
    /* \s is the White_Space property (checked against HF tokenizers over every code point). */
    if (cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
        cp == 0x202f || cp == 0x205f || cp == 0x3000)
        return ORTHROS_CC_SPACE;
    if (in_ranges(cp, orthros_unicode_letter, orthros_unicode_letter_count)) return ORTHROS_CC_LETTER;
    if (in_ranges(cp, orthros_unicode_number, orthros_unicode_number_count)) return ORTHROS_CC_NUMBER;
    return ORTHROS_CC_OTHER;
}

/* Length of the valid UTF-8 sequence at s[0..n) and its code point, or 0 when s[0] starts no valid one. */
static int utf8_next(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int len;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) len = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

/* Bytes of the maximal invalid prefix at s (Unicode's "maximal subpart", as Rust's from_utf8_lossy counts). */
static int utf8_bad_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    int need;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 2;
    else if (c >= 0xe0 && c <= 0xef) need = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) need = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return 1;
    int i = 1;
    if ((size_t)i < n && s[i] >= lo && s[i] <= hi) {
        i++;
        while (i < need && (size_t)i < n && (s[i] & 0xc0) == 0x80) i++;
    }
    return i;
}

/* ---- GPT-2's byte <-> unicode alphabet ---- */

static int cp_to_byte(uint32_t cp)
{
    if (cp < 256) return ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || cp >= 174) ? (int)cp : -1;
    if (cp < 256 + 68) {
        int k = (int)cp - 256;
        return k <= 32 ? k : k <= 66 ? 127 + (k - 33) : 173;
    }
    return -1;
}

/* The bytes a token string stands for: its byte-level spelling decoded when every character is in the
 * alphabet, else its own UTF-8 (as HF's ByteLevel decoder falls back). dst holds at least len bytes. */
static size_t token_bytes_from_string(uint8_t *dst, const char *s, size_t len)
{
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        int l = utf8_next((const uint8_t *)s + i, len - i, &cp);
        int b = l ? cp_to_byte(cp) : -1;
        if (b < 0) {
            memcpy(dst, s, len);
            return len;
        }
        dst[o++] = (uint8_t)b;
        i += (size_t)l;
    }
    return o;
}

/* ---- hash tables ---- */

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int32_t vocab_find(const orthros_tokenizer *t, const char *p, size_t n)
{
    for (size_t h = hash_bytes(p, n) & t->vmask;; h = (h + 1) & t->vmask) {
        int32_t id = t->vhash[h];
        if (id < 0) return -1;
        if (t->len[id] == n && !memcmp(t->arena + t->off[id], p, n)) return id;
    }
}

static int merge_find(const orthros_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id)
{
    if (!t->mkey) return 0;
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    for (size_t h = hash_u64(key) & t->mmask;; h = (h + 1) & t->mmask) {
        if (t->mkey[h] == 0) return 0;
        if (t->mkey[h] == key) {
            *rank = t->mrank[h];
            *new_id = t->mnew[h];
            return 1;
        }
    }
}

/* ---- building ---- */

static void matcher_free(added_matcher *m);

static int tok_alloc(orthros_tokenizer **out, int n_vocab)
{
    *out = NULL;
    if (n_vocab < 1 || n_vocab > MAX_VOCAB)
        return orthros_error(ORTHROS_EFORMAT, "vocabulary of %d tokens (1 to 2^24)", n_vocab);
    orthros_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    t->n_vocab = n_vocab;
    t->off = calloc((size_t)n_vocab, sizeof *t->off);
    t->len = calloc((size_t)n_vocab, sizeof *t->len);
    t->flags = calloc((size_t)n_vocab, 1);
    /* The arena exists even when every token is empty, so that token bytes are never a null pointer. */
    t->arena_cap = 64;
    t->arena = malloc(t->arena_cap);
    t->bos = t->eos = t->unk = t->pad = t->bpe_unk = -1;
    if (!t->off || !t->len || !t->flags || !t->arena) {
        orthros_tokenizer_free(t);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    *out = t;
    return 0;
}

void orthros_tokenizer_free(orthros_tokenizer *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    matcher_free(&t->am);
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->flags);
    free(t->vhash);
    free(t->mkey);
    free(t->mrank);
    free(t->mnew);
    free(t->chat_template);
    free(t);
}

/* Stores token id's bytes (from its string; see token_bytes_from_string). */
static int tok_set(orthros_tokenizer *t, int32_t id, const char *s, size_t len)
{
    if (len > (1u << 20)) return orthros_error(ORTHROS_EFORMAT, "token %d is %zu bytes long", id, len);
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 1 << 16;
        while (cap < t->arena_len + len) cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        t->arena = a;
        t->arena_cap = cap;
    }
    t->off[id] = t->arena_len;
    t->len[id] = (uint32_t)token_bytes_from_string((uint8_t *)t->arena + t->arena_len, s, len);
    t->arena_len += t->len[id];
    return 0;
}

/* Hash of every token's bytes (the lowest id wins a duplicate) and the single-byte tokens. */
static int tok_index(orthros_tokenizer *t)
{
    size_t cap = 2;
    while (cap < 2 * (size_t)t->n_vocab) cap *= 2;
    t->vhash = malloc(cap * sizeof *t->vhash);
    if (!t->vhash) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    memset(t->vhash, 0xff, cap * sizeof *t->vhash);
    t->vmask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *p = t->arena + t->off[id];
        size_t n = t->len[id], h = hash_bytes(p, n) & t->vmask;
        int dup = 0;
        for (; t->vhash[h] >= 0; h = (h + 1) & t->vmask) {
            int32_t o = t->vhash[h];
            if (t->len[o] == n && !memcmp(t->arena + t->off[o], p, n)) {
                dup = 1;
                break;
            }
        }
        if (!dup) t->vhash[h] = id;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = vocab_find(t, &c, 1);
    }
    return 0;
}

static int merges_alloc(orthros_tokenizer *t, size_t n)
{
    size_t cap = 2;
    while (cap < 2 * n + 2) cap *= 2;
    t->mkey = calloc(cap, sizeof *t->mkey);
    t->mrank = malloc(cap * sizeof *t->mrank);
    t->mnew = malloc(cap * sizeof *t->mnew);
    if (!t->mkey || !t->mrank || !t->mnew) return orthros_error(ORTHROS_ENOMEM, "out of memory for %zu merges", n);
    t->mmask = cap - 1;
    return 0;
}

/* Adds merge `rank` of the token strings a and b (byte-level spellings); a later duplicate replaces an earlier
 * one, as HF's merge map is built. */
static int merge_add(orthros_tokenizer *t, uint32_t rank, const char *a, size_t na, const char *b, size_t nb)
{
    uint8_t stack[512], *buf = na + nb <= sizeof stack ? stack : malloc(na + nb);
    if (!buf) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    size_t la = token_bytes_from_string(buf, a, na);
    size_t lb = token_bytes_from_string(buf + la, b, nb);
    int32_t ia = vocab_find(t, (char *)buf, la), ib = vocab_find(t, (char *)buf + la, lb);
    int32_t in = vocab_find(t, (char *)buf, la + lb);
    if (buf != stack) free(buf);
    if (ia < 0 || ib < 0 || in < 0)
        return orthros_error(ORTHROS_EFORMAT, "merge %u (\"%.*s\" \"%.*s\") names a token missing from the vocabulary", rank,
                             (int)(na > 64 ? 64 : na), a, (int)(nb > 64 ? 64 : nb), b);
    uint64_t key = ((uint64_t)(uint32_t)ia << 32 | (uint32_t)ib) + 1;
    size_t h = hash_u64(key) & t->mmask;
    while (t->mkey[h] && t->mkey[h] != key) h = (h + 1) & t->mmask;
    t->mkey[h] = key;
    t->mrank[h] = rank;
    t->mnew[h] = in;
    return 0;
}

static int added_add(orthros_tokenizer *t, const char *content, size_t len, int32_t id, int special)
{
    if (len == 0) return orthros_error(ORTHROS_EFORMAT, "added token %d is empty", id);
    if (id < 0 || id >= t->n_vocab) return orthros_error(ORTHROS_EFORMAT, "added token id %d is outside the vocabulary", id);
    if (t->n_added == t->cap_added) {
        int cap = t->cap_added ? 2 * t->cap_added : 16;
        added_token *a = realloc(t->added, (size_t)cap * sizeof *a);
        if (!a) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        t->added = a;
        t->cap_added = cap;
    }
    char *c = malloc(len + 1);
    if (!c) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    memcpy(c, content, len);
    c[len] = '\0';
    t->added[t->n_added++] = (added_token){c, len, id};
    t->flags[id] |= TF_ADDED | (special ? TF_SPECIAL : 0);
    return 0;
}

/* ---- the added tokens' matcher ---- */

static void matcher_free(added_matcher *m)
{
    free(m->fail);
    free(m->term);
    free(m->best);
    free(m->first);
    free(m->sibling);
    free(m->byte);
    free(m->ckey);
    free(m->cval);
    memset(m, 0, sizeof *m);
}

static int32_t matcher_child(const added_matcher *m, int32_t node, uint8_t b)
{
    uint64_t key = ((uint64_t)(uint32_t)node << 8 | b) + 1;
    for (size_t h = hash_u64(key) & m->cmask;; h = (h + 1) & m->cmask) {
        if (m->ckey[h] == 0) return -1;
        if (m->ckey[h] == key) return m->cval[h];
    }
}

/* The child of node by byte b, made when absent. */
static int32_t matcher_step_add(added_matcher *m, int32_t node, uint8_t b)
{
    uint64_t key = ((uint64_t)(uint32_t)node << 8 | b) + 1;
    size_t h = hash_u64(key) & m->cmask;
    for (; m->ckey[h]; h = (h + 1) & m->cmask)
        if (m->ckey[h] == key) return m->cval[h];
    int32_t c = m->n_nodes++;
    m->ckey[h] = key;
    m->cval[h] = c;
    m->term[c] = m->best[c] = -1;
    m->byte[c] = b;
    m->first[c] = -1;
    m->sibling[c] = m->first[node];
    m->first[node] = c;
    return c;
}

/* Builds the matcher of t's added tokens (a token added twice keeps its first id, as the pairwise scan did). */
static int matcher_build(orthros_tokenizer *t)
{
    added_matcher *m = &t->am;
    matcher_free(m);
    size_t total = 1;
    for (int k = 0; k < t->n_added; k++) {
        if (t->added[k].len > (size_t)INT32_MAX - total)
            return orthros_error(ORTHROS_EFORMAT, "the added tokens are too long in all (over 2^31 bytes)");
        total += t->added[k].len;
    }
    size_t cap = 4;
    while (cap < 2 * total) cap *= 2;
    m->fail = malloc(total * sizeof *m->fail);
    m->term = malloc(total * sizeof *m->term);
    m->best = malloc(total * sizeof *m->best);
    m->first = malloc(total * sizeof *m->first);
    m->sibling = malloc(total * sizeof *m->sibling);
    m->byte = malloc(total);
    m->ckey = calloc(cap, sizeof *m->ckey);
    m->cval = malloc(cap * sizeof *m->cval);
    if (!m->fail || !m->term || !m->best || !m->first || !m->sibling || !m->byte || !m->ckey || !m->cval) {
        matcher_free(m);
        return orthros_error(ORTHROS_ENOMEM, "out of memory for %d added tokens", t->n_added);
    }
    m->cmask = cap - 1;
    m->n_nodes = 1;
    m->term[0] = m->best[0] = m->first[0] = m->sibling[0] = -1;
    m->fail[0] = 0;
    m->byte[0] = 0;
    for (int k = 0; k < t->n_added; k++) {
        int32_t node = 0;
        for (size_t j = t->added[k].len; j-- > 0;) node = matcher_step_add(m, node, (uint8_t)t->added[k].content[j]);
        if (m->term[node] < 0) m->term[node] = k;
    }
    /* Failure links and the longest token ending at each node, breadth first. */
    int32_t *queue = malloc((size_t)m->n_nodes * sizeof *queue);
    if (!queue) {
        matcher_free(m);
        return orthros_error(ORTHROS_ENOMEM, "out of memory for %d added tokens", t->n_added);
    }
    int32_t head = 0, tail = 0;
    for (int32_t c = m->first[0]; c >= 0; c = m->sibling[c]) {
        m->fail[c] = 0;
        m->best[c] = m->term[c];
        queue[tail++] = c;
    }
    while (head < tail) {
        int32_t u = queue[head++];
        for (int32_t v = m->first[u]; v >= 0; v = m->sibling[v]) {
            int32_t f = m->fail[u], to;
            while ((to = matcher_child(m, f, m->byte[v])) < 0 && f) f = m->fail[f];
            m->fail[v] = to >= 0 ? to : 0;
            m->best[v] = m->term[v] >= 0 ? m->term[v] : m->best[m->fail[v]];
            queue[tail++] = v;
        }
    }
    free(queue);
    return 0;
}

/* The added token (index) whose bytes are exactly s[n], or -1. */
static int32_t matcher_exact(const added_matcher *m, const char *s, size_t n)
{
    if (!m->n_nodes || n == 0) return -1;
    int32_t node = 0;
    for (size_t j = n; j-- > 0 && node >= 0;) node = matcher_child(m, node, (uint8_t)s[j]);
    return node >= 0 ? m->term[node] : -1;
}

typedef struct {
    uint32_t pos;             /* where the token starts in the text */
    int32_t k;                /* the added token */
} added_match;

/* Every position of text[len] at which an added token starts, with the longest such token, in decreasing order
 * of position (malloc'd *out, *n of them). */
static int matcher_scan(const added_matcher *m, const char *text, size_t len, added_match **out, size_t *n)
{
    added_match *list = NULL;
    size_t cnt = 0, cap = 0;
    int32_t state = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = len; i-- > 0;) {
        uint8_t b = (uint8_t)text[i];
        int32_t to;
        while ((to = matcher_child(m, state, b)) < 0 && state) state = m->fail[state];
        state = to >= 0 ? to : 0;
        if (m->best[state] < 0) continue;
        if (cnt == cap) {
            size_t nc = cap ? 2 * cap : 64;
            added_match *l = nc <= ((size_t)1 << 29) ? realloc(list, nc * sizeof *l) : NULL;
            if (!l) {
                free(list);
                return orthros_error(ORTHROS_ENOMEM, "out of memory: too many added tokens in the text");
            }
            list = l;
            cap = nc;
        }
        list[cnt++] = (added_match){(uint32_t)i, m->best[state]};
    }
    *out = list;
    *n = cnt;
    return 0;
}

/* What every constructor ends with: the added tokens' matcher, and a refusal of a vocabulary that can encode
 * nothing (no token for any byte and no unknown token: every byte of every text would be dropped). */
static int tok_finish(orthros_tokenizer *t)
{
    int any = t->bpe_unk >= 0;
    for (int b = 0; b < 256 && !any; b++) any = t->byte_id[b] >= 0;
    if (!any) return orthros_error(ORTHROS_EFORMAT, "the vocabulary has no token for any single byte (it can encode no text)");
    return t->am.n_nodes ? 0 : matcher_build(t);
}

/* ---- pre-tokenization ---- */

typedef struct {
    size_t *ends;
    int n, cap;
} piece_list;

static int piece_push(piece_list *pl, size_t end)
{
    if (pl->n == pl->cap) {
        int cap = pl->cap ? 2 * pl->cap : 64;
        size_t *e = realloc(pl->ends, (size_t)cap * sizeof *e);
        if (!e) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        pl->ends = e;
        pl->cap = cap;
    }
    pl->ends[pl->n++] = end;
    return 0;
}

typedef struct {
    uint32_t cp;
    uint8_t cls;
    size_t off; /* byte offset of the character */
} uchar;

/* The gpt2 regex over chars c[0..m) (offsets into the text; `end` the byte just past the last char). */
static int split_gpt2(piece_list *pl, const uchar *c, size_t m, size_t end)
{
#define OFF(i) ((i) < m ? c[i].off : end)
    size_t i = 0;
    int rc;
    while (i < m) {
        size_t j;
        if (c[i].cp == '\'' && i + 1 < m &&
            (c[i + 1].cp == 's' || c[i + 1].cp == 't' || c[i + 1].cp == 'm' || c[i + 1].cp == 'd')) {
            j = i + 2;
        } else if (c[i].cp == '\'' && i + 2 < m &&
                   ((c[i + 1].cp == 'r' && c[i + 2].cp == 'e') || (c[i + 1].cp == 'v' && c[i + 2].cp == 'e') ||
                    (c[i + 1].cp == 'l' && c[i + 2].cp == 'l'))) {
            j = i + 3;
        } else {
            size_t p = c[i].cp == ' ' && i + 1 < m && c[i + 1].cls != ORTHROS_CC_SPACE ? i + 1 : i;
            uint8_t k = c[p].cls;
            if (k != ORTHROS_CC_SPACE) {
                /* ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: a run of one class. */
                j = p + 1;
                while (j < m && c[j].cls == k) j++;
            } else {
                /* `\s+(?!\S)` leaves the last space of a run before a non-space to the next piece; `\s+` else. */
                j = i + 1;
                while (j < m && c[j].cls == ORTHROS_CC_SPACE) j++;
                if (j < m && j - i >= 2) j--;
            }
        }
        if ((rc = piece_push(pl, OFF(j)))) return rc;
        i = j;
    }
#undef OFF
    return 0;
}

static int split_text(piece_list *pl, int scheme, const char *text, size_t len, uchar *buf)
{
    size_t m = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int l = utf8_next((const uint8_t *)text + i, len - i, &cp);
        if (l) buf[m] = (uchar){cp, (uint8_t)orthros_unicode_class(cp), i};
        else buf[m] = (uchar){0xfffd, ORTHROS_CC_OTHER, i}, l = 1;
        m++;
        i += (size_t)l;
    }
    if (scheme == PRE_GPT2) return split_gpt2(pl, buf, m, len);
    /* smollm: every number character is a piece of its own; the stretches between split as gpt2. */
    size_t s = 0;
    int rc;
    for (size_t i = 0; i <= m; i++) {
        if (i < m && buf[i].cls != ORTHROS_CC_NUMBER &&
            !(buf[i].cp >= 0x10000 &&
              in_ranges(buf[i].cp, orthros_unicode_digits_extra, orthros_unicode_digits_extra_count)))
            continue;
        if (i > s && (rc = split_gpt2(pl, buf + s, i - s, i < m ? buf[i].off : len))) return rc;
        if (i < m && (rc = piece_push(pl, i + 1 < m ? buf[i + 1].off : len))) return rc;
        s = i + 1;
    }
    return 0;
}

static int scheme_of(const char *name)
{
    if (!strcmp(name, "gpt2")) return PRE_GPT2;
    if (!strcmp(name, "smollm")) return PRE_SMOLLM;
    return -1;
}

int orthros_pretokenize(const char *scheme, const char *text, size_t len, size_t **ends, int *n)
{
    int s = scheme_of(scheme);
    *ends = NULL;
    *n = 0;
    if (s < 0) return orthros_error(ORTHROS_EINVAL, "unknown pre-tokenizer \"%s\" (gpt2, smollm)", scheme);
    uchar *buf = malloc((len + 1) * sizeof *buf);
    if (!buf) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    piece_list pl = {0};
    int rc = split_text(&pl, s, text, len, buf);
    free(buf);
    if (rc) {
        free(pl.ends);
        return rc;
    }
    *ends = pl.ends;
    *n = pl.n;
    return 0;
}

/* ---- BPE ---- */

typedef struct {
    uint32_t rank;
    int32_t new_id;
    int pos;
} merge_item;

typedef struct {
    int32_t *id;
    int *prev, *next;
    merge_item *heap;
    size_t cap;
} bpe_work;

static int before(const merge_item *a, const merge_item *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(merge_item *h, int *n, merge_item x)
{
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!before(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static merge_item heap_pop(merge_item *h, int *n)
{
    merge_item top = h[0], x = h[--(*n)];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, s = i;
        const merge_item *best = &x;
        if (l < *n && before(&h[l], best)) s = l, best = &h[l];
        if (r < *n && before(&h[r], best)) s = r;
        if (s == i) break;
        h[i] = h[s];
        i = s;
    }
    if (*n > 0) h[i] = x;
    return top;
}

static int work_reserve(bpe_work *w, size_t n)
{
    if (n <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < n) cap *= 2;
    int32_t *id = realloc(w->id, cap * sizeof *id);
    if (id) w->id = id;
    int *pv = realloc(w->prev, cap * sizeof *pv);
    if (pv) w->prev = pv;
    int *nx = realloc(w->next, cap * sizeof *nx);
    if (nx) w->next = nx;
    /* Each merge pushes at most two pairs, so the heap never holds more than 3 n items. */
    merge_item *hp = realloc(w->heap, 3 * cap * sizeof *hp);
    if (hp) w->heap = hp;
    if (!id || !pv || !nx || !hp) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    w->cap = cap;
    return 0;
}

typedef struct {
    int32_t *ids;
    int n, cap;
} id_list;

static int ids_push(id_list *l, int32_t id)
{
    if (l->n == l->cap) {
        if (l->cap > (1 << 29)) return orthros_error(ORTHROS_ENOMEM, "too many tokens");
        int cap = l->cap ? 2 * l->cap : 256;
        int32_t *p = realloc(l->ids, (size_t)cap * sizeof *p);
        if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        l->ids = p;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
    return 0;
}

static int bpe_piece(const orthros_tokenizer *t, bpe_work *w, id_list *out, const uint8_t *s, size_t n)
{
    int rc;
    if (t->ignore_merges) {
        int32_t whole = vocab_find(t, (const char *)s, n);
        if (whole >= 0) return ids_push(out, whole);
    }
    if ((rc = work_reserve(w, n))) return rc;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        /* A byte without a token becomes the BPE model's unk, or is dropped when it has none (as HF's BPE does:
         * SmolLM2's vocabulary has no token for 0x04, 0xc0, 0xff, ..., and both HF tokenizers and transformers'
         * GGUF tokenizer drop those bytes). */
        int32_t id = t->byte_id[s[i]] >= 0 ? t->byte_id[s[i]] : t->bpe_unk;
        if (id < 0) continue;
        w->id[m] = id;
        w->prev[m] = m - 1;
        w->next[m] = m + 1;
        m++;
    }
    if (m == 0) return 0;
    w->next[m - 1] = -1;
    int hn = 0;
    for (int i = 0; i + 1 < m; i++) {
        merge_item it = {0, 0, i};
        if (merge_find(t, w->id[i], w->id[i + 1], &it.rank, &it.new_id)) heap_push(w->heap, &hn, it);
    }
    while (hn > 0) {
        merge_item top = heap_pop(w->heap, &hn);
        int p = top.pos, q = w->next[p];
        if (w->id[p] < 0 || q < 0) continue; /* merged away, or now the last symbol */
        uint32_t rank;
        int32_t nid;
        if (!merge_find(t, w->id[p], w->id[q], &rank, &nid) || nid != top.new_id) continue; /* stale */
        w->id[p] = nid;
        w->id[q] = -1;
        w->next[p] = w->next[q];
        if (w->next[q] >= 0) w->prev[w->next[q]] = p;
        merge_item it = {0, 0, 0};
        if (w->prev[p] >= 0 && merge_find(t, w->id[w->prev[p]], nid, &it.rank, &it.new_id)) {
            it.pos = w->prev[p];
            heap_push(w->heap, &hn, it);
        }
        if (w->next[p] >= 0 && merge_find(t, nid, w->id[w->next[p]], &it.rank, &it.new_id)) {
            it.pos = p;
            heap_push(w->heap, &hn, it);
        }
    }
    for (int i = 0; i >= 0; i = w->next[i])
        if ((rc = ids_push(out, w->id[i]))) return rc;
    return 0;
}

/* Encodes text that holds no added token. */
static int encode_plain(const orthros_tokenizer *t, bpe_work *w, piece_list *pl, uchar **cbuf, size_t *ccap,
                        id_list *out, const char *text, size_t len)
{
    int rc;
    if (len == 0) return 0;
    if (len + 1 > *ccap || !*cbuf) {
        if (len > SIZE_MAX / sizeof **cbuf - 1)
            return orthros_error(ORTHROS_ENOMEM, "a text of %zu bytes is too long to encode", len);
        uchar *b = realloc(*cbuf, (len + 1) * sizeof *b);
        if (!b) return orthros_error(ORTHROS_ENOMEM, "out of memory");
        *cbuf = b;
        *ccap = len + 1;
    }
    pl->n = 0;
    if ((rc = split_text(pl, t->pre, text, len, *cbuf))) return rc;
    size_t start = 0;
    for (int i = 0; i < pl->n; i++) {
        if ((rc = bpe_piece(t, w, out, (const uint8_t *)text + start, pl->ends[i] - start))) return rc;
        start = pl->ends[i];
    }
    return 0;
}

int orthros_tokenizer_encode(const orthros_tokenizer *t, const char *text, size_t len, int flags, int32_t **ids, int *n)
{
    id_list out = {0};
    bpe_work w = {0};
    piece_list pl = {0};
    uchar *cbuf = NULL;
    added_match *matches = NULL;
    size_t ccap = 0;
    int rc = 0;
    *ids = NULL;
    *n = 0;
    if (len > (size_t)1 << 31) return orthros_error(ORTHROS_ERANGE, "text of %zu bytes is too long to tokenize", len);
    if (flags & ORTHROS_TOK_ADD_SPECIAL)
        for (int i = 0; i < t->n_prefix; i++)
            if ((rc = ids_push(&out, t->prefix[i]))) goto fail;
    size_t start = 0, nm = 0;
    if (t->n_added > 0 && !(flags & ORTHROS_TOK_SPLIT_SPECIAL) && (rc = matcher_scan(&t->am, text, len, &matches, &nm)))
        goto fail;
    /* Leftmost-longest: the matches in increasing position, each one inside an earlier match skipped. */
    while (nm > 0) {
        const added_match *mt = &matches[--nm];
        if (mt->pos < start) continue;
        const added_token *a = &t->added[mt->k];
        if ((rc = encode_plain(t, &w, &pl, &cbuf, &ccap, &out, text + start, mt->pos - start))) goto fail;
        if ((rc = ids_push(&out, a->id))) goto fail;
        start = mt->pos + a->len;
    }
    if ((rc = encode_plain(t, &w, &pl, &cbuf, &ccap, &out, text + start, len - start))) goto fail;
    if (flags & ORTHROS_TOK_ADD_SPECIAL)
        for (int k = 0; k < t->n_suffix; k++)
            if ((rc = ids_push(&out, t->suffix[k]))) goto fail;
    *ids = out.ids;
    *n = out.n;
    out.ids = NULL;
fail:
    free(out.ids);
    free(w.id);
    free(w.prev);
    free(w.next);
    free(w.heap);
    free(pl.ends);
    free(cbuf);
    free(matches);
    return rc;
}

int orthros_tokenizer_decode(const orthros_tokenizer *t, const int32_t *ids, int n, int flags, char **text, size_t *len)
{
    size_t total = 0;
    *text = NULL;
    if (len) *len = 0;
    if (n < 0) return orthros_error(ORTHROS_EINVAL, "negative token count");
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return orthros_error(ORTHROS_ERANGE, "token id %d at position %d is outside the vocabulary [0, %d)", ids[i], i,
                                 t->n_vocab);
        total += t->len[ids[i]];
    }
    /* Lossy output may grow: each invalid byte becomes 3 (U+FFFD). */
    size_t cap = (flags & ORTHROS_TOK_LOSSY) ? 3 * total + 1 : total + 1;
    char *raw = malloc(total + 1), *out = malloc(cap);
    if (!raw || !out) {
        free(raw);
        free(out);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if ((flags & ORTHROS_TOK_SKIP_SPECIAL) && (t->flags[ids[i]] & TF_SPECIAL)) continue;
        memcpy(raw + o, t->arena + t->off[ids[i]], t->len[ids[i]]);
        o += t->len[ids[i]];
    }
    if (!(flags & ORTHROS_TOK_LOSSY)) {
        memcpy(out, raw, o);
    } else {
        size_t r = 0, w = 0;
        while (r < o) {
            uint32_t cp;
            int l = utf8_next((const uint8_t *)raw + r, o - r, &cp);
            if (l) {
                memcpy(out + w, raw + r, (size_t)l);
                w += (size_t)l;
                r += (size_t)l;
            } else {
                memcpy(out + w, "\xef\xbf\xbd", 3);
                w += 3;
                r += (size_t)utf8_bad_len((const uint8_t *)raw + r, o - r);
            }
        }
        o = w;
    }
    out[o] = '\0';
    free(raw);
    *text = out;
    if (len) *len = o;
    return 0;
}

int orthros_tokenizer_vocab_size(const orthros_tokenizer *t) { return t->n_vocab; }
int32_t orthros_tokenizer_bos(const orthros_tokenizer *t) { return t->bos; }
int32_t orthros_tokenizer_eos(const orthros_tokenizer *t) { return t->eos; }
int32_t orthros_tokenizer_unk(const orthros_tokenizer *t) { return t->unk; }
int32_t orthros_tokenizer_pad(const orthros_tokenizer *t) { return t->pad; }
const char *orthros_tokenizer_chat_template(const orthros_tokenizer *t) { return t->chat_template; }
const char *orthros_tokenizer_pre(const orthros_tokenizer *t) { return t->pre == PRE_SMOLLM ? "smollm" : "gpt2"; }

int orthros_tokenizer_is_special(const orthros_tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->n_vocab && (t->flags[id] & TF_SPECIAL);
}

const char *orthros_tokenizer_token_bytes(const orthros_tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab) return NULL;
    if (len) *len = t->len[id];
    return t->arena + t->off[id];
}

int32_t orthros_tokenizer_token_id(const orthros_tokenizer *t, const char *bytes, size_t len)
{
    int32_t k = matcher_exact(&t->am, bytes, len);
    return k >= 0 ? t->added[k].id : vocab_find(t, bytes, len);
}

/* ---- from GGUF metadata ---- */

static int gguf_special_id(const orthros_gguf *g, const char *key, const orthros_tokenizer *t, int32_t *out)
{
    int64_t v = -1;
    int rc = orthros_gguf_get_int(g, key, &v, 0, 0, INT32_MAX);
    if (!rc && v >= t->n_vocab)
        rc = orthros_error(ORTHROS_EFORMAT, "metadata %s = %lld is outside the vocabulary of %d", key, (long long)v, t->n_vocab);
    if (!rc) *out = (int32_t)v;
    return rc;
}

int orthros_tokenizer_from_gguf(orthros_tokenizer **out, const orthros_gguf *g)
{
    int rc;
    orthros_tokenizer *t = NULL;
    orthros_gguf_str model, pre, tmpl;
    *out = NULL;
    if ((rc = orthros_gguf_get_str(g, "tokenizer.ggml.model", &model))) return rc;
    if (!model.p) return orthros_error(ORTHROS_EFORMAT, "metadata tokenizer.ggml.model is missing (the file has no tokenizer)");
    if (model.len != 4 || memcmp(model.p, "gpt2", 4))
        return orthros_error(ORTHROS_EUNSUPPORTED, "tokenizer.ggml.model \"%.*s\" is not supported (gpt2: byte-level BPE)",
                             (int)(model.len > 64 ? 64 : model.len), model.p);
    if ((rc = orthros_gguf_get_str(g, "tokenizer.ggml.pre", &pre))) return rc;
    int scheme = PRE_GPT2;
    if (pre.p) {
        char name[32] = "";
        if (pre.len < sizeof name) memcpy(name, pre.p, pre.len);
        if ((scheme = scheme_of(name)) < 0)
            return orthros_error(ORTHROS_EUNSUPPORTED, "tokenizer.ggml.pre \"%.*s\" is not supported (gpt2, smollm)",
                                 (int)(pre.len > 64 ? 64 : pre.len), pre.p);
    }
    const orthros_gguf_kv *toks = orthros_gguf_find(g, "tokenizer.ggml.tokens");
    const orthros_gguf_kv *types = orthros_gguf_find(g, "tokenizer.ggml.token_type");
    const orthros_gguf_kv *merges = orthros_gguf_find(g, "tokenizer.ggml.merges");
    if (!toks || toks->type != ORTHROS_GGUF_ARRAY || toks->elem_type != ORTHROS_GGUF_STRING)
        return orthros_error(ORTHROS_EFORMAT, "metadata tokenizer.ggml.tokens is missing or not an array of strings");
    if (!merges || merges->type != ORTHROS_GGUF_ARRAY || merges->elem_type != ORTHROS_GGUF_STRING)
        return orthros_error(ORTHROS_EFORMAT, "metadata tokenizer.ggml.merges is missing or not an array of strings");
    if (types && (types->type != ORTHROS_GGUF_ARRAY || types->elem_type != ORTHROS_GGUF_INT32 || types->n != toks->n))
        return orthros_error(ORTHROS_EFORMAT, "metadata tokenizer.ggml.token_type is not an int32 array of %llu entries",
                             (unsigned long long)toks->n);
    if (toks->n > MAX_VOCAB || merges->n > MAX_VOCAB)
        return orthros_error(ORTHROS_EFORMAT, "tokenizer of %llu tokens and %llu merges is too large",
                             (unsigned long long)toks->n, (unsigned long long)merges->n);
    if ((rc = tok_alloc(&t, (int)toks->n))) return rc;
    t->pre = scheme;
    for (int32_t i = 0; i < t->n_vocab; i++)
        if ((rc = tok_set(t, i, toks->strs[i].p, toks->strs[i].len))) goto fail;
    if ((rc = tok_index(t))) goto fail;
    if ((rc = merges_alloc(t, (size_t)merges->n))) goto fail;
    for (uint64_t i = 0; i < merges->n; i++) {
        const orthros_gguf_str *s = &merges->strs[i];
        const char *sp = memchr(s->p, ' ', s->len);
        if (!sp || sp == s->p || sp == s->p + s->len - 1) {
            rc = orthros_error(ORTHROS_EFORMAT, "merge %llu \"%.*s\" is not two tokens separated by a space",
                               (unsigned long long)i, (int)(s->len > 64 ? 64 : s->len), s->p);
            goto fail;
        }
        if ((rc = merge_add(t, (uint32_t)i, s->p, (size_t)(sp - s->p), sp + 1, s->len - (size_t)(sp - s->p) - 1))) goto fail;
    }
    /* Control tokens (type 3) are special, user-defined ones (4) plain added tokens; both match whole. */
    for (int32_t i = 0; types && i < t->n_vocab; i++) {
        int32_t ty = (int32_t)((uint32_t)types->data[4 * i] | (uint32_t)types->data[4 * i + 1] << 8 |
                               (uint32_t)types->data[4 * i + 2] << 16 | (uint32_t)types->data[4 * i + 3] << 24);
        if ((ty == 3 || ty == 4) && toks->strs[i].len > 0 &&
            (rc = added_add(t, toks->strs[i].p, toks->strs[i].len, i, ty == 3)))
            goto fail;
    }
    if ((rc = gguf_special_id(g, "tokenizer.ggml.bos_token_id", t, &t->bos)) ||
        (rc = gguf_special_id(g, "tokenizer.ggml.eos_token_id", t, &t->eos)) ||
        (rc = gguf_special_id(g, "tokenizer.ggml.unknown_token_id", t, &t->unk)) ||
        (rc = gguf_special_id(g, "tokenizer.ggml.padding_token_id", t, &t->pad)))
        goto fail;
    int add_bos = 0, add_eos = 0;
    if ((rc = orthros_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos)) ||
        (rc = orthros_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &add_eos)))
        goto fail;
    if (add_bos && t->bos >= 0) t->prefix[t->n_prefix++] = t->bos;
    if (add_eos && t->eos >= 0) t->suffix[t->n_suffix++] = t->eos;
    if ((rc = orthros_gguf_get_str(g, "tokenizer.chat_template", &tmpl))) goto fail;
    if (tmpl.p && !(t->chat_template = strndup(tmpl.p, tmpl.len))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = tok_finish(t))) goto fail;
    *out = t;
    return 0;
fail:
    orthros_tokenizer_free(t);
    return rc;
}

/* ---- from tokenizer.json ---- */

static int json_is_false_or_absent(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return !it || cJSON_IsFalse(it) || cJSON_IsNull(it);
}

/* ByteLevel with add_prefix_space false and use_regex true (defaults as HF: add_prefix_space true, use_regex true). */
static int json_bytelevel_ok(const cJSON *pt)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(pt, "type");
    if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "ByteLevel")) return 0;
    const cJSON *aps = cJSON_GetObjectItemCaseSensitive(pt, "add_prefix_space");
    const cJSON *ur = cJSON_GetObjectItemCaseSensitive(pt, "use_regex");
    return cJSON_IsFalse(aps) && (!ur || cJSON_IsTrue(ur));
}

static int json_pre(const cJSON *pt, int *scheme)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(pt, "type");
    if (json_bytelevel_ok(pt)) {
        *scheme = PRE_GPT2;
        return 0;
    }
    if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
        const cJSON *a = cJSON_GetArrayItem(list, 0), *b = cJSON_GetArrayItem(list, 1);
        const cJSON *aty = a ? cJSON_GetObjectItemCaseSensitive(a, "type") : NULL;
        if (cJSON_GetArraySize(list) == 2 && cJSON_IsString(aty) && !strcmp(aty->valuestring, "Digits") &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "individual_digits")) && json_bytelevel_ok(b)) {
            *scheme = PRE_SMOLLM;
            return 0;
        }
    }
    char *s = cJSON_PrintUnformatted(pt);
    int rc = orthros_error(ORTHROS_EUNSUPPORTED,
                           "pre_tokenizer %.160s is not supported (ByteLevel without prefix space, or Digits(individual) "
                           "then ByteLevel)", s ? s : "?");
    free(s);
    return rc;
}

/* Prefix / suffix ids of a post_processor: TemplateProcessing's "single" template (within a Sequence too). */
static int json_post(orthros_tokenizer *t, const cJSON *pp)
{
    if (!pp || cJSON_IsNull(pp)) return 0;
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(pp, "type");
    if (!cJSON_IsString(ty)) return orthros_error(ORTHROS_EFORMAT, "post_processor has no type");
    if (!strcmp(ty->valuestring, "ByteLevel")) return 0;
    if (!strcmp(ty->valuestring, "Sequence")) {
        const cJSON *e;
        int rc;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(pp, "processors")) if ((rc = json_post(t, e))) return rc;
        return 0;
    }
    if (strcmp(ty->valuestring, "TemplateProcessing"))
        return orthros_error(ORTHROS_EUNSUPPORTED, "post_processor %s is not supported (ByteLevel, TemplateProcessing)",
                             ty->valuestring);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
    const cJSON *e;
    int seen_seq = 0;
    cJSON_ArrayForEach(e, single)
    {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(e, "Sequence")) {
            seen_seq = 1;
            continue;
        }
        const cJSON *name = st ? cJSON_GetObjectItemCaseSensitive(st, "id") : NULL;
        const cJSON *entry = cJSON_IsString(name) ? cJSON_GetObjectItemCaseSensitive(specials, name->valuestring) : NULL;
        const cJSON *ids = entry ? cJSON_GetObjectItemCaseSensitive(entry, "ids") : NULL;
        if (!cJSON_IsArray(ids)) return orthros_error(ORTHROS_EFORMAT, "post_processor names a special token it does not define");
        const cJSON *idv;
        cJSON_ArrayForEach(idv, ids)
        {
            int *n = seen_seq ? &t->n_suffix : &t->n_prefix;
            int32_t *dst = seen_seq ? t->suffix : t->prefix;
            if (!cJSON_IsNumber(idv) || idv->valuedouble < 0 || idv->valuedouble >= t->n_vocab || *n >= MAX_AFFIX)
                return orthros_error(ORTHROS_EFORMAT, "post_processor special token id is outside the vocabulary");
            dst[(*n)++] = (int32_t)idv->valuedouble;
        }
    }
    return 0;
}

int orthros_tokenizer_from_json(orthros_tokenizer **out, const char *json_text)
{
    int rc = 0;
    orthros_tokenizer *t = NULL;
    *out = NULL;
    cJSON *root = cJSON_Parse(json_text);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return orthros_error(ORTHROS_EFORMAT, "not valid JSON");
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *mty = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *e;
    int scheme = PRE_GPT2;
    if (!cJSON_IsObject(model) || (mty && (!cJSON_IsString(mty) || strcmp(mty->valuestring, "BPE")))) {
        rc = orthros_error(ORTHROS_EUNSUPPORTED, "model.type %s is not supported (BPE)",
                           cJSON_IsString(mty) ? mty->valuestring : "(missing)");
        goto fail;
    }
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        rc = orthros_error(ORTHROS_EFORMAT, "model has no vocab object or merges array");
        goto fail;
    }
    if (norm && !cJSON_IsNull(norm)) {
        rc = orthros_error(ORTHROS_EUNSUPPORTED, "a normalizer is not supported");
        goto fail;
    }
    const cJSON *dty = dec ? cJSON_GetObjectItemCaseSensitive(dec, "type") : NULL;
    if (!cJSON_IsString(dty) || strcmp(dty->valuestring, "ByteLevel")) {
        rc = orthros_error(ORTHROS_EUNSUPPORTED, "decoder %s is not supported (ByteLevel)",
                           cJSON_IsString(dty) ? dty->valuestring : "(none)");
        goto fail;
    }
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (!json_is_false_or_absent(model, "byte_fallback") || (dropout && !cJSON_IsNull(dropout))) {
        rc = orthros_error(ORTHROS_EUNSUPPORTED, "BPE with byte_fallback or dropout is not supported");
        goto fail;
    }
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(model, affixes[i]);
        if (a && !cJSON_IsNull(a) && !(cJSON_IsString(a) && !a->valuestring[0])) {
            rc = orthros_error(ORTHROS_EUNSUPPORTED, "BPE with a %s is not supported", affixes[i]);
            goto fail;
        }
    }
    if ((rc = json_pre(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), &scheme))) goto fail;
    /* The vocabulary spans every id named by vocab or added_tokens. */
    double max_id = -1;
    cJSON_ArrayForEach(e, vocab)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= MAX_VOCAB || e->valuedouble != (int)e->valuedouble) {
            rc = orthros_error(ORTHROS_EFORMAT, "vocab entry \"%.64s\" has no valid id", e->string);
            goto fail;
        }
        if (e->valuedouble > max_id) max_id = e->valuedouble;
    }
    cJSON_ArrayForEach(e, added)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= MAX_VOCAB || !cJSON_IsString(content)) {
            rc = orthros_error(ORTHROS_EFORMAT, "added_tokens entry without a valid id and content");
            goto fail;
        }
        static const char *const unsupported[] = {"lstrip", "rstrip", "single_word"};
        for (int i = 0; i < 3; i++)
            if (!json_is_false_or_absent(e, unsupported[i])) {
                rc = orthros_error(ORTHROS_EUNSUPPORTED, "added token %.64s uses %s, which is not supported",
                                   content->valuestring, unsupported[i]);
                goto fail;
            }
        if (id->valuedouble > max_id) max_id = id->valuedouble;
    }
    /* The id space is sized by the largest id: a few entries naming an id of millions would make a tiny file cost
     * hundreds of megabytes and seconds. Gaps are allowed (a vocabulary padded to a multiple), within reason. */
    double entries = (double)cJSON_GetArraySize(vocab) + (double)cJSON_GetArraySize(added);
    if (max_id + 1 > 2 * entries + 1024) {
        rc = orthros_error(ORTHROS_EFORMAT, "token ids run up to %.0f for %.0f tokens: the id space is too sparse", max_id,
                           entries);
        goto fail;
    }
    if ((rc = tok_alloc(&t, (int)max_id + 1))) goto fail;
    t->pre = scheme;
    t->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
    cJSON_ArrayForEach(e, vocab) if ((rc = tok_set(t, (int32_t)e->valuedouble, e->string, strlen(e->string)))) goto fail;
    cJSON_ArrayForEach(e, added)
    {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        int32_t id = (int32_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        if ((rc = tok_set(t, id, content->valuestring, strlen(content->valuestring)))) goto fail;
    }
    if ((rc = tok_index(t))) goto fail;
    if ((rc = merges_alloc(t, (size_t)cJSON_GetArraySize(merges)))) goto fail;
    uint32_t rank = 0;
    cJSON_ArrayForEach(e, merges)
    {
        const char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        if (cJSON_IsString(e)) {
            const char *sp = strchr(e->valuestring, ' ');
            if (sp && sp != e->valuestring && sp[1]) a = e->valuestring, na = (size_t)(sp - a), b = sp + 1, nb = strlen(b);
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(cJSON_GetArrayItem(e, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
            a = cJSON_GetArrayItem(e, 0)->valuestring, b = cJSON_GetArrayItem(e, 1)->valuestring;
            na = strlen(a), nb = strlen(b);
        }
        if (!a || !na || !nb) {
            rc = orthros_error(ORTHROS_EFORMAT, "merge %u is neither \"a b\" nor [a, b]", rank);
            goto fail;
        }
        if ((rc = merge_add(t, rank++, a, na, b, nb))) goto fail;
    }
    cJSON_ArrayForEach(e, added)
    {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        int32_t id = (int32_t)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        if ((rc = added_add(t, content->valuestring, strlen(content->valuestring), id,
                            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")))))
            goto fail;
    }
    if ((rc = matcher_build(t))) goto fail;
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk)) t->unk = t->bpe_unk = orthros_tokenizer_token_id(t, unk->valuestring, strlen(unk->valuestring));
    if ((rc = json_post(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor")))) goto fail;
    if ((rc = tok_finish(t))) goto fail;
    *out = t;
    t = NULL;
fail:
    orthros_tokenizer_free(t);
    cJSON_Delete(root);
    return rc;
}

/* ---- loading by model spec ---- */

/* A tokenizer_config.json token entry: a string or {"content": string}. */
static int32_t config_token(const orthros_tokenizer *t, const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? orthros_tokenizer_token_id(t, v->valuestring, strlen(v->valuestring)) : -1;
}

static int load_json_dir(orthros_tokenizer **out, const char *dir)
{
    char path[4096];
    char *text = NULL;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return orthros_error(ORTHROS_EIO, "%s: the model has no tokenizer.json", dir);
    int rc = orthros_read_text_file(&text, path, 256u << 20);
    if (rc) return rc;
    rc = orthros_tokenizer_from_json(out, text);
    free(text);
    if (rc) return orthros_error_prefix(rc, path);
    orthros_tokenizer *t = *out;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (stat(path, &sb) == 0) {
        if ((rc = orthros_read_text_file(&text, path, 64u << 20))) goto fail;
        cJSON *cfg = cJSON_Parse(text);
        free(text);
        if (!cJSON_IsObject(cfg)) {
            cJSON_Delete(cfg);
            rc = orthros_error(ORTHROS_EFORMAT, "%s: not a JSON object", path);
            goto fail;
        }
        t->bos = config_token(t, cfg, "bos_token");
        t->eos = config_token(t, cfg, "eos_token");
        int32_t unk = config_token(t, cfg, "unk_token");
        if (unk >= 0) t->unk = unk;
        t->pad = config_token(t, cfg, "pad_token");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
        if (cJSON_IsString(ct) && !(t->chat_template = strdup(ct->valuestring))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        cJSON_Delete(cfg);
        if (rc) goto fail;
    }
    return 0;
fail:
    orthros_tokenizer_free(*out);
    *out = NULL;
    return rc;
}

int orthros_tokenizer_load(orthros_tokenizer **out, const char *spec)
{
    *out = NULL;
    if (!strncmp(spec, "preset:", 7))
        return orthros_error(ORTHROS_EUNSUPPORTED, "%s has dummy weights and no tokenizer", spec);
    struct stat sb;
    if (stat(spec, &sb) != 0) return orthros_error(ORTHROS_EIO, "%s: no such file or directory", spec);
    if (S_ISDIR(sb.st_mode)) {
        /* An adapter directory has its base's tokenizer. */
        char *base = NULL;
        int rc = orthros_adapter_dir_base(spec, &base);
        if (!rc && base) rc = orthros_tokenizer_load(out, base);
        if (rc || base) {
            free(base);
            return rc;
        }
        return load_json_dir(out, spec);
    }
    size_t n = strlen(spec);
    if (n >= 5 && !strcmp(spec + n - 5, ".json")) {
        char *text = NULL;
        int rc = orthros_read_text_file(&text, spec, 256u << 20);
        if (rc) return rc;
        rc = orthros_tokenizer_from_json(out, text);
        free(text);
        return rc ? orthros_error_prefix(rc, spec) : 0;
    }
    orthros_gguf *g = NULL;
    int rc = orthros_gguf_open(&g, spec);
    if (rc) return rc;
    rc = orthros_tokenizer_from_gguf(out, g);
    orthros_gguf_free(g);
    return rc ? orthros_error_prefix(rc, spec) : 0;
}
