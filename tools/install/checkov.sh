#!/usr/bin/env bash
# checkov, the Kubernetes policy scanner of `make test` (charts/scan.sh), from PyPI
# into a virtual environment under the cache, every package pinned:
#   tools/install/checkov.sh    installs it when missing; prints the path of its checkov
# The versions are checkov-requirements.txt's (checkov and all it needs), installed
# with --no-deps: no resolver run, the same packages on every machine. The venv's
# folder is keyed by the list's hash, so a changed list installs afresh beside the old.
# Needs python3 with venv (Debian: python3-venv, in tools/install/packages.sh's test list).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

CHECKOV_VERSION="3.3.30"
LOCK="$HERE/checkov-requirements.txt"
FNHOST_CACHE="${FNHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fnhost}"
LOG_DIR="$FNHOST_CACHE/logs"

grep -qx "checkov==$CHECKOV_VERSION" "$LOCK" || { echo "error: $LOCK does not pin checkov==$CHECKOV_VERSION" >&2; exit 1; }
key="$(sha256sum "$LOCK" | cut -c1-12)"
VENV="$FNHOST_CACHE/tools/checkov-$CHECKOV_VERSION-$key"

# .done is written last: a venv without it is a half-made one (an interrupted install).
if [ ! -f "$VENV/.done" ]; then
  mkdir -p "$FNHOST_CACHE/tools" "$LOG_DIR"
  # One install at a time (two make runs): the second waits, then finds it done.
  exec 8>"$FNHOST_CACHE/.build-checkov.lock"
  flock 8
  if [ ! -f "$VENV/.done" ]; then
    command -v python3 >/dev/null || { echo "error: python3 is needed for checkov (Debian: apt-get install python3-venv; make system-deps does)" >&2; exit 1; }
    echo "installing checkov $CHECKOV_VERSION from PyPI into $VENV (once; ~2-4 min; log $LOG_DIR/checkov.log)" >&2
    rm -rf "$VENV"
    { python3 -m venv "$VENV" \
        && "$VENV/bin/pip" install --disable-pip-version-check --no-input --no-deps -r "$LOCK"; } >"$LOG_DIR/checkov.log" 2>&1 \
      || { echo "error: installing checkov failed (python3 -m venv needs Debian's python3-venv); see $LOG_DIR/checkov.log" >&2; exit 1; }
    [ -x "$VENV/bin/checkov" ] || { echo "error: pip installed no $VENV/bin/checkov; see $LOG_DIR/checkov.log" >&2; exit 1; }
    touch "$VENV/.done"
  fi
  flock -u 8
fi
echo "$VENV/bin/checkov"
