"""A session's slash commands: providers of commands, and the ``available_commands_update`` that lists them.

Each ``CommandProvider`` (the built-ins, ``/compact``, MCP prompts; custom commands and skills) gives its
``SlashCommand``s; the first provider to name a command wins. ``SlashCommands.refresh()`` sends the list
when it changed (a provider calls it when its commands change).

Zed drops updates for a session it has not registered yet, and it registers a new session only after
its follow-up requests (``set_config_option`` for saved defaults). So the list goes out after the
opening response, again a moment later, again after the response to each of the client's follow-up
requests, and again at the first prompt (``client_followed_up``); after that, only when it changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import anyio

from ..protocol.models import AvailableCommandsUpdate
from ..session.plugin import CommandOutcome

if TYPE_CHECKING:
    from .permissions._gate import SessionLink

__all__ = ["CommandProvider", "McpPrompts", "SlashCommand", "SlashCommands", "StaticCommands"]

log = logging.getLogger(__name__)

RESEND_AFTER_S: Final = 0.3

Run = Callable[[str], Awaitable["CommandOutcome | None"]]


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """``/name args``: ``run(args)`` gives the outcome (None: not handled after all, try the next)."""

    name: str
    description: str
    run: Run
    hint: str | None = None

    def to_acp(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.hint:
            entry["input"] = {"hint": self.hint}
        return entry


class CommandProvider(Protocol):
    """A source of slash commands; asked each time the list is made (its commands may change)."""

    async def commands(self) -> Sequence[SlashCommand]: ...


class StaticCommands:
    """A fixed list of commands as a provider."""

    def __init__(self, commands: Sequence[SlashCommand]) -> None:
        self._commands = tuple(commands)

    async def commands(self) -> Sequence[SlashCommand]:
        return self._commands


class SlashCommands:
    """The session's commands: ``add`` providers; ``refresh`` sends the list when it changed."""

    def __init__(self, link: SessionLink) -> None:
        self._link = link
        self._providers: list[CommandProvider] = []
        self._sent: list[dict[str, Any]] | None = None
        self._prompted = False
        self._lock = anyio.Lock()

    def add(self, provider: CommandProvider) -> None:
        """Add a provider (after the ones already there: their names win on a clash)."""
        self._providers.append(provider)

    async def all(self) -> list[SlashCommand]:
        found: dict[str, SlashCommand] = {}
        for provider in self._providers:
            try:
                commands = await provider.commands()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:
                log.exception("listing the slash commands of %r failed", provider)
                continue
            for command in commands:
                found.setdefault(command.name, command)
        return list(found.values())

    async def run(self, text: str) -> CommandOutcome | None:
        """Run ``/name args``; None when no provider has the command (or none handled it)."""
        head, _, rest = text.strip()[1:].partition(" ")
        name, args = head.strip(), rest.strip()
        for command in await self.all():
            if command.name == name:
                return await command.run(args)
        return None

    async def refresh(self, *, force: bool = False) -> None:
        """Send ``available_commands_update`` if the list changed since it was last sent (or ``force``)."""
        async with self._lock:
            listed = [c.to_acp() for c in await self.all()]
            if not force and listed == self._sent:
                return
            self._sent = listed
            await self._link.send(AvailableCommandsUpdate.model_validate({"availableCommands": listed}))

    async def opened(self) -> None:
        """After the opening response: send, and again a moment later unless the client prompted."""
        await self.refresh(force=True)
        await anyio.sleep(RESEND_AFTER_S)
        if not self._prompted:
            await self.refresh(force=True)

    async def client_followed_up(self, *, prompt: bool = False) -> None:
        """The client answered the opening with a request of its own (its response is written) or a
        prompt: it knows the session now, so send the list again (until the first prompt)."""
        if self._prompted:
            return
        self._prompted = prompt
        await self.refresh(force=True)


class McpPrompts:
    """The MCP servers' prompts as slash commands (a prompt expands into the text sent to the model)."""

    def __init__(self, mcp: Any) -> None:
        self._mcp = mcp

    async def commands(self) -> list[SlashCommand]:
        out: list[SlashCommand] = []
        for entry in await self._mcp.commands():
            name = str(entry.get("name") or "")
            spec: Any = entry.get("input")
            hint: Any = cast("dict[str, Any]", spec).get("hint") if isinstance(spec, dict) else None

            async def run(args: str, name: str = name) -> CommandOutcome | None:
                expanded = await self._mcp.expand(name, args)
                return CommandOutcome(prompt=expanded) if expanded is not None else None

            if name:
                out.append(
                    SlashCommand(
                        name,
                        str(entry.get("description") or ""),
                        run,
                        hint if isinstance(hint, str) else None,
                    )
                )
        return out
