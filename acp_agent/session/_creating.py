"""Creating sessions: ``session/new``'s set-up in one worker-thread hop, and the set-up of the others
(``session/load``, ``resume``, ``fork``) done before their answer (``completed``).

``session/new`` does its blocking file work in one hop: the roots' check, the factory's own file work (a
``PreparingFactory``'s ``prepare``: the configuration, the rule files, the sandbox, the base prompt...), and
the new session's meta, written before the answer (a ``session/load`` may follow at once) without an
fsync (``SessionStore.create_sync``), and its folder held against other processes (``_holds``).
The factory then finishes on the event loop, with no file work; what only a prompt needs it leaves for after
the answer (``SessionSetup.ready``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from .._early import new_session_id
from ..protocol import models as m
from ._roots import checked_roots_sync
from ._setup import PreparingFactory, SessionEnvironment
from ._store import SessionMeta, now_iso

if TYPE_CHECKING:
    from ._setup import SessionFactory, SessionSetup
    from ._store import SessionStore

__all__ = ["completed", "new_session_setup"]

P = TypeVar("P")

log = logging.getLogger(__name__)


async def new_session_setup(
    req: m.NewSessionRequest,
    servers: tuple[dict[str, Any], ...],
    factory: SessionFactory,
    store: SessionStore,
    environment: Callable[[SessionMeta], SessionEnvironment],
) -> tuple[SessionMeta, SessionEnvironment, SessionSetup]:
    """A new session's meta (on disk), environment (``environment``: pure, no file work) and set-up (see
    the module docstring)."""
    if isinstance(factory, PreparingFactory):
        return await _in_two_halves(req, servers, factory, store, environment)

    def on_disk() -> tuple[SessionMeta, SessionEnvironment]:
        meta = _new_meta(req, servers)
        return meta, environment(meta)

    meta, env = await anyio.to_thread.run_sync(on_disk)
    setup = await factory(env)

    def create() -> None:
        store.create_sync(meta)
        store.hold_sync(meta.id)  # (released by the session's close)

    await anyio.to_thread.run_sync(create)
    return meta, env, setup


async def _in_two_halves(
    req: m.NewSessionRequest,
    servers: tuple[dict[str, Any], ...],
    factory: PreparingFactory[P],
    store: SessionStore,
    environment: Callable[[SessionMeta], SessionEnvironment],
) -> tuple[SessionMeta, SessionEnvironment, SessionSetup]:
    def on_disk() -> tuple[SessionMeta, SessionEnvironment, P]:
        meta = _new_meta(req, servers)
        env = environment(meta)
        prepared = factory.prepare(env)
        store.create_sync(meta)  # after the factory's work: a session that fails is not stored
        store.hold_sync(meta.id)  # (released by the session's close)
        return meta, env, prepared

    meta, env, prepared = await anyio.to_thread.run_sync(on_disk)
    try:
        return meta, env, await factory.finish(env, prepared)
    except BaseException:
        store.release(meta.id)
        raise


def _new_meta(req: m.NewSessionRequest, servers: tuple[dict[str, Any], ...]) -> SessionMeta:
    cwd, dirs = checked_roots_sync(req.cwd, req.additional_directories or ())
    now = now_iso()
    return SessionMeta(new_session_id(), cwd, now, now, None, dirs, servers)


async def completed(setup: SessionSetup) -> SessionSetup:
    """``setup`` with the part its factory left for later done (``ready``); on a failure its resources are
    freed and the failure raised."""
    if setup.ready is not None:
        try:
            await setup.ready()
        except BaseException:
            if setup.aclose is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await setup.aclose()
            raise
    return setup
