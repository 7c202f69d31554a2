"""A home folder opened as a project: the files that run code by themselves (rc files, the editors' user
settings, ``~/.local/bin``, autostart entries, systemd user units, ``environment.d``, ``.ssh``, ``.gnupg``,
git and package-tool configuration) are asked for by the gate in accept-edits and refused to sandboxed
commands: one list (``harness.protected``), two enforcers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.coding.permissions._modes import protected_paths
from acp_agent.coding.permissions._protected import AGENT_ROOT_PATHS, home_sandbox_paths
from harness import ToolCall
from harness.policy import ProtectedPaths, Rule, Verdict, mode_policy
from harness.sandbox import SandboxPolicy
from harness.testing import call_tool
from harness.tools import Root, Shell
from tests.security.test_protected_paths import SPECS

HOME = Path("/home/u")
GUARD = ProtectedPaths.of([HOME])

SELF_RUNNING = [
    ".bashrc",
    ".profile",
    ".zshrc",
    ".bash_aliases",
    ".config/zsh/.zshrc",
    ".xprofile",
    ".config/zed/settings.json",
    ".config/zed/tasks.json",
    ".config/Code/User/settings.json",
    ".config/code/user/tasks.json",  # the gate matches without case
    ".vscode/extensions/evil/package.json",
    ".config/Cursor/User/settings.json",
    ".local/bin/git",
    ".local/lib/python3.12/site-packages/evil.pth",
    ".cargo/bin/cargo",
    ".config/autostart/evil.desktop",
    ".config/systemd/user/evil.service",
    ".local/share/systemd/user/evil.timer",
    ".config/environment.d/10-path.conf",
    ".local/share/applications/firefox.desktop",
    ".vimrc",
    ".vim/plugin/evil.vim",
    ".config/nvim/init.lua",
    ".emacs",
    ".emacs.d/init.el",
    ".config/emacs/init.el",
    ".tmux.conf",
    ".ssh/config",
    ".ssh/authorized_keys",
    ".gnupg/gpg-agent.conf",
    ".gitconfig",
    ".config/git/config",
    ".hgrc",
    ".pypirc",
    ".npmrc",
    ".config/pip/pip.conf",
    # Found by the acceptance round: each runs a program at the next command, build, shell or login.
    ".bash_completion",  # sourced by bash-completion at every interactive shell
    ".local/share/bash-completion/completions/git",  # runs at the next tab after `git`
    ".cargo/config.toml",  # target runner, rustc-wrapper: the next cargo build
    ".cargo/config",
    ".gradle/init.d/evil.gradle",  # init scripts run with every gradle build
    ".gradle/init.gradle.kts",
    ".aws/config",  # credential_process runs at the next aws call
    ".kube/config",  # users[].user.exec runs at the next kubectl
    ".docker/config.json",  # credsStore names a helper program
    ".ipython/profile_default/startup/00.py",
    ".config/kitty/kitty.conf",
    ".config/wezterm/wezterm.lua",
    ".wezterm.lua",
    ".config/alacritty/alacritty.toml",
    ".config/i3/config",  # exec lines at login
    ".config/sway/config",
    ".config/hypr/hyprland.conf",
    ".config/powershell/Microsoft.PowerShell_profile.ps1",
    ".config/nushell/config.nu",
    ".gdbinit",
    ".lessfilter",  # lesspipe runs it at the next less
    ".mailcap",
    ".Rprofile",
    ".irbrc",
    ".psqlrc",
    ".julia/config/startup.jl",
    # A second round: what else a shell, login, mail or tool runs or lets in by itself.
    ".cargo/env",  # sourced by .profile and .bashrc (rustup's installer adds the line)
    ".nvm/nvm.sh",  # sourced by .bashrc
    ".sdkman/bin/sdkman-init.sh",
    ".pyenv/shims/python",
    ".rbenv/shims/ruby",
    ".asdf/asdf.sh",
    ".volta/bin/node",
    ".bun/bin/bun",
    ".deno/bin/deno",
    "go/bin/gopls",
    ".rustup/toolchains/stable/bin/cargo",
    ".local/share/pnpm/pnpm",
    ".local/share/mise/shims/node",
    ".ipython/profile_default/ipython_config.py",  # Python, run at every IPython start
    ".jupyter/jupyter_server_config.py",
    ".config/gdb/gdbinit",
    ".ghci",
    ".muttrc",
    ".inputrc",
    ".config/starship.toml",  # custom modules run a command at every prompt
    ".xonshrc",
    ".config/ghostty/config",
    ".config/awesome/rc.lua",
    ".config/bspwm/bspwmrc",
    ".config/qtile/config.py",
    ".config/autostart-scripts/evil.sh",
    ".local/share/dbus-1/services/org.evil.service",  # started when a program asks for the name
    ".local/share/gnome-shell/extensions/evil/extension.js",
    ".config/pipewire/pipewire.conf",  # context.exec runs programs
    ".forward",  # "|program" runs at the next mail
    ".procmailrc",
    ".rhosts",
    ".k5login",
    ".curlrc",  # upload-file = ~/.ssh/id_ed25519 at the next curl
    ".terraformrc",  # dev_overrides run a provider binary
    ".config/gh/config.yml",  # shell aliases
    ".gradle/gradle.properties",  # org.gradle.jvmargs=-javaagent:...
    ".cursor-server/extensions/evil/package.json",
]


# Rules a user may have said "always" to: only the protected list can still make these calls ask.
ALWAYS = (
    Rule.path("write_file", str(HOME), Verdict.ALLOW),
    Rule.tool("edit_file", Verdict.ALLOW),
    Rule.tool("apply_patch", Verdict.ALLOW),
    Rule.command("echo", Verdict.ALLOW),
    Rule.command("tee", Verdict.ALLOW),
    Rule.path("shell", str(HOME), Verdict.ALLOW),
)


def _writes(path: str, root: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every way a tool call writes ``path`` in the home folder, from a project folder ``root``."""
    target = HOME / path
    shown = target.relative_to(root) if target.is_relative_to(root) else target
    return [
        ("write_file", {"path": str(target), "content": "x"}),
        ("edit_file", {"path": str(target), "old_text": "a", "new_text": "b"}),
        ("apply_patch", {"patch": f"--- /dev/null\n+++ b/{shown}\n@@ -0,0 +1 @@\n+x\n"}),
        ("shell", {"command": f"echo x > {shown}"}),
        ("shell", {"command": f"echo x | tee -a {target}"}),
    ]


