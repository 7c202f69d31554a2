"""OpenAI wire APIs: ``ChatCompletions`` (llama.cpp, vLLM, Ollama /v1, TabbyAPI, OpenAI, OpenRouter,
DeepSeek) here, and ``Responses`` (``openai_responses``). Knobs in ``Options.provider["openai"]`` are merged
into the request last."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlsplit

from pydantic_core import from_json

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
from ._common import (
    FALLBACK,
    ThinkSplitter,
    continued_text,
    count,
    image_url,
    obj,
    parse_input,
    stream_record,
)
from ._http import Endpoint, HttpModel, classify_error_body, truncated
from ._sse import SseEvent
from .openai_responses import Responses

if TYPE_CHECKING:
    import httpx2  # imported when a request is made (harness.providers._http)

__all__ = ["ChatCompletions", "Continuation", "Responses"]

log = logging.getLogger(__name__)

Continuation = Literal["auto", "flags", "prefill", "unsupported"]

_NO_CONTINUE_HOSTS = ("api.openai.com", "openrouter.ai", "api.deepseek.com", "api.groq.com", "api.x.ai")

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "refusal": FinishReason.REFUSAL,
}


def chat_usage(raw: Mapping[str, Any]) -> UsageChunk:
    """Chat Completions usage, normalised: ``prompt_tokens`` includes cached tokens, so they are subtracted."""
    prompt = count(raw.get("prompt_tokens"))
    output = count(raw.get("completion_tokens"))
    details = obj(raw.get("prompt_tokens_details"))
    cache_read = count(details.get("cached_tokens"))
    if cache_read is None:
        cache_read = count(raw.get("prompt_cache_hit_tokens"))  # DeepSeek
    cache_write = count(details.get("cache_write_tokens")) or 0
    cache_read = cache_read or 0
    out_details = obj(raw.get("completion_tokens_details"))
    reasoning = count(out_details.get("reasoning_tokens")) or 0
    total = count(raw.get("total_tokens"))
    if output is not None and prompt is not None and reasoning and total == prompt + output + reasoning:
        output += reasoning  # xAI counts reasoning outside completion_tokens
    inp = None if prompt is None else max(0, prompt - cache_read - cache_write)
    return UsageChunk(inp, output, cache_read, cache_write, reasoning or None)


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _is_done(event: SseEvent) -> bool:
    return event.data == "[DONE]"


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
                    f"Chat Completions at {self._ep.shown_url} cannot continue an assistant message; {FALLBACK}"
                )
            text = continued_text(prompt, "Chat Completions", FALLBACK)
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
        if self._openai and opts.cache_key is not None and opts.cache_ttl is not None:
            body["prompt_cache_key"] = opts.cache_key  # OpenAI's own: one key, one cache machine
        body.update(prompt.provider_options(self.provider_key))
        return body

    def _message(self, m: Message) -> list[dict[str, Any]]:
        if m.role is not Role.ASSISTANT:
            return _user_messages(m)
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

    # -- stream ---------------------------------------------------------------------------------

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        body = self.build_request(prompt)  # misuse raises here, before any I/O
        return self._stream(body, prompt.cancel)

    async def _stream(self, body: dict[str, Any], cancel: CancelSignal) -> AsyncIterator[Delta]:
        ep = self._ep
        reply = _ChatReply(ep, ThinkSplitter() if self.think_tags else None)
        done = False
        on_chunk, base_url = reply.on_chunk, ep.shown_url
        # Closed here, not by the garbage collector: closing reads the body's end, so the connection goes back
        # to the pool at once (a generator left to the finalizer is a ResourceWarning on trio).
        async with aclosing(ep.sse("/chat/completions", self._auth(), body, _is_done, cancel)) as batches:
            async for batch in batches:
                for event in batch:
                    data = event.data
                    if data == "[DONE]":
                        done = True
                        break
                    try:  # stream_record inlined (a call less per delta); it has the last word on a failure
                        chunk: Any = from_json(data)
                    except ValueError:
                        chunk = stream_record(data, base_url)
                    for d in on_chunk(chunk if type(chunk) is dict else {}):  # pyright: ignore[reportUnknownArgumentType]
                        yield d
                if done:
                    break
        for d in reply.end(done):
            yield d


def _user_messages(m: Message) -> list[dict[str, Any]]:
    """A user message: a tool message per result, their images after them, then the user's own content."""
    out: list[dict[str, Any]] = []
    images_from_tools: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, ToolResult):
            text = p.text
            out.append(
                {"role": "tool", "tool_call_id": p.call_id, "content": f"Error: {text}" if p.error else text}
            )
            images_from_tools.extend(
                {"type": "image_url", "image_url": {"url": image_url(img)}}
                for img in p.content
                if isinstance(img, Image)
            )
    if images_from_tools:
        # Tool messages take text only: the images follow as a user message.
        intro = {"type": "text", "text": "Images from the tool results above:"}
        out.append({"role": "user", "content": [intro, *images_from_tools]})
    parts = [p for p in m.parts if isinstance(p, Text | Image)]
    if parts and all(isinstance(p, Text) for p in parts):
        out.append({"role": "user", "content": "".join(p.text for p in parts if isinstance(p, Text))})
    elif parts:
        content = [
            {"type": "text", "text": p.text}
            if isinstance(p, Text)
            else {"type": "image_url", "image_url": {"url": image_url(p)}}
            for p in parts
        ]
        out.append({"role": "user", "content": content})
    return out


