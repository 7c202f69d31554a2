"""Session titles: who set one (``TitleSource``), the checks a title passes, and the one short model
request that writes a title after the first exchange.

A session's first title is its first prompt cut short (``title_from_prompt``), set as the turn starts. After
the first exchange the model may write a better one (off the turn's path: in the background, after the
answer), where the session's set-up gives ``SessionSetup.title_model``; it replaces only a title the agent
made itself. A title the user set (``session/set_title``, ``/rename``) is never replaced.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import anyio

from ..protocol.errors import RpcError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from harness import Message, Model, Run

    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ._setup import SessionEnvironment, SessionSetup
    from ._store import SessionMeta, SessionStore

__all__ = [
    "MAX_TITLE",
    "TITLE_SYSTEM",
    "TitleRegistry",
    "TitleSource",
    "Titled",
    "ask_title",
    "checked_title",
    "set_session_title",
    "title_after_exchange",
    "title_model",
]

log = logging.getLogger(__name__)

TitleSource: TypeAlias = Literal["prompt", "model", "user"]

MAX_TITLE: Final = 200
"""The longest title a user may set (characters)."""
_MODEL_TITLE_MAX: Final = 80
_EXCERPT: Final = 2000
_TIMEOUT_S: Final = 30.0

TITLE_SYSTEM: Final = (
    "Write a short title for the conversation below, of at most six words, in the language of the user's "
    "message. Answer with the title only: no quotes, no markdown, no punctuation at its end."
)


class Titled(Protocol):
    """What titling uses of a live session (``_session.Session``, which imports this module)."""

    titling: bool
    """A model-written title was asked for (once a session)."""

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
    title named the session yet: the model writes the title, in the background (once a session)."""
    get_model, spawn = session.setup.title_model, session.env.spawn
    if get_model is None or spawn is None or session.titling:
        return
    if session.meta.title_source not in (None, "prompt"):
        return
    replies = [m.text for m in run.messages() if m.role.value == "assistant" and m.text]
    if not replies:
        return
    session.titling = True

    async def write() -> None:
        model = await get_model()
        if model is None:  # no model chosen yet: the first prompt's title stays
            return
        title = await ask_title(title_model(model), message.text, replies[-1])
        if title is not None:
            await session.set_title(title, source="model")

    spawn(write)


def title_model(main: Model) -> Model:
    """The model that writes titles: the session's model. The one place to point at a small side model."""
    return main


async def ask_title(model: Model, user: str, reply: str) -> str | None:
    """The model's title for an exchange, or None (it failed, timed out, or answered nothing usable)."""
    from harness import Message
    from harness.model import Prompt, TextChunk, close_stream

    conversation = f"User: {user[:_EXCERPT]}\n\nAssistant: {reply[:_EXCERPT]}"
    prompt = Prompt(system=TITLE_SYSTEM, messages=(Message.user(conversation),), tools=())
    out: list[str] = []
    try:
        with anyio.fail_after(_TIMEOUT_S):
            stream = model.stream(prompt)
            try:
                async for delta in stream:
                    if isinstance(delta, TextChunk):
                        out.append(delta.text)
            finally:
                await close_stream(stream)
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:  # a title is a nicety: the session goes on with the one it has
        log.info("writing a title failed: %s", exc)
        return None
    return _clean("".join(out))


def _clean(text: str) -> str | None:
    """The first line of a model's answer, without quotes, markdown or a final full stop, cut short."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = re.sub(r"^(title\s*:\s*)", "", line.strip(), flags=re.IGNORECASE)
    line = line.strip(" \t#*`_\"'\u201c\u201d\u2018\u2019").rstrip(".")
    line = " ".join(line.split())
    if not line:
        return None
    return line if len(line) <= _MODEL_TITLE_MAX else line[: _MODEL_TITLE_MAX - 1].rstrip() + "…"


async def set_session_title(
    agent: TitleRegistry, req: m.SetSessionTitleRequest, ctx: RequestContext
) -> dict[str, Any]:
    """``session/set_title``: the user's title, saved, told to the client (a live session's
    ``session_info_update``), never replaced by the agent's."""
    title = checked_title(req.title)
    live = agent.sessions.get(req.session_id)
    if live is not None:
        await live.set_title(title, source="user")
        return {"title": title}
    meta = await agent.store.load_meta(req.session_id)
    if meta is None:
        raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
    await agent.store.save_meta(meta.touched(title=title, title_source="user"))
    return {"title": title}  # as stored (whitespace collapsed): the client shows this one
