/* Malformed models and arguments: each must be refused with one clear line on stderr naming the problem (and
 * the file, where there is one) and a non-zero exit, never a signal; the library must return an error and hold
 * nothing (the sanitizer build checks for leaks).
 * usage: test_bad_inputs PATH/TO/orthros */
#define _GNU_SOURCE
#include "orthros.h"
#include "testutil.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bin, *root;

/* Runs the CLI with argv and checks the outcome; `want` must appear in the single stderr line. */
static void expect_cli_error(const char *label, char *const argv[], const char *want, const char *want2)
{
    char errpath[4200];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", root);
    int st = tu_run_capture(argv, NULL, NULL, errpath);
    char *err = NULL;
    FILE *f = fopen(errpath, "r");
    size_t cap = 0;
    ssize_t len = f ? getline(&err, &cap, f) : -1;
    int extra = f && fgetc(f) != EOF;
    if (f) fclose(f);
    CHECK(st >= 0 && st < 128, "%s: killed by signal %d", label, st - 128);
    CHECK(st != 0, "%s: exit status 0", label);
    CHECK(len > 0 && !extra, "%s: expected exactly one stderr line", label);
    CHECK(len > 0 && strstr(err, want), "%s: stderr \"%s\" lacks \"%s\"", label, len > 0 ? err : "", want);
    if (want2) CHECK(len > 0 && strstr(err, want2), "%s: stderr \"%s\" lacks \"%s\"", label, len > 0 ? err : "", want2);
    printf("%-32s -> %s", label, len > 0 ? err : "(nothing)\n");
    free(err);
}

static void expect_model_error(const char *label, const char *dir, const char *want, const char *want2)
{
    char out[4200];
    snprintf(out, sizeof out, "%s/logits.out", root);
    char *argv[] = {(char *)bin, "logits", "--model", (char *)dir, "--tokens", "1,2,3", "--out", out, "--device", "cpu",
                    NULL};
    expect_cli_error(label, argv, want, want2);
    /* In-process: an error code, no model. */
    orthros_backend *be = NULL;
    orthros_model *m = (orthros_model *)1;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    orthros_backend_cpu_create(&be);
    int rc = orthros_model_load(&m, be, dir, &ao, 0);
    CHECK(rc < 0 && m == NULL, "%s: library load returned %d", label, rc);
    orthros_backend_free(be);
}

static char *subdir(const char *name)
{
    char *p = malloc(4200);
    snprintf(p, 4200, "%s/%s", root, name);
    mkdir(p, 0755);
    return p;
}

static orthros_model_config small_cfg(void)
{
    orthros_model_config c;
    orthros_preset_config(&c, "tiny");
    return c;
}

/* A directory holding a valid config and a safetensors file made of `header` and `data_len` bytes of data. */
static char *raw_case(const char *name, const char *header, uint64_t hlen, size_t data_len)
{
    char *dir = subdir(name), path[4300];
    orthros_model_config c = small_cfg();
    char *cfg = tu_config_json(&c, NULL);
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_text(path, cfg);
    free(cfg);
    unsigned char *data = calloc(data_len + 1, 1);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tu_write_raw_safetensors(path, header, hlen, data, data_len);
    free(data);
    return dir;
}

static char *valid_case(const char *name, const orthros_model_config *c)
{
    char *dir = subdir(name);
    CHECK(tu_write_checkpoint(dir, c, 3, ORTHROS_DTYPE_F32, 0) == 0, "write checkpoint %s", name);
    return dir;
}