class _Call:
    __slots__ = ("args", "id", "name", "started")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.args: list[str] = []
        self.started = False


class _ChatReply:
    """What a Chat Completions stream has said so far, and the deltas each chunk makes."""

    __slots__ = ("by_id", "calls", "ep", "finish", "refused", "splitter", "usage")

    def __init__(self, ep: Endpoint, splitter: ThinkSplitter | None) -> None:
        self.ep = ep
        self.splitter = splitter
        self.calls: dict[int, _Call] = {}
        self.by_id: dict[str, int] = {}
        self.finish: FinishReason | None = None
        self.refused = False
        self.usage: UsageChunk | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> Sequence[Delta]:
        if chunk.get("error") or chunk.get("object") == "error":
            raise classify_error_body(chunk, self.ep)
        raw_usage = chunk.get("usage")
        if raw_usage and isinstance(raw_usage, dict):
            self.usage = chat_usage(cast(dict[str, Any], raw_usage))
        choices: Any = chunk.get("choices")
        if not choices or not isinstance(choices, list):
            return ()
        choice = obj(choices[0])  # pyright: ignore[reportUnknownArgumentType]
        delta = obj(choice.get("delta"))
        if not delta or self.finish is not None:
            out = ()
        elif len(delta) == 1 and type(content := delta.get("content")) is str:
            # The usual chunk, text alone: none of the other keys to look for.
            if not content:
                out = ()
            elif self.splitter is not None:
                out = self.splitter.feed(content)
                if self.splitter.passing:
                    self.splitter = None  # plain text from here on: no call per chunk
            else:
                out = [TextChunk(content)]
        else:
            out = self._delta(delta)
        reason = choice.get("finish_reason")
        if reason and self.finish is None:
            self.finish = self._finish(reason)
        return out

    def _delta(self, delta: dict[str, Any]) -> list[Delta]:
        # Mostly a delta is content alone: its list is the one the splitter made.
        content = delta.get("content")
        out: list[Delta]
        if not isinstance(content, str) or not content:
            out = []
        elif self.splitter is not None:
            out = self.splitter.feed(content)
        else:
            out = [TextChunk(content)]
        reasoning: Any = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            r = obj(reasoning)
            if r:
                reasoning = r.get("text") or r.get("content")
            if isinstance(reasoning, str) and reasoning:
                out.insert(0, ReasoningChunk(reasoning))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.refused = True
            out.append(TextChunk(refusal))
        tool_calls: Any = delta.get("tool_calls")
        if tool_calls:
            for tc in tool_calls:
                out += self._tool_delta(obj(tc))
        return out

    def _finish(self, reason: Any) -> FinishReason:
        if reason in ("error", "abort"):
            raise ModelError(
                f"model endpoint {self.ep.shown_url} aborted the reply (finish_reason {reason!r}); try again",
                ErrorKind.TRANSPORT_ERROR,
            )
        finish = _FINISH.get(reason)
        if finish is None:
            log.warning("unknown finish_reason %r from %s, taken as stop", reason, self.ep.base_url)
            finish = FinishReason.STOP
        return finish

    def end(self, done: bool) -> list[Delta]:
        """The stream ended (``done``: with ``[DONE]``): the calls complete, the usage, the finish."""
        finish = self.finish
        if finish is None:
            raise truncated(self.ep, "a finish_reason" if done else "its final record")
        out: list[Delta] = []
        if self.splitter is not None:
            out += self.splitter.flush()
        for call in self.calls.values():
            if not call.started:
                continue
            parsed = parse_input("".join(call.args))
            if parsed is None and finish is FinishReason.LENGTH:
                continue  # cut off by the token limit: no ToolReady, the input is incomplete
            out.append(ToolReady(call.id, parsed))
        if self.calls and finish is FinishReason.STOP:
            finish = FinishReason.TOOL_CALLS  # some servers say stop after calls
        if self.refused and finish is FinishReason.STOP:
            finish = FinishReason.REFUSAL
        if self.usage is not None:
            out.append(self.usage)
        out.append(Finish(finish))
        return out

    def _tool_delta(self, tc: dict[str, Any]) -> list[Delta]:
        if not tc:
            return []
        out: list[Delta] = []
        fn = obj(tc.get("function"))
        tid: Any = tc.get("id")
        index = self._index(tc.get("index"), tid)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _Call()
        if not call.id and isinstance(tid, str) and tid:
            call.id = tid
            self.by_id[tid] = index
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
        if isinstance(args, dict):  # a few servers send the object itself
            args = json.dumps(args, ensure_ascii=False)
        if isinstance(args, str) and args:
            call.args.append(args)
            if call.started:
                out.append(ToolInput(call.id, args))
        return out

    def _index(self, index: Any, tid: Any) -> int:
        """The call a tool-call delta belongs to. Without an index (some gateways) its id names the
        call, else it continues the last one."""
        if isinstance(index, int):
            return index
        if isinstance(tid, str) and tid in self.by_id:
            return self.by_id[tid]
        if isinstance(tid, str) and tid:
            return len(self.calls)
        return max(self.calls) if self.calls else 0
