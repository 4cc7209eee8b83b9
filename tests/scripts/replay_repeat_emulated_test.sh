#!/usr/bin/env bash
# `vtrace replay --repeat N` on a runtime that is not deterministic: the command on the emulated
# cudart (tests/runtime/cuda_emulator/), whose cuBLAS with VTRACE_CUDA_EMULATOR_GEMM_ORDER=alternate
# adds its block sums last to first on every second call. With --check none the replay itself
# matches, so exit 1 and the NONDETERMINISM line can only come from the repeated runs; without the
# variable the same command says the runs are identical and exits 0.
# Usage: replay_repeat_emulated_test.sh VTRACE_CUDA_EMULATED.
set -eu
vtrace=$1
[ -x "$vtrace" ] || { echo "replay_repeat_emulated_test: $vtrace is not built"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-repeat-emulated.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "replay_repeat_emulated_test: $*"
  cat "$work/out.txt" 2>/dev/null || true
  exit 1
}

"$vtrace" record --workload decode --runtime cuda-cublas -o "$work/decode.vtrace" \
  >"$work/out.txt" 2>&1 || fail "recording the decode workload on cuda-cublas failed"

rc=0
"$vtrace" replay "$work/decode.vtrace" --runtime cuda-cublas --check none --repeat 2 \
  >"$work/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "a deterministic cuda-cublas: --repeat 2 exited $rc, not 0"
grep -q "^repeat: 2 runs on cuda-cublas identical" "$work/out.txt" ||
  fail "a deterministic cuda-cublas: no 'repeat: 2 runs on cuda-cublas identical' line"

rc=0
VTRACE_CUDA_EMULATOR_GEMM_ORDER=alternate "$vtrace" replay "$work/decode.vtrace" \
  --runtime cuda-cublas --check none --repeat 3 >"$work/out.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "a nondeterministic cuda-cublas: --repeat 3 exited $rc, not 1"
grep -q "^verdict: match" "$work/out.txt" || fail "the replay itself did not match (--check none)"
grep -Eq "^NONDETERMINISM: 3 runs on cuda-cublas differ; first at event [0-9]+ " "$work/out.txt" ||
  fail "no NONDETERMINISM line naming the first differing event"
echo "replay --repeat: identical runs exit 0, differing runs exit 1 with the first differing event"
