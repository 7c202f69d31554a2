"""Drive a real ``python -m acp_agent`` process over its stdio for the reliability suites.

Every stdout line is checked as it arrives: it must be one JSON-RPC 2.0 message (or a batch of
responses), every error must carry a spec code, and no request id may be answered twice or be answered
without having been sent. Breaches are collected in ``violations`` rather than raised in the reader, so
the test decides when to look.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from acp_agent.protocol.jsonvalue import as_object

REPO = Path(__file__).resolve().parents[2]
LONG = os.environ.get("RELIABILITY_LONG", "") not in ("", "0")
"""``RELIABILITY_LONG=1``: the long mode (full counts); the default is the quick CI mode."""

SPEC_ERROR_CODES = frozenset({-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002})
MAX_LINE = 64 * 1024 * 1024
INIT_PARAMS: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {},
    "clientInfo": {"name": "reliability", "version": "1"},
}


def id_key(request_id: Any) -> str:
    """Ids compared by their JSON text, so ``1`` and ``"1"`` (and ``1`` and ``1.0``) stay distinct."""
    return json.dumps(request_id, sort_keys=True)


def params_of(message: dict[str, Any]) -> dict[str, Any]:
    """A decoded message's ``params`` (empty when it has none)."""
    return message.get("params") or {}


def update_of(message: dict[str, Any]) -> dict[str, Any]:
    """The ``update`` in a ``session/update`` notification's params (empty when it has none)."""
    return params_of(message).get("update") or {}


def write_script(path: Path, replies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


@dataclass
class AgentProcess:
    """One agent process. ``expect(id)`` registers an id that must get exactly one answer."""

    process: Process
    home: Path
    stderr_path: Path
    stdout_log: list[bytes] = field(default_factory=list[bytes])
    keep_stdout: bool = False
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict[str, list[dict[str, Any]]])
    notifications: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    violations: list[str] = field(default_factory=list[str])
    sent_ids: set[str] = field(default_factory=set[str])
    maybe_ids: set[str] = field(default_factory=set[str])
    exited: anyio.Event = field(default_factory=anyio.Event)
    _waiters: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])
    _noted: anyio.Event = field(default_factory=anyio.Event)
    _next_id: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return not self.exited.is_set() and self.process.returncode is None

    # --- writing ------------------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    def new_id(self, as_string: bool = False) -> int | str:
        self._next_id += 1
        return f"r-{self._next_id}" if as_string else 1_000_000 + self._next_id

    def expect(self, request_id: Any) -> None:
        """``request_id`` was sent in a valid request: it must be answered exactly once."""
        key = id_key(request_id)
        self.sent_ids.add(key)
        self._waiters.setdefault(key, anyio.Event())
        if self.responses.get(key):
            self._waiters[key].set()

    def tolerate(self, request_id: Any) -> None:
        """``request_id`` was sent in a malformed message: an answer (an error) may come, or none."""
        self.maybe_ids.add(id_key(request_id))

    async def request(self, method: str, params: Any, *, as_string: bool = False) -> Any:
        request_id = self.new_id(as_string)
        self.expect(request_id)
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # --- waiting ------------------------------------------------------------------------------------

    async def response(self, request_id: Any) -> dict[str, Any]:
        """The (first) answer to ``request_id``; waits for it (callers bound the wait)."""
        key = id_key(request_id)
        event = self._waiters.setdefault(key, anyio.Event())
        async with anyio.create_task_group() as tg:
            # Stop waiting if the process dies: that is the failure to report, not a hang.
            async def _died() -> None:
                await self.exited.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(_died)
            await event.wait()
            tg.cancel_scope.cancel()
        got = self.responses.get(key)
        if not got:
            raise AssertionError(
                f"the agent exited (rc={self.process.returncode}) before answering {request_id!r}"
            )
        return got[0]

    async def call(self, method: str, params: Any) -> Any:
        answer = await self.response(await self.request(method, params))
        if "error" in answer:
            raise AssertionError(f"{method} failed: {answer['error']}")
        return answer["result"]

    async def notification(self, predicate: Callable[[dict[str, Any]], bool], start: int = 0) -> int:
        """Wait for a notification matching ``predicate`` at index >= ``start``; returns its index."""
        while True:
            noted = self._noted
            for i in range(start, len(self.notifications)):
                if predicate(self.notifications[i]):
                    return i
            start = len(self.notifications)
            if not self.alive:
                raise AssertionError(
                    f"the agent exited (rc={self.process.returncode}) before the notification"
                )
            with anyio.move_on_after(0.5):  # re-check liveness now and then
                await noted.wait()

    def unanswered(self) -> list[str]:
        return sorted(k for k in self.sent_ids if not self.responses.get(k))

    async def all_answered(self) -> None:
        for key in self.unanswered():
            await self.response(json.loads(key))

    # --- reading ------------------------------------------------------------------------------------

    async def _read_loop(self, reader: BufferedByteReceiveStream) -> None:
        try:
            while True:
                try:
                    line = await reader.receive_until(b"\n", MAX_LINE)
                except (
                    anyio.EndOfStream,
                    anyio.IncompleteRead,
                    anyio.ClosedResourceError,
                    anyio.BrokenResourceError,
                ):
                    return
                if self.keep_stdout:
                    self.stdout_log.append(line)
                self._check_line(line)
        finally:
            self.exited.set()

    def _check_line(self, line: bytes) -> None:
        try:
            message: Any = json.loads(line)
        except ValueError:
            self.violations.append(f"stdout line is not JSON: {line[:300]!r}")
            return
        if isinstance(message, list):
            batch = cast(list[Any], message)
            if not batch:
                self.violations.append("stdout carried an empty batch")
            for item in batch:
                if not (isinstance(item, dict) and "method" not in item):
                    self.violations.append(f"a batch answer holds a non-response: {item!r:.300}")
                    continue
                self._check_message(cast(dict[str, Any], item))
            return
        if not isinstance(message, dict):
            self.violations.append(f"stdout line is not a JSON-RPC object: {line[:300]!r}")
            return
        self._check_message(cast(dict[str, Any], message))

    def _check_message(self, message: dict[str, Any]) -> None:
        if message.get("jsonrpc") != "2.0":
            self.violations.append(f"message without jsonrpc 2.0: {message!r:.300}")
            return
        if "method" in message:
            if not isinstance(message["method"], str):
                self.violations.append(f"method is not a string: {message!r:.300}")
            elif "id" not in message:
                self.notifications.append(message)
                self._noted.set()
                self._noted = anyio.Event()
            # Requests from the agent (permissions, fs) do not occur without tools: recorded as seen.
            return
        if "id" not in message or ("result" in message) == ("error" in message):
            self.violations.append(f"not a request, notification or response: {message!r:.300}")
            return
        if "error" in message:
            error = message["error"]
            if not isinstance(error, dict) or not isinstance(as_object(error).get("message"), str):
                self.violations.append(f"malformed error object: {message!r:.300}")
                return
            code = as_object(error).get("code")
            if code not in SPEC_ERROR_CODES or isinstance(code, bool):
                self.violations.append(f"error code {code!r} is not a spec code: {message!r:.300}")
        key = id_key(message["id"])
        if message["id"] is None:
            code = message.get("error", {}).get("code")
            if code not in (-32700, -32600):
                self.violations.append(
                    f"a null id on something other than a parse/invalid-request error: {message!r:.300}"
                )
            return
        got = self.responses.setdefault(key, [])
        got.append(message)
        if key not in self.sent_ids and key not in self.maybe_ids:
            self.violations.append(f"an answer to an id never sent: {message!r:.300}")
        elif len(got) > 1:
            self.violations.append(f"id {message['id']!r} answered {len(got)} times: {got!r:.600}")
        waiter = self._waiters.get(key)
        if waiter is not None:
            waiter.set()

    # --- process facts ------------------------------------------------------------------------------

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def thread_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS in /proc status")

    def children(self) -> list[int]:
        """Pids of live (non-zombie-reaped) processes whose parent is the agent."""
        out: list[int] = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 1 and int(fields[1]) == self.pid:
                out.append(int(entry))
        return out

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def kill_hard(self) -> None:
        """``kill -9``."""
        if self.process.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


