"""HTML to readable text (light Markdown: headings, lists, links, preformatted blocks), stdlib only."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "head"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "dd", "details", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "main", "nav",
        "ol", "p", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul",
    }
)  # fmt: skip
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_HEADINGS = {"h1": "# ", "h2": "## ", "h3": "### ", "h4": "#### ", "h5": "##### ", "h6": "###### "}


class _Text(HTMLParser):
    def __init__(self, base_url: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.out: list[str] = []
        self.title: list[str] = []
        self.skip = 0
        self.pre = 0
        self.in_title = False
        self.links: list[str | None] = []
        self.list_depth = 0

    def _newlines(self, n: int) -> None:
        self.out.append("\n" * n)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip += 1
            return
        if self.skip:
            return
        if tag in _HEADINGS:
            self._newlines(2)
            self.out.append(_HEADINGS[tag])
        elif tag == "li":
            self._newlines(1)
            self.out.append("  " * max(0, self.list_depth - 1) + "- ")
        elif tag in ("ul", "ol"):
            self.list_depth += 1
            self._newlines(1)
        elif tag == "br":
            self.out.append("\n")
        elif tag == "pre":
            self.pre += 1
            self._newlines(2)
            self.out.append("```\n")
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag == "a":
            href = dict(attrs).get("href")
            if href and not href.startswith(("javascript:", "#", "data:")):
                self.links.append(urljoin(self.base_url, href) if self.base_url else href)
                self.out.append("[")
            else:
                self.links.append(None)
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self.out.append(f"[image: {alt}]")
        elif tag in _BLOCK:
            self._newlines(2 if tag in ("p", "blockquote", "table", "hr") else 1)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
            return
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag in _HEADINGS:
            self._newlines(2)
        elif tag in ("ul", "ol"):
            self.list_depth = max(0, self.list_depth - 1)
            self._newlines(1)
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.out.append("\n```")
            self._newlines(2)
        elif tag == "a":
            href = self.links.pop() if self.links else None
            if href is not None:
                self.out.append(f"]({href})")
        elif tag in _BLOCK:
            self._newlines(2 if tag in ("p", "blockquote", "table") else 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
            return
        if self.skip:
            return
        if self.pre:
            self.out.append(data.replace("\x00", ""))
        else:
            self.out.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str, base_url: str | None = None) -> str:
    """The readable text of an HTML page: the title as a heading, scripts and styles dropped."""
    parser = _Text(base_url)
    parser.feed(html)
    parser.close()
    body = _tidy("".join(parser.out))
    title = " ".join("".join(parser.title).split())
    if title and not body.startswith(f"# {title}"):
        return f"# {title}\n\n{body}".strip()
    return body


def _tidy(text: str) -> str:
    lines: list[str] = []
    in_pre = False
    for line in text.split("\n"):
        if line.strip() == "```":
            in_pre = not in_pre
            lines.append("```")
            continue
        if in_pre:
            lines.append(line.rstrip())
        else:
            indent = re.match(r" *(?=- )", line)  # keeps the nesting of list items
            lines.append((indent.group(0) if indent else "") + " ".join(line.split()))
    out = "\n".join(lines)
    out = re.sub(r"\n{3,}", "\n\n", out)
    out = re.sub(r"\[\s*\]\([^)]*\)", "", out)  # links without text
    return out.strip()
