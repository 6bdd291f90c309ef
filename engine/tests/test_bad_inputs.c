/* Malformed models and arguments: each must be refused with one clear line on stderr naming the problem (and
 * the file, where there is one) and a non-zero exit, never a signal; the library must return an error and hold
 * nothing (the sanitizer build checks for leaks).
 * usage: test_bad_inputs PATH/TO/orthros */
#define _GNU_SOURCE
#include "orthros.h"
#include "testutil.h"

#include <fcntl.h>
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

static void set_config(const char *dir, const char *text)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_text(path, text);
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
    d = raw_case("short", "", 0, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    tu_write_text(path, "abc");
    expect_model_error("3-byte safetensors", d, "shorter than the 8-byte header length", "model.safetensors");
    free(d);
    d = raw_case("hlen", "{}", 1ull << 40, 16);
    expect_model_error("header length beyond the file", d, "header length", "runs past the end of the file");
    free(d);
    d = raw_case("notjson", "this is not json", 0, 16);
    expect_model_error("header not JSON", d, "not a valid JSON", "model.safetensors");
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
    d = valid_case("hedgehog", &c);
    t = tu_config_json(&c, "{\"architecture\": \"orthros\", \"feature_map\": \"hedgehog\", \"feature_dim\": 8}");
    set_config(d, t);
    free(t);
    expect_model_error("hedgehog without its weights", d, "feature_map_q", NULL);
    free(d);

    /* config.json */
    d = valid_case("cfgjson", &c);
    set_config(d, "{\"hidden_size\": 64, oops");
    expect_model_error("config not JSON", d, "config is not valid JSON", "config.json");
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
    char *a10[] = {(char *)bin, "generate", "--model", good, "--tokens", "1", "--device", "tpu", NULL};
    expect_cli_error("unknown device", a10, "unknown device \"tpu\"", NULL);
    char *a11[] = {(char *)bin, "generate", "--model", good, "--tokens", "1", "--feature-map", "cosine", NULL};
    expect_cli_error("unknown feature map", a11, "unknown feature map \"cosine\"", NULL);
    char *a12[] = {(char *)bin, "frobnicate", NULL};
    expect_cli_error("unknown command", a12, "unknown command", NULL);
    free(good);

    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0, "cleanup");
    free((char *)root);
    return tu_finish();
}
