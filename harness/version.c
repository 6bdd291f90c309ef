/* Build facts baked in by CMake. */
#include "version.h"

#ifndef ORTHROS_GIT_COMMIT
#define ORTHROS_GIT_COMMIT "unknown"
#endif
#ifndef ORTHROS_GIT_DIRTY
#define ORTHROS_GIT_DIRTY 0
#endif
#ifndef ORTHROS_BUILD_TYPE
#define ORTHROS_BUILD_TYPE "unknown"
#endif
#ifndef ORTHROS_C_COMPILER
#define ORTHROS_C_COMPILER "unknown"
#endif
#ifndef ORTHROS_CUDA_COMPILER
#define ORTHROS_CUDA_COMPILER ""
#endif

const char *orthros_tool_git_commit(void) { return ORTHROS_GIT_COMMIT; }
int orthros_tool_git_dirty(void) { return ORTHROS_GIT_DIRTY; }
const char *orthros_tool_build_type(void) { return ORTHROS_BUILD_TYPE; }
const char *orthros_tool_c_compiler(void) { return ORTHROS_C_COMPILER; }
const char *orthros_tool_cuda_compiler(void) { return ORTHROS_CUDA_COMPILER; }
