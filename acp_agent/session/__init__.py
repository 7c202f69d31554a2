"""The ACP session layer: the agent handler (``AcpAgent``), sessions and their persistence, and the
per-session plug-in point (``SessionFactory`` -> ``SessionSetup``) for tools and middleware.

Importing this package loads the wire models (pydantic) but not the harness: that loads in a worker thread
once ``initialize`` is answered, or on first use (``tests/test_layering.py`` checks it).
"""

from __future__ import annotations

from ._agent import PROTOCOL_VERSION, AcpAgent
from ._holds import SessionInUse, exclusively
from ._setup import SessionEnvironment, SessionFactory, SessionSetup, default_factory
from ._store import SessionMeta, SessionStore
from .serve import serve, serve_stdio

__all__ = [
    "PROTOCOL_VERSION",
    "AcpAgent",
    "SessionEnvironment",
    "SessionFactory",
    "SessionInUse",
    "SessionMeta",
    "SessionSetup",
    "SessionStore",
    "default_factory",
    "exclusively",
    "serve",
    "serve_stdio",
]
