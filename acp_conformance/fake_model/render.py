"""One scripted model turn rendered in each provider's exact wire format, streamed or not.

The envelopes follow real captures (``../shared/reference/providers-wire.md``): Chat Completions chunks with
the role delta, content deltas, a finish chunk, a usage chunk with ``choices: []`` and ``data: [DONE]``;
Responses ``response.created`` … ``response.completed`` with the items repeated in ``output_item.done``;
Anthropic ``event:``/``data:`` records from ``message_start`` to ``message_stop`` (a ``ping`` included);
Gemini ``streamGenerateContent?alt=sse`` candidates with ``usageMetadata``.

A stream is returned as ``(head, tail)``: ``head`` holds everything up to the last content delta, ``tail`` the
finish records. A stalled turn sends ``head`` and then holds the connection open (``Stall``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["API_NAMES", "ToolCall", "Turn", "render_json", "render_stream", "split_text"]

API_NAMES = ("chat", "responses", "anthropic", "gemini")
_CREATED = 1770933892


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str


@dataclass(frozen=True)
class Turn:
    """What the model says in one response. ``finish``: ``stop`` or ``length`` (``tool`` is implied by
    ``tool_calls``). ``chunks``: how many deltas the text is cut into."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish: str = "stop"
    chunks: int = 3
    stall: bool = False
    index: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"input": 42, "output": 7})


