#define _GNU_SOURCE
#include "results.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void orthros_result_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(buf, n, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
}

cJSON *orthros_result_new(const char *kind, int argc, char **argv, uint64_t seed, const orthros_backend *be)
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
    orthros_result_now(now, sizeof now);
    cJSON_AddStringToObject(run, "start_time", now);
    cJSON_AddStringToObject(run, "end_time", "");
    cJSON_AddNumberToObject(run, "seed", (double)seed);

    cJSON *env = cJSON_AddObjectToObject(root, "environment");
    char host[256] = "unknown", cpu[256];
    gethostname(host, sizeof host - 1);
    cpu_model(cpu, sizeof cpu);
    struct utsname u;
    cJSON_AddStringToObject(env, "host", host);
    cJSON_AddStringToObject(env, "os", uname(&u) == 0 ? u.release : "unknown");
    cJSON_AddStringToObject(env, "cpu", cpu);
    cJSON_AddNumberToObject(env, "cpu_cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddStringToObject(env, "backend", be->name);
    cJSON *dev = cJSON_AddObjectToObject(env, "device");
    cJSON_AddStringToObject(dev, "name", be->info.name);
    cJSON_AddNumberToObject(dev, "sm_count", be->info.sm_count);
    cJSON_AddNumberToObject(dev, "memory_bytes", (double)be->info.mem_total);
    cJSON_AddNumberToObject(dev, "clock_mhz", be->info.clock_mhz);
    cJSON_AddNumberToObject(dev, "memory_clock_mhz", be->info.mem_clock_mhz);
    cJSON_AddNumberToObject(dev, "driver_version", be->info.driver_version);
    cJSON_AddNumberToObject(dev, "runtime_version", be->info.runtime_version);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", be->info.cc_major, be->info.cc_minor);
    cJSON_AddStringToObject(dev, "compute_capability", be->info.cc_major ? cc : "");
    cJSON_AddStringToObject(dev, "kernels", be->info.kernels);
    return root;
}

int orthros_result_write(const char *path, const cJSON *root)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char *text = cJSON_Print(root);
    if (!text) return orthros_error(ORTHROS_ENOMEM, "out of memory printing %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(text);
        return orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", tmp, strerror(errno));
    }
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok;
    free(text);
    if (!ok || rename(tmp, path) != 0) return orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

int orthros_result_load(cJSON **out, const char *path)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        return orthros_error(ORTHROS_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)(size > 0 ? size : 0) + 1);
    size_t got = buf ? fread(buf, 1, (size_t)(size > 0 ? size : 0), f) : 0;
    fclose(f);
    if (!buf) return orthros_error(ORTHROS_ENOMEM, "out of memory reading %s", path);
    buf[got] = '\0';
    *out = cJSON_Parse(buf);
    free(buf);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return orthros_error(ORTHROS_EFORMAT, "%s: not a JSON result file", path);
    }
    return 0;
}
