"""Crash recovery: ``kill -9`` at seeded random points of scripted turns, then ``session/load`` in a new
process must replay every complete step, nothing torn, and the conversation must go on."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from tests.reliability._reliability_support import (
    LONG,
    AgentProcess,
    agent_env,
    agent_process,
    id_key,
    initialized,
    params_of,
    update_of,
    write_script,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(1800 if LONG else 240), pytest.mark.process]

TRIALS = 200 if LONG else 20
SEED = 9_2024

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _reply(rng: random.Random, tag: str) -> dict[str, Any]:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 30)))
    return {"text": f"{tag} {words}", "chunks": rng.randint(2, 10), "delay_ms": rng.randint(1, 12)}


def _conversation(agent: AgentProcess, session_id: str, start: int) -> list[tuple[str, str]]:
    """The replayed (role, text) entries among the notifications from index ``start`` on."""
    entries: list[tuple[str, str]] = []
    for note in agent.notifications[start:]:
        if note.get("method") != "session/update" or params_of(note).get("sessionId") != session_id:
            continue
        update = update_of(note)
        kind = update.get("sessionUpdate")
        content: dict[str, Any] = update.get("content") or {}
        if kind == "user_message_chunk":
            entries.append(("user", content.get("text", "")))
        elif kind == "agent_message_chunk":
            entries.append(("agent", content.get("text", "")))
    return entries


class Ledger:
    """What the client knows happened: texts sent, replies scripted, turns seen answered."""

    def __init__(self) -> None:
        self.users: list[str] = []
        self.replies: set[str] = set()
        self.answered: list[tuple[str, str]] = []
        self.victims: list[str] = []
        self.outcomes: dict[str, int] = {"lost": 0, "prompt only": 0, "prompt and reply": 0}

    def classify_victims(self, entries: list[tuple[str, str]]) -> None:
        """Count where the kills landed: before the prompt was stored, between, after the reply."""
        for user in self.victims:
            if ("user", user) not in entries:
                self.outcomes["lost"] += 1
            else:
                i = entries.index(("user", user))
                kept = entries[i + 1 : i + 2] and entries[i + 1][0] == "agent"
                self.outcomes["prompt and reply" if kept else "prompt only"] += 1
        self.victims = []

    def check_replay(self, entries: list[tuple[str, str]], when: str) -> None:
        users = [text for role, text in entries if role == "user"]
        for role, text in entries:
            if role == "agent":
                assert text in self.replies, (
                    f"{when}: a torn or unknown assistant reply was replayed: {text!r}"
                )
            else:
                assert text in self.users, f"{when}: an unknown user message was replayed: {text!r}"
        assert len(users) == len(set(users)), f"{when}: a user message was replayed twice: {users}"
        order = [u for u in self.users if u in set(users)]
        assert users == order, f"{when}: user messages replayed out of order: {users} vs sent {order}"
        for user, reply in self.answered:
            assert ("user", user) in entries, (
                f"{when}: the answered prompt {user!r} is missing after the crash"
            )
            i = entries.index(("user", user))
            assert entries[i + 1 : i + 2] == [("agent", reply)], (
                f"{when}: the completed reply to {user!r} is missing or wrong: got {entries[i + 1 : i + 2]}, "
                f"wanted {reply!r}"
            )


def _check_transcript_file(path: Path, when: str) -> int:
    """Every complete line is one message object; returns 1 when the file ends in a torn line."""
    if not path.exists():
        return 0
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    for n, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        item = json.loads(line)  # a complete line that is not JSON is damage, not a torn tail
        assert isinstance(item, dict) and as_object(item).get("role") in (
            "user",
            "assistant",
            "system",
            "tool",
        ), f"{when}: {path}:{n} is not a message: {line[:200]!r}"
    return 1 if lines[-1] else 0


async def _load(agent: AgentProcess, session_id: str, cwd: Path, ledger: Ledger, when: str) -> None:
    start = len(agent.notifications)
    await agent.call("session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []})
    entries = _conversation(agent, session_id, start)
    ledger.check_replay(entries, when)
    ledger.classify_victims(entries)


async def _prompt(agent: AgentProcess, session_id: str, text: str) -> Any:
    return await agent.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


async def test_kill_9_mid_turn_keeps_every_complete_step_and_the_conversation_continues(
    home: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    cwd = tmp_path / "project"
    cwd.mkdir()
    ledger = Ledger()
    session_id: str | None = None
    torn = 0
    for trial in range(TRIALS):
        when = f"trial {trial} (seed {SEED})"
        finished = rng.randint(0, 2)  # turns that run to the end before the one that is killed
        replies = [_reply(rng, f"t{trial}r{i}") for i in range(finished + 1)]
        ledger.replies.update(r["text"] for r in replies)
        script = write_script(tmp_path / f"script-{trial}.json", replies)
        async with agent_process(home, agent_env(home, script)) as agent:
            with anyio.fail_after(60):
                await initialized(agent)
                if session_id is None:
                    result = await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []})
                    session_id = str(result["sessionId"])
                else:
                    await _load(agent, session_id, cwd, ledger, when)
                for i in range(finished):
                    text = f"u{trial}-{i}"
                    ledger.users.append(text)
                    answer = await agent.response(await _prompt(agent, session_id, text))
                    assert answer.get("result", {}).get("stopReason") == "end_turn", f"{when}: {answer}"
                    ledger.answered.append((text, replies[i]["text"]))
                text = f"u{trial}-{finished}"
                ledger.users.append(text)
                ledger.victims.append(text)
                start = len(agent.notifications)
                victim = await _prompt(agent, session_id, text)
                last = replies[finished]
                if rng.random() < 0.5:
                    # A random instant in (roughly) the turn's life, from before the model starts to after.
                    await anyio.sleep(rng.uniform(0, last["chunks"] * last["delay_ms"] / 1000 + 0.03))
                else:
                    # Right after the n-th streamed chunk of the reply.
                    n = rng.randint(1, last["chunks"])
                    for _ in range(n):
                        start = 1 + await agent.notification(
                            lambda m: update_of(m).get("sessionUpdate") == "agent_message_chunk",
                            start,
                        )
                agent.kill_hard()
                await agent.process.wait()
                await agent.exited.wait()  # whatever was already in the pipe has been read
                answer = agent.responses.get(id_key(victim))
                if answer and answer[0].get("result", {}).get("stopReason") == "end_turn":
                    ledger.answered.append((text, last["text"]))
        torn += _check_transcript_file(home / "sessions" / session_id / "messages.jsonl", when)

    assert session_id is not None
    final: dict[str, Any] = {"text": "the conversation goes on", "chunks": 3, "delay_ms": 1}
    ledger.replies.add(final["text"])
    script = write_script(tmp_path / "script-final.json", [final])
    async with agent_process(home, agent_env(home, script)) as agent:
        with anyio.fail_after(60):
            await initialized(agent)
            await _load(agent, session_id, cwd, ledger, "after the last kill")
            ledger.users.append("one more question")
            answer = await agent.response(await _prompt(agent, session_id, "one more question"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            ledger.answered.append(("one more question", final["text"]))
    async with agent_process(home, agent_env(home, script)) as agent:
        with anyio.fail_after(60):
            await initialized(agent)
            await _load(agent, session_id, cwd, ledger, "after the turn that followed the crashes")
    path = home / "sessions" / session_id / "messages.jsonl"
    assert _check_transcript_file(path, "at the end") == 0
    last_two = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[-2:]]
    assert [m["role"] for m in last_two] == ["user", "assistant"]
    assert last_two[1]["content"][-1] == {"type": "text", "text": final["text"]}
    print(
        f"crash recovery: {TRIALS} kills, {len(ledger.answered)} answered turns kept, {torn} torn tails seen; "
        f"kills landed: {ledger.outcomes}"
    )
