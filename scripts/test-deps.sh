#!/usr/bin/env bash
# Installs what the test suite needs beyond Go on a fresh Debian machine: bubblewrap for the
# shell sandbox tests, webp (cwebp) to make the WebP fixtures of the read_image tests, zstd for the session log's compatibility check against the reference
# decompressor, python3 for the Starlark SDK golden check, postgresql for the PostgreSQL
# session store, chromium for the session viewer's browser tests, and (through scripts/npm-deps.sh)
# the npm packages the MCP and Code Mode tests run against. The tests fail, never skip, when
# one of these is missing. It is idempotent and quiet when everything is present.
set -euo pipefail

need_apt=()
# dsh takes bwrap from these fixed paths only, never from $PATH.
[ -x /usr/bin/bwrap ] || [ -x /bin/bwrap ] || need_apt+=(bubblewrap)
command -v zstd >/dev/null 2>&1 || need_apt+=(zstd)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v cwebp >/dev/null 2>&1 || need_apt+=(webp)
# PostgreSQL for the PostgreSQL session store's tests (internal/pgtest starts a private
# server from /usr/lib/postgresql/*/bin as the postgres user the package creates).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need_apt+=(postgresql)
# The session viewer's browser tests (viewer/browser_test.go) drive headless Chromium at
# this fixed path through chromedp.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "test-deps: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

"$(dirname "$0")/npm-deps.sh"

# Temporal: the durable-run tests (package durable, dsh worker) run against a real dev server,
# the temporal CLI built once into the cache (scripts/temporal.sh install skips it when present).
"$(dirname "$0")/temporal.sh" install
