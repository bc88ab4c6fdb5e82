#!/usr/bin/env bash
# Prepares the build context of the fnhost platform image (gateway/Dockerfile):
# the sources of core, gateway and operator, the admin panel's build when there
# is one, and their production dependencies installed with `npm ci` from the
# lock file. The image itself then needs no npm (the test cluster's Node base
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
if [ -f "$REPO/admin/dist/index.html" ]; then
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
