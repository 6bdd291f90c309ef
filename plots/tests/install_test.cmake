# The installed binary draws its figures (issue 23: from an out-of-tree build or an installed copy every figure
# failed, "plots/common.gp: cannot open"): `cmake --install BUILD --prefix P` into a fresh folder outside any
# source tree, then P/bin/orthros plot, run from P with ORTHROS_PLOTS_DIR unset, must write each figure of the
# committed bench, eval and anchor files as a PNG. Run by ctest (plots/tests/CMakeLists.txt) with BUILD and SRC.
string(RANDOM LENGTH 8 tag)
set(tmp "$ENV{TMPDIR}")
if(NOT tmp)
  set(tmp /tmp)
endif()
set(prefix "${tmp}/orthros-install-${tag}")
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} --prefix ${prefix} failed (${rc})")
endif()
foreach(f bin/orthros share/orthros/plots/common.gp)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
set(out ${prefix}/figures)
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ORTHROS_PLOTS_DIR
                        ${prefix}/bin/orthros plot ${SRC}/data/results/h200-2026-11-29/bench-llama3.2-1b.json
                        ${SRC}/data/results/h200-2026-12-01/anchors.json ${SRC}/data/results/evals-h200-2026-11-29/niah-single.json
                        ${SRC}/data/results/evals-h200-2026-11-29/mqar.json --out ${out}
                WORKING_DIRECTORY ${prefix} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed orthros plot failed (${rc}):\n${log}")
endif()
foreach(fig prefill_latency speedup attention_op niah mqar)
  file(SIZE ${out}/${fig}.png size)
  if(NOT size GREATER 1000)
    message(FATAL_ERROR "the installed orthros drew no ${fig}.png:\n${log}")
  endif()
endforeach()
message(STATUS "installed in ${prefix}: P/bin/orthros drew every figure from its compiled-in scripts")
file(REMOVE_RECURSE ${prefix})
