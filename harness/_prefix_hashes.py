"""Hashes of a conversation's prefixes (``of(msgs)[i]`` covers ``msgs[:i]``, meta left out as in message
equality): how compaction recognises the conversation a checkpoint summarised.

``PrefixHashes`` keeps the conversation it hashed last and the hash state after each of its messages. A
step's conversation is the previous step's message objects plus a few (messages are frozen), so only the
new ones are serialised and hashed: hashing the whole history at every step took about 1.5 ms a step at 200
messages, on the way from a prompt to its model request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import _Hash  # pyright: ignore[reportPrivateUsage]

    from ._messages import Message

__all__ = ["PrefixHashes"]

_SEED = b"harness.compact/1"


class PrefixHashes:
    """See the module docstring. Correct for any sequence; fast when it extends the last one."""

    def __init__(self) -> None:
        seed = hashlib.sha256(_SEED)
        self._msgs: list[Message] = []
        self._states: list[_Hash] = [seed]
        self._digests: list[str] = [seed.hexdigest()]

    def of(self, msgs: Sequence[Message]) -> list[str]:
        same = 0
        limit = min(len(msgs), len(self._msgs))
        while same < limit and msgs[same] is self._msgs[same]:
            same += 1
        del self._msgs[same:], self._states[same + 1 :], self._digests[same + 1 :]
        state = self._states[same]
        for message in msgs[same:]:
            state = state.copy()
            d = message.to_dict()
            d.pop("meta", None)
            state.update(json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
            state.update(b"\n")
            self._msgs.append(message)
            self._states.append(state)
            self._digests.append(state.hexdigest())
        return list(self._digests)
