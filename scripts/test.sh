#!/usr/bin/env bash
# Set up and run the whole test suite with the real services it needs:
# PostgreSQL (a throwaway cluster), the llama.cpp server with SmolLM2, headless Chromium, and the real
# agent CLIs (Claude Code, Codex, Gemini CLI from npm at pinned versions; CONTEXTWARDEN_CLI_VERSIONS=latest
# for the newest) that the proxy conformance tests run.
# Each service that cannot be had is reported, and the tests that need it skip saying why.
#
#   bash scripts/test.sh [pytest args...]
#
# It installs everything the tests use into .venv: the dev extra (test tools, PostgreSQL driver, both
# tokenizers), the peer systems, and the local model server, whose llama-cpp-python wheel is compiled
# once (5-20 min on 2 cores) and cached in $CW_WHEEL_CACHE (default /root/.cache/cw-wheels) so that
# later runs, on this machine or a fresh clone, reuse it.
set -uo pipefail
cd "$(dirname "$0")/.."

EXTRAS=dev bash scripts/setup.sh || exit 1
.venv/bin/python -m pip install -q -e ".[dev,peers]" || echo "test.sh: peer packages unavailable; peer strategies will skip" >&2

cleanup() {
    bash scripts/llama_server.sh stop >/dev/null 2>&1 || true
    bash scripts/pg.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

if dsn="$(bash scripts/pg.sh start)"; then
    export CONTEXTWARDEN_PG_DSN="$dsn"
else
    echo "test.sh: PostgreSQL could not start; PostgreSQL tests will skip" >&2
fi

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) \
        >/dev/null 2>&1 || echo "test.sh: chromium unavailable; browser tests will skip" >&2
fi

# install (once, cached in $CW_CLI_CACHE) and export CONTEXTWARDEN_CLAUDE_BIN, _CODEX_BIN, _GEMINI_BIN
while read -r line; do
    [ -n "$line" ] && export "$line"
done < <(bash scripts/clis.sh)

# build (once, cached) + install + start; prints CONTEXTWARDEN_LLM_URL=... last
if line="$(bash scripts/llama_server.sh up | tail -n 1)" && [ -n "$line" ]; then
    export "$line"
else
    echo "test.sh: local model server unavailable; local-model tests will skip" >&2
fi

.venv/bin/python -m pytest -q -ra "$@"
