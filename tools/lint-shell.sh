#!/usr/bin/env bash
# Runs shellcheck over every shell script the repository tracks: *.sh, and any file
# whose first line is a sh or bash #! line (.ci/run, stand-ins without a suffix).
# Settings: .shellcheckrc at the top.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v shellcheck >/dev/null || { echo "error: shellcheck is missing (make system-deps installs it; Debian: apt-get install shellcheck)" >&2; exit 1; }
scripts=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if [[ "$f" == *.sh ]] || head -n1 "$f" | grep -qE '^#!.*[/ ](ba)?sh( |$)'; then scripts+=("$f"); fi
done < <(git ls-files -z --cached --others --exclude-standard)
shellcheck "${scripts[@]}"
echo "shellcheck: ${#scripts[@]} scripts, no findings"
