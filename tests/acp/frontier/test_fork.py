"""``session/fork`` through the real process: the fork carries the source's history to the model, has
its own id and files, keeps the source's mode, replays the shared history on load; the source is left as
it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import Turn
from tests.acp.frontier._frontier_support import check_wire, frontier_agent, model_messages, validate

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    texts = [str(m.get("content")) for m in messages if m["role"] in ("user", "assistant")]
    # The agent's own notes: a per-request reminder, the context told in front of a prompt.
    texts = [t.split("\n</context>\n\n", 1)[-1] for t in texts]
    return [t for t in texts if not t.startswith("<reminder>")]


async def test_a_fork_sends_the_shared_history_to_the_model_and_leaves_the_source_unchanged(
    tmp_path: Path,
) -> None:
    turns = [Turn(text="first answer"), Turn(text="fork answer"), Turn(text="source answer")]
    async with frontier_agent(tmp_path, turns) as agent:
        client = agent.client
        assert agent.initialize["agentCapabilities"]["sessionCapabilities"]["fork"] == {}
        with anyio.fail_after(30):
            source = (await agent.new_session())["sessionId"]
            await agent.prompt(source, "first question")
            await client.call(
                "session/set_config_option", {"sessionId": source, "configId": "mode", "value": "read-only"}
            )
            source_dir = agent.home / "sessions" / source
            before = {p.name: p.read_bytes() for p in source_dir.iterdir() if p.name != "meta.json"}

            answer = await client.call("session/fork", {"sessionId": source, "cwd": str(agent.project)})
            validate("ForkSessionResponse", answer)
            fork = answer["sessionId"]
            assert fork != source and fork.startswith("sess_")
            mode = next(o for o in answer["configOptions"] if o["id"] == "mode")
            assert mode["currentValue"] == "read-only"

            assert (await agent.prompt(fork, "fork question"))["stopReason"] == "end_turn"
            assert _texts(model_messages(agent.model, 1)) == [
                "first question",
                "first answer",
                "fork question",
            ]
            after = {p.name: p.read_bytes() for p in source_dir.iterdir() if p.name != "meta.json"}
            assert after == before, "the source's files are untouched by the fork's turn"

            await agent.prompt(source, "source question")
            assert _texts(model_messages(agent.model, 2)) == [
                "first question",
                "first answer",
                "source question",
            ]

            listed = await client.call("session/list", {})
            titles = {s["sessionId"]: s.get("title") for s in listed["sessions"]}
            assert titles[fork] == f"{titles[source]} (fork)"

            start = len(client.messages)
            await client.call(
                "session/load", {"sessionId": fork, "cwd": str(agent.project), "mcpServers": []}
            )
            replayed = [
                m["params"]["update"]
                for m in client.messages[start:]
                if m.get("method") == "session/update" and m["params"]["sessionId"] == fork
            ]
            shown = [
                (u["sessionUpdate"], u["content"]["text"])
                for u in replayed
                if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
            ]
            assert shown == [
                ("user_message_chunk", "first question"),
                ("agent_message_chunk", "first answer"),
                ("user_message_chunk", "fork question"),
                ("agent_message_chunk", "fork answer"),
            ]
        check_wire(client)


async def test_forking_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, []) as agent:
        client = agent.client
        with anyio.fail_after(30):
            answer = await client.response(
                await client.send_request(
                    "session/fork", {"sessionId": "sess_nope", "cwd": str(agent.project)}
                )
            )
            assert answer["error"]["code"] == -32002
            answer = await client.response(
                await client.send_request("session/fork", {"sessionId": "../x", "cwd": "relative"})
            )
            assert answer["error"]["code"] == -32602


def test_fork_in_the_chat_continues_in_a_copy_and_the_source_stays_listed(tmp_path: Path) -> None:
    from tests.product.test_chat import PROMPT, chat_env, pexpect, spawn_chat

    env = chat_env(tmp_path, [{"text": "Hello there."}, {"text": "In the fork."}])
    child = spawn_chat(tmp_path, env)
    try:
        child.expect(PROMPT)
        child.sendline("hi")
        child.expect_exact("Hello there.")
        child.expect(PROMPT)
        child.sendline("/fork")
        child.expect(r"forked into session (sess_[0-9a-f]+); /load (sess_[0-9a-f]+) goes back")
        fork, source = child.match.group(1), child.match.group(2)
        assert fork != source
        child.expect(PROMPT)
        child.sendline("go on")
        child.expect_exact("In the fork.")
        child.expect(PROMPT)
        child.sendline("/sessions")
        child.expect_exact("hi (fork)")
        child.expect(PROMPT)
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    sessions = tmp_path / "home" / "sessions"
    assert "In the fork." in (sessions / fork / "messages.jsonl").read_text()
    assert "In the fork." not in (sessions / source / "messages.jsonl").read_text()
