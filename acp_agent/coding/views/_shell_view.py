"""How ``shell`` calls look, in one of three ways:

- **in the editor's terminal** (the client has ``terminal``): the runner embeds the terminal in the call as
  soon as it exists; the output is not repeated; the last update names no terminal (it was released, and
  Zed drops an update naming a terminal it forgot), and a replay shows the output as text;
- **Zed's display-only terminal** (``_meta.terminal_output`` without ``terminal``): the local command's
  output streams through ``_meta`` ``terminal_info`` / ``terminal_output`` / ``terminal_exit``; a client
  that advertises ``_meta.terminal_output_delta`` instead (JetBrains') gets each chunk under that key,
  ``{terminal_id, data}`` as codex-acp sends it;
- **text** (``TextCall``): the output so far in a code block, then the result.

The title is the command itself, as written (Zed relabels the embedded terminal with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from harness.tools import shell_value

from ...protocol.models import TerminalToolCallContent
from ...session.plugin import Shown, TextCall, result_content

if TYPE_CHECKING:
    from harness import Result, ToolCall, ToolResult

    from ...protocol.models import ToolCallLocation, ToolKind
    from ...session.plugin import CallView, SessionEnvironment
    from .._terminal import EditorTerminals
    from ._views import ProjectPaths

__all__ = ["ShellView", "terminal_output_key"]

_TITLE_CHARS: Final = 1000


def terminal_output_key(env: SessionEnvironment) -> str | None:
    """The ``_meta`` key the client reads streamed command output under: Zed's ``terminal_output``, else
    JetBrains' ``terminal_output_delta``; None: the client takes neither."""
    for key in ("terminal_output", "terminal_output_delta"):
        if env.client_can("_meta", key):
            return key
    return None


class ShellView:
    """The ``shell`` tool's view. ``terminals``: commands run in the editor's terminal (its runner notes
    them there); else ``output_key``: the client shows display-only terminals, their output streamed under
    that ``_meta`` key (``terminal_meta``: Zed's ``terminal_output``)."""

    def __init__(
        self,
        paths: ProjectPaths,
        *,
        terminals: EditorTerminals | None = None,
        terminal_meta: bool = False,
        output_key: str | None = None,
    ) -> None:
        self._paths = paths
        self._terminals = terminals
        self._output_key = output_key or ("terminal_output" if terminal_meta else None)

    @property
    def kind(self) -> ToolKind:
        return "execute"

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        command = tool_input.get("command") if tool_input is not None else None
        if not isinstance(command, str) or not command.strip():
            return None
        # The command as written: for an execute call Zed relabels the embedded terminal with the title.
        command = command.strip()
        return command if len(command) <= _TITLE_CHARS else command[: _TITLE_CHARS - 1] + "…"

    def locations(self, tool_input: Mapping[str, Any]) -> list[ToolCallLocation] | None:
        return None

    def open(self, call_id: str) -> CallView:
        if self._terminals is not None:
            return _InEditorTerminal(call_id, self._terminals)
        if self._output_key is not None:
            return _InZedTerminal(call_id, self._paths, self._output_key)
        return TextCall()

    def replayed(self, call: ToolCall, result: ToolResult | None) -> Shown:
        return Shown(content=result_content(result) if result is not None else None)


class _InEditorTerminal:
    def __init__(self, call_id: str, terminals: EditorTerminals) -> None:
        self._call_id = call_id
        self._terminals = terminals

    def ready(self, tool_input: Mapping[str, Any]) -> Shown:
        return Shown()

    def progress(self, value: Any) -> Shown | None:
        return None  # the editor's terminal shows it

    def ended(self, result: Result) -> Shown:
        if self._terminals.take(self._call_id) is None:  # never ran in a terminal (refused, failed to start)
            return Shown(content=result_content(result))
        return Shown(replay=result_content(result))


class _InZedTerminal:
    def __init__(self, call_id: str, paths: ProjectPaths, output_key: str = "terminal_output") -> None:
        self._id = call_id
        self._paths = paths
        self._output_key = output_key

    def ready(self, tool_input: Mapping[str, Any]) -> Shown:
        cwd = self._paths.absolute(tool_input.get("cwd") or ".")
        return Shown(
            content=[TerminalToolCallContent(terminal_id=self._id)],
            meta={"terminal_info": {"terminal_id": self._id, "cwd": cwd}},
        )

    def progress(self, value: Any) -> Shown | None:
        chunk: Any = cast("dict[str, Any]", value).get("output") if isinstance(value, dict) else None
        if not isinstance(chunk, str) or not chunk:
            return None
        return Shown(meta={self._output_key: {"terminal_id": self._id, "data": chunk}})

    def ended(self, result: Result) -> Shown:
        value = shell_value(result.value)
        code = value["exit_code"] if value is not None else None
        return Shown(
            content=[TerminalToolCallContent(terminal_id=self._id)],
            meta={
                "terminal_exit": {
                    "terminal_id": self._id,
                    "exit_code": code if code is not None and code >= 0 else None,
                    "signal": f"SIG{-code}" if code is not None and code < 0 else None,
                }
            },
            replay=result_content(result),
        )
