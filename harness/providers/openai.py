"""OpenAI wire APIs: ``ChatCompletions`` (llama.cpp, vLLM, Ollama /v1, TabbyAPI, OpenAI, OpenRouter,
DeepSeek) and ``Responses``. Knobs in ``Options.provider["openai"]`` are merged into the request last."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx2

from .._errors import ModelError, UnsupportedOptionError
from .._kinds import ErrorKind, FinishReason, Role
from .._messages import Image, Message, Reasoning, Text, ToolCall, ToolResult
from ..model import (
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
from ._common import ThinkSplitter, continued_text, image_url, obj, parse_input
from ._http import HttpModel, classify_error_body, truncated

__all__ = ["ChatCompletions", "Continuation", "Responses"]

log = logging.getLogger(__name__)

Continuation = Literal["auto", "flags", "prefill", "unsupported"]

_FALLBACK = "fall back to appending the edit as a finished assistant message and asking for the next one"
_NO_CONTINUE_HOSTS = ("api.openai.com", "openrouter.ai", "api.deepseek.com", "api.groq.com", "api.x.ai")

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "refusal": FinishReason.REFUSAL,
}


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def chat_usage(raw: Mapping[str, Any]) -> UsageChunk:
    """Chat Completions usage, normalised: ``prompt_tokens`` includes cached tokens, so they are subtracted."""
    prompt = _int(raw.get("prompt_tokens"))
    output = _int(raw.get("completion_tokens"))
    details = obj(raw.get("prompt_tokens_details"))
    cache_read = _int(details.get("cached_tokens"))
    if cache_read is None:
        cache_read = _int(raw.get("prompt_cache_hit_tokens"))  # DeepSeek
    cache_write = _int(details.get("cache_write_tokens")) or 0
    cache_read = cache_read or 0
    out_details = obj(raw.get("completion_tokens_details"))
    reasoning = _int(out_details.get("reasoning_tokens")) or 0
    total = _int(raw.get("total_tokens"))
    if output is not None and prompt is not None and reasoning and total == prompt + output + reasoning:
        output += reasoning  # xAI counts reasoning outside completion_tokens
    inp = None if prompt is None else max(0, prompt - cache_read - cache_write)
    return UsageChunk(inp, output, cache_read, cache_write)


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


class _Call:
    __slots__ = ("args", "id", "name", "started")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.args: list[str] = []
        self.started = False


class ChatCompletions(HttpModel):
    """``POST {base_url}/chat/completions``, streamed. ``base_url`` includes ``/v1``.

    ``continuation`` says how a Resume (``prompt.continue_``) is sent: ``flags`` sends the edit last with
    ``continue_final_message: true, add_generation_prompt: false`` (vLLM, TabbyAPI; llama.cpp ignores them
    and prefills), ``prefill`` sends it last without flags (llama.cpp), ``unsupported`` raises. ``auto``
    is ``unsupported`` for hosted APIs and Ollama (port 11434) and ``flags`` elsewhere. ``send_reasoning`` sends reasoning back
    as ``reasoning_content`` (templates that want it: GLM, Kimi, DeepSeek thinking tool loops).
    """

    provider_key = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        connect_timeout: float = 10.0,
        idle_timeout: float = 300.0,
        continuation: Continuation = "auto",
        send_reasoning: bool = False,
        think_tags: bool = True,
        headers: Mapping[str, str] | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        url_env: str = "ACP_AGENT_BASE_URL",
    ) -> None:
        super().__init__(
            base_url,
            model,
            api_key,
            connect_timeout=connect_timeout,
            idle_timeout=idle_timeout,
            headers=headers,
            transport=transport,
            url_env=url_env,
        )
        host = _host(base_url)
        if continuation == "auto":
            # Hosted APIs have no continuation; Ollama's depends on the model template (not deterministic).
            hosted = host.endswith(_NO_CONTINUE_HOSTS) or urlsplit(base_url).port == 11434
            continuation = "unsupported" if hosted else "flags"
        self.continuation: Continuation = continuation
        self.send_reasoning = send_reasoning
        self.think_tags = think_tags
        self._openai = host == "api.openai.com"

    # -- request --------------------------------------------------------------------------------

    def build_request(self, prompt: Prompt) -> dict[str, Any]:
        """The JSON body for ``prompt`` (public so hosts and tests can inspect it)."""
        messages: list[dict[str, Any]] = []
        if prompt.system:
            messages.append({"role": "system", "content": prompt.system})
        history = list(prompt.messages)
        tail: dict[str, Any] | None = None
        body: dict[str, Any] = {"model": self.model}
        if prompt.continue_:
            if self.continuation == "unsupported":
                raise UnsupportedOptionError(
                    f"Chat Completions at {self._ep.base_url} cannot continue an assistant message; {_FALLBACK}"
                )
            text = continued_text(prompt, "Chat Completions", _FALLBACK)
            history.pop()
            tail = {"role": "assistant", "content": text}
            if self.continuation == "flags":
                body["continue_final_message"] = True
                body["add_generation_prompt"] = False
        for m in history:
            messages.extend(self._message(m))
        if tail is not None:
            messages.append(tail)
        body["messages"] = messages
        if prompt.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": dict(t.schema)},
                }
                for t in prompt.tools
            ]
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        opts = prompt.options
        if opts.max_output_tokens is not None:
            body["max_completion_tokens" if self._openai else "max_tokens"] = opts.max_output_tokens
        if opts.temperature is not None:
            body["temperature"] = opts.temperature
        body.update(prompt.provider_options(self.provider_key))
        return body

    def _message(self, m: Message) -> list[dict[str, Any]]:
        if m.role is Role.ASSISTANT:
            text = "".join(p.text for p in m.parts if isinstance(p, Text))
            calls = [p for p in m.parts if isinstance(p, ToolCall)]
            msg: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.input, ensure_ascii=False)},
                    }
                    for c in calls
                ]
            if self.send_reasoning:
                reasoning = "".join(p.text for p in m.parts if isinstance(p, Reasoning))
                if reasoning:
                    msg["reasoning_content"] = reasoning
            return [msg]
        out: list[dict[str, Any]] = []
        images_from_tools: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, ToolResult):
                text = p.text
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": p.call_id,
                        "content": f"Error: {text}" if p.error else text,
                    }
                )
                for img in p.content:
                    if isinstance(img, Image):
                        images_from_tools.append({"type": "image_url", "image_url": {"url": image_url(img)}})
        if images_from_tools:
            # Tool messages take text only: the images follow as a user message.
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Images from the tool results above:"},
                        *images_from_tools,
                    ],
                }
            )
        parts = [p for p in m.parts if isinstance(p, Text | Image)]
        if parts:
            if all(isinstance(p, Text) for p in parts):
                out.append({"role": "user", "content": "".join(p.text for p in parts if isinstance(p, Text))})
            else:
                content: list[dict[str, Any]] = []
                for p in parts:
                    if isinstance(p, Text):
                        content.append({"type": "text", "text": p.text})
                    else:
                        content.append({"type": "image_url", "image_url": {"url": image_url(p)}})
                out.append({"role": "user", "content": content})
        return out

    # -- stream ---------------------------------------------------------------------------------

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        body = self.build_request(prompt)  # misuse raises here, before any I/O
        return self._stream(body)

    async def _stream(self, body: dict[str, Any]) -> AsyncIterator[Delta]:
        ep = self._ep
        calls: dict[int, _Call] = {}
        by_id: dict[str, int] = {}
        finish: FinishReason | None = None
        refused = False
        usage: UsageChunk | None = None
        splitter = ThinkSplitter() if self.think_tags else None
        done = False
        loads = json.loads
        async for event in ep.sse("/chat/completions", self._auth(), body):
            data = event.data
            if data == "[DONE]":
                done = True
                break
            try:
                chunk = obj(loads(data))
            except ValueError:
                raise ModelError(
                    f"model endpoint {ep.base_url} sent a stream record that is not JSON; the server or a proxy garbled the stream",
                    ErrorKind.TRANSPORT_ERROR,
                ) from None
            if chunk.get("error") or chunk.get("object") == "error":
                raise classify_error_body(chunk, ep)
            raw_usage = obj(chunk.get("usage"))
            if raw_usage:
                usage = chat_usage(raw_usage)
            choices: Any = chunk.get("choices")
            if not choices or not isinstance(choices, list):
                continue
            choice = obj(choices[0])  # pyright: ignore[reportUnknownArgumentType]
            delta = obj(choice.get("delta"))
            if finish is None and delta:
                reasoning: Any = delta.get("reasoning_content") or delta.get("reasoning")
                r = obj(reasoning)
                if r:
                    reasoning = r.get("text") or r.get("content")
                if isinstance(reasoning, str) and reasoning:
                    yield ReasoningChunk(reasoning)
                content = delta.get("content")
                if isinstance(content, str) and content:
                    if splitter is not None:
                        for piece in splitter.feed(content):
                            yield piece
                    else:
                        yield TextChunk(content)
                refusal = delta.get("refusal")
                if isinstance(refusal, str) and refusal:
                    refused = True
                    yield TextChunk(refusal)
                tool_calls: Any = delta.get("tool_calls") or ()
                for tc in tool_calls:
                    for d in self._tool_delta(obj(tc), calls, by_id):
                        yield d
            reason = choice.get("finish_reason")
            if reason and finish is None:
                if reason in ("error", "abort"):
                    raise ModelError(
                        f"model endpoint {ep.base_url} aborted the reply (finish_reason {reason!r}); try again",
                        ErrorKind.TRANSPORT_ERROR,
                    )
                finish = _FINISH.get(reason)
                if finish is None:
                    log.warning("unknown finish_reason %r from %s, taken as stop", reason, ep.base_url)
                    finish = FinishReason.STOP
        if finish is None:
            raise truncated(ep, "a finish_reason" if done else "its final record")
        if splitter is not None:
            for piece in splitter.flush():
                yield piece
        for call in calls.values():
            if not call.started:
                continue
            parsed = parse_input("".join(call.args))
            if parsed is None and finish is FinishReason.LENGTH:
                continue  # cut off by the token limit: no ToolReady, the input is incomplete
            yield ToolReady(call.id, parsed)
        if calls and finish is FinishReason.STOP:
            finish = FinishReason.TOOL_CALLS  # some servers say stop after calls
        if refused and finish is FinishReason.STOP:
            finish = FinishReason.REFUSAL
        if usage is not None:
            yield usage
        yield Finish(finish)

    @staticmethod
    def _tool_delta(tc: dict[str, Any], calls: dict[int, _Call], by_id: dict[str, int]) -> list[Delta]:
        if not tc:
            return []
        out: list[Delta] = []
        fn = obj(tc.get("function"))
        tid: Any = tc.get("id")
        index: Any = tc.get("index")
        if not isinstance(index, int):
            # No index (some gateways): the id names the call, else it continues the last one.
            if isinstance(tid, str) and tid in by_id:
                index = by_id[tid]
            elif isinstance(tid, str) and tid:
                index = len(calls)
            else:
                index = max(calls) if calls else 0
        call = calls.get(index)
        if call is None:
            call = calls[index] = _Call()
        if not call.id and isinstance(tid, str) and tid:
            call.id = tid
            by_id[tid] = index
        name = fn.get("name")
        if not call.name and isinstance(name, str) and name:
            call.name = name
        if not call.started and call.name:
            if not call.id:
                call.id = f"call_{index}"
            call.started = True
            out.append(ToolStart(call.id, call.name))
            if call.args:
                out.append(ToolInput(call.id, "".join(call.args)))
        args = fn.get("arguments")
        if isinstance(args, str) and args:
            call.args.append(args)
            if call.started:
                out.append(ToolInput(call.id, args))
        elif isinstance(args, dict):  # a few servers send the object itself
            text = json.dumps(args, ensure_ascii=False)
            call.args.append(text)
            if call.started:
                out.append(ToolInput(call.id, text))
        return out


# -- Responses ------------------------------------------------------------------------------------


def responses_usage(raw: Mapping[str, Any]) -> UsageChunk:
    prompt = _int(raw.get("input_tokens"))
    details = obj(raw.get("input_tokens_details"))
    cache_read = _int(details.get("cached_tokens")) or 0
    cache_write = _int(details.get("cache_write_tokens")) or 0
    inp = None if prompt is None else max(0, prompt - cache_read - cache_write)
    return UsageChunk(inp, _int(raw.get("output_tokens")), cache_read, cache_write)


class Responses(HttpModel):
    """``POST {base_url}/responses``, streamed and stateless (``store: false``): the conversation is
    replayed, reasoning items with their encrypted content (kept in ``Reasoning.signature``)."""

    provider_key = "openai"

    def build_request(self, prompt: Prompt) -> dict[str, Any]:
        if prompt.continue_:
            raise UnsupportedOptionError(
                f"the Responses API has no continuation of an assistant message; {_FALLBACK}"
            )
        items: list[dict[str, Any]] = []
        for m in prompt.messages:
            items.extend(_responses_items(m))
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
        body.update(prompt.provider_options(self.provider_key))
        return body

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        body = self.build_request(prompt)
        return self._stream(body)

    async def _stream(self, body: dict[str, Any]) -> AsyncIterator[Delta]:
        ep = self._ep
        item_call: dict[str, str] = {}  # item id -> call id
        readied: set[str] = set()
        refused = False
        loads = json.loads
        async for event in ep.sse("/responses", self._auth(), body):
            if event.data == "[DONE]":
                continue
            try:
                ev = obj(loads(event.data))
            except ValueError:
                raise ModelError(
                    f"model endpoint {ep.base_url} sent a stream record that is not JSON; the server or a proxy garbled the stream",
                    ErrorKind.TRANSPORT_ERROR,
                ) from None
            kind = ev.get("type")
            if kind == "response.output_text.delta":
                if ev.get("delta"):
                    yield TextChunk(ev["delta"])
            elif kind == "response.refusal.delta":
                if ev.get("delta"):
                    refused = True
                    yield TextChunk(ev["delta"])
            elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                if ev.get("delta"):
                    yield ReasoningChunk(ev["delta"])
            elif kind == "response.reasoning_summary_part.added":
                if ev.get("summary_index", 0):
                    yield ReasoningChunk("\n\n")
            elif kind == "response.function_call_arguments.delta":
                call_id = item_call.get(str(ev.get("item_id")))
                if call_id is not None and ev.get("delta"):
                    yield ToolInput(call_id, ev["delta"])
            elif kind == "response.output_item.added":
                item = obj(ev.get("item"))
                if item.get("type") == "function_call":
                    call_id = str(item.get("call_id") or item.get("id"))
                    item_call[str(item.get("id"))] = call_id
                    yield ToolStart(call_id, str(item.get("name") or ""))
                    if item.get("arguments"):
                        yield ToolInput(call_id, item["arguments"])
            elif kind == "response.output_item.done":
                item = obj(ev.get("item"))
                itype = item.get("type")
                if itype == "function_call":
                    item_id = str(item.get("id"))
                    call_id = item_call.get(item_id)
                    if call_id is None:  # minimal streams send only the done item
                        call_id = str(item.get("call_id") or item_id)
                        item_call[item_id] = call_id
                        yield ToolStart(call_id, str(item.get("name") or ""))
                    elif item.get("call_id") and item.get("call_id") != call_id:
                        log.warning(
                            "Responses: call id changed from %s to %s; keeping the first",
                            call_id,
                            item.get("call_id"),
                        )
                    readied.add(call_id)
                    yield ToolReady(call_id, parse_input(str(item.get("arguments") or "")))
                elif itype == "reasoning":
                    enc = item.get("encrypted_content")
                    if enc or item.get("id"):
                        yield ReasoningChunk(
                            signature=json.dumps(
                                {"id": item.get("id"), "encrypted_content": enc}, separators=(",", ":")
                            )
                        )
            elif kind == "error":
                raise classify_error_body(ev.get("error") or ev, ep)
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                resp = obj(ev.get("response"))
                if kind == "response.failed":
                    raise classify_error_body(resp.get("error") or {"message": "the response failed"}, ep)
                for call_id in item_call.values():
                    if call_id not in readied and kind == "response.completed":
                        yield ToolReady(call_id)
                raw_usage = obj(resp.get("usage"))
                if raw_usage:
                    yield responses_usage(raw_usage)
                if kind == "response.incomplete":
                    reason = obj(resp.get("incomplete_details")).get("reason")
                    finish = (
                        FinishReason.CONTENT_FILTER if reason == "content_filter" else FinishReason.LENGTH
                    )
                elif item_call:
                    finish = FinishReason.TOOL_CALLS
                elif refused:
                    finish = FinishReason.REFUSAL
                else:
                    finish = FinishReason.STOP
                yield Finish(finish)
                return
        raise truncated(ep, "response.completed")


def _responses_items(m: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if m.role is Role.ASSISTANT:
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
                out.append(
                    {
                        "type": "function_call",
                        "call_id": p.id,
                        "name": p.name,
                        "arguments": json.dumps(p.input, ensure_ascii=False),
                    }
                )
        flush()
        return out
    content: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, ToolResult):
            output: str | list[dict[str, Any]]
            if any(isinstance(c, Image) for c in p.content):
                output = [
                    {"type": "input_text", "text": c.text}
                    if isinstance(c, Text)
                    else {"type": "input_image", "image_url": image_url(c)}
                    for c in p.content
                ]
                if p.error:
                    output.insert(0, {"type": "input_text", "text": "Error:"})
            else:
                output = f"Error: {p.text}" if p.error else p.text
            out.append({"type": "function_call_output", "call_id": p.call_id, "output": output})
        elif isinstance(p, Text):
            content.append({"type": "input_text", "text": p.text})
        elif isinstance(p, Image):
            content.append({"type": "input_image", "image_url": image_url(p)})
    if content:
        out.append({"role": "user", "content": content})
    return out


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
