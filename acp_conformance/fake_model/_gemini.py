"""Turns as Gemini API candidates (``streamGenerateContent?alt=sse`` and ``generateContent``)."""

from __future__ import annotations

from typing import Any

from .turn import Turn, split_text, sse

__all__ = ["gemini_json", "gemini_stream"]


# --- Gemini ----------------------------------------------------------------------------------------


def _gemini_usage(turn: Turn) -> dict[str, int]:
    return {
        "promptTokenCount": turn.usage["input"],
        "candidatesTokenCount": turn.usage["output"],
        "totalTokenCount": turn.usage["input"] + turn.usage["output"],
    }


def _gemini_finish(turn: Turn) -> str:
    return "MAX_TOKENS" if turn.finish == "length" and not turn.tool_calls else "STOP"


def gemini_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return sse({"candidates": [candidate], "usageMetadata": _gemini_usage(turn), "modelVersion": model})

    head = [chunk([{"text": p, "thought": True}]) for p in split_text(turn.reasoning, turn.chunks)]
    head += [chunk([{"text": p}]) for p in split_text(turn.text, turn.chunks)]
    calls = [{"functionCall": {"name": c.name, "args": c.arguments}} for c in turn.tool_calls]
    return head, [chunk(calls or [{"text": ""}], _gemini_finish(turn))]


def gemini_json(turn: Turn, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.reasoning, "thought": True}] if turn.reasoning else []
    parts += [{"text": turn.text}] if turn.text else []
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in turn.tool_calls]
    candidate = {
        "content": {"parts": parts or [{"text": ""}], "role": "model"},
        "finishReason": _gemini_finish(turn),
        "index": 0,
    }
    return {"candidates": [candidate], "usageMetadata": _gemini_usage(turn), "modelVersion": model}
