"""``Confinement``: a call its tool would refuse for a path outside the project is refused before anyone
is asked.

The file tools (and the shell's ``cwd``) refuse a path outside the session's roots, but they run after the
mode's policy, which asks first: a write outside the project asked for approval and was then refused
anyway. This middleware, just inside the pre-tool hooks and outside the policy, checks the same paths
with the same ``Root`` and fails the call with the tool's own words; nothing is shown to the user. It only
ever refuses: a path it lets through is still checked by the tool itself when it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import anyio.to_thread

from harness import Result
from harness.tools import PatchError, PathError, parse_patch

if TYPE_CHECKING:
    from harness import Call, ToolCall
    from harness.middleware import NextTool
    from harness.tools import Root

__all__ = ["Confinement"]


class Confinement:
    """Tool middleware (see the module docstring): ``tools`` are the names of the tools confined to
    ``root`` (the file tools, and ``shell`` for its ``cwd``)."""

    def __init__(self, root: Root, tools: Iterable[str]) -> None:
        self.root = root
        self.tools = frozenset(tools)

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        if call.name in self.tools:
            # In a thread: resolving paths (and parsing a patch) is blocking work.
            refused = await anyio.to_thread.run_sync(self.refusal, call)
            if refused is not None:
                return Result.failure(refused, meta={"confined": True})
        return await next(call, context)

    def refusal(self, call: ToolCall) -> str | None:
        """The tool's own refusal of a path of ``call`` outside the roots; None when every path is inside
        (or the input is malformed: the tool says so itself). Blocking."""
        for field, path in _paths(call):
            try:
                self.root.resolve_sync(path)
            except PathError as e:
                if call.name == "apply_patch":
                    return f"apply_patch: {e}; no file was changed"
                return f"{call.name}: {field}{e}"
        return None


def _paths(call: ToolCall) -> Iterator[tuple[str, str]]:
    """``(label, path)`` for each path the call names: the shell's ``cwd``, a patch's files, ``path``."""
    inp = call.input
    if call.name == "shell":
        cwd = inp.get("cwd")
        if isinstance(cwd, str) and cwd.strip():
            yield "cwd: ", cwd
        return
    if call.name == "apply_patch":
        patch = inp.get("patch")
        if not isinstance(patch, str):
            return
        try:
            patches = parse_patch(patch)
        except PatchError:
            return
        for fp in patches:
            yield from (("", p) for p in (fp.old_path, fp.new_path) if p is not None)
        return
    path = inp.get("path")
    if isinstance(path, str) and path.strip():
        yield "", path
