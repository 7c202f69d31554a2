"""A coding session's controls: modes, config options (``mode``, ``model``, ``thought_level``), slash
commands (``/mode``, ``/model``, MCP prompts, and the ``extra_commands`` given: a name ->
(description, hint, handler) map, e.g. ``/undo``, ``/compact``) and the session's model."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from ..protocol.errors import RpcError
from ..session._setup import CommandOutcome
from ._modes import MODE_INFO

if TYPE_CHECKING:
    from harness import Model
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

    from ..config import Config
    from ..session._setup import SessionEnvironment, SessionHandle
    from ._gate import SessionLink
    from ._modes import ModeState

__all__ = ["CodingControls", "ModelSwitch", "ThoughtLevel", "known_context_window"]

log = logging.getLogger(__name__)

MODEL_LIST_TIMEOUT_S: Final = 15.0
MCP_READY_TIMEOUT_S: Final = 10.0

# Thought levels -> the provider knobs (Options.provider) that select them.
_THOUGHT: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "anthropic": {
        "off": {},
        "low": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        "medium": {"thinking": {"type": "enabled", "budget_tokens": 8192}},
        "high": {"thinking": {"type": "enabled", "budget_tokens": 24576}},
    },
    "openai": {
        "off": {},
        "low": {"reasoning_effort": "low"},
        "medium": {"reasoning_effort": "medium"},
        "high": {"reasoning_effort": "high"},
    },
    "openai-responses": {
        "off": {},
        "low": {"reasoning": {"effort": "low"}},
        "medium": {"reasoning": {"effort": "medium"}},
        "high": {"reasoning": {"effort": "high"}},
    },
}
_PROVIDER_KEY: Final = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai"}

_WINDOWS: Final = (
    ("claude", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("o3", 200_000),
    ("o4", 200_000),
)


def known_context_window(model: str | None) -> int | None:
    """The context window of well-known model families; None when unknown."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    return next((size for prefix, size in _WINDOWS if name.startswith(prefix)), None)


class ModelSwitch:
    """The session's model: delegates to the chosen one, so ``/model`` applies from the next step."""

    def __init__(self, current: Model) -> None:
        self.current = current

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self.current.stream(prompt)


class ThoughtLevel:
    """Model middleware: merges the chosen thought level's provider knobs into each prompt's options."""

    def __init__(self, provider: str | None) -> None:
        self.provider = provider
        self.level = "off"

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        knobs = _THOUGHT.get(self.provider or "", {}).get(self.level) or {}
        if not knobs or self.provider is None:
            return next(prompt)
        key = _PROVIDER_KEY[self.provider]
        merged = {**prompt.options.provider, key: {**prompt.options.provider.get(key, {}), **knobs}}
        return next(prompt.replace(options=replace(prompt.options, provider=merged)))


Handler = Callable[[str], Awaitable[CommandOutcome]]


