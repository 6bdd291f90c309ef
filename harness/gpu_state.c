/* NVML through dlopen: the harness needs no NVML headers or link, and runs where the driver library is absent. */
#include "gpu_state.h"

#include <dlfcn.h>
#include <stddef.h>

/* The few NVML entry points used, declared as the NVML API documents them (return 0 = NVML_SUCCESS). */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_by_bus_fn)(const char *bus_id, void **device);
typedef int (*nvml_clock_fn)(void *device, int clock_type, unsigned *mhz);
typedef int (*nvml_temp_fn)(void *device, int sensor, unsigned *celsius);
typedef int (*nvml_power_fn)(void *device, unsigned *milliwatts);

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

cJSON *orthros_gpu_state_json(const char *bus_id)
{
    if (!bus_id || !bus_id[0]) return NULL;
    /* Kept open for the process: NVML is initialised once. */
    static void *lib;
    static int tried, ok;
    if (!tried) {
        tried = 1;
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        nvml_init_fn init = lib ? (nvml_init_fn)dlsym(lib, "nvmlInit_v2") : NULL;
        ok = init && init() == 0;
    }
    if (!ok) return NULL;
    nvml_handle_by_bus_fn by_bus = (nvml_handle_by_bus_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_clock_fn clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    nvml_temp_fn temp = (nvml_temp_fn)dlsym(lib, "nvmlDeviceGetTemperature");
    nvml_power_fn power = (nvml_power_fn)dlsym(lib, "nvmlDeviceGetPowerUsage");
    void *dev = NULL;
    if (!by_bus || by_bus(bus_id, &dev) != 0) return NULL;
    cJSON *o = cJSON_CreateObject();
    unsigned v;
    if (clock && clock(dev, NVML_CLOCK_SM, &v) == 0) cJSON_AddNumberToObject(o, "sm_clock_mhz", v);
    if (clock && clock(dev, NVML_CLOCK_MEM, &v) == 0) cJSON_AddNumberToObject(o, "mem_clock_mhz", v);
    if (temp && temp(dev, NVML_TEMPERATURE_GPU, &v) == 0) cJSON_AddNumberToObject(o, "temperature_c", v);
    if (power && power(dev, &v) == 0) cJSON_AddNumberToObject(o, "power_w", v / 1000.0);
    return o;
}
