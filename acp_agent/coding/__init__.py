"""The coding agent: file and shell tools through the editor, permissions and modes, rich tool calls.

Importing this package is light: ``coding_factory`` loads the harness and the tools on the first session.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import harness

if TYPE_CHECKING:
    from harness.secrets import Secrets

    from ..session.plugin import SessionEnvironment, SessionSetup
    from ._factory import CodingFactory
    from ._prepare import Prepared

__all__ = ["LazyCodingFactory", "coding_factory"]

T = TypeVar("T")


class LazyCodingFactory:
    """A ``SessionFactory`` that builds the real one (``CodingFactory``) on the first session."""

    def __init__(
        self,
        flags: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        secrets: Secrets | None = None,
    ) -> None:
        self.flags = dict(flags or {})
        self.environ = dict(os.environ if environ is None else environ)
        self.secrets = secrets
        self._impl: CodingFactory | None = None
        self._lock = threading.Lock()  # built by the first of the warm-up and a session's worker thread

    async def __call__(self, env: SessionEnvironment) -> SessionSetup:
        impl = self._impl
        if impl is None:  # (the session answered at start-up comes here first: the import, off the loop)
            impl = await _in_thread(self._factory)
        return await impl(env)

    def forget_key(self) -> None:
        """``logout``: sessions made from now on read no API key (``without_key``), here and in the factory
        already built."""
        from ..config import without_key

        without_key(self.flags, self.environ)
        with self._lock:
            impl = self._impl
        if impl is not None:
            impl.forget_key()

    def prepare(self, env: SessionEnvironment) -> Prepared:
        """The blocking half (a ``PreparingFactory[Prepared]``): in the session layer's worker thread."""
        return self._factory().prepare(env)

    async def finish(self, env: SessionEnvironment, prepared: Prepared) -> SessionSetup:
        return await self._factory().finish(env, prepared)

    async def names_a_model(self, cwd: Path | None) -> bool:
        """Whether the configuration for ``cwd`` (the user's, when None) names a provider; a broken one
        counts as naming one (the session's set-up reports its problems)."""
        from ..config import ConfigError, load_config

        where = cwd if cwd is not None else Path.home()
        try:
            config = await _in_thread(load_config, where, self.flags, self.environ)
        except ConfigError:
            return True
        return config.provider is not None

    def warm(self) -> None:
        """Import the harness and the tools ahead of the first session (the agent calls it in a worker
        thread once ``initialize`` was answered), and last the engine that checks a tool call's input,
        which the first call would otherwise wait for."""
        self._factory()
        harness.load_validation()

    def _factory(self) -> CodingFactory:
        if self._impl is None:
            with self._lock:
                if self._impl is None:
                    from ._factory import CodingFactory

                    self._impl = CodingFactory(self.flags, self.environ, self.secrets)
        return self._impl


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread (it only reads: abandoned when cancelled). anyio is imported here,
    not with the package: nothing of it may load before the early answer (``acp_agent._early``)."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)


def coding_factory(
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    secrets: Secrets | None = None,
) -> LazyCodingFactory:
    """The coding agent's session factory (the default of ``acp-agent``)."""
    return LazyCodingFactory(flags, environ, secrets)
