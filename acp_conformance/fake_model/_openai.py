"""Turns as OpenAI Chat Completions chunks and Responses events (and their non-streamed bodies)."""

from __future__ import annotations

import json
from typing import Any

from .turn import CREATED, Turn, split_text, sse

__all__ = ["chat_json", "chat_stream", "responses_json", "responses_stream"]


# --- Chat Completions ------------------------------------------------------------------------------


def chat_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    env = {
        "id": f"chatcmpl-conformance{turn.index}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_conformance",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**env, "choices": [choice], "usage": None})

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
    tail = [chunk({}, finish), sse({**env, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]
    return head, tail


def chat_json(turn: Turn, model: str) -> dict[str, Any]:
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
        "created": CREATED,
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
        "created_at": CREATED,
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


def responses_stream(turn: Turn, model: str) -> tuple[list[bytes], list[bytes]]:
    seq = iter(range(1_000_000))

    def ev(kind: str, **body: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **body}, kind)

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
            added: dict[str, Any] = {**item, "status": "in_progress", "content": []}
            head.append(ev("response.output_item.added", output_index=out, item=added))
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
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


def responses_json(turn: Turn, model: str) -> dict[str, Any]:
    status = "incomplete" if turn.finish == "length" and not turn.tool_calls else "completed"
    return _responses_object(turn, model, status, _responses_items(turn))
