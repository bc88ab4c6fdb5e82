#!/usr/bin/env bash
# The cluster step of `make test`: brings the cluster up (waiting for the
# builds prebuild.sh started, or building what is missing), runs every
# *.cluster.test.ts once on that one cluster, and takes the cluster down
# again when this run started it (FNHOST_KEEP_CLUSTER=1 keeps it). The exit
# status is mocha's, or up.sh's when the cluster could not start, so a failed
# cluster test fails make test.
#   usage: run-tests.sh [mocha args...]
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

# Started by this run = no harness process was running before it.
started=1
cluster_processes_running && started=0

# shellcheck disable=SC2317 # called by the EXIT trap
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$started" = 1 ] && [ "${FNHOST_KEEP_CLUSTER:-}" != 1 ]; then
    log "taking down the cluster this run started (FNHOST_KEEP_CLUSTER=1 keeps it)"
    "$HERE/down.sh" || rc=1
  elif [ "$started" = 0 ]; then
    log "the cluster was already up before this run: left up"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

t0=$SECONDS
timed cluster-up-for-tests "$HERE/up.sh" all || { log "the test cluster did not come up (see above)"; exit 1; }
cd "$REPO" || exit
PATH="$REPO/node_modules/.bin:$PATH" timed cluster-tests mocha --config "$HERE/mocharc.cluster.json" "$@"
rc=$?
log "cluster step: $((SECONDS - t0)) s, mocha exit $rc"
exit "$rc"
