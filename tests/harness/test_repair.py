"""Tool calls as models send them: argument slips repaired, scalars coerced, names resolved, the rest explained."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from harness import Call, Message, Result, Run, ToolCall, Tools, tool
from harness._repair import checked_input, repair_arguments, resolve_name
from harness.middleware import NextTool
from harness.model import Finish, FinishReason, ToolInput, ToolReady, ToolStart
from tests.harness.run_support import ScriptModel, all_results, drive

pytestmark = pytest.mark.anyio

seen: list[dict[str, Any]] = []


@tool
def read_file(path: str, limit: int = 10, whole: bool = False) -> str:
    seen.append({"path": path, "limit": limit, "whole": whole})
    return f"read {path} limit={limit} whole={whole}"


@tool
def list_dir(path: str = ".") -> str:
    return f"listed {path}"


def _call(name: str, raw: str) -> list[Any]:
    return [ToolStart("c1", name), ToolInput("c1", raw), ToolReady("c1"), Finish(FinishReason.TOOL_CALLS)]


async def _result(name: str, raw: str) -> tuple[str, bool]:
    seen.clear()
    run = Run(ScriptModel([_call(name, raw), [Finish(FinishReason.STOP)]]), Tools(read_file, list_dir))
    await drive(run, Message.user("go"))
    r = all_results(run.messages())["c1"]
    return r.text, r.error


@pytest.mark.parametrize(
    "raw",
    [
        '{"path": "a.py", "limit": 2,}',
        json.dumps(json.dumps({"path": "a.py", "limit": 2})),
        '```json\n{"path": "a.py", "limit": 2}\n```',
        '{"path": "a.py", "limit": 2, "whole": False}',
        "{'path': 'a.py', 'limit': 2}",
        '{"path": "a.py", "limit": "2"}',
        '{"path": "a.py", "limit": 2, "whole": "false"}',
        '{"path": "a.py", "limit": 2, "whole": null}',
        '{"file_path": "a.py", "limit": "2"}',
    ],
    ids=[
        "trailing comma",
        "double-encoded",
        "markdown fence",
        "python False",
        "single quotes",
        "integer as a string",
        "boolean as a string",
        "null for an optional field",
        "another agent's name for the field",
    ],
)
async def test_a_repairable_slip_in_the_arguments_runs_the_call_with_the_meant_values(raw: str) -> None:
    text, error = await _result("read_file", raw)
    assert not error, text
    assert seen == [{"path": "a.py", "limit": 2, "whole": False}]


@pytest.mark.parametrize("name", ["functions.read_file", "tools.read_file", "Read_File", "read-file"])
async def test_a_tool_name_with_a_prefix_another_case_or_dashes_resolves_to_the_one_tool(name: str) -> None:
    text, error = await _result(name, '{"path": "b"}')
    assert not error and text == "read b limit=10 whole=False"


async def test_a_name_no_tool_fits_is_still_unknown() -> None:
    text, error = await _result("functions.write_file", '{"path": "b"}')
    assert error and text.startswith("unknown tool 'functions.write_file'")


def test_a_name_two_tools_fit_resolves_to_neither() -> None:
    assert resolve_name("READ_FILE", ["read_file", "Read-File"]) is None
    assert resolve_name("functions.list_dir", ["read_file", "list_dir"]) == "list_dir"


async def test_a_value_no_repair_fits_quotes_the_field_the_type_and_the_schema() -> None:
    text, error = await _result("read_file", '{"path": "a.py", "limit": "ten"}')
    assert error
    assert text.startswith("read_file: invalid input at limit: ")
    assert "'limit' was \"ten\"; it must be integer" in text
    assert '"limit": {' in text and '"required": ["path"]' in text


async def test_arguments_beyond_repair_stay_an_invalid_input_result() -> None:
    text, error = await _result("read_file", '{"path": "a.py", "limit": ')
    assert error and text.startswith("read_file: invalid input: the arguments are not valid JSON")


def test_repairs_are_named_and_text_inside_strings_is_left_alone() -> None:
    r = repair_arguments('{"text": "a, } True None", "n": None,}')
    assert r.value == {"text": "a, } True None", "n": None}
    assert r.repairs == ["Python's None read as null", "a trailing comma dropped"]


def test_a_json_string_that_is_not_an_object_is_not_repaired_into_one() -> None:
    assert repair_arguments('"just text"').value is None
    assert repair_arguments("[1, 2]").value is None
    assert repair_arguments("__import__('os')").value is None


async def test_a_missing_required_field_is_named_with_its_type() -> None:
    text, error = await _result("read_file", '{"limit": 2}')
    assert error and text.startswith("read_file: invalid input at path: 'path' is a required property")
    assert "'path' is required and must be string" in text and '"required": ["path"]' in text


async def test_another_name_stands_for_a_field_only_when_it_is_the_one_sent_and_the_tool_has_none_by_it() -> (
    None
):
    text, error = await _result("read_file", '{"file_path": "a.py", "filename": "b.py"}')
    assert error and "'path' is a required property" in text  # two candidates: no guess
    text, error = await _result("read_file", '{"path": "a.py", "file_path": "b.py"}')
    assert error and seen == []  # the field is there: the other name is an unknown field, not a rename


async def test_the_first_call_imports_the_schema_engine_in_a_worker_thread_not_on_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """jsonschema's import takes tens of milliseconds: on the event loop it would stall every stream and
    cancel of the process at its first tool call."""
    import harness._step_tools as step_tools
    import harness._validate as validate

    monkeypatch.setattr(validate, "_engine", [])
    on_loop: list[bool] = []
    load = validate.load_validation

    def recording() -> None:
        on_loop.append(threading.current_thread() is threading.main_thread())
        load()

    monkeypatch.setattr(step_tools, "load_validation", recording)
    assert await _result("read_file", '{"path": "a.py", "limit": "2"}') == (
        "read a.py limit=2 whole=False",
        False,
    )
    assert on_loop == [False] and validate.validation_loaded()
    assert await _result("read_file", '{"path": "b.py"}') == ("read b.py limit=10 whole=False", False)
    assert on_loop == [False]  # loaded once: no hop for the calls after


SHELL = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1},
        "cwd": {"type": "string"},
        "timeout_s": {"type": "number", "exclusiveMinimum": 0},
    },
    "required": ["command"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("sent", "meant"),
    [
        ({"command": ["bash", "-lc", "ls -la | head"]}, {"command": "ls -la | head"}),
        ({"command": ["/bin/sh", "-c", "echo hi"]}, {"command": "echo hi"}),
        ({"command": ["grep", "-rn", "two words", "src"]}, {"command": "grep -rn 'two words' src"}),
        (
            {"command": ["pytest", "-q"], "workdir": "/p/sub", "timeout_ms": 120000},
            {"command": "pytest -q", "cwd": "/p/sub", "timeout_s": 120.0},
        ),
    ],
    ids=["bash -lc", "sh -c", "argv quoted", "workdir and timeout_ms"],
)
def test_a_shell_call_as_codex_sends_it_is_read_as_the_command_line_it_means(
    sent: dict[str, Any], meant: dict[str, Any]
) -> None:
    call, problem = checked_input(ToolCall("c", "shell", sent), SHELL)
    assert problem is None and call.input == meant


def test_an_argument_list_with_a_non_string_is_not_guessed_at() -> None:
    _, problem = checked_input(ToolCall("c", "shell", {"command": ["ls", 3]}), SHELL)
    assert problem is not None and "command" in problem


@tool
def shell(command: str) -> str:
    return f"ran {command}"


async def test_the_tool_middleware_where_the_policy_sits_sees_the_command_line_that_runs() -> None:
    judged: list[Any] = []

    class Judge:
        async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
            judged.append(call.input["command"])
            return await next(call, context)

    raw = json.dumps({"command": ["bash", "-lc", "rm -rf build"]})
    model = ScriptModel([_call("shell", raw), [Finish(FinishReason.STOP)]])
    run = Run(model, Tools(shell), middleware=[Judge()])
    await drive(run, Message.user("go"))
    assert judged == ["rm -rf build"]
    assert all_results(run.messages())["c1"].text == "ran rm -rf build"
