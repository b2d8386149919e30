"""The verification sides: the after side in SWE-bench's order, and rows it cannot grade."""

from __future__ import annotations

from pathlib import Path

from agents.mint_config import MintConfig, VerifyConfig
from agents.minter import mint_instance
from agents.models import Instance
from agents.verification import apply_side_patches, sides
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "edittest"
TEST_PATCH = (DATA / "test_patch.diff").read_text()
PATCH = (DATA / "patch.diff").read_text()
PATCH_EDITING_TESTS = (DATA / "patch_editing_tests.diff").read_text()
"""acme__edittest-1 of a fresh user's trial: the fix also weakens the test the test_patch adds."""


def test_the_after_side_applies_the_patch_then_resets_the_test_files_and_applies_the_test_patch():
    """As SWE-bench's harness, a row's eval_script and `swemint eval` do (the gold patch first)."""
    inst = Instance(instance_id="acme__p-1", repo="acme/p", base_commit="abc1", patch=PATCH, test_patch=TEST_PATCH)
    (before, b_patches, _), (after, a_patches, _) = sides(inst, VerifyConfig().before_runs, VerifyConfig().after_runs)
    assert (before, [n for n, _ in b_patches]) == ("before", ["test_patch"])
    assert (after, [n for n, _ in a_patches]) == ("after", ["patch", "test_patch"])
    sb = FakeSandbox(SandboxSpec(image="img", run_id="t"))
    methods: dict[str, str] = {}
    apply_side_patches(sb, "after", a_patches, methods, inst.instance_id, None)
    labels = [c.log_label for c in sb.calls]
    reset = labels.index("after:reset-tests")
    assert any(lb.startswith("after:patch") for lb in labels[:reset]), labels
    assert any(lb.startswith("after:test_patch") for lb in labels[reset + 1:]), labels
    assert "tests/test_new.py" in sb.calls[reset].command and set(methods) == {"patch", "test_patch"}
    # before that, every test path the patch changed goes back to the base tree (issue 24)
    paths = labels.index("after:reset-test-paths")
    assert paths < reset and "reset-tests" in sb.calls[paths].command
    sb = FakeSandbox(SandboxSpec(image="img", run_id="t"))  # the before side resets nothing
    apply_side_patches(sb, "before", b_patches, {}, inst.instance_id, None)
    assert "before:reset-tests" not in [c.log_label for c in sb.calls]


def test_mint_instance_refuses_a_patch_that_edits_a_file_of_the_test_patch(tmp_path):
    """acme__edittest-1 (a fresh user's trial): verified with the weakened test in FAIL_TO_PASS."""
    import subprocess

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
                   check=True)
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    inst = Instance(instance_id="acme__edittest-1", repo="acme/edittest", base_commit=base, patch=PATCH_EDITING_TESTS,
                    test_patch=TEST_PATCH)
    bare = tmp_path / "bare"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    res = mint_instance(inst, bare, MintConfig(workdir=tmp_path / "work", run_id="t-sides"), factory=object())
    assert res.outcome == "invalid_task" and res.FAIL_TO_PASS == []  # the fix edits test code (issue 24)
    assert "tests/test_new.py" in res.reason and "test code or test infrastructure" in res.reason
