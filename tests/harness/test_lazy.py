"""``harness.lazy.lazy_exports``: the one way a package exports names loaded at their first use."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

import harness
import harness.providers
from harness.lazy import lazy_exports


@pytest.fixture
def package() -> Iterator[types.ModuleType]:
    """A package ``_lazy_probe`` whose names come from ``json`` and ``_lazy_probe.sub``."""
    pkg = types.ModuleType("_lazy_probe")
    pkg.__path__ = []
    sub = types.ModuleType("_lazy_probe.sub")
    sub.value = 42  # type: ignore[attr-defined]
    sys.modules["_lazy_probe"] = pkg
    sys.modules["_lazy_probe.sub"] = sub
    try:
        yield pkg
    finally:
        del sys.modules["_lazy_probe"], sys.modules["_lazy_probe.sub"]


def test_a_name_is_imported_from_its_module_at_first_use_and_then_stored_in_the_package(
    package: types.ModuleType,
) -> None:
    getattr_ = lazy_exports("_lazy_probe", {".sub": ("value",), "json": ("dumps",)})
    assert "value" not in vars(package)
    assert getattr_("value") == 42
    assert vars(package)["value"] == 42  # the next access is a plain lookup
    assert getattr_("dumps") is sys.modules["json"].dumps


def test_a_name_may_be_a_submodule_of_the_module_it_is_listed_under(package: types.ModuleType) -> None:
    getattr_ = lazy_exports("other", {"_lazy_probe": ("sub",)})
    other = types.ModuleType("other")
    sys.modules["other"] = other
    try:
        assert not hasattr(
            package, "sub"
        )  # not an attribute of its package: found as `from pkg import sub` does
        assert getattr_("sub") is sys.modules["_lazy_probe.sub"]
        assert vars(other)["sub"] is sys.modules["_lazy_probe.sub"]
    finally:
        del sys.modules["other"]


def test_an_unknown_name_is_an_attribute_error_naming_the_package_and_the_name(
    package: types.ModuleType,
) -> None:
    getattr_ = lazy_exports("_lazy_probe", {".sub": ("value",)})
    with pytest.raises(AttributeError, match=r"module '_lazy_probe' has no attribute 'nothing'"):
        getattr_("nothing")


def test_a_name_listed_under_two_modules_is_refused_at_import(package: types.ModuleType) -> None:
    with pytest.raises(ValueError, match=r"'value' is exported from both \.sub and json"):
        lazy_exports("_lazy_probe", {".sub": ("value",), "json": ("value",)})


@pytest.mark.parametrize("module", [harness, harness.providers])
def test_every_name_a_lazy_package_declares_resolves(module: types.ModuleType) -> None:
    for name in module.__all__:
        assert getattr(module, name) is not None, name
