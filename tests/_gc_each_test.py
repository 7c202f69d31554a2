"""``--gc-each-test``: a full garbage collection after each test's teardown, so that something it left unclosed
in a reference cycle (a process whose pipes are still open, a socket, a file) fails that test, in its
teardown, instead of whichever later test the collector happens to run in.

Off by default: a collection costs about 70 ms once the heap is warm (20 s over ``tests/conformance``'s 283
tests, an eighth of their time; some 5 minutes of CPU over the whole suite). Turn it on to find the test
that leaks when a ResourceWarning fails an unrelated one; under ``python -X tracemalloc=20 -m pytest`` the
failure shows where the object was made (not ``PYTHONTRACEMALLOC``, which every spawned Python inherits and
crawls under). It runs once the teardown is done (fixtures finalised, the test's event loop closed) and
reports what the collection finalised itself: pytest's own check of the phase has run by then.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Generator

import pytest

_OPTION = "--gc-each-test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        _OPTION,
        action="store_true",
        help="collect garbage after each test's teardown; what a leak left (a ResourceWarning in a finaliser) "
        "fails the test that made it (about 70 ms a test)",
    )


def _collect() -> list[str]:
    """What a full collection finalised with an error (a ResourceWarning is one, warnings being errors)."""
    seen: list[str] = []

    def note(unraisable: sys.UnraisableHookArgs) -> None:
        made = tracemalloc.get_object_traceback(unraisable.object) if unraisable.object is not None else None
        where = "".join(f"\n      {line}" for line in made.format()) if made else ""
        seen.append(f"{unraisable.exc_value!r}{where}")

    before = sys.unraisablehook
    sys.unraisablehook = note
    try:
        gc.collect()
    finally:
        sys.unraisablehook = before
    return seen


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    result = yield
    if item.config.getoption(_OPTION) and (leaked := _collect()):
        pytest.fail("left unclosed, found by the garbage collector:\n  " + "\n  ".join(leaked), pytrace=False)
    return result
