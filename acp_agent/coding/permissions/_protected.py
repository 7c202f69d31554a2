"""The agent's protected list: the harness's ``PROTECTED`` (which names no application) with acp-agent's
own configuration folders in front. Passed into the harness wherever it takes a list: the permission
gate (``ProtectedPaths``), the sandbox (``SandboxPolicy.protected``) and the shell tool's ``make_dirs``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from harness.protected import PROTECTED, Protected, home_paths, protect, root_paths

__all__ = ["AGENT_PROTECTED", "AGENT_ROOT_PATHS", "home_sandbox_paths", "own_link_targets"]

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


def home_sandbox_paths(home: Path, roots: Sequence[Path]) -> tuple[str, ...]:
    """Absolute paths in the user's ``home`` a sandboxed command never writes, besides ``AGENT_ROOT_PATHS``
    at each root: ``HOME_ONLY`` (``~/bin``), and the whole list in ``home`` when a root holds the home
    folder without being it (a root ``/home``: the list is taken at each root, so it would protect
    ``/home/.bashrc``, not ``/home/u/.bashrc``). Blocking (``realpath``)."""
    real = os.path.realpath(home)
    out = [str(p) for p, _why in home_paths(real)]
    if any(real != r and real.startswith(r.rstrip("/") + "/") for r in map(os.path.realpath, roots)):
        out.extend(os.path.join(real, rel) for rel in AGENT_ROOT_PATHS)
    return tuple(out)


def own_link_targets(folder: Path, files: Iterable[Path] = ()) -> list[Path]:
    """Where the links among the user's own files lead: each link at the top of ``folder`` (the user's
    configuration folder) and each of ``files`` that is one (the user's rule file, wherever it is set).
    A dotfiles manager keeps the real files in its repository (home-manager in the Nix store), and the agent
    reads them through those links: they are its own files too, protected from the tools and kept from
    sandboxed commands wherever they are (a dotfiles repository opened as a project). Blocking."""
    links: list[Path] = list(files)
    try:
        with os.scandir(folder) as entries:
            links.extend(Path(e.path) for e in entries if e.is_symlink())
    except OSError:  # no configuration folder (or not a folder): nothing of it to protect there
        pass
    out: list[Path] = []
    for link in links:
        if os.path.islink(link):
            real = Path(os.path.realpath(link))
            if real not in out:
                out.append(real)
    return out
