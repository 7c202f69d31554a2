"""A server's prompts, which the ACP layer offers as slash commands: listed, and one rendered as text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._client import PAGE_CAP

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

__all__ = ["PromptArgument", "PromptInfo", "list_prompts", "prompt_text"]


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """A server's prompt (the ACP layer offers these as slash commands)."""

    server: str
    name: str
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()


async def list_prompts(client: Client, server: str) -> list[PromptInfo]:
    """Every page of ``prompts/list`` (at most ``PAGE_CAP``) as ``PromptInfo``s of ``server``."""
    out: list[PromptInfo] = []
    cursor: str | None = None
    for _ in range(PAGE_CAP):
        page = await client.list_prompts(cursor=cursor, cache_mode="refresh")
        for p in page.prompts:
            args = tuple(PromptArgument(a.name, a.description, bool(a.required)) for a in p.arguments or ())
            out.append(PromptInfo(server, p.name, p.description, args))
        cursor = page.next_cursor
        if cursor is None:
            break
    return out


def prompt_text(result: mcp_types.GetPromptResult) -> str:
    """A prompt's messages as text: text content and embedded text resources, in order."""
    import mcp_types as types

    texts: list[str] = []
    for m in result.messages:
        c = m.content
        if isinstance(c, types.TextContent):
            texts.append(c.text)
        elif isinstance(c, types.EmbeddedResource) and isinstance(c.resource, types.TextResourceContents):
            texts.append(c.resource.text)
    return "\n\n".join(texts)
