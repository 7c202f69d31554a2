"""Prompt-cache hints in the request bodies: Anthropic's breakpoints, OpenAI's ``prompt_cache_key``."""

from __future__ import annotations

import json
from typing import Any, cast

from harness import Message, Options, Role, Text, ToolCall, ToolResult, ToolSpec
from harness.providers.anthropic import Messages
from harness.providers.openai import ChatCompletions, Responses
from tests.providers.provider_support import prompt

TOOL = ToolSpec("read", "Read a file", {"type": "object", "properties": {}})


def _marked(body: dict[str, Any]) -> list[str]:
    """Where the body's breakpoints are: ``system``, ``tool:<name>``, ``message:<i>``."""
    where: list[str] = []
    system: Any = body.get("system")
    if isinstance(system, list) and any("cache_control" in b for b in cast("list[dict[str, Any]]", system)):
        where.append("system")
    where += [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    for i, m in enumerate(body["messages"]):
        content: Any = m["content"]
        if isinstance(content, list) and any(
            "cache_control" in b for b in cast("list[dict[str, Any]]", content)
        ):
            where.append(f"message:{i}")
    return where


def _conversation(steps: int) -> list[Message]:
    msgs = [Message.user("Fix the bug.")]
    for i in range(steps):
        msgs.append(Message.assistant([ToolCall(f"c{i}", "read", {"path": f"f{i}"})]))
        msgs.append(Message(Role.USER, (ToolResult(f"c{i}", (Text(f"body {i}"),)),)))
    return msgs


def test_anthropic_marks_the_system_and_a_rolling_pair_at_the_end_of_the_history() -> None:
    model = Messages("http://127.0.0.1:1", "claude")
    first = model.build_request(prompt(*_conversation(0), tools=[TOOL]))
    assert _marked(first) == ["system", "message:0"]
    later = model.build_request(prompt(*_conversation(2), tools=[TOOL]))
    # The last message writes; the previous request's last message (index 2) reads what it wrote.
    assert _marked(later) == ["system", "message:2", "message:4"]
    assert later["system"] == [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
    assert len(_marked(later)) <= 4


def test_anthropic_puts_no_breakpoint_on_a_reminder_sent_with_one_request() -> None:
    msgs = _conversation(1)
    reminder = Message(Role.USER, (Text("<reminder>goal</reminder>"),), meta={"reminder": True})
    body = Messages("http://127.0.0.1:1", "claude").build_request(prompt(*msgs, reminder))
    assert _marked(body) == ["system", "message:0", "message:2"], "the pair sits before the reminder"
    assert "cache_control" not in json.dumps(body["messages"][3])


def test_anthropic_without_a_system_marks_the_last_tool_and_the_ttl_is_configurable() -> None:
    model = Messages("http://127.0.0.1:1", "claude")
    body = model.build_request(prompt("hi", system=None, tools=[TOOL], options=Options(cache_ttl="1h")))
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    off = model.build_request(prompt("hi", tools=[TOOL], options=Options(cache_ttl=None)))
    assert "cache_control" not in json.dumps(off)


def test_openai_gets_the_sessions_prompt_cache_key_only_on_openais_own_endpoint() -> None:
    options = Options(cache_key="session-1")
    for cls in (ChatCompletions, Responses):
        own = cls("https://api.openai.com/v1", "gpt-5").build_request(prompt("hi", options=options))
        assert own["prompt_cache_key"] == "session-1"
        local = cls("http://127.0.0.1:8080/v1", "qwen").build_request(prompt("hi", options=options))
        assert "prompt_cache_key" not in local, "another server may refuse an unknown field"
        off = cls("https://api.openai.com/v1", "gpt-5").build_request(
            prompt("hi", options=Options(cache_key="s", cache_ttl=None))
        )
        assert "prompt_cache_key" not in off
