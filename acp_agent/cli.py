"""Command line: ``acp-agent`` (no subcommand) runs the stdio agent; subcommands are registered here.

Only ``argparse``, ``os`` and ``logging`` are imported at module level: the stdio agent must answer
``initialize`` fast, so everything heavy is imported inside the command that needs it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import __version__

__all__ = [
    "COMMAND_MODULES",
    "AgentConfig",
    "Command",
    "build_parser",
    "config_from_args",
    "main",
    "register_command",
]

DEFAULT_HOME = "~/.local/share/acp-agent"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """The resolved configuration: flags win over environment variables, which win over defaults."""

    provider: str | None
    model: str | None
    base_url: str | None
    home: Path
    log_level: str


Command = Callable[[argparse.Namespace, AgentConfig], int]
"""A subcommand: gets the parsed arguments and the resolved config, returns the exit code."""

# name -> (help, add_arguments, run); other modules register `chat`, `doctor`, `sessions` here.
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


def register_command(
    name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None], run: Command
) -> None:
    """Add a subcommand (``acp-agent <name> ...``). Call before ``main`` parses the arguments."""
    _COMMANDS[name] = (help, add_arguments, run)


# Modules that register subcommands on import. They are imported only when the command line names a
# subcommand or asks for help: the stdio agent (no subcommand) must start fast and must not depend on them.
COMMAND_MODULES = ("acp_agent.chat", "acp_agent.doctor", "acp_agent.permissions_cmd", "acp_agent.sandbox_cmd")
_VALUE_FLAGS = frozenset({"--provider", "--model", "--base-url", "--home", "--log-level"})


def _needs_commands(argv: Sequence[str]) -> bool:
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in ("-h", "--help"):
            return True
        elif token in _VALUE_FLAGS:
            skip = True
        elif not token.startswith("-"):
            return True
    return False


def _load_command_modules() -> None:
    import importlib
    import sys

    for module in COMMAND_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                print(f"acp-agent: cannot load {module}: {exc}", file=sys.stderr)
        except Exception as exc:  # a broken subcommand must not take the others down
            print(f"acp-agent: cannot load {module}: {exc}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent",
        description="An ACP agent for editors. Without a subcommand it speaks ACP over stdin/stdout.",
    )
    parser.add_argument("--version", action="version", version=f"acp-agent {__version__}")
    parser.add_argument(
        "--provider",
        help="model provider: openai, openai-responses, anthropic, script (env ACP_AGENT_PROVIDER)",
    )
    parser.add_argument("--model", help="model name (env ACP_AGENT_MODEL)")
    parser.add_argument(
        "--base-url",
        dest="base_url",
        help="model endpoint base URL, for OpenAI-compatible ones including /v1 "
        "(env ACP_AGENT_BASE_URL, OPENAI_BASE_URL)",
    )
    parser.add_argument(
        "--home", help=f"sessions and logs directory (env ACP_AGENT_HOME, default {DEFAULT_HOME})"
    )
    parser.add_argument(
        "--log-level",
        dest="log_level",
        choices=LOG_LEVELS,
        help="stderr log level (env ACP_AGENT_LOG_LEVEL, default warning)",
    )
    if _COMMANDS:
        sub = parser.add_subparsers(dest="command", metavar="COMMAND")
        for name, (help_text, add_arguments, _run) in sorted(_COMMANDS.items()):
            add_arguments(sub.add_parser(name, help=help_text))
    return parser


def config_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> AgentConfig:
    env = dict(os.environ if environ is None else environ)

    def pick(flag: str | None, *names: str) -> str | None:
        if flag:
            return flag
        for name in names:
            value = env.get(name)
            if value:
                return value
        return None

    home = pick(args.home, "ACP_AGENT_HOME") or DEFAULT_HOME
    level = (pick(args.log_level, "ACP_AGENT_LOG_LEVEL") or "warning").lower()
    if level not in LOG_LEVELS:
        level = "warning"
    return AgentConfig(
        provider=pick(args.provider, "ACP_AGENT_PROVIDER"),
        model=pick(args.model, "ACP_AGENT_MODEL"),
        base_url=pick(args.base_url, "ACP_AGENT_BASE_URL", "OPENAI_BASE_URL"),
        home=Path(home).expanduser(),
        log_level=level,
    )


def main(argv: Sequence[str] | None = None) -> int:
    import sys

    arguments = list(sys.argv[1:] if argv is None else argv)
    if _needs_commands(arguments):
        _load_command_modules()
    args = build_parser().parse_args(arguments)
    config = config_from_args(args)
    command: str | None = getattr(args, "command", None)
    if command is not None:
        return _COMMANDS[command][2](args, config)
    # Answer initialize before importing the agent (see acp_agent._early), then load the rest.
    from ._early import early_start
    from .models import how_to_configure, settings_from_env

    settings = settings_from_env(config.provider, config.model, config.base_url)
    early = early_start(configured=settings.configured, how_to_configure=how_to_configure())
    from .coding import coding_factory
    from .session.serve import serve_stdio

    # The composition root: the session layer serves whatever factory it is given; this one codes.
    flags = {"provider": config.provider, "model": config.model, "base_url": config.base_url}
    return serve_stdio(config, coding_factory(flags), early=early)
