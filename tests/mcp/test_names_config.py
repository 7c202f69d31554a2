"""Tool names, config parsing, the stdio env base, and that importing harness.mcp does not import mcp."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness._validate import input_error
from harness.mcp import (
    HttpConfig,
    McpConfigError,
    StdioConfig,
    assign_names,
    exposed_name,
    load_mcp_config,
    parse_acp_servers,
    safe_env,
    servers_from_acp,
)

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_valid_names_are_kept_as_mcp_server_tool() -> None:
    assert exposed_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert exposed_name("everything", "get-sum") == "mcp__everything__get-sum"


@pytest.mark.parametrize(
    ("server", "tool"),
    [("my.server", "a/b c"), ("s", "x" * 200), ("ünï", "tööl"), ("a", "dots.in.name")],
)
def test_invalid_names_are_sanitised_to_the_provider_charset(server: str, tool: str) -> None:
    name = exposed_name(server, tool)
    assert VALID.fullmatch(name), name
    assert name.startswith("mcp__")


def test_names_that_sanitise_alike_stay_distinct_and_do_not_depend_on_order() -> None:
    pairs = [("s", "a.b"), ("s", "a/b"), ("s", "a_b"), ("s.x", "t"), ("s_x", "t")]
    first = assign_names(pairs)
    again = assign_names(list(reversed(pairs)))
    assert first == again
    assert len(set(first.values())) == len(pairs)
    assert first[("s", "a_b")] == "mcp__s__a_b"
    assert all(VALID.fullmatch(n) for n in first.values())


def test_draft07_and_2020_12_schemas_are_validated_by_their_own_dialect() -> None:
    # Tuple "items" is draft-07; "prefixItems" is 2020-12. Each must be enforced under its dialect.
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"p": {"type": "array", "items": [{"type": "integer"}]}},
    }
    modern = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"p": {"type": "array", "prefixItems": [{"type": "integer"}]}},
    }
    assert input_error(draft7, {"p": [1]}) is None
    assert input_error(draft7, {"p": ["x"]}) is not None
    assert input_error(modern, {"p": [1]}) is None
    assert input_error(modern, {"p": ["x"]}) is not None


def test_claude_desktop_config_gives_stdio_and_http_servers(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": "uvx",
                        "args": ["mcp-server-time"],
                        "env": {"TZ": "UTC"},
                        "cwd": "sub",
                    },
                    "remote": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "headers": {"X-A": "1"}},
                    "old": {"type": "sse", "url": "http://127.0.0.1:3002/sse"},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    servers = load_mcp_config(path, call_timeout=5.0)
    configs = {s.name: s.config for s in servers}
    assert configs["time"] == StdioConfig(
        "time", "uvx", ("mcp-server-time",), {"TZ": "UTC"}, str(tmp_path / "sub")
    )
    assert configs["remote"] == HttpConfig("remote", "http://127.0.0.1:3001/mcp", {"X-A": "1"}, "http")
    assert configs["old"] == HttpConfig("old", "http://127.0.0.1:3002/sse", {}, "sse")
    assert "off" not in configs
    assert all(s.call_timeout == 5.0 for s in servers)


def test_a_missing_config_file_means_no_servers(tmp_path: Path) -> None:
    assert load_mcp_config(tmp_path / "absent.json") == []


def test_a_malformed_config_is_a_config_error_naming_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"bad": {"args": []}}}))
    with pytest.raises(McpConfigError, match=r"mcpServers\.bad"):
        load_mcp_config(path)


def test_acp_entries_convert_stdio_without_type_and_http_with_name_value_lists() -> None:
    entries: list[dict[str, Any]] = [
        {"name": "fs", "command": "/bin/fs", "args": ["-v"], "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "web", "url": "https://x/mcp", "headers": [{"name": "Auth", "value": "t"}]},
        {"type": "sse", "name": "old", "url": "https://x/sse", "headers": []},
    ]
    assert parse_acp_servers(entries) == [
        StdioConfig("fs", "/bin/fs", ("-v",), {"K": "v"}),
        HttpConfig("web", "https://x/mcp", {"Auth": "t"}, "http"),
        HttpConfig("old", "https://x/sse", {}, "sse"),
    ]
    assert [s.name for s in servers_from_acp(entries)] == ["fs", "web", "old"]
    with pytest.raises(McpConfigError):
        parse_acp_servers([{"type": "ws", "name": "x", "url": "ws://x"}])


def test_the_stdio_env_base_drops_our_secrets_and_adds_the_configured_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "secret")
    monkeypatch.setenv("PATH", "/usr/bin")
    env = safe_env({"MY_TOKEN": "given"})
    assert "ANTHROPIC_API_KEY" not in env
    assert env["PATH"] == "/usr/bin"
    assert env["MY_TOKEN"] == "given"


@pytest.mark.process
def test_importing_harness_mcp_does_not_import_the_sdk() -> None:
    code = "import sys, harness.mcp; sys.exit(1 if 'mcp' in sys.modules or 'mcp_types' in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2], timeout=60)
    assert done.returncode == 0
