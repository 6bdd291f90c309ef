/* The shared part of result files: header, load with validation, atomic writes, and the field readers the
 * kind-specific readers (result_bench.c, result_eval.c) are built from. */
#define _GNU_SOURCE
#define ORTHROS_RESULTS_IMPL /* the functions, not the analyzer's models of them (results.h) */
#include "results.h"
#include "gpu_state.h"
#include "keyset.h"
#include "util.h"
#include "version.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ---- the header ---- */

/* The first line of /proc/cpuinfo named `key`, after its colon, or "unknown". */
static void proc_field(char *buf, size_t n, const char *path, const char *key)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen(path, "r");
    char line[512];
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, key, kl) && colon) {
            snprintf(buf, n, "%s", colon[1] == ' ' ? colon + 2 : colon + 1);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
}

/* The first line of a small sysfs / procfs file, or "unknown". */
static void first_line(char *buf, size_t n, const char *path)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen(path, "r");
    if (f && fgets(buf, (int)n, f)) buf[strcspn(buf, "\n")] = '\0';
    if (f) fclose(f);
}

static void add_loadavg(cJSON *env, const char *key)
{
    double l[3];
    if (getloadavg(l, 3) == 3) {
        cJSON *a = cJSON_AddArrayToObject(env, key);
        for (int i = 0; i < 3; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(l[i]));
    }
}

/* environment.world_size and environment.ranks: one object per rank of the run, the host and the device it ran
 * on (the ranks as processes sent theirs to rank 0 when the world started). A cuda rank on this process's host
 * (the host of be's device, named as every rank names its own) also gets its GPU's state_start: NVML reads any
 * GPU of the host by its PCI bus id, so rank 0 reads the others' too; ranks on other hosts get none. */
static int add_ranks(cJSON *env, const orthros_backend *be, int tp)
{
    orthros_device_info here;
    orthros_backend_device_info(be, &here);
    int n = orthros_tp_devices(be, tp, NULL, 0);
    orthros_device_info *d = calloc((size_t)n, sizeof *d);
    if (!d) return ORTHROS_ENOMEM;
    orthros_tp_devices(be, tp, d, n);
    cJSON_AddNumberToObject(env, "world_size", n);
    cJSON *ranks = cJSON_AddArrayToObject(env, "ranks");
    for (int r = 0; ranks && r < n; r++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(ranks, o)) {
            cJSON_Delete(o);
            break;
        }
        const char *host = d[r].host[0] ? d[r].host : "unknown", *kind = d[r].kind[0] ? d[r].kind : orthros_backend_name(be);
        cJSON_AddNumberToObject(o, "rank", r);
        cJSON_AddStringToObject(o, "host", host);
        cJSON_AddStringToObject(o, "backend", kind);
        cJSON_AddStringToObject(o, "name", d[r].name);
        cJSON_AddNumberToObject(o, "memory_bytes", (double)d[r].mem_total);
        cJSON_AddStringToObject(o, "pci_bus_id", d[r].pci_bus_id);
        cJSON_AddStringToObject(o, "uuid", d[r].uuid);
        cJSON *gs = !strcmp(kind, "cuda") && !strcmp(host, here.host) ? orthros_gpu_state_json(d[r].pci_bus_id) : NULL;
        if (gs) cJSON_AddItemToObject(o, "state_start", gs);
    }
    free(d);
    return ranks && cJSON_GetArraySize(ranks) == n ? 0 : ORTHROS_ENOMEM;
}

