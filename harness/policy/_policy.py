"""``Policy``: the verdict on one tool call (allow, ask, deny), why, and the "always" rules to offer.

The decision, in order: the first rule that matches decides (none: ``default``); a shell command is
split into its simple commands, each judged alone, a transparent wrapper by what it runs, and the
strictest part wins; a tool whose hints are not trusted (an MCP server's, unless the server is in
``trusted_servers``) matches no hints rule, and one that only claims to be read-only is asked about
where it would be denied; last, a write of a protected path (``ProtectedPaths``) is asked about
whatever the rules said (a deny stays a deny). Every input of the decision is a field of the policy or
of the call, so a new one (a command that runs sandboxed) is one more step here.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from .._call import Call
from .._errors import HarnessUsageError
from .._messages import ToolCall
from .._tools import Hints, Result, ToolSpec
from ..middleware import NextTool
from ..protected import ProtectedPaths
from ..tools import PatchError, parse_patch
from ._rules import Rule, Subject, Verdict, strictest
from ._shelloptions import unsafe_reason, write_targets
from ._shellparse import ShellParseError, SimpleCommand, parse_command
from ._shellwrappers import MAX_DEPTH, commands_within, harmful_assigns, unwrap

__all__ = ["SHELL_TOOLS", "Judgement", "Policy"]

SHELL_TOOLS = frozenset({"shell"})
_SEARCH_TOOLS = ("glob", "grep", "list_dir")


@dataclass(frozen=True, slots=True)
class Judgement:
    """A policy's verdict on one call, why, the verdict of each shell part, and the protected paths the
    call would write (``(path, why)``: no "always" rule can cover those)."""

    verdict: Verdict
    reason: str
    parts: tuple[tuple[str, Verdict], ...] = ()
    protected: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Part:
    """One judged simple command: its verdict, the rule that decided (None: the default), a label, and
    why no rule could allow it (``why``: the parser does not fully read it, it leaves the project)."""

    verdict: Verdict
    rule: Rule | None
    label: str
    why: str = ""


class Policy:
    """A ``ToolMiddleware`` that allows, denies or asks for each call (see the module docstring).

    ``cwd`` resolves relative paths for ``Rule.path`` (default: the process's working directory);
    ``name`` appears in reasons ("not allowed in plan mode"); ``shell_tools`` names the tools whose
    ``command`` input is parsed; ``protected``: the paths every write asks about (None: none);
    ``trusted_servers``: the MCP servers whose tool annotations are believed.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        default: Verdict = Verdict.ASK,
        *,
        cwd: Path | str | None = None,
        name: str | None = None,
        shell_tools: Iterable[str] = SHELL_TOOLS,
        protected: ProtectedPaths | None = None,
        trusted_servers: Iterable[str] = (),
    ) -> None:
        for r in rules:
            if not isinstance(r, Rule):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise HarnessUsageError(f"Policy rules must be Rule objects, got {r!r}")
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.default = Verdict(default)
        self.cwd = Path(cwd) if cwd is not None else Path(os.getcwd())
        self.name = name
        self.shell_tools = frozenset(shell_tools)
        self.protected = protected
        self.trusted_servers = frozenset(trusted_servers)

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        # In a thread: parsing a long command and resolving paths are blocking work.
        j = await anyio.to_thread.run_sync(self.judge, call, context.spec)
        if j.verdict is Verdict.DENY:
            return Result.failure(f"Denied: {j.reason}", meta={"policy": "deny"})
        if j.verdict is Verdict.ASK:
            asked = context.ask_or_deny(j.reason, {"policy": "declined"})
            if asked is not None:
                return asked
        return await next(call, context)

    # --- judging ---------------------------------------------------------------------------------

    def judge(self, call: ToolCall, spec: ToolSpec | None = None) -> Judgement:
        """The verdict on ``call``. Blocking (it parses and resolves paths): ``call`` runs it in a thread."""
        hints, claimed = self.hints_of(spec)
        if call.name in self.shell_tools and isinstance(call.input.get("command"), str):
            j, writes = self._judge_shell(call, hints)
        else:
            paths = self._paths_of(call)
            verdict, rule = self._first(Subject(call.name, hints, paths=paths))
            reason = self._reason(call.name, _summary(call), verdict, rule)
            if verdict is Verdict.DENY and rule is None and claimed is not None and claimed.read_only:
                verdict = Verdict.ASK
                reason = f"{reason}; its server says it only reads, but that is a hint from the server"
            j = Judgement(verdict, reason)
            writes = [] if hints is not None and hints.read_only else list(paths)
        return self._guard(j, call, writes)

    def hints_of(self, spec: ToolSpec | None) -> tuple[Hints | None, Hints | None]:
        """``(trusted hints, claimed hints)``: an untrusted MCP server's annotations are only claimed."""
        if spec is None:
            return None, None
        server = spec.meta.get("mcp_server")
        if isinstance(server, str) and server not in self.trusted_servers:
            return None, spec.hints
        return spec.hints, spec.hints

    def _guard(self, j: Judgement, call: ToolCall, writes: Sequence[Path]) -> Judgement:
        """A write of a protected path asks, whatever the rules said (a deny stays a deny)."""
        if self.protected is None or j.verdict is Verdict.DENY:
            return j
        found = [(str(p), why) for p in writes if (why := self.protected.why_real(p)) is not None]
        if not found:
            return j
        shown = "; ".join(f"`{p}`: {why}" for p, why in found)
        return Judgement(Verdict.ASK, f"{call.name} writes a protected path ({shown})", j.parts, tuple(found))

    def _first(self, s: Subject) -> tuple[Verdict, Rule | None]:
        for r in self.rules:
            if r.matches(s):
                return r.verdict, r
        return self.default, None

    def _judge_shell(self, call: ToolCall, hints: Hints | None) -> tuple[Judgement, list[Path]]:
        command = str(call.input["command"])
        cwd = self._norm(str(call.input.get("cwd") or "."))
        try:
            parts = parse_command(command)
        except ShellParseError as e:
            # Only rules on the tool itself can decide a command nobody can read; else ask.
            s = Subject(call.name, hints, None, (cwd,))
            for r in self.rules:
                if r.kind in ("tool", "hints") and r.matches(s):
                    return Judgement(r.verdict, self._reason(call.name, f"`{command}`", r.verdict, r)), []
            return Judgement(Verdict.ASK, f"{call.name}: `{command}` ({e}; review it)"), []
        judged: list[_Part] = []
        writes: list[Path] = []
        for part in parts:
            judged.append(self._part(part, call.name, hints, cwd, 0))
            for c in commands_within(part):
                for target in c.writes:
                    v, rule = self._first(Subject(call.name, hints, None, (self._target(target, cwd),)))
                    judged.append(_Part(v, rule, f"> {target}"))
                writes += [self._target(t, cwd) for t in (*c.writes, *write_targets(c))]
        verdict = strictest(p.verdict for p in judged)
        deciding = [p for p in judged if p.verdict is verdict]
        if len(judged) == 1 and judged[0].label == (parts[0].text or " ".join(parts[0].words)):
            reason = self._reason(call.name, f"`{command}`", verdict, deciding[0].rule)
            reason += f" ({judged[0].why})" if judged[0].why else ""
        else:
            which = "; ".join(f"`{p.label}`" + (f": {p.why}" if p.why else "") for p in deciding)
            rule = next((p.rule for p in deciding if p.rule is not None), None)
            reason = self._reason(call.name, f"`{command}`", verdict, rule) + f" (because of {which})"
        return Judgement(verdict, reason, tuple((p.label, p.verdict) for p in judged)), writes

    def _part(self, part: SimpleCommand, tool: str, hints: Hints | None, cwd: Path, depth: int) -> _Part:
        """One simple command: the first matching rule; else what a transparent wrapper runs; else the
        default."""
        label = part.text or " ".join(part.words)
        verdict, rule = self._first(Subject(tool, hints, None if part.dynamic else part, (cwd,)))
        if verdict is Verdict.ALLOW and rule is not None and rule.kind == "command" and not rule.exact:
            moved = _moves_out(part, cwd, self.cwd)
            if moved is not None:  # like ``git -C DIR``: a prefix rule does not cover another folder
                return _Part(
                    Verdict.DENY if self.default is Verdict.DENY else Verdict.ASK, None, label, moved
                )
        if rule is not None or part.dynamic or part.opaque or depth >= MAX_DEPTH:
            # An opaque wrapper's inner command is not what it runs: not unwrapped.
            why = f"not read by the checker: {part.opaque}" if part.opaque else ""
            return _Part(verdict, rule, label, why)
        inner = unwrap(part, depth)
        if inner is None or not inner.transparent or not inner.commands:
            return _Part(verdict, rule, label)
        judged = [self._part(c, tool, hints, cwd, depth + 1) for c in inner.commands]
        worst = strictest(p.verdict for p in judged)
        decided = next(p for p in judged if p.verdict is worst)
        return _Part(worst, decided.rule, f"{decided.label} (run by {inner.via})", decided.why)

    def _reason(self, tool: str, what: str, verdict: Verdict, rule: Rule | None) -> str:
        if verdict is Verdict.ASK:
            return f"{tool}: {what}"
        by = f"rule: {rule.describe()}" if rule is not None else "the default"
        if verdict is Verdict.DENY and rule is None and self.name:
            return f"{tool} is not allowed in {self.name} mode: {what}"
        return f"{tool} {what} ({by})"

    def _norm(self, path: str, base: Path | None = None) -> Path:
        p = Path(path)
        return Path(os.path.normpath(p if p.is_absolute() else (base or self.cwd) / p))

    def _target(self, target: str, cwd: Path) -> Path:
        return self._norm(os.path.expanduser(target) if target.startswith("~") else target, cwd)

    def _paths_of(self, call: ToolCall) -> tuple[Path, ...]:
        inp = call.input
        if call.name == "apply_patch" and isinstance(inp.get("patch"), str):
            try:
                fps = parse_patch(str(inp["patch"]))
            except PatchError:
                return ()
            raw = [p for fp in fps for p in (fp.old_path, fp.new_path) if p is not None]
            return tuple(self._norm(p) for p in raw)
        if isinstance(inp.get("path"), str):
            return (self._norm(str(inp["path"])),)
        if call.name in _SEARCH_TOOLS:
            return (self.cwd,)
        return ()

    # --- "always" answers ------------------------------------------------------------------------

    def suggest(self, call: ToolCall, verdict: Verdict, spec: ToolSpec | None = None) -> list[Rule]:
        """The narrow rules that would remember ``verdict`` for calls like ``call`` ("always" answers).

        Shell: one rule per part not already allowed: a prefix (``git status``, ``pytest``) when the part
        is plain; the exact command when it uses an option that writes or executes, an assignment or a
        wrapper that is not transparent (``sort -o out f``, ``FOO=1 make``, ``sudo make install``); what a
        transparent wrapper runs (``nice pytest``: ``pytest``); nothing for a part the parser does not
        fully read. File tools: the tool under the files' common directory, never a directory above the
        project (``_path_rules``). Other tools: the tool by name.
        """
        if call.name in self.shell_tools and isinstance(call.input.get("command"), str):
            try:
                parts = parse_command(str(call.input["command"]))
            except ShellParseError:
                return []
            hints, _ = self.hints_of(spec)
            out: list[Rule] = []
            for part in parts:
                self._suggest_part(part, call.name, hints, verdict, out, 0)
            return out
        paths = self._paths_of(call)
        if paths and call.name not in _SEARCH_TOOLS:
            return _path_rules(call.name, paths, verdict, self.cwd)
        return [Rule.tool(call.name, verdict)]

    def _suggest_part(
        self,
        part: SimpleCommand,
        tool: str,
        hints: Hints | None,
        verdict: Verdict,
        out: list[Rule],
        depth: int,
    ) -> None:
        if part.dynamic or part.opaque or not part.words or depth >= MAX_DEPTH:
            return  # nothing a rule could hold would cover it again
        if (
            verdict is Verdict.ALLOW
            and self._part(part, tool, hints, self.cwd, depth).verdict is Verdict.ALLOW
        ):
            return
        inner = unwrap(part, depth)
        if inner is not None and inner.transparent and inner.commands:
            for c in inner.commands:
                self._suggest_part(c, tool, hints, verdict, out, depth + 1)
            return
        rule = _remembered(part, verdict, tool, wrapped=inner is not None)
        if rule is not None and rule not in out:
            out.append(rule)


