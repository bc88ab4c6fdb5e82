# shellcheck shell=bash
# Sourced by every stand-in: appends "NAME ARGS..." to $STANDIN_LOG (one line
# a call), so the install test can read what each step asked for.
: "${STANDIN_LOG:?the stand-ins need STANDIN_LOG}" "${STANDIN_STATE:?the stand-ins need STANDIN_STATE}"
mkdir -p "$STANDIN_STATE"
printf '%s %s\n' "$(basename "$0")" "$*" >> "$STANDIN_LOG"
