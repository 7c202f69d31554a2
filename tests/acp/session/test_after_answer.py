"""What waits for a response to be on the wire (``Answered``, fed by ``serve.ResponseWatch``): it runs once the
response's bytes are written, all of it, in the order it was given, once."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from acp_agent.session._answered import Answered
from acp_agent.session.serve import ResponseWatch
from harness.testing import FakeModel
from tests.acp.session._support import running_agent
from tests.acp_client import RecordedBytes

pytestmark = pytest.mark.anyio


class _Agent:
    def __init__(self) -> None:
        self.answered = Answered()


def test_everything_given_for_a_request_runs_once_in_order_when_its_answer_is_written() -> None:
    answered, ran = Answered(), list[str]()
    answered.then(7, lambda: ran.append("opened"))
    answered.then(7, lambda: ran.append("logged"))
    answered.then("other", lambda: ran.append("other"))
    assert answered.watching
    answered.written(7)
    answered.written(7)
    assert ran == ["opened", "logged"]
    answered.written("other")
    assert ran == ["opened", "logged", "other"] and not answered.watching


async def test_the_work_runs_after_the_answers_bytes_are_written_and_only_for_responses() -> None:
    sink, agent = RecordedBytes(), _Agent()
    seen: list[bytes] = []
    agent.answered.then(1, lambda: seen.append(bytes(sink.data)))
    watch = ResponseWatch(sink, agent)  # pyright: ignore[reportArgumentType]
    await watch.send(b'{"jsonrpc":"2.0","method":"x","params":{"id":1}}\n')
    await watch.send(b'{"jsonrpc":"2.0","id":1,"method":"ask"}\n')
    assert seen == []  # a notification and a request of ours that carry the id are not its answer
    await watch.send(b'{"jsonrpc":"2.0","id":2,"result":{}}\n{"jsonrpc":"2.0","id":1,"result":{"a":1}}\n')
    assert len(seen) == 1 and seen[0].endswith(b'{"jsonrpc":"2.0","id":1,"result":{"a":1}}\n')


async def test_a_new_session_is_logged_as_created_once_its_answer_is_on_the_wire(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        answered_when_logged: list[bool] = []

        class Seen(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if " created in " in record.getMessage():  # the session's answer was written: it is open
                    answered_when_logged.append(agent.sessions[str(record.args[0])].opened.is_set())  # type: ignore[index]

        logger = logging.getLogger("acp_agent.session._agent")
        handler, level = Seen(logging.INFO), logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            with anyio.fail_after(5):
                await agent.sessions[sid].opened.wait()
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
        assert answered_when_logged == [True]
