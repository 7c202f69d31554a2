"""Sessions on disk: ``<home>/sessions/<id>/meta.json`` (written atomically; fsync'd but for a brand-new session's), ``messages.jsonl`` (one
``harness.Message.to_dict()`` per line, appended per complete step, flushed and fsync'd; the file format and
torn-tail repair are ``harness.transcript.JsonlTranscript``'s) and ``shown.jsonl``: what the client was
shown beyond the messages (each tool call as it ended, the plan, the end of a cancelled or failed turn),
one JSON object per line, appended and fsync'd, read back leniently (``session/load`` replays it). All file
work runs in worker threads."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from . import _harness
from ._holds import Holds, exclusively
from ._index import ListQuery, Look, SessionIndex, scanned_page
from ._meta import SessionMeta, now_iso, valid_session_id

if TYPE_CHECKING:
    from harness import Message

__all__ = ["SessionMeta", "SessionStore", "now_iso", "valid_session_id"]

log = logging.getLogger(__name__)


class SessionStore:
    """The sessions under ``root`` (``$ACP_AGENT_HOME/sessions``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._private = False
        self.index = SessionIndex(root, _read_meta)
        """What ``session/list`` shows of each session (``_index``); written after each ``meta.json``."""
        self._unindexed: dict[str, tuple[SessionMeta, Look | None, Look | None]] = {}
        """New sessions whose index row waits for after their answer (``create_sync``)."""
        self._indexing = threading.Lock()
        self.holds = Holds()
        """The sessions live in this process, held against other processes' deletes (``_holds``)."""

    def directory(self, session_id: str) -> Path:
        return self.root / session_id

    def transcript_path(self, session_id: str) -> Path:
        return self.directory(session_id) / "messages.jsonl"

    def shown_path(self, session_id: str) -> Path:
        return self.directory(session_id) / "shown.jsonl"

    def thread_path(self, session_id: str, thread_id: str) -> Path:
        """What the sub-agent thread ``thread_id`` of ``session_id`` was shown (``_threads``)."""
        return self.directory(session_id) / "subagents" / f"{thread_id}.jsonl"

    async def append_thread(self, session_id: str, thread_id: str, lines: list[dict[str, Any]]) -> None:
        if lines:
            directory = self.directory(session_id)

            def append() -> None:
                _require(directory)
                _append_lines(self.thread_path(session_id, thread_id), lines)

            await anyio.to_thread.run_sync(append)

    async def load_thread(self, session_id: str, thread_id: str) -> list[dict[str, Any]] | None:
        """The thread's lines that parse, in order; None when there is no such thread."""
        if not (valid_session_id(session_id) and valid_session_id(thread_id)):
            return None
        try:
            return await anyio.to_thread.run_sync(
                _read_lenient, self.thread_path(session_id, thread_id), True
            )
        except FileNotFoundError:
            return None

    async def append_shown(self, session_id: str, records: list[dict[str, Any]]) -> None:
        """Append what the client was shown (see the module docstring); a no-op for no records."""
        if records:
            directory = self.directory(session_id)

            def append() -> None:
                _require(directory)
                _append_lines(directory / "shown.jsonl", records)

            await anyio.to_thread.run_sync(append)

    async def load_shown(self, session_id: str) -> list[dict[str, Any]]:
        """The records of ``shown.jsonl`` that parse (a torn last line is skipped), in order."""
        path = self.shown_path(session_id)
        try:
            return await anyio.to_thread.run_sync(_read_lenient, path, True)
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("session %s: cannot read %s (%s); replaying without it", session_id, path, exc)
            return []

    async def save_meta(self, meta: SessionMeta, *, new: bool = False) -> None:
        """Replace the session's ``meta.json`` (fsync'd). ``new``: the session's folder may be made (a
        fork's); otherwise ``FileNotFoundError`` when it is gone (removed by another process), not made again."""
        await anyio.to_thread.run_sync(self._save_meta_sync, meta, new)

    def _save_meta_sync(self, meta: SessionMeta, new: bool) -> None:
        if not new:
            _require(self.directory(meta.id))
        self.index_created_sync(meta.id)
        if not self._private:  # once a process: the sessions folder an older version made 0755, tightened
            _harness.private_dir(self.root)
            self._private = True
        self.index.will_write(meta.id)
        before = self.index.look()  # (a forked session's folder is made here)
        write_json_atomic(self.directory(meta.id) / "meta.json", meta.to_dict())
        self.index.wrote(meta, before)

    def create_sync(self, meta: SessionMeta) -> None:
        """Write a brand-new session's meta (blocking: ``session/new`` calls it in its one worker-thread
        hop, before the answer, so a ``session/load`` right after finds it). Not fsync'd: an empty session
        lost to a power cut loses nothing, a killed process loses nothing (the page cache keeps the file),
        and its first complete step is fsync'd with the meta again (``save_meta``). Written in place, not
        through a temporary file and a rename: nobody knows the id before this returns, and a kill in the
        middle leaves an unreadable file in a folder no answer named, which listing skips. Its index row is
        left for after the answer (``index_created``; any other index work on the session, or a listing,
        writes it first)."""
        directory = self.directory(meta.id)
        indexed = self.index.exists()
        before = self.index.look() if indexed else None
        self._new_folder(directory)
        after = self.index.look() if indexed else None
        data = json.dumps(meta.to_dict(), ensure_ascii=False, indent=1).encode()
        fd = os.open(directory / "meta.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if indexed:  # its row after the answer (a kill before it: the new folder changed the sessions folder)
            with self._indexing:
                self._unindexed[meta.id] = (meta, before, after)

    def index_created_sync(self, session_id: str | None = None) -> None:
        """Write the index rows ``create_sync`` left for after the answer: ``session_id``'s (before any other
        index work on that session, so a later row is never followed by the older one) or every one."""
        with self._indexing:
            if session_id is None:
                waiting = list(self._unindexed.values())
                self._unindexed.clear()
            else:
                one = self._unindexed.pop(session_id, None)
                waiting = [one] if one is not None else []
            for meta, before, after in waiting:
                self.index.created(meta, before, after)

    async def index_created(self, session_id: str) -> None:
        """``index_created_sync`` of a new session (after its answer), in a worker thread."""
        if session_id in self._unindexed:
            await anyio.to_thread.run_sync(self.index_created_sync, session_id)

    def _new_folder(self, directory: Path) -> None:
        """``directory`` made 0700 (a session holds the whole conversation) under the sessions folder,
        itself made or tightened once a process (one an older version made 0755); a new id's folder is one
        ``mkdir``, with no walk of its parents (22 syscalls a ``session/new`` before, 7 now)."""
        if not self._private:
            _harness.private_dir(self.root)
            self._private = True
        try:
            os.mkdir(directory, _harness.PRIVATE_DIR_MODE)
        except FileNotFoundError:  # the sessions folder was removed meanwhile: made again
            _harness.private_dir(self.root)
            os.mkdir(directory, _harness.PRIVATE_DIR_MODE)

    async def write_flushed(
        self, session_id: str, shown: list[dict[str, Any]], meta: SessionMeta | None = None
    ) -> list[Path]:
        """In one worker call: ``shown`` appended and ``meta`` (when given) replaced, flushed (a kill of
        the process loses nothing), not fsync'd; returns the files written, for the caller to fsync."""
        directory = self.directory(session_id)
        data = meta.to_dict() if meta is not None else None

        def write() -> list[Path]:
            _require(directory)
            written: list[Path] = []
            if shown:
                _append_lines(directory / "shown.jsonl", shown, sync=False)
                written.append(directory / "shown.jsonl")
            if meta is not None:
                self.index_created_sync(session_id)
                self.index.will_write(session_id)
                write_json_atomic(directory / "meta.json", data, sync=False)
                self.index.wrote(meta)
                written.append(directory / "meta.json")
            return written

        return await anyio.to_thread.run_sync(write) if shown or data is not None else []

    async def load_meta(self, session_id: str) -> SessionMeta | None:
        if not valid_session_id(session_id):
            return None
        return await anyio.to_thread.run_sync(_read_meta, self.directory(session_id) / "meta.json")

    async def load_messages(self, session_id: str) -> list[Message]:
        try:
            return await _harness.JsonlTranscript(self.transcript_path(session_id)).read()
        except FileNotFoundError:
            return []
        except Exception as exc:  # a damaged line: keep what parses rather than lose the session
            log.warning("session %s: transcript damaged (%s); reading the lines that parse", session_id, exc)
            dicts = await anyio.to_thread.run_sync(_read_lenient, self.transcript_path(session_id))
            out: list[_harness.Message] = []
            for d in dicts:
                try:
                    out.append(_harness.Message.from_dict(d))
                except Exception:
                    log.warning("session %s: skipping an unreadable message", session_id)
            return out

    async def list(self) -> list[SessionMeta]:
        """Every session's meta, read from its ``meta.json`` (``page`` is what ``session/list`` uses)."""
        return await anyio.to_thread.run_sync(_list_metas, self.root)

    async def page(self, query: ListQuery, live: Sequence[SessionMeta]) -> list[SessionMeta]:
        """Up to ``query.limit + 1`` sessions, newest first, from the index (``_index``); from every
        ``meta.json`` when there is no usable index. ``live``: the sessions in memory, newer than disk."""

        def read() -> list[SessionMeta]:
            self.index_created_sync()  # (else the listing would catch up by reading the folder)
            got = self.index.page(query, live)
            return got if got is not None else scanned_page(_list_metas(self.root), query, live)

        return await anyio.to_thread.run_sync(read)

    def hold_sync(self, session_id: str) -> bool:
        """Hold the session's folder while it is live here (``_holds``); False when it is gone,
        ``SessionInUse`` when another process has it open or deletes it. Blocking."""
        return self.holds.take(self.directory(session_id), session_id)

    async def hold(self, session_id: str) -> bool:
        return await anyio.to_thread.run_sync(self.hold_sync, session_id)

    def release(self, session_id: str) -> None:
        """A live session of ``session_id`` closed (one ``close``: no file work)."""
        self.holds.release(self.directory(session_id))

    async def delete(self, session_id: str) -> bool:
        """Remove the session; ``SessionInUse`` when another process has it open (nothing removed)."""
        if not valid_session_id(session_id):
            return False
        directory = self.directory(session_id)

        def remove() -> bool:
            self.holds.drop(directory)  # (this process deletes it: its own holds go first)
            with exclusively(directory, session_id):
                self.index_created_sync(session_id)
                self.index.will_write(session_id)  # a kill mid-removal: its row is re-read (and dropped)
                before = self.index.look()
                removed = _remove_tree(directory)
                self.index.removed(session_id, before)
                return removed

        return await anyio.to_thread.run_sync(remove)


def write_json_atomic(path: Path, data: Any, *, indent: int | None = 1, sync: bool = True) -> None:
    """Write ``data`` as JSON so a reader sees the old file or the new one, never half of it (blocking:
    call it in a worker thread; ``sync=False``: no fsync, see ``harness.atomic``)."""
    _harness.private_dir(
        path.parent
    )  # the agent's own data (a session, the model cache): 0700, the file 0600
    _harness.write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=indent), sync=sync)


