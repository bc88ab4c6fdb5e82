#!/usr/bin/env bash
# Prints which cluster processes run and the node's state; exit 0 when all are up.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
rc=0
for p in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy coredns; do
  if running "$p"; then printf '%-24s running (pid %s)\n' "$p" "$(cat "$(pidfile "$p")")"; else printf '%-24s down\n' "$p"; rc=1; fi
done
[ -f "$KUBECONFIG_FILE" ] && kc get nodes -o wide 2>/dev/null
echo "state dir: $D   kubeconfig: $KUBECONFIG_FILE"
exit $rc
