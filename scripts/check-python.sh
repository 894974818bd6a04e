#!/usr/bin/env bash
# `npm run lint:py` (part of `npm test`): black --check and flake8 over the Python of scripts/ and
# bench/ (settings: pyproject.toml, .flake8). `npm run format:py` (--fix) applies black instead.
# Both tools are Debian's packages (provided by scripts/provision-test.sh, as for npm test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/provision-test.sh black flake8
if [[ "${1:-}" == --fix ]]; then
  black -q scripts bench
  exit 0
fi
status=0
if ! black --check -q scripts bench; then
  echo "lint:py: files above are not black-formatted (black $(black --version | head -n 1 | awk '{print $2}' | tr -d ,)); run: npm run format:py" >&2
  status=1
fi
flake8 scripts bench || status=1
exit $status
