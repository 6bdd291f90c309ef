#define _GNU_SOURCE
#include "testutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

int tu_passed, tu_failed;

int tu_finish(void)
{
    printf("%d passed, %d failed\n", tu_passed, tu_failed);
    return tu_failed ? 1 : 0;
}

int tu_under_ci(void)
{
    const char *ci = getenv("CI");
    return ci && strcmp(ci, "false") != 0;
}

void tu_random(float *x, size_t n, uint64_t seed, float scale)
{
    for (size_t i = 0; i < n; i++) x[i] = (2.0f * orthros_uniform(seed, i) - 1.0f) * scale;
}

double tu_max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || isnan(d)) m = isnan(d) ? INFINITY : d;
    }
    return m;
}

char *tu_config_json(const orthros_model_config *c, const char *orthros_obj)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model_type", "llama");
    cJSON_AddNumberToObject(o, "hidden_size", c->d_model);
    cJSON_AddNumberToObject(o, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(o, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(o, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", c->head_dim);
    cJSON_AddNumberToObject(o, "intermediate_size", c->ffn);
    cJSON_AddNumberToObject(o, "vocab_size", c->vocab);
    cJSON_AddNumberToObject(o, "rms_norm_eps", c->norm_eps);
    cJSON_AddNumberToObject(o, "rope_theta", c->rope_theta);
    cJSON_AddNumberToObject(o, "max_position_embeddings", c->max_pos ? c->max_pos : 2048);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->tie_embeddings);
    if (orthros_obj) cJSON_AddItemToObject(o, "orthros", cJSON_Parse(orthros_obj));
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    return s;
}

int tu_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int tu_write_json(const char *path, const cJSON *root)
{
    char *text = cJSON_Print(root);
    int rc = text ? tu_write_text(path, text) : -1;
    free(text);
    return rc;
}

int tu_write_raw_safetensors(const char *path, const char *header, uint64_t hlen_override, const void *data,
                             size_t data_len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint64_t hlen = hlen_override ? hlen_override : strlen(header);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(hlen >> (8 * i));
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(header, 1, strlen(header), f) == strlen(header);
    if (data_len) ok = ok && fwrite(data, 1, data_len, f) == data_len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

size_t tu_tensor_numel(const tu_tensor *t)
{
    size_t n = 1;
    for (int k = 0; k < t->ndim; k++) n *= (size_t)t->shape[k];
    return n;
}

int tu_write_tensors(const char *path, const tu_tensor *ts, int n, orthros_dtype dtype, const char *metadata)
{
    size_t esz = orthros_dtype_size(dtype), total = 0;
    static const char *const names[] = {"F32", "BF16", "F16"};
    cJSON *h = cJSON_CreateObject();
    if (metadata) cJSON_AddItemToObject(h, "__metadata__", cJSON_Parse(metadata));
    for (int i = 0; i < n; i++) {
        size_t numel = tu_tensor_numel(&ts[i]);
        cJSON *e = cJSON_AddObjectToObject(h, ts[i].name);
        cJSON_AddStringToObject(e, "dtype", names[dtype]);
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int k = 0; k < ts[i].ndim; k++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)ts[i].shape[k]));
        cJSON *off = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)total));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(total + numel * esz)));
        total += numel * esz;
    }
    unsigned char *data = malloc(total ? total : 1);
    size_t at = 0;
    for (int i = 0; i < n; i++)
        for (size_t j = 0, numel = tu_tensor_numel(&ts[i]); j < numel; j++, at += esz) {
            float v = ts[i].data[j];
            uint16_t b = dtype == ORTHROS_DTYPE_BF16 ? orthros_f32_to_bf16(v) : tu_f32_to_f16(v);
            if (dtype == ORTHROS_DTYPE_F32) memcpy(data + at, &v, 4);
            else memcpy(data + at, &b, 2);
        }
    char *htext = cJSON_PrintUnformatted(h);
    int rc = htext ? tu_write_raw_safetensors(path, htext, 0, data, total) : -1;
    free(htext);
    free(data);
    cJSON_Delete(h);
    return rc;
}

uint16_t tu_f32_to_f16(float f)
{
    /* Round to nearest even through the float bits (normal, subnormal, overflow to infinity, NaN kept). */
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* subnormal half: round |f| * 2^24 to an integer */
        float m = fabsf(f) * 16777216.0f;
        return (uint16_t)(sign | (uint32_t)lrintf(m));
    }
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23);
    return (uint16_t)(sign | (r >> 13));
}

