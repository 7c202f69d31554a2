"""Protected paths: files whose change can run code, or widen what the agent may do, without anyone
running a command (the editor, git, direnv or the shell act on them by themselves).

``PROTECTED`` is the one list (the sandbox excludes the same paths from what a command may write). It
names no application: the application's own configuration folders are its to add (``protect``), in front
of it, and to pass wherever a list is taken (``ProtectedPaths(patterns=...)``, ``root_paths``, the sandbox's
``SandboxPolicy.protected``, ``Shell(protected=...)``); ``acp_agent`` adds ``.acp-agent`` and
``.config/acp-agent``.

A policy with a ``ProtectedPaths`` asks before any tool writes one of them, whatever its rules say: no
remembered "always" and no mode short of ``full-access`` covers them. ``ProtectedPaths.why(path)`` gives
the sentence the permission request shows ("this file is git's own ...").

A pattern is a run of path components matched below each root (``.git`` anywhere in the project,
``.config/fish`` in a home folder opened as a project), case-insensitively (a case-insensitive file
system writes ``.GIT/config`` to ``.git/config``); ``*`` globs within a component. A path outside every
root is matched on all its components. ``extra`` holds absolute paths protected whole (the user's
configuration folder, permission files kept elsewhere, the agent's data folder, ``~/bin``), also matched
case-insensitively.

The list covers a home folder opened as a project too (shell and editor rc files, the editors' user
settings, ``.local/bin``, autostart entries, systemd user units, ``environment.d``, ``.ssh``, ``.gnupg``,
git and package-tool configuration, the version managers and toolchains the shell sources or puts on PATH,
window managers, D-Bus session services, mail delivery and remote-login files). ``HOME_ONLY`` holds the
names that run code only in the home folder itself (``~/bin``: Debian's ``.profile`` puts it on PATH) and
are common project folder names elsewhere (``bin``): ``home_paths(home)`` gives them as absolute paths,
for ``ProtectedPaths``' ``extra`` and the sandbox's ``protected``. Not covered: cron tables (kept outside
the home folder, written by ``crontab``, a command), browser profiles.

Not protected, on purpose: build and test files (``Makefile``, ``package.json``, ``conftest.py``...) run
code only when a command runs them, and every source file is code once the tests run: that risk is the
command's, which asks (or is sandboxed).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePath

__all__ = [
    "HOME_ONLY",
    "PROTECTED",
    "ROOT_PATHS",
    "Protected",
    "ProtectedPaths",
    "home_paths",
    "protect",
    "root_paths",
]


@dataclass(frozen=True, slots=True)
class Protected:
    """A run of path components (lower case; ``*`` globs one) and why a change there matters;
    ``spelling``: the path as it is usually written (``.config/Code``), for the sandbox, which works on
    concrete, case-sensitive paths."""

    parts: tuple[str, ...]
    why: str
    spelling: str = ""

    def matches(self, parts: Sequence[str]) -> bool:
        n = len(self.parts)
        return any(
            all(fnmatchcase(parts[i + k], p) for k, p in enumerate(self.parts))
            for i in range(len(parts) - n + 1)
        )


def _each(names: str, why: str) -> list[Protected]:
    return [Protected(tuple(name.lower().split("/")), why, name) for name in names.split()]


def protect(names: str, why: str) -> tuple[Protected, ...]:
    """Patterns for ``names`` (space-separated, ``/`` between components), each protected because ``why``:
    how an application adds its own configuration folders to ``PROTECTED``."""
    return tuple(_each(names, why))


_GIT = "git's own files (configuration, hooks): a change can run code at the next git command, which the editor runs constantly"
PROTECTED: tuple[Protected, ...] = (
    *_each(".git", f"this file is one of {_GIT}"),
    *_each(".hg", "mercurial's own files: its configuration runs hooks at the next hg command"),
    *_each(".svn .bzr .jj _darcs .pijul .fslckout _fossil_", "version-control metadata: a change can run "
           "code or rewrite history at the next command"),
    *_each(".husky .githooks", "git hooks: they run at the next commit or push"),
    *_each(".pre-commit-config.yaml .pre-commit-hooks.yaml lefthook.yml .lefthook.yml lefthook-local.yml "
           "lefthook.yaml .lefthook.yaml", "a git hook manager's configuration: the commands it names run at "
           "the next commit"),
    *_each(".envrc .direnv", "direnv runs this when a shell enters the folder"),
    *_each("mise.toml .mise.toml mise.local.toml .mise.local.toml .mise .config/mise", "mise runs the hooks "
           "and tasks it names when a shell enters the folder"),
    *_each(".vscode *.code-workspace", "VS Code reads this: its tasks can run when the folder opens and its "
           "settings name programs to run"),
    *_each(".idea", "JetBrains IDEs read this folder: run configurations and startup tasks run from it"),
    *_each(".zed", "Zed reads this folder: its settings name language servers and tasks to run"),
    *_each(".fleet .helix", "the editor reads this folder: it names language servers and tasks to run"),
    *_each(".devcontainer .devcontainer.json", "editors build and start the dev container it describes, "
           "running its commands"),
    *_each(".nvim.lua .nvimrc .exrc", "Neovim and Vim run this file when they open the folder (exrc)"),
    *_each(".dir-locals.el .dir-locals-2.el", "Emacs evaluates these settings for every file below them"),
    *_each(".bashrc .bash_profile .bash_login .bash_logout .profile .zshrc .zshenv .zprofile .zlogin "
           ".zlogout .config/fish", "the shell runs this file when it starts"),
    *_each(".ssh", "ssh reads this folder: its config can run commands (ProxyCommand), authorized_keys lets "
           "others in"),
    *_each(".gitconfig .config/git", f"this is one of {_GIT}"),
    *_each(".github/workflows", "CI runs these at the next push, with the repository's secrets"),
    # A home folder opened as a project: what runs by itself at the next login, shell, editor or tool.
    *_each(".bash_aliases .bashrc.d .kshrc .mkshrc .cshrc .tcshrc .config/zsh .oh-my-zsh .xprofile .xinitrc "
           ".xsession .xsessionrc .pam_environment .config/environment.d .config/plasma-workspace",
           "the shell or the desktop session runs or reads this when it starts (it sets what runs)"),
    *_each(".config/autostart .kde/Autostart .kde4/Autostart", "the desktop session starts what these name "
           "at the next login"),
    *_each(".config/systemd .local/share/systemd", "systemd user units and timers: they run by themselves "
           "at login or on their schedule"),
    *_each(".local/bin .local/lib .cargo/bin", "programs and Python modules found on PATH or loaded at every "
           "start (a .pth file runs at each Python start): a change runs at the next command you type"),
    *_each(".local/share/applications .config/mimeapps.list", "desktop entries: they say which program "
           "opening a file or link runs"),
    *_each(".config/zed .config/Code .config/Code-OSS .config/VSCodium .config/Cursor .config/JetBrains "
           ".vscode-server .cursor .vscode-oss .cursor-server .windsurf-server .config/Windsurf", "the editor's own user settings and extensions: they name language "
           "servers, tasks and programs it runs"),
    *_each(".vimrc .gvimrc .vim .config/nvim .local/share/nvim .emacs .emacs.el .emacs.d init.el "
           ".config/emacs .doom.d .config/doom .spacemacs .config/helix .config/kak .tmux.conf "
           ".config/tmux .screenrc", "the editor (or terminal multiplexer) runs this configuration when "
           "it starts"),
    *_each(".gnupg", "gpg reads this folder: its configuration names programs to run, and it holds keys"),
    *_each(".hgrc .config/hg .direnvrc .config/direnv", "this tool's user configuration runs hooks at its "
           "next command"),
    *_each(".npmrc .yarnrc .yarnrc.yml .pypirc .config/pip .pip .pydistutils.cfg .condarc", "a package "
           "tool's configuration: it names scripts, shells, indexes and credentials used at the next "
           "install or upload"),
    *_each(".bash_completion .local/share/bash-completion .config/kitty .config/wezterm .wezterm.lua "
           ".config/alacritty .config/i3 .config/sway .config/hypr .config/powershell .config/nushell",
           "the shell, terminal or window manager runs this when it starts (completions: at the next tab)"),
    *_each(".cargo/config.toml .cargo/config .gradle/init.d .gradle/init.gradle .gradle/init.gradle.kts",
           "the build tool runs what this names (runners, wrappers, init scripts) at the next build"),
    *_each(".aws/config .aws/credentials .kube/config .docker/config.json", "the cloud tool runs the "
           "credential program this names at its next call"),
    *_each(".ipython .jupyter .gdbinit .config/gdb .lldbinit .lessfilter .mailcap .Rprofile .Renviron .irbrc "
           ".pryrc .psqlrc .sqliterc .julia/config .ghci .ghc .muttrc .neomuttrc .config/mutt .config/neomutt",
           "this tool runs the file (or the programs it names) when it starts or opens a file"),
    *_each(".cargo/env .cargo/env.fish .nvm .sdkman .asdf .pyenv .rbenv .nodenv .goenv .jenv .volta .rustup "
           ".bun/bin .deno/bin go/bin .dotnet/tools .ghcup .cabal/bin .opam/opam-init .local/share/pnpm "
           ".npm-global/bin .local/share/mise", "a version manager or toolchain: the shell sources its "
           "scripts when it starts, or finds its programs on PATH (a change runs at the next command)"),
    *_each(".xonshrc .config/xonsh .config/elvish .elvish .inputrc .config/starship.toml .config/zellij "
           ".config/ghostty .config/awesome .config/openbox .config/bspwm .config/qtile .xmonad "
           ".config/herbstluftwm .config/river .config/niri .config/labwc .config/waybar "
           ".config/autostart-scripts .config/lxsession", "the shell, its prompt, the terminal or the window "
           "manager runs the commands this names when it starts"),
    *_each(".local/share/dbus-1 .local/share/gnome-shell .local/share/plasma .local/share/kservices5 "
           ".config/user-tmpfiles.d .config/pipewire .config/wireplumber", "the desktop session starts the "
           "programs these name (D-Bus services, shell extensions, audio modules) by itself"),
    *_each(".forward .procmailrc .mailfilter", "mail delivery runs the programs this names when mail arrives"),
    *_each(".rhosts .shosts .k5login", "it lets other accounts log in as you"),
    *_each(".curlrc .config/curlrc .wgetrc .terraformrc .terraform.d .bunfig.toml .config/gh .config/gcloud "
           ".config/uv .gradle/gradle.properties .m2/settings.xml", "a tool reads this at its next call: it can name programs to run (plugins, "
           "credential helpers, aliases, JVM agents) or files to upload"),
)  # fmt: skip

_PATH_BIN = "your own programs, on PATH ({}): a change runs at the next command you type"
HOME_ONLY: tuple[Protected, ...] = (
    *_each("bin", _PATH_BIN.format("Debian's and Ubuntu's .profile put ~/bin there when it exists")),
    *_each(".bin", _PATH_BIN.format("shell configurations commonly put ~/.bin there")),
)
"""Names that run code only directly in the home folder (common project folder names elsewhere)."""


def home_paths(home: Path | str) -> tuple[tuple[Path, str], ...]:
    """``HOME_ONLY`` in ``home``: absolute paths and why (``ProtectedPaths``' ``extra``; their ``str`` for
    the sandbox's ``protected``, which takes an absolute path as it is). Pure."""
    base = Path(os.path.normpath(home))
    return tuple((base.joinpath(*p.spelling.split("/")), p.why) for p in HOME_ONLY)


def root_paths(patterns: Iterable[Protected]) -> tuple[str, ...]:
    """``patterns`` as paths relative to a root (the glob patterns left out): what a sandbox that works on
    concrete paths refuses to let a command write (``harness.sandbox`` does, at each root)."""
    return tuple(p.spelling for p in patterns if p.spelling and "*" not in p.spelling)


ROOT_PATHS: tuple[str, ...] = root_paths(PROTECTED)
"""``PROTECTED`` as paths relative to a root."""


@dataclass(frozen=True, slots=True)
class ProtectedPaths:
    """``patterns`` (by default ``PROTECTED``) below ``roots``, and the ``extra`` absolute paths (with their
    reasons)."""

    roots: tuple[Path, ...] = ()
    extra: tuple[tuple[Path, str], ...] = ()
    patterns: tuple[Protected, ...] = PROTECTED

    @classmethod
    def of(
        cls,
        roots: Iterable[Path | str],
        extra: Iterable[tuple[Path | str, str]] = (),
        patterns: tuple[Protected, ...] = PROTECTED,
    ) -> ProtectedPaths:
        """Blocking (symlinks in the roots and extras are resolved, both spellings kept)."""
        return cls(
            tuple(dict.fromkeys(q for r in roots for q in _spellings(r))),
            tuple(dict.fromkeys((q, why) for p, why in extra for q in _spellings(p))),
            patterns,
        )

    def why(self, path: Path | str) -> str | None:
        """Why ``path`` (absolute, normalised) is protected, or None. Pure: resolve symlinks first and
        ask again for the real path (``why_real``)."""
        p = PurePath(path)
        folded = str(p).lower()  # as the patterns: a case-insensitive file system writes ~/BIN/x to ~/bin/x
        for base, why in self.extra:
            b = str(base).lower()
            if folded == b or folded.startswith(b.rstrip("/") + "/"):
                return why
        parts = _below_root(p, self.roots)
        for pattern in self.patterns:
            if pattern.matches(parts):
                return pattern.why
        return None

    def why_real(self, path: Path | str) -> str | None:
        """``why`` for the path as written and for where it really leads (a symlink to ``.git``). Blocking.

        A link on the way swapped while it is read makes ``realpath`` fail (``EINVAL``): then where it
        leads cannot be told, and the path is treated as protected (asked about), never as a crash."""
        if why := self.why(path):
            return why
        try:
            real = os.path.realpath(path)
        except OSError:
            return "a symbolic link on its way changed while it was checked"
        return self.why(real)


def _spellings(path: Path | str) -> tuple[Path, Path]:
    return Path(os.path.normpath(path)), Path(os.path.realpath(path))


def _below_root(path: PurePath, roots: Sequence[Path]) -> list[str]:
    for r in roots:
        if path == r or path.is_relative_to(r):
            return [part.lower() for part in path.relative_to(r).parts]
    return [part.lower() for part in path.parts[1:]]
