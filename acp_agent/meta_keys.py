"""The keys this agent puts in ``_meta`` fields of its own making, in one place for the layers that write
them and the ones that read them (the configuration writes an MCP server's timeout into the entry it hands
the session layer, which reads it back). Standard library only: the configuration is resolved before
``initialize`` is answered."""

from __future__ import annotations

from typing import Final

__all__ = ["HOOK_SHOWN_META", "MCP_TIMEOUT_META"]

MCP_TIMEOUT_META: Final = "acpAgent/timeoutS"
"""An MCP server entry's call timeout in seconds (``[mcp_servers.<name>] timeout_s``)."""

HOOK_SHOWN_META: Final = "acpAgent/hookShown"
"""In a user-side message a hook made (a stop hook's "go on"; a harness ``Message.meta`` key): the
``title`` and ``text`` of the entry the editor showed for it live, which ``session/load`` shows again in
its place (the user did not type it)."""
