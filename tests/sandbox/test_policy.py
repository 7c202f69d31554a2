"""Unit tests: a policy compiles to the Landlock rules it should, the spec survives its text form, the
Seatbelt profile says the same policy, and a denial gets its note."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.sandbox import (
    SandboxPolicy,
    Support,
    compile_spec,
    explain_denial,
    sandbox_argv,
    seatbelt_profile,
)
from harness.sandbox import _landlock as ll

WRITE_FILE = ll.ACCESS_FS["write_file"][0]
MAKE_REG = ll.ACCESS_FS["make_reg"][0]
READ_FILE = ll.ACCESS_FS["read_file"][0]
READ_DIR = ll.ACCESS_FS["read_dir"][0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src").mkdir()
    (root / "README.md").write_text("hi\n")
    (root / ".envrc").write_text("export X=1\n")
    (root / "out-link").symlink_to(tmp_path)
    return root.resolve()


def rules_of(spec: dict[str, object]) -> dict[str, int]:
    return {str(p): int(a) for p, a in spec["rules"]}  # type: ignore[union-attr]


def test_the_project_folder_grants_plain_files_not_folders_and_its_protected_entries_are_read_only_mounts(
    project: Path, tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    spec = compile_spec(SandboxPolicy(roots=(project,), temp=temp), 7)
    rules = rules_of(spec)
    assert rules[str(project / "src")] & MAKE_REG and rules[str(project / "src")] & WRITE_FILE
    assert rules[str(project / "README.md")] & WRITE_FILE
    top = rules[str(project)]
    assert top & MAKE_REG and top & READ_FILE
    for right in ("make_dir", "make_sym", "make_fifo", "make_sock", "make_char", "make_block"):
        assert top & ll.ACCESS_FS[right][0] == 0, right
    for protected in (".git", ".git/config", ".git/hooks", ".envrc"):
        assert str(project / protected) not in rules
    assert {str(project / ".git"), str(project / ".envrc")} <= set(spec["ro"])
    assert str(project) in spec["rw"] and str(temp.resolve()) in spec["rw"]
    assert str(project / "out-link") not in rules  # a symlink never carries a rule to its target
    assert rules[str(temp.resolve())] & MAKE_REG


def test_a_nested_protected_path_splits_its_parent(project: Path) -> None:
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "CODEOWNERS").write_text("*\n")
    rules = rules_of(compile_spec(SandboxPolicy(roots=(project,)), 7))
    assert rules[str(project / ".github" / "CODEOWNERS")] & WRITE_FILE
    assert str(project / ".github" / "workflows") not in rules
    assert str(project / ".github") not in rules


def test_reads_split_around_a_denied_path_and_its_parents_stay_listable(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".config" / "acp-agent"
    secret.mkdir(parents=True)
    (tmp_path / "home" / ".bashrc").write_text("")
    policy = SandboxPolicy(roots=(tmp_path / "project",), deny_read=(secret,))
    (tmp_path / "project").mkdir()
    rules = rules_of(compile_spec(policy, 7))
    assert rules["/"] == READ_DIR
    assert str(secret.resolve()) not in rules
    assert rules[str((tmp_path / "home" / ".bashrc").resolve())] & READ_FILE
    assert rules[str((tmp_path / "home" / ".config").resolve())] == READ_DIR


def test_network_off_handles_tcp_and_asks_for_a_namespace_network_on_does_neither(project: Path) -> None:
    off = compile_spec(SandboxPolicy(roots=(project,)), 7, netns=True)
    assert off["handled_net"] == ll.NET_BIND_TCP | ll.NET_CONNECT_TCP and off["netns"] is True
    on = compile_spec(SandboxPolicy(roots=(project,), network=True), 7, netns=True)
    assert on["handled_net"] == 0 and on["netns"] is False
    old = compile_spec(SandboxPolicy(roots=(project,)), 3)
    assert old["handled_net"] == 0 and old["scoped"] == 0
    assert old["handled_fs"] == ll.fs_rights(3) and not old["handled_fs"] & ll.ACCESS_FS["ioctl_dev"][0]


def test_read_only_mode_writes_only_the_temp_folder(project: Path, tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    rules = rules_of(compile_spec(SandboxPolicy(mode="read-only", roots=(project,), temp=temp), 7))
    assert not rules.get(str(project / "src"), 0) & WRITE_FILE
    assert rules[str(temp.resolve())] & WRITE_FILE


def test_the_spec_state_folder_is_never_writable(project: Path, tmp_path: Path) -> None:
    state = project / "src" / "specs"
    state.mkdir()
    rules = rules_of(compile_spec(SandboxPolicy(roots=(project,), state_dir=state), 7))
    assert str(state) not in rules and str(project / "src") not in rules


def test_the_spec_text_form_round_trips_and_drops_paths_with_newlines(project: Path) -> None:
    spec = compile_spec(SandboxPolicy(roots=(project,), temp=project / "src"), 7, netns=True)
    spec["rules"].append(["/odd\nname", 1])
    back = ll.parse_spec(ll.format_spec(spec))
    assert back["rules"] == spec["rules"][:-1]
    assert back["env"] == {"TMPDIR": str(project / "src")} and back["netns"] is True
    with pytest.raises(ValueError):
        ll.parse_spec("not a spec\n")


def test_a_policy_round_trips_through_its_dict_and_refuses_relative_paths(project: Path) -> None:
    policy = SandboxPolicy(roots=(project,), network=True, writable=(Path("/opt/cache"),))
    assert SandboxPolicy.from_dict(policy.to_dict()) == policy
    with pytest.raises(ValueError):
        SandboxPolicy.from_dict({"roots": ["relative"]})
    with pytest.raises(ValueError):
        SandboxPolicy.from_dict({"mode": "wide-open"})


def test_unset_variables_cross_the_spec_text_and_leave_the_commands_environment(project: Path) -> None:
    policy = SandboxPolicy(roots=(project,), temp=project / "src").without_env(["OPENAI_API_KEY", "BAD NAME"])
    policy = policy.without_env(["COPIED_KEY", "OPENAI_API_KEY"])
    assert policy.unset_env == ("BAD NAME", "COPIED_KEY", "OPENAI_API_KEY")
    assert SandboxPolicy.from_dict(policy.to_dict()) == policy
    back = ll.parse_spec(ll.format_spec(compile_spec(policy, 7)))
    assert back["unset"] == ["COPIED_KEY", "OPENAI_API_KEY"]  # a name no variable can have is left out
    base = {"PATH": "/bin", "OPENAI_API_KEY": "sk-x", "COPIED_KEY": "sk-x", "TMPDIR": "/tmp"}
    expected = {"PATH": "/bin", "TMPDIR": str(project / "src")}
    assert ll.spec_environ(back, base) == expected == policy.child_env(base)
    mac = sandbox_argv(policy, ["bash", "-c", "env"], spec_dir=project, support=Support("seatbelt"))
    assert mac[3:] == ["/usr/bin/env", "-uCOPIED_KEY", "-uOPENAI_API_KEY", "bash", "-c", "env"]


def test_the_seatbelt_profile_allows_the_project_but_not_its_protected_paths(project: Path) -> None:
    policy = SandboxPolicy(roots=(project,), deny_read=(Path('/Users/me/"odd"'),))
    profile = seatbelt_profile(policy)
    assert profile.startswith("(version 1)\n(deny default)\n")
    assert f'(allow file-write* (require-all (subpath "{project}")' in profile
    assert f'(require-not (subpath "{project}/.git"))' in profile
    assert f'(require-not (subpath "{project}/.envrc"))' in profile
    assert '(deny file-read* (subpath "/Users/me/\\"odd\\""))' in profile
    assert "(allow network*)" not in profile
    assert "(allow network*)" in seatbelt_profile(SandboxPolicy(roots=(project,), network=True))


def test_the_seatbelt_profile_of_read_only_writes_no_project_path(project: Path, tmp_path: Path) -> None:
    profile = seatbelt_profile(SandboxPolicy(mode="read-only", roots=(project,), temp=tmp_path))
    assert f'(subpath "{project}")' not in profile
    assert f'(subpath "{tmp_path.resolve()}")' in profile


def test_a_denied_write_gets_a_note_naming_the_way_out_and_clean_output_none(project: Path) -> None:
    policy = SandboxPolicy(roots=(project,))
    note = explain_denial("bash: /etc/x: Permission denied\n", policy)
    assert note is not None and 'sandbox: "off"' in note and "network: true" in note
    assert explain_denial("3 passed\n", policy) is None
    assert explain_denial("Permission denied", SandboxPolicy(mode="off")) is None


def test_protected_paths_resolve_as_realpath_would_through_symlinked_names_and_folders(
    tmp_path: Path,
) -> None:
    # The spec resolves ~120 protected names a root with one lstat each; it must agree with realpath
    # wherever a name, or the folder holding it, is a symlink (inside or outside the project).
    from harness.sandbox._policy import _protected_real  # pyright: ignore[reportPrivateUsage]

    outside = tmp_path / "dotfiles"
    (outside / "config").mkdir(parents=True)
    real = tmp_path / "real-project"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "project"
    link.symlink_to(real)
    (real / ".bashrc").symlink_to(outside / "bashrc")
    (real / ".config").symlink_to(outside / "config")
    (real / ".envrc").symlink_to("sub/envrc")
    (real / ".profile").symlink_to(real / ".profile-loop")
    (real / ".profile-loop").symlink_to(real / ".profile")
    protected = (".bashrc", ".config/git", ".config/zed", ".envrc", ".profile", ".git", "a/b/c", "/etc/x")
    policy = SandboxPolicy(roots=(link, Path("/")), protected=protected)
    roots = [str(real), "/"]
    expected = [os.path.realpath(p) for p in policy.protected_paths()]
    assert _protected_real(policy, roots) == expected
