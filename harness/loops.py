"""``LoopGuard``: a model that repeats itself is told once, then the turn stops for the user.

Two patterns (Claude Code and OpenCode guard both): the same call with the same input failing
``failures`` times in a row, and the same read (a read-only tool) with the same input returning the same
result ``reads`` times with nothing changed in between (any call that is not read-only may change what a
read sees, so it starts the count again). At the threshold the result carries a note for the model; the
next repeat is not run, ``on_stop`` tells the user why, and the ``stop`` predicate (put it in
``Options.stop``) ends the turn after that step, so the user decides whether it goes on.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from ._call import Call
from ._errors import HarnessUsageError
from ._messages import Text, ToolCall
from ._options import StopContext
from ._tools import Result
from .middleware import NextTool

__all__ = ["FAILED_NOTE", "READ_NOTE", "STOPPED_TEXT", "LoopGuard"]

log = logging.getLogger("harness.run")

FAILED_NOTE = (
    "\n\n[Note: this same call with the same input has now failed {n} times in a row. Do not send it "
    "unchanged again: read the error, look at the file or the arguments afresh, or take another way. "
    "One more identical call stops the turn.]"
)
READ_NOTE = (
    "\n\n[Note: you have read this {n} times with the same input and it has not changed. Use what you "
    "read. One more identical read stops the turn.]"
)
STOPPED_TEXT = (
    "Stopped: the model sent {name} with the same input again after {why}. The turn stops here; reply "
    "to let it go on, or tell it what to do differently."
)


def _key(call: ToolCall) -> str:
    return call.name + "\0" + json.dumps(call.input, sort_keys=True, default=str, ensure_ascii=False)


def _digest(result: Result) -> str:
    return hashlib.sha256(result.as_text().encode("utf-8", "replace")).hexdigest()


class LoopGuard:
    """See the module docstring. One instance watches one conversation (a session)."""

    def __init__(
        self,
        *,
        failures: int = 3,
        reads: int = 3,
        on_stop: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        if failures < 1 or reads < 2:
            raise HarnessUsageError("LoopGuard needs failures >= 1 and reads >= 2")
        self.failures = failures
        self.reads = reads
        self._on_stop = on_stop
        self._failing: tuple[str, int] = ("", 0)  # the last failing call's key, and its run of failures
        self._read: dict[str, tuple[str, int]] = {}  # a read's key: its result's digest, times seen
        self._stopping = False

    def stop(self, ctx: StopContext) -> bool:
        """The stop predicate: true once after a repeat was refused."""
        stopping, self._stopping = self._stopping, False
        return stopping

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        key = _key(call)
        read_only = context.spec is not None and context.spec.hints.read_only
        why = self._repeat_of(key, read_only)
        if why is not None:
            return await self._refuse(call, why)
        result = await next(call, context)
        if result.error:
            last, n = self._failing
            n = n + 1 if last == key else 1
            self._failing = (key, n)
            if n == self.failures:
                return _noted(result, FAILED_NOTE.format(n=n))
            return result
        self._failing = ("", 0)
        if not read_only:
            self._read.clear()
            return result
        digest = _digest(result)
        seen, n = self._read.get(key, ("", 0))
        n = n + 1 if seen == digest else 1
        self._read[key] = (digest, n)
        return _noted(result, READ_NOTE.format(n=n)) if n == self.reads else result

    def _repeat_of(self, key: str, read_only: bool) -> str | None:
        """Why this call is one repeat too many, or None."""
        last, n = self._failing
        if last == key and n >= self.failures:
            return f"it failed {n} times in a row"
        if read_only and self._read.get(key, ("", 0))[1] >= self.reads:
            return f"reading the same unchanged result {self._read[key][1]} times"
        return None

    async def _refuse(self, call: ToolCall, why: str) -> Result:
        self._failing = ("", 0)
        self._read.pop(_key(call), None)
        self._stopping = True
        text = STOPPED_TEXT.format(name=call.name, why=why)
        log.warning("loop guard: %s", text)
        if self._on_stop is not None:
            await self._on_stop(text)
        return Result.failure(f"Not run. {text}")


def _noted(result: Result, note: str) -> Result:
    return replace(result, content=(*result.content, Text(note)))
