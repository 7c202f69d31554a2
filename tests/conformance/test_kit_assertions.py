"""The ``check`` step on its own: assertions over collected messages (counts, each/none, order, the joined text
of updates, the tool-call lifecycle, absolute paths)."""

from __future__ import annotations

from typing import Any

from acp_conformance.assertions import check_collected, joined_text


def _update(update: dict[str, Any], session: str = "s") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}


def _chunk(text: str) -> dict[str, Any]:
    return _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def _call(call_id: str, status: str | None = None, **more: Any) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "tool_call", "toolCallId": call_id, **more}
    if status is not None:
        update["status"] = status
    return _update(update)


def _call_update(call_id: str, status: str | None = None, **more: Any) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, **more}
    if status is not None:
        update["status"] = status
    return _update(update)


def test_min_and_max_bound_how_many_messages_were_collected() -> None:
    items = [_chunk("a"), _chunk("b")]
    assert check_collected({"min": 2, "max": 2}, items, {}) is None
    too_few = check_collected({"min": 3}, items, {})
    assert too_few is not None and "at least 3" in too_few
    too_many = check_collected({"max": 1}, items, {})
    assert too_many is not None and "at most 1" in too_many


def test_each_names_the_first_message_that_misses_and_none_the_first_that_matches() -> None:
    items = [_chunk("a"), _call("c1", "pending")]
    assert check_collected({"each": {"method": "session/update"}}, items, {}) is None
    each = check_collected(
        {"each": {"params": {"update": {"sessionUpdate": "agent_message_chunk"}}}}, items, {}
    )
    assert each is not None and "tool_call" in each and "$.params.update.sessionUpdate" in each
    none = check_collected({"none": {"params": {"update": {"toolCallId": "c1"}}}}, items, {})
    assert none is not None and none.startswith("unexpected")
    assert check_collected({"none": {"params": {"sessionId": "other"}}}, items, {}) is None


def test_patterns_of_a_check_see_the_captured_variables() -> None:
    items = [_update({"sessionUpdate": "plan", "entries": []}, session="sess-7")]
    assert check_collected({"each": {"params": {"sessionId": "${S}"}}}, items, {"S": "sess-7"}) is None
    assert check_collected({"each": {"params": {"sessionId": "${S}"}}}, items, {"S": "sess-8"}) is not None


def test_contains_in_order_finds_the_patterns_in_sequence_with_others_between() -> None:
    items = [_chunk("a"), _call("c1", "pending"), _chunk("b"), _call_update("c1", "completed")]
    in_order = [{"params": {"update": {"toolCallId": "c1", "status": s}}} for s in ("pending", "completed")]
    assert check_collected({"contains_in_order": in_order}, items, {}) is None
    reversed_order = check_collected({"contains_in_order": in_order[::-1]}, items, {})
    assert reversed_order is not None and "(in order)" in reversed_order and '"pending"' in reversed_order


def test_joined_text_concatenates_the_matching_updates_and_ignores_other_shapes() -> None:
    items: list[Any] = [
        _chunk("Hel"),
        _update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
        _chunk("lo"),
        _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "..."}}),
        {"jsonrpc": "2.0", "method": "session/update", "params": ["not", "an", "object"]},
        "not a message",
    ]
    assert joined_text(items, {"sessionUpdate": "agent_message_chunk"}) == "Hello"
    joined = {"update": {"sessionUpdate": "agent_message_chunk"}, "contains": "Hello"}
    assert check_collected({"joined": joined}, items, {}) is None
    missing = check_collected({"joined": {**joined, "contains": "Goodbye"}}, items, {})
    assert missing is not None and "'Goodbye'" in missing and '"Hello"' in missing


def test_a_tool_call_update_before_its_announcement_fails_an_announced_check() -> None:
    early = [_call_update("c1", "in_progress"), _call("c1", "pending")]
    problem = check_collected({"announced": True}, early, {})
    assert problem is not None and "before any tool_call announced it" in problem
    assert check_collected({"announced": True}, [_chunk("no tools")], {}) == "no tool_call update in the turn"
    assert check_collected({"announced": True}, [_call("c1"), _call_update("c1", "completed")], {}) is None


def test_final_status_takes_the_last_status_of_every_call() -> None:
    items = [
        _call("c1"),
        _call("c2", "in_progress"),
        _call_update("c1", "completed"),
        _call_update("c2"),  # no status: c2 keeps in_progress
    ]
    wrong = check_collected({"final_status": "completed"}, items, {})
    assert wrong is not None and "'c2': 'in_progress'" in wrong
    assert check_collected({"final_status": ["completed", "in_progress"]}, items, {}) is None
    none = check_collected({"final_status": "completed"}, [_chunk("x")], {})
    assert none is not None and "no tool calls" in none


def test_absolute_paths_refuses_a_relative_location_or_diff_path() -> None:
    good = [
        _call("c1", locations=[{"path": "/p/a.txt"}], content=[{"type": "diff", "path": "/p/a.txt"}]),
        _chunk("text content is a dict, not a list of blocks"),
    ]
    assert check_collected({"absolute_paths": True}, good, {}) is None
    location = [_call("c1", locations=[{"path": "a.txt"}, "not an object"])]
    problem = check_collected({"absolute_paths": True}, location, {})
    assert problem is not None and "a relative path 'a.txt'" in problem
    diff = [_call_update("c1", content=[{"type": "content"}, {"type": "diff", "path": "src/b.py"}])]
    problem = check_collected({"absolute_paths": True}, diff, {})
    assert problem is not None and "'src/b.py'" in problem
