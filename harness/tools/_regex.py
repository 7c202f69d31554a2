"""Regular expressions that cannot freeze the process: RE2 (``google-re2``), linear in the text.

Python's ``re`` backtracks (``(a+)+$`` against a long line never ends) and holds the GIL while it does,
so even a thread cannot keep the process answering. RE2 matches in time linear in the input, releases
the GIL while it matches, and refuses what it cannot do in linear time (lookaround, backreferences)
with an error the model can act on. Compile and match model-given patterns in a thread all the same:
a large pattern takes a while to compile.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import re2  # pyright: ignore[reportMissingTypeStubs]

__all__ = ["Regex", "RegexError", "compile_regex"]

_Re2Error: type[Exception] = re2.error  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

_MAX_MEM = 64 << 20  # what one compiled pattern may use; RE2 refuses a pattern needing more


class RegexError(ValueError):
    """A pattern RE2 cannot compile; the message says why, in words for the model."""


class Span(Protocol):
    def start(self) -> int: ...

    def end(self) -> int: ...


class Regex(Protocol):
    """A compiled pattern (the slice of ``re2``'s API the tools use)."""

    def search(self, text: Any, pos: int | None = None, endpos: int | None = None) -> Span | None: ...

    def fullmatch(self, text: Any, pos: int | None = None, endpos: int | None = None) -> Span | None: ...


def compile_regex(pattern: str, *, ignore_case: bool = False, one_line: bool = False) -> Regex:
    """``pattern`` compiled by RE2. ``one_line``: a match never spans a newline (so a search over a whole
    buffer finds what a line-by-line search would), ``^``/``$`` match at line ends."""
    options: Any = re2.Options()
    options.log_errors = False
    options.max_mem = _MAX_MEM
    options.case_sensitive = not ignore_case
    if one_line:
        options.never_nl = True
        options.never_capture = True
        pattern = "(?m)" + pattern
    try:
        return cast(Regex, re2.compile(pattern, options))  # pyright: ignore[reportUnknownMemberType]
    except _Re2Error as e:
        raise RegexError(_why(e)) from None


def _why(error: Exception) -> str:
    raw: Any = error.args[0] if error.args else error
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if "invalid perl operator" in text or "invalid escape sequence" in text:
        text += " (RE2 syntax: no lookaround, backreferences or possessive quantifiers)"
    return text
