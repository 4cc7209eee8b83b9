# One place for language level, warnings and numerics flags (see docs/ARCHITECTURE.md).
#
# -Wnull-dereference is left out: at -O3 GCC 12 reports it inside inlined FlatBuffers accessors
#   that are guarded by the verifier (false positives in system headers).
# -ffp-contract=off: g++ contracts a*b+c into FMA by default even in ISO C++ mode; the reference
#   numerics (spec 11.1) are written as a multiply then an add, each rounded.
# No -ffast-math, no -march=native: SIMD paths are chosen at run time.
option(VTRACE_WERROR "Treat warnings as errors" OFF)

function(vtrace_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_23)
  # C++ sources only: a target's CUDA sources (runtime/cuda/) get nvcc's flags there.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
    -Wold-style-cast -Woverloaded-virtual -Wimplicit-fallthrough
    -ffp-contract=off>)
  if(VTRACE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
