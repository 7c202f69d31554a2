"""Agent profiles: how to start an agent under test and point it at the kit's fake model.

A profile is a TOML file (built-in ones live in ``acp_conformance/profiles/``)::

    name = "my-agent"
    command = "my-agent --acp"        # used when --agent is not given
    args = ["--config", "${home}/my.toml"]   # appended to the command, whichever it is
    api = "chat"                      # the fake model's API: chat | responses | anthropic | gemini
    model = "fake-model"              # the model name the agent is told to use
    side_models = ["fake-small"]      # requests for these get a short answer and take no scripted turn
    side_markers = ["[SUGGESTION MODE"]   # nor do requests whose body holds one of these
    features = []                     # agent-specific scenario features this agent has
    model_free = false                # true: the agent answers prompts itself, without a model
    long_prompt = ""                  # model_free: a prompt whose turn runs until cancelled
    timeout_scale = 1.0               # multiply every wait (slow agents)
    auth_method = ""                  # call `authenticate` with this method id after `initialize`
    pass_env = []                     # host variables passed through despite the credential filter

    [env]                             # set for the agent process
    MY_AGENT_BASE_URL = "${base_url}/v1"
    MY_AGENT_HOME = "${home}"

    [api_env.anthropic]               # set too when the fake model speaks this API (--api)
    MY_AGENT_PROVIDER = "anthropic"

    [files]                           # written before the agent starts (paths may use variables)
    "${home}/config.toml" = "model = '${model}'"

    [tools.read]                      # how the model calls the agent's file-read tool
    name = "read_file"
    input = { path = "${path}" }

    [setup.ask_before_read]           # files written only for a scenario that requires "setup:ask_before_read"
    "${project}/.my-agent/rules.json" = '{"read": "ask"}'

``${name}`` is replaced in ``args``, ``env``, ``files`` and tool inputs: ``base_url`` (the fake model,
``http://127.0.0.1:PORT``), ``model``, ``side_model``, ``api_key`` (a fake key), ``home`` (a fresh temporary
directory), ``project`` (the session's cwd), ``tmp``, ``python`` (this interpreter), ``script`` (for
``[script]``), and a tool call's own arguments (``path``...). Unknown names are left as they are.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from .fake_model import API_NAMES
from .json_types import is_object
from .patterns import substitute

__all__ = [
    "FAKE_API_KEY",
    "Profile",
    "ProfileError",
    "ToolMap",
    "builtin_profiles",
    "clean_environment",
    "expand",
    "load_profile",
    "split_command",
]

FAKE_API_KEY = "sk-acp-conformance-fake-key"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|_KEY$)", re.IGNORECASE)
_PROVIDER_PREFIXES = (
    "OPENAI_",
    "ANTHROPIC_",
    "GEMINI_",
    "GOOGLE_",
    "CODEX_",
    "CLAUDE_",
    "ACP_AGENT_",
    "AWS_",
    "AZURE_",
)


class ProfileError(Exception):
    """A profile that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class ToolMap:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Profile:
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    description: str = ""
    api: str | None = None
    model: str = "fake-model"
    side_models: tuple[str, ...] = ()
    side_markers: tuple[str, ...] = ()
    features: frozenset[str] = frozenset()
    model_free: bool = False
    long_prompt: str = ""
    timeout_scale: float = 1.0
    auth_method: str = ""
    pass_env: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    api_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict[str, Mapping[str, str]])
    files: Mapping[str, str] = field(default_factory=dict[str, str])
    setups: Mapping[str, Mapping[str, str]] = field(default_factory=dict[str, Mapping[str, str]])
    """By name: files to write before the agent starts, for the scenarios that require ``setup:<name>``."""
    tools: Mapping[str, ToolMap] = field(default_factory=dict[str, ToolMap])
    script_env: Mapping[str, str] = field(default_factory=dict[str, str])
    source: str = ""

    @property
    def has_model(self) -> bool:
        return self.api is not None

    def environment(self) -> dict[str, str]:
        """``env``, then the table of the selected API (unexpanded)."""
        return {**self.env, **(self.api_env.get(self.api, {}) if self.api else {})}

    def with_api(self, api: str | None) -> Profile:
        if api is None:
            return self
        if api not in API_NAMES:
            raise ProfileError(f"--api {api!r}: use one of {', '.join(API_NAMES)}")
        return replace(self, api=api)

    def variables(
        self, *, base_url: str, home: str, project: str, tmp: str, script: str = ""
    ) -> dict[str, str]:
        return {
            "base_url": base_url,
            "model": self.model,
            "side_model": self.side_models[0] if self.side_models else self.model,
            "api_key": FAKE_API_KEY,
            "home": home,
            "project": project,
            "tmp": tmp,
            "python": sys.executable,
            "script": script,
        }


