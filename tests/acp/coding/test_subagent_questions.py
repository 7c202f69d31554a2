"""A sub-agent's questions (a ``Question`` a tool of its run asks) and its token usage, in memory with the
real coding factory: for a client advertising ``subagents`` the question is asked in the child's own session
about the child's own call, the child ``requires_action`` while it waits, ``session/cancel`` of the child
withdraws the open question once, and ``idle`` carries the child's own usage; a client that does not
advertise sub-agents (Zed) is asked on the parent session, about the ``explore`` call, as before.

The product's ``explore`` child has only read-only file tools, none of which asks; the tests give it one
that does (``Pick``, in place of ``grep``), the way an extended sub-agent's tool would ask."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from harness import Call, Decision, Hints, Question, Result, ToolSpec, Usage
from harness.testing import Reply
from tests.acp.coding._support import Editor, editor_agent, fake, prompt
from tests.acp.frontier._frontier_support import check_wire, validate

pytestmark = pytest.mark.anyio

QUESTION = "Which file defines foo?"
PARENT_USE = Usage(1000, 100)
CHILD_USES = (Usage(10, 3, cache_read=4), Usage(20, 5))
CALL = "call_0_explore"
PICK = f"{CALL}/call_pick"
FILES: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}}
SUBAGENTS: dict[str, Any] = {**FILES, "subagents": {}}
FORMS: dict[str, Any] = {**SUBAGENTS, "elicitation": {"form": {}}}
ZED: dict[str, Any] = {"name": "zed", "version": "0.220.0"}


class Pick:
    """A sub-agent's tool that asks the user to pick a file (a question with choices), then says which."""

    def __init__(self, root: Any, **_: Any) -> None:
        self.root = root

    def spec(self) -> ToolSpec:
        schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
        return ToolSpec("pick", "Ask the user which file matters", schema, Hints(read_only=True))

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        answer = call.answers().get("which")
        if answer is None:
            return call.needs_input([Question("which", QUESTION, ("a.py", "b.py"))], state={"asked": True})
        if isinstance(answer, Decision):
            return Result.failure(f"no answer: {answer.reason}")
        return Result.text(f"the user picked {answer}")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(autouse=True)
