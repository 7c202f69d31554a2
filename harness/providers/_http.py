"""HTTP for the providers: the endpoint (one shared client per origin and event loop, ``._clients``), SSE
streaming, and errors classified into kinds.

Messages say what failed and what to do about it, name the endpoint, and never hold an API key. httpx2 is
imported when the first request is made, not when a provider is built (start-up imports only what answering
``session/new`` needs).
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

import anyio

from .._errors import HarnessUsageError, ModelError
from .._kinds import ErrorKind
from ..model import close_stream
from ._clients import HttpConfig, keep_idle_clients, shared_clients
from ._common import obj
from ._error_body import error_body
from ._sse import SseEvent, SseParser

if TYPE_CHECKING:
    import httpx2

    from ..model import CancelSignal, Delta, Prompt
    from .model_info import ModelInfo

__all__ = [
    "HttpConfig",
    "HttpModel",
    "Endpoint",
    "classify_error_body",
    "error_from_status",
    "keep_idle_clients",
    "shared_clients",
    "transport_error",
    "truncated",
]

log = logging.getLogger(__name__)

_CONTEXT_RE = re.compile(
    r"maximum context length|context window|context length|prompt is too long|"
    r"exceeds? (the )?(available )?context|exceeded? (the )?(available )?context|exceed context limit|"
    r"too many tokens|max_tokens must be at least 1",
    re.IGNORECASE,
)
_RATE_TYPES = frozenset(
    {"rate_limit_error", "overloaded_error", "rate_limit_exceeded", "server_is_overloaded"}
)
_TRANSPORT_TYPES = frozenset({"api_error", "server_error", "timeout_error"})
_QUOTA = frozenset({"insufficient_quota", "billing_error", "billing_hard_limit_reached"})
_DRAIN_S = 0.25


def shown_url(url: str) -> str:
    """``url`` without credentials, query or fragment: what a message, a log or the editor may show."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _url_credentials(url: str) -> list[str]:
    """A URL's user, password and query values, as written and percent-decoded (longest first)."""
    parts = urlsplit(url)
    raw = [*parts.netloc.rpartition("@")[0].split(":", 1)]
    for part in (parts.query, parts.fragment):
        raw += [piece.partition("=")[2] for piece in part.split("&")]
    return sorted({form for value in raw if value for form in (value, unquote(value))}, key=len, reverse=True)


class Endpoint:
    """A model endpoint: base URL, how the user sets it (``url_hint``, for messages), the API key (never shown)."""

    __slots__ = ("_key", "base_url", "http", "shown_url", "url_hint")

    def __init__(self, base_url: str, url_hint: str, api_key: str | None, http: HttpConfig) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise HarnessUsageError(
                f"model base URL {base_url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8080/v1)"
            )
        self.base_url = base_url.rstrip("/")
        self.shown_url = shown_url(self.base_url)
        """The base URL as messages show it: without a user, password, query or fragment."""
        self.url_hint = url_hint
        self._key = api_key
        self.http = http

    @property
    def api_key(self) -> str | None:
        return self._key

    def __repr__(self) -> str:
        return f"Endpoint({self.shown_url!r}, key={'set' if self._key else 'unset'})"

    def scrub(self, text: str) -> str:
        """Remove the API key, and the credentials the base URL holds, from text that may echo them (a
        server's error message)."""
        for secret in (self._key, *_url_credentials(self.base_url)):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
        return text

    async def get_json(self, path: str, headers: Mapping[str, str]) -> Any:
        import httpx2

        url = self.base_url + path
        try:
            response = await (await self.http.client()).get(url, headers=dict(headers))
        except httpx2.RequestError as exc:
            raise transport_error(exc, self) from None
        if response.status_code >= 400:
            raise error_from_status(response.status_code, response.headers, response.content, self)
        try:
            return response.json()
        except ValueError:
            raise ModelError(
                f"model endpoint {self.shown_url} answered {path} with something that is not JSON",
                ErrorKind.MODEL_ERROR,
            ) from None

    async def sse(
        self,
        path: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        last: Callable[[SseEvent], bool] | None = None,
        cancel: CancelSignal | None = None,
    ) -> AsyncGenerator[list[SseEvent]]:
        """POST ``body`` as JSON and yield the SSE records, as many at a time as one read of the body
        completes (a stream's records arrive many to a read: one generator step per read, not per record,
        is a fifth of a streamed delta's relaying). Cancelling closes the stream at once. The rest of the
        body is read (for at most ``_DRAIN_S``) before the records that hold the one ``last`` says ends the
        stream are yielded, and when a consumer stops reading early, so the connection goes back to the
        pool instead of being dropped: the next turn (and a later session) sends on it without a new TCP
        and TLS handshake. Not once ``cancel`` (the prompt's) is set: a turn stopped between two reads closes
        the stream at once too (its answer does not wait for a model that is still writing, and closing is
        what tells the server to stop)."""
        url = self.base_url + path
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        hdrs = {"content-type": "application/json", "accept": "text/event-stream", **headers}
        parser = SseParser()
        import httpx2

        client = await self.http.client()
        try:
            async with client.stream("POST", url, content=payload, headers=hdrs) as response:
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise error_from_status(response.status_code, response.headers, raw, self)
                if response.headers.get("content-type", "").startswith("application/json"):
                    # A server that ignored "stream": an error object, or a reply we did not ask for.
                    raw = await response.aread()
                    err = error_from_status(response.status_code, response.headers, raw, self)
                    if b'"error"' in raw:
                        raise err
                    raise ModelError(
                        f"model endpoint {self.shown_url} answered {path} with plain JSON, not an event stream; "
                        "check that the server supports streaming and that the base URL is right",
                        ErrorKind.MODEL_ERROR,
                    )
                chunks = response.aiter_bytes()
                try:
                    async for chunk in chunks:
                        events = parser.feed(chunk)
                        if not events:
                            continue
                        end = _index_of_last(events, last)
                        if end is not None:  # the consumer stops there: the body is read first
                            if end:
                                yield events[:end]
                            await _drain(chunks)
                            events = events[end:]
                        yield events
                except GeneratorExit:
                    if cancel is None or not cancel.is_set():
                        await _drain(chunks)
                    else:  # not read on: the response's close drops the connection
                        await close_stream(chunks)
                    raise
                if rest := parser.flush():
                    yield rest
        except httpx2.RequestError as exc:
            raise transport_error(exc, self) from None


