#!/usr/bin/env bash
# The first step of `make test`: installs the cluster's Debian packages (in
# the foreground: apt holds a lock that other installs would meet), then
# starts what is not cached yet -- Kubernetes + etcd, helm, CoreDNS and the
# node base's Debian rootfs -- in the background, niced, so that the cold
# builds overlap the type check and the unit and integration suites. up.sh
# later waits for them through the build locks (build-bins.sh, images.sh).
#
# The background job watches WATCH_PID (make): when make ends before the
# builds do (a suite failed, Ctrl-C), the builds are ended by their process
# group; Go's build cache keeps what was already compiled.
#   usage: prebuild.sh WATCH_PID
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

watch="${1:?usage: prebuild.sh WATCH_PID}"
"$HERE/system-deps.sh"
need_go

cached() {
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd; do [ -x "$K8S_BIN/$b" ] || return 1; done
  [ -x "$TOOLS_BIN/helm" ] && [ -x "$TOOLS_BIN/coredns" ] && [ -x "$KUBE_ROUTER_BIN/kube-router" ] && [ -f "$IMAGE_CACHE/bookworm-minbase/.done" ]
}
if cached; then log "cluster binaries and rootfs cached"; exit 0; fi

mkdir -p "$LOG_BUILD"
log "starting the cluster builds in the background (niced; log $LOG_BUILD/prebuild.log)"
# setsid: the job leads its own process group, which is what gets ended.
# shellcheck disable=SC2016 # the job's script expands its own variables
setsid bash -c '
  here="$1" watch="$2"
  "$here/build-bins.sh" all & b=$!
  "$here/images.sh" rootfs & r=$!
  while kill -0 "$b" 2>/dev/null || kill -0 "$r" 2>/dev/null; do
    if ! kill -0 "$watch" 2>/dev/null; then
      echo "$(date -u +%H:%M:%S) make (pid $watch) ended before the builds: ending them" >&2
      trap "" TERM
      kill -TERM -- -$$ 2>/dev/null
      exit 1
    fi
    sleep 2
  done
  wait "$b"; rb=$?; wait "$r"; rr=$?
  echo "$(date -u +%H:%M:%S) background builds done (binaries rc=$rb, rootfs rc=$rr)" >&2
' prebuild "$HERE" "$watch" >>"$LOG_BUILD/prebuild.log" 2>&1 < /dev/null 8>&- 9>&- &
echo $! > "$FNHOST_CACHE/prebuild.pid"
