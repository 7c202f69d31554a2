"""What the coding agent's first session needs imported is imported in a worker thread, never on the event
loop: the coding factory (some 250 ms at start-up, when the session answered at start-up is built) and the
engine that checks a tool call's input (tens of ms, at the process's first call)."""

from __future__ import annotations

import threading
from typing import Any, cast

import anyio
import pytest

import harness
from acp_agent.coding import LazyCodingFactory, coding_factory

pytestmark = pytest.mark.anyio


class _Impl:
    def __init__(self) -> None:
        self.envs: list[Any] = []

    async def __call__(self, env: Any) -> Any:
        self.envs.append(env)
        return "set up"


async def test_the_first_session_builds_the_coding_factory_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    factory = coding_factory({}, environ={})
    impl = _Impl()
    on_loop: list[bool] = []

    def building() -> Any:
        on_loop.append(threading.current_thread() is threading.main_thread())
        monkeypatch.setattr(factory, "_impl", impl)  # as the real build stores it
        return impl

    monkeypatch.setattr(factory, "_factory", building)
    with anyio.fail_after(5):
        assert await factory(cast(Any, "env-1")) == "set up"
        assert await factory(cast(Any, "env-2")) == "set up"
    assert on_loop == [False]  # built once, in a worker thread; the second session uses it as it is
    assert impl.envs == ["env-1", "env-2"]


def test_the_warm_up_imports_the_tool_input_checker_after_the_factory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    def building(self: LazyCodingFactory) -> None:
        order.append("factory")

    def loading() -> None:
        order.append("validation")

    monkeypatch.setattr(LazyCodingFactory, "_factory", building)
    monkeypatch.setattr(harness, "load_validation", loading)
    coding_factory({}, environ={}).warm()
    assert order == ["factory", "validation"]
