"""A loopback model server that bills like the providers' prompt caches (for ``bench/cost.py`` and the
tests of prompt caching through the real process).

Tokens are estimated at 4 characters a token of each rendered segment's canonical JSON (no tokenizer
package is installable offline here: tiktoken fetches its tables from the network); the same estimate
counts every request, so shares and ratios are exact for it.

- Anthropic (``POST /v1/messages``): the request renders as blocks in the API's cache order (each tool,
  each system block, each content block of each message). Only a prefix that ends at a block marked
  ``cache_control`` is written, and only from 1,024 tokens; a later request reads the longest written
  prefix that is byte-identical up to one of *its* breakpoints. Usage as the API reports it:
  ``input_tokens`` (uncached), ``cache_creation_input_tokens``, ``cache_read_input_tokens``.
- OpenAI (``POST /v1/chat/completions``): the request renders as system, then tools, then the other
  messages; the cached part is the longest common prefix with any earlier request, counted from 1,024
  tokens in steps of 128. Usage: ``prompt_tokens`` (all) with ``prompt_tokens_details.cached_tokens``.

Replies come from a script: each ``Step`` is a text or tool calls. With ``bill_titles``, a title request (the
agent's, after a session's first exchange) is billed like any request and answered ``TITLE`` without taking
a step; its billing says ``title``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from acp_conformance.fake_model import FakeServer, Reply
from acp_conformance.fake_model.server import Recorded, is_title_request

__all__ = ["Billed", "CacheServer", "Step", "strip_cache_control", "tokens"]

MIN_TOKENS = 1024
OPENAI_STEP = 128


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def strip_cache_control(obj: Any) -> Any:
    """``obj`` without ``cache_control`` keys anywhere (to compare what two requests said)."""
    if isinstance(obj, dict):
        return {k: strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [strip_cache_control(v) for v in obj]
    return obj


@dataclass(frozen=True)
class Step:
    """One scripted reply: ``text``, or ``calls`` (name, arguments) with no text."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    output_tokens: int = 60


TITLE = Step(text="Cost bench session", output_tokens=6)


@dataclass
class Billed:
    """One model request as the cache billed it (``title``: the agent's title request)."""

    input: int
    cache_read: int
    cache_write: int
    output: int
    title: bool = False

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write


