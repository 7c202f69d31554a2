"""Project trust in a session: the question at the first prompt, and the project's rule file.

``ProjectTrustPrompt``: when the project's configuration asks for settings that need trust and the user has
not trusted them (``Config.project``), the session starts without them; at the first prompt the editor is
asked (``session/request_permission`` listing exactly what the configuration would do: allow once, always,
reject). "Always" records the trust in the user's data (``acp_agent.trust.TrustStore``); either "allow"
applies the settings to this session before its turn runs (the MCP servers start only then). "Reject" (or
a failed request) keeps them off and tells the user, once, what was ignored and how to trust the project.

``ProjectRuleStore``: the project's permission file. Allow rules the user gives through the agent are
recorded (vouched) in the trust store; in an untrusted project only those, and every deny rule, apply, so a
repository cannot ship its own "always allow".
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from harness.policy import PermissionStore, Rule, Verdict

from ..trust import ProjectTrust, TrustStore, rule_key

if TYPE_CHECKING:
    from ..config import Config
    from ._gate import PermissionGate, SessionLink

__all__ = ["ProjectRuleStore", "ProjectTrustPrompt", "trust_notice"]

log = logging.getLogger(__name__)

_OPTIONS = [
    {"optionId": "allow_once", "name": "Trust for this session", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always trust this project", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Don't trust", "kind": "reject_once"},
]


def trust_notice(project: ProjectTrust) -> str:
    """What was ignored, and how to trust the project (told once, when the user did not trust it)."""
    return (
        f"The configuration of {project.root} was not applied: this project is not trusted, so these "
        f"settings are ignored:\n{project.summary()}\n\nTo use them, answer \u201cAlways trust this "
        f"project\u201d when asked, or run `acp-harness-agent trust {project.root}` in a terminal.\n"
    )


class ProjectRuleStore(PermissionStore):
    """The project's rule file: in an untrusted project, only deny rules and the allow rules the user gave
    apply. ``trusted`` may be switched on later in the session (the user trusted the project)."""

    def __init__(self, path: Path | str, trust: TrustStore, *, trusted: bool, root: Path | None) -> None:
        super().__init__(path)
        self.trust = trust
        self.trusted = trusted
        inside = root is not None and self.path.resolve().is_relative_to(root.resolve())
        self._checked = inside  # a file outside the project did not come with it

    def rules_sync(self) -> list[Rule]:
        rules = super().rules_sync()
        if self.trusted or not self._checked:
            return rules
        vouched = self.trust.vouched(self.path)
        kept = [r for r in rules if r.verdict is Verdict.DENY or rule_key(r.to_dict()) in vouched]
        if len(kept) != len(rules):
            log.info("%s: %d allow rules ignored (untrusted project)", self.path, len(rules) - len(kept))
        return kept

    async def add(self, rule: Rule) -> bool:
        added = await super().add(rule)
        if rule.verdict is Verdict.ALLOW:  # the user's own answer: it holds without trust
            await anyio.to_thread.run_sync(self.trust.vouch, self.path, rule.to_dict())
        return added

    async def remove(self, rule: Rule) -> bool:
        removed = await super().remove(rule)
        await anyio.to_thread.run_sync(self.trust.unvouch, self.path, rule.to_dict())
        return removed


class ProjectTrustPrompt:
    """Asks once per session (see the module docstring). ``reload(trust)`` resolves the configuration
    again (``None``: as the trust store says); ``apply(config)`` puts a trusted one into effect."""

    def __init__(
        self,
        project: ProjectTrust,
        store: TrustStore,
        gate: PermissionGate,
        link: SessionLink,
        reload: Callable[[bool | None], Awaitable[Config]],
        apply: Callable[[Config], Awaitable[None]],
    ) -> None:
        self.project = project
        self._store = store
        self._gate = gate
        self._link = link
        self._reload = reload
        self._apply = apply
        self.pending = bool(project.ignored)

    async def settle(self) -> None:
        """Ask, if still to be asked, and apply the answer (before the turn's model and tools)."""
        if not self.pending:
            return
        from ._gate import Cancelled

        current = await self._reload(None)  # trusted meanwhile (another session, `acp-harness-agent trust`)?
        if current.project is not None and current.project.trusted:
            self.pending = False
            await self._apply(current)
            return
        call_id = f"trust_{uuid.uuid4().hex[:12]}"
        try:
            chosen = await self._gate.request_permission(self._tool_call(call_id), list(_OPTIONS))
        except Cancelled:
            return  # the turn is being cancelled: ask again at the next prompt
        self.pending = False
        if chosen not in ("allow_once", "allow_always"):
            await self._status(call_id, "failed")
            text = trust_notice(self.project)
            await self._link.advise(
                "The project's configuration was not applied: it is not trusted", text, text
            )
            return
        config = await self._reload(True)
        project = config.project
        if project is None or project.digest != self.project.digest:
            # The files changed while the user read the question: what was approved is not what is there.
            self.pending = True
            self.project = project or self.project
            await self._status(call_id, "failed")
            await self._say("The project configuration changed meanwhile; it will be asked about again.\n")
            return
        if chosen == "allow_always":
            texts = [item.text for item in project.items]
            await anyio.to_thread.run_sync(self._store.grant, project.root, project.digest, texts)
            log.info("project %s trusted (%s)", project.root, project.digest)
        await self._apply(config)
        await self._status(call_id, "completed")

    def _tool_call(self, call_id: str) -> dict[str, Any]:
        root = self.project.root
        text = (
            f"The project {root} has its own agent configuration. Trusting it lets it:\n"
            f"{self.project.summary()}\n\nOnly trust a project whose configuration you have read."
        )
        return {
            "toolCallId": call_id,
            "title": f"Trust the configuration of {root.name or root}?",
            "kind": "other",
            "status": "pending",
            "content": [{"type": "content", "content": {"type": "text", "text": text}}],
            "rawInput": {"project": str(root), "settings": [item.text for item in self.project.items]},
        }

    async def _status(self, call_id: str, status: str) -> None:
        from ..protocol.models import ToolCallProgress

        await self._link.send(ToolCallProgress(tool_call_id=call_id, status=status))  # pyright: ignore[reportArgumentType]

    async def _say(self, text: str) -> None:
        from ..protocol.models import AgentMessageChunk, TextContent

        await self._link.send(AgentMessageChunk(content=TextContent(text=text)))