def split_text(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` nearly equal pieces (fewer for short texts; none for empty text)."""
    if not text:
        return []
    n = max(1, min(chunks, len(text)))
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, separators=(',', ':'))}\n\n".encode()


# --- Chat Completions ------------------------------------------------------------------------------


def _chat_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    env = {
        "id": f"chatcmpl-conformance{turn.index}",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": model,
        "system_fingerprint": "fp_conformance",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**env, "choices": [choice], "usage": None})

    head = [chunk({"role": "assistant", "content": "" if turn.text else None, "refusal": None})]
    head += [chunk({"reasoning_content": part}) for part in split_text(turn.reasoning, turn.chunks)]
    head += [chunk({"content": part}) for part in split_text(turn.text, turn.chunks)]
    for i, call in enumerate(turn.tool_calls):
        args = json.dumps(call.arguments)
        first = {
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        head.append(chunk({"tool_calls": [first]}))
        head += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
            for part in split_text(args, 2)
        ]
    finish = "tool_calls" if turn.tool_calls else ("length" if turn.finish == "length" else "stop")
    usage = {
        "prompt_tokens": turn.usage["input"],
        "completion_tokens": turn.usage["output"],
        "total_tokens": turn.usage["input"] + turn.usage["output"],
    }
    tail = [chunk({}, finish), _sse({**env, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]
    return head, tail


def _chat_json(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in turn.tool_calls
        ]
    finish = "tool_calls" if turn.tool_calls else ("length" if turn.finish == "length" else "stop")
    return {
        "id": f"chatcmpl-conformance{turn.index}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": turn.usage["input"],
            "completion_tokens": turn.usage["output"],
            "total_tokens": turn.usage["input"] + turn.usage["output"],
        },
    }


# --- Responses -------------------------------------------------------------------------------------


def _responses_items(turn: Turn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning:
        items.append(
            {
                "id": f"rs_conformance{turn.index}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": turn.reasoning}],
            }
        )
    if turn.text:
        items.append(
            {
                "id": f"msg_conformance{turn.index}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for i, call in enumerate(turn.tool_calls):
        items.append(
            {
                "id": f"fc_conformance{turn.index}_{i}",
                "type": "function_call",
                "status": "completed",
                "arguments": json.dumps(call.arguments),
                "call_id": call.id,
                "name": call.name,
            }
        )
    return items


def _responses_object(turn: Turn, model: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "id": f"resp_conformance{turn.index}",
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "model": model,
        "output": output,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "usage": None,
    }
    if status != "in_progress":
        obj["usage"] = {
            "input_tokens": turn.usage["input"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": turn.usage["output"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.usage["input"] + turn.usage["output"],
        }
    return obj


def _responses_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    seq = iter(range(1_000_000))

    def ev(kind: str, **body: Any) -> bytes:
        return _sse({"type": kind, "sequence_number": next(seq), **body}, kind)

    items = _responses_items(turn)
    head = [
        ev("response.created", response=_responses_object(turn, model, "in_progress", [])),
        ev("response.in_progress", response=_responses_object(turn, model, "in_progress", [])),
    ]
    done: list[bytes] = []
    for out, item in enumerate(items):
        item_id = item["id"]
        if item["type"] == "reasoning":
            head.append(ev("response.output_item.added", output_index=out, item={**item, "summary": []}))
            part = {"type": "summary_text", "text": ""}
            head.append(
                ev(
                    "response.reasoning_summary_part.added",
                    item_id=item_id,
                    output_index=out,
                    summary_index=0,
                    part=part,
                )
            )
            for piece in split_text(turn.reasoning, turn.chunks):
                head.append(
                    ev(
                        "response.reasoning_summary_text.delta",
                        item_id=item_id,
                        output_index=out,
                        summary_index=0,
                        delta=piece,
                    )
                )
            head.append(
                ev(
                    "response.reasoning_summary_text.done",
                    item_id=item_id,
                    output_index=out,
                    summary_index=0,
                    text=turn.reasoning,
                )
            )
            head.append(ev("response.output_item.done", output_index=out, item=item))
        elif item["type"] == "message":
            added = {**item, "status": "in_progress", "content": []}
            head.append(ev("response.output_item.added", output_index=out, item=added))
            part = {"type": "output_text", "text": "", "annotations": []}
            head.append(
                ev(
                    "response.content_part.added",
                    item_id=item_id,
                    output_index=out,
                    content_index=0,
                    part=part,
                )
            )
            for piece in split_text(turn.text, turn.chunks):
                head.append(
                    ev(
                        "response.output_text.delta",
                        item_id=item_id,
                        output_index=out,
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                )
            done.append(
                ev(
                    "response.output_text.done",
                    item_id=item_id,
                    output_index=out,
                    content_index=0,
                    text=turn.text,
                    logprobs=[],
                )
            )
            done.append(
                ev(
                    "response.content_part.done",
                    item_id=item_id,
                    output_index=out,
                    content_index=0,
                    part=item["content"][0],
                )
            )
            done.append(ev("response.output_item.done", output_index=out, item=item))
        else:
            added = {**item, "status": "in_progress", "arguments": ""}
            head.append(ev("response.output_item.added", output_index=out, item=added))
            for piece in split_text(item["arguments"], 2):
                head.append(
                    ev(
                        "response.function_call_arguments.delta",
                        item_id=item_id,
                        output_index=out,
                        delta=piece,
                    )
                )
            head.append(
                ev(
                    "response.function_call_arguments.done",
                    item_id=item_id,
                    output_index=out,
                    arguments=item["arguments"],
                )
            )
            head.append(ev("response.output_item.done", output_index=out, item=item))
    status = "incomplete" if turn.finish == "length" and not turn.tool_calls else "completed"
    done.append(ev(f"response.{status}", response=_responses_object(turn, model, status, items)))
    return head, done


# --- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_stop(turn: Turn) -> str:
    return "tool_use" if turn.tool_calls else ("max_tokens" if turn.finish == "length" else "end_turn")


def _anthropic_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    def ev(kind: str, **body: Any) -> bytes:
        return _sse({"type": kind, **body}, kind)

    usage = {
        "input_tokens": turn.usage["input"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    message = {
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
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
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


def _anthropic_json(turn: Turn, model: str) -> dict[str, Any]:
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


# --- Gemini ----------------------------------------------------------------------------------------


def _gemini_usage(turn: Turn) -> dict[str, int]:
    return {
        "promptTokenCount": turn.usage["input"],
        "candidatesTokenCount": turn.usage["output"],
        "totalTokenCount": turn.usage["input"] + turn.usage["output"],
    }


def _gemini_finish(turn: Turn) -> str:
    return "MAX_TOKENS" if turn.finish == "length" and not turn.tool_calls else "STOP"


def _gemini_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return _sse({"candidates": [candidate], "usageMetadata": _gemini_usage(turn), "modelVersion": model})

    head = [chunk([{"text": p, "thought": True}]) for p in split_text(turn.reasoning, turn.chunks)]
    head += [chunk([{"text": p}]) for p in split_text(turn.text, turn.chunks)]
    calls = [{"functionCall": {"name": c.name, "args": c.arguments}} for c in turn.tool_calls]
    return head, [chunk(calls or [{"text": ""}], _gemini_finish(turn))]


def _gemini_json(turn: Turn, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.reasoning, "thought": True}] if turn.reasoning else []
    parts += [{"text": turn.text}] if turn.text else []
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in turn.tool_calls]
    candidate = {
        "content": {"parts": parts or [{"text": ""}], "role": "model"},
        "finishReason": _gemini_finish(turn),
        "index": 0,
    }
    return {"candidates": [candidate], "usageMetadata": _gemini_usage(turn), "modelVersion": model}


_STREAMS: dict[str, Callable[[Turn, str], tuple[list[bytes], list[bytes]]]] = {
    "chat": _chat_stream,
    "responses": _responses_stream,
    "anthropic": _anthropic_stream,
    "gemini": _gemini_stream,
}
_JSON: dict[str, Callable[[Turn, str], dict[str, Any]]] = {
    "chat": _chat_json,
    "responses": lambda turn, model: _responses_object(
        turn, model, "incomplete" if turn.finish == "length" else "completed", _responses_items(turn)
    ),
    "anthropic": _anthropic_json,
    "gemini": _gemini_json,
}


def render_stream(api: str, turn: Turn, model: str) -> tuple[Sequence[bytes], Sequence[bytes]]:
    """``(head, tail)`` SSE records of ``turn`` in ``api``'s format."""
    return _STREAMS[api](turn, model)


def render_json(api: str, turn: Turn, model: str) -> dict[str, Any]:
    """The non-streamed response body of ``turn`` in ``api``'s format."""
    return _JSON[api](turn, model)
