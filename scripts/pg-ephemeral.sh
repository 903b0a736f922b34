#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benchmarks: its own temp dir, a free loopback port, run as an
# unprivileged user (PostgreSQL refuses root).
#   scripts/pg-ephemeral.sh start DIR [fsync=on|off]   prints the URL of the `postgres` database
#   scripts/pg-ephemeral.sh stop DIR                   stops the cluster and removes DIR
#   scripts/pg-ephemeral.sh crash-restart DIR          kills the server (immediate stop, as a crash) and starts
#                                                      it again on the same port (the chaos harness)
set -euo pipefail

cmd=${1:?usage: pg-ephemeral.sh start|stop DIR}
dir=${2:?usage: pg-ephemeral.sh start|stop DIR}
fsync=${3:-off}

pgbin() {
    if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
    local found
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$found" ] || { echo "pg-ephemeral: no PostgreSQL binaries (initdb); run scripts/setup.sh" >&2; exit 1; }
    echo "$found"
}

as_db_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
    bin=$(pgbin)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        chown postgres "$dir"
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_db_user "$bin/initdb" -D "$dir/data" --auth=trust -U postgres -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    as_db_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=$fsync -c max_connections=300" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    echo "$port" >"$dir/port"
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
crash-restart)
    bin=$(pgbin)
    as_db_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    port=$(cat "$dir/port")
    as_db_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=$fsync -c max_connections=300" start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 1; }
    ;;
stop)
    if [ -d "$dir/data" ]; then
        bin=$(pgbin)
        as_db_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: pg-ephemeral.sh start|stop|crash-restart DIR [fsync]" >&2; exit 2 ;;
esac
