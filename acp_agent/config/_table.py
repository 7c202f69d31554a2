"""The settings table: every setting named once, with where it may come from and whether it needs trust.

``SETTINGS`` is the single source of truth. The resolver (``_resolve``), the command-line flags of the agent,
``chat`` and ``doctor`` (``add_flags``), the unknown-key messages and the trust request all derive from it.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

import harness.providers.registry as registry

from ._checks import (
    At,
    Choice,
    check_env_names,
    check_path,
    check_paths,
    check_seconds,
    check_text,
    check_url,
)

__all__ = [
    "DEFAULT_HOME",
    "DEFAULT_MODES",
    "HTTP",
    "LOG_LEVELS",
    "NETWORK_MODES",
    "PROMPT_CACHE",
    "SANDBOX_MODES",
    "SETTINGS",
    "Env",
    "Setting",
    "describe",
    "file_keys",
    "flag_help",
    "flag_settings",
]

DEFAULT_MODES: Final = ("read-only", "default", "accept-edits", "plan", "full-access")
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")
DEFAULT_HOME: Final = "~/.local/share/acp-agent"
SANDBOX_MODES: Final = ("workspace-write", "read-only", "off")
NETWORK_MODES: Final = ("off", "on")
PROMPT_CACHE: Final = ("5m", "1h", "off")

Check = Callable[[Any, At], Any]
"""Returns the checked value, or None after ``at.bad(...)``."""


# Without slots, eq or hash: building these classes is on the path to the initialize answer.
@dataclass(frozen=True, eq=False)
class Env:
    """An environment variable that sets a setting.

    ``providers``: it applies only when the provider is one of these (``OPENAI_BASE_URL`` is OpenAI's).
    ``fallback``: a variable other tools share, consulted after the config files (the agent's own
    ``ACP_AGENT_*`` variables come before them)."""

    name: str
    providers: Container[str] | None = None
    fallback: bool = False


@dataclass(frozen=True, eq=False)
class Setting:
    """One setting. ``key`` is its name in ``config.toml`` (``section.name`` inside a ``[section]``).

    - ``check``: turns a raw value into the setting's value (or reports the problem);
    - ``env``/``flag``: the variables and the command-line flag that set it; ``files``: whether config
      files may set it; ``provider_env``: the providers' own variables for it, from their registry
      (``variables()`` gives both);
    - ``trust``: a project file's value applies only in a trusted project (it can run code, move a
      credential or widen permissions); the user's own file, flags and environment are always trusted;
    - ``providers``: the providers it means something for (None: all);
    - ``merge``: ``first`` (highest precedence wins), ``union`` (lists add up), ``by_name`` (tables of named
      entries: the project's entry replaces the user's of the same name);
    - ``path``: a path, relative to the ``file`` that names it, the ``project`` root, or the agent
      ``process``'s directory (a flag's or a variable's relative path is always the process's);
      ``confined``: a project file may name only a path inside the project;
    - ``secret``: a credential: never read from a file, never shown;
    - ``describe``: what the value does, in a line of the trust request;
    - ``user_only``: only the user's own file may set it; a project file's value is ignored (logged);
    - ``narrows``: the choices from narrowest to widest (with ``trust``): a project file may always pick a
      value at least as narrow as the one the other sources give, and it then applies over all of them,
      flags included (a repository may tighten the sandbox, needing no trust and asking nothing); a wider
      value is an item needing trust, and in a trusted project takes the project's usual place.
    """

    key: str
    check: Check
    help: str
    env: tuple[Env, ...] = ()
    flag: str | None = None
    files: bool = True
    trust: bool = False
    default: Any = None
    providers: Container[str] | None = None
    provider_env: Callable[[], tuple[Env, ...]] | None = None
    merge: Literal["first", "union", "by_name"] = "first"
    path: Literal["file", "project", "process"] | None = None
    confined: bool = False
    secret: bool = False
    describe: Callable[[Any], str] | None = None
    narrows: tuple[str, ...] = ()
    user_only: bool = False

    def narrower(self, a: Any, b: Any) -> bool:
        """Whether ``a`` is at least as narrow as ``b`` (``narrows`` settings only)."""
        return self.narrows.index(a) <= self.narrows.index(b)

    @property
    def attr(self) -> str:
        """The ``Config`` attribute / flag destination: the key with ``.`` as ``_``."""
        return self.key.replace(".", "_")

    def variables(self) -> tuple[Env, ...]:
        """``env``, then the providers' own variables for it (``provider_env``, read from the registry now)."""
        return self.env if self.provider_env is None else (*self.env, *self.provider_env())

    def env_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.variables())


def _check_mcp_servers(value: Any, at: At) -> Any:
    from ._mcp import check_mcp_servers  # only when a file has servers (start-up budget)

    return check_mcp_servers(value, at)


def _check_hooks(value: Any, at: At) -> Any:
    from ._hooks import check_hooks  # only when a file has hooks (start-up budget)

    return check_hooks(value, at)


