"""Run the agent: over the process's stdio (``serve_stdio``) or any pair of byte streams (``serve``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from ..protocol.connection import Connection
from ._agent import AcpAgent
from ._warm import freeze_after_warm_up

if TYPE_CHECKING:
    from harness.secrets import Secrets

    from .._early import EarlyStart
    from ..model_setup import ModelSettings
    from ._setup import SessionFactory

__all__ = ["ResponseWatch", "ServeConfig", "serve", "serve_stdio"]

log = logging.getLogger(__name__)


class ResponseWatch(ByteSendStream):
    """Passes bytes through and tells the agent when a response to a watched request id was written.

    Zed drops updates for a session it has not registered yet, and it registers a session when it reads
    the ``session/new`` (load, resume) response: so the session's updates wait for that write.
    """

    def __init__(self, inner: ByteSendStream, agent: AcpAgent) -> None:
        self._inner = inner
        self._agent = agent

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)
        answered = self._agent.answered
        if answered.watching:
            # The connection writes queued lines in batches: look at every line of the chunk.
            for line in item.split(b"\n"):
                for request_id in _response_ids(line):
                    answered.written(request_id)

    async def aclose(self) -> None:
        await self._inner.aclose()


_PREFIX = b'{"jsonrpc":"2.0","id":'


def _response_ids(line: bytes) -> list[Any]:
    # Responses are written as {"jsonrpc":"2.0","id":<id>,"result"|"error":...}: read the id only.
    if not line.startswith(_PREFIX):
        return []
    rest = line[len(_PREFIX) : len(_PREFIX) + 200]
    try:
        decoder = json.JSONDecoder()
        value, end = decoder.raw_decode(rest.decode("utf-8", "replace"))
    except ValueError:
        return []
    tail = rest.decode("utf-8", "replace")[end:]
    if tail.startswith(',"result"') or tail.startswith(',"error"'):
        return [value]
    return []


async def serve(
    receive: ByteReceiveStream,
    send: ByteSendStream,
    agent: AcpAgent,
    *,
    shutdown_grace: float = 5.0,
) -> None:
    """Serve until end of input; then cancel running turns, let their answers out, close the sessions."""
    async with anyio.create_task_group() as tg:
        conn = Connection(receive, ResponseWatch(send, agent), agent, shutdown_grace=shutdown_grace)

        def spawn(func: Callable[[], Awaitable[None]]) -> None:
            async def run() -> None:
                await func()

            tg.start_soon(run)

        agent.attach(conn, spawn)
        await conn.serve()
        with anyio.CancelScope(shield=True), anyio.move_on_after(shutdown_grace):
            await agent.aclose()
        tg.cancel_scope.cancel()


class ServeConfig(Protocol):
    """What ``serve_stdio`` reads of the resolved configuration (``acp_agent.config.Config``, which this
    layer does not import)."""

    @property
    def log_level(self) -> str: ...
    @property
    def home(self) -> Path: ...
    @property
    def problems(self) -> Sequence[object]: ...


def serve_stdio(
    config: ServeConfig,
    factory: SessionFactory,
    settings: ModelSettings,
    *,
    secrets: Secrets,
    early: EarlyStart | None = None,
    forget_key: Callable[[], object] | None = None,
) -> int:
    """The ``acp-agent`` process: protocol on stdin/stdout, logs on stderr and the log file; ``factory``
    equips each session (the composition root, ``acp_agent.cli``, passes the coding agent's, built with the
    same ``secrets``: the log redacts what the sessions keep from their commands). ``early``: stdio was
    already taken, and perhaps ``initialize`` answered, by ``acp_agent._early``."""
    from ..logs import configure_logging
    from ..protocol.stdio import open_stdio

    if early is None:
        receive, send = open_stdio()  # first: nothing may reach the real stdout from here on
    else:
        receive, send = open_stdio((early.in_fd, early.out_fd), early.pending)
    configure_logging(config.log_level, config.home, redact=secrets.redact)
    for problem in config.problems:
        log.warning("configuration: %s", problem)
    agent = AcpAgent(home=config.home, settings=settings, factory=factory)
    freeze_after_warm_up()  # this process's start-up objects, out of the collector's passes
    agent.routes.learn = lambda values: secrets.add((), values)  # providers/set's credentials: masked
    agent.forget_key = forget_key  # logout: the key acp-agent setup stored
    if early is not None and early.initialized is not None:
        agent.mark_initialized(early.initialized)
    if early is not None and early.opened is not None:
        agent.early.opened = early.opened

    async def main() -> None:
        from ._signals import EndOnSignal, watch

        ending = EndOnSignal(receive)  # SIGTERM and SIGHUP end the input as EOF does
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, ending)
                await serve(ending, send, agent)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await receive.aclose()
                await send.aclose()

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return 130
    return 0
