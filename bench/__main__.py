"""Run the benchmarks: `python -m bench [--quick] [NAME...]`.

Prints a readable table, then one JSON object per figure on its own line:
`{"bench": "cold_start", "figure": "initialize_median_ms", "value": 97.0, "target": 120, "baseline": 632.0, "ok": true}`.
A missed target is reported, not fatal: benchmarks measure, the tests judge behaviour.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from typing import Any

import anyio

BENCHES = [
    "harness_overhead",
    "providers",
    "cold_start",
    "streaming",
    "cancel",
    "sessions",
    "listing",
    "sandbox",
    "context",
    "cost",
    "peers_cost",
]


def _compile_bytecode() -> None:
    """Write the agent's bytecode, as an install with ``--compile-bytecode`` (or pip) has it: a checkout run
    with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module at every spawn, which no
    installed agent does (``cold_start``'s ``compiled_at_start`` checks that none is left to compile)."""
    import compileall
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for package in ("acp_agent", "harness", "acp_conformance"):
        compileall.compile_dir(root / package, quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small runs that finish in minutes (CI)")
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHES)})")
    args = parser.parse_args()
    names = args.names or BENCHES
    _compile_bytecode()
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    for name in names:
        if name not in BENCHES:
            parser.error(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as e:
            print(f"# {name}: not available ({e})", file=sys.stderr)
            continue
        t = time.perf_counter()
        try:
            # A bench that runs several event loops itself (both anyio backends) exposes rows(quick).
            got = module.rows(args.quick) if hasattr(module, "rows") else anyio.run(module.run, args.quick)
        except Exception:
            traceback.print_exc()
            failed.append(name)
            continue
        print(f"# {name}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
        for row in got:
            row.setdefault("baseline", None)  # every figure line says its baseline, null when none
            rows.append(row)
    print(f"{'bench':18} {'figure':30} {'value':>12} {'target':>8} {'baseline':>10}  ok")
    for r in rows:
        print(
            f"{r['bench']:18} {r['figure']:30} {r['value']!s:>12} {r.get('target')!s:>8} "
            f"{r.get('baseline', '')!s:>10}  {r.get('ok')}"
        )
    for r in rows:
        print(json.dumps(r))
    if failed:
        print(f"benchmarks that crashed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
