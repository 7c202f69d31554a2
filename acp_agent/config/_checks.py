"""Problems and value checks: each check takes a raw value (from a file, a flag or the environment) and where
it came from, and returns the checked value or ``None`` after recording one sentence that says the fix."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "At",
    "Choice",
    "ConfigError",
    "ConfigProblem",
    "Problems",
    "check_env_names",
    "check_path",
    "check_paths",
    "check_seconds",
    "check_text",
    "check_url",
    "listed",
    "str_list",
    "str_map",
]


@dataclass(frozen=True)
class ConfigProblem:
    """One problem: where (a file, ``environment``, ``command line``), which key, and a sentence with the fix."""

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


class ConfigError(Exception):
    """The configuration cannot be used; ``problems`` lists every problem found, one sentence each."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class Problems:
    """Collects every problem of one resolution (they are all reported at once)."""

    def __init__(self) -> None:
        self.items: list[ConfigProblem] = []

    def add(self, source: str, key: str, message: str) -> None:
        self.items.append(ConfigProblem(source, key, message))


class At:
    """Where a value being checked came from: its source, the name it was given there, the collector."""

    __slots__ = ("key", "out", "source")

    def __init__(self, source: str, key: str, out: Problems) -> None:
        self.source = source
        self.key = key
        self.out = out

    def bad(self, message: str) -> None:
        self.out.add(self.source, self.key, message)

    def sub(self, key: str) -> At:
        return At(self.source, f"{self.key}.{key}", self.out)


def listed(values: Sequence[str]) -> str:
    return ", ".join(values)


class Choice:
    """One of ``choices`` (case-insensitive when ``fold``); ``among``, when given, is asked for the choices
    before them at each check (a table that can grow, such as the providers' registry)."""

    def __init__(
        self, *choices: str, fold: bool = False, among: Callable[[], Sequence[str]] | None = None
    ) -> None:
        self._choices = choices
        self._among = among
        self.fold = fold

    @property
    def choices(self) -> tuple[str, ...]:
        return self._choices if self._among is None else (*self._among(), *self._choices)

    def __call__(self, value: Any, at: At) -> str | None:
        if isinstance(value, str):
            candidate = value.lower() if self.fold else value
            if candidate in self.choices:
                return candidate
        at.bad(f"{value!r} is not allowed; use one of: {listed(self.choices)}.")
        return None


def check_url(value: Any, at: At) -> str | None:
    if isinstance(value, str) and value.startswith(("http://", "https://")) and len(value) > 8:
        return value.rstrip("/")
    at.bad(f"{value!r} is not a URL; give an http:// or https:// address, e.g. http://127.0.0.1:8080/v1.")
    return None


def check_text(value: Any, at: At) -> str | None:
    if isinstance(value, str) and value:
        return value
    at.bad(f"{value!r} is not allowed; it must be a non-empty string.")
    return None


def check_path(value: Any, at: At) -> str | None:
    """A path as written (``~`` and relative paths are resolved once its origin is known)."""
    if isinstance(value, str) and value and "\0" not in value:
        return value
    at.bad(f"{value!r} is not allowed; it must be a path, e.g. keys/openai.txt or ~/keys/openai.txt.")
    return None


def check_paths(value: Any, at: At) -> tuple[str, ...] | None:
    """A list of paths as written (each resolved like ``check_path``'s once its origin is known)."""
    if isinstance(value, list) and all(isinstance(v, str) and v and "\0" not in v for v in value):  # pyright: ignore[reportUnknownVariableType]
        items: list[str] = value  # pyright: ignore[reportUnknownVariableType]
        return tuple(items)
    at.bad(f'{value!r} is not allowed; it must be a list of paths, e.g. ["~/.cache/pip", "/opt/build"].')
    return None


def check_seconds(value: Any, at: At) -> float | None:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is not None and 0 < number <= 86400:
        return number
    at.bad(f"{value!r} is not allowed; give a number of seconds above 0 (at most 86400).")
    return None


def check_env_names(value: Any, at: At) -> tuple[str, ...] | None:
    """Environment variable names: a list in a file, comma-separated in the environment."""
    items: list[Any] = []
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, list):
        items = list(value)  # pyright: ignore[reportUnknownArgumentType]
    else:
        items = [value]
    if all(isinstance(v, str) and v.isascii() and v.isidentifier() for v in items):
        return tuple(str(v) for v in items)
    at.bad(f'{value!r} is not allowed; give variable names, e.g. ["GITHUB_TOKEN", "NPM_TOKEN"].')
    return None


def str_map(value: Any, at: At) -> dict[str, str] | None:
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
    ):
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]
    at.bad('must be a table of string values, e.g. { NAME = "value" }.')
    return None


def str_list(value: Any, at: At) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
        items: list[str] = value  # pyright: ignore[reportUnknownVariableType]
        return tuple(items)
    at.bad('must be a list of strings, e.g. ["--flag", "value"].')
    return None
