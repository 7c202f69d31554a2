"""A client that behaves like Zed (``../shared/reference/zed-client.md``), driving the real ``acp-agent``.

What it copies from Zed's source (``agent_servers/src/acp.rs``, ``acp_thread/src/acp_thread.rs``,
``acp_thread/src/terminal.rs``, ``util/src/shell_builder.rs``):

- ``initialize`` with Zed's client info and capabilities (fs, terminal, terminal auth, boolean config
  options, elicitation, ``_meta`` ``terminal_output`` / ``terminal-auth``);
- after ``session/new``: config options replace modes; every saved default
  (``default_config_options``) that differs from the current value *and is among the listed values* is
  sent as ``session/set_config_option``; the session is registered only once those follow-up requests
  are answered (a stricter form of Zed's race); **updates for a session not registered are dropped**;
  ``session/load`` pre-registers the session;
- ``terminal/create``: the command and args joined with spaces, unquoted, run by the shell with stdin
  from /dev/null (``ShellBuilder``); the label is that joined line, and an ``execute`` call's title
  relabels its embedded terminal; ``outputByteLimit`` keeps the *start*,
  cut at a line boundary (``truncated_output``); the terminal keeps its last ``scrollback`` lines;
  ``terminal/release`` forgets the id (later updates naming it fail: "Terminal with id … not found");
- ``tool_call_update`` for an unknown id: "Tool call not found"; cancel marks pending, waiting and
  running calls ``canceled`` locally, a rejected permission marks the call ``rejected``; a later status
  from the agent overrides the mark (what a Zed user then sees is recorded in ``errors``);
- every message is validated against the official SDK's models and the schema (``MessageValidator``).

``errors`` holds what a Zed user would see go wrong; a test asserts it is empty.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from acp_conformance.validate import MessageValidator
from tests.acp.zed.zed_terminals import Refused, Terminal, TerminalHost, kill

__all__ = ["ZED_CAPABILITIES", "Terminal", "Thread", "ToolCall", "ZedClient", "zed"]

REPO = Path(__file__).resolve().parents[3]
LIMIT_S = 30
ZED_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "auth": {"terminal": True},
    "session": {"configOptions": {"boolean": {}}},
    "elicitation": {"form": {}, "url": {}},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}


@dataclass
class ToolCall:
    id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    local_mark: str | None = None  # "canceled" / "rejected": Zed's own status for the call
    content: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    locations: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    raw_input: Any = None
    raw_output: Any = None
    updates: int = 0


@dataclass
class Thread:
    """What Zed's thread holds for a session."""

    session_id: str
    entries: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])  # (role, text)
    tools: dict[str, ToolCall] = field(default_factory=dict[str, ToolCall])
    plan: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    commands: list[str] = field(default_factory=list[str])
    config_options: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    title: str | None = None

    def text(self, role: str = "agent") -> str:
        return "".join(t for r, t in self.entries if r == role)

    def append(self, role: str, text: str) -> None:
        """Add ``text`` to the thread: a chunk of the same role continues the last entry."""
        if self.entries and self.entries[-1][0] == role:
            self.entries[-1] = (role, self.entries[-1][1] + text)
        else:
            self.entries.append((role, text))


