"""``acp-harness-agent doctor``: checks the configuration, the model endpoint (reachable, model listed, a one-token
completion with a tool offered), each configured MCP server (starts, lists tools), the home folder and the
log file. One line per check, saying what to fix; exit status 0 when all is well, 1 otherwise."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from ..config import SETTINGS, add_flags, flag_values, load_config, missing_key_problem, user_config_dir

if TYPE_CHECKING:
    from ..config import Config, McpServerEntry

__all__ = ["Check", "add_arguments", "main", "run_checks"]

MODEL_TIMEOUT: Final = 60.0
MCP_TIMEOUT: Final = 30.0


@dataclass(frozen=True, slots=True)
class Check:
    """One check's outcome: ``ok`` True (fine), False (must be fixed) or None (a warning)."""

    name: str
    ok: bool | None
    message: str

    def line(self) -> str:
        label = {True: "ok  ", False: "FAIL", None: "warn"}[self.ok]
        return f"{label}  {self.name}: {self.message}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", help="check the configuration of this project directory (default: here)")
    add_flags(parser, suppress=True, note="; as for the agent")


def main(args: argparse.Namespace, config: Any = None) -> int:
    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).expanduser()
    flags = flag_values(args)

    import logging

    # The checks report problems themselves; library warnings would repeat them on stderr.
    logging.getLogger().addHandler(logging.NullHandler())

    def emit(check: Check) -> None:
        print(check.line(), flush=True)

    checks = anyio.run(run_checks, cwd, flags, dict(os.environ), emit)
    return 0 if all(c.ok is not False for c in checks) else 1


async def run_checks(
    cwd: Path, flags: Mapping[str, Any], env: Mapping[str, str], emit: Callable[[Check], None]
) -> list[Check]:
    """Run every check, reporting each through ``emit`` as it finishes."""
    done: list[Check] = []

    def report(check: Check) -> None:
        done.append(check)
        emit(check)

    # Leniently: a bad value is reported and skipped, and the rest is still checked with what is left.
    config = load_config(cwd, flags, env, strict=False)
    for problem in config.problems:
        report(Check("config", False, str(problem)))
    if not config.problems:
        where = ", ".join(str(p) for p in config.files) or "no config files; flags, environment and defaults"
        report(Check("config", True, where))
    report(_check_origins(config, broken=bool(config.problems)))
    trust = _check_trust(config)
    if trust is not None:
        report(trust)
    for check in await _check_model(config, env):
        report(check)
    for server in config.mcp_servers:
        report(await _check_mcp(server, cwd))
    path = await anyio.to_thread.run_sync(_check_path, env.get("PATH"), cwd)  # (it resolves paths)
    if path is not None:
        report(path)
    report(await anyio.to_thread.run_sync(_check_home, config.home))
    report(await anyio.to_thread.run_sync(_check_log, config.home, env))
    from ..coding.reports import sandbox_status

    report(Check("sandbox", *await anyio.to_thread.run_sync(sandbox_status, config, env)))
    return done


def _check_origins(config: Config, *, broken: bool = False) -> Check:
    """Where each setting that is set came from (exactly: the flag, the variable or the file); with
    problems (``broken``) it does not claim that the defaults are what the user wants."""
    shown: list[str] = []
    for key, origin in config.origins.items():
        s = SETTINGS[key]
        if s.merge == "by_name":
            value = ", ".join(sorted(config.get(key)))
        else:
            value = "(set)" if s.secret else str(config.get(key))
        shown.append(f"{key} = {value} ({origin})")
    if broken:
        applied = "; ".join(shown) or "none"
        return Check("settings", None, f"{applied} (what the problems above skipped is left at its default)")
    return Check("settings", True, "; ".join(shown) or "all defaults")


def _check_trust(config: Config) -> Check | None:
    project = config.project
    if project is None or not project.items:
        return None
    if project.trusted:
        return Check("project trust", True, f"{project.root} is trusted; its configuration applies")
    lines = "; ".join(item.text for item in project.items)
    return Check(
        "project trust",
        None,
        f"{project.root} is not trusted, so these project settings are ignored: {lines}. "
        f"Trust it with `acp-harness-agent trust {project.root}` (or answer the editor's question).",
    )


