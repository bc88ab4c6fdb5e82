#!/usr/bin/env bash
# Installs the Debian packages the cluster needs (as root on Debian), or
# names what to install. Idempotent.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/lib.sh"

# package:command that proves it is installed
wanted=(containerd:containerd runc:runc containernetworking-plugins:/usr/lib/cni/bridge
        buildah:buildah iptables:iptables debootstrap:debootstrap gcc:gcc libc6-dev:/usr/lib/x86_64-linux-gnu/libc.a
        kmod:modprobe iproute2:ip procps:sysctl util-linux:nsenter)
missing=()
for w in "${wanted[@]}"; do
  pkg="${w%%:*}" probe="${w#*:}"
  if [[ "$probe" == /* ]]; then [ -e "$probe" ] || missing+=("$pkg")
  else command -v "$probe" >/dev/null || missing+=("$pkg"); fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if is_root && command -v apt-get >/dev/null && [ -f /etc/debian_version ]; then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  t0=$SECONDS
  # The log's folder first: on a fresh machine nothing under the cache exists yet.
  mkdir -p "$LOG_BUILD" "$(dirname "$TIMINGS")"
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >"$LOG_BUILD/apt.log" 2>&1 \
    || { die "apt-get install ${missing[*]} failed; see $LOG_BUILD/apt.log"; }
  printf '%s %s %ss rc=0\n' "$(date -u +%FT%TZ)" apt-install "$((SECONDS - t0))" >> "$TIMINGS"
  # Debian starts the packaged containerd service; the harness runs its own.
else
  die "the test cluster needs these Debian packages: ${missing[*]} (run as root: apt-get install ${missing[*]})"
fi
