#!/usr/bin/env bash
# Two threads against one on the scenes of bench/RESULTS.md, in rounds. Each round runs every
# comparison once, one thread and then two, so that a swing of the machine's speed falls on both.
# It prints each run's speed-up, then for each comparison the range and the median over the rounds.
# The runs of bench/scaling also give the round trip of a cache line between the cores: where some
# runs found the cores near (under 250 ns) and others far, it prints the medians of each apart.
#
#   bench/two_threads.sh [--rounds R] [--build DIR] [--jolt BOXBENCH] [--quick] [WHAT...]
#
# WHAT (default: box gas box1e6 pour landing, and jolt when --jolt is given):
#   box      closed box, 10^5 balls, 60 steps: scaling --repeat 2 --when-faster --each-cpu
#   gas      periodic gas, 10^5 balls, packing 0.3: the same
#   box1e6   closed box, 10^6 balls, 20 steps, regions always: scaling --steps 20
#   pour     demos/scenes/pour.json, 10 s: ballistic run --threads 1, then --threads 2
#   landing  demos/scenes/pour_big.json with friction 0.5, run to 2.4 s once (a checkpoint),
#            then resumed for 0.2 s on one thread and on two
#   jolt     Jolt's BoxBench (shared/anchors/jolt-box) on two threads, Ballistic's box of 10^5
#            balls over 120 steps (--when-faster), BoxBench on one thread: how many times
#            faster Ballistic is per step, on two threads and on one
# --quick runs small worlds for a few steps: it checks that every part runs; its numbers mean
# nothing. Every comparison checks that one and two threads end in the same state hash.
set -euo pipefail
export LC_ALL=C  # printf reads and writes numbers with a decimal point

rounds=5 build=build jolt="" quick=0 what=()
while (( $# > 0 )); do
  case $1 in
    --rounds|--build|--jolt)
      if (( $# < 2 )); then echo "two_threads.sh: $1 needs a value" >&2; exit 2; fi
      case $1 in --rounds) rounds=$2 ;; --build) build=$2 ;; --jolt) jolt=$2 ;; esac
      shift 2 ;;
    --quick) quick=1; shift ;;
    box|gas|box1e6|pour|landing|jolt) what+=("$1"); shift ;;
    *) echo "two_threads.sh: unknown argument '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
if ! [[ $rounds =~ ^[0-9]+$ ]] || (( rounds < 1 || rounds > 1000 )); then
  echo "two_threads.sh: --rounds must be a whole number from 1 to 1000, not '$rounds'" >&2
  exit 2
