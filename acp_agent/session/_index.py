"""The sessions folder's index, ``<home>/sessions/.index/sessions.sqlite3``: what ``session/list`` shows of
each session (id, folders, title, times, archived), so a page costs what it returns rather than a read of
every ``meta.json``.

The ``meta.json`` files stay the truth; the index is a cache of them that damage only makes slower:
- SQLite keeps it whole through a ``kill -9`` at any moment and between agent processes sharing the folder
  (WAL, a busy timeout; each catch-up is one write transaction); its files are 0600 in 0700 folders.
- The store writes it after each ``meta.json`` it writes (a new session's row after its answer, never over
  a row written since); a rewrite first marks the row dirty, so a process killed between the two leaves a
  row the next listing re-reads from its ``meta.json``.
- Folders added or removed by anyone else (an older agent, a hand copy, ``rm -r``, the early
  ``session/new`` answer) change the sessions folder's ``(mtime, link count)``: the next listing compares
  the folder's entries with the rows. A session folder this process made or removed moves the look by
  exactly one link, and the index takes the new look without reading the folder.
- Missing, replaced, of another schema, corrupt (``sqlite3.DatabaseError``) or marked stale (a write to it
  failed): rebuilt from the ``meta.json`` files. Not seen until then: a ``meta.json`` rewritten in place by
  another program (``acp-agent`` never does that), a folder renamed by hand in the clock tick of a look.
All of it is blocking: call it in a worker thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from . import _harness
from ._meta import SessionMeta, valid_session_id

if TYPE_CHECKING:
    import sqlite3

__all__ = ["INDEX_DIR", "INDEX_NAME", "ListQuery", "Look", "SessionIndex", "scanned_page"]

log = logging.getLogger(__name__)

INDEX_DIR: Final = ".index"
"""A folder of its own (not a session id: the dot), so the index's files coming and going (SQLite's
``-wal`` and ``-shm``) leave the sessions folder's mtime to the sessions."""
INDEX_NAME: Final = "sessions.sqlite3"
_STALE_NAME: Final = "stale"
_SCHEMA: Final = "1"
_RACY_NS: Final = 500_000_000
"""An mtime this close to the clock may be shared by a change still to come in the same tick."""
_BUSY_MS: Final = 5000
_UNKNOWN: Final = "?"
"""The ``root`` state when the folder is to be read again at the next listing."""
_COLUMNS: Final = "id, cwd, title, title_source, archived, created_at, updated_at, dirs"
_SCHEMA_SQL: Final = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, cwd TEXT NOT NULL, ncwd TEXT NOT NULL, title TEXT, title_source TEXT,
    archived INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, dirs TEXT NOT NULL,
    dirty INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS by_time ON sessions (archived, updated_at, id);
CREATE INDEX IF NOT EXISTS by_cwd ON sessions (ncwd, archived, updated_at, id);
CREATE INDEX IF NOT EXISTS by_dirty ON sessions (dirty) WHERE dirty != 0;
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""


Look: TypeAlias = tuple[int, int]
"""A folder's ``(st_mtime_ns, st_nlink)``: any session folder made or removed changes both."""


class ListQuery:
    """One page's question: newest first, after ``after`` (``(updated_at, id)`` of the last one shown)."""

    __slots__ = ("after", "archived", "cwd", "limit")

    def __init__(self, cwd: str | None, archived: str, after: tuple[str, str] | None, limit: int) -> None:
        self.cwd = cwd
        self.archived = archived
        self.after = after
        self.limit = limit


