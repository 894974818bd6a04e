#!/usr/bin/env bash
# What `npm test` needs from the machine besides node_modules, provided before the tests run (the
# first step of `npm test`, and of .ci/run): each command in NEEDS, from its Debian package. A
# missing one is installed with apt-get when this user may install packages (root, or sudo
# without a password for apt-get); otherwise this stops at once, printing the command to run.
# Nothing is installed when every command is already on PATH.
# `provision-test.sh COMMAND...` provides only those commands of NEEDS: a check run on its own
# (format:cpp:check, lint:py) asks for its tools this way.
set -euo pipefail

# "command package": the tests run `command`, Debian's `package` provides it.
NEEDS=(
  "redis-server redis-server" # the Redis store tests start private servers (test/helpers/redis-server.ts)
  # the replica test bed (test/helpers/replica-bed.ts: test/e2e/redis-sentinel, bench:chaos) puts
  # replicas behind haproxy on a Sentinel-watched Redis; it starts its own processes on loopback
  "haproxy haproxy"
  "redis-sentinel redis-sentinel"
  "clang-format clang-format" # format:cpp:check (scripts/format-cpp.sh; the style was settled with Debian 12's 14)
  "black black"               # lint:py (scripts/check-python.sh)
  "flake8 flake8"             # lint:py
)
# The web page's tests drive Debian's Chromium, /usr/bin/chromium (test/web/browser.ts; playwright-core
# never downloads a browser); it brings a font (libfontconfig1 -> fontconfig-config -> fonts-dejavu-core).
# MAYA_TEST_CHROMIUM names another Chromium binary instead.
if [[ -z ${MAYA_TEST_CHROMIUM:-} ]]; then
  NEEDS+=("chromium chromium")
elif [[ ! -x $MAYA_TEST_CHROMIUM ]]; then
  echo "provision-test: MAYA_TEST_CHROMIUM=$MAYA_TEST_CHROMIUM is not an executable file" >&2
  exit 1
fi

if (($# > 0)); then
  wanted=()
  for want in "$@"; do
    found=
    for need in "${NEEDS[@]}"; do
      [[ ${need%% *} == "$want" ]] && wanted+=("$need") && found=1
    done
    if [[ -z $found ]]; then
      echo "provision-test: $want is not in NEEDS (scripts/provision-test.sh)" >&2
      exit 1
    fi
  done
  NEEDS=("${wanted[@]}")
fi

commands=()
packages=()
for need in "${NEEDS[@]}"; do
  read -r command package <<<"$need"
  if ! command -v "$command" >/dev/null 2>&1; then
    commands+=("$command")
    packages+=("$package")
  fi
done
((${#packages[@]} == 0)) && exit 0

say() { echo "provision-test: $*" >&2; }
install_command="apt-get update && apt-get install -y ${packages[*]}"

if ! command -v apt-get >/dev/null 2>&1; then
  say "the tests need ${commands[*]} on PATH (Debian/Ubuntu package: ${packages[*]}), and this machine has no apt-get; install it with the system's package manager, then run npm test again."
  exit 1
fi
if [[ $(id -u) == 0 ]]; then
  as_root() { "$@"; }
elif command -v sudo >/dev/null 2>&1 && sudo -n apt-get --version >/dev/null 2>&1 </dev/null; then
  as_root() { sudo -n "$@"; }
  install_command="sudo apt-get update && sudo apt-get install -y ${packages[*]}"
else
  say "the tests need ${commands[*]}, which is not installed, and this user may not install packages. Run:"
  say "  sudo apt-get update && sudo apt-get install -y ${packages[*]}"
  say "then npm test again."
  exit 1
fi

say "installing ${packages[*]} (Debian) for the tests: $install_command"
export DEBIAN_FRONTEND=noninteractive
for step in update install; do
  if [[ $step == update ]]; then args=(update -qq); else args=(install -y -qq "${packages[@]}"); fi
  if ! output=$(as_root apt-get "${args[@]}" 2>&1 </dev/null); then
    printf '%s\n' "$output" >&2
    say "apt-get $step failed (above); install the packages by hand: $install_command"
    exit 1
  fi
done
for command in "${commands[@]}"; do
  if ! command -v "$command" >/dev/null 2>&1; then
    say "installed ${packages[*]}, but $command is still not on PATH ($PATH)."
    exit 1
  fi
done
say "installed ${packages[*]}."
