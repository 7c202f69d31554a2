"""``providers/set`` credentials never reach a log, whatever form they take: a URL's user and password, its
``?token=``/``key=`` values (percent-encoded too), header values sent under an escaped key name, and the
same values inside exception messages (a failed request logs its URL). Masked by value: the log (debug
level, stderr and the log file) must not hold any secret in any of its encodings."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest

from acp_conformance.fake_model import FakeModel, Turn
from harness.secrets import Secrets, encoded_forms
from tests.acp.frontier._frontier_support import frontier_agent

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

PASSWORD = "pw/With:Odd@Chars+1234"
USER = "gateway-user-31415926"
TOKEN = "tok-27182818/28459045"
KEY_VALUE = "key value 16180339"
HEADER = "hdr-secret-14142135"
ESCAPED_HEADER = "hdr-escaped-17320508"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _every_form(*values: str) -> list[str]:
    return sorted({form for v in values for form in encoded_forms(v)})


def _logs(root: Path) -> dict[str, str]:
    return {
        str(p): p.read_text(errors="replace")
        for p in root.rglob("*")
        if p.is_file() and ("log" in p.name or p.suffix == ".log")
    }


@pytest.mark.process
async def test_providers_set_credentials_are_masked_in_every_log_in_every_encoding(tmp_path: Path) -> None:
    with FakeModel([Turn(text="never")], model="local-model") as other:
        host = other.url.removeprefix("http://")
        base = (
            f"http://{quote(USER, safe='')}:{quote(PASSWORD, safe='')}@{host}/v1"
            f"?token={quote(TOKEN, safe='')}&key={quote(KEY_VALUE)}"
        )
        async with frontier_agent(
            tmp_path, [Turn(text="from A")], environ={"ACP_AGENT_LOG": str(tmp_path / "file.log")}
        ) as agent:
            client = agent.client
            with anyio.fail_after(60):
                sid = (await agent.new_session())["sessionId"]
                params = {
                    "providerId": "main",
                    "apiType": "openai",
                    "baseUrl": base,
                    "headers": {"X-Gw": HEADER},
                }
                assert await client.call("providers/set", params) == {}
                # The same request with the key names escaped (a name-based mask would not see them).
                raw = json.dumps({"jsonrpc": "2.0", "id": 777, "method": "providers/set", "params": params})
                raw = raw.replace('"headers"', '"h\\u0065aders"').replace(
                    '"providers/set"', '"provid\\u0065rs/set"'
                )
                raw = raw.replace(HEADER, ESCAPED_HEADER)
                await client.send_raw(raw.encode() + b"\n")
                assert (await client.response(777)).get("result") == {}
                # The model request goes to a URL holding them and fails: its error is logged.
                answer = await client.response(
                    await client.send_request("session/prompt", client.prompt_params(sid, "hi"))
                )
                assert "result" in answer or "error" in answer
            lines = b"\n".join(client.lines).decode(errors="replace")
    logs = _logs(tmp_path)
    assert logs, "no log was written"
    secrets = _every_form(PASSWORD, TOKEN, KEY_VALUE, HEADER, ESCAPED_HEADER, USER)
    leaked = {(name, s) for name, text in logs.items() for s in secrets if s in text}
    assert leaked == set()
    echoed = [line for line in lines.splitlines() if any(s in line for s in secrets)]
    assert echoed == [], "an answer echoed a credential"


def test_a_secret_is_masked_in_its_url_and_json_forms() -> None:
    secrets = Secrets(values=["a/b c+d\u00e9:e@f-0001"])
    for form in encoded_forms("a/b c+d\u00e9:e@f-0001"):
        assert secrets.redact(f"GET http://x/?q={form} failed") == "GET http://x/?q=[redacted] failed"
    assert "a%2fb" in str(encoded_forms("a/b c+d\u00e9:e@f-0001")).lower()
