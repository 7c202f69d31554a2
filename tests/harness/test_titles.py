"""``harness.titles``: one short title request, its answer cleaned; a failure is None; the test fake answers
it apart from its scripted replies."""

from __future__ import annotations

import pytest

from harness import ErrorKind
from harness.testing import FakeModel, Reply
from harness.titles import TITLE_SYSTEM, ask_title, clean_title

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("answer", "title"),
    [
        ('"Fixing the parser bug."\nmore text', "Fixing the parser bug"),
        ("\n\nTitle: **Tabs in the parser**", "Tabs in the parser"),
        ("\u201cR\u00e9parer l'analyseur\u201d", "R\u00e9parer l'analyseur"),
        ("   \n  ", None),
        ("", None),
        ("word " * 40, ("word " * 40)[:79].rstrip() + "\u2026"),
    ],
)
def test_a_models_answer_becomes_a_short_clean_title(answer: str, title: str | None) -> None:
    assert clean_title(answer) == title


async def test_the_title_request_has_no_tools_and_an_excerpt_of_the_exchange() -> None:
    model = FakeModel([], title=Reply(text="Parser tabs"))
    assert await ask_title(model, "fix the parser " + "x" * 5000, "Fixed.") == "Parser tabs"
    (prompt,) = model.title_prompts
    assert prompt.system == TITLE_SYSTEM and prompt.tools == ()
    text = prompt.messages[0].text
    assert text.startswith("User: fix the parser") and text.endswith("Assistant: Fixed.") and len(text) < 2100


async def test_a_failed_title_request_is_none_and_the_scripted_replies_are_left_alone() -> None:
    failing = FakeModel([Reply(text="a turn's reply")], title=Reply(error=ErrorKind.RATE_LIMITED))
    assert await ask_title(failing, "hello", "hi") is None
    assert failing.calls == 0 and failing.prompts == [] and len(failing.title_prompts) == 1
    assert await ask_title(FakeModel([]), "hello", "hi") is None  # the fake's default: an empty answer
