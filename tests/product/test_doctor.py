"""`acp-agent doctor` against a tiny local OpenAI-compatible server, an unreachable port, a missing key,
a broken config and an MCP server that does not start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.process

ACP_AGENT = Path(sys.executable).parent / "acp-harness-agent"
MCP_TIME = Path(sys.executable).parent / "mcp-server-time"


class FakeOpenAI(BaseHTTPRequestHandler):
    """GET /v1/models and a streamed POST /v1/chat/completions; remembers the completion bodies."""

    bodies: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self.send_error(404)
            return
        payload = json.dumps({"object": "list", "data": [{"id": "tiny", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length))
        type(self).bodies.append(body)
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        base = {"id": "c1", "object": "chat.completion.chunk", "model": "tiny"}
        events: list[dict[str, Any]] = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "OK"}}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
            {**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}},
        ]
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def fake_server() -> Iterator[str]:
    FakeOpenAI.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def doctor(tmp_path: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update(ACP_AGENT_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"), **env_extra)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [str(ACP_AGENT), "doctor", "--cwd", str(project), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def user_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "xdg" / "acp-agent" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def lines(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in result.stdout.splitlines():
        status, _, rest = line.partition("  ")
        name, _, message = rest.strip().partition(": ")
        out[name] = f"{status.strip()} {message}"
    return out


def test_all_is_well_with_a_local_server_and_a_working_mcp_server(tmp_path: Path, fake_server: str) -> None:
    if not MCP_TIME.exists():
        pytest.skip("mcp-server-time is not installed in this environment")
    user_config(tmp_path, f'[mcp_servers.time]\ncommand = "{MCP_TIME}"\n')
    result = doctor(tmp_path, "--provider", "openai", "--model", "tiny", "--base-url", fake_server)
    checks = lines(result)
    assert result.returncode == 0, result.stdout + result.stderr
    assert checks["model endpoint"].startswith("ok") and "serves 'tiny'" in checks["model endpoint"]
    assert checks["model completion"].startswith("ok")
    assert checks["mcp server time"].startswith("ok") and "tools" in checks["mcp server time"]
    assert checks["home"].startswith("ok")
    assert checks["log file"].startswith("ok")
    (body,) = FakeOpenAI.bodies
    assert body["model"] == "tiny" and body["max_tokens"] == 1
    assert body["tools"][0]["function"]["name"] == "get_time"


def test_a_model_the_server_does_not_serve_is_named_with_the_choices(
    tmp_path: Path, fake_server: str
) -> None:
    result = doctor(tmp_path, "--provider", "openai", "--model", "huge", "--base-url", fake_server)
    assert result.returncode == 1
    assert "does not serve model 'huge'" in lines(result)["model endpoint"]
    assert "one of: tiny" in lines(result)["model endpoint"]


def test_an_unreachable_endpoint_fails_with_one_sentence(tmp_path: Path, refused_port: int) -> None:
    url = f"http://127.0.0.1:{refused_port}/v1"
    result = doctor(tmp_path, "--provider", "openai", "--model", "tiny", "--base-url", url)
    assert result.returncode == 1
    check = lines(result)["model endpoint"]
    assert check.startswith("FAIL") and url in check
    assert "Traceback" not in result.stdout + result.stderr


def test_a_missing_api_key_is_named_with_the_fix(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--provider", "openai", "--model", "gpt-x")
    assert result.returncode == 1
    check = lines(result)["model"]
    assert check.startswith("FAIL") and "OPENAI_API_KEY" in check and "api_key_file" in check


def test_no_model_configured_says_how(tmp_path: Path) -> None:
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert "ACP_AGENT_PROVIDER" in lines(result)["model"]


def test_a_broken_config_file_is_reported_and_the_other_checks_still_run(tmp_path: Path) -> None:
    path = user_config(tmp_path, "provider = \n")
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert f"FAIL  config: {path}: (file): is not valid TOML" in result.stdout
    assert lines(result)["home"].startswith("ok")
    assert "Traceback" not in result.stdout + result.stderr


def test_an_mcp_server_that_does_not_start_is_named_with_the_file(tmp_path: Path) -> None:
    path = user_config(
        tmp_path, '[mcp_servers.broken]\ncommand = "/nonexistent/mcp-server"\nargs = ["--x"]\n'
    )
    script = tmp_path / "script.json"
    script.write_text("[]", encoding="utf-8")
    result = doctor(tmp_path, "--provider", "script", ACP_AGENT_SCRIPT=str(script))
    assert result.returncode == 1
    check = lines(result)["mcp server broken"]
    assert check.startswith("FAIL")
    assert "/nonexistent/mcp-server --x" in check and str(path) in check and "did not start" in check
    assert "\n" not in check
    assert lines(result)["model"].startswith("ok")
    assert "Traceback" not in result.stdout + result.stderr


def test_each_setting_is_shown_with_where_it_came_from(tmp_path: Path, fake_server: str) -> None:
    user_config(tmp_path, 'model = "tiny"\n')
    result = doctor(tmp_path, "--provider", "openai", OPENAI_BASE_URL=fake_server)
    settings = lines(result)["settings"]
    assert "provider = openai (flag --provider)" in settings
    assert f"base_url = {fake_server} (environment OPENAI_BASE_URL)" in settings
    assert f"model = tiny ({tmp_path / 'xdg' / 'acp-agent' / 'config.toml'})" in settings
    assert lines(result)["model completion"].startswith("ok")


def test_an_untrusted_projects_server_is_reported_and_not_started(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    config = tmp_path / "project" / ".acp-agent" / "config.toml"
    config.parent.mkdir(parents=True)
    code = f"open({str(canary)!r}, 'w').write('ran')"
    config.write_text(
        f'[mcp_servers.evil]\ncommand = {json.dumps(sys.executable)}\nargs = ["-c", {json.dumps(code)}]\n'
    )
    script = tmp_path / "script.json"
    script.write_text("[]", encoding="utf-8")
    result = doctor(tmp_path, "--provider", "script", ACP_AGENT_SCRIPT=str(script))
    check = lines(result)["project trust"]
    assert check.startswith("warn") and "is not trusted" in check and "(MCP server evil)" in check
    assert "acp-harness-agent trust" in check
    assert "mcp server evil" not in lines(result)
    assert not canary.exists()


@pytest.mark.parametrize("kind", ["linked folder", "linked file", "FIFO"])
def test_a_project_config_that_is_no_regular_file_inside_is_named_and_not_read(
    tmp_path: Path, kind: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.toml").write_text('model = "LINKED-MODEL"\n')
    folder = tmp_path / "project" / ".acp-agent"
    if kind == "linked folder":
        folder.parent.mkdir(parents=True)
        folder.symlink_to(outside)
    else:
        folder.mkdir(parents=True)
        if kind == "linked file":
            (folder / "config.toml").symlink_to(outside / "config.toml")
        else:
            os.mkfifo(folder / "config.toml")  # doctor must not wait on it
    script = tmp_path / "script.json"
    script.write_text("[]", encoding="utf-8")
    result = doctor(tmp_path, "--provider", "script", ACP_AGENT_SCRIPT=str(script))
    said = {
        "linked folder": "is in .acp-agent, a symbolic link (to",
        "linked file": "is a symbolic link (to",
        "FIFO": "is a FIFO (named pipe), not a regular file",
    }[kind]
    assert any(line.strip().lower().startswith(("fail", "warn")) and "config.toml" in line and said in line
               for line in result.stdout.splitlines()), result.stdout  # fmt: skip
    assert "LINKED-MODEL" not in result.stdout


def test_path_entries_the_agent_never_searches_are_named_as_a_warning(tmp_path: Path) -> None:
    project = tmp_path / "project"
    system = os.environ["PATH"]
    result = doctor(tmp_path, PATH=os.pathsep.join(["", ".", f"{project}/bin", system]))
    warning = lines(result)["PATH"]
    assert warning.startswith("warn") and "an empty entry, '.', " in warning and f"{project}/bin" in warning
    assert "full path" in warning
    assert "PATH" not in lines(doctor(tmp_path, PATH=system))
