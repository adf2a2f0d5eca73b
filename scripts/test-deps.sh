#!/usr/bin/env bash
# Installs what the test suite needs beyond Go on a fresh Debian machine: bubblewrap for the
# shell sandbox tests, webp (cwebp) to make the WebP fixtures of the read_image tests, zstd for the session log's compatibility check against the reference
# decompressor, python3 for the Starlark SDK golden check, and (through scripts/npm-deps.sh)
# the npm packages the MCP and Code Mode tests run against. The tests fail, never skip, when
# one of these is missing. It is idempotent and quiet when everything is present.
set -euo pipefail

need_apt=()
# dsh takes bwrap from these fixed paths only, never from $PATH.
[ -x /usr/bin/bwrap ] || [ -x /bin/bwrap ] || need_apt+=(bubblewrap)
command -v zstd >/dev/null 2>&1 || need_apt+=(zstd)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v cwebp >/dev/null 2>&1 || need_apt+=(webp)

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
