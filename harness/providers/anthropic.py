"""Anthropic Messages API, streamed: text, thinking with signatures, redacted thinking, tool use.

Knobs in ``Options.provider["anthropic"]`` are merged into the request last, e.g.
``{"thinking": {"type": "enabled", "budget_tokens": 4096}}`` turns thinking on.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .._errors import ModelError, UnsupportedOptionError
from .._kinds import ErrorKind, FinishReason, Role
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
from ._cache import EPHEMERAL_META, anthropic_breakpoints
from ._common import FALLBACK, continued_text, count, obj, parse_input, stream_record
from ._http import Endpoint, HttpModel, classify_error_body, truncated
from ._sse import SseEvent

if TYPE_CHECKING:
    import httpx2  # imported when a request is made (harness.providers._http)

__all__ = ["Messages"]

log = logging.getLogger(__name__)

_VERSION = "2023-06-01"
_STOP = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "pause_turn": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.REFUSAL,
}


def anthropic_usage(raw: Mapping[str, Any]) -> UsageChunk:
    """Anthropic's ``input_tokens`` excludes the cache; fields absent stay unknown (None)."""
    return UsageChunk(
        count(raw.get("input_tokens")),
        count(raw.get("output_tokens")),
        count(raw.get("cache_read_input_tokens")),
        count(raw.get("cache_creation_input_tokens")),
    )


def _is_stop(event: SseEvent) -> bool:
    return event.event == "message_stop"


class _Block:
    __slots__ = ("args", "id", "input", "kind", "signature")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.id = ""
        self.args: list[str] = []
        self.input: dict[str, Any] | None = None
        self.signature: str | None = None


class Messages(HttpModel):
    """``POST {base_url}/v1/messages``; ``base_url`` has no ``/v1`` (``https://api.anthropic.com``)."""

    provider_key = "anthropic"
    models_path = "/v1/models"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        max_tokens: int = 8192,
        connect_timeout: float = 10.0,
        idle_timeout: float = 300.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        url_hint: str = "the base URL",
    ) -> None:
        super().__init__(
            base_url,
            model,
            api_key,
            connect_timeout=connect_timeout,
            idle_timeout=idle_timeout,
            headers=headers,
            transport=transport,
            url_hint=url_hint,
        )
        self.max_tokens = max_tokens

    def _auth(self) -> dict[str, str]:
        h = {"anthropic-version": _VERSION, **self._headers}
        if self._ep.api_key:
            h["x-api-key"] = self._ep.api_key
        return h

    def build_request(self, prompt: Prompt) -> dict[str, Any]:
        knobs = prompt.provider_options(self.provider_key)
        thinking = knobs.get("thinking")
        thinking_on = bool(obj(thinking)) and obj(thinking).get("type", "enabled") != "disabled"
        history = list(prompt.messages)
        tail: dict[str, Any] | None = None
        if prompt.continue_:
            if thinking_on:
                raise UnsupportedOptionError(
                    f"Anthropic cannot continue an assistant message with thinking on (prefill excludes thinking); "
                    f"turn thinking off for the resume or {FALLBACK}"
                )
            text = continued_text(prompt, "Anthropic Messages", FALLBACK).rstrip()
            history.pop()
            if text:  # the API rejects a prefill ending in whitespace; an empty one is no prefill at all
                tail = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        built = [(_message(m), bool(m.meta.get(EPHEMERAL_META))) for m in history]
        built = [(m, e) for m, e in built if m["content"]]
        messages = [m for m, _ in built]
        ephemeral = [e for _, e in built]
        if tail is not None:
            messages.append(tail)
            ephemeral.append(True)  # the prefill is this request's alone
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": prompt.options.max_output_tokens or self.max_tokens,
        }
        if prompt.system:
            body["system"] = prompt.system
        body["messages"] = messages
        if prompt.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.schema)}
                for t in prompt.tools
            ]
        if prompt.options.temperature is not None and not thinking_on:
            body["temperature"] = prompt.options.temperature  # thinking requires the default temperature
        body["stream"] = True
        if prompt.options.cache_ttl is not None:
            anthropic_breakpoints(body, ephemeral, prompt.options.cache_ttl)
        body.update(knobs)
        return body

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        body = self.build_request(prompt)
        return self._stream(body, prompt.cancel)

    async def _stream(self, body: dict[str, Any], cancel: CancelSignal) -> AsyncIterator[Delta]:
        ep = self._ep
        reply = _MessagesReply(ep)
        finish: FinishReason | None = None
        # Closed here, not by the garbage collector: closing reads the body's end, so the connection goes back
        # to the pool at once (a generator left to the finalizer is a ResourceWarning on trio).
        async with aclosing(ep.sse("/v1/messages", self._auth(), body, _is_stop, cancel)) as batches:
            async for batch in batches:
                for event in batch:
                    ev = stream_record(event.data, ep.shown_url)
                    kind = ev.get("type") or event.event
                    if kind == "message_stop":
                        finish = reply.message_stop()
                        break
                    d = reply.on_event(kind, ev)
                    if d is not None:
                        yield d
                if finish is not None:
                    break
        if finish is None:
            raise truncated(ep, "message_stop")
        # A tool_use block cut by max_tokens (no content_block_stop) gets no ToolReady: its input is incomplete.
        yield Finish(finish)


