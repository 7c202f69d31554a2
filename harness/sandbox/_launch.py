"""The sandbox launcher: ``python -I -S _launch.py SPEC -- CMD [ARG...]`` applies the compiled
spec (a network namespace if asked, then Landlock) to itself and execs ``CMD`` (without the variables the
spec unsets: the credentials the agent holds, which the editor's own environment may carry too).

It wraps what the agent starts in processes it does not spawn itself (a command in the editor's
terminal, a hook, an MCP server). Standard library only and run without ``site`` so it starts in a few
milliseconds; it never runs ``CMD`` unsandboxed: a spec it cannot apply ends it with status 126.
"""

from __future__ import annotations

import os
import sys

if __package__:
    from . import _landlock
else:  # run as a script: the sibling module, without importing the harness package
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _landlock

__all__ = ["main"]

_USAGE = "usage: _launch.py SPEC -- COMMAND [ARG...]"


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(_USAGE, file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            spec = _landlock.parse_spec(f.read())
        _landlock.apply_spec(spec)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"acp-agent sandbox: cannot apply the sandbox, not running the command: {exc}", file=sys.stderr)
        return 126
    environ = _landlock.spec_environ(spec, os.environ)
    command = argv[2:]
    try:
        os.execvpe(command[0], command, environ)
    except OSError as exc:
        print(f"acp-agent sandbox: {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
