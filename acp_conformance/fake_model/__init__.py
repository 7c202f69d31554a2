"""A local fake model for agents under test, and the HTTP server under it (also used by the project's
provider tests): scripted turns streamed in the providers' exact formats."""

from .model import FakeModel, api_of
from .render import API_NAMES, ToolCall, Turn, render_json, render_stream, split_text
from .server import Drop, FakeServer, Recorded, Reply, ReplySource, Stall

__all__ = [
    "API_NAMES",
    "Drop",
    "FakeModel",
    "FakeServer",
    "Recorded",
    "Reply",
    "ReplySource",
    "Stall",
    "ToolCall",
    "Turn",
    "api_of",
    "render_json",
    "render_stream",
    "split_text",
]
