"""The agent's configuration, resolved in one place from one table.

Precedence, per setting: command-line flag > the agent's own variables (``ACP_AGENT_*``) > the project's
``.acp-agent/config.toml`` (found from the session's cwd up to the repository root) > the user's
``$XDG_CONFIG_HOME/acp-agent/config.toml`` > variables other tools share (``OPENAI_BASE_URL``, only for the
OpenAI providers; ``SEARXNG_URL``) > defaults. A Claude-Desktop-style ``mcp.json`` beside either
``config.toml`` adds MCP servers (the TOML tables win on a name clash). ``Config.origins`` says where each
value came from, exactly (``flag --base-url``, ``environment OPENAI_BASE_URL``, a file path).

Trust: a project file's settings that can run code, move a credential or widen permissions apply only in
a trusted project (``acp_agent.trust``); the others apply always. A ``narrows`` setting (the sandbox) is both:
a project's narrower value applies always (over every other source), a wider one only when trusted. Secrets are never read from a file: the API
key comes from the environment or from the file ``api_key_file`` names. Every problem found (unknown key, bad
value, broken file) is reported, all at once, each as one sentence naming the file, the key and the fix.

Standard library only: ``acp-harness-agent`` resolves the configuration before answering ``initialize``.

Adding a setting
----------------
Add one ``Setting`` row to ``SETTINGS`` in ``_table.py``; nothing else is needed for it to be read from the
files (a dotted key such as ``"hooks.pre_tool"`` lives in a ``[hooks]`` table), checked, given its flag and
variables, reported by ``doctor`` and listed in the trust request. Say honestly whether it needs trust:
``trust=True`` for anything that runs a command, reaches an endpoint with a credential, names a file the
agent will read or write, or loosens a permission. ``check`` returns the value (or calls ``at.bad(...)`` and
returns None); a table of named entries uses ``merge="by_name"``; ``describe`` gives the trust request's
line. A choice a project may tighten but only widen with trust (``sandbox``, ``network``) lists its choices
from narrowest to widest in ``narrows`` (with ``trust=True``): a narrower project value then applies without
trust, over flags and variables too. Read it with ``config.get("hooks.pre_tool")`` (add a typed property to ``Config`` if you like) and
document it in the README's Configuration table (``tests/product/test_config.py`` checks every row is).

Writing the user's file (``acp-harness-agent setup``): ``write_user_config(values, env)`` checks the values with the
same table and merges them into ``config.toml``; ``check_user_settings`` only checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.lazy import lazy_exports

from ._checks import ConfigError, ConfigProblem
from ._files import find_project_config, home_dir, user_config_dir
from ._resolve import Config, load_config, missing_key_problem
from ._table import (
    DEFAULT_HOME,
    DEFAULT_MODES,
    LOG_LEVELS,
    NETWORK_MODES,
    SANDBOX_MODES,
    SETTINGS,
    Env,
    Setting,
    flag_help,
    flag_settings,
    without_key,
)

if TYPE_CHECKING:
    from ..trust import ProjectTrust
    from ._hooks import HookEntry
    from ._mcp import MCP_TIMEOUT_META, McpServerEntry
    from ._models import ModelDecl
    from ._user import check_user_settings, user_config_file, write_user_config

__all__ = [
    "DEFAULT_HOME",
    "DEFAULT_MODES",
    "LOG_LEVELS",
    "MCP_TIMEOUT_META",
    "NETWORK_MODES",
    "SANDBOX_MODES",
    "SETTINGS",
    "Config",
    "ConfigError",
    "ConfigProblem",
    "Env",
    "HookEntry",
    "McpServerEntry",
    "ModelDecl",
    "Setting",
    "add_flags",
    "check_user_settings",
    "find_project_config",
    "flag_values",
    "home_dir",
    "load_config",
    "missing_key_problem",
    "trusted_settings",
    "user_config_dir",
    "user_config_file",
    "without_key",
    "write_user_config",
]


def add_flags(parser: Any, *, suppress: bool = False, note: str = "") -> None:
    """Add every setting's flag to an ``argparse`` parser (``suppress``: absent flags set nothing, so a
    value given before a subcommand is kept)."""
    import argparse

    for s in flag_settings():
        kwargs: dict[str, Any] = {"dest": s.attr, "help": flag_help(s) + note, "metavar": s.attr.upper()}
        if suppress:
            kwargs["default"] = argparse.SUPPRESS
        parser.add_argument(s.flag, **kwargs)


def flag_values(args: Any) -> dict[str, Any]:
    """The flags' values from parsed arguments, by destination (None: not given)."""
    return {s.attr: getattr(args, s.attr, None) for s in flag_settings()}


def trusted_settings(
    cwd: Path | str, env: Mapping[str, str], flags: Mapping[str, Any] | None = None
) -> ProjectTrust | None:
    """The trust state of the project around ``cwd``: what its configuration would do that needs trust,
    the digest, and whether the user trusts it (None: no project directory). Never raises."""
    return load_config(cwd, flags or {}, env, strict=False).project


# Loaded on first use: the agent resolves its configuration before answering initialize.
__getattr__ = lazy_exports(
    __name__,
    {
        "._hooks": ("HookEntry",),
        "._mcp": ("MCP_TIMEOUT_META", "McpServerEntry"),
        "._models": ("ModelDecl",),
        "._user": ("check_user_settings", "user_config_file", "write_user_config"),
    },
)
