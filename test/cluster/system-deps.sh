#!/usr/bin/env bash
# Installs the Debian packages the test cluster needs (as root on Debian), or
# names what to install. Idempotent. The packages of make start and make
# test themselves are tools/install/packages.sh's.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../../tools/install/debian.sh
. "$HERE/../../tools/install/debian.sh"

# containerd, runc and the CNI plugins run the pods; buildah builds the
# images; debootstrap the node base's rootfs; gcc and libc6-dev the static
# pause binary; iptables, kmod, iproute2, procps and util-linux (nsenter)
# set up the node's network; ipset is what kube-router's NetworkPolicy
# controller keeps its address sets with. (Debian starts the packaged containerd service;
# the harness runs its own.)
wanted=(containerd runc containernetworking-plugins buildah iptables debootstrap gcc libc6-dev
        kmod iproute2 procps util-linux ipset)
t0=$SECONDS
ensure_debian_packages "$LOG_BUILD" "${wanted[@]}" || die "the test cluster's Debian packages are missing (see above)"
if [ $((SECONDS - t0)) -gt 0 ]; then
  mkdir -p "$(dirname "$TIMINGS")"
  printf '%s %s %ss rc=0\n' "$(date -u +%FT%TZ)" apt-install "$((SECONDS - t0))" >> "$TIMINGS"
fi
