"""Logging set-up: stderr (level from flag/env) and a rotating log file under the agent's home.

``ACP_AGENT_LOG`` overrides the log file path (``-`` or empty disables the file). stdout is never used:
it carries the protocol.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TextIO

__all__ = ["configure_logging", "log_file_path"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_MAX_BYTES = 5 * 1024 * 1024
_BACKUPS = 3


def log_file_path(home: Path, environ: dict[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    override = env.get("ACP_AGENT_LOG")
    if override is not None:
        return None if override in ("", "-") else Path(override).expanduser()
    return home / "logs" / "acp-agent.log"


class _PrivateRotatingFileHandler(RotatingFileHandler):
    """A log file only the user can read (0600), the first and each one a rollover starts."""

    def _open(self) -> io.TextIOWrapper:
        from harness.atomic import open_private_append

        fd = open_private_append(Path(self.baseFilename))
        return open(fd, "a", encoding=self.encoding, errors=self.errors)  # the handler owns and closes it


class _Redacting(logging.Filter):
    """Rewrites each record's message through ``redact`` (the secrets never reach a log)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self._redact(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        return True


def _install(
    root: logging.Logger, handler: logging.Handler, level: int, redact: Callable[[str], str] | None
) -> None:
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(_FORMAT))
    if redact is not None:
        handler.addFilter(_Redacting(redact))
    handler._acp_agent = True  # pyright: ignore[reportAttributeAccessIssue]
    root.addHandler(handler)


def configure_logging(
    level: str, home: Path, *, stream: TextIO | None = None, redact: Callable[[str], str] | None = None
) -> Path | None:
    """Route the ``acp_agent`` and ``harness`` loggers to stderr at ``level`` and to the log file at
    ``level`` but at least INFO. Protocol traces (every message, DEBUG) are written only with
    ``--log-level debug``: building a record per streamed update would cost more than the update.
    ``redact`` rewrites every message (and traceback) written. Returns the log file path (None when
    disabled or not writable)."""
    chosen = getattr(logging, level.upper(), logging.WARNING)
    file_level = min(chosen, logging.INFO)
    root = logging.getLogger()
    root.setLevel(min(chosen, file_level))
    for handler in list(root.handlers):
        if getattr(handler, "_acp_agent", False):
            root.removeHandler(handler)
    _install(root, logging.StreamHandler(stream if stream is not None else sys.stderr), chosen, redact)
    path = log_file_path(home)
    if path is None:
        return None
    try:
        from harness.atomic import private_dir

        if path.parent == home / "logs":  # the agent's own folder: 0700 (a folder the user named: as is)
            private_dir(path.parent)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = _PrivateRotatingFileHandler(
            path, maxBytes=_MAX_BYTES, backupCount=_BACKUPS, encoding="utf-8", delay=True
        )
    except OSError as exc:
        logging.getLogger(__name__).warning("cannot write the log file %s: %s", path, exc)
        return None
    _install(root, file_handler, file_level, redact)
    # Third-party chatter stays out of the file unless asked for.
    for noisy in ("httpx2", "httpcore", "mcp", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path