/* A checkpoint in dtype whose tensor `tensor` holds `bits` (an F32 or BF16 NaN or infinity) at element `at`. */
static char *nonfinite_case(const char *name, orthros_dtype dtype, const char *tensor, size_t at, uint32_t bits)
{
    char *dir = subdir(name), path[4300];
    orthros_model_config c = small_cfg();
    CHECK(tu_write_checkpoint(dir, &c, 3, dtype, 0) == 0, "write checkpoint %s", name);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t len = 0;
    unsigned char *f = (unsigned char *)tu_slurp(path, &len);
    uint64_t hlen = 0;
    for (int i = 0; f && len >= 8 && i < 8; i++) hlen |= (uint64_t)f[i] << (8 * i);
    cJSON *h = f && 8 + hlen <= len ? cJSON_ParseWithLength((const char *)f + 8, (size_t)hlen) : NULL;
    const cJSON *off = cJSON_GetObjectItem(cJSON_GetObjectItem(h, tensor), "data_offsets");
    size_t esz = dtype == ORTHROS_DTYPE_F32 ? 4 : 2, pos = 8 + (size_t)hlen + (off ? (size_t)cJSON_GetArrayItem(off, 0)->valuedouble : 0) + at * esz;
    CHECK(off && pos + esz <= len, "%s: no tensor %s to change", name, tensor);
    if (off && pos + esz <= len) {
        for (size_t i = 0; i < esz; i++) f[pos + i] = (unsigned char)(bits >> (8 * i));
        FILE *o = fopen(path, "wb");
        if (o) {
            fwrite(f, 1, len, o);
            fclose(o);
        }
    }
    cJSON_Delete(h);
    free(f);
    return dir;
}

static void set_config(const char *dir, const char *text)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_text(path, text);
}


/* The tiny preset's config.json text with `extra` (",\"key\": value" pairs) appended to the top-level object. */
static char *tiny_config(const char *extra)
{
    char *t = malloc(4096);
    snprintf(t, 4096,
             "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
             "\"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 160, \"vocab_size\": 256, "
             "\"rms_norm_eps\": 1e-05, \"rope_theta\": 10000%s}",
             extra ? extra : "");
    return t;
}

/* A valid tiny checkpoint whose config.json is tiny_config(extra), or `extra` itself when it starts with '{'. */
static char *config_case(const char *name, const char *extra)
{
    orthros_model_config c = small_cfg();
    char *d = valid_case(name, &c), *t = extra && extra[0] == '{' ? strdup(extra) : tiny_config(extra);
    set_config(d, t);
    free(t);
    return d;
}

/* A valid tiny checkpoint moved to shard.safetensors and listed by an index whose text is `index`. */
static char *sharded_case(const char *name, const char *index)
{
    orthros_model_config c = small_cfg();
    char *d = valid_case(name, &c), from[4300], to[4300];
    snprintf(from, sizeof from, "%s/model.safetensors", d);
    snprintf(to, sizeof to, "%s/shard.safetensors", d);
    CHECK(rename(from, to) == 0, "rename %s", from);
    snprintf(to, sizeof to, "%s/model.safetensors.index.json", d);
    tu_write_text(to, index);
    return d;
}

/* A backend that counts the bytes allocated through it (weights are allocated through be->alloc). */
static orthros_backend counting;
static size_t counted_bytes;
static void *counting_alloc(orthros_backend *be, size_t bytes)
{
    counted_bytes += bytes;
    orthros_backend *inner = (orthros_backend *)be->impl;
    return inner->alloc(inner, bytes);
}

