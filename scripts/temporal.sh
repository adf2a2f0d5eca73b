#!/usr/bin/env bash
# Installs and runs the Temporal dev server the durable-run tests use.
#
#   scripts/temporal.sh install   builds the temporal CLI into the cache (skipped when present)
#   scripts/temporal.sh path      prints the cached binary's path
#   scripts/temporal.sh start     starts a private dev server on free ports; prints HOST:PORT
#   scripts/temporal.sh stop      stops the server that start started
#
# The server keeps its state in a private database file under $DSH_TEMPORAL_STATE (default a
# directory under the cache), so it never touches another user's server.
set -euo pipefail

VERSION=v1.5.1
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/dsh-test"
BIN_DIR="$CACHE/temporal-$VERSION"
BIN="$BIN_DIR/temporal"
STATE="${DSH_TEMPORAL_STATE:-$CACHE/temporal-state}"
PIDFILE="$STATE/server.pid"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

case "${1:-}" in
install)
  if [ -x "$BIN" ]; then exit 0; fi
  command -v go >/dev/null 2>&1 || { echo "temporal.sh: go is required to build the temporal CLI" >&2; exit 1; }
  mkdir -p "$BIN_DIR"
  echo "temporal.sh: building temporal CLI $VERSION into $BIN_DIR (this takes minutes)" >&2
  GOBIN="$BIN_DIR" go install "github.com/temporalio/cli/cmd/temporal@$VERSION"
  ;;
path)
  echo "$BIN"
  ;;
start)
  [ -x "$BIN" ] || { echo "temporal.sh: $BIN is missing; run scripts/temporal.sh install (or scripts/test-deps.sh)" >&2; exit 1; }
  mkdir -p "$STATE"
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    cat "$STATE/address"; exit 0
  fi
  port=$(free_port); ui=$(free_port); http=$(free_port); metrics=$(free_port)
  "$BIN" server start-dev --headless --ip 127.0.0.1 --port "$port" --ui-port "$ui" \
    --http-port "$http" --metrics-port "$metrics" --db-filename "$STATE/temporal.db" \
    --log-level error >"$STATE/server.log" 2>&1 &
  echo $! >"$PIDFILE"
  echo "127.0.0.1:$port" >"$STATE/address"
  for _ in $(seq 1 600); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),1)" 2>/dev/null; then
      echo "127.0.0.1:$port"; exit 0
    fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { echo "temporal.sh: server exited; see $STATE/server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "temporal.sh: server did not listen on 127.0.0.1:$port within 120s" >&2; exit 1
  ;;
stop)
  if [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$PIDFILE" "$STATE/address"
  fi
  ;;
*)
  echo "usage: scripts/temporal.sh install|path|start|stop" >&2; exit 2
  ;;
esac
