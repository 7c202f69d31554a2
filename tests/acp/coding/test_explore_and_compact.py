"""The ``explore`` sub-agent rendered nested, and compaction (automatic and ``/compact``), through an
in-memory editor with the real coding factory and a fake model (one reply per model call, the
sub-agent's calls included, in call order)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.session._updates import PARENT_META_KEY
from harness import ToolResult, Usage
from harness.testing import Reply
from tests.acp.coding._support import calls, editor_agent, fake, final, prompt, text_of, tool_updates

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def _chunks(editor: Any, sid: str) -> str:
    return "".join(
        u["content"].get("text", "")
        for u in editor.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    )


# --- explore ---------------------------------------------------------------------------------------


async def test_explore_runs_without_asking_and_its_calls_are_nested_under_it(tmp_path: Path) -> None:
    child_text = "foo is defined in a.py, line 1. " * 20  # long enough to stream in pieces
    model = fake(
        calls(("explore", {"prompt": "Where is foo defined in this project?"})),
        calls(("read_file", {"path": "a.py"})),  # the child's; the same local id as the parent's call
        Reply(text=child_text, chunks=8),
        Reply(text="It is in a.py."),
    )
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        (project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(10):
            result = await prompt(editor, sid, "find foo")
        assert result["stopReason"] == "end_turn"
        assert editor.requests_of("session/request_permission") == []

        explore = tool_updates(editor, "call_0_explore")
        assert explore[0]["sessionUpdate"] == "tool_call" and explore[0]["kind"] == "search"
        assert any(u.get("title") == "Explore: Where is foo defined in this project?" for u in explore)
        assert all(PARENT_META_KEY not in (u.get("_meta") or {}) for u in explore)

        nested_id = "call_0_explore/call_0_read_file"
        nested = tool_updates(editor, nested_id)
        assert nested, "the child's call was not shown"
        assert nested[0]["sessionUpdate"] == "tool_call" and nested[0]["kind"] == "read"
        assert all(u["_meta"][PARENT_META_KEY] == "call_0_explore" for u in nested)
        assert any(u.get("title") == "Read a.py" for u in nested)
        assert any(u.get("status") == "in_progress" for u in nested)
        assert final(editor, nested_id)["status"] == "completed"
        assert "def foo" in text_of(final(editor, nested_id))

        # The child's text streams into the explore call, never as the agent's message.
        updates = editor.updates(sid)
        end = updates.index(final(editor, "call_0_explore"))
        streamed = [text_of(u) for u in explore if u in updates[:end] and text_of(u)]
        assert len(streamed) >= 2 and streamed[-1] == child_text
        assert all(child_text.startswith(s) for s in streamed)
        assert final(editor, "call_0_explore")["status"] == "completed"
        assert child_text.strip() in text_of(final(editor, "call_0_explore"))
        assert _chunks(editor, sid) == "It is in a.py."
        assert updates.index(nested[0]) < end

        # The child had the read-only tools only and saw only its prompt; the parent got its answer.
        child_prompt = model.prompts[1]
        assert sorted(t.name for t in child_prompt.tools) == ["glob", "grep", "list_dir", "read_file"]
        assert [m.text for m in child_prompt.messages] == ["Where is foo defined in this project?"]
        (result,) = model.prompts[3].messages[2].parts
        assert isinstance(result, ToolResult) and result.call_id == "call_0_explore"
        assert child_text.strip() in result.text

        # session/load replays the explore call and, nested under it, the child's call as they ended.
        before = len(editor.updates(sid))
        await editor.call("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        replayed = [u for u in editor.updates(sid)[before:] if u["sessionUpdate"] == "tool_call"]
        ids = [u["toolCallId"] for u in replayed]
        assert ids.index("call_0_explore") < ids.index(nested_id)
        (child,) = [u for u in replayed if u["toolCallId"] == nested_id]
        assert child["_meta"][PARENT_META_KEY] == "call_0_explore" and child["title"] == "Read a.py"


async def test_explore_is_offered_in_read_only_mode_and_runs_there(tmp_path: Path) -> None:
    model = fake(
        calls(("explore", {"prompt": "list the files"})),
        calls(("list_dir", {"path": "."})),
        Reply(text="There is a.py."),
        Reply(text="ok"),
    )
    async with editor_agent(tmp_path, model, mode="read-only") as (editor, sid, project):
        (project / "a.py").write_text("x = 1\n")
        with anyio.fail_after(10):
            await prompt(editor, sid, "what is here?")
        assert "explore" in [t.name for t in model.prompts[0].tools]
        assert final(editor, "call_0_explore")["status"] == "completed"
        assert final(editor, "call_0_explore/call_0_list_dir")["status"] == "completed"


async def test_cancelling_during_explore_closes_its_open_nested_calls_as_cancelled(tmp_path: Path) -> None:
    model = fake(
        calls(("explore", {"prompt": "look around"})),
        Reply(tool_calls=[("read_file", {"path": "a.py"}, "r1")]),
    )
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        (project / "a.py").write_text("x = 1\n")
        answer = editor.handle

        async def stuck_reads(method: str, params: dict[str, Any]) -> Any:
            if method == "fs/read_text_file":
                await anyio.sleep_forever()  # the editor never answers: the read stays in progress
            return await answer(method, params)

        editor.handle = stuck_reads
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    result = await prompt(editor, sid, "go")
                    assert result["stopReason"] == "cancelled"

                tg.start_soon(run)
                await editor.wait_for(lambda m: bool(editor.requests_of("fs/read_text_file")))
                await editor.notify("session/cancel", {"sessionId": sid})
        # Cancelled: the client marks the calls itself, so no status goes over that; the content says it.
        explore_end = tool_updates(editor, "call_0_explore")[-1]
        assert "status" not in explore_end and text_of(explore_end) == "Cancelled"
        nested = tool_updates(editor, "call_0_explore/r1")
        assert "status" not in nested[-1] and text_of(nested[-1]) == "Cancelled"
        assert all(u["_meta"][PARENT_META_KEY] == "call_0_explore" for u in nested)


# --- compaction ------------------------------------------------------------------------------------


async def test_compact_command_is_advertised_summarises_and_is_used_next(tmp_path: Path) -> None:
    model = fake(
        Reply(text="r1"),
        Reply(text="r2"),
        Reply(text="SUMMARY of one and two"),
        Reply(text="r3"),
    )
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        update = await editor.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
            )
        )
        names = [c["name"] for c in update["params"]["update"]["availableCommands"]]
        assert "compact" in names
        with anyio.fail_after(10):
            await prompt(editor, sid, "one")
            await prompt(editor, sid, "two")
            result = await prompt(editor, sid, "/compact")
        assert result["stopReason"] == "end_turn"
        summary_prompt = model.prompts[2]
        assert summary_prompt.tools == () or list(summary_prompt.tools) == []
        assert "one" in summary_prompt.messages[0].text
        # The first prompt carries the environment in front of it (the context the agent tells), so
        # how many messages the recent-tail budget keeps depends on its size: read it from the notice.
        stored = json.loads((tmp_path / "home" / "sessions" / sid / "checkpoints.json").read_text())
        covered = stored[0]["covered"]
        assert stored[0]["summary"] == "SUMMARY of one and two" and 1 <= covered <= 3
        assert f"Compacted the conversation: {covered} earlier messages summarised" in _chunks(editor, sid)

        with anyio.fail_after(10):
            await prompt(editor, sid, "three")
        sent = model.prompts[3].messages
        assert "SUMMARY of one and two" in sent[0].text
        assert "# Environment" in sent[0].text, "what the summarised prompt told is told again with it"
        assert [m.text for m in sent[1:]] == ["r1", "two", "r2", "three"][covered - 1 :]


async def test_compact_with_nothing_to_summarise_says_so(tmp_path: Path) -> None:
    async with editor_agent(tmp_path, fake()) as (editor, sid, _):
        with anyio.fail_after(10):
            await prompt(editor, sid, "/compact")
        assert _chunks(editor, sid) == "Nothing to compact: the conversation is empty."


async def test_near_the_window_the_conversation_is_compacted_and_the_user_told(tmp_path: Path) -> None:
    model = fake(
        Reply(text="first answer", usage=Usage(input=195_000, output=10)),
        Reply(text="SUMMARY of the first exchange"),
        Reply(text="second answer"),
    )
    async with editor_agent(tmp_path, model, flags={"model": "claude-test"}) as (editor, sid, _):
        with anyio.fail_after(10):
            await prompt(editor, sid, "first question")
            await prompt(editor, sid, "second question")
        text = _chunks(editor, sid)
        assert "Near the context window: compacted the conversation: 1 earlier messages summarised" in text
        assert text.endswith("second answer")
        assert "SUMMARY of the first exchange" in model.prompts[2].messages[0].text
        usage = [u for u in editor.updates(sid) if u["sessionUpdate"] == "usage_update"]
        assert usage[0]["used"] == 195_010 and usage[0]["size"] == 200_000
        assert any(u["used"] < 195_000 for u in usage[1:])
