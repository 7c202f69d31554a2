"""``conforms(obj, proto)``: ``isinstance`` against a runtime-checkable protocol, without its cost.

On Python 3.11 ``isinstance`` against a ``runtime_checkable`` protocol collects the protocol's members
anew on every call (about 15 µs); a session's set-up checks each of its tools and middleware that way.
``conforms`` collects them once per protocol and makes the same test: a subclass conforms; otherwise every
method must be there and not None, every annotated attribute there.
"""

from __future__ import annotations

from typing import TypeVar

from typing_extensions import TypeIs

__all__ = ["conforms"]

_T = TypeVar("_T")
_MEMBERS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _members(proto: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The protocol's (methods, attributes), its protocol bases' included."""
    known = _MEMBERS.get(proto)
    if known is None:
        methods: set[str] = set()
        attributes: set[str] = set()
        for base in proto.__mro__:
            if base is object or not getattr(base, "_is_protocol", False):
                continue
            methods.update(n for n in vars(base) if not n.startswith("_"))
            attributes.update(n for n in getattr(base, "__annotations__", {}) if not n.startswith("_"))
        known = _MEMBERS[proto] = (tuple(sorted(methods - attributes)), tuple(sorted(attributes)))
    return known


def conforms(obj: object, proto: type[_T]) -> TypeIs[_T]:
    """What ``isinstance(obj, proto)`` says for a runtime-checkable protocol ``proto``."""
    if proto in type(obj).__mro__:
        return True
    methods, attributes = _members(proto)
    return all(getattr(obj, n, None) is not None for n in methods) and all(
        hasattr(obj, n) for n in attributes
    )
