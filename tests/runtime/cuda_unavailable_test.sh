#!/usr/bin/env bash
# `vtrace replay --runtime cuda|cuda-cublas` on a machine where the CUDA runtimes cannot run:
# exit 3 (kExitRuntimeUnavailable, docs/CLI.md) and one sentence saying why.
#   usage: cuda_unavailable_test.sh VTRACE TRACE HAVE_CUDA(ON|OFF)
# With HAVE_CUDA=ON the build has the runtimes and the sentence names the missing device; with OFF
# it says the build has none. Where a GPU is present the no-device path cannot be seen: exit 77
# (ctest: Skipped).
set -uo pipefail
vtrace=$1
trace=$2
have_cuda=$3
# cuBLAS is loaded when cuda-cublas opens, never linked: the binary starts on a machine without it.
if [ "$have_cuda" = ON ]; then
  # Without readelf that check cannot be made: the test is skipped, not passed.
  command -v readelf >/dev/null || { echo "skipped: readelf is not installed (binutils)"; exit 77; }
  if readelf -d "$vtrace" | grep -q 'NEEDED.*libcublas'; then
    echo "FAIL: $vtrace needs libcublas at start (readelf -d): it would not start without cuBLAS"
    exit 1
  fi
  echo "ok: $vtrace does not need libcublas to start"
fi
for runtime in cuda cuda-cublas; do
  err=$("$vtrace" replay "$trace" --runtime "$runtime" 2>&1 >/dev/null)
  rc=$?
  if [ "$have_cuda" = ON ] && [ "$rc" -eq 0 ]; then
    echo "runtime $runtime opened and replayed: this machine has a GPU, the no-device path is not reachable"
    exit 77
  fi
  [ "$rc" -eq 3 ] || { echo "FAIL: --runtime $runtime exited $rc, not 3: $err"; exit 1; }
  if [ "$have_cuda" = ON ]; then
    expected="$runtime: no CUDA device is available (cudaGetDeviceCount: "
  else
    expected="unknown runtime \`$runtime\` (this build has no CUDA runtime"
  fi
  case "$err" in
    *"$expected"*) ;;
    *) echo "FAIL: --runtime $runtime said '$err', which lacks '$expected'"; exit 1 ;;
  esac
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || { echo "FAIL: more than one line: $err"; exit 1; }
  echo "ok: --runtime $runtime exits 3: $err"
done
