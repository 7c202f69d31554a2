"""Answering the harness's pauses inline, through the editor.

``PermissionGate`` is the outermost tool middleware: when an inner one (the mode's policy) or the tool asks
(``context.needs_input``), it asks the editor and calls again with the answers (RUN_SPEC's inline-answering
idiom), so the run never pauses. An ``Approval`` becomes ``session/request_permission`` with allow_once,
allow_always, reject_once and reject_always; "always" answers are remembered through ``ModeState``. A
``Question`` becomes ``elicitation/create`` (form) when the client supports it, else a permission request
with one option per choice. A sub-agent's approval or question, where the client takes ``subagent_update``,
is asked in the child's own session about the child's own call. ``RunningMarker`` is the innermost: it sends
``in_progress`` when the call runs.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import anyio.to_thread

from harness import Approval, Decision, Need, Pending, Question, Result, ToolCall
from harness.policy import Policy, Rule, Verdict
from harness.tools import PathError, read_meta

from ...protocol.errors import ConnectionClosedError, RpcError
from ...protocol.jsonvalue import as_object
from ...protocol.models import (
    ContentToolCallContent,
    DiffToolCallContent,
    Notice,
    TextContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    dump,
)
from ...session.plugin import CHILD_CANCELLED, MetaView
from ._always import permission_options
from ._sandboxing import escalation_title

if TYPE_CHECKING:
    from harness import Call, Model, ToolCall, ToolSpec
    from harness.middleware import NextTool
    from harness.tools import FileSystem, Root

    from ...protocol.models import ToolCallContent
    from ...session.plugin import SessionEnvironment, SessionHandle, ToolView
    from ..models._model_facts import ModelFacts
    from ._modes import ModeState

__all__ = ["Cancelled", "LinkedControls", "PermissionGate", "RunningMarker", "SessionLink"]

log = logging.getLogger(__name__)

_MAX_ROUNDS: Final = 8
_PREVIEW_MAX_CHARS: Final = 200_000


class LinkedControls(Protocol):
    """What the session's parts built before its controls (``_controls.CodingControls``, which is built
    from them) use of the controls, through the link, once they are bound."""

    async def send_commands(self) -> None:
        """Tell the client the slash commands again (they changed)."""
        ...

    def facts(self) -> ModelFacts | None:
        """The current model's facts (its context window among them)."""
        ...

    def current_model(self) -> Model | None: ...


class SessionLink:
    """Holds the session once it exists (the factory runs before it); sends wait until then. Built in
    two phases: the parts of the set-up take the link first, then the controls built from those parts
    are bound to it (``bind_controls``); until then ``controls`` is None.

    ``running`` maps the ids of the tool calls running now to their tool names (kept by
    ``RunningMarker``: an MCP server's elicitation is shown with the call that caused it)."""

    def __init__(self) -> None:
        self.handle: SessionHandle | None = None
        self._controls: LinkedControls | None = None
        self.running: dict[str, str] = {}
        self._bound = anyio.Event()

    @property
    def controls(self) -> LinkedControls | None:
        """The session's controls, once bound (None while the set-up builds what they are built from)."""
        return self._controls

    def bind_controls(self, controls: LinkedControls) -> None:
        """The second phase of the set-up: the controls, built from the parts that hold this link."""
        self._controls = controls

    def bind(self, handle: SessionHandle) -> None:
        self.handle = handle
        self._bound.set()

    async def send(self, update: Any) -> None:
        if self.handle is None:
            await self._bound.wait()
        assert self.handle is not None
        await self.handle.send_update(update)

    async def advise(self, title: str, description: str | None, fallback: str) -> None:
        """Advisory news for the user: a ``warning`` notice where the client takes notices, else
        ``fallback`` as the agent's message."""
        if self.handle is None:
            await self._bound.wait()
        assert self.handle is not None
        await self.handle.send_notice(
            Notice(severity="warning", title=title, description=description), fallback
        )


class Cancelled(Exception):
    """The editor answered ``cancelled`` (or the connection closed): the turn is being cancelled."""


class RunningMarker:
    """Innermost tool middleware: ``in_progress`` once the call really runs (after any approval)."""

    def __init__(self, link: SessionLink) -> None:
        self.link = link

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        await self.link.send(ToolCallProgress(tool_call_id=call.id, status="in_progress"))
        self.link.running[call.id] = call.name
        try:
            return await next(call, context)
        finally:
            self.link.running.pop(call.id, None)


