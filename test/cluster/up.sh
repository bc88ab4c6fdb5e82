#!/usr/bin/env bash
# Starts the single-node test cluster; idempotent (a part that is already up
# is left alone).   usage: up.sh [all|control-plane|node|images]
#   control-plane  etcd, kube-apiserver, kube-controller-manager, kube-scheduler
#   node           containerd, CNI bridge, kubelet, kube-proxy, CoreDNS, kube-router's
#                  NetworkPolicy controller (+ pause image)
#   images         the Node base image and, when runtime-image/Dockerfile exists,
#                  localhost/fnhost-runtime:dev
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

what="${1:-all}"
# The lock lives beside the state dir, not in it: cleaning leftovers below removes the dir.
exec 9>"$D.up.lock"
flock 9   # two test runs calling ensureCluster() at once start it only once

# A state dir whose processes are all gone is what a killed run (a reboot, a
# session ended mid-suite) left: etcd still holds that run's namespaces,
# releases and cluster-scoped objects, so a cluster started on it is not the
# empty one every test expects (a ClusterRole of the killed run's release
# refused the next run's helm install). down.sh cleans it all (keeping its
# logs in $FNHOST_CACHE/last-cluster-logs) and the cluster starts empty.
if [ -d "$D" ] && ! cluster_processes_running && [ -n "$(ls -A "$D" 2>/dev/null)" ]; then
  log "$D holds a cluster whose processes are gone (a killed run?): cleaning it up first"
  "$HERE/down.sh"
fi
mkdir -p "$D/pids" "$D/logs"

need_bins() {
  local b
  for b in "$@"; do
    [ -x "$K8S_BIN/$b" ] || [ -x "$TOOLS_BIN/$b" ] || [ -x "$KUBE_ROUTER_BIN/$b" ] || { log "$b is not built yet: building"; timed build-bins "$HERE/build-bins.sh" all; return; }
  done
}

apiserver_ready() { kc get --raw /readyz; }
etcd_ready() { local h; h="$(curl -fsS http://127.0.0.1:2379/health)" && grep -q '"health":"true"' <<<"$h"; }

# The bridge and its address exist before the API server and any pod: the
# API server is advertised on the bridge's address (so pods reach it through
# the kubernetes Service) and CoreDNS binds it.
ensure_bridge() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  local addrs; addrs="$(ip -4 addr show dev "$BRIDGE")"   # (no pipe into grep -q under pipefail)
  grep -q "inet $BRIDGE_IP/" <<<"$addrs" || ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# guard PORT CHAIN: drops TCP to PORT on this machine unless it comes from
# the machine itself (lo) or, with "pods", also from the pods (the bridge).
# The API server listens on every address so that pods reach it through the
# kubernetes Service (lo + bridge); the kubelet listens on the bridge's
# address because Kubernetes refuses a loopback node IP, and anonymous
# access to it must stay on this machine (lo only: pods are dropped).
# In the raw table's PREROUTING, before any filter chain: kube-router's
# policy controller marks every pod's traffic accepted in filter INPUT ahead
# of later rules (and keeps its jump first), so a guard there would never run.
# (Traffic to a Service address is DNATed after raw, so it still meets the
# guard's port only when it is addressed to the port itself.)
guard() {
  local port="$1" chain="$2" pods="${3:-}" ipt
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    $ipt -w -t raw -N "$chain" 2>/dev/null || $ipt -w -t raw -F "$chain"
    $ipt -w -t raw -A "$chain" -i lo -j RETURN
    [ "$pods" = pods ] && $ipt -w -t raw -A "$chain" -i "$BRIDGE" -j RETURN
    $ipt -w -t raw -A "$chain" -j DROP
    $ipt -w -t raw -C PREROUTING -p tcp --dport "$port" -j "$chain" 2>/dev/null \
      || $ipt -w -t raw -I PREROUTING -p tcp --dport "$port" -j "$chain"
  done
}