def _index_of_last(events: list[SseEvent], last: Callable[[SseEvent], bool] | None) -> int | None:
    if last is not None:
        for i, event in enumerate(events):
            if last(event):
                return i
    return None


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    with anyio.move_on_after(_DRAIN_S):
        async for _rest in chunks:
            pass


def transport_error(exc: httpx2.RequestError, ep: Endpoint) -> ModelError:
    import httpx2

    base = ep.shown_url
    if isinstance(exc, httpx2.ConnectTimeout):
        msg = f"model endpoint {base} did not accept the connection in time; check the server is running and reachable or set {ep.url_hint}"
    elif isinstance(exc, httpx2.ConnectError):
        msg = (
            f"model endpoint {base} refused the connection; check the server is running or set {ep.url_hint}"
        )
    elif isinstance(exc, httpx2.ReadTimeout):
        msg = f"model endpoint {base} sent nothing for {ep.http.idle_timeout:g} s; the server may be stuck or overloaded (raise the idle timeout for slow models)"
    elif isinstance(exc, httpx2.TimeoutException):
        msg = f"model endpoint {base} timed out; check the server and the network"
    elif isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError):
        msg = f"model endpoint {base} closed the connection mid-response; the server may have crashed or restarted, try again"
    else:
        msg = f"model endpoint {base} failed at the transport level ({type(exc).__name__}); check the server and the network"
    return ModelError(msg, ErrorKind.TRANSPORT_ERROR)


