"""What the shell parser does not read like bash: each check says why a command cannot be judged.

bashlex (``_shellparse``) gives a tree, but it is not bash: it keeps ``${x:-$(cmd)}``, ``~$(cmd)`` and
``${a[$(cmd)]}`` as opaque text (the command inside is never seen), misreads ``$'…'`` quoting and ``((…))``
arithmetic, and does not read here-document bodies. The principle here: a command is judged by its words
only when every word is a plain literal, a plain variable (``$x``, ``${x}``, ``$1``) or a substitution the
parser handed over to be judged itself. Anything else makes the command *opaque*: no "allow" rule covers
it, so it is asked about (a "deny" rule still matches its words).

- ``source_unsupported``: constructs found in the raw text (``$'…'``, ``$"…"``, ``$((``, ``$[``, ``((``).
- ``word_unsupported``: one word of the tree (its expansions, and any ``$`` or backtick the tree missed).
- ``heredoc_unsupported``: the body of an unquoted here-document (bash expands it; bashlex does not).
- ``builtin_unsupported``: builtins that evaluate a name or an arithmetic text (``declare``, ``printf -v``,
  ``test -v``, ``read``, ``let``...: ``a[$(cmd)]`` as a name runs ``cmd``) or change what later commands run
  (``alias``, ``hash``, ``trap``, ``enable``, ``export PATH=…``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["builtin_unsupported", "heredoc_unsupported", "source_unsupported", "word_unsupported"]

# A parameter bash expands without running anything: a name, a positional or special one, its length, a
# literal array index, and the operators that only test, trim, replace or change case, when their operand
# holds no substitution. Not: ``${!x}`` (the name in x could be ``a[$(cmd)]``), ``${x:1:n}`` and
# ``${a[i]}`` (arithmetic on a value), ``${x@P}`` (prompt expansion runs ``$(…)`` in the value).
# The operand is a word bash expands in full: any ``$`` but a plain ``$name``, a backtick, a brace, a
# bracket, a backslash, or a ``<(``/``>(`` (bash runs a process substitution there, even in a pattern)
# makes it not plain, whatever quotes surround it (the quoting inside an operand is bash's own, not
# bashlex's: the conservative reading asks).
_NAME = r"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[(?:[0-9]+|[@*])\])?"
_OPERATOR = r"(?::?[-=+?]|##?|%%?|//?|/#|/%|\^\^?|,,?|@[QEULuaAKk])"
_OPERAND = r"(?:[^`$\[\]{}\\<>]|[<>](?!\()|\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]))*"
_PLAIN_PARAMETER = re.compile(rf"#?{_NAME}|(?P<name>{_NAME})(?P<operator>{_OPERATOR}){_OPERAND}", re.S)
_PLAIN_TILDE = re.compile(r"~[A-Za-z0-9._+-]*")
_ACTIVE_AFTER_DOLLAR = re.compile(r"[A-Za-z0-9_{(@*#?$!\-\[`'\"]")
_JUDGED_PARTS = frozenset({"commandsubstitution", "processsubstitution"})


def source_unsupported(source: str, skip: Sequence[tuple[int, int]] = ()) -> str | None:
    """Why the raw ``source`` holds a construct the parser misreads (None: none found). ``skip``: spans
    (here-document bodies) not scanned as shell text."""
    quote = ""
    i, n = 0, len(source)
    spans = sorted(skip)
    while i < n:
        if spans and i >= spans[0][0]:
            i = max(i, spans.pop(0)[1])
            continue
        c = source[i]
        nxt = source[i + 1 : i + 2]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 2
            continue
        elif c == "$" and nxt in ("'", '"') and not quote:
            return f"`${nxt}…{nxt}` quoting"
        elif c == "$" and (source.startswith("$((", i) or nxt == "["):
            return "arithmetic expansion (`$((…))`, `$[…]`)"
        elif c == "(" and nxt == "(" and not quote:
            return "arithmetic (`((…))`)"
        elif c == "#" and not quote and (i == 0 or source[i - 1] in " \t\n;&|()"):
            nl = source.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif c in "'\"" and (not quote or c == quote):
            quote = "" if quote else c
        i += 1
    return None


def word_unsupported(node: Any, source: str) -> str | None:
    """Why one word node (a word, an assignment, a redirection's target) holds an expansion that is not
    plain; None when every expansion in it is plain or a substitution the caller walks."""
    covered: list[tuple[int, int]] = []
    for part in getattr(node, "parts", None) or ():
        kind = getattr(part, "kind", "")
        value = getattr(part, "value", None)
        if kind == "parameter":
            if not isinstance(value, str) or not _plain_parameter(value):
                shown = f"${{{value}}}" if isinstance(value, str) else "$…"
                return f"the expansion `{_short(shown)}` can run or evaluate code"
        elif kind == "tilde":
            if not isinstance(value, str) or not _PLAIN_TILDE.fullmatch(value):
                return f"the tilde expansion `{_short(str(value))}`"
        elif kind not in _JUDGED_PARTS:
            return f"a `{kind}` the checker does not read"
        covered.append(tuple(part.pos))
    start, end = node.pos
    for at in _active(source, start, end):
        if not any(a <= at < b for a, b in covered):
            return f"an expansion the parser did not read (`{_short(source[at:end])}`)"
    return None


def heredoc_unsupported(body: str) -> str | None:
    """Why an unquoted here-document's body runs or evaluates something (bash expands ``$(…)``, backticks
    and ``${…}`` in it); None when it only names plain variables."""
    for m in re.finditer(r"`|\$(?:\(|\[|\{([^}]*)\})", body):
        inner = m.group(1)
        if inner is None or not _plain_parameter(inner):
            return f"a here-document that expands `{_short(body[m.start() : m.start() + 20])}`"
    return None


# Builtins that take a variable name (``a[$(cmd)]`` runs ``cmd``) or evaluate arithmetic text.
_NAME_BUILTINS = frozenset(
    {"declare", "typeset", "local", "export", "readonly", "let", "read", "unset", "mapfile", "readarray",
     "wait", "getopts", "test", "[", "[["}
)  # fmt: skip
# Builtins that change what later commands run (or run text as code).
_CODE_BUILTINS = frozenset(
    {"alias", "unalias", "hash", "trap", "enable", "shopt", "complete", "compgen", "bind", "fc", "jobs"}
)  # compgen -C, jobs -x: run a command given as text
_LOCAL_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_DECLARES = frozenset({"declare", "typeset", "local", "export", "readonly"})


def _integer_flag(word: str) -> bool:
    return word.startswith(("-", "+")) and not word.startswith("--") and "i" in word[1:]


def builtin_unsupported(words: Sequence[str], expanded: Sequence[bool]) -> str | None:
    """Why a builtin's words may run code the words do not show (see the module docstring)."""
    if not words:
        return None
    name = words[0]
    if name in _CODE_BUILTINS:
        return f"`{name}` changes what later commands run"
    if name == "let" or (name in _DECLARES and any(_integer_flag(w) for w in words[1:])):
        return f"`{name}` evaluates its text as arithmetic (a name in it can hold `a[$(cmd)]`)"
    if name == "printf" and "-v" not in words[1:] and not any(w.startswith("-v") for w in words[1:]):
        return None
    if name in ("mapfile", "readarray") and any(w.startswith("-C") for w in words[1:]):
        return f"`{name} -C` runs a callback given as text"
    if name not in _NAME_BUILTINS and name != "printf":
        return None
    for i, w in enumerate(words[1:], 1):
        if expanded[i] if i < len(expanded) else False:
            return f"`{name}` with an argument only known once the shell expands it"
        if "[" in w and name not in ("test", "[", "[["):
            return f"`{name}` with a subscript (`{_short(w)}`) bash evaluates as arithmetic"
        if any(s in w for s in ("$(", "`", "${")):
            return f"`{name}` with text bash may evaluate (`{_short(w)}`)"
    if name in ("test", "[", "[[") and {"-v", "-R"} & set(words[1:]):
        return f"`{name} -v` evaluates a name"
    if name in _DECLARES or name in ("read", "mapfile", "readarray"):
        for w in words[1:]:
            var = w.split("=", 1)[0]
            if w.startswith(("-", "+")) or _plain_name(var):
                continue
            return f"`{name}` sets `{_short(var)}`, which can change what later commands run"
    return None


