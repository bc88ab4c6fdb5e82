#!/usr/bin/env bash
# Prepares the build context of the fnhost platform image (gateway/Dockerfile):
# the sources of core, gateway and operator, the admin panel's build (made here
# when admin/dist is missing or older than the panel's sources, so an image
# built as docs/install.md says always has the panel), and their production
# dependencies installed with `npm ci` from the lock file. The image itself then needs no npm (the test cluster's Node base
# has none, and no registry is reachable from a build there).
#   gateway/image-context.sh [OUT]   (default: .build/platform-image)
# Build:  docker build -t <registry>/fnhost-platform:<tag> .build/platform-image
#    or:  buildah bud --build-arg BASE=node:24-slim -t ... .build/platform-image
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$REPO/.build/platform-image}"
NPM="${NPM:-npm}"

rm -rf "$OUT"
mkdir -p "$OUT"
cp "$REPO/package.json" "$REPO/package-lock.json" "$OUT/"
# Every workspace's manifest, so that npm ci accepts the lock file; sources only for what the image runs.
for ws in core runtime-image gateway operator cli admin; do
  mkdir -p "$OUT/$ws"
  cp "$REPO/$ws/package.json" "$OUT/$ws/"
done
cp -R "$REPO/core/src" "$OUT/core/src"
cp -R "$REPO/gateway/src" "$OUT/gateway/src"
cp "$REPO/gateway/openapi.yaml" "$OUT/gateway/"
cp -R "$REPO/operator/src" "$OUT/operator/src"
# The panel: built again when any of its sources is newer than its build (vite from the
# repository's own node_modules: make install). FNHOST_IMAGE_WITHOUT_ADMIN=1 leaves it out
# (the gateway then answers /admin with 503 admin_not_built).
if [ "${FNHOST_IMAGE_WITHOUT_ADMIN:-0}" != 1 ]; then
  if [ ! -f "$REPO/admin/dist/index.html" ] \
     || [ -n "$(find "$REPO/admin/src" "$REPO/admin/index.html" "$REPO/admin/vite.config.ts" "$REPO/admin/package.json" -newer "$REPO/admin/dist/index.html" -print -quit)" ]; then
    [ -x "$REPO/node_modules/.bin/vite" ] || { echo "gateway/image-context.sh: no vite in $REPO/node_modules (run make install) to build the admin panel" >&2; exit 1; }
    (cd "$REPO" && "$NPM" run --silent build -w admin >&2) || { echo "gateway/image-context.sh: the admin panel's build (npm run build -w admin) failed" >&2; exit 1; }
  fi
  mkdir -p "$OUT/admin"
  cp -R "$REPO/admin/dist" "$OUT/admin/dist"
fi
cp "$REPO/gateway/Dockerfile" "$OUT/Dockerfile"

# Production dependencies of the three workspaces only (no dev tools, no CLI, no admin build chain).
(cd "$OUT" && "$NPM" ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline \
  --workspace core --workspace gateway --workspace operator --include-workspace-root=false --loglevel=error >/dev/null)
# Workspace links of what the image does not carry would dangle.
for ws in runtime-image cli admin; do
  rm -f "$OUT/node_modules/@fnhost/$(node -p "require('$OUT/$ws/package.json').name.split('/')[1]" 2>/dev/null || echo none)"
done
echo "$OUT"
