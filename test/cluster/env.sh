#!/usr/bin/env bash
# The test cluster's environment for scripts, tests and shells.
#   . test/cluster/env.sh        exports KUBECONFIG, PATH (kubectl, helm, ...) and FNHOST_* paths
#   eval "$(test/cluster/env.sh)"  the same from a script that runs it
#   test/cluster/env.sh --json   the same as JSON (used by cluster.ts)
_fnhost_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$_fnhost_here/lib.sh"
export KUBECONFIG="$KUBECONFIG_FILE"
export FNHOST_CLUSTER_DIR="$D" FNHOST_K8S_BIN="$K8S_BIN" FNHOST_TOOLS_BIN="$TOOLS_BIN" FNHOST_CONTAINERD_SOCK="$CONTAINERD_SOCK"
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  if [ "${1:-}" = --json ]; then
    printf '{"kubeconfig":"%s","kubectl":"%s","helm":"%s","stateDir":"%s","binDir":"%s","toolsBin":"%s","containerdSocket":"%s","nodeName":"%s","dnsServer":"%s","podCidr":"%s","serviceCidr":"%s"}\n' \
      "$KUBECONFIG_FILE" "$K8S_BIN/kubectl" "$TOOLS_BIN/helm" "$D" "$K8S_BIN" "$TOOLS_BIN" "$CONTAINERD_SOCK" "$NODE_NAME" "$BRIDGE_IP" "$POD_CIDR" "$SERVICE_CIDR"
  else
    # shellcheck disable=SC2016 # "$PATH" is for the shell that evals this, not this one
    printf 'export KUBECONFIG=%q\nexport PATH=%q:%q:"$PATH"\nexport FNHOST_CLUSTER_DIR=%q FNHOST_K8S_BIN=%q FNHOST_TOOLS_BIN=%q FNHOST_CONTAINERD_SOCK=%q\n' \
      "$KUBECONFIG_FILE" "$K8S_BIN" "$TOOLS_BIN" "$D" "$K8S_BIN" "$TOOLS_BIN" "$CONTAINERD_SOCK"
  fi
fi
unset _fnhost_here