expand = substitute
"""``${name}`` replaced throughout strings, lists and tables; unknown names kept (the scenarios' own rule)."""


def builtin_profiles() -> dict[str, Path]:
    folder = resources.files("acp_conformance").joinpath("profiles")
    return {
        entry.name.removesuffix(".toml"): Path(str(entry))
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    }


def load_profile(name_or_path: str | None) -> Profile:
    """A built-in profile by name, a profile file by path, or (None) the bare profile: no model."""
    if name_or_path is None:
        return Profile(name="bare", description="no profile: the agent runs as it is, with no model")
    builtin = builtin_profiles()
    path = builtin.get(name_or_path) or Path(name_or_path)
    if not path.is_file():
        known = ", ".join(sorted(builtin))
        raise ProfileError(f"no profile {name_or_path!r}: give a file path or one of {known}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: {exc}") from exc
    return _from_table(data, str(path))


_KEYS = {
    "name", "command", "args", "description", "api", "model", "side_models", "side_markers", "features", "model_free", "long_prompt",
    "timeout_scale", "auth_method", "pass_env", "env", "api_env", "files", "setup", "tools", "script", "notes",
}  # fmt: skip


def _from_table(data: dict[str, Any], source: str) -> Profile:
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ProfileError(
            f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}"
        )
    api = data.get("api")
    if api is not None and api not in API_NAMES:
        raise ProfileError(f"{source}: api = {api!r}: use one of {', '.join(API_NAMES)}")
    tools: dict[str, ToolMap] = {}
    for role, spec in dict(data.get("tools") or {}).items():
        if not is_object(spec) or not isinstance(spec.get("name"), str):
            raise ProfileError(f'{source}: [tools.{role}] needs name = "..." and an input table')
        tools[str(role)] = ToolMap(str(spec["name"]), dict(spec.get("input") or {}))
    script = dict(data.get("script") or {})
    return Profile(
        name=str(data.get("name") or Path(source).stem),
        command=str(data.get("command") or ""),
        args=tuple(str(a) for a in data.get("args") or ()),
        description=str(data.get("description") or ""),
        api=api,
        model=str(data.get("model") or "fake-model"),
        side_models=tuple(str(m) for m in data.get("side_models") or ()),
        side_markers=tuple(str(m) for m in data.get("side_markers") or ()),
        features=frozenset(str(f) for f in data.get("features") or ()),
        model_free=bool(data.get("model_free", False)),
        long_prompt=str(data.get("long_prompt") or ""),
        timeout_scale=float(data.get("timeout_scale", 1.0)),
        auth_method=str(data.get("auth_method") or ""),
        pass_env=tuple(str(n) for n in data.get("pass_env") or ()),
        env={str(k): str(v) for k, v in dict(data.get("env") or {}).items()},
        api_env={
            str(api): {str(k): str(v) for k, v in dict(table).items()}
            for api, table in dict(data.get("api_env") or {}).items()
        },
        files={str(k): str(v) for k, v in dict(data.get("files") or {}).items()},
        setups={
            str(name): {str(k): str(v) for k, v in dict(table).items()}
            for name, table in dict(data.get("setup") or {}).items()
        },
        tools=tools,
        script_env={str(k): str(v) for k, v in dict(script.get("env") or {}).items()},
        source=source,
    )


def clean_environment(base: Mapping[str, str], keep: Sequence[str] = ()) -> dict[str, str]:
    """The host environment minus credentials and provider settings, so an agent under test can reach
    neither a real model service nor a key it was not given (``keep`` names exceptions)."""
    out: dict[str, str] = {}
    for name, value in base.items():
        if name in keep:
            out[name] = value
        elif _SECRET.search(name) or name.startswith(_PROVIDER_PREFIXES):
            continue
        else:
            out[name] = value
    return out


def split_command(command: str | Sequence[str]) -> list[str]:
    """argv of the agent. The agent runs in a temporary project directory, so a relative program path, and
    any relative argument naming an existing file (a script), is made absolute."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    for i, arg in enumerate(argv):
        relative_path = os.sep in arg and not os.path.isabs(arg) and not arg.startswith("-")
        if relative_path and (i == 0 or os.path.exists(arg)):
            argv[i] = os.path.abspath(arg)
    return argv
