/* Build facts baked in by CMake, for --version and the `tool` record of result files. */
#ifndef ORTHROS_VERSION_FACTS_H
#define ORTHROS_VERSION_FACTS_H

const char *orthros_tool_git_commit(void);
int orthros_tool_git_dirty(void);
const char *orthros_tool_build_type(void);
const char *orthros_tool_c_compiler(void);
const char *orthros_tool_cuda_compiler(void);

#endif
