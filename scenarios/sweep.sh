#!/usr/bin/env bash
# Seed sweep of built-in scenarios on the reference engine (issue #13
# acceptance: 0 false alarms and 0 inconclusive on the correct engine).
#
# Runs `idembench run --scenario S --seed N --backend B` sequentially for every
# backend B, scenario S and seed N, logs one line per run, keeps the run
# directory of every run that does not exit 0, and prints the count of exit-0
# runs per scenario and backend. Exit status: 0 if every run exited 0, 1 if
# any did not, 2 on a usage error, 5 if the CLI does not build.
#
# Usage:
#   scenarios/sweep.sh [-b BACKENDS] [-s SCENARIOS] [-n SEEDS] [-k SEEDS] [-o OUTDIR] [-- EXTRA RUN FLAGS]
#     -b  comma-separated backends          (default: memory,redis,postgres)
#     -s  comma-separated scenarios         (default: default + the second wave's
#         scenarios: hot-keys capacity takeover-race retryable-failures
#         stale-heartbeat pause-successor-fails mismatched-requests
#         batch-consumer abandoned-keys)
#     -n  seeds: a count (seeds 1..N) or a range A-B     (default: 20)
#     -k  seeds for hot-keys on redis/postgres (count or range; default: 5,
#         the acceptance's "1-5 on Redis and PostgreSQL")
#     -o  directory for the log and failed runs (default: ./idembench-out/sweep-<timestamp>)
#
# redis and postgres use $IDEM_REDIS_URL / $IDEM_POSTGRES_URL (as `idembench run`).
# Example (the figure of issue #13):
#   scenarios/sweep.sh -b redis,postgres
set -uo pipefail
cd "$(dirname "$0")/.."

backends=memory,redis,postgres
scenarios=default,hot-keys,capacity,takeover-race,retryable-failures,stale-heartbeat,pause-successor-fails,mismatched-requests,batch-consumer,abandoned-keys
seeds=20
hotseeds=5
out=""
while getopts "b:s:n:k:o:h" opt; do
  case $opt in
    b) backends=$OPTARG ;;
    s) scenarios=$OPTARG ;;
    n) seeds=$OPTARG ;;
    k) hotseeds=$OPTARG ;;
    o) out=$OPTARG ;;
    h) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sweep.sh: bad flag; see sweep.sh -h" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
extra=("$@")

# seedlist SPEC: "N" -> 1..N, "A-B" -> A..B.
seedlist() {
  case $1 in
    *-*) local a=${1%-*} b=${1#*-}
         [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && $a -le $b ]] || { echo "sweep.sh: bad seed range '$1'" >&2; exit 2; }
         seq "$a" "$b" ;;
    *)   [[ $1 =~ ^[0-9]+$ && $1 -ge 1 ]] || { echo "sweep.sh: bad seed count '$1'" >&2; exit 2; }
         seq 1 "$1" ;;
  esac
}
allseeds=$(seedlist "$seeds") || exit 2
hotlist=$(seedlist "$hotseeds") || exit 2

[ -n "$out" ] || out=idembench-out/sweep-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out/runs" || exit 2
log=$out/sweep.log
bin=$out/idembench
go build -o "$bin" ./cmd/idembench || exit 5

IFS=, read -ra blist <<<"$backends"
IFS=, read -ra slist <<<"$scenarios"
known=$("$bin" scenarios | awk '{print $1}')
for s in "${slist[@]}"; do
  grep -qx -- "$s" <<<"$known" || { echo "sweep.sh: unknown scenario '$s' (idembench scenarios lists them)" >&2; exit 2; }
done

declare -A pass total
echo "# sweep $(date -Is) backends=$backends scenarios=$scenarios seeds=$seeds hot-keys(redis,postgres)=$hotseeds extra=${extra[*]:-}" >>"$log"
allok=0
for b in "${blist[@]}"; do
  for s in "${slist[@]}"; do
    list=$allseeds
    if [ "$s" = hot-keys ] && [ "$b" != memory ]; then list=$hotlist; fi
    for n in $list; do
      dir=$out/runs/$b-$s-$n
      start=$SECONDS rc=0
      "$bin" run --no-progress --scenario "$s" --seed "$n" --backend "$b" --out "$dir" "${extra[@]}" >"$dir.txt" 2>&1 || rc=$?
      verdict=$(grep -m1 '^verdict' "$dir.txt" | cut -c1-120)
      total[$b/$s]=$(( ${total[$b/$s]:-0} + 1 ))
      if [ "$rc" -eq 0 ]; then
        pass[$b/$s]=$(( ${pass[$b/$s]:-0} + 1 ))
        rm -rf "$dir" "$dir.txt"
      else
        allok=1
      fi
      printf '%-9s %-22s seed %-3s exit %-3s %4ds  %s\n' "$b" "$s" "$n" "$rc" $((SECONDS - start)) "${verdict:-(no verdict; see $dir.txt)}" | tee -a "$log"
    done
  done
done

{
  echo
  printf '| %-22s |' scenario
  for b in "${blist[@]}"; do printf ' %-9s |' "$b"; done
  echo
  printf '|%s|' "$(printf -- '-%.0s' {1..24})"
  for b in "${blist[@]}"; do printf '%s|' "$(printf -- '-%.0s' {1..11})"; done
  echo
  for s in "${slist[@]}"; do
    printf '| %-22s |' "$s"
    for b in "${blist[@]}"; do printf ' %-9s |' "${pass[$b/$s]:-0}/${total[$b/$s]:-0}"; done
    echo
  done
  echo "(exit-0 runs / runs; failed runs kept under $out/runs)"
} | tee -a "$log"
rm -f "$bin"
exit $allok
