#!/usr/bin/env bash
# Runs a private PostgreSQL server for CI and for pointing dsh at (sessions.store):
#
#   scripts/postgres.sh start   initdb (first time) and start the server; prints its URL
#   scripts/postgres.sh url     print the URL of the running server
#   scripts/postgres.sh stop    stop the server (fast shutdown) and keep its data
#   scripts/postgres.sh destroy stop it and remove its data directory
#
# The data directory is $DSH_PG_DIR (default .ci/postgres in the repository); the port is
# $DSH_PG_PORT (default 55432), on 127.0.0.1 only; authentication is trust for the local
# user "dsh", so keep it to machines you trust. As root, the server runs as the postgres
# user that Debian's postgresql package creates (scripts/test-deps.sh installs it).
# Export DSH_TEST_POSTGRES_URL="$(scripts/postgres.sh url)" to run the tests against it.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${DSH_PG_DIR:-$root/.ci/postgres}"
port="${DSH_PG_PORT:-55432}"
data="$dir/data"
sock="$dir/sock"
url="postgres://dsh@127.0.0.1:$port/postgres?sslmode=disable"

bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
    echo "postgres.sh: no PostgreSQL server under /usr/lib/postgresql/*/bin: run scripts/test-deps.sh" >&2
    exit 1
  fi
  echo "$d"
}

# as runs a command as the server's user: the postgres user when we are root.
as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running() { [ -f "$data/postmaster.pid" ] && as "$(bindir)/pg_ctl" -D "$data" status >/dev/null 2>&1; }

case "${1:-}" in
  start)
    bin="$(bindir)"
    mkdir -p "$dir" "$sock"
    if [ "$(id -u)" -eq 0 ]; then
      chown postgres:postgres "$dir" "$sock"
      chmod 0755 "$(dirname "$dir")" 2>/dev/null || true
    fi
    if [ ! -f "$data/PG_VERSION" ]; then
      as "$bin/initdb" -D "$data" -U dsh --auth=trust -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    if ! running; then
      as "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $sock -c listen_addresses=127.0.0.1" start >/dev/null ||
        { tail -n 20 "$dir/server.log" >&2; exit 1; }
    fi
    echo "$url"
    ;;
  url)
    running || { echo "postgres.sh: no server running in $data (scripts/postgres.sh start)" >&2; exit 1; }
    echo "$url"
    ;;
  stop)
    if running; then as "$(bindir)/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null; fi
    ;;
  destroy)
    if running; then as "$(bindir)/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: scripts/postgres.sh start|url|stop|destroy" >&2
    exit 2
    ;;
esac
