"""Turning ACP ``session/update`` payloads into terminal text: streamed replies, dimmed thoughts, tool calls
with their status, coloured diffs, plans and usage. Pure: it writes through a callable, so tests read it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

__all__ = ["Renderer", "Style", "as_obj", "as_objs", "diff_lines"]

_MAX_TOOL_LINES: Final = 40

_STATUS_MARK: Final = {"pending": "·", "in_progress": "…", "completed": "✓", "failed": "✗"}
_PLAN_MARK: Final = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


@dataclass(frozen=True, slots=True)
class Style:
    """ANSI styling, or none (not a tty, or ``NO_COLOR`` set)."""

    color: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def diff_lines(path: str, old: str | None, new: str) -> list[str]:
    """A unified diff of a file change (``old`` None: a new file)."""
    import difflib

    before = (old or "").splitlines(keepends=False)
    after = new.splitlines(keepends=False)
    label_old = "/dev/null" if old is None else f"a{path}" if path.startswith("/") else f"a/{path}"
    label_new = f"b{path}" if path.startswith("/") else f"b/{path}"
    return list(difflib.unified_diff(before, after, label_old, label_new, lineterm=""))


def as_obj(value: object) -> dict[str, Any]:
    """A JSON object, or ``{}`` for anything else (the peer's JSON is not trusted to have its shape)."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def as_objs(value: object) -> list[dict[str, Any]]:
    """The objects of a JSON array (anything else: ``[]``)."""
    if not isinstance(value, list):
        return []
    return [cast(dict[str, Any], v) for v in cast(list[object], value) if isinstance(v, dict)]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(slots=True)
class _ToolCall:
    title: str
    kind: str
    status: str


@dataclass(slots=True)
class Renderer:
    """Renders one session's updates; keeps the little state the protocol spreads over updates."""

    write: Callable[[str], None]
    style: Style
    tools: dict[str, _ToolCall] = field(default_factory=dict[str, _ToolCall])
    commands: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    usage: Mapping[str, Any] | None = None
    title: str | None = None
    current_mode: str | None = None
    config_options: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _stream: str | None = None
    _at_line_start: bool = True

    # --- low-level output ---------------------------------------------------------------------------

    def _out(self, text: str) -> None:
        if text:
            self.write(text)
            self._at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish a partly written line (before a prompt or a block)."""
        if not self._at_line_start:
            self._out("\n")
        self._stream = None

    def line(self, text: str) -> None:
        self.end_line()
        self._out(text + "\n")

    def notice(self, text: str) -> None:
        self.line(self.style.dim(text))

    def error(self, text: str) -> None:
        self.line(self.style.red(text))

    # --- session/update -----------------------------------------------------------------------------

    def update(self, update: Mapping[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self._chunk("agent", update.get("content"))
        elif kind == "agent_thought_chunk":
            self._chunk("thought", update.get("content"))
        elif kind == "user_message_chunk":
            self._chunk("user", update.get("content"))
        elif kind == "tool_call":
            self._tool_call(update, new=True)
        elif kind == "tool_call_update":
            self._tool_call(update, new=False)
        elif kind == "plan":
            self._plan(update.get("entries"))
        elif kind == "available_commands_update":
            self._commands(update.get("availableCommands"))
        elif kind == "current_mode_update":
            self.current_mode = _str(update.get("currentModeId")) or None
            self.notice(f"mode: {self.current_mode}")
        elif kind == "config_option_update":
            options = update.get("configOptions")
            if isinstance(options, list):
                self.config_options = [o for o in options if isinstance(o, dict)]  # pyright: ignore[reportUnknownVariableType]
        elif kind == "session_info_update":
            title = update.get("title")
            if isinstance(title, str) and title:
                self.title = title
        elif kind == "usage_update":
            self.usage = update

    def _chunk(self, stream: str, content: Any) -> None:
        if not isinstance(content, dict):
            return
        block: dict[str, Any] = content  # pyright: ignore[reportUnknownVariableType]
        kind = block.get("type")
        if kind == "text":
            text = _str(block.get("text"))
        elif kind == "resource_link":
            text = f"[{_str(block.get('name')) or _str(block.get('uri'))}]"
        else:
            text = f"[{kind}]"
        if stream != self._stream:
            self.end_line()
            if stream == "user":
                self._out(self.style.bold(self.style.cyan("you> ")))
            elif stream == "thought":
                self._out(self.style.dim("thinking: "))
            self._stream = stream
        self._out(self.style.dim(text) if stream == "thought" else text)

    def _tool_call(self, update: Mapping[str, Any], *, new: bool) -> None:
        call_id = _str(update.get("toolCallId"))
        known = self.tools.get(call_id)
        if known is None:
            known = _ToolCall(
                _str(update.get("title")) or "tool", _str(update.get("kind")) or "other", "pending"
            )
            self.tools[call_id] = known
        if isinstance(update.get("title"), str) and update.get("title"):
            known.title = str(update["title"])
        if isinstance(update.get("kind"), str):
            known.kind = str(update["kind"])
        status = update.get("status")
        changed = isinstance(status, str) and status != known.status
        if isinstance(status, str):
            known.status = status
        if new or changed:
            self._tool_header(known)
        content = update.get("content")
        if isinstance(content, list):
            self.tool_content(content)  # pyright: ignore[reportUnknownArgumentType]

    def _tool_header(self, call: _ToolCall) -> None:
        mark = _STATUS_MARK.get(call.status, "·")
        status = call.status.replace("_", " ")
        colour = {"completed": self.style.green, "failed": self.style.red}.get(call.status, self.style.yellow)
        self.line(f"{colour(mark)} {self.style.bold(call.title)} {self.style.dim(f'[{call.kind}] {status}')}")

    def tool_content(self, content: Sequence[Any]) -> None:
        """Tool call content: text, diffs (coloured), terminals."""
        for item in content:
            if not isinstance(item, dict):
                continue
            entry: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
            kind = entry.get("type")
            if kind == "diff":
                self._diff(_str(entry.get("path")), entry.get("oldText"), _str(entry.get("newText")))
            elif kind == "terminal":
                self.line(self.style.dim(f"  [terminal {_str(entry.get('terminalId'))}]"))
            elif kind == "content":
                block = entry.get("content")
                if isinstance(block, dict) and block.get("type") == "text":  # pyright: ignore[reportUnknownMemberType]
                    self._indented(_str(block.get("text")))  # pyright: ignore[reportUnknownMemberType]
                elif isinstance(block, dict):
                    self.line(self.style.dim(f"  [{block.get('type')}]"))  # pyright: ignore[reportUnknownMemberType]

    def _indented(self, text: str) -> None:
        lines = text.splitlines()
        shown = lines[:_MAX_TOOL_LINES]
        for ln in shown:
            self.line(self.style.dim("  │ ") + ln)
        if len(lines) > len(shown):
            self.line(self.style.dim(f"  │ … {len(lines) - len(shown)} more lines"))

    def _diff(self, path: str, old: Any, new: str) -> None:
        for ln in diff_lines(path, old if isinstance(old, str) else None, new):
            if ln.startswith(("+++", "---")):
                self.line(self.style.bold(ln))
            elif ln.startswith("+"):
                self.line(self.style.green(ln))
            elif ln.startswith("-"):
                self.line(self.style.red(ln))
            elif ln.startswith("@@"):
                self.line(self.style.cyan(ln))
            else:
                self.line(ln)

    def _plan(self, entries: Any) -> None:
        if not isinstance(entries, list):
            return
        self.line(self.style.bold("Plan:"))
        for item in entries:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(item, dict):
                status = _str(item.get("status"))  # pyright: ignore[reportUnknownMemberType]
                mark = _PLAN_MARK.get(status, "[ ]")
                text = _str(item.get("content"))  # pyright: ignore[reportUnknownMemberType]
                self.line(f"  {mark} {self.style.dim(text) if status == 'completed' else text}")

    def _commands(self, commands: Any) -> None:
        if not isinstance(commands, list):
            return
        found: list[tuple[str, str]] = []
        for item in commands:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(item, dict) and isinstance(item.get("name"), str):  # pyright: ignore[reportUnknownMemberType]
                found.append((str(item["name"]), _str(item.get("description"))))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        self.commands = found

    def usage_line(self) -> str | None:
        """``tokens 1200/200000 (1%)`` (and the cost) from the last usage update, if any."""
        usage = self.usage
        if usage is None:
            return None
        used, size = usage.get("used"), usage.get("size")
        if not isinstance(used, int) or not isinstance(size, int):
            return None
        text = f"context {used}/{size} tokens"
        if size > 0:
            text += f" ({used * 100 // size}%)"
        cost = usage.get("cost")
        if isinstance(cost, dict) and isinstance(cost.get("amount"), int | float):  # pyright: ignore[reportUnknownMemberType]
            text += f", cost {cost['amount']:.4f} {_str(cost.get('currency'))}".rstrip()  # pyright: ignore[reportUnknownMemberType]
        return text
