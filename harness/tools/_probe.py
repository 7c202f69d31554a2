"""What a path is, for the file tools: missing, a directory, something else, a binary or a text file."""

from __future__ import annotations

import mimetypes
import stat
from dataclasses import dataclass

from ..beneath import Place
from ._fs import NotRegularFileError, open_regular, stat_place

__all__ = ["SNIFF_BYTES", "Probe", "human_size", "is_binary", "probe"]

SNIFF_BYTES = 8192

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x7fELF", "application/x-executable (ELF)"),
    (b"\x1f\x8b", "application/gzip"),
    (b"RIFF", "application/octet-stream (RIFF)"),
)


@dataclass(frozen=True, slots=True)
class Probe:
    kind: str  # missing, dir, other (FIFO, socket, device: never opened), binary, text
    size: int = 0
    mime: str = ""


def probe(place: Place) -> Probe:
    """What ``place`` is, looked at beneath its root without following a symlink (one swapped in since
    the path was checked raises ``BeneathError``). Blocking: run it in a thread."""
    try:
        st = stat_place(place)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is None:
        return Probe("missing")
    if stat.S_ISDIR(st.st_mode):
        return Probe("dir", st.st_size)
    if not stat.S_ISREG(st.st_mode):
        return Probe("other", st.st_size)
    try:
        with open_regular(place) as f:
            head = f.read(SNIFF_BYTES)
    except NotRegularFileError:
        return Probe("other", st.st_size)
    if is_binary(head):
        mime = next((m for sig, m in _MAGIC if head.startswith(sig)), None)
        mime = mime or mimetypes.guess_type(place.path.name)[0] or "application/octet-stream"
        return Probe("binary", st.st_size, mime)
    return Probe("text", st.st_size)


def is_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        # A multi-byte character cut at the sniff boundary is still text.
        return e.start < len(head) - 4
    return False


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"
