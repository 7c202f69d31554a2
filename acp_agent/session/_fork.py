"""``session/fork`` (UNSTABLE, ``sessionCapabilities.fork``): a new session with another one's history.

The fork gets its own id and its own copy of the source's files (the messages, what the client was shown,
the plan, the compaction checkpoints): from then on each changes only its own. The copy is what the source
has on disk, i.e. every complete step (a turn running in the source keeps its step in progress to
itself). Its mode and config options are the live source's (adopted quietly by the factory's controls,
and said in the response), else the defaults, as after a ``session/load``. Its title is the source's with
" (fork)". From then on it is a session like any other: prompt, load (which replays the shared history),
list, close, delete.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio.to_thread

from .._early import new_session_id
from ..protocol.errors import RpcError
from ._opening import controls_state, kept_servers
from ._roots import checked_roots
from ._store import SessionMeta, now_iso

if TYPE_CHECKING:
    from ..protocol.connection import RequestContext
    from ..protocol.models import ForkSessionRequest, ForkSessionResponse
    from ._agent import AcpAgent

__all__ = ["AdoptsOptions", "fork_session", "new_session_id"]

log = logging.getLogger(__name__)

_NOT_COPIED = frozenset({"meta.json"})


@runtime_checkable
class AdoptsOptions(Protocol):
    """Session controls that can take another session's option values without telling the client."""

    def adopt(self, options: Sequence[Mapping[str, Any]]) -> None: ...


async def fork_session(agent: AcpAgent, req: ForkSessionRequest, ctx: RequestContext) -> ForkSessionResponse:
    from ..protocol.models import ForkSessionResponse

    cwd, dirs = await checked_roots(req.cwd, req.additional_directories)
    source = await agent.store.load_meta(req.session_id)
    if source is None:
        raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
    live = agent.sessions.get(req.session_id)
    options = live.setup.controls.config_options() if live is not None and live.setup.controls else None
    now = now_iso()
    title = f"{source.title} (fork)" if source.title else None
    meta = SessionMeta(new_session_id(), cwd, now, now, title, dirs, kept_servers(req.mcp_servers))
    store = agent.store
    await anyio.to_thread.run_sync(_copy_files, store.directory(source.id), store.directory(meta.id))
    history = await store.load_messages(meta.id)
    session = await agent.open_session(meta, history, ctx)
    controls = session.setup.controls
    if options and isinstance(controls, AdoptsOptions):
        controls.adopt(options)
    await store.save_meta(meta)
    log.info("session %s forked from %s (%d messages)", meta.id, source.id, len(history))
    return ForkSessionResponse.model_validate({"sessionId": meta.id, **controls_state(session)})


def _copy_files(source: Path, target: Path) -> None:
    """The source's files but its metadata into a new directory (blocking: run in a worker thread)."""
    from harness.atomic import private_dir  # (the session layer loads no harness at import)

    target.mkdir(parents=True, exist_ok=False, mode=0o700)
    private_dir(target)
    try:
        entries = list(source.iterdir())
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name in _NOT_COPIED or entry.name.startswith("."):
            continue  # a temporary file of an atomic write in progress is not the source's state
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name)
        elif entry.is_file():
            shutil.copy2(entry, target / entry.name)
