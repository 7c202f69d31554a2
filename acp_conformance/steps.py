"""The scenario steps that are not about messages: the fake model, project files, the agent's process."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio

from .agent import AgentProcess
from .fake_model import FakeModel
from .patterns import mismatch, short, substitute

__all__ = ["NotApplicable", "OtherSteps", "StepFailure"]


def _carries(body: str, text: str) -> bool:
    """Whether a request body holds ``text``, as it is or JSON-escaped inside a string."""
    return text in body or json.dumps(text)[1:-1] in body


class StepFailure(AssertionError):
    def __init__(self, message: str, *, lenient_ok: bool = False) -> None:
        super().__init__(message)
        self.lenient_ok = lenient_ok


class NotApplicable(Exception):
    """The scenario cannot go on here (``require_var``): its checks are reported as not applicable."""


class OtherSteps:
    """Mixed into ``Player``: these handlers use its agent, variables, fake model and timeouts."""

    agent: AgentProcess
    vars: dict[str, Any]
    model: FakeModel | None
    scale: float

    def timeout(self, step: Mapping[str, Any]) -> float:
        raise NotImplementedError

    async def drain_after_exit(self) -> list[Any]:
        raise NotImplementedError

    async def _await_model(self, step: Mapping[str, Any]) -> None:
        what = str(step["await_model"])
        if self.model is None:
            if what == "stalled":  # an agent without a model: give its long turn a moment to begin
                await anyio.sleep(0.3)
                return
            raise StepFailure("no fake model in this run")
        event = self.model.stall_reached if what == "stalled" else self.model.stall_closed
        timeout = self.timeout(step) / 1000
        if await anyio.to_thread.run_sync(event.wait, timeout, abandon_on_cancel=True):
            return
        detail = "no stalled turn reached" if what == "stalled" else "the agent kept the model's stream open"
        raise StepFailure(f"{detail} ({self.model.summary()})")

    async def _model_request(self, step: Mapping[str, Any]) -> None:
        spec = substitute(step["model_request"], self.vars)
        if self.model is None:
            raise StepFailure("no fake model in this run")
        index = int(spec.get("index", 0))
        requests = self.model.model_requests
        if index >= len(requests):
            raise StepFailure(f"the model got {len(requests)} requests, expected at least {index + 1}")
        body = requests[index].body.decode("utf-8", "replace")
        if "contains" in spec and not _carries(body, str(spec["contains"])):
            raise StepFailure(f"model request {index + 1} does not carry {spec['contains']!r}")
        if "absent" in spec and _carries(body, str(spec["absent"])):
            raise StepFailure(f"model request {index + 1} carries {spec['absent']!r}, expected it absent")

    async def _release_model(self, step: Mapping[str, Any]) -> None:
        if self.model is None:
            raise StepFailure("no fake model in this run")
        self.model.stall_release.set()

    async def _require_var(self, step: Mapping[str, Any]) -> None:
        if step["require_var"] not in self.vars:
            raise NotApplicable(str(step.get("reason") or f"{step['require_var']} was not captured"))

    async def _write_file(self, step: Mapping[str, Any]) -> None:
        spec = substitute(step["write_file"], self.vars)
        target = anyio.Path(self.vars["CWD"], str(spec["path"]))
        await target.parent.mkdir(parents=True, exist_ok=True)
        await target.write_text(str(spec["text"]), encoding="utf-8")

    async def _check_file(self, step: Mapping[str, Any]) -> None:
        spec = substitute(step["check_file"], self.vars)
        target = anyio.Path(self.vars["CWD"], str(spec["path"]))
        if spec.get("absent"):
            if await target.exists():
                raise StepFailure(f"{spec['path']} exists, expected it absent")
            return
        try:
            text = await target.read_text(encoding="utf-8")
        except OSError as exc:
            raise StepFailure(f"cannot read {spec['path']}: {exc}") from None
        if text != spec["text"]:
            raise StepFailure(f"{spec['path']} holds {text!r}, expected {spec['text']!r}")

    async def _expect_exit(self, step: Mapping[str, Any]) -> None:
        spec = step["expect_exit"]
        assert self.agent.process is not None
        within = float(spec.get("within_ms", 5000)) * self.scale
        try:
            with anyio.fail_after(within / 1000):
                code = await self.agent.process.wait()
        except TimeoutError:
            raise StepFailure(f"the agent did not exit within {within:.0f} ms") from None
        if "code" in spec and code != spec["code"]:
            raise StepFailure(f"exit code {code}, expected {spec['code']}")
        leftovers = await self.drain_after_exit()
        if leftovers and not spec.get("allow_output", False):
            raise StepFailure(f"unexpected output before exit: {short(leftovers[0])}")

    async def _check_var(self, step: Mapping[str, Any]) -> None:
        if step["check_var"] not in self.vars:
            raise StepFailure(f"{step['check_var']} was not captured")
        problem = mismatch(substitute(step["pattern"], self.vars), self.vars[step["check_var"]])
        if problem:
            raise StepFailure(f"{problem}\n  in: {short(self.vars[step['check_var']])}")

    async def _kill(self, step: Mapping[str, Any]) -> None:
        await self.agent.kill()
        await self.drain_after_exit()

    async def _assert_distinct(self, step: Mapping[str, Any]) -> None:
        values = [json.dumps(self.vars.get(v), sort_keys=True) for v in step["assert_distinct"]]
        if len(set(values)) != len(values):
            raise StepFailure(f"expected distinct values, got {values}")
