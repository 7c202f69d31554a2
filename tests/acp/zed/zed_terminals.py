"""Zed's terminals for the agent (``acp_thread/src/terminal.rs``, ``util/src/shell_builder.rs``): the command
and args joined with spaces, unquoted, and run by the shell with stdin from /dev/null; the label is that
line; ``terminal/output`` keeps the *start* over ``outputByteLimit``, cut at a line end, of a terminal that
holds its last ``scrollback`` lines; ``terminal/release`` forgets the id."""

from __future__ import annotations

import os
import signal
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process, TaskGroup

__all__ = ["Refused", "Terminal", "TerminalHost", "kill"]


class Refused(Exception):
    """An error answer to the agent's request."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def kill(process: Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Terminal:
    id: str
    label: str
    process: Process
    output_byte_limit: int | None
    scrollback: int
    output: str = ""
    exit_status: dict[str, Any] | None = None
    done: anyio.Event = field(default_factory=anyio.Event)

    def current(self) -> dict[str, Any]:
        """``terminal/output`` as Zed answers it: the start kept over the byte limit, at a line end."""
        content = "\n".join(self.output.split("\n")[-self.scrollback :])
        original = len(content.encode())
        if self.output_byte_limit is not None and original > self.output_byte_limit:
            cut = content.encode()[: self.output_byte_limit].decode(errors="ignore")
            content = cut[: cut.rfind("\n")] if "\n" in cut else cut
        answer: dict[str, Any] = {"output": content, "truncated": len(content.encode()) < original}
        if self.exit_status is not None:
            answer["exitStatus"] = self.exit_status
        return answer


class TerminalHost:
    """The ``terminal/*`` methods as Zed answers them."""

    def __init__(self, project: Path, tg: TaskGroup, scrollback: int) -> None:
        self.project = project
        self._tg = tg
        self.scrollback = scrollback
        self.terminals: dict[str, Terminal] = {}
        self.labels: dict[str, str] = {}

    async def handle(self, method: str, p: dict[str, Any]) -> Any:
        if method == "terminal/create":
            return await self._create(p)
        terminal = self.terminals.get(p["terminalId"])
        if terminal is None:
            raise Refused(-32602, f"Terminal with id {p['terminalId']} not found")
        if method == "terminal/output":
            return terminal.current()
        if method == "terminal/wait_for_exit":
            await terminal.done.wait()
            return terminal.exit_status
        if method == "terminal/kill":
            kill(terminal.process)
            return None
        if method == "terminal/release":
            kill(terminal.process)
            del self.terminals[p["terminalId"]]
            return None
        raise Refused(-32601, f"Method not found: {method}")

    async def _create(self, p: dict[str, Any]) -> dict[str, Any]:
        line = " ".join([p["command"], *p.get("args", [])])  # ShellBuilder: joined, not quoted
        env = {**os.environ, "PAGER": "", "GIT_PAGER": "cat"}
        variables: list[dict[str, str]] = p.get("env") or []
        env.update({e["name"]: e["value"] for e in variables})
        process = await anyio.open_process(
            ["bash", "-c", f"({line}) </dev/null"],
            cwd=p.get("cwd") or str(self.project),
            env=env,
            stdout=-1,
            stderr=-2,  # STDOUT
            start_new_session=True,
        )
        terminal = Terminal(str(uuid.uuid4()), line, process, p.get("outputByteLimit"), self.scrollback)
        self.terminals[terminal.id] = terminal
        self.labels[terminal.id] = line

        async def pump() -> None:
            assert process.stdout is not None
            try:
                async for chunk in process.stdout:
                    terminal.output += chunk.decode(errors="replace")
                code = await process.wait()
                terminal.exit_status = (
                    {"exitCode": code, "signal": None}
                    if code >= 0
                    else {"exitCode": None, "signal": "SIGKILL"}
                )
                terminal.done.set()
            finally:  # also when the client ends first: the process is closed here, not by the GC
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    if process.returncode is None:
                        kill(process)
                    await process.aclose()

        self._tg.start_soon(pump)
        return {"terminalId": terminal.id}
