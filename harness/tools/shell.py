"""``shell {command, cwd?, timeout_s?}``: a bash command with streamed output, a timeout and clean kills.

The command runs as ``bash -c`` (non-login) in its own process group, stdin from /dev/null, stdout and
stderr merged. Output streams as ``call.progress({"output": chunk})``; the result keeps the head and tail
of the output (saying how much was cut). On timeout, on ``Call.is_cancelled()`` and on cancellation of
the tool's task the whole process group gets SIGTERM, then SIGKILL after a short grace. Background jobs
do not outlive the command: once it exits, its group is killed too.

``Result.value`` is a ``ShellValue`` (``harness.tools._values``): ``exit_code``, ``output``, ``timed_out``,
``cancelled``, ``truncated``, ``command``, ``cwd``; ``exit_code`` is negative (``-signal``) when the command
died of a signal, None when it never finished. ``error`` is set for a timeout, a
cancellation or a command that could not start; a non-zero exit code is a normal result.

The ``CommandRunner`` seam lets the ACP layer run commands in the editor's terminal instead.

Sandbox: with ``sandbox=`` (a function of the call's input giving the ``harness.sandbox.SandboxPolicy``
to apply, or None to run unsandboxed) the request carries the policy, the local runner enforces it
(``harness.sandbox.open_process``), the input schema gains ``sandbox: "off"`` and ``network: true`` (to
ask for more; whoever calls the tool must have asked the user), and a failure that looks like a sandbox
denial gets a note saying what the sandbox allows and how to ask to leave it.

Secrets: the local runner starts the command with ``Secrets.child_env`` (no API key, no variable the
application marks secret), a sandbox policy also removes them (``unset_env``: a runner such as the editor's
terminal starts the command in an environment of its own, the sandbox launcher drops them there), and the
streamed output is redacted (``Secrets.redactor``) before it is reported;
the result is redacted by the ``Secrets`` middleware (see ``harness.secrets``).
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

import anyio
import anyio.to_thread
from anyio.abc import Process

from .._call import Call
from .._tools import Hints, Result, ToolSpec
from ..programs import require_program
from ..protected import PROTECTED, Protected, root_paths
from ..sandbox import Absent, SandboxPolicy, explain_denial
from ..sandbox import open_process as open_sandboxed
from ..secrets import Secrets
from ._fs import make_dir
from ._root import PathError, Root
from ._values import ShellValue, ToolMeta

__all__ = ["CommandRequest", "CommandRunner", "LocalCommandRunner", "OutputSink", "Shell"]

OutputSink = Callable[[str], Awaitable[None]]

# Keep commands from waiting on a pager or a prompt nobody can answer.
_NONINTERACTIVE = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
}


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """What to run: the bash ``command`` in ``cwd``; ``call_id`` ties it to the tool call (editor terminals)."""

    command: str
    cwd: Path
    call_id: str = ""
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    sandbox: SandboxPolicy | None = None
    """The sandbox to run it in (None: none); a runner that cannot enforce it must not run it."""


@runtime_checkable
class CommandRunner(Protocol):
    """Runs a command, streaming its decoded output to ``output``; returns the exit status.

    Cancellation of the calling task (timeout, cancel) must stop the command and everything it
    started before the cancellation propagates. A command that cannot start raises ``OSError``.
    """

    async def run(self, request: CommandRequest, output: OutputSink) -> int | None: ...


class LocalCommandRunner:
    """Runs ``bash -c`` locally in a new session (its own process group), in the child environment of
    ``secrets`` (this process's environment without its credentials)."""

    def __init__(self, *, grace_s: float = 2.0, drain_s: float = 0.5, secrets: Secrets | None = None) -> None:
        self.grace_s = grace_s
        self.drain_s = drain_s
        self.secrets = secrets or Secrets.from_env(os.environ)

    async def run(self, request: CommandRequest, output: OutputSink) -> int | None:
        extra = {k: v for k, v in request.env.items() if k not in self.secrets.names}
        env = {**self.secrets.child_env(os.environ), **_NONINTERACTIVE, **extra}
        # bash by its path, never one the project supplies (``harness.programs``): a command the user
        # allowed to run unsandboxed must not run through a ``bash`` file a clone ships.
        fence = (str(request.cwd), *(str(r) for r in (request.sandbox.roots if request.sandbox else ())))
        bash = await anyio.to_thread.run_sync(require_program, "bash", env.get("PATH"), fence)
        proc = await _start([bash, "-c", request.command], request, env)
        code: int | None = None
        try:
            pumped = anyio.Event()

            async def pump() -> None:
                decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
                assert proc.stdout is not None
                async for chunk in proc.stdout:
                    text = decoder.decode(chunk)
                    if text:
                        await output(text)
                rest = decoder.decode(b"", final=True)
                if rest:
                    await output(rest)
                pumped.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                code = await proc.wait()
                # A background job may hold the pipe open: read what it flushes soon, then stop.
                with anyio.move_on_after(self.drain_s):
                    await pumped.wait()
                tg.cancel_scope.cancel()
            return code
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.grace_s + 5):
                await _kill_group(proc, self.grace_s)


