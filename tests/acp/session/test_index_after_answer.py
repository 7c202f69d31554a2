"""A new session's index row is written after its answer (``SessionStore.create_sync`` leaves it,
``index_created`` writes it): the listing stays true whatever comes first, and a row written since is never
replaced by the older one."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio
import pytest

from acp_agent.session._index import INDEX_DIR, INDEX_NAME, ListQuery
from acp_agent.session._store import SessionMeta, SessionStore, now_iso
from harness.testing import FakeModel
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio


def _rows(root: Path) -> dict[str, str | None]:
    db = sqlite3.connect(root / INDEX_DIR / INDEX_NAME)
    try:
        return dict(db.execute("SELECT id, title FROM sessions").fetchall())
    finally:
        db.close()


def _known_look(root: Path) -> str:
    db = sqlite3.connect(root / INDEX_DIR / INDEX_NAME)
    try:
        return str(db.execute("SELECT value FROM state WHERE key = 'root'").fetchone()[0])
    finally:
        db.close()


def _meta(session_id: str, cwd: Path) -> SessionMeta:
    return SessionMeta(session_id, str(cwd), now_iso(), now_iso())


async def _indexed_store(tmp_path: Path) -> SessionStore:
    """A store whose index was built by a listing (as an editor's history view builds it)."""
    store = SessionStore(tmp_path / "sessions")
    store.create_sync(_meta("s0", tmp_path))
    await store.page(ListQuery(None, "exclude", None, 50), [])
    assert _rows(store.root) == {"s0": None}
    return store


async def _listed(store: SessionStore) -> dict[str, str | None]:
    return {m.id: m.title for m in await store.page(ListQuery(None, "exclude", None, 50), [])}


async def test_a_new_sessions_row_waits_for_after_the_answer_and_then_needs_no_catch_up(
    tmp_path: Path,
) -> None:
    store = await _indexed_store(tmp_path)
    try:
        store.create_sync(_meta("s1", tmp_path))
        assert _rows(store.root) == {"s0": None}  # not on the answer's path
        await store.index_created("s1")
        assert _rows(store.root) == {"s0": None, "s1": None}
        info = os.stat(store.root)  # the index knows the folder as it is: a listing reads no folder
        assert _known_look(store.root) == f"{info.st_mtime_ns}:{info.st_nlink}"
    finally:
        store.index.close()


async def test_a_listing_before_the_row_is_written_shows_the_new_session(tmp_path: Path) -> None:
    store = await _indexed_store(tmp_path)
    other = SessionStore(store.root)  # another agent process: it cannot write this one's row
    try:
        store.create_sync(_meta("s1", tmp_path))
        assert set(await _listed(other)) == {"s0", "s1"}  # the folder changed: the listing caught up
        store.create_sync(_meta("s2", tmp_path))
        assert set(await _listed(store)) == {"s0", "s1", "s2"}
        await store.index_created("s1")  # written by then: nothing left to do
        assert set(_rows(store.root)) == {"s0", "s1", "s2"}
    finally:
        store.index.close()
        other.index.close()


async def test_a_rewrite_before_the_row_is_written_is_never_followed_by_the_older_row(tmp_path: Path) -> None:
    store = await _indexed_store(tmp_path)
    try:
        meta = _meta("s1", tmp_path)
        store.create_sync(meta)
        await store.save_meta(meta.touched(title="renamed"))
        await store.index_created("s1")
        assert _rows(store.root)["s1"] == "renamed"
        # The row itself never replaces one already there (a listing's catch-up, another process's write).
        store.index.wrote(meta.touched(title="newer"))
        store.index.created(meta, None, None)
        assert (await _listed(store))["s1"] == "newer"
    finally:
        store.index.close()


async def test_a_session_deleted_before_its_row_is_written_does_not_come_back(tmp_path: Path) -> None:
    store = await _indexed_store(tmp_path)
    try:
        store.create_sync(_meta("s1", tmp_path))
        assert await store.delete("s1")
        await store.index_created("s1")
        assert _rows(store.root) == {"s0": None}
        assert set(await _listed(store)) == {"s0"}
    finally:
        store.index.close()


async def test_sessions_made_through_the_agent_are_listed_at_once_and_indexed_after_their_answer(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        await client.initialize()
        first = await client.new_session(str(tmp_path))
        await client.call("session/list", {})  # builds the index
        second = await client.new_session(str(tmp_path))
        listed = {s["sessionId"] for s in (await client.call("session/list", {}))["sessions"]}
        assert listed == {first, second}
        third = await client.new_session(str(tmp_path))
        with anyio.fail_after(5):
            while third not in _rows(agent.store.root):  # the after-answer work writes it
                await anyio.wait_all_tasks_blocked()
        assert set(_rows(agent.store.root)) == {first, second, third}
