"""The coding session's extra tools: the ``explore`` sub-agent and the web tools, dressed for the editor.

``explore`` is a read-only sub-agent (``harness.agents.AgentTool``): its child run has the read-only file
tools on the session's root and file system, the session's current model, a short system prompt and its own
``Compact``; every call starts fresh. Its hints are derived from the child's tools (read-only), so every
mode runs it without asking. ``web_fetch`` always, ``web_search`` when a SearXNG URL is configured; both are
open-world, and the modes ask before they run (``_modes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from harness import Options, Result, Run, Tool, Tools, ToolSpec
from harness.agents import AgentTool
from harness.compact import Compact
from harness.tools import Glob, Grep, ListDir, ReadFile, ToolKind, ToolMeta, read_meta
from harness.tools.web import SearXng, WebFetch, WebSearch

if TYPE_CHECKING:
    from harness import Call, Model
    from harness.tools import FileSystem, Root

    from ..config import Config

__all__ = ["EXPLORE_SYSTEM", "Dressed", "explore_tool", "web_tools"]

EXPLORE_SYSTEM: Final = (
    "Explore the project and report concisely what you found, for another agent that asked you the "
    "question below and will act on your answer. You can only read: list directories, find files, search "
    "and read them. Name the files (paths relative to the first project directory) and line numbers that "
    "matter, quote only the few lines that settle the question, and say what you could not find."
)
EXPLORE_DESCRIPTION: Final = (
    "Delegate a read-only exploration of the project to a sub-agent: finding where something is defined "
    "or used, how a part of the code works, which files matter for a task. It reads and searches on its own "
    "and returns a concise report, keeping your context small. Give it the whole question in the prompt: "
    "it sees nothing of this conversation. Several explorations may run at once."
)
_TITLE_WORDS: Final = 8
_TITLE_CHARS: Final = 80


class Dressed:
    """A tool with the editor's presentation added to its spec's ``ToolMeta``: ``kind`` and a title made
    from the input (read by the session's ``MetaView``)."""

    def __init__(
        self, tool: Tool, *, kind: ToolKind, title: Callable[[Mapping[str, Any]], str | None]
    ) -> None:
        self.tool = tool
        self.kind: ToolKind = kind
        self.title = title

    def spec(self) -> ToolSpec:
        spec = self.tool.spec()
        meta: ToolMeta = read_meta(spec.meta)
        meta["kind"] = self.kind
        meta["title"] = self.title
        return replace(spec, meta=meta)

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        return await self.tool.call(input, call)


def _words(text: Any, limit: int = _TITLE_WORDS) -> str:
    words = str(text or "").split()
    short = " ".join(words[:limit])[:_TITLE_CHARS]
    return short + (" …" if len(words) > limit or len(short) == _TITLE_CHARS else "")


def explore_title(tool_input: Mapping[str, Any]) -> str:
    shown = _words(tool_input.get("prompt"))
    return f"Explore: {shown}" if shown else "Explore"


def explore_tool(
    root: Root,
    fs: FileSystem,
    model: Model,
    *,
    context_window: int | None,
    system_suffix: str = "",
    middleware: Sequence[Any] = (),
) -> Dressed:
    """The ``explore`` tool: a fresh read-only sub-agent per call (kind ``search``); ``middleware`` goes
    outside its own (the session's secret redaction)."""
    kw: dict[str, Any] = {"fs": fs}
    child = Run(
        model,
        Tools(ReadFile(root, **kw), ListDir(root, **kw), Glob(root, **kw), Grep(root, **kw)),
        system=EXPLORE_SYSTEM + system_suffix,
        options=Options(context_window=context_window) if context_window else None,
        # Its own Compact: a child's reading grows its context; its checkpoints are not the session's.
        middleware=[*middleware, Compact()],
    )
    return Dressed(
        AgentTool(child, "explore", EXPLORE_DESCRIPTION, fresh=True), kind="search", title=explore_title
    )


def _fetch_title(tool_input: Mapping[str, Any]) -> str:
    url = str(tool_input.get("url") or "").strip()
    return f"Fetch {url[:200]}" if url else "Fetch a web page"


def _search_title(tool_input: Mapping[str, Any]) -> str:
    query = _words(tool_input.get("query"), 12)
    return f"Search the web: {query}" if query else "Search the web"


def web_tools(config: Config) -> list[Dressed]:
    """``web_fetch`` (kind ``fetch``), and ``web_search`` (kind ``search``) when SearXNG is configured."""
    tools = [Dressed(WebFetch(), kind="fetch", title=_fetch_title)]
    if config.searxng_url:
        # Guarded as web_fetch is, but a SearXNG of one's own on loopback or the LAN is the usual case (the
        # URL is the user's or a trusted project's): only metadata, multicast and unspecified are refused.
        backend = SearXng(config.searxng_url, allow_private=True)
        tools.append(Dressed(WebSearch(backend), kind="search", title=_search_title))
    return tools
