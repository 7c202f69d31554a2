"""Project trust: the projects whose configuration the user trusts, kept in ``<home>/trust.json``.

A project's configuration (``.acp-agent/config.toml``, ``mcp.json``, and allow rules in its permission file
that the user did not give) may hold settings that run code, move a credential or widen permissions: the
settings table marks them (``Setting.trust``). They apply only in a trusted project. Trust is recorded per
project root together with a digest of exactly those settings, so any change to them (a ``git pull`` adding
an MCP server) needs trust again; other settings (the model name, timeouts) change freely.

The API later features call (hooks, the sandbox's network settings: mark the setting ``trust=True`` in the
table and it is gated already):

- ``ProjectTrust`` (``Config.project``): the project's root, the ``items`` needing trust, their ``digest``
  and whether they apply (``trusted``);
- ``TrustStore(home)``: ``is_trusted(root, digest)``, ``grant``, ``revoke``, ``records``; and the allow
  rules the user gave in a project (``vouch``/``unvouch``/``vouched``), which apply without trust.

Standard library only (the resolver runs before ``initialize`` is answered). Writes take a lock file and
replace ``trust.json`` atomically; a broken file reads as "nothing trusted".
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from harness.atomic import private_dir, write_text_atomic

__all__ = [
    "TRUST_FILE",
    "ProjectTrust",
    "TrustItem",
    "TrustRecord",
    "TrustStore",
    "canonical",
    "rule_key",
    "settings_digest",
]

TRUST_FILE: Final = "trust.json"
_VERSION: Final = 1
_LISTED: Final = 50


@dataclass(frozen=True, slots=True)
class TrustItem:
    """One thing a project's configuration would do: its setting key, a line for people, its value."""

    key: str
    text: str
    value: Any


@dataclass(frozen=True, slots=True)
class ProjectTrust:
    """A project's settings that need trust, and whether they apply (``trusted``)."""

    root: Path
    items: tuple[TrustItem, ...]
    digest: str
    trusted: bool

    @property
    def ignored(self) -> tuple[TrustItem, ...]:
        """What the project's configuration asks but does not get (nothing when trusted)."""
        return () if self.trusted else self.items

    def summary(self) -> str:
        """The items as a bulleted list (the trust request and ``acp-harness-agent trust`` show it)."""
        lines = [f"- {item.text}" for item in self.items[:_LISTED]]
        if len(self.items) > _LISTED:  # a file of thousands of rules must not make a dialog of thousands
            lines.append(f"- … and {len(self.items) - _LISTED} more")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class TrustRecord:
    root: str
    digest: str
    granted_at: str
    items: tuple[str, ...]


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data (paths as strings, tuples as lists, objects by ``fingerprint()``)."""
    fingerprint = getattr(value, "fingerprint", None)
    if callable(fingerprint):
        return canonical(fingerprint())
    if isinstance(value, dict):
        mapping = cast("dict[Any, Any]", value)
        return {str(k): canonical(v) for k, v in mapping.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in cast("list[Any] | tuple[Any, ...]", value)]
    if isinstance(value, Path):
        return str(value)
    return value


def settings_digest(items: Sequence[TrustItem]) -> str:
    """``sha256:<hex>`` of the items' keys and values (their texts do not count)."""
    import hashlib  # here: the resolver runs before initialize is answered, and most projects need none

    # Each item as its own canonical JSON text, the texts sorted: values of any JSON type (two rules are two
    # dicts, which do not order) give one order, and one digest, whatever order they were found in.
    texts = sorted(_json([item.key, canonical(item.value)]) for item in items)
    return "sha256:" + hashlib.sha256(("[" + ",".join(texts) + "]").encode()).hexdigest()


