"""The fake model an agent under test talks to: one local HTTP server that answers Chat Completions,
Responses, Anthropic Messages and Gemini requests with the scenario's scripted turns.

Each model request (a POST whose model is not a side model) takes the next turn; once the script is spent
every request gets ``default_text``. Requests for a side model (the small model an agent uses for titles or
routing), and requests whose body holds one of ``side_markers`` (an agent's own side task on its main model,
such as Claude Code's prompt suggestions), get a short answer and take no turn. Listing, counting and model-info requests are answered too,
so an agent that checks its model first finds it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from ..json_types import is_object, member
from .render import Turn, render_json, render_stream
from .server import FakeServer, Recorded, Reply, Stall

__all__ = ["FakeModel", "api_of"]

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


class FakeModel:
    """``with FakeModel(turns) as model: ... model.url``: serves until closed."""

    def __init__(
        self,
        turns: Sequence[Turn] = (),
        *,
        model: str = "fake-model",
        side_models: Sequence[str] = (),
        side_markers: Sequence[str] = (),
        default_text: str = "Done.",
    ) -> None:
        self.turns = list(turns)
        self.model = model
        self.side_models = frozenset(side_models)
        self.side_markers = tuple(m.encode() for m in side_markers)
        self.default_text = default_text
        self.model_requests: list[Recorded] = []
        self.side_requests: list[Recorded] = []
        self.unknown_requests: list[Recorded] = []
        self.stall_reached = threading.Event()
        """Set once a stalled turn has sent its text and holds its stream open."""
        self.stall_closed = threading.Event()
        """Set once the agent closed a stalled stream (it stopped the model request)."""
        self._lock = threading.Lock()
        self._next = 0
        self.server = FakeServer(fallback=self._answer)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> FakeModel:
        self.server.start()
        return self

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the scenario can wait for --------------------------------------------------------

    def summary(self) -> str:
        """The requests seen, for a failure's detail."""
        unknown = ", ".join(f"{r.method} {r.path}" for r in self.unknown_requests[:5])
        return (
            f"fake model: {len(self.model_requests)} model requests, {len(self.side_requests)} side requests"
            + (f", unanswered: {unknown}" if unknown else "")
        )

    # -- answering -----------------------------------------------------------------------------

    def _take_turn(self) -> Turn:
        with self._lock:
            index = self._next
            self._next += 1
        if index < len(self.turns):
            return self.turns[index]
        return Turn(text=self.default_text, index=index)

    def _answer(self, request: Recorded) -> Reply:
        api = api_of(request)
        if request.method == "POST" and api is not None:
            return self._generate(api, request)
        return self._metadata(request)

    def _generate(self, api: str, request: Recorded) -> Reply:
        body: Any = _json_or_none(request.body)
        model = _model_of(api, request, body) or self.model
        stream = api == "gemini" and ":streamGenerateContent" in request.path
        if api != "gemini":
            stream = is_object(body) and bool(body.get("stream"))
        other = "*" in self.side_models and model != self.model  # "*": every model but the main one
        if other or model in self.side_models or any(m in request.body for m in self.side_markers):
            with self._lock:
                self.side_requests.append(request)
            turn = Turn(text="ok", index=900 + len(self.side_requests))
        else:
            with self._lock:
                self.model_requests.append(request)
            turn = self._take_turn()
        if not stream:
            return Reply.json(200, render_json(api, turn, model))
        head, tail = render_stream(api, turn, model)
        if turn.stall:
            stall = Stall(reached=self.stall_reached, client_closed=self.stall_closed)
            return Reply(200, dict(_SSE), [*head, stall, *tail])
        return Reply(200, dict(_SSE), [*head, *tail])

    def _metadata(self, request: Recorded) -> Reply:
        path = request.path
        if path.endswith("/count_tokens"):
            return Reply.json(200, {"input_tokens": 42})
        if path.endswith(":countTokens"):
            return Reply.json(200, {"totalTokens": 42})
        if request.method == "GET" and "/models" in path:
            return Reply.json(200, self._models(request))
        with self._lock:
            self.unknown_requests.append(request)
        error = {"message": f"the fake model has no {request.method} {path}", "type": "not_found_error"}
        return Reply.json(404, {"error": error})

    def _models(self, request: Recorded) -> dict[str, Any]:
        names = [self.model, *sorted(self.side_models)]
        tail = request.path.rsplit("/models", 1)[-1].strip("/")
        if "/v1beta/" in request.path or request.path.startswith("/v1beta"):
            entries = [
                {"name": f"models/{n}", "displayName": n, "supportedGenerationMethods": ["generateContent"]}
                for n in names
            ]
            return entries[0] if tail else {"models": entries}
        if "anthropic-version" in request.headers:
            entries = [
                {"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z"}
                for n in names
            ]
            if tail:
                return entries[0]
            return {"data": entries, "has_more": False, "first_id": names[0], "last_id": names[-1]}
        entries = [{"id": n, "object": "model", "created": 0, "owned_by": "acp-conformance"} for n in names]
        return entries[0] if tail else {"object": "list", "data": entries}


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
