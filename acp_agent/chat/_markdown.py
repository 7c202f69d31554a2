"""Streamed Markdown cut into blocks that can be rendered for good: a block ends at a blank line outside
a code fence, so a paragraph, a list or a fenced code block is rendered whole once it is complete, and
only the block still streaming is shown provisionally."""

from __future__ import annotations

__all__ = ["BlockStream"]


class BlockStream:
    """``feed`` text as it streams; it returns the blocks completed by it. ``tail`` is the rest."""

    def __init__(self) -> None:
        self._text = ""
        self._in_fence = False
        self._scanned = 0  # where the lines not yet looked at start

    @property
    def tail(self) -> str:
        return self._text

    def feed(self, text: str) -> list[str]:
        self._text += text
        done: list[str] = []
        start = 0  # where the current block starts in self._text
        pos = self._scanned
        while True:
            end = self._text.find("\n", pos)
            if end < 0:
                break
            line = self._text[pos:end]
            if line.lstrip().startswith(("```", "~~~")):
                self._in_fence = not self._in_fence
                if not self._in_fence:  # a fence closed: the code block is complete
                    done.append(self._text[start : end + 1])
                    start = end + 1
            elif not line.strip() and not self._in_fence:
                block = self._text[start:end]
                if block.strip():
                    done.append(block)
                start = end + 1
            pos = end + 1
        self._text = self._text[start:]
        self._scanned = pos - start
        return done

    def flush(self) -> str:
        """The rest, as the last block (the message ended)."""
        rest, self._text, self._scanned, self._in_fence = self._text, "", 0, False
        return rest
