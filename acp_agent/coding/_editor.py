"""The editor as file system: ``fs/read_text_file`` and ``fs/write_text_file`` (its terminal is
``_terminal``).

Each is used only when the client advertised it. The editor's word on a file is final: when it answers
with an error the tool fails with the editor's message (the user rejected the edit, the buffer could not
be saved), and after a timeout or a closed connection the disk is not touched either (the editor may
still write the file). Two answers send the tools to the local disk instead: "method not found" (the
client advertised ``fs`` but does not implement it: the disk from then on) and "resource not found"
(-32002, what Zed answers for a path outside its project, e.g. an ``additionalDirectories`` folder).

The disk side (the fallback, and the parent folders made before ``fs/write_text_file``) opens beneath the
session's root without following a symlink. What the editor itself reads or writes at the path it is
given is the editor's doing: the tools' check of that path (no symlink out of the project) is a check
made before the request, and a link swapped in while the request is under way is not seen by it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio

from harness.tools import LocalFileSystem, Root

from ..protocol.errors import METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, ConnectionClosedError, RpcError
from ..protocol.jsonvalue import as_object

if TYPE_CHECKING:
    from ..session.plugin import SessionEnvironment

__all__ = ["EditorFileError", "EditorFileSystem"]

log = logging.getLogger(__name__)

FS_TIMEOUT_S: Final = 30.0


class EditorFileError(OSError):
    """The editor refused a read or write, did not answer in time, or went away; the message says which
    (with the editor's own words) and the tool fails with it."""


class EditorFileSystem:
    """A ``harness.tools.FileSystem`` over the client's ``fs/*`` methods (see the module docstring)."""

    def __init__(
        self,
        env: SessionEnvironment,
        *,
        root: Root | None = None,
        read: bool | None = None,
        write: bool | None = None,
    ) -> None:
        self._env = env
        self._disk = LocalFileSystem(root)  # beneath the root, no symlink followed (``harness.tools``)
        self.read_via_editor = env.client_can("fs", "readTextFile") if read is None else read
        self.write_via_editor = env.client_can("fs", "writeTextFile") if write is None else write
        self.fallbacks = 0
        """How many times the editor sent a path to the disk (tests and logs read it)."""

    async def read_text(self, path: Path) -> str:
        # A file the disk does not have is missing for the tools (a new file has no buffer worth reading).
        if not self.read_via_editor or not await anyio.Path(path).is_file():
            return await self._disk.read_text(path)
        try:
            result = await self._request("fs/read_text_file", {"path": str(path)}, "read")
        except _ToDisk:
            return await self._disk.read_text(path)
        content = as_object(result).get("content")
        if not isinstance(content, str):
            raise EditorFileError("the editor answered fs/read_text_file without the file's text")
        return content

    async def write_text(self, path: Path, text: str) -> None:
        if not self.write_via_editor:
            await self._disk.write_text(path, text)
            return
        made = await self._disk.make_dirs(path.parent)
        try:
            await self._request("fs/write_text_file", {"path": str(path), "content": text}, "write")
        except _ToDisk:
            await self._disk.write_text(path, text)
        except BaseException:
            await self._disk.remove_dirs(made)
            raise

    async def _request(self, method: str, params: dict[str, Any], verb: str) -> Any:
        """The editor's answer; ``_ToDisk`` when the disk should serve it, else ``EditorFileError``."""
        try:
            return await self._env.connection.request(
                method, {"sessionId": self._env.session_id, **params}, timeout=FS_TIMEOUT_S
            )
        except TimeoutError:
            done = "read from" if verb == "read" else "written to"
            raise EditorFileError(
                f"the editor did not answer {method} within {FS_TIMEOUT_S:.0f} s; nothing was {done} "
                "the disk instead"
            ) from None
        except ConnectionClosedError:
            raise EditorFileError(f"the editor went away before answering {method}") from None
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                log.info("the editor does not implement %s; using the disk from now on", method)
                if verb == "read":
                    self.read_via_editor = False
                else:
                    self.write_via_editor = False
            elif exc.code != RESOURCE_NOT_FOUND:
                raise EditorFileError(f"the editor refused to {verb} the file: {exc.message}") from None
            self.fallbacks += 1
            log.info("%s %s: the editor answered %s; using the disk", method, params["path"], exc.code)
            raise _ToDisk() from None


class _ToDisk(Exception):
    """The editor sent this path to the disk (method not found, outside its project)."""
