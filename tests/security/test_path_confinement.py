"""What held, kept so: every file tool stays inside the session's roots, with and without the editor's
``fs/*`` (``..``, absolute paths, symlinks out, ``/proc/self/root``, ``apply_patch`` headers)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.security._attack import Project, calls, victim_agent

pytestmark = [pytest.mark.anyio, pytest.mark.process]

SECRET = "TOP-SECRET-outside-the-project"


@pytest.mark.timeout(150)
@pytest.mark.parametrize("editor_fs", [True, False], ids=["editor-fs", "disk"])
async def test_no_file_tool_reads_or_writes_outside_the_roots(tmp_path: Path, editor_fs: bool) -> None:
    project = Project.make(tmp_path)
    secret = project.outside / "secret.txt"
    secret.write_text(SECRET + "\n")
    (project.root / "out").symlink_to(project.outside)
    (project.root / "leak.txt").symlink_to(secret)
    o = str(project.outside)
    attacks = [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("read_file", {"path": str(secret)}),
        ("read_file", {"path": f"/proc/self/root{secret}"}),
        ("read_file", {"path": "out/secret.txt"}),
        ("read_file", {"path": "leak.txt"}),
        ("list_dir", {"path": "out"}),
        ("grep", {"pattern": "TOP-SECRET", "path": "out"}),
        ("grep", {"pattern": "TOP-SECRET"}),
        ("glob", {"pattern": "**/*.txt", "path": "out"}),
        ("write_file", {"path": f"{o}/canary1", "content": "x"}),
        ("write_file", {"path": "out/canary2", "content": "x"}),
        ("write_file", {"path": "../outside/canary3", "content": "x"}),
        ("edit_file", {"path": "leak.txt", "old_text": "TOP", "new_text": "PWNED"}),
        ("apply_patch", {"patch": "--- /dev/null\n+++ b/../outside/canary4\n@@ -0,0 +1 @@\n+x\n"}),
        ("apply_patch", {"patch": f"--- /dev/null\n+++ {o}/canary5\n@@ -0,0 +1 @@\n+x\n"}),
        ("apply_patch", {"patch": "--- a/out/secret.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-" + SECRET + "\n"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: ../outside/canary6\n+x\n*** End Patch"}),
        (
            "apply_patch",
            {"patch": f"*** Begin Patch\n*** Update File: out/secret.txt\n*** Move to: {o}/c7\n"},
        ),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: out/secret.txt\n*** End Patch"}),
    ]
    async with victim_agent(project, calls(*attacks), mode="accept-edits", fs=editor_fs) as agent:
        agent.choose = lambda p: "allow_once"  # even a yes cannot take a tool out of the project
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            assert (await agent.prompt(sid, "look outside"))["stopReason"] == "end_turn"
    results = agent.tool_results(sid)
    assert len(results) == len(attacks)
    assert not any(SECRET in r for r in results), [r for r in results if SECRET in r]
    assert sorted(p.name for p in project.outside.iterdir()) == ["secret.txt"]
    assert secret.read_text() == SECRET + "\n"
    assert all(p["path"].startswith(str(project.root)) for p in agent.asked("fs/read_text_file"))