static void test_loader_leniency(void)
{
    char *d, path[4300];
    /* A zero-length tensor sorting between two overlapping ones hid the overlap. */
    d = raw_case("overlap0",
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                 "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                 0, 24);
    expect_model_error("overlap behind a 0-length tensor", d, "tensors a and b overlap", "model.safetensors");
    free(d);
    /* Duplicate keys: cJSON keeps both and lookups return the first. */
    d = raw_case("dupname",
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}",
                 0, 32);
    expect_model_error("duplicate tensor name", d, "key \"a\" appears twice", "model.safetensors");
    free(d);
    d = raw_case("dupfield", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"I64\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0,
                 16);
    expect_model_error("duplicate field in an entry", d, "key \"dtype\" appears twice in object \"a\"",
                       "model.safetensors");
    free(d);
    d = raw_case("escaped", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                            "\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}",
                 0, 32);
    expect_model_error("tensor name with \\u0000", d, "\\u0000", "model.safetensors");
    free(d);
    d = raw_case("alias", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                          "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}",
                 0, 32);
    expect_model_error("tensor name aliased by an escape", d, "key \"a\" appears twice", "model.safetensors");
    free(d);
    d = raw_case("trailing", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}} junk", 0, 16);
    expect_model_error("bytes after the header object", d, "bytes follow the value", "model.safetensors");
    free(d);
    {   /* A raw NUL byte inside the header (tu_write_raw_safetensors stops at a NUL, so write it here). */
        d = raw_case("rawnul", "{}", 0, 0);
        const char hdr[] = "{\"a\0b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}";
        unsigned char len8[8] = {(unsigned char)(sizeof hdr - 1)};
        snprintf(path, sizeof path, "%s/model.safetensors", d);
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(len8, 1, 8, f) == 8 && fwrite(hdr, 1, sizeof hdr - 1, f) == sizeof hdr - 1, "write");
        if (f) fclose(f);
        expect_model_error("NUL byte in the header", d, "NUL byte", "model.safetensors");
        free(d);
    }
    /* A control character in a name must not split the one-line message. */
    d = raw_case("newline", "{\"a\\nb\":{\"dtype\":\"Q7\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 16);
    expect_model_error("newline in a tensor name", d, "unknown dtype", "model.safetensors");
    free(d);

    /* config.json: `config` is appended to the tiny config's fields, or replaces them when it starts with '{'. */
    static const struct {
        const char *name, *config, *label, *want, *want2;
    } cfg_cases[] = {
        {"cfgdup", ", \"hidden_size\": 128", "config key twice", "key \"hidden_size\" appears twice", "config.json"},
        {"cfgdupnested", ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"factor\": 16}",
         "config nested key twice", "key \"factor\" appears twice in object \"rope_scaling\"", "config.json"},
        {"cfgdupor", ", \"orthros\": {\"tail\": 2, \"tail\": 3}", "orthros key twice", "key \"tail\" appears twice",
         "config.json"},
        {"cfgtrailing", "} {", "config with bytes after it", "bytes follow the value", "config.json"},
        {"bias1", ", \"attention_bias\": 1", "attention_bias 1", "\"attention_bias\" is not a boolean", "config.json"},
        {"tiestr", ", \"tie_word_embeddings\": \"yes\"", "tie_word_embeddings string",
         "\"tie_word_embeddings\" is not a boolean", "config.json"},
        {"mtype", ", \"model_type\": 5", "model_type a number", "\"model_type\" is not a string", "config.json"},
        {"ropetype", ", \"rope_scaling\": {\"rope_type\": 3}", "rope_type a number", "\"rope_type\" is not a string",
         "config.json"},
        {"eosbig", ", \"eos_token_id\": 1e30", "eos_token_id out of range", "eos_token_id", "config.json"},
        {"eosstr", ", \"eos_token_id\": [2, \"x\"]", "eos_token_id list with a string", "eos_token_id", "config.json"},
        {"heads45",
         "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4.5, \"intermediate_size\": 160, "
         "\"vocab_size\": 256}",
         "4.5 heads", "\"num_attention_heads\" is not an integer", "config.json"},
        {"vocabbig",
         "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 160, "
         "\"vocab_size\": 4294967296}",
         "vocab beyond int", "\"vocab_size\" = 4294967296 is outside", "config.json"},
        {"epszero", ", \"orthros\": {\"eps\": 0}", "orthros eps 0", "eps", "config.json"},
        {"swawindows", ", \"orthros\": {\"architecture\": [\"swa:3\", \"swa:5\"]}", "two swa windows",
         "different windows", "config.json"},
        {"missingnamed",
         "{\"hidden_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"intermediate_size\": 160, \"vocab_size\": 256}",
         "missing tensor names the file", "model.safetensors: missing tensor model.layers.2.", NULL},
    };
    for (size_t i = 0; i < sizeof cfg_cases / sizeof *cfg_cases; i++) {
        d = config_case(cfg_cases[i].name, cfg_cases[i].config);
        expect_model_error(cfg_cases[i].label, d, cfg_cases[i].want, cfg_cases[i].want2);
        free(d);
    }

    /* config.json a directory (a FIFO would hang a plain open; both are refused as not regular files). */
    d = config_case("cfgdir", NULL);
    snprintf(path, sizeof path, "%s/config.json", d);
    CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0, "make %s a directory", path);
    expect_model_error("config.json a directory", d, "config.json: not a regular file", NULL);
    free(d);

    /* model.safetensors.index.json */
    d = sharded_case("idxdup", "{\"weight_map\": {\"model.norm.weight\": \"shard.safetensors\", "
                               "\"model.norm.weight\": \"shard.safetensors\"}}");
    expect_model_error("index key twice", d, "key \"model.norm.weight\" appears twice",
                       "model.safetensors.index.json");
    free(d);
    d = sharded_case("idxdupmeta", "{\"metadata\": {\"total_size\": 1, \"total_size\": 2}, "
                                   "\"weight_map\": {\"model.norm.weight\": \"shard.safetensors\"}}");
    expect_model_error("index nested key twice", d, "key \"total_size\" appears twice",
                       "model.safetensors.index.json");
    free(d);
    d = sharded_case("idxdot", "{\"weight_map\": {\"model.norm.weight\": \"..\"}}");
    expect_model_error("index names ..", d, "is not a file name", "model.safetensors.index.json");
    free(d);

    /* Shapes are checked before any weight is allocated: a 60-byte config must not claim memory. */
    d = config_case("claim", "{\"hidden_size\": 8192, \"num_hidden_layers\": 2, \"num_attention_heads\": 64, "
                             "\"num_key_value_heads\": 8, \"intermediate_size\": 16384, \"vocab_size\": 16384}");
    orthros_backend *cpu = NULL;
    orthros_backend_cpu_create(&cpu);
    counting = *cpu;
    counting.impl = cpu;
    counting.alloc = counting_alloc;
    counting.destroy = NULL;
    counted_bytes = 0;
    orthros_model *m = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    int rc = orthros_model_load(&m, &counting, d, &ao, 0);
    CHECK(rc == ORTHROS_EFORMAT && strstr(orthros_last_error(), "config.json implies"),
          "a config that disagrees with the checkpoint: got %d \"%s\"", rc, orthros_last_error());
    CHECK(counted_bytes == 0, "%zu bytes were allocated before the shapes were checked", counted_bytes);
    printf("%-32s -> %zu bytes allocated before the refusal\n", "config claiming 5 GiB", counted_bytes);
    orthros_backend_free(cpu);
    free(d);
}

