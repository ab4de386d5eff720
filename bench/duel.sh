#!/usr/bin/env bash
# Two builds of `scaling` on one thread each, at the same time: A on CPU 0 and B on CPU 1 for the
# given seconds, then the other way round. Each runs again and again in its half. It prints the
# mean ms/step of each build on each CPU, and B's time over A's in each half (the two ran then
# side by side), and their geometric mean (in which the CPUs' own speeds cancel).
#
#   bench/duel.sh [--seconds S] A B [scaling options...]
#   bench/duel.sh old/bench/scaling build/bench/scaling --scene gas --packing 0.3 --steps 30
#
# Runs taken in turn on a shared VM drift with the load of other tenants, by more than the gap
# between two builds. Runs taken side by side share each phase of that load. An A/A duel gives
# the method's own spread. A binary that knows --project is given --project 1, and every run
# --max-threads 1, so that older builds of `scaling` serve as well.
set -euo pipefail

seconds=60
if [[ ${1:-} == --seconds ]]; then
  seconds=${2:-}
  shift 2 || true
fi
if ! [[ $seconds =~ ^[0-9]+$ ]] || (( seconds < 1 || seconds > 3600 )); then
  echo "duel.sh: --seconds must be a whole number from 1 to 3600, not '$seconds'" >&2
  exit 2
fi
if (( $# < 2 )); then
  echo "usage: bench/duel.sh [--seconds S] A B [scaling options...]" >&2
  exit 2
fi
a=$1 b=$2
shift 2
for bin in "$a" "$b"; do
  if [[ ! -x $bin ]]; then
    echo "duel.sh: binary '$bin' is not an executable file" >&2
    exit 2
  fi
done
if (( $(nproc) < 2 )); then
  echo "duel.sh: needs two CPUs, this machine has $(nproc)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --project 1 for a binary that knows it.
knows_project() { "$1" --help 2>/dev/null | grep -q -- '--project'; }
options_a=() options_b=()
if knows_project "$a"; then options_a=(--project 1); fi
if knows_project "$b"; then options_b=(--project 1); fi

# Runs a binary pinned to a CPU again and again for $seconds; one line per run: ms/step and hash.
# A run that takes more than ten times the half (or fails) ends the duel with its output.
loop() {
  local bin=$1 cpu=$2 out=$3
  shift 3
  local end=$((SECONDS + seconds)) log="$out.run"
  : > "$out"
  while (( SECONDS < end )); do
    if ! timeout $((10 * seconds)) taskset -c "$cpu" "$bin" "$@" --max-threads 1 > "$log" 2>&1; then
      echo "duel.sh: '$bin $* --max-threads 1' on CPU $cpu failed:" >&2
      cat "$log" >&2
      return 1
    fi
    # The one-thread row: "1 measured ms ..." (or "1 ms ..." in older builds), the hash last.
    local row
    row=$(awk '$1 == "1" { for (k = 2; k <= NF; ++k) if ($k ~ /^[0-9.]+$/) { print $k, $NF; exit } }' "$log")
    if [[ -z $row ]]; then
      echo "duel.sh: '$bin $* --max-threads 1' printed no one-thread row:" >&2
      cat "$log" >&2
      return 1
    fi
    echo "$row" >> "$out"
  done
}

# One half: A on CPU $1, B on the other.
half() {
  local failed=0
  loop "$a" "$1" "$work/a$1" "${options_a[@]}" "${args[@]}" & local pa=$!
  loop "$b" $((1 - $1)) "$work/b$((1 - $1))" "${options_b[@]}" "${args[@]}" & local pb=$!
  wait "$pa" || failed=1
  wait "$pb" || failed=1
  return "$failed"
}
args=("$@")
half 0 || exit 1
half 1 || exit 1

mean() { awk '{ s += $1; n += 1 } END { printf "%.3f", s / n }' "$1"; }
runs() { wc -l < "$1" | tr -d ' '; }
hashes() { awk '{ print $2 }' "$@" | sort -u | tr '\n' ' '; }
for f in a0 a1 b0 b1; do
  if [[ ! -s $work/$f ]]; then
    echo "duel.sh: no run ended within a half of $seconds s ($f): give more --seconds" >&2
    exit 1
  fi
done
a0=$(mean "$work/a0") a1=$(mean "$work/a1") b0=$(mean "$work/b0") b1=$(mean "$work/b1")
printf '%-4s %-10s %-18s %-18s %s\n' "" "" "CPU 0" "CPU 1" "state hashes"
printf '%-4s %-10s %-18s %-18s %s\n' A ms/step "$a0 ($(runs "$work/a0"))" "$a1 ($(runs "$work/a1"))" \
  "$(hashes "$work/a0" "$work/a1")"
printf '%-4s %-10s %-18s %-18s %s\n' B ms/step "$b0 ($(runs "$work/b0"))" "$b1 ($(runs "$work/b1"))" \
  "$(hashes "$work/b0" "$work/b1")"
# Each half's ratio pairs the runs that ran side by side: A on CPU 0 with B on CPU 1, then the swap.
awk -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" 'BEGIN {
  first = b1 / a0; second = b0 / a1
  printf "B\047s time over A\047s: first half %.3f, second half %.3f, both %.3f (geometric mean)\n",
         first, second, sqrt(first * second)
}'