# Traffic to a Service address that kube-proxy has not DNATed (its rules change
# while a Service goes from no endpoints to some, and back) would leave by the
# machine's default route; the sandbox's egress proxy answers anything on port
# 80 there with an empty 404, and a keep-alive client then keeps talking to it
# (seen: a test got 404s from a Service's ClusterIP for a minute while its pod
# answered on its own IP). A real node sends it nowhere useful either. So
# refuse it here: nat OUTPUT/PREROUTING run before the filter table, so traffic
# kube-proxy did DNAT no longer has a Service address by then.
guard_service_cidr() {
  local chain=FNHOST-SERVICE-CIDR hook
  iptables -w -N "$chain" 2>/dev/null || iptables -w -F "$chain"
  iptables -w -A "$chain" -d "$SERVICE_CIDR" -j REJECT --reject-with icmp-port-unreachable
  for hook in OUTPUT FORWARD; do
    iptables -w -C "$hook" -j "$chain" 2>/dev/null || iptables -w -A "$hook" -j "$chain"
  done
  # Pods' forwarded traffic meets kube-router's filter FORWARD chain first, which
  # accepts it; the mangle table's FORWARD runs after DNAT and before any filter
  # rule, so a pod's packet to an address kube-proxy did not DNAT is dropped there.
  iptables -w -t mangle -C FORWARD -d "$SERVICE_CIDR" -j DROP 2>/dev/null \
    || iptables -w -t mangle -A FORWARD -d "$SERVICE_CIDR" -j DROP
}

control_plane() {
  "$HERE/system-deps.sh"
  need_bins etcd kube-apiserver kube-controller-manager kube-scheduler kubectl
  ensure_bridge
  guard 6443 FNHOST-APISERVER pods
  "$HERE/pki.sh"
  "$HERE/kubeconfig.sh"
  local P="$D/pki"
  start_bg etcd etcd --name fnhost --data-dir "$D/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster fnhost=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --quota-backend-bytes 2147483648 --log-level warn
  wait_until "etcd health" 60 etcd_ready || die "etcd did not become healthy; see $D/logs/etcd.log"
  start_bg kube-apiserver kube-apiserver \
    --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
    --advertise-address="$BRIDGE_IP" \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
    --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP \
    --profiling=false
  wait_until "kube-apiserver /readyz" 120 apiserver_ready || die "kube-apiserver is not ready; see $D/logs/kube-apiserver.log"
  start_bg kube-controller-manager kube-controller-manager \
    --kubeconfig="$KUBECONFIG_FILE" --bind-address=127.0.0.1 --secure-port=10257 \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
    --use-service-account-credentials=false --leader-elect=false \
    --controllers='*' --node-monitor-period=2s --node-monitor-grace-period=20s \
    --profiling=false
  start_bg kube-scheduler kube-scheduler \
    --kubeconfig="$KUBECONFIG_FILE" --bind-address=127.0.0.1 --secure-port=10259 \
    --leader-elect=false --profiling=false
  wait_until "the default service account" 90 kc get serviceaccount default -n default \
    || die "the controller-manager did not create the default service account; see $D/logs/kube-controller-manager.log"
  log "control plane ready: KUBECONFIG=$KUBECONFIG_FILE"
}

