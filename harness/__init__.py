"""harness: the runtime between a model and an application.

The tool loop (``Run``), a typed event stream (``harness.events``), one pause-and-resume contract
(``Approval``, ``Question``, ``Decision``, ``Answer``, ``Pending``) and three middleware seams
(``harness.middleware``: model calls, tool calls, the turn's end). Providers implement
``harness.model.Model``; tools implement ``Tool``.

Importing ``harness`` loads none of it: each name is imported at its first use (PEP 562), so a light
submodule (``harness.model_info``, ``harness.atomic``) costs only itself; an editor's first ``session/new``
is answered before the tool loop is loaded (``acp_agent._early``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from ._call import Call
    from ._errors import HarnessUsageError, ModelError, Retry, ToolFailure, UnsupportedOptionError
    from ._kinds import Delivery, EndReason, ErrorKind, FinishReason, Role
    from ._messages import Image, Message, Part, Reasoning, Text, ToolCall, ToolResult
    from ._options import Options, StopContext, StopPredicate, max_steps
    from ._pause import Answer, Approval, Decision, Need, Pending, Question
    from ._run import Ended, Resume, Run
    from ._tools import FunctionTool, Hints, Result, Tool, Tools, ToolSource, ToolSpec, tool
    from ._usage import Usage
    from ._validate import load_validation
    from .middleware import ModelMiddleware, ToolMiddleware
    from .model import Model, Prompt

__getattr__ = lazy_exports(
    __name__,
    {
        "._pause": ("Answer", "Approval", "Decision", "Need", "Pending", "Question"),
        "._call": ("Call",),
        "._kinds": ("Delivery", "EndReason", "ErrorKind", "FinishReason", "Role"),
        "._run": ("Ended", "Resume", "Run"),
        "._tools": ("FunctionTool", "Hints", "Result", "Tool", "ToolSource", "ToolSpec", "Tools", "tool"),
        "._errors": ("HarnessUsageError", "ModelError", "Retry", "ToolFailure", "UnsupportedOptionError"),
        "._messages": ("Image", "Message", "Part", "Reasoning", "Text", "ToolCall", "ToolResult"),
        ".model": ("Model", "Prompt"),
        ".middleware": ("ModelMiddleware", "ToolMiddleware"),
        "._options": ("Options", "StopContext", "StopPredicate", "max_steps"),
        "._usage": ("Usage",),
        "._validate": ("load_validation",),
    },
)

__version__ = "0.1.0"


__all__ = [
    "Answer",
    "Approval",
    "Call",
    "Decision",
    "Delivery",
    "EndReason",
    "Ended",
    "ErrorKind",
    "FinishReason",
    "FunctionTool",
    "HarnessUsageError",
    "Hints",
    "Image",
    "Message",
    "Model",
    "ModelError",
    "ModelMiddleware",
    "Need",
    "Options",
    "Part",
    "Pending",
    "Prompt",
    "Question",
    "Reasoning",
    "Result",
    "Resume",
    "Retry",
    "Role",
    "Run",
    "StopContext",
    "StopPredicate",
    "Text",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolMiddleware",
    "ToolResult",
    "ToolSource",
    "ToolSpec",
    "Tools",
    "Usage",
    "UnsupportedOptionError",
    "load_validation",
    "max_steps",
    "tool",
]
