/* orthros bench: prefill / decode / end-to-end sweeps (DESIGN section 5). */
#ifndef ORTHROS_BENCH_H
#define ORTHROS_BENCH_H

int orthros_cmd_bench(int argc, char **argv);

#endif
