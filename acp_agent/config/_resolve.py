"""The resolver: flags > the agent's variables > project file > user file > shared variables > defaults.

``load_config`` walks ``SETTINGS`` once per setting, collecting the candidates in precedence order and taking
the first valid one (``first``), all of them (``union``) or the user's entries overridden by name by the
project's (``by_name``). The project's settings that need trust are dropped first unless the project is
trusted (``_project``); a project's value of a ``narrows`` setting that tightens what the other sources give
is set apart before that and applies over them all (``_narrowing``). Every problem is collected; ``strict`` raises them as one ``ConfigError``.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import harness.providers.registry as registry

from ._checks import At, ConfigError, ConfigProblem, Problems
from ._files import Layer, find_project_config, read_dir, resolve_path, user_config_dir
from ._table import SETTINGS, Setting

if TYPE_CHECKING:
    from ..trust import ProjectTrust
    from ._hooks import HookEntry
    from ._mcp import McpServerEntry
    from ._models import ModelDecl

__all__ = ["Config", "load_config", "missing_key_problem"]


@dataclass(frozen=True, eq=False)
class Config:
    """The resolved configuration: ``values`` by table key, ``origins`` saying where each came from
    (``flag --base-url``, ``environment OPENAI_BASE_URL``, a file path). Read a setting with ``get(key)``
    or its property; secrets are never shown by ``repr``."""

    values: Mapping[str, Any] = field(default_factory=dict[str, Any])
    origins: Mapping[str, str] = field(default_factory=dict[str, str])
    flags: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """The command-line values as given (by flag destination); sessions resolve again with them."""
    project_root: Path | None = None
    files: tuple[Path, ...] = ()
    project: ProjectTrust | None = None
    """The project's settings that need trust (None: no project directory)."""
    problems: tuple[ConfigProblem, ...] = ()
    """What was wrong (only when resolved with ``strict=False``; the bad values were skipped)."""

    def get(self, key: str) -> Any:
        return self.values.get(key, SETTINGS[key].default)

    def __repr__(self) -> str:
        shown = {k: ("<set>" if SETTINGS[k].secret else v) for k, v in self.values.items()}
        return f"Config({shown!r}, origins={dict(self.origins)!r}, project={self.project!r})"

    @property
    def provider(self) -> str | None:
        return cast("str | None", self.get("provider"))

    @property
    def model(self) -> str | None:
        return cast("str | None", self.get("model"))

    @property
    def small_model(self) -> str | None:
        """A cheaper model of the same endpoint for side work (None: the session's model does it)."""
        return cast("str | None", self.get("small_model"))

    @property
    def explore_model(self) -> str:
        """``main`` or ``small``: the model the explore sub-agent runs on (small: ``small_model``, if set)."""
        return cast(str, self.get("explore_model"))

    @property
    def titles(self) -> str:
        """``model`` (the model writes each session's title after its first exchange) or ``prompt``."""
        return cast(str, self.get("titles"))

    @property
    def prompt_cache(self) -> str | None:
        """Anthropic's cache lifetime (``5m``, ``1h``), or None: caching off."""
        value = cast(str, self.get("prompt_cache"))
        return None if value == "off" else value

    @property
    def base_url(self) -> str | None:
        return cast("str | None", self.get("base_url"))

    @property
    def api_key(self) -> str | None:
        return cast("str | None", self.get("api_key"))

    @property
    def api_key_source(self) -> str | None:
        return self.origins.get("api_key")

    @property
    def default_mode(self) -> str:
        return cast(str, self.get("default_mode"))

    @property
    def log_level(self) -> str:
        return cast(str, self.get("log_level"))

    @property
    def home(self) -> Path:
        return Path(self.get("home")).expanduser()

    @property
    def script(self) -> Path | None:
        value = self.get("script")
        return Path(value) if value is not None else None

    @property
    def mcp_servers(self) -> tuple[McpServerEntry, ...]:
        servers = cast("Mapping[str, McpServerEntry]", self.get("mcp_servers"))
        return tuple(servers[name] for name in sorted(servers))

    @property
    def models(self) -> Mapping[str, ModelDecl]:
        """The declared model facts by model name (``[models."<name>"]``)."""
        return cast("Mapping[str, ModelDecl]", self.get("models"))

    @property
    def shell_timeout_s(self) -> float:
        return float(self.get("tools.shell_timeout_s"))

    @property
    def searxng_url(self) -> str | None:
        return cast("str | None", self.get("tools.searxng_url"))

    @property
    def secret_env(self) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self.get("secret_env"))

    def secret_names(self) -> tuple[str, ...]:
        """Every variable that holds a credential, to keep from child processes: the secret settings'
        variables, the key file's variable and ``secret_env``."""
        names = [e.name for s in SETTINGS.values() if s.secret for e in s.variables()]
        return tuple(dict.fromkeys([*names, *SETTINGS["api_key_file"].env_names(), *self.secret_env]))

    @property
    def sandbox(self) -> str:
        """``workspace-write``, ``read-only`` or ``off``: the sandbox shell commands run in."""
        return cast(str, self.get("sandbox"))

    @property
    def network(self) -> str:
        """``off`` or ``on``: whether sandboxed commands may reach the network."""
        return cast(str, self.get("network"))

    @property
    def sandbox_writable(self) -> tuple[Path, ...]:
        return cast("tuple[Path, ...]", self.get("sandbox_writable"))

    @property
    def sandbox_deny_read(self) -> tuple[Path, ...]:
        return cast("tuple[Path, ...]", self.get("sandbox_deny_read"))

    @property
    def hooks(self) -> tuple[HookEntry, ...]:
        """The hooks: the project's (``HookEntry.project``, only in a trusted project) and the user's."""
        return cast("tuple[HookEntry, ...]", self.get("hooks"))

    @property
    def system_prompt_file(self) -> Path | None:
        """The user's replacement for the built-in system prompt (the user's own file only)."""
        return cast("Path | None", self.get("system_prompt_file"))

    @property
    def permissions_project_file(self) -> Path:
        return cast(Path, self.get("permissions.project_file"))

    @property
    def permissions_user_file(self) -> Path:
        return cast(Path, self.get("permissions.user_file"))


