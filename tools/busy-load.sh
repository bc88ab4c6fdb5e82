#!/usr/bin/env bash
# Runs a command beside busy loops, the load `make test` must hold under (issue 30):
# two loops per core by default, every loop and the command at the same niceness, so
# the command gets the share of the CPU it would get on a busy laptop or shared CI
# runner. The loops stop when the command ends, fails or is interrupted.
#
#   tools/busy-load.sh [-n loops-per-core] [-p niceness] -- command [args...]
#   tools/busy-load.sh -- make test-integration
#   tools/busy-load.sh -- npx mocha --extension ts --timeout 120000 test/gateway/idle.int.test.ts
#
# The load average is printed when the command starts and ends (other work on the
# machine adds to it; quote it with the result). Exit status: the command's.
set -euo pipefail

per_core=2
niceness=5
while getopts 'n:p:h' opt; do
  case "$opt" in
    n) per_core="$OPTARG" ;;
    p) niceness="$OPTARG" ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ $# -eq 0 ]; then echo "error: no command given (usage: tools/busy-load.sh [-n loops-per-core] [-p niceness] -- command...)" >&2; exit 2; fi
case "$per_core" in ''|*[!0-9]*) echo "error: -n wants a whole number of loops per core, got '$per_core'" >&2; exit 2 ;; esac
case "$niceness" in ''|*[!0-9-]*) echo "error: -p wants a niceness (-20..19), got '$niceness'" >&2; exit 2 ;; esac

cores=$(nproc)
loops=$((per_core * cores))
pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
stop_loops() {
  # Only the loops this script started, by their ids.
  if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; fi
  pids=()
}
trap stop_loops EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq 1 "$loops"); do
  nice -n "$niceness" sh -c 'while :; do :; done' &
  pids+=("$!")
done
echo "busy-load: $loops loops ($per_core per core on $cores cores) at nice $niceness; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
status=0
nice -n "$niceness" "$@" || status=$?
echo "busy-load: command exited $status; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