start_containerd() {
  # kube-proxy's iptables mode needs bridged traffic to pass netfilter.
  modprobe br_netfilter 2>/dev/null || log "modprobe br_netfilter failed (built in or unavailable); checking the sysctl"
  sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.ipv4.ip_forward=1 \
    || die "cannot set net.bridge.bridge-nf-call-iptables=1 / net.ipv4.ip_forward=1 (br_netfilter module missing?)"
  ensure_bridge

  mkdir -p "$D/cni/net.d" "$D/containerd"
  cat > "$D/cni/net.d/10-$CNI_NAME.conflist" <<JSON
{"cniVersion":"0.4.0","name":"$CNI_NAME","plugins":[
 {"type":"bridge","bridge":"$BRIDGE","isGateway":true,"ipMasq":true,"hairpinMode":true,
  "ipam":{"type":"host-local","dataDir":"$D/cni/ipam","ranges":[[{"subnet":"$POD_CIDR","gateway":"$BRIDGE_IP"}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
JSON
  cat > "$D/containerd/config.toml" <<TOML
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$D/containerd/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "localhost/pause:1"
    restrict_oom_score_adj = true
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$D/cni/net.d"
TOML
  start_bg containerd containerd --config "$D/containerd/config.toml"
  wait_until "containerd" 60 ctr --address "$CONTAINERD_SOCK" version \
    || die "containerd did not start; see $D/logs/containerd.log"
}

node() {
  "$HERE/system-deps.sh"
  need_bins kubelet kube-proxy coredns kube-router
  start_containerd
  "$HERE/images.sh" pause

  mkdir -p "$D/kubelet"
  : > "$D/resolv.conf"   # pods never see the machine's resolver
  cat > "$D/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
address: $BRIDGE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupsPerQOS: true
enforceNodeAllocatable: []
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
clusterDomain: cluster.local
clusterDNS: ["$BRIDGE_IP"]
resolvConf: "$D/resolv.conf"
serializeImagePulls: false
nodeStatusUpdateFrequency: 4s
YAML
  guard 10250 FNHOST-KUBELET
  guard_service_cidr
  start_bg kubelet kubelet --config="$D/kubelet.yaml" --kubeconfig="$KUBECONFIG_FILE" \
    --hostname-override="$NODE_NAME" --node-ip="$BRIDGE_IP" --root-dir="$D/kubelet"
  start_bg kube-proxy kube-proxy --kubeconfig="$KUBECONFIG_FILE" --hostname-override="$NODE_NAME" \
    --cluster-cidr="$POD_CIDR" --proxy-mode=iptables --bind-address=127.0.0.1 \
    --metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256 \
    --nodeport-addresses=127.0.0.0/8,$POD_CIDR --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0
  cat > "$D/Corefile" <<CORE
.:53 {
    bind $BRIDGE_IP
    errors
    ready 127.0.0.1:18181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $KUBECONFIG_FILE
        pods insecure
    }
}
CORE
  start_bg coredns coredns -conf "$D/Corefile"
  wait_until "CoreDNS ready" 60 curl -fsS http://127.0.0.1:18181/ready || die "CoreDNS is not ready; see $D/logs/coredns.log"
  wait_until "node $NODE_NAME Ready" 180 node_ready || die "node $NODE_NAME is not Ready; see $D/logs/kubelet.log"
  wait_until "node $NODE_NAME's InternalIP" 60 node_has_ip || die "node $NODE_NAME has no InternalIP $BRIDGE_IP; see $D/logs/kubelet.log"
  wait_until "the not-ready taint to clear" 120 node_untainted \
    || die "node $NODE_NAME still has taints: $(kc get node "$NODE_NAME" -o jsonpath='{.spec.taints}'); see $D/logs/kube-controller-manager.log"
  # NetworkPolicy is enforced before any pod of a test runs.
  "$HERE/netpol.sh" on
  log "node $NODE_NAME Ready (containerd $CONTAINERD_SOCK, DNS $BRIDGE_IP, NetworkPolicy enforced)"
}

node_ready() { [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
node_has_ip() { [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')" = "$BRIDGE_IP" ]; }
node_untainted() { [ -z "$(kc get node "$NODE_NAME" -o jsonpath='{.spec.taints}')" ]; }

case "$what" in
  control-plane) timed up-control-plane control_plane ;;
  node) timed up-control-plane control_plane; timed up-node node ;;
  images) start_containerd; timed up-images "$HERE/images.sh" all ;;
  containerd) "$HERE/system-deps.sh"; start_containerd ;;
  all)
    timed up-control-plane control_plane
    timed up-node node
    timed up-images "$HERE/images.sh" all ;;
  *) die "usage: up.sh [all|control-plane|node|images]" ;;
esac
