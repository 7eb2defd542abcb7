#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the store tests and benchmarks.
#
#   bash scripts/pg.sh start   # initdb (first time), start, create the database; prints the DSN on stdout
#   bash scripts/pg.sh stop    # stop the cluster (the data directory stays; `rm -rf` it to start over)
#   bash scripts/pg.sh restart [fast|immediate]   # restart it (immediate: as after a crash)
#   bash scripts/pg.sh dsn     # print the DSN
#
# Typical use:  export CONTEXTWARDEN_PG_DSN="$(bash scripts/pg.sh start)"
#
# Environment: CONTEXTWARDEN_PG_DIR (default /tmp/contextwarden-pg), CONTEXTWARDEN_PG_PORT (default 55432).
# The server listens on 127.0.0.1 and on a unix socket in the data directory, trusts local users
# (it is for tests only), and runs as the `postgres` user when started by root, since initdb and
# postgres refuse to run as root.
set -euo pipefail

DIR="${CONTEXTWARDEN_PG_DIR:-/tmp/contextwarden-pg}"
PORT="${CONTEXTWARDEN_PG_PORT:-55432}"
DB=contextwarden
USER_NAME=postgres
DSN="postgresql://${USER_NAME}@127.0.0.1:${PORT}/${DB}"

log() { echo "pg.sh: $*" >&2; }

find_bin() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

ensure_bin() {
    if ! BIN="$(find_bin)"; then
        log "PostgreSQL binaries not found; installing Debian's postgresql"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
        BIN="$(find_bin)" || { log "no initdb under /usr/lib/postgresql/*/bin after install"; exit 1; }
    fi
}

# run a command as the cluster's owner: root may not run initdb or postgres
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        if ! id "$USER_NAME" >/dev/null 2>&1; then
            useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
        fi
        runuser -u "$USER_NAME" -- "$@"
    else
        "$@"
    fi
}

start() {
    ensure_bin
    mkdir -p "$DIR"
    [ "$(id -u)" = 0 ] && chown "$USER_NAME" "$DIR" && chmod 700 "$DIR"
    if [ ! -f "$DIR/PG_VERSION" ]; then
        log "initdb into $DIR"
        as_owner "$BIN/initdb" -D "$DIR" -U "$USER_NAME" --auth=trust --encoding=UTF8 --locale=C.UTF-8 >&2
    fi
    if as_owner "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
        log "already running"
    else
        as_owner "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t 60 \
            -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2
    fi
    if ! as_owner "$BIN/psql" -h "$DIR" -p "$PORT" -U "$USER_NAME" -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
        as_owner "$BIN/createdb" -h "$DIR" -p "$PORT" -U "$USER_NAME" "$DB" >&2
    fi
    echo "$DSN"
}

stop() {
    ensure_bin
    if [ -f "$DIR/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
        as_owner "$BIN/pg_ctl" -D "$DIR" -m fast -w stop >&2
    else
        log "not running"
    fi
}

restart() {
    ensure_bin
    as_owner "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -m "${1:-fast}" -w -t 60 restart >&2
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    restart) restart "${2:-fast}" ;;
    dsn) echo "$DSN" ;;
    *) log "usage: $0 start|stop|restart [fast|immediate]|dsn"; exit 2 ;;
esac
