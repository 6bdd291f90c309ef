/* What a GPU's clocks, temperature and power read at a moment, through NVML (libnvidia-ml.so.1, loaded at run time;
 * a machine without it or without a GPU reads nothing). For result files: a run's state at its start and end, and
 * each measured cell's state right after its last timed repetition (the clock the cell ran at, and whether the
 * board held it below its maximum: a long run at the power cap runs at a lower SM clock than a short one). */
#ifndef ORTHROS_GPU_STATE_H
#define ORTHROS_GPU_STATE_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct {
    /* NAN where NVML does not say. */
    double sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz, temperature_c, power_w, power_limit_w;
    /* The active clock event reasons (NVML's clocks event / throttle reasons bit mask); have_reasons 0 when
     * NVML does not say. */
    unsigned long long reasons;
    int have_reasons;
} orthros_gpu_state;

/* The state of the GPU at PCI address bus_id now: 0, or ORTHROS_EUNSUPPORTED when NVML or the GPU cannot be read
 * (no GPU, no driver library, an empty bus id; no error message is set: the caller records nothing). */
int orthros_gpu_state_read(const char *bus_id, orthros_gpu_state *st);

/* The names of the reasons in bits that limit the clock, comma-separated in bit order ("sw_power_cap",
 * "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake", "sync_boost", "app_clocks",
 * "display_clocks", "gpu_idle"; other bits as "0x..."), or "none"; truncated to fit n. Returns buf. */
const char *orthros_gpu_reasons_text(unsigned long long bits, char *buf, size_t n);

/* 1 when text is a list orthros_gpu_reasons_text can write (names of lowercase letters, digits, '_' and "0x"
 * hex, comma-separated, no empty name), for readers of result files. */
int orthros_gpu_reasons_valid(const char *text);

/* An object {sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz, temperature_c, power_w, power_limit_w, clock_limits}
 * (each where NVML says) for the GPU at PCI address bus_id, or NULL when NVML or the GPU cannot be read. */
cJSON *orthros_gpu_state_json(const char *bus_id);

#endif
