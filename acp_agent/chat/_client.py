"""The chat's side of the ACP connection: the agent's requests it serves (permission questions, the
``fs/*`` methods on the local disk) and the updates it hands to the renderer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread

from ..protocol.connection import RequestContext
from ..protocol.errors import INTERNAL_ERROR, RpcError
from .render import as_obj

if TYPE_CHECKING:
    from .render import Renderer

__all__ = ["ChatClient", "ChatFront"]


class ChatFront(Protocol):
    """What the connection's client side uses of the chat: ``_app.ChatApp``, which ``_process`` hands to
    it."""

    @property
    def session_id(self) -> str | None:
        """The session shown now: updates of any other are not rendered."""
        ...

    @property
    def renderer(self) -> Renderer: ...

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """The user's answer to a ``session/request_permission``."""
        ...

    def turn_marker(self, turn: dict[str, Any]) -> None:
        """A ``_meta.turn`` marker of the session shown: a turn no prompt answer ends starts or ends."""
        ...


class ChatClient:
    """The client side of the connection: serves the agent's requests (permissions, files) and renders
    its updates. Implements ``acp_agent.protocol.Handler``."""

    def __init__(self, app: ChatFront) -> None:
        self._app = app

    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any:
        if not isinstance(params, dict):
            raise RpcError.invalid_params("invalid params: expected an object")
        p: dict[str, Any] = params  # pyright: ignore[reportUnknownVariableType]
        if method == "session/request_permission":
            return await self._app.ask_permission(p)
        if method == "fs/read_text_file":
            return await _read_text_file(p)
        if method == "fs/write_text_file":
            return await _write_text_file(p)
        raise RpcError.method_not_found(method)

    async def handle_notification(self, method: str, params: Any) -> None:
        if method != "session/update" or not isinstance(params, dict):
            return
        p: dict[str, Any] = params  # pyright: ignore[reportUnknownVariableType]
        update = p.get("update")
        if p.get("sessionId") == self._app.session_id and isinstance(update, dict):
            u: dict[str, Any] = update  # pyright: ignore[reportUnknownVariableType]
            self._app.renderer.update(u)
            turn = as_obj(as_obj(u.get("_meta")).get("turn"))
            if u.get("sessionUpdate") == "session_info_update" and turn:
                self._app.turn_marker(turn)


def _absolute(params: dict[str, Any]) -> Path:
    path = params.get("path")
    if not isinstance(path, str) or not os.path.isabs(path):
        raise RpcError.invalid_params("invalid params: path: must be an absolute path")
    return Path(path)


async def _read_text_file(params: dict[str, Any]) -> dict[str, Any]:
    path = _absolute(params)
    line, limit = params.get("line"), params.get("limit")
    try:
        text = await anyio.to_thread.run_sync(lambda: path.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        raise RpcError.not_found(f"file not found: {path}", uri=str(path)) from None
    except OSError as exc:
        raise RpcError(INTERNAL_ERROR, f"cannot read {path}: {exc.strerror}") from None
    if isinstance(line, int) or isinstance(limit, int):
        lines = text.splitlines(keepends=True)
        start = max((line if isinstance(line, int) else 1) - 1, 0)
        end = start + limit if isinstance(limit, int) and limit >= 0 else len(lines)
        text = "".join(lines[start:end])
    return {"content": text}


async def _write_text_file(params: dict[str, Any]) -> None:
    path = _absolute(params)
    content = params.get("content")
    if not isinstance(content, str):
        raise RpcError.invalid_params("invalid params: content: must be a string")

    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")

    try:
        await anyio.to_thread.run_sync(write)
    except OSError as exc:
        raise RpcError(INTERNAL_ERROR, f"cannot write {path}: {exc.strerror}") from None