async def _start(argv: list[str], request: CommandRequest, env: dict[str, str]) -> Any:
    if request.sandbox is not None and request.sandbox.enabled:
        return await open_sandboxed(argv, request.sandbox, cwd=request.cwd, env=env)
    return await anyio.open_process(
        argv,
        cwd=request.cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _kill_group(proc: Process | Any, grace_s: float) -> None:
    """SIGTERM the process group, wait for the leader up to ``grace_s``, then SIGKILL what is left."""
    pgid = proc.pid  # start_new_session: the leader's pid is the group id
    if _signal_group(pgid, signal.SIGTERM):
        with anyio.move_on_after(grace_s):
            await proc.wait()
        _signal_group(pgid, signal.SIGKILL)
    await proc.aclose()


_MAKE_DIRS_MAX: Final = 16
_SANDBOX_PROPERTIES: dict[str, Any] = {
    "sandbox": {
        "type": "string",
        "enum": ["on", "off"],
        "description": 'Omit it (or "on"): run in the sandbox, where nothing the command starts outlives it. '
        '"off": run outside it, only when the sandbox denied something the task needs or a process (a dev '
        "server) must keep running after the command; the user is asked first.",
    },
    "network": {
        "type": "boolean",
        "description": "true: allow network access in the sandbox (the user is asked first).",
    },
    "make_dirs": {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "maxItems": _MAKE_DIRS_MAX,
        "description": "Folders to create directly in a project folder before the command runs, e.g. "
        '["build"] for a build that makes ./build: the sandbox cannot create entries there itself. Not '
        "for protected names (.git, .vscode, ...).",
    },
}
_SANDBOX_NOTE = (
    " Commands run in a sandbox: they write only inside the project (not .git and other protected "
    "paths, nor new folders directly in the project folder: name those in `make_dirs`) and the temp "
    "folder, without network; nothing they start outlives them."
)


_WHOLE_AT_MOST = 64 << 20  # characters of one command's output kept for its spill file


def _spill_meta(kept: Path | None, buf: _HeadTail) -> dict[str, Any]:
    """For ``harness.spill``: the file a cut output was kept in, and how long it is."""
    return {"spilled": str(kept), "spilled_chars": min(buf.total, _WHOLE_AT_MOST)} if kept else {}


def _aside_note(root: Root, aside: list[tuple[Path, Path]]) -> str:
    names = ", ".join(f"{root.display(p)} (now {root.display(q)})" for p, q in aside)
    return (
        f"\n[sandbox: the command made {names}: a protected name (other tools run or read it by themselves), "
        'so it was moved aside. If the task needs it, call shell again with `sandbox: "off"` (the user is '
        "asked) or write it with a file tool.]"
    )


class _HeadTail:
    """Keeps the first and last ``limit / 2`` characters of a stream and counts the rest."""

    def __init__(self, limit: int, *, keep_whole: bool = False) -> None:
        self.whole: list[str] | None = [] if keep_whole else None  # for a spill file
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0
        self.total = 0

    def add(self, s: str) -> None:
        if self.whole is not None and self.total < _WHOLE_AT_MOST:
            self.whole.append(s)
        self.total += len(s)
        if self.head_len < self.head_limit:
            take = s[: self.head_limit - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            s = s[len(take) :]
        if s:
            self.tail.append(s)
            self.tail_len += len(s)
            while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_limit:
                self.tail_len -= len(self.tail.popleft())

    @property
    def cut(self) -> int:
        return max(0, self.total - self.head_len - min(self.tail_len, self.tail_limit))

    def text(self, where: str = "") -> str:
        head = "".join(self.head)
        tail = "".join(self.tail)[-self.tail_limit :] if self.tail_limit else ""
        if self.cut:
            return f"{head}\n[... {self.cut} characters cut{where} ...]\n{tail}"
        return head + tail


@dataclass(slots=True)
class _Ran:
    """How a command's run ended: its exit code (None: it did not exit), timed out, cancelled."""

    code: int | None = None
    timed_out: bool = False
    cancelled: bool = False

    def status(self, timeout: float) -> str:
        if self.timed_out:
            return f"[timed out after {timeout:g} s; the command and its processes were killed]"
        if self.cancelled:
            return "[cancelled; the command and its processes were killed]"
        if self.code is not None and self.code < 0:
            return f"[killed by signal {-self.code}]"
        return f"[exit code {self.code}]"


class Shell:
    """``shell {command, cwd?, timeout_s?}`` under a ``Root`` (the working directory must be inside it)."""

    def __init__(
        self,
        root: Root,
        *,
        runner: CommandRunner | None = None,
        default_timeout_s: float = 120.0,
        max_timeout_s: float = 600.0,
        max_output_chars: int = 30_000,
        spill: Callable[[str, str], Awaitable[Path]] | None = None,
        cancel_poll_s: float = 0.1,
        sandbox: Callable[[Mapping[str, Any]], SandboxPolicy | None] | None = None,
        secrets: Secrets | None = None,
        protected: tuple[Protected, ...] = PROTECTED,
    ) -> None:
        self.root = root
        self.protected = protected  # what `make_dirs` never creates (the application's list)
        self.secrets = secrets or Secrets.from_env(os.environ)
        self.runner: CommandRunner = runner or LocalCommandRunner(secrets=self.secrets)
        self.default_timeout_s = default_timeout_s
        self.max_timeout_s = max_timeout_s
        self.max_output_chars = max_output_chars
        self.spill = spill  # keeps a cut output whole in a file the model may read (harness.spill)
        self.cancel_poll_s = cancel_poll_s
        self.sandbox = sandbox

    def spec(self) -> ToolSpec:
        properties: dict[str, Any] = {
            "command": {"type": "string", "minLength": 1},
            "cwd": {"type": "string", "description": "Working directory inside the project"},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0},
        }
        sandboxed = ""
        if self.sandbox is not None:
            properties.update(_SANDBOX_PROPERTIES)
            sandboxed = _SANDBOX_NOTE
        return ToolSpec(
            "shell",
            f"Run a bash command (`bash -c`, non-interactive: stdin is empty) in `cwd` (default: the project "
            f"root). stdout and stderr are merged; long output keeps its start and end. Times out after "
            f"`timeout_s` seconds (default {self.default_timeout_s:g}, at most {self.max_timeout_s:g}); "
            f"background jobs are killed when the command exits.{sandboxed}",
            {
                "type": "object",
                "properties": properties,
                "required": ["command"],
                "additionalProperties": False,
            },
            Hints(read_only=False, destructive=True, idempotent=False, open_world=True),
            meta=ToolMeta(kind="execute"),
        )

    async def _make_dirs(self, names: list[str], policy: SandboxPolicy | None, call: Call) -> str | None:
        """Create each folder directly in a project folder (what a sandboxed command cannot do); why one
        is refused (outside, deeper, protected, a read-only sandbox), or None once all exist."""
        if not names or call.is_cancelled():
            return None
        if len(names) > _MAKE_DIRS_MAX:
            return f"at most {_MAKE_DIRS_MAX} folders"
        if policy is not None and policy.enabled and policy.mode != "workspace-write":
            return f"this command runs in the {policy.mode} sandbox, which writes no project folder"
        roots = self.root.paths
        kept = policy.protected if policy is not None else root_paths(self.protected)
        named = {p.lower() for p in kept if "/" not in p}  # deeper ones: the sandbox splits their parents
        whole = {p for p in kept if p.startswith("/")}  # absolute ones (``~/bin``): exactly that folder
        paths: list[Path] = []
        for name in names:
            try:
                path = await self.root.resolve(name)
            except PathError as e:
                return f"{name}: {e}"
            if path.parent not in roots:
                return f"{name}: not directly in a project folder (the command can create deeper ones itself)"
            lower = path.name.lower()
            if lower in named or str(path) in whole or any(p.matches((lower,)) for p in self.protected):
                return f'{name}: a protected path (ask with `sandbox: "off"` if the task needs it)'
            paths.append(path)

        def make() -> str | None:
            for path in paths:
                try:  # in the opened project folder: a symlink there now is refused, not followed
                    make_dir(self.root.place(path))
                except FileExistsError:
                    return f"{self.root.display(path)} exists and is not a folder"
                except OSError as e:
                    return f"{self.root.display(path)}: {e.strerror}"
            return None

        return await anyio.to_thread.run_sync(make)

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        command = str(input["command"])
        if not command.strip():
            return Result.failure("shell: the command is empty")
        try:
            cwd = await self.root.resolve(str(input.get("cwd") or "."))
        except PathError as e:
            return Result.failure(f"shell: cwd: {e}")
        if not await anyio.Path(cwd).is_dir():
            return Result.failure(f"shell: cwd {self.root.display(cwd)} is not a directory")
        asked = input.get("timeout_s")
        timeout = float(asked) if asked is not None else self.default_timeout_s
        capped = timeout > self.max_timeout_s
        timeout = min(timeout, self.max_timeout_s)
        buf = _HeadTail(self.max_output_chars, keep_whole=self.spill is not None)
        clean = self.secrets.redactor()

        async def sink(chunk: str) -> None:
            buf.add(chunk)
            shown = clean.feed(chunk)
            if shown:
                await call.progress({"output": shown})

        policy = self.sandbox(input) if self.sandbox is not None else None
        if policy is not None:  # whoever starts it (the editor's terminal too), it sees no credential
            policy = policy.without_env(self.secrets.hidden_names(os.environ))
        refused = await self._make_dirs([str(d) for d in input.get("make_dirs") or ()], policy, call)
        if refused is not None:
            return Result.failure(f"shell: make_dirs: {refused}; the command did not run")
        ran = _Ran(cancelled=call.is_cancelled())
        aside: list[tuple[Path, Path]] = []
        if not ran.cancelled:
            request = CommandRequest(command, cwd, call.id, sandbox=policy)
            try:
                aside = await self._guarded(request, sink, call, timeout, ran)
            except OSError as e:
                return Result.failure(f"shell: cannot run the command: {e}")
        rest = clean.flush()
        if rest:
            await call.progress({"output": rest})
        kept = await self._spilled(call.id, buf) if buf.cut and self.spill is not None else None
        where = (
            f"; the whole output is in {kept}: read it with read_file (offset, limit) or grep" if kept else ""
        )
        output = self.secrets.redact(buf.text(where))
        value = ShellValue(
            exit_code=ran.code,
            output=output,
            timed_out=ran.timed_out,
            cancelled=ran.cancelled,
            truncated=buf.cut > 0,
            command=command,
            cwd=str(cwd),
        )
        if self.sandbox is not None:
            value["sandbox"] = policy.describe() if policy is not None else "off"
        status = ran.status(timeout) + (f" [timeout_s capped at {self.max_timeout_s:g}]" if capped else "")
        text = f"{output}\n{status}" if output else status
        if aside:
            text += _aside_note(self.root, aside)
            value["sandbox_removed"] = [str(p) for p, _ in aside]
        if policy is not None and ran.code not in (0, None):
            note = explain_denial(output, policy)
            if note:
                text += "\n" + note
                value["sandbox_note"] = note
        if ran.timed_out or ran.cancelled:
            return Result.failure(text, value=value, meta=_spill_meta(kept, buf))
        return Result.text(text, value=value, meta=_spill_meta(kept, buf))

    async def _spilled(self, call_id: str, buf: _HeadTail) -> Path | None:
        """The file that now holds the whole output (redacted), or None when it could not be written."""
        assert buf.whole is not None and self.spill is not None
        try:
            return await self.spill(call_id, self.secrets.redact("".join(buf.whole)))
        except OSError:
            return None

    async def _guarded(
        self,
        request: CommandRequest,
        sink: Callable[[str], Awaitable[None]],
        call: Call,
        timeout: float,
        ran: _Ran,
    ) -> list[tuple[Path, Path]]:
        """``_execute``, then the protected names a sandboxed command made moved aside (``Absent``)."""
        policy = request.sandbox
        if policy is None or not policy.enabled:
            await self._execute(request, sink, call, timeout, ran)
            return []
        absent = await anyio.to_thread.run_sync(Absent.note, policy)
        aside: list[tuple[Path, Path]] = []
        try:
            await self._execute(request, sink, call, timeout, ran)
        finally:  # (whatever ended it: the command and all it started have ended, its PID namespace)
            with anyio.CancelScope(shield=True):
                aside = await anyio.to_thread.run_sync(absent.refuse)
        return aside

    async def _execute(
        self,
        request: CommandRequest,
        sink: Callable[[str], Awaitable[None]],
        call: Call,
        timeout: float,
        ran: _Ran,
    ) -> None:
        """Run ``request`` until it exits, times out or the call is cancelled (recorded in ``ran``);
        an ``OSError`` from the runner (the command could not start) propagates."""
        failed: OSError | None = None
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                # The run's cancel signal, for hosts that do not cancel the tool's task.
                while not call.is_cancelled():  # noqa: ASYNC110 (Call offers only a poll)
                    await anyio.sleep(self.cancel_poll_s)
                ran.cancelled = True
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            with anyio.move_on_after(timeout) as scope:
                try:
                    ran.code = await self.runner.run(request, sink)
                except OSError as e:
                    failed = e
            ran.timed_out = scope.cancelled_caught
            tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
