# One place for language level, warnings and numerics flags (see docs/ARCHITECTURE.md).
#
# -ffp-contract=off: g++ contracts a*b+c into FMA by default even in ISO C++ mode; the reference
#   numerics (spec 11.1) are written as a multiply then an add, each rounded.
# No -ffast-math, no -march=native: SIMD paths are chosen at run time.
option(VTRACE_WERROR "Treat warnings as errors" OFF)

function(vtrace_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_23)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
    -Wold-style-cast -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough
    -ffp-contract=off)
  if(VTRACE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
