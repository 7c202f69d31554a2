"""`acp-agent sessions list|show|delete` read the session files directly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

ACP_AGENT = Path(sys.executable).parent / "acp-harness-agent"


def make_session(
    home: Path, session_id: str, title: str, updated: str, messages: list[dict[str, object]]
) -> None:
    d = home / "sessions" / session_id
    d.mkdir(parents=True)
    meta: dict[str, object] = {
        "id": session_id,
        "cwd": "/work/p",
        "title": title,
        "createdAt": updated,
        "updatedAt": updated,
        "additionalDirectories": [],
        "mcpServers": [],
    }
    (d / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (d / "messages.jsonl").write_text(
        "".join(json.dumps(m) + "\n" for m in messages) + '{"torn', encoding="utf-8"
    )


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ACP_AGENT_HOME=str(home))
    return subprocess.run(
        [str(ACP_AGENT), "sessions", *args], capture_output=True, text=True, env=env, timeout=30
    )


def test_list_show_and_delete_sessions(tmp_path: Path) -> None:
    make_session(tmp_path, "sess_old", "first chat", "2025-01-01T00:00:00.000Z", [])
    make_session(
        tmp_path,
        "sess_new",
        "fix the bug",
        "2025-02-01T00:00:00.000Z",
        [
            {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "text": "look first"},
                    {"type": "tool_call", "id": "c1", "name": "read", "input": {"path": "a"}},
                ],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool_result",
                        "callId": "c1",
                        "content": [{"type": "text", "text": "x=1"}],
                        "error": False,
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "fixed"}]},
        ],
    )
    usage = {
        "usage": {"input": 1200, "output": 300, "cacheRead": 9000, "cacheWrite": 500},
        "costUsd": 0.01234,
    }
    (tmp_path / "sessions" / "sess_new" / "usage.json").write_text(json.dumps(usage))
    listed = run(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["ID", "UPDATED", "TOKENS", "/", "COST", "TITLE", "CWD"]
    assert lines[1].startswith("sess_new") and "fix the bug" in lines[1]
    assert "11.0k tokens (9.0k cached), $0.0123" in lines[1]
    assert lines[2].startswith("sess_old") and " - " in lines[2], "no usage kept: a dash"

    shown = run(tmp_path, "show", "sess_new")
    assert shown.returncode == 0, shown.stderr
    assert "user: fix it" in shown.stdout
    assert "usage 11.0k tokens (9.0k cached), $0.0123" in shown.stdout
    assert "assistant (thinking): look first" in shown.stdout
    assert 'assistant calls read {"path": "a"}' in shown.stdout
    assert "result: x=1" in shown.stdout
    assert "assistant: fixed" in shown.stdout

    deleted = run(tmp_path, "delete", "sess_old")
    assert deleted.returncode == 0
    assert not (tmp_path / "sessions" / "sess_old").exists()
    assert "sess_old" not in run(tmp_path, "list").stdout


def test_an_unknown_session_is_one_sentence_and_exit_1(tmp_path: Path) -> None:
    for action in ("show", "delete"):
        result = run(tmp_path, action, "../etc")
        assert result.returncode == 1
        assert result.stdout == ""
        assert "no session '../etc'" in result.stderr and "acp-harness-agent sessions list" in result.stderr
        assert "Traceback" not in result.stderr


def test_no_sessions_says_so(tmp_path: Path) -> None:
    result = run(tmp_path, "list")
    assert result.returncode == 0
    assert result.stdout.startswith("no sessions in")
