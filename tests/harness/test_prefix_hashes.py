"""Compaction's prefix hashes: kept between steps, they hash only the new messages and still equal a fresh
computation whatever the next conversation is (longer, shorter, changed in the middle)."""

from __future__ import annotations

from harness import Message
from harness._prefix_hashes import PrefixHashes


def _fresh(msgs: list[Message]) -> list[str]:
    return PrefixHashes().of(msgs)


def test_a_conversation_that_grows_is_hashed_as_a_fresh_computation_would() -> None:
    hashes = PrefixHashes()
    msgs = [Message.user("one"), Message.assistant("two")]
    assert hashes.of(msgs) == _fresh(msgs)
    msgs += [Message.user("three")]
    assert hashes.of(msgs) == _fresh(msgs)
    assert len(set(hashes.of(msgs))) == 4  # the empty prefix and one per message


def test_a_shorter_or_changed_conversation_drops_what_no_longer_matches() -> None:
    hashes = PrefixHashes()
    msgs = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    full = hashes.of(msgs)
    assert hashes.of(msgs[:1]) == full[:2]
    changed = [msgs[0], Message.assistant("B"), msgs[2]]
    assert hashes.of(changed) == _fresh(changed)
    assert hashes.of(changed)[:2] == full[:2] and hashes.of(changed)[2] != full[2]
    assert hashes.of(msgs) == full


def test_an_equal_message_that_is_another_object_hashes_the_same_and_meta_is_left_out() -> None:
    first = [Message.user("same")]
    again = [Message(first[0].role, first[0].parts, meta={"shown": True})]
    hashes = PrefixHashes()
    assert hashes.of(first) == hashes.of(again) == _fresh(first)


def test_the_hashes_are_the_ones_checkpoints_saved_before_were_keyed_by() -> None:
    # A golden: compaction checkpoints on disk are keyed by these hashes (the format since harness.compact/1).
    msgs = [Message.user("one"), Message.assistant("two")]
    assert PrefixHashes().of(msgs)[2] == "bbdc6f33eb7326b0fb6972e6996a18f1e496443f70962a0272d8a459295ac0d8"
