#!/usr/bin/env bash
# Races: the engine's tests under ThreadSanitizer. Debian's libtbb is not instrumented, so
# ThreadSanitizer would not see its synchronisation and would report every hand-over between
# tasks as a race; this builds oneTBB from Debian's own source package with ThreadSanitizer
# (nothing is installed system-wide), then the tests, and runs them against it.
# BUILD_DIR (default build-tsan) and a gtest filter for the world tests (test_physics,
# test_free_flight, test_determinism, test_queries; default: all) may be given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=$(realpath -m "${BUILD_DIR:-build-tsan}")
filter=${1:-'*'}
tbb=$build/onetbb
mkdir -p "$build"

if [ ! -e "$tbb/lib/libtbb.so.12" ]; then
    # The source of the installed libtbb-dev, fetched with a private apt source list and cache.
    version=$(dpkg-query -W -f='${Version}' libtbb-dev)
    apt_dir=$build/apt
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/src"
    printf 'deb-src http://deb.debian.org/debian bookworm main\ndeb-src http://deb.debian.org/debian-security bookworm-security main\ndeb-src http://deb.debian.org/debian bookworm-updates main\n' >"$apt_dir/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=- -o "Dir::State::Lists=$apt_dir/lists"
              -o "APT::Sandbox::User=$(id -un)")
    apt-get "${apt_opts[@]}" update -qq
    (cd "$apt_dir/src" && apt-get "${apt_opts[@]}" source --download-only -qq "onetbb=$version")
    tar -xf "$apt_dir"/src/onetbb_*.orig.tar.* -C "$build"
    src=$(find "$build" -maxdepth 1 -type d -name 'oneTBB-*' | head -n 1)
    cmake -S "$src" -B "$build/onetbb-build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBB_TEST=OFF \
          -DTBB_SANITIZE=thread -DTBB_STRICT=OFF >/dev/null
    # Quiet: GCC warns that ThreadSanitizer does not model oneTBB's standalone fences.
    cmake --build "$build/onetbb-build" -j "$(nproc)" --target tbb >"$build/onetbb-build.log" 2>&1 ||
        { tail -n 40 "$build/onetbb-build.log"; exit 1; }
    mkdir -p "$tbb/lib"
    find "$build/onetbb-build" -name 'libtbb.so.12*' -exec cp -P {} "$tbb/lib/" \;
fi

# With the portable kernels (BALLISTIC_SIMD off): races do not depend on the kernels, and so CI
# also builds and runs the engine as on a CPU for which no SIMD table is built. Line tables only
# (-g1): the reports keep their files and lines, and the build is faster.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBALLISTIC_WERROR=OFF -DBALLISTIC_BUILD_PYTHON=OFF \
      -DBALLISTIC_BUILD_BENCHES=OFF -DBALLISTIC_SIMD=OFF -DCMAKE_CXX_FLAGS=-fsanitize=thread \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' \
      -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$build" -j "$(nproc)" --target test_physics test_free_flight test_determinism test_queries test_queue test_cells test_validation test_task_system test_simd test_regions
export LD_LIBRARY_PATH=$tbb/lib TSAN_OPTIONS=halt_on_error=1:abort_on_error=0:exitcode=66
# Not grep -q: quitting at the first match can end ldd with SIGPIPE, which pipefail counts.
ldd "$build/tests/test_physics" | grep "$tbb/lib/libtbb" >/dev/null || { echo "tsan.sh: not linked to $tbb/lib/libtbb" >&2; exit 1; }
# The test programs as many at a time as the machine has cores, the longest first. When one ends,
# the last lines of its output show, or all of it when it failed; the script fails when any did.
run_one() {
  local log status=0
  log=$(mktemp)
  "$build/tests/$1" "${@:2}" >"$log" 2>&1 || status=$?
  if [ "$status" -eq 0 ]; then tail -n 3 "$log"; else cat "$log"; echo "tsan.sh: $* failed ($status)" >&2; fi
  rm -f "$log"
  return $(( status != 0 ))
}
export -f run_one
export build
# The regions at every thread count. The million-ball pour, the landing pile and every example
# scene take one to two minutes each here; the shorter pours, piles and scenes exercise the same
# code, and all three run in the Release suite.
regions='-RegionScenes.TheMillionBallPourSameBitsAtOneTwoAndFourThreads:RegionBoundaries.ALandingPileStaysInTheRegions:RegionScenes.EveryExampleSceneSameBitsForAnyThreadCount'
printf '%s\n' "test_regions --gtest_filter=$regions" test_task_system "test_determinism --gtest_filter=$filter" \
  "test_free_flight --gtest_filter=$filter" "test_physics --gtest_filter=$filter" test_validation \
  "test_queries --gtest_filter=$filter" test_cells test_simd test_queue |
  xargs -P "$(nproc)" -L 1 bash -c 'run_one "$@"' _
