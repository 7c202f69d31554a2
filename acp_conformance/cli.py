"""``acp-conformance --agent "CMD ..." [--profile NAME|FILE] [--json] [--junit FILE] [--strict]``

Runs the ACP conformance scenarios against an agent over stdio, each in a fresh process with a temporary
home and project directory, and reports every check with its level (MUST, SHOULD, RECOMMENDED) and its
source in the spec. Scenarios that need a capability the agent does not advertise are reported as not
advertised; those that need a model run when a profile points the agent at the kit's fake model.

Exit status: 0 when no MUST check failed (with --strict: no check at all), 1 otherwise, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import anyio

from .checks import CheckResult
from .profile import ProfileError, builtin_profiles, load_profile, split_command
from .report import dumps, exit_status, to_json, to_junit, to_table
from .scenarios import kit_scenario_dir, load_scenarios
from .suite import run_suite

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-conformance", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--agent", help='the agent command, e.g. "my-agent --acp" (default: the profile\'s command)'
    )
    parser.add_argument(
        "--profile", help=f"a built-in profile ({', '.join(sorted(builtin_profiles()))}) or a TOML file"
    )
    parser.add_argument(
        "--api", help="override the profile's fake model API: chat, responses, anthropic, gemini"
    )
    parser.add_argument(
        "--feature", action="append", default=[], help="an agent feature to assume (repeatable)"
    )
    parser.add_argument(
        "--scenarios", action="append", type=Path, default=[], help="a folder of extra scenarios (repeatable)"
    )
    parser.add_argument(
        "--only-extra", action="store_true", help="run only the --scenarios folders, not the kit's own"
    )
    parser.add_argument("-k", dest="select", help="only checks whose scenario or id contains this")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="scenarios run at once (default 1)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--junit", type=Path, help="also write a JUnit XML report to this file")
    parser.add_argument("--strict", action="store_true", help="fail on SHOULD and RECOMMENDED checks too")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    parser.add_argument(
        "--save-model-requests",
        type=Path,
        metavar="DIR",
        help="write every request the agent sent the fake model here",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="details of skips, and the agent's stderr"
    )
    return parser


def _progress(result: CheckResult) -> None:
    mark = {"passed": ".", "failed": "F"}.get(result.outcome.value, "s")
    print(mark, end="", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
        sys.stderr.close()
        return 0


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        profile = load_profile(args.profile).with_api(args.api)
    except ProfileError as exc:
        print(f"acp-conformance: {exc}", file=sys.stderr)
        return 2
    if args.feature:
        profile = replace(profile, features=profile.features | set(args.feature))
    folders = list(args.scenarios) if args.only_extra else [kit_scenario_dir(), *args.scenarios]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        print(f"acp-conformance: no such scenario folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        scenarios = load_scenarios(folders)
    except (OSError, ValueError) as exc:
        print(f"acp-conformance: {exc}", file=sys.stderr)
        return 2
    if args.select:
        scenarios = [
            s for s in scenarios if args.select in s.name or any(args.select in c.id for c in s.checks)
        ]
    if args.list:
        for s in scenarios:
            for c in s.checks:
                print(f"{c.level.value:<12} {c.id:<44} {c.source}  [{', '.join(s.requires) or 'baseline'}]")
        return 0
    command = args.agent or profile.command
    if not command:
        print("acp-conformance: --agent is required (the profile names no command)", file=sys.stderr)
        return 2
    run = anyio.run(
        lambda: run_suite(
            scenarios,
            split_command(command),
            profile,
            jobs=args.jobs,
            on_result=_progress,
            save_requests=args.save_model_requests,
        )
    )
    print(file=sys.stderr)
    print(
        dumps(to_json(run, strict=args.strict))
        if args.json
        else to_table(run, verbose=args.verbose, strict=args.strict)
    )
    if args.junit:
        args.junit.write_text(to_junit(run), encoding="utf-8")
    if run.init is None:
        print("acp-conformance: the agent never answered initialize; is the command right?", file=sys.stderr)
    return exit_status(run.results, strict=args.strict)


if __name__ == "__main__":
    sys.exit(main())
