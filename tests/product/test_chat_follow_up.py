"""The chat and a turn no prompt answer ends (the follow-up a steering message left as its turn ended, a
steering message's own turn): shown as running (the ``…`` prompt, Ctrl-C cancels it, Enter queues,
``/steer`` steers into it) from its ``_meta.turn`` running marker, which comes before the answer of the
turn it follows, until its idle marker. In memory: the real ``ChatApp`` over a ``Connection`` to the real
``AcpAgent`` (a fake model) on memory pipes."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest

from acp_agent.chat._app import ChatApp, ChatOptions
from acp_agent.chat._client import ChatClient
from acp_agent.chat._typing import BUSY_PROMPT, IDLE_PROMPT, steer
from acp_agent.chat.render import Renderer, Style
from acp_agent.model_setup import ModelSettings
from acp_agent.protocol.connection import Connection
from acp_agent.session import AcpAgent, SessionFactory, default_factory, serve
from harness.testing import FakeModel, Reply
from tests.acp.session._support import HeldEnd
from tests.acp.session.test_queue_and_steering import Gate
from tests.acp_client import memory_pipe

pytestmark = pytest.mark.anyio

LIMIT_S = 20


class TypedLines:
    """Lines typed as in a terminal (``edits``: one can be typed while a turn runs); the prompts the chat
    put up, in order (``retitle``)."""

    edits = True

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[str | None](100)
        self.titles: list[str] = []

    def type(self, line: str | None) -> None:
        """A line typed and Enter (None: Ctrl-D, the end of input)."""
        self._send.send_nowait(line)

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None:
        return await self._receive.receive()

    def retitle(self, prompt: str, *, remember: bool = True) -> None:
        self.titles.append(prompt)

    def shown(self) -> list[str]:
        """The prompts shown, a repeat of the one shown left out."""
        return [t for i, t in enumerate(self.titles) if i == 0 or self.titles[i - 1] != t]

    async def aclose(self) -> None:
        self._send.close()
        self._receive.close()


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def chat_with_agent(
    tmp_path: Path, model: FakeModel, factory: SessionFactory = default_factory
) -> AsyncGenerator[tuple[ChatApp, TypedLines, list[str]]]:
    """The chat talking to the agent; on exit the input ends and the chat's ``repl`` returns 0."""
    to_agent, from_agent = memory_pipe(1000), memory_pipe(1000)
    agent = AcpAgent(home=tmp_path / "home", settings=ModelSettings(None), factory=factory, model=model)
    lines, out = TypedLines(), list[str]()
    app = ChatApp(ChatOptions(tmp_path), lines, Renderer(out.append, Style(False), live=False), print)
    conn = Connection(from_agent.receive, to_agent.send, ChatClient(app), shutdown_grace=1.0)
    app.conn = conn
    try:
        async with anyio.create_task_group() as tg:

            async def run_agent() -> None:
                async with from_agent.send:
                    await serve(to_agent.receive, from_agent.send, agent)

            tg.start_soon(run_agent)
            tg.start_soon(conn.serve)
            assert await app.start()
            left: list[int] = []

            async def repl() -> None:
                left.append(await app.repl())

            tg.start_soon(repl)
            yield app, lines, out
            lines.type(None)
            await until(lambda: bool(left))
            assert left == [0]
            conn.close()
            to_agent.send.close()  # the agent's input ends: it closes its sessions and returns
    finally:
        to_agent.close()
        from_agent.close()
        await lines.aclose()


def _said(out: list[str]) -> str:
    return "".join(out)


async def test_a_follow_up_turn_shows_as_running_ctrl_c_cancels_it_and_a_line_typed_queues_behind_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    end, gate = HeldEnd(monkeypatch), Gate()
    model = FakeModel(
        [
            Reply(text="one"),
            Reply(tool_calls=[("wait", {})]),
            Reply(text="steered again"),
            Reply(text="queued answer"),
        ]
    )
    with anyio.fail_after(LIMIT_S):
        async with chat_with_agent(tmp_path, model, gate.factory()) as (app, lines, out):
            lines.type("first")
            await end.reached.wait()
            lines.type("/steer also this")  # the turn's run is over: it ends without reading this
            await until(lambda: "(sent" in _said(out))
            end.release.set()
            await gate.entered.wait()  # the follow-up turn runs (in its tool call)
            await until(lambda: app.turns == 0)  # the first prompt's answer is in
            assert app.busy
            assert lines.shown() == [BUSY_PROMPT]  # never idle between the two turns
            lines.type("next")  # Enter during the follow-up: queued behind it, as behind any turn
            await until(lambda: "(queued" in _said(out))
            lines.type("/steer more")  # steered into the follow-up
            await until(lambda: _said(out).count("(sent") == 2)
            await app.interrupt()  # Ctrl-C: cancels the follow-up (when idle it would leave the chat)
            # The cancelled follow-up left that steer: its own turn, right after, then the queued line.
            await until(lambda: not app.busy)
            said = _said(out)
            assert "cancelling" in said and "bye" not in said
            assert said.index("(cancelled)") < said.index("steered again") < said.index("queued answer")
            assert lines.shown() == [BUSY_PROMPT, IDLE_PROMPT]
            assert model.calls == 4


