"""The trust check and the project's rule store read ``permissions.jsonl`` with one reader and one decoder:
whatever the bytes (an undecodable byte, CRLF, a BOM, a NUL, wrong types, a FIFO, a symlink), every allow
rule the store would apply is one the trust check listed, nothing applies from an untrusted file, and a file
that cannot be read makes the project need trust (never "empty, so trusted")."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from acp_agent.coding._prepare import trusted_rule_keys
from acp_agent.coding.permissions._trust import ProjectRuleStore
from acp_agent.config import load_config
from acp_agent.trust import TrustStore
from harness.policy import Rule, Verdict
from tests.security._trust_support import ScriptedModel, client, open_session, prompt, text, tool
from tests.security.test_trust_project import env_of, world  # noqa: F401  # pyright: ignore[reportUnusedImport]  (a fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

ALLOW_ALL = {"verdict": "allow", "kind": "tool", "tool": "*"}
ALLOW_CURL = {"verdict": "allow", "kind": "command", "tool": "shell", "command": "curl"}
DENY_RM = {"verdict": "deny", "kind": "command", "tool": "shell", "command": "rm"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _line(rule: object) -> bytes:
    return json.dumps(rule).encode() + b"\n"


def _write(data: bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_bytes(data)

    return write


def _symlink(path: Path) -> None:
    target = path.with_name("elsewhere.jsonl")
    target.write_bytes(_line(ALLOW_ALL))
    path.symlink_to(target.name)


BYTES: dict[str, Callable[[Path], None]] = {
    "plain": _write(_line(ALLOW_ALL) + _line(DENY_RM)),
    "undecodable byte": _write(_line(ALLOW_ALL) + b'{"verdict": "allow", "kind": "tool", "tool": "\xff"}\n'),
    "latin-1 text": _write(_line(ALLOW_CURL) + "# caf\u00e9\n".encode("latin-1")),
    "CRLF": _write((_line(ALLOW_ALL) + _line(ALLOW_CURL)).replace(b"\n", b"\r\n")),
    "BOM": _write(b"\xef\xbb\xbf" + _line(ALLOW_ALL)),
    "BOM then CR only": _write(
        b"\xef\xbb\xbf" + (_line(ALLOW_ALL) + _line(ALLOW_CURL)).replace(b"\n", b"\r")
    ),
    "NUL in a line": _write(_line(ALLOW_CURL) + b'{"verdict": "allow", "kind": "tool", "tool": "*"}\x00\n'),
    "NUL inside a string": _write(b'{"verdict": "allow", "kind": "tool", "tool": "*\\u0000"}\n'),
    "wrong types": _write(
        _line({"verdict": "allow", "kind": "command", "tool": "shell", "command": 5})
        + _line({"verdict": ["allow"], "kind": "tool", "tool": "*"})
        + _line({"verdict": "allow", "kind": "tool", "tool": ["*"]})
        + _line({"verdict": "allow", "kind": "hints", "hints": {"read_only": "yes"}})
        + _line([ALLOW_ALL])
    ),
    "unicode line separators": _write(_line(ALLOW_CURL).rstrip(b"\n") + "\u2028".encode() + _line(ALLOW_ALL)),
    "duplicate keys": _write(b'{"verdict": "deny", "verdict": "allow", "kind": "tool", "tool": "*"}\n'),
    "a FIFO": lambda path: os.mkfifo(path),
    "a directory": lambda path: path.mkdir(),
    "a symlink": _symlink,
}


def _project(tmp: Path, variant: str) -> tuple[Path, dict[str, str]]:
    repo = tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    folder = repo / ".acp-agent"
    folder.mkdir()
    (folder / "config.toml").write_text('default_mode = "default"\n')
    BYTES[variant](folder / "permissions.jsonl")
    (tmp / "xdg").mkdir()
    env = {"HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "xdg"), "ACP_AGENT_HOME": str(tmp / "agent")}
    return repo, env


def _rule(value: object) -> Rule | None:
    try:
        return Rule.from_dict(value)  # pyright: ignore[reportArgumentType]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


@pytest.mark.parametrize("variant", list(BYTES))
async def test_the_trust_check_and_the_rule_store_agree_on_every_byte(tmp_path: Path, variant: str) -> None:
    repo, env = _project(tmp_path, variant)
    path = repo / ".acp-agent" / "permissions.jsonl"
    store = TrustStore(tmp_path / "agent")
    untrusted = load_config(repo, {}, env)
    trusted = load_config(repo, {}, env, trust=True)
    assert untrusted.project is not None and trusted.project is not None
    listed = [i.value for i in trusted.project.items if i.key == "rules"]
    shown = [_rule(v) for v in listed]

    before = await ProjectRuleStore(
        path, store, trusted_rules=trusted_rule_keys(untrusted), root=repo
    ).rules()
    assert [r for r in before if r.verdict is Verdict.ALLOW] == []  # nothing of an untrusted file

    after = await ProjectRuleStore(path, store, trusted_rules=trusted_rule_keys(trusted), root=repo).rules()
    applied = [r for r in after if r.verdict is Verdict.ALLOW]
    # Every allow rule applied is one the user was shown (read from the very object the dialog listed).
    assert all(r in shown for r in applied)
    readable = variant not in ("undecodable byte", "latin-1 text", "a FIFO", "a directory", "a symlink")
    if not readable:
        assert applied == []
        assert untrusted.project.items and not untrusted.project.trusted  # needs trust: never empty
        assert any("permissions.jsonl" in str(p) for p in untrusted.problems)
    elif variant != "duplicate keys":
        assert applied and len(applied) == len(listed)


async def test_an_allow_rule_written_after_trust_was_given_needs_trust_again(tmp_path: Path) -> None:
    repo, env = _project(tmp_path, "plain")
    path = repo / ".acp-agent" / "permissions.jsonl"
    trusted = load_config(repo, {}, env, trust=True)
    with path.open("ab") as f:
        f.write(_line(ALLOW_CURL))
    rules = await ProjectRuleStore(
        path, TrustStore(tmp_path / "agent"), trusted_rules=trusted_rule_keys(trusted), root=repo
    ).rules()
    assert [r.to_dict() for r in rules if r.verdict is Verdict.ALLOW] == [ALLOW_ALL]


@pytest.mark.process
@pytest.mark.parametrize("variant", ["undecodable byte", "BOM", "CRLF", "NUL in a line"])
async def test_a_shipped_allow_everything_never_runs_a_command_unasked(
    world: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    variant: str,
) -> None:
    """Through the real process: the repository's "allow every tool", in any encoding, is asked about."""
    canary = tmp_path / "canary"
    BYTES[variant](world["repo"] / ".acp-agent" / "permissions.jsonl")
    command = f"touch {canary}"
    with ScriptedModel(tool("shell", {"command": command, "sandbox": "off"}), text("ok")) as model:
        async with client(world["home"], env_of(world, model)) as agent:  # rejects every request
            session = await open_session(agent, world["repo"])
            await prompt(agent, session)
            asked = agent.requests_of("session/request_permission")
            assert any(r["toolCall"].get("rawInput", {}).get("command") == command for r in asked)
            assert agent.violations == []
    assert not canary.exists(), "a rule of an untrusted permission file ran a command unasked"


@pytest.mark.process
async def test_a_linked_acp_agent_folders_allow_everything_never_writes_unasked(
    world: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """``.acp-agent`` a symlink to a folder outside the repository: its rules were once read through the link
    and, the file resolving outside, applied whole as if the user had put them there."""
    written = world["repo"] / "notes.txt"
    outside = tmp_path / "sibling-clone" / ".acp-agent"
    outside.mkdir(parents=True)
    (outside / "permissions.jsonl").write_bytes(_line(ALLOW_ALL))
    (outside / "config.toml").write_text('default_mode = "default"\n')
    folder = world["repo"] / ".acp-agent"
    folder.rmdir()
    folder.symlink_to(outside)
    call = tool("write_file", {"path": str(written), "content": "x"})  # the default mode asks for a write
    with ScriptedModel(call, text("ok")) as model:
        async with client(world["home"], env_of(world, model)) as agent:  # rejects every request
            session = await open_session(agent, world["repo"])
            await prompt(agent, session)
            asked = agent.requests_of("session/request_permission")
            assert any(r["toolCall"].get("rawInput", {}).get("path") == str(written) for r in asked), asked
            assert agent.violations == []
    assert not written.exists(), "a rule read through a linked .acp-agent let a write through unasked"
