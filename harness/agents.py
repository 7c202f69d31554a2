"""Sub-agents: ``AgentTool`` makes a ``Run`` a tool of another run.

The child's events are forwarded into the parent's stream with ``parent`` set to the tool call id (nested
agents nest). A paused child pauses the parent: the parent's call carries every need of the child's
pending calls, ids prefixed with the child call id (``w1/approval``), and ``state`` holds the child's
messages and pending calls as JSON, so the answers go back down in any process.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ._call import Call
from ._kinds import EndReason, FinishReason, Role
from ._messages import Message
from ._pause import Answer, Approval, Need, Pending, Question
from ._run import Ended, Run
from ._tools import Hints, Result, Tool, Tools, ToolSource, ToolSpec
from .conforms import conforms
from .tools import ToolMeta

__all__ = ["AgentTool"]

NO_TEXT = "(the agent gave no text)"
CUT_OFF = "(the agent's reply was cut off at its output token limit)"
REFUSED = "(the agent refused to answer)"


class AgentTool:
    """A sub-agent as a tool with input ``prompt``.

    ``fresh=True`` (the default) runs each call on ``child.fork()``, so every call starts from the
    template's context; ``fresh=False`` continues the same child run across calls.
    """

    def __init__(self, child: Run, name: str, description: str, *, fresh: bool = True) -> None:
        self.child = child
        self.name = name
        self.description = description
        self.fresh = fresh
        self._hints: tuple[ToolSource, Hints] | None = None  # (of which tools, their hints)

    def _child_hints(self) -> Hints:
        # The spec is read several times a step; the walk does a protocol isinstance per child tool.
        tools = self.child.tools
        if self._hints is None or self._hints[0] is not tools:
            self._hints = (tools, _derived_hints(tools))
        return self._hints[1]

    def spec(self) -> ToolSpec:
        return ToolSpec(
            self.name,
            self.description,
            {
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The whole task for the agent"}},
                "required": ["prompt"],
                "additionalProperties": False,
            },
            self._child_hints(),
            meta=ToolMeta(kind="think", agent=True),
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        state = call.state()
        if isinstance(state, dict) and "messages" in state:
            run = self._restore(state)  # pyright: ignore[reportUnknownArgumentType]
            turn_input: Message | list[Answer] = _route_answers(call.answers(), run.pending())
        else:
            run = self.child.fork() if self.fresh else self.child
            turn_input = Message.user(str(input["prompt"]))
        call.nested = run  # ``Run.cancel_call("<this call>/<a child call>")`` reaches the child's calls
        try:
            async with run.turn(turn_input) as events:
                async for event in events:
                    if event.parent is None:
                        event = replace(event, parent=call.id)
                    await call.emit(event)
        finally:
            call.nested = None
        ended = run.ended()
        assert ended is not None
        return self._result(run, ended, call)

    def _restore(self, state: dict[str, Any]) -> Run:
        t = self.child
        return Run(
            t.model,
            t.tools,
            system=t.system,
            options=t.options,
            middleware=t.middleware,
            messages=[Message.from_dict(m) for m in state["messages"]],
            pending=[Pending.from_dict(p) for p in state["pending"]],
            context=t.context,
        )

    def _result(self, run: Run, ended: Ended, call: Call) -> Result:
        meta = {"finish": ended.finish, "usage": ended.usage, "reason": ended.reason}
        if ended.reason is EndReason.AWAITING_INPUT:
            needs: list[Need] = []
            for p in ended.pending:
                for n in p.needs:
                    if isinstance(n, Approval):
                        needs.append(Approval(n.reason, f"{p.call.id}/{n.id}"))
                    else:
                        needs.append(Question(f"{p.call.id}/{n.id}", n.text, n.choices))
            state = {
                "messages": [m.to_dict() for m in run.messages()],
                "pending": [p.to_dict() for p in ended.pending],
            }
            return call.needs_input(needs, state)
        if ended.reason is EndReason.FAILED:
            kind = ended.error_kind.value if ended.error_kind else "failed"
            return Result.failure(f"the agent failed ({kind}): {ended.error}", value=ended, meta=meta)
        if ended.reason in (EndReason.CANCELLED, EndReason.INTERRUPTED):
            return Result.failure("the agent was cancelled", value=ended, meta=meta)
        text = ""
        for m in reversed(ended.appended):
            if m.role is Role.ASSISTANT:
                text = m.text
                break
        lines = [text] if text else [NO_TEXT]
        if ended.finish is FinishReason.LENGTH:
            lines.append(CUT_OFF)
        elif ended.finish is FinishReason.REFUSAL:
            lines.append(REFUSED)
        if ended.reason is EndReason.STOPPED:
            lines.append("(the agent stopped at its step limit)")
        return Result.text("\n".join(lines), value=ended, meta=meta)


def _route_answers(answers: Any, pending: list[Pending]) -> list[Answer]:
    """``{"w1/approval": d}`` on the parent's call -> ``Answer("w1", {"approval": d})`` for the child."""
    by_call: dict[str, dict[str, Any]] = {p.call.id: {} for p in pending}
    for key, value in dict(answers).items():
        call_id, _, need_id = str(key).partition("/")
        if call_id in by_call and need_id:
            by_call[call_id][need_id] = value
    return [Answer(call_id, a) for call_id, a in by_call.items()]


def _derived_hints(source: ToolSource) -> Hints:
    """Read-only when every child tool is; destructive and open-world when any is. Sources whose tools
    are only known at run time (MCP servers) count as neither read-only nor known-safe."""
    hints: list[Hints] = []
    unknown = False

    def walk(item: Tool | ToolSource) -> None:
        nonlocal unknown
        if conforms(item, Tool):
            hints.append(item.spec().hints)
        elif isinstance(item, Tools):
            for sub in item._items:  # pyright: ignore[reportPrivateUsage]
                walk(sub)
        else:
            unknown = True

    walk(source)
    return Hints(
        read_only=not unknown and all(h.read_only for h in hints),
        destructive=unknown or any(h.destructive for h in hints),
        idempotent=False,
        open_world=unknown or any(h.open_world for h in hints),
    )
