"""``acp-harness-agent setup``: choose the model interactively and write the user configuration.

It asks for the provider (Anthropic, OpenAI, the OpenAI Responses API, or any OpenAI-compatible server
such as llama.cpp, vLLM or Ollama), the base URL or the API key, and the model (listed by the server
when it can be asked); checks them as ``acp-harness-agent doctor`` does (the server answers, serves the model,
completes one token with a tool offered); and writes ``provider``, ``model`` and ``base_url`` into
``$XDG_CONFIG_HOME/acp-agent/config.toml`` (its other lines are kept as they are). A key typed here goes
to ``api-key`` beside it (mode 0600) and ``api_key_file`` names it: keys never go into ``config.toml``.

Editors that offer terminal authentication run this (the ``setup`` auth method): exit status 0 means
the agent is configured, and the editor opens the session again.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio

from harness.atomic import private_dir
from harness.providers import registry

from ..config import ConfigError, load_config, user_config_dir

__all__ = ["Choice", "add_arguments", "main", "save_choice"]

_KEY_FILE: Final = "api-key"
_LOCAL_URL: Final = "http://127.0.0.1:8080/v1"
_SHOWN_MODELS: Final = 30


@dataclass(frozen=True, slots=True)
class _Provider:
    label: str
    provider: str
    key_env: str | None  # the provider's own key variable
    local: bool = False


_LOCAL: Final = _Provider(
    "A local or other OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio…)", "openai", None, True
)


def _providers() -> tuple[_Provider, ...]:
    """The menu: the registry's providers by their set-up rank, then any OpenAI-compatible server."""
    ranked = sorted(registry.specs(), key=lambda spec: spec.setup_rank)  # stable: ties in registry order
    return (*(_Provider(s.label, s.name, s.key_env) for s in ranked), _LOCAL)


