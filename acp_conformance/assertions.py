"""The ``check`` step: assertions over the messages a step collected."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .json_types import JsonObject, is_array, is_object, member
from .patterns import mismatch, short, substitute

__all__ = ["check_collected", "joined_text"]


def joined_text(items: Sequence[Any], pattern: Any) -> str:
    """The ``content.text`` of every collected ``session/update`` whose ``update`` matches ``pattern``."""
    parts: list[str] = []
    for update in _updates(items):
        if mismatch(pattern, update) is None:
            text = member(update.get("content"), "text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def _updates(items: Sequence[Any]) -> list[JsonObject]:
    out: list[JsonObject] = []
    for item in items:
        update = member(member(item, "params"), "update")
        if is_object(update):
            out.append(update)
    return out


def _tool_calls(items: Sequence[Any]) -> tuple[str | None, dict[str, str]]:
    """A problem with the order of tool-call updates (an update before its ``tool_call``), and the last
    status seen for each announced call."""
    status: dict[str, str] = {}
    for update in _updates(items):
        kind, call_id = update.get("sessionUpdate"), update.get("toolCallId")
        if kind == "tool_call":
            status[str(call_id)] = str(update.get("status") or "pending")
        elif kind == "tool_call_update":
            if str(call_id) not in status:
                return f"tool_call_update for {call_id!r} before any tool_call announced it", status
            if update.get("status"):
                status[str(call_id)] = str(update["status"])
    return None, status


def _paths(update: Mapping[str, Any]) -> list[str]:
    locations: Any = update.get("locations") or []
    paths = [str(loc.get("path")) for loc in locations if is_object(loc)]
    contents: Any = update.get("content") or []
    for content in contents:
        if is_object(content) and content.get("type") == "diff":
            paths.append(str(content.get("path")))
    return paths


def _tool_problem(step: Mapping[str, Any], items: Sequence[Any]) -> str | None:
    problem, status = _tool_calls(items)
    if step.get("announced") and problem:
        return problem
    if step.get("announced") and not status:
        return "no tool_call update in the turn"
    if "final_status" in step:
        final = step["final_status"]
        wanted: set[Any] = set(final) if is_array(final) else {final}
        wrong = {k: v for k, v in status.items() if v not in wanted}
        if not status or wrong:
            return f"tool calls should end {sorted(wanted)}; last statuses: {status or 'no tool calls'}"
    if step.get("named"):
        unnamed = [
            str(u.get("toolCallId"))
            for u in _updates(items)
            if u.get("sessionUpdate") == "tool_call" and not (isinstance(u.get("name"), str) and u["name"])
        ]
        if unnamed or not status:
            return f"tool_call without a name (ToolCall.name): {unnamed or 'no tool calls'}"
    if step.get("absolute_paths"):
        for update in _updates(items):
            for path in _paths(update):
                if not path.startswith("/"):
                    return f"a relative path {path!r} in {short(update)}"
    return None


def check_collected(
    step: Mapping[str, Any], items: Sequence[Any], variables: Mapping[str, Any]
) -> str | None:
    """None when every assertion of ``step`` holds for ``items``; else the first problem."""
    if "min" in step and len(items) < int(step["min"]):
        return f"collected {len(items)} messages, expected at least {step['min']}"
    if "max" in step and len(items) > int(step["max"]):
        return f"collected {len(items)} messages, expected at most {step['max']}: {short(list(items)[:3])}"
    if "each" in step:
        pattern = substitute(step["each"], variables)
        for item in items:
            problem = mismatch(pattern, item)
            if problem:
                return f"{problem}\n  in: {short(item)}"
    if "none" in step:
        pattern = substitute(step["none"], variables)
        for item in items:
            if mismatch(pattern, item) is None:
                return f"unexpected {short(item)}"
    if "contains_in_order" in step:
        wanted = substitute(step["contains_in_order"], variables)
        i = 0
        for item in items:
            if i < len(wanted) and mismatch(wanted[i], item) is None:
                i += 1
        if i < len(wanted):
            return f"no message matching {short(wanted[i])} (in order) among {len(items)} collected"
    tool_problem = _tool_problem(step, items)
    if tool_problem:
        return tool_problem
    if "joined" in step:
        spec = substitute(step["joined"], variables)
        text = joined_text(items, spec.get("update", {}))
        if str(spec["contains"]) not in text:
            return f"the {short(spec.get('update'))} text {short(text)} does not contain {spec['contains']!r}"
    return None
