"""What a project's configuration would do that needs trust, and whether the user trusts it.

The items are the project file's values of the settings marked ``trust`` (one per MCP server), and the
allow rules of the project's permission file that the user did not give through the agent (a cloned
repository may ship them). A project file may name permission files only inside the project: a path that
leads out (``~/.bashrc``, ``../x``, a symlink out) is refused whether or not the project is trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..small_files import written_inside
from ..trust import ProjectTrust, TrustItem, TrustStore, rule_key, settings_digest
from ._checks import Problems
from ._files import Layer, resolve_path
from ._table import SETTINGS, describe

__all__ = ["describe_rule", "project_rules", "project_trust"]


def _inside(path: Path, root: Path, *, unresolvable: bool = False) -> bool:
    """Whether ``path`` resolves inside ``root``; ``unresolvable`` when it cannot be resolved (a loop)."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return unresolvable


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


def project_rules(path: Path, root: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The allow rules of a permission file as written, read as the project's rule store reads it
    (``acp_agent.rule_lines``, no symlink followed from ``root`` down), and why the file cannot be used
    when it cannot (then: no rules)."""
    from ..rule_lines import read_rule_lines

    read = read_rule_lines(path, beneath=root)
    if read.error is not None:
        return [], read.error
    # ``str()`` as the store's ``Verdict(str(...))``: what it takes for "allow" is listed here.
    return [rule for _n, rule in read.objects if str(rule.get("verdict")) == "allow"], None


def _rule_file(project: Layer, user: Layer | None, root: Path, env: Mapping[str, str]) -> Path:
    key = "permissions.project_file"
    for layer in (project, user):
        if layer is not None and key in layer.values:
            return resolve_path(str(layer.values[key]), root, env)
    return resolve_path(str(SETTINGS[key].default), root, env)


def _rule_items(rule_file: Path, root: Path, store: TrustStore, out: Problems) -> list[TrustItem]:
    """The permission file's allow rules the user did not give; a file that cannot be read is one item
    (it needs trust, never reads as empty), and is reported."""
    import shlex

    where = shlex.quote(
        str(rule_file.relative_to(root)) if rule_file.is_relative_to(root) else str(rule_file)
    )
    rules, error = project_rules(rule_file, root)
    if error is not None:
        out.add(str(rule_file), "(file)", f"{error}; none of its rules are used. Fix or remove it.")
        text = f"ships {where}, which {error} (none of its rules are used until it can be read)"
        return [TrustItem("rules", text, {"unreadable": error})]
    vouched = store.vouched(rule_file)
    items: list[TrustItem] = []
    for rule in rules:
        if rule_key(rule) not in vouched:
            text = f"allows {describe_rule(rule)} without asking (a rule in {where} you did not give)"
            items.append(TrustItem("rules", text, rule))
    return items


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
    # The project's when it lies inside, or is written inside and leads out (a link the project placed,
    # which the reader refuses); a loop: the project's too (it reads as unreadable).
    if written_inside(rule_file, root) or _inside(rule_file, root, unresolvable=True):
        items.extend(_rule_items(rule_file, root, store, out))
    digest = settings_digest(items)
    if not items:
        trusted = True
    elif trust is not None:
        trusted = trust
    else:
        trusted = store.is_trusted(root, digest)
    return ProjectTrust(root.resolve(), tuple(items), digest, trusted)
