#!/usr/bin/env bash
# shellcheck disable=SC2154  # cmake, ctest, cxx, work, ... are assigned by the sourced ENV
# The installed package as a product sees it. Usage: install_test.sh ENV, where ENV (written by
# tests/install/CMakeLists.txt) names the tools, the build and source trees, the work directory
# and the install layout. In order:
#   1. cmake --install of the build into WORK/stage;
#   2. the staged tree: the six libraries, every public header of their include/ trees and the
#      generated schema headers, the schema files, the CMake package, vtrace.pc, bin/vtrace and
#      nothing else in bin, nothing of tests/, bench/ or workloads/; every installed header
#      compiles against the stage, all together and each on its own;
#   3. examples/tiny_product configured (a fresh build directory, CMAKE_PREFIX_PATH=stage only,
#      no package registry) and built; vtrace must have been found in the stage and no compile
#      line may point into the source or build tree's libraries;
#   4. the product run plainly and with VTRACE_CAPTURE=capture.vtrace: the same output, and the
#      trace written (and committed: no .partial left);
#   5. the installed `vtrace replay capture.vtrace` (reference, cpu): exit 0;
#   6. the product reconfigured with that trace: its ctest (vtrace_add_replay_test) passes on
#      reference and cpu and reports an unknown runtime Skipped (exit 3 -> --exit-skip -> skip);
#   7. tests/install/pkg_config_probe.cpp built with only `pkg-config --cflags --libs vtrace`
#      (PKG_CONFIG_PATH=stage) and run;
#   8. the stage moved to another folder: the probe built and run again from there; and
#      find_package(vtrace COMPONENTS ...) accepts library names and names an unknown one;
#   9. the source configured with BUILD_SHARED_LIBS=ON: still the same static archives.
# Exit 0 when all of it held, 1 at the first step that did not (named), 77 (skipped) only when a
# tool is missing. WORK is removed at the start and kept afterwards for inspection.
set -Eeuo pipefail
trap 'echo "FAILED (install_test.sh line $LINENO): $BASH_COMMAND"; exit 1' ERR
[ $# -eq 1 ] || { echo "usage: install_test.sh ENV"; exit 2; }
# shellcheck source=/dev/null  # ENV assigns cmake, ctest, cxx, ... (tests/install/CMakeLists.txt)
source "$1"

skip() { echo "skipped: $1"; exit 77; }
fail() { echo "FAILED: $1"; exit 1; }
have() { [ -n "$1" ] && command -v "$1" >/dev/null 2>&1; }
have "$cmake" || skip "cmake not found ($cmake)"
have "$ctest" || skip "ctest not found ($ctest)"
have "$cxx" || skip "the C++ compiler was not found ($cxx)"
have "$pkg_config" || skip "pkg-config not found (Debian: pkg-config)"
[ -z "$make_program" ] || have "$make_program" || skip "the build tool was not found ($make_program)"

started=$(date +%s)
rm -rf "$work"
mkdir -p "$work"
stage=$work/stage
log=$work/log
mkdir -p "$log"
# A command's output goes to its log; shown when it fails.
quietly() {
  local name=$1
  shift
  if ! "$@" >"$log/$name.log" 2>&1; then
    cat "$log/$name.log"
    fail "$name: $*"
  fi
}

echo "1. cmake --install $build --prefix $stage"
quietly install "$cmake" --install "$build" --prefix "$stage"

echo "2. the staged tree"
missing=()
for lib in runtime schema recorder replayer drift report; do
  [ -f "$stage/$libdir/libvtrace_$lib.a" ] || missing+=("$libdir/libvtrace_$lib.a")
  headers=0
  while IFS= read -r header; do
    headers=$((headers + 1))
    [ -f "$stage/$includedir/$header" ] || missing+=("$includedir/$header")
  done < <(cd "$source/$lib/include" && find vtrace -name '*.h' | sort)
  [ "$headers" -gt 0 ] || fail "$source/$lib/include holds no header to look for"
done
for fbs in "$source"/schema/*.fbs; do
  name=$(basename "$fbs" .fbs)
  [ -f "$stage/$datadir/vtrace/$name.fbs" ] || missing+=("$datadir/vtrace/$name.fbs")
  [ -f "$stage/$includedir/vtrace/schema/${name}_generated.h" ] ||
    missing+=("$includedir/vtrace/schema/${name}_generated.h")
done
for file in vtraceConfig.cmake vtraceConfigVersion.cmake vtraceTargets.cmake \
            VtraceDependencies.cmake VtraceReplayTest.cmake; do
  [ -f "$stage/$libdir/cmake/vtrace/$file" ] || missing+=("$libdir/cmake/vtrace/$file")
done
[ -f "$stage/$libdir/pkgconfig/vtrace.pc" ] || missing+=("$libdir/pkgconfig/vtrace.pc")
[ -x "$stage/$bindir/vtrace" ] || missing+=("$bindir/vtrace")
[ ${#missing[@]} -eq 0 ] || fail "not installed: ${missing[*]}"
for file in "$stage/$bindir"/*; do
  [ "$(basename "$file")" = vtrace ] || fail "$bindir holds more than vtrace: $file"
done
leaked=$(cd "$stage" && find . \( -name '*_test*' -o -name '*bench*' -o -name '*workload*' \
                                  -o -name '*catch*' \) | sort)
[ -z "$leaked" ] || fail "tests, benchmarks or workloads were installed: $leaked"

export PKG_CONFIG_PATH=$stage/$libdir/pkgconfig
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
pc_cflags=$("$pkg_config" --cflags vtrace)
pc_libs=$("$pkg_config" --libs vtrace)
(cd "$stage/$includedir" && find vtrace -name '*.h' | sort | sed 's/.*/#include "&"/') \
  >"$work/all_headers.cpp"
# shellcheck disable=SC2086  # the flags are words
quietly all_headers "$cxx" -std=c++23 $cxx_flags -fsyntax-only "$work/all_headers.cpp" $pc_cflags
# Each header on its own too: a header that compiles only after another one is a product's
# compile error waiting for the include order to change.
mkdir -p "$work/one_header"
one_header() {  # $1: a header path under include/
  local source_file
  source_file="$work/one_header/$(echo "$1" | tr '/.' '__').cpp"
  printf '#include "%s"\n' "$1" >"$source_file"
  # shellcheck disable=SC2086
  "$cxx" -std=c++23 $cxx_flags -fsyntax-only "$source_file" $pc_cflags >"$source_file.log" 2>&1 ||
    { cat "$source_file.log"; echo "not self-contained: $1"; return 1; }
}
export -f one_header
export cxx cxx_flags pc_cflags work
(cd "$stage/$includedir" && find vtrace -name '*.h' | sort) >"$work/headers.txt"
xargs -P 2 -I{} bash -c 'one_header "$1"' _ {} <"$work/headers.txt" ||
  fail "an installed header does not compile on its own (above)"

echo "3. examples/tiny_product against the stage: configure and build"
product=$work/tiny_product
make_program_arg=()
[ -z "$make_program" ] || make_program_arg=(-DCMAKE_MAKE_PROGRAM="$make_program")
configure_product() {
  quietly configure "$cmake" -S "$source/examples/tiny_product" -B "$product" -G "$generator" \
    "${make_program_arg[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$cxx_flags" -DCMAKE_PREFIX_PATH="$stage" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@"
}
configure_product
found=$(sed -n 's/^vtrace_DIR:PATH=//p' "$product/CMakeCache.txt")
[ "$found" = "$stage/$libdir/cmake/vtrace" ] || fail "vtrace was found in '$found', not in the stage"
quietly build "$cmake" --build "$product" -j 2
if grep -E -- "$source/(runtime|schema|recorder|replayer|drift|report)/|$build/schema/" \
     "$product/compile_commands.json"; then
  fail "the product's compile lines point into the source or build tree"
fi

echo "4. the product, plainly and with VTRACE_CAPTURE"
cd "$work"
plain=$(env -u VTRACE_CAPTURE "$product/tiny_product") || fail "tiny_product exited $?"
captured=$(VTRACE_CAPTURE=capture.vtrace "$product/tiny_product") ||
  fail "tiny_product exited $? under VTRACE_CAPTURE"
echo "$captured"
[ "$plain" = "$captured" ] || fail "capturing changed the product's output: '$plain' vs '$captured'"
[ -s capture.vtrace ] || fail "VTRACE_CAPTURE=capture.vtrace wrote no trace"
[ ! -e capture.vtrace.partial ] || fail "the trace was left uncommitted (capture.vtrace.partial)"

echo "5. the installed vtrace replays the trace"
for runtime in reference cpu; do
  quietly "replay-$runtime" "$stage/$bindir/vtrace" replay capture.vtrace --runtime "$runtime"
done

echo "6. vtrace_add_replay_test: the product's ctest replays its trace"
configure_product -DTINY_PRODUCT_TRACE="$work/capture.vtrace" \
  "-DTINY_PRODUCT_RUNTIMES=reference;cpu;no-such-runtime"
quietly product-ctest "$ctest" --test-dir "$product" --output-on-failure
for runtime in reference cpu; do
  grep -Eq "replay\.tiny_product\.$runtime \.*   Passed" "$log/product-ctest.log" ||
    { cat "$log/product-ctest.log"; fail "replay.tiny_product.$runtime did not pass"; }
done
grep -Eq 'replay\.tiny_product\.no-such-runtime \.*\*\*\*Skipped' "$log/product-ctest.log" ||
  { cat "$log/product-ctest.log"; fail "an unavailable runtime was not reported Skipped"; }

echo "7. pkg-config --cflags --libs vtrace: a probe using all six libraries"
# shellcheck disable=SC2086
quietly probe-build "$cxx" -std=c++23 $cxx_flags "$source/tests/install/pkg_config_probe.cpp" \
  -o "$work/pkg_config_probe" $pc_cflags $pc_libs
quietly probe-run "$work/pkg_config_probe" "$work/probe.vtrace"

echo "8. the package moved elsewhere, and find_package COMPONENTS"
# A prefix is relocatable: the CMake package and vtrace.pc find everything relative to themselves.
moved=$work/moved
cp -a "$stage" "$moved"
rm -rf "$stage"
export PKG_CONFIG_PATH=$moved/$libdir/pkgconfig
moved_cflags=$("$pkg_config" --cflags vtrace)
moved_libs=$("$pkg_config" --libs vtrace)
# shellcheck disable=SC2086
quietly moved-probe-build "$cxx" -std=c++23 $cxx_flags "$source/tests/install/pkg_config_probe.cpp" \
  -o "$work/moved_probe" $moved_cflags $moved_libs
quietly moved-probe-run "$work/moved_probe" "$work/moved_probe.vtrace"
components=$work/components
mkdir -p "$components"
cat >"$components/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(components LANGUAGES CXX)
find_package(vtrace CONFIG REQUIRED COMPONENTS ${WANTED})
CMAKE
quietly components-known "$cmake" -S "$components" -B "$components/known" \
  -DCMAKE_PREFIX_PATH="$moved" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DWANTED=recorder;drift"
if "$cmake" -S "$components" -B "$components/unknown" -DCMAKE_PREFIX_PATH="$moved" \
     -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DWANTED=recordr >"$log/components-unknown.log" 2>&1; then
  fail "find_package(vtrace COMPONENTS recordr) succeeded"
fi
grep -q "vtrace has no component 'recordr'" "$log/components-unknown.log" ||
  { cat "$log/components-unknown.log"; fail "an unknown component was not named"; }

echo "9. BUILD_SHARED_LIBS=ON configures the same static archives"
# The package is made for archives (vtrace.pc, the link of the installed command, the CUDA
# runtimes linking vtrace_runtime and back): the switch must not turn the libraries shared.
quietly shared-configure "$cmake" -S "$source" -B "$work/shared-config" -G "$generator" \
  "${make_program_arg[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DBUILD_SHARED_LIBS=ON \
  -DVTRACE_BUILD_TESTS=OFF -DVTRACE_BUILD_BENCH=OFF
grep -q "BUILD_SHARED_LIBS is ignored" "$log/shared-configure.log" ||
  fail "configuring with BUILD_SHARED_LIBS=ON did not say it is ignored"
build_file=$work/shared-config/build.ninja
[ -f "$build_file" ] || build_file=$work/shared-config/Makefile
for lib in runtime schema recorder replayer drift report; do
  grep -rqs "libvtrace_$lib\.a" "$work/shared-config" --include='*.ninja' --include='*.make' \
    --include=Makefile || fail "BUILD_SHARED_LIBS=ON: no libvtrace_$lib.a in $build_file"
done
if grep -rqs 'libvtrace_[a-z_]*\.so' "$work/shared-config" --include='*.ninja' --include='*.make'; then
  fail "BUILD_SHARED_LIBS=ON made a vtrace library shared"
fi

echo "install test passed in $(($(date +%s) - started)) s (work directory: $work)"
