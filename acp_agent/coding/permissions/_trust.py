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
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from harness.policy import PermissionFileError, PermissionStore, Rule, Verdict

from ...protocol.models import AgentMessageChunk, TextContent, ToolCallProgress
from ...rule_lines import read_rule_lines
from ...small_files import written_inside
from ...trust import ProjectTrust, TrustStore, rule_key
from ._gate import Cancelled

if TYPE_CHECKING:
    from ...config import Config
    from ._gate import PermissionGate, SessionLink

__all__ = ["ProjectRuleStore", "ProjectTrustPrompt", "RuleFileStore", "trust_notice"]

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


class RuleFileStore(PermissionStore):
    """A permission file read by the one reader (``acp_agent.rule_lines``), as the trust check reads a
    project's: the user's own file (``follow``: through its link when it is one, as the user's
    ``config.toml``) and, as ``ProjectRuleStore``, the project's (``beneath`` its folder: no symlink followed
    from there down). A link is read, never replaced: a change to the rules refuses it (the file it leads
    to is the user's to edit, wherever their dotfiles keep it)."""

    def __init__(self, path: Path | str, *, beneath: Path | None = None, follow: bool = False) -> None:
        super().__init__(path)
        self.beneath = beneath
        self.follow = follow

    def _lines(self) -> tuple[list[tuple[int, dict[str, Any]]], list[int]] | None:
        read = read_rule_lines(self.path, beneath=self.beneath, follow=self.follow)
        if read.error is not None:
            raise PermissionFileError(f"{self.path} {read.error}")
        if not read.exists:
            return None
        return list(read.objects), list(read.foreign)

    def _read_own(self) -> list[Rule]:
        if self.follow and self.path.is_symlink():  # (a write would replace the link with a file)
            raise PermissionFileError(
                f"{self.path} is a symbolic link (to {os.readlink(self.path)}): its rules are read, but it "
                "is not replaced; edit the file it leads to"
            )
        return super()._read_own()


class ProjectRuleStore(RuleFileStore):
    """The project's rule file, read by the trust check's reader (``acp_agent.rule_lines``). Deny rules
    always apply; an allow rule applies when the user gave it (vouched), or when the user trusted the
    project with that very rule listed (``trusted_rules``: the ``rule_key`` of each rule the trust decision
    showed; an allow rule added to the file since needs trust again). A file outside the project (the
    user's own configuration put it there) applies whole."""

    def __init__(
        self, path: Path | str, trust: TrustStore, *, trusted_rules: frozenset[str], root: Path | None
    ) -> None:
        super().__init__(path, beneath=root)
        self.trust = trust
        self.trusted_rules = trusted_rules
        try:
            inside = root is not None and self.path.resolve().is_relative_to(root.resolve())
        except (OSError, RuntimeError):  # a symlink loop: judged as the project's own (the stricter)
            inside = True
        if root is not None and written_inside(self.path, root):  # a link the project placed that leads out
            inside = True
        self._checked = inside  # a file outside the project did not come with it
        self._vouched: frozenset[str] = frozenset()

    def rules_sync(self) -> list[Rule]:
        self._vouched = self.trust.vouched(self.path) if self._checked else frozenset()
        return super().rules_sync()

    def _applies(self, data: dict[str, Any], rule: Rule) -> bool:
        if not self._checked or rule.verdict is not Verdict.ALLOW:
            return True
        if rule_key(data) in self.trusted_rules or rule_key(rule.to_dict()) in self._vouched:
            return True
        log.info(
            "%s: an allow rule is ignored (not given by you, not trusted): %s", self.path, rule_key(data)
        )
        return False

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
        await self._link.send(ToolCallProgress(tool_call_id=call_id, status=status))  # pyright: ignore[reportArgumentType]

    async def _say(self, text: str) -> None:
        await self._link.send(AgentMessageChunk(content=TextContent(text=text)))
