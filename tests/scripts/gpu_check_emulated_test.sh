#!/usr/bin/env bash
# scripts/gpu-check.sh run, every step but the benchmarks, on the emulated cudart
# (tests/runtime/cuda_emulator/): a bin folder (VTRACE_GPU_CHECK_BIN) holding vtrace_cuda_emulated
# as vtrace and runtime_cuda_emulated_test as runtime_conformance_test. The run must exit 0, its
# summary must call every step ok and name cuda-cublas's first divergent event, the benchmarks
# must be skipped (no vtrace_bench: emulated times mean nothing), and the reports must exist.
# What a GPU adds is the device itself: its kernels, cuBLAS, timings.
# Usage: gpu_check_emulated_test.sh VTRACE_CUDA_EMULATED RUNTIME_CUDA_EMULATED_TEST REPO_ROOT.
# Exits 77 (skipped) without python3, which the script reads the drift report with.
set -eu
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
for binary in "$1" "$2"; do
  [ -x "$binary" ] || { echo "gpu_check_emulated_test: $binary is not built"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-gpu-check-emulated.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$1" "$work/bin/vtrace"
ln -s "$2" "$work/bin/runtime_conformance_test"
cd "$3"
rc=0
OUT="$work/out" VTRACE_GPU_CHECK_BIN="$work/bin" bash scripts/gpu-check.sh run >"$work/run.log" 2>&1 || rc=$?
summary=$work/out/summary.txt
cat "$summary"
fail() {
  echo "gpu_check_emulated_test: $*"
  tail -40 "$work/run.log"
  exit 1
}
[ "$rc" -eq 0 ] || fail "gpu-check.sh run exited $rc, not 0"
for step in conformance-cuda conformance-cuda-cublas record-decode-cuda replay-on-reference \
  replay-on-cpu compare-reference-cuda-cpu drift-cublas extract-first-divergence \
  repro-on-reference repro-on-cuda-cublas; do
  grep -q "^ok    $step (" "$summary" || fail "the summary does not call step $step ok"
done
grep -q "first divergence of cuda-cublas: event [0-9]" "$summary" || fail "no first divergence named"
grep -q "^skip  bench-cuda: no vtrace_bench" "$summary" || fail "the benchmarks were not skipped"
grep -q "every step did what it must" "$summary" || fail "no final verdict"
for file in decode-cuda.vtrace compare-bitwise.json drift-cublas.json drift-cublas.html \
  repro.vtrace repro.json; do
  [ -s "$work/out/$file" ] || fail "$file is missing or empty"
done
echo "gpu_check_emulated_test: every step did what it must"
