#!/usr/bin/env bash
# The policy scanner (checkov, from PyPI: tools/install/checkov.sh) over everything fnhost
# puts into a cluster, without a cluster:
#   - the chart rendered by `helm template`, with its defaults and with each documented
#     option (several options a render where they do not conflict);
#   - the objects the operator builds for sample Functions (operator/src/render-sample.ts;
#     its builders are pure functions), with and without the egress proxy setting.
# Every render must pass with zero failed checks; a check the project decided against is
# skipped on the object with its reason (checkov.io/skipN annotations; docs/install.md,
# Security posture). Run by `make chart-scan`, part of make test and make test-local.
# helm is the test cluster's own build (test/cluster/build-bins.sh helm: cached, needs Go).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=../test/cluster/lib.sh
. "$ROOT/test/cluster/lib.sh"

"$ROOT/test/cluster/build-bins.sh" helm >&2
HELM="$TOOLS_BIN/helm"
CHECKOV="$("$ROOT/tools/install/checkov.sh")"
NODE="$ROOT/node_modules/.bin/node"
[ -x "$NODE" ] || die "no $NODE: run make install"

OUT="$(mktemp -d "${TMPDIR:-/tmp}/fnhost-scan.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

CHART="$ROOT/charts/fnhost"
MONGO=(--set mongodb.url=mongodb://db.example:27017/fnhost)
DIGEST="sha256:$(printf '%064d' 0)"

# render NAME HELM-ARGS...: the chart with these values, into its own folder (one scanner run
# each: a NetworkPolicy of one render must not cover the pods of another).
render() {
  local name="$1"; shift
  mkdir -p "$OUT/$name"
  "$HELM" template fnhost "$CHART" --namespace fnhost-system "$@" > "$OUT/$name/rendered.yaml" \
    || die "helm template failed for $name"
}

render defaults
render external-mongodb "${MONGO[@]}"
render internal-mongodb --set mongodb.internal.enabled=true --set mongodb.internal.storageClassName=standard
render internal-mongodb-ephemeral --set mongodb.internal.enabled=true --set mongodb.internal.persistence.enabled=false
render metrics-auth-servicemonitor "${MONGO[@]}" --set metrics.auth.enabled=true --set metrics.serviceMonitor.enabled=true \
  --api-versions monitoring.coreos.com/v1/ServiceMonitor --set uninstall.removeFunctions=false
render ingress-tls-admin-host "${MONGO[@]}" --set ingress.enabled=true --set ingress.host=fn.example.com \
  --set ingress.adminHost=admin.fn.example.com --set ingress.className=nginx --set ingress.tlsSecretName=fn-tls --set gateway.trustProxy=true
render ingress-own-admin-cert-one-namespace "${MONGO[@]}" --set ingress.enabled=true --set ingress.host=fn.example.com \
  --set ingress.adminHost=admin.example.org --set ingress.tlsSecretName=fn-tls --set ingress.adminTlsSecretName=admin-tls \
  --set functions.watchNamespace=team-a --set gateway.service.type=NodePort --set gateway.service.nodePort=30999 --set gateway.replicas=1
render existing-secrets-two-operators --set mongodb.existingSecret=my-mongo --set platform.existingTokenKeySecret=my-key \
  --set adminToken.value=0123456789abcdef0123 --set operator.replicas=2 --set 'imagePullSecrets={regcred}' \
  --set commonLabels.team=platform --set gateway.preStopSleepSeconds=0 \
  --set 'networkPolicy.platformCIDRs={10.96.0.0/12,10.244.0.0/16,fd00::/8}'
render digests-and-addresses "${MONGO[@]}" --set image.repository=registry.example.com/fnhost/platform --set "image.digest=$DIGEST" \
  --set runtimeImage.repository=registry.example.com/fnhost/runtime --set "runtimeImage.digest=$DIGEST" --set gateway.publicUrl=https://fn.example.org \
  --set-json 'platformNetworkPolicy.apiServer={"cidrs":["10.0.0.1/32"],"ports":[6443]}' --set-json 'platformNetworkPolicy.dns.cidrs=["10.0.0.10/32"]' \
  --set-json 'platformNetworkPolicy.mongodb={"cidrs":["10.1.0.0/24"],"ports":[27017]}'

# The operator's objects, with the runtime image the chart gives it, and the function pods'
# NetworkPolicy it keeps in their namespace (the scan checks that it selects their pods).
operator_objects() { # NAME OPERATOR-SETTINGS...
  local name="$1"; shift
  mkdir -p "$OUT/$name"
  "$NODE" "$ROOT/operator/src/render-sample.ts" "FNHOST_RUNTIME_IMAGE=fnhost/runtime:0.1.0" "$@" > "$OUT/$name/objects.yaml" \
    || die "operator/src/render-sample.ts failed for $name"
}
POLICY=(FNHOST_NETWORK_POLICY=true "FNHOST_GATEWAY_POD_LABELS=app.kubernetes.io/name=fnhost,app.kubernetes.io/component=gateway" "FNHOST_GATEWAY_POD_PORTS=8080,8090")
operator_objects operator-objects "${POLICY[@]}"
operator_objects operator-objects-egress-proxy "${POLICY[@]}" FNHOST_EGRESS_PROXY_URL=http://fnhost-gateway-internal.fnhost-system.svc:8090

# scan NAME: one scanner run over one render's folder; its report and exit code beside it.
scan() {
  local rc=0
  # --skip-download: no Prisma Cloud guidelines or policies (offline, and nothing leaves the machine).
  "$CHECKOV" --directory "$OUT/$1" --framework kubernetes --skip-download --quiet --compact >"$OUT/$1.report" 2>&1 || rc=$?
  echo "$rc" >"$OUT/$1.rc"
}
# Two runs at a time (each is mostly Python's start-up on one core).
names=()
for dir in "$OUT"/*/; do names+=("$(basename "$dir")"); done
running=0
for name in "${names[@]}"; do
  scan "$name" &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=()
for name in "${names[@]}"; do
  if [ "$(cat "$OUT/$name.rc")" = 0 ]; then
    printf 'scan %-40s %s\n' "$name" "$(grep -o 'Passed checks: [0-9]*, Failed checks: [0-9]*, Skipped checks: [0-9]*' "$OUT/$name.report" || echo 'no resources?')"
  else
    printf 'scan %-40s FAILED\n' "$name"
    cat "$OUT/$name.report"
    failed+=("$name")
  fi
done
[ ${#failed[@]} -eq 0 ] || die "checkov found failed checks in: ${failed[*]}"
echo "chart scan: every render passes"
