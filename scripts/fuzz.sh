#!/usr/bin/env bash
# Fuzzes the scene parser, sequences of World calls and settling piles with libFuzzer (clang, ASan + UBSan):
#   scripts/fuzz.sh [SECONDS]     each target for SECONDS (default 60; CI runs 45)
# The scene target starts from the example scenes, both from fuzz/regressions. A failure stops
# with the input saved as build-fuzz/<target>-crash-*: fix it, add a test, and keep the input in
# fuzz/regressions/<scene|world|pile>-<what>.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build-fuzz
scripts/install-deps.sh clang libclang-rt-14-dev
CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBALLISTIC_FUZZ=ON -DBALLISTIC_BUILD_PYTHON=OFF \
  -DBALLISTIC_BUILD_TESTS=OFF -DBALLISTIC_BUILD_BENCHES=OFF -DBALLISTIC_BUILD_DEMOS=OFF \
  -DBALLISTIC_BUILD_RENDERER=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target fuzz_scene fuzz_world fuzz_pile
for target in fuzz_scene fuzz_world fuzz_pile; do
  corpus="$build/corpus-$target"
  mkdir -p "$corpus"
  [[ $target == fuzz_scene ]] && cp demos/scenes/*.json "$corpus/"
  # Inputs that once failed (fuzz/regressions/<scene|world>-*) run first, every time.
  find fuzz/regressions -name "${target#fuzz_}-*" -exec cp {} "$corpus/" \;
  echo "fuzz.sh: $target for ${seconds} s"
  "$build/fuzz/$target" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -artifact_prefix="$build/$target-" -print_final_stats=1 2>&1 | tail -n 12
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "fuzz.sh: $target found a failure (above)" >&2; exit 1; }
done