int tu_write_checkpoint(const char *dir, const orthros_model_config *c, uint64_t seed, orthros_dtype dtype,
                        int hedgehog_half)
{
    return tu_write_checkpoint_gated(dir, c, seed, dtype, hedgehog_half, 0);
}

int tu_write_checkpoint_gated(const char *dir, const orthros_model_config *c, uint64_t seed, orthros_dtype dtype,
                              int hedgehog_half, int window_gates)
{
    if (dtype == ORTHROS_DTYPE_F16) return -1;
    int L = c->n_layers, n = 0, cap = 16 + 13 * L;
    int64_t D = c->d_model, d = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads, F = c->ffn, V = c->vocab;
    tu_tensor *ts = calloc((size_t)cap, sizeof *ts);
#define T(nm, nd, a, b, cc)                                                                                            \
    do {                                                                                                               \
        snprintf(ts[n].name, sizeof ts[n].name, "%s", nm);                                                             \
        ts[n].ndim = nd;                                                                                               \
        ts[n].shape[0] = a;                                                                                            \
        ts[n].shape[1] = b;                                                                                            \
        ts[n].shape[2] = cc;                                                                                           \
        n++;                                                                                                           \
    } while (0)
    char nm[128];
    T("model.embed_tokens.weight", 2, V, D, 0);
    T("model.norm.weight", 1, D, 0, 0);
    if (!c->tie_embeddings) T("lm_head.weight", 2, V, D, 0);
    for (int l = 0; l < L; l++) {
        static const char *const p[] = {"q", "k", "v", "o"};
        for (int j = 0; j < 4; j++) {
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.%s_proj.weight", l, p[j]);
            if (j == 0) T(nm, 2, Hq * d, D, 0);
            else if (j < 3) T(nm, 2, Hkv * d, D, 0);
            else T(nm, 2, D, Hq * d, 0);
        }
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.gate_proj.weight", l);
        T(nm, 2, F, D, 0);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.up_proj.weight", l);
        T(nm, 2, F, D, 0);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.down_proj.weight", l);
        T(nm, 2, D, F, 0);
        snprintf(nm, sizeof nm, "model.layers.%d.input_layernorm.weight", l);
        T(nm, 1, D, 0, 0);
        snprintf(nm, sizeof nm, "model.layers.%d.post_attention_layernorm.weight", l);
        T(nm, 1, D, 0, 0);
        if (hedgehog_half > 0) {
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.feature_map_q.weight", l);
            T(nm, 3, Hq, d, hedgehog_half);
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.feature_map_k.weight", l);
            T(nm, 3, Hkv, d, hedgehog_half);
        }
        if (window_gates != TU_GATES_NONE) {
            snprintf(nm, sizeof nm, "model.layers.%d.self_attn.window_gate", l);
            T(nm, 1, Hq + (window_gates == TU_GATES_SHAPE && l == L - 1), 0, 0);
        }
    }
#undef T
    int rc = 0;
    for (int i = 0; i < n; i++) {
        size_t numel = tu_tensor_numel(&ts[i]);
        float *x = malloc(numel * sizeof *x);
        int is_norm = strstr(ts[i].name, "norm") != NULL, is_gate = strstr(ts[i].name, "window_gate") != NULL;
        /* Fan-in scaling keeps activations of a random model in a sane range. */
        float scale = strstr(ts[i].name, "embed") || ts[i].ndim < 2 ? 1.0f : 1.0f / sqrtf((float)ts[i].shape[1]);
        for (size_t j = 0; x && j < numel; j++) {
            float u = orthros_uniform(seed + (uint64_t)i, j);
            x[j] = is_gate ? 0.05f + 0.95f * u : is_norm ? 1.0f + 0.1f * (2.0f * u - 1.0f) : (2.0f * u - 1.0f) * scale;
            if (is_gate && j == 1 && window_gates == TU_GATES_ZERO) x[j] = 0.0f;
            if (is_gate && j == 1 && window_gates == TU_GATES_NAN) x[j] = NAN;
        }
        ts[i].data = x;
        if (!x) rc = -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!rc) rc = tu_write_tensors(path, ts, n, dtype, NULL);
    char *cfg_text = tu_config_json(c, NULL);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!rc) rc = tu_write_text(path, cfg_text);
    free(cfg_text);
    for (int i = 0; i < n; i++) free(ts[i].data);
    free(ts);
    return rc;
}

