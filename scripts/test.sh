#!/usr/bin/env bash
# Quick start, command 2: install what is missing, build everything, run every test.
# It configures `build` as scripts/demo.sh does, so after the demo only the tests and benchmarks
# are left to build. BUILD_DIR, BUILD_TYPE, WERROR (ON: warnings as errors, as CI builds),
# CTEST_EXCLUDE (a regular expression of test names to leave out) and extra CMake arguments
# (e.g. -DBALLISTIC_SANITIZE=ON) may be given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${WERROR:+-DBALLISTIC_WERROR=$WERROR} "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
# A test that hangs fails after 10 minutes: the longest take seconds, a minute or two under ASan.
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --timeout 600 ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"}
