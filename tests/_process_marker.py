"""The ``process`` marker, enforced: a test that spawns a process (the agent, a fake agent, an MCP server, a
shell command, ``git``) must say so with ``@pytest.mark.process`` (or a module's ``pytestmark``), so that
``pytest -m "not process"`` is the quick inner loop and leaves every spawning test out.

Every spawn goes through ``subprocess.Popen._execute_child`` (asyncio, anyio and trio all open processes with
``subprocess.Popen``) or ``os.fork``/``os.forkpty``/``os.posix_spawn``/``os.system`` (pexpect, the rest), and
those are watched for the whole run. A spawn during an unmarked test's setup, call or teardown fails that phase
with the spawning line; the spawn itself is let through, so the test's own code (which may turn a failed spawn
into an error result) cannot hide it and the run is not left waiting on a process that never started.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

MARK = "process"
_HERE = Path(__file__).resolve()
_REPO = _HERE.parents[1]
_LIBRARIES = tuple(Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})


class _Watch:
    """Which spawns happened while an unmarked test ran (spawns may come from worker threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed = False
        self._seen: list[str] = []

    def arm(self, *, armed: bool) -> None:
        with self._lock:
            self._armed = armed
            self._seen = []

    def disarm(self) -> list[str]:
        with self._lock:
            self._armed = False
            seen, self._seen = self._seen, []
        return seen

    def note(self, what: str) -> None:
        if not self._armed:
            return
        where = _caller()
        with self._lock:
            if self._armed and len(self._seen) < 3:
                self._seen.append(f"{what}\n    from {where}")


_WATCH = _Watch()


def _caller() -> str:
    """The innermost frame outside Python, its libraries and this module: the line that asked for the process."""
    for frame in reversed(traceback.extract_stack()):
        path = Path(frame.filename)
        if path == _HERE or not path.is_absolute() or any(path.is_relative_to(p) for p in _LIBRARIES):
            continue
        shown = path.relative_to(_REPO) if path.is_relative_to(_REPO) else path
        return f"{shown}:{frame.lineno} ({frame.name})"
    return "an unknown place"


def _install() -> None:
    popen: Any = subprocess.Popen
    if getattr(popen, "_watched_by_process_marker", False):  # once per interpreter (pytester runs nest)
        return
    popen._watched_by_process_marker = True
    execute_child: Callable[..., None] = popen._execute_child

    def watched_execute_child(self: subprocess.Popen[Any], args: object, *rest: object, **kw: object) -> None:
        _WATCH.note(f"subprocess.Popen({_short(args)})")
        execute_child(self, args, *rest, **kw)

    popen._execute_child = watched_execute_child
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        original = getattr(os, name, None)
        if original is not None:
            setattr(os, name, _watched(name, original))


def _watched(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def watched(*args: object, **kw: object) -> Any:
        _WATCH.note(f"os.{name}({_short(args[0]) if args else ''})")
        return original(*args, **kw)

    return watched


def _short(args: object) -> str:
    text = repr(args)
    return text if len(text) <= 120 else text[:117] + "..."


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--process-survey",
        metavar="PATH",
        help="fail no test for spawning; append 'nodeid<TAB>spawned<TAB>marked' (1/0) for each test to PATH "
        "(finds the tests to mark, and the marked ones that spawn nothing)",
    )


def pytest_configure(config: pytest.Config) -> None:
    _install()


def pytest_sessionstart(session: pytest.Session) -> None:
    """The sandbox probe (``unshare --user --net true``, cached for the process) runs here, before any test:
    otherwise whichever in-memory test first starts a coding session would spawn it and fail as unmarked."""
    from harness.sandbox import probe

    probe()


def _phase(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    survey: str | None = item.config.getoption("--process-survey")
    marked = item.get_closest_marker(MARK) is not None
    _WATCH.arm(armed=survey is not None or not marked)
    try:
        result = yield
    except BaseException as exc:
        seen = _WATCH.disarm()
        if seen and survey is None:
            raise pytest.fail.Exception(_message(phase, seen), pytrace=False) from exc
        _record(item, survey, phase, seen, marked)
        raise
    seen = _WATCH.disarm()
    if seen and survey is None:
        pytest.fail(_message(phase, seen), pytrace=False)
    _record(item, survey, phase, seen, marked)
    return result


def _record(item: pytest.Item, survey: str | None, phase: str, seen: list[str], marked: bool) -> None:
    if survey is not None and (seen or phase == "call"):
        with open(survey, "a", encoding="utf-8") as out:
            out.write(f"{item.nodeid}\t{int(bool(seen))}\t{int(marked)}\t{phase}\n")


def _message(phase: str, seen: list[str]) -> str:
    spawns = "\n  ".join(seen)
    return (
        f"this test spawns a process (in its {phase}) but is not marked `process`:\n  {spawns}\n"
        f"Mark it `@pytest.mark.process` (or the module: `pytestmark = pytest.mark.process`), so that "
        f'`pytest -m "not process"` (the quick inner loop) leaves it out.'
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _phase(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _phase(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    return (yield from _phase(item, "teardown"))
