"""Command line: ``acp-harness-agent`` (no subcommand) runs the stdio agent; subcommands are registered here.

The flags are the settings table's (``acp_agent.config.SETTINGS``). The configuration is resolved
(standard library only: ``tomllib``, the trust store) before ``initialize`` is answered, so the handshake
knows a provider set in ``config.toml``; everything heavy is imported after, inside the command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from . import __version__
from .config import Config, add_flags, flag_settings, flag_values, load_config

if TYPE_CHECKING:
    from ._early import Opening

__all__ = [
    "COMMAND_MODULES",
    "Command",
    "build_parser",
    "main",
    "register_command",
    "resolve_startup",
]

Command = Callable[[argparse.Namespace, Config], int]
"""A subcommand: gets the parsed arguments and the configuration resolved in the current directory
(leniently: its ``problems`` say what was skipped), returns the exit code."""

# name -> (help, add_arguments, run); other modules register `chat`, `doctor`, `sessions` here.
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


def register_command(
    name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None], run: Command
) -> None:
    """Add a subcommand (``acp-harness-agent <name> ...``). Call before ``main`` parses the arguments."""
    _COMMANDS[name] = (help, add_arguments, run)


# Modules that register subcommands on import. They are imported only when the command line names a
# subcommand or asks for help: the stdio agent (no subcommand) must start fast and must not depend on them.
COMMAND_MODULES = (
    "acp_agent.chat",
    "acp_agent.doctor",
    "acp_agent.permissions_cmd",
    "acp_agent.sandbox_cmd",
    "acp_agent.trust_cmd",
    "acp_agent.setup_cmd",
)


def _needs_commands(argv: Sequence[str]) -> bool:
    value_flags = {s.flag for s in flag_settings()}
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in ("-h", "--help"):
            return True
        elif token in value_flags:
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
        prog="acp-harness-agent",
        description="An ACP agent for editors. Without a subcommand it speaks ACP over stdin/stdout.",
    )
    parser.add_argument("--version", action="version", version=f"acp-harness-agent {__version__}")
    add_flags(parser)
    if _COMMANDS:
        sub = parser.add_subparsers(dest="command", metavar="COMMAND")
        for name, (help_text, add_arguments, _run) in sorted(_COMMANDS.items()):
            add_arguments(sub.add_parser(name, help=help_text))
    return parser


def resolve_startup(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Config:
    """The configuration in the process's directory, never raising: a broken file still lets the agent
    answer ``initialize`` (each session then fails with every problem listed)."""
    env = dict(os.environ if environ is None else environ)
    return load_config(os.getcwd(), flag_values(args), env, strict=False)


def main(argv: Sequence[str] | None = None, *, fast_exit: bool = False) -> int:
    """Run the command line. ``fast_exit`` (the process entry points): once the stdio agent has served,
    end the process at once (see ``_exit_now``)."""
    import sys

    arguments = list(sys.argv[1:] if argv is None else argv)
    if _needs_commands(arguments):
        _load_command_modules()
    args = build_parser().parse_args(arguments)
    config = resolve_startup(args)
    command: str | None = getattr(args, "command", None)
    if command is not None:
        return _COMMANDS[command][2](args, config)
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
    from harness.providers._clients import keep_idle_clients
    from harness.secrets import Secrets

    from .coding import coding_factory
    from .session.serve import serve_stdio

    early = early.claimed()  # imports only until here: an end of input right after it ended the process

    # The composition root: the session layer serves whatever factory it is given; this one codes. One
    # Secrets for the process: the log redacts what every session keeps from its commands.
    secrets = Secrets.from_env(os.environ, config.secret_names(), [config.api_key])
    keep_idle_clients()  # one process, one endpoint: the model-list request's connection serves the prompts
    factory = coding_factory(config.flags, secrets=secrets)
    from .setup_cmd import forget_stored_key

    forget = partial(forget_stored_key, os.environ)  # logout forgets the key setup stored
    code = serve_stdio(config, factory, settings, secrets=secrets, early=early, forget_key=forget)
    if fast_exit and "coverage" not in sys.modules:  # (coverage writes its data at interpreter exit)
        _exit_now(code)
    return code


def _opening(flags: Mapping[str, Any]) -> Opening:
    """The coding agent's ``session/new`` state for ``acp_agent._early`` (imported once it is needed: the
    ``initialize`` answer goes out first)."""

    def opening(cwd: Path, client_capabilities: Mapping[str, Any]) -> dict[str, Any] | None:
        from .coding._opening import EarlyOpening

        return EarlyOpening(flags, os.environ)(cwd, client_capabilities)

    return opening


def _exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown. ``serve_stdio`` has closed every session (their
    children ended, their files written) and the protocol streams; what is left is freeing some 600
    modules, tens of ms (hundreds on a loaded machine) that an editor closing a thread waits out. The logs
    and the standard streams are flushed first."""
    import logging
    import sys

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
