#!/usr/bin/env bash
# catchcount.sh counts, for every known-bad design, over how many seeds its
# scenario catches it (idembench run exits 1), with the invariants the
# checker reported. Usage, from anywhere in the repository:
#
#   backends/naive/catchcount.sh            # seeds 1-20
#   SEEDS="1 2 3" backends/naive/catchcount.sh
#   ONLY=racy-takeover backends/naive/catchcount.sh   # one design
#
# It builds the CLI once and runs every design on the memory backend with
# the default sink (fenced) and recovery, except where a line says
# otherwise. A design that only the checker's I7/I8 can see with the
# default sink is listed with that expectation: until the checker has them
# it is expected to pass (exit 0) there.
set -euo pipefail
cd "$(dirname "$0")/../.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin="$tmp/idembench"
go build -o "$bin" ./cmd/idembench

seeds=${SEEDS:-$(seq 1 20)}
n=$(echo $seeds | wc -w)

# design | scenario | extra flags | invariants that should catch it
lines=(
  "check-then-act|duplicates|--duration 1s|I1"
  "cache-on-success|duplicates|--duration 1s|I1"
  "unfenced-takeover|gc-pause|--duration 1500ms|I3 I4"
  "delete-on-error|pause-then-fail|--duration 1500ms|I1"
  "no-expiry|crash-holder|--duration 1s|I6"
  "no-heartbeat|slow-handler|--duration 1500ms --sink plain|I1"
  "token-restart|retryable-failures|--duration 1500ms|I7"
  "token-restart|pause-successor-fails||I7 I8"
  "racy-takeover|takeover-race|--duration 1500ms|I7 I8"
  "racy-takeover|takeover-race|--duration 1500ms --sink plain|I1"
  "unfenced-heartbeat|stale-heartbeat||I8"
  "fail-open|duplicates|--duration 1s|I1"
  "keeps-pending|retryable-failures|--duration 1500ms|I6"
  "unscoped-key|mismatched-requests|--duration 1500ms|I4"
  "retries-uncertain|uncertain-outcomes|--duration 1500ms --no-recovery|I9"
  "unfenced-completer|abandoned-keys|--duration 1s|I1"
  "check-then-act|batch-consumer|--duration 1s|I1"
  "two-step-takeover|takeover-race||I7"
  "fail-on-expiry|gc-pause|--duration 1500ms|I4"
  "touch-on-read|crash-holder|--duration 1500ms|T2"
  "lean-record|duplicates|--duration 1s|I3"
  "skewed-leases|duplicates|--duration 1s --clock-skew 1s|T1"
)

printf '%-20s %-22s %-28s %-8s %-10s %s\n' design scenario flags caught should invariants-seen
for line in "${lines[@]}"; do
  IFS='|' read -r design scenario flags should <<<"$line"
  if [ -n "${ONLY:-}" ] && [ "$design" != "$ONLY" ]; then continue; fi
  caught=0 seen=""
  for seed in $seeds; do
    got=0
    # shellcheck disable=SC2086
    "$bin" run --no-save --engine "naive/$design" --scenario "$scenario" --seed "$seed" $flags >"$tmp/log" 2>&1 || got=$?
    case $got in
      0) ;;
      1) caught=$((caught + 1))
         seen="$seen $(grep -m1 '^verdict' "$tmp/log" | grep -o '[IT][0-9] [0-9]* VIOLATED' | cut -d' ' -f1 | tr '\n' ' ')" ;;
      *) echo "$design $scenario seed $seed: exit $got"; sed 's/^/    /' "$tmp/log"; exit 1 ;;
    esac
  done
  seen=$(echo $seen | tr ' ' '\n' | sort -u | tr '\n' ' ')
  printf '%-20s %-22s %-28s %2d/%-5d %-10s %s\n' "$design" "$scenario" "${flags:--}" "$caught" "$n" "$should" "${seen:--}"
done
