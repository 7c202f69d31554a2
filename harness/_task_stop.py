"""A cheap stop for the consumer's wait on the next model delta, on asyncio.

The step awaits every delta in a wait that ``cancel()``/``interrupt()`` must be able to stop at once. An anyio
``CancelScope`` per delta does that for 4-6 µs, a fifth of a streamed update's cost. On asyncio the same
stop is one native ``Task.cancel()`` of the waiting task, taken back with ``Task.uncancel()``: anyio 4
counts native cancels (``cancelling()``), so its scopes entered below the wait let such a cancel through and
one raised by them at the same moment is not swallowed here (the count tells).

``TaskStop`` delivers the cancel as anyio's own scope would to the one task it holds
(``_deliver_cancellation``): never to the task that asks while it runs, nor while the future it awaits is
already done (it is waking anyway), nor inside a shielded anyio scope entered during the wait (a shield is
a promise: the model's own cleanup is not cut short). Like the scope, it keeps delivering at each loop
iteration until the wait ends, so each new await inside the wait is cancelled too (a model that swallowed
one cancel gets the next); every cancel delivered is taken back when the wait ends. Nothing stays armed
across a ``yield``: the step arms it per wait and disarms it after.

The shield is read from anyio's task state (private); ``available()`` is False where that is not there,
and the step then keeps anyio's scope. Trio keeps anyio's scope as well.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any, cast

__all__ = ["TaskStop", "available"]


# The running task of a loop: on 3.11 ``asyncio.current_task(loop)`` is a Python function around this
# dict's ``get`` (0.2 µs against 0.04, once per delta); where the dict is gone (3.12+ keep it in C) the
# function is the way.
_by_loop: Any = getattr(asyncio.tasks, "_current_tasks", None)
_current_task: Callable[[asyncio.AbstractEventLoop], asyncio.Task[Any] | None] = (
    cast("dict[asyncio.AbstractEventLoop, asyncio.Task[Any]]", _by_loop).get
    if isinstance(_by_loop, dict)
    else asyncio.current_task
)


def _anyio_states() -> Any:
    backend = sys.modules.get("anyio._backends._asyncio")
    return getattr(backend, "_task_states", None)


def available() -> bool:
    """Whether a ``TaskStop`` can stand in for anyio's scope in the running asyncio loop."""
    return _anyio_states() is not None


class TaskStop:
    """Stops one task's wait with a native cancel; ``arm`` before the wait, ``disarm`` after it."""

    __slots__ = ("_before", "_handle", "_loop", "_state", "base", "fired", "task")

    def __init__(self) -> None:
        # The running loop, once: ``current_task()`` without it looks the loop up, ~0.8 µs on 3.11.
        self._loop = asyncio.get_running_loop()
        self.task: asyncio.Task[Any] | None = None
        self._state: Any = None  # anyio's TaskState of ``task``: its current cancel scope
        self.base: Any = None  # the task's anyio scope when the wait began
        self.fired = 0  # cancels delivered in this wait, each taken back when it ends
        self._before = 0
        self._handle: asyncio.Handle | None = None

    def arm(self) -> None:
        task = _current_task(self._loop)
        if task is not self.task or self._state is None:
            self.task = task
            states = _anyio_states()
            self._state = states.get(task) if states is not None and task is not None else None
        self.base = self._state.cancel_scope if self._state is not None else None

    def cancel(self) -> None:
        """Stop the wait: now if the task can take it, else at the next loop iteration it can; and again
        at each iteration it waits anew, until the wait ends (as a cancelled scope does)."""
        if not self.fired and self._handle is None:
            self._deliver()

    def caught(self) -> bool:
        """A CancelledError ended the wait: True when it was this stop's alone (taken back: the step
        stops), False when someone else's is in it too (re-raise)."""
        fired, self.fired = self.fired, 0
        if not fired:
            return False
        assert self.task is not None
        for _ in range(fired - 1):
            self.task.uncancel()
        return self.task.uncancel() <= self._before

    def disarm(self) -> None:
        """The wait is over: drop the pending delivery; cancels the model swallowed are taken back."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        while self.fired:
            self.fired -= 1
            assert self.task is not None
            self.task.uncancel()

    def _deliver(self) -> None:
        self._handle = None
        task = self.task
        if task is None or task.done():
            return
        waiter = getattr(task, "_fut_waiter", None)
        if (
            task is not _current_task(self._loop)
            and not getattr(task, "_must_cancel", False)
            and not (isinstance(waiter, asyncio.Future) and waiter.done())
            and not self._shielded()
        ):
            if not self.fired:
                self._before = task.cancelling()
            self.fired += 1
            task.cancel("stopped by the harness")
        self._handle = self._loop.call_soon(self._deliver)

    def _shielded(self) -> bool:
        """Whether the task is inside a shielded anyio scope it entered after the wait began."""
        scope = self._state.cancel_scope if self._state is not None else None
        while scope is not None and scope is not self.base:
            if scope.shield:
                return True
            scope = scope._parent_scope
        return False
