"""Command line: ``acp-harness-agent`` (no subcommand) runs the stdio agent; ``COMMANDS`` names the subcommands.

The flags are the settings table's (``acp_agent.config.SETTINGS``). The configuration is resolved
(standard library only: ``tomllib``, the trust store) before ``initialize`` is answered, so the handshake
knows a provider set in ``config.toml``; everything heavy is imported after, inside the command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

from . import __version__
from .config import Config, add_flags, flag_settings, flag_values, load_config

if TYPE_CHECKING:
    from ._early import Opening

__all__ = [
    "COMMANDS",
    "Command",
    "CommandEntry",
    "build_parser",
    "main",
    "resolve_startup",
]

Command = Callable[[argparse.Namespace, Config], int]
"""A subcommand: gets the parsed arguments and the configuration resolved in the current directory
(leniently: its ``problems`` say what was skipped), returns the exit code."""


@dataclass(frozen=True, slots=True)
class CommandEntry:
    """A subcommand: its help line, and the module that implements it (``add_arguments(parser)`` and
    ``main(args, config) -> int``), imported only when the command line names the subcommand: the stdio
    agent (no subcommand) must start fast and must not depend on them."""

    help: str
    module: str


COMMANDS: Final[Mapping[str, CommandEntry]] = {
    "chat": CommandEntry("chat with the agent in this terminal", "acp_agent.chat"),
    "doctor": CommandEntry(
        "check the model endpoint, MCP servers, home and log file", "acp_agent.commands.doctor"
    ),
    "permissions": CommandEntry(
        'list or forget the rules remembered from "always" answers', "acp_agent.commands.permissions_cmd"
    ),
    "sandbox": CommandEntry(
        "run a command in the sandbox (Landlock; Seatbelt on macOS)", "acp_agent.commands.sandbox_cmd"
    ),
    "sessions": CommandEntry("list, show or delete saved sessions", "acp_agent.commands.sessions_cmd"),
    "setup": CommandEntry(
        "choose the model interactively and write the user configuration", "acp_agent.commands.setup_cmd"
    ),
    "trust": CommandEntry(
        "trust a project's configuration (or --list, --revoke)", "acp_agent.commands.trust_cmd"
    ),
}
"""The subcommands (``acp-harness-agent <name> ...``), by name."""


def _named_command(argv: Sequence[str]) -> str | None:
    """The subcommand the command line names (its first word that is neither a flag nor a flag's value)."""
    value_flags = {s.flag for s in flag_settings()}
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in value_flags:
            skip = True
        elif not token.startswith("-"):
            return token
    return None


def _load(name: str) -> Any:
    module = COMMANDS[name].module
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # a missing optional dependency: say which, not a traceback
        raise SystemExit(f"acp-agent: cannot load the {name} command ({module}): {exc}") from exc


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser; only the subcommand ``argv`` names has its module imported (for its arguments)."""
    parser = argparse.ArgumentParser(
        prog="acp-harness-agent",
        description="An ACP agent for editors. Without a subcommand it speaks ACP over stdin/stdout.",
    )
    parser.add_argument("--version", action="version", version=f"acp-harness-agent {__version__}")
    add_flags(parser)
    named = _named_command(argv)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, entry in sorted(COMMANDS.items()):
        command_parser = sub.add_parser(name, help=entry.help)
        if name == named:
            _load(name).add_arguments(command_parser)
    return parser


def resolve_startup(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Config:
    """The configuration in the process's directory, never raising: a broken file still lets the agent
    answer ``initialize`` (each session then fails with every problem listed)."""
    env = dict(os.environ if environ is None else environ)
    return load_config(os.getcwd(), flag_values(args), env, strict=False)


def _asyncio_only() -> None:
    """Every command of this process runs on asyncio, but httpcore2 imports trio at its own import wherever
    trio is installed (a shared or a development environment): 3.5 MB of memory and tens of ms of imports
    (52 modules) the process never uses. Here ``import trio`` fails instead, which httpcore2 expects."""
    sys.modules.setdefault("trio", None)  # pyright: ignore[reportArgumentType]


def main(argv: Sequence[str] | None = None, *, fast_exit: bool = False) -> int:
    """Run the command line. ``fast_exit`` (the process entry points): once the stdio agent has served,
    end the process at once (see ``_exit_now``)."""
    _asyncio_only()
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments).parse_args(arguments)
    config = resolve_startup(args)
    command: str | None = getattr(args, "command", None)
    if command is not None:
        run: Command = _load(command).main
        return run(args, config)
    from . import _ending

    _ending.install()  # SIGTERM/SIGHUP: at once until a session may be announced, then as EOF
    typed = b""
    if os.isatty(0):  # started by hand in a terminal, not by an editor
        from ._by_hand import wait_for_a_message

        message = wait_for_a_message()
        if message is None:
            return 0
        typed = message
    # Answer initialize before importing the agent (see acp_agent._early), then load the rest.
    from ._early import early_start
    from .model_setup import ModelSettings, how_to_configure

    settings = ModelSettings.from_config(config)
    opening = _opening(config.flags)  # the coding factory's answer, before the factory is imported
    early = early_start(
        configured=settings.configured,
        how_to_configure=how_to_configure(),
        opening=opening,
        read=typed,
        sessions=Path(config.home) / "sessions",
        exit_on_end=fast_exit and "coverage" not in sys.modules,
    )
    _ending.hold()
    from harness.providers import keep_idle_clients
    from harness.secrets import Secrets

    from .coding import coding_factory
    from .session.serve import serve_stdio

    early = early.claimed()  # imports only until here: an end of input right after it ended the process

    # The composition root: the session layer serves whatever factory it is given; this one codes. One
    # Secrets for the process: the log redacts what every session keeps from its commands.
    secrets = Secrets.from_env(os.environ, config.secret_names(), [config.api_key])
    keep_idle_clients()  # one process, one endpoint: the model-list request's connection serves the prompts
    factory = coding_factory(config.flags, secrets=secrets)
    from .commands.setup_cmd import forget_stored_key

    def forget() -> None:  # logout: the key setup stored, and the key every new session would read
        forget_stored_key(os.environ)
        factory.forget_key()

    code = serve_stdio(config, factory, settings, secrets=secrets, early=early, forget_key=forget)
    if fast_exit and "coverage" not in sys.modules:  # (coverage writes its data at interpreter exit)
        _exit_now(code)
    return code


def _opening(flags: Mapping[str, Any]) -> Opening:
    """The coding agent's ``session/new`` state for ``acp_agent._early`` (imported once it is needed: the
    ``initialize`` answer goes out first)."""

    def opening(cwd: Path, client_capabilities: Mapping[str, Any]) -> dict[str, Any] | None:
        from .coding.opening import EarlyOpening

        return EarlyOpening(flags, os.environ)(cwd, client_capabilities)

    return opening


def _exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown. ``serve_stdio`` has closed every session (their
    children ended, their files written) and the protocol streams; what is left is freeing some 600
    modules, tens of ms (hundreds on a loaded machine) that an editor closing a thread waits out. The logs
    and the standard streams are flushed first."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
