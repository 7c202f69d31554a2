"""The session layer's one door to the harness.

Importing ``acp_agent.session`` loads no harness module (``tests/test_layering.py``): the harness loads in a
worker thread once ``initialize`` is answered (``_warm``), or at its first use. So a session module does not
import harness names at module level, nor inside its functions: it imports this module
(``from . import _harness``) and uses its attributes (``_harness.Message``). The first use of a name imports
its harness module (``harness.lazy.lazy_exports``, itself loaded then) and stores the value here, so later
uses are a plain attribute lookup. Annotations name harness types under ``TYPE_CHECKING`` as usual.

A harness name the session layer needs is added to ``_EXPORTS`` and to the ``TYPE_CHECKING`` block, under
the module it comes from (the one whose import cost its first use should pay, no more);
``tests/test_session_seam.py`` checks the two agree and that no other session module imports the harness at
run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from harness import (
        EndReason,
        ErrorKind,
        FinishReason,
        HarnessUsageError,
        Image,
        Message,
        Part,
        Reasoning,
        Result,
        Role,
        Run,
        Text,
        ToolCall,
        Tools,
    )
    from harness.atomic import PRIVATE_DIR_MODE, open_private_append, private_dir, write_text_atomic
    from harness.events import (
        InputRequested,
        Interjected,
        MessageEnded,
        MessageResumed,
        MessageStarted,
        ReasoningDelta,
        StepEnded,
        StepStarted,
        TextDelta,
        ToolCallReady,
        ToolCallStarted,
        ToolDecided,
        ToolEnded,
        ToolInputDelta,
        ToolProgress,
        TurnEnded,
        TurnStarted,
    )
    from harness.mcp import (
        ElicitationReply,
        McpConfigError,
        McpError,
        McpManager,
        McpServer,
        ServerStatus,
        StdioConfig,
        StreamConfig,
        parse_acp_servers,
    )
    from harness.model import close_stream
    from harness.providers import registry
    from harness.providers.factory import build_model
    from harness.titles import ask_title
    from harness.tools import PathError, Root, ToolMeta, open_regular, read_meta
    from harness.transcript import JsonlTranscript, fsync_paths

_EXPORTS: Final[Mapping[str, tuple[str, ...]]] = {
    "harness": (
        "EndReason",
        "ErrorKind",
        "FinishReason",
        "HarnessUsageError",
        "Image",
        "Message",
        "Part",
        "Reasoning",
        "Result",
        "Role",
        "Run",
        "Text",
        "ToolCall",
        "Tools",
    ),
    "harness.atomic": ("PRIVATE_DIR_MODE", "open_private_append", "private_dir", "write_text_atomic"),
    "harness.events": (
        "InputRequested",
        "Interjected",
        "MessageEnded",
        "MessageResumed",
        "MessageStarted",
        "ReasoningDelta",
        "StepEnded",
        "StepStarted",
        "TextDelta",
        "ToolCallReady",
        "ToolCallStarted",
        "ToolDecided",
        "ToolEnded",
        "ToolInputDelta",
        "ToolProgress",
        "TurnEnded",
        "TurnStarted",
    ),
    "harness.mcp": (
        "ElicitationReply",
        "McpConfigError",
        "McpError",
        "McpManager",
        "McpServer",
        "ServerStatus",
        "StdioConfig",
        "StreamConfig",
        "parse_acp_servers",
    ),
    "harness.model": ("close_stream",),
    "harness.providers": ("registry",),
    "harness.providers.factory": ("build_model",),
    "harness.titles": ("ask_title",),
    "harness.tools": ("PathError", "Root", "ToolMeta", "open_regular", "read_meta"),
    "harness.transcript": ("JsonlTranscript", "fsync_paths"),
}

__all__ = [
    "PRIVATE_DIR_MODE",
    "ElicitationReply",
    "EndReason",
    "ErrorKind",
    "FinishReason",
    "HarnessUsageError",
    "Image",
    "InputRequested",
    "Interjected",
    "JsonlTranscript",
    "McpConfigError",
    "McpError",
    "McpManager",
    "McpServer",
    "Message",
    "MessageEnded",
    "MessageResumed",
    "MessageStarted",
    "Part",
    "PathError",
    "Reasoning",
    "ReasoningDelta",
    "Result",
    "Role",
    "Root",
    "Run",
    "ServerStatus",
    "StdioConfig",
    "StepEnded",
    "StepStarted",
    "StreamConfig",
    "Text",
    "TextDelta",
    "ToolCall",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolDecided",
    "ToolEnded",
    "ToolInputDelta",
    "ToolMeta",
    "ToolProgress",
    "Tools",
    "TurnEnded",
    "TurnStarted",
    "ask_title",
    "build_model",
    "close_stream",
    "fsync_paths",
    "open_private_append",
    "open_regular",
    "parse_acp_servers",
    "preload",
    "private_dir",
    "read_meta",
    "registry",
    "write_text_atomic",
]

_load: Callable[[str], Any] | None = None


def preload(*names: str) -> None:
    """Import the harness modules of ``names`` now: the warm-up (``_warm``) pays their cost in a worker
    thread, off the event loop, before a session needs them."""
    for name in names:
        if name not in globals():
            __getattr__(name)


def __getattr__(name: str) -> Any:
    global _load
    if name.startswith("__"):
        raise AttributeError(name)  # a probe for a dunder (copy, inspect, pickle) loads nothing
    load = _load
    if load is None:
        # The lazy-export helper is a harness module too: it loads at the first use of a name, not at import.
        from harness.lazy import lazy_exports

        load = _load = lazy_exports(__name__, _EXPORTS)
    return load(name)
