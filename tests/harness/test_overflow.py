"""CompactOnOverflow: the window an overflow message names, in each server's wording."""

from __future__ import annotations

import pytest

from harness.overflow import window_in_error


@pytest.mark.parametrize(
    ("message", "window"),
    [
        (
            "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.",
            4097,
        ),
        ("request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it", 8192),
        (
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion).",
            2048,
        ),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200000),
        ("model requires more system memory", None),
        ("litellm.ContextWindowExceededError: ... context window of 32,768 tokens", 32768),
    ],
)
def test_the_window_an_overflow_names_is_read_and_none_is_guessed(message: str, window: int | None) -> None:
    assert window_in_error(message) == window
