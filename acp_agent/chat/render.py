"""Turning ACP ``session/update`` payloads into terminal output with ``rich``: replies rendered as Markdown
(block by block as they complete), dimmed thoughts, tool calls with their status, coloured diffs, plans
and usage. A tool's streamed output is not printed as it comes (each update carries it whole): on a
terminal that can redraw (``live``) its last lines show in a live area, updated in place; when the call
ends its output is printed once, long outputs collapsed to their start and end. Pure: it writes through
a callable, so tests read it."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Final, cast

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from ._markdown import BlockStream

__all__ = ["Renderer", "Style", "as_obj", "as_objs", "collapse", "diff_lines"]

_HEAD_LINES: Final = 6
_TAIL_LINES: Final = 6
_LIVE_LINES: Final = 8
_LIVE_SHOWN: Final = 12

_STATUS_MARK: Final = {
    "pending": "·",
    "in_progress": "…",
    "completed": "✓",
    "failed": "✗",
    "cancelled": "⊘",
    "rejected": "✗",
}
_PLAN_MARK: Final = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
_FINAL: Final = frozenset({"completed", "failed", "cancelled", "rejected"})
_PADDING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)(?=\n)")


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


def collapse(text: str, head: int = _HEAD_LINES, tail: int = _TAIL_LINES) -> list[str]:
    """The lines of ``text``, the middle of a long one replaced by a line saying how many were hidden."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= head + tail + 1:
        return lines
    return [*lines[:head], f"… {len(lines) - head - tail} more lines …", *lines[-tail:]]


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


def _content_key(entry: Mapping[str, Any]) -> str:
    """What makes two content entries the same to the eye (a diff: its path and texts, whatever else
    the update carries)."""
    if entry.get("type") == "diff":
        return repr(("diff", entry.get("path"), entry.get("oldText"), entry.get("newText")))
    return repr(sorted(entry.items()))


