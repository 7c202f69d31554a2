"""``bench/peers_cost``: the loopback server answers each agent from the conversation it is sent, so an
agent's side requests and its own history layout cannot shift the scripted session; quick mode skips it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from bench import peers_cost as pc

REPO = Path("/project")
TOOLS = [{"name": "t", "input_schema": {"type": "object"}}]


def _request(*messages: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "messages": list(messages),
        "tools": TOOLS if tools is None else tools,
    }


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": f"<context>x</context>\n{text}"}]}


def test_each_turn_starts_with_its_first_action_in_the_agents_own_dialect() -> None:
    with pc.SessionServer(pc._claude, REPO) as server:
        step = server._step(_request(_user(pc.SESSION[2].prompt)))
        assert step is not None
        assert step.calls == (
            (
                "Edit",
                {
                    "file_path": "/project/src/m0.py",
                    "old_string": "def f0_3(x):",
                    "new_string": "def triple(x):",
                },
            ),
        )


def test_after_the_tool_result_the_turn_answers_and_later_turns_pick_their_own_prompt() -> None:
    with pc.SessionServer(pc._fast, REPO) as server:
        first = pc.SESSION[0]
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}
        history = [_user(first.prompt), {"role": "assistant", "content": [{"type": "tool_use"}]}, result]
        step = server._step(_request(*history))
        assert step is not None and step.text == first.answer and not step.calls
        later = [*history, {"role": "assistant", "content": "done"}, _user(pc.SESSION[1].prompt)]
        step = server._step(_request(*later))
        assert step is not None
        assert step.calls[0][0] == "bash" and "f1_3" in step.calls[0][1]["command"]


def test_a_request_without_tools_or_without_a_scripted_prompt_is_a_side_request() -> None:
    with pc.SessionServer(pc._ours, REPO) as server:
        assert server._step(_request(_user(pc.SESSION[0].prompt), tools=[])) is None
        assert server._step(_request(_user("Write a title for this chat"))) is None


def test_every_action_of_the_session_has_a_form_in_every_dialect() -> None:
    for dialect in (pc._ours, pc._claude, pc._fast):
        for turn in pc.SESSION:
            for action in turn.actions:
                name, args = dialect(action, REPO)
                assert name and args


def test_a_haiku_side_request_is_billed_at_haikus_price() -> None:
    billed = [pc.Billed(1_000_000, 0, 0, 0)]
    assert pc.billed_cost(billed, ["claude-haiku-4-5"]) == pytest.approx(1.0)
    assert pc.billed_cost(billed, ["claude-sonnet-4-5"]) == pytest.approx(3.0)


def test_quick_mode_skips_the_peers_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert anyio.run(pc.run, True) == []
    assert "skipped in --quick mode" in capsys.readouterr().err


def test_a_peer_that_is_not_installed_is_skipped_with_the_install_script_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pc, "PEERS", tmp_path / "none")
    for command in (pc._claude_cmd, pc._fast_cmd):
        why = command(tmp_path, "http://127.0.0.1:1")
        assert isinstance(why, str) and "bench/peers-install.sh" in why
