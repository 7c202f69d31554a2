"""Runs scenarios against an agent: a probe ``initialize`` first (its answer gates capability-bound
scenarios), then each scenario in a fresh process with its own temporary home, project and fake model."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .agent import AgentProcess
from .checks import GLOBAL_CHECKS, CheckResult, Outcome
from .fake_model import FakeModel, ToolCall, Turn
from .json_types import is_object
from .macros import expand_macros
from .patterns import substitute
from .player import DEFAULT_TRANSPARENT, NotApplicable, Player, StepFailure
from .profile import Profile, clean_environment, expand
from .scenarios import Scenario, requirement_gap, scenario_from_data, tokens_gap
from .validate import MessageValidator

__all__ = ["ScenarioRun", "SuiteResult", "probe", "run_scenario", "run_suite"]

LONG_PROMPT = "Tell me a very long story."
_PROBE = {
    "id": "probe",
    "level": "MUST",
    "source": "docs/initialization.mdx",
    "steps": [{"initialize": {"capture": {"INIT": "result"}}}],
}


@dataclass
class ScenarioRun:
    results: list[CheckResult]
    wire_problems: list[str] = field(default_factory=list[str])
    violations: list[str] = field(default_factory=list[str])
    variables: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class SuiteResult:
    command: list[str]
    profile: Profile
    init: Mapping[str, Any] | None
    results: list[CheckResult]
    duration_s: float = 0.0


def _turns(data: Mapping[str, Any], profile: Profile, variables: Mapping[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    for i, raw in enumerate(substitute(list(data.get("model") or []), variables)):
        calls: list[ToolCall] = []
        for j, call in enumerate(raw.get("tool_calls") or []):
            if "tool" in call:
                mapping = profile.tools[call["tool"]]
                args = {**variables, **dict(call.get("args") or {})}
                calls.append(
                    ToolCall(
                        mapping.name, dict(expand(dict(mapping.input), args)), f"call_conformance_{i}_{j}"
                    )
                )
            else:
                calls.append(
                    ToolCall(str(call["name"]), dict(call.get("input") or {}), f"call_conformance_{i}_{j}")
                )
        turns.append(
            Turn(
                text=str(raw.get("text") or ""),
                reasoning=str(raw.get("reasoning") or ""),
                tool_calls=tuple(calls),
                finish=str(raw.get("finish") or "stop"),
                chunks=int(raw.get("chunks") or 3),
                stall=bool(raw.get("stall")),
                index=i,
            )
        )
    return turns


def _environment(
    data: Mapping[str, Any],
    profile: Profile,
    variables: dict[str, str],
    tmp: str,
    base_env: Mapping[str, str] | None,
) -> dict[str, str]:
    env = clean_environment(os.environ if base_env is None else base_env, profile.pass_env)
    # The agent's temporary files go in the scenario's folder, removed with it: an agent a scenario kills
    # cannot remove its own, and none carries over to the next scenario. A profile may name another.
    own_tmp = Path(tmp, "tmp")
    own_tmp.mkdir(exist_ok=True)
    env["TMPDIR"] = str(own_tmp)
    env.update(expand(profile.environment(), variables))
    env.update(
        {str(k): str(v) for k, v in expand(dict(data.get("env") or {}), variables).items()}
    )  # the scenario's
    if "script" in data and profile.script_env:  # the agent's own scripted model replaces the fake one
        script = Path(tmp, "script.json")
        script.write_text(json.dumps(data["script"]), encoding="utf-8")
        variables["script"] = str(script)
        env.update(expand(dict(profile.script_env), variables))
    _write_files(profile.files, variables)
    for token in data.get("requires") or ():  # ``setup:<name>``: the profile's files for that situation
        if str(token).startswith("setup:"):
            _write_files(profile.setups.get(str(token).removeprefix("setup:"), {}), variables)
    return env


def _write_files(files: Mapping[str, str], variables: Mapping[str, str]) -> None:
    for path_template, text_template in files.items():
        target = Path(expand(path_template, variables))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(expand(text_template, variables), encoding="utf-8")


def _outcomes(
    scenario: Scenario, player: Player | None, failure: str | None, stderr: str, took: float
) -> list[CheckResult]:
    results = [
        CheckResult(
            scenario.main,
            scenario.name,
            Outcome.FAILED if failure else Outcome.PASSED,
            failure or "",
            stderr if failure else "",
            took,
        )
    ]
    reached: dict[str, tuple[bool, str]] = {}
    for spec, ok, detail in player.sub_results if player else []:
        reached.setdefault(str(spec.get("id")), (ok, detail))
    for sub in scenario.subs:
        if sub.id in reached:
            ok, detail = reached[sub.id]
            results.append(
                CheckResult(
                    sub, scenario.name, Outcome.PASSED if ok else Outcome.FAILED, detail, "" if ok else stderr
                )
            )
        else:
            results.append(
                CheckResult(sub, scenario.name, Outcome.NOT_RUN, "an earlier step of the scenario failed")
            )
    return results


async def run_scenario(
    scenario: Scenario,
    command: Sequence[str],
    profile: Profile,
    *,
    init: Mapping[str, Any] | None = None,
    validator: MessageValidator | None = None,
    base_env: Mapping[str, str] | None = None,
    save_requests: Path | None = None,
) -> ScenarioRun:
    """Run one scenario against a fresh agent; never raises for the agent's faults. ``save_requests``: a
    folder that receives every request the agent sent the fake model (to write a profile's tool map)."""
    gap = requirement_gap(scenario, init, profile)
    if gap is not None:
        return ScenarioRun([CheckResult(c, scenario.name, gap[0], gap[1]) for c in scenario.checks])
    data = scenario.data
    client: Mapping[str, Any] = data.get("client") or {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as tmp:
        home, project = Path(tmp, "home"), Path(tmp, "project")
        await anyio.Path(home).mkdir()
        await anyio.Path(project).mkdir()
        variables: dict[str, Any] = {"CWD": str(project), "HOME": str(home), "TMP": tmp}
        variables["PROMPT_LONG"] = LONG_PROMPT if profile.has_model else profile.long_prompt
        model = (
            FakeModel(
                _turns(data, profile, variables),
                model=profile.model,
                side_models=profile.side_models,
                side_markers=profile.side_markers,
            )
            if profile.has_model
            else None
        )
        env_vars = profile.variables(
            base_url=model.url if model else "", home=str(home), project=str(project), tmp=tmp
        )
        agent: AgentProcess | None = None
        player: Player | None = None
        failure: str | None = None
        skipped: dict[str, tuple[Outcome, str]] = {}
        try:
            if model is not None:
                model.start()
            env = _environment(data, profile, env_vars, tmp, base_env)
            argv = [*command, *expand(list(profile.args), env_vars)]
            unstable = data.get("schema") == "unstable"  # a scenario of unstable parts
            checker = validator if validator is not None and validator.unstable == unstable else None
            agent = AgentProcess(argv, env, str(project), checker or MessageValidator(unstable=unstable), {})
            steps, skipped = _applicable_steps(data["steps"], init, profile)
            steps = expand_macros(steps, client=client, auth_method=profile.auth_method)
            with anyio.fail_after(float(data.get("timeout_s", 60)) * profile.timeout_scale):
                async with anyio.create_task_group() as tg:
                    if data.get("autostart", True):
                        await agent.start(tg)
                    player = Player(
                        agent, variables, tg, client_caps=client, root=Path(tmp), permission=str(data.get("permission", "allow")),
                        transparent=tuple(data.get("transparent", DEFAULT_TRANSPARENT)), timeout_scale=profile.timeout_scale, model=model,
                    )  # fmt: skip
                    try:
                        await player.play(steps)
                    finally:
                        with anyio.CancelScope(shield=True):
                            await agent.stop()
                        tg.cancel_scope.cancel()
        except Exception as exc:  # every failure of the agent or the scenario becomes the check's detail
            leaf = _leaf(exc)
            if isinstance(leaf, NotApplicable):
                return ScenarioRun(
                    [
                        CheckResult(c, scenario.name, Outcome.NOT_APPLICABLE, str(leaf))
                        for c in scenario.checks
                    ]
                )
            failure = _describe(leaf, agent)
        finally:
            if model is not None:
                model.close()
                if save_requests is not None:
                    _save_requests(model, save_requests / scenario.name)
        if failure and model is not None:
            failure += f"\n  ({model.summary()})"
        stderr = agent.stderr_tail() if agent is not None else ""
        run = ScenarioRun(
            _outcomes(scenario, player, failure, stderr, time.monotonic() - started), variables=variables
        )
        for result in run.results:
            if result.check.id in skipped:
                result.outcome, result.detail = skipped[result.check.id]
        if player is not None:
            run.wire_problems = [f"{scenario.name}: {p}" for p in player.wire_problems]
            run.violations = [f"{scenario.name}: {v}" for v in player.violations]
        return run


def _save_requests(model: FakeModel, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    seen = [*model.model_requests, *model.side_requests, *model.unknown_requests]
    for n, request in enumerate(seen, start=1):
        name = request.path.strip("/").replace("/", "_").replace(":", "_") or "root"
        body = (
            request.json if request.body.startswith((b"{", b"[")) else request.body.decode("utf-8", "replace")
        )
        record = {"method": request.method, "path": request.path, "query": request.query, "body": body}
        (folder / f"{n:02d}-{name}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def _leaf(exc: BaseException) -> BaseException:
    match exc:
        case BaseExceptionGroup(exceptions=(BaseException() as first, *_)):
            return _leaf(first)
        case _:
            return exc


def _applicable_steps(
    steps: Sequence[Mapping[str, Any]], init: Mapping[str, Any] | None, profile: Profile
) -> tuple[list[Mapping[str, Any]], dict[str, tuple[Outcome, str]]]:
    """The steps to play: a step reported as its own check (``as``) whose ``requires`` this run lacks is
    left out, and its check gets the reason."""
    kept: list[Mapping[str, Any]] = []
    skipped: dict[str, tuple[Outcome, str]] = {}
    for step in steps:
        gap = tokens_gap(step.get("requires") or (), init, profile) if "as" in step else None
        if gap is None:
            kept.append(step)
        else:
            skipped[str(step["as"].get("id"))] = gap
    return kept, skipped


def _describe(exc: BaseException, agent: AgentProcess | None) -> str:
    if isinstance(exc, StepFailure):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "the scenario timed out"
    if agent is not None and agent.start_error:
        return agent.start_error
    return f"{type(exc).__name__}: {str(exc)[:1000]}"


async def probe(
    command: Sequence[str], profile: Profile, validator: MessageValidator, base_env: Mapping[str, str] | None
) -> tuple[Mapping[str, Any] | None, str]:
    """The agent's ``initialize`` result (None if it gave none) and why not."""
    run = await run_scenario(
        scenario_from_data("probe", _PROBE), command, profile, validator=validator, base_env=base_env
    )
    init = run.variables.get("INIT")
    return (init if is_object(init) else None), run.results[0].detail


async def run_suite(
    scenarios: Sequence[Scenario],
    command: Sequence[str],
    profile: Profile,
    *,
    base_env: Mapping[str, str] | None = None,
    jobs: int = 1,
    on_result: Callable[[CheckResult], None] | None = None,
    save_requests: Path | None = None,
) -> SuiteResult:
    started = time.monotonic()
    validator = MessageValidator()
    init, why = await probe(command, profile, validator, base_env)
    runs: list[ScenarioRun | None] = [None] * len(scenarios)
    limiter = anyio.CapacityLimiter(max(1, jobs))

    async def one(index: int, scenario: Scenario) -> None:
        async with limiter:
            run = await run_scenario(
                scenario,
                command,
                profile,
                init=init,
                validator=validator,
                base_env=base_env,
                save_requests=save_requests,
            )
            for r in run.results:
                if init is None and r.outcome is Outcome.NOT_RUN:
                    r.detail = f"{r.detail}: {why.splitlines()[0] if why else ''}"
            runs[index] = run
            for result in run.results:
                if on_result is not None:
                    on_result(result)

    async with anyio.create_task_group() as tg:
        for index, scenario in enumerate(scenarios):
            tg.start_soon(one, index, scenario)
    results = [r for run in runs if run is not None for r in run.results]
    wire = [p for run in runs if run is not None for p in run.wire_problems]
    violations = [v for run in runs if run is not None for v in run.violations]
    for check_id, problems in (
        ("wire.only-acp-on-stdout", wire),
        ("client.capabilities-respected", violations),
    ):
        outcome = Outcome.FAILED if problems else Outcome.PASSED
        detail = "\n".join(problems[:5]) + (
            f"\n  … and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        result = CheckResult(GLOBAL_CHECKS[check_id], "(every scenario)", outcome, detail)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return SuiteResult(list(command), profile, init, results, time.monotonic() - started)
