"""``Later``: the part of a session's set-up that the ``session/new`` answer does not need (the project
context's files, the compaction checkpoints), done once the answer is written.

It starts with the session's composition that only a prompt needs (``first``: the tools, the middleware
stack, on the event loop), then its own work. It runs in the session's after-open work (``CodingControls.opened``, in the connection's task group), or in
the first prompt that needs it before that work began. Every prompt waits for it (``wait``: the session's
``SessionSetup.ready``), so a prompt sent at once is served with the full set-up; a failure is raised to the
prompt waiting, as a clear error, and the next prompt tries again. The command list waits for one attempt
(``attempt``) without taking the failure, which stays the prompt's to report. ``cancel`` (the session
closing) stops an attempt in progress.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from harness import HarnessUsageError

from ..protocol.errors import INTERNAL_ERROR, RpcError

if TYPE_CHECKING:
    from harness import Tool, ToolSource

__all__ = ["LateTools", "Later"]

log = logging.getLogger(__name__)


class Later:
    """Set-up work left for after the opening answer (see the module docstring)."""

    def __init__(self, work: Callable[[], Awaitable[None]], session_id: str) -> None:
        self._work = work
        self._session_id = session_id
        self._done = False
        self._running: anyio.Event | None = None
        self._failure: Exception | None = None
        """The last attempt's failure, until a prompt reported it."""
        self._scope: anyio.CancelScope | None = None
        self._closed = False
        self._first: Callable[[], None] | None = None

    def first(self, step: Callable[[], None]) -> None:
        """``step`` (on the event loop, no file work) starts every attempt until it succeeded once."""
        self._first = step

    @property
    def done(self) -> bool:
        return self._done

    async def attempt(self) -> None:
        """Make sure one attempt ran (run it, or wait for the one running); never raises its failure."""
        if self._done or self._failure is not None:
            return
        if self._running is not None:
            await self._running.wait()
            return
        if self._closed:
            return
        running = self._running = anyio.Event()
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._first is not None:
                    self._first()
                    self._first = (
                        None  # (kept until it succeeded: a failed one is tried again, as the work is)
                    )
                await self._work()
                self._done = True
        except anyio.get_cancelled_exc_class():
            raise  # the session closed or the prompt running it was cancelled: the next one tries again
        except Exception as exc:
            log.warning("session %s: setting up failed: %s", self._session_id, exc, exc_info=exc)
            self._failure = exc
        finally:
            self._scope = None
            self._running = None
            running.set()

    async def wait(self) -> None:
        """Wait for the work to be done (running an attempt when none is under way); an attempt's failure
        is raised as an ``RpcError`` (once: the next call tries again)."""
        while not self._done:
            failure = self._failure
            if failure is not None:
                self._failure = None
                raise _as_error(failure) from failure
            if self._closed:
                raise RpcError.not_found(f"session not found: {self._session_id}", uri=self._session_id)
            await self.attempt()

    def cancel(self) -> None:
        """The session closed: stop an attempt in progress and start none."""
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()


def _as_error(failure: Exception) -> RpcError:
    if isinstance(failure, RpcError):
        return failure
    return RpcError(
        INTERNAL_ERROR,
        f"setting up the session failed: {failure}",
        {"errorKind": "configuration_error" if isinstance(failure, OSError) else "internal_error"},
    )


class LateTools:
    """A session's tool source whose tools are composed after the answer (``Later.first``); every prompt
    waits for that, so a read before it is a bug, raised as one (never an empty tool list)."""

    def __init__(self) -> None:
        self._source: ToolSource | None = None

    def use(self, source: ToolSource) -> None:
        self._source = source

    async def tools(self) -> Sequence[Tool]:
        if self._source is None:
            raise HarnessUsageError("the session's tools were read before its set-up was completed")
        return await self._source.tools()
