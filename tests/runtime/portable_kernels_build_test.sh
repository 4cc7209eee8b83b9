#!/usr/bin/env bash
# The CPU kernels as a build for another architecture (aarch64, say) compiles them: only the
# portable set (runtime/src/cpu/kernels/kernel_set.h, VTRACE_X86_KERNELS). No machine here is
# anything but x86, so this builds the objects of runtime/CMakeLists.txt's
# vtrace_runtime_portable_kernels, the same files with VTRACE_PORTABLE_KERNELS_ONLY, with the
# build's own flags (warnings as errors where the build has them), and then reads their symbols:
#   - they compile (a branch under `#if !VTRACE_X86_KERNELS` that does not, or warns, fails here);
#   - the AVX2 and AVX-512 files define nothing of the project's, and nothing names their sets;
#   - the portable set and the dispatch (kernel_set, isa_supported) are there.
#   usage: portable_kernels_build_test.sh BUILD_DIR
set -uo pipefail
build=$1
fail() {
  echo "FAIL: $*"
  exit 1
}
command -v nm >/dev/null || {
  echo "skipped: no nm (binutils) to read the objects' symbols"
  exit 77
}
out=$(cmake --build "$build" --target vtrace_runtime_portable_kernels 2>&1) ||
  fail "the portable-only kernels do not build:"$'\n'"$(tail -30 <<<"$out")"
objects="$build/runtime/CMakeFiles/vtrace_runtime_portable_kernels.dir/src/cpu/kernels"
for file in isa dense_linear_engine kernels_portable kernels_avx2 kernels_avx512; do
  [ -s "$objects/$file.cpp.o" ] || fail "no object $objects/$file.cpp.o after the build"
done
# Defined symbols (demangled) of one object, and undefined ones.
defined() { nm -C --defined-only "$objects/$1.cpp.o" | awk '$2 ~ /^[TtWwDdBbRrVu]$/'; }
undefined() { nm -C --undefined-only "$objects/$1.cpp.o"; }
# What an object defines of the project's own: any global symbol, and any local one in its
# namespace (the anonymous-namespace kernels). Not what the compiler adds to every file of a
# sanitizer build: an empty file under ASan still defines its module constructor, `_sub_I_...`.
for file in kernels_avx2 kernels_avx512; do
  symbols=$(defined "$file" | awk '$2 ~ /^[TWDBRVu]$/ || /vtrace::/')
  [ -z "$symbols" ] || fail "$file.cpp.o defines code in a portable-only build:"$'\n'"$symbols"
done
for file in isa dense_linear_engine kernels_portable; do
  if grep -E 'avx2_kernel_set|avx512_kernel_set' <<<"$(defined "$file"; undefined "$file")"; then
    fail "$file.cpp.o names an x86 kernel set in a portable-only build"
  fi
done
grep -q 'portable_kernel_set()' <<<"$(defined kernels_portable)" ||
  fail "kernels_portable.cpp.o does not define portable_kernel_set()"
grep -q 'kernels::kernel_set(' <<<"$(defined dense_linear_engine)" ||
  fail "dense_linear_engine.cpp.o does not define kernel_set(Isa)"
grep -q 'isa_supported' <<<"$(defined isa)" || fail "isa.cpp.o does not define isa_supported"
# And the same objects in the build the suite links do have the x86 sets (the check above
# reads what it should: a symbol name that changed would make it pass for nothing).
grep -q 'avx2_kernel_set()' <<<"$(nm -C --defined-only \
  "$build/runtime/CMakeFiles/vtrace_runtime.dir/src/cpu/kernels/kernels_avx2.cpp.o")" ||
  fail "the linked build's kernels_avx2.cpp.o defines no avx2_kernel_set(): stale names here"
echo "ok: the portable-only CPU kernels build with this build's flags and hold no x86 kernel set"