def _verdicts(guard: ProtectedPaths, path: str, root: Path = HOME) -> list[Verdict]:
    out: list[Verdict] = []
    for mode, remembered in (("accept-edits", ()), ("accept-edits", ALWAYS), ("default", ALWAYS)):
        policy = mode_policy(mode, [root], remembered, protected=guard)
        for name, inp in _writes(path, root):
            out.append(policy.judge(ToolCall("c", name, inp), SPECS[name]).verdict)
    return out


@pytest.mark.parametrize("path", SELF_RUNNING)
def test_the_gate_asks_before_a_file_that_runs_by_itself_is_written_in_a_home_folder(path: str) -> None:
    assert set(_verdicts(GUARD, path)) == {Verdict.ASK}, path


@pytest.mark.parametrize(
    "path", ["notes.txt", "src/app.py", "projects/site/index.html", ".local/share/notes.md"]
)
def test_ordinary_files_in_a_home_folder_are_written_unasked_in_accept_edits(path: str) -> None:
    policy = mode_policy("accept-edits", [HOME], (), protected=GUARD)
    call = ToolCall("c", "write_file", {"path": str(HOME / path), "content": "x"})
    assert policy.judge(call, SPECS["write_file"]).verdict is Verdict.ALLOW
    # The same always-rules let every way of writing it through: the asks above come from the list.
    assert set(_verdicts(GUARD, path)[5:]) == {Verdict.ALLOW}, path


def _agent_guard(roots: list[Path], home: Path = HOME) -> ProtectedPaths:
    return protected_paths(roots, Path("/data/acp-agent"), [], {"HOME": str(home)})