# --- the model ------------------------------------------------------------------------------------


async def _check_model(config: Config, env: Mapping[str, str]) -> list[Check]:
    from ..model_setup import ModelSettings, build_model, how_to_configure

    if config.provider is None:
        return [Check("model", False, how_to_configure() + ".")]
    if config.provider == "script":
        return [await anyio.to_thread.run_sync(_check_script, config.script)]
    problem = missing_key_problem(config)
    if problem is not None:
        return [Check("model", False, f"{problem} (or run `acp-harness-agent setup`)")]
    if not config.model:
        return [
            Check(
                "model",
                False,
                f"provider {config.provider} needs a model name: run `acp-harness-agent setup`, pass --model, "
                'set ACP_AGENT_MODEL, or put model = "..." in config.toml.',
            )
        ]
    try:
        model: Any = build_model(ModelSettings.from_config(config))
    except ImportError as exc:
        return [Check("model", None, f"not available: the HTTP providers cannot be imported ({exc}).")]
    except Exception as exc:
        return [Check("model", False, f"cannot set up provider {config.provider}: {exc}")]
    where = str(getattr(model, "base_url", config.base_url or config.provider))
    checks: list[Check] = []
    try:
        listed, infos = await _check_listing(model, config.model, where)
        checks.append(listed)
        if listed.ok is not False:
            from .doctor_facts import facts_check

            ok, facts = facts_check(config, infos, str(user_config_dir(env) / "config.toml"))
            checks.append(Check("model facts", ok, facts))
            checks.append(await _check_completion(model, config.model, where))
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()
    return checks


def _check_script(script: Path | None) -> Check:
    from ..model_setup import ModelConfigError, load_script

    if script is None:
        return Check(
            "model", False, "provider script needs ACP_AGENT_SCRIPT, the path of a JSON list of replies."
        )
    try:
        replies = load_script(script)
    except ModelConfigError as exc:
        return Check("model", False, f"{exc}.")
    return Check("model", True, f"script provider with {len(replies)} replies from {script}")


def _unreachable(where: str, exc: BaseException) -> str:
    from harness import ModelError

    message = (getattr(exc, "message", None) or str(exc) or type(exc).__name__).rstrip(".")
    if isinstance(exc, ModelError):
        return f"{message}."  # the providers' messages already name the cause and the fix
    return (
        f"{where} failed: {message}; check that the server is running and that base_url "
        "(--base-url, ACP_AGENT_BASE_URL or config.toml) and the API key are right."
    )


async def _check_listing(model: Any, name: str, where: str) -> tuple[Check, list[Any]]:
    """The listing check, and what the server's list said of each model (``ModelInfo``s)."""
    describe = getattr(model, "describe_models", None)
    if describe is None:
        return Check("model endpoint", None, f"{where}: this provider cannot list models; skipped."), []
    infos: list[Any] = []
    try:
        with anyio.fail_after(MODEL_TIMEOUT):
            infos = list(await describe())
            names: list[str] = [i.id for i in infos]
    except TimeoutError:
        return Check(
            "model endpoint",
            False,
            f"{where} did not answer within {MODEL_TIMEOUT:.0f} s; check that "
            "the server is running and base_url is right.",
        ), infos
    except Exception as exc:
        return Check("model endpoint", False, _unreachable(where, exc)), infos
    if not names:
        return Check("model endpoint", True, f"{where} is reachable (it publishes no model list)"), infos
    if name not in names:
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        return Check(
            "model endpoint",
            False,
            f"{where} does not serve model {name!r}; set --model (or "
            f"ACP_AGENT_MODEL, or model in config.toml) to one of: {shown}.",
        ), infos
    return Check("model endpoint", True, f"{where} is reachable and serves {name!r}"), infos