/* Engine-side option values: the sentinel ORTHROS_UNSET means "unset"; any other bad value is refused. */
static void test_arch_opts(void)
{
    orthros_model_config c = small_cfg();
    orthros_arch a;
    orthros_arch_opts o;
    struct {
        const char *label, *want;
        int tail, window, hybrid_every, feature_dim, fmap;
        double eps;
    } cases[] = {
        {"tail -5", "tail must be at least 1 (got -5)", -5, -1, -1, -1, -1, -1.0},
        {"window -2", "window must be at least 1 (got -2)", -1, -2, -1, -1, -1, -1.0},
        {"hybrid-every -3", "hybrid-every must be at least 1 (got -3)", -1, -1, -3, -1, -1, -1.0},
        {"feature dim -7", "feature dim must be in [1, 1024] (got -7)", -1, -1, -1, -7, -1, -1.0},
        {"feature map 7", "feature map 7", -1, -1, -1, -1, 7, -1.0},
        {"eps NaN", "eps must be", -1, -1, -1, -1, -1, NAN},
        {"eps -0.5", "eps must be", -1, -1, -1, -1, -1, -0.5},
        {"eps inf", "eps must be", -1, -1, -1, -1, -1, INFINITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        orthros_arch_opts_default(&o);
        o.arch = "orthros";
        o.tail = cases[i].tail, o.window = cases[i].window, o.hybrid_every = cases[i].hybrid_every;
        o.feature_dim = cases[i].feature_dim, o.fmap = cases[i].fmap, o.eps = cases[i].eps;
        int rc = orthros_arch_resolve(&a, &c, &o, NULL);
        CHECK(rc == ORTHROS_EINVAL && strstr(orthros_last_error(), cases[i].want), "%s: got %d \"%s\"", cases[i].label,
              rc, rc ? orthros_last_error() : "accepted");
        printf("%-32s -> %s\n", cases[i].label, rc ? orthros_last_error() : "accepted");
    }
    orthros_arch_opts_default(&o);
    o.fmap_rope = 2;
    CHECK(orthros_arch_resolve(&a, &c, &o, NULL) == ORTHROS_EINVAL && strstr(orthros_last_error(), "placement 2"),
          "feature-map placement 2 accepted");
    orthros_arch_opts_default(&o);
    o.local_window = -3;
    CHECK(orthros_arch_resolve(&a, &c, &o, NULL) == ORTHROS_EINVAL && strstr(orthros_last_error(), "got -3"),
          "local window -3 accepted");
    orthros_arch_opts_default(&o);
    CHECK(orthros_arch_resolve(&a, &c, &o, "{\"feature_map_rope\": \"after\", \"local_window\": 64}") == 0 &&
              a.fmap_rope == ORTHROS_FMAP_ROPE_AFTER && a.local_window == 64,
          "the orthros object's feature_map_rope and local_window: %s", orthros_last_error());
    o.fmap_rope = ORTHROS_FMAP_ROPE_BEFORE;
    o.local_window = 0;
    CHECK(orthros_arch_resolve(&a, &c, &o, "{\"feature_map_rope\": \"after\", \"local_window\": 64}") == 0 &&
              a.fmap_rope == ORTHROS_FMAP_ROPE_BEFORE && a.local_window == 0,
          "options override the orthros object's feature_map_rope and local_window");
    orthros_arch_opts_default(&o);
    CHECK(o.tail == ORTHROS_UNSET && o.eps == ORTHROS_UNSET, "defaults are ORTHROS_UNSET");
    CHECK(orthros_arch_resolve(&a, &c, &o, NULL) == 0 && a.tail == 1 && a.eps == 1e-6f, "unset options take the defaults");
}

/* A tail longer than the prompt would run every position with full attention: a transformer labelled orthros. */
static void test_tail_longer_than_prompt(const char *good)
{
    orthros_backend *be = NULL;
    orthros_backend_cpu_create(&be);
    orthros_arch_opts o;
    orthros_arch_opts_default(&o);
    o.arch = "orthros";
    o.tail = 5;
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    int32_t tok[5] = {1, 2, 3, 4, 5}, next;
    int rc = orthros_model_load(&m, be, good, &o, 0);
    if (!rc) rc = orthros_session_init(&s, m, 1, 16, 0);
    CHECK(rc == 0, "load: %s", orthros_last_error());
    if (!rc) {
        rc = orthros_prefill(s, 0, tok, 3, NULL, &next);
        CHECK(rc == ORTHROS_EINVAL && strstr(orthros_last_error(), "tail of 5") &&
                  strstr(orthros_last_error(), "prompt of 3"),
              "tail 5 over a 3-token prompt: got %d \"%s\"", rc, rc ? orthros_last_error() : "accepted");
        printf("%-32s -> %s\n", "tail 5, prompt 3 (library)", rc ? orthros_last_error() : "accepted");
        /* Rewinding to position 1 fails only while the sequence is still at 0. */
        CHECK(orthros_session_rewind(s, 1) != 0, "a refused prefill must not advance the sequence");
        CHECK(orthros_prefill(s, 0, tok, 5, NULL, &next) == 0, "tail == prompt length runs: %s", orthros_last_error());
    }
    orthros_session_free(s);
    orthros_model_free(m);
    /* A schedule without orthros layers has no tail to speak of. */
    o.arch = "transformer";
    m = NULL, s = NULL;
    rc = orthros_model_load(&m, be, good, &o, 0);
    if (!rc) rc = orthros_session_init(&s, m, 1, 16, 0);
    if (!rc) rc = orthros_prefill(s, 0, tok, 3, NULL, &next);
    CHECK(rc == 0, "transformer with a tail option: %s", orthros_last_error());
    orthros_session_free(s);
    orthros_model_free(m);
    orthros_backend_free(be);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_bad_inputs PATH/TO/orthros\n");
        return 2;
    }
    bin = argv[1];
    root = tu_tempdir();
    orthros_model_config c = small_cfg();
    char *d, path[4300];

    /* safetensors files */
    d = valid_case("truncated", &c);
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    struct stat sb;
    stat(path, &sb);
    CHECK(truncate(path, sb.st_size - 100) == 0, "truncate");
    expect_model_error("truncated safetensors", d, "past the end of the data", "model.safetensors");
    free(d);
    d = raw_case("empty", "", 0, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    tu_write_text(path, "");
    expect_model_error("empty safetensors", d, "file is empty", "model.safetensors");
    free(d);
    /* A FIFO in place of a weight file: refused as not a regular file, never a blocked open (a .gguf one hung the
     * loader before it opened with O_NONBLOCK). The child and this process are bounded so that a hang fails. */
    tu_child_alarm = 60;
    alarm(120);
    d = raw_case("fifost", "", 0, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    CHECK(unlink(path) == 0 && mkfifo(path, 0644) == 0, "make %s a FIFO", path);
    expect_model_error("safetensors a FIFO", d, "model.safetensors: not a regular file", NULL);
    free(d);
    snprintf(path, sizeof path, "%s/fifo.gguf", root);
    CHECK(mkfifo(path, 0644) == 0, "make %s a FIFO", path);
    expect_model_error("gguf a FIFO", path, "fifo.gguf: not a regular file", NULL);
    snprintf(path, sizeof path, "%s/empty.gguf", root);
    tu_write_text(path, "");
    expect_model_error("gguf empty", path, "empty.gguf: file is empty", NULL);
    alarm(0);
    tu_child_alarm = 0;
    d = raw_case("short", "", 0, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    tu_write_text(path, "abc");
    expect_model_error("3-byte safetensors", d, "shorter than the 8-byte header length", "model.safetensors");
    free(d);
    d = raw_case("hlen", "{}", 1ull << 40, 16);
    expect_model_error("header length beyond the file", d, "header length", "runs past the end of the file");
    free(d);
    d = raw_case("notjson", "this is not json", 0, 16);
    expect_model_error("header not JSON", d, "header: not valid JSON", "model.safetensors");
    free(d);
    d = raw_case("pastend", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 8);
    expect_model_error("offsets past the end", d, "past the end of the data", "model.safetensors");
    free(d);
    d = raw_case("reversed", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}", 0, 16);
    expect_model_error("offsets reversed", d, "reversed", NULL);
    free(d);
    d = raw_case("overlap",
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
                 0, 24);
    expect_model_error("overlapping offsets", d, "overlap", NULL);
    free(d);
    d = raw_case("dtype", "{\"a\":{\"dtype\":\"Q7\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 16);
    expect_model_error("unknown dtype", d, "unknown dtype \"Q7\"", NULL);
    free(d);
    d = raw_case("dtype64", "{\"a\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 0, 16);
    expect_model_error("unsupported dtype", d, "dtype I64 is not supported", NULL);
    free(d);
    d = raw_case("size", "{\"a\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[0,16]}}", 0, 16);
    expect_model_error("byte count disagrees with shape", d, "holds 16 bytes", NULL);
    free(d);

    /* checkpoint against config */
    d = valid_case("shape", &c);
    orthros_model_config c2 = c;
    c2.ffn = c.ffn + 8;
    char *t = tu_config_json(&c2, NULL);
    set_config(d, t);
    free(t);
    expect_model_error("shape disagrees with config", d, "config.json implies", "gate_proj");
    free(d);
    d = valid_case("missing", &c);
    c2 = c;
    c2.n_layers = 3;
    t = tu_config_json(&c2, NULL);
    set_config(d, t);
    free(t);
    expect_model_error("missing tensor", d, "missing tensor model.layers.2.", NULL);
    free(d);
    /* Non-finite weights: every logit was NaN (generate picked token 0, exit 0); refused naming the tensor. */
    d = nonfinite_case("nan-f32", ORTHROS_DTYPE_F32, "model.layers.1.mlp.up_proj.weight", 5, 0x7fc00000u);
    expect_model_error("a NaN weight (F32)", d, "tensor model.layers.1.mlp.up_proj.weight: element 5 is nan", "nan-f32: ");
    free(d);
    d = nonfinite_case("inf-bf16", ORTHROS_DTYPE_BF16, "model.norm.weight", 0, 0xff80u);
    expect_model_error("an infinite norm (BF16)", d, "tensor model.norm.weight: element 0 is -inf", "weights must be finite");
    free(d);
    d = valid_case("hedgehog", &c);
    t = tu_config_json(&c, "{\"architecture\": \"orthros\", \"feature_map\": \"hedgehog\", \"feature_dim\": 8}");
    set_config(d, t);
    free(t);
    expect_model_error("hedgehog without its weights", d, "feature_map_q", NULL);
    free(d);
    /* Window gates (docs/converted-models.md): one per query head, each finite and > 0. */
    static const struct {
        const char *label;
        int form;
        const char *want, *want2;
    } gates[] = {{"window gate of the wrong shape", TU_GATES_SHAPE, "window_gate must have shape [4]", "model.safetensors"},
                 {"window gate 0", TU_GATES_ZERO, "gate 1 is 0, not a finite number > 0", "window_gate"},
                 {"window gate NaN", TU_GATES_NAN, "gate 1 is nan, not a finite number > 0", "window_gate"}};
    for (size_t i = 0; i < sizeof gates / sizeof *gates; i++) {
        d = subdir(gates[i].label);
        CHECK(tu_write_checkpoint_gated(d, &c, 3, ORTHROS_DTYPE_F32, 0, gates[i].form) == 0, "write %s", gates[i].label);
        expect_model_error(gates[i].label, d, gates[i].want, gates[i].want2);
        free(d);
    }

    /* config.json */
    d = valid_case("cfgjson", &c);
    set_config(d, "{\"hidden_size\": 64, oops");
    expect_model_error("config not JSON", d, "config.json: not valid JSON (near byte 21)", NULL);
    free(d);
    d = valid_case("heads", &c);
    c2 = c;
    c2.n_kv_heads = 3;
    t = tu_config_json(&c2, NULL);
    set_config(d, t);
    free(t);
    expect_model_error("head counts do not divide", d, "not divisible by num_key_value_heads", "config.json");
    free(d);
    d = valid_case("hidden", &c);
    set_config(d, "{\"hidden_size\": 65, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                  "\"intermediate_size\": 160, \"vocab_size\": 256}");
    expect_model_error("hidden not divisible by heads", d, "hidden_size 65 is not divisible", NULL);
    free(d);
    d = valid_case("nolayers", &c);
    set_config(d, "{\"hidden_size\": 64, \"num_attention_heads\": 4, \"intermediate_size\": 160, \"vocab_size\": 256}");
    expect_model_error("config field missing", d, "\"num_hidden_layers\" is missing", NULL);
    free(d);
    d = subdir("nothing");
    expect_model_error("directory without a model", d, "config.json", "cannot open");
    free(d);
    static const struct {
        const char *label, *orthros, *want;
    } lw[] = {{"feature_map_rope sideways", "{\"feature_map_rope\": \"sideways\"}", "orthros.feature_map_rope"},
              {"feature_map_rope 1", "{\"feature_map_rope\": 1}", "\"feature_map_rope\" is not a string"},
              {"local_window -1", "{\"local_window\": -1}", "\"local_window\" = -1 is outside [0, 1073741824]"},
              {"local_window 2.5", "{\"local_window\": 2.5}", "\"local_window\" is not an integer"}};
    for (size_t i = 0; i < sizeof lw / sizeof *lw; i++) {
        d = valid_case(lw[i].label, &c);
        t = tu_config_json(&c, lw[i].orthros);
        set_config(d, t);
        free(t);
        expect_model_error(lw[i].label, d, lw[i].want, "config.json");
        free(d);
    }

    /* arguments */
    char *good = valid_case("good", &c), out[4300];
    snprintf(out, sizeof out, "%s/l.out", root);
    char *a1[] = {(char *)bin, "logits", "--model", good, "--tokens", "1,999", "--out", out, "--device", "cpu", NULL};
    expect_cli_error("token id out of range", a1, "token id 999", "outside the vocabulary");
    char *a2[] = {(char *)bin, "logits", "--model", good, "--tokens", "5,-1", "--out", out, "--device", "cpu", NULL};
    expect_cli_error("negative token id", a2, "token id -1", NULL);
    char *a3[] = {(char *)bin, "logits", "--model", good, "--tokens", "", "--out", out, "--device", "cpu", NULL};
    expect_cli_error("empty prompt", a3, "prompt is empty", NULL);
    char *a4[] = {(char *)bin, "logits", "--model", good, "--tokens", "1,2", "--out", out, "--arch", "mamba", NULL};
    expect_cli_error("unknown architecture", a4, "unknown architecture \"mamba\"", NULL);
    char *a5[] = {(char *)bin, "generate", "--model", good, "--tokens", "1,2", "--arch", "orthros", "--tail", "0", NULL};
    expect_cli_error("tail 0", a5, "--tail must be in 1..", NULL);
    char *a6[] = {(char *)bin, "generate", "--model", good, "--tokens", "1,2", "--frobnicate", NULL};
    expect_cli_error("unknown option", a6, "unknown option \"--frobnicate\"", NULL);
    char *a7[] = {(char *)bin, "generate", "--model", good, "--tokens", "1,2", "--max-new", "ten", NULL};
    expect_cli_error("bad integer", a7, "needs an integer", NULL);
    char *a8[] = {(char *)bin, "generate", "--model", good, "--tokens", "1,x", NULL};
    expect_cli_error("garbage token list", a8, "bad token list", NULL);
    char *a9[] = {(char *)bin, "logits", "--model", "preset:huge", "--tokens", "1", "--out", out, NULL};
    expect_cli_error("unknown preset", a9, "unknown preset \"huge\"", NULL);
    /* NAME-LN: the first N layers of a preset; N beyond its layers, 0 or of another preset are refused. */
    char *a9b[] = {(char *)bin, "logits", "--model", "preset:tiny-L3", "--tokens", "1", "--out", out, "--device", "cpu", NULL};
    expect_cli_error("more layers than the preset", a9b, "preset \"tiny-L3\": tiny has 2 layers", "1 to 2");
    char *a9c[] = {(char *)bin, "logits", "--model", "preset:tiny-L0", "--tokens", "1", "--out", out, "--device", "cpu", NULL};
    expect_cli_error("zero layers", a9c, "tiny has 2 layers", NULL);
    char *a9d[] = {(char *)bin, "logits", "--model", "preset:huge-L2", "--tokens", "1", "--out", out, "--device", "cpu", NULL};
    expect_cli_error("layers of an unknown preset", a9d, "unknown preset \"huge\"", NULL);
    {
        orthros_model_config p1, p2;
        CHECK(!orthros_preset_config(&p1, "llama3.1-70b-L40") && p1.n_layers == 40 && p1.d_model == 8192 &&
                  p1.n_kv_heads == 8,
              "preset llama3.1-70b-L40: %s", orthros_last_error());
        CHECK(!orthros_preset_config(&p2, "tiny-L1") && p2.n_layers == 1, "preset tiny-L1: %s", orthros_last_error());
        CHECK(orthros_preset_config(&p2, "tiny-L1x") && orthros_preset_config(&p2, "tiny-") &&
                  orthros_preset_config(&p2, "-L2"),
              "a malformed -L suffix was accepted");
    }
    char *a10[] = {(char *)bin, "generate", "--model", good, "--tokens", "1", "--device", "tpu", NULL};
    expect_cli_error("unknown device", a10, "unknown device \"tpu\"", NULL);
    char *a11[] = {(char *)bin, "generate", "--model", good, "--tokens", "1", "--feature-map", "cosine", NULL};
    expect_cli_error("unknown feature map", a11, "unknown feature map \"cosine\"", NULL);
    char *a11b[] = {(char *)bin, "generate", "--model", good, "--tokens", "1", "--feature-map-rope", "sideways", NULL};
    expect_cli_error("unknown feature-map placement", a11b, "unknown feature-map placement \"sideways\"", NULL);
    char *a11c[] = {(char *)bin, "generate", "--model", good, "--tokens", "1", "--local-window", "-1", NULL};
    expect_cli_error("negative local window", a11c, "--local-window", NULL);
    /* A model path that names nothing: said so, not as a folder's missing config.json (issue 28). */
    char *a11d[] = {(char *)bin, "generate", "--model", "/nonexistent.gguf", "--tokens", "1", "--device", "cpu", NULL};
    expect_cli_error("a .gguf that does not exist", a11d, "/nonexistent.gguf: no such file or directory", "preset:NAME");
    char *a11e[] = {(char *)bin, "bench", "--model", "/nonexistent", "--device", "cpu", "--ctx", "64", "--json", "-", NULL};
    expect_cli_error("a folder that does not exist", a11e, "/nonexistent: no such file or directory", NULL);
    char *a12[] = {(char *)bin, "frobnicate", NULL};
    expect_cli_error("unknown command", a12, "unknown command", NULL);
    char *a13[] = {(char *)bin, "logits", "--model", good, "--tokens", "1,2,3", "--out", out, "--device", "cpu",
                   "--arch", "orthros", "--tail", "8", NULL};
    expect_cli_error("tail longer than the prompt", a13, "tail of 8", "prompt of 3");
    test_tail_longer_than_prompt(good);
    free(good);

    test_loader_leniency();
    test_arch_opts();

    CHECK(tu_remove_tree(root) == 0, "cleanup");
    free((char *)root);
    return tu_finish();
}
