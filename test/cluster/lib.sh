# shellcheck shell=bash
# The settings below are read by the scripts that source this file:
# shellcheck disable=SC2034
# Shared settings and helpers of the cluster harness (sourced, not run).
# Everything the harness builds is cached outside the repository under
# $FNHOST_CACHE (~/.cache/fnhost); everything a running cluster owns (pids,
# logs, certs, kubeconfig, containerd's root and state, etcd data) lives in
# $FNHOST_CLUSTER_DIR (/tmp/fnhost-cluster) and is removed by cluster-down.

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
K8S_STAGING_VERSION="v0.${K8S_VERSION#v1.}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
# The NetworkPolicy enforcer of the test node (its network-policy controller only:
# iptables + ipset). v2.1.0 is the only version the Go module proxy serves here; the
# Go vulnerability database's reports against it are for the parts not run
# (test/cluster/README.md "NetworkPolicy").
KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"

FNHOST_CACHE="${FNHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fnhost}"
K8S_CACHE="$FNHOST_CACHE/kubernetes/$K8S_VERSION"
K8S_BIN="$K8S_CACHE/bin"
TOOLS_BIN="$FNHOST_CACHE/tools/helm-$HELM_VERSION-coredns-$COREDNS_VERSION/bin"
KUBE_ROUTER_BIN="$FNHOST_CACHE/tools/kube-router-$KUBE_ROUTER_VERSION/bin"
IMAGE_CACHE="$FNHOST_CACHE/images"
LOG_BUILD="$FNHOST_CACHE/logs"
TIMINGS="$FNHOST_CACHE/timings.log"

D="${FNHOST_CLUSTER_DIR:-/tmp/fnhost-cluster}"
KUBECONFIG_FILE="$D/kubeconfig"
CONTAINERD_SOCK="$D/containerd/containerd.sock"

# Network of the single node: everything stays on this machine.
POD_CIDR="10.244.0.0/24"
BRIDGE="fnhost0"
BRIDGE_IP="10.244.0.1"
SERVICE_CIDR="10.96.0.0/16"
NODE_NAME="fnhost-node"
CNI_NAME="fnhost"

# sbin last: root tools (iptables, modprobe) for shells whose PATH lacks it, without
# shadowing what PATH already offers.
export PATH="$K8S_BIN:$TOOLS_BIN:$KUBE_ROUTER_BIN:$PATH:/usr/sbin:/sbin"

log() { printf '%s [cluster] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# timed NAME CMD...: runs CMD and appends its wall time to $TIMINGS.
timed() {
  local name="$1"; shift
  local t0=$SECONDS
  "$@"
  local rc=$?
  mkdir -p "$(dirname "$TIMINGS")"
  printf '%s %s %ss rc=%s\n' "$(date -u +%FT%TZ)" "$name" "$((SECONDS - t0))" "$rc" >> "$TIMINGS"
  return $rc
}

# The Debian mirror apt is configured with for SUITE (deb822 .sources or one-line
# .list entries under ${APT_ETC:-/etc/apt}), so debootstrap fetches from wherever
# apt-get already works here (a local mirror, a proxy, a snapshot) and the
# repository names no host. FNHOST_DEBIAN_MIRROR overrides it.
debian_mirror() { # SUITE
  local suite="$1" etc="${APT_ETC:-/etc/apt}" found=""
  if [ -n "${FNHOST_DEBIAN_MIRROR:-}" ]; then echo "$FNHOST_DEBIAN_MIRROR"; return 0; fi
  local f
  for f in "$etc"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    found="$(awk -v suite="$suite" '
      function flush() { if (deb && has && uri != "" && out == "") out = uri; deb = 0; has = 0; uri = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) has = 1 }
      /^URIs:/ { uri = $2 }
      END { flush(); print out }' "$f")"
    [ -n "$found" ] && { echo "${found%/}"; return 0; }
  done
  for f in "$etc"/sources.list "$etc"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    found="$(awk -v suite="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } if ($(i + 1) == suite) { print $i; exit } }' "$f")"
    [ -n "$found" ] && { echo "${found%/}"; return 0; }
  done
  return 1
}

need_go() {
  command -v go >/dev/null || die "Go >= 1.26 is needed to build Kubernetes $K8S_VERSION (https://go.dev/dl/; put it on PATH)"
}

is_root() { [ "$(id -u)" = 0 ]; }

# pid helpers: every process the harness starts has D/pids/NAME.
pidfile() { echo "$D/pids/$1.pid"; }
# Running = the pid is alive and is that program (after a reboot or a killed
# run, a pid file may name a pid the kernel has since given to another process).
running() { # NAME
  local f pid; f="$(pidfile "$1")"
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$1"
}
# A cluster is up when any of its core processes runs.
cluster_processes_running() {
  local p
  for p in etcd kube-apiserver containerd kubelet; do running "$p" && return 0; done
  return 1
}
# start_bg NAME CMD...: starts CMD in its own session, logs to D/logs/NAME.log.
start_bg() {
  local name="$1"; shift
  mkdir -p "$D/pids" "$D/logs"
  if running "$name"; then log "$name already running (pid $(cat "$(pidfile "$name")"))"; return 0; fi
  # No descriptor but stdin/out/err goes with the daemon: a lock its starter held (the harness's
  # fds 8/9, or `flock FILE make cluster-up`'s) would otherwise be held by the daemon until the
  # cluster goes down, and the next `flock FILE ...` would wait for that.
  # shellcheck disable=SC2016 # expanded by the inner bash, for its own descriptors
  setsid bash -c 'for f in /proc/$$/fd/*; do n=${f##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-" 2>/dev/null; fi; done; exec "$@"' start_bg "$@" \
    >>"$D/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
  log "$name started (pid $!, log $D/logs/$name.log)"
}
# stop_pid NAME: SIGTERM, then SIGKILL after a deadline.
stop_pid() {
  local name="$1" f pid i
  f="$(pidfile "$name")"
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then log "$name (pid $pid) ignored SIGTERM; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "$name stopped (pid $pid)"
  fi
  rm -f "$f"
}

# wait_until DESC SECONDS CMD...: polls CMD until it succeeds or time runs out.
wait_until() {
  local desc="$1" secs="$2"; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && { log "timed out after ${secs}s waiting for $desc"; return 1; }
    sleep 0.5
  done
}

kc() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
