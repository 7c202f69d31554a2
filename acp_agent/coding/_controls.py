"""A coding session's controls: modes, config options and slash commands, and the session's model.

Config options: ``mode``, ``model`` (every model the endpoint is known to serve, from ``ModelCatalog``:
the cached list in the ``session/new`` answer, refreshed after it; any model the server serves is
accepted), ``thought_level`` where the provider has one, and, for clients that render boolean options,
``web_tools`` and ``auto_compact`` switches. Slash commands are ``SlashCommands`` providers: the built-ins
(``/mode``, ``/model``), the ``extra_commands`` given (a name -> (description, hint, handler) map, e.g.
``/undo``, ``/compact``), MCP prompts, and whatever else is ``add``ed to ``controls.slash``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from ..model_setup import ModelConfigError, ModelSettings, build_model
from ..protocol.errors import INTERNAL_ERROR, RpcError
from ..protocol.models import ConfigOptionUpdate, CurrentModeUpdate
from ..session.plugin import PROVIDER_ID, SMALL_ID, CommandOutcome
from ._commands import CommandProvider, McpPrompts, SlashCommand, SlashCommands, StaticCommands
from ._toggles import Toggle
from .models._catalog import ModelCatalog, is_http
from .models._model_facts import ModelFacts, resolve_facts, window_text
from .models._pricing import Price, price_for
from .models._thinking import ModelSwitch, ThoughtLevel, thought_levels
from .opening import modes_state, options_state

if TYPE_CHECKING:
    from harness import Model

    from ..config import Config
    from ..session.plugin import SessionEnvironment, SessionHandle
    from .permissions._gate import SessionLink
    from .permissions._modes import ModeState

__all__ = ["CodingControls", "ModelSwitch", "ThoughtLevel", "Toggle"]

log = logging.getLogger(__name__)

MCP_READY_TIMEOUT_S: Final = 10.0


Handler = Callable[[str], Awaitable[CommandOutcome]]


class CodingControls:
    """Implements ``SessionControls`` (``acp_agent.session._setup``) for the coding factory."""

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
        catalog: ModelCatalog | None = None,
        toggles: Sequence[Toggle] = (),
        trust: Any = None,
        command_sources: Sequence[CommandProvider] = (),
        served: Sequence[str] = (),
        after_open: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self._env = env
        self._config = config
        self._modes = modes
        self._link = link
        self._thought = thought
        self._mcp = mcp
        self._trust = trust  # a ProjectTrustPrompt: asked at the first prompt, before MCP servers start
        self._catalog = catalog or ModelCatalog(env.home)
        self._toggles = {t.id: t for t in toggles}
        self._served: list[str] = list(served)  # the endpoint's models, as last known (the cache)
        self._after_open = after_open  # the set-up work left for after the opening answer
        self._model_name: str | None = config.model
        self._switch: ModelSwitch | None = None
        self._built: dict[tuple[str, str], Model] = {}
        self._lock = anyio.Lock()
        self.slash = SlashCommands(link)
        """The session's slash commands: ``slash.add(provider)`` adds more."""
        self.slash.add(StaticCommands(self._builtin_commands()))
        extra = [SlashCommand(n, d, h, hint) for n, (d, hint, h) in (extra_commands or {}).items()]
        self.slash.add(StaticCommands(extra))
        for source in command_sources:  # custom command files, /init
            self.slash.add(source)
        if mcp is not None:
            self.slash.add(McpPrompts(mcp))

    @property
    def mode(self) -> str:
        return self._modes.mode

    @property
    def _http(self) -> bool:
        return is_http(self._config.provider)

    # --- binding ---------------------------------------------------------------------------------

    def bind(self, session: SessionHandle) -> None:
        self._link.bind(session)

    # --- modes and config options -----------------------------------------------------------------

    def modes(self) -> dict[str, Any]:
        return modes_state(self._modes.mode, self._modes.offered)

    def facts(self, name: str | None = None) -> ModelFacts | None:
        """The facts of model ``name`` (default: the session's), from the configuration, the server's
        list and the built-in table (``_model_facts``); None when the session names no model."""
        name = name or self._model_name
        if not name:
            return None
        c = self._config
        served = self._catalog.facts(c.provider, c.base_url).get(name) if self._http and c.provider else None
        return resolve_facts(name, c.models.get(name), served)

    def price(self, name: str | None = None) -> Price | None:
        """The price of model ``name`` (default: the session's), None when unknown (``_pricing``)."""
        name = name or self._model_name
        if not name or not self._http:
            return None
        c = self._config
        served = self._catalog.facts(c.provider, c.base_url).get(name) if c.provider else None
        return price_for(name, c.models.get(name), served, c.prompt_cache)

    def small_model_name(self) -> str | None:
        """The configured ``small_model`` (None: none, a provider with no endpoint, or the client
        disabled the ``small`` provider)."""
        routes = self._env.routes
        if not self._http or (routes is not None and SMALL_ID in routes.disabled):
            return None
        return self._config.small_model

    async def side_model(self) -> tuple[Model, str] | None:
        """The configured ``small_model`` of the same endpoint and its name (None: see
        ``small_model_name``); callers fall back to the session's model. It follows the ``small`` route."""
        name = self.small_model_name()
        if not name:
            return None
        return await self._build(name, SMALL_ID), name

    def _window_of(self, name: str) -> int | None:
        facts = self.facts(name)  # the picker lists what is known, not Ollama's assumed default
        return facts.context_window if facts is not None and not facts.default_window else None

    def _models(self) -> list[str]:
        current = self._model_name
        names = [current] if current else []
        return list(dict.fromkeys([*names, *self._served]))

    def config_options(self) -> list[dict[str, Any]]:
        return options_state(
            mode=self._modes.mode,
            offered=self._modes.offered,
            models=self._served,
            current_model=self._model_name,
            provider=self._config.provider,
            thought_level=self._thought.level,
            window_of=self._window_of,
            toggles=list(self._toggles.values()),
            booleans=self._env.client_can("session", "configOptions", "boolean"),
        )

    async def set_mode(self, mode_id: str) -> None:
        await self._set_mode(mode_id)
        await self._send_config_options()

    async def _set_mode(self, mode_id: str) -> None:
        if mode_id not in self._modes.offered:
            raise RpcError.invalid_params(
                f"invalid params: modeId: unknown mode {mode_id!r}; one of {', '.join(self._modes.offered)}"
            )
        self._modes.set(mode_id)
        log.info("session %s: mode %s", self._env.session_id, mode_id)
        await self._link.send(CurrentModeUpdate(current_mode_id=mode_id))

    async def set_config_option(self, config_id: str, value: str | bool) -> list[dict[str, Any]]:
        toggle = self._toggles.get(config_id)
        if toggle is not None:
            if not isinstance(value, bool):
                raise RpcError.invalid_params(f"invalid params: value: option {config_id!r} is on or off")
            toggle.on = value
            log.info("session %s: %s %s", self._env.session_id, config_id, "on" if value else "off")
            return self.config_options()
        if not isinstance(value, str):
            raise RpcError.invalid_params(f"invalid params: value: option {config_id!r} takes a value id")
        if config_id == "mode":
            await self._set_mode(value)
        elif config_id == "model":
            await self._set_model(value)
        elif config_id == "thought_level" and thought_levels(self._config.provider):
            if value not in thought_levels(self._config.provider):
                raise RpcError.invalid_params(f"invalid params: value: unknown thought level {value!r}")
            self._thought.level = value
        else:
            raise RpcError.invalid_params(f"invalid params: configId: unknown option {config_id!r}")
        return self.config_options()

    def adopt(self, options: Sequence[Mapping[str, Any]]) -> None:
        """Take another session's option values (``session/fork``) quietly: the fork's response says them.
        Values this session does not offer are left at its own."""
        for option in options:
            config_id, value = option.get("id"), option.get("currentValue")
            toggle = self._toggles.get(str(config_id))
            if toggle is not None and isinstance(value, bool):
                toggle.on = value
            elif config_id == "mode" and value in self._modes.offered:
                self._modes.set(str(value))
            elif config_id == "model" and isinstance(value, str) and self._http:
                self._model_name = value  # the source's choice, checked there; the first turn builds it
            elif config_id == "thought_level" and value in thought_levels(self._config.provider):
                self._thought.level = str(value)

    async def _set_model(self, name: str) -> None:
        provider = self._config.provider
        if not self._http or provider is None:
            if name != self._model_name:
                raise RpcError.invalid_params(f"invalid params: value: provider {provider} has one model")
            return
        if name not in self._models():
            # Not listed yet: ask the server (it may serve more than was cached); when it cannot be
            # asked, take the name as given (the model call will tell).
            found = await self._catalog.refresh(
                provider, self._config.base_url, self._config.api_key, force=True
            )
            if found is not None:
                self._served = found
                if name not in found:
                    shown = ", ".join(found[:20]) + (" …" if len(found) > 20 else "")
                    raise RpcError.invalid_params(
                        f"invalid params: value: the server does not serve model {name!r}; it serves {shown}"
                    )
        self._model_name = name
        if self._switch is not None:
            self._switch.current = await self._build(name)

    async def _send_config_options(self) -> None:
        await self._link.send(ConfigOptionUpdate.model_validate({"configOptions": self.config_options()}))

    # --- the session's life ---------------------------------------------------------------------

    def apply_config(self, config: Config) -> None:
        """A configuration resolved again (the user trusted the project): it applies from the model the
        first turn builds on (a model already built is kept)."""
        self._config = config
        self._thought.provider = config.provider
        if self._switch is None and config.model:
            self._model_name = config.model

    async def opened(self) -> None:
        async with anyio.create_task_group() as tg:
            if self._after_open is not None:
                tg.start_soon(self._after_open)  # first: a prompt (and the command list) waits for it
            if self._trust is None or not self._trust.pending:
                await self._start_mcp()  # else at the first prompt, once the user said whether to trust
            tg.start_soon(self.slash.opened)
            tg.start_soon(self._refresh_models)

    async def client_followed_up(self) -> None:
        """The client's follow-up request (a saved default applied) was answered: it knows the session."""
        await self.slash.client_followed_up()

    async def _start_mcp(self) -> None:
        if self._mcp is not None and not self._mcp.started:
            await self._mcp.start()

    async def send_commands(self) -> None:
        """Send the slash commands if they changed (an MCP server became ready, say)."""
        await self.slash.refresh()

    async def _refresh_models(self) -> None:
        provider = self._config.provider
        if not self._http or provider is None:
            return
        before = (self._models(), self.facts())
        found = await self._catalog.refresh(provider, self._config.base_url, self._config.api_key)
        if found is not None:
            self._served = found
        if (self._models(), self.facts()) != before:  # a new model, or what the server says of one
            await self._send_config_options()

    async def recheck_window(self) -> None:
        """Ask the server again what it runs the session's model at: Ollama says it of a model once a
        request loaded it (``_model_notes``)."""
        provider = self._config.provider
        if not self._http or provider is None:
            return
        before = self.facts()
        found = await self._catalog.refresh(provider, self._config.base_url, self._config.api_key, force=True)
        if found is not None:
            self._served = found
        if self.facts() != before:
            await self._send_config_options()

    async def turn_starting(self) -> None:

        await self.slash.client_followed_up(prompt=True)
        if self._trust is not None:
            await self._trust.settle()
        if self._mcp is None:
            return
        await self._start_mcp()  # a prompt may come before the after-open work ran
        # Wait first: a server that fails while this turn waits for it is told in this turn.
        await self._mcp.wait_ready(MCP_READY_TIMEOUT_S)
        for failure in self._mcp.take_failures():
            title, _, detail = failure.partition(": ")
            await self._link.advise(title, detail or None, f"{failure}\n")

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
        if self._http and self._model_name:
            return await self._build(self._model_name)
        return await default()

    async def _build(self, name: str, provider_id: str = PROVIDER_ID) -> Model:
        built = self._built.get((name, provider_id))
        if built is not None:
            return built

        c = self._config
        settings = ModelSettings(c.provider, name, c.base_url, c.api_key)
        try:
            built = await anyio.to_thread.run_sync(build_model, settings)
        except ModelConfigError as exc:
            raise RpcError(INTERNAL_ERROR, str(exc), {"errorKind": "configuration_error"}) from exc
        if self._env.routes is not None:  # providers/set routes it from its next request
            built = self._env.routes.model(built, settings, provider_id)
        self._built[(name, provider_id)] = built
        return built

    # --- slash commands ----------------------------------------------------------------------------

    async def commands(self) -> list[dict[str, Any]]:
        """The ``availableCommands`` entries of the session's slash commands."""
        return [c.to_acp() for c in await self.slash.all()]

    async def command(self, text: str) -> CommandOutcome | None:
        return await self.slash.run(text)

    def _builtin_commands(self) -> list[SlashCommand]:
        return [
            SlashCommand(
                "mode",
                "Show or switch the mode: " + ", ".join(self._modes.offered),
                self._mode_command,
                "mode",
            ),
            SlashCommand("model", "Show or switch the model", self._model_command, "model name"),
        ]

    async def _mode_command(self, args: str) -> CommandOutcome:
        if not args:
            return CommandOutcome(reply=f"Mode: {self._modes.mode}. Modes: {', '.join(self._modes.offered)}.")
        try:
            await self.set_mode(args)
        except RpcError as exc:
            return CommandOutcome(reply=exc.message.removeprefix("invalid params: modeId: "))
        return CommandOutcome(reply=f"Mode: {args}.")

    async def _model_command(self, args: str) -> CommandOutcome:
        if not args:
            listed = ", ".join(self._models()) or "(none listed)"
            current = self._model_name or "default"
            return CommandOutcome(reply=f"Model: {current}{self._window_note()}. Models: {listed}.")
        try:
            await self._set_model(args)
        except RpcError as exc:
            return CommandOutcome(reply=exc.message.removeprefix("invalid params: value: "))
        await self._send_config_options()
        return CommandOutcome(reply=f"Model: {args}{self._window_note()}.")

    def _window_note(self) -> str:
        window = self._window_of(self._model_name) if self._model_name else None
        return f" ({window_text(window)} tokens of context)" if window is not None else ""
