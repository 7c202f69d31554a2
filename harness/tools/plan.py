"""A plan the agent keeps (``Plan``), its tools (``plan_set``, ``plan_update``) and ``Reminder``.

Items carry ACP's plan entry fields: ``content``, ``status`` (``pending``, ``in_progress``,
``completed``) and ``priority`` (``high``, ``medium``, ``low``). Listeners (``Plan.subscribe``) hear
every change with the whole plan, so an ACP host sends a ``plan`` update each time. ``Reminder`` is a
model middleware that shows the model the turn's goal and the open plan in a trailing user message of
the prompt, leaving the run's messages as they are.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast, get_args

import anyio

from .._call import Call
from .._errors import HarnessUsageError
from .._kinds import Role
from .._messages import Message, Text, ToolResult
from .._tools import Hints, Result, ToolSpec
from ..middleware import NextModel
from ..model import Delta, Prompt
from ._values import PlanEntry, PlanValue, ToolMeta

__all__ = ["Plan", "PlanItem", "PlanListener", "PlanSet", "PlanUpdate", "Priority", "Reminder", "Status"]

log = logging.getLogger(__name__)

Status = Literal["pending", "in_progress", "completed"]
Priority = Literal["high", "medium", "low"]
STATUSES: tuple[str, ...] = get_args(Status)
PRIORITIES: tuple[str, ...] = get_args(Priority)

_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


@dataclass(frozen=True, slots=True)
class PlanItem:
    content: str
    status: Status = "pending"
    priority: Priority = "medium"

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise HarnessUsageError(f"plan status must be one of {STATUSES}, got {self.status!r}")
        if self.priority not in PRIORITIES:
            raise HarnessUsageError(f"plan priority must be one of {PRIORITIES}, got {self.priority!r}")

    def to_dict(self) -> dict[str, str]:
        """ACP's ``PlanEntry`` shape."""
        return {"content": self.content, "status": self.status, "priority": self.priority}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanItem:
        return cls(
            str(data["content"]),
            cast(Status, data.get("status") or "pending"),
            cast(Priority, data.get("priority") or "medium"),
        )


PlanListener = Callable[["Plan"], Awaitable[None] | None]


class Plan:
    """The kept plan. Change it through ``set``/``update`` (or the tools); listeners hear each change."""

    def __init__(self, items: Iterable[PlanItem] = (), *, on_change: PlanListener | None = None) -> None:
        self._items: tuple[PlanItem, ...] = tuple(items)
        self._listeners: list[PlanListener] = [on_change] if on_change is not None else []
        # Changes and their notifications go in order, so a listener's last word is the current plan.
        self._lock = anyio.Lock()

    @property
    def items(self) -> tuple[PlanItem, ...]:
        return self._items

    def open_items(self) -> list[tuple[int, PlanItem]]:
        """The items not completed, with their 1-based positions."""
        return [(i, item) for i, item in enumerate(self._items, start=1) if item.status != "completed"]

    def subscribe(self, listener: PlanListener) -> Callable[[], None]:
        """Call ``listener(plan)`` (sync or async) after every change; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def set(self, items: Iterable[PlanItem]) -> None:
        async with self._lock:
            self._items = tuple(items)
            await self._notify()

    async def update(self, position: int, **changes: Any) -> PlanItem:
        """Change the item at 1-based ``position`` (``status``, ``priority``, ``content``)."""
        async with self._lock:
            if not 1 <= position <= len(self._items):
                raise HarnessUsageError(f"no plan item {position} (the plan has {len(self._items)})")
            item = replace(self._items[position - 1], **changes)
            self._items = (*self._items[: position - 1], item, *self._items[position:])
            await self._notify()
            return item

    def render(self) -> str:
        if not self._items:
            return "(the plan is empty)"
        return "\n".join(_line(i, item) for i, item in enumerate(self._items, start=1))

    def to_dicts(self) -> list[dict[str, str]]:
        """ACP's ``entries`` list."""
        return [item.to_dict() for item in self._items]

    def value(self) -> PlanValue:
        """The tools' ``Result.value``: the whole plan (an object, as applications expect of a value)."""
        return PlanValue(
            entries=[PlanEntry(content=i.content, status=i.status, priority=i.priority) for i in self._items]
        )

    def tools(self) -> list[PlanSet | PlanUpdate]:
        return [PlanSet(self), PlanUpdate(self)]

    async def _notify(self) -> None:
        for listener in tuple(self._listeners):
            try:
                out = listener(self)
                if inspect.isawaitable(out):
                    await out
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:
                # A listener (the editor connection) failing does not undo the change the model made.
                log.exception("plan listener %r failed", listener)


def _line(position: int, item: PlanItem) -> str:
    prio = "" if item.priority == "medium" else f" ({item.priority})"
    return f"{position}. {_MARK[item.status]} {item.content}{prio}"


