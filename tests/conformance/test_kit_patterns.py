"""The pattern language's corners: where a mismatch is reported, lists and specials on values of the wrong
shape, paths into captured values."""

from __future__ import annotations

from typing import Any

import pytest

from acp_conformance.patterns import get_path, mismatch, set_path, short, substitute


@pytest.mark.parametrize(
    ("pattern", "value", "where"),
    [
        (
            {"result": {"stopReason": "end_turn"}},
            {"result": {"stopReason": "cancelled"}},
            "$.result.stopReason",
        ),
        ({"result": {"sessionId": "<nonempty>"}}, {"result": {"sessionId": ""}}, "$.result.sessionId"),
        ({"error": "<absent>"}, {"error": {"code": 1}}, "$.error: expected absent"),
        ({"error": {"code": -32601}}, {"result": {}}, "$.error: missing"),
        ({"result": "<object>"}, {"result": []}, "$.result: expected <object>"),
        ({"params": {"a": 1}}, {"params": [1]}, "$.params: expected an object"),
        ([1, {"b": 2}], [1, {"b": 3}], "$[1].b"),
        ([1], "1", "$: expected a list of 1"),
        ({"$any": 1}, {"not": "a list"}, "$: expected a list"),
        ({"$none": 1}, "x", "$: expected a list"),
        ({"$contains": "x"}, 5, "expected a string containing 'x'"),
        ({"$oneOf": [1, 2]}, 3, "$: expected 1, got 3 / $: expected 2, got 3"),
        ({"$not": {"code": 1}}, {"code": 1, "more": True}, "expected anything but"),
        ("<null>", 0, "$: expected <null>"),
        (True, 1, "$: expected true, got 1"),
        ("a", "b", '$: expected "a", got "b"'),
    ],
)
def test_a_mismatch_says_where_and_what_was_expected(pattern: Any, value: Any, where: str) -> None:
    problem = mismatch(pattern, value)
    assert problem is not None and where in problem


@pytest.mark.parametrize(
    ("pattern", "value"),
    [
        ("<number>", 1.5),
        ("<bool>", False),
        ("<array>", []),
        ("<null>", None),
        ({"$none": {"id": 1}}, []),
        ({"$contains": "WORLD"}, "hello world"),
        ({"$not": "<string>"}, 5),
        ({"one-key": 1}, {"one-key": 1, "other": 2}),  # a one-key object that is not a special
        ({"$text": "Needle"}, {"deep": {"list": ["a needle here"]}}),
    ],
)
def test_a_value_that_fits_the_pattern_matches(pattern: Any, value: Any) -> None:
    assert mismatch(pattern, value) is None


def test_substitution_reaches_into_lists_and_leaves_unknown_variables() -> None:
    value = {"a": ["${X}", "x=${X} y=${Y}"], "b": 3}
    assert substitute(value, {"X": [1]}) == {"a": [[1], "x=[1] y=${Y}"], "b": 3}


def test_get_path_walks_objects_and_list_indexes_and_raises_when_absent() -> None:
    value = {"result": {"sessions": [{"id": "a"}, {"id": "b"}]}}
    assert get_path(value, "result.sessions.1.id") == "b"
    assert get_path(value, "") is value
    with pytest.raises(KeyError):
        get_path(value, "result.missing")
    with pytest.raises(IndexError):
        get_path(value, "result.sessions.2")
    with pytest.raises(KeyError):
        get_path(value, "result.sessions.0.id.deeper")


def test_set_path_replaces_a_member_or_a_list_element() -> None:
    value: dict[str, Any] = {"params": {"prompt": [{"text": ""}, "x"]}}
    set_path(value, "params.prompt.0.text", "padded")
    set_path(value, "params.prompt.1", "y")
    assert value == {"params": {"prompt": [{"text": "padded"}, "y"]}}


def test_short_cuts_long_values_and_shows_bytes() -> None:
    assert short("x" * 400).endswith("…") and len(short("x" * 400)) == 301
    assert short(b"\xff") == "b'\\xff'"
