#!/usr/bin/env bash
# Install the pinned agent CLIs into a cache outside the repository (default
# ~/.cache/swell/agent-clis); tests find them there (or at $SWELL_AGENT_CLIS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${SWELL_AGENT_CLIS:-$HOME/.cache/swell/agent-clis}"
mkdir -p "$dest"
mapfile -t pkgs < <(grep -v '^\s*#' "$here/agent-clis.txt" | grep -v '^\s*$')
if [ -f "$dest/.installed" ] && [ "$(cat "$dest/.installed")" = "${pkgs[*]}" ]; then
  echo "agent CLIs already installed in $dest"
  exit 0
fi
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "${pkgs[@]}"
echo "${pkgs[*]}" > "$dest/.installed"
ls "$dest/node_modules/.bin"
