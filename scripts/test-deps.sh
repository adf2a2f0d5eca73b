#!/usr/bin/env bash
# Installs what the test suite needs beyond Go on a fresh Debian machine: bubblewrap for the
# shell sandbox tests, webp (cwebp) to make the WebP fixtures of the read_image tests, and (through scripts/npm-deps.sh) the npm packages the MCP and Code
# Mode tests run against. It is idempotent and quiet when everything is present.
set -euo pipefail

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v cwebp >/dev/null 2>&1 || need_apt+=(webp)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "test-deps: installing ${need_apt[*]} with apt-get" >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

"$(dirname "$0")/npm-deps.sh"