_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "minLength": 1, "description": "What the step does."},
        "status": {"type": "string", "enum": list(STATUSES), "default": "pending"},
        "priority": {"type": "string", "enum": list(PRIORITIES), "default": "medium"},
    },
    "required": ["content"],
    "additionalProperties": False,
}

_HINTS = Hints(read_only=True, idempotent=True)


class PlanSet:
    """``plan_set {items}``: replace the whole plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "plan_set",
            "Write the plan for the task as a list of steps, replacing any earlier plan. Keep one step "
            "in_progress while you work on it and mark steps completed with plan_update as you finish them.",
            {
                "type": "object",
                "properties": {"items": {"type": "array", "items": _ITEM_SCHEMA}},
                "required": ["items"],
                "additionalProperties": False,
            },
            _HINTS,
            meta=ToolMeta(kind="think", title="Update the plan"),
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        items = [PlanItem.from_dict(raw) for raw in input["items"]]
        await self.plan.set(items)
        return Result.text(f"Plan set:\n{self.plan.render()}", value=self.plan.value())


class PlanUpdate:
    """``plan_update {index | content, status?, priority?}``: change one item of the plan."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "plan_update",
            "Change one step of the plan: name it by its number (index, from 1) or its exact text "
            "(content), and give its new status and/or priority.",
            {
                "type": "object",
                "properties": {
                    "index": {"type": "integer", "minimum": 1, "description": "The step's number, from 1."},
                    "content": {"type": "string", "description": "The step's text, when no index is given."},
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "priority": {"type": "string", "enum": list(PRIORITIES)},
                },
                "additionalProperties": False,
            },
            _HINTS,
            meta=ToolMeta(kind="think", title="Update the plan"),
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        position = self._position(input)
        if isinstance(position, str):
            return Result.failure(position)
        changes = {k: input[k] for k in ("status", "priority") if k in input}
        if not changes:
            return Result.failure("plan_update: give status and/or priority to change")
        await self.plan.update(position, **changes)
        return Result.text(f"Plan updated:\n{self.plan.render()}", value=self.plan.value())

    def _position(self, input: Mapping[str, Any]) -> int | str:
        items = self.plan.items
        if not items:
            return "plan_update: the plan is empty; write it with plan_set first"
        if "index" in input:
            index = int(input["index"])
            if not 1 <= index <= len(items):
                return f"plan_update: no step {index}; the plan has steps 1 to {len(items)}"
            return index
        if "content" in input:
            wanted = " ".join(str(input["content"]).split()).casefold()
            hits = [
                i for i, it in enumerate(items, start=1) if " ".join(it.content.split()).casefold() == wanted
            ]
            if len(hits) == 1:
                return hits[0]
            if hits:
                return f"plan_update: {len(hits)} steps read {input['content']!r}; name it by index"
            return f"plan_update: no step reads {input['content']!r}; the plan is:\n{self.plan.render()}"
        return "plan_update: name the step by index or content"


class Reminder:
    """Model middleware: append the goal and the open plan as a trailing user message of the prompt.

    The goal is ``goal`` when given, else the text of the first user message of the current turn (the
    first user message with text after the last assistant reply that called no tools). The run's
    messages are not touched; a prompt that continues an assistant message (``continue_``) passes as is.
    """

    def __init__(
        self, plan: Plan | None = None, *, goal: str | None = None, max_goal_chars: int = 2000
    ) -> None:
        self.plan = plan
        self.goal = goal
        self.max_goal_chars = max_goal_chars

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        if prompt.continue_:
            return next(prompt)
        text = self.text(prompt.messages)
        if text is None:
            return next(prompt)
        reminder = Message(Role.USER, (Text(text),), meta={"reminder": True})
        return next(prompt.replace(messages=(*prompt.messages, reminder)))

    def text(self, messages: Sequence[Message]) -> str | None:
        """The reminder for ``messages``, or None when there is neither goal nor plan."""
        goal = self.goal if self.goal is not None else turn_goal(messages)
        lines: list[str] = []
        if goal:
            if len(goal) > self.max_goal_chars:
                goal = goal[: self.max_goal_chars] + " [...]"
            lines.append(f"Goal of this turn: {goal}")
        if self.plan is not None and self.plan.items:
            open_items = self.plan.open_items()
            if open_items:
                lines.append("Open steps of the plan (update them with plan_update as you go):")
                lines.extend(_line(i, item) for i, item in open_items)
            else:
                lines.append(f"Every step of the plan ({len(self.plan.items)}) is completed.")
        if not lines:
            return None
        return "<reminder>\n" + "\n".join(lines) + "\n</reminder>"


def turn_goal(messages: Sequence[Message]) -> str | None:
    """The text of the first user message of the current turn, or None."""
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == Role.ASSISTANT and not m.tool_calls:
            start = i + 1
            break
    for m in messages[start:]:
        if m.role == Role.USER and not any(isinstance(p, ToolResult) for p in m.parts) and m.text.strip():
            return m.text.strip()
    return None
