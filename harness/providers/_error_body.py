"""An HTTP error body read the way the server meant it: JSON, SSE-framed JSON, an HTML page, or text.

Gateways and local servers answer errors in more shapes than the API they imitate: LiteLLM and vLLM can
send an SSE-framed error on a streaming request (``data: {"error": …}`` then ``data: [DONE]``), a proxy in
front sends its HTML error page, a crashed worker sends plain text. Each becomes the JSON value the error
classifier reads, so the user sees the server's sentence, never the raw framing.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from ._common import obj

__all__ = ["error_body"]

_MAX_TEXT = 500
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _sse_records(text: str) -> list[Any]:
    """The JSON values of an SSE-framed body's ``data:`` records (``[DONE]`` and non-JSON dropped)."""
    values: list[Any] = []
    for record in re.split(r"\r?\n\r?\n|\r\r", text):
        lines = [ln[5:].removeprefix(" ") for ln in re.split(r"\r?\n|\r", record) if ln.startswith("data:")]
        data = "\n".join(lines).strip()
        if data and data != "[DONE]":
            value = _json(data)
            if value is not None:
                values.append(value)
    return values


def _html_text(raw: bytes) -> str:
    """An HTML error page as its title (or its text, squeezed): what a proxy in front meant to say."""
    match = _TITLE.search(raw)
    source = match.group(1) if match else raw
    text = html.unescape(_TAGS.sub(" ", source.decode("utf-8", "replace")))
    return " ".join(text.split())[:_MAX_TEXT]


def error_body(raw: bytes) -> Any:
    """The error value of an HTTP error body: the JSON object as sent, the first JSON record of an
    SSE-framed body that holds an error (else its first record), or ``{"message": text}`` for a page or
    plain text (empty when the body is empty)."""
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return {}
    value = _json(text)
    if value is not None:
        return value
    if text.startswith(("data:", "event:", ":")) or "\ndata:" in text:
        records = _sse_records(text)
        with_error: list[Any] = [r for r in records if "error" in obj(r)]
        if with_error or records:
            return (with_error or records)[0]
    lowered = text[:200].lower()
    if lowered.startswith(("<!doctype html", "<html")) or "<body" in lowered:
        return {"message": _html_text(raw)}
    return {"message": text[:_MAX_TEXT]}
