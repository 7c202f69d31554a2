"""A remembered rule is never wider than what the dialog said.

Each "always" option lists, in words, exactly the rules it stores (the label is read back here by its own
little parser and compared with the rules), over generated compound commands; an "always" for a file in a
folder above the project (or ``/``) never becomes a rule that allows writes inside the project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_agent.coding.permissions._always import MAX_ALWAYS_RULES, permission_options
from acp_agent.coding.permissions._modes import coding_policy
from harness import ToolCall
from harness.policy import Policy, Rule, Verdict
from harness.tools import Root, Shell
from tests.acp.coding._support import Reply, calls, editor_agent, fake, prompt, select

pytestmark = pytest.mark.anyio

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
SHELL = Shell(Root([Path("/")])).spec()
PROJECT = Path("/home/u/proj")

Said = tuple[str, ...]


def said(label: str, prefix: str) -> list[Said]:
    """What an "always" label says it stores, read from its words alone: ("starts", text), ("exact",
    text), ("pattern", text), ("path", tool, folder), ("tool", name)."""
    assert label.startswith(prefix + " "), label
    spans: list[str] = []

    def hide(m: re.Match[str]) -> str:
        spans.append(m.group(1) if m.group(1) is not None else m.group(2))
        return f"\x00{len(spans) - 1}\x00"

    text = re.sub(r"`` (.*?) ``|`([^`]*)`", hide, label[len(prefix) + 1 :])
    out: list[Said] = []
    for group in text.split("; "):
        items = [spans[int(i)] for i in re.findall(r"\x00(\d+)\x00", group)]
        words = re.sub(r"\x00\d+\x00", "S", group)
        kinds = {"commands starting with": "starts", "exactly": "exact", "commands matching": "pattern"}
        head = words.split(" S", 1)[0]
        if head in kinds and re.fullmatch(r"[a-z ]+ S(, S)*", words):
            out += [(kinds[head], item) for item in items]
        elif words == "S at or under S":
            out.append(("path", items[0], items[1]))
        elif words == "every S call":
            out.append(("tool", items[0]))
        else:
            raise AssertionError(f"the label says something unreadable: {label!r}")
    return out


def stored(rule: Rule) -> Said:
    d: dict[str, Any] = rule.to_dict()
    if rule.kind == "command":
        kind = "pattern" if "pattern" in d else "exact" if d.get("exact") else "starts"
        return (kind, d.get("pattern") or d["command"])
    if rule.kind == "path":
        return ("path", d["tool"], d["path"])
    return (rule.kind, d["tool"])


SIMPLE = [
    "ls -la", "cat a.txt", "head -n 3 b", "tail c", "rm -rf build", "git status", "git push origin main",
    "sort -o out.txt data.txt", "FOO=1 make", "sudo make install", "nice -n 5 pytest -q", "bash -c 'cargo test'",
    "echo 'a; b, c'", "grep -e '`' f", "python -c 'print(1)'", "tee out.txt", "npm run build", "wc -l x",
    "ls ${x:-$(rm y)}", "env -C /tmp git status", "cd src", "printf '%s' '``'", "mv a b", "chmod +x run.sh",
]  # fmt: skip
commands = st.lists(st.sampled_from(SIMPLE), min_size=1, max_size=9).flatmap(
    lambda parts: st.lists(
        st.sampled_from([" && ", "; ", " | ", " || "]), min_size=len(parts) - 1, max_size=len(parts) - 1
    ).map(lambda ops: parts[0] + "".join(op + p for op, p in zip(ops, parts[1:], strict=True)))
)


@settings(max_examples=300, deadline=None)
@given(commands)
def test_every_always_option_lists_exactly_the_rules_it_stores(command: str) -> None:
    policy = coding_policy("default", [PROJECT], [Rule.command("pwd", A)])
    call = ToolCall("c", "shell", {"command": command})
    allow, deny = policy.suggest(call, A, SHELL), policy.suggest(call, D, SHELL)
    options = {o["kind"]: o["name"] for o in permission_options(allow, deny)}
    for kind, prefix, rules in (
        ("allow_always", "Always allow", allow),
        ("reject_always", "Always reject", deny),
    ):
        if kind in options:
            assert sorted(said(options[kind], prefix)) == sorted(stored(r) for r in rules)
        else:  # not offered: nothing it could have stored, or more than a button can list
            assert not rules or len(rules) > MAX_ALWAYS_RULES or sum(len(str(stored(r))) for r in rules) > 300


def test_the_label_that_hid_rm_now_names_it() -> None:
    call = ToolCall("c", "shell", {"command": "ls -la && cat a && head b && tail c && rm -rf build"})
    rules = Policy([], Q, cwd=PROJECT).suggest(call, A, SHELL)
    [label] = [o["name"] for o in permission_options(rules, []) if o["kind"] == "allow_always"]
    assert label == "Always allow commands starting with `ls`, `cat`, `head`, `tail`, `rm`"


def test_path_rules_are_said_with_their_folder_and_tools_by_name() -> None:
    options = permission_options([Rule.path("write_file", PROJECT / "src", A), Rule.tool("web_fetch", A)], [])
    label = next(o["name"] for o in options if o["kind"] == "allow_always")
    assert label == "Always allow `write_file` at or under `/home/u/proj/src`; every `web_fetch` call"
    assert said(label, "Always allow") == [("path", "write_file", "/home/u/proj/src"), ("tool", "web_fetch")]


@pytest.mark.parametrize(
    ("path", "remembered"),
    [
        ("/home/u/notes.txt", "/home/u/notes.txt"),  # the home folder holds the project: the file only
        ("/notes.txt", "/notes.txt"),  # `/` holds everything: the file only
        ("/tmp/x/y.txt", "/tmp/x"),  # a folder beside the project: that folder
        ("/home/u/proj/src/app.py", "/home/u/proj/src"),  # inside: the file's folder, as before
    ],
)
def test_always_for_a_write_never_remembers_a_folder_above_the_project(path: str, remembered: str) -> None:
    policy = coding_policy("default", [PROJECT])
    [rule] = policy.suggest(ToolCall("c", "write_file", {"path": path, "content": "x"}), A)
    assert rule.path_prefix == remembered
    later = coding_policy("default", [PROJECT], [rule])
    inside = ToolCall("d", "write_file", {"path": str(PROJECT / "app.py"), "content": "x"})
    if not remembered.startswith(str(PROJECT)):
        assert later.judge(inside).verdict is Q  # a write in the project still asks
    assert later.judge(ToolCall("e", "write_file", {"path": path, "content": "y"})).verdict is A


def test_a_patch_spanning_the_project_and_a_folder_beside_it_remembers_each_folder() -> None:
    patch = (
        "--- /dev/null\n+++ /home/u/proj/a.txt\n@@ -0,0 +1 @@\n+x\n"
        "--- /dev/null\n+++ /home/u/other/b.txt\n@@ -0,0 +1 @@\n+y\n"
    )
    rules = coding_policy("default", [PROJECT]).suggest(ToolCall("c", "apply_patch", {"patch": patch}), A)
    assert sorted(str(r.path_prefix) for r in rules) == ["/home/u/other", "/home/u/proj"]
    later = coding_policy("default", [PROJECT], rules)
    elsewhere = ToolCall("d", "write_file", {"path": "/home/u/third/c.txt", "content": "x"})
    assert later.judge(elsewhere).verdict is Q  # not the common folder /home/u


# --- through the agent ------------------------------------------------------------------------------


@pytest.mark.process
async def test_the_stored_rules_are_the_ones_the_chosen_option_named(tmp_path: Path) -> None:
    command = "ls -la && cat a && head b && tail c && rm -rf build"
    model = fake(calls(("shell", {"command": command})), Reply(text="ok"))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        editor.permission = select("allow_always")
        await prompt(editor, sid, "go")
        [asked] = editor.requests_of("session/request_permission")
    label = next(o["name"] for o in asked["options"] if o["kind"] == "allow_always")
    lines = (project / ".acp-agent" / "permissions.jsonl").read_text().splitlines()
    rules = [Rule.from_dict(json.loads(line)) for line in lines if line and not line.startswith("#")]
    assert sorted(said(label, "Always allow")) == sorted(stored(r) for r in rules)
    assert ("starts", "rm") in said(label, "Always allow")


async def test_more_rules_than_a_button_can_list_offer_no_always(tmp_path: Path) -> None:
    command = " && ".join(f"tool{i} x" for i in range(MAX_ALWAYS_RULES + 1))
    model = fake(calls(("shell", {"command": command})), Reply(text="ok"))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        editor.permission = select("allow_always")  # not offered: answered as a rejection
        await prompt(editor, sid, "go")
        [asked] = editor.requests_of("session/request_permission")
    assert "allow_always" not in {o["kind"] for o in asked["options"]}
    assert not (project / ".acp-agent" / "permissions.jsonl").exists()
