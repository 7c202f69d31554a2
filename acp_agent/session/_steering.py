"""``_session/steering``: a message for the turn that is running (claude-agent-acp's and codex-acp's
extension, advertised the same way: ``InitializeResponse._meta.steering.supported``).

The message lands in the running turn at its next step boundary (the harness's steer: after the model's
current reply and the calls it made; a turn about to end takes one more step for it), answered
``injected``; one the turn ends without landing (cancelled first, or come as it was being written) is the
session's next turn, ahead of queued prompts (``_inbox``): never dropped, unless the session closes. When the session is idle it starts a turn of its own (``startedNewTurn``: its updates stream
as a prompt's, and no ``PromptResponse`` ends it), or, asked with ``_meta.steering.idleBehavior:
"promptRequired"``, does nothing and answers ``promptRequired`` (the client sends ``session/prompt``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ..protocol.models import SteeringOutcome
    from ._registry import SessionRegistry

__all__ = ["steer_session"]


async def steer_session(
    agent: SessionRegistry, req: m.SteeringRequest, ctx: RequestContext
) -> dict[str, Any]:
    session = agent.live_session(req.session_id)
    message = await session.message_of(req.prompt)
    outcome: SteeringOutcome
    if session.inject(message):
        outcome = "injected"
    elif req.prompt_required_when_idle:
        outcome = "promptRequired"
    else:
        await session.start_turn(message)
        outcome = "startedNewTurn"
    return {"outcome": outcome}
