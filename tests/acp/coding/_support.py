"""An in-memory editor for the coding agent: answers ``fs/*``, ``terminal/*``, permission and elicitation
requests with test-chosen behaviour, and records every message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from acp_agent.coding import coding_factory
from acp_agent.model_setup import ModelSettings
from acp_agent.session import AcpAgent, serve
from harness import Model
from harness.testing import FakeModel, Reply
from tests.acp_client import WAIT, AcpClient

__all__ = ["Editor", "calls", "editor_agent", "fake", "last", "tool_updates"]


def fake(*replies: Reply) -> FakeModel:
    return FakeModel(list(replies))


def calls(*items: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(tool_calls=[(name, inp, f"call_{i}_{name}") for i, (name, inp) in enumerate(items)])


class Editor(AcpClient):
    """A test client that answers the agent's requests."""

    __test__ = False

    def __init__(self, send: Any, receive: Any, root: Path) -> None:
        super().__init__(send, receive)
        self.root = root
        self.buffers: dict[str, str] = {}
        """Unsaved editor buffers by absolute path: ``fs/read_text_file`` answers these first."""
        self.refuse_outside = True
        self.permission: Callable[[dict[str, Any]], dict[str, Any]] = lambda p: _select("allow_once")
        self.elicit: Callable[[dict[str, Any]], dict[str, Any]] = lambda p: {"action": "decline"}
        self.requests: list[dict[str, Any]] = []
        self.terminals: dict[str, dict[str, Any]] = {}
        self.terminal_created = anyio.Event()
        self.permission_asked = anyio.Event()
        self._tg: Any = None

    def requests_of(self, method: str) -> list[dict[str, Any]]:
        return [r["params"] for r in self.requests if r["method"] == method]

    async def read_loop(self) -> None:
        buffer = b""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            async for chunk in self._receive:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    msg = json.loads(line)
                    self.messages.append(msg)
                    if "method" in msg and "id" in msg:
                        self.requests.append(msg)
                        tg.start_soon(self._answer, msg)
                    self._changed.set()
                    self._changed = anyio.Event()
            self.closed = True
            self._changed.set()
            tg.cancel_scope.cancel()

    async def _answer(self, msg: dict[str, Any]) -> None:
        try:
            result = await self.handle(msg["method"], msg.get("params") or {})
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        except _RpcFailure as exc:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": exc.code, "message": exc.message}}
        try:
            await self.write(reply)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def _inside(self, path: str) -> bool:
        return Path(path) == self.root or Path(path).is_relative_to(self.root)

    async def handle(self, method: str, p: dict[str, Any], /) -> Any:
        """Answers one of the agent's requests (a test may wrap it: ``editor.handle = slower``)."""
        if method == "fs/read_text_file":
            path = p["path"]
            if self.refuse_outside and not self._inside(path):
                raise _RpcFailure(-32002, f"Resource not found: {path}")
            if path in self.buffers:
                return {"content": self.buffers[path]}
            return {"content": Path(path).read_text()}  # noqa: ASYNC240 (a test editor)
        if method == "fs/write_text_file":
            path = p["path"]
            if self.refuse_outside and not self._inside(path):
                raise _RpcFailure(-32002, f"Resource not found: {path}")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(p["content"])  # noqa: ASYNC240 (a test editor)
            return None
        if method == "session/request_permission":
            self.permission_asked.set()
            return self.permission(p)
        if method == "elicitation/create":
            return self.elicit(p)
        if method == "terminal/create":
            return await self._create_terminal(p)
        if method == "terminal/output":
            t = self.terminals[p["terminalId"]]
            return {
                "output": t["output"],
                "truncated": False,
                **({"exitStatus": t["exit"]} if t["exit"] else {}),
            }
        if method == "terminal/wait_for_exit":
            t = self.terminals[p["terminalId"]]
            await t["done"].wait()
            return t["exit"]
        if method == "terminal/kill":
            t = self.terminals[p["terminalId"]]
            t["killed"] = True
            _kill_group(t["process"])
            return None
        if method == "terminal/release":
            t = self.terminals[p["terminalId"]]
            t["released"] = True
            _kill_group(t["process"])
            return None
        raise _RpcFailure(-32601, f"method not found: {method}")

    async def _create_terminal(self, p: dict[str, Any]) -> dict[str, Any]:
        # As Zed does: command and args joined with spaces, unquoted, run by the shell, stdin empty.
        line = " ".join([p["command"], *p.get("args", [])])
        process: Process = await anyio.open_process(
            ["bash", "-c", f"({line}) </dev/null"],
            cwd=p.get("cwd"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        tid = f"term_{len(self.terminals) + 1}"
        t: dict[str, Any] = {
            "process": process,
            "output": "",
            "exit": None,
            "done": anyio.Event(),
            "killed": False,
            "released": False,
            "pid": process.pid,
        }
        self.terminals[tid] = t

        async def pump() -> None:
            assert process.stdout is not None
            try:
                async for chunk in process.stdout:
                    t["output"] += chunk.decode(errors="replace")
                code = await process.wait()
                t["exit"] = {"exitCode": code} if code >= 0 else {"exitCode": None, "signal": "SIGKILL"}
                t["done"].set()
            finally:  # also when the editor ends first: the process is closed here, not by the GC
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    if process.returncode is None:
                        _kill_group(process)
                    await process.aclose()

        assert self._tg is not None
        self._tg.start_soon(pump)
        self.terminal_created.set()
        return {"terminalId": tid}


def _kill_group(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _RpcFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _select(option: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}}


def select(option: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda p: _select(option)


def cancelled(p: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "cancelled"}}


@asynccontextmanager
async def editor_agent(
    tmp: Path,
    model: Model,
    *,
    capabilities: dict[str, Any] | None = None,
    mode: str | None = None,
    flags: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    client_info: dict[str, Any] | None = None,
) -> AsyncGenerator[tuple[Editor, str, Path]]:
    """A coding agent (the real factory) with a fake model, an editor client, and a project directory.
    Yields ``(editor, session_id, project)``; the session is created (mode set when given).
    ``client_info``: the ``clientInfo`` the editor names itself with (``{"name": "zed"}``, say)."""
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    home = tmp / "home"
    env = {"HOME": str(tmp / "user"), "XDG_CONFIG_HOME": str(tmp / "user" / ".config")}
    if mode is not None:
        env["ACP_AGENT_DEFAULT_MODE"] = mode
    env.update(environ or {})
    factory = coding_factory(flags or {}, env)
    to_agent_send, to_agent_receive = anyio.create_memory_object_stream[bytes](1000)
    from_agent_send, from_agent_receive = anyio.create_memory_object_stream[bytes](1000)
    agent = AcpAgent(home=home, settings=ModelSettings(None), factory=factory, model=model)
    editor = Editor(to_agent_send, from_agent_receive, project.resolve())
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(editor.read_loop)

            async def run_agent() -> None:
                async with from_agent_send:
                    await serve(
                        cast(ByteReceiveStream, to_agent_receive),
                        cast(ByteSendStream, from_agent_send),
                        agent,
                        shutdown_grace=5,
                    )

            tg.start_soon(run_agent)
            try:
                caps = (
                    capabilities
                    if capabilities is not None
                    else {"fs": {"readTextFile": True, "writeTextFile": True}}
                )
                init: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": caps}
                if client_info is not None:
                    init["clientInfo"] = client_info
                await editor.call("initialize", init)
                sid = await editor.new_session(str(project))
                yield editor, sid, project
            finally:
                await editor.close_output()
    finally:
        for stream in (to_agent_send, to_agent_receive, from_agent_send, from_agent_receive):
            stream.close()  # an unclosed memory stream is a ResourceWarning (an error in this suite)


def tool_updates(editor: Editor, call_id: str) -> list[dict[str, Any]]:
    return [
        u
        for u in editor.updates()
        if u.get("sessionUpdate") in ("tool_call", "tool_call_update") and u.get("toolCallId") == call_id
    ]


def final(editor: Editor, call_id: str) -> dict[str, Any]:
    ends = [u for u in tool_updates(editor, call_id) if u.get("status") in ("completed", "failed")]
    assert ends, f"call {call_id} never ended: {tool_updates(editor, call_id)}"
    return ends[-1]


def last(editor: Editor, call_id: str) -> dict[str, Any]:
    """The call's last update (a call of a cancelled turn, or one the user rejected in Zed, ends without a
    status)."""
    ups = tool_updates(editor, call_id)
    assert ups, f"call {call_id} was never announced"
    return ups[-1]


def contents(update: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool call update's ``content`` items (none when it has no ``content``)."""
    return cast(list[dict[str, Any]], update.get("content") or [])


def text_of(update: dict[str, Any]) -> str:
    return "\n".join(c["content"].get("text", "") for c in contents(update) if c.get("type") == "content")


def prompt(
    editor: Editor, sid: str, text: str, extra: Sequence[dict[str, Any]] = (), *, wait: float = WAIT
) -> Any:
    return editor.call(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}, *extra]}, wait=wait
    )
