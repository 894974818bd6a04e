#!/usr/bin/env bash
# Provisions the browser the web page's tests drive (test/web/): Debian's `chromium` package at
# /usr/bin/chromium (playwright-core never downloads a browser of its own). Installs it with
# apt-get when it is missing and this user may (root); otherwise stops with the exact command.
# MAYA_TEST_CHROMIUM names another Chromium binary and skips the install.
set -euo pipefail

chromium=${MAYA_TEST_CHROMIUM:-/usr/bin/chromium}
if [[ -x $chromium ]]; then
  exit 0
fi
if [[ -n ${MAYA_TEST_CHROMIUM:-} ]]; then
  echo "provision-chromium: MAYA_TEST_CHROMIUM=$chromium is not an executable file" >&2
  exit 1
fi
if [[ $(id -u) != 0 ]]; then
  echo "provision-chromium: the web page's tests need Debian's Chromium; install it with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y chromium" >&2
  exit 1
fi
echo "provision-chromium: installing Debian's chromium (apt-get)" >&2
# Another apt-get (a parallel provisioning step) may hold dpkg's lock: wait for it.
apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium fonts-dejavu-core >/dev/null
"$chromium" --version >&2
