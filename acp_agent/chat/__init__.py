"""``acp-harness-agent chat``: a terminal client for the agent, over ACP like an editor.

``acp_agent.cli``'s command table names this package; ``add_arguments``/``main`` are the command.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

from ..config import ConfigError, add_flags, flag_settings, flag_values, load_config, missing_key_problem

__all__ = ["main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", help="the project directory of the session (default: the current directory)")
    # Same dests as the top-level flags; SUPPRESS keeps a value given before `chat` when not repeated.
    add_flags(parser, suppress=True, note="; passed to the agent")


def main(args: argparse.Namespace, config: Any = None) -> int:
    """Run the chat; returns the exit code."""
    cwd = Path(args.cwd or os.getcwd()).expanduser().resolve()
    if not cwd.is_dir():
        print(
            f"acp-harness-agent chat: {cwd} is not a directory; pass an existing one with --cwd.",
            file=sys.stderr,
        )
        return 2
    flags = flag_values(args)
    try:
        settings = load_config(cwd, flags, os.environ)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"acp-harness-agent chat: {problem}", file=sys.stderr)
        print(
            "Fix the configuration (`acp-harness-agent doctor` checks it) and start the chat again.",
            file=sys.stderr,
        )
        return 2
    if not _has_model(settings):
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            print(
                "acp-harness-agent chat: no model is configured; run `acp-harness-agent setup` first.",
                file=sys.stderr,
            )
            return 2
        settings = _set_up(cwd, flags, missing_key_problem(settings))
        if settings is None:
            return 1
    agent_args: list[str] = []
    for s in flag_settings():
        value = flags.get(s.attr)
        if value and s.flag is not None:
            agent_args += [s.flag, str(value)]
    if "log_level" not in settings.origins:  # the user did not choose a level (flag, variable or file)
        # The chat says what went wrong itself (a failed turn's error): the agent's own warnings would
        # repeat it as raw log lines. Its log file still gets everything from INFO up.
        agent_args += ["--log-level", "critical"]
    problem = missing_key_problem(settings)
    return _run(cwd, tuple(agent_args), problem, Path(settings.home) / "chat-history")


def _has_model(settings: Any) -> bool:
    from ..model_setup import ModelSettings

    model = ModelSettings.from_config(settings)
    return model.configured and (not model.http or bool(model.model))


def _set_up(cwd: Path, flags: dict[str, Any], why: str | None) -> Any:
    """No model yet, in a terminal: run the set-up here, then the configuration it wrote (None: the
    set-up did not end with a model; it said why). ``why``: what is missing, when that can be said."""
    from ..commands.setup_cmd import main as setup_main

    if why:
        print(f"acp-harness-agent chat: {why}")
    print("No model is configured yet: choose one now (this is `acp-harness-agent setup`).\n")
    if setup_main(argparse.Namespace(config_dir=None)) != 0:
        print("\nNo chat without a model: run `acp-harness-agent setup` when you are ready.")
        return None
    try:
        settings = load_config(cwd, flags, os.environ)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"acp-harness-agent chat: {problem}", file=sys.stderr)
        return None
    if not _has_model(settings):
        print("The configuration still names no model: run `acp-harness-agent doctor` to see why.")
        return None
    print()
    return settings


def _run(cwd: Path, agent_args: tuple[str, ...], warning: str | None, history: Path | None = None) -> int:
    import anyio

    from ._app import ChatOptions
    from ._input import EditedLines, open_terminal_input
    from ._process import run_chat
    from .render import Renderer, Style

    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    style = Style(color)

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    # Redrawing in place needs a terminal that understands cursor movement.
    live = sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    # One column short of the terminal: a full-width line leaves the cursor waiting to wrap, and anything
    # echoed then (the ^C) would push the line redrawn in place down.
    renderer = Renderer(write, style, live=live, width=max(20, shutil.get_terminal_size().columns - 1))

    def prompt(text: str) -> None:
        renderer.end_line()
        write(style.bold(text))

    if warning:
        renderer.error(warning)

    async def go() -> int:
        reader = open_terminal_input(history)
        printing = contextlib.nullcontext()
        if isinstance(reader, EditedLines):  # the edited line draws what is in progress, above itself
            renderer.live, renderer.show_live = False, reader.show
            printing = reader.printing_above()
        try:
            with printing:
                return await run_chat(ChatOptions(cwd, agent_args), reader, renderer, prompt)
        finally:
            await reader.aclose()

    try:
        with _no_control_echo():
            return anyio.run(go)
    except KeyboardInterrupt:  # before the Ctrl-C handler is installed
        return 130


@contextlib.contextmanager
def _no_control_echo() -> Generator[None]:
    """The terminal does not echo ``^C`` while the chat runs: the echo landed inside the reply being
    redrawn in place, which then showed twice (the chat says ``^C cancelling…`` itself)."""
    try:
        import termios
    except ImportError:  # no termios here: nothing to change
        yield
        return
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (termios.error, OSError, ValueError):  # not a terminal: nothing to change
        yield
        return
    quiet = list(saved)
    quiet[3] = quiet[3] & ~termios.ECHOCTL
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