cJSON *orthros_result_new(const char *kind, int argc, char **argv, uint64_t seed, const orthros_backend *be, int tp)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schema_version", ORTHROS_RESULT_SCHEMA_VERSION);
    cJSON_AddStringToObject(root, "kind", kind);

    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    cJSON_AddStringToObject(tool, "name", "orthros");
    cJSON_AddStringToObject(tool, "version", ORTHROS_VERSION);
    cJSON_AddStringToObject(tool, "git_commit", orthros_tool_git_commit());
    cJSON_AddBoolToObject(tool, "dirty", orthros_tool_git_dirty());
    cJSON_AddStringToObject(tool, "build_type", orthros_tool_build_type());
    cJSON_AddStringToObject(tool, "c_compiler", orthros_tool_c_compiler());
    cJSON_AddStringToObject(tool, "cuda_compiler", orthros_tool_cuda_compiler());
    cJSON_AddBoolToObject(tool, "cuda_backend_built", ORTHROS_HAVE_CUDA);

    cJSON *run = cJSON_AddObjectToObject(root, "run");
    cJSON *av = cJSON_AddArrayToObject(run, "argv");
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
    char now[64];
    orthros_utc_now(now, sizeof now);
    cJSON_AddStringToObject(run, "start_time", now);
    cJSON_AddStringToObject(run, "end_time", "");
    cJSON_AddNumberToObject(run, "seed", (double)seed);

    cJSON *env = cJSON_AddObjectToObject(root, "environment");
    char host[256] = "unknown", buf[256];
    gethostname(host, sizeof host - 1);
    struct utsname u;
    cJSON_AddStringToObject(env, "host", host);
    cJSON_AddStringToObject(env, "os", uname(&u) == 0 ? u.release : "unknown");
    proc_field(buf, sizeof buf, "/proc/cpuinfo", "model name");
    cJSON_AddStringToObject(env, "cpu", buf);
    cJSON_AddNumberToObject(env, "cpu_cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddNumberToObject(env, "threads", orthros_cpu_threads());
    first_line(buf, sizeof buf, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    cJSON_AddStringToObject(env, "cpu_governor", buf);
    add_loadavg(env, "loadavg_start");
    cJSON_AddStringToObject(env, "backend", be ? orthros_backend_name(be) : "none");
    cJSON *dev = cJSON_AddObjectToObject(env, "device");
    orthros_device_info info;
    memset(&info, 0, sizeof info);
    if (be) orthros_backend_device_info(be, &info);
    cJSON_AddStringToObject(dev, "name", info.name);
    cJSON_AddNumberToObject(dev, "sm_count", info.sm_count);
    cJSON_AddNumberToObject(dev, "memory_bytes", (double)info.mem_total);
    cJSON_AddNumberToObject(dev, "clock_mhz", info.clock_mhz);
    cJSON_AddNumberToObject(dev, "memory_clock_mhz", info.mem_clock_mhz);
    cJSON_AddNumberToObject(dev, "driver_version", info.driver_version);
    cJSON_AddNumberToObject(dev, "runtime_version", info.runtime_version);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", info.cc_major, info.cc_minor);
    cJSON_AddStringToObject(dev, "compute_capability", info.cc_major ? cc : "");
    cJSON_AddStringToObject(dev, "kernels", info.kernels);
    cJSON_AddStringToObject(dev, "pci_bus_id", info.pci_bus_id);
    cJSON *gs = orthros_gpu_state_json(info.pci_bus_id);
    if (gs) cJSON_AddItemToObject(dev, "state_start", gs);
    if (be && add_ranks(env, be, tp)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* o.state_end: the state of the GPU at PCI address bus now, where NVML reads it. */
static void set_state_end(cJSON *o, const cJSON *bus)
{
    cJSON *gs = cJSON_IsString(bus) ? orthros_gpu_state_json(bus->valuestring) : NULL;
    if (gs) {
        cJSON_DeleteItemFromObject(o, "state_end");
        cJSON_AddItemToObject(o, "state_end", gs);
    }
}

void orthros_result_finish(cJSON *root)
{
    char now[64];
    orthros_utc_now(now, sizeof now);
    cJSON *run = cJSON_GetObjectItem(root, "run"), *env = cJSON_GetObjectItem(root, "environment");
    if (run) {
        cJSON_DeleteItemFromObject(run, "end_time");
        cJSON_AddStringToObject(run, "end_time", now);
    }
    if (env) {
        cJSON_DeleteItemFromObject(env, "loadavg_end");
        add_loadavg(env, "loadavg_end");
        cJSON *dev = cJSON_GetObjectItem(env, "device");
        const cJSON *bus = cJSON_GetObjectItem(dev, "pci_bus_id");
        set_state_end(dev, bus);
        cJSON *o;
        cJSON_ArrayForEach(o, cJSON_GetObjectItem(env, "ranks"))
            if (cJSON_GetObjectItem(o, "state_start")) set_state_end(o, cJSON_GetObjectItem(o, "pci_bus_id"));
    }
}

int orthros_result_write(const char *path, const cJSON *root)
{
    char *text = cJSON_Print(root);
    if (!text) return orthros_error(ORTHROS_ENOMEM, "out of memory printing %s", path);
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON_Print's terminating NUL becomes the final newline; the length says where to stop */
    int rc = orthros_write_file_atomic(path, text, n + 1);
    free(text);
    return rc;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key that appears twice in one object, searching every nested object; NULL when none. The keys of an
 * object are sorted (n log n, so a file of one huge object cannot stall the reader). */
static const char *duplicate_key(const cJSON *o, int depth);
const char *orthros_json_duplicate_key(const cJSON *o) { return duplicate_key(o, 0); }
static const char *duplicate_key(const cJSON *o, int depth)
{
    if (depth > 64) return "(nesting deeper than 64 levels)";
    const cJSON *a;
    size_t n = 0;
    for (a = o->child; a; a = a->next) n++;
    if (cJSON_IsObject(o) && n > 1) {
        const char **keys = malloc(n * sizeof *keys);
        if (!keys) return "(out of memory checking keys)";
        size_t k = 0;
        for (a = o->child; a; a = a->next) keys[k++] = a->string ? a->string : "";
        qsort(keys, n, sizeof *keys, cmp_key);
        const char *dup = NULL;
        for (size_t i = 1; i < n && !dup; i++)
            if (!strcmp(keys[i - 1], keys[i])) dup = keys[i];
        free(keys);
        if (dup) return dup;
    }
    for (a = o->child; a; a = a->next)
        if (cJSON_IsObject(a) || cJSON_IsArray(a)) {
            const char *d = duplicate_key(a, depth + 1);
            if (d) return d;
        }
    return NULL;
}

int orthros_result_parse(cJSON **out, const char *text, size_t len, const char *name)
{
    *out = NULL;
    if (memchr(text, '\0', len)) return orthros_error(ORTHROS_EFORMAT, "%s: not a result file (it holds a NUL byte)", name);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        long at = end ? (long)(end - text) : -1;
        return orthros_error(ORTHROS_EFORMAT, "%s: not valid JSON (near byte %ld)", name, at);
    }
    /* Only white space may follow the value. */
    for (const char *p = end; p < text + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cJSON_Delete(root);
            return orthros_error(ORTHROS_EFORMAT, "%s: bytes after the JSON value (at byte %ld)", name, (long)(p - text));
        }
    const char *dup = NULL;
    int rc = 0;
    if (!cJSON_IsObject(root)) rc = orthros_error(ORTHROS_EFORMAT, "%s: not a result file (the top is not an object)", name);
    else if ((dup = duplicate_key(root, 0)))
        rc = orthros_error(ORTHROS_EFORMAT, "%s: the key \"%.64s\" appears twice in one object", name, dup);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return 0;
}

int orthros_result_load(cJSON **out, const char *path, int missing_ok)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int exists = 1;
    int rc = orthros_read_file(&text, &len, path, ORTHROS_RESULT_MAX_BYTES, missing_ok ? &exists : NULL);
    if (rc || !exists) return rc;
    rc = orthros_result_parse(out, text, len, path);
    free(text);
    return rc;
}

int orthros_result_from_json(const orthros_result_type *t, void *f, const cJSON *root, const char *name)
{
    t->init(f);
    int rc = t->from_json(f, root, name);
    if (rc) t->free(f);
    return rc;
}

int orthros_result_read_file(const orthros_result_type *t, void *f, const char *path, int missing_ok, int *exists)
{
    cJSON *root = NULL;
    t->init(f);
    if (exists) *exists = 1;
    int rc = orthros_result_load(&root, path, missing_ok);
    if (rc) return rc;
    if (!root) {
        if (exists) *exists = 0;
        return 0;
    }
    rc = orthros_result_from_json(t, f, root, path);
    cJSON_Delete(root);
    return rc;
}

int orthros_result_write_file(const orthros_result_type *t, const void *f, const char *path)
{
    cJSON *root = t->to_json(f);
    if (!root) return orthros_error(ORTHROS_ENOMEM, "out of memory writing %s", path);
    int rc = orthros_result_write(path, root);
    cJSON_Delete(root);
    return rc;
}

int orthros_result_keep_cells(const orthros_result_type *t, void *now, void *old)
{
    /* now's cells through a set of their keys: comparing each with every earlier one takes minutes at 100k cells */
    orthros_keyset have;
    char key[ORTHROS_RESULT_KEY_MAX];
    int rc = 0;
    orthros_keyset_init(&have);
    const size_t n_now = t->n_cells(now), n_old = t->n_cells(old);
    for (size_t k = 0; k < n_now && !rc; k++) {
        t->cell_key(now, k, key, sizeof key);
        int added = orthros_keyset_add(&have, key);
        if (added < 0) rc = added;
    }
    for (size_t i = 0; i < n_old && !rc; i++) {
        if (t->cell_kept && !t->cell_kept(old, i)) continue;
        t->cell_key(old, i, key, sizeof key);
        if (!orthros_keyset_has(&have, key)) rc = t->cell_add(now, old, i);
    }
    orthros_keyset_free(&have);
    return rc;
}

void orthros_json_add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

int orthros_result_same_str(const char *a_name, const char *b_name, const char *label, const char *a, const char *b)
{
    if (!strcmp(a ? a : "", b ? b : "")) return 0;
    return orthros_error(ORTHROS_EINVAL, "%s and %s differ in %s: \"%s\" against \"%s\"", a_name, b_name, label, a ? a : "",
                         b ? b : "");
}

/* A string member of root.environment.device, "" when absent. */
static const char *env_device_str(const cJSON *root, const char *key)
{
    const cJSON *env = root ? cJSON_GetObjectItemCaseSensitive(root, "environment") : NULL;
    const cJSON *dev = env ? cJSON_GetObjectItemCaseSensitive(env, "device") : NULL;
    const cJSON *v = dev ? cJSON_GetObjectItemCaseSensitive(dev, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

int orthros_result_same_code(const orthros_result_header *hdr, const cJSON *old, const cJSON *now, const char *path)
{
    const char *commit = orthros_tool_git_commit();
    if (strcmp(hdr->git_commit, commit))
        return orthros_error(ORTHROS_EINVAL, "%s was measured by commit %s, this build is %s: its cells would mix two "
                             "versions of the code (write a new file, or --force to replace it)", path,
                             hdr->git_commit, commit);
    const char *k_old = env_device_str(old, "kernels"), *k_now = env_device_str(now, "kernels");
    if (strcmp(k_old, k_now))
        return orthros_error(ORTHROS_EINVAL, "%s was measured with the kernels \"%s\", this run uses \"%s\" (the "
                             "ORTHROS_ kernel and decode settings differ)", path, k_old, k_now);
    return 0;
}

int orthros_result_same_num(const char *a_name, const char *b_name, const char *label, double a, double b)
{
    if (a == b) return 0;
    return orthros_error(ORTHROS_EINVAL, "%s and %s differ in %s: %g against %g", a_name, b_name, label, a, b);
}

void orthros_sched_config_init(orthros_sched_config *s)
{
    s->chunk = s->tail = s->window = s->hybrid_every = s->feature_dim = s->local_window = -1;
    s->eps = -1;
    s->feature_map[0] = s->feature_map_rope[0] = '\0';
}

int orthros_sched_config_same(const orthros_sched_config *a, const char *a_name, const orthros_sched_config *b,
                              const char *b_name)
{
    int rc;
    if ((rc = orthros_result_same_str(a_name, b_name, "--feature-map", a->feature_map, b->feature_map)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--chunk", a->chunk, b->chunk)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--tail", a->tail, b->tail)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--window", a->window, b->window)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--hybrid-every", a->hybrid_every, b->hybrid_every)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--feature-dim", a->feature_dim, b->feature_dim)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--eps", a->eps, b->eps)) ||
        (rc = orthros_result_same_str(a_name, b_name, "--feature-map-rope", a->feature_map_rope, b->feature_map_rope)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--local-window", a->local_window, b->local_window)))
        return rc;
    return 0;
}

int orthros_sched_config_read(orthros_sched_config *s, const orthros_jr *j, const cJSON *o)
{
    struct {
        const char *key;
        int *dst;
    } ints[] = {{"chunk", &s->chunk}, {"tail", &s->tail}, {"window", &s->window}, {"hybrid_every", &s->hybrid_every},
                {"feature_dim", &s->feature_dim}, {"local_window", &s->local_window}};
    int rc;
    if ((rc = orthros_jr_string(s->feature_map, sizeof s->feature_map, j, o, "feature_map", 0)) ||
        (rc = orthros_jr_string(s->feature_map_rope, sizeof s->feature_map_rope, j, o, "feature_map_rope", 0)) ||
        (rc = orthros_jr_num(&s->eps, j, o, "eps", -1, 1, 0)))
        return rc;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        int64_t v = *ints[i].dst;
        if ((rc = orthros_jr_int(&v, j, o, ints[i].key, -1, INT_MAX, 0))) return rc;
        *ints[i].dst = (int)v;
    }
    return 0;
}

void orthros_sched_config_write(cJSON *o, const orthros_sched_config *s)
{
    cJSON_AddNumberToObject(o, "chunk", s->chunk);
    cJSON_AddNumberToObject(o, "tail", s->tail);
    cJSON_AddNumberToObject(o, "window", s->window);
    cJSON_AddNumberToObject(o, "hybrid_every", s->hybrid_every);
    cJSON_AddNumberToObject(o, "feature_dim", s->feature_dim);
    cJSON_AddNumberToObject(o, "eps", s->eps);
    cJSON_AddStringToObject(o, "feature_map", s->feature_map);
    cJSON_AddStringToObject(o, "feature_map_rope", s->feature_map_rope);
    cJSON_AddNumberToObject(o, "local_window", s->local_window);
}

/* environment.world_size and environment.ranks (j at environment): both or neither (files before them have
 * neither); one object per rank, in rank order. */
static int read_ranks(orthros_result_header *h, orthros_jr *j, const cJSON *env)
{
    int64_t ws = 0, v = -1;
    const cJSON *ranks, *o;
    int rc;
    if ((rc = orthros_jr_int(&ws, j, env, "world_size", 1, ORTHROS_RESULT_MAX_RANKS, 0)) ||
        (rc = orthros_jr_array(&ranks, j, env, "ranks", 0)))
        return rc;
    if (!ranks != !ws) return orthros_jr_fail(j, ws ? "ranks" : "world_size", "missing (world_size and ranks come together)");
    if (!ranks) return 0;
    if (cJSON_GetArraySize(ranks) != ws)
        return orthros_jr_fail(j, "ranks", "%d entries for a world of %lld ranks", cJSON_GetArraySize(ranks), (long long)ws);
    size_t at = orthros_jr_push_key(j, "ranks");
    int i = 0;
    cJSON_ArrayForEach(o, ranks)
    {
        size_t at_i = orthros_jr_push_index(j, i);
        char host[256] = "", kind[16] = "", name[128], bus[64], uuid[64];
        if ((rc = orthros_jr_object(&o, j, o, NULL, 0)) ||
            (rc = orthros_jr_int(&v, j, o, "rank", 0, ORTHROS_RESULT_MAX_RANKS - 1, ORTHROS_JR_REQUIRED)))
            return rc;
        if (v != i) return orthros_jr_fail(j, "rank", "%lld where rank %d belongs (ranks in order)", (long long)v, i);
        if ((rc = orthros_jr_string(host, sizeof host, j, o, "host", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(kind, sizeof kind, j, o, "backend", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(name, sizeof name, j, o, "name", ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_int(&v, j, o, "memory_bytes", 0, INT64_MAX, ORTHROS_JR_REQUIRED)) ||
            (rc = orthros_jr_string(bus, sizeof bus, j, o, "pci_bus_id", 0)) ||
            (rc = orthros_jr_string(uuid, sizeof uuid, j, o, "uuid", 0)))
            return rc;
        if (!host[0]) return orthros_jr_fail(j, "host", "empty");
        if (strcmp(kind, "cpu") && strcmp(kind, "cuda")) return orthros_jr_fail(j, "backend", "\"%s\" is not cpu or cuda", kind);
        orthros_jr_pop(j, at_i);
        i++;
    }
    orthros_jr_pop(j, at);
    h->world_size = (int)ws;
    return 0;
}

int orthros_result_header_read(orthros_result_header *h, const cJSON *root, const char *path)
{
    orthros_jr j;
    orthros_jr_init(&j, path);
    memset(h, 0, sizeof *h);
    snprintf(h->git_commit, sizeof h->git_commit, "unknown");
    char kind[16] = "";
    int rc;
    if ((rc = orthros_jr_string(kind, sizeof kind, &j, root, "kind", 0))) return rc;
    if (!kind[0]) {
        /* Anchor files of bench/kernels/anchors.py: a "cases" list and the device as a string. */
        if (!cJSON_IsArray(cJSON_GetObjectItem(root, "cases")))
            return orthros_jr_fail(&j, "kind", "missing: not an orthros result file (bench, eval or SDPA anchors)");
        h->kind = ORTHROS_RESULT_ANCHORS;
        return orthros_jr_string(h->device_name, sizeof h->device_name, &j, root, "device", 0);
    }
    if (!strcmp(kind, "bench")) h->kind = ORTHROS_RESULT_BENCH;
    else if (!strcmp(kind, "eval")) h->kind = ORTHROS_RESULT_EVAL;
    else if (!strcmp(kind, "anchors")) h->kind = ORTHROS_RESULT_ANCHORS;
    else return orthros_jr_fail(&j, "kind", "\"%s\" is not a kind of result file (bench, eval, anchors)", kind);
    int64_t v = 0;
    if ((rc = orthros_jr_int(&v, &j, root, "schema_version", 1, ORTHROS_RESULT_SCHEMA_VERSION, ORTHROS_JR_REQUIRED)))
        return rc;
    h->schema_version = (int)v;
    if (h->kind == ORTHROS_RESULT_ANCHORS) return orthros_jr_string(h->device_name, sizeof h->device_name, &j, root, "device", 0);
    const cJSON *tool, *run, *env, *dev;
    if ((rc = orthros_jr_object(&tool, &j, root, "tool", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_object(&run, &j, root, "run", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_object(&env, &j, root, "environment", ORTHROS_JR_REQUIRED)))
        return rc;
    size_t at = orthros_jr_push_key(&j, "tool");
    if ((rc = orthros_jr_string(h->git_commit, sizeof h->git_commit, &j, tool, "git_commit", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_bool(&h->dirty, &j, tool, "dirty", 0)))
        return rc;
    orthros_jr_pop(&j, at);
    at = orthros_jr_push_key(&j, "run");
    v = 0; /* a file without a seed reads as seed 0, not as the schema version read into v above */
    if ((rc = orthros_jr_int(&v, &j, run, "seed", 0, INT64_MAX, 0))) return rc;
    h->seed = (uint64_t)v;
    orthros_jr_pop(&j, at);
    orthros_jr_push_key(&j, "environment"); /* kept to the end: read_ranks' messages name environment.ranks */
    if ((rc = orthros_jr_string(h->backend, sizeof h->backend, &j, env, "backend", 0)) ||
        (rc = orthros_jr_object(&dev, &j, env, "device", 0)))
        return rc;
    if (dev) {
        size_t at_dev = orthros_jr_push_key(&j, "device");
        if ((rc = orthros_jr_string(h->device_name, sizeof h->device_name, &j, dev, "name", 0))) return rc;
        orthros_jr_pop(&j, at_dev);
    }
    return read_ranks(h, &j, env);
}

void orthros_result_device_text(char *buf, size_t n, const orthros_result_header *h)
{
    const char *d = h->device_name[0] ? h->device_name : "unknown device";
    if (h->world_size > 1) snprintf(buf, n, "%s (tp %d)", d, h->world_size);
    else snprintf(buf, n, "%s", d);
}

cJSON *orthros_result_header_keep(const cJSON *root)
{
    cJSON *h = cJSON_CreateObject();
    const char *keys[] = {"tool", "run", "environment"};
    for (int i = 0; h && i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItem(root, keys[i]);
        if (!v) continue;
        cJSON *d = cJSON_Duplicate(v, 1);
        if (!d) {
            cJSON_Delete(h);
            return NULL;
        }
        if (i == 1) cJSON_DeleteItemFromObject(d, "config");
        cJSON_AddItemToObject(h, keys[i], d);
    }
    return h;
}

cJSON *orthros_result_header_emit(const cJSON *kept, const char *kind, cJSON *config)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        cJSON_Delete(config);
        return NULL;
    }
    cJSON_AddNumberToObject(root, "schema_version", ORTHROS_RESULT_SCHEMA_VERSION);
    cJSON_AddStringToObject(root, "kind", kind);
    const char *keys[] = {"tool", "run", "environment"};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = kept ? cJSON_GetObjectItem(kept, keys[i]) : NULL;
        cJSON *d = v ? cJSON_Duplicate(v, 1) : cJSON_CreateObject();
        if (i == 1 && d) {
            cJSON_AddItemToObject(d, "config", config);
            config = NULL;
        }
        cJSON_AddItemToObject(root, keys[i], d);
    }
    cJSON_Delete(config);
    return root;
}

/* ---- field readers ---- */

void orthros_jr_init(orthros_jr *j, const char *file)
{
    j->file = file;
    j->path[0] = '\0';
    j->len = 0;
}

size_t orthros_jr_push_key(orthros_jr *j, const char *key)
{
    size_t old = j->len;
    int w = snprintf(j->path + j->len, sizeof j->path - j->len, "%s%.48s", j->len ? "." : "", key);
    if (w > 0) j->len = j->len + (size_t)w < sizeof j->path ? j->len + (size_t)w : sizeof j->path - 1;
    return old;
}

size_t orthros_jr_push_index(orthros_jr *j, int i)
{
    size_t old = j->len;
    int w = snprintf(j->path + j->len, sizeof j->path - j->len, "[%d]", i);
    if (w > 0) j->len = j->len + (size_t)w < sizeof j->path ? j->len + (size_t)w : sizeof j->path - 1;
    return old;
}

void orthros_jr_pop(orthros_jr *j, size_t len)
{
    j->len = len;
    j->path[len] = '\0';
}

int orthros_jr_fail(const orthros_jr *j, const char *key, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *sep = j->len && key ? "." : "";
    if (!j->len && !key) return orthros_error(ORTHROS_EFORMAT, "%s: %s", j->file, msg);
    return orthros_error(ORTHROS_EFORMAT, "%s: %s%s%.48s: %s", j->file, j->path, sep, key ? key : "", msg);
}

/* The item at key (or o itself for key NULL); NULL with 0 when absent and allowed. */
static int item(const cJSON **out, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    *out = key ? cJSON_GetObjectItemCaseSensitive(o, key) : o;
    if (!*out && (flags & ORTHROS_JR_REQUIRED)) return orthros_jr_fail(j, key, "missing");
    return 0;
}

int orthros_jr_object(const cJSON **out, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    int rc = item(out, j, o, key, flags);
    if (rc || !*out) return rc;
    if (!cJSON_IsObject(*out)) return orthros_jr_fail(j, key, "not an object");
    return 0;
}

int orthros_jr_array(const cJSON **out, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    int rc = item(out, j, o, key, flags);
    if (rc || !*out) return rc;
    if (!cJSON_IsArray(*out)) return orthros_jr_fail(j, key, "not an array");
    return 0;
}

static int check_text(const orthros_jr *j, const char *key, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 && *p != '\t') return orthros_jr_fail(j, key, "a string holding a control character");
    return 0;
}

int orthros_jr_string(char *dst, size_t cap, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    const cJSON *v;
    int rc = item(&v, j, o, key, flags);
    if (rc || !v) return rc;
    if (!cJSON_IsString(v) || !v->valuestring) return orthros_jr_fail(j, key, "not a string");
    if (strlen(v->valuestring) >= cap) return orthros_jr_fail(j, key, "a string longer than %zu bytes", cap - 1);
    if ((rc = check_text(j, key, v->valuestring))) return rc;
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

int orthros_jr_strdup(char **dst, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    const cJSON *v;
    *dst = NULL;
    int rc = item(&v, j, o, key, flags);
    if (rc || !v) return rc;
    if (!cJSON_IsString(v) || !v->valuestring) return orthros_jr_fail(j, key, "not a string");
    if ((rc = check_text(j, key, v->valuestring))) return rc;
    if (!(*dst = strdup(v->valuestring))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

int orthros_jr_int(int64_t *dst, const orthros_jr *j, const cJSON *o, const char *key, int64_t lo, int64_t hi, int flags)
{
    const cJSON *v;
    int rc = item(&v, j, o, key, flags);
    if (rc || !v) return rc;
    if (!cJSON_IsNumber(v)) return orthros_jr_fail(j, key, "not a number");
    double x = v->valuedouble;
    /* 2^63 itself is out of range: compare against the doubles on either side of the bounds. */
    if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi || x >= 9223372036854775808.0)
        return orthros_jr_fail(j, key, "%.17g is not an integer in %lld..%lld", x, (long long)lo, (long long)hi);
    *dst = (int64_t)x;
    return 0;
}

int orthros_jr_num(double *dst, const orthros_jr *j, const cJSON *o, const char *key, double lo, double hi, int flags)
{
    const cJSON *v;
    int rc = item(&v, j, o, key, flags);
    if (rc || !v) return rc;
    if (cJSON_IsNull(v) && (flags & ORTHROS_JR_NULL_NAN)) {
        *dst = NAN;
        return 0;
    }
    if (!cJSON_IsNumber(v)) return orthros_jr_fail(j, key, "not a number");
    double x = v->valuedouble;
    if (!isfinite(x) || x < lo || x > hi || ((flags & ORTHROS_JR_POSITIVE) && !(x > 0)))
        return orthros_jr_fail(j, key, "%.17g is outside [%g, %g]%s", x, lo, hi,
                               (flags & ORTHROS_JR_POSITIVE) ? " or not positive" : "");
    *dst = x;
    return 0;
}

int orthros_jr_bool(int *dst, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    const cJSON *v;
    int rc = item(&v, j, o, key, flags);
    if (rc || !v) return rc;
    if (!cJSON_IsBool(v)) return orthros_jr_fail(j, key, "not true or false");
    *dst = cJSON_IsTrue(v);
    return 0;
}

int orthros_jr_positive_array(double **x, size_t *n, const orthros_jr *j, const cJSON *o, const char *key, int flags)
{
    const cJSON *a, *v;
    *x = NULL;
    *n = 0;
    int rc = orthros_jr_array(&a, j, o, key, flags);
    if (rc || !a) return rc;
    size_t count = (size_t)cJSON_GetArraySize(a), i = 0;
    double *buf = malloc((count ? count : 1) * sizeof *buf);
    if (!buf) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !(v->valuedouble > 0)) {
            free(buf);
            return orthros_jr_fail(j, key, "item %zu is not a positive finite number", i);
        }
        buf[i++] = v->valuedouble;
    }
    *x = buf;
    *n = count;
    return 0;
}
