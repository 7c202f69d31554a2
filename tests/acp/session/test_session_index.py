"""``session/list`` reads the sessions folder's index (``acp_agent.session._index``), kept true to the
``meta.json`` files whoever changes them: this process, another agent process, a hand, a kill."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.session._index import INDEX_DIR, INDEX_NAME, ListQuery, SessionIndex
from acp_agent.session._store import SessionMeta, SessionStore, now_iso
from harness.testing import FakeModel
from tests.acp.session._support import running_agent
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio

OLD = "2020-01-01T00:00:00.000Z"


def _hand_write(root: Path, session_id: str, title: str, updated: str = OLD, cwd: str = "/p") -> None:
    """A session folder written as another program (an older agent, a copy) would: no index update."""
    directory = root / session_id
    directory.mkdir(parents=True, exist_ok=True)
    meta = {"id": session_id, "cwd": cwd, "title": title, "createdAt": updated, "updatedAt": updated}
    (directory / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _age(root: Path) -> None:
    """The sessions folder's mtime a minute back, as a store that has sat idle has it (a recent one is
    re-read at every listing: it may share its clock tick with a change to come)."""
    past = os.stat(root).st_mtime_ns - 60_000_000_000
    os.utime(root, ns=(past, past))


def _titles(page: list[SessionMeta] | None) -> list[str | None]:
    assert page is not None
    return [meta.title for meta in page]


def _all(index: SessionIndex, **query: Any) -> list[SessionMeta] | None:
    return index.page(ListQuery(query.get("cwd"), query.get("archived", "exclude"), None, 100), [])


async def _listed(client: AcpClient, **params: Any) -> dict[str, Any]:
    return {s["sessionId"]: s for s in (await client.call("session/list", params))["sessions"]}


async def test_a_built_index_answers_without_reading_any_meta_json(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    for i in range(5):
        _hand_write(root, f"s{i}", f"title {i}", f"2024-01-0{i + 1}T00:00:00.000Z")
    builder = SessionStore(root).index
    assert _titles(_all(builder)) == [f"title {i}" for i in reversed(range(5))]
    builder.close()
    _age(root)
    first = SessionIndex(root, lambda path: pytest.fail(f"read {path}"))
    first.page(ListQuery(None, "exclude", None, 50), [])  # the folder's look is trusted from here on
    first.close()
    fresh = SessionIndex(root, lambda path: pytest.fail(f"read {path}"))  # as a new process would
    try:
        assert _titles(_all(fresh)) == [f"title {i}" for i in reversed(range(5))]
    finally:
        fresh.close()


async def test_the_index_files_are_the_users_alone(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    store.create_sync(SessionMeta("s1", str(tmp_path), now_iso(), now_iso()))
    await store.page(ListQuery(None, "exclude", None, 50), [])  # the first listing builds it
    store.create_sync(SessionMeta("s2", str(tmp_path), now_iso(), now_iso()))
    folder = tmp_path / "sessions" / INDEX_DIR
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "sessions").stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert folder / INDEX_NAME in files
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}
    store.index.close()


async def test_writes_deletes_archives_and_titles_through_the_agent_show_in_the_next_page(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        await client.initialize()
        kept, titled, archived, deleted = [await client.new_session(str(tmp_path)) for _ in range(4)]
        assert set(await _listed(client)) == {kept, titled, archived, deleted}
        assert (tmp_path / "sessions" / INDEX_DIR / INDEX_NAME).is_file()
        await client.call("session/set_title", {"sessionId": titled, "title": "named"})
        await client.call("session/archive", {"sessionId": archived})
        await client.call("session/close", {"sessionId": deleted})
        await agent.store.delete(deleted)
        listed = await _listed(client)
        assert set(listed) == {kept, titled}
        assert listed[titled]["title"] == "named"
        assert set(await _listed(client, archived="only")) == {archived}
        await client.call("session/unarchive", {"sessionId": archived})
        assert set(await _listed(client)) == {kept, titled, archived}
        # what the index holds, as a fresh process would read it:
        index = SessionIndex(tmp_path / "sessions", lambda path: None)
        try:
            on_disk = {meta.id: meta for meta in _all(index) or []}
        finally:
            index.close()
        assert set(on_disk) == {kept, titled, archived} and on_disk[titled].title == "named"


async def test_folders_added_or_removed_by_hand_are_seen_even_with_the_folder_mtime_put_back(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sessions"
    _hand_write(root, "a", "a")
    store = SessionStore(root)
    assert _titles(_all(store.index)) == ["a"]
    _age(root)
    assert _titles(_all(store.index)) == ["a"]
    before = os.stat(root)
    _hand_write(root, "b", "b")
    os.utime(root, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same clock tick, as it were
    assert sorted(_titles(_all(store.index))) == ["a", "b"]  # type: ignore[type-var]
    _age(root)
    _all(store.index)
    before = os.stat(root)
    for name in ("meta.json",):
        (root / "a" / name).unlink()
    (root / "a").rmdir()
    os.utime(root, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _titles(_all(store.index)) == ["b"]
    store.index.close()


async def test_a_kill_between_the_mark_and_the_meta_write_leaves_a_row_that_is_read_again(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    meta = SessionMeta("s1", "/p", OLD, OLD, "before")
    store.create_sync(meta)
    assert _titles(_all(store.index)) == ["before"]
    # what a process killed after writing meta.json and before its index row leaves behind:
    store.index.will_write("s1")
    _hand_write(root, "s1", "after")
    other = SessionIndex(root, store.index._read_meta)  # pyright: ignore[reportPrivateUsage]
    try:
        assert _titles(_all(other)) == ["after"]
    finally:
        other.close()
    # and one killed mid-removal (meta.json gone, the folder left):
    store.index.will_write("s1")
    (root / "s1" / "meta.json").unlink()
    assert _titles(_all(store.index)) == []
    store.index.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt", "stale-marked", "replaced-by-a-folder"])
async def test_a_missing_corrupt_or_stale_index_is_rebuilt_from_the_meta_files(
    tmp_path: Path, damage: str
) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    for i in range(3):
        store.create_sync(SessionMeta(f"s{i}", "/p", OLD, f"2024-01-0{i + 1}T00:00:00.000Z", f"t{i}"))
    assert _titles(_all(store.index)) == ["t2", "t1", "t0"]
    _hand_write(root, "s0", "changed behind its back", "2024-02-01T00:00:00.000Z")  # seen only by a rebuild
    folder = root / INDEX_DIR
    store.index.close()
    match damage:
        case "missing":
            for f in folder.iterdir():
                f.unlink()
        case "corrupt":
            for f in folder.iterdir():
                f.unlink()
            (folder / INDEX_NAME).write_bytes(b"this is not a database" * 100)
        case "stale-marked":
            (folder / "stale").touch()
        case _:
            for f in folder.iterdir():
                f.unlink()
            (folder / INDEX_NAME).mkdir()
    fresh = SessionStore(root)
    page = await fresh.page(ListQuery(None, "exclude", None, 50), [])
    assert _titles(page) == ["changed behind its back", "t2", "t1"]
    fresh.index.close()


async def test_two_processes_writing_one_store_at_once_lose_no_row(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    stores = [SessionStore(root), SessionStore(root)]  # two connections, as two agent processes have
    stores[0].create_sync(SessionMeta("first", "/p", OLD, OLD))
    _all(stores[0].index)

    def writer(store: SessionStore, name: str) -> None:
        for i in range(40):
            meta = SessionMeta(f"{name}{i}", "/p", OLD, now_iso(), f"{name} {i}")
            store.create_sync(meta)
            store._save_meta_sync(meta.touched(title=f"{name} {i} renamed"), False)  # pyright: ignore[reportPrivateUsage]
            if i % 3 == 0:
                _all(store.index)

    threads = [threading.Thread(target=writer, args=(s, n)) for s, n in zip(stores, "ab", strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for store in stores:
        page = store.index.page(ListQuery(None, "exclude", None, 500), [])
        assert page is not None and len(page) == 81
        assert sum(1 for meta in page if (meta.title or "").endswith("renamed")) == 80
        store.index.close()


async def test_pages_follow_the_last_one_shown_so_a_session_made_between_pages_shifts_nothing(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        await client.initialize()
        ids = [await client.new_session(str(tmp_path)) for _ in range(55)]
        first = await client.call("session/list", {})
        newer = await client.new_session(str(tmp_path))
        second = await client.call("session/list", {"cursor": first["nextCursor"]})
        shown = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
        assert sorted(shown) == sorted(ids) and newer not in shown
        assert "nextCursor" not in second
        bad = await client.send_request("session/list", {"cursor": "bTo1MA=="})  # an offset cursor of old
        assert (await client.response(bad))["error"]["code"] == -32602


async def test_a_live_session_is_listed_with_its_state_in_memory(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        await client.initialize()
        older, live = [await client.new_session(str(tmp_path)) for _ in range(2)]
        agent.sessions[live].meta = agent.sessions[live].meta.touched(title="in memory")
        with anyio.fail_after(5):
            listed = (await client.call("session/list", {}))["sessions"]
        assert [s["sessionId"] for s in listed] == [live, older]
        assert listed[0]["title"] == "in memory"
        other = await client.call("session/list", {"cwd": str(tmp_path / "elsewhere")})
        assert other["sessions"] == []