class CodingControls:
    """Implements ``acp_agent.session.SessionControls`` for the coding factory."""

    def __init__(
        self,
        env: SessionEnvironment,
        config: Config,
        modes: ModeState,
        link: SessionLink,
        thought: ThoughtLevel,
        *,
        mcp: Any = None,
        extra_commands: Mapping[str, tuple[str, str | None, Handler]] | None = None,
        trust: Any = None,
    ) -> None:
        self._env = env
        self._config = config
        self._modes = modes
        self._link = link
        self._thought = thought
        self._mcp = mcp
        self._extra = dict(extra_commands or {})
        self._trust = trust  # a ProjectTrustPrompt: asked at the first prompt, before MCP servers start
        self._models: list[str] = [config.model] if config.model else []
        self._model_name: str | None = config.model
        self._switch: ModelSwitch | None = None
        self._built: dict[str, Model] = {}
        self._lock = anyio.Lock()

    @property
    def mode(self) -> str:
        return self._modes.mode

    # --- binding ---------------------------------------------------------------------------------

    def bind(self, session: SessionHandle) -> None:
        self._link.bind(session)

    # --- modes and config options -----------------------------------------------------------------

    def modes(self) -> dict[str, Any]:
        return {
            "currentModeId": self._modes.mode,
            "availableModes": [
                {"id": m, "name": MODE_INFO[m].name, "description": MODE_INFO[m].description}
                for m in self._modes.offered
            ],
        }

    def config_options(self) -> list[dict[str, Any]]:
        options: list[dict[str, Any]] = [
            {
                "type": "select",
                "id": "mode",
                "name": "Mode",
                "category": "mode",
                "description": "What the agent may do without asking",
                "currentValue": self._modes.mode,
                "options": [
                    {"value": m, "name": MODE_INFO[m].name, "description": MODE_INFO[m].description}
                    for m in self._modes.offered
                ],
            }
        ]
        names = list(self._models)
        current = self._model_name or (names[0] if names else self._config.provider or "default")
        if current not in names:
            names.insert(0, current)
        options.append(
            {
                "type": "select",
                "id": "model",
                "name": "Model",
                "category": "model",
                "currentValue": current,
                "options": [{"value": n, "name": n} for n in names],
            }
        )
        if self._config.provider in _THOUGHT:
            options.append(
                {
                    "type": "select",
                    "id": "thought_level",
                    "name": "Thinking",
                    "category": "thought_level",
                    "currentValue": self._thought.level,
                    "options": [
                        {"value": v, "name": v.capitalize()} for v in _THOUGHT[self._config.provider]
                    ],
                }
            )
        return options

    async def set_mode(self, mode_id: str) -> None:
        await self._set_mode(mode_id)
        await self._send_config_options()

    async def _set_mode(self, mode_id: str) -> None:
        from ..protocol.models import CurrentModeUpdate

        if mode_id not in self._modes.offered:
            raise RpcError.invalid_params(
                f"invalid params: modeId: unknown mode {mode_id!r}; one of {', '.join(self._modes.offered)}"
            )
        self._modes.set(mode_id)
        log.info("session %s: mode %s", self._env.session_id, mode_id)
        await self._link.send(CurrentModeUpdate(current_mode_id=mode_id))

    async def set_config_option(self, config_id: str, value: str | bool) -> list[dict[str, Any]]:
        if not isinstance(value, str):
            raise RpcError.invalid_params(f"invalid params: value: option {config_id!r} takes a value id")
        if config_id == "mode":
            await self._set_mode(value)
        elif config_id == "model":
            await self._set_model(value)
        elif config_id == "thought_level" and self._config.provider in _THOUGHT:
            if value not in _THOUGHT[self._config.provider]:
                raise RpcError.invalid_params(f"invalid params: value: unknown thought level {value!r}")
            self._thought.level = value
        else:
            raise RpcError.invalid_params(f"invalid params: configId: unknown option {config_id!r}")
        return self.config_options()

    async def _set_model(self, name: str) -> None:
        if self._models and name not in self._models:
            raise RpcError.invalid_params(
                f"invalid params: value: unknown model {name!r}; one of {', '.join(self._models)}"
            )
        if self._config.provider == "script" or self._config.provider is None:
            if name != self._model_name:
                raise RpcError.invalid_params(
                    f"invalid params: value: provider {self._config.provider} has one model"
                )
            return
        self._model_name = name
        if self._switch is not None:
            self._switch.current = await self._build(name)

    async def _send_config_options(self) -> None:
        from ..protocol.models import ConfigOptionUpdate

        await self._link.send(ConfigOptionUpdate.model_validate({"configOptions": self.config_options()}))

    # --- the session's life ---------------------------------------------------------------------

    def apply_config(self, config: Config) -> None:
        """A configuration resolved again (the user trusted the project): it applies from the model the
        first turn builds on (a model already built is kept)."""
        self._config = config
        self._thought.provider = config.provider
        if self._switch is None and config.model:
            self._model_name = config.model
            self._models = list(dict.fromkeys([config.model, *self._models]))

    async def opened(self) -> None:
        if self._trust is None or not self._trust.pending:
            await self._start_mcp()  # else at the first prompt, once the user said whether to trust
        await self.send_commands()
        await self._fetch_models()

    async def _start_mcp(self) -> None:
        if self._mcp is not None and not self._mcp.started:
            await self._mcp.start()

    async def send_commands(self) -> None:
        from ..protocol.models import AvailableCommandsUpdate

        commands = await self.commands()
        await self._link.send(AvailableCommandsUpdate.model_validate({"availableCommands": commands}))

    async def _fetch_models(self) -> None:
        provider = self._config.provider
        if provider not in ("openai", "openai-responses", "anthropic"):
            return
        try:
            from harness.providers.factory import list_models

            with anyio.fail_after(MODEL_LIST_TIMEOUT_S):
                found = await list_models(
                    provider, base_url=self._config.base_url, api_key=self._config.api_key
                )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.info("listing the models of %s failed: %s", provider, exc)
            return
        first: list[str] = [self._model_name] if self._model_name else []
        merged: list[str] = list(dict.fromkeys([*first, *sorted(found)]))
        if merged != self._models:
            self._models = merged
            await self._send_config_options()

    async def turn_starting(self) -> None:
        from ..protocol.models import AgentMessageChunk, TextContent

        if self._trust is not None:
            await self._trust.settle()
        if self._mcp is None:
            return
        await self._start_mcp()  # a prompt may come before the after-open work ran
        # Wait first: a server that fails while this turn waits for it is told in this turn.
        await self._mcp.wait_ready(MCP_READY_TIMEOUT_S)
        for failure in self._mcp.take_failures():
            await self._link.send(AgentMessageChunk(content=TextContent(text=f"{failure}\n")))

    def current_model(self) -> Model | None:
        """The session's model once its first turn chose it (``/model`` switches what it delegates to)."""
        return self._switch

    async def model(self, default: Callable[[], Awaitable[Model]]) -> Model:
        async with self._lock:
            if self._switch is None:
                base = await self._initial_model(default)
                self._switch = ModelSwitch(base)
            return self._switch

    async def _initial_model(self, default: Callable[[], Awaitable[Model]]) -> Model:
        provider = self._config.provider
        if provider in ("openai", "openai-responses", "anthropic") and self._model_name:
            return await self._build(self._model_name)
        return await default()

    async def _build(self, name: str) -> Model:
        built = self._built.get(name)
        if built is not None:
            return built
        from ..model_setup import ModelConfigError, ModelSettings, build_model
        from ..protocol.errors import INTERNAL_ERROR

        c = self._config
        settings = ModelSettings(c.provider, name, c.base_url, c.api_key)
        try:
            built = await anyio.to_thread.run_sync(build_model, settings)
        except ModelConfigError as exc:
            raise RpcError(INTERNAL_ERROR, str(exc), {"errorKind": "configuration_error"}) from exc
        self._built[name] = built
        return built

    # --- slash commands ----------------------------------------------------------------------------

    async def commands(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [
            {
                "name": "mode",
                "description": "Show or switch the mode: " + ", ".join(self._modes.offered),
                "input": {"hint": "mode"},
            },
            {"name": "model", "description": "Show or switch the model", "input": {"hint": "model name"}},
        ]
        for name, (description, hint, _handler) in self._extra.items():
            entry: dict[str, Any] = {"name": name, "description": description}
            if hint:
                entry["input"] = {"hint": hint}
            out.append(entry)
        if self._mcp is not None:
            try:
                out.extend(await self._mcp.commands())
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:
                log.exception("listing the MCP prompt commands failed")
        return out

    async def command(self, text: str) -> CommandOutcome | None:
        head, _, rest = text[1:].partition(" ")
        name, args = head.strip(), rest.strip()
        if name == "mode":
            if not args:
                return CommandOutcome(
                    reply=f"Mode: {self._modes.mode}. Modes: {', '.join(self._modes.offered)}."
                )
            try:
                await self.set_mode(args)
            except RpcError as exc:
                return CommandOutcome(reply=exc.message.removeprefix("invalid params: modeId: "))
            return CommandOutcome(reply=f"Mode: {args}.")
        if name == "model":
            if not args:
                listed = ", ".join(self._models) or "(none listed)"
                return CommandOutcome(reply=f"Model: {self._model_name or 'default'}. Models: {listed}.")
            try:
                await self._set_model(args)
            except RpcError as exc:
                return CommandOutcome(reply=exc.message.removeprefix("invalid params: value: "))
            await self._send_config_options()
            return CommandOutcome(reply=f"Model: {args}.")
        extra = self._extra.get(name)
        if extra is not None:
            return await extra[2](args)
        if self._mcp is not None:
            expanded = await self._mcp.expand(name, args)
            if expanded is not None:
                return CommandOutcome(prompt=expanded)
        return None
