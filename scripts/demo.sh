#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build Release, run the main demo (a window
# when a display exists, otherwise a summary and ballistic-demo.png).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target ballistic
exec build/demos/ballistic demo "$@"
