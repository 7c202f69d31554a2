"""A cloned project's files, however malformed, never stop the agent: through the real process, every
variant gets ``initialize`` answered, ``session/new`` answered and a prompt answered, with a message that
names the file (in the log, and shown in the session when it matters to what the session does)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.acp.instructions._support import project_agent, text

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

Make = Callable[[Path], None]

PERM = ".acp-agent/permissions.jsonl"
CONFIG = ".acp-agent/config.toml"
MCP = ".acp-agent/mcp.json"
RULES = [
    {"verdict": "allow", "kind": "tool", "tool": "*"},
    {"verdict": "allow", "kind": "command", "tool": "shell", "command": "rm -rf /"},
    {"verdict": "allow", "kind": "path", "tool": "write", "path": "/"},
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _bytes(rel: str, data: bytes) -> Make:
    def make(project: Path) -> None:
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return make


def _fifo(rel: str) -> Make:
    def make(project: Path) -> None:
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)

    return make


def _directory(rel: str) -> Make:
    def make(project: Path) -> None:
        (project / rel).mkdir(parents=True)
        (project / rel / "x").write_text("x")

    return make


def _loop(rel: str) -> Make:
    def make(project: Path) -> None:
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        other = path.with_name(path.name + ".other")
        path.symlink_to(other.name)
        other.symlink_to(path.name)

    return make


def _link_out(rel: str, data: bytes) -> Make:
    """``rel`` a symlink to a valid file outside the project (which must not be read through it)."""

    def make(project: Path) -> None:
        target = project.parent / "outside" / Path(rel).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).symlink_to(target)

    return make


def _linked_folder(project: Path) -> None:
    """``.acp-agent`` itself a symlink to a complete configuration outside the project."""
    outside = project.parent / "outside-config"
    outside.mkdir()
    (outside / "config.toml").write_text('default_mode = "plan"\n')
    (outside / "mcp.json").write_text('{"mcpServers": {"x": {"command": "touch", "args": ["CANARY"]}}}')
    (outside / "permissions.jsonl").write_text(json.dumps(RULES[0]) + "\n")
    (project / ".acp-agent").symlink_to(outside)


def _lines(*items: object) -> bytes:
    return "".join(json.dumps(i) + "\n" for i in items).encode()


def _with_marker(make: Make) -> Make:
    """``make``, plus a readable ``config.toml`` so that the ``.acp-agent`` folder counts as a project's."""

    def both(project: Path) -> None:
        make(project)
        config = project / CONFIG
        if not os.path.lexists(config):
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text('default_mode = "default"\n')

    return both


def _both(*makes: Make) -> Make:
    def make(project: Path) -> None:
        for one in makes:
            one(project)

    return make


