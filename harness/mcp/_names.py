"""Tool names as the model sees them: ``mcp__<server>__<tool>`` within ``[A-Za-z0-9_-]{1,64}``."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["assign_names", "exposed_name"]

_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BAD = re.compile(r"[^A-Za-z0-9_-]")
_MAX = 64


def exposed_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``; when that is not a valid name, a sanitised, shortened form with a hash of
    the original, so the name of a tool never depends on the other tools (stable across list changes)."""
    raw = f"mcp__{server}__{tool}"
    if _VALID.fullmatch(raw):
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    clean = _BAD.sub("_", raw)[: _MAX - len(digest) - 1]
    return f"{clean}_{digest}"


def assign_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Exposed names for ``(server, tool)`` pairs, unique: a residual clash (two names hashing alike after
    sanitising) is resolved in sorted order of the originals, the later ones getting ``_2``, ``_3``..."""
    out: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for pair in sorted(set(pairs)):
        name = exposed_name(*pair)
        n = 1
        candidate = name
        while candidate in taken:
            n += 1
            suffix = f"_{n}"
            candidate = name[: _MAX - len(suffix)] + suffix
        taken.add(candidate)
        out[pair] = candidate
    return out