class ZedClient:
    """See the module docstring. ``permission`` picks an option kind for each permission request."""

    def __init__(self, process: Process, project: Path, tg: TaskGroup, *, scrollback: int = 10_000) -> None:
        self.process = process
        self.project = project
        self._tg = tg
        self.scrollback = scrollback
        self.validator = MessageValidator()
        self.errors: list[str] = []
        self.dropped: list[dict[str, Any]] = []
        self.threads: dict[str, Thread] = {}
        self.terminal_host = TerminalHost(project, tg, scrollback)
        self.terminals = self.terminal_host.terminals
        self.labels = self.terminal_host.labels
        """Each terminal's label as Zed shows it (made from the create params; an execute title relabels)."""
        self.terminal_requests: list[dict[str, Any]] = []
        self.buffers: dict[str, str] = {}
        self.default_config_options: dict[str, Any] = {}
        self.permission: Callable[[dict[str, Any]], str] = lambda params: "allow_once"
        self.permissions: list[dict[str, Any]] = []
        self._next_id = 0
        self._sent: dict[Any, str] = {}
        self._answers: dict[int, anyio.Event] = {}
        self._results: dict[int, dict[str, Any]] = {}
        self._changed = anyio.Event()
        self._pending_permissions: dict[int, anyio.Event] = {}

    # --- the wire --------------------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request; the whole response (``result`` or ``error``)."""
        self._next_id += 1
        rid = self._next_id
        self._sent[json.dumps(rid)] = method
        self._answers[rid] = anyio.Event()
        await self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with anyio.fail_after(LIMIT_S):
            await self._answers[rid].wait()
        return self._results.pop(rid)

    async def call(self, method: str, params: Any) -> Any:
        answer = await self.request(method, params)
        assert "result" in answer, f"{method} failed: {answer}"
        return answer["result"]

    async def read_loop(self) -> None:
        assert self.process.stdout is not None
        reader = BufferedByteReceiveStream(self.process.stdout)
        while True:
            try:
                line = await reader.receive_until(b"\n", 64 * 1024 * 1024)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
                return
            message = json.loads(line)
            for problem in self.validator.check(message, self._sent):
                self.errors.append(f"invalid message: {problem}")
            if "method" in message and "id" in message:
                self._tg.start_soon(self._serve, message)
            elif "method" in message:
                self._notification(message)
            else:
                self._results[message["id"]] = message
                self._answers[message["id"]].set()
            self._changed.set()
            self._changed = anyio.Event()

    async def until(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(LIMIT_S):
            while not predicate():
                await self._changed.wait()

    # --- initialize and threads ---------------------------------------------------------------------------

    async def initialize(self) -> dict[str, Any]:
        return await self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientInfo": {"name": "zed", "version": "0.230.0", "title": "Zed Stable"},
                "clientCapabilities": ZED_CAPABILITIES,
            },
        )

    async def new_thread(self) -> tuple[Thread, dict[str, Any]]:
        """``session/new``, the saved defaults applied, then the thread registered."""
        response: dict[str, Any] = await self.call(
            "session/new", {"cwd": str(self.project), "mcpServers": []}
        )
        sid = response["sessionId"]
        options: list[dict[str, Any]] = response.get("configOptions") or []
        follow_ups: list[dict[str, Any]] = []
        for option in options:
            wanted = self.default_config_options.get(option["id"])
            if wanted is None or wanted == option.get("currentValue") or wanted not in _values(option):
                continue
            params: dict[str, Any] = {"sessionId": sid, "configId": option["id"], "value": wanted}
            if option.get("type") == "boolean":
                params["type"] = "boolean"  # the SDK's tagged boolean value
            follow_ups.append(params)
        answers: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tg:  # sent at once, as Zed's detached tasks do
            for params in follow_ups:

                async def apply(params: dict[str, Any] = params) -> None:
                    answers.append(await self.request("session/set_config_option", params))

                tg.start_soon(apply)
        thread = self.threads[sid] = Thread(sid, config_options=options)
        for answer in answers:
            if "result" in answer:
                thread.config_options = answer["result"]["configOptions"]
            else:
                self.errors.append(f"a saved default was refused: {answer['error']}")
        return thread, response

    async def load_thread(self, session_id: str) -> tuple[Thread, dict[str, Any]]:
        thread = self.threads[session_id] = Thread(session_id)  # pre-registered: the replay is applied
        response = await self.call(
            "session/load", {"sessionId": session_id, "cwd": str(self.project), "mcpServers": []}
        )
        thread.config_options = response.get("configOptions") or []
        return thread, response

    async def prompt(self, thread: Thread, text: str) -> dict[str, Any]:
        thread.append("user", text)  # Zed shows the message itself first
        answer = await self.request(
            "session/prompt", {"sessionId": thread.session_id, "prompt": [{"type": "text", "text": text}]}
        )
        if "error" in answer:
            self.errors.append(f"the prompt failed: {answer['error'].get('message')}")
        return answer

    async def cancel(self, thread: Thread) -> None:
        """As ``AcpThread::cancel``: the notification, the running calls marked canceled, the open
        permission requests answered cancelled."""
        await self._write(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": thread.session_id}}
        )
        for call in thread.tools.values():
            if call.status in ("pending", "in_progress", "waiting") and call.local_mark is None:
                call.local_mark = "canceled"
        for event in self._pending_permissions.values():
            event.set()

    # --- session/update --------------------------------------------------------------------------------------

    def _notification(self, message: dict[str, Any]) -> None:
        if message["method"] != "session/update":
            return
        params = message["params"]
        thread = self.threads.get(params["sessionId"])
        if thread is None:
            self.dropped.append(params["update"])  # "Received session notification for unknown session"
            return
        self._update(thread, params["update"])

    def _update(self, thread: Thread, update: dict[str, Any]) -> None:
        kind = update["sessionUpdate"]
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            role = {"agent_message_chunk": "agent", "agent_thought_chunk": "thought"}.get(kind, "user")
            content = update["content"]
            thread.append(role, content.get("text", f"[{content.get('type')}]"))
        elif kind == "tool_call":
            call = thread.tools.setdefault(update["toolCallId"], ToolCall(update["toolCallId"]))
            self._apply(thread, call, update)
        elif kind == "tool_call_update":
            call = thread.tools.get(update["toolCallId"])
            if call is None:
                self.errors.append(f"Tool call not found: {update['toolCallId']}")
                return
            self._apply(thread, call, update)
        elif kind == "plan":
            thread.plan = update["entries"]
        elif kind == "available_commands_update":
            thread.commands = [c["name"] for c in update["availableCommands"]]
        elif kind == "config_option_update":
            thread.config_options = update["configOptions"]
        elif kind == "session_info_update" and update.get("title"):
            thread.title = update["title"]

    def _apply(self, thread: Thread, call: ToolCall, update: dict[str, Any]) -> None:
        """In Zed's order: kind, status, title, content, locations, rawInput, rawOutput; an error in
        the content aborts the rest of the update."""
        call.updates += 1
        if "kind" in update:
            call.kind = update["kind"]
        if "status" in update:
            if call.local_mark is not None and update["status"] == "failed":
                self.errors.append(
                    f"{call.title or call.id}: shown Failed after Zed marked it {call.local_mark}"
                )
            call.status = update["status"]
        if "title" in update:
            call.title = update["title"]
            if call.kind == "execute":  # the title relabels the call's embedded terminal
                for item in call.content:
                    if item.get("type") == "terminal" and item["terminalId"] in self.terminals:
                        self.labels[item["terminalId"]] = update["title"]
        if "content" in update:
            for item in update["content"]:
                if item.get("type") == "terminal" and item["terminalId"] not in self.terminals:
                    self.errors.append(f"Terminal with id {item['terminalId']} not found")
                    return
            call.content = update["content"]
        if "locations" in update:
            call.locations = update["locations"]
        if "rawInput" in update:
            call.raw_input = update["rawInput"]
        if "rawOutput" in update:
            call.raw_output = update["rawOutput"]

    # --- the agent's requests --------------------------------------------------------------------------------

    async def _serve(self, message: dict[str, Any]) -> None:
        try:
            result: Any = await self._handle(message["method"], message.get("params") or {})
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        except Refused as exc:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": str(exc)}}
        try:
            await self._write(reply)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _inside(self, path: str) -> bool:
        return Path(path).is_relative_to(self.project)

    async def _handle(self, method: str, p: dict[str, Any]) -> Any:
        if method == "fs/read_text_file":
            if not self._inside(p["path"]):
                raise Refused(-32002, f"Resource not found: {p['path']}")
            text = self.buffers.get(p["path"])
            if text is None:
                text = await anyio.Path(p["path"]).read_text()
            lines = text.splitlines(keepends=True)
            start = (p.get("line") or 1) - 1
            end = start + p["limit"] if p.get("limit") else len(lines)
            return {"content": "".join(lines[start:end])}
        if method == "fs/write_text_file":
            if not self._inside(p["path"]):
                raise Refused(-32602, "invalid path")
            await anyio.Path(p["path"]).write_text(p["content"])
            self.buffers.pop(p["path"], None)
            return None
        if method == "session/request_permission":
            return await self._ask(p)
        if method.startswith("terminal/"):
            if method == "terminal/create":
                self.terminal_requests.append(p)
            return await self.terminal_host.handle(method, p)
        raise Refused(-32601, f"Method not found: {method}")

    async def _ask(self, p: dict[str, Any]) -> dict[str, Any]:
        self.permissions.append(p)
        thread = self.threads.get(p["sessionId"])
        call = thread.tools.get(p["toolCall"]["toolCallId"]) if thread is not None else None
        if call is not None:
            call.status = "waiting"
        kind = self.permission(p)
        if kind == "cancel":  # the user cancels the turn while asked
            event = self._pending_permissions[id(p)] = anyio.Event()
            await event.wait()
            del self._pending_permissions[id(p)]
            return {"outcome": {"outcome": "cancelled"}}
        option = next(o for o in p["options"] if o["kind"] == kind)
        if call is not None:
            if kind.startswith("reject"):
                call.local_mark = "rejected"
            else:
                call.status = "in_progress"
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}