@dataclass(slots=True)
class PermissionGate:
    """Outermost tool middleware: answers approvals and questions through the editor."""

    env: SessionEnvironment
    modes: ModeState
    link: SessionLink
    views: Mapping[str, ToolView]
    root: Root = field(kw_only=True)
    fs: FileSystem = field(kw_only=True)

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        result = await next(call, context)
        for _ in range(_MAX_ROUNDS):
            pending = context.pending()
            if pending is None:
                return result
            answers: dict[str, Any] = {}
            handle = self.link.handle
            # A sub-agent announced to the client (``subagent_update``): its permission requests and its
            # questions go to its session, about its own call, and it shows ``requires_action`` while they
            # wait.
            child = handle.child_session(call.id) if handle is not None else None
            try:
                if handle is not None and child is not None:
                    await handle.child_waits(call.id, True)
                for need in pending.needs:
                    nested = _nested_call(call, pending, need) if child is not None else None
                    if isinstance(need, Approval):
                        answers[need.id] = await self._approve(nested or call, context, need, child)
                    else:
                        answers[need.id] = await self._ask(nested or call, need, child if nested else None)
            except Cancelled:
                # Nothing is left pending: the call ends cancelled (else the harness keeps it awaiting an
                # answer, and the client is shown "(awaiting input)").
                context.answer({})
                if child is not None:  # the child's own request was cancelled: that child alone ends
                    return Result.failure(CHILD_CANCELLED, meta={"cancelled": True})
                if handle is not None:
                    handle.cancel()
                return Result.failure("Cancelled: the user cancelled the turn")
            if handle is not None and child is not None:
                await handle.child_waits(call.id, False)
            context.answer(answers)
            result = await next(call, context)
        return result

    # --- approvals ---------------------------------------------------------------------------------

    async def _approve(
        self, call: ToolCall, context: Call, need: Approval, session_id: str | None = None
    ) -> Decision:
        """``call``'s approval (a sub-agent's own call, asked in its session ``session_id``)."""
        policy = self.modes.policy
        spec = context.spec if call.id == context.id else None  # (a sub-agent's call: not the agent's spec)
        leaving = escalation_title(call.name, call.input)  # leaving the sandbox asks every time
        judged = await anyio.to_thread.run_sync(policy.judge, call, spec)
        # Leaving the sandbox, or writing a protected path, is asked about every time: no "always allow".
        no_always = leaving or judged.protected
        allow_rules = [] if no_always else await _suggest(policy, call, Verdict.ALLOW, spec)
        deny_rules = await _suggest(policy, call, Verdict.DENY, spec)
        # Each "always" option's name lists exactly the rules it stores; one that cannot is not offered
        # (and ``request_permission`` takes no option that was not offered).
        options = permission_options(allow_rules, deny_rules)
        tool_call = await self._describe(call, context, _protected_note(judged.protected), title=leaving)
        chosen, problem = await self._request_permission(tool_call, options, session_id)
        if problem is not None:  # told to the model as the call's result; the turn goes on
            return Decision.deny(
                f"{call.name} was not run: the editor's answer to the permission request was malformed "
                f"({problem}), so nothing was approved; ask the user before trying again"
            )
        if chosen == "allow_always":
            await self.modes.remember(allow_rules)
            return Decision.allow()
        if chosen == "allow_once":
            return Decision.allow()
        if chosen == "reject_always":
            await self.modes.remember(deny_rules)
        return Decision.deny(f"the user rejected {call.name}")

    async def confirm(self, title: str, note: str, paths: Sequence[str] = ()) -> bool:
        """Ask yes or no about something the user asked for that is not a model's tool call (``/undo``):
        shown as a tool call of its own (``note`` its text), ended ``completed`` or ``failed`` with the
        answer. Raises ``Cancelled`` when the editor answers cancelled."""
        start = ToolCallStart(
            tool_call_id=f"confirm_{uuid.uuid4().hex[:12]}",
            title=title,
            kind="edit",
            status="pending",
            content=[ContentToolCallContent(content=TextContent(text=note))],
            locations=[ToolCallLocation(path=p) for p in paths] or None,
        )
        await self.link.send(start)
        options = [
            {"optionId": "allow_once", "name": "Yes", "kind": "allow_once"},
            {"optionId": "reject_once", "name": "No", "kind": "reject_once"},
        ]
        request = dump(start)
        request.pop("sessionUpdate", None)
        yes = False
        try:
            yes = await self.request_permission(request, options) == "allow_once"
        finally:
            if yes:  # a "no" the client marked rejected itself: no status over that
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.link.send(
                        ToolCallProgress(tool_call_id=start.tool_call_id, status="completed")
                    )
        return yes

    async def request_permission(self, tool_call: dict[str, Any], options: list[dict[str, str]]) -> str:
        """``session/request_permission``: the chosen option id (``reject_once`` when the request failed or
        the answer is malformed or not an offered option). Raises ``Cancelled`` when the editor answers
        cancelled."""
        return (await self._request_permission(tool_call, options))[0]

    async def _request_permission(
        self, tool_call: dict[str, Any], options: list[dict[str, str]], session_id: str | None = None
    ) -> tuple[str, str | None]:
        """``request_permission``'s answer (asked in ``session_id``, else the session's), and what was wrong
        with the editor's answer when it was malformed (then the answer is ``reject_once``; the problem is
        logged)."""
        try:
            answer = await self.env.connection.request(
                "session/request_permission",
                {"sessionId": session_id or self.env.session_id, "toolCall": tool_call, "options": options},
            )
        except ConnectionClosedError:
            raise Cancelled() from None
        except RpcError as exc:
            log.warning("session/request_permission failed (%s); treating it as a rejection", exc)
            return "reject_once", None
        problem = _malformed(answer, {o["optionId"] for o in options})
        if problem == "cancelled":
            raise Cancelled()
        if problem is not None:
            log.warning(
                "malformed session/request_permission answer (%s); treating it as a rejection", problem
            )
            return "reject_once", problem
        return str(as_object(as_object(answer).get("outcome")).get("optionId")), None

    async def _describe(
        self, call: ToolCall, context: Call, note: str | None = None, *, title: str | None = None
    ) -> dict[str, Any]:
        """The permission request's ``toolCall``: title (``title``, else the view's), kind, input and what
        would change; ``note`` (why this always asks) first. A command is shown once: in a ``sh`` block
        only when the title does not already hold it whole."""
        view = self.views.get(call.name) or MetaView(
            call.name, read_meta(context.spec.meta if context.spec is not None else {})
        )
        content: list[ToolCallContent] = await self._preview(call)
        title = title or view.title(call.input) or call.name
        command = call.input.get("command")
        if (
            not content
            and view.kind == "execute"
            and isinstance(command, str)
            and command.strip() not in title
        ):
            content = [ContentToolCallContent(content=TextContent(text=f"```sh\n{command}\n```"))]
        if note is not None:
            content.insert(0, ContentToolCallContent(content=TextContent(text=note)))
        update = ToolCallUpdate(
            tool_call_id=call.id,
            title=title,
            kind=view.kind,
            status="pending",
            raw_input=call.input,
            content=content or None,
            locations=view.locations(call.input),
        )
        return dump(update)

    async def _preview(self, call: ToolCall) -> list[ToolCallContent]:
        """The diff a write or edit would make (nothing when it cannot be known in advance)."""
        inp = call.input
        if call.name == "apply_patch" and isinstance(inp.get("patch"), str):
            patch = str(inp["patch"])[:_PREVIEW_MAX_CHARS]
            return [ContentToolCallContent(content=TextContent(text=f"```diff\n{patch}\n```"))]
        if call.name not in ("write_file", "edit_file") or not isinstance(inp.get("path"), str):
            return []
        try:
            path = await self.root.resolve(str(inp["path"]))
        except PathError:
            return []
        try:
            old: str | None = await self.fs.read_text(path)
        except FileNotFoundError:
            old = None
        except (OSError, UnicodeError):
            return []
        if call.name == "write_file" and isinstance(inp.get("content"), str):
            return [DiffToolCallContent(path=str(path), old_text=old, new_text=str(inp["content"]))]
        old_text, new_text = inp.get("old_text"), inp.get("new_text")
        if (
            old is None
            or not isinstance(old_text, str)
            or not isinstance(new_text, str)
            or old_text not in old
        ):
            return []
        count = -1 if inp.get("replace_all") else 1
        return [
            DiffToolCallContent(path=str(path), old_text=old, new_text=old.replace(old_text, new_text, count))
        ]

    # --- questions ---------------------------------------------------------------------------------

    def can_elicit(self, mode: str = "form") -> bool:
        """Whether the client advertised ``elicitation.<mode>`` (``form`` or ``url``)."""
        return as_object(self.env.client_capabilities.get("elicitation")).get(mode) is not None

    async def _ask(self, call: ToolCall, question: Question, session_id: str | None = None) -> Any:
        """``call``'s question (a sub-agent's own call, asked in its session ``session_id``)."""
        if self.can_elicit("form"):
            return await self._elicit(call, question, session_id)
        return await self.ask_by_permission(
            {"toolCallId": call.id, "title": question.text, "status": "pending", "rawInput": call.input},
            question,
            session_id,
        )

    async def ask_by_permission(
        self, tool_call: dict[str, Any], question: Question, session_id: str | None = None
    ) -> Any:
        """A question with choices as a permission request (one option per choice, then Decline), asked in
        ``session_id``, else the session's: the chosen choice, or a denying ``Decision``. Raises
        ``Cancelled`` when the editor answers cancelled."""
        if not question.choices:
            return Decision.deny("the editor cannot ask free-form questions")
        options = [
            {"optionId": f"choice_{i}", "name": choice, "kind": "allow_once"}
            for i, choice in enumerate(question.choices)
        ]
        options.append({"optionId": "decline", "name": "Decline", "kind": "reject_once"})
        chosen = (await self._request_permission(tool_call, options, session_id))[0]
        if chosen.startswith("choice_"):
            return question.choices[int(chosen.removeprefix("choice_"))]
        return Decision.deny("the user declined to answer")

    async def elicit(self, params: dict[str, Any], session_id: str | None = None) -> dict[str, Any] | None:
        """``elicitation/create`` with ``params`` (``sessionId`` added: ``session_id``, else the
        session's): the answer as an object, or None when the request failed. Raises ``Cancelled`` when
        the connection closed."""
        try:
            answer = await self.env.connection.request(
                "elicitation/create", {"sessionId": session_id or self.env.session_id, **params}
            )
        except ConnectionClosedError:
            raise Cancelled() from None
        except RpcError as exc:
            log.warning("elicitation/create failed (%s)", exc)
            return None
        return as_object(answer)

    async def _elicit(self, call: ToolCall, question: Question, session_id: str | None) -> Any:
        prop: dict[str, Any] = {"type": "string", "title": "Answer"}
        if question.choices:
            prop["enum"] = list(question.choices)
        answer = await self.elicit(
            {
                "toolCallId": call.id,
                "mode": "form",
                "message": question.text,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"answer": prop},
                    "required": ["answer"],
                },
            },
            session_id,
        )
        if answer is None:
            return Decision.deny("the editor could not ask the question")
        action = answer.get("action")
        content = as_object(answer.get("content"))
        if action == "accept" and "answer" in content:
            value = content["answer"]
            if question.choices is None or value in question.choices:
                return value
        if action == "cancel":
            raise Cancelled()
        return Decision.deny("the user declined to answer")


