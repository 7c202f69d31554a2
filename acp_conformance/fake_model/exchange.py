"""What the fake model's HTTP server exchanges: a request as recorded (``Recorded``) and a scripted answer
(``Reply``, whose body pieces may ``Stall`` or ``Drop``). Apart from the server so that the wire renderers
(``wire``) and the server both use them, neither importing the other's module back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Drop", "Piece", "Recorded", "Reply", "ReplySource", "Stall"]


@dataclass
class Stall:
    """Stop sending: ``reached`` is set when the server gets here; it goes on when ``release`` is set.
    ``client_closed`` is set when the client closes the connection during the stall."""

    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    client_closed: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Drop:
    """Close the connection abruptly (RST), leaving the body unfinished."""


Piece = bytes | Stall | Drop


@dataclass
class Reply:
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    body: Sequence[Piece] = ()
    chunked: bool = True

    @classmethod
    def sse(
        cls,
        data: bytes,
        *,
        split_at: Iterable[int] = (),
        every: int | None = None,
        then: Sequence[Piece] = (),
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """A 200 event stream, written in pieces cut at ``split_at`` offsets or every ``every`` bytes."""
        cuts = sorted(set(split_at))
        if every:
            cuts = list(range(every, len(data), every))
        pieces: list[Piece] = []
        start = 0
        for cut in cuts:
            if 0 < cut < len(data):
                pieces.append(data[start:cut])
                start = cut
        pieces.append(data[start:])
        pieces.extend(then)
        return cls(200, dict(headers or {"content-type": "text/event-stream"}), pieces)

    @classmethod
    def json(cls, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> Reply:
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return cls(status, {"content-type": "application/json", **(headers or {})}, [body])


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    query: str = ""

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


ReplySource = Reply | Callable[[Recorded], Reply]
