"""A corpus of replies as real models send them, through the real agent process: the outcome on disk and
what reaches the model in the next request."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Recorded, Reply
from tests.providers._robust_support import (
    anthropic_call,
    anthropic_text,
    chat_call,
    chat_text,
    posts,
    robust_agent,
    sent_tool_results,
)

pytestmark = pytest.mark.anyio

PY = "class A:\n    def f(self):\n        if ready:\n            return 1\n        return 2\n"


async def _one_call(tmp_path: Path, call: bytes, *, provider: str = "openai") -> tuple[list[str], str]:
    """Run a prompt whose reply is ``call`` then "Done."; the tool results the model got next, and the
    text the user saw."""
    done = chat_text("Done.") if provider == "openai" else anthropic_text("Done.")
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    with FakeServer() as server:
        server.route("POST", path, Reply.sse(call, every=37), Reply.sse(done))
        async with robust_agent(tmp_path, server, provider=provider) as agent:
            (agent.project / "a.py").write_text(PY)
            with anyio.fail_after(30):
                answer = await agent.prompt("Fix it.")
            assert answer["result"]["stopReason"] == "end_turn", answer
            bodies = posts(server)
            assert len(bodies) == 2
            return sent_tool_results(bodies[1]), agent.text()


@pytest.mark.process
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_edit_whose_indentation_drifted_is_applied_reindented_and_reported(
    tmp_path: Path, provider: str
) -> None:
    args = json.dumps(
        {
            "path": "a.py",
            "old_text": "  if ready:\n    return 1\n",
            "new_text": "  if ready:\n    return 10\n",
        }
    )
    call = chat_call("edit_file", args) if provider == "openai" else anthropic_call("edit_file", args)
    results, _ = await _one_call(tmp_path, call, provider=provider)
    assert (tmp_path / "project" / "a.py").read_text() == PY.replace("return 1\n", "return 10\n")
    assert "ignoring indentation" in results[0] and "at line 3" in results[0]


@pytest.mark.process
async def test_an_edit_with_curly_quotes_for_straight_ones_is_applied_with_the_files_quotes(
    tmp_path: Path,
) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "s.py").write_text('msg = "it\'s"\n')
    args = json.dumps(
        {
            "path": "s.py",
            "old_text": "msg = \u201cit\u2019s\u201d\n",
            "new_text": "msg = \u201cit\u2019s ok\u201d\n",
        }
    )
    results, _ = await _one_call(tmp_path, chat_call("edit_file", args))
    assert (tmp_path / "project" / "s.py").read_text() == 'msg = "it\'s ok"\n'
    assert "ignoring unicode punctuation" in results[0]


@pytest.mark.process
async def test_an_edit_matching_two_places_loosely_is_refused_with_their_lines(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    body = "def a():\n    pass\n\ndef b():\n    pass\n"
    (tmp_path / "project" / "d.py").write_text(body)
    args = json.dumps({"path": "d.py", "old_text": "  pass  \n", "new_text": "  return\n"})
    results, _ = await _one_call(tmp_path, chat_call("edit_file", args))
    assert (tmp_path / "project" / "d.py").read_text() == body
    assert "lines 2, 5" in results[0] and "more surrounding lines" in results[0]


@pytest.mark.process
async def test_an_edit_found_nowhere_shows_the_nearest_lines_and_the_next_call_copying_them_applies(
    tmp_path: Path,
) -> None:
    wrong = {"path": "a.py", "old_text": "        if is_ready:\n            return 1\n", "new_text": "x\n"}
    right = {
        "path": "a.py",
        "old_text": "        if ready:\n            return 1\n",
        "new_text": "        if ready:\n            return 10\n",
    }
    with FakeServer() as server:
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_call("edit_file", json.dumps(wrong))),
            Reply.sse(chat_call("edit_file", json.dumps(right))),
            Reply.sse(chat_text("Done.")),
        )
        async with robust_agent(tmp_path, server) as agent:
            (agent.project / "a.py").write_text(PY)
            with anyio.fail_after(30):
                answer = await agent.prompt("Fix it.")
            assert answer["result"]["stopReason"] == "end_turn", answer
            failed = sent_tool_results(posts(server)[1])[-1]
            assert "the nearest text is at lines 3-4" in failed
            assert "     3\t        if ready:\n     4\t            return 1" in failed
            assert (agent.project / "a.py").read_text() == PY.replace("return 1\n", "return 10\n")


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("read_file", '{"path": "a.py", "limit": 2,}'),
        ("read_file", json.dumps(json.dumps({"path": "a.py", "limit": 2}))),
        ("functions.read_file", '{"path": "a.py", "limit": "2"}'),
        ("Read-File", "```json\n{'path': 'a.py', 'limit': 2}\n```"),
    ],
    ids=["trailing comma", "double-encoded", "prefixed name and string integer", "fence, quotes, case"],
)
@pytest.mark.process
async def test_arguments_and_names_as_models_send_them_run_the_call(
    tmp_path: Path, name: str, raw: str
) -> None:
    results, _ = await _one_call(tmp_path, chat_call(name, raw))
    assert "class A:" in results[0] and "def f(self):" in results[0]
    assert "if ready" not in results[0], "limit 2 reached the tool as an integer"


@pytest.mark.process
async def test_an_argument_beyond_repair_tells_the_model_the_field_the_type_and_the_schema(
    tmp_path: Path,
) -> None:
    results, _ = await _one_call(tmp_path, chat_call("read_file", '{"path": "a.py", "limit": "all"}'))
    assert "invalid input at limit" in results[0]
    assert "'limit' was \"all\"; it must be integer" in results[0]
    assert '"properties"' in results[0]


DIALECTS = {
    "hermes": 'Reading it.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',
    "mistral": '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a.py"}}]',
    "llama3": '{"name": "read_file", "parameters": {"path": "a.py"}}',
    "deepseek": (
        "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>function"
        '<\uff5ctool\u2581sep\uff5c>read_file\n```json\n{"path": "a.py"}\n```'
        "<\uff5ctool\u2581call\u2581end\uff5c><\uff5ctool\u2581calls\u2581end\uff5c>"
    ),
}


@pytest.mark.process
@pytest.mark.parametrize("dialect", list(DIALECTS))
async def test_a_tool_call_written_as_text_runs_and_the_user_is_told_how_to_turn_the_parser_on(
    tmp_path: Path, dialect: str
) -> None:
    with FakeServer() as server:
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text(DIALECTS[dialect], pieces=7), every=29),
            Reply.sse(chat_text("Done.")),
        )
        async with robust_agent(tmp_path, server) as agent:
            (agent.project / "a.py").write_text(PY)
            with anyio.fail_after(30):
                answer = await agent.prompt("Read a.py.")
            assert answer["result"]["stopReason"] == "end_turn"
            second = posts(server)[1]
            [assistant] = [m for m in second["messages"] if m["role"] == "assistant"]
            assert assistant["tool_calls"][0]["function"]["name"] == "read_file"
            assert "tool_call" not in (assistant.get("content") or "") and "TOOL_CALLS" not in (
                assistant.get("content") or ""
            )
            assert "class A:" in sent_tool_results(second)[0]
            text = agent.text()
            assert "not parsing tool calls" in text and "--jinja" in text and "--tool-call-parser" in text
            assert "<tool_call>" not in text and "[TOOL_CALLS]" not in text
            assert [u for u in agent.updates("tool_call") if u["title"]], "the editor sees the call"
            assert "wrote 1 tool call(s) as text" in agent.stderr()


@pytest.mark.parametrize(
    "reply",
    [
        'Servers that lack a parser show calls like this:\n```\n<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>\n```\nThat is all.',
        '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
        '{"name": "Ada", "age": 36}',
    ],
    ids=["inside a code fence", "an unknown tool", "a JSON answer"],
)
@pytest.mark.process
async def test_a_look_alike_of_a_text_call_stays_text(tmp_path: Path, reply: str) -> None:
    with FakeServer() as server:
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text(reply, pieces=5), every=31))
        async with robust_agent(tmp_path, server) as agent:
            with anyio.fail_after(30):
                answer = await agent.prompt("Explain.")
            assert answer["result"]["stopReason"] == "end_turn"
            assert len(posts(server)) == 1, "nothing ran"
            assert agent.text().strip() == reply.strip()
            assert agent.updates("tool_call") == []


LLAMA_CPP_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 13392,
        "n_ctx": 8192,
    }
}


@pytest.mark.process
async def test_a_context_overflow_compacts_once_and_the_step_is_sent_again(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text("Hello.")),
            Reply.json(400, LLAMA_CPP_OVERFLOW),
            Reply.sse(chat_text("The user greeted the assistant.")),
            Reply.sse(chat_text("Done.")),
        )
        async with robust_agent(tmp_path, server) as agent:
            with anyio.fail_after(30):
                assert (await agent.prompt("Hi."))["result"]["stopReason"] == "end_turn"
                answer = await agent.prompt("Now the big task.")
            assert answer["result"]["stopReason"] == "end_turn", answer
            bodies = posts(server)
            assert len(bodies) == 4
            summary_request, retried = bodies[2], bodies[3]
            assert "tools" not in summary_request and "Hi." in json.dumps(summary_request["messages"])
            sent = json.dumps(retried["messages"])
            assert "The user greeted the assistant." in sent and "Now the big task." in sent
            assert "Done." in agent.text()


@pytest.mark.process
async def test_a_second_overflow_ends_the_turn_with_the_error_and_what_to_do(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.route("POST", "/v1/chat/completions", Reply.json(400, LLAMA_CPP_OVERFLOW))
        async with robust_agent(tmp_path, server) as agent:
            with anyio.fail_after(30):
                answer = await agent.prompt("Too big.")
            message = answer["error"]["message"]
            assert "exceeds the available context size" in message and "What to do" in message
            assert answer["error"]["data"]["errorKind"] == "context_too_long"
            assert len(posts(server)) == 2, "one retry, no more"


@pytest.mark.process
async def test_a_call_cut_by_the_output_limit_is_not_run_and_the_model_is_told(tmp_path: Path) -> None:
    cut = chat_call("write_file", '{"path": "big.txt", "content": "line one\\nline tw', finish="length")
    results, _ = await _one_call(tmp_path, cut)
    assert not (tmp_path / "project" / "big.txt").exists()
    assert "not run" in results[0] and "output limit" in results[0] and "smaller pieces" in results[0]


@pytest.mark.process
async def test_a_model_repeating_a_failing_edit_is_told_once_then_stopped_for_the_user(
    tmp_path: Path,
) -> None:
    args = json.dumps({"path": "a.py", "old_text": "return 99\n", "new_text": "return 100\n"})
    with FakeServer() as server:
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_call("edit_file", args)))
        async with robust_agent(tmp_path, server) as agent:
            (agent.project / "a.py").write_text(PY)
            with anyio.fail_after(60):
                answer = await agent.prompt("Fix it.")
            assert answer["result"]["stopReason"] == "max_turn_requests", answer
            bodies = posts(server)
            assert len(bodies) == 4, "three failures, then the repeat that is not run ends the turn"
            third = sent_tool_results(bodies[3])[-1]
            assert "failed 3 times in a row" in third
            assert sum("[Note" in r for r in sent_tool_results(bodies[3])) == 1, "told once"
            assert "Stopped: the model sent edit_file" in agent.text() and "go on" in agent.text()
            assert (agent.project / "a.py").read_text() == PY


@pytest.mark.process
async def test_a_two_megabyte_output_is_cut_and_the_model_reads_its_middle_back_through_the_file(
    tmp_path: Path,
) -> None:
    kept: list[str] = []

    def read_the_middle(request: Recorded) -> Reply:
        result = sent_tool_results(request.json)[-1]
        m = re.search(r"characters\) is in (\S+\.txt)", result)
        assert m is not None, result[-3000:]
        kept.append(m.group(1))
        args = json.dumps({"path": m.group(1), "offset": 200000, "limit": 3})
        return Reply.sse(chat_call("read_file", args, "call_2"))

    with FakeServer() as server:
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_call("shell", json.dumps({"command": "seq 1 300000"}))),
            read_the_middle,
            Reply.sse(chat_text("Line 200000 is 200000.")),
        )
        async with robust_agent(tmp_path, server) as agent:
            with anyio.fail_after(60):
                answer = await agent.prompt("Count.")
            assert answer["result"]["stopReason"] == "end_turn", answer
            bodies = posts(server)
            assert len(bodies) == 3
            first = sent_tool_results(bodies[1])[-1]
            assert len(first) < 40_000 and first.startswith("1\n2\n3\n") and "300000" in first
            spilled = Path(kept[0])
            assert spilled.is_relative_to(tmp_path / "home" / "sessions" / agent.session)
            whole = await anyio.Path(spilled).read_text()
            assert whole.splitlines() == [str(i) for i in range(1, 300001)]
            middle = sent_tool_results(bodies[2])[-1]
            assert middle.startswith("200000\t200000\n200001\t200001\n200002\t200002\n")
            asked = [m for m in agent.client.messages if m.get("method") == "session/request_permission"]
            assert all("outputs" not in json.dumps(m) for m in asked), "reading the kept output asks nothing"


@pytest.mark.parametrize(
    ("before", "old", "new", "after", "level"),
    [
        (
            b"\xef\xbb\xbfone\r\ntwo\r\nthree",
            "one\r\ntwo\n",
            "one\nTWO\n",
            b"\xef\xbb\xbfone\r\nTWO\r\nthree",
            "line endings",
        ),
        (b"a = 1\nb = 2\n", "a = 1   \nb = 2 \n", "a = 1\nb = 3\n", b"a = 1\nb = 3\n", "trailing whitespace"),
    ],
    ids=["crlf, bom and no final newline kept", "trailing whitespace"],
)
@pytest.mark.process
async def test_each_looseness_level_is_applied_and_reported_through_the_agent(
    tmp_path: Path, before: bytes, old: str, new: str, after: bytes, level: str
) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "f.txt").write_bytes(before)
    results, _ = await _one_call(
        tmp_path, chat_call("edit_file", json.dumps({"path": "f.txt", "old_text": old, "new_text": new}))
    )
    assert (tmp_path / "project" / "f.txt").read_bytes() == after
    assert f"ignoring {level}" in results[0]


@pytest.mark.process
async def test_an_edit_whose_arguments_came_escaped_twice_is_applied_and_the_model_told_to_send_plain_text(
    tmp_path: Path,
) -> None:
    # The decoded arguments still hold the two characters \n where the model meant line breaks.
    args = {
        "path": "a.py",
        "old_text": "        if ready:\\n            return 1",
        "new_text": "        if ready:\\n            return 10",
    }
    results, _ = await _one_call(tmp_path, chat_call("edit_file", json.dumps(args)))
    assert (tmp_path / "project" / "a.py").read_text() == PY.replace("return 1\n", "return 10\n")
    assert "escaped twice" in results[0] and "send plain text" in results[0]


@pytest.mark.process
async def test_apply_patch_seeks_drifted_context_through_the_agent(tmp_path: Path) -> None:
    patch = "--- a/a.py\n+++ b/a.py\n@@ -3,2 +3,2 @@\n   if ready:\n-    return 1\n+    return 11\n"
    results, _ = await _one_call(tmp_path, chat_call("apply_patch", json.dumps({"patch": patch})))
    assert (tmp_path / "project" / "a.py").read_text() == PY.replace("return 1\n", "return 11\n")
    assert "matched at line 3 ignoring indentation" in results[0]


@pytest.mark.process
async def test_apply_patch_in_the_begin_patch_format_gpt_models_write_applies_through_the_agent(
    tmp_path: Path,
) -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@ def f(self):\n-            return 1\n+            return 12\n*** Add File: b.py\n+B = 1\n*** End Patch"
    results, _ = await _one_call(tmp_path, chat_call("apply_patch", json.dumps({"patch": patch})))
    assert (tmp_path / "project" / "a.py").read_text() == PY.replace("return 1\n", "return 12\n")
    assert (tmp_path / "project" / "b.py").read_text() == "B = 1\n"
    assert results[0].startswith("Patched 2 files")


@pytest.mark.process
async def test_an_edit_with_claude_codes_field_names_applies_through_the_agent(tmp_path: Path) -> None:
    args = {"file_path": "a.py", "old_string": "return 2\n", "new_string": "return 20\n"}
    results, _ = await _one_call(
        tmp_path, anthropic_call("edit_file", json.dumps(args)), provider="anthropic"
    )
    assert (tmp_path / "project" / "a.py").read_text() == PY.replace("return 2\n", "return 20\n")
    assert results[0].startswith("Edited a.py")


@pytest.mark.process
async def test_a_shell_call_as_codex_sends_it_runs_its_command_line_through_the_agent(tmp_path: Path) -> None:
    args = {
        "command": ["bash", "-lc", "echo codex-$((6 * 7)) > out.txt"],
        "workdir": ".",
        "timeout_ms": 20000,
    }
    results, _ = await _one_call(tmp_path, chat_call("shell", json.dumps(args)))
    assert (tmp_path / "project" / "out.txt").read_text() == "codex-42\n", results


@pytest.mark.process
async def test_anthropic_input_json_with_slips_is_repaired_through_the_agent(tmp_path: Path) -> None:
    results, _ = await _one_call(
        tmp_path, anthropic_call("read_file", '{"path": "a.py", "limit": "2",}'), provider="anthropic"
    )
    assert "class A:" in results[0] and "if ready" not in results[0]
