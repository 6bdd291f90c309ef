/* NVML through dlopen: the harness needs no NVML headers or link, and runs where the driver library is absent. */
#include "gpu_state.h"

#include "orthros_base.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The few NVML entry points used, declared as the NVML API documents them (return 0 = NVML_SUCCESS). */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_by_bus_fn)(const char *bus_id, void **device);
typedef int (*nvml_clock_fn)(void *device, int clock_type, unsigned *mhz);
typedef int (*nvml_temp_fn)(void *device, int sensor, unsigned *celsius);
typedef int (*nvml_power_fn)(void *device, unsigned *milliwatts);
typedef int (*nvml_reasons_fn)(void *device, unsigned long long *reasons);

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

/* NVML's clocks event reasons (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*), in bit order. */
static const struct {
    unsigned long long bit;
    const char *name;
} reason_names[] = {{0x1ULL, "gpu_idle"},           {0x2ULL, "app_clocks"},          {0x4ULL, "sw_power_cap"},
                    {0x8ULL, "hw_slowdown"},        {0x10ULL, "sync_boost"},         {0x20ULL, "sw_thermal_slowdown"},
                    {0x40ULL, "hw_thermal_slowdown"}, {0x80ULL, "hw_power_brake"},   {0x100ULL, "display_clocks"}};

const char *orthros_gpu_reasons_text(unsigned long long bits, char *buf, size_t n)
{
    if (!n) return buf;
    buf[0] = '\0';
    size_t used = 0;
    for (int b = 0; b < 64; b++) {
        unsigned long long bit = 1ULL << b;
        if (!(bits & bit)) continue;
        const char *name = NULL;
        for (size_t i = 0; i < sizeof reason_names / sizeof *reason_names; i++)
            if (reason_names[i].bit == bit) name = reason_names[i].name;
        char hex[24];
        if (!name) {
            snprintf(hex, sizeof hex, "0x%llx", bit);
            name = hex;
        }
        int w = snprintf(buf + used, n - used, "%s%s", used ? "," : "", name);
        if (w < 0 || (size_t)w >= n - used) {
            buf[used] = '\0'; /* a name that does not fit is left out whole */
            return buf;
        }
        used += (size_t)w;
    }
    if (!used) snprintf(buf, n, "none");
    return buf;
}

int orthros_gpu_reasons_valid(const char *text)
{
    if (!text || !text[0]) return 0;
    int len = 0;
    for (const char *p = text;; p++) {
        if (*p == ',' || *p == '\0') {
            if (!len) return 0;
            if (!*p) return 1;
            len = 0;
            continue;
        }
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
        len++;
    }
}

/* The NVML entry points, resolved once for the process (NVML is initialised once); ok 0 where it cannot be used. */
static struct {
    int tried, ok;
    nvml_handle_by_bus_fn by_bus;
    nvml_clock_fn clock, max_clock;
    nvml_temp_fn temp;
    nvml_power_fn power, limit;
    nvml_reasons_fn reasons;
} nvml;

static void nvml_open(void)
{
    nvml.tried = 1;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_init_fn init = lib ? (nvml_init_fn)dlsym(lib, "nvmlInit_v2") : NULL;
    nvml.by_bus = lib ? (nvml_handle_by_bus_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2") : NULL;
    nvml.ok = init && nvml.by_bus && init() == 0;
    if (!nvml.ok) return;
    nvml.clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    nvml.max_clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetMaxClockInfo");
    nvml.temp = (nvml_temp_fn)dlsym(lib, "nvmlDeviceGetTemperature");
    nvml.power = (nvml_power_fn)dlsym(lib, "nvmlDeviceGetPowerUsage");
    nvml.limit = (nvml_power_fn)dlsym(lib, "nvmlDeviceGetEnforcedPowerLimit");
    /* Drivers since R535 name it "event"; older ones only "throttle" (the same bits). */
    nvml.reasons = (nvml_reasons_fn)dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!nvml.reasons) nvml.reasons = (nvml_reasons_fn)dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
}

int orthros_gpu_state_read(const char *bus_id, orthros_gpu_state *st)
{
    st->sm_clock_mhz = st->sm_clock_max_mhz = st->mem_clock_mhz = st->temperature_c = NAN;
    st->power_w = st->power_limit_w = NAN;
    st->reasons = 0;
    st->have_reasons = 0;
    if (!bus_id || !bus_id[0]) return ORTHROS_EUNSUPPORTED;
    if (!nvml.tried) nvml_open();
    void *dev = NULL;
    if (!nvml.ok || nvml.by_bus(bus_id, &dev) != 0) return ORTHROS_EUNSUPPORTED;
    unsigned v;
    if (nvml.clock && nvml.clock(dev, NVML_CLOCK_SM, &v) == 0) st->sm_clock_mhz = v;
    if (nvml.max_clock && nvml.max_clock(dev, NVML_CLOCK_SM, &v) == 0) st->sm_clock_max_mhz = v;
    if (nvml.clock && nvml.clock(dev, NVML_CLOCK_MEM, &v) == 0) st->mem_clock_mhz = v;
    if (nvml.temp && nvml.temp(dev, NVML_TEMPERATURE_GPU, &v) == 0) st->temperature_c = v;
    if (nvml.power && nvml.power(dev, &v) == 0) st->power_w = v / 1000.0;
    if (nvml.limit && nvml.limit(dev, &v) == 0) st->power_limit_w = v / 1000.0;
    unsigned long long r;
    if (nvml.reasons && nvml.reasons(dev, &r) == 0) st->reasons = r, st->have_reasons = 1;
    return 0;
}

cJSON *orthros_gpu_state_json(const char *bus_id)
{
    orthros_gpu_state st;
    if (orthros_gpu_state_read(bus_id, &st)) return NULL;
    cJSON *o = cJSON_CreateObject();
    const struct {
        const char *key;
        double v;
    } f[] = {{"sm_clock_mhz", st.sm_clock_mhz},   {"sm_clock_max_mhz", st.sm_clock_max_mhz},
             {"mem_clock_mhz", st.mem_clock_mhz}, {"temperature_c", st.temperature_c},
             {"power_w", st.power_w},             {"power_limit_w", st.power_limit_w}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (isfinite(f[i].v)) cJSON_AddNumberToObject(o, f[i].key, f[i].v);
    if (st.have_reasons) {
        char text[160];
        cJSON_AddStringToObject(o, "clock_limits", orthros_gpu_reasons_text(st.reasons, text, sizeof text));
    }
    return o;
}
