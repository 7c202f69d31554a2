"""The provider path for the benchmarks: a local fake model server streaming the providers' exact wire
formats (Chat Completions and Anthropic Messages), and the agent configured against it the way a user
configures it (``--provider openai`` / ``anthropic`` with a base URL), not the ``script`` provider.

The server runs in a thread of the bench process (``acp_conformance.fake_model.FakeServer``, plain sockets),
so the agent's CPU time read from ``/proc`` holds the agent's work only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from acp_conformance.fake_model import FakeServer, Recorded, Reply, Stall

__all__ = [
    "API_PATHS",
    "PROVIDERS",
    "Arrivals",
    "anthropic_stream",
    "chat_stream",
    "http_agent",
    "pieces",
    "provider_server",
    "stream_for",
]

PROVIDERS: Final = ("openai", "anthropic")
API_PATHS: Final = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
MODEL: Final = "bench-model"
_CHAT_ENV: Final = (
    '"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1770933892,'
    '"model":"bench-model","system_fingerprint":"fp_x"'
)


def chat_stream(n: int, *, end: bool = True) -> bytes:
    """A Chat Completions stream of ``n`` content deltas, as OpenAI writes it (usage in the last chunk)."""
    parts = [
        f'data: {{{_CHAT_ENV},"choices":[{{"index":0,"delta":{{"content":"tok{i % 97} "}},"logprobs":null,'
        f'"finish_reason":null}}],"usage":null}}\n\n'
        for i in range(n)
    ]
    if end:
        parts.append(
            f'data: {{{_CHAT_ENV},"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
        )
        parts.append(
            f'data: {{{_CHAT_ENV},"choices":[],"usage":{{"prompt_tokens":10,"completion_tokens":{n},'
            f'"total_tokens":{n + 10}}}}}\n\n'
        )
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def anthropic_stream(n: int, *, end: bool = True) -> bytes:
    """An Anthropic Messages stream of ``n`` text deltas, as the API writes it."""
    parts = [
        "event: message_start\n"
        'data: {"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant",'
        '"content":[],"model":"bench","stop_reason":null,"stop_sequence":null,'
        '"usage":{"input_tokens":10,"output_tokens":1}}}\n\n',
        "event: content_block_start\n"
        'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    ]
    parts += [
        "event: content_block_delta\n"
        f'data: {{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"tok{i % 97} "}}}}\n\n'
        for i in range(n)
    ]
    if end:
        parts.append('event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n')
        parts.append(
            'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
            f'"stop_sequence":null}},"usage":{{"output_tokens":{n}}}}}\n\n'
        )
        parts.append('event: message_stop\ndata: {"type":"message_stop"}\n\n')
    return "".join(parts).encode()


def stream_for(provider: str, n: int, *, end: bool = True) -> bytes:
    return chat_stream(n, end=end) if provider == "openai" else anthropic_stream(n, end=end)


def pieces(data: bytes, size: int = 16384) -> list[bytes | Stall]:
    """The stream cut into socket writes of ``size`` bytes."""
    return [data[i : i + size] for i in range(0, len(data), size)]


class Arrivals:
    """When each model request reached the server (``time.perf_counter``, the bench's clock)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._event = threading.Event()

    def mark(self) -> None:
        with self._lock:
            self.times.append(time.perf_counter())

    def since(self, start: float) -> float | None:
        """Seconds from ``start`` to the first arrival after it (None when none came)."""
        with self._lock:
            later = [t for t in self.times if t >= start]
        return min(later) - start if later else None


@contextmanager
def provider_server(reply: Callable[[Recorded], Reply] | Reply) -> Iterator[tuple[FakeServer, Arrivals]]:
    """A fake server answering both APIs' streaming paths with ``reply`` and ``GET /v1/models`` with one
    model; ``Arrivals`` records when each streaming request arrived."""
    arrivals = Arrivals()

    def answer(request: Recorded) -> Reply:
        arrivals.mark()
        return reply(request) if callable(reply) else reply

    models = Reply.json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
    with FakeServer() as server:
        for path in API_PATHS.values():
            server.route("POST", path, answer)
        server.route("GET", "/v1/models", models)
        yield server, arrivals


def http_agent(home: Path, provider: str, server_url: str) -> dict[str, str]:
    """The environment of an agent configured as a user configures it for a local server."""
    base = server_url + "/v1" if provider == "openai" else server_url
    return {
        "ACP_AGENT_HOME": str(home),
        "ACP_AGENT_PROVIDER": provider,
        "ACP_AGENT_MODEL": MODEL,
        "ACP_AGENT_BASE_URL": base,
        "ACP_AGENT_API_KEY": "sk-bench-not-a-real-key",
        "ACP_AGENT_LOG_LEVEL": "warning",
    }
