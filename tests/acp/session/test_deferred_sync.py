"""A turn's last writes are flushed before the prompt is answered and fsync'd after: the answer does not
wait for the fsync, and the end of input does (the process exits with everything on disk). The fsync after
an answer waits a moment for the turns that follow (a group commit): turns answered back to back share one,
and a close does not wait for that moment."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from acp_agent.session import _durable, _harness
from harness.model import Delta, Prompt, TextChunk
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio

LIMIT_S = 20


class _StallingModel:
    """Streams one delta, then waits (a model between tokens) until the turn is cancelled."""

    async def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        yield TextChunk("partial ")
        await anyio.sleep_forever()


async def test_the_cancelled_answer_does_not_wait_for_the_fsync_and_the_exit_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    synced: list[list[Path]] = []

    def held_fsync(paths: Iterable[Path]) -> None:
        synced.append(list(paths))
        if any(p.name == "shown.jsonl" for p in synced[-1]):  # the turn's end (a step's syncs go on)
            started.set()
            release.wait(LIMIT_S)

    monkeypatch.setattr(_harness, "fsync_paths", held_fsync)  # the session layer's one door to the harness
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, _StallingModel()) as (client, agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            rid = await client.send_request("session/prompt", client.prompt_params(sid, "go"))
            await client.wait_for(lambda m: "partial" in json.dumps(m))
            await client.notify("session/cancel", {"sessionId": sid})
            assert (await client.response(rid))["result"] == {"stopReason": "cancelled"}
            folder = tmp_path / "sessions" / sid
            # On disk (flushed) at the answer, before any fsync of them.
            turns = [json.loads(line) for line in (folder / "shown.jsonl").read_text().splitlines()]
            assert turns[-1]["turn"]["text"] == "partial "
            await anyio.to_thread.run_sync(started.wait, LIMIT_S)  # the fsync comes once the answer is out
            assert {folder / "shown.jsonl", folder / "meta.json"} <= set(synced[-1])
            held = len(synced)
            session = agent.sessions[sid]
            lock = session._writes.unsynced.lock  # pyright: ignore[reportPrivateUsage]
            await client.close_output()
            # The end of input closes the session, which waits for the fsync under way.
            while lock.statistics().tasks_waiting == 0:
                await anyio.lowlevel.checkpoint()
            assert not client.closed
            release.set()
            await client.remaining_lines()
    assert len(synced) == held  # nothing was left for the close to fsync again


async def test_turns_answered_back_to_back_share_one_fsync_which_the_end_of_input_does_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[list[Path]] = []

    def counted_fsync(paths: Iterable[Path]) -> None:
        synced.append(list(paths))

    monkeypatch.setattr(_harness, "fsync_paths", counted_fsync)
    # Longer than the test may take: only the close can do the fsync.
    monkeypatch.setattr(_durable, "GROUP_COMMIT_S", 3600)
    with anyio.fail_after(LIMIT_S):
        model = FakeModel([Reply(text="one"), Reply(text="two"), Reply(text="three")])
        async with running_agent(tmp_path, model) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            for text in ("a", "b", "c"):
                answer = await client.call("session/prompt", client.prompt_params(sid, text))
                assert answer == {"stopReason": "end_turn"}
            folder = tmp_path / "sessions" / sid
            assert synced == []  # answered, written and flushed, none fsync'd yet
            assert "three" in (folder / "messages.jsonl").read_text()
            await client.close_output()
            await client.remaining_lines()
    assert len(synced) == 1, synced
    assert folder / "messages.jsonl" in synced[0]
