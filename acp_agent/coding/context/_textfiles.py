"""Reading the small Markdown files that shape the agent (instructions, commands, skills), safely.

Blocking helpers, called through a worker thread. A project's file is read only when it is a regular file
whose real path stays inside the folder given as ``inside`` (a cloned repository's ``AGENTS.md`` that links
to ``~/.ssh/id_rsa`` or is a FIFO is skipped, not read), and it is opened beneath that folder without
following a symlink (``harness.tools.open_regular``: a link swapped in after the check is not followed); at most ``limit`` bytes are read, whatever the size.
``split_front_matter`` parses YAML front matter with PyYAML's safe loader (no tags, no code).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.tools import Place, open_regular, real_path

__all__ = ["TextFile", "read_bounded", "signature", "split_front_matter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextFile:
    """A file's text, at most the limit read; ``size`` is the whole file's size in bytes."""

    path: Path
    text: str
    size: int

    @property
    def cut(self) -> bool:
        return self.size > len(self.text.encode("utf-8", errors="replace"))


def _confined(path: Path, inside: Path | None) -> Path | None:
    """The real path of ``path`` when it is inside ``inside`` (None: anywhere), else None."""
    try:
        real = real_path(path)
        if inside is None:
            return real
        root = real_path(inside)
    except OSError:  # a link on the way swapped while it was read: not read
        return None
    return real if real == root or real.is_relative_to(root) else None


def read_bounded(path: Path, limit: int, *, inside: Path | None = None) -> TextFile | None:
    """The first ``limit`` bytes of ``path`` as text (cut back to a whole line when cut), or None when it
    is missing, not a regular file, outside ``inside`` or unreadable."""
    real = _confined(path, inside)
    if real is None:
        if path.exists():
            log.warning("skipping %s: it leads outside %s", path, inside)
        return None
    try:  # beneath the folder, no symlink followed: one swapped in since the check above is refused
        top = real_path(inside) if inside is not None else Path("/")
        with open_regular(Place.of(real, [top])) as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(limit + 1) if limit > 0 else b""
    except FileNotFoundError:
        return None
    except OSError as exc:  # not a regular file, unreadable, a symlink loop: said once per change
        log.warning("skipping %s: it cannot be read (%s)", path, exc.strerror or exc)
        return None
    if len(data) > limit:
        data = data[:limit]
        newline = data.rfind(b"\n")
        if newline > limit // 2:
            data = data[: newline + 1]
    return TextFile(path, data.decode("utf-8", errors="replace"), max(size, len(data)))


def signature(paths: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """What changes when any of ``paths`` appears, disappears or is written: (path, mtime_ns, size)."""
    out: list[tuple[str, int, int]] = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            out.append((str(p), -1, -1))
            continue
        out.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(out)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)``: the YAML between a first ``---`` line and the next; ``{}`` when there is
    none or it does not parse as a mapping (then the whole text is the body, as written)."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    raw = "\n".join(lines[1:end])
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    try:
        import yaml

        data: Any = yaml.safe_load(raw) if raw.strip() else {}
    except Exception as exc:  # yaml.YAMLError and friends: a broken header is the author's to fix
        log.warning("front matter does not parse (%s); reading it line by line", exc)
        data = _lines(raw)
    if not isinstance(data, Mapping):
        return {}, body
    mapping: Mapping[Any, Any] = data  # pyright: ignore[reportUnknownVariableType]
    return {str(k): v for k, v in mapping.items()}, body


def _lines(raw: str) -> dict[str, str]:
    """``key: value`` lines, for a header YAML rejects (an unquoted ``: `` in a description, say)."""
    out: dict[str, str] = {}
    for line in raw.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "#")):
            out[key.strip()] = value.strip().strip("\"'")
    return out
