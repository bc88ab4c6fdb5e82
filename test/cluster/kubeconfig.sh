#!/usr/bin/env bash
# Writes D/kubeconfig (admin token, the harness CA, https://127.0.0.1:6443).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
umask 077
cat > "$KUBECONFIG_FILE.tmp" <<KC
apiVersion: v1
kind: Config
clusters:
- name: fnhost-test
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 < "$D/pki/ca.crt")
users:
- name: admin
  user:
    token: $(cat "$D/pki/admin.token")
contexts:
- name: fnhost-test
  context: {cluster: fnhost-test, user: admin, namespace: default}
current-context: fnhost-test
KC
mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"