class _MessagesReply:
    """What a Messages stream has said so far, and the delta each of its events makes (one at most)."""

    __slots__ = ("blocks", "ep", "stop_reason")

    def __init__(self, ep: Endpoint) -> None:
        self.ep = ep
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None

    def on_event(self, kind: object, ev: dict[str, Any]) -> Delta | None:
        """The delta an event (other than ``message_stop``) makes, if any."""
        match kind:
            case "content_block_delta":
                return self.block_delta(ev)
            case "content_block_start":
                return self.block_start(ev)
            case "content_block_stop":
                return self.block_stop(ev)
            case "message_start":
                return self.message_start(ev)
            case "message_delta":
                return self.message_delta(ev)
            case "error":
                raise classify_error_body(ev, self.ep)
            case _:  # ping and unknown events
                return None

    def block_delta(self, ev: dict[str, Any]) -> Delta | None:
        delta = obj(ev.get("delta"))
        match delta.get("type"):
            case "text_delta":
                text = delta.get("text")
                return TextChunk(text) if text else None
            case "input_json_delta":
                block = self.blocks.get(ev.get("index", -1))
                frag = delta.get("partial_json")
                if block is not None and block.kind == "tool_use" and frag:
                    block.args.append(frag)
                    return ToolInput(block.id, frag)
            case "thinking_delta":
                thinking = delta.get("thinking")
                return ReasoningChunk(thinking) if thinking else None
            case "signature_delta":
                block = self.blocks.get(ev.get("index", -1))
                if block is not None:
                    block.signature = str(delta.get("signature") or "")  # replaced, not appended
            case _:  # citations_delta and unknown deltas: nothing the harness keeps
                pass
        return None

    def block_start(self, ev: dict[str, Any]) -> Delta | None:
        cb = obj(ev.get("content_block"))
        btype = str(cb.get("type"))
        block = self.blocks[ev.get("index", len(self.blocks))] = _Block(btype)
        match btype:
            case "text":
                return TextChunk(cb["text"]) if cb.get("text") else None
            case "thinking":
                if cb.get("signature"):
                    block.signature = cb["signature"]
                return ReasoningChunk(cb["thinking"]) if cb.get("thinking") else None
            case "redacted_thinking":
                return ReasoningChunk(redacted=str(cb.get("data") or ""))
            case "tool_use":
                block.id = str(cb.get("id"))
                block.input = obj(cb.get("input")) or None
                return ToolStart(block.id, str(cb.get("name")))
            case _:
                log.debug("Anthropic block type %r ignored", btype)
                return None

    def block_stop(self, ev: dict[str, Any]) -> Delta | None:
        block = self.blocks.get(ev.get("index", -1))
        if block is None:
            return None
        if block.kind == "thinking" and block.signature is not None:
            return ReasoningChunk(signature=block.signature)
        if block.kind == "tool_use":
            block.kind = "tool_use_done"
            raw = "".join(block.args)
            return ToolReady(block.id, parse_input(raw) if raw else (block.input or {}))
        return None

    def message_start(self, ev: dict[str, Any]) -> Delta | None:
        usage = obj(obj(ev.get("message")).get("usage"))
        if not usage:
            return None
        u = anthropic_usage(usage)
        return UsageChunk(u.input, None, u.cache_read or 0, u.cache_write or 0)

    def message_delta(self, ev: dict[str, Any]) -> Delta | None:
        stop = obj(ev.get("delta")).get("stop_reason")
        if stop:
            self.stop_reason = stop
        usage = obj(ev.get("usage"))
        return anthropic_usage(usage) if usage else None

    def message_stop(self) -> FinishReason:
        stop_reason, base_url = self.stop_reason, self.ep.shown_url
        if stop_reason == "model_context_window_exceeded":
            raise ModelError(
                f"model endpoint {base_url}: the reply stopped at the model's context window "
                "(model_context_window_exceeded); compact or shorten the conversation",
                ErrorKind.CONTEXT_TOO_LONG,
            )
        finish = _STOP.get(stop_reason or "end_turn")
        if finish is None:
            log.warning("unknown stop_reason %r from %s, taken as stop", stop_reason, base_url)
            finish = FinishReason.STOP
        if stop_reason == "pause_turn":
            log.info("Anthropic paused the turn (pause_turn); taken as stop")
        return finish


def _image_block(img: Image) -> dict[str, Any]:
    if img.url is not None:
        return {"type": "image", "source": {"type": "url", "url": img.url}}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": img.media_type, "data": img.data or ""},
    }


def _message(m: Message) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if m.role is Role.ASSISTANT:
        for p in m.parts:
            if isinstance(p, Reasoning):
                if p.redacted is not None:
                    content.append({"type": "redacted_thinking", "data": p.redacted})
                elif p.signature is not None:
                    content.append({"type": "thinking", "thinking": p.text, "signature": p.signature})
                # reasoning without a signature (another provider's) cannot be sent back
            elif isinstance(p, Text):
                if p.text:
                    content.append({"type": "text", "text": p.text})
            elif isinstance(p, ToolCall):
                content.append({"type": "tool_use", "id": p.id, "name": p.name, "input": p.input})
        return {"role": "assistant", "content": content}
    rest: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, ToolResult):
            inner: list[dict[str, Any]] = [
                {"type": "text", "text": c.text} if isinstance(c, Text) else _image_block(c)
                for c in p.content
            ]
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": p.call_id, "content": inner}
            if p.error:
                block["is_error"] = True
            content.append(block)
        elif isinstance(p, Text):
            rest.append({"type": "text", "text": p.text})
        elif isinstance(p, Image):
            rest.append(_image_block(p))
    # tool_result blocks first, text after them (the API requires it)
    return {"role": "user", "content": content + rest}
