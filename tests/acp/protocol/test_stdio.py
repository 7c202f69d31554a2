from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.process

SCRIPT = Path(__file__).parent / "_stdio_agent_script.py"
REPO = Path(__file__).resolve().parents[3]
REQUESTS = (
    b'{"jsonrpc":"2.0","id":1,"method":"first","params":{"text":"h\xc3\xa9"}}\n'
    b'{"jsonrpc":"2.0","method":"note","params":{}}\n'
    b'{"jsonrpc":"2.0","id":"two","method":"second"}\n'
)


def run_agent(stdin: int | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if isinstance(stdin, bytes):
        return subprocess.run(
            [sys.executable, str(SCRIPT)], input=stdin, capture_output=True, timeout=60, env=env, check=False
        )
    return subprocess.run(
        [sys.executable, str(SCRIPT)], stdin=stdin, capture_output=True, timeout=60, env=env, check=False
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_stray_output_goes_to_stderr_and_protocol_lines_stay_clean_over_a_pipe(
    anyio_backend: str,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    async with await anyio.open_process([sys.executable, str(SCRIPT)], env=env) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        await process.stdin.send(REQUESTS)
        output = b""
        with anyio.fail_after(30):
            while output.count(b"\n") < 2:
                output += await process.stdout.receive()
            await process.stdin.aclose()  # EOF only after every answer arrived
            output += b"".join([chunk async for chunk in process.stdout])
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
            assert await process.wait() == 0, stderr
    messages: list[dict[str, Any]] = [json.loads(line) for line in output.splitlines()]
    assert {m["id"]: m["result"]["method"] for m in messages} == {1: "first", "two": "second"}
    assert all(m["jsonrpc"] == "2.0" and m["result"]["child"] == 0 for m in messages)
    assert messages[0]["result"]["params"] == {"text": "hé"} or messages[1]["result"]["params"] == {
        "text": "hé"
    }
    for text in ("garbage at start-up", "stray print from a handler", "child output", "notification note"):
        assert text in stderr
    # Children saw /dev/null on stdin (read 0 bytes), not the protocol input.
    # One write per child, so two children running at once cannot interleave their lines.
    assert stderr.count("child output, stdin bytes: 0\n") == 2


def test_regular_file_stdin_is_read_and_every_request_answered_once(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_bytes(REQUESTS)
    with path.open("rb") as stdin:
        result = run_agent(stdin.fileno())
    assert result.returncode == 0, result.stderr.decode()
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    # EOF follows the requests at once, so in-flight handlers may be cancelled (-32800) by design.
    assert sorted(str(m["id"]) for m in messages) == ["1", "two"]
    assert all("result" in m or m["error"]["code"] == -32800 for m in messages)
    assert "garbage at start-up" in result.stderr.decode()


def test_dev_null_stdin_exits_zero_without_output() -> None:
    result = run_agent(subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b""