class SessionIndex:
    """The index of the sessions under ``root``; ``read_meta`` reads one ``meta.json`` (None: none)."""

    def __init__(self, root: Path, read_meta: Callable[[Path], SessionMeta | None]) -> None:
        self.root = root
        self.folder = root / INDEX_DIR
        self.path = self.folder / INDEX_NAME
        self._read_meta = read_meta
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._inode = 0

    # -- writes (after the store wrote the meta.json) --------------------------------------------------

    def will_write(self, session_id: str) -> None:
        """Before ``meta.json`` is rewritten: a kill before ``wrote`` leaves the row to be re-read."""
        self._write(
            lambda db: db.execute("UPDATE sessions SET dirty = ? WHERE id = ?", (_token(), session_id))
        )

    def exists(self) -> bool:
        """Whether there is an index to keep (none yet: the first listing builds it from the folders)."""
        return self.folder.is_dir()

    def look(self) -> Look | None:
        """The sessions folder's ``(mtime, links)`` before a write that may add or remove a folder."""
        try:
            return _look(self.root)
        except OSError:
            return None

    def wrote(self, meta: SessionMeta, before: Look | None = None) -> None:
        """``meta.json`` written (``before``: ``look()`` before it, when it may have made the folder)."""

        def change(db: sqlite3.Connection) -> None:
            _put(db, meta)
            self._own_change(db, before, +1)

        self._write(change)

    def created(self, meta: SessionMeta, before: Look | None, after: Look | None) -> None:
        """A new session's row, written after its answer (``SessionStore.create_sync``): never over a row
        already there (a later write's, a listing's catch-up); ``before`` and ``after``: the sessions
        folder's look around the ``mkdir`` of its folder."""

        def change(db: sqlite3.Connection) -> None:
            db.execute(f"INSERT OR IGNORE INTO sessions VALUES ({_PLACES})", _row(meta))
            self._own_change(db, before, +1, after)

        self._write(change)

    def removed(self, session_id: str, before: Look | None = None) -> None:
        def change(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            self._own_change(db, before, -1)

        self._write(change)

    def _own_change(
        self, db: sqlite3.Connection, before: Look | None, links: int, after: Look | None = None
    ) -> None:
        """When the folder changed by exactly this write's folder (one link more or less, and the index
        knew the folder as it was before), the index knows it as it is now: no re-read of the folder
        for a session this process made or removed. Anything else changed it too: the next listing
        compares. (A file system whose folders count no links always compares.)"""
        if before is None:
            return
        after = after or _look(self.root)
        if after != before and after[1] == before[1] + links:
            db.execute(
                "UPDATE state SET value = ? WHERE key = 'root' AND value = ?", (_pack(after), _pack(before))
            )

    def _write(self, change: Callable[[sqlite3.Connection], object]) -> None:
        import sqlite3

        with self._lock:
            if not self.folder.is_dir():
                return  # no index yet: the first listing builds it
            try:
                db = self._open()
                with _transaction(db):
                    change(db)
            except (sqlite3.Error, OSError) as exc:
                log.warning(
                    "%s: cannot update the session index (%s); it is rebuilt at the next listing",
                    self.path,
                    exc,
                )
                self._mark_stale()

    # -- reads -----------------------------------------------------------------------------------------

    def page(self, query: ListQuery, live: Sequence[SessionMeta]) -> list[SessionMeta] | None:
        """Up to ``query.limit + 1`` sessions of the page, newest first (one more than the page: there is a
        next page); ``live`` (sessions in memory, newer than their ``meta.json``) replace their rows. None
        when there is no usable index (the caller reads every ``meta.json``)."""
        import sqlite3

        if not self.root.is_dir():
            return []
        with self._lock:
            for attempt in range(2):
                try:
                    db = self._fresh()
                    return _page(db, query, live)
                except sqlite3.DatabaseError as exc:
                    log.warning("%s: unusable session index (%s); rebuilding it", self.path, exc)
                    self._discard()
                    if attempt:
                        return None
                except OSError as exc:
                    log.warning("%s: cannot use the session index (%s)", self.path, exc)
                    return None
        return None

    def close(self) -> None:
        with self._lock:
            self._close()

    # -- keeping it true -------------------------------------------------------------------------------

    def _fresh(self) -> sqlite3.Connection:
        """The connection, with the index brought up to date with the folder (see the module docstring).
        Each catch-up is one write transaction taken before it looks, so another process's row written
        meanwhile waits for it rather than being overwritten by an older read."""
        db = self._open()
        if self._stale_marked() or _state(db, "schema") != _SCHEMA:
            with _transaction(db):
                self._rebuild(db)
        elif (known := _state(db, "root")) == _UNKNOWN or _pack(_look(self.root)) != known:
            with _transaction(db):
                self._reconcile(db)
        if db.execute("SELECT 1 FROM sessions WHERE dirty != 0 LIMIT 1").fetchone() is not None:
            with _transaction(db):
                self._repair(db)
        return db

    def _rebuild(self, db: sqlite3.Connection) -> None:
        seen = self._trusted_look()
        db.execute("DELETE FROM sessions")
        for name in _session_names(self.root):
            meta = self._read_meta(self.root / name / "meta.json")
            if meta is not None:
                _put(db, meta)
        _set_state(db, "root", seen)
        _set_state(db, "schema", _SCHEMA)
        try:
            (self.folder / _STALE_NAME).unlink(missing_ok=True)
        except OSError:
            pass

    def _reconcile(self, db: sqlite3.Connection) -> None:
        """Rows for the session folders added since the last look, none for those gone."""
        seen = self._trusted_look()  # before the folder is read: a change after it shows next time
        names = set(_session_names(self.root))
        known = {row[0] for row in db.execute("SELECT id FROM sessions")}
        for name in known - names:
            db.execute("DELETE FROM sessions WHERE id = ?", (name,))
        for name in names - known:
            meta = self._read_meta(self.root / name / "meta.json")
            if meta is not None:
                _put(db, meta)
            elif _recent(self.root / name):
                seen = _UNKNOWN  # a folder whose meta.json is being written: look again next time
        _set_state(db, "root", seen)

    def _repair(self, db: sqlite3.Connection) -> None:
        """Re-read the rows a writer marked and did not finish (killed, or writing right now: its own
        row, written after its ``meta.json``, replaces this one when it finishes)."""
        for session_id, token in db.execute("SELECT id, dirty FROM sessions WHERE dirty != 0").fetchall():
            db.execute("DELETE FROM sessions WHERE id = ? AND dirty = ?", (session_id, token))
            meta = self._read_meta(self.root / session_id / "meta.json")
            if meta is not None:
                db.execute(f"INSERT OR IGNORE INTO sessions VALUES ({_PLACES})", _row(meta))

    def _trusted_look(self) -> str:
        """The sessions folder's look, packed; ``_UNKNOWN`` (the next listing reads the folder again) when
        its file system counts no links and its mtime is recent enough to share its clock tick with a
        change to come (a link count tells such a change apart)."""
        seen = _look(self.root)
        return _pack(seen) if seen[1] > 1 or time.time_ns() - seen[0] > _RACY_NS else _UNKNOWN

    # -- the connection --------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """The open connection, reopened when the file was removed or replaced since."""
        import sqlite3

        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = 0
        if self._db is not None and inode == self._inode:
            return self._db

        self._close()
        _harness.private_dir(self.folder)  # 0700, and the sessions folder too
        if not inode:  # created 0600 here: SQLite gives its -wal and -shm files the same mode
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
        db = sqlite3.connect(
            self.path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # a cache: a power cut may cost its last rows
            db.executescript(_SCHEMA_SQL)
        except BaseException:
            db.close()
            raise
        self._db, self._inode = db, os.stat(self.path).st_ino
        return db

    def _close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()

    def _discard(self) -> None:
        """Remove a corrupt index (and its journal files): the next open starts a new one."""
        self._close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass

    def _mark_stale(self) -> None:
        try:
            os.close(os.open(self.folder / _STALE_NAME, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
        except OSError:
            pass

    def _stale_marked(self) -> bool:
        return (self.folder / _STALE_NAME).exists()


_PLACES: Final = ", ".join("?" * 10)


def _look(folder: Path) -> Look:
    info = os.stat(folder)
    return info.st_mtime_ns, info.st_nlink


def _pack(look: Look) -> str:
    return f"{look[0]}:{look[1]}"


class _transaction:
    """``BEGIN IMMEDIATE`` (the write lock, waiting up to the busy timeout) ... ``COMMIT``, or rolled back."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:  # (SQLite ends some failed transactions itself)
            self._db.execute("ROLLBACK")


def _row(meta: SessionMeta) -> tuple[Any, ...]:
    return (
        meta.id,
        meta.cwd,
        os.path.normpath(meta.cwd),
        meta.title,
        meta.title_source,
        int(meta.archived),
        meta.created_at,
        meta.updated_at,
        json.dumps(list(meta.additional_directories), ensure_ascii=False),
        0,
    )


def _put(db: sqlite3.Connection, meta: SessionMeta) -> None:
    db.execute(f"INSERT OR REPLACE INTO sessions VALUES ({_PLACES})", _row(meta))


def _meta(row: Sequence[Any]) -> SessionMeta:
    session_id, cwd, title, title_source, archived, created_at, updated_at, dirs = row
    return SessionMeta(
        id=session_id,
        cwd=cwd,
        created_at=created_at,
        updated_at=updated_at,
        title=title,
        additional_directories=tuple(json.loads(dirs)),
        title_source=title_source,
        archived=bool(archived),
    )


def scanned_page(
    metas: Iterable[SessionMeta], query: ListQuery, live: Sequence[SessionMeta]
) -> list[SessionMeta]:
    """``SessionIndex.page`` from every session's meta, when there is no usable index."""
    newer = {meta.id: meta for meta in live}
    wanted = [m for m in (newer.get(meta.id, meta) for meta in metas) if _wanted(m, query)]
    wanted.sort(key=lambda meta: (meta.updated_at, meta.id), reverse=True)
    return wanted[: query.limit + 1]


def _page(db: sqlite3.Connection, query: ListQuery, live: Sequence[SessionMeta]) -> list[SessionMeta]:
    where: list[str] = []
    args: list[Any] = []
    if query.cwd is not None:
        where.append("ncwd = ?")
        args.append(query.cwd)
    if query.archived != "include":
        where.append("archived = ?")
        args.append(int(query.archived == "only"))
    if query.after is not None:
        where.append("(updated_at, id) < (?, ?)")
        args.extend(query.after)
    shown = _stored(db, [meta.id for meta in live])
    if shown:
        where.append(f"id NOT IN ({', '.join('?' * len(shown))})")
        args.extend(shown)
    sql = f"SELECT {_COLUMNS} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
    rows = [_meta(row) for row in db.execute(sql, (*args, query.limit + 1))]
    rows.extend(meta for meta in live if meta.id in shown and _wanted(meta, query))
    rows.sort(key=lambda meta: (meta.updated_at, meta.id), reverse=True)
    return rows[: query.limit + 1]


def _stored(db: sqlite3.Connection, ids: list[str]) -> set[str]:
    """Which of ``ids`` the index has (a live session whose folder is gone is not listed)."""
    if not ids:
        return set()
    places = ", ".join("?" * len(ids))
    return {row[0] for row in db.execute(f"SELECT id FROM sessions WHERE id IN ({places})", ids)}


def _wanted(meta: SessionMeta, query: ListQuery) -> bool:
    if query.cwd is not None and os.path.normpath(meta.cwd) != query.cwd:
        return False
    if query.archived != "include" and meta.archived != (query.archived == "only"):
        return False
    return query.after is None or (meta.updated_at, meta.id) < query.after


def _state(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _set_state(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (key, value))


def _session_names(root: Path) -> Iterable[str]:
    try:
        with os.scandir(root) as entries:
            return [e.name for e in entries if valid_session_id(e.name) and e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def _recent(folder: Path) -> bool:
    try:
        return time.time_ns() - os.stat(folder).st_mtime_ns < 5 * _RACY_NS
    except OSError:
        return False


def _token() -> int:
    return int.from_bytes(os.urandom(6)) or 1
