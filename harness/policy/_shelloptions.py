"""Options that write or execute, per tool: the matcher's table (``UNSAFE_OPTIONS``).

``unsafe_reason`` says whether a simple command uses an option that writes a file or runs a program
(``sort -o``, ``git diff --output``, ``git -c``, ``find -exec``, ``sed -i``, ``tar --to-command``...). A word
whose value is unknown until the shell runs (``$X``, ``*``) counts as such an option for a tool with a row
(a file named ``-ofoo`` makes ``sort *`` write ``foo``).

``write_targets`` lists the files a command is known to write besides its redirections (``tee``, ``cp``,
``sort -o``... operands), for the protected-path check. It is a best effort, not a sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from ._shellparse import SimpleCommand

__all__ = ["UNSAFE_OPTIONS", "Unsafe", "unsafe_reason", "write_targets"]

# --- options that write or execute ----------------------------------------------------------------

Check = Callable[[Sequence[str], int], "str | None"]
"""An extra check over a tool's arguments; the first ``given`` of them are named by the rule (the user's)."""


@dataclass(frozen=True, slots=True)
class Unsafe:
    """One tool's row: short option letters and long option names that write or execute, what they do,
    and an extra check for what options cannot express (a sed script's ``w`` command)."""

    why: str
    short: str = ""
    long: tuple[str, ...] = ()
    words: tuple[str, ...] = ()  # exact words (``find -exec``; ``dd of=``: ending in ``=``, a prefix)
    check: Check | None = None
    old_style_bundle: bool = False  # ``tar xzf``: the first argument is a bundle of short options


def _sed_check(args: Sequence[str], given: int) -> str | None:
    scripts = _values(args, (), ("--expression",)) + _sed_bundled_scripts(args)
    if not scripts:
        scripts = [a for a in args if not a.startswith("-")][:1]
    if any(_sed_script_writes(script) for script in scripts):
        return "its script writes a file or runs a command (w, W, e, s///w, s///e)"
    return None


def _sed_bundled_scripts(args: Sequence[str]) -> list[str]:
    """Scripts given to ``-e`` alone or in a bundle (``-ne S``, ``-nS``... ``-neS``)."""
    out: list[str] = []
    for k, a in enumerate(args):
        if a.startswith("-") and not a.startswith("--") and "e" in a[1:]:
            rest = a[a.index("e", 1) + 1 :]
            out.append(rest or (args[k + 1] if k + 1 < len(args) else ""))
    return out


def _sed_script_writes(script: str) -> bool:
    """Whether a sed script holds a command or ``s`` flag that writes or executes (``w``, ``W``, ``e``);
    True when the script cannot be read."""
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;{}!":
            i += 1
        i = _skip_address(script, i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return False
        c = script[i]
        if c in "wWe":
            return True
        if c in "sy":
            i = _skip_fields(script, i + 1, 2)
            if i < 0:
                return True
            while c == "s" and i < n and script[i] not in ";\n}":
                if script[i] in "we":
                    return True
                i += 1
        elif c in "aic":  # text up to the end of the line
            nl = script.find("\n", i)
            i = n if nl < 0 else nl + 1
        elif c in "bt:rRqQlLTv#":  # a label, a file to read, a number: up to the end of the command
            while i < n and script[i] not in ";\n":
                i += 1
        else:
            i += 1
    return False


def _skip_address(script: str, i: int) -> int:
    n = len(script)
    while i < n:
        c = script[i]
        if c.isdigit() or c in "$,~+":
            i += 1
        elif c in "/\\":
            i = _skip_fields(script, i + (c == "\\"), 1)
            if i < 0:
                return n
            while i < n and script[i] in "IM":
                i += 1
        else:
            return i
    return i


def _skip_fields(script: str, i: int, fields: int) -> int:
    """``script[i]`` is a delimiter: the index after ``fields`` fields it ends; -1 when unterminated."""
    if i >= len(script):
        return -1
    delimiter = script[i]
    i += 1
    done = 0
    while i < len(script):
        c = script[i]
        if c == "\\":
            i += 2
            continue
        i += 1
        if c == delimiter:
            done += 1
            if done == fields:
                return i
    return -1


def _awk_check(args: Sequence[str], given: int) -> str | None:
    # Every word may be the program (``-v x=1 PROG``, ``-F , PROG``, several ``-e``/``--source``): check all.
    texts = [a for a in args if not a.startswith("-")] + _values(args, ("-e",), ("--source",))
    if any(re.search(r"system|\||>|@load|@include|getline", text) for text in texts):
        return "its program runs commands or writes files (system, |, >, getline, @load)"
    return None


def _git_check(args: Sequence[str], given: int) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if i >= given and args[i] not in _GIT_SAFE_GLOBALS:
            return f"the global option {args[i]} changes what git runs, or where"
        i += 1
    if i >= len(args) or i < given - 1:
        return None  # no subcommand, or the rule names more than it
    sub, opts = args[i], args[i + 1 :]
    if i >= given:
        reads = set(opts) & _GIT_CONFIG_READS or opts[:1] in (["get"], ["list"])
        if sub == "config" and not reads:
            return "git config writes the repository's configuration"
        if sub in _GIT_UNSAFE or (sub, opts[0] if opts else "") in _GIT_UNSAFE_SUB:
            return f"git {sub} runs commands or writes files it is given"
    letters = set(_GIT_SUB_SHORT.get(sub, ""))
    for o in opts[max(0, given - i - 1) :]:
        if o.startswith("-") and not o.startswith("--") and set(o[1:]) & letters:
            return f"git {sub} {o} writes a file or runs a program"
    return None


_GIT_SAFE_GLOBALS = frozenset({"--no-pager", "-P", "-p", "--paginate", "--no-replace-objects",
                               "--literal-pathspecs", "--no-optional-locks", "--version", "--help",
                               "--no-advice", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"})  # fmt: skip
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"})
_GIT_UNSAFE = frozenset({"filter-branch", "filter-repo", "instaweb", "daemon", "send-email", "credential",
                         "credential-store", "credential-cache", "upload-pack", "receive-pack", "shell"})  # fmt: skip
_GIT_UNSAFE_SUB = frozenset(
    {("submodule", "foreach"), ("bisect", "run"), ("hook", "run"), ("bundle", "create")}
)
_GIT_SUB_SHORT = {"format-patch": "o", "grep": "O", "rebase": "x", "clone": "uc", "fetch": "u", "pull": "u",
                  "ls-remote": "u", "archive": "o", "difftool": "x"}  # fmt: skip


def _tar_check(args: Sequence[str], given: int) -> str | None:
    # GNU tar opens an archive named HOST:FILE on HOST through rsh/ssh (unless --force-local).
    if "--force-local" not in args and any(
        re.match(r"[^/:]+:", a) for a in args[given:] if not a.startswith("-")
    ):
        return "an archive named HOST:FILE is read on another machine through rsh"
    return None


def _tee_check(args: Sequence[str], given: int) -> str | None:
    return "it writes the files it is given" if any(not a.startswith("-") for a in args[given:]) else None


def _make_check(args: Sequence[str], given: int) -> str | None:
    # make takes every non-option word holding ``=`` as a variable, whatever its name (``.SHELLFLAGS=``).
    if any("=" in a and not a.startswith("-") for a in args[given:]):
        return "a variable given to make (SHELL=, CC=...) changes what its recipes run"
    return None


def _npm_check(args: Sequence[str], given: int) -> str | None:
    subs = [(k, a) for k, a in enumerate(args) if not a.startswith("-")]
    if subs and subs[0][0] >= given and subs[0][1] in _NPM_UNSAFE:
        return f"{subs[0][1]} runs a package or a command, or changes the configuration"
    return None


# create/init (innit) run a create-* package; explore runs a command; set/edit write or run an editor.
_NPM_UNSAFE = frozenset(
    {"exec", "x", "dlx", "config", "c", "create", "init", "innit", "explore", "set", "edit"}
)


def _pytest_check(args: Sequence[str], given: int) -> str | None:
    # pytest imports a -W filter's category (``ignore::pkg.Warning`` imports pkg), like -p imports a plugin.
    for value in _values(args[given:], ("-W",), ("--pythonwarnings",)):
        fields = value.split(":")
        if len(fields) > 2 and "." in fields[2]:
            return f"-W {value} imports the module its warning category names"
    return None


def _go_check(args: Sequence[str], given: int) -> str | None:
    for a in args[given:]:
        name = a.lstrip("-").split("=", 1)[0].removeprefix("test.")
        if a.startswith("-") and name in _GO_RUNS:
            return f"{a} runs a program"
        if a.startswith("-") and name in _GO_WRITES:
            return f"{a} writes a file"
        if "extld" in a:  # -ldflags='-extld=PROG' makes the linker run PROG
            return f"{a} runs a program as the linker"
    if args[:1] == ["env"] and {"-w", "-u"} & set(args[given:]):
        return "go env -w/-u writes the go configuration"
    return None


_GO_RUNS = frozenset({"exec", "toolexec", "vettool", "compiler", "gccgoflags"})
_GO_WRITES = frozenset({"o", "pkgdir", "coverprofile", "cpuprofile", "memprofile", "blockprofile",
                        "mutexprofile", "trace", "outputdir"})  # fmt: skip


def _curl_check(args: Sequence[str], given: int) -> str | None:
    for value in _values(
        args[given:], ("-d", "-F"), ("--data", "--data-binary", "--data-raw", "--form", "--json")
    ):
        if value.startswith("@") or "=@" in value or "=<" in value:
            return "it sends a file"
    return None


def _values(args: Sequence[str], short: Sequence[str], long: Sequence[str]) -> list[str]:
    """The values given to the options ``short`` (``-o F``, ``-oF``) and ``long`` (``--out F``, ``--out=F``)."""
    out: list[str] = []
    for i, a in enumerate(args):
        key, eq, value = a.partition("=")
        if a in short or a in long:
            if i + 1 < len(args):
                out.append(args[i + 1])
        elif eq and key in long:
            out.append(value)
        elif any(a.startswith(s) and len(a) > len(s) and not a.startswith("--") for s in short):
            out.append(a[2:])
    return out


UNSAFE_OPTIONS: dict[str, Unsafe] = {
    "sort": Unsafe("writes a file or runs a program", "o", ("output", "compress-program")),
    "git": Unsafe("writes a file or runs a program", check=_git_check,
                  long=("output", "output-directory", "upload-pack", "receive-pack", "exec", "template",
                        "open-files-in-pager", "extcmd", "config")),
    "tar": Unsafe("extracts or writes files, or runs a program", "xcruAIFg",
                  ("extract", "get", "create", "append", "update", "catenate", "concatenate", "delete",
                   "to-command", "use-compress-program", "checkpoint-action", "info-script",
                   "new-volume-script", "rsh-command", "rmt-command", "index-file", "listed-incremental", "volno-file"),
                  old_style_bundle=True, check=_tar_check),
    "find": Unsafe("deletes, writes files or runs commands",
                   words=("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls")),
    "rg": Unsafe("runs a program on each file", long=("pre", "hostname-bin")),
    "fd": Unsafe("runs a command on each file", "xX", ("exec", "exec-batch")),
    "sed": Unsafe("edits files in place or runs its script's commands", "if", ("in-place", "file"),
                  check=_sed_check),
    "awk": Unsafe("runs a program file or its commands", "fEilopdW",
                  ("file", "exec", "load", "include", "pretty-print", "profile", "dump-variables"),
                  check=_awk_check),
    "man": Unsafe("runs a pager, a browser or a configuration file's programs", "PHCX",
                  ("pager", "html", "config-file", "gxditview")),
    # A lesskey file's #env section can set LESSOPEN, which less runs even when not on a terminal.
    "less": Unsafe("writes a log file or reads a lesskey file (its LESSOPEN runs a command)", "oOk",
                   ("log-file", "LOG-FILE", "lesskey-file", "lesskey-src", "lesskey-content")),
    "curl": Unsafe("writes or uploads files", "oOTKDc",
                   ("output", "remote-name", "remote-name-all", "upload-file", "config", "dump-header",
                    "cookie-jar", "trace", "trace-ascii", "libcurl", "stderr", "output-dir", "etag-save",
                    "hsts", "alt-svc"), check=_curl_check),
    "wget": Unsafe("writes files, runs a program or sends a file", "oOaPe",
                   ("output-document", "output-file", "append-output", "directory-prefix", "execute",
                    "post-file", "body-file", "use-askpass")),
    "make": Unsafe("reads recipes from elsewhere or evaluates text", "fCEI",
                   ("file", "makefile", "directory", "eval", "include-dir"), check=_make_check),
    "cargo": Unsafe("runs another project or overrides the configuration (runners, linkers)", "CZ",
                    ("config", "manifest-path", "target-dir", "config-path", "artifact-dir", "out-dir")),
    "go": Unsafe("runs a program, in another folder, or writes the configuration", "C", ("modfile",),
                 check=_go_check),
    "pytest": Unsafe("deletes a directory, writes files, sends data or loads code from elsewhere", "cpo",
                     ("basetemp", "junitxml", "junit-xml", "pastebin", "log-file", "resultlog", "rootdir",
                      "config-file", "confcutdir", "override-ini", "plugins", "pdbcls", "debug"), check=_pytest_check),
    # -e/--eval: ``bun -e CODE``, ``yarn node -e CODE`` run code given on the command line.
    "npm": Unsafe("runs a package, code, another shell or another project", "Ce",
                  ("script-shell", "node-options", "userconfig", "globalconfig", "prefix", "dir", "cwd",
                   "cache", "registry", "browser", "editor", "shell", "eval"), check=_npm_check),
    "uv": Unsafe("runs in another project or with another configuration", long=("directory", "project",
                 "config-file", "with", "with-requirements", "python", "index-url", "extra-index-url")),
    "poetry": Unsafe("runs in another project", "CP", ("directory", "project")),
    # Their ``-Dname=value`` words are common: the short options are exact words, not letters.
    "gradle": Unsafe("runs another build or init script", long=("project-dir", "settings-file", "build-file",
                     "init-script", "gradle-user-home", "include-build"), words=("-p", "-c", "-b", "-I")),
    "mvn": Unsafe("runs another build", long=("file", "settings", "global-settings"), words=("-f", "-s", "-gs")),
    # Build tools that run another folder's recipes (like ``git -C``) or a script they are given.
    "ninja": Unsafe("runs another folder's build", "Cf", ()),
    "cmake": Unsafe("runs a script or another folder's build", "PCSB", ("build", "install")),
    "terraform": Unsafe("runs another folder's configuration", words=("-chdir=",)),
    "just": Unsafe("runs another folder's recipes", "fd", ("justfile", "working-directory")),
    "composer": Unsafe("runs another folder's scripts", "d", ("working-dir",)),
    "pip": Unsafe("installs elsewhere or from another index", "ti",
                  ("target", "prefix", "root", "index-url", "extra-index-url", "constraint", "src")),
    "python": Unsafe("runs code given on the command line", "c", check=lambda a, g: _python_check(a, g)),
    "node": Unsafe("runs code given on the command line", "epr",
                   ("eval", "print", "require", "import", "loader", "experimental-loader")),
    "perl": Unsafe("runs code given on the command line", "eE"),
    "ruby": Unsafe("runs code given on the command line", "e"),
    "php": Unsafe("runs code given on the command line", "r"),
    # A remote shell or a tester run locally (rsync -e 'sh -c x', zip -TT CMD).
    "rsync": Unsafe("runs a program as its remote shell or writes a log or batch file", "e",
                    ("rsh", "rsync-path", "log-file", "write-batch", "only-write-batch")),
    "zip": Unsafe("runs a program to test the archive", "T", ("unzip-command",)),
    "tee": Unsafe("writes the files it is given", check=_tee_check),
    "dd": Unsafe("writes a file", words=("of=",)),
}  # fmt: skip
"""The matcher's table: per tool, the options that write or execute (see the README's "What a shell rule
matches"). A prefix rule for the tool never covers a command using one beyond the rule's own words."""

_ALIASES = {"gawk": "awk", "mawk": "awk", "nawk": "awk", "gsed": "sed", "gtar": "tar", "bsdtar": "tar",
            "gmake": "make", "py.test": "pytest", "pnpm": "npm", "yarn": "npm", "bun": "npm",
            "nodejs": "node", "fdfind": "fd", "gradlew": "gradle", "pip3": "pip", "mvnw": "mvn"}  # fmt: skip


def _row(name: str) -> Unsafe | None:
    base = PurePath(name).name
    base = _ALIASES.get(base, base)
    if re.fullmatch(r"python[0-9.]*", base):
        base = "python"
    return UNSAFE_OPTIONS.get(base)


def unsafe_reason(cmd: SimpleCommand, given: int = 1) -> str | None:
    """Why ``cmd`` may write or execute beyond what its first ``given`` words (a rule's own, the user's)
    say; None when nothing in the table applies."""
    if not cmd.words:
        return None
    row = _row(cmd.words[0])
    if row is None:
        return None
    given = max(given, 1)
    name = PurePath(cmd.words[0]).name
    if any(cmd.is_expanded(i) for i in range(given, len(cmd.words))):
        return f"an argument of {name} is only known once the shell expands it (it could be an option)"
    args = list(cmd.words[1:])
    for k in range(given - 1, len(args)):
        word = args[k]
        if _option_hit(row, word, bundle=row.old_style_bundle and k == 0 and not word.startswith("-")):
            return f"{name} {word}: {row.why}"
    why = row.check(args, given - 1) if row.check is not None else None
    return f"{name}: {why}" if why is not None else None


def _python_check(args: Sequence[str], given: int) -> str | None:
    # ``python -m pytest -p evil`` is pytest with pytest's options: judge them by the module's row.
    at = next((k for k, a in enumerate(args) if a.startswith("-m")), None)
    if at is None:
        return None
    attached = args[at][2:]
    module = attached or (args[at + 1] if at + 1 < len(args) else "")
    rest = args[at + 1 :] if attached else args[at + 2 :]
    row = _row(module)
    if row is None or row is UNSAFE_OPTIONS["python"]:
        return None
    inner = max(0, given - (len(args) - len(rest)))
    for word in rest[inner:]:
        if _option_hit(row, word, bundle=False):
            return f"-m {module} {word}: {row.why}"
    why = row.check(rest, inner) if row.check is not None else None
    return f"-m {module}: {why}" if why is not None else None


def _option_hit(row: Unsafe, word: str, *, bundle: bool) -> bool:
    if any(word == w or (w.endswith("=") and word.startswith(w)) for w in row.words):
        return True
    if word.startswith("--") and len(word) > 2:
        given = word[2:].split("=", 1)[0]
        # GNU getopt and git take any unambiguous prefix of a long option (--outp, even --o, for --output).
        return any(name.startswith(given) for name in row.long)
    if bundle or (word.startswith("-") and len(word) > 1):
        return bool(set(word if bundle else word[1:]) & set(row.short))
    return False


# --- files a command writes -----------------------------------------------------------------------

_WRITES_ALL_OPERANDS = frozenset({"tee", "touch", "rm", "rmdir", "mkdir", "truncate", "shred", "unlink"})
_WRITES_AFTER_FIRST = frozenset({"chmod", "chown", "chgrp"})
_WRITES_LAST = frozenset({"cp", "mv", "ln", "install", "rsync", "scp"})


def write_targets(cmd: SimpleCommand) -> list[str]:
    """The files ``cmd`` is known to write besides its redirections (best effort, for protected paths)."""
    if not cmd.words:
        return []
    name = PurePath(cmd.words[0]).name
    args = list(cmd.words[1:])
    operands = [a for a in args if not a.startswith("-")]
    if name in _WRITES_ALL_OPERANDS:
        return operands
    if name in _WRITES_AFTER_FIRST:
        return operands[1:]
    if name in _WRITES_LAST:
        return _values(args, ("-t",), ("--target-directory",)) or operands[-1:]
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    if _ALIASES.get(name, name) == "sed" and any(a.startswith(("-i", "--in-place")) for a in args):
        return operands
    if name in ("sort", "git", "curl", "wget"):
        return _values(args, ("-o", "-O"), ("--output", "--output-document"))
    return []
