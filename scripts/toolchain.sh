#!/usr/bin/env bash
# Runs a command with Node.js >= 22.22 and pnpm on PATH and the workspace installed.
# Works on a machine whose only Node.js is older (or missing pnpm): it then installs
# Node.js 24 and pnpm from the npm registry into .toolchain/ inside the checkout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.toolchain"
node_spec="node@24"
pnpm_spec="pnpm@10.34.9"

say() { printf '[spindle] %s\n' "$*" >&2; }

node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e '
    const [maj, min] = process.versions.node.split(".").map(Number);
    process.exit(maj > 22 || (maj === 22 && min >= 22) ? 0 : 1);
  ' 2>/dev/null
}

if [ -x "$tools/node_modules/.bin/node" ]; then
  export PATH="$tools/node_modules/.bin:$PATH"
fi

if ! node_ok || ! command -v pnpm >/dev/null 2>&1; then
  command -v npm >/dev/null 2>&1 || { say "npm is needed to install the toolchain"; exit 1; }
  say "installing $node_spec and $pnpm_spec into .toolchain/ (found node $(node -v 2>/dev/null || echo none))"
  mkdir -p "$tools"
  [ -f "$tools/package.json" ] || echo '{ "private": true }' > "$tools/package.json"
  npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "$node_spec" "$pnpm_spec" >&2
  export PATH="$tools/node_modules/.bin:$PATH"
  node_ok || { say "could not get Node.js >= 22.22 (have $(node -v))"; exit 1; }
fi

cd "$root"
stamp="node_modules/.spindle-install-stamp"
if [ ! -f "$stamp" ] || [ pnpm-lock.yaml -nt "$stamp" ]; then
  say "installing workspace dependencies with pnpm $(pnpm -v) on node $(node -v)"
  if [ -f pnpm-lock.yaml ]; then
    pnpm install --frozen-lockfile --reporter=append-only >&2
  else
    pnpm install --reporter=append-only >&2
  fi
  touch "$stamp"
fi

exec "$@"