@pytest.mark.parametrize("path", ["bin/git", "bin/ls", "bin", ".bin/python", "bin/sub/x", "BIN/git", "Bin"])
def test_the_agent_asks_before_writing_the_home_folders_bin_whatever_the_project(path: str) -> None:
    for root in (HOME, Path("/home"), Path("/srv/project")):
        assert set(_verdicts(_agent_guard([root]), path, root)) == {Verdict.ASK}, (root, path)
    assert _agent_guard([HOME]).why(HOME / path) is not None
    assert "PATH" in (_agent_guard([HOME]).why(HOME / path) or "")


@pytest.mark.parametrize("path", ["bin/tool", "bin", ".bin/tool", "tools/bin/x", "src/bin/main.rs"])
def test_a_projects_own_bin_folder_is_written_unasked_in_accept_edits(path: str) -> None:
    project = Path("/srv/project")
    guard = _agent_guard([project])
    policy = mode_policy("accept-edits", [project], (), protected=guard)
    call = ToolCall("c", "write_file", {"path": str(project / path), "content": "x"})
    assert policy.judge(call, SPECS["write_file"]).verdict is Verdict.ALLOW
    # Nor is a bin folder deeper in the home folder (only ~/bin itself is on PATH).
    assert guard.why(HOME / "projects" / path) is None


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for rel in (".config/zed/settings.json", ".config/Code/User/settings.json", ".bashrc", ".ssh/config",
                ".local/bin/tool", ".gnupg/gpg.conf", ".config/git/config", ".npmrc", "src/app.py"):  # fmt: skip
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("original\n")
    (home / ".config" / "other").mkdir()
    (home / ".local" / "share").mkdir()
    return home.resolve()


_WRITES = [
    "echo evil >> .bashrc",
    "echo evil > .config/zed/settings.json",
    "sed -i s/original/evil/ .config/Code/User/settings.json",
    "echo evil > .local/bin/tool",
    "printf '#!/bin/sh\\n' > .local/bin/git; chmod +x .local/bin/git",
    "mkdir -p .config/autostart && echo evil > .config/autostart/x.desktop",
    "mkdir -p .config/systemd/user && echo evil > .config/systemd/user/x.service",
    "mkdir -p .config/environment.d && echo PATH=/evil > .config/environment.d/x.conf",
    "mkdir -p .local/share/systemd/user && echo evil > .local/share/systemd/user/x.timer",
    "echo evil >> .ssh/config",
    "echo evil >> .gnupg/gpg.conf",
    "echo evil >> .config/git/config",
    "echo evil > .npmrc",
    "rm -f .bashrc; echo evil > .bashrc",
    "mv .config/zed .config/zed-old; mkdir .config/zed; echo evil > .config/zed/settings.json",
    "chmod 0777 .bashrc .ssh/config",
]


@pytest.mark.process
@pytest.mark.anyio
@pytest.mark.parametrize("command", _WRITES)
async def test_a_sandboxed_command_cannot_write_them_in_a_home_folder_opened_as_a_project(
    home: Path, command: str
) -> None:
    from tests.sandbox.conftest import require_landlock

    require_landlock()
    before = _snapshot(home)
    policy = SandboxPolicy(roots=(home,))
    shell = Shell(Root([home]), sandbox=lambda _input: policy)
    result = (await call_tool(shell, {"command": command + "; echo ok > src/app.py"})).result
    assert (home / "src" / "app.py").read_text() == "ok\n", result.as_text()  # ordinary files: written
    after = _snapshot(home)
    after.pop("src/app.py")
    before.pop("src/app.py")
    assert after == before, result.as_text()


_BIN_WRITES = [
    "echo evil > bin/tool",
    "printf '#!/bin/sh\\n' > bin/git; chmod +x bin/git",
    "rm -f bin/tool; echo evil > bin/tool",
    "mv bin bin-old; mkdir bin; echo evil > bin/git",
    "chmod 0777 bin/tool",
    "mkdir -p .bin && echo evil > .bin/python",
    "echo evil >> .cargo/env",
    "echo evil >> .nvm/nvm.sh",
    "echo evil > .config/starship.toml",
    "mkdir -p .local/share/dbus-1/services && echo evil > .local/share/dbus-1/services/x.service",
]