VARIANTS: dict[str, Make] = {
    "permissions: two rules never approved": _bytes(PERM, _lines(*RULES)),
    "permissions: undecodable byte": _bytes(PERM, _lines(*RULES) + b"\xff\xfe\n"),
    "permissions: wrong types": _bytes(
        PERM,
        _lines(
            {"verdict": "allow", "kind": "command", "command": 123},
            {"verdict": "allow", "kind": "hints", "hints": "x"},
            {"verdict": ["allow"]},
            [1, 2],
            "x",
            None,
            {"verdict": "allow", "kind": "path", "tool": {"a": 1}, "path": None},
            {"verdict": "allow", "kind": "tool", "tool": {"a": [1, {"b": 2}]}},
            {"verdict": "allow", "kind": "tool", "tool": 1e400},
        ),
    ),
    "permissions: NUL, BOM and CRLF": _bytes(
        PERM, b"\xef\xbb\xbf" + _lines(*RULES).replace(b"\n", b"\r\n") + b'{"verdict":"al\x00low"}\n'
    ),
    "permissions: huge": _bytes(PERM, _lines(*RULES) * 40_000),
    "permissions: a FIFO": _with_marker(_fifo(PERM)),
    "permissions: a directory": _with_marker(_directory(PERM)),
    "permissions: a symlink loop": _with_marker(_loop(PERM)),
    "permissions: a symlink out of the project": _with_marker(_link_out(PERM, _lines(*RULES))),
    "config: a symlink out of the project": _link_out(CONFIG, b'default_mode = "plan"\n'),
    "config: .acp-agent is a symlink": _linked_folder,
    "config: a FIFO": _fifo(CONFIG),
    "mcp.json: a symlink out of the project": _with_marker(
        _link_out(MCP, b'{"mcpServers": {"x": {"command": "touch", "args": ["CANARY"]}}}')
    ),
    "config: undecodable": _bytes(CONFIG, b'default_mode = "\xff"\n'),
    "config: not TOML": _bytes(CONFIG, b"[[[\n"),
    "config: wrong types": _bytes(
        CONFIG,
        b'hooks = 5\nmcp_servers = "x"\nsandbox = 3\nmodel = []\n[models]\nx = 1\n'
        b"[tools]\nsearxng_url = 7\n[permissions]\nproject_file = 3\n",
    ),
    "config: wrong hook types": _bytes(
        CONFIG, b'[[hooks]]\nevent = 5\ncommand = []\n[[hooks]]\nevent = "stop"\n'
    ),
    "config: huge": _bytes(CONFIG, b"# " + b"x" * (8 * 1024 * 1024) + b"\n"),
    "config: a directory": _both(_bytes(PERM, b""), _directory(CONFIG)),
    "config: a symlink loop": _loop(CONFIG),
    "mcp.json: undecodable": _bytes(MCP, b'{"mcpServers": {"\xff": {}}}'),
    "mcp.json: wrong types": _bytes(
        MCP, b'{"mcpServers": {"a": 5, "b": {"command": [1]}, "c": {"args": "x"}}}'
    ),
    "mcp.json: a list": _bytes(MCP, b"[1, 2]"),
    "mcp.json: huge": _bytes(MCP, b'{"x": "' + b"y" * (8 * 1024 * 1024) + b'"}'),
    "mcp.json: a FIFO": _with_marker(_fifo(MCP)),
    "mcp.json: a symlink loop": _with_marker(_loop(MCP)),
    "AGENTS.md: undecodable": _bytes("AGENTS.md", b"# Rules\n\xff\xfe\x00\n"),
    "AGENTS.md: huge": _bytes("AGENTS.md", b"line\n" * 2_000_000),
    "AGENTS.md: a FIFO": _fifo("AGENTS.md"),
    "AGENTS.md: a directory": _directory("AGENTS.md"),
    "AGENTS.md: a symlink loop": _loop("AGENTS.md"),
    "skill: bad front matter": _bytes(".agents/skills/x/SKILL.md", b"---\nname: [\n---\nbody \xff\n"),
    "skill: a FIFO": _fifo(".agents/skills/x/SKILL.md"),
    "skill: a symlink loop": _loop(".claude/skills/y"),
    "command: undecodable": _bytes(".acp-agent/commands/x.md", b"---\ndescription: \xff\n---\nrun $1\n"),
    "command: a FIFO": _with_marker(_fifo(".acp-agent/commands/x.md")),
    "command folder is a file": _bytes(".claude/commands", b"x"),
    "command: a symlink loop": _loop(".claude/commands/z.md"),
}


@pytest.mark.process
@pytest.mark.parametrize("name", list(VARIANTS))
async def test_a_malformed_project_file_leaves_a_working_agent(tmp_path: Path, name: str) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    VARIANTS[name](project)
    async with project_agent(tmp_path, [text("fine")], cwd=project, started_in_project=True) as p:
        answer = await p.prompt("hello")
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        assert p.agent.violations == []
        seen = json.dumps([p.updates(), p.asked])  # what the editor was shown and asked
    log = p.agent.stderr_text()
    assert "Traceback" not in log
    assert not (project / "CANARY").exists() and not (tmp_path / "CANARY").exists()
    logged = LOGGED.get(name)
    if logged is not None:
        assert logged in log, f"the log does not name {logged}"
    named = SHOWN.get(name)
    if named is not None:
        assert named in seen, f"the editor was not told about {named}"
        if name != "permissions: two rules never approved":  # well-formed: asked about, nothing to log
            assert named in log, f"the log does not name {named}"


SHOWN: dict[str, str] = {
    **{n: "permissions.jsonl" for n in VARIANTS if n.startswith("permissions")},
    **{n: "config.toml" for n in VARIANTS if n.startswith("config") and "loop" not in n},
    **{n: "mcp.json" for n in VARIANTS if n.startswith("mcp.json")},
}
"""The file each variant must be named in the log and shown (or asked about) in the session."""

LOGGED: dict[str, str] = {
    "AGENTS.md: a FIFO": "AGENTS.md",
    "AGENTS.md: a directory": "AGENTS.md",
    "skill: a FIFO": "SKILL.md",
}
"""Files skipped without a word to the editor (they only add context): the log names them."""
