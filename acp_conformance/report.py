"""The three reports of a run: a terminal table for people, ``--json`` and ``--junit FILE`` for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import Any

from .checks import CheckResult, Level, Outcome
from .json_types import is_object
from .scenarios import CAPABILITY_TOKENS, advertises
from .suite import SuiteResult
from .validate import SCHEMA_VERSION

__all__ = ["KIT_VERSION", "advertised", "exit_status", "summary", "to_json", "to_junit", "to_table"]

KIT_VERSION = "0.1.0"
_MARK = {
    Outcome.PASSED: "pass",
    Outcome.FAILED: "FAIL",
    Outcome.NOT_ADVERTISED: "not advertised",
    Outcome.NOT_APPLICABLE: "n/a",
    Outcome.NOT_RUN: "not run",
}


def summary(results: Iterable[CheckResult]) -> dict[str, Any]:
    """Passed/failed per level, and the checks that did not run, by reason."""
    out: dict[str, Any] = {level.value: {"passed": 0, "failed": 0} for level in Level}
    for key in (Outcome.NOT_ADVERTISED, Outcome.NOT_APPLICABLE, Outcome.NOT_RUN):
        out[key.value] = 0
    for r in results:
        if r.outcome in (Outcome.PASSED, Outcome.FAILED):
            out[r.check.level.value][r.outcome.value] += 1
        else:
            out[r.outcome.value] += 1
    return out


def exit_status(results: Iterable[CheckResult], *, strict: bool = False) -> int:
    """1 when a MUST check failed (any check with ``strict``), else 0."""
    for r in results:
        if r.outcome is Outcome.FAILED and (strict or r.check.level is Level.MUST):
            return 1
    return 0


def advertised(init: Mapping[str, Any] | None) -> list[str]:
    """The capability tokens the agent advertised (as scenarios name them)."""
    if init is None:
        return []
    tokens = [t for t in CAPABILITY_TOKENS if advertises(init, t)]
    if init.get("authMethods"):
        tokens.append("authMethods")
    if advertises(init, "steering"):
        tokens.append("steering")
    return tokens


def _agent_line(run: SuiteResult) -> str:
    if run.init is None:
        return "agent: initialize failed"
    info = run.init.get("agentInfo")
    name = (
        f"{info.get('name', '?')} {info.get('version', '')}".strip() if is_object(info) else "(no agentInfo)"
    )
    return f"agent: {name} · advertises: {', '.join(advertised(run.init)) or 'nothing optional'}"


def to_table(run: SuiteResult, *, verbose: bool = False, strict: bool = False) -> str:
    lines = [
        f"acp-conformance {KIT_VERSION} · ACP schema {SCHEMA_VERSION} · profile {run.profile.name}"
        + (f" (fake model: {run.profile.api})" if run.profile.api else ""),
        f"command: {' '.join(run.command)}",
        _agent_line(run),
        "",
        f"{'RESULT':<15} {'LEVEL':<12} {'CHECK':<44} SOURCE",
    ]
    for r in run.results:
        lines.append(f"{_MARK[r.outcome]:<15} {r.check.level.value:<12} {r.check.id:<44} {r.check.source}")
        if r.outcome is Outcome.FAILED or (verbose and r.outcome is not Outcome.PASSED):
            lines.append(f"{'':<15} {r.check.title}")
            for detail in r.detail.splitlines()[:8]:
                lines.append(f"{'':<17}{detail}")
            if verbose and r.stderr_tail:
                lines.append(f"{'':<17}agent stderr (tail):")
                lines += [f"{'':<19}{s}" for s in r.stderr_tail.splitlines()[-15:]]
    s = summary(run.results)
    lines += ["", f"{'':<12} {'passed':>7} {'failed':>7}"]
    lines += [
        f"{level.value:<12} {s[level.value]['passed']:>7} {s[level.value]['failed']:>7}" for level in Level
    ]
    lines.append(
        f"not advertised {s['not_advertised']} · not applicable {s['not_applicable']} · not run {s['not_run']}"
        f" · {run.duration_s:.0f} s"
    )
    code = exit_status(run.results, strict=strict)
    why = "a check failed (--strict)" if strict else "a MUST check failed"
    lines.append(f"exit status {code}" + (f": {why}" if code else ""))
    return "\n".join(lines)


def _result_json(r: CheckResult) -> dict[str, Any]:
    return {
        "id": r.check.id,
        "title": r.check.title,
        "level": r.check.level.value,
        "source": r.check.source,
        "scenario": r.scenario,
        "outcome": r.outcome.value,
        "detail": r.detail,
        "duration_s": round(r.duration_s, 3),
    }


def to_json(run: SuiteResult, *, strict: bool = False) -> dict[str, Any]:
    return {
        "kit": {"name": "acp-conformance", "version": KIT_VERSION, "schema": SCHEMA_VERSION},
        "agent": {
            "command": run.command,
            "profile": run.profile.name,
            "fake_model_api": run.profile.api,
            "agentInfo": (run.init or {}).get("agentInfo"),
            "advertises": advertised(run.init),
            "initialize": run.init,  # the probe's answer as sent: what else it advertises (``_meta``...)
        },
        "summary": summary(run.results),
        "exit_status": exit_status(run.results, strict=strict),
        "strict": strict,
        "duration_s": round(run.duration_s, 1),
        "results": [_result_json(r) for r in run.results],
    }


def to_junit(run: SuiteResult) -> str:
    suite = ET.Element("testsuite", name="acp-conformance")
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    for r in run.results:
        counts["tests"] += 1
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"acp-conformance.{r.check.level.value}",
            name=f"{r.check.id}: {r.check.title}",
        )
        case.set("time", f"{r.duration_s:.3f}")
        props = ET.SubElement(case, "properties")
        for key, value in (
            ("level", r.check.level.value),
            ("source", r.check.source),
            ("scenario", r.scenario),
        ):
            ET.SubElement(props, "property", name=key, value=value)
        if r.outcome is Outcome.FAILED:
            counts["failures"] += 1
            failure = ET.SubElement(
                case, "failure", message=(r.detail.splitlines() or [""])[0][:500], type=r.check.level.value
            )
            failure.text = r.detail
        elif r.outcome is not Outcome.PASSED:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=f"{r.outcome.value}: {r.detail}"[:500])
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
