"""The web search endpoint is guarded as ``web_fetch`` is, and a project's choice of it needs trust: an
untrusted repository cannot send the searches the user approves where it likes, nor point the search at a
cloud metadata address or a name that rebinds to one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
import pytest

from acp_agent.config import load_config
from harness.testing import call_tool
from harness.tools.web import SearXng, WebSearch

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _resolves_to(*addresses: str) -> Callable[[str], Awaitable[list[str]]]:
    async def resolve(host: str) -> list[str]:
        return list(addresses)

    return resolve


def _search(
    url: str, *, allow_private: bool, resolver: Callable[[str], Awaitable[list[str]]], status: int = 200
) -> tuple[WebSearch, list[httpx2.Request]]:
    sent: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        if status in (301, 302, 307):
            return httpx2.Response(status, headers={"location": "http://169.254.169.254/latest/meta-data/"})
        return httpx2.Response(status, json={"results": [{"url": "https://example.org/", "title": "t"}]})

    backend = SearXng(
        url, transport=httpx2.MockTransport(handler), allow_private=allow_private, resolver=resolver
    )
    return WebSearch(backend), sent


@pytest.mark.parametrize(
    ("url", "addresses", "allow_private", "why"),
    [
        ("http://169.254.169.254/", (), True, "cloud metadata"),
        ("http://[fd00:ec2::254]/", (), True, "cloud metadata"),
        ("http://[::ffff:169.254.169.254]/", (), True, "cloud metadata"),
        ("http://metadata.example/", ("169.254.169.254",), True, "cloud metadata"),
        ("http://rebinding.example/", ("93.184.216.34", "169.254.169.254"), True, "cloud metadata"),
        ("http://0.0.0.0:8080/", (), True, "unspecified"),
        ("http://searx.internal/", ("10.0.0.7",), False, "private"),
        ("http://127.0.0.1:8888/", (), False, "loopback"),
        ("http://user:secret@searx.example/", ("93.184.216.34",), True, "credentials"),
        ("file:///etc/passwd", (), True, "http"),
        ("gopher://searx.example/", ("93.184.216.34",), True, "http"),
    ],
)
async def test_a_search_endpoint_the_guard_refuses_is_never_contacted(
    url: str, addresses: tuple[str, ...], allow_private: bool, why: str
) -> None:
    tool, sent = _search(url, allow_private=allow_private, resolver=_resolves_to(*addresses))
    with anyio.fail_after(10):
        out = await call_tool(tool, {"query": "the user's private question"})
    assert out.result.error and why in out.result.as_text(), out.result.as_text()
    assert sent == []


async def test_a_local_searxng_works_and_the_connection_is_pinned_to_the_checked_address() -> None:
    tool, sent = _search("http://searx.lan:8080", allow_private=True, resolver=_resolves_to("192.168.1.20"))
    with anyio.fail_after(10):
        out = await call_tool(tool, {"query": "q"})
    assert not out.result.error, out.result.as_text()
    (request,) = sent
    assert request.url.host == "192.168.1.20" and request.headers["host"] == "searx.lan:8080"


async def test_a_redirect_from_the_search_endpoint_is_not_followed() -> None:
    tool, sent = _search(
        "http://searx.lan", allow_private=True, resolver=_resolves_to("192.168.1.20"), status=302
    )
    with anyio.fail_after(10):
        out = await call_tool(tool, {"query": "q"})
    assert out.result.error and "302" in out.result.as_text()
    assert len(sent) == 1


def _tree(tmp_path: Path, project_toml: str) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".acp-agent").mkdir()
    (repo / ".acp-agent" / "config.toml").write_text(project_toml)
    (tmp_path / "xdg" / "acp-agent").mkdir(parents=True)
    env = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "ACP_AGENT_HOME": str(tmp_path / "agent"),
    }
    return repo, env


def test_an_untrusted_projects_search_endpoint_needs_trust(tmp_path: Path) -> None:
    repo, env = _tree(tmp_path, '[tools]\nsearxng_url = "https://collector.example/"\n')
    untrusted = load_config(repo, {}, env)
    assert untrusted.searxng_url is None
    assert untrusted.project is not None and not untrusted.project.trusted
    (item,) = untrusted.project.items
    assert item.key == "tools.searxng_url" and "collector.example" in item.text and "search" in item.text
    assert load_config(repo, {}, env, trust=True).searxng_url == "https://collector.example"
    # The user's own choice needs no trust and wins over an untrusted project's.
    own = load_config(repo, {}, {**env, "ACP_AGENT_SEARXNG_URL": "http://127.0.0.1:8888"})
    assert own.searxng_url == "http://127.0.0.1:8888"
