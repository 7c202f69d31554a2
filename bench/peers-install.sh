#!/usr/bin/env bash
# Install the peer agents that `python -m bench peers_cost` compares acp-agent with, outside the project's
# own dependencies: into .cache/peers/ (ignored by git). Needs npm and a Python >= 3.13 (fast-agent's
# floor; set PYTHON313 to its path when `python3.13` is not on PATH). Re-running upgrades in place.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=.cache/peers
mkdir -p "$peers"

# claude-agent-acp: Zed's ACP adapter over the Claude Agent SDK (which bundles the Claude Code CLI).
npm install --prefix "$peers/npm" --no-fund --no-audit @zed-industries/claude-agent-acp

# fast-agent: its own venv; `fast-agent serve --transport acp` is its ACP server.
py="${PYTHON313:-$(command -v python3.13 || true)}"
if [ -z "$py" ]; then
    echo "fast-agent needs Python >= 3.13: set PYTHON313=/path/to/python3.13" >&2
    exit 1
fi
"$py" -m venv "$peers/fast-agent"
"$peers/fast-agent/bin/pip" install -q --upgrade fast-agent-mcp
echo "peers installed under $peers"
