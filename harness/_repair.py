"""Tool calls as models send them: arguments with JSON slips, scalars as strings, names with a prefix.

Each repair is one a reader would make without doubt, and is logged: trailing commas; the object sent as
a JSON string (double-encoded); a Markdown fence around it; Python's ``True``/``False``/``None``; Python's
single quotes (when the whole text is a Python literal). A scalar is coerced only where the schema names
one type and the text is exactly that type's spelling (``"2"`` for an integer, ``"true"`` for a boolean);
a ``null`` for an optional property is dropped; a field left out is read from the one name other agents'
tools give it (``file_path`` for ``path``, ``timeout_ms`` for ``timeout_s`` in seconds), and a shell command
sent as an argument list (Codex's ``["bash", "-lc", …]``) is read as its command line. A name resolves when
exactly one offered tool fits it after removing a ``functions.``/``tools.`` prefix, case and ``-`` for
``_``. What cannot be repaired gets ``explain_invalid``: the field, the type it needs, and the tool's schema.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ._messages import ToolCall
from ._validate import first_invalid

__all__ = [
    "Repaired",
    "checked_input",
    "coerce_input",
    "explain_invalid",
    "explain_missing",
    "repair_arguments",
    "resolve_name",
]

log = logging.getLogger("harness.run")

_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_PREFIXES = ("functions.", "function.", "tools.", "tool.", "default_api.")
_PY_WORDS = {"True": "true", "False": "false", "None": "null"}
_MAX_LITERAL = 1 << 20  # Python-literal parsing is for arguments of ordinary size only
# The names other agents' tools give a field, which models trained on them send (Claude Code's
# ``file_path``/``old_string``/``new_string``, Codex's apply_patch ``input`` and shell ``workdir``): one of
# them stands for a field left out, when the tool has no field of that name.
_ALIASES: dict[str, tuple[str, ...]] = {
    "path": ("file_path", "filepath", "file_name", "filename", "file"),
    "old_text": ("old_string", "old_str"),
    "new_text": ("new_string", "new_str"),
    "patch": ("input", "diff"),
    "content": ("contents", "file_text"),
    "command": ("cmd",),
    "cwd": ("workdir", "working_directory"),
}
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


@dataclass(slots=True)
class Repaired:
    """The arguments as an object (or None: beyond repair) and the repairs made, in words."""

    value: dict[str, Any] | None
    repairs: list[str] = field(default_factory=list[str])


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOPE


_NOPE = object()


def _scan_fix(text: str) -> tuple[str, list[str]]:
    """``text`` with trailing commas dropped and Python's words as JSON's, outside JSON strings."""
    out: list[str] = []
    fixes: set[str] = set()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            continue
        if c == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                fixes.add("a trailing comma dropped")
                i += 1
                continue
        if c.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in _PY_WORDS:
                fixes.add(f"Python's {word} read as {_PY_WORDS[word]}")
                word = _PY_WORDS[word]
            out.append(word)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out), sorted(fixes)


def _python_literal(text: str) -> Any:
    if len(text) > _MAX_LITERAL:
        return _NOPE
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return _NOPE
    try:  # only what JSON could have said
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return _NOPE


def repair_arguments(raw: str) -> Repaired:
    """``raw`` (a call's argument text, which did not parse as a JSON object) repaired, if it can be."""
    repairs: list[str] = []
    text = raw.strip()
    m = _FENCE.match(text)
    if m is not None:
        text = m.group(1).strip()
        repairs.append("a Markdown fence removed")
    value = _loads(text)
    if value is _NOPE:
        fixed, fixes = _scan_fix(text)
        value = _loads(fixed)
        if value is not _NOPE:
            repairs.extend(fixes)
    if value is _NOPE:
        value = _python_literal(text)
        if value is not _NOPE:
            repairs.append("read as a Python literal (single quotes)")
    if isinstance(value, str):
        inner = repair_arguments(value) if value.strip().startswith(("{", "```")) else Repaired(None)
        if inner.value is not None:
            return Repaired(inner.value, [*repairs, "the object was sent as a JSON string", *inner.repairs])
    if isinstance(value, dict):
        return Repaired(cast(dict[str, Any], value), repairs)
    return Repaired(None, repairs)


def _norm(name: str) -> str:
    low = name.strip().lower()
    changed = True
    while changed:
        changed = False
        for p in _PREFIXES:
            if low.startswith(p):
                low = low[len(p) :]
                changed = True
    return low.replace("-", "_").replace(" ", "_")


def resolve_name(name: str, offered: Iterable[str]) -> str | None:
    """The one offered tool ``name`` means, or None (no tool fits, or more than one does)."""
    names = list(offered)
    if name in names:
        return name
    want = _norm(name)
    fits = [n for n in names if _norm(n) == want]
    return fits[0] if len(fits) == 1 else None


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [str(x) for x in cast(list[Any], t)]
    return []


def _coerce_value(schema: Mapping[str, Any], value: Any) -> tuple[Any, bool]:
    """``value`` as the one type ``schema`` names, when the text spells exactly that; (value, changed)."""
    kinds = [k for k in _types(schema) if k != "null"]
    if len(kinds) != 1 or not isinstance(value, str):
        return value, False
    kind, text = kinds[0], value.strip()
    if kind == "integer" and re.fullmatch(r"[+-]?\d{1,18}", text):
        return int(text), True
    if kind == "number" and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        number = float(text)
        return (
            int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        ), True
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true", True
    if kind in ("array", "object") and text[:1] in "[{":
        parsed: Any = repair_arguments(text).value if kind == "object" else _loads(text)
        if isinstance(parsed, list if kind == "array" else dict):
            return cast(Any, parsed), True
    return value, False


def coerce_input(schema: Mapping[str, Any], value: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``value`` with its top-level scalars coerced to the schema's types, and the repairs, in words."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return value, []
    props = cast(Mapping[str, Any], props)
    required = set(cast(list[str], schema.get("required") or []))
    out = dict(value)
    repairs: list[str] = []
    for key in sorted(k for k in props if k not in value):
        sent = [a for a in _ALIASES.get(key, ()) if a in value and a not in props]
        if len(sent) == 1:
            out[key] = out.pop(sent[0])
            repairs.append(f"{sent[0]} read as {key}")
    if "timeout_ms" in out and "timeout_ms" not in props and "timeout_s" in props and "timeout_s" not in out:
        ms = out.pop("timeout_ms")  # (Codex's shell counts milliseconds)
        out["timeout_s"] = ms / 1000 if isinstance(ms, int | float) and not isinstance(ms, bool) else ms
        repairs.append("timeout_ms read as timeout_s")
    command = out.get("command")
    if isinstance(command, list) and "string" in _types(cast(Mapping[str, Any], props.get("command") or {})):
        line = _command_line(cast(list[Any], command))
        if line is not None:
            out["command"] = line
            repairs.append("command: an argument list read as a command line")
    for key, given in list(out.items()):
        sub = props.get(key)
        if not isinstance(sub, Mapping):
            continue
        sub = cast(Mapping[str, Any], sub)
        if given is None and key not in required and "null" not in _types(sub):
            del out[key]
            repairs.append(f"{key}: null for an optional field dropped")
            continue
        new, changed = _coerce_value(sub, given)
        if changed:
            out[key] = new
            repairs.append(f"{key}: {given!r} read as {_types(sub)[0]}")
    return out, repairs


def _command_line(argv: list[Any]) -> str | None:
    """A command sent as an argument list (Codex's shell): the script of ``bash -lc <script>`` (the tool
    runs one through ``bash -c`` already), else the words quoted as a shell reads them back."""
    if not argv or not all(isinstance(w, str) for w in argv):
        return None
    words = cast(list[str], argv)
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in ("-c", "-lc"):
        return words[2]
    return shlex.join(words)


def _at(schema: Mapping[str, Any], path: list[Any]) -> Mapping[str, Any]:
    node: Any = schema
    for p in path:
        if not isinstance(node, Mapping):
            return {}
        node = cast(Mapping[str, Any], node)
        props = node.get("properties")
        if isinstance(p, str) and isinstance(props, Mapping) and p in props:
            node = cast(Mapping[str, Any], props)[p]
        elif isinstance(p, int) and isinstance(node.get("items"), Mapping):
            node = node["items"]
        else:
            return {}
    return cast(Mapping[str, Any], node) if isinstance(node, Mapping) else {}


def _schema_text(schema: Mapping[str, Any]) -> str:
    shown = json.dumps(schema, ensure_ascii=False, sort_keys=True)
    return shown if len(shown) <= 4000 else shown[:4000] + "..."


def explain_missing(tool: str, schema: Mapping[str, Any], why: str, path: list[Any]) -> str:
    """The message for a required field left out: which, its type, and the schema."""
    where = "/".join(str(p) for p in path)
    needs = " or ".join(_types(_at(schema, path))) or "as the schema says"
    return (
        f"{tool}: invalid input at {where}: {why}. The field {where!r} is required and must be {needs}. "
        f"Send the call again with arguments that fit the tool's schema: {_schema_text(schema)}"
    )


def explain_invalid(tool: str, schema: Mapping[str, Any], why: str, path: list[Any], value: Any) -> str:
    """The message for input that fits no repair: the field and what was sent, the type it needs, the schema."""
    sub = _at(schema, path)
    where = "/".join(str(p) for p in path) or "(root)"
    needs = " or ".join(_types(sub)) or "as the schema says"
    sent = json.dumps(value, ensure_ascii=False, default=str)
    if len(sent) > 200:
        sent = sent[:200] + "..."
    return (
        f"{tool}: invalid input at {where}: {why}. The field {where!r} was {sent}; it must be {needs}. "
        f"Send the call again with arguments that fit the tool's schema: {_schema_text(schema)}"
    )


def checked_input(call: ToolCall, schema: Mapping[str, Any]) -> tuple[ToolCall, str | None]:
    """``call`` with its input fitted to ``schema`` (coerced where there is no doubt), or the problem."""
    bad = first_invalid(schema, call.input)
    if bad is None:
        return call, None
    value, repairs = coerce_input(schema, dict(call.input))
    if repairs:
        still = first_invalid(schema, value)
        if still is None:
            log.info("coerced the input of a %s call: %s", call.name, "; ".join(repairs))
            return replace(call, input=value), None
        bad = still
    why = bad.message + (f" (and {bad.more} more)" if bad.more else "")
    if bad.missing is not None:
        return call, explain_missing(call.name, schema, why, [*bad.path, bad.missing])
    return call, explain_invalid(call.name, schema, why, bad.path, bad.instance)
