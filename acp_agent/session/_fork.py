"""``session/fork`` (UNSTABLE, ``sessionCapabilities.fork``): a new session with another one's history.

The fork gets its own id and its own copy of the source's files (the messages, what the client was shown,
the plan, the compaction checkpoints): from then on each changes only its own. The copy is what the source
has on disk, i.e. every complete step (a turn running in the source keeps its step in progress to
itself). Its mode and config options are the live source's (adopted quietly by the factory's controls,
and said in the response), else the defaults, as after a ``session/load``. Its title is the source's with
" (fork)". From then on it is a session like any other: prompt, load (which replays the shared history),
list, close, delete.

Forking at a message: ``_meta: {"forkAtMessageId": "<messageId>"}`` on the request (JetBrains' form,
``_meta: {"jetbrains": {"air": {"fork": {"messageId": "<messageId>"}}}}``, is read too), with a
``messageId`` the session's chunks carried (live or replayed). At a prompt (a ``user_message_chunk``'s
id) the fork has the conversation before that prompt, so the client can edit and send it again; at an
agent message it has the conversation through the end of that message's turn. The fork's messages and
records are cut there (the records of what was cut are dropped; the factory's own files, such as
compaction checkpoints, are not copied). An id the session does not have is invalid params.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio.to_thread

from .._early import new_session_id
from ..protocol.errors import RpcError
from ..protocol.jsonvalue import as_object
from ..protocol.models import ForkSessionResponse
from . import _harness
from ._opening import controls_state, kept_servers
from ._replay import message_id as id_of
from ._roots import checked_roots
from ._setup import checked_system_prompt
from ._store import SessionMeta, SessionStore, now_iso

if TYPE_CHECKING:
    from harness import Message

    from ..protocol.connection import RequestContext
    from ..protocol.models import ForkSessionRequest, ForkSessionResponse
    from ._registry import SessionRegistry

__all__ = ["FORK_AT_META", "AdoptsOptions", "cut_at", "fork_point", "fork_session", "new_session_id"]

log = logging.getLogger(__name__)

_NOT_COPIED = frozenset({"meta.json"})
_SESSION_FILES = frozenset({"messages.jsonl", "shown.jsonl", "subagents"})
FORK_AT_META = "forkAtMessageId"
"""The ``_meta`` key of a ``session/fork`` request naming the message to fork at."""


@runtime_checkable
class AdoptsOptions(Protocol):
    """Session controls that can take another session's option values without telling the client."""

    def adopt(self, options: Sequence[Mapping[str, Any]]) -> None: ...


async def fork_session(
    agent: SessionRegistry, req: ForkSessionRequest, ctx: RequestContext
) -> ForkSessionResponse:
    cwd, dirs = await checked_roots(req.cwd, req.additional_directories)
    prompt = checked_system_prompt(req.system_prompt)
    store = agent.store
    async with agent.deletes.using(req.session_id):  # not copied while a delete removes it
        source = await store.load_meta(req.session_id)
        if source is None:
            raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
        live = agent.sessions.get(req.session_id)
        options = live.setup.controls.config_options() if live is not None and live.setup.controls else None
        now = now_iso()
        title = f"{source.title} (fork)" if source.title else None
        meta = SessionMeta(new_session_id(), cwd, now, now, title, dirs, kept_servers(req.mcp_servers))
        at = fork_point(req.field_meta)
        cut: int | None = None
        if at is not None:
            cut = cut_at(await store.load_messages(source.id), at)
        await anyio.to_thread.run_sync(
            _copy_files, store.directory(source.id), store.directory(meta.id), cut is not None
        )
    if cut is not None:
        await _cut(store, meta.id, cut)
    history = await store.load_messages(meta.id)
    session = await agent.open_session(meta, history, ctx, prompt)
    controls = session.setup.controls
    if options and isinstance(controls, AdoptsOptions):
        controls.adopt(options)
    await store.save_meta(meta, new=True)
    log.info("session %s forked from %s (%d messages)", meta.id, source.id, len(history))
    return ForkSessionResponse.model_validate({"sessionId": meta.id, **controls_state(session)})


def fork_point(meta: Mapping[str, Any] | None) -> str | None:
    """The ``messageId`` a fork request names in its ``_meta`` (see the module docstring), if any."""
    m = as_object(meta)
    at = m.get(FORK_AT_META)
    if at is None:
        at = as_object(as_object(as_object(m.get("jetbrains")).get("air")).get("fork")).get("messageId")
    if at is None:
        return None
    if not isinstance(at, str) or not at:
        raise RpcError.invalid_params(f"invalid params: _meta.{FORK_AT_META}: expected a message id")
    return at


def cut_at(messages: Sequence[Message], message_id: str) -> int:
    """How many of ``messages`` a fork at ``message_id`` keeps (see the module docstring)."""
    index = next((i for i, m in enumerate(messages) if id_of(m, i) == message_id), None)
    if index is None:
        raise RpcError.invalid_params(
            f"invalid params: _meta.{FORK_AT_META}: no message {message_id!r} in the session"
        )
    if messages[index].role is _harness.Role.USER and not messages[index].tool_results:
        return index  # a prompt: the fork starts before it
    end = index + 1
    while end < len(messages) and (
        messages[end].role is not _harness.Role.USER or messages[end].tool_results
    ):
        end += 1  # the rest of the turn: its steps and the tools' answers
    return end


async def _cut(store: SessionStore, session_id: str, keep: int) -> None:
    """The fork's messages cut to the first ``keep``, and its records to those of what is left."""
    messages = (await store.load_messages(session_id))[:keep]
    kept_calls = {c.id for m in messages for c in m.tool_calls}
    shown = [r for r in await store.load_shown(session_id) if _kept(r, keep, kept_calls)]
    directory = store.directory(session_id)
    await anyio.to_thread.run_sync(_rewrite, directory, [m.to_dict() for m in messages], shown)


def _kept(record: Mapping[str, Any], keep: int, calls: set[str]) -> bool:
    call, turn, compaction = (as_object(record.get(k)) for k in ("call", "turn", "compaction"))
    if call:
        return str(call.get("toolCallId", "")).split("/")[0] in calls
    if turn or compaction:
        after = (turn or compaction).get("after")
        return isinstance(after, int) and after <= keep
    return True  # the plan: the last one stays


def _rewrite(directory: Path, messages: list[dict[str, Any]], shown: list[dict[str, Any]]) -> None:
    """Write the fork's files anew (blocking: run in a worker thread; the fork is not open yet)."""
    for name, lines in (("messages.jsonl", messages), ("shown.jsonl", shown)):
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        _harness.write_text_atomic(directory / name, text)  # private (0600), like every session file


def _copy_files(source: Path, target: Path, cutting: bool = False) -> None:
    """The source's files but its metadata into a new directory (blocking: run in a worker thread);
    ``cutting``: only the session layer's own files (the factory's may describe what is cut)."""
    target.mkdir(parents=True, exist_ok=False, mode=0o700)
    _harness.private_dir(target)
    try:
        entries = list(source.iterdir())
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name in _NOT_COPIED or entry.name.startswith("."):
            continue  # a temporary file of an atomic write in progress is not the source's state
        if cutting and entry.name not in _SESSION_FILES:
            continue
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name)
        elif entry.is_file():
            shutil.copy2(entry, target / entry.name)
