"""Tool calls a model wrote as text, in the dialects its chat template uses when the server does not parse them.

- Hermes/Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the last one may be unclosed);
- Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]`` or ``[TOOL_CALLS]name[ARGS]{...}``;
- Llama 3: the whole reply is ``{"name": ..., "parameters": {...}}`` (after an optional ``<|python_tag|>``);
- DeepSeek: its markers (``<`` fullwidth bar, ``tool calls begin`` with U+2581 for the spaces, bar ``>``),
  then per call ``tool call begin``, ``function``, ``tool sep``, the name and a JSON fence (V3), or the name,
  ``tool sep`` and the JSON object (V3.1), up to ``tool call end``.

``parse_text_calls`` finds them only where a reader would: a block inside a Markdown code fence is an
example, not a call, and every call must name an offered tool (resolved as ``_repair.resolve_name`` does),
or the whole reply stays text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from ._repair import repair_arguments, resolve_name

__all__ = ["MARKERS", "TextCalls", "in_fence", "parse_text_calls"]

_HERMES = "<tool_call>"
_MISTRAL = "[TOOL_CALLS]"


def _ds(words: str) -> str:
    """A DeepSeek marker: fullwidth bars, U+2581 for spaces."""
    return "<\uff5c" + words.replace(" ", "\u2581") + "\uff5c>"


_DEEPSEEK = _ds("tool calls begin")
_DS_SEP = _ds("tool sep")
_DS_END = _ds("tool calls end")
_PYTHON_TAG = "<|python_tag|>"
MARKERS = (_HERMES, _MISTRAL, _DEEPSEEK, _PYTHON_TAG)
"""The openings that may start a text call (a reply starting with ``{`` may be Llama's)."""

_HERMES_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_DS_CALL = re.compile(
    re.escape(_ds("tool call begin")) + r"(.*?)(?:" + re.escape(_ds("tool call end")) + r"|$)", re.DOTALL
)
_DS_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class TextCalls:
    """The calls found (offered names, object inputs), the prose around them, and the dialect's name."""

    dialect: str
    calls: list[tuple[str, dict[str, Any]]]
    prose: str


def in_fence(text: str, at: int) -> bool:
    """Whether ``at`` lies inside a Markdown code fence opened before it."""
    return len(_FENCE_LINE.findall(text, 0, at)) % 2 == 1


def _args(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return cast(dict[str, Any], value)
    if value is None:
        return {}
    if isinstance(value, str):
        return repair_arguments(value).value
    return None


def _object(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        return repair_arguments(text).value


def _named(item: Any) -> tuple[str, dict[str, Any]] | None:
    """``{"name": ..., "arguments"|"parameters": ...}`` (or OpenAI's ``{"function": {...}}``) as a call."""
    if not isinstance(item, dict):
        return None
    d = cast(dict[str, Any], item)
    if isinstance(d.get("function"), dict):
        d = cast(dict[str, Any], d["function"])
    name = d.get("name")
    if not isinstance(name, str):
        return None
    args = _args(d.get("arguments", d.get("parameters")))
    return (name, args) if args is not None else None


def _hermes(text: str, start: int) -> tuple[list[Any], int, int] | None:
    items: list[Any] = []
    end = start
    for m in _HERMES_BLOCK.finditer(text, start):
        items.append(_object(m.group(1)))
        end = m.end()
    return items, start, end


def _mistral(text: str, start: int) -> tuple[list[Any], int, int] | None:
    body = text[start + len(_MISTRAL) :].strip()
    if body.startswith("["):
        value = _object(body)
        return (cast(list[Any], value), start, len(text)) if isinstance(value, list) else None
    items: list[Any] = []
    for part in body.split(_MISTRAL):  # the newer template: name[ARGS]{...}, repeated
        name, sep, args = part.partition("[ARGS]")
        if not sep:
            return None
        items.append({"name": name.strip(), "arguments": _object(args)})
    return items, start, len(text)


def _deepseek(text: str, start: int) -> tuple[list[Any], int, int] | None:
    items: list[Any] = []
    for m in _DS_CALL.finditer(text, start):
        head, _, rest = m.group(1).partition(_DS_SEP)
        head = head.strip()
        if head == "function":  # V3: the name, a newline, then a fenced JSON object
            name, _, rest = rest.partition("\n")
            fence = _DS_FENCE.search(rest)
            items.append({"name": name.strip(), "arguments": _object(fence.group(1) if fence else rest)})
        else:
            items.append({"name": head, "arguments": _object(rest)})
    end = text.find(_DS_END, start)
    return items, start, len(text) if end < 0 else end + len(_DS_END)


def _llama(text: str) -> tuple[list[Any], int, int] | None:
    body = text.strip()
    at = text.find(body[:1]) if body else 0
    if body.startswith(_PYTHON_TAG):
        body = body[len(_PYTHON_TAG) :].strip()
    if not body.startswith("{"):
        return None
    value = _object(body)
    if not isinstance(value, dict) or not ({"arguments", "parameters"} & set(cast(dict[str, Any], value))):
        return None  # a reply that is some JSON object is data, not a call
    return [value], at, len(text)


def parse_text_calls(text: str, offered: Sequence[str]) -> TextCalls | None:
    """The tool calls ``text`` holds, or None when it holds none a reader would run."""
    if not offered or not text.strip():
        return None
    found: tuple[list[Any], int, int] | None = None
    dialect = ""
    for marker, name, parse in (
        (_HERMES, "Hermes/Qwen tool_call tags", _hermes),
        (_MISTRAL, "Mistral TOOL_CALLS", _mistral),
        (_DEEPSEEK, "DeepSeek tool-call markers", _deepseek),
    ):
        at = text.find(marker)
        if at >= 0 and not in_fence(text, at):
            found, dialect = parse(text, at), name
            break
    else:
        found, dialect = _llama(text), "Llama 3 JSON"
    if found is None:
        return None
    items, start, end = found
    calls: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        call = _named(item)
        tool = resolve_name(call[0], offered) if call is not None else None
        if call is None or tool is None:
            return None  # one block that is not a call to an offered tool: the reply is prose
        calls.append((tool, call[1]))
    if not calls:
        return None
    prose = (text[:start].rstrip() + "\n" + text[end:].strip()).strip()
    return TextCalls(dialect, calls, prose)
