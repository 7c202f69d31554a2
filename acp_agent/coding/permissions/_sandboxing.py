"""The session's sandbox: which policy each shell call runs under, and which calls need the user's yes.

- ``SessionSandbox`` holds the session's policy (the ``sandbox``, ``network``, ``sandbox_writable`` and
  ``sandbox_deny_read`` settings of the resolved ``Config``, the session's roots, a private temp folder (made
  after the ``session/new`` answer, ``make_folder_sync``), the protected paths, the agent's own files denied to reads) and what the machine supports; ``configure``
  takes the settings again when the user trusts the project mid-session. ``for_call`` gives the policy of one ``shell`` call: none in ``full-access`` or when
  the call asks ``sandbox: "off"``; writes narrowed to the temp folder in ``read-only`` and ``plan``.
- ``SandboxGate`` wraps the mode's policy middleware for ``shell``: in ``accept-edits``, ``read-only`` and
  ``plan`` a command that will run sandboxed needs no prompt (a remembered "always reject" still
  applies); a call asking to leave the sandbox (``sandbox: "off"``, or ``network: true`` when the network
  is off) always asks, whatever was remembered, and is refused in ``read-only`` and ``plan``.
- Where there is no sandbox, nothing changes: the modes ask as before, and ``notice`` says so once.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness import Result
from harness.policy import Policy, Verdict
from harness.sandbox import SandboxPolicy, Support, probe, unavailable

from ...config import home_dir, user_config_dir
from ._protected import AGENT_ROOT_PATHS, home_sandbox_paths, own_link_targets

if TYPE_CHECKING:
    from harness import Call, ToolCall
    from harness.middleware import NextTool

    from ...config import Config
    from ._modes import ModeState, PolicyMiddleware

__all__ = [
    "PROTECTED",
    "SandboxGate",
    "SessionSandbox",
    "agent_private_paths",
    "escalation_title",
    "probe_soon",
    "sandbox_status",
    "sandbox_support",
]

log = logging.getLogger(__name__)

PROTECTED: Final[tuple[str, ...]] = AGENT_ROOT_PATHS
"""The protected paths, relative to each root (to become the permission gate's list)."""
SANDBOXED_MODES: Final = frozenset({"accept-edits", "read-only", "plan"})
"""Modes in which a command that runs sandboxed needs no prompt."""
_UNAVAILABLE_ENV: Final = "ACP_AGENT_SANDBOX_UNAVAILABLE"
"""Set to 1 to behave as on a machine without a sandbox (tests, or to see the fallback)."""


def sandbox_support(environ: Mapping[str, str]) -> Support:
    """What this machine can enforce (``ACP_AGENT_SANDBOX_UNAVAILABLE=1`` pretends nothing)."""
    if environ.get(_UNAVAILABLE_ENV) == "1":
        return unavailable(f"{_UNAVAILABLE_ENV}=1 is set")
    return probe()


def probe_soon(environ: Mapping[str, str]) -> None:
    """Start finding what this machine enforces in a background thread (the namespaces' probe starts an
    interpreter: tens of milliseconds the first ``session/new`` would otherwise wait for)."""
    threading.Thread(
        target=sandbox_support, args=(dict(environ),), name="acp-agent-sandbox-probe", daemon=True
    ).start()


def escalation_title(tool_name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The permission request's title for a ``shell`` call asking to leave the sandbox (None otherwise)."""
    if tool_name != "shell":
        return None
    command = str(tool_input.get("command", ""))[:200]
    if tool_input.get("sandbox") == "off":
        return f"Run outside the sandbox (can write anywhere, network on, may leave processes running): {command}"
    if tool_input.get("network") is True:
        return f"Run with network access (in the sandbox): {command}"
    return None


def sandbox_status(config: Config, environ: Mapping[str, str]) -> tuple[bool | None, str]:
    """``acp-harness-agent doctor``'s line: (ok, message); a warning where the sandbox is wanted but missing."""
    support = sandbox_support(environ)
    if config.sandbox == "off":
        return None, f"off by configuration; commands ask before they run ({support.describe()} available)"
    if not support.available:
        return None, f"{support.describe()}; commands ask before they run"
    if config.network == "off" and not support.network_enforced:
        return None, f"{support.describe()}, but the network cannot be kept off; commands ask"
    return True, f"{config.sandbox}, network {config.network}: {support.describe()}"


def agent_private_paths(config: Config, environ: Mapping[str, str]) -> list[Path]:
    """The agent's own files a command may not read nor write: the user configuration folder (rules,
    settings) and where its links lead, the user's rule file when it is a link, the agent's home
    (sessions, logs, trust decisions) and the configured key file. Blocking."""
    folder = user_config_dir(environ)
    paths = [folder, *own_link_targets(folder, [config.permissions_user_file]), config.home]
    key_file = config.get("api_key_file")
    if key_file is not None:
        paths.append(Path(key_file))
    key_source = config.api_key_source
    if key_source is not None and os.path.isabs(key_source) and Path(key_source) not in paths:
        paths.append(Path(key_source))
    return paths


FOLDER_PREFIX: Final = "acp-agent-sandbox-"
"""A session's private folder is ``<temp>/acp-agent-sandbox-<pid>-<random>``: the pid lets a later process
remove the folders of one that was killed."""
STALE_AFTER_S: Final = 3600.0
_swept = threading.Lock()
_sweep_done = False


def sweep_stale_folders(now: float | None = None) -> list[Path]:
    """Remove (once per process; blocking) the private folders that processes killed before closing their
    sessions left behind: yours, named after a pid that is gone, untouched for an hour (a pid namespace
    sharing this temp folder could show a live agent's pid as gone). Returns what was removed."""
    global _sweep_done
    with _swept:
        if _sweep_done:
            return []
        _sweep_done = True
    removed: list[Path] = []
    cutoff = (time.time() if now is None else now) - STALE_AFTER_S
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        pid_text, dash, _ = entry.name[len(FOLDER_PREFIX) :].partition("-")
        if not entry.name.startswith(FOLDER_PREFIX) or not (dash and pid_text.isdigit()):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not entry.is_dir(follow_symlinks=False) or st.st_uid != os.getuid() or st.st_mtime > cutoff:
                continue
            os.kill(int(pid_text), 0)
            continue  # alive (or not ours to signal): keep it
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


class SessionSandbox:
    """The sandbox of one session (see the module docstring). ``aclose`` removes its temp folder."""

    def __init__(
        self,
        modes: ModeState,
        roots: Sequence[Path],
        *,
        setting: str = "workspace-write",
        network: bool = False,
        support: Support,
        writable: Sequence[Path] = (),
        deny_read: Sequence[Path] = (),
        protected: Sequence[str] = PROTECTED,
    ) -> None:
        self.modes = modes
        self.setting = setting
        self.support = support
        self._dir: Path | None = None  # made by ``make_folder_sync``, after the session/new answer
        self._making = threading.Lock()
        self._closed = False
        mode = "read-only" if setting == "read-only" else "workspace-write"
        self.base = SandboxPolicy(
            mode=mode,
            network=network,
            roots=tuple(roots),
            writable=tuple(writable),
            deny_read=tuple(deny_read),
            protected=tuple(protected),
        )
        self._noticed = False
        self.protected = tuple(protected)  # relative to each root; ``configure`` adds the home folder's

    def make_folder_sync(self) -> None:
        """Make the session's private folder (its commands' temp folder, the launcher's specs); blocking.
        The set-up does it after the opening answer; ``for_call`` before that makes it then."""
        with self._making:
            if self._dir is not None or self._closed:
                return
            sweep_stale_folders()
            folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
            (folder / "tmp").mkdir()
            self.base = replace(self.base, temp=folder / "tmp", state_dir=folder / "specs")
            self._dir = folder

    def configure(self, config: Config, environ: Mapping[str, str]) -> None:
        """Take the sandbox settings of ``config`` (blocking: it may stat paths)."""
        self.setting = config.sandbox
        self.base = replace(
            self.base,
            mode="read-only" if config.sandbox == "read-only" else "workspace-write",
            network=config.network == "on",
            writable=tuple(config.sandbox_writable),
            deny_read=(*agent_private_paths(config, environ), *config.sandbox_deny_read),
            protected=(*self.protected, *home_sandbox_paths(home_dir(environ), self.base.roots)),
        )

    @property
    def active(self) -> bool:
        """Whether commands run sandboxed at all (the setting is on and the machine can enforce it)."""
        if self.setting == "off" or not self.support.available:
            return False
        return self.base.network or self.support.network_enforced

    def why_inactive(self) -> str:
        if self.setting == "off":
            return "the sandbox setting is off"
        if not self.support.available:
            return self.support.reason
        return "this kernel cannot keep the network off (Landlock ABI 4 or a network namespace needed)"

    def escalation(self, tool_input: Mapping[str, Any]) -> str | None:
        """What a call asks beyond the sandbox, in words; None when it stays inside."""
        if tool_input.get("sandbox") == "off":
            return (
                "outside the sandbox: it can write anywhere you can, reach the network and leave processes "
                "running after it ends"
            )
        if tool_input.get("network") is True and not self.base.network:
            return "in the sandbox but with network access"
        return None

    def for_call(self, tool_input: Mapping[str, Any]) -> SandboxPolicy | None:
        """The policy one ``shell`` call runs under (None: unsandboxed)."""
        if not self.active or self.modes.mode == "full-access" or tool_input.get("sandbox") == "off":
            return None
        if self._dir is None:  # (only before the set-up after the answer ran: every prompt waits for it)
            self.make_folder_sync()
        read_only = self.modes.mode in ("read-only", "plan")
        network = True if tool_input.get("network") is True else None
        return self.base.narrowed(read_only=read_only, network=network)

    def notice(self) -> str | None:
        """Once per session, when the sandbox was wanted but cannot run: the sentence to show."""
        if self._noticed or self.active or self.setting == "off":
            return None
        self._noticed = True
        return (
            f"Commands are not sandboxed on this machine ({self.why_inactive()}): each command asks "
            "before it runs, as without a sandbox."
        )

    def aclose(self) -> None:
        """Remove the folder (blocking: the session's close calls it in a worker thread)."""
        with self._making:
            folder, self._dir, self._closed = self._dir, None, True
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


class SandboxGate:
    """The mode's policy middleware, with the sandbox's say on ``shell`` calls (module docstring)."""

    def __init__(
        self,
        inner: PolicyMiddleware,
        sandbox: SessionSandbox,
        say: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.inner = inner
        self.sandbox = sandbox
        self._say = say
        """Shows a line in the editor (the once-per-session notice that there is no sandbox)."""

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        sandbox = self.sandbox
        mode = sandbox.modes.mode
        if call.name == "shell" and self._say is not None and (text := sandbox.notice()):
            await self._say(text)
        if call.name != "shell" or not sandbox.active or mode == "full-access":
            return await self.inner.call(call, context, next)
        command = str(call.input.get("command", ""))
        leaving = sandbox.escalation(call.input)
        if leaving is not None:
            if mode in ("read-only", "plan"):
                return Result.failure(
                    f"Denied: in {mode} mode commands run only in the read-only sandbox; "
                    f"`{command}` asked to run {leaving}.",
                    meta={"policy": "deny"},
                )
            asked = context.ask_or_deny(
                f"Run `{command}` {leaving}?",
                {"policy": "declined"},
                f" (the command asked to run {leaving})",
            )
            return asked if asked is not None else await next(call, context)
        if mode in SANDBOXED_MODES and not self._remembered_deny(call, context):
            return await next(call, context)
        return await self.inner.call(call, context, next)

    def _remembered_deny(self, call: ToolCall, context: Call) -> bool:
        remembered = Policy(self.sandbox.modes.remembered, Verdict.ALLOW)
        return remembered.judge(call, context.spec).verdict is Verdict.DENY