@dataclass
class CacheServer:
    """``with CacheServer(script) as s: s.url``; ``s.billed`` lists every request's billing."""

    script: Sequence[Step]
    bill_titles: bool = False
    """Bill the agent's title requests too (the cost bench); else they are answered apart (``FakeServer``),
    unbilled, so a test of the turns' requests sees those only."""
    billed: list[Billed] = field(default_factory=list[Billed])
    bodies: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _written: set[str] = field(default_factory=set[str])
    _earlier: list[list[tuple[str, int]]] = field(default_factory=list[list[tuple[str, int]]])
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.server = FakeServer(fallback=self._answer, titles_apart=not self.bill_titles)

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> Self:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()

    def _answer(self, request: Recorded) -> Reply:
        body: Any = request.json if request.body else None
        if request.method != "POST" or not isinstance(body, dict):
            return Reply.json(200, {"data": [], "object": "list"})
        title = is_title_request(request)
        with self._lock:
            if title:
                step = TITLE
            else:
                self.bodies.append(body)
                step = self.script[self._next] if self._next < len(self.script) else Step(text="Done.")
                self._next += 1
            if request.path.endswith("/messages"):
                billed = self._anthropic(body, step)
                billed.title = title
                self.billed.append(billed)
                return Reply.sse(_anthropic_sse(step, billed))
            billed = self._openai(body, step)
            billed.title = title
            self.billed.append(billed)
            return Reply.sse(_chat_sse(step, billed))

    # --- Anthropic ----------------------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], step: Step) -> Billed:
        blocks: list[tuple[Any, bool]] = [(t, "cache_control" in t) for t in body.get("tools", [])]
        system = body.get("system")
        if isinstance(system, str):
            blocks.append(({"type": "text", "text": system}, False))
        elif isinstance(system, list):
            blocks += [(b, "cache_control" in b) for b in system]
        for m in body["messages"]:
            content = m["content"]
            if isinstance(content, str):
                blocks.append(({"role": m["role"], "text": content}, False))
            else:
                blocks += [({"role": m["role"], **b}, "cache_control" in b) for b in content]
        digest = hashlib.sha256()
        total = 0
        prefixes: list[tuple[str, int]] = []  # (hash, tokens) at each breakpoint
        for block, marked in blocks:
            text = _canon(strip_cache_control(block))
            digest.update(text.encode())
            total += tokens(text)
            if marked:
                prefixes.append((digest.hexdigest(), total))
        read = max((n for h, n in prefixes if h in self._written), default=0)
        write_to = 0
        for h, n in prefixes:
            if n >= MIN_TOKENS and h not in self._written:
                self._written.add(h)
                write_to = max(write_to, n)
        write = max(0, write_to - read)
        return Billed(total - read - write, read, write, step.output_tokens)

    # --- OpenAI ---------------------------------------------------------------------------------

    def _openai(self, body: dict[str, Any], step: Step) -> Billed:
        messages = body["messages"]
        system = [m for m in messages if m["role"] == "system"]
        rest = [m for m in messages if m["role"] != "system"]
        segments = [*system, *({"tool": t} for t in body.get("tools", [])), *rest]
        digest = hashlib.sha256()
        total = 0
        mine: list[tuple[str, int]] = []
        for segment in segments:
            text = _canon(segment)
            digest.update(text.encode())
            total += tokens(text)
            mine.append((digest.hexdigest(), total))
        common = 0
        for other in self._earlier:
            seen = {h for h, _ in other}
            common = max([common, *(n for h, n in mine if h in seen)])
        self._earlier.append(mine)
        cached = 0 if common < MIN_TOKENS else MIN_TOKENS + (common - MIN_TOKENS) // OPENAI_STEP * OPENAI_STEP
        return Billed(total - cached, cached, 0, step.output_tokens)


def _sse_lines(events: Sequence[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = b""
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out += f"{head}data: {json.dumps(data)}\n\n".encode()
    return out


def _anthropic_sse(step: Step, b: Billed) -> bytes:
    usage = {
        "input_tokens": b.input,
        "cache_creation_input_tokens": b.cache_write,
        "cache_read_input_tokens": b.cache_read,
        "output_tokens": 1,
    }
    message = {"id": "msg_sim", "type": "message", "role": "assistant", "content": [], "usage": usage}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    index = 0
    if step.text:
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": step.text},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        index = 1
    for i, (name, args) in enumerate(step.calls):
        block = {"type": "tool_use", "id": f"toolu_{id(step)}_{i}", "name": name, "input": {}}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
        index += 1
    stop = "tool_use" if step.calls else "end_turn"
    events += [
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": b.output}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse_lines(events)


def _chat_sse(step: Step, b: Billed) -> bytes:
    events: list[tuple[str | None, dict[str, Any]]] = []
    if step.text:
        events.append(
            (None, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": step.text}}]})
        )
    if step.calls:
        calls = [
            {
                "index": i,
                "id": f"call_{id(step)}_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(step.calls)
        ]
        events.append(
            (None, {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": calls}}]})
        )
    finish = "tool_calls" if step.calls else "stop"
    events.append((None, {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    usage = {
        "prompt_tokens": b.prompt,
        "completion_tokens": b.output,
        "total_tokens": b.prompt + b.output,
        "prompt_tokens_details": {"cached_tokens": b.cache_read},
    }
    events.append((None, {"choices": [], "usage": usage}))
    return _sse_lines(events) + b"data: [DONE]\n\n"
