"""The connection's input: JSON values read from newline-delimited lines on a byte stream.

One JSON value per line; ``\\r\\n`` and blank lines are tolerated, and a last line without its newline is
read at the end. A line longer than ``max_line_bytes`` is skipped up to its newline and reported once as a
parse error; so is a line that is not JSON. A line over ``_THREAD_PARSE_BYTES`` is decoded in a worker
thread so that it does not stall the event loop. Reading ends at EOF or when the stream fails (logged).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream

from ._trace import trace_in
from .errors import RpcError

__all__ = ["read_values"]

_log = logging.getLogger("acp_agent.protocol")

_THREAD_PARSE_BYTES: Final = 1 << 20


async def read_values(
    receive: ByteReceiveStream,
    *,
    max_line_bytes: int,
    on_value: Callable[[Any], Awaitable[None]],
    on_error: Callable[[RpcError], Awaitable[None]],
) -> None:
    """Read ``receive`` to its end: ``on_value`` for each decoded line, in order and awaited before the next
    line is read; ``on_error`` with the parse error to answer for a line that is too long or not JSON."""
    buffer = bytearray()
    scan_from = 0
    discarding = False  # inside an over-long line: skip to its newline
    while True:
        try:
            chunk = await receive.receive()
        except anyio.EndOfStream:
            _log.debug("end of input")
            break
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            _log.warning("input failed (%s); treating it as end of input", exc)
            break
        if discarding:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk = chunk[newline + 1 :]
            discarding = False
        buffer += chunk
        while True:
            newline = buffer.find(b"\n", scan_from)
            if newline < 0:
                scan_from = len(buffer)
                if len(buffer) > max_line_bytes:
                    _log.warning("input line longer than %d bytes dropped", max_line_bytes)
                    buffer.clear()
                    scan_from = 0
                    discarding = True
                    await on_error(RpcError.parse_error("parse error: line too long"))
                break
            with memoryview(buffer) as view:
                line = bytes(view[:newline])
            del buffer[: newline + 1]
            scan_from = 0
            await _decode(line, on_value, on_error)
    if buffer and not discarding:
        await _decode(bytes(buffer), on_value, on_error)  # a last line without its newline


async def _decode(
    line: bytes,
    on_value: Callable[[Any], Awaitable[None]],
    on_error: Callable[[RpcError], Awaitable[None]],
) -> None:
    if not line or line.isspace():
        return
    try:
        if len(line) > _THREAD_PARSE_BYTES:
            decoded: Any = await anyio.to_thread.run_sync(json.loads, line)
        else:
            decoded = json.loads(line)
    except (ValueError, RecursionError) as exc:
        _log.debug("<- (%d bytes, not JSON: %s; not logged)", len(line), exc)
        await on_error(RpcError.parse_error())
        return
    trace_in(line, decoded)
    await on_value(decoded)