async def test_a_follow_up_turn_that_ends_leaves_the_chat_idle_and_the_next_line_is_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    end = HeldEnd(monkeypatch)
    model = FakeModel([Reply(text="one"), Reply(text="steered"), Reply(text="later")])
    with anyio.fail_after(LIMIT_S):
        async with chat_with_agent(tmp_path, model) as (app, lines, out):
            lines.type("first")
            await end.reached.wait()
            lines.type("/steer also this")
            await until(lambda: "(sent" in _said(out))
            end.release.set()
            await until(lambda: "steered" in _said(out) and not app.busy)
            assert lines.shown() == [BUSY_PROMPT, IDLE_PROMPT]
            lines.type("and now")
            await until(lambda: "later" in _said(out) and not app.busy)
            assert "(queued" not in _said(out)
            assert "(cancelled)" not in _said(out)


def _app(tmp_path: Path) -> tuple[ChatApp, TypedLines, list[str]]:
    lines, out = TypedLines(), list[str]()
    app = ChatApp(ChatOptions(tmp_path), lines, Renderer(out.append, Style(False), live=False), print)
    app.session_id = "s1"
    return app, lines, out


def _info(meta: Any, session_id: str = "s1") -> dict[str, Any]:
    return {"sessionId": session_id, "update": {"sessionUpdate": "session_info_update", "_meta": meta}}


async def test_a_failed_agent_turn_is_one_error_line_and_the_chat_is_idle_again(tmp_path: Path) -> None:
    app, lines, out = _app(tmp_path)
    client = ChatClient(app)
    await client.handle_notification("session/update", _info({"turn": {"state": "running"}}))
    assert app.busy and lines.shown() == [BUSY_PROMPT]
    idle = {"turn": {"state": "idle", "stopReason": "error", "message": "the set-up broke"}}
    await client.handle_notification("session/update", _info(idle))
    assert not app.busy and lines.shown() == [BUSY_PROMPT, IDLE_PROMPT]
    assert "error: the set-up broke" in _said(out)
    await lines.aclose()


@pytest.mark.parametrize(
    "meta",
    [
        {"turn": "running"},
        {"turn": {"state": 7}},
        {"turn": {"state": "requires_action"}},
        {"turn": {}},
        ["turn"],
        None,
        {"other": {"state": "running"}},
    ],
)
async def test_a_malformed_or_unknown_turn_marker_changes_nothing(tmp_path: Path, meta: Any) -> None:
    app, lines, out = _app(tmp_path)
    await ChatClient(app).handle_notification("session/update", _info(meta))
    assert not app.busy and lines.titles == [] and out == []
    await lines.aclose()


async def test_markers_of_another_session_or_an_idle_never_started_change_nothing(tmp_path: Path) -> None:
    app, lines, _out = _app(tmp_path)
    client = ChatClient(app)
    await client.handle_notification("session/update", _info({"turn": {"state": "running"}}, "other"))
    assert not app.busy
    await client.handle_notification("session/update", _info({"turn": {"state": "idle", "stopReason": "x"}}))
    assert not app.busy and lines.titles == []
    await lines.aclose()


class _Answers:
    """A connection whose requests are answered from a table (the steering answer of another agent)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[str] = []

    async def request(self, method: str, params: Any = None) -> Any:
        self.sent.append(method)
        return self.answers[method]


@pytest.mark.parametrize(
    ("outcome", "prompted", "notice"),
    [
        ("injected", False, "(sent"),
        ("startedNewTurn", False, "the agent started one for it"),
        ("promptRequired", True, "sent as a prompt"),
    ],
)
async def test_a_steer_is_sent_as_a_prompt_only_when_the_agent_asks_for_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcome: str, prompted: bool, notice: str
) -> None:
    """An agent that started a turn for the steer (``startedNewTurn``: it ignored ``promptRequired``)
    runs it already: sending it again as a prompt would run it twice. Its markers show that turn."""
    app, lines, out = _app(tmp_path)
    answers = _Answers({"_session/steering": {"outcome": outcome}})
    app.conn = cast(Connection, answers)
    started: list[str] = []

    def start_turn(text: str) -> None:  # the prompt the chat would send
        started.append(text)

    monkeypatch.setattr(app, "start_turn", start_turn)
    await steer(app, "look again")
    assert (started == ["look again"]) is prompted
    assert notice in _said(out)
    await lines.aclose()
