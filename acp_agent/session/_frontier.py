"""What of ACP's UNSTABLE session updates a session's client takes (``schema.unstable.json``), and what
it gets in place of the stable ones.

- ``plan`` (client capability ``plan``, RFD plan-operations): the plan goes as ``plan_update`` with the
  id ``PLAN_ID`` (the session has one plan), an empty plan as ``plan_removed``; without it, the stable
  ``plan`` as before.
- ``notices`` (``session.notices``, as Zed advertises it behind its ACP beta flag): advisory news (an MCP
  server failed, no sandbox, an untrusted project) goes as a ``notice``; without it, as the agent's
  message it always was.
- ``compaction`` (``session.compaction``): the coding factory sends ``compaction_update``s itself; the
  session keeps their terminal state for ``session/load``.
- ``threads``: sub-agent runs as sessions of their own (``_threads``; Zed, which advertises nothing).
- ``subagents`` (``clientCapabilities.subagents``): those sessions are announced on the parent with
  ``subagent_update`` (state ``running``, then ``idle`` with its stop reason; title and task).

A client that advertises none of these sees exactly what it saw before they existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..protocol.models import AgentMessageChunk, PlanItems, PlanRemoved, PlanUpdate, TextContent, dump
from ._threads import takes_threads

if TYPE_CHECKING:
    from ..protocol.models import Notice, SessionUpdate
    from ._setup import SessionEnvironment

__all__ = ["PLAN_ID", "ClientFrontier"]

PLAN_ID: Final = "plan"


@dataclass(frozen=True, slots=True)
class ClientFrontier:
    compaction: bool = False
    notices: bool = False
    plans: bool = False
    threads: bool = False
    subagents: bool = False
    marks_rejected: bool = False
    """Zed marks a tool call the user rejected itself, and a later ``failed`` would override its mark; every
    other client needs the agent's ``failed`` (Toad and acpx show it pending)."""

    @classmethod
    def of(cls, env: SessionEnvironment) -> ClientFrontier:
        return cls(
            compaction=env.client_can("session", "compaction"),
            notices=env.client_can("session", "notices"),
            plans=env.client_can("plan"),
            threads=takes_threads(env.client_info, env.client_capabilities) or env.client_can("subagents"),
            subagents=env.client_can("subagents"),
            marks_rejected=str(env.client_info.get("name") or "").strip().lower() == "zed",
        )

    def plan(self, entries: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """The ``plan_update`` or ``plan_removed`` (wire dict) that replaces a ``plan`` of ``entries``;
        None: the stable ``plan`` goes."""
        if not self.plans:
            return None
        if not entries:
            return dump(PlanRemoved(plan_id=PLAN_ID))
        return dump(PlanUpdate(plan=PlanItems.model_validate({"planId": PLAN_ID, "entries": list(entries)})))

    def notice(self, notice: Notice, fallback: str) -> SessionUpdate:
        """``notice`` for a client that takes notices, else ``fallback`` as the agent's message."""
        return notice if self.notices else AgentMessageChunk(content=TextContent(text=fallback))
