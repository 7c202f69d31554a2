"""The session layer's plug-in contract: everything a session factory (``acp_agent.coding``, or any other)
builds a session from, in one public module.

- the factory and what it returns: ``SessionFactory``, ``SessionEnvironment`` (what a factory gets),
  ``SessionSetup`` (tools, middleware, views, commands, …), ``SessionHandle``, ``CommandOutcome``,
  ``ToolDisplay``, ``with_client_prompt``, ``PromptStopped`` (its ``before_prompt`` ends the turn);
- how tool calls look to the client: ``ToolView`` and ``CallView`` (a factory's own views), ``MetaView``
  (the default), ``Shown``, ``TextCall``, ``result_content``, ``text_block``;
- the session's MCP servers (``SessionMcp``, ``merge_servers``), its store (``SessionStore``,
  ``write_json_atomic``), its model slots (``PROVIDER_ID``, ``SMALL_ID``), ``MAX_TITLE``,
  ``CONTEXT_PARTS_META`` and ACP's ``Usage`` of a harness one (``wire_usage``).

The modules behind it are the session layer's own (``_setup``, ``_present``, ``_mcp``, ``_store``, …); a
factory imports this module, never them (``tests/test_layering.py`` refuses another package's private
module). Loading it loads no harness module.
"""

from __future__ import annotations

from ._content import CONTEXT_PARTS_META
from ._mcp import SessionMcp, merge_servers
from ._present import CallView, MetaView, Shown, TextCall, ToolView, result_content, text_block
from ._providers import PROVIDER_ID, SMALL_ID
from ._setup import (
    CommandOutcome,
    PromptStopped,
    SessionEnvironment,
    SessionFactory,
    SessionHandle,
    SessionSetup,
    ToolDisplay,
    with_client_prompt,
)
from ._store import SessionStore, write_json_atomic
from ._threads import CHILD_CANCELLED
from ._titles import MAX_TITLE
from ._usage import wire_usage

__all__ = [
    "CHILD_CANCELLED",
    "CONTEXT_PARTS_META",
    "MAX_TITLE",
    "PROVIDER_ID",
    "SMALL_ID",
    "CallView",
    "CommandOutcome",
    "MetaView",
    "PromptStopped",
    "SessionEnvironment",
    "SessionFactory",
    "SessionHandle",
    "SessionMcp",
    "SessionSetup",
    "SessionStore",
    "Shown",
    "TextCall",
    "ToolDisplay",
    "ToolView",
    "merge_servers",
    "result_content",
    "text_block",
    "wire_usage",
    "with_client_prompt",
    "write_json_atomic",
]
