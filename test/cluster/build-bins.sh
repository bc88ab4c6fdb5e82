#!/usr/bin/env bash
# Builds the Kubernetes components, etcd, helm, CoreDNS and kube-router from the Go module
# proxy into a cache keyed by version, outside the repository. Idempotent: a
# binary that is already in the cache is not rebuilt.
#   usage: build-bins.sh            (all of them, in parallel, niced)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

need_go
mkdir -p "$K8S_BIN" "$TOOLS_BIN" "$LOG_BUILD"

k8s_wanted=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd)

build_k8s() {
  local missing=()
  for b in "${k8s_wanted[@]}"; do [ -x "$K8S_BIN/$b" ] || missing+=("$b"); done
  [ ${#missing[@]} -eq 0 ] && { log "kubernetes $K8S_VERSION: cached in $K8S_BIN"; return 0; }
  log "kubernetes $K8S_VERSION: building ${missing[*]} (cold: ~8-15 min on 2 cores)"
  local mod="$K8S_CACHE/mod"
  mkdir -p "$mod"
  if [ ! -f "$mod/go.sum" ] || [ ! -f "$mod/.tidy-ok" ]; then
    # kubernetes' own go.mod replaces its staging modules with local folders;
    # pin each of them to the published module of the same release instead.
    local kmod
    kmod="$(cd "$mod" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')"
    [ -f "$kmod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION's go.mod"
    {
      echo "module local/k8sbin"
      echo
      echo "go $(go mod edit -json "$kmod" | sed -n 's/^\s*"Go": "\(.*\)",\?$/\1/p' | head -1)"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      echo "replace ("
      grep -E '^\s*k8s\.io/[^ ]+ => \./staging/src/' "$kmod" \
        | awk -v v="$K8S_STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
      echo ")"
    } > "$mod/go.mod"
    cat > "$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
    (cd "$mod" && GOFLAGS=-mod=mod timed k8s-go-mod-tidy nice go mod tidy) >"$LOG_BUILD/go-mod-tidy.log" 2>&1 \
      || die "go mod tidy failed; see $LOG_BUILD/go-mod-tidy.log"
    touch "$mod/.tidy-ok"
  fi
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  local pkgs=()
  for b in "${missing[@]}"; do
    if [ "$b" = etcd ]; then pkgs+=(go.etcd.io/etcd/server/v3); else pkgs+=("k8s.io/kubernetes/cmd/$b"); fi
  done
  local out="$K8S_CACHE/out"; rm -rf "$out"; mkdir -p "$out"
  (cd "$mod" && GOFLAGS=-mod=mod timed k8s-go-build nice -n 10 go build -trimpath -ldflags "-s -w $ld" -o "$out/" "${pkgs[@]}") \
    >"$LOG_BUILD/kubernetes.log" 2>&1 || die "go build of kubernetes failed; see $LOG_BUILD/kubernetes.log"
  # go.etcd.io/etcd/server/v3 builds as "v3" (or "server"): name it etcd.
  for n in v3 server; do [ -f "$out/$n" ] && mv "$out/$n" "$out/etcd"; done
  for b in "${missing[@]}"; do
    [ -x "$out/$b" ] || die "build produced no $b; see $LOG_BUILD/kubernetes.log"
    mv "$out/$b" "$K8S_BIN/$b"
  done
  log "kubernetes $K8S_VERSION: built into $K8S_BIN"
}

go_install() { # name module@version [extra ldflags] [bin dir]
  local name="$1" target="$2" extra="${3:-}" bin="${4:-$TOOLS_BIN}"
  [ -x "$bin/$name" ] && { log "$name: cached in $bin"; return 0; }
  log "$name: go install $target"
  mkdir -p "$bin"
  GOBIN="$bin" nice -n 10 go install -trimpath -ldflags "-s -w $extra" "$target" >"$LOG_BUILD/$name.log" 2>&1 \
    || die "go install $target failed; see $LOG_BUILD/$name.log"
  log "$name: installed into $bin"
}

# One build of a part at a time (two test runs may call cluster-up at once):
# the second waits for the first and then finds the binaries cached.
locked() { local name="$1"; shift; exec 8>"$FNHOST_CACHE/.build-$name.lock"; flock 8; "$@"; }

which="${1:-all}"
case "$which" in
  kubernetes) locked kubernetes timed build-kubernetes build_k8s ;;
  # (helm's own version string is "v3.22" unless set at link time)
  helm) locked helm timed build-helm go_install helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" ;;
  coredns) locked coredns timed build-coredns go_install coredns "github.com/coredns/coredns@$COREDNS_VERSION" ;;
  kube-router) locked kube-router timed build-kube-router go_install kube-router "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION" "" "$KUBE_ROUTER_BIN" ;;
  all)
    # Parallel but niced: kubernetes is the long pole; helm and CoreDNS share
    # the module cache and finish inside its time.
    "$0" kubernetes & k=$!
    "$0" coredns & c=$!
    "$0" helm & h=$!
    "$0" kube-router & r=$!
    rc=0
    wait $k || rc=1; wait $c || rc=1; wait $h || rc=1; wait $r || rc=1
    exit $rc ;;
  *) die "usage: build-bins.sh [all|kubernetes|helm|coredns|kube-router]" ;;
esac
