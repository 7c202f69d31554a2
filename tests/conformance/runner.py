"""Plays scenario files against an ACP agent process over stdio.

A scenario is a JSON file: ``{"name", "refs": [reference scenario numbers], "requires": [features],
"script": [scripted model replies, for agents with a script provider], "steps": [...]}``. Steps:

- ``{"send": obj}`` one JSON line (``"pad": {"path": "params.prompt.0.text", "bytes": N}`` fills a string);
  ``{"send_raw": "text"}`` / ``{"send_hex": "ff00"}`` a raw line.
- ``{"expect": pattern, "capture": {"VAR": "result.sessionId"}}`` the NEXT message matches.
- ``{"expect_until": pattern, "collect": "NAME", "allow": pattern}`` read until a message matches; every
  message before it must match ``allow`` (default: any notification) and is kept under NAME.
- ``{"expect_all": [patterns], "allow": pattern, "collect": "NAME"}`` like ``expect_until`` for several
  messages in any order.
- ``{"check": "NAME", "each" | "contains_in_order" | "none": ..., "min": n}`` assertions on collected messages.
- ``{"expect_silence_ms": N}`` nothing is written for N ms.
- ``{"answer": {"method": m, "result": r | "error": e}}`` the next message is an agent request of method m: reply
  (``"skip_notifications": true`` lets notifications come first, kept under ``collect``).
- ``{"write_file": {"path": "rel", "text": "..."}}`` writes a file in the project (``${CWD}``);
  ``{"check_file": {"path": "rel", "text": "..." | "absent": true}}`` checks one.
- ``{"kill": true}`` SIGKILL; ``{"start": true}`` start again (same home); ``{"close_stdin": true}``;
  ``{"expect_exit": {"code": 0, "within_ms": 5000}}``; ``{"sleep_ms": N}``.

Top-level ``"transparent"``: the ``sessionUpdate`` kinds that steps never see (default
``available_commands_update`` and ``config_option_update``, which agents send on their own schedule after a
session response); ``[]`` shows every message.

Patterns match as subsets: objects need the listed keys (others ignored), lists match element by element,
``"*"`` any value, ``"<absent>"`` a missing key, ``"<string>" "<nonempty>" "<int>" "<object>" "<array>"``
types, ``{"$oneOf": [p, ...]}`` alternatives, ``{"$contains": "text"}`` a string containing text
(case-insensitive); ``{"assert_distinct": ["A", "B"]}`` checks captured values differ; ``"${VAR}"`` is replaced by a captured value (type kept).
Every message the agent writes is validated (``validate.MessageValidator``) and must be one JSON-RPC
object per line.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .validate import MessageValidator, _id_key

__all__ = ["ScenarioFailure", "ScenarioResult", "load_scenarios", "run_scenario", "scenario_dir"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_TRANSPARENT = ("available_commands_update", "config_option_update")


class ScenarioFailure(AssertionError):
    pass


@dataclass
class ScenarioResult:
    name: str
    ok: bool
    detail: str = ""
    skipped: str | None = None
    messages: int = 0
    stderr_tail: str = ""


def scenario_dir() -> Path:
    return Path(__file__).parent / "scenarios"


def load_scenarios(directory: Path | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted((directory or scenario_dir()).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.setdefault("name", path.stem)
        data["_file"] = str(path)
        out.append(data)
    return out


# --- patterns ---------------------------------------------------------------------------------------

_ABSENT = "<absent>"


def substitute(value: Any, variables: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _VAR.fullmatch(value)
        if whole is not None and whole.group(1) in variables:
            return variables[whole.group(1)]
        return _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def mismatch(pattern: Any, value: Any, path: str = "$") -> str | None:
    """None when ``value`` matches ``pattern``; else where and why not."""
    if (isinstance(pattern, str) and pattern.startswith("<") and pattern.endswith(">")) or pattern == "*":
        ok = {
            "*": True,
            "<string>": isinstance(value, str),
            "<nonempty>": isinstance(value, str) and value != "",
            "<int>": isinstance(value, int) and not isinstance(value, bool),
            "<number>": isinstance(value, int | float) and not isinstance(value, bool),
            "<bool>": isinstance(value, bool),
            "<object>": isinstance(value, dict),
            "<array>": isinstance(value, list),
            "<null>": value is None,
        }.get(pattern)
        if ok is None:
            return None if pattern == value else f"{path}: expected {pattern!r}, got {_short(value)}"
        return None if ok else f"{path}: expected {pattern}, got {_short(value)}"
    if isinstance(pattern, dict) and set(pattern) == {"$contains"}:
        ok = isinstance(value, str) and str(pattern["$contains"]).lower() in value.lower()
        return (
            None
            if ok
            else f"{path}: expected a string containing {pattern['$contains']!r}, got {_short(value)}"
        )
    if isinstance(pattern, dict) and set(pattern) == {"$oneOf"}:
        problems = [mismatch(p, value, path) for p in pattern["$oneOf"]]
        return None if any(p is None for p in problems) else " / ".join(p for p in problems if p)
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return f"{path}: expected an object, got {_short(value)}"
        for key, sub in pattern.items():
            if sub == _ABSENT:
                if key in value:
                    return f"{path}.{key}: expected absent, got {_short(value[key])}"
                continue
            if key not in value:
                return f"{path}.{key}: missing"
            problem = mismatch(sub, value[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(value) != len(pattern):
            return f"{path}: expected a list of {len(pattern)}, got {_short(value)}"
        for i, (p, v) in enumerate(zip(pattern, value, strict=True)):
            problem = mismatch(p, v, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if type(pattern) is not type(value) and not (
        isinstance(pattern, int | float) and isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return f"{path}: expected {_short(pattern)}, got {_short(value)}"
    return None if pattern == value else f"{path}: expected {_short(pattern)}, got {_short(value)}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= 300 else text[:300] + "…"


def get_path(value: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict):
            value = value[part]
        else:
            raise KeyError(path)
    return value


def set_path(value: Any, path: str, new: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        value = value[int(part)] if isinstance(value, list) else value[part]
    last = parts[-1]
    if isinstance(value, list):
        value[int(last)] = new
    else:
        value[last] = new


# --- the agent process ------------------------------------------------------------------------------


@dataclass
class _Line:
    raw: bytes
    msg: Any = None
    problems: list[str] = field(default_factory=list[str])


class AgentProcess:
    """The agent under test: stdin/stdout as JSON lines, stderr kept for diagnostics."""

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        validator: MessageValidator,
        sent_methods: dict[Any, str],
    ) -> None:
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.validator = validator
        self.sent_methods = sent_methods
        self.process: Process | None = None
        self.stderr = bytearray()
        self._send: MemoryObjectSendStream[_Line | None] | None = None
        self.lines: MemoryObjectReceiveStream[_Line | None] | None = None
        self.eof = anyio.Event()

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        self.process = await anyio.open_process(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
        )
        self._send, self.lines = anyio.create_memory_object_stream[_Line | None](10_000)
        self.eof = anyio.Event()
        tg.start_soon(self._read_stdout, self.process, self._send, self.eof)
        tg.start_soon(self._read_stderr, self.process)

    async def _read_stdout(
        self, process: Process, out: MemoryObjectSendStream[_Line | None], eof: anyio.Event
    ) -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with out:
            try:
                async for chunk in process.stdout:
                    buffer += chunk
                    while (i := buffer.find(b"\n")) >= 0:
                        raw = bytes(buffer[:i])
                        del buffer[: i + 1]
                        await out.send(self._parse(raw))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            if buffer:
                line = self._parse(bytes(buffer))
                line.problems.append("last stdout line has no newline")
                await out.send(line)
            await out.send(None)
        eof.set()

    def _parse(self, raw: bytes) -> _Line:
        line = _Line(raw)
        try:
            line.msg = json.loads(raw)
        except ValueError as exc:
            line.problems.append(f"stdout line is not JSON ({exc}): {raw[:200]!r}")
            return line
        line.problems += self.validator.check(line.msg, self.sent_methods)
        return line

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                self.stderr += chunk
                if len(self.stderr) > 200_000:
                    del self.stderr[:100_000]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def write(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.send(data)

    async def close_stdin(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.aclose()

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            with anyio.move_on_after(10):
                await self.process.wait()

    async def stop(self) -> None:
        if self.process is None:
            return
        if self.process.returncode is None:
            try:
                await self.close_stdin()
            except Exception:
                pass
            with anyio.move_on_after(3):
                await self.process.wait()
        await self.kill()


# --- running ----------------------------------------------------------------------------------------


class _Player:
    def __init__(
        self,
        scenario: Mapping[str, Any],
        agent: AgentProcess,
        variables: dict[str, Any],
        tg: anyio.abc.TaskGroup,
    ) -> None:
        self.scenario = scenario
        self.agent = agent
        self.vars = variables
        self.tg = tg
        self.collected: dict[str, list[Any]] = {}
        self.count = 0
        self.pending: list[_Line] = []
        self.transparent = frozenset(scenario.get("transparent", DEFAULT_TRANSPARENT))

    async def next_line(self, timeout_ms: float) -> _Line | None:
        assert self.agent.lines is not None
        if self.pending:
            return self.pending.pop(0)
        with anyio.fail_after(timeout_ms / 1000):
            while True:
                line = await self.agent.lines.receive()
                if line is not None:
                    self.count += 1
                    if line.problems:
                        raise ScenarioFailure(
                            f"invalid message from the agent: {'; '.join(line.problems)}\n  line: {_short(line.msg if line.msg is not None else line.raw)}"
                        )
                    if self._is_transparent(line.msg):
                        self.collected.setdefault("_transparent", []).append(line.msg)
                        continue
                return line

    def _is_transparent(self, msg: Any) -> bool:
        if not self.transparent or not isinstance(msg, dict) or msg.get("method") != "session/update":
            return False
        update = (msg.get("params") or {}).get("update")
        return isinstance(update, dict) and update.get("sessionUpdate") in self.transparent

    async def next_message(self, what: str, timeout_ms: float) -> Any:
        try:
            line = await self.next_line(timeout_ms)
        except TimeoutError:
            raise ScenarioFailure(f"timed out after {timeout_ms:.0f} ms waiting for {what}") from None
        if line is None:
            raise ScenarioFailure(f"the agent closed stdout while waiting for {what}")
        return line.msg

    def capture(self, step: Mapping[str, Any], msg: Any) -> None:
        for name, path in (step.get("capture") or {}).items():
            try:
                self.vars[name] = get_path(msg, path)
            except (KeyError, IndexError, ValueError, TypeError):
                raise ScenarioFailure(f"cannot capture {name} from {path} in {_short(msg)}") from None

    async def send_obj(self, obj: Any, pad: Mapping[str, Any] | None = None) -> None:
        obj = substitute(obj, self.vars)
        if pad is not None:
            set_path(obj, str(pad["path"]), "x" * int(pad["bytes"]))
        if isinstance(obj, dict) and "id" in obj and "method" in obj:
            self.agent.sent_methods[_id_key(obj["id"])] = obj["method"]
        await self.agent.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    async def play(self) -> None:
        for index, step in enumerate(self.scenario["steps"]):
            try:
                await self.step(step)
            except ScenarioFailure as exc:
                raise ScenarioFailure(f"step {index + 1} {json.dumps(step)[:200]}: {exc}") from None

    async def step(self, step: Mapping[str, Any]) -> None:
        timeout = float(step.get("timeout_ms", DEFAULT_TIMEOUT_MS))
        if "send" in step:
            await self.send_obj(step["send"], step.get("pad"))
        elif "send_raw" in step:
            await self.agent.write(str(substitute(step["send_raw"], self.vars)).encode() + b"\n")
        elif "send_hex" in step:
            await self.agent.write(bytes.fromhex(step["send_hex"]) + b"\n")
        elif "expect" in step:
            pattern = substitute(step["expect"], self.vars)
            msg = await self.next_message(f"a message matching {_short(pattern)}", timeout)
            problem = mismatch(pattern, msg)
            if problem:
                raise ScenarioFailure(f"{problem}\n  got: {_short(msg)}")
            self.capture(step, msg)
        elif "expect_until" in step:
            pattern = substitute(step["expect_until"], self.vars)
            allow = substitute(step.get("allow", {"method": "<string>", "id": _ABSENT}), self.vars)
            seen: list[Any] = []
            deadline = time.monotonic() + timeout / 1000
            while True:
                left = max(1.0, (deadline - time.monotonic()) * 1000)
                msg = await self.next_message(f"a message matching {_short(pattern)}", left)
                if mismatch(pattern, msg) is None:
                    break
                problem = mismatch(allow, msg)
                if problem:
                    raise ScenarioFailure(
                        f"unexpected message before {_short(pattern)}: {_short(msg)} ({problem})"
                    )
                seen.append(msg)
            self.capture(step, msg)
            if "collect" in step:
                self.collected[str(step["collect"])] = seen
        elif "expect_all" in step:
            wanted = list(substitute(step["expect_all"], self.vars))
            allow = substitute(step.get("allow", {"method": "<string>", "id": _ABSENT}), self.vars)
            seen = []
            deadline = time.monotonic() + timeout / 1000
            while wanted:
                left = max(1.0, (deadline - time.monotonic()) * 1000)
                msg = await self.next_message(f"messages matching {_short(wanted)}", left)
                hit = next((i for i, p in enumerate(wanted) if mismatch(p, msg) is None), None)
                if hit is not None:
                    wanted.pop(hit)
                    continue
                problem = mismatch(allow, msg)
                if problem:
                    raise ScenarioFailure(f"unexpected message: {_short(msg)} ({problem})")
                seen.append(msg)
            if "collect" in step:
                self.collected[str(step["collect"])] = seen
        elif "check" in step:
            items = self.collected.get(str(step["check"]), [])
            if "min" in step and len(items) < int(step["min"]):
                raise ScenarioFailure(f"collected {len(items)} messages, expected at least {step['min']}")
            if "max" in step and len(items) > int(step["max"]):
                raise ScenarioFailure(f"collected {len(items)} messages, expected at most {step['max']}")
            if "each" in step:
                pattern = substitute(step["each"], self.vars)
                for item in items:
                    problem = mismatch(pattern, item)
                    if problem:
                        raise ScenarioFailure(f"{problem}\n  in: {_short(item)}")
            if "none" in step:
                pattern = substitute(step["none"], self.vars)
                for item in items:
                    if mismatch(pattern, item) is None:
                        raise ScenarioFailure(f"unexpected {_short(item)}")
            if "contains_in_order" in step:
                wanted = substitute(step["contains_in_order"], self.vars)
                i = 0
                for item in items:
                    if i < len(wanted) and mismatch(wanted[i], item) is None:
                        i += 1
                if i < len(wanted):
                    raise ScenarioFailure(
                        f"no message matching {_short(wanted[i])} (in order) among {len(items)} collected"
                    )
        elif "expect_silence_ms" in step:
            try:
                line = await self.next_line(float(step["expect_silence_ms"]))
            except TimeoutError:
                return
            raise ScenarioFailure(f"expected silence, got {_short(line.msg if line else 'end of stdout')}")
        elif "answer" in step:
            spec = substitute(step["answer"], self.vars)
            skipped: list[Any] = []
            while True:
                msg = await self.next_message(f"an agent request {spec['method']}", timeout)
                is_note = isinstance(msg, dict) and "method" in msg and "id" not in msg
                if not (is_note and step.get("skip_notifications")):
                    break
                skipped.append(msg)
            if "collect" in step:
                self.collected[str(step["collect"])] = skipped
            if not (isinstance(msg, dict) and msg.get("method") == spec["method"] and "id" in msg):
                raise ScenarioFailure(f"expected a {spec['method']} request, got {_short(msg)}")
            self.vars["REQUEST_ID"] = msg["id"]
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
            if "error" in spec:
                reply["error"] = spec["error"]
            else:
                reply["result"] = spec.get("result", {})
            await self.agent.write(json.dumps(reply).encode() + b"\n")
        elif "write_file" in step:
            spec = substitute(step["write_file"], self.vars)
            target = Path(self.vars["CWD"], str(spec["path"]))
            target.parent.mkdir(parents=True, exist_ok=True)
            await anyio.Path(target).write_text(str(spec["text"]), encoding="utf-8")
        elif "check_file" in step:
            spec = substitute(step["check_file"], self.vars)
            target = Path(self.vars["CWD"], str(spec["path"]))
            if spec.get("absent"):
                if target.exists():
                    raise ScenarioFailure(f"{spec['path']} exists, expected it absent")
            else:
                try:
                    text = target.read_text(encoding="utf-8")
                except OSError as exc:
                    raise ScenarioFailure(f"cannot read {spec['path']}: {exc}") from None
                if text != spec["text"]:
                    raise ScenarioFailure(f"{spec['path']} holds {text!r}, expected {spec['text']!r}")
        elif "kill" in step:
            await self.agent.kill()
            await self._drain_after_exit()
        elif "start" in step:
            await self.agent.start(self.tg)
        elif "close_stdin" in step:
            await self.agent.close_stdin()
        elif "expect_exit" in step:
            spec = step["expect_exit"]
            assert self.agent.process is not None
            try:
                with anyio.fail_after(float(spec.get("within_ms", 5000)) / 1000):
                    code = await self.agent.process.wait()
            except TimeoutError:
                raise ScenarioFailure(
                    f"the agent did not exit within {spec.get('within_ms', 5000)} ms"
                ) from None
            if "code" in spec and code != spec["code"]:
                raise ScenarioFailure(f"exit code {code}, expected {spec['code']}")
            leftovers = await self._drain_after_exit()
            if leftovers and not spec.get("allow_output", False):
                raise ScenarioFailure(f"unexpected output before exit: {_short(leftovers[0])}")
        elif "assert_distinct" in step:
            values = [json.dumps(self.vars.get(v), sort_keys=True) for v in step["assert_distinct"]]
            if len(set(values)) != len(values):
                raise ScenarioFailure(f"expected distinct values, got {values}")
        elif "sleep_ms" in step:
            await anyio.sleep(float(step["sleep_ms"]) / 1000)
        else:
            raise ScenarioFailure(f"unknown step {step!r}")

    async def _drain_after_exit(self) -> list[Any]:
        out: list[Any] = []
        with anyio.move_on_after(5):
            await self.agent.eof.wait()
        while True:
            try:
                line = await self.next_line(50)
            except TimeoutError:
                break
            if line is None:
                break
            out.append(line.msg)
        return out


async def run_scenario(
    scenario: Mapping[str, Any],
    command: Sequence[str],
    *,
    features: set[str],
    base_env: Mapping[str, str] | None = None,
    validator: MessageValidator | None = None,
) -> ScenarioResult:
    """Run one scenario against a fresh agent with its own temp home; never raises for a failure."""
    name = str(scenario.get("name"))
    missing = [f for f in scenario.get("requires", []) if f not in features]
    if missing:
        return ScenarioResult(name, True, skipped=f"needs agent features {missing}")
    validator = validator or MessageValidator()
    with tempfile.TemporaryDirectory(prefix="acp-conf-") as tmp:
        home, project, env = _prepare(tmp, scenario, base_env)
        variables: dict[str, Any] = {"CWD": str(project), "HOME": str(home), "TMP": tmp}
        agent = AgentProcess(command, env, str(project), validator, {})
        result = ScenarioResult(name, False)
        try:
            with anyio.fail_after(float(scenario.get("timeout_s", 60))):
                async with anyio.create_task_group() as tg:
                    if scenario.get("autostart", True):
                        await agent.start(tg)
                    player = _Player(scenario, agent, variables, tg)
                    try:
                        await player.play()
                        result.ok = True
                    finally:
                        result.messages = player.count
                        with anyio.CancelScope(shield=True):
                            await agent.stop()
                        tg.cancel_scope.cancel()
        except Exception as exc:
            leaf = _leaf(exc)
            if isinstance(leaf, ScenarioFailure):
                result.detail = str(leaf)
            elif isinstance(leaf, TimeoutError):
                result.detail = "scenario timed out"
            else:
                result.detail = f"{type(leaf).__name__}: {str(leaf)[:1000]}"
        result.stderr_tail = agent.stderr[-3000:].decode("utf-8", "replace")
        return result


def _prepare(
    tmp: str, scenario: Mapping[str, Any], base_env: Mapping[str, str] | None
) -> tuple[Path, Path, dict[str, str]]:
    """The scenario's home, project directory and environment (the script file written)."""
    home = Path(tmp, "home")
    project = Path(tmp, "project")
    project.mkdir()
    env = dict(os.environ if base_env is None else base_env)
    env["ACP_AGENT_HOME"] = str(home)
    env.setdefault("ACP_AGENT_LOG_LEVEL", "warning")
    env.update({str(k): str(v) for k, v in scenario.get("env", {}).items()})  # the agent's settings
    if "script" in scenario:
        script = Path(tmp, "script.json")
        script.write_text(json.dumps(scenario["script"]), encoding="utf-8")
        env["ACP_AGENT_SCRIPT"] = str(script)
        env["ACP_AGENT_PROVIDER"] = "script"
    return home, project, env


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def split_command(command: str | Sequence[str]) -> list[str]:
    """argv of the agent; a relative program path is made absolute (the agent runs in a temp cwd)."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv and os.sep in argv[0] and not os.path.isabs(argv[0]):
        argv[0] = os.path.abspath(argv[0])
    return argv