def _applies(s: Setting, provider: str | None, providers: Container[str] | None) -> bool:
    return providers is None or provider is None or provider in providers


def _candidates(
    s: Setting, flags: Mapping[str, Any], env: Mapping[str, str], layers: list[Layer], provider: str | None
) -> list[tuple[Any, str, bool]]:
    """``(value, origin, checked)`` in precedence order; flag and environment values are still raw."""
    found: list[tuple[Any, str, bool]] = []
    if s.flag is not None and flags.get(s.attr) not in (None, ""):
        found.append((flags[s.attr], f"flag {s.flag}", False))
    usable = [e for e in s.variables() if env.get(e.name) and _applies(s, provider, e.providers)]
    found.extend((env[e.name], f"environment {e.name}", False) for e in usable if not e.fallback)
    found.extend((layer.values[s.key], layer.source, True) for layer in layers if s.key in layer.values)
    found.extend((env[e.name], f"environment {e.name}", False) for e in usable if e.fallback)
    return found


def _checked(value: Any, origin: str, checked: bool, s: Setting, out: Problems) -> Any:
    if checked:
        return value
    source, _, name = origin.partition(" ")
    return s.check(value, At("command line" if source == "flag" else source, name, out))


def _merge(
    s: Setting,
    found: list[tuple[Any, str, bool]],
    layers: list[Layer],
    out: Problems,
    place: Callable[[Any, str], Any],
) -> tuple[Any, str] | None:
    """The setting's value and origin from its candidates; ``place`` resolves a checked value's paths
    against its own origin (each source of a ``union`` against its own)."""
    if s.merge == "by_name":  # the user's entries, then the project's replacing them by name
        merged: dict[str, Any] = {}
        for layer in reversed(layers):
            merged.update(layer.values.get(s.key, {}))
        sources = ", ".join(dict.fromkeys(layer.source for layer in layers if s.key in layer.values))
        return (merged, sources) if merged else None
    if s.merge == "union":
        items: list[Any] = []
        origins: list[str] = []
        for value, origin, checked in found:
            good = _checked(value, origin, checked, s, out)
            if good is not None:
                items.extend(v for v in place(good, origin) if v not in items)
                origins.append(origin)
        return (tuple(items), ", ".join(origins)) if origins else None
    for value, origin, checked in found:
        good = _checked(value, origin, checked, s, out)
        if good is not None:
            return place(good, origin), origin
    return None


def _base_for(s: Setting, origin: str, layers: list[Layer], root: Path | None, cwd: Path) -> Path:
    """What a relative path is taken from: the file naming it, the project, or (for a flag, a variable
    and the ``process`` settings) the directory the agent was started in, whatever the session's cwd."""
    from_file = next((layer.directory for layer in layers if origin == layer.source), None)
    if s.path == "project":
        return root or cwd
    if s.path == "file" and from_file is not None:
        return from_file
    return Path.cwd()


