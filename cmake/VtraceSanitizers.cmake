# VTRACE_SANITIZE: build everything (libraries, command, tests) under a sanitizer.
#   address  AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer, no recovery: the first
#            report ends the process (scripts/sanitize.sh sets ASAN_OPTIONS/UBSAN_OPTIONS so that
#            a report exits 86, never a code the tests read as a result).
#   thread   ThreadSanitizer.
# Empty (the default): no sanitizer. scripts/sanitize.sh is the documented way to use it
# (docs/RELIABILITY.md); .ci/run runs both.
set(VTRACE_SANITIZE "" CACHE STRING "Sanitizer build: empty, address (ASan+UBSan) or thread")
set_property(CACHE VTRACE_SANITIZE PROPERTY STRINGS "" address thread)
if(VTRACE_SANITIZE STREQUAL "address")
  set(VTRACE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
elseif(VTRACE_SANITIZE STREQUAL "thread")
  set(VTRACE_SANITIZER_FLAGS -fsanitize=thread)
elseif(NOT VTRACE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "VTRACE_SANITIZE is `${VTRACE_SANITIZE}`: use address, thread or nothing")
endif()
if(VTRACE_SANITIZER_FLAGS)
  # C and C++ only: nvcc does not take them (the CUDA kernels are not instrumented).
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${VTRACE_SANITIZER_FLAGS}>")
  add_link_options(${VTRACE_SANITIZER_FLAGS})
  # GCC 12's -Wmaybe-uninitialized misfires on instrumented code (libstdc++'s <regex>, reached
  # from catch.hpp, at -O1 with -fsanitize=address,undefined). The plain build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-Wno-maybe-uninitialized>)
  endif()
endif()
