"""``/undo``: revert the agent's last file change, asking first when that is not harmless.

The journal re-resolves every path through the session's root and skips one that now leads through a
symbolic link or out of the project. Before anything is written the user is asked (a permission request
of its own) when a file changed since the agent's edit (undoing loses those changes) or is a protected
path (in every mode but ``full-access``). Rejected: nothing is undone and the change stays undoable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio.to_thread

from ..session.plugin import CommandOutcome
from .permissions._gate import Cancelled

if TYPE_CHECKING:
    from harness.tools import Journal, UndoPlan

    from .permissions._gate import PermissionGate
    from .permissions._modes import ModeState

__all__ = ["UndoCommand"]

DESCRIPTION = "Undo the agent's last file change"


@dataclass(slots=True)
class UndoCommand:
    """The ``/undo`` slash command over the session's journal."""

    journal: Journal
    gate: PermissionGate
    modes: ModeState

    async def __call__(self, args: str) -> CommandOutcome:
        if not len(self.journal):
            return CommandOutcome(
                reply="Nothing to undo: the agent has not changed any file in this session."
            )
        plan = await self.journal.plan_undo(1)
        label = plan.labels[0]
        concerns = await self._concerns(plan)
        if concerns:
            note = "\n".join([f"Undo {label}?", *concerns])
            try:
                yes = await self.gate.confirm(f"Undo {label}", note, [str(r.path) for r in plan.reverts])
            except Cancelled:
                return CommandOutcome(reply="Cancelled: nothing was undone.")
            if not yes:
                return CommandOutcome(reply=f"Nothing was undone; {label} can still be undone with /undo.")
        done = await self.journal.apply(plan)
        lines = [f"Undid {label}:"]
        for item in done:
            if item.problem is not None:
                lines.append(f"- {item.action} {item.path}: {item.problem}")
                continue
            note = " (it had changed since; those changes are lost)" if item.overwrote else ""
            lines.append(f"- {item.action} {item.path}{note}")
        return CommandOutcome(reply="\n".join(lines))

    async def _concerns(self, plan: UndoPlan) -> list[str]:
        """Why the user must say yes first (empty: undo at once)."""
        out: list[str] = []
        guard = self.modes.mode != "full-access"
        for r in plan.reverts:
            if r.blocked is not None:
                continue
            if r.changed_since:
                out.append(f"- `{r.path}` changed since the agent's edit: undoing loses those changes.")
            why = await anyio.to_thread.run_sync(self.modes.protected.why_real, r.path) if guard else None
            if why is not None:
                out.append(f"- `{r.path}` is protected: {why}.")
        return out
