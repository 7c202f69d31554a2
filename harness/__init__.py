"""harness: the runtime between a model and an application.

The tool loop (``Run``), a typed event stream (``harness.events``), one pause-and-resume contract
(``Approval``, ``Question``, ``Decision``, ``Answer``, ``Pending``) and two middleware seams
(``harness.middleware``). Providers implement ``harness.model.Model``; tools implement ``Tool``.

Importing ``harness`` loads none of it: each name is imported at its first use (PEP 562), so a light
submodule (``harness.model_info``, ``harness.atomic``) costs only itself; an editor's first ``session/new``
is answered before the tool loop is loaded (``acp_agent._early``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
    from .middleware import ModelMiddleware, ToolMiddleware
    from .model import Model, Prompt

_LAZY: dict[str, str] = {
    "Answer": "._pause",
    "Approval": "._pause",
    "Call": "._call",
    "Decision": "._pause",
    "Delivery": "._kinds",
    "EndReason": "._kinds",
    "Ended": "._run",
    "ErrorKind": "._kinds",
    "FinishReason": "._kinds",
    "FunctionTool": "._tools",
    "HarnessUsageError": "._errors",
    "Hints": "._tools",
    "Image": "._messages",
    "Message": "._messages",
    "Model": ".model",
    "ModelError": "._errors",
    "ModelMiddleware": ".middleware",
    "Need": "._pause",
    "Options": "._options",
    "Part": "._messages",
    "Pending": "._pause",
    "Prompt": ".model",
    "Question": "._pause",
    "Reasoning": "._messages",
    "Result": "._tools",
    "Resume": "._run",
    "Retry": "._errors",
    "Role": "._kinds",
    "Run": "._run",
    "StopContext": "._options",
    "StopPredicate": "._options",
    "Text": "._messages",
    "Tool": "._tools",
    "ToolCall": "._messages",
    "ToolFailure": "._errors",
    "ToolMiddleware": ".middleware",
    "ToolResult": "._messages",
    "ToolSource": "._tools",
    "ToolSpec": "._tools",
    "Tools": "._tools",
    "UnsupportedOptionError": "._errors",
    "Usage": "._usage",
    "max_steps": "._options",
    "tool": "._tools",
}

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


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
    "max_steps",
    "tool",
]
