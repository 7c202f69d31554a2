"""The README's conformance table from ``acp-conformance --json`` reports:

    python scripts/conformance_table.py REPORT.json...

One row per agent (passed and failed checks per level, what it does not advertise, what the run could not
exercise, the exit status), then each agent's failed MUST and SHOULD checks with the first line of why.
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
    lines.append("")
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
