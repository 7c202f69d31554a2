"""``python -m tests.conformance --agent "cmd ..." [--features script,...] [-k name] [-v]``

Runs every scenario file against the agent command (spawned once per scenario, with a temp
``ACP_AGENT_HOME`` and cwd). Scenarios that need features the agent lacks are skipped: ``core`` is always
on; ``script`` means the agent honours ``ACP_AGENT_PROVIDER=script`` + ``ACP_AGENT_SCRIPT`` (scripted model
replies); ``persist`` means sessions survive a restart with the same ``ACP_AGENT_HOME``. Exit code 0 when
no scenario failed.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from .runner import load_scenarios, run_scenario, split_command
from .validate import MessageValidator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--agent", required=True, help='the agent command, e.g. "acp-agent" or "npx some-agent"'
    )
    parser.add_argument("--features", default="core", help="comma-separated: core, script, persist")
    parser.add_argument("-k", dest="select", default=None, help="only scenarios whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the agent's stderr of failures")
    args = parser.parse_args(argv)
    features = {f.strip() for f in args.features.split(",") if f.strip()} | {"core"}
    command = split_command(args.agent)
    scenarios = [s for s in load_scenarios() if args.select is None or args.select in s["name"]]
    validator = MessageValidator()
    if validator.jsonschema_skipped:
        print(f"note: jsonschema validation skipped ({validator.jsonschema_skipped})", file=sys.stderr)

    async def run_all() -> int:
        failed = passed = skipped = 0
        for scenario in scenarios:
            result = await run_scenario(scenario, command, features=features, validator=validator)
            if result.skipped:
                skipped += 1
                print(f"SKIP {result.name}: {result.skipped}")
            elif result.ok:
                passed += 1
                print(f"PASS {result.name}")
            else:
                failed += 1
                print(f"FAIL {result.name}: {result.detail}")
                if args.verbose and result.stderr_tail:
                    print("  agent stderr (tail):\n    " + result.stderr_tail.replace("\n", "\n    "))
        print(f"\n{passed} passed, {failed} failed, {skipped} skipped")
        return 1 if failed else 0

    return anyio.run(run_all)


if __name__ == "__main__":
    sys.exit(main())
