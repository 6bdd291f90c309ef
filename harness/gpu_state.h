/* What a GPU's clocks, temperature and power read at a moment, through NVML (libnvidia-ml.so.1, loaded at run time;
 * a machine without it or without a GPU reads nothing). For result files: a run's state at its start and end. */
#ifndef ORTHROS_GPU_STATE_H
#define ORTHROS_GPU_STATE_H

#include <cjson/cJSON.h>

/* An object {sm_clock_mhz, mem_clock_mhz, temperature_c, power_w} for the GPU at PCI address bus_id, or NULL when
 * NVML or the GPU cannot be read (no GPU, no driver library, an empty bus id). */
cJSON *orthros_gpu_state_json(const char *bus_id);

#endif
