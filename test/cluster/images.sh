#!/usr/bin/env bash
# Images of the test cluster, built with buildah (no Docker engine, no
# registry) and imported into the harness's containerd (namespace k8s.io).
#   images.sh pause        localhost/pause:1 (the sandbox image)
#   images.sh rootfs       only the Debian minbase rootfs of the node base (no containerd needed)
#   images.sh node-base    localhost/node-base:24-slim (node:24-slim equivalent)
#   images.sh runtime      localhost/fnhost-runtime:dev from runtime-image/Dockerfile
#   images.sh all          node-base and runtime (when the Dockerfile exists)
#   images.sh build DIR NAME:TAG   any Dockerfile directory (BASE = the node base)
# Sourcing this file defines build_image DIR NAME:TAG for other scripts.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
. "$HERE/lib.sh"

NODE_BASE="localhost/node-base:24-slim"
# The base is cached by the node binary it carries: a new node package rebuilds it.
node_binary() { readlink -f "$REPO/node_modules/node/bin/node"; }

imported() { # (no grep -q on a pipe: with pipefail, ctr's SIGPIPE would fail it)
  local names; names="$(ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls -q 2>/dev/null)" || return 1
  grep -qx "$1" <<<"$names"
}

# import_archive ARCHIVE NAME: loads an oci-archive into containerd.
import_archive() {
  # The images go into the test cluster's own containerd: without it, say so rather than ctr's dial timeout.
  timeout 20 ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1 \
    || die "the test cluster's containerd is not running ($CONTAINERD_SOCK); the images are imported into it: start the cluster first (make cluster-up), or build only the cached parts (images.sh rootfs)"
  ctr --address "$CONTAINERD_SOCK" -n k8s.io images import --no-unpack=false "$1" >/dev/null \
    || die "ctr images import $1 failed"
  imported "$2" || die "$2 is not in containerd after importing $1"
}

# push_and_import NAME ARCHIVE: buildah image -> oci-archive -> containerd.
push_and_import() {
  local name="$1" archive="$2"
  mkdir -p "$(dirname "$archive")"
  rm -f "$archive"
  buildah push -q "$name" "oci-archive:$archive:$name" >/dev/null
  import_archive "$archive" "$name"
}

build_pause() {
  local archive="$IMAGE_CACHE/pause-1.oci.tar"
  if [ ! -f "$archive" ]; then
    local w; w="$(mktemp -d)"
    gcc -static -O2 -s -o "$w/pause" "$HERE/pause.c" || die "gcc -static failed (apt-get install gcc libc6-dev)"
    local c; c="$(buildah from scratch)"
    buildah copy -q "$c" "$w/pause" /pause >/dev/null
    buildah config --entrypoint '["/pause"]' --user 65535 "$c"
    buildah commit -q --rm "$c" localhost/pause:1 >/dev/null
    mkdir -p "$IMAGE_CACHE"
    buildah push -q localhost/pause:1 "oci-archive:$archive.tmp:localhost/pause:1" >/dev/null
    mv "$archive.tmp" "$archive"
    rm -rf "$w"
  fi
  imported localhost/pause:1 || import_archive "$archive" localhost/pause:1
  log "image localhost/pause:1 ready"
}

