# shellcheck shell=bash
# Debian packages for fnhost's install steps (sourced, not run).
#
#   ensure_debian_packages LOG_DIR PACKAGE...
#
# Installs the PACKAGEs that are not installed yet, as root on Debian, logging
# apt's output to LOG_DIR/apt.log; elsewhere it names what to install and
# fails. Idempotent: nothing runs when everything is installed.
#
# "Installed" is the package database's answer (dpkg-query), not "a command of
# that name is on PATH": a binary of the same name from elsewhere is not the
# package the step was written for, and the install tests hide packages by
# putting a stand-in dpkg-query and apt-get first on PATH
# (test/install/install-steps.int.test.ts).

debian_package_installed() { # PACKAGE
  local status
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" || return 1
  [[ "$status" == ii* ]]
}

ensure_debian_packages() { # LOG_DIR PACKAGE...
  local log_dir="$1"; shift
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null || [ ! -f /etc/debian_version ]; then
    printf 'error: fnhost needs these packages (Debian names): %s; install them with your package manager\n' "$*" >&2
    return 1
  fi
  local missing=() p
  for p in "$@"; do debian_package_installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    printf 'error: fnhost needs these Debian packages: %s (run as root: apt-get update && apt-get install %s)\n' "${missing[*]}" "${missing[*]}" >&2
    return 1
  fi
  # The log's folder first: on a fresh machine nothing under the cache exists yet.
  mkdir -p "$log_dir"
  printf 'installing Debian packages: %s (log %s/apt.log)\n' "${missing[*]}" "$log_dir" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Another install (a second make, the cluster's step) may hold apt's lock: wait for it.
  # Appended: the cluster's step and make test's each install some; both stay readable.
  printf '\n== %s: apt-get install %s\n' "$(date -u +%FT%TZ)" "${missing[*]}" >>"$log_dir/apt.log"
  { apt-get -o DPkg::Lock::Timeout=900 update -qq \
      && apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"; } >>"$log_dir/apt.log" 2>&1 \
    || { printf 'error: apt-get install %s failed; see %s/apt.log\n' "${missing[*]}" "$log_dir" >&2; return 1; }
  for p in "${missing[@]}"; do
    debian_package_installed "$p" || { printf 'error: apt-get said it installed %s, but dpkg does not list it; see %s/apt.log\n' "$p" "$log_dir" >&2; return 1; }
  done
}