async def _check_completion(model: Any, name: str, where: str) -> Check:
    from harness import Message, Options, ToolSpec
    from harness.model import Prompt

    tool = ToolSpec("get_time", "Returns the current time.", {"type": "object", "properties": {}})
    prompt = Prompt(
        system="Answer in one word.",
        messages=[Message.user("Say OK.")],
        tools=[tool],
        options=Options(max_output_tokens=1),
    )
    deltas = 0
    try:
        with anyio.fail_after(MODEL_TIMEOUT):
            async for _ in model.stream(prompt):
                deltas += 1
    except TimeoutError:
        return Check(
            "model completion",
            False,
            f"{where} did not finish a one-token completion within "
            f"{MODEL_TIMEOUT:.0f} s; the server may be overloaded or still loading {name!r}.",
        )
    except Exception as exc:
        return Check(
            "model completion", False, _unreachable(f"a one-token completion with {name!r} at {where}", exc)
        )
    return Check("model completion", True, f"{name!r} answered a one-token request with a tool offered")


# --- MCP servers ----------------------------------------------------------------------------------


async def _check_mcp(entry: McpServerEntry, cwd: Path) -> Check:
    label = f"mcp server {entry.name}"
    try:
        from harness.mcp import HttpConfig, McpServer, StdioConfig
    except ImportError:
        return Check(label, None, "not available: harness.mcp cannot be imported.")
    if entry.type == "stdio":
        cfg: Any = StdioConfig(
            entry.name, entry.command or "", entry.args, dict(entry.env), entry.cwd or str(cwd)
        )
        what = " ".join([entry.command or "", *entry.args])
    else:
        cfg = HttpConfig(
            entry.name, entry.url or "", dict(entry.headers), "sse" if entry.type == "sse" else "http"
        )
        what = entry.url or ""
    try:
        async with McpServer(cfg, connect_timeout=MCP_TIMEOUT) as server:
            state = server.state
            tools = len(await server.tools()) if str(state.status) == "ready" else 0
    except Exception as exc:
        return Check(
            label,
            False,
            f"`{what}` (from {entry.source}) did not start: {exc}; fix the command or "
            "url in that file, or remove the server.",
        )
    if str(state.status) != "ready":
        cause = (state.cause or "it did not become ready").rstrip(".")
        return Check(
            label,
            False,
            f"`{what}` (from {entry.source}) did not start: {cause}; fix the command or "
            "url in that file, or remove the server.",
        )
    return Check(label, True, f"started, {tools} tools")


def _check_path(path: str | None, cwd: Path) -> Check | None:
    """A warning when ``PATH`` has entries the agent never searches for the programs it starts by name
    (``harness.programs``): empty or relative ones, or folders inside the project; None when it has none."""
    entries = (path or "").split(os.pathsep)
    skipped = [repr(e) if e else "an empty entry" for e in entries if not os.path.isabs(e)]
    project = cwd.resolve()
    skipped += [e for e in entries if os.path.isabs(e) and Path(e).resolve().is_relative_to(project)]
    if not skipped or project == Path.home().resolve() or project == Path(project.anchor):
        return None
    return Check(
        "PATH",
        None,
        f"{', '.join(dict.fromkeys(skipped))} not searched: git, the hooks' and the shell tool's bash and MCP "
        "servers' commands are never taken from the project (its children get PATH without them too); "
        "give a command there by its full path.",
    )


# --- home and log file ----------------------------------------------------------------------------


def _check_home(home: Path) -> Check:
    try:
        from harness.atomic import private_dir

        private_dir(home / "sessions")
        with tempfile.NamedTemporaryFile(dir=home / "sessions", prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check(
            "home",
            False,
            f"{home} is not writable ({exc.strerror}); fix its permissions or choose "
            "another folder with --home or ACP_AGENT_HOME.",
        )
    return Check("home", True, f"{home} is writable")


def _check_log(home: Path, env: Mapping[str, str]) -> Check:
    from ..logs import log_file_path

    path = log_file_path(home, dict(env))
    if path is None:
        return Check("log file", None, "disabled by ACP_AGENT_LOG; logs go to stderr only.")
    try:
        from harness.atomic import open_private_append

        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(open_private_append(path))  # as the log itself is made: 0600
    except OSError as exc:
        return Check(
            "log file",
            False,
            f"{path} is not writable ({exc.strerror}); fix its permissions or set "
            "ACP_AGENT_LOG to another path.",
        )
    return Check("log file", True, f"{path}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(argparse.Namespace()))