def load_config(
    cwd: Path | str,
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    trust: bool | None = None,
    strict: bool = True,
) -> Config:
    """Resolve the configuration for a session in ``cwd``.

    ``flags``: command-line values by destination (``provider``, ``base_url``, ``home``…; None or ``""``:
    not given). ``trust``: None looks the project up in the trust store under the home; True applies the
    project's settings that need trust (the user said yes for now); False ignores them. ``strict``: raise
    ``ConfigError`` listing every problem; otherwise skip bad values and list them in ``Config.problems``.
    A project's files never make it raise, however malformed (a cloned repository must not stop the agent
    from working): their bad values are skipped and their problems listed in ``Config.problems`` (the
    session shows them).
    """
    # The whole resolution in one place, in its order (home first: the trust store is there; then trust;
    # then every setting from the table): the order is what makes a project unable to widen anything.
    out = Problems()
    project_out = Problems()  # the project files' problems: reported, never fatal
    cwd_path = Path(cwd)
    user = read_dir(user_config_dir(env), "user", out)
    project_dir = find_project_config(cwd_path)
    project: Layer | None = None
    if project_dir is not None and (user is None or project_dir.resolve() != user.directory.resolve()):
        project = read_dir(project_dir, "project", project_out)
    root = project.directory.parent if project is not None else None
    layers = [layer for layer in (project, user) if layer is not None]

    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    narrowing: dict[str, Any] = {}  # a project's tightening of a ``narrows`` setting (see _narrowing)

    def place(s: Setting, value: Any, origin: str) -> Any:
        if s.path is None:
            return value
        base = _base_for(s, origin, layers, root, cwd_path)
        if isinstance(value, tuple):  # a list of paths
            return tuple(resolve_path(str(v), base, env) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return resolve_path(str(value), base, env)

    def resolve(s: Setting) -> None:
        found = _candidates(s, flags, env, layers, values.get("provider"))
        picked = _merge(s, found, layers, out, lambda value, origin: place(s, value, origin))
        if s.key in narrowing and project is not None:
            current = s.default if picked is None else picked[0]
            if s.narrower(narrowing[s.key], current):
                picked = (narrowing[s.key], project.source)
        if picked is None:
            return
        values[s.key], origins[s.key] = picked

    resolve(SETTINGS["home"])  # first: the trust store lives there
    home = Path(values.get("home") or resolve_path(SETTINGS["home"].default, Path.cwd(), env))
    trust_state: ProjectTrust | None = None
    if project is not None and root is not None:
        narrowing.update(_narrowing(project, user, flags, env))
        from ._project import project_trust  # only with a project directory (start-up budget)

        trust_state = project_trust(project, user, root, env, home, trust, project_out)
        if not trust_state.trusted:
            project.values = {k: v for k, v in project.values.items() if not SETTINGS[k].trust}
    for s in SETTINGS.values():
        if s.key != "home" and _applies(s, values.get("provider"), s.providers):
            resolve(s)
    values["home"] = home
    values.setdefault("permissions.project_file", (root or cwd_path) / ".acp-agent" / "permissions.jsonl")
    values.setdefault("permissions.user_file", user_config_dir(env) / "permissions.jsonl")
    _read_api_key(values, origins, out)
    if strict and out.items:
        raise ConfigError([*out.items, *project_out.items])
    return Config(
        values=values,
        origins=origins,
        flags=dict(flags),
        project_root=root.resolve() if root is not None else None,
        files=tuple(p for layer in (project, user) if layer is not None for p in layer.files),
        project=trust_state,
        problems=(*out.items, *project_out.items),
    )


def _narrowing(
    project: Layer, user: Layer | None, flags: Mapping[str, Any], env: Mapping[str, str]
) -> dict[str, Any]:
    """The project's values of ``narrows`` settings that are at least as narrow as what the other sources
    give, taken out of the project layer: they need no trust and apply over every source. A wider value
    stays in the layer, so it needs trust like any other."""
    taken: dict[str, Any] = {}
    others = [user] if user is not None else []
    for key in [k for k in project.values if SETTINGS[k].narrows]:
        s = SETTINGS[key]
        picked = _merge(s, _candidates(s, flags, env, others, None), others, Problems(), lambda v, _o: v)
        if s.narrower(project.values[key], s.default if picked is None else picked[0]):
            taken[key] = project.values.pop(key)
    return taken


def _read_api_key(values: dict[str, Any], origins: dict[str, str], out: Problems) -> None:
    """With no key in the environment, the key from ``api_key_file`` (resolved against its origin)."""
    if "api_key" in values or "api_key_file" not in values:
        return
    path: Path = values["api_key_file"]
    source = origins["api_key_file"]
    try:
        key = path.read_text(encoding="utf-8").strip() if path.is_file() or not path.exists() else None
    except FileNotFoundError:
        out.add(
            source, "api_key_file", f"{path} does not exist; create it holding only the key, or fix the path."
        )
        return
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        out.add(source, "api_key_file", f"{path} cannot be read ({reason}); fix its permissions or the path.")
        return
    if key is None:
        out.add(source, "api_key_file", f"{path} is not a regular file; name the file holding the key.")
    elif not key:
        out.add(source, "api_key_file", f"{path} is empty; put the API key in it.")
    else:
        values["api_key"], origins["api_key"] = key, str(path)


def missing_key_problem(config: Config) -> str | None:
    """One sentence when a hosted provider has no API key (local servers, with a ``base_url``, need none)."""
    if config.api_key is not None or config.base_url is not None:
        return None
    spec = registry.get(config.provider)
    if spec is None:
        return None
    own = f" (or {spec.key_env})" if spec.key_env else ""
    return (
        f"provider {config.provider} has no API key: set ACP_AGENT_API_KEY{own} in the environment, "
        "or name a file holding the key with api_key_file in config.toml."
    )
