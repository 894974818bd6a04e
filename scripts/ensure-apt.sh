#!/usr/bin/env bash
# ensure-apt.sh COMMAND=PACKAGE...: makes sure each COMMAND is on PATH before a check of `npm test`
# uses it. A missing one is installed from its Debian PACKAGE when this user may install (root with
# apt-get, as .ci/run installs redis-server); otherwise the script stops at once with the exact
# command to run. Example: bash scripts/ensure-apt.sh black=black flake8=flake8
set -euo pipefail
missing=()
for pair in "$@"; do
  cmd="${pair%%=*}"
  pkg="${pair#*=}"
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
(( ${#missing[@]} == 0 )) && exit 0
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-apt: installing Debian packages: ${missing[*]}" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "ensure-apt: missing ${missing[*]}; install with: sudo apt-get install -y ${missing[*]}" >&2
exit 1