P = TypeVar("P", bound=AgentProcess)


def agent_env(home: Path, script: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"ACP_AGENT_HOME": str(home), "ACP_AGENT_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"})
    if script is not None:
        env.update({"ACP_AGENT_PROVIDER": "script", "ACP_AGENT_SCRIPT": str(script)})
    env.update(extra)
    return env


@asynccontextmanager
async def agent_process(
    home: Path,
    env: Mapping[str, str],
    *,
    stderr_name: str = "stderr.txt",
    keep_stdout: bool = False,
    kind: type[P] = AgentProcess,
    cwd: Path | None = None,
) -> AsyncGenerator[P]:
    """Spawn the agent with ``env`` (see ``agent_env``); on exit close stdin, wait, kill if it lingers.
    ``kind``: an ``AgentProcess`` subclass to drive it with; ``cwd``: its working folder (an editor starts
    it in the project; default: this repository)."""
    stderr_path = home.parent / f"{home.name}-{stderr_name}"
    with stderr_path.open("ab") as stderr_file:
        process = await anyio.open_process(
            [sys.executable, "-m", "acp_agent"], env=dict(env), cwd=str(cwd or REPO), stderr=stderr_file
        )
    try:
        agent = kind(process, home, stderr_path, keep_stdout=keep_stdout)
        assert process.stdout is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent._read_loop, BufferedByteReceiveStream(process.stdout))  # pyright: ignore[reportPrivateUsage]
            try:
                yield agent
            finally:
                with anyio.CancelScope(shield=True):
                    await _shut_down(agent, tg)
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            with anyio.move_on_after(5):
                # wait() returns at the exit, before the pipes' end: close them here, not in the GC
                await process.aclose()


async def _shut_down(agent: AgentProcess, tg: TaskGroup) -> None:
    process = agent.process
    if process.returncode is None:
        try:
            assert process.stdin is not None
            await process.stdin.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    with anyio.move_on_after(5):
        await agent.exited.wait()
    tg.cancel_scope.cancel()


async def initialized(agent: AgentProcess) -> dict[str, Any]:
    return await agent.call("initialize", INIT_PARAMS)