def _json(value: Any) -> str:
    """Canonical JSON text; what JSON cannot hold (a non-finite number, an object of no JSON type) as its
    ``repr``, so that no value read from a project file can make the digest raise."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def rule_key(rule: Any) -> str:
    return _json(canonical(rule))


class TrustStore:
    """``<home>/trust.json``: ``{"version": 1, "projects": {root: {digest, granted_at, items}},
    "rules": {rule file: [rule, ...]}}``."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / TRUST_FILE

    # --- projects --------------------------------------------------------------------------------------

    def records(self) -> list[TrustRecord]:
        projects = self._load().get("projects", {})
        out: list[TrustRecord] = []
        for root in sorted(projects):
            record = self._record(root, projects[root])
            if record is not None:
                out.append(record)
        return out

    def record(self, root: Path | str) -> TrustRecord | None:
        key = _root_key(root)
        return self._record(key, self._load().get("projects", {}).get(key))

    def is_trusted(self, root: Path | str, digest: str) -> bool:
        """Whether the user trusted exactly these settings (``digest``) of the project at ``root``."""
        record = self.record(root)
        return record is not None and record.digest == digest

    def grant(self, root: Path | str, digest: str, items: Sequence[str]) -> None:
        """Trust the project's settings with this digest (replacing an earlier decision)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with self._editing() as data:
            projects = data.setdefault("projects", {})
            projects[_root_key(root)] = {"digest": digest, "granted_at": stamp, "items": list(items)}

    def revoke(self, root: Path | str) -> bool:
        """Forget the trust in the project at ``root``; False when it was not trusted."""
        with self._editing() as data:
            return data.setdefault("projects", {}).pop(_root_key(root), None) is not None

    # --- rules the user gave ------------------------------------------------------------------------------

    def vouched(self, rule_file: Path) -> frozenset[str]:
        """The rules (as canonical JSON) the user gave through the agent in ``rule_file``."""
        rules = self._load().get("rules", {}).get(_root_key(rule_file), [])
        return frozenset(rule_key(r) for r in rules if isinstance(r, dict))

    def is_vouched(self, rule_file: Path, rule: Any) -> bool:
        return rule_key(rule) in self.vouched(rule_file)

    def vouch(self, rule_file: Path, rule: Any) -> None:
        """Record that the user gave ``rule`` (an allow rule answered "always"), so it applies untrusted."""
        with self._editing() as data:
            rules: list[Any] = data.setdefault("rules", {}).setdefault(_root_key(rule_file), [])
            if all(rule_key(r) != rule_key(rule) for r in rules):
                rules.append(canonical(rule))

    def unvouch(self, rule_file: Path, rule: Any) -> None:
        with self._editing() as data:
            by_file: dict[str, list[Any]] = data.setdefault("rules", {})
            key = _root_key(rule_file)
            kept = [r for r in by_file.get(key, []) if rule_key(r) != rule_key(rule)]
            if kept:
                by_file[key] = kept
            else:
                by_file.pop(key, None)

    # --- the file -------------------------------------------------------------------------------------------

    @staticmethod
    def _record(root: str, raw: Any) -> TrustRecord | None:
        if not isinstance(raw, dict):
            return None
        entry = cast("dict[str, Any]", raw)
        if not isinstance(entry.get("digest"), str):
            return None
        items: Any = entry.get("items")
        texts = tuple(str(i) for i in cast("list[Any]", items)) if isinstance(items, list) else ()
        return TrustRecord(root, str(entry["digest"]), str(entry.get("granted_at", "")), texts)

    def _load(self) -> dict[str, Any]:
        try:
            if not self.path.is_file():  # missing, or not a file we wrote (never block on a FIFO)
                return {}
            data: Any = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            import logging  # here: this module is loaded before initialize is answered

            logging.getLogger(__name__).warning(
                "cannot read %s (%s); treating every project as untrusted", self.path, exc
            )
            return {}
        if not isinstance(data, dict) or data.get("version") != _VERSION:  # pyright: ignore[reportUnknownMemberType]
            return {}
        return data  # pyright: ignore[reportUnknownVariableType]

    @contextlib.contextmanager
    def _editing(self) -> Generator[dict[str, Any]]:
        """Read, let the caller change, write back atomically: under a lock, so processes do not race."""
        import fcntl

        private_dir(self.path.parent)
        lock_fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            data = self._load()
            data["version"] = _VERSION
            yield data
            write_text_atomic(
                self.path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            )
        finally:
            os.close(lock_fd)


def _root_key(root: Path | str) -> str:
    path = Path(root)
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11/3.12)
        return str(path.absolute())
