"""Session titles: who set one (``TitleSource``), the checks a title passes, and the one short model
request that writes a title after the first exchange.

A session's first title is its first prompt cut short (``title_from_prompt``), set as the turn starts. After
the first exchange the model writes a better one (``harness.titles.ask_title``: off the turn's path, in the
background after the answer; closing the session cancels it), where the session's set-up gives
``SessionSetup.title_model`` (the coding factory does unless ``titles = "prompt"``); it replaces only a title
the agent made itself, and a failure leaves it. A title the user set (``session/set_title``, ``/rename``) is
never replaced.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import anyio

from ..protocol.errors import RpcError
from . import _harness
from ._turn_writes import SessionGone

if TYPE_CHECKING:
    from collections.abc import Mapping

    from harness import Message, Model, Run

    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ._deletes import Deletes
    from ._setup import SessionEnvironment, SessionSetup
    from ._store import SessionMeta, SessionStore

__all__ = [
    "MAX_TITLE",
    "TitleRegistry",
    "TitleSource",
    "Titled",
    "checked_title",
    "set_session_title",
    "title_after_exchange",
    "title_model",
]

log = logging.getLogger(__name__)

TitleSource: TypeAlias = Literal["prompt", "model", "user"]

MAX_TITLE: Final = 200
"""The longest title a user may set (characters)."""


class Titled(Protocol):
    """What titling uses of a live session (``_session.Session``, which imports this module)."""

    titling: anyio.CancelScope | None
    """The model-written title's request, once asked for (once a session; closing the session cancels it)."""

    @property
    def setup(self) -> SessionSetup: ...

    @property
    def env(self) -> SessionEnvironment: ...

    @property
    def meta(self) -> SessionMeta: ...

    async def set_title(self, title: str, *, source: TitleSource = "user") -> bool: ...


class TitleRegistry(Protocol):
    """What ``session/set_title`` uses of the agent."""

    @property
    def sessions(self) -> Mapping[str, Titled]: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def deletes(self) -> Deletes: ...

    async def session_gone(self, session_id: str, live: object) -> RpcError:
        """``live``, whose folder another process removed: out of the table, closed; the error to answer."""
        ...


def checked_title(title: str) -> str:
    """A title the user gave, its whitespace collapsed; ``RpcError`` (invalid params) when it is empty or
    longer than ``MAX_TITLE``."""
    text = " ".join(title.split())
    if not text:
        raise RpcError.invalid_params("invalid params: title: empty")
    if len(text) > MAX_TITLE:
        raise RpcError.invalid_params(f"invalid params: title: longer than {MAX_TITLE} characters")
    return text


def title_after_exchange(session: Titled, message: Message, run: Run) -> None:
    """After an exchange, where the set-up gives a ``title_model`` and no one but the agent's first-prompt
    title named the session yet: the model writes the title, in the background (once a session; under
    ``session.titling``, which closing the session cancels). It never holds up a turn; a failure leaves
    the title as it is."""
    get_model, spawn = session.setup.title_model, session.env.spawn
    if get_model is None or spawn is None or session.titling is not None:
        return
    if session.meta.title_source not in (None, "prompt"):
        return
    replies = [m.text for m in run.messages() if m.role.value == "assistant" and m.text]
    if not replies:
        return
    scope = session.titling = anyio.CancelScope()

    async def write() -> None:
        with scope:
            model = await get_model()
            if model is None:  # no model chosen yet: the first prompt's title stays
                return
            title = await _harness.ask_title(title_model(model), message.text, replies[-1])
            if title is not None:
                try:
                    await session.set_title(title, source="model")
                except SessionGone:  # its next request says so; nothing to write here
                    log.info("session %s: removed outside this agent, its title not saved", session.meta.id)

    spawn(write)


def title_model(main: Model) -> Model:
    """The model that writes titles: the one the set-up's ``title_model`` gave (the coding factory gives its
    side model: ``small_model`` where configured, else the session's, counted between turns)."""
    return main


async def set_session_title(
    agent: TitleRegistry, req: m.SetSessionTitleRequest, ctx: RequestContext
) -> dict[str, Any]:
    """``session/set_title``: the user's title, saved, told to the client (a live session's
    ``session_info_update``), never replaced by the agent's."""
    title = checked_title(req.title)
    async with agent.deletes.using(req.session_id):  # not written back by a delete's side (``_deletes``)
        live = agent.sessions.get(req.session_id)
        if live is not None:
            try:
                await live.set_title(title, source="user")
            except SessionGone:
                raise await agent.session_gone(req.session_id, live) from None
            return {"title": title}
        meta = await agent.store.load_meta(req.session_id)
        try:
            if meta is None:
                raise FileNotFoundError(req.session_id)
            await agent.store.save_meta(meta.touched(title=title, title_source="user"))
        except FileNotFoundError:  # (or removed since it was read, by another process)
            raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id) from None
    return {"title": title}  # as stored (whitespace collapsed): the client shows this one
