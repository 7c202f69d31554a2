"""The kit's parts on their own: every scenario is cited and gated by known tokens, the pattern language,
the profile format (built-in ones load; credentials never reach an agent under test), the validator."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_conformance import Level, MessageValidator, Outcome, load_profile, load_scenarios
from acp_conformance.patterns import mismatch, substitute
from acp_conformance.profile import ProfileError, builtin_profiles, clean_environment, expand, split_command
from acp_conformance.scenarios import CAPABILITY_TOKENS, requirement_gap
from acp_conformance.suite import _environment  # pyright: ignore[reportPrivateUsage]
from acp_conformance.validate import load_schema
from tests.conftest import SHARED, require_shared

KIT = load_scenarios()
DOCS = SHARED / "acp-spec" / "docs"
_SOURCE = re.compile(r"(docs/[a-z-]+\.mdx|schema(\.unstable)?\.json|JSON-RPC 2\.0|acp-conformance)")


def test_check_ids_are_unique_across_the_kit() -> None:
    ids = [c.id for s in KIT for c in s.checks]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_check_names_a_source_and_a_level() -> None:
    for scenario in KIT:
        for check in scenario.checks:
            assert isinstance(check.level, Level)
            assert _SOURCE.search(check.source), (
                f"{check.id}: {check.source!r} cites no page, schema or JSON-RPC"
            )


def test_every_cited_docs_page_exists_in_the_spec() -> None:
    require_shared(DOCS)
    pages = {m for s in KIT for c in s.checks for m in re.findall(r"docs/([a-z-]+\.mdx)", c.source)}
    assert pages and all((DOCS / page).is_file() for page in pages), sorted(
        p for p in pages if not (DOCS / p).is_file()
    )


def test_every_cited_schema_definition_exists_in_the_shipped_schema_it_names() -> None:
    for unstable in (False, True):
        defs = load_schema(unstable)["$defs"]
        cited = {
            m
            for s in KIT
            for c in s.checks
            if ("schema.unstable.json" in c.source) == unstable
            for m in re.findall(r"\$defs/([A-Za-z]+)", c.source)
        }
        assert cited and cited <= set(defs), sorted(cited - set(defs))


def test_a_scenario_citing_the_unstable_schema_is_checked_against_it() -> None:
    for scenario in KIT:
        if any("schema.unstable.json" in c.source for c in scenario.checks):
            assert scenario.data.get("schema") == "unstable", scenario.name


@pytest.mark.parametrize("name", ["schema.json", "schema.unstable.json"])
def test_the_shipped_schemas_are_the_spec_files(name: str) -> None:
    shared = require_shared(SHARED / "acp-spec" / "next" / "v1" / name)
    shipped = Path(sys.modules["acp_conformance"].__file__ or "").parent / "schema" / name
    assert shipped.read_bytes() == shared.read_bytes()


def test_requirements_use_known_tokens() -> None:
    known = {*CAPABILITY_TOKENS, "authMethods", "steering", "model", "turn", "turn:long"}
    for scenario in KIT:
        for token in scenario.requires:
            name = token.lstrip("!")
            assert name in known or name.startswith(("tool:", "setup:")), f"{scenario.name}: {token}"


def test_a_setup_scenario_runs_only_where_the_profile_has_that_setup_and_gets_its_files(
    tmp_path: Path,
) -> None:
    asks = next(s for s in KIT if s.main.id == "subagents.requires-action-while-the-child-asks")
    init: dict[str, Any] = {"agentCapabilities": {}}
    assert requirement_gap(asks, init, load_profile("acp-agent")) is None
    bare = load_profile("sdk-echo")
    assert requirement_gap(asks, init, bare) is not None
    (tmp_path / "p.toml").write_text(
        'name = "p"\ncommand = "x"\napi = "chat"\n[tools.subagent]\nname = "task"\n'
        '[tools.read]\nname = "read"\n[setup.other]\n"${project}/o" = "o"\n'
    )
    other = load_profile(str(tmp_path / "p.toml"))
    assert requirement_gap(asks, init, other) == (
        Outcome.NOT_APPLICABLE,
        "the profile has no [setup.ask_before_read] for this situation",
    )
    profile = load_profile("acp-agent")
    variables = {"project": str(tmp_path / "project"), "home": str(tmp_path / "home")}
    rules = tmp_path / "project" / ".acp-agent" / "permissions.jsonl"
    _environment({"requires": ["tool:read"]}, profile, dict(variables), str(tmp_path), {})
    assert not rules.exists()  # only the scenario that asks for the situation gets its files
    _environment(asks.data, profile, dict(variables), str(tmp_path), {})
    assert '"verdict": "ask"' in rules.read_text(encoding="utf-8")


def test_the_agent_gets_the_scenarios_own_temp_folder_unless_its_profile_names_one(tmp_path: Path) -> None:
    variables = {"project": str(tmp_path / "project"), "home": str(tmp_path / "home")}
    host = {"PATH": "/usr/bin", "TMPDIR": "/var/tmp"}
    env = _environment({}, load_profile("acp-agent"), dict(variables), str(tmp_path), host)
    assert env["TMPDIR"] == str(tmp_path / "tmp") and (tmp_path / "tmp").is_dir()
    (tmp_path / "p.toml").write_text('name = "p"\ncommand = "x"\n[env]\nTMPDIR = "/elsewhere"\n')
    named = _environment({}, load_profile(str(tmp_path / "p.toml")), dict(variables), str(tmp_path), host)
    assert named["TMPDIR"] == "/elsewhere"


def test_capability_gaps_are_not_advertised_and_profile_gaps_not_applicable() -> None:
    delete = next(s for s in KIT if s.main.id == "session-delete.deletes")
    bare = load_profile(None)
    assert requirement_gap(delete, {"agentCapabilities": {}}, bare) == (
        Outcome.NOT_ADVERTISED,
        "the agent does not advertise session.delete",
    )
    assert (
        requirement_gap(delete, {"agentCapabilities": {"sessionCapabilities": {"delete": {}}}}, bare) is None
    )
    assert (
        requirement_gap(delete, {"agentCapabilities": {"sessionCapabilities": {"delete": None}}}, bare)
        is not None
    )
    turn = next(s for s in KIT if s.main.id == "prompt.updates-then-stop-reason")
    gap = requirement_gap(turn, {}, bare)
    assert gap is not None and gap[0] is Outcome.NOT_APPLICABLE


def test_patterns_match_subsets_wildcards_types_and_specials() -> None:
    assert mismatch({"a": "*", "b": "<absent>"}, {"a": None, "c": 1}) is None
    assert mismatch({"a": "<int>"}, {"a": True}) is not None
    assert mismatch([{"x": 1}], [{"x": 1, "y": 2}]) is None and mismatch([{"x": 1}], []) is not None
    assert mismatch({"m": {"$contains": "CWD"}}, {"m": "invalid params: cwd: ..."}) is None
    assert mismatch({"$oneOf": [1, "a"]}, "a") is None and mismatch({"$not": -32601}, -32601) is not None
    assert mismatch({"$any": {"id": 2}}, [{"id": 1}, {"id": 2}]) is None
    assert mismatch({"$none": {"id": 2}}, [{"id": 1}, {"id": 2}]) is not None
    assert mismatch(1, 1.0) is None and mismatch(1, "1") is not None


def test_text_matches_a_field_named_in_the_message_or_the_data() -> None:
    pattern = {"code": -32602, "$text": "cwd"}
    assert mismatch(pattern, {"code": -32602, "message": "cwd is required"}) is None
    assert mismatch(pattern, {"code": -32602, "message": "Invalid params", "data": {"loc": ["cwd"]}}) is None
    assert mismatch(pattern, {"code": -32602, "message": "Invalid params"}) is not None


def test_substitution_keeps_the_type_of_a_whole_variable() -> None:
    assert substitute({"id": "${N}", "t": "n=${N}"}, {"N": 5}) == {"id": 5, "t": "n=5"}
    assert expand({"p": "${home}/x", "k": "${unknown}"}, {"home": "/h"}) == {"p": "/h/x", "k": "${unknown}"}


@pytest.mark.parametrize("name", sorted(builtin_profiles()))
def test_builtin_profiles_load(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name and profile.command
    assert profile.has_model or profile.model_free
    for table in [profile.env, *profile.api_env.values()]:
        for value in table.values():  # no real credential in a profile: keys are the kit's fake one
            assert "sk-" not in value or value == "${api_key}"


def test_a_profile_with_an_unknown_key_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nmodle = "typo"\n')
    with pytest.raises(ProfileError, match="modle"):
        load_profile(str(bad))
    with pytest.raises(ProfileError, match="no profile"):
        load_profile("no-such-profile")


def test_credentials_and_provider_settings_never_reach_the_agent() -> None:
    host = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "OPENAI_API_KEY": "sk-real",
        "ANTHROPIC_BASE_URL": "https://api.anthropic.com",
        "GITHUB_TOKEN": "ghp_x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "GEMINI_API_KEY": "g",
        "MY_SERVICE_PASSWORD": "p",
    }
    assert clean_environment(host) == {"PATH": "/usr/bin", "HOME": "/home/u"}
    assert clean_environment(host, ["GITHUB_TOKEN"])["GITHUB_TOKEN"] == "ghp_x"


def test_relative_program_and_script_paths_become_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "echo.py").write_text("")
    argv = split_command("python agents/echo.py --flag some/thing")
    assert argv == ["python", str(tmp_path / "agents" / "echo.py"), "--flag", "some/thing"]


def test_the_validator_rejects_a_malformed_update_and_an_unstable_one() -> None:
    validator = MessageValidator()
    bad = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}},
    }
    assert validator.check(bad, {})
    unstable = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {"sessionUpdate": "notice", "content": {"type": "text", "text": "x"}},
        },
    }
    assert validator.check(unstable, {})
    no_id = {"jsonrpc": "2.0", "error": {"code": -32603, "message": "x"}}
    assert validator.check(no_id, {})
    good = {"jsonrpc": "2.0", "id": 3, "result": {"sessionId": "s"}}
    assert validator.check(good, {("int", 3): "session/new"}) == []


@pytest.mark.process
def test_the_kit_imports_neither_the_agent_nor_the_harness_nor_pydantic() -> None:
    import subprocess

    code = (
        "import sys, acp_conformance, acp_conformance.cli, acp_conformance.suite\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('harness', 'acp_agent', 'pydantic', 'acp', 'mcp'))\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
