"""What a project's configuration would do that needs trust, and whether the user trusts it.

The items are the project file's values of the settings marked ``trust`` (one per MCP server), and the
allow rules of the project's permission file that the user did not give through the agent (a cloned
repository may ship them). A project file may name permission files only inside the project: a path that
leads out (``~/.bashrc``, ``../x``, a symlink out) is refused whether or not the project is trusted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..trust import ProjectTrust, TrustItem, TrustStore, rule_key, settings_digest
from ._checks import Problems
from ._files import Layer, resolve_path
from ._table import SETTINGS, describe

__all__ = ["describe_rule", "project_rules", "project_trust"]


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


def _confine(project: Layer, root: Path, env: Mapping[str, str], out: Problems) -> None:
    """Refuse (and drop) a project file's permission file path that is outside the project."""
    for key in [k for k in project.values if SETTINGS[k].confined]:
        path = resolve_path(str(project.values[key]), root, env)
        if not _inside(path, root):
            out.add(
                project.source,
                key,
                f"{project.values[key]!r} is outside the project ({root}); a project configuration may "
                "only name a file inside the project (set it in your user config.toml instead).",
            )
            del project.values[key]


def describe_rule(rule: Mapping[str, Any]) -> str:
    """A remembered rule as words (the JSON form ``harness.policy.Rule.to_dict`` writes)."""
    tool = str(rule.get("tool", "*"))
    kind = rule.get("kind")
    if kind == "command":
        what = rule.get("pattern") or rule.get("command")
        return f"{tool} commands {'matching' if rule.get('pattern') else 'starting with'} `{what}`"
    if kind == "path":
        return f"{tool} under {rule.get('path')}"
    if kind == "hints":
        hints: Any = rule.get("hints")
        shown = ", ".join(f"{k}={v}" for k, v in hints.items()) if isinstance(hints, dict) else "?"  # pyright: ignore[reportUnknownVariableType]
        return f"tools with {shown}"
    return "every tool" if tool == "*" else f"tool {tool}"


def project_rules(path: Path) -> list[dict[str, Any]]:
    """The allow rules of a permission file, as written (unreadable lines and other files: none)."""
    try:
        if not path.is_file():
            return []
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    found: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            rule: Any = json.loads(line)
        except ValueError:
            continue
        if isinstance(rule, dict) and rule.get("verdict") == "allow":  # pyright: ignore[reportUnknownMemberType]
            found.append(rule)  # pyright: ignore[reportUnknownArgumentType]
    return found


def _rule_file(project: Layer, user: Layer | None, root: Path, env: Mapping[str, str]) -> Path:
    key = "permissions.project_file"
    for layer in (project, user):
        if layer is not None and key in layer.values:
            return resolve_path(str(layer.values[key]), root, env)
    return resolve_path(str(SETTINGS[key].default), root, env)


def project_trust(
    project: Layer,
    user: Layer | None,
    root: Path,
    env: Mapping[str, str],
    home: Path,
    trust: bool | None,
    out: Problems,
) -> ProjectTrust:
    """The project's items needing trust, their digest, and whether they apply (``trust`` None: as the
    trust store under ``home`` says)."""
    _confine(project, root, env, out)
    items: list[TrustItem] = []
    for key, value in project.values.items():
        s = SETTINGS[key]
        if not s.trust:
            continue
        if s.merge == "by_name":
            entries: Mapping[str, Any] = value
            items.extend(
                TrustItem(f"{key}.{name}", describe(s, entry), entry) for name, entry in entries.items()
            )
        else:
            items.append(TrustItem(key, describe(s, value), value))
    store = TrustStore(home)
    rule_file = _rule_file(project, user, root, env)
    if _inside(rule_file, root):
        vouched = store.vouched(rule_file)
        for rule in project_rules(rule_file):
            if rule_key(rule) not in vouched:
                import shlex

                where = shlex.quote(
                    str(rule_file.relative_to(root)) if rule_file.is_relative_to(root) else str(rule_file)
                )
                text = f"allows {describe_rule(rule)} without asking (a rule in {where} you did not give)"
                items.append(TrustItem("rules", text, rule))
    digest = settings_digest(items)
    if not items:
        trusted = True
    elif trust is not None:
        trusted = trust
    else:
        trusted = store.is_trusted(root, digest)
    return ProjectTrust(root.resolve(), tuple(items), digest, trusted)