fi
if (( ${#what[@]} == 0 )); then
  what=(box gas box1e6 pour landing)
  [[ -n $jolt ]] && what+=(jolt)
fi
scaling=$build/bench/scaling ballistic=$build/demos/ballistic
for bin in "$scaling" "$ballistic"; do
  if [[ ! -x $bin ]]; then
    echo "two_threads.sh: '$bin' is not built (cmake --build $build, or give --build DIR)" >&2
    exit 2
  fi
done
if [[ " ${what[*]} " == *" jolt "* ]] && [[ ! -x $jolt ]]; then
  echo "two_threads.sh: jolt needs --jolt with Jolt's BoxBench executable, not '$jolt'" >&2
  exit 2
fi
scenes=$(dirname "$0")/../demos/scenes

# Sizes: the comparisons of bench/RESULTS.md, or small ones with --quick.
if (( quick )); then
  n5=3000 n6=6000 steps=3 steps6=2 jolt_steps=3 pour_s=0.3 land_at=0.3 land_s=0.1
else
  n5=100000 n6=1000000 steps=60 steps6=20 jolt_steps=120 pour_s=10 land_at=2.4 land_s=0.2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "two_threads.sh: $1:" >&2
  cat "$work/out" >&2
  exit 1
}

# Each of these sets one and two: one thread's and two threads' time (ms per step, or seconds).
# scaling's rows: "threads measured ms speed-up ... hash"; the two must end in the same hash. It
# also sets trip: the round trip of a cache line between the cores that scaling measured, in ns.
scaling_ms() {
  "$scaling" --max-threads 2 --project 1 "$@" > "$work/out" 2>&1 || fail "scaling $* failed"
  one="" two=""
  trip=$(grep -o 'between two threads and back: [0-9]* ns' "$work/out" | grep -o '[0-9]* ns$' | cut -d' ' -f1) || true
  [[ -n $trip ]] || fail "scaling $* printed no round trip between the cores"
  read -r one two < <(awk '$2 == "measured" { ms[$1] = $3; hash[$1] = $NF }
    END { if ((1 in ms) && (2 in ms) && hash[1] == hash[2]) print ms[1], ms[2] }' "$work/out") || true
  [[ -n ${two:-} ]] || fail "scaling $* gave no rows for one and two threads, or different state hashes"
}

# One run of the program: sets wall and hash from its statistics.
program() {
  "$ballistic" "$@" --quiet --stats "$work/stats.json" > "$work/out" 2>&1 || fail "ballistic $* failed"
  wall=$(grep -o '"wall_seconds": *[0-9.e+-]*' "$work/stats.json" | grep -o '[0-9.e+-]*$') || true
  hash=$(grep -o '"state_hash": *"0x[0-9a-f]*"' "$work/stats.json" | grep -o '0x[0-9a-f]*') || true
  [[ -n $wall && -n $hash ]] || fail "ballistic $* wrote no wall_seconds or state_hash"
}

# The program on one thread, then on two; the two must end in the same hash.
program_s() {
  program "$@" --threads 1
  one=$wall
  local first=$hash
  program "$@" --threads 2
  two=$wall
  [[ $hash == "$first" ]] || fail "ballistic $* ended in state $first on one thread, $hash on two"
}

# Jolt's ms per step, from BoxBench's "ms_per_step=X": sets jolt_one or jolt_two.
jolt_ms() {
  "$jolt" "$n5" "$1" "$jolt_steps" > "$work/out" 2>&1 || fail "$jolt $n5 $1 $jolt_steps failed"
  local ms
  ms=$(grep -o 'ms_per_step=[0-9.]*' "$work/out" | cut -d= -f2) || true
  [[ -n $ms ]] || fail "$jolt printed no ms_per_step"
  if (( $1 == 1 )); then jolt_one=$ms; else jolt_two=$ms; fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }

if [[ " ${what[*]} " == *" landing "* ]]; then
  sed 's/"sleep_friction": 0.5,/"sleep_friction": 0.5, "friction": 0.5,/' "$scenes/pour_big.json" > "$work/landing.json"
  grep -q '"friction": 0.5' "$work/landing.json" || { echo "two_threads.sh: no friction set in pour_big.json" >&2; exit 1; }
  if (( quick )); then sed -i 's/"count": 100000/"count": 3000/' "$work/landing.json"; fi
  echo "landing: running pour_big.json with friction 0.5 to $land_at s for its checkpoint" >&2
  "$ballistic" run "$work/landing.json" --duration "$land_at" --threads 2 --quiet --checkpoint "$work/landing.ckpt" \
    > "$work/out" 2>&1 || fail "the run to the landing failed"
fi

# One line per run in $work/ratios: "what ratio", and the round trip when scaling measured one.
: > "$work/ratios"
for (( r = 1; r <= rounds; ++r )); do
  for w in "${what[@]}"; do
    trip=""
    case $w in
      box) scaling_ms --scene box --count "$n5" --steps "$steps" --repeat 2 --when-faster --each-cpu ;;
      gas) scaling_ms --scene gas --packing 0.3 --count "$n5" --steps "$steps" --repeat 2 --when-faster --each-cpu ;;
      box1e6) scaling_ms --scene box --count "$n6" --steps "$steps6" ;;
      pour) program_s run "$scenes/pour.json" --duration "$pour_s" ;;
      landing) program_s resume "$work/landing.ckpt" --duration "$land_s" ;;
      jolt)
        jolt_ms 2
        scaling_ms --scene box --count "$n5" --steps "$jolt_steps" --when-faster
        jolt_ms 1
        printf 'round %d  jolt     two threads: Jolt %s ms, Ballistic %s ms: %.2fx; one thread: %s ms, %s ms: %.2fx%s\n' \
          "$r" "$jolt_two" "$two" "$(ratio "$jolt_two" "$two")" "$jolt_one" "$one" "$(ratio "$jolt_one" "$one")" \
          " (round trip $trip ns)"
        echo "jolt-two $(ratio "$jolt_two" "$two") $trip" >> "$work/ratios"
        echo "jolt-one $(ratio "$jolt_one" "$one")" >> "$work/ratios"
        continue ;;
    esac
    printf 'round %d  %-8s one thread %.3f, two threads %.3f: %.3fx%s\n' "$r" "$w" "$one" "$two" "$(ratio "$one" "$two")" \
      "${trip:+ (round trip $trip ns)}"
    echo "$w $(ratio "$one" "$two") $trip" >> "$work/ratios"
  done
done

# The numbers on stdin: "MIN MAX MEDIAN COUNT", nothing when there are none.
stats() {
  sort -g | awk '{ x[NR] = $1 } END { if (NR) print x[1], x[NR], NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2, NR }'
}
# The speed-ups on stdin as "LABEL MIN-MAXx, median Mx (COUNT)".
summary() {
  local lo hi m n
  read -r lo hi m n < <(stats) || return 0
  printf '  %-9s %.2f-%.2fx, median %.2fx (%d)\n' "$1" "$lo" "$hi" "$m" "$n"
}
near_ns=250

echo
echo "speed-ups of two threads over one, $rounds round(s) each:"
if grep -q '^jolt' "$work/ratios"; then echo "  (jolt-two, jolt-one: how many times faster than Jolt per step, on two threads each and on one)"; fi
for w in box gas box1e6 pour landing jolt-two jolt-one; do
  awk -v w="$w" '$1 == w { print $2 }' "$work/ratios" | summary "$w"
done
awk 'NF == 3 { print $3 }' "$work/ratios" > "$work/trips"
if [[ -s $work/trips ]]; then
  read -r lo hi m n < <(stats < "$work/trips")
  printf 'round trip of a cache line between the cores (scaling): %d-%d ns, median %.0f ns (%d runs)\n' "$lo" "$hi" "$m" "$n"
  # Split only where the scenes split below have runs on both sides (a Jolt round's trip alone
  # would leave a side empty).
  if awk -v n="$near_ns" '$1 ~ /^(box|gas|box1e6)$/ && NF == 3 { if ($3 < n) a = 1; else b = 1 }
                          END { exit !(a && b) }' "$work/ratios"; then
    for side in near far; do
      if [[ $side == near ]]; then echo "with the cores near (a round trip under $near_ns ns):"
      else echo "with the cores far (a round trip of $near_ns ns or more):"; fi
      for w in box gas box1e6; do
        awk -v w="$w" -v n="$near_ns" -v side="$side" \
          '$1 == w && NF == 3 && (side == "near") == ($3 < n) { print $2 }' "$work/ratios" | summary "$w"
      done
    done
  fi
fi
