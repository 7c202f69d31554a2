"""The agent's protected list: the harness's ``PROTECTED`` (which names no application) with acp-agent's
own configuration folders in front. Passed into the harness wherever it takes a list: the permission
gate (``ProtectedPaths``), the sandbox (``SandboxPolicy.protected``) and the shell tool's ``make_dirs``."""

from __future__ import annotations

from typing import Final

from harness.protected import PROTECTED, Protected, protect, root_paths

__all__ = ["AGENT_PROTECTED", "AGENT_ROOT_PATHS"]

AGENT_PROTECTED: Final[tuple[Protected, ...]] = (
    *protect(
        ".acp-agent",
        "acp-agent's own configuration (MCP servers, provider, remembered permissions): a change can run "
        "commands or widen what the agent may do",
    ),
    *protect(
        ".config/acp-agent",
        "acp-agent's user configuration: a change can run commands or widen what the agent may do",
    ),
    *PROTECTED,
)
"""Every protected pattern, below each root."""

AGENT_ROOT_PATHS: Final[tuple[str, ...]] = root_paths(AGENT_PROTECTED)
"""``AGENT_PROTECTED`` as paths relative to a root (the sandbox's list)."""