def asking_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``explore`` child gets ``pick`` in place of ``grep``."""
    monkeypatch.setattr("acp_agent.coding._tools.Grep", Pick)


def _model(*, answered: bool = True) -> Any:
    replies = [
        Reply(tool_calls=[("explore", {"prompt": "Where is foo?"}, CALL)], usage=PARENT_USE),
        Reply(tool_calls=[("pick", {}, "call_pick")], usage=CHILD_USES[0]),  # the sub-agent's
    ]
    if answered:
        replies.append(Reply(text="foo is in a.py.", usage=CHILD_USES[1]))  # the sub-agent's
    replies.append(Reply(text="It is in a.py.", usage=PARENT_USE))
    return fake(*replies)


def _requests(editor: Editor, method: str) -> list[dict[str, Any]]:
    return [r for r in editor.requests if r["method"] == method]


def _announced(editor: Editor, sid: str) -> str:
    (announce,) = [u for u in editor.updates(sid) if u["sessionUpdate"] == "subagent_update" and "title" in u]
    return str(announce["sessionId"])


def _states(editor: Editor, sid: str, child: str) -> list[dict[str, Any]]:
    return [
        u["state"]
        for u in editor.updates(sid)
        if u["sessionUpdate"] == "subagent_update" and u["sessionId"] == child
    ]


def _tool_results(model: Any, index: int) -> list[str]:
    """The text of each tool result the ``index``th model request carried."""
    return [
        "".join(getattr(p, "text", "") for p in r.content)
        for m in model.prompts[index].messages
        for r in m.tool_results
    ]


def _child_usage() -> dict[str, int]:
    used = CHILD_USES[0] + CHILD_USES[1]
    return {
        "totalTokens": used.total,
        "inputTokens": used.prompt,
        "outputTokens": used.output,
        "cachedReadTokens": used.cache_read,
        "cachedWriteTokens": 0,
    }


def _answering(editor: Editor, elicit: Callable[[dict[str, Any]], Any]) -> None:
    editor.elicit = elicit


async def test_a_sub_agents_question_is_asked_in_its_own_session_while_it_requires_action(
    tmp_path: Path,
) -> None:
    model = _model()
    async with editor_agent(tmp_path, model, capabilities=FORMS) as (editor, sid, _):
        _answering(editor, lambda p: {"action": "accept", "content": {"answer": "a.py"}})
        with anyio.fail_after(10):
            assert (await prompt(editor, sid, "find foo"))["stopReason"] == "end_turn"
        child = _announced(editor, sid)
        (request,) = _requests(editor, "elicitation/create")
        params = request["params"]
        validate("CreateElicitationRequest", params)
        assert params["sessionId"] == child and params["toolCallId"] == PICK
        assert params["message"] == QUESTION
        assert params["requestedSchema"]["properties"]["answer"]["enum"] == ["a.py", "b.py"]
        assert _states(editor, sid, child) == [
            {"state": "running"},
            {"state": "requires_action"},
            {"state": "running"},
            {"state": "idle", "stopReason": "end_turn", "usage": _child_usage()},
        ]
        # ``requires_action`` is told before the question is asked, ``running`` after it was answered
        order = [as_object(m) for m in editor.messages]
        waiting = next(
            i
            for i, m in enumerate(order)
            if m.get("params", {}).get("update", {}).get("state") == {"state": "requires_action"}
        )
        assert waiting < order.index(request)
        assert _tool_results(model, 2) == ["the user picked a.py"]  # the child read its answer
        assert [u["toolCallId"] for u in editor.updates(child) if u["sessionUpdate"] == "tool_call"] == [PICK]
        check_wire(editor)  # every update validated against the unstable schema
        assert editor.schema_problems(unstable=True) == []


async def test_without_forms_a_sub_agents_question_is_a_permission_request_in_its_own_session(
    tmp_path: Path,
) -> None:
    model = _model()
    async with editor_agent(tmp_path, model, capabilities=SUBAGENTS) as (editor, sid, _):
        editor.permission = lambda p: {"outcome": {"outcome": "selected", "optionId": "choice_1"}}
        with anyio.fail_after(10):
            assert (await prompt(editor, sid, "find foo"))["stopReason"] == "end_turn"
        child = _announced(editor, sid)
        (request,) = _requests(editor, "session/request_permission")
        params = request["params"]
        validate("RequestPermissionRequest", params)
        assert params["sessionId"] == child and params["toolCall"]["toolCallId"] == PICK
        assert [o["name"] for o in params["options"]] == ["a.py", "b.py", "Decline"]
        assert _states(editor, sid, child)[1:3] == [{"state": "requires_action"}, {"state": "running"}]
        assert _tool_results(model, 2) == ["the user picked b.py"]
        assert not _requests(editor, "elicitation/create")


async def test_a_client_without_subagents_is_asked_on_the_parent_session_about_the_explore_call(
    tmp_path: Path,
) -> None:
    model = _model()
    async with editor_agent(tmp_path, model, capabilities={**FILES, "elicitation": {"form": {}}}) as (
        editor,
        sid,
        _,
    ):
        _answering(editor, lambda p: {"action": "accept", "content": {"answer": "a.py"}})
        with anyio.fail_after(10):
            assert (await prompt(editor, sid, "find foo"))["stopReason"] == "end_turn"
        (request,) = _requests(editor, "elicitation/create")
        assert request["params"]["sessionId"] == sid and request["params"]["toolCallId"] == CALL
        assert not [u for u in editor.updates() if u["sessionUpdate"] == "subagent_update"]
        assert _tool_results(model, 2) == ["the user picked a.py"]


async def test_zed_is_asked_on_the_parent_session_and_gets_no_subagent_state(tmp_path: Path) -> None:
    model = _model()
    caps: dict[str, Any] = {**FILES, "elicitation": {"form": {}}}
    async with editor_agent(tmp_path, model, capabilities=caps, client_info=ZED) as (editor, sid, _):
        _answering(editor, lambda p: {"action": "accept", "content": {"answer": "b.py"}})
        with anyio.fail_after(10):
            assert (await prompt(editor, sid, "find foo"))["stopReason"] == "end_turn"
        (request,) = _requests(editor, "elicitation/create")
        assert request["params"]["sessionId"] == sid and request["params"]["toolCallId"] == CALL
        assert not [u for u in editor.updates() if u["sessionUpdate"] == "subagent_update"]
        assert _tool_results(model, 2) == ["the user picked b.py"]


async def test_cancelling_the_child_withdraws_its_open_question_once_and_the_parent_goes_on(
    tmp_path: Path,
) -> None:
    model = _model(answered=False)
    asked = anyio.Event()
    release = anyio.Event()
    async with editor_agent(tmp_path, model, capabilities=FORMS) as (editor, sid, _):
        handle = editor.handle

        async def slow(method: str, p: dict[str, Any], /) -> Any:
            if method != "elicitation/create":
                return await handle(method, p)
            asked.set()
            await release.wait()  # the user answers only after the agent gave the question up
            return {"action": "accept", "content": {"answer": "a.py"}}

        editor.handle = slow
        with anyio.fail_after(10):
            turn = await editor.send_request("session/prompt", editor.prompt_params(sid, "find foo"))
            await asked.wait()
            (request,) = _requests(editor, "elicitation/create")
            child = request["params"]["sessionId"]
            await editor.notify("session/cancel", {"sessionId": child})
            await editor.wait_for(
                lambda m: (
                    as_object(m).get("method") == "$/cancel_request"
                    and m["params"]["requestId"] == request["id"]
                )
            )
            release.set()  # the late answer is ignored
            assert (await editor.response(turn))["result"]["stopReason"] == "end_turn"
        withdrawn = [
            m
            for m in map(as_object, editor.messages)
            if m.get("method") == "$/cancel_request" and m["params"]["requestId"] == request["id"]
        ]
        assert len(withdrawn) == 1
        states = _states(editor, sid, child)
        assert states[-2]["state"] == "requires_action"
        assert states[-1]["state"] == "idle" and states[-1]["stopReason"] == "cancelled"
        assert states[-1]["usage"]["inputTokens"] == CHILD_USES[0].prompt  # what it used before it asked
        assert len(model.prompts) == 3  # the child asked its model nothing more
        (result,) = _tool_results(model, 2)
        assert "Cancelled by the user" in result  # the parent's model reads why, and goes on
        assert editor.schema_problems(unstable=True) == []


async def test_a_question_the_user_dismisses_ends_that_child_alone(tmp_path: Path) -> None:
    model = _model(answered=False)
    async with editor_agent(tmp_path, model, capabilities=FORMS) as (editor, sid, _):
        _answering(editor, lambda p: {"action": "cancel"})
        with anyio.fail_after(10):
            assert (await prompt(editor, sid, "find foo"))["stopReason"] == "end_turn"
        child = _announced(editor, sid)
        assert _states(editor, sid, child)[-1]["stopReason"] == "cancelled"
        (result,) = _tool_results(model, 2)
        assert "Cancelled by the user" in result
        assert not [m for m in map(as_object, editor.messages) if m.get("method") == "$/cancel_request"]
