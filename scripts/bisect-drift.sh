#!/usr/bin/env bash
# Bisect a history of runtime changes for the commit that makes a trace stop replaying bit-exactly.
#
#   git bisect start <bad> <good>
#   git bisect run scripts/bisect-drift.sh TRACE RUNTIME [CHECK]
#
# At each commit git checks out, this builds vtrace and replays TRACE on RUNTIME (`--check CHECK`,
# default bits). Exit codes, as `git bisect run` reads them:
#   0    the replay matches: the commit is good;
#   1    the replay mismatches (drift, a different outcome): the commit is bad;
#   125  the commit cannot be judged: the build fails, or the runtime cannot run here
#        (`vtrace replay --exit-skip=125`): git skips it;
#   128  the trace cannot be read or the options are wrong (vtrace's exit 2): bisecting is
#        meaningless, so git stops.
# Environment (the defaults build this repository's CMake tree):
#   VTRACE_BISECT_BUILD   the build command (default: cmake -S . -B build-bisect -G Ninja
#                         -DCMAKE_BUILD_TYPE=Release -DVTRACE_BUILD_TESTS=OFF && cmake --build
#                         build-bisect --target vtrace)
#   VTRACE_BISECT_VTRACE  the vtrace binary the build leaves (default: build-bisect/cli/vtrace)
# TRACE must live outside the work tree (or be committed in every commit of the range): git checks
# out other trees under it.
set -u
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: git bisect run $0 TRACE RUNTIME [CHECK]" >&2
  exit 128
fi
trace=$1
runtime=$2
check=${3:-bits}
if [ ! -r "$trace" ]; then
  echo "bisect-drift: $trace cannot be read" >&2
  exit 128
fi
build=${VTRACE_BISECT_BUILD:-"cmake -S . -B build-bisect -G Ninja -DCMAKE_BUILD_TYPE=Release -DVTRACE_BUILD_TESTS=OFF >/dev/null && cmake --build build-bisect --target vtrace >/dev/null"}
vtrace=${VTRACE_BISECT_VTRACE:-build-bisect/cli/vtrace}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
if ! bash -c "$build"; then
  echo "bisect-drift: $commit does not build: skipped" >&2
  exit 125
fi
"$vtrace" --quiet replay "$trace" --runtime "$runtime" --check "$check" --exit-skip=125
rc=$?
case $rc in
  0) echo "bisect-drift: $commit replays $trace on $runtime: match"; exit 0 ;;
  1) echo "bisect-drift: $commit replays $trace on $runtime: mismatch"; exit 1 ;;
  125) echo "bisect-drift: $commit cannot run $runtime here: skipped" >&2; exit 125 ;;
  *) echo "bisect-drift: vtrace exited $rc (the trace or the options): stopping" >&2; exit 128 ;;
esac
