#!/usr/bin/env bash
# Installs the npm packages the tests run against into .ci/node_modules (git-ignored):
# the reference MCP servers (server-everything, server-filesystem) and the official
# TypeScript SDK, whose client drives `dsh mcp serve` in the tests; and the TypeScript
# compiler, which type-checks the generated Code Mode SDK against sample programs
# (codemode/tsc_test.go). Versions are pinned. npm removes from a prefix every package the
# running command does not name, so every package is listed here and installed together.
# It is idempotent: packages already installed at the pinned version are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/sdk@1.32.2"
  "typescript@5.9.3"
)

if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "npm-deps: installing nodejs and npm with apt-get" >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi

missing=()
for spec in "${pkgs[@]}"; do
  name="${spec%@*}"
  version="${spec##*@}"
  manifest=".ci/node_modules/$name/package.json"
  if [ ! -f "$manifest" ] || ! grep -q "\"version\": \"$version\"" "$manifest"; then
    missing+=("$spec")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "npm-deps: installing ${missing[*]} into .ci/node_modules" >&2
  # --no-save keeps npm from writing package.json or package-lock.json into .ci.
  npm install --prefix .ci --no-save --no-audit --no-fund --loglevel=error "${pkgs[@]}" >&2
fi
