# vtrace_add_replay_test(<name> <trace> [RUNTIME <runtime>...] [CHECK <check>])
#
# Registers one ctest per runtime, named replay.<name>.<runtime> and labelled `golden`, that runs
#   vtrace --quiet replay <trace> --runtime <runtime> [--check <check>] --exit-skip=125
# with the package's vtrace command (the target vtrace::vtrace: the installed command under
# find_package(vtrace), the one being built inside vtrace's own build, where traces/ uses it).
#   <trace>    a recorded trace; a relative path is relative to the calling CMakeLists.txt.
#   RUNTIME    registry names (default: reference).
#   CHECK      how readbacks are compared (`vtrace replay --check`: bits, ulp:N; default bits).
# Verdicts: exit 0 (every outcome as recorded) passes; 1 (a mismatch) and 2 (an unreadable trace,
# a bad option) fail; 3, a runtime this machine cannot open (unknown here, its device missing),
# becomes 125 through --exit-skip and ctest reports the test Skipped (SKIP_RETURN_CODE), never
# passed.
function(vtrace_add_replay_test name trace)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "CHECK" "RUNTIME")
  if(arg_UNPARSED_ARGUMENTS OR arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "vtrace_add_replay_test(${name} ${trace}): unexpected "
                        "`${arg_UNPARSED_ARGUMENTS}${arg_KEYWORDS_MISSING_VALUES}`; the form is "
                        "vtrace_add_replay_test(<name> <trace> [RUNTIME <runtime>...] [CHECK <check>])")
  endif()
  if(NOT TARGET vtrace::vtrace)
    message(FATAL_ERROR "vtrace_add_replay_test(${name}): no vtrace::vtrace; call find_package(vtrace) first")
  endif()
  if(NOT arg_RUNTIME)
    set(arg_RUNTIME reference)
  endif()
  set(check)
  if(DEFINED arg_CHECK)
    set(check --check ${arg_CHECK})
  endif()
  cmake_path(ABSOLUTE_PATH trace BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  foreach(runtime IN LISTS arg_RUNTIME)
    add_test(NAME replay.${name}.${runtime}
             COMMAND $<TARGET_FILE:vtrace::vtrace> --quiet replay ${trace} --runtime ${runtime}
                     ${check} --exit-skip=125)
    set_tests_properties(replay.${name}.${runtime} PROPERTIES SKIP_RETURN_CODE 125 LABELS golden)
  endforeach()
endfunction()
