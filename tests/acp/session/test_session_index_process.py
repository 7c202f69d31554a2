"""The session index through the real ``acp-agent`` process: what one process wrote, a hand changed, or a
``kill -9`` cut short, the next process lists right."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.session._index import INDEX_DIR, INDEX_NAME
from tests.acp_client import REPO, WAIT, AcpClient, spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"]), pytest.mark.process]


async def _listed(client: AcpClient, **params: Any) -> dict[str, str | None]:
    return {s["sessionId"]: s.get("title") for s in (await client.call("session/list", params))["sessions"]}


async def test_the_next_process_lists_what_the_last_wrote_and_a_hand_changed(
    anyio_backend: str, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    async with spawned_agent(home, project) as client:
        await client.initialize()
        kept, titled, archived, deleted = [await client.new_session(str(project)) for _ in range(4)]
        await client.call("session/list", {})
        await client.call("session/set_title", {"sessionId": titled, "title": "named"})
        await client.call("session/archive", {"sessionId": archived})
    sessions = home / "sessions"
    assert (sessions / INDEX_DIR / INDEX_NAME).is_file()
    for f in (sessions / deleted).iterdir():  # removed by hand
        f.unlink()
    (sessions / deleted).rmdir()
    copied = sessions / "copied-by-hand"
    copied.mkdir()
    stamp = "2020-01-01T00:00:00.000Z"
    meta = {"id": copied.name, "cwd": str(project), "title": "copied", "createdAt": stamp, "updatedAt": stamp}
    (copied / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    async with spawned_agent(home, project) as client:
        await client.initialize()
        assert await _listed(client) == {titled: "named", kept: None, copied.name: "copied"}
        assert list(await _listed(client, archived="only")) == [archived]
    (sessions / INDEX_DIR / INDEX_NAME).write_bytes(b"garbage" * 1000)  # and a corrupt index
    for name in ("-wal", "-shm"):
        (sessions / INDEX_DIR / f"{INDEX_NAME}{name}").unlink(missing_ok=True)
    async with spawned_agent(home, project) as client:
        await client.initialize()
        assert await _listed(client) == {titled: "named", kept: None, copied.name: "copied"}


async def test_a_kill_9_while_sessions_are_made_and_named_leaves_a_store_that_lists_every_one(
    anyio_backend: str, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "ACP_AGENT_HOME": str(home), "ACP_AGENT_LOG": "-"}
    home.mkdir()
    made: list[str] = []
    with (home / "agent-stderr.log").open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, "-m", "acp_agent"], cwd=project, env=env, stderr=stderr
        )
    async with process:
        assert process.stdin is not None and process.stdout is not None
        client = AcpClient(process.stdin, process.stdout)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read_loop)
            await client.initialize()
            await client.call("session/list", {})  # the index is built
            for i in range(12):
                made.append(await client.new_session(str(project)))
                await client.send_request("session/set_title", {"sessionId": made[-1], "title": f"t{i}"})
            process.send_signal(signal.SIGKILL)  # amid the last titles' writes
            with anyio.fail_after(WAIT):
                await process.wait()
            tg.cancel_scope.cancel()
    async with spawned_agent(home, project) as client:
        await client.initialize()
        listed = await _listed(client)
        assert set(listed) == set(made)
        for session_id, title in listed.items():  # each as its meta.json says
            meta = json.loads((home / "sessions" / session_id / "meta.json").read_text(encoding="utf-8"))
            assert meta["title"] == title
