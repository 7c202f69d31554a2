"""ACP content -> harness messages: a prompt's content blocks become one user message (``_replay`` turns a
stored conversation back into updates)."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import anyio.to_thread

from .._early import PROMPT_CAPABILITIES
from ..protocol.errors import RpcError
from ..protocol.models import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    dump,
)
from . import _harness

if TYPE_CHECKING:
    from pathlib import Path

    from harness import Message

    from ..protocol.models import ContentBlock

__all__ = [
    "ACP_META_KEY",
    "CONTEXT_PARTS_META",
    "content_adapter",
    "linked_files",
    "new_message_id",
    "prompt_message",
    "prompt_to_message",
    "title_from_prompt",
    "user_text",
]

ACP_META_KEY = "acp"
"""``Message.meta[ACP_META_KEY]["prompt"]`` keeps the prompt's original blocks, replayed as sent."""

CONTEXT_PARTS_META = "contextParts"
"""``Message.meta[CONTEXT_PARTS_META]``: how many leading parts of a prompt are context the agent put
there (the environment, changed instructions), not the user's words."""

_TITLE_MAX = 80


def new_message_id() -> str:
    """A fresh ``messageId`` for a message this agent makes up (a prompt, a command's reply): the same form
    as the harness's model message ids."""
    return "msg_" + os.urandom(8).hex()


_LINK_MAX_BYTES = 256 * 1024


def prompt_to_message(blocks: Sequence[ContentBlock], *, image: bool, audio: bool, embedded: bool) -> Message:
    """The user message for a prompt. Blocks the agent did not advertise are invalid params."""
    parts: list[_harness.Part] = []
    for i, block in enumerate(blocks):
        if isinstance(block, TextContent):
            parts.append(_harness.Text(block.text))
        elif isinstance(block, ResourceLink):
            parts.append(_harness.Text(_describe_link(block)))
        elif isinstance(block, EmbeddedResource):
            if not embedded:
                raise RpcError.invalid_params(
                    f"invalid params: prompt.{i}: embedded resources are not supported"
                )
            res = block.resource
            mime = f' mimeType="{res.mime_type}"' if res.mime_type else ""
            if isinstance(res, BlobResourceContents):
                size = _blob_size(res.blob)
                parts.append(
                    _harness.Text(
                        f'<resource uri="{res.uri}"{mime}>(binary content, {size} bytes, not shown)</resource>'
                    )
                )
            else:
                parts.append(_harness.Text(f'<resource uri="{res.uri}"{mime}>\n{res.text}\n</resource>'))
        elif isinstance(block, ImageContent):
            if not image:
                raise RpcError.invalid_params(f"invalid params: prompt.{i}: images are not supported")
            parts.append(_harness.Image(data=block.data, media_type=block.mime_type))
        elif isinstance(block, AudioContent):  # pyright: ignore[reportUnnecessaryIsInstance]
            if not audio:
                raise RpcError.invalid_params(f"invalid params: prompt.{i}: audio is not supported")
            parts.append(_harness.Text(f"(audio, {block.mime_type}, not transcribed)"))
    if not parts:
        raise RpcError.invalid_params("invalid params: prompt: at least one content block is required")
    return _harness.Message(
        _harness.Role.USER, tuple(parts), meta={ACP_META_KEY: {"prompt": [dump(b) for b in blocks]}}
    )


async def prompt_message(blocks: Sequence[ContentBlock], roots: Sequence[Path]) -> Message:
    """The user message of a prompt (or a steering message): its linked files read, with its ``messageId``."""
    caps = PROMPT_CAPABILITIES
    message = prompt_to_message(
        blocks, image=caps["image"], audio=caps["audio"], embedded=caps["embeddedContext"]
    )
    message = await linked_files(message, blocks, roots)
    message.meta.setdefault(ACP_META_KEY, {})["messageId"] = new_message_id()  # replayed with it
    return message


async def linked_files(message: Message, blocks: Sequence[ContentBlock], roots: Sequence[Path]) -> Message:
    """``message`` with the text of each ``file://`` resource link inside ``roots`` appended.

    Links outside the roots, missing files and binary files are left as their description (the model can
    still read them with its tools where allowed)."""
    links = [b for b in blocks if isinstance(b, ResourceLink)]
    if not links or not roots:
        return message

    root = _harness.Root(list(roots))
    added: list[_harness.Text] = []
    for link in links:
        text = await anyio.to_thread.run_sync(_read_link, root, link.uri)
        if text is not None:
            added.append(_harness.Text(text))
    if not added:
        return message
    return _harness.Message(message.role, (*message.parts, *added), meta=message.meta)


def _read_link(root: Any, uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", "") or (parsed.netloc not in ("", "localhost")):
        return None
    raw = unquote(parsed.path)
    try:  # opened beneath the root, no symlink followed (one swapped in after the check is refused)
        path = root.resolve_sync(raw)
        with _harness.open_regular(root.place(path)) as f:
            data = f.read(_LINK_MAX_BYTES + 1)
    except (_harness.PathError, OSError):
        return None
    if b"\x00" in data[:8192]:
        return None
    cut = len(data) > _LINK_MAX_BYTES
    text = data[:_LINK_MAX_BYTES].decode("utf-8", errors="replace")
    note = f"\n(cut at {_LINK_MAX_BYTES} bytes)" if cut else ""
    return f'<file path="{path}">\n{text}{note}\n</file>'


def _describe_link(link: Any) -> str:
    details = [f"uri: {link.uri}"]
    for label, value in (
        ("title", link.title),
        ("description", link.description),
        ("mimeType", link.mime_type),
        ("size", link.size),
    ):
        if value is not None:
            details.append(f"{label}: {value}")
    return f"[resource link: {link.name}] " + ", ".join(details)


def _blob_size(blob: str) -> int:
    try:
        return len(base64.b64decode(blob, validate=False))
    except (binascii.Error, ValueError):
        return len(blob)


def user_text(message: Message) -> str:
    """The prompt's text without the context parts the agent put in front of it."""
    skip = message.meta.get(CONTEXT_PARTS_META)
    parts = message.parts[skip:] if isinstance(skip, int) and not isinstance(skip, bool) else message.parts
    return "".join(p.text for p in parts if isinstance(p, _harness.Text))


def title_from_prompt(message: Message) -> str | None:
    text = " ".join(user_text(message)[:2000].split())
    if not text:
        return None
    return text if len(text) <= _TITLE_MAX else text[: _TITLE_MAX - 1].rstrip() + "…"


_adapters: dict[str, Any] = {}


def content_adapter() -> Any:
    """The pydantic adapter of a ``ContentBlock`` (built once)."""
    adapter = _adapters.get("content")
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _adapters["content"] = TypeAdapter(ContentBlock)
    return adapter
