"""``--gc-each-test`` makes a test that leaves something unclosed in a reference cycle fail in its own
teardown, and only that test. (Not tested without the option: the inner run's leak would then be found
wherever the collector next runs, in a later test of this session.)"""

from __future__ import annotations

import gc

import pytest

INNER = """
import socket

class Cycle:
    def __init__(self):
        self.me = self
        self.sock = socket.socket()  # never closed: a ResourceWarning when the cycle is collected

def test_leaks():
    Cycle()

def test_innocent():
    pass
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(INNER)
    gc.collect()  # this session's own garbage is not the inner run's (a leak in it is reported here)
    gc.disable()  # only the plugin's collection may find the inner leak (an automatic one could come first)
    try:
        return pytester.runpytest_inprocess(
            "-p", "tests._gc_each_test", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "error", *args
        )
    finally:
        gc.enable()


def test_with_the_option_the_leaking_test_fails_in_its_own_teardown(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--gc-each-test")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_leaks*", "*left unclosed*", "*unclosed <socket.socket*"]
    )