float *tu_model_logits(orthros_backend *be, const char *spec, const orthros_arch_opts *ao, uint64_t seed,
                       const char *then, const int32_t *tok, int n, int chunk, int *V)
{
    orthros_model *m = NULL;
    orthros_session *s = NULL;
    float *lg = NULL;
    int rc = orthros_model_load(&m, be, spec, ao, seed);
    if (!rc && then) rc = orthros_model_set_arch(m, then);
    if (!rc) {
        *V = orthros_model_get_config(m)->vocab;
        if (!(lg = malloc(sizeof(float) * (size_t)n * (size_t)*V))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        if (!rc) rc = orthros_session_init(&s, m, 1, n, chunk);
        if (!rc) rc = orthros_prefill(s, 0, tok, n, lg, NULL);
    }
    orthros_session_free(s);
    orthros_model_free(m);
    if (rc) {
        free(lg);
        return NULL;
    }
    return lg;
}

char *tu_tempdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/orthros-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static int tu_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) ? -1 : 0;
}

int tu_remove_tree(const char *path)
{
    /* depth first, not following links: a link inside is removed, never what it points at */
    return nftw(path, tu_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_slurp(const char *path, size_t *len)
{
    char *b = NULL;
    return orthros_read_file(&b, len, path, SIZE_MAX, NULL) ? NULL : b;
}

cJSON *tu_load_json(const char *path)
{
    char *t = tu_slurp(path, NULL);
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    return j;
}

/* The numbers of a JSON array into v (room for its size), or -1 when arr is not an array of numbers (whole ones with
 * `whole`, within int32 then). */
static int json_numbers(const cJSON *arr, int whole, int32_t *vi, double *vd, int cap)
{
    const cJSON *e;
    int k = 0;
    cJSON_ArrayForEach(e, arr)
    {
        if (k >= cap || !cJSON_IsNumber(e)) return -1;
        double x = e->valuedouble;
        if (whole && !(x == floor(x) && fabs(x) <= 2147483647.0)) return -1;
        if (vi) vi[k] = (int32_t)x;
        if (vd) vd[k] = x;
        k++;
    }
    return k;
}

/* An int32 array (whole) or a double array of arr's numbers. */
static void *json_array(const cJSON *arr, int whole, int *n)
{
    *n = 0;
    int size = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    void *v = size >= 0 ? malloc((whole ? sizeof(int32_t) : sizeof(double)) * (size_t)(size > 0 ? size : 1)) : NULL;
    int k = v ? json_numbers(arr, whole, whole ? v : NULL, whole ? NULL : v, size) : -1;
    if (k < 0) {
        free(v);
        return NULL;
    }
    *n = k;
    return v;
}

int32_t *tu_json_ints(const cJSON *arr, int *n) { return json_array(arr, 1, n); }
double *tu_json_nums(const cJSON *arr, int *n) { return json_array(arr, 0, n); }

double tu_json_num(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItem(o, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *tu_json_str(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItem(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

int tu_spawn(char *const *argv, const char *log)
{
    fflush(NULL); /* or the child's freopen would flush our buffered output a second time */
    pid_t pid = fork();
    if (pid == 0) {
        /* one open file for both streams: one offset, so neither overwrites what the other wrote */
        if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0) _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int tu_run(char *const *argv, const char *log)
{
    int st;
    pid_t pid = tu_spawn(argv, log);
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

unsigned tu_child_alarm;

int tu_run_capture(char *const *argv, const char *env, const char *out_path, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
        if (env) putenv((char *)env);
        if (tu_child_alarm) alarm(tu_child_alarm); /* kept across execv */
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

char *tu_line_starting(const char *path, const char *prefix)
{
    char *text = tu_slurp(path, NULL), *line = NULL;
    for (char *p = text; p && *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
        if (!strncmp(p, prefix, strlen(prefix))) {
            line = strndup(p, strcspn(p, "\n"));
            break;
        }
    }
    free(text);
    return line;
}

char *tu_generated_line(const char *log)
{
    char *line = tu_line_starting(log, "{\"generated\"");
    char *t = line ? strstr(line, ",\"timing\"") : NULL;
    if (t) strcpy(t, "}");
    return line;
}

void tu_logit_agreement(const float *ref, const float *got, int rows, int V, int *agree, double *max_err, double *range)
{
    double err = 0, lo = INFINITY, hi = -INFINITY;
    *agree = 0;
    for (int i = 0; i < rows; i++) {
        const float *r = ref + (size_t)i * V, *g = got + (size_t)i * V;
        int ar = 0, ag = 0;
        for (int j = 0; j < V; j++) {
            if (r[j] > r[ar]) ar = j;
            if (g[j] > g[ag]) ag = j;
            err = fmax(err, isnan(g[j]) ? INFINITY : fabs((double)r[j] - g[j]));
            lo = fmin(lo, r[j]);
            hi = fmax(hi, r[j]);
        }
        *agree += ar == ag;
    }
    *max_err = err;
    *range = hi - lo;
}

const tu_arch_case tu_arch_cases[] = {
    {"transformer", "transformer", -1, -1, -1, -1, -1, -1},
    {"orthros tail 1", "orthros", -1, 1, -1, -1, -1, -1},
    {"orthros tail 5", "orthros", -1, 5, -1, -1, -1, -1},
    {"linear elu1", "linear", ORTHROS_FMAP_ELU1, -1, -1, -1, -1, -1},
    {"linear relu", "linear", ORTHROS_FMAP_RELU, -1, -1, -1, -1, -1},
    {"linear hedgehog", "linear", ORTHROS_FMAP_HEDGEHOG, -1, -1, -1, -1, -1},
    {"orthros hedgehog", "orthros", ORTHROS_FMAP_HEDGEHOG, 3, -1, -1, -1, -1},
    {"swa 5", "swa", -1, -1, 5, -1, -1, -1},
    {"hybrid every 2", "hybrid", -1, -1, -1, 2, -1, -1},
    /* The linear formula of a converted model (docs/converted-models.md): phi after RoPE, local windows. */
    {"linear phi after", "linear", -1, -1, -1, -1, ORTHROS_FMAP_ROPE_AFTER, 0},
    {"linear lw 3 after", "linear", ORTHROS_FMAP_ELU1, -1, -1, -1, ORTHROS_FMAP_ROPE_AFTER, 3},
    {"linear hh lw 5", "linear", ORTHROS_FMAP_HEDGEHOG, -1, -1, -1, ORTHROS_FMAP_ROPE_BEFORE, 5},
    {"orthros lw 4 after", "orthros", -1, 3, -1, -1, ORTHROS_FMAP_ROPE_AFTER, 4},
    {"orthros hh lw 2", "orthros", ORTHROS_FMAP_HEDGEHOG, 1, -1, -1, ORTHROS_FMAP_ROPE_BEFORE, 2},
    {"hybrid relu lw 3", "hybrid", ORTHROS_FMAP_RELU, -1, -1, 2, ORTHROS_FMAP_ROPE_BEFORE, 3},
};
const size_t tu_n_arch_cases = sizeof tu_arch_cases / sizeof *tu_arch_cases;

orthros_arch_opts tu_arch_case_opts(const tu_arch_case *c)
{
    orthros_arch_opts o;
    orthros_arch_opts_default(&o);
    o.arch = c->arch;
    o.fmap = c->fmap;
    o.tail = c->tail;
    o.window = c->window;
    o.hybrid_every = c->hybrid_every;
    o.fmap_rope = c->fmap_rope;
    o.local_window = c->local_window;
    return o;
}

int tu_run_args(const char *bin, const char *log, const char *first, ...)
{
    char *args[64];
    int n = 0;
    va_list ap;
    args[n++] = (char *)bin;
    va_start(ap, first);
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *)) args[n++] = (char *)a;
    va_end(ap);
    args[n] = NULL;
    return tu_run(args, log);
}

int tu_log_has(const char *log, const char *needle)
{
    char *t = tu_slurp(log, NULL);
    int yes = t && strstr(t, needle);
    if (!yes) fprintf(stderr, "log does not say \"%s\":\n%s\n", needle, t ? t : "(none)");
    free(t);
    return yes;
}

int tu_lock_held(const char *json)
{
    char path[4200];
    snprintf(path, sizeof path, "%s.lock", json);
    int fd = open(path, O_RDWR);
    if (fd < 0) return 0;
    int held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!held) flock(fd, LOCK_UN);
    close(fd);
    return held;
}
