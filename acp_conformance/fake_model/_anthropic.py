"""Turns as Anthropic Messages events (and the non-streamed body)."""

from __future__ import annotations

import json
from typing import Any

from .turn import Turn, split_text, sse

__all__ = ["anthropic_json", "anthropic_stream"]


# --- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_stop(turn: Turn) -> str:
    return "tool_use" if turn.tool_calls else ("max_tokens" if turn.finish == "length" else "end_turn")


def anthropic_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    def ev(kind: str, **body: Any) -> bytes:
        return sse({"type": kind, **body}, kind)

    usage = {
        "input_tokens": turn.usage["input"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    message: dict[str, Any] = {
        "id": f"msg_conformance{turn.index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    head = [ev("message_start", message=message), ev("ping")]
    index = 0
    if turn.reasoning:
        head.append(
            ev(
                "content_block_start",
                index=index,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
        )
        for piece in split_text(turn.reasoning, turn.chunks):
            head.append(
                ev("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
            )
        head.append(
            ev(
                "content_block_delta",
                index=index,
                delta={"type": "signature_delta", "signature": "c2lnbmF0dXJl"},
            )
        )
        head.append(ev("content_block_stop", index=index))
        index += 1
    if turn.text:
        head.append(ev("content_block_start", index=index, content_block={"type": "text", "text": ""}))
        for piece in split_text(turn.text, turn.chunks):
            head.append(ev("content_block_delta", index=index, delta={"type": "text_delta", "text": piece}))
    tail: list[bytes] = []
    if turn.text:
        tail.append(ev("content_block_stop", index=index))
        index += 1
    for call in turn.tool_calls:
        block: dict[str, Any] = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        tail.append(ev("content_block_start", index=index, content_block=block))
        tail.append(
            ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": ""})
        )
        for piece in split_text(json.dumps(call.arguments), 2):
            tail.append(
                ev(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
            )
        tail.append(ev("content_block_stop", index=index))
        index += 1
    delta = {"stop_reason": _anthropic_stop(turn), "stop_sequence": None}
    tail.append(ev("message_delta", delta=delta, usage={"output_tokens": turn.usage["output"]}))
    tail.append(ev("message_stop"))
    return head, tail


def anthropic_json(turn: Turn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.reasoning:
        content.append({"type": "thinking", "thinking": turn.reasoning, "signature": "c2lnbmF0dXJl"})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.tool_calls
    ]
    return {
        "id": f"msg_conformance{turn.index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _anthropic_stop(turn),
        "stop_sequence": None,
        "usage": {"input_tokens": turn.usage["input"], "output_tokens": turn.usage["output"]},
    }
