"""Web tools: ``web_fetch {url}`` (a page as readable text) and ``web_search {query}`` (over SearXNG).

``WebFetch`` guards every hop against SSRF: only http and https, no credentials in the URL, the host
resolved and every answer checked (loopback, private, link-local, multicast, reserved, unspecified,
cloud metadata and IPv6 forms of those are refused; ``allow_private=True`` lets local and private
addresses through, never metadata), then the connection made to the checked address (pinned, so a
name that changes its answer between the check and the connect gains nothing) with the name kept in
the Host header and TLS SNI. Redirects are followed by hand, each hop checked, up to ``max_redirects``.
"""

from __future__ import annotations

import codecs
import logging
import re
import ssl
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import anyio

from .._call import Call
from .._errors import HarnessUsageError
from .._tools import Hints, Result, ToolSpec
from ._ssrf import Blocked, Resolver, resolve_checked, system_resolver

if TYPE_CHECKING:
    import httpx2  # imported at the first fetch or search: building the tools must not pay for it

__all__ = [
    "Blocked",
    "FetchError",
    "Page",
    "Resolver",
    "Search",
    "SearchHit",
    "SearXng",
    "WebFetch",
    "WebSearch",
]

log = logging.getLogger(__name__)

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ld+json",
    "application/rss+xml",
    "application/atom+xml",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
)
_HINTS = Hints(read_only=True, open_world=True)
_USER_AGENT = "acp-agent-web-fetch/0.1 (+https://agentclientprotocol.com)"


class FetchError(Exception):
    """The fetch failed (network, protocol, too many redirects, not text); the model sees the message."""


@dataclass(frozen=True, slots=True)
class Page:
    """A fetched page: its final ``url``, the text, and whether bytes read or text returned were cut."""

    url: str
    status: int
    content_type: str
    text: str
    bytes_cut: bool = False
    chars_total: int = 0
    redirects: tuple[str, ...] = ()

    @property
    def text_cut(self) -> bool:
        return self.chars_total > len(self.text)


