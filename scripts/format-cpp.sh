#!/usr/bin/env bash
# `npm run format:cpp:check` (part of `npm test`, --check): every C, C++ and CUDA file under
# engine-cuda/ must be as clang-format (style: .clang-format) writes it; the files that differ are
# named and the script exits 1, changing nothing. `npm run format:cpp` rewrites them in place.
# clang-format is Debian's package (provided by scripts/provision-test.sh, as for npm test); the
# style was settled with Debian 12's clang-format 14, and another major version may break lines
# differently.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/provision-test.sh clang-format
mapfile -t files < <(find engine-cuda/include engine-cuda/src engine-cuda/test -type f \
  \( -name '*.h' -o -name '*.c' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)
if [[ "${1:-}" != --check ]]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
differ=()
for f in "${files[@]}"; do
  clang-format --style=file "$f" | cmp -s - "$f" || differ+=("$f")
done
if (( ${#differ[@]} > 0 )); then
  printf '%s\n' "${differ[@]}" >&2
  echo "format:cpp:check: ${#differ[@]} of ${#files[@]} files differ from .clang-format ($(clang-format --version | grep -o 'version [0-9.]*')); run: npm run format:cpp" >&2
  exit 1
fi
echo "format:cpp:check: ${#files[@]} files as .clang-format writes them"
