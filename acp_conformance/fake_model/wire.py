"""A scripted turn as the answer to a model request, in the wire format the request speaks (Chat
Completions, Responses, Anthropic Messages, Gemini): what the fake model and the server's title answers share."""

from __future__ import annotations

import json
from typing import Any

from ..json_types import is_object, member
from .exchange import Recorded, Reply, Stall
from .render import Turn, render_json, render_stream

__all__ = ["api_of", "model_of", "rendered"]

_SSE = {"content-type": "text/event-stream", "cache-control": "no-cache"}


def api_of(request: Recorded) -> str | None:
    """Which provider API a request speaks (``chat``, ``responses``, ``anthropic``, ``gemini``), if any."""
    path = request.path
    if ":streamGenerateContent" in path or ":generateContent" in path:
        return "gemini"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    return None


def rendered(api: str, request: Recorded, turn: Turn, model: str, stall: Stall | None = None) -> Reply:
    """``turn`` as the answer to ``request`` in ``api``'s wire format, streamed when it asked so (held at
    ``stall`` after the text, where given)."""
    body: Any = _json_or_none(request.body)
    stream = api == "gemini" and ":streamGenerateContent" in request.path
    if api != "gemini":
        stream = is_object(body) and bool(body.get("stream"))
    if not stream:
        return Reply.json(200, render_json(api, turn, model))
    head, tail = render_stream(api, turn, model)
    return Reply(200, dict(_SSE), [*head, *([stall] if stall is not None else []), *tail])


def model_of(api: str, request: Recorded) -> str | None:
    """The model a generation request names (the path's for Gemini, the body's for the others)."""
    return _model_of(api, request, _json_or_none(request.body))


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _model_of(api: str, request: Recorded, body: Any) -> str | None:
    if api == "gemini":
        name = request.path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        return name or None
    model = member(body, "model")
    return model if isinstance(model, str) else None
