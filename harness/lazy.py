"""One way for a package to export names loaded at their first use (PEP 562).

A package lists, per submodule, the names it exports from it, imports the same names under
``TYPE_CHECKING`` (so type checkers and readers see them) and sets ``__getattr__ = lazy_exports(...)``.
Importing the package then loads none of those submodules; the first access to a name imports its module
and stores the value in the package, so the next access is a plain lookup. Standard library only: the
configuration uses it before ``initialize`` is answered.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name from its submodule on first use.

    ``exports`` maps a module (relative to ``package``, such as ``"._run"``, or absolute) to the names it
    provides (a name may be a submodule of it). A name listed twice is a mistake the caller made; it raises ``ValueError`` at import."""
    source: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in source:
                raise ValueError(f"{package}: {name!r} is exported from both {source[name]} and {module}")
            source[name] = module

    def __getattr__(name: str) -> Any:
        module = source.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        owner = importlib.import_module(module, package)
        try:
            value = getattr(owner, name)
        except AttributeError:  # a submodule, as ``from owner import name`` finds one
            value = importlib.import_module(f"{owner.__name__}.{name}")
        setattr(sys.modules[package], name, value)  # the next access is a plain lookup
        return value

    return __getattr__