def _plain_parameter(value: str) -> bool:
    """Whether ``${value}`` expands without running or evaluating anything, and assigns (``:=``, ``=``)
    only a shell-local name: ``${CDPATH:=/x}`` or ``${HOME:=/x}`` would change where a later ``cd``
    goes or what ``~`` is."""
    m = _PLAIN_PARAMETER.fullmatch(value)
    if m is None:
        return False
    name, operator = m.group("name"), m.group("operator")
    return not (operator in ("=", ":=") and not _plain_name(str(name)))


def _plain_name(name: str) -> bool:
    """A shell-local name (lower case) that no program reads from its environment."""
    return bool(_LOCAL_NAME.fullmatch(name)) and not name.endswith("_proxy")


def _active(source: str, start: int, end: int) -> list[int]:
    """Positions in ``source[start:end]`` (one word) of a ``$`` or backtick bash would expand."""
    out: list[int] = []
    quote = ""
    i = start
    while i < end:
        c = source[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 2
            continue
        elif c == "`" or (c == "$" and _ACTIVE_AFTER_DOLLAR.fullmatch(source[i + 1 : i + 2] or "\0")):
            out.append(i)
        elif c in "'\"" and (not quote or c == quote):
            quote = "" if quote else c
        elif c in "<>" and source[i + 1 : i + 2] == "(" and not quote:
            out.append(i)
        i += 1
    return out


def _short(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= 40 else text[:39] + "…"
