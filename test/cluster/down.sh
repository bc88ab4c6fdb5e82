#!/usr/bin/env bash
# Stops the test cluster and removes everything it made on the machine:
# workloads, processes (by their pid files), containers and their shims,
# mounts under the state dir, pod network namespaces and veths, the bridge,
# iptables chains of kube-proxy, kube-router, the bridge plugin and the API server guard.
# The logs are kept in $FNHOST_CACHE/last-cluster-logs for debugging.
# Safe to run when nothing is up.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
t0=$SECONDS

# 1. Let the kubelet tear pods down through CNI while it still runs.
if running kube-apiserver && running kubelet && [ -f "$KUBECONFIG_FILE" ]; then
  log "deleting workloads"
  timeout 20 kubectl --kubeconfig "$KUBECONFIG_FILE" delete deploy,rs,sts,ds,job,cronjob --all -A --wait=false >/dev/null 2>&1 || true
  timeout 40 kubectl --kubeconfig "$KUBECONFIG_FILE" delete pods --all -A --grace-period=1 --wait=true >/dev/null 2>&1 || true
fi

# 2. Processes, node first, then the control plane. The NetworkPolicy enforcer
#    goes with its rules and sets (netpol.sh off).
"$HERE/netpol.sh" off || log "netpol.sh off failed; see $D/logs/kube-router.log"
for p in coredns kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid "$p"; done

# 3. Containers left over, then containerd (its shims exit with their tasks).
if running containerd; then
  CTR=(ctr --address "$CONTAINERD_SOCK" -n k8s.io)
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
    "${CTR[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
  done
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do
    for _ in 1 2 3 4 5 6 7 8 9 10; do "${CTR[@]}" tasks delete -f "$t" >/dev/null 2>&1 && break; sleep 0.3; done
  done
  for c in $("${CTR[@]}" containers ls -q 2>/dev/null); do "${CTR[@]}" containers delete "$c" >/dev/null 2>&1 || true; done
fi
stop_pid containerd
# Shims of this containerd (found by its socket in their arguments) that outlived it.
for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null); do
  log "ending leftover shim pid $pid"; kill -KILL "$pid" 2>/dev/null || true
done

# 4. Pod network namespaces (those holding an address of the pod range) and veths.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cni-'); do
  if ip -n "$ns" -4 addr show 2>/dev/null | grep -q "inet ${POD_CIDR%.*}\."; then ip netns delete "$ns" 2>/dev/null || true; fi
done
for v in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link delete "$v" 2>/dev/null || true; done
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"

# 5. iptables: kube-proxy's chains, the bridge plugin's masquerade chains of this network, the guard.
if [ -x "$K8S_BIN/kube-proxy" ] && command -v iptables >/dev/null; then
  "$K8S_BIN/kube-proxy" --cleanup --proxy-mode=iptables >/dev/null 2>&1 || true
fi
if command -v iptables >/dev/null; then
  iptables -w -t nat -S POSTROUTING 2>/dev/null | grep -F "name: \\\"$CNI_NAME\\\"" | while read -r rule; do
    chain="$(sed -n 's/.* -j \(CNI-[0-9a-f]*\).*/\1/p' <<<"$rule")"
    eval "iptables -w -t nat ${rule/-A/-D}" 2>/dev/null || true
    [ -n "$chain" ] && { iptables -w -t nat -F "$chain" 2>/dev/null; iptables -w -t nat -X "$chain" 2>/dev/null; }
  done
  for hook in OUTPUT FORWARD; do
    while iptables -w -D "$hook" -j FNHOST-SERVICE-CIDR 2>/dev/null; do :; done
  done
  iptables -w -F FNHOST-SERVICE-CIDR 2>/dev/null; iptables -w -X FNHOST-SERVICE-CIDR 2>/dev/null
  while iptables -w -t mangle -D FORWARD -d "$SERVICE_CIDR" -j DROP 2>/dev/null; do :; done
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    # The kubelet's own chains (kube-proxy --cleanup leaves them).
    while $ipt -w -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
    while $ipt -w -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
    $ipt -w -F KUBE-FIREWALL 2>/dev/null; $ipt -w -X KUBE-FIREWALL 2>/dev/null
    for t in filter nat mangle; do $ipt -w -t $t -X KUBE-KUBELET-CANARY 2>/dev/null; done
    for g in 6443:FNHOST-APISERVER 10250:FNHOST-KUBELET; do
      # (raw PREROUTING now; filter INPUT where an older harness put them)
      while $ipt -w -t raw -D PREROUTING -p tcp --dport "${g%%:*}" -j "${g#*:}" 2>/dev/null; do :; done
      $ipt -w -t raw -F "${g#*:}" 2>/dev/null; $ipt -w -t raw -X "${g#*:}" 2>/dev/null
      while $ipt -w -D INPUT -p tcp --dport "${g%%:*}" -j "${g#*:}" 2>/dev/null; do :; done
      $ipt -w -F "${g#*:}" 2>/dev/null; $ipt -w -X "${g#*:}" 2>/dev/null
    done
  done
fi

# 6. Mounts under the state dir (kubelet volumes, its root bind, container rootfs), deepest first.
if [ -d "$D" ]; then
  # Mount points have no white space here (the harness makes them all).
  # shellcheck disable=SC2013
  for m in $(awk -v d="$D" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
fi

# 7. Empty cgroups the kubelet made (cgroup v1 hierarchies), deepest first.
for h in /sys/fs/cgroup/*/; do
  [ -d "$h/kubepods" ] && find "$h/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# 8. The state dir, keeping its logs.
if [ -d "$D" ]; then
  mkdir -p "$FNHOST_CACHE"
  rm -rf "$FNHOST_CACHE/last-cluster-logs"
  [ -d "$D/logs" ] && cp -r "$D/logs" "$FNHOST_CACHE/last-cluster-logs"
  rm -rf "$D" || log "could not remove $D completely: $(find "$D" -maxdepth 3 | head -5)"
fi
mkdir -p "$(dirname "$TIMINGS")"
printf '%s %s %ss rc=0\n' "$(date -u +%FT%TZ)" cluster-down "$((SECONDS - t0))" >> "$TIMINGS"
log "cluster down (logs kept in $FNHOST_CACHE/last-cluster-logs)"
