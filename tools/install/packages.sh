#!/usr/bin/env bash
# The Debian packages fnhost's own targets need, installed when missing
# (as root on Debian) or named:
#   tools/install/packages.sh start   what `make start` needs
#   tools/install/packages.sh test    what `make test` drives for real too
# The test cluster's packages are test/cluster/system-deps.sh's.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=debian.sh
. "$HERE/debian.sh"

# make start: bubblewrap, the sandbox of each runtime (docs/sandbox.md).
START_PACKAGES=(bubblewrap)
# make test: tmux (the CLI's interactive pager, driven in a real terminal),
# chromium (the admin panel's browser suites), shellcheck (every shell script
# is checked in make test), python3-venv (the venv checkov, the chart's policy
# scanner, is installed into: tools/install/checkov.sh), curl and jq (the
# README's shell blocks use them, and test/docs/ runs those blocks).
TEST_PACKAGES=(tmux chromium shellcheck python3-venv curl jq)

FNHOST_CACHE="${FNHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fnhost}"

case "${1:-}" in
  start) wanted=("${START_PACKAGES[@]}") ;;
  test) wanted=("${START_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "usage: tools/install/packages.sh start|test" >&2; exit 2 ;;
esac
if [ "$1" = start ]; then
  # Without bubblewrap the gateway still starts for local development on
  # loopback, with a warning (and refuses beyond loopback): docs/sandbox.md.
  ensure_debian_packages "$FNHOST_CACHE/logs" "${wanted[@]}" \
    || echo "warning: without bubblewrap, functions run WITHOUT a sandbox (the gateway says so at every start; docs/sandbox.md)" >&2
  exit 0
fi
ensure_debian_packages "$FNHOST_CACHE/logs" "${wanted[@]}"