def _describe_hooks(value: Any) -> str:
    from ._hooks import describe_hooks

    return describe_hooks(value)


def _check_models(value: Any, at: At) -> Any:
    from ._models import check_models  # only when a file declares models (start-up budget)

    return check_models(value, at)


def _choices(check: Check) -> tuple[str, ...]:
    return check.choices if isinstance(check, Choice) else ()


class _Registered:
    """The providers of ``harness.providers.registry`` (the HTTP ones), asked at each question: a provider
    registered later counts."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and registry.get(name) is not None


HTTP: Final = _Registered()
"""The HTTP providers, as a ``providers`` scope."""


def _providers() -> tuple[str, ...]:
    return (*registry.names(), "script")  # script: the agent's own, for tests and demos


def _provider_variables(kind: Literal["key", "url"]) -> Callable[[], tuple[Env, ...]]:
    """The registry's own variables of each provider (its key's, or the base URL other tools share), each
    scoped to the providers that read it."""

    def variables() -> tuple[Env, ...]:
        readers: dict[str, list[str]] = {}
        for spec in registry.specs():
            name = spec.key_env if kind == "key" else spec.url_env
            if name:
                readers.setdefault(name, []).append(spec.name)
        return tuple(Env(n, frozenset(p), fallback=kind == "url") for n, p in readers.items())

    return variables


SETTINGS: Final[dict[str, Setting]] = {
    s.key: s
    for s in (
        Setting(
            "provider",
            Choice(among=_providers),
            "model provider",
            env=(Env("ACP_AGENT_PROVIDER"),),
            flag="--provider",
            trust=True,
            describe=lambda v: f"uses the model provider {v}",
        ),
        Setting("model", check_text, "model name", env=(Env("ACP_AGENT_MODEL"),), flag="--model"),
        Setting(
            "base_url",
            check_url,
            "model endpoint base URL, for OpenAI-compatible ones including /v1",
            env=(Env("ACP_AGENT_BASE_URL"),),
            provider_env=_provider_variables("url"),
            flag="--base-url",
            trust=True,
            providers=HTTP,
            describe=lambda v: f"sends your prompts and API key to {v}",
        ),
        Setting(
            "api_key_file",
            check_path,
            "a file holding only the API key",
            env=(Env("ACP_AGENT_API_KEY_FILE"),),
            flag="--api-key-file",
            trust=True,
            providers=HTTP,
            path="file",
            describe=lambda v: f"reads the API key from {v}",
        ),
        Setting(
            "default_mode",
            Choice(*DEFAULT_MODES),
            "the mode a session starts in",
            env=(Env("ACP_AGENT_DEFAULT_MODE"),),
            flag="--default-mode",
            trust=True,
            default="default",
            describe=lambda v: f"starts sessions in the {v} mode",
        ),
        Setting(
            "log_level",
            Choice(*LOG_LEVELS, fold=True),
            "stderr log level",
            env=(Env("ACP_AGENT_LOG_LEVEL"),),
            flag="--log-level",
            default="warning",
        ),
        Setting(
            "mcp_servers",
            _check_mcp_servers,
            "MCP servers by name",
            trust=True,
            merge="by_name",
            default={},
        ),
        Setting(
            "hooks",
            _check_hooks,
            "shell commands run around tool calls, at each prompt, at the session's start and at a turn's end",
            trust=True,
            merge="union",
            default=(),
            describe=_describe_hooks,
        ),
        Setting(
            "system_prompt_file",
            check_path,
            "a file replacing (or, with a {{default}} line, extending) the built-in system prompt",
            path="file",
            user_only=True,
        ),
        Setting(
            "models",
            _check_models,
            'model facts by model name ([models."<name>"] context_window, max_output_tokens, reasoning, images)',
            trust=True,
            merge="by_name",
            default={},
        ),
        Setting(
            "small_model",
            check_text,
            "a cheaper model the same endpoint serves, for side work (compaction summaries, titles)",
            env=(Env("ACP_AGENT_SMALL_MODEL"),),
            flag="--small-model",
        ),
        Setting(
            "explore_model",
            Choice("main", "small"),
            "the model the explore sub-agent runs on: the session's (main) or small_model (small)",
            env=(Env("ACP_AGENT_EXPLORE_MODEL"),),
            default="main",
        ),
        Setting(
            "titles",
            Choice("model", "prompt"),
            "session titles: written by the model after the first exchange (model: one short request on "
            "small_model, else the session's model), or the first prompt cut short (prompt)",
            env=(Env("ACP_AGENT_TITLES"),),
            default="model",
        ),
        Setting(
            "prompt_cache",
            Choice(*PROMPT_CACHE),
            "prompt caching: Anthropic's cache lifetime (5m, 1h), or off (no cache hints, no cache key)",
            env=(Env("ACP_AGENT_PROMPT_CACHE"),),
            default="5m",
        ),
        Setting(
            "secret_env",
            check_env_names,
            "more environment variables that hold secrets (kept from every child process)",
            env=(Env("ACP_AGENT_SECRET_ENV"),),
            merge="union",
            default=(),
        ),
        Setting(
            "tools.shell_timeout_s",
            check_seconds,
            "default shell command timeout in seconds",
            env=(Env("ACP_AGENT_SHELL_TIMEOUT"),),
            default=120.0,
        ),
        Setting(
            "tools.searxng_url",
            check_url,
            "SearXNG instance for web_search (each search still asks)",
            env=(Env("ACP_AGENT_SEARXNG_URL"), Env("SEARXNG_URL", fallback=True)),
            trust=True,  # a project's endpoint would receive every search the user approves
            describe=lambda v: f"sends your approved web searches to {v}",
        ),
        Setting(
            "permissions.project_file",
            check_path,
            "the project's remembered rules",
            trust=True,
            default=".acp-agent/permissions.jsonl",
            path="project",
            confined=True,
            describe=lambda v: f"keeps the project's permission rules in {v}",
        ),
        Setting(
            "permissions.user_file",
            check_path,
            "the user's remembered rules",
            trust=True,
            path="project",
            confined=True,
            describe=lambda v: f"reads user permission rules from {v}",
        ),
        Setting(
            "sandbox",
            Choice(*SANDBOX_MODES),
            "the sandbox shell commands run in",
            env=(Env("ACP_AGENT_SANDBOX"),),
            flag="--sandbox",
            trust=True,
            default="workspace-write",
            describe=lambda v: f"sets the command sandbox to {v}",
            narrows=("read-only", "workspace-write", "off"),
        ),
        Setting(
            "network",
            Choice(*NETWORK_MODES),
            "network access for sandboxed commands",
            env=(Env("ACP_AGENT_NETWORK"),),
            flag="--network",
            trust=True,
            default="off",
            describe=lambda v: f"turns the network {v} for sandboxed commands",
            narrows=("off", "on"),
        ),
        Setting(
            "sandbox_writable",
            check_paths,
            "more folders sandboxed commands may write",
            trust=True,
            merge="union",
            default=(),
            path="project",
            describe=lambda v: "lets sandboxed commands write " + ", ".join(str(p) for p in v),
        ),
        Setting(
            "sandbox_deny_read",
            check_paths,
            "more paths sandboxed commands may not read",
            trust=True,
            merge="union",
            default=(),
            path="project",
            describe=lambda v: "keeps sandboxed commands from reading " + ", ".join(str(p) for p in v),
        ),
        Setting(
            "home",
            check_path,
            "sessions, logs and trust decisions",
            env=(Env("ACP_AGENT_HOME"),),
            flag="--home",
            files=False,
            default=DEFAULT_HOME,
            path="process",
        ),
        Setting(
            "api_key",
            check_text,
            "the API key",
            env=(Env("ACP_AGENT_API_KEY"),),
            provider_env=_provider_variables("key"),
            files=False,
            providers=HTTP,
            secret=True,
        ),
        Setting(
            "script",
            check_path,
            "JSON list of scripted replies (provider script)",
            env=(Env("ACP_AGENT_SCRIPT"),),
            files=False,
            providers=frozenset({"script"}),
            path="process",
        ),
    )
}


def flag_settings() -> Iterator[Setting]:
    """The settings that have a command-line flag, in table order."""
    return (s for s in SETTINGS.values() if s.flag is not None)


def file_keys() -> tuple[str, ...]:
    """The keys allowed at the top of a ``config.toml`` (sections by their name), in table order."""
    return tuple(dict.fromkeys(s.key.split(".")[0] for s in SETTINGS.values() if s.files))


def flag_help(s: Setting) -> str:
    """A flag's help text: what it sets, its choices and its variables."""
    choices = _choices(s.check)
    parts = [s.help + (f": {', '.join(choices)}" if choices else "")]
    names = s.env_names()
    if names:
        parts.append(f"env {', '.join(names)}")
    if s.default not in (None, {}, ()):
        parts.append(f"default {s.default}")
    return f"{parts[0]} ({'; '.join(parts[1:])})" if len(parts) > 1 else parts[0]


def describe(s: Setting, value: Any) -> str:
    """One line of the trust request for ``value`` of ``s``."""
    from ._mcp import McpServerEntry

    if isinstance(value, McpServerEntry):
        return value.describe()
    describe_entry = getattr(value, "describe", None)
    if callable(describe_entry):  # a by-name entry that says what it does (a declared model)
        return str(describe_entry())
    if s.describe is not None:
        return s.describe(value)
    import shlex

    shown = shlex.join(value) if isinstance(value, tuple) else str(value)  # pyright: ignore[reportUnknownArgumentType]
    return f"sets {s.key} = {shown}"


def without_key(flags: dict[str, Any], environ: dict[str, str]) -> None:
    """Drop the API key's settings from ``flags`` and ``environ`` (``logout``): the key and the file naming
    it, as flags and as every variable that sets them, so a configuration loaded from these has no key."""
    for name in ("api_key", "api_key_file"):
        flags.pop(name, None)
        for variable in SETTINGS[name].env_names():
            environ.pop(variable, None)