async def _suggest(policy: Policy, call: ToolCall, verdict: Verdict, spec: ToolSpec | None) -> list[Rule]:
    return await anyio.to_thread.run_sync(policy.suggest, call, verdict, spec)


def _nested_call(call: ToolCall, pending: Pending, need: Need) -> ToolCall | None:
    """The sub-agent's own call that ``need`` of the agent call ``call`` is about (``AgentTool`` prefixes
    the need's id with it and keeps its pending calls in the state), with the id the client was shown
    (``<call>/<child call>``); None when the need is the agent call's own."""
    child_id, slash, _ = need.id.partition("/")
    state = as_object(pending.state)
    if not slash:
        return None
    for item in state.get("pending") or ():
        nested = Pending.from_dict(as_object(item)).call
        if nested.id == child_id:
            return ToolCall(f"{call.id}/{nested.id}", nested.name, nested.input)
    return None


def _protected_note(found: Sequence[tuple[str, str]]) -> str | None:
    """The permission request's first line when the call writes protected paths: which, and why."""
    if not found:
        return None
    lines = [f"⚠ `{path}`: {why}." for path, why in found]
    lines.append(
        "Protected paths are asked about every time; no rule or mode short of full-access allows them."
    )
    return "\n".join(lines)


def _malformed(answer: Any, offered: set[str]) -> str | None:
    """What is wrong with a ``session/request_permission`` answer (None: a choice of an offered option;
    ``"cancelled"``: the editor cancelled)."""
    if not isinstance(answer, dict):
        return f"the result is {type(answer).__name__}, not an object"
    outcome: Any = as_object(answer).get("outcome")
    if not isinstance(outcome, dict):
        return "no outcome object"
    fields = as_object(outcome)
    match fields.get("outcome"):
        case "cancelled":
            return "cancelled"
        case "selected":
            chosen = fields.get("optionId")
            if chosen in offered:
                return None
            return f"optionId {chosen!r} is not one of the offered options {sorted(offered)}"
        case other:
            return f"outcome {other!r} is neither 'selected' nor 'cancelled'"
