"""web_fetch (SSRF guard on every hop, pinning, caps, HTML to text) and web_search (SearXNG)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from harness.testing import ToolOutcome, call_tool
from harness.tools._html import html_to_text
from harness.tools._ssrf import Blocked, check_address
from harness.tools.web import SearchHit, SearXng, WebFetch, WebSearch

pytestmark = pytest.mark.anyio

PAGE = b"""<!doctype html><html><head><title>Rivers of Paris</title>
<style>body { color: red }</style><script>alert("x")</script></head>
<body><nav><a href="/home">Home</a></nav>
<h1>The Seine</h1><p>The <b>Seine</b> flows&nbsp;through &amp; around Paris.</p>
<ul><li>Length: 777 km</li><li>Source: <a href="/source">Source-Seine</a></li></ul>
<pre>  code  block
  kept</pre></body></html>"""


class Handler(BaseHTTPRequestHandler):
    seen: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, body: bytes, ctype: str = "text/plain", headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Handler.seen.append(self.path)
        url = urlsplit(self.path)
        q = parse_qs(url.query)
        if url.path == "/page":
            self._send(200, PAGE, "text/html; charset=utf-8")
        elif url.path == "/host":
            self._send(200, f"host={self.headers.get('Host')}".encode())
        elif url.path == "/redirect":
            self._send(302, b"", headers={"Location": q["to"][0]})
        elif url.path.startswith("/chain/"):
            n = int(url.path.rsplit("/", 1)[1])
            if n == 0:
                self._send(200, b"end of chain")
            else:
                self._send(301, b"", headers={"Location": f"/chain/{n - 1}"})
        elif url.path == "/big":
            self._send(200, b"a" * 100_000)
        elif url.path == "/bin":
            self._send(200, b"\x00\x01\x02", "application/octet-stream")
        else:
            self._send(404, b"no such page")


@pytest.fixture
def server() -> Iterator[int]:
    Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def resolver(table: dict[str, list[str]]) -> Any:
    async def resolve(host: str) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


NAMES = {
    "site.test": ["127.0.0.1"],
    "public.test": ["127.0.0.1"],
    "mixed.test": ["93.184.216.34", "127.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "public.example": ["93.184.216.34"],
    "internal.test": ["10.0.0.5"],
}


async def fetch(tool: WebFetch, url: str) -> ToolOutcome:
    with anyio.fail_after(10):
        return await call_tool(tool, {"url": url})


async def test_a_page_is_fetched_as_readable_text_with_the_name_kept_in_host(server: int) -> None:
    tool = WebFetch(allow_private=True, resolver=resolver(NAMES))
    out = await fetch(tool, f"http://site.test:{server}/page")
    text = out.result.as_text()
    assert not out.result.error, text
    assert "# Rivers of Paris" in text and "# The Seine" in text
    assert "The Seine flows through & around Paris." in text
    assert "- Length: 777 km" in text
    assert f"[Source-Seine](http://site.test:{server}/source)" in text
    assert "alert" not in text and "color" not in text
    host = await fetch(tool, f"http://site.test:{server}/host")
    assert f"host=site.test:{server}" in host.result.as_text()


async def test_a_name_resolving_to_loopback_is_refused(server: int) -> None:
    out = await fetch(WebFetch(resolver=resolver(NAMES)), f"http://public.test:{server}/page")
    assert out.result.error and "refused" in out.result.as_text()
    assert "loopback" in out.result.as_text()
    assert Handler.seen == []


async def test_one_private_answer_among_public_ones_refuses_the_name(server: int) -> None:
    out = await fetch(WebFetch(resolver=resolver(NAMES)), f"http://mixed.test:{server}/page")
    assert out.result.error and "127.0.0.1" in out.result.as_text()
    assert Handler.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/page",
        "http://[::1]:{port}/page",
        "http://[::ffff:127.0.0.1]:{port}/page",
        "http://0.0.0.0:{port}/page",
        "http://10.1.2.3/",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
async def test_literal_private_addresses_are_refused(server: int, url: str) -> None:
    out = await fetch(WebFetch(resolver=resolver(NAMES)), url.format(port=server))
    assert out.result.error and "refused" in out.result.as_text()
    assert Handler.seen == []


@pytest.mark.parametrize(
    "target", ["http://169.254.169.254/latest/meta-data/", "http://meta.test/", "http://[fd00:ec2::254]/"]
)
async def test_metadata_is_refused_even_with_private_allowed_also_after_a_redirect(
    server: int, target: str
) -> None:
    tool = WebFetch(allow_private=True, resolver=resolver(NAMES))
    out = await fetch(tool, f"http://site.test:{server}/redirect?to={target}")
    assert out.result.error and "metadata" in out.result.as_text()
    assert Handler.seen == [f"/redirect?to={target}"]


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://site.test/x", "gopher://site.test/", "data:text/plain,hi"]
)
async def test_non_http_schemes_are_refused(url: str) -> None:
    out = await fetch(WebFetch(allow_private=True, resolver=resolver(NAMES)), url)
    assert out.result.error and "only http and https" in out.result.as_text()


async def test_a_redirect_to_a_non_http_scheme_is_refused(server: int) -> None:
    tool = WebFetch(allow_private=True, resolver=resolver(NAMES))
    out = await fetch(tool, f"http://site.test:{server}/redirect?to=file:///etc/passwd")
    assert out.result.error and "only http and https" in out.result.as_text()


async def test_every_redirect_hop_is_checked_and_the_connection_pinned() -> None:
    """No private address allowed: the public first hop is served, its redirect to a private name refused."""
    requests: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(302, headers={"Location": "http://internal.test/admin"})

    tool = WebFetch(resolver=resolver(NAMES), transport=httpx2.MockTransport(handler))
    out = await fetch(tool, "http://public.example/start")
    assert out.result.error and "internal.test resolves to 10.0.0.5" in out.result.as_text()
    assert len(requests) == 1
    assert requests[0].url.host == "93.184.216.34"  # connected to the checked address
    assert requests[0].headers["Host"] == "public.example"


async def test_https_keeps_the_name_for_sni() -> None:
    requests: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, text="ok", headers={"Content-Type": "text/plain"})

    tool = WebFetch(resolver=resolver(NAMES), transport=httpx2.MockTransport(handler))
    out = await fetch(tool, "https://public.example:8443/x?y=1")
    assert not out.result.error
    (req,) = requests
    assert str(req.url) == "https://93.184.216.34:8443/x?y=1"
    assert req.headers["Host"] == "public.example:8443"
    assert req.extensions["sni_hostname"] == "public.example"


async def test_up_to_five_redirects_are_followed_and_the_sixth_is_refused(server: int) -> None:
    tool = WebFetch(allow_private=True, resolver=resolver(NAMES))
    ok = await fetch(tool, f"http://site.test:{server}/chain/5")
    assert not ok.result.error and "end of chain" in ok.result.as_text()
    assert ok.result.value["redirects"][0] == f"http://site.test:{server}/chain/5"
    Handler.seen = []
    out = await fetch(tool, f"http://site.test:{server}/chain/6")
    assert out.result.error and "too many redirects" in out.result.as_text()
    assert len(Handler.seen) == 6


async def test_size_caps_cut_and_say_so(server: int) -> None:
    tool = WebFetch(allow_private=True, resolver=resolver(NAMES), max_bytes=1000, max_chars=100)
    out = await fetch(tool, f"http://site.test:{server}/big")
    text = out.result.as_text()
    assert "a" * 100 in text and "a" * 101 not in text
    assert "[cut: the page is larger than 1000 bytes" in text
    assert "[cut: showing the first 100 of 1000 characters]" in text
    assert out.result.value["bytesCut"] and out.result.value["textCut"]


async def test_binary_content_and_http_errors_are_error_results(server: int) -> None:
    tool = WebFetch(allow_private=True, resolver=resolver(NAMES))
    binary = await fetch(tool, f"http://site.test:{server}/bin")
    assert binary.result.error and "not text" in binary.result.as_text()
    missing = await fetch(tool, f"http://site.test:{server}/nope")
    assert missing.result.error and "Status: 404" in missing.result.as_text()


async def test_an_unresolvable_name_is_an_error_result() -> None:
    out = await fetch(WebFetch(resolver=resolver(NAMES)), "http://nowhere.test/")
    assert out.result.error and "cannot resolve" in out.result.as_text()


@pytest.mark.parametrize(
    ("address", "allow_private", "blocked"),
    [
        ("93.184.216.34", False, False),
        ("2606:2800:220:1:248:1893:25c8:1946", False, False),
        ("127.0.0.1", False, True),
        ("127.0.0.1", True, False),
        ("10.0.0.1", False, True),
        ("192.168.1.1", False, True),
        ("172.16.0.1", False, True),
        ("100.64.0.1", False, True),
        ("169.254.1.1", False, True),
        ("169.254.169.254", True, True),
        ("fd00:ec2::254", True, True),
        ("::ffff:169.254.169.254", True, True),
        ("::ffff:10.0.0.1", False, True),
        ("64:ff9b::7f00:1", False, True),
        ("2002:7f00:1::1", False, True),
        ("::1", False, True),
        ("fe80::1", False, True),
        ("fc00::1", False, True),
        ("224.0.0.1", True, True),
        ("ff02::1", True, True),
        ("0.0.0.0", True, True),
        ("::", True, True),
        ("240.0.0.1", False, True),
    ],
)
def test_address_classes(address: str, allow_private: bool, blocked: bool) -> None:
    if blocked:
        with pytest.raises(Blocked):
            check_address(address, allow_private=allow_private)
    else:
        check_address(address, allow_private=allow_private)


def test_html_to_text_keeps_structure_and_drops_scripts() -> None:
    text = html_to_text(PAGE.decode(), "https://example.org/a/b")
    assert text.startswith("# Rivers of Paris")
    assert "[Home](https://example.org/home)" in text
    assert "```\n  code  block\n  kept\n```" in text
    assert "alert" not in text and "{" not in text
    assert "\n\n\n" not in text


def test_fetch_and_search_are_read_only_open_world() -> None:
    for t in (WebFetch(), WebSearch("http://127.0.0.1:8888")):
        hints = t.spec().hints
        assert hints.read_only and hints.open_world and not hints.destructive


SEARX = {
    "query": "seine",
    "results": [
        {
            "url": "https://en.wikipedia.org/wiki/Seine",
            "title": "Seine - Wikipedia",
            "content": "The Seine is a  river.",
        },
        {"url": "https://en.wikipedia.org/wiki/Seine", "title": "dup", "content": "dup"},
        {"url": "https://example.org/paris", "title": "Paris", "content": ""},
        {"url": "https://example.org/3", "title": "Three", "content": "x"},
    ],
}


def _resolves_to(*addresses: str) -> Callable[[str], Awaitable[list[str]]]:
    async def resolve(host: str) -> list[str]:
        return list(addresses)

    return resolve


async def test_web_search_queries_searxng_and_lists_results() -> None:
    requests: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, json=SEARX)

    backend = SearXng(
        "http://searx.local:8080/",
        transport=httpx2.MockTransport(handler),
        allow_private=True,
        resolver=_resolves_to("10.1.2.3"),
    )
    tool = WebSearch(backend, max_results=2)
    with anyio.fail_after(10):
        out = await call_tool(tool, {"query": "seine river"})
    assert not out.result.error
    assert out.result.as_text() == (
        "1. Seine - Wikipedia\n   https://en.wikipedia.org/wiki/Seine\n   The Seine is a river.\n"
        "2. Paris\n   https://example.org/paris"
    )
    (req,) = requests
    assert req.url.host == "10.1.2.3" and req.headers["host"] == "searx.local:8080"  # pinned, as checked
    assert req.url.path == "/search"
    assert req.url.params["q"] == "seine river" and req.url.params["format"] == "json"


async def test_web_search_failures_are_error_results() -> None:
    tool = WebSearch(
        SearXng(
            "http://searx.local",
            transport=httpx2.MockTransport(lambda r: httpx2.Response(403)),
            allow_private=True,
            resolver=_resolves_to("10.1.2.3"),
        )
    )
    with anyio.fail_after(10):
        out = await call_tool(tool, {"query": "x"})
    assert out.result.error and "json" in out.result.as_text()


async def test_web_search_without_results_says_so() -> None:
    class Empty:
        async def search(self, query: str, *, limit: int) -> list[SearchHit]:
            return []

    with anyio.fail_after(10):
        out = await call_tool(WebSearch(Empty()), {"query": "nothing"})
    assert not out.result.error and out.result.as_text() == "No results for 'nothing'."


async def test_the_system_resolver_answer_for_localhost_is_checked(server: int) -> None:
    out = await fetch(WebFetch(), f"http://localhost:{server}/page")
    assert out.result.error and "refused" in out.result.as_text()
    assert Handler.seen == []