def _remembered(part: SimpleCommand, verdict: Verdict, tool: str, *, wrapped: bool) -> Rule | None:
    """The rule "always" stores for one part (see ``Policy.suggest``); None when nothing it could store
    would match the part again (an expanded word in a command remembered exactly)."""
    if verdict is not Verdict.ALLOW:
        return Rule.command(shlex.join(_prefix(part)), verdict, tool=tool)
    if wrapped or harmful_assigns(part.assigns) or unsafe_reason(part) is not None:
        if any(part.expanded):
            return None
        return Rule.command(shlex.join((*part.assigns, *part.words)), verdict, tool=tool, exact=True)
    return Rule.command(shlex.join(_prefix(part)), verdict, tool=tool)


# Commands whose first word says little (an interpreter, a remote or a container): remembered by all
# their words, never by the first alone.
_WHOLE = frozenset(
    {"python", "python3", "node", "perl", "ruby", "php", "deno", "lua", "Rscript", "ssh", "docker", "podman",
     "kubectl", "sudo", "su", "doas", "eval", "source", "."}
)  # fmt: skip
# Tools whose second word is a subcommand worth keeping in the prefix (``git status``).
_SUBCOMMAND_TOOLS = frozenset(
    {"git", "npm", "pnpm", "yarn", "cargo", "go", "uv", "pip", "pip3", "poetry", "make", "dotnet", "gradle",
     "mvn", "bun", "deno", "gh", "hatch", "pdm", "rustup", "brew", "apt", "apt-get", "conda", "npx", "uvx",
     "bunx", "pnpx", "pipx"}
)  # fmt: skip


