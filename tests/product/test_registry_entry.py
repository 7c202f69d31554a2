"""The ACP registry entry (``editors/registry/``) holds to the registry's rules
(``../shared/reference/acp-registry/README.md``), checked offline: ``agent.json``'s fields and shapes, a
``uvx`` package pinned to this project's own distribution at its version with ``cmd`` one of its commands, the
16x16 monochrome ``icon.svg``, and the authentication check (a clean start answers ``initialize`` with an
``agent`` or ``terminal`` auth method) through the real process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
REGISTRY = REPO / "editors" / "registry"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]

ALLOWED_PAINT = {"currentcolor", "none", "inherit"}
# A colour written anywhere but a fill/stroke attribute: hex, a colour function, or a colour property.
_COLOUR_LITERAL = re.compile(r"#[0-9a-f]{3,8}\b|\b(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch|color)\(", re.I)
_PAINT_PROPS = ("fill", "stroke", "color", "stop-color", "flood-color", "lighting-color")


def _entries() -> list[Path]:
    return sorted(p for p in REGISTRY.iterdir() if p.is_dir())


def _entry() -> tuple[Path, dict[str, Any]]:
    (folder,) = _entries()
    return folder, json.loads((folder / "agent.json").read_text(encoding="utf-8"))


def test_there_is_one_entry_and_its_folder_is_named_by_its_id() -> None:
    folder, data = _entry()
    assert re.fullmatch(r"[a-z][a-z0-9-]*", data["id"]) and folder.name == data["id"]
    assert sorted(p.name for p in folder.iterdir()) == ["agent.json", "icon.svg"]


def test_agent_json_has_the_required_fields_in_the_registrys_shapes() -> None:
    _folder, data = _entry()
    for key in ("id", "name", "version", "description", "distribution"):
        assert isinstance(data.get(key), str | dict) and data[key], key
    assert re.fullmatch(r"\d+\.\d+\.\d+", data["version"])
    assert set(data["distribution"]) <= {"binary", "npx", "uvx"} and data["distribution"]
    uvx = data["distribution"]["uvx"]
    assert set(uvx) <= {"package", "cmd", "args", "env"}
    assert isinstance(uvx.get("args", []), list) and all(isinstance(a, str) for a in uvx.get("args", []))
    assert isinstance(uvx.get("env", {}), dict)


def test_the_uvx_package_is_this_distribution_pinned_at_its_version_and_cmd_is_its_command() -> None:
    _folder, data = _entry()
    uvx = data["distribution"]["uvx"]
    match = re.fullmatch(r"([A-Za-z0-9._-]+)(?:==|@)(\d+\.\d+\.\d+)", uvx["package"])
    assert match, f"not pinned: {uvx['package']!r}"
    package, version = match.groups()
    assert package == PYPROJECT["name"] and version == PYPROJECT["version"] == data["version"]
    assert uvx["cmd"] in PYPROJECT["scripts"] and uvx["cmd"] == PYPROJECT["name"]
    assert data["id"] == PYPROJECT["name"]


def _paint_problems(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    problems: list[str] = []
    for element in root.iter():
        attributes = dict(element.attrib)
        for declaration in attributes.pop("style", "").split(";"):
            name, _, value = declaration.partition(":")
            if name.strip():
                attributes[name.strip()] = value
        for name, value in attributes.items():
            if name in _PAINT_PROPS and value.strip().lower() not in ALLOWED_PAINT:
                problems.append(f"{element.tag} {name}={value!r}")
        if element.tag.endswith("style") and element.text and _COLOUR_LITERAL.search(element.text):
            problems.append(f"a colour in <style>: {element.text.strip()!r}")
    if _COLOUR_LITERAL.search(svg):
        problems.append("a colour literal")
    return problems


def test_the_icon_is_16_by_16_square_and_monochrome() -> None:
    folder, _data = _entry()
    svg = (folder / "icon.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("width") == "16" and root.get("height") == "16"
    assert root.get("viewBox", "0 0 16 16").split() == ["0", "0", "16", "16"]
    assert _paint_problems(svg) == []
    assert any(e.get("stroke") == "currentColor" or e.get("fill") == "currentColor" for e in root.iter())


@pytest.mark.parametrize(
    "svg",
    [
        '<svg xmlns="http://www.w3.org/2000/svg"><path fill="#000"/></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><path stroke="black"/></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><path style="fill: rgb(0,0,0)"/></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><style>path { fill: #123456 }</style></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><stop stop-color="red"/></svg>',
    ],
)
def test_the_icon_check_refuses_a_hard_coded_colour(svg: str) -> None:
    assert _paint_problems(svg)


def _initialize(tmp_path: Path, capabilities: dict[str, Any]) -> dict[str, Any]:
    """A clean machine: no configuration, no ACP_AGENT_* or provider variables, an empty home."""
    _folder, data = _entry()
    command = Path(sys.executable).parent / data["distribution"]["uvx"]["cmd"]
    keep = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": capabilities},
    }
    result = subprocess.run(
        [str(command), *data["distribution"]["uvx"].get("args", [])],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    lines = result.stdout.splitlines()
    assert lines, result.stderr[-2000:]
    answers = [json.loads(line) for line in lines]  # every stdout line is JSON-RPC
    return answers[0]["result"]


@pytest.mark.parametrize(
    ("capabilities", "wanted"),
    [({}, "agent"), ({"auth": {"terminal": True}}, "terminal")],
    ids=["plain client", "client with terminal auth"],
)
@pytest.mark.process
def test_a_clean_start_offers_an_agent_or_terminal_auth_method(
    capabilities: dict[str, Any], wanted: str, tmp_path: Path
) -> None:
    result = _initialize(tmp_path, capabilities)
    methods = result["authMethods"]
    assert methods and all(m.get("type") in ("agent", "terminal") for m in methods)
    assert wanted in [m["type"] for m in methods]
    assert result["agentInfo"]["name"] == PYPROJECT["name"]
