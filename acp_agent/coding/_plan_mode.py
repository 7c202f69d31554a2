"""Plan mode's two parts: ``PlanExit``, the tool that proposes leaving it once the plan is written, and
``ModeNote``, the model middleware that tells the model it is in plan mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harness import Decision, Hints, Question, Result, ToolSpec

if TYPE_CHECKING:
    from harness import Call
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

    from ._controls import CodingControls
    from ._modes import ModeState

__all__ = ["ModeNote", "PlanExit"]

_PLAN_NOTE = (
    "\n\nYou are in plan mode: you may read, search and plan, but not edit files or run commands. Write the "
    "plan with plan_set; when it is ready, call plan_exit to propose switching to a mode that carries it out."
)


class PlanExit:
    """``plan_exit {summary?}``: in plan mode, ask the user to switch to a mode that carries out the plan."""

    def __init__(self, modes: ModeState, controls: CodingControls) -> None:
        self._modes = modes
        self._controls = controls

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "plan_exit",
            "In plan mode, once the plan is written: ask the user to switch to a mode that can carry it out.",
            {
                "type": "object",
                "properties": {"summary": {"type": "string", "description": "The plan in a few lines."}},
                "additionalProperties": False,
            },
            Hints(read_only=True, idempotent=False),
            meta={"kind": "switch_mode"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        if self._modes.mode != "plan":
            return Result.failure(f"plan_exit: not in plan mode (the mode is {self._modes.mode})")
        answer = call.answers().get("mode")
        if answer is None:
            choices = (*(m for m in ("accept-edits", "default") if m in self._modes.offered), "plan")
            summary = str(input.get("summary") or "").strip()
            text = "The plan is ready. Switch mode to carry it out?" + (f"\n\n{summary}" if summary else "")
            return call.needs_input([Question("mode", text, choices)], state={"asked": True})
        if isinstance(answer, Decision) or answer == "plan":
            return Result.text("The user wants to keep planning; stay in plan mode.")
        await self._controls.set_mode(str(answer))
        return Result.text(f"The user switched to {answer} mode: carry out the plan now.")


class ModeNote:
    """Model middleware: tells the model it is in plan mode (the mode can change mid-session)."""

    def __init__(self, modes: ModeState) -> None:
        self._modes = modes

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        if self._modes.mode == "plan":
            return next(prompt.replace(system=(prompt.system or "") + _PLAN_NOTE))
        return next(prompt)
