"""JSON-RPC 2.0 messages as the connection sorts and writes them: what one decoded value is (a request, a
notification, a response, or invalid), and how an outgoing message becomes a line."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

from .errors import RpcError

__all__ = [
    "CANCEL_REQUEST_METHOD",
    "Invalid",
    "JsonDict",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "classify",
    "clip",
    "encode",
    "error_message",
    "jsonable",
    "result_line",
    "text_chunk_line",
    "valid_id",
]

_log = logging.getLogger("acp_agent.protocol")

RequestId: TypeAlias = int | str | None
JsonDict: TypeAlias = dict[str, Any]

CANCEL_REQUEST_METHOD: Final = "$/cancel_request"
_LOG_LIMIT: Final = 2048


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    message: JsonDict


@dataclass(frozen=True, slots=True)
class Invalid:
    """Answered ``-32600`` with ``message``, to ``id`` when it could be read."""

    id: RequestId
    message: str


Message: TypeAlias = Request | Notification | Response | Invalid | None
"""What one decoded value is; ``None``: ignore it (a response that cannot be routed)."""


def valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(value: Any) -> Message:
    """Sort one decoded JSON value (an element of a batch, or a whole line that is not an array)."""
    if not isinstance(value, dict):
        return Invalid(None, "invalid request: expected an object")
    msg = cast(JsonDict, value)
    raw_id = msg.get("id")
    id_ok = valid_id(raw_id)
    echo_id: RequestId = cast(RequestId, raw_id) if id_ok else None
    if "method" not in msg:
        if "result" in msg or "error" in msg:
            if "id" not in msg or not id_ok:
                _log.warning("ignoring a response without a usable id: %s", clip(repr(msg)))
                return None
            return Response(echo_id, msg)
        return Invalid(echo_id, "invalid request: missing method")
    if msg.get("jsonrpc") != "2.0":
        return Invalid(echo_id, 'invalid request: jsonrpc must be "2.0"')
    method = msg["method"]
    if not isinstance(method, str):
        return Invalid(echo_id, "invalid request: method must be a string")
    params = msg.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Invalid(echo_id, "invalid request: params must be an object or an array")
    if "id" not in msg:
        return Notification(method, params)
    if not id_ok:
        return Invalid(None, "invalid request: id must be a string, an integer or null")
    return Request(echo_id, method, params)


def jsonable(value: Any) -> Any:
    """Pydantic models are dumped like ``models.dump``; anything else is passed as is."""
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


def encode(obj: Any) -> bytes:
    """One line: ``ensure_ascii=False, separators=(",", ":"), allow_nan=False``, then a newline."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # Lone surrogates (e.g. from undecodable file names) cannot be UTF-8: escape them instead.
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def result_line(request_id: RequestId, result: Any) -> bytes:
    """``encode`` of the response ``{"jsonrpc":"2.0","id":request_id,"result":result}``, byte for byte, put
    together from its two encoded values; raises as ``encode`` does for a result that is not JSON."""
    try:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        head = json.dumps(request_id, ensure_ascii=False)
        return f'{{"jsonrpc":"2.0","id":{head},"result":{text}}}\n'.encode()
    except UnicodeEncodeError:  # lone surrogates: the whole line escaped, as ``encode`` does
        return encode({"jsonrpc": "2.0", "id": request_id, "result": result})


_TEXT_CHUNK_HEAD: Final = (
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%s,'
    '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%s},"messageId":%s}}}\n'
)
_encode_str: Final = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes a str as


def text_chunk_line(session_id: str, text: str, message_id: str) -> bytes:
    """``encode`` of the ``session/update`` notification carrying an ``agent_message_chunk`` of ``text``
    (of the message ``message_id``),
    byte for byte, without building and walking the nested dict: the hot path of a streamed reply (a
    general ``json.dumps`` with these options costs ten times more than escaping the two strings)."""
    try:
        return (
            _TEXT_CHUNK_HEAD % (_encode_str(session_id), _encode_str(text), _encode_str(message_id))
        ).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escaped, as ``encode`` does
        ascii_str = json.encoder.encode_basestring_ascii
        return (_TEXT_CHUNK_HEAD % (ascii_str(session_id), ascii_str(text), ascii_str(message_id))).encode()


def error_message(request_id: RequestId, error: RpcError) -> JsonDict:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_dict()}


def clip(text: str) -> str:
    """``text`` cut for a log line."""
    return text if len(text) <= _LOG_LIMIT else text[:_LOG_LIMIT] + f"... ({len(text)} chars)"
