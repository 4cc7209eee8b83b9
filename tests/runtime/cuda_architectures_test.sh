#!/usr/bin/env bash
# Configure refuses CUDA architectures the strict kernels cannot be built for (cmake/VtraceCuda.cmake):
# below sm_80 (the decode kernel copies with cp.async, which ptxas refuses there) and `all`, with
# one sentence naming the architecture; `native` (it needs a GPU at configure time) with its own.
#   usage: cuda_architectures_test.sh SOURCE_DIR HAVE_CUDA(ON|OFF) CUDA_COMPILER
# Without a CUDA compiler there is nothing to refuse: exit 77 (ctest: Skipped).
set -uo pipefail
source_dir=$1
have_cuda=$2
compiler=$3
if [ "$have_cuda" != ON ]; then
  echo "skipped: this build found no CUDA compiler, so configure never reads the architectures"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-arch.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# expect ARCHITECTURES SENTENCE: configure must fail and say SENTENCE.
expect_refused() {
  local out rc
  out=$(cmake -S "$source_dir" -B "$work/$2" -G Ninja -DVTRACE_CUDA=ON \
    "-DCMAKE_CUDA_COMPILER=$compiler" "-DCMAKE_CUDA_ARCHITECTURES=$1" -DVTRACE_BUILD_BENCH=OFF 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "FAIL: CMAKE_CUDA_ARCHITECTURES=$1 configured (exit 0); it must be refused"
    exit 1
  fi
  # CMake wraps a long message over lines: compare with every run of white space made one space.
  if ! grep -qF -- "$3" <<<"$(tr -s '[:space:]' ' ' <<<"$out")"; then
    echo "FAIL: CMAKE_CUDA_ARCHITECTURES=$1 failed (exit $rc) without saying: $3"
    echo "$out" | tail -20
    exit 1
  fi
  echo "ok: CMAKE_CUDA_ARCHITECTURES=$1 refused: $3"
}
expect_refused 75 sm75 'CMAKE_CUDA_ARCHITECTURES has `75`: the strict kernels copy with cp.async, which needs sm_80 or newer'
expect_refused "90;70" mixed 'CMAKE_CUDA_ARCHITECTURES has `70`'
expect_refused all all 'CMAKE_CUDA_ARCHITECTURES has `all`'
expect_refused native native '`native` needs a GPU at configure time'