def _values(option: Mapping[str, Any]) -> list[Any]:
    if option.get("type") == "boolean":
        return [True, False]
    out: list[Any] = []
    items: list[dict[str, Any]] = option.get("options") or []
    for item in items:
        out.extend([item["value"]] if "value" in item else [v["value"] for v in item.get("options", [])])
    return out


@asynccontextmanager
async def zed(
    project: Path, home: Path, env: Mapping[str, str], *, scrollback: int = 10_000
) -> AsyncGenerator[ZedClient]:
    """The real ``acp-agent`` (``python -m acp_agent``) spawned as Zed spawns a custom agent, and a
    Zed-like client on its stdio; stdin closed and the process awaited at the end."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    full.update({"ACP_AGENT_HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg"), **env})
    stderr = (home.parent / f"{home.name}-stderr.txt").open("ab")
    process = await anyio.open_process(
        [sys.executable, "-m", "acp_agent"], env=full, cwd=str(REPO), stderr=stderr
    )
    try:
        async with anyio.create_task_group() as tg:
            client = ZedClient(process, project, tg, scrollback=scrollback)
            tg.start_soon(client.read_loop)
            try:
                yield client
            finally:
                with anyio.CancelScope(shield=True):
                    assert process.stdin is not None
                    await process.stdin.aclose()
                    with anyio.move_on_after(15):
                        await process.wait()
                    for terminal in list(client.terminals.values()):
                        kill(terminal.process)
                tg.cancel_scope.cancel()
    finally:
        stderr.close()
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            with anyio.move_on_after(5):
                # wait() returns at the exit, before the pipes' end: close them here, not in the GC
                await process.aclose()
