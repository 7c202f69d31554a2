"""``Secrets``: the credentials an application holds, kept from every child and redacted from tool output.

The child environment (one function for every process the application starts: the local shell, MCP stdio
servers, hooks, the sandbox): ``child_env(base)`` is ``base`` without the secret variables and without any
variable whose value holds a secret value (a key copied under another name), its ``PATH`` without the
empty and relative entries that would make the child's own lookups find the project's programs. A terminal
the editor starts cannot be given an environment without a variable, only values on top of its own: ``masked_env()`` sets
every secret variable this process holds to the empty string there, and a sandboxed command there removes
``hidden_names()`` itself (``harness.sandbox.SandboxPolicy.unset_env``, applied by the launcher).

The redaction seam: ``Secrets`` is a tool middleware. Put it outermost in every run (and in every
sub-agent's run): each ``Result`` passing through it has every secret value replaced by ``[redacted]`` in its
content and its value, so what the model, the client and the session files get is already clean. Output a
tool streams as progress (the shell's) is redacted by the tool through ``redactor()``, which holds back the
end of each chunk that could be the start of a secret cut in two. Logs: ``redact`` as a filter.

Values shorter than 8 characters are not treated as secrets (redacting ``1`` would garble every output).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import quote, quote_plus

from ._call import Call
from ._messages import Text, ToolCall
from ._tools import Result
from .middleware import NextTool
from .programs import absolute_path
from .providers import registry

__all__ = ["REDACTED", "Secrets", "StreamRedactor", "encoded_forms"]

REDACTED: Final = "[redacted]"
MIN_SECRET_LEN: Final = 8


def encoded_forms(value: str) -> set[str]:
    """``value`` as it is, percent-encoded (as a URL component, as a form, either hex case) and as the
    inside of a JSON string (ASCII-escaped or not)."""
    forms = {value, quote(value, safe=""), quote_plus(value, safe=""), quote(value, safe="/:@+")}
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), f) for f in list(forms)}
    forms |= {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    return forms


class Secrets:
    """The secret variable ``names`` and the secret ``values`` (the keys themselves, wherever they came from).

    Both only grow (``add``): one object can serve a whole process whose sessions learn more keys."""

    def __init__(self, names: Iterable[str] = (), values: Iterable[str | None] = ()) -> None:
        self._names: set[str] = set(registry.key_variables())  # the providers' own: secrets everywhere
        self._values: set[str] = set()
        self.add(names, values)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], names: Iterable[str] = (), values: Iterable[str | None] = ()
    ) -> Secrets:
        """The secrets named, with the values they have in ``env``."""
        secrets = cls(names, values)
        secrets.add((), (env.get(n) for n in secrets.names))
        return secrets

    def add(self, names: Iterable[str] = (), values: Iterable[str | None] = ()) -> None:
        """More secret names and values; each value with the forms it takes in a URL and in JSON (a log
        line that holds it percent-encoded or escaped is masked too)."""
        self._names.update(names)
        for v in values:
            if v and len(v) >= MIN_SECRET_LEN:
                self._values.update(f for f in encoded_forms(v) if len(f) >= MIN_SECRET_LEN)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._names)

    @property
    def values(self) -> frozenset[str]:
        return frozenset(self._values)

    # --- children -------------------------------------------------------------------------------------

    def child_env(
        self, base: Mapping[str, str] | None = None, *, keep: Iterable[str] | None = None
    ) -> dict[str, str]:
        """``base`` (default: this process's environment) for a child: no secret variable, no variable
        holding a secret value, a ``PATH`` of absolute entries only; ``keep``: only these names (a minimal
        environment)."""
        source = os.environ if base is None else base
        allowed = None if keep is None else frozenset(keep)
        env = {
            k: v
            for k, v in source.items()
            if (allowed is None or k in allowed) and k not in self._names and not self._holds_secret(v)
        }
        if "PATH" in env:  # its empty and relative entries name the project's folders (``harness.programs``)
            env["PATH"] = absolute_path(env["PATH"]) or ""
        return env

    def hidden_names(self, base: Mapping[str, str] | None = None) -> frozenset[str]:
        """The names ``child_env`` drops from ``base`` (default: this process's environment), and every
        secret name besides: what to remove from an environment someone else built (the sandbox launcher
        in an editor's terminal removes them from the editor's)."""
        source = os.environ if base is None else base
        return frozenset({*self._names, *(k for k, v in source.items() if self._holds_secret(v))})

    def masked_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The secret variables this process holds (set in ``base``, default its environment, by a secret
        name or holding a secret value), each set to ``""``: for a process that someone else starts with
        their own environment."""
        source = os.environ if base is None else base
        return dict.fromkeys(sorted(n for n in self.hidden_names(source) if source.get(n)), "")

    def _holds_secret(self, value: str) -> bool:
        return any(secret in value for secret in self._values)

    # --- redaction ------------------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` with every secret value replaced by ``[redacted]``."""
        for secret in sorted(self._values, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def redact_value(self, value: Any) -> Any:
        """Strings inside ``value`` (dicts, lists, tuples, dataclasses) redacted; the rest as it is."""
        if not self._values:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self.redact_value(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        if isinstance(value, list | tuple):
            items = [self.redact_value(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
            return items if isinstance(value, list) else tuple(items)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {
                f.name: self.redact_value(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.init and isinstance(getattr(value, f.name), str | dict | list | tuple)
            }
            return dataclasses.replace(value, **changes) if changes else value
        return value

    def redact_result(self, result: Result) -> Result:
        if not self._values:
            return result
        content = tuple(Text(self.redact(p.text)) if isinstance(p, Text) else p for p in result.content)
        return dataclasses.replace(result, content=content, value=self.redact_value(result.value))

    def redactor(self) -> StreamRedactor:
        return StreamRedactor(self)

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        """Tool middleware: the result, redacted."""
        return self.redact_result(await next(call, context))


class StreamRedactor:
    """Redacts a stream of text chunks: ``feed(chunk)`` returns what can be passed on now, ``flush()`` the
    rest at the end. Holds back at most the longest secret's length minus one characters."""

    def __init__(self, secrets: Secrets) -> None:
        self._secrets = secrets
        self._held = ""

    def feed(self, chunk: str) -> str:
        values = self._secrets.values
        if not values:
            out, self._held = self._held + chunk, ""
            return out
        text = self._secrets.redact(self._held + chunk)
        cut = max(len(text) - (max(len(v) for v in values) - 1), 0)
        # Hold back only a tail that could begin a secret; the rest is safe to pass on.
        while cut < len(text) and not any(v.startswith(text[cut:]) for v in values):
            cut += 1
        out, self._held = text[:cut], text[cut:]
        return out

    def flush(self) -> str:
        out, self._held = self._secrets.redact(self._held), ""
        return out
