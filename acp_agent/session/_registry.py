"""What the route modules beside ``AcpAgent`` use of the agent, as narrow protocols: a handler takes one of
these, not the agent, so no route module imports ``_agent`` back (the agent imports them all for
``ROUTES``; the layering test refuses import cycles).

``SessionRegistry``: the live sessions, the store, the sessions being closed or deleted, and opening a session.
``ModelOwner``: the configured model's settings and forgetting its key (``logout``, ``auth/status``).
Two seams stay beside the handlers that take them, as they name their module's own types:
``_providers.ProviderOwner`` (the routes) and ``_titles.TitleRegistry`` (sessions as ``_titles.Titled``,
since ``_session`` imports ``_titles``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..model_setup import ModelSettings
    from ..protocol.connection import RequestContext
    from ..protocol.errors import RpcError
    from ._closes import Closes
    from ._deletes import Deletes
    from ._session import Session
    from ._store import SessionMeta, SessionStore

__all__ = ["ModelOwner", "SessionRegistry"]


class SessionRegistry(Protocol):
    """The agent's sessions, for the ``session/*`` handlers."""

    sessions: dict[str, Session]
    """The live sessions, by id."""
    closing: Closes
    """The session closes under way (``_closes``)."""
    deletes: Deletes
    """The requests using a session and the deletes under way, by id (``_deletes``)."""

    @property
    def store(self) -> SessionStore: ...

    def live_session(self, session_id: str) -> Session:
        """The live session ``session_id``; ``RpcError`` (not found) when there is none."""
        ...

    async def open_session(
        self,
        meta: SessionMeta,
        history: list[Any],
        ctx: RequestContext | None,
        system_prompt: tuple[str, str] | None = None,
    ) -> Session:
        """A live session of ``meta`` and ``history``, set up and registered."""
        ...

    def after_response(self, ctx: RequestContext, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` once the response to ``ctx``'s request is on the wire."""
        ...

    async def session_gone(self, session_id: str, live: object) -> RpcError:
        """``live``, whose folder another process removed: out of the table, closed; the error to answer."""
        ...


class ModelOwner(Protocol):
    """The agent's model settings, for ``auth/status`` and ``logout``."""

    settings: ModelSettings
    has_model_given: bool
    """A model was given to the agent (tests, the scripted model): no key is involved."""
    forget_key: Callable[[], object] | None
    """Forgets the key ``acp-agent setup`` stored (given by the composition root)."""

    def forget_model(self) -> None:
        """Build the model again for the next session."""
        ...
