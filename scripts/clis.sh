#!/usr/bin/env bash
# The real agent CLIs the conformance suite runs through the proxy, installed from npm at pinned
# versions into a cache that later runs and fresh clones reuse:
#
#   bash scripts/clis.sh          # install (once, cached) and print one NAME=/path line per CLI
#
# Pinned: Claude Code 2.1.332 and Codex 0.171.0, the current releases, which the conformance suite
# and the recorded fixtures (tests/data/recorded/) were made with; Gemini CLI 0.61.0. Claude Code
# 2.1.197 also passes the task directly and, unlike 2.1.332, answers a re-read of an unchanged file
# with "file unchanged since your last Read" (its fixture is recorded too).
#
# Each line it prints on stdout is an environment assignment the tests read:
#   CONTEXTWARDEN_CLAUDE_BIN   Claude Code (@anthropic-ai/claude-code)
#   CONTEXTWARDEN_CODEX_BIN    Codex (@openai/codex)
#   CONTEXTWARDEN_GEMINI_BIN   Gemini CLI (@google/gemini-cli)
# A CLI that cannot be installed is reported on stderr and left out; its tests skip saying why.
#
# Environment:
#   CONTEXTWARDEN_CLI_VERSIONS  "pinned" (default); "latest": the newest published versions instead, to
#                               see whether a client changed its request shapes; or NAME=VERSION pairs,
#                               comma-separated (names: claude-code, codex, gemini-cli), e.g.
#                               "claude-code=2.1.197", the others pinned
#   CW_CLI_CACHE                where the installs are kept (default /root/.cache/cw-clis), one
#                               prefix per <package>@<version>
#
# Typical use:  while read -r line; do export "$line"; done < <(bash scripts/clis.sh)
set -uo pipefail

CACHE="${CW_CLI_CACHE:-/root/.cache/cw-clis}"
WHICH="${CONTEXTWARDEN_CLI_VERSIONS:-pinned}"

# package version env-name binary
PINS=(
    "@anthropic-ai/claude-code 2.1.332 CONTEXTWARDEN_CLAUDE_BIN claude"
    "@openai/codex 0.171.0 CONTEXTWARDEN_CODEX_BIN codex"
    "@google/gemini-cli 0.61.0 CONTEXTWARDEN_GEMINI_BIN gemini"
)

log() { echo "clis.sh: $*" >&2; }

if ! command -v npm >/dev/null 2>&1; then
    log "npm not found; the real-CLI tests will skip"
    exit 0
fi

install_one() {
    local pkg="$1" version="$2" var="$3" bin="$4"
    local name="${pkg##*/}" pair
    for pair in ${WHICH//,/ }; do
        if [ "${pair%%=*}" = "$name" ] && [ "${pair#*=}" != "$pair" ]; then
            version="${pair#*=}"
        fi
    done
    if [ "$WHICH" = "latest" ]; then
        version="$(timeout 120 npm view "$pkg" version 2>/dev/null)" || { log "cannot resolve $pkg@latest"; return 0; }
    fi
    local prefix="$CACHE/${pkg//\//+}@$version"
    local path="$prefix/node_modules/.bin/$bin"
    if [ ! -x "$path" ] || [ ! -f "$prefix/.complete" ]; then
        mkdir -p "$prefix"
        exec 8>"$prefix/.lock"
        flock 8
        if [ ! -f "$prefix/.complete" ]; then
            log "installing $pkg@$version into $prefix"
            if ! (cd "$prefix" && timeout 900 npm install --no-audit --no-fund --no-save --loglevel=error \
                --prefix "$prefix" "$pkg@$version" >"$prefix/install.log" 2>&1); then
                log "$pkg@$version did not install (see $prefix/install.log); its tests will skip"
                exec 8>&-
                return 0
            fi
            touch "$prefix/.complete"
        fi
        exec 8>&-
    fi
    if ! "$path" --version >/dev/null 2>&1; then
        log "$path does not run ($("$path" --version 2>&1 | head -n 1)); its tests will skip"
        return 0
    fi
    echo "$var=$path"
}

for pin in "${PINS[@]}"; do
    # shellcheck disable=SC2086
    install_one $pin
done
