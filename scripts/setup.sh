#!/usr/bin/env bash
# Create .venv and install contextwarden into it (editable). Safe to run again.
#
#   bash scripts/setup.sh                    # what the demo needs: the core + the bundled tokenizer (bpe-openai);
#                                            # binary wheels only, nothing is compiled
#   EXTRAS=dev,peers bash scripts/setup.sh   # what the tests need (scripts/test.sh does this, then builds the
#                                            # local model server with scripts/llama_server.sh)
#
# Environment: EXTRAS (default tokenizers; empty for the core alone), PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${EXTRAS-tokenizers}"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
target="."
[ -n "$EXTRAS" ] && target=".[${EXTRAS}]"
# --only-binary for the quick start's own dependencies: a package that would have to be compiled is an
# error here, not a silent twenty-minute build. (The editable project itself is built by setuptools.)
only_binary=(--only-binary ":all:")
[ "$EXTRAS" = "tokenizers" ] || [ -z "$EXTRAS" ] || only_binary=()
.venv/bin/python -m pip install -q "${only_binary[@]}" --no-binary contextwarden -e "$target"