# The Debian minbase rootfs of the node base (debootstrap, once per machine).
# Needs neither containerd nor node_modules, so make test starts it early
# (prebuild.sh); a lock keeps two callers from bootstrapping at once.
build_rootfs() {
  local rootfs="$IMAGE_CACHE/bookworm-minbase"
  mkdir -p "$IMAGE_CACHE" "$LOG_BUILD"
  exec 7>"$FNHOST_CACHE/.build-rootfs.lock"; flock 7
  if [ ! -f "$rootfs/.done" ]; then
    log "debootstrap --variant=minbase bookworm (once; ~1-3 min)"
    # A debootstrap ended half-way (prebuild.sh ends it when make stops) may
    # leave /proc or /sys mounted inside: unmount, and never cross into a mount.
    local m
    # shellcheck disable=SC2013 # debootstrap's mount points have no white space
    for m in $(awk -v d="$rootfs" 'index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    rm -rf --one-file-system "$rootfs"
    local mirror
    mirror="$(debian_mirror bookworm)" || die "no apt source for Debian bookworm in ${APT_ETC:-/etc/apt} (sources.list or sources.list.d): set FNHOST_DEBIAN_MIRROR to a Debian mirror's URL"
    nice debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$LOG_BUILD/debootstrap.log" 2>&1 \
      || die "debootstrap failed; see $LOG_BUILD/debootstrap.log"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    touch "$rootfs/.done"
  fi
  flock -u 7; exec 7>&-
}

build_node_base() {
  local nodebin; nodebin="$(node_binary)"
  [ -x "$nodebin" ] || die "no node binary at $REPO/node_modules/node/bin/node (run make install)"
  local key; key="$(sha256sum "$nodebin" | cut -c1-16)"
  local archive="$IMAGE_CACHE/node-base-24-slim-$key.oci.tar"
  if [ ! -f "$archive" ]; then
    local rootfs="$IMAGE_CACHE/bookworm-minbase"
    build_rootfs
    local c; c="$(buildah from scratch)"
    buildah copy -q "$c" "$rootfs/" / >/dev/null
    buildah copy -q --chmod 0755 "$c" "$nodebin" /usr/local/bin/node >/dev/null
    buildah run "$c" -- rm -f /.done
    # As node:24-slim: a node user (uid 1000) and node as the command.
    buildah run "$c" -- sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd '["node"]' --workingdir / "$c"
    buildah commit -q --rm "$c" "$NODE_BASE" >/dev/null
    mkdir -p "$IMAGE_CACHE"
    rm -f "$IMAGE_CACHE"/node-base-24-slim-*.oci.tar
    buildah push -q "$NODE_BASE" "oci-archive:$archive.tmp:$NODE_BASE" >/dev/null
    mv "$archive.tmp" "$archive"
  fi
  # buildah bud needs the base in buildah's storage, pods need it in containerd.
  buildah inspect --type image "$NODE_BASE" >/dev/null 2>&1 \
    || buildah pull -q "oci-archive:$archive" >/dev/null
  imported "$NODE_BASE" || import_archive "$archive" "$NODE_BASE"
  log "image $NODE_BASE ready"
}

# build_image DIR NAME:TAG: builds DIR/Dockerfile on the node base and imports it.
build_image() {
  local dir="$1" name="$2"
  [ -f "$dir/Dockerfile" ] || die "build_image: no Dockerfile in $dir"
  [[ "$name" == */* ]] || name="localhost/$name"
  buildah inspect --type image "$NODE_BASE" >/dev/null 2>&1 || build_node_base
  local safe="${name//[\/:]/_}"
  mkdir -p "$LOG_BUILD"
  nice buildah bud -q --layers --build-arg "BASE=$NODE_BASE" -t "$name" -f "$dir/Dockerfile" "$dir" >"$LOG_BUILD/image-$safe.log" 2>&1 \
    || die "buildah bud of $dir failed; see $LOG_BUILD/image-$safe.log"
  push_and_import "$name" "$D/images/$safe.oci.tar"
  rm -f "$D/images/$safe.oci.tar"
  log "image $name built from $dir and imported"
}

# A hash of a directory's files (names and contents) and of the node base.
sources_hash() {
  (cd "$1" && find . -type f ! -path './node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
   buildah inspect --type image --format '{{.FromImageID}}' "$NODE_BASE" 2>/dev/null) | sha256sum | cut -c1-16
}

build_runtime() {
  if [ -f "$REPO/runtime-image/Dockerfile" ]; then
    # Built again only when its sources (or the base) changed since the image
    # in containerd was built: ensureCluster() then costs seconds, not ~20 s.
    local stamp="$D/images/fnhost-runtime.hash" h
    h="$(sources_hash "$REPO/runtime-image")"
    if imported localhost/fnhost-runtime:dev && [ "$(cat "$stamp" 2>/dev/null)" = "$h" ]; then
      log "image localhost/fnhost-runtime:dev up to date"; return 0
    fi
    build_image "$REPO/runtime-image" localhost/fnhost-runtime:dev
    mkdir -p "$D/images"; echo "$h" > "$stamp"
  else
    log "runtime-image/Dockerfile does not exist yet: localhost/fnhost-runtime:dev not built"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-all}" in
    pause) timed image-pause build_pause ;;
    rootfs) timed image-rootfs build_rootfs ;;
    node-base) timed image-node-base build_node_base ;;
    runtime) timed image-runtime build_runtime ;;
    build) [ $# -eq 3 ] || die "usage: images.sh build DIR NAME:TAG"; timed "image-$3" build_image "$2" "$3" ;;
    all) timed image-node-base build_node_base; timed image-runtime build_runtime ;;
    *) die "usage: images.sh [pause|rootfs|node-base|runtime|all|build DIR NAME:TAG]" ;;
  esac
fi