def _prefix(part: SimpleCommand) -> tuple[str, ...]:
    words = part.words
    if Path(words[0]).name in _WHOLE:
        return words
    if words[0] in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-"):
        return words[:2]
    return words[:1]


def _path_rules(tool: str, paths: Sequence[Path], verdict: Verdict, project: Path) -> list[Rule]:
    """The path rules "always" stores for a call of ``tool`` on ``paths``: its files' common folder, unless
    that folder holds the project (``/``, the home folder): "always" for ``~/notes.txt`` must not allow
    every write in the project ever after. Then one rule per file's folder, or per file where the folder
    itself holds the project."""
    common = Path(os.path.commonpath([str(p.parent) for p in paths]))
    if not _above(common, project):
        return [Rule.path(tool, common, verdict)]
    out: list[Rule] = []
    for p in sorted(set(paths)):
        rule = Rule.path(tool, p if _above(p.parent, project) else p.parent, verdict)
        if not _above(p, project) and rule not in out:
            out.append(rule)
    return out


def _above(folder: Path, project: Path) -> bool:
    """Whether ``folder`` holds ``project`` (and is not the project itself)."""
    return folder != project and project.is_relative_to(folder)


_DIRECTORY_BUILTINS = frozenset({"cd", "pushd", "popd"})


def _moves_out(part: SimpleCommand, cwd: Path, project: Path) -> str | None:
    """Why ``part`` (``cd``, ``pushd``, ``popd``) moves the commands after it out of ``project`` (a folder
    not named, not inside, or only known when it runs); None when it does not. Blocking (resolves)."""
    if not part.words or Path(part.words[0]).name not in _DIRECTORY_BUILTINS:
        return None
    operands = [(i, w) for i, w in enumerate(part.words[1:], 1) if not w.startswith("-") or w == "-"]
    if part.words[0] == "popd" or len(operands) != 1:
        return "the folder it moves to is not named"
    i, target = operands[0]
    if part.is_expanded(i) or target == "-" or target.startswith(("~", "+")):
        return "the folder it moves to is only known when it runs"
    real = Path(os.path.realpath(cwd / target))
    root = Path(os.path.realpath(project))
    if real != root and not real.is_relative_to(root):
        return "it moves the commands after it out of the project"
    return None


def _summary(call: ToolCall) -> str:
    inp = call.input
    for key in ("path", "pattern", "command"):
        if isinstance(inp.get(key), str):
            return f"`{inp[key]}`"
    return ""
