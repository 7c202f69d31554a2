"""The kit's three reports of one run (the table, ``--json``, ``--junit``) and its exit status."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from acp_conformance import (
    KIT_VERSION,
    Check,
    CheckResult,
    Level,
    Outcome,
    Profile,
    SuiteResult,
    exit_status,
    summary,
    to_json,
    to_junit,
    to_table,
)
from acp_conformance.report import advertised

MUST = Check("init.result", "initialize answers with version 1", Level.MUST, "docs/initialization.mdx")
SHOULD = Check("errors.named", "an error names the field", Level.SHOULD, "docs/x.mdx §Errors")
ADVICE = Check("kit.advice", "the kit's advice", Level.RECOMMENDED, "acp-conformance")
INIT: dict[str, Any] = {
    "protocolVersion": 1,
    "agentInfo": {"name": "echo", "version": "1.2"},
    "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True, "audio": False}},
    "authMethods": [{"id": "key", "name": "Key"}],
}


def _run(*results: CheckResult, init: dict[str, Any] | None = INIT) -> SuiteResult:
    return SuiteResult(["agent", "--acp"], Profile("echo", api="openai"), init, list(results), 12.3)


def _results() -> list[CheckResult]:
    return [
        CheckResult(MUST, "3i01", Outcome.PASSED, duration_s=0.25),
        CheckResult(
            SHOULD, "2j05", Outcome.FAILED, "step 3 (expect): wrong code\n  got: -32603", "Traceback\nboom"
        ),
        CheckResult(ADVICE, "2j05", Outcome.NOT_RUN, "an earlier step failed"),
        CheckResult(MUST, "5s05", Outcome.NOT_ADVERTISED, "loadSession"),
        CheckResult(MUST, "6p01", Outcome.NOT_APPLICABLE, "no model"),
    ]


def test_summary_counts_pass_and_fail_per_level_and_the_rest_by_reason() -> None:
    assert summary(_results()) == {
        "MUST": {"passed": 1, "failed": 0},
        "SHOULD": {"passed": 0, "failed": 1},
        "RECOMMENDED": {"passed": 0, "failed": 0},
        "not_advertised": 1,
        "not_applicable": 1,
        "not_run": 1,
    }


def test_only_a_failed_must_fails_the_run_unless_strict() -> None:
    should_failed = _results()
    assert exit_status(should_failed) == 0 and exit_status(should_failed, strict=True) == 1
    assert exit_status([CheckResult(MUST, "s", Outcome.FAILED)]) == 1
    assert exit_status([CheckResult(MUST, "s", Outcome.NOT_RUN)], strict=True) == 0


def test_advertised_lists_the_capability_tokens_the_agent_sets() -> None:
    assert advertised(INIT) == ["loadSession", "prompt.image", "authMethods"]
    assert advertised({"agentCapabilities": {"promptCapabilities": True}}) == []
    assert advertised(None) == []


def test_the_table_details_failures_and_with_verbose_every_check_not_passed() -> None:
    table = to_table(_run(*_results()))
    assert f"acp-conformance {KIT_VERSION}" in table and "profile echo (fake model: openai)" in table
    assert "agent: echo 1.2 · advertises: loadSession, prompt.image, authMethods" in table
    assert "FAIL" in table and "got: -32603" in table and "an earlier step failed" not in table
    assert "Traceback" not in table and table.endswith("exit status 0")
    verbose = to_table(_run(*_results()), verbose=True, strict=True)
    assert "an earlier step failed" in verbose and "agent stderr (tail):" in verbose and "boom" in verbose
    assert verbose.endswith("exit status 1: a check failed (--strict)")


def test_the_table_says_when_initialize_failed_or_named_no_agent() -> None:
    assert "agent: initialize failed" in to_table(_run(init=None))
    assert "agent: (no agentInfo) · advertises: nothing optional" in to_table(
        _run(init={"protocolVersion": 1})
    )


def test_the_json_report_carries_the_agent_the_summary_and_every_result() -> None:
    report = to_json(_run(*_results()), strict=True)
    assert report["kit"]["version"] == KIT_VERSION
    assert report["agent"]["agentInfo"] == {"name": "echo", "version": "1.2"}
    assert report["agent"]["fake_model_api"] == "openai" and report["agent"]["command"] == ["agent", "--acp"]
    assert report["exit_status"] == 1 and report["strict"] is True and report["duration_s"] == 12.3
    assert [r["outcome"] for r in report["results"]] == [
        "passed",
        "failed",
        "not_run",
        "not_advertised",
        "not_applicable",
    ]
    assert report["results"][0] == {
        "id": "init.result",
        "title": "initialize answers with version 1",
        "level": "MUST",
        "source": "docs/initialization.mdx",
        "scenario": "3i01",
        "outcome": "passed",
        "detail": "",
        "duration_s": 0.25,
    }
    assert to_json(_run(init=None))["agent"]["agentInfo"] is None


def test_the_junit_report_marks_failures_and_skips_with_their_level_and_source() -> None:
    root = ET.fromstring(to_junit(_run(*_results())))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("5", "1", "3")
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "init.result: initialize answers with version 1"
    assert cases[0].get("classname") == "acp-conformance.MUST" and cases[0].get("time") == "0.250"
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "step 3 (expect): wrong code"
    assert failure.text == "step 3 (expect): wrong code\n  got: -32603" and failure.get("type") == "SHOULD"
    skipped = cases[3].find("skipped")
    assert skipped is not None and skipped.get("message") == "not_advertised: loadSession"
    props = {p.get("name"): p.get("value") for p in cases[1].iter("property")}
    assert props == {"level": "SHOULD", "source": "docs/x.mdx §Errors", "scenario": "2j05"}
