"""Plays one scenario's steps against a running agent.

Steps (after ``macros.expand_macros``):

- ``{"send": obj}`` one JSON line (``"pad": {"path": "params.prompt.0.text", "bytes": N}`` fills a string);
  ``{"send_raw": "text"}`` / ``{"send_hex": "ff00"}`` a raw line.
- ``{"expect": pattern, "capture": {"VAR": "result.sessionId"}}``: the next message matches. When the
  pattern names an ``id`` (a response is awaited), notifications before it are passed over and agent
  requests answered (``client.answer_agent_request``), unless ``"strict": true``. ``capture_optional``
  captures what may be absent.
- ``{"expect_until": pattern, "collect": "NAME", "allow": pattern}``: read until a message matches; every
  notification before it must match ``allow`` (default: any notification) and is kept under NAME.
- ``{"expect_all": [patterns], "allow": pattern, "collect": "NAME"}``: several messages, in any order.
- ``{"check": "NAME", "each" | "none" | "contains_in_order" | "joined": ..., "min": n, "max": n}``: assertions on
  collected messages (``joined``: ``{"update": pattern, "contains": "text"}``, the ``content.text`` of the
  matching updates, concatenated, contains the text).
- ``{"expect_silence_ms": N}``: nothing (but transparent updates) is written for N ms.
- ``{"answer": {"method": m, "result": r | "error": e}}``: the next message is an agent request of method m.
- ``{"await_model": "stalled" | "abandoned", "timeout_ms": N}``: the fake model's stalled turn is holding
  its stream open / the agent has closed it (stopped the model request). Without a model (an agent that
  answers prompts itself), ``stalled`` waits 300 ms.
- ``{"model_request": {"index": 1, "contains": "text", "absent": "text"}}``: the fake model's request number
  ``index`` (from 0) carries the ``contains`` text (a tool result sent back to the model, say) and not the
  ``absent`` one.
- ``{"release_model": true}``: the fake model's stalled turn finishes its stream (it held it open until now).
- ``{"check_var": "NAME", "pattern": p}``: a captured value matches ``p``.
- ``{"require_var": "NAME", "reason": "..."}``: stop here, reporting the scenario not applicable, unless a
  ``capture_optional`` of an earlier step captured NAME.
- ``{"write_file": {"path", "text"}}``, ``{"check_file": {"path", "text" | "absent": true}}`` in ``${CWD}``.
- ``{"kill": true}``, ``{"start": true}``, ``{"close_stdin": true}``, ``{"expect_exit": {"code", "within_ms"}}``,
  ``{"sleep_ms": N}``, ``{"assert_distinct": ["A", "B"]}``.

A step may carry ``"as": {"id", "title", "level", "source"}``: it is then reported as that check of its own,
and its failure does not stop the scenario; with ``"lenient": pattern`` an ``expect`` step whose message
misses the pattern but matches ``lenient`` fails only that check, while one that matches neither fails the
scenario's main check too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from .agent import AgentProcess, Line
from .assertions import check_collected
from .client import answer_agent_request
from .fake_model import FakeModel
from .json_types import is_object, member
from .patterns import ABSENT, get_path, mismatch, set_path, short, substitute
from .steps import NotApplicable, OtherSteps, StepFailure
from .validate import id_key

__all__ = ["DEFAULT_TRANSPARENT", "NotApplicable", "Player", "StepFailure"]

DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_TRANSPARENT = (
    "available_commands_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "current_mode_update",
)
_NOTIFICATION = {"method": "<string>", "id": ABSENT}


def _is_request(msg: Any) -> bool:
    return is_object(msg) and "method" in msg and "id" in msg


def _awaits_response(pattern: Any) -> bool:
    if not is_object(pattern):
        return False
    if "$oneOf" in pattern:
        return all(_awaits_response(p) for p in pattern["$oneOf"])
    return "id" in pattern


class Player(OtherSteps):
    def __init__(
        self,
        agent: AgentProcess,
        variables: dict[str, Any],
        tg: anyio.abc.TaskGroup,
        *,
        client_caps: Mapping[str, Any],
        root: Path,
        permission: str = "allow",
        transparent: tuple[str, ...] = DEFAULT_TRANSPARENT,
        timeout_scale: float = 1.0,
        model: FakeModel | None = None,
    ) -> None:
        self.agent = agent
        self.vars = variables
        self.tg = tg
        self.client_caps = client_caps
        self.root = root
        self.permission = permission
        self.transparent = frozenset(transparent)
        self.scale = timeout_scale
        self.model = model
        self.collected: dict[str, list[Any]] = {}
        self.count = 0
        self.wire_problems: list[str] = []
        self.violations: list[str] = []
        self.sub_results: list[tuple[Mapping[str, Any], bool, str]] = []

    # -- reading -------------------------------------------------------------------------------

    async def next_line(self, timeout_ms: float) -> Line | None:
        assert self.agent.lines is not None
        with anyio.fail_after(timeout_ms / 1000):
            while True:
                line = await self.agent.lines.receive()
                if line is None:
                    return None
                self.count += 1
                if line.problems:
                    self.wire_problems.append(
                        "; ".join(line.problems)
                        + f"\n    line: {short(line.msg if line.parsed else line.raw)}"
                    )
                if not line.parsed:
                    continue
                if self._is_transparent(line.msg):
                    self.collected.setdefault("_transparent", []).append(line.msg)
                    continue
                return line

    def _is_transparent(self, msg: Any) -> bool:
        if not is_object(msg) or "id" in msg or not isinstance(msg.get("method"), str):
            return False
        method: str = msg["method"]
        if method.startswith("_"):
            return True  # extension notifications are the agent's own business
        if method != "session/update":
            return False
        update = member(msg.get("params"), "update")
        return is_object(update) and update.get("sessionUpdate") in self.transparent

    async def next_message(self, what: str, timeout_ms: float) -> Any:
        try:
            line = await self.next_line(timeout_ms)
        except TimeoutError:
            raise StepFailure(f"timed out after {timeout_ms:.0f} ms waiting for {what}") from None
        if line is None:
            raise StepFailure(f"the agent closed stdout while waiting for {what}")
        return line.msg

    async def auto_answer(self, msg: Any) -> bool:
        """Answer an agent request the step is not waiting for; False for anything else."""
        if not _is_request(msg):
            return False
        method = str(msg["method"])
        reply, violation = answer_agent_request(
            method, msg.get("params"), self.client_caps, self.permission, self.root
        )
        if violation:
            self.violations.append(violation)
        self.collected.setdefault("_requests", []).append(msg)
        await self.write({"jsonrpc": "2.0", "id": msg["id"], **reply})
        return True

    # -- writing -------------------------------------------------------------------------------

    async def write(self, obj: Any) -> None:
        await self.write_bytes(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    async def write_bytes(self, data: bytes) -> None:
        try:
            await self.agent.write(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
            code = self.agent.process.returncode if self.agent.process else None
            raise StepFailure(f"the agent no longer reads its stdin (it exited, code {code})") from None

    async def send_obj(self, obj: Any, pad: Mapping[str, Any] | None = None) -> None:
        obj = substitute(obj, self.vars)
        if pad is not None:
            set_path(obj, str(pad["path"]), "x" * int(pad["bytes"]))
        if is_object(obj) and "id" in obj and "method" in obj:
            self.agent.sent_methods[id_key(obj["id"])] = str(obj["method"])
        await self.write(obj)

    # -- playing -------------------------------------------------------------------------------

    def timeout(self, step: Mapping[str, Any]) -> float:
        return float(step.get("timeout_ms", DEFAULT_TIMEOUT_MS)) * self.scale

    async def play(self, steps: list[dict[str, Any]]) -> None:
        """Raises ``StepFailure`` for the first failure of the scenario's main check."""
        for index, step in enumerate(steps):
            kind = next((k for k in step if k not in ("as", "lenient", "timeout_ms")), "?")
            where = f"step {index + 1} ({kind})"
            try:
                await self.step(step)
            except StepFailure as exc:
                sub = step.get("as")
                if sub is not None:
                    self.sub_results.append((sub, False, f"{where}: {exc}"))
                if sub is None or ("lenient" in step and not exc.lenient_ok):
                    raise StepFailure(f"{where}: {exc}") from None
            else:
                if "as" in step:
                    self.sub_results.append((step["as"], True, ""))

    async def step(self, step: Mapping[str, Any]) -> None:
        for key, handler in self._handlers().items():
            if key in step:
                await handler(step)
                return
        raise StepFailure(f"unknown step {step!r}")

    def _handlers(self) -> dict[str, Callable[[Mapping[str, Any]], Any]]:
        return {
            "send": lambda s: self.send_obj(s["send"], s.get("pad")),
            "send_raw": lambda s: self.write_bytes(
                str(substitute(s["send_raw"], self.vars)).encode() + b"\n"
            ),
            "send_hex": lambda s: self.write_bytes(bytes.fromhex(s["send_hex"]) + b"\n"),
            "expect": self._expect,
            "expect_until": self._expect_until,
            "expect_all": self._expect_all,
            "check": self._check,
            "expect_silence_ms": self._silence,
            "answer": self._answer,
            "await_model": self._await_model,
            "model_request": self._model_request,
            "release_model": self._release_model,
            "require_var": self._require_var,
            "check_var": self._check_var,
            "write_file": self._write_file,
            "check_file": self._check_file,
            "kill": self._kill,
            "start": lambda s: self.agent.start(self.tg),
            "close_stdin": lambda s: self.agent.close_stdin(),
            "expect_exit": self._expect_exit,
            "assert_distinct": self._assert_distinct,
            "sleep_ms": lambda s: anyio.sleep(float(s["sleep_ms"]) / 1000),
        }

    def capture(self, step: Mapping[str, Any], msg: Any) -> None:
        captures: Mapping[str, Any] = step.get("capture") or {}
        for name, path in captures.items():
            try:
                self.vars[name] = get_path(msg, path)
            except (KeyError, IndexError, ValueError, TypeError):
                raise StepFailure(f"cannot capture {name} from {path} in {short(msg)}") from None
        optional: Mapping[str, Any] = step.get("capture_optional") or {}
        for name, path in optional.items():
            try:
                self.vars[name] = get_path(msg, path)
            except (KeyError, IndexError, ValueError, TypeError):
                self.vars.pop(name, None)

    async def _expect(self, step: Mapping[str, Any]) -> None:
        pattern = substitute(step["expect"], self.vars)
        awaits_response = _awaits_response(pattern) and not step.get("strict")
        deadline = time.monotonic() + self.timeout(step) / 1000
        while True:
            left = max(1.0, (deadline - time.monotonic()) * 1000)
            msg = await self.next_message(f"a message matching {short(pattern)}", left)
            problem = mismatch(pattern, msg)
            if problem is None:
                break
            if awaits_response and (await self.auto_answer(msg) or mismatch(_NOTIFICATION, msg) is None):
                self.collected.setdefault("_interleaved", []).append(msg)
                continue
            lenient = step.get("lenient")
            ok = lenient is not None and mismatch(substitute(lenient, self.vars), msg) is None
            raise StepFailure(f"{problem}\n  got: {short(msg)}", lenient_ok=ok)
        self.capture(step, msg)

    async def _expect_until(self, step: Mapping[str, Any]) -> None:
        pattern = substitute(step["expect_until"], self.vars)
        allow = substitute(step.get("allow", _NOTIFICATION), self.vars)
        seen: list[Any] = []
        deadline = time.monotonic() + self.timeout(step) / 1000
        while True:
            left = max(1.0, (deadline - time.monotonic()) * 1000)
            msg = await self.next_message(f"a message matching {short(pattern)}", left)
            if mismatch(pattern, msg) is None:
                break
            if await self.auto_answer(msg):
                continue
            problem = mismatch(allow, msg)
            if problem:
                raise StepFailure(f"unexpected message before {short(pattern)}: {short(msg)} ({problem})")
            seen.append(msg)
        self.capture(step, msg)
        if "collect" in step:
            self.collected[str(step["collect"])] = seen

    async def _expect_all(self, step: Mapping[str, Any]) -> None:
        wanted = list(substitute(step["expect_all"], self.vars))
        allow = substitute(step.get("allow", _NOTIFICATION), self.vars)
        seen: list[Any] = []
        deadline = time.monotonic() + self.timeout(step) / 1000
        while wanted:
            left = max(1.0, (deadline - time.monotonic()) * 1000)
            msg = await self.next_message(f"messages matching {short(wanted)}", left)
            hit = next((i for i, p in enumerate(wanted) if mismatch(p, msg) is None), None)
            if hit is not None:
                wanted.pop(hit)
                continue
            if await self.auto_answer(msg):
                continue
            problem = mismatch(allow, msg)
            if problem:
                raise StepFailure(f"unexpected message: {short(msg)} ({problem})")
            seen.append(msg)
        if "collect" in step:
            self.collected[str(step["collect"])] = seen

    async def _check(self, step: Mapping[str, Any]) -> None:
        problem = check_collected(step, self.collected.get(str(step["check"]), []), self.vars)
        if problem:
            raise StepFailure(problem)

    async def _silence(self, step: Mapping[str, Any]) -> None:
        try:
            line = await self.next_line(float(step["expect_silence_ms"]))
        except TimeoutError:
            return
        raise StepFailure(f"expected silence, got {short(line.msg if line else 'the end of stdout')}")

    async def _answer(self, step: Mapping[str, Any]) -> None:
        spec = substitute(step["answer"], self.vars)
        skipped: list[Any] = []
        while True:
            msg = await self.next_message(f"an agent request {spec['method']}", self.timeout(step))
            is_note = is_object(msg) and "method" in msg and "id" not in msg
            if not (is_note and step.get("skip_notifications")):
                break
            skipped.append(msg)
        if "collect" in step:
            self.collected[str(step["collect"])] = skipped
        if not (_is_request(msg) and msg.get("method") == spec["method"]):
            raise StepFailure(f"expected a {spec['method']} request, got {short(msg)}")
        self.vars["REQUEST_ID"] = msg["id"]
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if "error" in spec:
            reply["error"] = spec["error"]
        else:
            reply["result"] = spec.get("result", {})
        await self.write(reply)

    async def drain_after_exit(self) -> list[Any]:
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
