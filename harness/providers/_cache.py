"""Prompt-cache hints in a request body: where Anthropic's ``cache_control`` breakpoints go.

Anthropic caches a prefix (tools, then system, then messages) only where a request marks a breakpoint,
and reads it back when a later request marks one at the end of a byte-identical prefix. So the breakpoints
are: the end of the system prompt (covering the tools before it; the last tool when there is no system),
and a rolling pair at the end of the history: the last message, and the one that was last in the previous
request of the conversation (the user message before the last assistant reply), so each request reads
what the previous one wrote and writes its own. Three of the API's four.

A message marked ``meta["reminder"]`` (``harness.tools.plan.Reminder``: sent with one request, dropped
from the next) never takes a breakpoint: the pair goes on the messages before it, so what it wrote is
read back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

__all__ = ["EPHEMERAL_META", "anthropic_breakpoints", "cache_control"]

EPHEMERAL_META = "reminder"
"""``Message.meta`` key of a message sent with one request only (no breakpoint lands on it)."""


def cache_control(ttl: str) -> dict[str, str]:
    """Anthropic's marker: the default lifetime (5 minutes) needs no ``ttl``."""
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def _mark_last_block(content: Any, marker: dict[str, str]) -> Any:
    """``content`` (a string or a list of blocks) with ``marker`` on its last block; unchanged when empty."""
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": marker}] if content else content
    if isinstance(content, list) and content:
        blocks: list[Any] = list(cast("list[Any]", content))
        last = blocks[-1]
        if isinstance(last, dict):
            blocks[-1] = {**cast("dict[str, Any]", last), "cache_control": marker}
        return blocks
    return cast(Any, content)


def anthropic_breakpoints(body: dict[str, Any], ephemeral: Sequence[bool], ttl: str) -> None:
    """Mark ``body`` (a Messages request) in place. ``ephemeral[i]``: ``body["messages"][i]`` is sent
    with this request only."""
    marker = cache_control(ttl)
    system = body.get("system")
    if system:
        body["system"] = _mark_last_block(system, marker)
    elif body.get("tools"):
        tools: list[dict[str, Any]] = list(body["tools"])
        tools[-1] = {**tools[-1], "cache_control": marker}
        body["tools"] = tools
    messages: list[dict[str, Any]] = body.get("messages") or []
    kept = [i for i, m in enumerate(messages) if not (i < len(ephemeral) and ephemeral[i]) and m["content"]]
    if not kept:
        return
    last = kept[-1]
    marks = [last]
    # The previous request's last message: the last user message before the last assistant reply.
    replies = [i for i in kept if messages[i]["role"] == "assistant" and i < last]
    if replies:
        before = [i for i in kept if i < replies[-1] and messages[i]["role"] == "user"]
        if before:
            marks.append(before[-1])
    for i in marks:
        messages[i] = {**messages[i], "content": _mark_last_block(messages[i]["content"], marker)}
