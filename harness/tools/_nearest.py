"""The file's lines nearest to a block a model sent that matched nowhere, for the failure's message.

When no level of the looseness ladder (``_match``) finds a model's ``old_text`` (or a hunk's context), the
model's usual next move is to read the whole file again, and pay for it in tokens, or to guess again. The
failure names the lines most like what it sent instead (as ``read_file`` shows lines), so it can copy them
exactly in its next call. Nothing is applied from here: a near match only informs the message.

Candidate places come from the block's distinctive lines found whole in the file (under the ladder's loosest
key), then from the lines most like its longest ones (a drift inside a line: a renamed variable, a changed
argument); each is scored by ``difflib`` against the block, a few lines longer or shorter as well (a line the
model dropped or added). Blocking and bounded in work: callers run it in the worker thread that read the file.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ._match import LEVELS, trimmed

__all__ = ["MIN_SIMILARITY", "Nearest", "nearest", "nearest_note", "shown_lines"]

MIN_SIMILARITY: Final = 0.6
"""Below this the place is not shown: the text is likely not in the file at all (or was rewritten)."""
_SHOWN_LINES: Final = 40
_SHOWN_LINE_CHARS: Final = 300
_SCORED_LINES: Final = 200  # of each side, each line to its first _SCORED_LINE_CHARS: difflib is quadratic
_SCORED_LINE_CHARS: Final = 300
_COMMON: Final = 8  # a line found more often than this anchors nothing (``}``, ``return None``)
_PLACES: Final = 6
_FUZZY_LINES: Final = 3  # the longest lines of the block looked up approximately
_FUZZY_MAX_FILE_LINES: Final = 20_000
_SLACK: Final = 2

_key = LEVELS[-1][1]  # the loosest key: what the ladder forgave already is no difference here


@dataclass(frozen=True, slots=True)
class Nearest:
    """``lines`` of the file from index ``start``, ``similarity`` (0-1) to the block."""

    start: int
    lines: tuple[str, ...]
    similarity: float


def nearest(lines: Sequence[str], block: Sequence[str], *, start: int = 0) -> Nearest | None:
    """The run of ``lines`` (at or after ``start``) most like ``block``; None below ``MIN_SIMILARITY``."""
    core = trimmed(block)
    if not core or start >= len(lines):
        return None
    keys = [_key(line) for line in lines]
    want = [_key(line) for line in core]
    places = _places(keys, want, start)
    if not places:
        return None
    target = [k[:_SCORED_LINE_CHARS] for k in want[:_SCORED_LINES]]
    n = len(core)

    def score(at: int, length: int) -> float:
        return _similarity(
            target, [k[:_SCORED_LINE_CHARS] for k in keys[at : at + min(length, _SCORED_LINES)]]
        )

    # The best few places at the block's own length, then their length a little either way.
    ranked = sorted(places, key=lambda at: (-score(at, n), at))[:3]
    best = max(
        ((score(at, length), -at, length) for at in ranked for length in _lengths(n)),
        default=None,
    )
    if best is None or best[0] < MIN_SIMILARITY:
        return None
    similarity, neg_at, length = best
    at = -neg_at
    return Nearest(at, tuple(lines[at : at + length]), similarity)


def _similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """Like ``difflib``'s ratio of the two texts, computed by lines: equal lines count whole, lines paired
    in a changed run count by their own ratio (a drift inside every line still reads as alike)."""
    alike = 0.0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            alike += 2 * sum(len(x) + 1 for x in a[i1:i2])
        elif tag == "replace":  # line by line; the extra lines of the longer side get no credit
            for x, y in zip(a[i1:i2], b[j1:j2], strict=False):
                alike += difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() * (len(x) + len(y) + 2)
    total = sum(len(x) + 1 for x in a) + sum(len(y) + 1 for y in b)
    return alike / total if total else 0.0


def _lengths(n: int) -> range:
    return range(max(1, n - _SLACK), n + _SLACK + 1)


def _places(keys: Sequence[str], want: Sequence[str], start: int) -> list[int]:
    """Where the block could begin: voted by its lines found whole, else by its longest lines' look-alikes."""
    wanted = {k for k in want if len(k) >= 3}
    seen: dict[str, list[int]] = {}
    for i in range(start, len(keys)):
        if keys[i] in wanted:
            seen.setdefault(keys[i], []).append(i)
    votes: Counter[int] = Counter()
    for j, k in enumerate(want):
        found = seen.get(k, ())
        if 0 < len(found) <= _COMMON:
            for i in found:
                votes[max(start, i - j)] += 1
    if not votes and len(keys) - start <= _FUZZY_MAX_FILE_LINES:
        body = list(keys[start:])
        longest = sorted((j for j in range(len(want)) if len(want[j]) >= 3), key=lambda j: -len(want[j]))
        alike = {
            j: difflib.get_close_matches(want[j], body, n=_COMMON, cutoff=MIN_SIMILARITY)
            for j in longest[:_FUZZY_LINES]
        }
        found_at: dict[str, list[int]] = {k: [] for likes in alike.values() for k in likes}
        for i, k in enumerate(body, start):
            if k in found_at:
                found_at[k].append(i)
        for j, likes in alike.items():
            for like in likes:
                for i in found_at[like]:
                    votes[max(start, i - j)] += 1
    return [at for at, _ in votes.most_common(_PLACES)]


def shown_lines(near: Nearest) -> str:
    """``near``'s lines as ``read_file`` shows them (numbered from 1), long ones cut, at most a screenful."""
    rows: list[str] = []
    for i, line in enumerate(near.lines[:_SHOWN_LINES]):
        text = line if len(line) <= _SHOWN_LINE_CHARS else line[:_SHOWN_LINE_CHARS] + " [... line cut]"
        rows.append(f"{near.start + i + 1:6}\t{text}")
    if len(near.lines) > _SHOWN_LINES:
        rows.append(f"[... {len(near.lines) - _SHOWN_LINES} more lines]")
    return "\n".join(rows)


def nearest_note(near: Nearest) -> str:
    """Where ``near`` is and how alike, then its lines (a failure's message ends with it)."""
    first, last = near.start + 1, near.start + len(near.lines)
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"the nearest text is at {where} ({round(near.similarity * 100)}% alike):\n{shown_lines(near)}"
