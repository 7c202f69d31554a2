"""``apply_patch``: a unified diff, or the ``*** Begin Patch`` envelope (``_envelope``), over one or more
files; all of it applies or nothing does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio

from .._call import Call
from .._tools import Result
from ._edit import diff_value
from ._envelope import parse_patch
from ._filetool import WRITE_HINTS, FileTool, Refused
from ._inputs import arg
from ._journal import FileChange
from ._patch import FilePatch, PatchError, apply_hunks
from ._root import PathError
from ._values import Diff, EditValue, Location

__all__ = ["ApplyPatch"]


@dataclass(slots=True)
class _Planned:
    path: Path
    before: str | None
    after: str | None
    line: int


@dataclass(frozen=True, slots=True)
class PatchInput:
    patch: str = arg(minLength=1)


class ApplyPatch(FileTool[PatchInput]):
    """``apply_patch {patch}``: a unified diff over one or more files; all of it applies or nothing does."""

    name = "apply_patch"
    kind = "edit"
    hints = WRITE_HINTS
    Input = PatchInput
    description = (
        "Apply a unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks) to one or more files. "
        "Use `--- /dev/null` to create a file and `+++ /dev/null` to delete one. The `*** Begin Patch` "
        "format is read too (`*** Add File: path`, `*** Update File: path` with `@@` hunks, "
        "`*** Delete File: path`, `*** End Patch`). Either every file is changed or none is."
    )

    async def run(self, args: PatchInput, call: Call) -> Result:
        try:
            patches = parse_patch(args.patch)
            plan, summary = await self._plan(patches)
        except (PathError, PatchError, Refused, OSError) as e:
            return Result.failure(f"apply_patch: {e}; no file was changed")
        done: list[_Planned] = []
        try:
            for item in plan:
                await self._apply(item)
                done.append(item)
        except OSError as e:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                for item in reversed(done):
                    await self._apply(_Planned(item.path, item.after, item.before, item.line))
            return Result.failure(f"apply_patch: writing failed ({e}); the files written were restored")
        if self.journal is not None:
            self.journal.record([FileChange(p.path, p.before, p.after) for p in plan], "apply_patch")
        diffs: list[Diff] = []
        for p in plan:
            d = diff_value(p.path, p.before, p.after or "")
            if p.after is None:
                d["deleted"] = True
            diffs.append(d)
        value = EditValue(
            diffs=diffs,
            locations=[Location(path=str(p.path), line=p.line) for p in plan if p.after is not None],
        )
        n = len(patches)
        return Result.text(f"Patched {n} file{'s' if n != 1 else ''}:\n" + "\n".join(summary), value=value)

    async def _plan(self, patches: list[FilePatch]) -> tuple[list[_Planned], list[str]]:
        """What each file becomes, checked whole before anything is written."""
        plan: list[_Planned] = []
        seen: set[Path] = set()
        summary: list[str] = []
        notes: list[str] = []
        recounted: list[str] = []
        shown = self.root.display
        for fp in patches:
            old_p = await self.resolve(fp.old_path) if fp.old_path is not None else None
            new_p = await self.resolve(fp.new_path) if fp.new_path is not None else None
            touched = {p for p in (old_p, new_p) if p is not None}
            for p in touched & seen:
                raise PatchError(f"{shown(p)} appears more than once in the patch")
            before = await self.read_or_none(old_p) if old_p is not None else None
            if new_p is not None and old_p is None and await self.read_or_none(new_p) is not None:
                raise PatchError(f"{shown(new_p)}: cannot create, the file already exists")
            if old_p is not None and before is None:
                raise PatchError(f"{shown(old_p)} does not exist")
            loose: list[str] = []
            after = await anyio.to_thread.run_sync(apply_hunks, before, fp, loose)  # a loose seek may scan
            notes.extend(loose)
            recounted.extend(fp.notes)
            if old_p is not None and new_p is not None and old_p != new_p:
                # A rename: the old file goes, the new one is created with the patched text.
                if await self.read_or_none(new_p) is not None:
                    raise PatchError(f"{shown(new_p)}: cannot rename onto an existing file")
                plan.append(_Planned(old_p, before, None, 1))
                plan.append(_Planned(new_p, None, after or "", 1))
                summary.append(f"R {shown(old_p)} -> {shown(new_p)}")
            elif new_p is None:
                assert old_p is not None
                plan.append(_Planned(old_p, before, None, 1))
                summary.append(f"D {shown(old_p)}")
            else:
                assert after is not None
                line = fp.hunks[0].new_start if fp.hunks else 1
                plan.append(_Planned(new_p, before, after, max(line, 1)))
                summary.append(f"{'A' if before is None else 'M'} {shown(new_p)}{_counts(fp)}")
            seen.update(touched)
        if notes:
            summary.append("Not all context matched exactly (copy it exactly next time):")
            summary.extend(f"  {n}" for n in notes)
        if recounted:
            summary.append("Hunk headers whose line counts did not match their lines (count them next time):")
            summary.extend(f"  {n}" for n in recounted)
        return plan, summary

    async def _apply(self, item: _Planned) -> None:
        if item.after is None:
            await self.disk.remove(item.path)
        else:
            await self.fs.write_text(item.path, item.after)


def _counts(fp: FilePatch) -> str:
    plus = sum(1 for h in fp.hunks for ln in h.lines if ln[0] == "+")
    minus = sum(1 for h in fp.hunks for ln in h.lines if ln[0] == "-")
    return f" (+{plus} -{minus})"
