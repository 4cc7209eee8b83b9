#!/usr/bin/env bash
# Makes the HTML drift report of the default decode trace (reference vs cpu-splitk, --resync) and
# a screenshot of it in headless Chromium, for a person to look at.
#   scripts/html-report-screenshot.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, vtrace-report)
# Needs Debian's chromium (`make test` installs it). Exit 0 when both files were written.
set -euo pipefail
build=${1:-build}
out=${2:-vtrace-report}
vtrace="$build/cli/vtrace"
[ -x "$vtrace" ] || { echo "html-report-screenshot: $vtrace is not built (run make)" >&2; exit 2; }
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "html-report-screenshot: chromium is not installed" >&2; exit 3; }
mkdir -p "$out"
"$vtrace" -q record --workload decode -o "$out/decode.vtrace"
# compare exits 1 when the runtimes differ, which they do here.
"$vtrace" -q compare "$out/decode.vtrace" --runtimes reference,cpu-splitk --resync \
  --html "$out/report.html" >/dev/null || [ $? -eq 1 ]
"$chromium" --headless --no-sandbox --disable-gpu --window-size=1200,2400 \
  --screenshot="$out/report.png" "file://$(realpath "$out/report.html")" >/dev/null 2>&1
echo "report: $out/report.html"
echo "screenshot: $out/report.png"