class _Sink(io.TextIOBase):
    """What ``rich`` writes, passed on without the padding it adds to fill each line's width."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write

    def write(self, s: str) -> int:
        self._write(_PADDING.sub(r"\1", s))
        return len(s)

    def flush(self) -> None:
        pass


@dataclass(slots=True)
class _ToolCall:
    title: str
    kind: str
    status: str
    output: str = ""  # the text content as last received (each update replaces it)
    printed: set[str] = field(default_factory=set[str])  # the content already printed for good


@dataclass(slots=True)
class Renderer:
    """Renders one session's updates; keeps the little state the protocol spreads over updates.

    ``live``: the terminal can redraw (a tty that is not ``TERM=dumb``): running output and the reply's
    last block show in place. ``show_live``: instead, where that goes (the chat's edited line draws it
    above its prompt, so a line can be typed meanwhile); it gets ``""`` when nothing is in progress."""

    write: Callable[[str], None]
    style: Style
    live: bool = False
    width: int = 100
    tools: dict[str, _ToolCall] = field(default_factory=dict[str, _ToolCall])
    commands: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    usage: Mapping[str, Any] | None = None
    title: str | None = None
    current_mode: str | None = None
    config_options: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    show_live: Callable[[str], None] | None = None
    _console: Console | None = None
    _live: Live | None = None
    _stream: str | None = None
    _blocks: BlockStream = field(default_factory=BlockStream)

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = Console(
                file=cast("IO[str]", _Sink(self.write)),
                force_terminal=self.style.color or self.live,
                no_color=not self.style.color,
                color_system="standard" if self.style.color else None,
                width=self.width,
                highlight=False,
                emoji=False,
            )
        return self._console

    # --- low-level output ---------------------------------------------------------------------------

    def _print(self, renderable: RenderableType) -> None:
        self.console.print(renderable, soft_wrap=isinstance(renderable, Text))

    def end_line(self) -> None:
        """Finish what is streaming (before a prompt, a block or a question): the reply's last block,
        the live area."""
        self._settle_stream()
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self.show_live is not None:
            self.show_live("")

    def line(self, text: str) -> None:
        self.end_line()
        self._print(Text.from_ansi(text) if "\x1b" in text else Text(text))

    def notice(self, text: str) -> None:
        self.line(self.style.dim(text))

    def error(self, text: str) -> None:
        self.line(self.style.red(text))

    def _settle_stream(self) -> None:
        rest = self._blocks.flush()
        if self._stream == "agent" and rest.strip():
            self._print(Markdown(rest))
        elif self._stream == "thought" and rest.strip():
            self._print(Text(rest.rstrip("\n"), style="dim"))
        self._stream = None
        if self._live is not None or self.show_live is not None:
            self._refresh_live()  # without the block just printed

    def _refresh_live(self) -> None:
        """Show what is in progress (the reply's last block, running tools' last lines) in place."""
        if not self.live and self.show_live is None:
            return
        parts: list[RenderableType] = []
        tail = self._blocks.tail
        if self._stream == "agent" and tail.strip():
            parts.append(Markdown(tail))
        elif self._stream == "thought" and tail.strip():
            parts.append(Text(tail, style="dim"))
        for call in self.tools.values():
            if call.status not in _FINAL and call.output:
                lines = call.output.rstrip("\n").splitlines()[-_LIVE_LINES:]
                parts.append(Text(f"  {call.title}", style="bold"))
                parts.extend(Text(f"  │ {ln}", style="dim") for ln in lines)
        if self.show_live is not None:
            self.show_live(self._rendered(parts))
            return
        if self._live is None:
            if not parts:
                return
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,  # the chat writes the terminal itself (prompts)
                redirect_stderr=False,
            )
            self._live.start()
        self._live.update(Group(*parts), refresh=True)

    def _rendered(self, parts: list[RenderableType]) -> str:
        """``parts`` as the terminal shows them, at most a screenful's share of lines."""
        if not parts:
            return ""
        with self.console.capture() as captured:
            self.console.print(Group(*parts))
        lines = _PADDING.sub(r"\1", captured.get()).splitlines(keepends=True)
        return "".join(lines[-_LIVE_SHOWN:])

    # --- session/update -----------------------------------------------------------------------------

    def update(self, update: Mapping[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self._chunk("agent", update.get("content"))
        elif kind == "agent_thought_chunk":
            self._chunk("thought", update.get("content"))
        elif kind == "user_message_chunk":
            self._chunk("user", update.get("content"))
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_call(update)
        elif kind == "plan":
            self._plan(update.get("entries"))
        elif kind == "available_commands_update":
            self._commands(update.get("availableCommands"))
        elif kind == "current_mode_update":
            self.current_mode = _str(update.get("currentModeId")) or None
            self.notice(f"mode: {self.current_mode}")
        elif kind == "config_option_update":
            self.config_options = as_objs(update.get("configOptions"))
        elif kind == "session_info_update":
            title = update.get("title")
            if isinstance(title, str) and title:
                self.title = title
        elif kind == "usage_update":
            self.usage = update

    def _chunk(self, stream: str, content: Any) -> None:
        block = as_obj(content)
        kind = block.get("type")
        if kind == "text":
            text = _str(block.get("text"))
        elif kind == "resource_link":
            text = f"[{_str(block.get('name')) or _str(block.get('uri'))}]"
        else:
            text = f"[{kind}]"
        if stream != self._stream:
            self._settle_stream()
            if stream == "thought":
                self._print(Text("thinking:", style="dim"))
            self._stream = stream
        if stream == "user":
            self._print(Text.assemble(("you> ", "bold cyan"), text))
            self._stream = None
            return
        for done in self._blocks.feed(text):  # printed for good (above the live area, if any)
            self._print(Markdown(done) if stream == "agent" else Text(done, style="dim"))
        self._refresh_live()

    def _tool_call(self, update: Mapping[str, Any]) -> None:
        self._settle_stream()
        call_id = _str(update.get("toolCallId"))
        known = self.tools.get(call_id)
        if known is None:
            title, kind = _str(update.get("title")) or "tool", _str(update.get("kind")) or "other"
            known = self.tools[call_id] = _ToolCall(title, kind, "pending")
        if _str(update.get("title")):
            known.title = _str(update.get("title"))
        if _str(update.get("kind")):
            known.kind = _str(update.get("kind"))
        status = update.get("status")
        changed = isinstance(status, str) and status != known.status and known.status not in _FINAL
        if changed:
            known.status = str(status)
        if changed and known.status in _FINAL:  # one line per call, when it ends (running: the live area)
            self._header(known)
        content = update.get("content")
        if isinstance(content, list):
            self._content(known, cast("list[Any]", content))
        if changed and known.status in _FINAL:
            self._print_output(known)
        self._refresh_live()

    def mark(self, call_id: str, status: str) -> None:
        """The chat's own word on a call (``rejected`` by the user, ``cancelled`` with the turn): the
        agent sends no status over it."""
        call = self.tools.get(call_id)
        if call is None or call.status in _FINAL:
            return
        call.status = status
        self._header(call)
        self._print_output(call)
        self._refresh_live()

    def mark_open(self, status: str) -> None:
        """Mark every call that has not ended (the turn was cancelled)."""
        for call_id in list(self.tools):
            self.mark(call_id, status)

    def _header(self, call: _ToolCall) -> None:
        mark = _STATUS_MARK.get(call.status, "·")
        status = call.status.replace("_", " ")
        colour = {"completed": self.style.green, "failed": self.style.red, "rejected": self.style.red}.get(
            call.status, self.style.yellow
        )
        self.line(f"{colour(mark)} {self.style.bold(call.title)} {self.style.dim(f'[{call.kind}] {status}')}")

    def _content(self, call: _ToolCall, content: list[Any]) -> None:
        texts: list[str] = []
        for entry in as_objs(content):
            kind = entry.get("type")
            if kind == "content":
                block = as_obj(entry.get("content"))
                texts.append(
                    _str(block.get("text")) if block.get("type") == "text" else f"[{block.get('type')}]"
                )
                continue
            key = _content_key(entry)
            if key in call.printed:
                continue
            call.printed.add(key)
            if kind == "diff":
                self._diff(_str(entry.get("path")), entry.get("oldText"), _str(entry.get("newText")))
            elif kind == "terminal":
                self.line(self.style.dim(f"  [terminal {_str(entry.get('terminalId'))}]"))
        call.output = "\n".join(t for t in texts if t)
        if call.status in _FINAL:
            self._print_output(call)

    def _print_output(self, call: _ToolCall) -> None:
        """The call's text content, once, collapsed when long."""
        text = call.output
        if not text.strip() or text in call.printed:
            return
        call.printed.add(text)
        for ln in collapse(text):
            self.line(self.style.dim("  │ ") + ln)

    def tool_content(self, content: Sequence[Any], call_id: str | None = None) -> None:
        """The content of a permission question about ``call_id``: text, diffs (coloured), terminals. A diff
        shown here is not shown again when the call ends."""
        call = self.tools.get(call_id) if call_id else None
        if call is None:
            call = _ToolCall("", "", "pending")
            if call_id:
                self.tools[call_id] = call
        texts: list[dict[str, Any]] = []
        for entry in as_objs(list(content)):
            if entry.get("type") == "content":
                texts.append(entry)
            else:
                self._content(call, [entry])
        for entry in texts:  # the question's own text: shown now, not kept as the call's output
            block = as_obj(entry.get("content"))
            text = _str(block.get("text")) if block.get("type") == "text" else f"[{block.get('type')}]"
            for ln in collapse(text):
                self.line(self.style.dim("  │ ") + ln)

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
        for item in as_objs(cast("list[Any]", entries)):
            status = _str(item.get("status"))
            mark = _PLAN_MARK.get(status, "[ ]")
            text = _str(item.get("content"))
            self.line(f"  {mark} {self.style.dim(text) if status == 'completed' else text}")

    def _commands(self, commands: Any) -> None:
        self.commands = [
            (str(item["name"]), _str(item.get("description")))
            for item in as_objs(commands)
            if isinstance(item.get("name"), str)
        ]

    def usage_line(self, turn: Mapping[str, Any] | None = None) -> str | None:
        """``turn 12.3k in (11.0k cached), 120 out; context 1200/200000 tokens (1%), cost …``: the turn's
        tokens (``PromptResponse.usage``) and the last usage update, whichever there is."""
        parts = [t] if (t := _turn_tokens(turn)) else []
        usage = self.usage
        context = self._context_line(usage) if usage is not None else None
        if context:
            parts.append(context)
        return "; ".join(parts) or None

    def _context_line(self, usage: Mapping[str, Any]) -> str | None:
        used, size = usage.get("used"), usage.get("size")
        if not isinstance(used, int) or not isinstance(size, int):
            return None
        text = f"context {used}/{size} tokens"
        if size > 0:
            text += f" ({used * 100 // size}%)"
        cost = as_obj(usage.get("cost"))
        if isinstance(cost.get("amount"), int | float):
            text += f", cost {cost['amount']:.4f} {_str(cost.get('currency'))}".rstrip()
        return text


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _turn_tokens(turn: Mapping[str, Any] | None) -> str | None:
    """``turn 12.3k in (11.0k cached), 120 out`` from ACP's ``Usage``; None without one."""
    if not turn:
        return None
    inp, out, cached = turn.get("inputTokens"), turn.get("outputTokens"), turn.get("cachedReadTokens")
    if not isinstance(inp, int) or not isinstance(out, int):
        return None
    read = f" ({_tokens(cached)} cached)" if isinstance(cached, int) and cached else ""
    return f"turn {_tokens(inp)} in{read}, {_tokens(out)} out"