def _read_meta(path: Path) -> SessionMeta | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SessionMeta.from_dict(data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s: unreadable session metadata (%s)", path, exc)
        return None


_private_folders: set[Path] = set()
"""The folders ``_append_lines`` made or tightened (``private_dir``) in this process: each is checked once,
not at every append (a walk of all its parents, ~10 syscalls); one removed since is made again."""


def _append_lines(path: Path, records: list[dict[str, Any]], sync: bool = True) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    folder = path.parent
    if folder not in _private_folders:
        _harness.private_dir(folder)
        _private_folders.add(folder)
    fd = _harness.open_private_append(path)  # (a folder removed since is not made again: FileNotFoundError)
    try:
        view = memoryview(data.encode("utf-8"))
        while view:  # (one write for a regular file; O_APPEND keeps each at the end)
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _require(directory: Path) -> None:
    """``FileNotFoundError`` when the session's folder is gone (removed by another process): a write then
    must not make it again."""
    if not directory.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the session's folder is gone", str(directory))


def _read_lenient(path: Path, last_too: bool = False) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file; the last line only with ``last_too`` (a transcript's last
    line may be a torn write the transcript repairs; a complete one ends in a newline anyway)."""
    out: list[dict[str, Any]] = []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    for line in lines if last_too else lines[:-1]:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)  # pyright: ignore[reportUnknownArgumentType]
    return out


def _list_metas(root: Path) -> list[SessionMeta]:
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return []
    metas: list[SessionMeta] = []
    for entry in entries:
        if entry.is_dir() and valid_session_id(entry.name):
            meta = _read_meta(entry / "meta.json")
            if meta is not None:
                metas.append(meta)
    return metas


def _remove_tree(path: Path) -> bool:
    if not path.exists():
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True
