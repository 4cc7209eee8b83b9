#!/usr/bin/env bash
# Builds the project under a sanitizer and runs its tests (docs/RELIABILITY.md, "Sanitizers").
#
#   scripts/sanitize.sh address [ctest args...]   ASan + LeakSanitizer + UBSan, no recovery:
#                                                 the whole suite, in build-asan
#   scripts/sanitize.sh thread  [ctest args...]   TSan: the concurrency tests (below), in build-tsan
#
# Extra arguments go to ctest (e.g. -R recorder). JOBS (default: nproc) sets the parallelism;
# BUILD_DIR overrides the build folder. .ci/run runs both modes after `make test`.
#
# A sanitizer report ends the process with exit code 86 (ASAN_OPTIONS/UBSAN_OPTIONS/TSAN_OPTIONS
# below), a code no test or vtrace command gives for a result, so a report is never read as a
# mismatch (1) or a skip (77): the test fails and ctest prints the report.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift || true
jobs=${JOBS:-$(nproc)}
case "$mode" in
  address)
    build=${BUILD_DIR:-build-asan}
    # detect_leaks: LeakSanitizer is part of the run. Death tests spawn vtrace children, which
    # inherit these options.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86
    targets=(all)
    ctest_filter=()
    ;;
  thread)
    build=${BUILD_DIR:-build-tsan}
    export TSAN_OPTIONS=halt_on_error=1:exitcode=86:second_deadlock_stack=1
    # The tests whose code runs on more than one thread: the writer's background compressor and
    # its timer flush (every schema container test), the recorder's serialized calls from four
    # threads and the replay of such a trace, the conformance suite's submits from several
    # threads, the CPU runtimes' worker pools (their kernel tests), the CUDA kernels' device
    # code run on the host (a thread per CUDA thread: a missing __syncthreads is a data race),
    # and the cuda runtimes on the emulated cudart (a thread per stream beside the submitting
    # threads: the runtime's locking).
    targets=(schema_test recorder_test runtime_conformance_test runtime_cpu_kernels_test
             runtime_cuda_arith_test runtime_cuda_emulated_test)
    ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [ctest args...]" >&2
    exit 2
    ;;
esac

scripts/install-deps.sh cmake ninja-build g++
# -g1: line tables and function names, all a sanitizer's report needs (file:line of every frame,
# inlined ones too), without the full debug information of -g, which made the ASan build about a
# third slower (docs/RELIABILITY.md).
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DVTRACE_SANITIZE="$mode" -DVTRACE_WERROR="${WERROR:-ON}" -DVTRACE_BUILD_BENCH=OFF
fi
# A build without the CUDA toolkit has no runtime_cuda_emulated_test: only existing targets.
ninja -C "$build" build.ninja >/dev/null  # regenerated first when a CMakeLists.txt changed
known=$(ninja -C "$build" -t targets all)
present=()
for target in "${targets[@]}"; do
  if [ "$target" = all ] || grep -q "^$target: " <<<"$known"; then
    present+=("$target")
  else
    echo "sanitize.sh $mode: this build has no $target (no CUDA toolkit): left out"
  fi
done
targets=("${present[@]}")
if [ "$mode" = thread ]; then
  ctest_filter=(-L "^($(IFS='|'; echo "${targets[*]}"))\$")
fi
start=$(date +%s)
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
built=$(date +%s)
echo "sanitize.sh $mode: built in $((built - start)) s"
# Every test is labelled with its executable (tests/CMakeLists.txt): the thread mode runs the
# labels of the executables it built.
(cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 1500 "${ctest_filter[@]}" "$@")
echo "sanitize.sh $mode: tests ran in $(($(date +%s) - built)) s"
