"""What the same session costs in acp-agent and in its peers (claude-agent-acp, fast-agent).

One scripted multi-turn coding session (reads, a grep, an edit, a write, a shell command, plain answers)
driven over ACP through each agent's real process against the loopback Anthropic server of
``bench/_cache_sim`` (it bills like Anthropic's cache: only prefixes ending at a ``cache_control`` block
are written, read back when byte-identical). The user's prompts are the same for every agent; the model's
replies are the same steps, each written in that agent's own tool names and input shapes
(``DIALECTS``). The server picks each reply from the conversation it is sent (which prompt the request
answers, how many assistant messages follow it), so an agent's side requests (titles, command checks:
requests without tools) get a short text and do not shift the script; they are billed too, at Haiku's
price when they name a Haiku model.

Reported per agent: base request tokens (tools + system of the first scripted request, 4 characters a
token), input tokens over the session, the share served from the cache, the billed cost at Sonnet's
prices; and the ratios acp-agent / claude-agent-acp (target <= 0.3) and acp-agent / fast-agent (target
<= 1.5). The peers are installed outside the project by ``bench/peers-install.sh`` (into
``.cache/peers/``); a peer that is not there is skipped with the reason. Not run in ``--quick`` mode.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from acp_conformance.fake_model import Reply
from acp_conformance.fake_model.server import Recorded
from bench._cache_sim import (
    Billed,
    CacheServer,
    Step,
    _anthropic_sse,
    strip_cache_control,
    tokens,
)
from bench._rpc import INIT, REPO, Agent, figure, our_agent, prompt_turn
from bench.cost import _project

BENCH = "peers_cost"
PEERS = REPO / ".cache" / "peers"
SONNET = (3.0, 15.0, 0.30, 3.75)
HAIKU = (1.0, 5.0, 0.10, 1.25)
TURN_TIMEOUT_S = 120

# --- the session, in abstract actions ------------------------------------------------------------------

Action = tuple[str, dict[str, str]]  # ("read" | "grep" | "edit" | "write" | "shell", arguments)


@dataclass(frozen=True)
class Turn:
    prompt: str
    actions: tuple[Action, ...]
    answer: str


SESSION: tuple[Turn, ...] = (
    Turn(
        "What does src/m0.py define?", (("read", {"path": "src/m0.py"}),), "src/m0.py defines 30 functions."
    ),
    Turn("Where is f1_3 used?", (("grep", {"pattern": "f1_3"}),), "Only where it is defined, in src/m1.py."),
    Turn(
        "Rename f0_3 to triple in src/m0.py.",
        (("edit", {"path": "src/m0.py", "old": "def f0_3(x):", "new": "def triple(x):"}),),
        "Renamed.",
    ),
    Turn("Thanks. Is anything else named like that?", (), "No other function has that pattern left."),
    Turn(
        "Write a NOTES.md that lists the modules.",
        (
            (
                "write",
                {"path": "NOTES.md", "content": "# Modules\n\n" + "".join(f"- m{i}\n" for i in range(8))},
            ),
        ),
        "NOTES.md is written.",
    ),
    Turn(
        "How many modules are there? Check with a command.", (("shell", {"command": "ls src | wc -l"}),), "8."
    ),
    Turn("What does src/m1.py define?", (("read", {"path": "src/m1.py"}),), "30 small functions."),
    Turn("Explain f1_2 in one line.", (), "It returns its argument times two."),
    Turn("Where is f2_5 used?", (("grep", {"pattern": "f2_5"}),), "Only in src/m2.py."),
    Turn(
        "Rename f1_4 to quadruple in src/m1.py.",
        (("edit", {"path": "src/m1.py", "old": "def f1_4(x):", "new": "def quadruple(x):"}),),
        "Renamed.",
    ),
    Turn(
        "Run git status for me.",
        (("shell", {"command": "git status --short"}),),
        "Two files changed, one new.",
    ),
    Turn("Thanks, that is all.", (), "Glad to help."),
)

# --- each agent's dialect --------------------------------------------------------------------------------

Dialect = Callable[[Action, Path], tuple[str, dict[str, Any]]]


def _ours(action: Action, repo: Path) -> tuple[str, dict[str, Any]]:
    kind, a = action
    match kind:
        case "read":
            return "read_file", {"path": a["path"]}
        case "grep":
            return "grep", {"pattern": a["pattern"]}
        case "edit":
            return "edit_file", {"path": a["path"], "old_text": a["old"], "new_text": a["new"]}
        case "write":
            return "write_file", {"path": a["path"], "content": a["content"]}
        case _:
            return "shell", {"command": a["command"]}


def _claude(action: Action, repo: Path) -> tuple[str, dict[str, Any]]:
    kind, a = action
    match kind:
        case "read":
            return "Read", {"file_path": str(repo / a["path"])}
        case "grep":
            return "Grep", {"pattern": a["pattern"], "output_mode": "content"}
        case "edit":
            return "Edit", {
                "file_path": str(repo / a["path"]),
                "old_string": a["old"],
                "new_string": a["new"],
            }
        case "write":
            return "Write", {"file_path": str(repo / a["path"]), "content": a["content"]}
        case _:
            return "Bash", {"command": a["command"], "description": "Run " + a["command"]}


def _fast(action: Action, repo: Path) -> tuple[str, dict[str, Any]]:
    """fast-agent with its local shell and file runtime (``--shell``): ``read_text_file``, ``edit_file``
    (which also creates a file, from an empty ``old_string``) and ``bash``; it has no search tool, so the
    grep is a command, as its model would run it."""
    kind, a = action
    match kind:
        case "read":
            return "read_text_file", {"path": a["path"]}
        case "grep":
            return "bash", {
                "command": f"grep -rn --exclude-dir=.git --exclude-dir=.fast-agent {a['pattern']} ."
            }
        case "edit":
            return "edit_file", {"path": a["path"], "old_string": a["old"], "new_string": a["new"]}
        case "write":
            return "edit_file", {"path": a["path"], "old_string": "", "new_string": a["content"]}
        case _:
            return "bash", {"command": a["command"]}


# --- the server: the reply follows from the conversation ------------------------------------------------


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def _has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


class SessionServer(CacheServer):
    """A ``CacheServer`` whose reply is chosen from the request: the latest scripted prompt in it and the
    number of assistant messages after that prompt; requests without tools are side requests."""

    def __init__(self, dialect: Dialect, repo: Path) -> None:
        super().__init__([])
        self.dialect, self.repo = dialect, repo
        self.main: list[int] = []  # indexes into billed/bodies of the scripted requests
        self.side_models: list[str] = []

    def _step(self, body: dict[str, Any]) -> Step | None:
        messages: list[dict[str, Any]] = body.get("messages", [])
        turn, after = None, 0
        for i, m in enumerate(messages):
            if m.get("role") == "user" and not _has_tool_result(m.get("content")):
                text = _texts(m.get("content"))
                found = [t for t in SESSION if t.prompt in text]
                if found:
                    turn, after = found[-1], sum(1 for n in messages[i + 1 :] if n.get("role") == "assistant")
        if turn is None or not body.get("tools"):
            return None
        if after < len(turn.actions):
            return Step(calls=(self.dialect(turn.actions[after], self.repo),))
        return Step(text=turn.answer)

    def _answer(self, request: Recorded) -> Reply:
        body: Any = request.json if request.body else None
        if request.method != "POST" or not isinstance(body, dict) or not request.path.endswith("/messages"):
            if request.path.endswith("/count_tokens"):
                return Reply.json(200, {"input_tokens": tokens(request.body.decode(errors="replace"))})
            return Reply.json(200, {"data": [], "object": "list", "has_more": False})
        request_body: dict[str, Any] = body
        with self._lock:
            step = self._step(request_body)
            if step is None:
                self.side_models.append(str(request_body.get("model", "")))
                step = Step(text="Side answer.", output_tokens=10)
            else:
                self.main.append(len(self.billed))
            billed = self._anthropic(request_body, step)
            self.billed.append(billed)
            self.bodies.append(request_body)
            # Unique message and tool-use ids: Claude Code merges assistant messages that share an id.
            n = len(self.billed)
            sse = _anthropic_sse(step, billed).replace(b'"msg_sim"', f'"msg_sim{n}"'.encode())
            return Reply.sse(re.sub(rb'"toolu_\d+_', f'"toolu_{n}_'.encode(), sse))


# --- the agents ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    name: str
    dialect: Dialect
    command: Callable[[Path, str], tuple[list[str], dict[str, str]] | str]
    """(root, server url) -> (argv, env), or why it cannot run here."""
    mode: str | None = None  # an ACP mode to set after session/new


def _ours_cmd(root: Path, url: str) -> tuple[list[str], dict[str, str]]:
    cmd, env = our_agent(root / "home")
    env.update(
        ACP_AGENT_PROVIDER="anthropic",
        ACP_AGENT_BASE_URL=url,
        ACP_AGENT_MODEL="claude-sonnet-4-5",
        ACP_AGENT_API_KEY="sk-bench-peers-0123456789",
        ACP_AGENT_DEFAULT_MODE="accept-edits",
        PYTHONPATH=str(REPO),  # the process runs in the scratch project: this checkout's agent
    )
    return cmd, env


def _claude_cmd(root: Path, url: str) -> tuple[list[str], dict[str, str]] | str:
    exe = PEERS / "npm" / "node_modules" / ".bin" / "claude-agent-acp"
    if not exe.exists():
        return f"claude-agent-acp is not installed ({exe}): run bench/peers-install.sh"
    if shutil.which("node") is None:
        return "claude-agent-acp needs node on PATH"
    env = {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-bench-peers-0123456789",
        "ANTHROPIC_MODEL": "claude-sonnet-4-5",
        "ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-4-5",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        # Claude Code refuses to start its permission modes as root (this machine) unless told it is sandboxed.
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "HOME": str(root),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
    }
    return [str(exe)], env


def _fast_cmd(root: Path, url: str) -> tuple[list[str], dict[str, str]] | str:
    exe = PEERS / "fast-agent" / "bin" / "fast-agent"
    if not exe.exists():
        return f"fast-agent is not installed ({exe}): run bench/peers-install.sh"
    # Its settings from the environment (``SECTION__KEY``): a config file would make its directory the
    # agent's working directory.
    env = {
        "ANTHROPIC__BASE_URL": url,
        "ANTHROPIC__API_KEY": "sk-ant-bench-peers-0123456789",
        "ANTHROPIC_API_KEY": "sk-ant-bench-peers-0123456789",
        "HOME": str(root),
    }
    return [str(exe), "serve", "--transport", "acp", "--shell", "--model", "sonnet"], env


AGENTS = (
    Peer("acp-agent", _ours, _ours_cmd),
    Peer("claude-agent-acp", _claude, _claude_cmd, mode="acceptEdits"),
    Peer("fast-agent", _fast, _fast_cmd),
)


async def _turn(agent: Agent, sid: str, text: str) -> None:
    with anyio.fail_after(TURN_TIMEOUT_S):
        await prompt_turn(agent, sid, text)


@dataclass
class Run:
    name: str
    billed: list[Billed]
    models: list[str]
    base: int
    requests: int
    side: int


async def _run(peer: Peer) -> Run | str:
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        root = Path(tmp)
        repo = _project(root)
        server = SessionServer(peer.dialect, repo)
        with server:
            got = peer.command(root, server.url)
            if isinstance(got, str):
                return got
            cmd, env = got
            env.setdefault("HOME", str(root))
            env["XDG_CONFIG_HOME"] = str(root / "xdg")
            agent = await Agent.spawn(cmd, env, cwd=repo)
            try:
                with anyio.fail_after(60):
                    await agent.call("initialize", INIT)
                    sid = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
                    if peer.mode:
                        await agent.call("session/set_mode", {"sessionId": sid, "modeId": peer.mode})
                for turn in SESSION:
                    await _turn(agent, sid, turn.prompt)
            finally:
                await agent.close()
            if not server.main:
                return f"{peer.name} sent no scripted request"
            first = server.bodies[server.main[0]]
            return Run(
                peer.name,
                list(server.billed),
                [str(b.get("model", "")) for b in server.bodies],
                base_tokens(first),
                len(server.main),
                len(server.billed) - len(server.main),
            )


def base_tokens(body: dict[str, Any]) -> int:
    """Tools + system of an Anthropic request, in estimated tokens."""
    return tokens(
        json.dumps(strip_cache_control([body.get("tools"), body.get("system")]), ensure_ascii=False)
    )


def billed_cost(billed: Sequence[Billed], models: Sequence[str]) -> float:
    total = 0.0
    for b, model in zip(billed, models, strict=True):
        p = HAIKU if "haiku" in model else SONNET
        total += (b.input * p[0] + b.output * p[1] + b.cache_read * p[2] + b.cache_write * p[3]) / 1e6
    return total


def _share(billed: Sequence[Billed]) -> float:
    prompt = sum(b.prompt for b in billed)
    return sum(b.cache_read for b in billed) / prompt if prompt else 0.0


def _rows(run: Run) -> list[dict[str, Any]]:
    extra: dict[str, Any] = {"agent": run.name, "requests": run.requests, "side_requests": run.side}
    name = run.name.replace("-", "_")
    return [
        figure(BENCH, f"{name}_base_request_tokens", run.base, None, **extra),
        figure(BENCH, f"{name}_input_tokens", sum(b.prompt for b in run.billed), None, **extra),
        figure(BENCH, f"{name}_cached_share_pct", _share(run.billed) * 100, None, **extra),
        figure(BENCH, f"{name}_billed_cents", billed_cost(run.billed, run.models) * 100, None, **extra),
    ]


async def run(quick: bool) -> list[dict[str, Any]]:
    if quick:
        print(f"# {BENCH}: skipped in --quick mode (the peers' runs take minutes)", file=sys.stderr)
        return []
    runs: dict[str, Run] = {}
    rows: list[dict[str, Any]] = []
    for peer in AGENTS:
        got = await _run(peer)
        if isinstance(got, str):
            print(f"# {BENCH}: {peer.name} skipped: {got}", file=sys.stderr)
            continue
        runs[peer.name] = got
        rows += _rows(got)
    ours = runs.get("acp-agent")
    for peer, target in (("claude-agent-acp", 0.3), ("fast-agent", 1.5)):
        if ours is not None and peer in runs:
            mine, theirs = (
                billed_cost(ours.billed, ours.models),
                billed_cost(runs[peer].billed, runs[peer].models),
            )
            key = peer.replace("-", "_")
            rows.append(
                # baseline: the peer's billed cost, in cents
                figure(
                    BENCH, f"ratio_to_{key}", mine / theirs, target, baseline=theirs * 100, turns=len(SESSION)
                )
            )
    return rows
