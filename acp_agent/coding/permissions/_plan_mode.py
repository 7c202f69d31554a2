"""Plan mode's two parts: ``PlanExit``, the tool that proposes leaving it once the plan is written, and
``PLAN_NOTE``, what the model is told while in it (a ``mode`` section of ``_context_updates``, at the start
of a turn: an edit of the system prompt would start the prompt cache anew)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness import Decision, Hints, Question, Result, ToolSpec

if TYPE_CHECKING:
    from harness import Call

    from .._controls import CodingControls
    from ._modes import ModeState

__all__ = ["PLAN_NOTE", "PlanExit"]

PLAN_NOTE = (
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
