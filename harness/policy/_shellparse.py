"""Shell commands split into the simple commands a policy judges (bashlex, a real bash parser)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ._shellcheck import builtin_unsupported, heredoc_unsupported, source_unsupported, word_unsupported

__all__ = ["ShellParseError", "SimpleCommand", "parse_command"]

# Redirections that write to their target (``>&`` too when its target is a word, not a descriptor).
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_EXPANSIONS = frozenset({"commandsubstitution", "processsubstitution", "parameter", "tilde"})
_FD_NAME = re.compile(r"\{[^{}\s]*\}")


class ShellParseError(Exception):
    """The command could not be parsed (a policy asks about it)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command of a compound one: its words (quotes removed), files it writes by redirection.

    ``dynamic`` is True when the command name itself comes from an expansion (``$cmd``, ``$(...)``, a glob
    or a brace): such a command matches no command rule. ``opaque`` says why the parser does not fully
    understand the command (``_shellcheck``: ``${x:-$(cmd)}``, ``$'…'``, a here-document that expands
    commands, a function definition...): no "allow" rule matches it, a "deny" rule still does. ``assigns`` are the
    ``NAME=value`` words before the command name. ``expanded[i]`` is True when word ``i`` is not what it
    reads: it holds an expansion (``$X``, ``$(...)``, ``~``) or an unquoted glob or brace (``*``, ``{a,b}``),
    so its value (``-o file``, a file named ``-ofoo``) is unknown until the shell runs it.
    """

    words: tuple[str, ...]
    writes: tuple[str, ...] = ()
    dynamic: bool = False
    text: str = ""
    assigns: tuple[str, ...] = ()
    expanded: tuple[bool, ...] = ()
    opaque: str = ""

    def is_expanded(self, i: int) -> bool:
        return i < len(self.expanded) and self.expanded[i]


def parse_command(source: str) -> list[SimpleCommand]:
    """Every simple command in ``source``, substitutions and function bodies included, in source order."""
    try:
        import bashlex  # pyright: ignore[reportMissingTypeStubs]

        trees: Any = bashlex.parse(source)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    except Exception as e:  # bashlex raises its own errors and, on odd input, plain ones
        raise ShellParseError(f"cannot parse the command: {e}") from e
    out: list[SimpleCommand] = []
    bodies: list[tuple[int, int]] = []
    for tree in trees:
        _walk(tree, source, out)
        _heredocs(tree, bodies)
    if not out:
        raise ShellParseError("no command found")
    # What the raw text holds that the tree misreads makes every part opaque: which one it hides in is
    # not known.
    why = source_unsupported(source, bodies)
    return [replace(c, opaque=why) for c in out] if why else out


def _heredocs(node: Any, out: list[tuple[int, int]]) -> None:
    """The spans of every here-document body below ``node``."""
    if getattr(node, "kind", "") == "heredoc":
        out.append(tuple(node.pos))
    for attr in ("parts", "list", "redirects"):
        for child in getattr(node, attr, None) or ():
            _heredocs(child, out)
    for attr in ("command", "output", "heredoc"):
        child = getattr(node, attr, None)
        if child is not None and hasattr(child, "kind"):
            _heredocs(child, out)


def _walk(node: Any, source: str, out: list[SimpleCommand]) -> None:
    kind: str = getattr(node, "kind", "")
    if kind == "command":
        _command(node, source, out)
        return
    if kind in ("commandsubstitution", "processsubstitution"):
        _walk(node.command, source, out)
        return
    if kind in ("word", "assignment"):  # a word outside a simple command (``for x in WORDS``)
        why = word_unsupported(node, source)
        if why:
            out.append(_opaque(node, source, why))
    elif kind == "function":
        why = "a function definition (it changes what a command name runs)"
        out.append(_opaque(node, source, why))
    first = len(out)
    for attr in ("parts", "list"):
        for child in getattr(node, attr, None) or ():
            _walk(child, source, out)
    for attr in ("command", "output"):
        child = getattr(node, attr, None)
        if child is not None and hasattr(child, "kind"):
            _walk(child, source, out)
    redirects = getattr(node, "redirects", None) or ()
    if redirects:
        _compound_redirects(node, redirects, source, out, first)


def _compound_redirects(node: Any, redirects: Any, source: str, out: list[SimpleCommand], first: int) -> None:
    """The redirections of a compound command (``{ …; } > f``, ``( … ) < <(cmd)``, ``for …; done > f``):
    every command inside writes where they write and is as unreadable as their targets; the commands
    substituted in the targets are judged on their own."""
    inner: list[SimpleCommand] = []
    writes: list[str] = []
    why = ""
    for r in redirects:
        why = why or _redirect(r, source, inner, writes) or ""
    if first == len(out):  # nothing inside to carry them: the compound itself is the part
        out.append(_opaque(node, source, why or "a redirection of a compound command"))
    out[first:] = [replace(c, writes=c.writes + tuple(writes), opaque=c.opaque or why) for c in out[first:]]
    out.extend(inner)


def _opaque(node: Any, source: str, why: str) -> SimpleCommand:
    start, end = node.pos
    text = source[start:end]
    return SimpleCommand((), text=text, dynamic=True, opaque=why)


def _substitutions(node: Any, source: str, out: list[SimpleCommand]) -> bool:
    """Walk the commands substituted inside a word; True when the word has any expansion."""
    found = False
    for child in getattr(node, "parts", None) or ():
        k = getattr(child, "kind", "")
        if k in _EXPANSIONS:
            found = True
        if k in ("commandsubstitution", "processsubstitution"):
            _walk(child.command, source, out)
        else:
            found = _substitutions(child, source, out) or found
    return found


def _has_glob(raw: str) -> bool:
    """Whether the raw word holds an unquoted glob or brace character."""
    quote = ""
    escaped = False
    for c in raw:
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "*?[{":
            return True
    return False


def _command(node: Any, source: str, out: list[SimpleCommand]) -> None:
    words: list[str] = []
    expanded: list[bool] = []
    assigns: list[str] = []
    writes: list[str] = []
    dynamic = False
    why = ""
    inner: list[SimpleCommand] = []
    prev: Any = None
    for part in node.parts:
        k = getattr(part, "kind", "")
        if k == "word":
            why = why or word_unsupported(part, source) or ""
            has_expansion = _substitutions(part, source, inner)
            raw = source[part.pos[0] : part.pos[1]]
            expanded.append(has_expansion or _has_glob(raw))
            if not words and expanded[-1]:
                dynamic = True  # ``$cmd``, ``$(…)``, ``{rm,-rf,x}``: the name is only known when it runs
            words.append(str(part.word))
        elif k == "assignment":
            why = why or word_unsupported(part, source) or ""
            _substitutions(part, source, inner)
            assigns.append(str(part.word))
        elif k == "redirect":
            why = why or _redirect(part, source, inner, writes) or ""
            if prev is not None and prev.pos[1] == part.pos[0] and _FD_NAME.fullmatch(words[-1]):
                # bash reads ``{a[x]}>f`` as "put the descriptor in a[x]" (a subscript it evaluates),
                # bashlex as a word ``{a[x]}`` then ``>f``.
                why = why or f"a `{words[-1]}` redirection (bash assigns a descriptor to that name)"
        elif k != "reservedword":
            why = why or f"a `{k}` inside a command"
        prev = part if k == "word" else None
    why = why or builtin_unsupported(words, expanded) or ""
    start, end = node.pos
    out.append(
        SimpleCommand(
            tuple(words), tuple(writes), dynamic, source[start:end], tuple(assigns), tuple(expanded), why
        )
    )
    out.extend(inner)


def _redirect(part: Any, source: str, inner: list[SimpleCommand], writes: list[str]) -> str | None:
    """Walk one redirection (its target's substitutions, the files it writes); why it is not understood."""
    why: str | None = None
    target: Any = getattr(part, "output", None)
    if hasattr(target, "kind"):
        why = word_unsupported(target, source)
        _substitutions(target, source, inner)
        if part.type in _WRITE_OPS and str(target.word) not in _HARMLESS_TARGETS:
            writes.append(str(target.word))
    heredoc = getattr(part, "heredoc", None)
    if heredoc is not None and part.type.startswith("<<"):
        body = str(getattr(heredoc, "value", ""))
        quoted = any(q in source[part.pos[0] : part.pos[1]].split("\n", 1)[0] for q in "'\"\\")
        # An unquoted here-document expands its body: substitutions in it run.
        why = why or (None if quoted else heredoc_unsupported(body))
    return why