class WebFetch:
    """``web_fetch {url}``: fetch a web page and return it as readable text.

    ``max_bytes`` caps what is read of the body, ``max_chars`` the text returned; the model is told when
    either cut. ``resolver`` maps a host name to its addresses (default: the system resolver);
    ``transport`` replaces the HTTP transport (tests).
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        max_bytes: int = 2_000_000,
        max_chars: int = 40_000,
        max_redirects: int = 5,
        timeout: float = 30.0,
        user_agent: str = _USER_AGENT,
        verify: ssl.SSLContext | bool = True,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        if max_bytes < 1 or max_chars < 1 or max_redirects < 0 or timeout <= 0:
            raise HarnessUsageError("WebFetch needs max_bytes, max_chars, timeout > 0 and max_redirects >= 0")
        self.allow_private = allow_private
        self.resolver: Resolver = resolver if resolver is not None else system_resolver
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.max_redirects = max_redirects
        self.timeout = timeout
        self.user_agent = user_agent
        self.verify = verify
        self.transport = transport

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "web_fetch",
            "Fetch a web page (http or https) and return its content as readable text. HTML is converted "
            "to text with links kept; long pages are cut, and the result says so.",
            {
                "type": "object",
                "properties": {"url": {"type": "string", "description": "The page's absolute http(s) URL."}},
                "required": ["url"],
                "additionalProperties": False,
            },
            _HINTS,
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        url = str(input["url"]).strip()
        try:
            page = await self.fetch(url)
        except Blocked as e:
            return Result.failure(f"web_fetch refused {url}: {e}", meta={"blocked": True})
        except FetchError as e:
            return Result.failure(f"web_fetch failed for {url}: {e}")
        value = {
            "url": page.url,
            "status": page.status,
            "contentType": page.content_type,
            "redirects": list(page.redirects),
            "bytesCut": page.bytes_cut,
            "textCut": page.text_cut,
        }
        text = self._render(url, page)
        if page.status >= 400:
            return Result.failure(text, value=value)
        return Result.text(text, value=value)

    def _render(self, asked: str, page: Page) -> str:
        head = [f"URL: {page.url}"]
        if page.redirects:
            head.append(f"(redirected from {asked})")
        head.append(f"Status: {page.status}")
        if page.content_type:
            head.append(f"Content-Type: {page.content_type}")
        notes: list[str] = []
        if page.bytes_cut:
            notes.append(f"[cut: the page is larger than {self.max_bytes} bytes; only those were read]")
        if page.text_cut:
            notes.append(f"[cut: showing the first {len(page.text)} of {page.chars_total} characters]")
        body = page.text if page.text.strip() else "(no text)"
        return "\n".join(head) + "\n\n" + body + ("\n\n" + "\n".join(notes) if notes else "")

    async def fetch(self, url: str) -> Page:
        """Fetch ``url`` under the guard; raises ``Blocked`` or ``FetchError``."""
        import httpx2

        try:
            current = httpx2.URL(url)
        except (httpx2.InvalidURL, ValueError, TypeError) as e:
            raise FetchError(f"not a valid URL ({e})") from None
        redirects: list[str] = []
        try:
            with anyio.fail_after(self.timeout):
                async with httpx2.AsyncClient(
                    transport=self.transport,
                    trust_env=False,  # an environment proxy would connect by name, past the pinning
                    follow_redirects=False,
                    verify=self.verify,
                    timeout=self.timeout,
                    limits=httpx2.Limits(max_keepalive_connections=0),
                ) as client:
                    for _ in range(self.max_redirects + 1):
                        request = await self._request(client, current)
                        response = await client.send(request, stream=True)
                        try:
                            location = response.headers.get("location")
                            if response.status_code in _REDIRECTS and location:
                                redirects.append(str(current))
                                try:
                                    current = current.join(location)
                                except (httpx2.InvalidURL, ValueError) as e:
                                    raise FetchError(f"bad redirect location {location!r} ({e})") from None
                                continue
                            return await self._page(current, response, tuple(redirects))
                        finally:
                            await response.aclose()
        except TimeoutError:
            raise FetchError(f"timed out after {self.timeout:g} s") from None
        except httpx2.HTTPError as e:
            raise FetchError(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__) from None
        except (OSError, ssl.SSLError) as e:
            raise FetchError(f"{type(e).__name__}: {e}") from None
        raise FetchError(f"too many redirects (more than {self.max_redirects}); the last went to {current}")

    async def _request(self, client: httpx2.AsyncClient, url: httpx2.URL) -> httpx2.Request:
        if url.scheme not in ("http", "https"):
            raise Blocked(f"only http and https URLs are fetched, not {url.scheme or 'a relative URL'}:")
        if not url.host:
            raise Blocked("the URL has no host")
        if url.userinfo:
            raise Blocked("URLs with credentials are not fetched")
        host = url.raw_host.decode("ascii")
        address = await resolve_checked(host, self.resolver, allow_private=self.allow_private)
        pinned = url.copy_with(host=address)
        host_header = host if ":" not in host else f"[{host}]"
        if url.port is not None:
            host_header += f":{url.port}"
        headers = {
            "Host": host_header,
            "User-Agent": self.user_agent,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
        }
        extensions: dict[str, Any] = {}
        if url.scheme == "https":
            extensions["sni_hostname"] = host  # the certificate is checked against the name, not the IP
        return client.build_request("GET", pinned, headers=headers, extensions=extensions)

    async def _page(self, url: httpx2.URL, response: httpx2.Response, redirects: tuple[str, ...]) -> Page:
        content_type = response.headers.get("content-type", "")
        media = content_type.split(";", 1)[0].strip().lower()
        data = bytearray()
        cut = False
        # Closed here, not left to the garbage collector (a ResourceWarning on trio) when the cap stops the read.
        async with aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                data += chunk
                if len(data) > self.max_bytes:  # one byte past the cap tells that the body goes on
                    cut = True
                    del data[self.max_bytes :]
                    break
        raw = bytes(data)
        is_html = media in _HTML_TYPES or (
            not media and raw.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))
        )
        if not is_html and not _is_text(media, raw):
            raise FetchError(f"{url} is {media or 'binary data'}, not text")
        text = raw.decode(_encoding(response, raw, is_html), errors="replace")
        if is_html:
            from ._html import html_to_text  # (html.parser and its entity table: at the first page)

            text = html_to_text(text, str(url))
        total = len(text)
        return Page(str(url), response.status_code, media, text[: self.max_chars], cut, total, redirects)


def _is_text(media: str, raw: bytes) -> bool:
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml")):
        return True
    if media:
        return False
    return b"\x00" not in raw[:4096]


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _encoding(response: httpx2.Response, raw: bytes, is_html: bool) -> str:
    candidates: list[str] = []
    if response.charset_encoding:
        candidates.append(response.charset_encoding)
    if is_html:
        m = _META_CHARSET.search(raw[:4096])
        if m:
            candidates.append(m.group(1).decode("ascii", "replace"))
    for name in candidates:
        try:
            return codecs.lookup(name).name
        except LookupError:
            continue
    return "utf-8"


# -- search -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


@runtime_checkable
class Search(Protocol):
    """A search backend; raise ``FetchError`` (or ``OSError``) on failure."""

    async def search(self, query: str, *, limit: int) -> list[SearchHit]: ...


@dataclass
class SearXng:
    """A SearXNG instance (``/search?format=json``; its settings must list ``json`` in
    ``search.formats``). ``params`` adds query parameters (``categories``, ``language``, ...).

    The endpoint is guarded as ``web_fetch`` is: http(s) only, no credentials in the URL, every address
    its name resolves to checked (``allow_private``: loopback and private addresses too, for a SearXNG of
    one's own; cloud metadata, multicast and the unspecified address never), the connection pinned to the
    checked address (a rebinding name cannot move it), no redirect followed, no environment proxy."""

    base_url: str
    params: Mapping[str, str] = field(default_factory=dict[str, str])
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    timeout: float = 20.0
    transport: httpx2.AsyncBaseTransport | None = None
    allow_private: bool = False
    resolver: Resolver = system_resolver

    async def _request(self, client: httpx2.AsyncClient, query: str) -> httpx2.Request:
        import httpx2

        try:
            url = httpx2.URL(self.base_url.rstrip("/") + "/search")
        except (httpx2.InvalidURL, ValueError, TypeError) as e:
            raise Blocked(f"the search endpoint is not a valid URL ({e})") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise Blocked("the search endpoint must be an http:// or https:// URL with a host")
        if url.userinfo:
            raise Blocked("the search endpoint's URL holds credentials; they are not sent")
        host = url.raw_host.decode("ascii")
        address = await resolve_checked(host, self.resolver, allow_private=self.allow_private)
        host_header = (host if ":" not in host else f"[{host}]") + (f":{url.port}" if url.port else "")
        extensions: dict[str, Any] = {"sni_hostname": host} if url.scheme == "https" else {}
        return client.build_request(
            "GET",
            url.copy_with(host=address),
            params={**self.params, "q": query, "format": "json"},
            headers={**self.headers, "Host": host_header},
            extensions=extensions,
        )

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        import httpx2

        try:
            with anyio.fail_after(self.timeout):
                async with httpx2.AsyncClient(
                    transport=self.transport, timeout=self.timeout, trust_env=False, follow_redirects=False
                ) as client:
                    response = await client.send(await self._request(client, query))
        except Blocked as e:
            raise FetchError(f"the search endpoint is refused: {e}") from None
        except TimeoutError:
            raise FetchError(f"the search timed out after {self.timeout:g} s") from None
        except httpx2.HTTPError as e:
            raise FetchError(f"the search failed: {type(e).__name__}: {e}") from None
        if response.status_code == 403:
            raise FetchError(
                "SearXNG refused the JSON format (add json to search.formats in its settings.yml)"
            )
        if response.status_code != 200:
            raise FetchError(f"the search failed: HTTP {response.status_code}")
        try:
            data: Any = response.json()
        except ValueError:
            raise FetchError("the search answer is not JSON") from None
        hits: list[SearchHit] = []
        for r in _results(data):
            title, link = r.get("title"), r.get("url")
            if not link:
                continue
            snippet = " ".join(str(r.get("content") or "").split())
            hit = SearchHit(str(title or link), str(link), snippet)
            if all(h.url != hit.url for h in hits):
                hits.append(hit)
            if len(hits) >= limit:
                break
        return hits


def _results(data: Any) -> list[dict[str, Any]]:
    results = cast(dict[str, Any], data).get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        return []
    return [cast(dict[str, Any], r) for r in cast(list[Any], results) if isinstance(r, dict)]


class WebSearch:
    """``web_search {query}``: search the web, results as a short list of title, URL and snippet."""

    def __init__(self, backend: Search | str, *, max_results: int = 8) -> None:
        if max_results < 1:
            raise HarnessUsageError("WebSearch needs max_results >= 1")
        self.backend: Search = SearXng(backend) if isinstance(backend, str) else backend
        self.max_results = max_results

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "web_search",
            "Search the web. Returns a short list of results (title, URL, snippet); read a result with "
            "web_fetch.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "What to search for."}
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            _HINTS,
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        query = str(input["query"]).strip()
        if not query:
            return Result.failure("web_search: the query is empty")
        try:
            hits = await self.backend.search(query, limit=self.max_results)
        except (FetchError, OSError) as e:
            return Result.failure(f"web_search failed: {e}")
        if not hits:
            return Result.text(f"No results for {query!r}.", value=[])
        return Result.text(_render_hits(hits), value=[h.to_dict() for h in hits])


def _render_hits(hits: Sequence[SearchHit]) -> str:
    lines: list[str] = []
    for i, h in enumerate(hits, start=1):
        lines.append(f"{i}. {h.title}\n   {h.url}")
        if h.snippet:
            snippet = h.snippet if len(h.snippet) <= 300 else h.snippet[:300] + "..."
            lines.append(f"   {snippet}")
    return "\n".join(lines)
