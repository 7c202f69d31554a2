"""The SSE parser: framing variants and chunks split anywhere, including inside a UTF-8 character."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.providers._sse import SseEvent, SseParser

STREAM = (
    ": keep-alive\n\n"
    "event: message_start\n"
    'data: {"text":"Grüße ☕ 𝄞"}\n\n'
    'data:{"no":"space"}\n\n'
    "id: 7\nretry: 100\n"
    "data: line one\n"
    "data: line two\n\n"
    ": OPENROUTER PROCESSING\n\n"
    "data: [DONE]\n\n"
).encode()

EXPECTED = [
    SseEvent("message_start", '{"text":"Grüße ☕ 𝄞"}'),
    SseEvent("message", '{"no":"space"}'),
    SseEvent("message", "line one\nline two"),
    SseEvent("message", "[DONE]"),
]


def parse(chunks: list[bytes]) -> list[SseEvent]:
    p = SseParser()
    out: list[SseEvent] = []
    for c in chunks:
        out.extend(p.feed(c))
    out.extend(p.flush())
    return out


def test_whole_stream_parses_into_named_and_unnamed_events_without_comments() -> None:
    assert parse([STREAM]) == EXPECTED


def test_every_single_split_point_gives_the_same_events() -> None:
    for cut in range(1, len(STREAM)):
        assert parse([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_byte_by_byte_feeding_survives_multibyte_characters() -> None:
    assert parse([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


def test_crlf_line_endings_split_between_cr_and_lf_parse_the_same() -> None:
    crlf = STREAM.replace(b"\n", b"\r\n")
    assert parse([crlf]) == EXPECTED
    for cut in range(1, len(crlf)):
        assert parse([crlf[:cut], crlf[cut:]]) == EXPECTED, cut


def test_bare_cr_line_endings_parse_the_same() -> None:
    assert parse([STREAM.replace(b"\n", b"\r")]) == EXPECTED


def test_a_record_without_its_blank_line_counts_at_the_end_but_a_half_line_does_not() -> None:
    assert parse([b"data: a\n\ndata: b\n"]) == [SseEvent("message", "a"), SseEvent("message", "b")]
    assert parse([b"data: a\n\ndata: b"]) == [SseEvent("message", "a")]


def test_only_one_space_after_the_colon_is_stripped() -> None:
    assert parse([b"data:  two\n\n"]) == [SseEvent("message", " two")]


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=12))
def test_any_set_of_split_points_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert parse(chunks) == EXPECTED
