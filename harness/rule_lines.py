"""The line reader of a rule file (``permissions.jsonl``): kept apart and light (``json`` only), so that the
trust check reads a project's rules before anything heavy is imported, and with the rule store's reader."""

from __future__ import annotations

import json
from typing import Any, cast

__all__ = ["split_rule_lines"]


def split_rule_lines(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[int]]:
    """A rule file's JSON-object lines (numbered from 1) and the numbers of its other lines (not JSON, or
    JSON but not an object); blank lines, ``#`` comments and a leading BOM are passed over. The one line
    reader of every rule file: the rule store's and the trust check's."""
    objects: list[tuple[int, dict[str, Any]]] = []
    foreign: list[int] = []
    for n, line in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            data: Any = json.loads(line)
        except (ValueError, RecursionError):
            foreign.append(n)
            continue
        if isinstance(data, dict):
            objects.append((n, cast("dict[str, Any]", data)))
        else:
            foreign.append(n)
    return objects, foreign
