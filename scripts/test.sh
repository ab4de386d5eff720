#!/usr/bin/env bash
# Quick start, command 2: install what is missing, build everything, run every test.
# BUILD_DIR, CTEST_EXCLUDE (a regular expression of test names to leave out) and extra CMake
# arguments (e.g. -DBALLISTIC_SANITIZE=ON) may be given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} -DBALLISTIC_WERROR=${WERROR:-ON} "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"}
