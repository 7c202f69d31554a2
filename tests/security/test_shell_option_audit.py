"""The options table audited against what the programs really do: each command below runs code, writes a
file or leaves the machine though its first words match an allow rule, so the rule must not cover it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.security.test_shell_rules import A, Q, allow, judge


@pytest.mark.parametrize(
    ("rule", "command", "expected"),
    [
        # man runs its pager, browser or a config file's pager.
        ("man", "man ls", A),
        ("man", "man -P 'touch /tmp/m' ls", Q),
        ("man", "man --pager='touch /tmp/m' ls", Q),
        ("man", "man --pag=sh ls", Q),
        ("man", "man -H'touch /tmp/m' ls", Q),
        ("man", "man --html=sh ls", Q),
        ("man", "man -C evil.conf ls", Q),
        # awk: the program is found past -v / -F values, in every -e / --source, and profile/dump files.
        ("awk", "awk -F, '{print $1}' data.csv", A),
        ("awk", "awk -v x=1 'BEGIN{system(\"touch /tmp/m\")}'", Q),
        ("awk", "awk -F , 'BEGIN{system(\"touch /tmp/m\")}'", Q),
        ("awk", "awk -e 'BEGIN{x=1}' -e 'BEGIN{system(\"touch /tmp/m\")}'", Q),
        ("awk", "awk --source='BEGIN{system(\"touch /tmp/m\")}'", Q),
        ("awk", "awk -o/tmp/out '{print}' f", Q),
        ("awk", "awk --pretty-print=/tmp/out '{print}' f", Q),
        ("awk", "awk --profile=/tmp/out '{print}' f", Q),
        ("awk", "awk --dump-variables=/tmp/out '{print}' f", Q),
        ("awk", "awk -W exec=x.awk f", Q),
        # sed: a script given after a bundled -e (-ne) is read too.
        ("sed", "sed -n -e p file", A),
        ("sed", "sed -n -e p -ne 'w /tmp/m' file", Q),
        ("sed", "sed -Ee 'w /tmp/m' file", Q),
        # go: tools it runs on request, and files its flags write.
        ("go test", "go test ./...", A),
        ("go vet", "go vet -vettool=/tmp/evil ./...", Q),
        ("go build", "go build -ldflags='-extld=/tmp/evil' .", Q),
        ("go build", "go build -o /tmp/out .", Q),
        ("go test", "go test -coverprofile=/tmp/c.out ./...", Q),
        ("go test", "go test -cpuprofile /tmp/c.out ./...", Q),
        ("go env", "go env -u GOFLAGS", Q),
        ("go test", "go test ./... -args -test.coverprofile=/tmp/c.out", Q),
        ("go test", "go test -run TestX -count=1 -v ./...", A),
        # npm and friends: subcommands that run a package or another command, and the programs it opens.
        ("npm", "npm create evil", Q),
        ("npm", "npm init evil", Q),
        ("npm", "npm explore pkg -- touch /tmp/m", Q),
        ("npm", "npm set script-shell=/tmp/evil", Q),
        ("npm", "npm docs pkg --browser=/tmp/evil", Q),
        ("yarn", "yarn create evil", Q),
        ("yarn", 'yarn node -e \'require("child_process").execSync("touch /tmp/m")\'', Q),
        ("bun", 'bun -e \'Bun.spawnSync(["touch", "/tmp/m"])\'', Q),
        ("bun", "bun --eval='1'", Q),
        ("npm test", "npm test", A),
        ("yarn", "yarn build", A),
        # tar: a file it writes when only listing.
        ("tar", "tar -tf a.tar", A),
        ("tar", "tar -tf a.tar --volno-file=/tmp/m", Q),
        ("tar", "tar -tf host:a.tar", Q),  # opened on host through rsh
        ("tar", "tar tf host:a.tar", Q),
        ("tar", "tar -tf host:a.tar --force-local", A),
        # pytest: a debugger class it imports, a debug log it writes.
        ("pytest", "pytest -q tests", A),
        ("pytest", "pytest --pdbcls=evil:Pdb --pdb", Q),
        ("pytest", "pytest --debug=/tmp/log", Q),
        ("pytest", "pytest -W error::DeprecationWarning", A),
        ("pytest", "pytest -W 'ignore::evilmod.W'", Q),  # imports evilmod
        ("pytest", "pytest -Wignore::evilmod.W", Q),
        ("pytest", "pytest --pythonwarnings=ignore::evilmod.W", Q),
        # cargo: build outputs copied elsewhere.
        ("cargo build", "cargo build --artifact-dir /tmp/x", Q),
        ("cargo build", "cargo build --out-dir=/tmp/x", Q),
        # less: a lesskey file sets LESSOPEN, a command less runs on each file (proved below).
        ("less", "less README.md", A),
        ("less", "less -k evil.keys README.md", Q),
        ("less", "less --lesskey-src=evil.keys README.md", Q),
        ("less", "less --lesskey-content='#env\nLESSOPEN=|sh' README.md", Q),
        ("less", "LESSOPEN='|touch /tmp/m' less README.md", Q),
        # python -m TOOL takes TOOL's options.
        ("python -m pytest", "python -m pytest -q tests", A),
        ("python -m pytest", "python -m pytest -p evil_plugin", Q),
        ("python3 -m pytest", "python3 -m pytest --rootdir=/elsewhere", Q),
        ("python -m pip", "python -m pip install --target /elsewhere x", Q),
        ("python", "python -mpytest --pdbcls=evil:P", Q),
        # ssh, rsync and zip run a local command through an option.
        ("ssh host", "ssh -o ProxyCommand='touch /tmp/m' host", Q),
        ("ssh", "ssh -oProxyCommand='touch /tmp/m' host", Q),
        ("ssh", "ssh -F evil.conf host", Q),
        ("rsync", "rsync -e 'sh -c x' a host:b", Q),
        ("rsync", "rsync --rsync-path='touch /tmp/m' a host:b", Q),
        ("zip", "zip -T -TT 'touch /tmp/m' a.zip f", Q),
        ("zip", "zip --unzip-command='touch /tmp/m' a.zip f", Q),
    ],
)
def test_an_allow_rule_does_not_cover_an_option_that_runs_or_writes(
    rule: str, command: str, expected: object
) -> None:
    assert judge(allow(rule), command) == expected


@pytest.mark.process
@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_a_lesskey_file_runs_a_command_even_off_a_terminal_so_a_less_rule_asks(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "keys").write_text(f"#env\nLESSOPEN=|touch {marker}; cat %s\n")
    (tmp_path / "f").write_text("a\n")
    command = f"less --lesskey-src={tmp_path / 'keys'} {tmp_path / 'f'}"
    assert judge(allow("less"), command) == Q
    subprocess.run(
        ["bash", "-c", command], stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False
    )
    assert marker.exists()  # the hole is real: what the rule would have let through runs code
