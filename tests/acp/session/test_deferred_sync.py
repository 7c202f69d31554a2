"""A turn's last writes are flushed before the prompt is answered and fsync'd after: the answer does not
wait for the fsync, and the end of input does (the process exits with everything on disk)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from acp_agent.session import _harness
from harness.model import Delta, Prompt, TextChunk
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
