"""A patch never writes into the repository's .git or out of it, whoever wrote it (issue 24; a new
user's trial 6): `git apply` refuses such paths, but the ladder's last step, `patch -p1`, followed
a link the same patch made (`lnk -> .git/hooks`, then `lnk/post-checkout`) or one the tree already
had, and wrote a hook that the test-path reset's own `git checkout` then ran -- in `swemint eval`,
code a model's patch put there ran after the reset and could write a conftest.py back. Applied
here with the real git and GNU patch on a small repository the test writes (a host sandbox whose
work tree is a temporary folder)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from envpool.errors import PatchApplyError
from envpool.patches import PATCH_DIR, apply_patch, unsafe_paths
from envpool.sandbox import ExecResult

pytestmark = pytest.mark.skipif(not shutil.which("patch") or not shutil.which("realpath"),
                                reason="needs GNU patch and realpath")

HOOK = "+#!/bin/sh\n+touch HOOK_RAN\n"


class HostSandbox:
    """Just enough of a sandbox for `apply_patch`: files under PATCH_DIR go to a folder of the test."""

    def __init__(self, scratch: Path):
        self.scratch = scratch

    def _map(self, text: str) -> str:
        return text.replace(PATCH_DIR, str(self.scratch))

    def put_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        target = Path(self._map(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def exec(self, command: str, timeout: float = 60, workdir: str = "/testbed", log_label: str = "", **_):
        r = subprocess.run(["bash", "-c", self._map(command)], cwd=workdir, capture_output=True, text=True,
                           timeout=timeout)
        return ExecResult(command=command, exit_code=r.returncode, output=r.stdout + r.stderr, duration=0.0)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def tree(tmp_path):
    repo = tmp_path / "testbed"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "m.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
    _git(repo, "init", "-q")
    (repo / "hooks").symlink_to(".git/hooks")  # a link the tree already has
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return repo


def _link(path: str, target: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n"
            f"+{target}\n\\ No newline at end of file\n")


def _new(path: str, body: str = HOOK) -> str:
    n = len(body.splitlines())
    return f"diff --git a/{path} b/{path}\nnew file mode 100755\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{n} @@\n{body}"


def _no_hook(tree: Path) -> None:
    assert not (tree / ".git" / "hooks" / "post-checkout").exists()
    _git(tree, "checkout", "-q", "HEAD", "--", "src/m.py")  # what the reset runs
    assert not (tree / "HOOK_RAN").exists()


@pytest.mark.parametrize("patch,shown", [
    (_link("lnk", ".git/hooks") + _new("lnk/post-checkout"), "lnk -> .git/hooks"),  # a link it makes, then through it
    (_link("lnk", "src/../.git/hooks") + _new("lnk/post-checkout"), "lnk -> src/../.git/hooks"),
    (_link("src/up", "../../outside") + _new("src/up/x.py"), "src/up -> ../../outside"),
    (_new(".git/hooks/post-checkout"), ".git/hooks/post-checkout"),
    ('diff --git "a/\\056git/hooks/post-checkout" "b/\\056git/hooks/post-checkout"\nnew file mode 100755\n'
     '--- /dev/null\n+++ "b/\\056git/hooks/post-checkout"\n@@ -0,0 +1,2 @@\n' + HOOK, ".git/hooks/post-checkout"),
])
def test_a_patch_into_git_or_out_of_the_tree_is_refused_before_anything_runs(tree, tmp_path, patch, shown):
    sb = HostSandbox(tmp_path / "patches")
    with pytest.raises(PatchApplyError, match="outside the repository or in its .git folder") as e:
        apply_patch(sb, patch, workdir=str(tree), label="model_patch", instance_id="o__r-1")
    assert shown in str(e.value) or ".git" in str(e.value)
    _no_hook(tree)
    assert not (tree / "lnk").exists() and not (tmp_path / "outside").exists()


def test_patch_does_not_follow_a_link_the_tree_already_has_into_git(tree, tmp_path):
    patch = _new("hooks/post-checkout")
    assert unsafe_paths(patch) == []  # the patch alone looks harmless: the link is the tree's
    with pytest.raises(PatchApplyError, match="patch_fuzz_paths") as e:
        apply_patch(HostSandbox(tmp_path / "patches"), patch, workdir=str(tree), label="model_patch")
    assert "outside the work tree or in its .git" in str(e.value)
    _no_hook(tree)


def test_a_patch_that_needs_fuzz_still_applies_and_links_inside_the_tree_are_kept(tree, tmp_path):
    fuzzy = ("diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,5 +1,5 @@\n a = 1\n b = 2\n"
             "-c = 3\n+c = 30\n d = 4\n e = 55\n")  # its last context line differs from the tree: fuzz
    assert apply_patch(HostSandbox(tmp_path / "patches"), fuzzy, workdir=str(tree)) == "patch_fuzz"
    assert "c = 30\n" in (tree / "src" / "m.py").read_text()
    inside = _link("docs/readme", "../src/m.py")
    assert apply_patch(HostSandbox(tmp_path / "patches"), inside, workdir=str(tree)) == "git_apply"
    assert (tree / "docs" / "readme").resolve() == (tree / "src" / "m.py").resolve()
