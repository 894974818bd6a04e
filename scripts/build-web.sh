#!/usr/bin/env bash
# Builds the web page (web/ → web/dist) with Vite: `npm install` runs it (postinstall) and `npm test`
# rebuilds it before the tests. Downloads nothing. Vite is a dev dependency: an install without dev
# dependencies has no page (the server then says so at start, and `/` answers 404).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
vite="$root/node_modules/.bin/vite"
if [[ ! -x $vite ]]; then
  echo "build-web: vite is not installed (a dev dependency): the web page is not built" >&2
  exit 0
fi
"$vite" build --config "$root/web/vite.config.ts"
echo "build-web: $root/web/dist" >&2
