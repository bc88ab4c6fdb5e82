#!/usr/bin/env bash
# The test node's NetworkPolicy enforcer: kube-router's network-policy controller
# alone (iptables + ipset; no routing, no service proxy: the bridge CNI and
# kube-proxy keep those jobs). Started by up.sh; the egress tests switch it off
# and on to prove it is what stops a function pod (test/e2e/egress.cluster.test.ts).
#   usage: netpol.sh on|off|status
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

HEALTH_PORT=20244

healthy() { curl -fsS "http://127.0.0.1:$HEALTH_PORT/healthz"; }
# The controller has written its chains: a pod's traffic meets them from the first sync on.
synced() { iptables -w -S KUBE-ROUTER-FORWARD >/dev/null 2>&1; }

on() {
  [ -x "$KUBE_ROUTER_BIN/kube-router" ] || "$HERE/build-bins.sh" kube-router
  command -v ipset >/dev/null || die "ipset is missing (Debian package ipset; test/cluster/system-deps.sh installs it)"
  start_bg kube-router kube-router --kubeconfig="$KUBECONFIG_FILE" --hostname-override="$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
    --enable-ipv4=true --enable-ipv6=false --service-cluster-ip-range="$SERVICE_CIDR" \
    --health-port="$HEALTH_PORT" --metrics-port=0 --iptables-sync-period=5m --v=1
  wait_until "kube-router healthy" 60 healthy || die "kube-router is not healthy; see $D/logs/kube-router.log"
  wait_until "kube-router's chains" 60 synced || die "kube-router wrote no chains; see $D/logs/kube-router.log"
  log "NetworkPolicy enforced by kube-router $KUBE_ROUTER_VERSION"
}

# Removes what kube-router's policy controller wrote: the jumps from the built-in
# chains, its chains, its ipsets. (Its own --cleanup-config also cleans up the
# service proxy it never ran, and v2.1.0 crashes there with no IPVS in the kernel.)
remove_rules() {
  local rule chain set
  iptables-save -t filter | grep -E '^-A (INPUT|FORWARD|OUTPUT) .*-j KUBE-ROUTER-' | while read -r rule; do
    eval "iptables -w ${rule/-A/-D}" || true
  done || true
  local chains
  mapfile -t chains < <(iptables-save -t filter | sed -n 's/^:\(KUBE-ROUTER-[^ ]*\|KUBE-POD-FW-[^ ]*\|KUBE-NWPLCY-[^ ]*\) .*/\1/p')
  for chain in "${chains[@]}"; do iptables -w -F "$chain" || true; done
  for chain in "${chains[@]}"; do iptables -w -X "$chain" || true; done
  if command -v ipset >/dev/null; then
    ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router)' | while read -r set; do ipset destroy "$set" || true; done || true
  fi
}

off() {
  stop_pid kube-router
  # Its chains and sets go with it: without them every pod's traffic passes.
  remove_rules
  ! synced || die "kube-router's chains are still there after removing them"
  log "NetworkPolicy not enforced (kube-router stopped, its rules removed)"
}

case "${1:-}" in
  on) on ;;
  off) off ;;
  status) if running kube-router && synced; then echo on; else echo off; fi ;;
  *) die "usage: netpol.sh on|off|status" ;;
esac
