"""The README's conformance tables from ``acp-conformance --json`` reports:

    python scripts/conformance_table.py REPORT.json...

One row per agent (passed and failed checks per level, what it does not advertise, what the run could not
exercise, the exit status); then which parts of the November protocol (the TypeScript SDK 2.4.0 schema) each
agent serves, from its ``initialize`` answer and the kit's checks of those parts; then each agent's failed
MUST and SHOULD checks with the first line of why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _agent(report: dict[str, Any], path: Path) -> str:
    info = report["agent"].get("agentInfo") or {}
    name = info.get("name") or path.stem
    version = info.get("version") or ""
    return f"{path.stem} ({name} {version})".replace(f"({path.stem} ", "(").strip() if version else path.stem


def _cell(summary: dict[str, Any], level: str) -> str:
    passed, failed = summary[level]["passed"], summary[level]["failed"]
    return f"{passed} ✓ · **{failed} ✗**" if failed else f"{passed} ✓"


# (part, where initialize advertises it (from the result's top level), the kit checks that exercise it)
NEW_PARTS: list[tuple[str, tuple[str, ...] | None, tuple[str, ...]]] = [
    ("`ToolCall.name`", None, ("tools.tool-call-named",)),
    ("`messageId`", None, ("prompt.message-ids",)),
    ("`session/set_title`", ("agentCapabilities", "sessionCapabilities", "title"), ("4c07_set_title",)),
    ("archive", ("agentCapabilities", "sessionCapabilities", "archive"), ("4c08_archive",)),
    ("`session/status`", ("agentCapabilities", "sessionCapabilities", "status"), ("4c09_status",)),
    ("`auth/status`", ("agentCapabilities", "auth", "status"), ("4c10_auth_status",)),
    ("`logout`", ("agentCapabilities", "auth", "logout"), ("4c06a_advertised_logout_is_implemented",)),
    (
        "`session/fork` at a message",
        ("agentCapabilities", "sessionCapabilities", "fork"),
        ("5s14_fork_at_message",),
    ),
    ("`systemPrompt`", ("agentCapabilities", "sessionCapabilities", "systemPrompt"), ("4c11_system_prompt",)),
    ("MCP over ACP", ("agentCapabilities", "mcpCapabilities", "acp"), ("5s15_mcp_over_acp",)),
    ("`providers/*`", ("agentCapabilities", "providers"), ()),
    (
        "`_session/steering`",
        ("_meta", "steering", "supported"),
        ("4c12_steering_idle", "4c13_steering_running_turn"),
    ),
    ("a prompt queued during a turn", None, ("6p11_queued_prompt",)),
    (
        "sub-agents (`subagent_update`, `requires_action`, child cancel)",
        None,
        ("4c14_subagent_update", "4c15_subagent_requires_action", "7x06_cancel_a_subagent_alone"),
    ),
]
"""The parts the kit has no scenario for are shown as advertised or not; ``ToolCall.name`` and ``messageId``
need no capability (the kit checks them on every agent that takes a model turn)."""


def _advertised(init: dict[str, Any] | None, path: tuple[str, ...]) -> bool | None:
    if init is None:
        return None  # an older report: the probe's answer was not kept
    value: Any = init
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value is not None and value is not False


def _part_cell(report: dict[str, Any], path: tuple[str, ...] | None, checks: tuple[str, ...]) -> str:
    results = [r for r in report["results"] if r["id"] in checks or r["scenario"] in checks]
    ran = [r for r in results if r["outcome"] in ("passed", "failed")]
    failed = [r for r in ran if r["outcome"] == "failed"]
    advertised = _advertised(report["agent"].get("initialize"), path) if path else None
    if ran:
        return f"**✗** ({len(failed)} of {len(ran)} checks)" if failed else "✓"
    if advertised:
        return "advertised" if not checks else "advertised, not run"
    if path is None:
        outcomes = sorted({r["outcome"] for r in results}) or ["not run"]
        return "— (" + ", ".join(o.replace("_", " ") for o in outcomes) + ")"
    return "?" if advertised is None else "—"


def new_parts_table(reports: list[tuple[Path, dict[str, Any]]]) -> str:
    lines = [
        "| part | " + " | ".join(_agent(r, p) for p, r in reports) + " |",
        "|---|" + "---|" * len(reports),
    ]
    for name, path, checks in NEW_PARTS:
        lines.append(f"| {name} | " + " | ".join(_part_cell(r, path, checks) for _, r in reports) + " |")
    return "\n".join(lines)


def table(paths: list[Path]) -> str:
    reports = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in paths]
    lines = [
        "| agent | fake model | MUST | SHOULD | RECOMMENDED | not advertised | not applicable | exit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path, report in reports:
        s = report["summary"]
        lines.append(
            f"| {_agent(report, path)} | {report['agent'].get('fake_model_api') or '—'} | {_cell(s, 'MUST')} | "
            f"{_cell(s, 'SHOULD')} | {_cell(s, 'RECOMMENDED')} | {s['not_advertised']} | "
            f"{s['not_applicable'] + s['not_run']} | {report['exit_status']} |"
        )
    lines += ["", new_parts_table(reports), ""]
    for path, report in reports:
        failed = [
            r for r in report["results"] if r["outcome"] == "failed" and r["level"] in ("MUST", "SHOULD")
        ]
        if not failed:
            continue
        lines.append(f"**{path.stem}**, failed MUST and SHOULD checks:")
        for r in failed:
            why = " ".join(line.strip() for line in r["detail"].splitlines()[:2] if line.strip())
            lines.append(f"- `{r['id']}` ({r['level']}): {why[:260]}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([Path(a) for a in sys.argv[1:]]))
