"""MCP wire objects -> harness objects: a ``Tool`` -> ``ToolSpec`` (its annotations -> ``Hints``),
a ``CallToolResult`` -> ``Result``."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from .._messages import Image, Text
from .._tools import Hints, Result, ToolSpec

if TYPE_CHECKING:
    import mcp_types

__all__ = ["hints_of", "result_of", "tool_spec"]


def tool_spec(server: str, tool: mcp_types.Tool, name: str) -> ToolSpec:
    """The spec of ``server``'s tool as the model is offered it, named ``name``."""
    schema: dict[str, Any] = dict(tool.input_schema or {})
    if schema.get("type") != "object":
        schema["type"] = "object"
    meta: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool.name}
    if tool.title:
        meta["title"] = tool.title
    return ToolSpec(name, tool.description or tool.title or "", schema, hints_of(tool.annotations), meta)


def hints_of(annotations: mcp_types.ToolAnnotations | None) -> Hints:
    """MCP hints with the spec's defaults (destructive and open-world unless said otherwise)."""
    if annotations is None:
        return Hints(read_only=False, destructive=True, idempotent=False, open_world=True)
    read_only = annotations.read_only_hint is True
    return Hints(
        read_only=read_only,
        destructive=not read_only and annotations.destructive_hint is not False,
        idempotent=annotations.idempotent_hint is True,
        open_world=annotations.open_world_hint is not False,
    )


def _size(b64: str) -> int:
    try:
        return len(base64.b64decode(b64, validate=False))
    except ValueError:
        return len(b64) * 3 // 4


def result_of(server: str, tool: str, r: mcp_types.CallToolResult, *, max_chars: int) -> Result:
    """Content for the model (text and images; audio and binary resources described in text),
    structured content as ``value``, the raw content blocks in ``meta["mcp_content"]`` for the host."""
    import mcp_types as t

    parts: list[Text | Image] = []
    for block in r.content:
        if isinstance(block, t.TextContent):
            parts.append(Text(block.text))
        elif isinstance(block, t.ImageContent):
            parts.append(Image(data=block.data, media_type=block.mime_type))
        elif isinstance(block, t.AudioContent):
            parts.append(Text(f"[audio {block.mime_type}, {_size(block.data)} bytes]"))
        elif isinstance(block, t.EmbeddedResource):
            res = block.resource
            mime = f" ({res.mime_type})" if res.mime_type else ""
            if isinstance(res, t.TextResourceContents):
                parts.append(Text(f"[resource {res.uri}{mime}]\n{res.text}"))
            elif (res.mime_type or "").startswith("image/"):
                parts.append(Image(data=res.blob, media_type=res.mime_type or "image/png"))
            else:
                parts.append(Text(f"[resource {res.uri}{mime}: binary, {_size(res.blob)} bytes]"))
        else:
            link = f"[resource link {block.uri}"
            link += f" {block.name!r}" if block.name else ""
            link += f" ({block.mime_type})" if block.mime_type else ""
            link += f": {block.description}]" if block.description else "]"
            parts.append(Text(link))
    structured = r.structured_content
    if not parts and structured is not None:
        parts.append(Text(json.dumps(structured, ensure_ascii=False)))
    parts = _truncate(parts, max_chars)
    meta: dict[str, Any] = {
        "mcp_server": server,
        "mcp_tool": tool,
        "mcp_content": [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in r.content],
    }
    if r.is_error and not parts:
        parts.append(Text(f"MCP server `{server}`: tool `{tool}` failed (no details given)"))
    return Result(tuple(parts), structured, meta, bool(r.is_error))


def _truncate(parts: list[Text | Image], max_chars: int) -> list[Text | Image]:
    total = sum(len(p.text) for p in parts if isinstance(p, Text))
    if total <= max_chars:
        return parts
    out: list[Text | Image] = []
    left = max_chars
    for p in parts:
        if isinstance(p, Text):
            if left <= 0:
                continue
            out.append(Text(p.text[:left]))
            left -= len(p.text)
        else:
            out.append(p)
    out.append(Text(f"\n[truncated: the result had {total} characters, {max_chars} are shown]"))
    return out
