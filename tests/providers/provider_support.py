"""The provider tests' helpers: a prompt, draining a model's stream, a tool spec (imported by name:
``from provider_support import ...``; a bare ``conftest`` import would find another folder's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness import Message, Options, ToolSpec
from harness.model import Delta, Model, Prompt

LIMIT_S = 10


def prompt(
    *messages: Message | str,
    system: str | None = "Be terse.",
    tools: Sequence[ToolSpec] = (),
    options: Options | None = None,
    continue_: bool = False,
) -> Prompt:
    msgs = [Message.user(m) if isinstance(m, str) else m for m in messages] or [Message.user("hi")]
    return Prompt(system, msgs, list(tools), options or Options(), continue_=continue_)


async def drain(model: Model, p: Prompt) -> list[Delta]:
    return [d async for d in model.stream(p)]


async def drain_until_error(model: Model, p: Prompt) -> tuple[list[Delta], BaseException]:
    got: list[Delta] = []
    try:
        async for d in model.stream(p):
            got.append(d)
    except Exception as exc:  # the error is what the test inspects
        return got, exc
    raise AssertionError(f"no error raised; deltas: {got}")


def weather_tool() -> ToolSpec:
    return ToolSpec(
        "get_weather",
        "Current weather",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )


def any_json(d: Any) -> Any:
    return d
