"""Paths git writes quoted (core.quotePath: C escapes, octal bytes) are read decoded by every check:
an encoded `tests/`, `conftest.py`, `..` or `.git` read literally escaped the test-path and
path-safety checks (found by a new user's trial: a quoted conftest hook in the fix minted, a quoted
`.git/hooks/` file in a test_patch ended verified)."""

from __future__ import annotations

import subprocess

from envpool.patches import files_in_patch, grading_paths_problem, unquote_git_path, unsafe_paths


def _diff(old: str, new: str, body: str = "@@ -0,0 +1 @@\n+x\n", mode: str = "new file mode 100644\n") -> str:
    return f'diff --git "a/{old}" "b/{new}"\n{mode}--- /dev/null\n+++ "b/{new}"\n{body}'


def test_c_escapes_and_octal_bytes_decode_as_git_writes_them():
    assert unquote_git_path(r'"b/t\145sts/x.py"') == "b/tests/x.py"
    assert unquote_git_path(r'"a/caf\303\251 \"q\" \\ \t"') == 'a/café "q" \\ \t'
    assert unquote_git_path("b/plain.py") == "b/plain.py"
    assert unquote_git_path(r'"b/bad\9x"') == r"b/bad\9x"  # not an escape: kept


def test_a_quoted_test_helper_or_conftest_in_the_fix_is_test_code():
    helper = _diff(r"t\145sts/helpers.py", r"t\145sts/helpers.py", "@@ -1 +1 @@\n-a\n+b\n", "")
    assert files_in_patch(helper) == ["tests/helpers.py"]
    assert "tests/helpers.py" in (grading_paths_problem(helper, "python") or "")
    hook = _diff(r"con\146test.py", r"con\146test.py")
    assert "conftest.py" in (grading_paths_problem(hook, "python") or "")


def test_quoted_parent_and_git_folder_paths_are_unsafe():
    assert unsafe_paths(_diff(r"\056\056/e.py", r"\056\056/e.py")) == ["../e.py"]
    assert unsafe_paths(_diff(r"\056git/hooks/post-checkout", r"\056git/hooks/post-checkout",
                              mode="new file mode 100755\n")) == [".git/hooks/post-checkout"]
    renamed = 'diff --git a/x.py "b/\\056\\056/y.py"\nsimilarity index 100%\nrename from x.py\nrename to "\\056\\056/y.py"\n'
    assert "../y.py" in unsafe_paths(renamed)


def test_the_decoded_names_are_the_names_git_itself_writes(tmp_path):
    """Against real git: a file whose name git quotes comes back under its own name."""
    def git(*a):
        return subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    name = "tests/café \"x\".py"
    (tmp_path / "tests").mkdir()
    (tmp_path / name).write_text("x = 1\n")
    git("add", "-A")
    diff = git("-c", "core.quotePath=true", "diff", "--cached")
    assert '"b/tests/caf\\303\\251 \\"x\\".py"' in diff
    assert files_in_patch(diff) == [name]