@dataclass(frozen=True, slots=True)
class Choice:
    """What the user chose: ``key`` is a key typed here (None: none, or one from the environment)."""

    provider: str
    model: str
    base_url: str | None = None
    key: str | None = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-dir", help="where to write config.toml (default: the user's config folder)")


Ask = Callable[[str], str]


def main(args: argparse.Namespace, config: Any = None) -> int:
    import getpass

    directory = Path(getattr(args, "config_dir", None) or user_config_dir(os.environ)).expanduser()
    print("acp-harness-agent setup: choose the model the agent talks to.\n")
    if not _existing_file_ok(directory):
        return 1
    try:
        while True:
            choice = _ask(input, getpass.getpass, os.environ)
            if choice is None:
                return 1
            if _check(choice):
                break
            again = _after_failed_check(input)
            if again == "save":
                break
            if again == "quit":
                print("Nothing was written.")
                return 1
            print()
        written = save_choice(directory, choice)
        problems = _problems(directory)
    except (EOFError, KeyboardInterrupt):
        print("\nSet-up cancelled; nothing was written.")
        return 1
    except OSError as exc:
        print(f"Cannot write the configuration: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:  # the file is not TOML: not touched
        print(f"Cannot write the configuration: {exc}", file=sys.stderr)
        return 1
    if problems:
        print(f"\nWrote {written}, but the configuration still has problems:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    print(f"\nWrote {written}. The agent is ready: go back to your editor (or run `acp-harness-agent chat`).")
    return 0


def _problems(directory: Path) -> list[str]:
    """What the configuration resolver finds wrong once the file is written (the agent reads it so)."""
    if directory.name != "acp-agent":  # not where the agent looks for a user configuration
        return []
    env = {**os.environ, "XDG_CONFIG_HOME": str(directory.parent)}
    try:
        load_config(Path.cwd(), {}, env)
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def _existing_file_ok(directory: Path) -> bool:
    """Say before any question what is wrong with the configuration already there: a ``config.toml``
    that is not TOML stops the set-up (its other lines are kept, so it must be fixed first); other
    problems are listed, and the set-up goes on."""
    import tomllib

    path = directory / "config.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError) as exc:
        print(f"{path} cannot be read ({exc}); fix it or move it aside, then run setup again.")
        return False
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        print(
            f"{path} is not valid TOML ({exc}). Setup keeps every other line of that file, so fix it or "
            "move it aside first, then run setup again (`acp-harness-agent doctor` shows every problem)."
        )
        return False
    problems = _problems(directory)
    if problems:
        print("The configuration has problems now (setup changes only the provider, model, URL and key):")
        for problem in problems:
            print(f"  {problem}")
        print()
    return True


def _after_failed_check(ask: Ask) -> str:
    """``retry`` (enter the provider, URL or key again), ``save`` (anyway) or ``quit``."""
    while True:
        raw = ask(
            "\nThe check failed. Enter the URL, key and model again [r], save anyway [s], or quit [q]? [r] "
        )
        match raw.strip().lower():
            case "" | "r" | "retry":
                return "retry"
            case "s" | "save":
                return "save"
            case "q" | "quit" | "n" | "no":
                return "quit"
            case _:
                print("Type r, s or q.")


def _pick(ask: Ask, question: str, options: Sequence[str], default: int = 1) -> int:
    for i, label in enumerate(options, 1):
        print(f"  {i}) {label}")
    while True:
        raw = ask(f"{question} [{default}]: ").strip()
        if not raw:
            return default
        if raw.isdigit() and 1 <= int(raw) <= len(options):
            return int(raw)
        print(f"Type a number from 1 to {len(options)}.")


def _ask(ask: Ask, secret: Ask, env: Mapping[str, str]) -> Choice | None:
    """The interactive part: provider, URL or key, model (the server's list when it answers)."""
    print("Which provider?")
    providers = _providers()
    p = providers[_pick(ask, "Provider", [p.label for p in providers]) - 1]
    base_url: str | None = None
    key: str | None = None
    if p.local:
        base_url = ask(f"Base URL of the server, including /v1 [{_LOCAL_URL}]: ").strip() or _LOCAL_URL
        key = secret("API key, if the server wants one (Enter for none): ").strip() or None
    else:
        present = next((n for n in ("ACP_AGENT_API_KEY", p.key_env) if n and env.get(n)), None)
        prompt = f"API key (Enter to use ${present}): " if present else "API key (it is not shown): "
        key = secret(prompt).strip() or None
        if key is None and present is None:
            print(f"A key is needed: paste it here, or set {p.key_env} and run setup again.")
            return None
        custom = ask("Base URL (Enter for the provider's own): ").strip()
        base_url = custom or None
    models = _list_models(p.provider, base_url, key or _env_key(env, p.key_env))
    model = _choose_model(ask, models)
    return Choice(p.provider, model, base_url, key) if model else None


def _env_key(env: Mapping[str, str], name: str | None) -> str | None:
    return env.get("ACP_AGENT_API_KEY") or (env.get(name) if name else None) or None


def _list_models(provider: str, base_url: str | None, key: str | None) -> list[str]:
    from harness.providers.factory import list_models

    async def fetch() -> list[str]:
        with anyio.fail_after(30):
            return sorted(await list_models(provider, base_url=base_url, api_key=key))

    try:
        return anyio.run(fetch)
    except Exception as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        print(f"\nThe server's model list could not be read: {message}")
        return []


def _choose_model(ask: Ask, models: list[str]) -> str | None:
    if not models:
        name = ask("Model name: ").strip()
        return name or None
    print(f"\nThe server serves {len(models)} models:")
    shown = models[:_SHOWN_MODELS]
    for i, name in enumerate(shown, 1):
        print(f"  {i}) {name}")
    if len(models) > len(shown):
        print(f"  … and {len(models) - len(shown)} more (type a name)")
    while True:
        raw = ask("Model (number or name) [1]: ").strip()
        if not raw:
            return shown[0]
        if raw.isdigit() and 1 <= int(raw) <= len(shown):
            return shown[int(raw) - 1]
        if raw in models:
            return raw
        print("Type a number from the list or a model name it shows.")


def _check(choice: Choice) -> bool:
    """The checks of ``acp-harness-agent doctor`` for the chosen model; True when none failed."""
    from .doctor import Check, run_checks

    flags = {"provider": choice.provider, "model": choice.model, "base_url": choice.base_url}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    if choice.key:
        env["ACP_AGENT_API_KEY"] = choice.key
    failed: list[Check] = []

    def emit(check: Check) -> None:
        if check.name.startswith("model"):
            print(check.line())
            if check.ok is False:
                failed.append(check)

    print("\nChecking…")
    anyio.run(run_checks, Path.cwd(), flags, env, emit)
    return not failed


def save_choice(directory: Path, choice: Choice) -> Path:
    """Write the choice into ``directory/config.toml`` (a typed key into ``directory/api-key``, readable by
    the user only); every other line of the file is kept, comments included. Problems elsewhere in the file
    do not stop it (``main`` reports them after); a file that is not TOML does (``ConfigError``)."""
    from ..config import write_user_config

    private_dir(directory)  # 0700: it holds the key file
    values: dict[str, str | None] = {
        "provider": choice.provider,
        "model": choice.model,
        "base_url": choice.base_url,
    }
    if choice.key:
        key_path = directory / _KEY_FILE
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(choice.key + "\n")
        os.chmod(key_path, 0o600)
        values["api_key_file"] = str(key_path)
    return write_user_config(values, os.environ, path=directory / "config.toml", check=False)


def forget_stored_key(env: Mapping[str, str]) -> bool:
    """Delete the key ``acp-agent setup`` stored and its ``api_key_file`` line (blocking: a worker
    thread); False when there was none. A key file the user wrote themselves elsewhere is left alone."""
    from ..config import user_config_dir, user_config_file, write_user_config

    directory = user_config_dir(env)
    key = directory / _KEY_FILE
    config = user_config_file(env)
    named = _named_key_file(config)
    if named is not None and Path(named).expanduser() == key:
        write_user_config({"api_key_file": None}, env, check=False)
    try:
        key.unlink()
    except FileNotFoundError:
        return False
    return True


def _named_key_file(config: Path) -> str | None:
    import tomllib

    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("api_key_file")
    return value if isinstance(value, str) else None