def truncated(ep: Endpoint, what: str) -> ModelError:
    return ModelError(
        f"model endpoint {ep.shown_url} ended the stream without {what}; the server may have crashed or dropped the connection, try again",
        ErrorKind.TRANSPORT_ERROR,
    )


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, ``retry-after`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if ra:
        try:
            return max(0.0, float(ra))
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(ra)
            except (TypeError, ValueError):
                return None
            return max(0.0, parsed.timestamp() - time.time())
    return None


def _error_object(body: Any) -> dict[str, Any]:
    as_obj = obj(body)
    if as_obj:
        err: Any = as_obj.get("error", as_obj)
        if isinstance(err, str):
            return {"message": err}
        return obj(err)
    if isinstance(body, str):
        return {"message": body}
    return {}


def classify_error_body(
    err_body: Any, ep: Endpoint, *, status: int | None = None, headers: Mapping[str, str] | None = None
) -> ModelError:
    """One error, from an HTTP error body or an in-band error record."""
    # A flat decision table, checked in order of precedence (context before quota before auth ...):
    # long, but each branch is one kind and the order is the logic.
    err = _error_object(err_body)
    etype = str(err.get("type") or "")
    code = str(err.get("code") or "")
    message = ep.scrub(str(err.get("message") or err.get("detail") or "").strip())
    if not message and obj(err_body).get("detail"):
        message = ep.scrub(str(obj(err_body)["detail"]))
    where = f"model endpoint {ep.shown_url}"
    shown = message or (f"HTTP {status}" if status else "an error")
    after = retry_after(headers) if headers is not None else None
    should_retry = (headers or {}).get("x-should-retry")

    if (
        code == "context_length_exceeded"
        or etype == "exceed_context_size_error"
        or status == 413
        or etype == "request_too_large"
        or _CONTEXT_RE.search(message)
    ):
        return ModelError(
            f"{where}: the prompt does not fit the model's context window ({shown}); compact or shorten the conversation",
            ErrorKind.CONTEXT_TOO_LONG,
        )
    if etype in _QUOTA or code in _QUOTA:
        return ModelError(
            f"{where}: quota or billing exhausted ({shown}); check the account's plan and billing",
            ErrorKind.MODEL_ERROR,
        )
    if (
        status in (401, 403)
        or etype in ("authentication_error", "permission_error")
        or code == "invalid_api_key"
    ):
        return ModelError(
            f"{where} rejected the credentials ({shown}); check the API key given for this provider",
            ErrorKind.MODEL_ERROR,
        )
    lowered = message.lower()
    if (
        status in (429, 529)
        or etype in _RATE_TYPES
        or code in _RATE_TYPES
        or etype == "unavailable_error"
        or (status == 503 and ("busy" in lowered or "loading" in lowered or "overload" in lowered))
        or (status == 503 and etype != "")
    ) and should_retry != "false":
        return ModelError(
            f"{where} is rate limited or overloaded ({shown}); retry later", ErrorKind.RATE_LIMITED, after
        )
    if status == 404 or etype == "not_found_error":
        return ModelError(
            f"{where}: not found ({shown}); check the model name and the base URL", ErrorKind.MODEL_ERROR
        )
    if (
        status in (408, 409, 500, 502, 503, 504)
        or etype in _TRANSPORT_TYPES
        or code in _TRANSPORT_TYPES
        or code in ("500", "502", "503", "504")
    ) and should_retry != "false":
        return ModelError(
            f"{where} failed on the server side ({shown}); try again", ErrorKind.TRANSPORT_ERROR, after
        )
    return ModelError(f"{where} rejected the request ({shown})", ErrorKind.MODEL_ERROR)


def error_from_status(status: int, headers: Mapping[str, str], raw: bytes, ep: Endpoint) -> ModelError:
    body = error_body(raw)
    log.debug("model endpoint %s answered HTTP %d", ep.base_url, status)
    return classify_error_body(body, ep, status=status, headers=headers)


class HttpModel:
    """What every HTTP provider shares: its endpoint (one pooled client), headers, auth, the model list.

    Subclasses set ``models_path`` and override ``_auth`` when the API is not ``Authorization: Bearer``.
    """

    provider_key = ""
    models_path = "/models"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        connect_timeout: float = 10.0,
        idle_timeout: float = 300.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        url_hint: str = "the base URL",
    ) -> None:
        self.model = model
        self._ep = Endpoint(
            base_url,
            url_hint,
            api_key,
            HttpConfig(
                connect_timeout=connect_timeout,
                idle_timeout=idle_timeout,
                transport=transport,
                origin=base_url,
            ),
        )
        self._headers = dict(headers or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._ep.base_url!r}, model={self.model!r})"

    @property
    def base_url(self) -> str:
        return self._ep.base_url

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        """The reply to ``prompt`` (``harness.Model``): each provider's class streams its own API."""
        raise NotImplementedError(f"{type(self).__name__} does not stream")

    async def aclose(self) -> None:
        await self._ep.http.aclose()

    def _auth(self) -> dict[str, str]:
        h = dict(self._headers)
        if self._ep.api_key:
            h["authorization"] = f"Bearer {self._ep.api_key}"
        return h

    async def list_models(self) -> list[str]:
        """The server's model ids (``[]`` when it has no model list)."""
        try:
            body = await self._ep.get_json(self.models_path, self._auth())
        except ModelError as exc:
            if "not found" in exc.message:
                return []
            raise
        data: Any = obj(body).get("data")
        if not isinstance(data, list):
            return []
        items: list[Any] = data  # pyright: ignore[reportUnknownVariableType]
        entries = [obj(m) for m in items]
        return [str(m["id"]) for m in entries if m.get("id")]

    async def describe_models(self) -> list[ModelInfo]:
        """The server's models and what it says of each (context window, output limit; ``model_info``)."""
        from .model_info import describe_models

        return await describe_models(self._ep, self._auth(), self.models_path)
