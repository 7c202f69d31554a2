"""``fast_frozen_init``: the per-delta values keep every behaviour of a frozen dataclass; only the speed of
``__init__`` changes."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from harness._fast_init import fast_frozen_init
from harness.events import ReasoningDelta, TextDelta, ToolInputDelta
from harness.model import ReasoningChunk, ToolInput

FAST: list[tuple[type[Any], tuple[Any, ...], dict[str, Any]]] = [
    (TextDelta, (3, "a/b", "msg_1", "hi"), {}),
    (ReasoningDelta, (1, None, "msg_2", "think"), {}),
    (ToolInputDelta, (1, None, "call_1", '{"a"'), {}),
    (ReasoningChunk, ("r",), {"signature": "sig"}),
    (ToolInput, ("call_1", "{}"), {}),
]


def _plain_twin(cls: type[Any]) -> type[Any]:
    """The same class as dataclasses alone makes it (no fast init), for comparison."""
    spec = [
        (f.name, f.type, dataclasses.field(default=f.default, init=f.init, repr=f.repr))
        for f in dataclasses.fields(cls)
    ]
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True, slots=True)


@pytest.mark.parametrize(("cls", "args", "kwargs"), FAST, ids=[c.__name__ for c, _, _ in FAST])
def test_a_fast_init_value_has_the_fields_repr_equality_and_hash_dataclasses_would_give(
    cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    value = cls(*args, **kwargs)
    twin = _plain_twin(cls)(*args, **kwargs)
    assert dataclasses.astuple(value) == dataclasses.astuple(twin)
    assert repr(value).split("(", 1)[1] == repr(twin).split("(", 1)[1]
    assert value == cls(*args, **kwargs)
    assert hash(value) == hash(cls(*args, **kwargs))
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    assert cls(**dict(zip(names, args, strict=False)), **kwargs) == value  # by keyword too
    assert pickle.loads(pickle.dumps(value)) == value
    changed = dataclasses.replace(value, **{names[-1]: "other"})
    assert getattr(changed, names[-1]) == "other"


@pytest.mark.parametrize(("cls", "args", "kwargs"), FAST, ids=[c.__name__ for c, _, _ in FAST])
def test_a_fast_init_value_stays_frozen_and_refuses_wrong_arguments(
    cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    value = cls(*args, **kwargs)
    name = dataclasses.fields(cls)[-1].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, "x")
    with pytest.raises(TypeError):
        cls(*args, *args, **kwargs)
    with pytest.raises(TypeError):
        cls(*args, nope=1, **kwargs)


def test_an_event_made_fast_still_carries_its_type_on_the_wire() -> None:
    assert TextDelta(1, None, "m", "x").to_dict() == {
        "type": "text_delta",
        "turn": 1,
        "parent": None,
        "id": "m",
        "text": "x",
    }


def test_classes_it_cannot_reproduce_are_refused() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class WithFactory:
        items: list[int] = dataclasses.field(default_factory=list[int])

    @dataclasses.dataclass(frozen=True, slots=True)
    class WithPost:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    for cls in (WithFactory, WithPost, NoSlots):
        with pytest.raises(TypeError):
            fast_frozen_init(cls)
