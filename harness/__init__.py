"""harness: the runtime between a model and an application.

The tool loop (``Run``), a typed event stream (``harness.events``), one pause-and-resume contract
(``Approval``, ``Question``, ``Decision``, ``Answer``, ``Pending``) and two middleware seams
(``harness.middleware``). Providers implement ``harness.model.Model``; tools implement ``Tool``.
"""

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
    "max_steps",
    "tool",
]