@pytest.mark.process
@pytest.mark.anyio
@pytest.mark.parametrize("parent", [False, True], ids=["home-is-the-project", "home-inside-the-project"])
@pytest.mark.parametrize("command", _BIN_WRITES)
async def test_a_sandboxed_command_cannot_write_the_home_folders_bin_or_sourced_scripts(
    home: Path, command: str, parent: bool
) -> None:
    """The agent's sandbox list: ``~/bin`` by its absolute path, and, when a project folder holds the home
    folder (``/home``), the whole list in the home folder too."""
    from tests.sandbox.conftest import require_landlock

    require_landlock()
    for rel in ("bin/tool", ".cargo/env", ".nvm/nvm.sh"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("original\n")
    root = home.parent if parent else home
    before = _snapshot(home)
    policy = SandboxPolicy(roots=(root,), protected=(*AGENT_ROOT_PATHS, *home_sandbox_paths(home, [root])))
    shell = Shell(Root([root]), sandbox=lambda _input: policy)
    where = home.name if parent else "."
    result = (await call_tool(shell, {"command": f"cd {where}; {command}; echo ok > src/app.py"})).result
    assert (home / "src" / "app.py").read_text() == "ok\n", result.as_text()  # ordinary files: written
    after = _snapshot(home)
    after.pop("src/app.py")
    before.pop("src/app.py")
    # A protected name made where none was is moved aside once the command ends (``harness.sandbox``).
    assert {k: v for k, v in after.items() if not k.endswith(".refused")} == before, result.as_text()


@pytest.mark.process
@pytest.mark.anyio
async def test_make_dirs_refuses_the_home_folders_bin_and_makes_a_projects_bin(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    for root, made in ((home, False), (project, True)):
        policy = SandboxPolicy(
            roots=(root,), protected=(*AGENT_ROOT_PATHS, *home_sandbox_paths(home, [root]))
        )
        shell = Shell(Root([root]), sandbox=lambda _input, policy=policy: policy)
        result = (await call_tool(shell, {"command": "true", "make_dirs": ["bin"]})).result
        assert (root / "bin").is_dir() is made, result.as_text()
        if not made:
            assert "protected" in result.as_text()


def _snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_mode, path.read_text() if path.is_file() else None)
    return out


@pytest.mark.process
@pytest.mark.anyio
async def test_the_agents_own_files_inside_a_home_folder_opened_as_a_project_stay_unreadable(
    home: Path,
) -> None:
    from tests.sandbox.conftest import require_landlock

    require_landlock()
    data = home / ".local" / "share" / "acp-agent" / "sessions"
    data.mkdir(parents=True)
    (data / "s.jsonl").write_text("SESSION-SECRET\n")
    config = home / ".config" / "acp-agent"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('api_key = "sk-CONFIG-SECRET"\n')
    key = home / "api-key.txt"
    key.write_text("sk-FILE-SECRET\n")
    policy = SandboxPolicy(roots=(home,), deny_read=(home / ".local" / "share" / "acp-agent", config, key))
    shell = Shell(Root([home]), sandbox=lambda _input: policy)
    command = (
        "cat .local/share/acp-agent/sessions/s.jsonl .config/acp-agent/config.toml api-key.txt; "
        "grep -r SECRET . ; ls -a .local/share/acp-agent .config/acp-agent; echo x >> api-key.txt; "
        "rm -rf .local/share/acp-agent/sessions; echo done"
    )
    result = (await call_tool(shell, {"command": command})).result
    for secret in ("SESSION-SECRET", "sk-CONFIG-SECRET", "sk-FILE-SECRET"):
        assert secret not in result.as_text(), result.as_text()
    assert "No such file" in result.as_text()  # the folders look empty
    assert "done" in result.as_text()
    assert key.read_text() == "sk-FILE-SECRET\n" and (data / "s.jsonl").exists()
