/* libFuzzer entry point for the targets of fuzz/targets.c; ORTHROS_FUZZ_TARGET names the one to run.
 * Built only with clang (-DORTHROS_LIBFUZZER=ON; fuzz/README.md). */
#include "targets.h"

#include <stdio.h>
#include <stdlib.h>

static const orthros_fuzz_target *target;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *name = getenv("ORTHROS_FUZZ_TARGET");
    target = name ? orthros_fuzz_find(name) : NULL;
    if (!target) {
        fprintf(stderr, "orthros_libfuzzer: set ORTHROS_FUZZ_TARGET to one of:");
        for (int i = 0; i < orthros_fuzz_n_targets; i++) fprintf(stderr, " %s", orthros_fuzz_targets[i].name);
        fprintf(stderr, "\n");
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    target->run(data, size);
    return 0;
}
