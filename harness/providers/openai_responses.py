"""OpenAI's Responses API, streamed and stateless (``store: false``): the conversation is replayed each call,
reasoning items with their encrypted content (kept in ``Reasoning.signature``). Knobs in
``Options.provider["openai"]`` are merged into the request last."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any
from urllib.parse import urlsplit

from .._errors import UnsupportedOptionError
from .._kinds import FinishReason, Role
from .._messages import Image, Message, Reasoning, Text, ToolCall, ToolResult
from ..model import (
    CancelSignal,
    Delta,
    Finish,
    Prompt,
    ReasoningChunk,
    TextChunk,
    ToolInput,
    ToolReady,
    ToolStart,
    UsageChunk,
)
from ._common import FALLBACK, count, image_url, obj, parse_input, stream_record
from ._http import Endpoint, HttpModel, classify_error_body, truncated
from ._sse import SseEvent

__all__ = ["Responses", "responses_usage"]

log = logging.getLogger("harness.providers.openai")


def _is_openai(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


def responses_usage(raw: Mapping[str, Any]) -> UsageChunk:
    prompt = count(raw.get("input_tokens"))
    details = obj(raw.get("input_tokens_details"))
    cache_read = count(details.get("cached_tokens")) or 0
    cache_write = count(details.get("cache_write_tokens")) or 0
    inp = None if prompt is None else max(0, prompt - cache_read - cache_write)
    reasoning = count(obj(raw.get("output_tokens_details")).get("reasoning_tokens")) or None
    return UsageChunk(inp, count(raw.get("output_tokens")), cache_read, cache_write, reasoning)


_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _is_final(event: SseEvent) -> bool:
    return event.event in _FINAL_EVENTS or event.data == "[DONE]"


class Responses(HttpModel):
    """``POST {base_url}/responses``, streamed and stateless (``store: false``): the conversation is
    replayed, reasoning items with their encrypted content (kept in ``Reasoning.signature``)."""

    provider_key = "openai"

    def build_request(self, prompt: Prompt) -> dict[str, Any]:
        if prompt.continue_:
            raise UnsupportedOptionError(
                f"the Responses API has no continuation of an assistant message; {FALLBACK}"
            )
        items: list[dict[str, Any]] = []
        for m in prompt.messages:
            items.extend(_assistant_items(m) if m.role is Role.ASSISTANT else _user_items(m))
        body: dict[str, Any] = {"model": self.model}
        if prompt.system:
            body["instructions"] = prompt.system
        body["input"] = items
        if prompt.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.schema),
                }
                for t in prompt.tools
            ]
        body["store"] = False
        body["include"] = ["reasoning.encrypted_content"]
        body["stream"] = True
        if prompt.options.max_output_tokens is not None:
            body["max_output_tokens"] = prompt.options.max_output_tokens
        if prompt.options.temperature is not None:
            body["temperature"] = prompt.options.temperature
        opts = prompt.options
        if _is_openai(self._ep.base_url) and opts.cache_key is not None and opts.cache_ttl is not None:
            body["prompt_cache_key"] = opts.cache_key  # OpenAI's own: one key, one cache machine
        body.update(prompt.provider_options(self.provider_key))
        return body

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        body = self.build_request(prompt)
        return self._stream(body, prompt.cancel)

    async def _stream(self, body: dict[str, Any], cancel: CancelSignal) -> AsyncIterator[Delta]:
        ep = self._ep
        reply = _ResponsesReply(ep)
        # Closed here, not by the garbage collector: closing reads the body's end, so the connection goes back
        # to the pool at once (a generator left to the finalizer is a ResourceWarning on trio).
        async with aclosing(ep.sse("/responses", self._auth(), body, _is_final, cancel)) as batches:
            async for batch in batches:
                for event in batch:
                    if event.data == "[DONE]":
                        continue
                    for d in reply.on_event(stream_record(event.data, ep.shown_url)):
                        yield d
                    if reply.done:
                        return
        raise truncated(ep, "response.completed")


class _ResponsesReply:
    """What a Responses stream has said so far, and the deltas each of its events makes."""

    __slots__ = ("done", "ep", "item_call", "readied", "refused")

    def __init__(self, ep: Endpoint) -> None:
        self.ep = ep
        self.item_call: dict[str, str] = {}  # item id -> call id
        self.readied: set[str] = set()
        self.refused = False
        self.done = False

    def on_event(self, ev: dict[str, Any]) -> Sequence[Delta]:
        kind = ev.get("type")
        delta = ev.get("delta")
        match kind:
            case "response.output_text.delta":
                return [TextChunk(delta)] if delta else ()
            case "response.refusal.delta":
                self.refused = self.refused or bool(delta)
                return [TextChunk(delta)] if delta else ()
            case "response.reasoning_summary_text.delta" | "response.reasoning_text.delta":
                return [ReasoningChunk(delta)] if delta else ()
            case "response.reasoning_summary_part.added":
                return [ReasoningChunk("\n\n")] if ev.get("summary_index", 0) else ()
            case "response.function_call_arguments.delta":
                call_id = self.item_call.get(str(ev.get("item_id")))
                return [ToolInput(call_id, delta)] if call_id is not None and delta else ()
            case "response.output_item.added":
                return self._item_added(obj(ev.get("item")))
            case "response.output_item.done":
                return self._item_done(obj(ev.get("item")))
            case "response.completed" | "response.incomplete" | "response.failed":
                return self._completed(kind, obj(ev.get("response")))
            case "error":
                raise classify_error_body(ev.get("error") or ev, self.ep)
            case _:
                return ()

    def _item_added(self, item: dict[str, Any]) -> Sequence[Delta]:
        if item.get("type") != "function_call":
            return ()
        call_id = str(item.get("call_id") or item.get("id"))
        self.item_call[str(item.get("id"))] = call_id
        out: list[Delta] = [ToolStart(call_id, str(item.get("name") or ""))]
        if item.get("arguments"):
            out.append(ToolInput(call_id, item["arguments"]))
        return out

    def _item_done(self, item: dict[str, Any]) -> Sequence[Delta]:
        itype = item.get("type")
        if itype == "function_call":
            return self._call_done(item)
        if itype == "reasoning" and (item.get("encrypted_content") or item.get("id")):
            signature = {"id": item.get("id"), "encrypted_content": item.get("encrypted_content")}
            return [ReasoningChunk(signature=json.dumps(signature, separators=(",", ":")))]
        return ()

    def _call_done(self, item: dict[str, Any]) -> Sequence[Delta]:
        out: list[Delta] = []
        item_id = str(item.get("id"))
        call_id = self.item_call.get(item_id)
        if call_id is None:  # minimal streams send only the done item
            call_id = self.item_call[item_id] = str(item.get("call_id") or item_id)
            out.append(ToolStart(call_id, str(item.get("name") or "")))
        elif item.get("call_id") and item.get("call_id") != call_id:
            log.warning(
                "Responses: call id changed from %s to %s; keeping the first", call_id, item.get("call_id")
            )
        self.readied.add(call_id)
        out.append(ToolReady(call_id, parse_input(str(item.get("arguments") or ""))))
        return out

    def _completed(self, kind: str, resp: dict[str, Any]) -> Sequence[Delta]:
        if kind == "response.failed":
            raise classify_error_body(resp.get("error") or {"message": "the response failed"}, self.ep)
        out: list[Delta] = []
        if kind == "response.completed":
            out.extend(ToolReady(c) for c in self.item_call.values() if c not in self.readied)
        raw_usage = obj(resp.get("usage"))
        if raw_usage:
            out.append(responses_usage(raw_usage))
        if kind == "response.incomplete":
            reason = obj(resp.get("incomplete_details")).get("reason")
            finish = FinishReason.CONTENT_FILTER if reason == "content_filter" else FinishReason.LENGTH
        elif self.item_call:
            finish = FinishReason.TOOL_CALLS
        elif self.refused:
            finish = FinishReason.REFUSAL
        else:
            finish = FinishReason.STOP
        out.append(Finish(finish))
        self.done = True
        return out


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    """An assistant message as Responses input items: text runs, reasoning items, function calls."""
    out: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            out.append({"role": "assistant", "content": "".join(text)})
            text.clear()

    for p in m.parts:
        if isinstance(p, Text):
            text.append(p.text)
        elif isinstance(p, Reasoning):
            item = _reasoning_item(p)
            if item is not None:
                flush()
                out.append(item)
        elif isinstance(p, ToolCall):
            flush()
            arguments = json.dumps(p.input, ensure_ascii=False)
            out.append({"type": "function_call", "call_id": p.id, "name": p.name, "arguments": arguments})
    flush()
    return out


def _user_items(m: Message) -> list[dict[str, Any]]:
    """A user message as Responses input items: the call outputs, then one message of text and images."""
    out: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, ToolResult):
            out.append({"type": "function_call_output", "call_id": p.call_id, "output": _call_output(p)})
        elif isinstance(p, Text):
            content.append({"type": "input_text", "text": p.text})
        elif isinstance(p, Image):
            content.append({"type": "input_image", "image_url": image_url(p)})
    if content:
        out.append({"role": "user", "content": content})
    return out


def _call_output(p: ToolResult) -> str | list[dict[str, Any]]:
    if not any(isinstance(c, Image) for c in p.content):
        return f"Error: {p.text}" if p.error else p.text
    output: list[dict[str, Any]] = [
        {"type": "input_text", "text": c.text}
        if isinstance(c, Text)
        else {"type": "input_image", "image_url": image_url(c)}
        for c in p.content
    ]
    if p.error:
        output.insert(0, {"type": "input_text", "text": "Error:"})
    return output


def _reasoning_item(p: Reasoning) -> dict[str, Any] | None:
    """A reasoning item to replay; only reasoning that came from the Responses API (it has an id)."""
    if not p.signature:
        return None
    try:
        sig = obj(json.loads(p.signature))
    except ValueError:
        return None
    if not sig.get("id"):
        return None
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": sig["id"],
        "summary": [{"type": "summary_text", "text": p.text}] if p.text else [],
    }
    if sig.get("encrypted_content"):
        item["encrypted_content"] = sig["encrypted_content"]
    return item
