"""Pure patch helpers: files touched, test/code split, normalisation; apply order on a fake.

Applying in a real git repository is covered in test_pytest_runner_docker.py.
"""

from __future__ import annotations

import re

import pytest

from envpool.errors import PatchApplyError
from envpool.fake import FakeSandbox
from envpool.patches import (
    apply_patch,
    ensure_final_newline,
    files_in_patch,
    fix_blank_context_lines,
    is_test_path,
    match_line_endings,
    normalise_patch,
    split_patch,
    split_test_files,
    test_files_to_run,
)
from envpool.sandbox import SandboxSpec

FIX = ("diff --git a/m.py b/m.py\nindex 1..2 100644\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@\n"
       " def f():\n-    a = 1\n+    a = 10\n \n     return a\n")
NEW_TEST = ("diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n"
            "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1,2 @@\n+def test_x():\n+    pass\n")
DELETED = ("diff --git a/tests/test_gone.py b/tests/test_gone.py\ndeleted file mode 100644\n"
           "--- a/tests/test_gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n")
RENAME = ("diff --git a/old_name.py b/new_name.py\nsimilarity index 100%\n"
          "rename from old_name.py\nrename to new_name.py\n")


def test_files_in_patch_lists_modified_added_deleted_and_renamed():
    assert files_in_patch(FIX + NEW_TEST + DELETED) == ["m.py", "tests/test_new.py", "tests/test_gone.py"]
    assert files_in_patch(RENAME) == ["old_name.py", "new_name.py"]


def test_files_in_patch_survives_a_miscounted_hunk():
    broken = FIX.replace("@@ -1,4 +1,4 @@", "@@ -1,9 +1,9 @@")
    assert files_in_patch(broken) == ["m.py"]


def test_split_test_files_by_path():
    paths = ["src/a.py", "tests/test_a.py", "pkg/test_b.py", "pkg/b_test.py", "conftest.py",
             "tests/data/x.json", "src/test/java/FooTest.java", "web/a.spec.ts", "go/x_test.go",
             "docs/testing.md", "pkg/contest.py", "latest.py"]
    tests, other = split_test_files(paths)
    assert other == ["src/a.py", "docs/testing.md", "pkg/contest.py", "latest.py"]
    assert is_test_path("lib/matplotlib/tests/test_axes.py")


def test_split_patch_keeps_sections_verbatim():
    code, tests = split_patch(FIX + NEW_TEST)
    assert code == FIX and tests == NEW_TEST


def test_test_files_to_run_skips_deleted_non_python_and_conftest():
    conftest = NEW_TEST.replace("tests/test_new.py", "tests/conftest.py")
    data = NEW_TEST.replace("tests/test_new.py", "tests/data.json")
    assert test_files_to_run(NEW_TEST + DELETED + conftest + data) == ["tests/test_new.py"]


# -- normalisation ------------------------------------------------------------------------------

def test_crlf_patch_for_lf_file_becomes_lf():
    crlf = FIX.replace("\n", "\r\n")
    assert match_line_endings(crlf) == FIX


def test_lf_patch_for_crlf_file_gets_crlf_hunk_lines_only():
    out = match_line_endings(FIX, {"m.py"})
    assert "+++ b/m.py\n@@ -1,4 +1,4 @@\n" in out  # headers stay LF
    assert " def f():\r\n-    a = 1\r\n+    a = 10\r\n \r\n     return a\r\n" in out


def test_no_newline_marker_keeps_last_line_without_cr():
    patch = FIX + "\\ No newline at end of file\n"
    out = match_line_endings(patch, {"m.py"})
    assert out.endswith("     return a\n\\ No newline at end of file\n")


def test_new_file_in_windows_patch_becomes_lf_but_keeps_endings_otherwise():
    assert match_line_endings(NEW_TEST.replace("\n", "\r\n")) == NEW_TEST
    mixed = NEW_TEST.replace("+    pass\n", "+    pass\r\n")
    assert match_line_endings(mixed) == mixed


def test_blank_context_line_missing_its_space_is_restored():
    broken = FIX.replace("+    a = 10\n \n", "+    a = 10\n\n")
    assert fix_blank_context_lines(broken) == FIX


def test_blank_line_after_a_hunk_is_not_touched():
    assert fix_blank_context_lines(FIX + "\n") == FIX + "\n"
    two = FIX + NEW_TEST
    assert fix_blank_context_lines(two) == two


def test_removed_line_that_looks_like_a_header_stays_in_its_hunk():
    patch = ("diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,2 @@\n"
             " select 1;\n--- a comment\n\n")
    assert fix_blank_context_lines(patch) == patch.replace("--- a comment\n\n", "--- a comment\n \n")
    assert match_line_endings(patch.replace("\n", "\r\n"), set()).count("\r") == 0


def test_missing_final_newline_is_added():
    assert ensure_final_newline(FIX.rstrip("\n")) == FIX
    assert ensure_final_newline("") == ""


def test_normalise_patch_fixes_all_three_at_once():
    broken = FIX.replace("+    a = 10\n \n", "+    a = 10\n\n").replace("\n", "\r\n").rstrip("\r\n")
    assert normalise_patch(broken) == FIX


# -- apply order (fake sandbox) ----------------------------------------------------------------

def fake(*failing: str) -> FakeSandbox:
    sb = FakeSandbox(SandboxSpec(image="fake"))
    for pattern in failing:
        sb.on(pattern, (1, f"error: {pattern} failed"))
    return sb


def test_apply_prefers_plain_git_apply():
    sb = fake()
    assert apply_patch(sb, FIX) == "git_apply"
    assert [c.split(" /")[0] for c in sb.commands if "git apply" in c or c.startswith("patch")] == \
        ["git apply -v"]


def test_apply_falls_back_to_normalised_git_apply_then_patch():
    sb = fake(r"^git apply -v /")
    assert apply_patch(sb, FIX.replace("\n", "\r\n")) == "git_apply_normalised"
    norm = next(p for p in sb.files if p.endswith(".normalised.diff"))
    assert sb.files[norm] == FIX.encode()
    sb = fake(r"^git apply")
    assert apply_patch(sb, FIX) == "patch_fuzz"
    cmds = [c for c in sb.commands if c.startswith("patch")]
    assert cmds[0].startswith("patch --dry-run") and "--fuzz=2" in cmds[1] and "--forward" in cmds[1]


def test_apply_failure_names_every_method_and_the_instance():
    sb = fake(r"^git apply", r"^patch ")
    with pytest.raises(PatchApplyError) as err:
        apply_patch(sb, FIX, label="test_patch", instance_id="o__r-1")
    msg = str(err.value)
    assert re.search(r"git_apply \(exit 1\).*git_apply_normalised.*patch_fuzz_dry_run", msg)
    assert "test_patch" in msg and err.value.instance_id == "o__r-1"
    assert not any(c.startswith("patch -p1") for c in sb.commands)  # dry run failed: no real run


def test_empty_patch_is_a_no_op():
    sb = fake()
    assert apply_patch(sb, "  \n") == "empty" and sb.commands == []


def test_paths_after_leaves_out_deleted_files_and_a_renames_old_name():
    from envpool.patches import paths_after

    rename = ("diff --git a/tests/unit/replica_migration.tcl b/tests/unit/replica-migration.tcl\n"
              "similarity index 90%\nrename from tests/unit/replica_migration.tcl\n"
              "rename to tests/unit/replica-migration.tcl\n--- a/tests/unit/replica_migration.tcl\n"
              "+++ b/tests/unit/replica-migration.tcl\n@@ -1 +1 @@\n-a\n+b\n")
    deleted = "diff --git a/t/test_a.py b/t/test_a.py\ndeleted file mode 100644\n--- a/t/test_a.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
    added = "diff --git a/t/test_b.py b/t/test_b.py\nnew file mode 100644\n--- /dev/null\n+++ b/t/test_b.py\n@@ -0,0 +1 @@\n+b\n"
    modified = "diff --git a/t/test_c.py b/t/test_c.py\n--- a/t/test_c.py\n+++ b/t/test_c.py\n@@ -1 +1 @@\n-a\n+c\n"
    assert paths_after(rename + deleted + added + modified) == [
        "tests/unit/replica-migration.tcl", "t/test_b.py", "t/test_c.py"]
    # a diff unidiff rejects (miscounted hunk) is read from its headers: the same answer
    bad = rename.replace("@@ -1 +1 @@", "@@ -1,5 +1,5 @@") + deleted.replace("@@ -1 +0,0 @@", "@@ -1,9 +0,0 @@")
    assert paths_after(bad) == ["tests/unit/replica-migration.tcl"]


def test_file_after_applies_only_that_files_section():
    from envpool.patches import file_after

    patch = ("diff --git a/a.json b/a.json\n--- a/a.json\n+++ b/a.json\n@@ -1,3 +1,4 @@\n {\n+  \"x\": 1,\n"
             "   \"y\": 2\n }\n"
             "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-old\n+new\n")
    assert file_after(patch, "a.json", '{\n  "y": 2\n}\n') == '{\n  "x": 1,\n  "y": 2\n}\n'
    assert file_after(patch, "c.txt", "same\n") == "same\n"  # untouched: as it was
    assert file_after(patch, "a.json", "something else\n") is None  # its section does not apply


def _two_file_diff() -> str:
    return ("diff --git a/pkg/Cargo.toml b/pkg/Cargo.toml\nindex 1..2 100644\n--- a/pkg/Cargo.toml\n"
            "+++ b/pkg/Cargo.toml\n@@ -1,2 +1,3 @@\n [package]\n+edition = \"2021\"\n name = \"x\"\n"
            "diff --git a/old.txt b/new.txt\nsimilarity index 90%\nrename from old.txt\nrename to new.txt\n"
            "--- a/old.txt\n+++ b/new.txt\n@@ -1 +1 @@\n-a\n+b\n"
            "diff --git a/gone.rs b/gone.rs\ndeleted file mode 100644\nindex 1..0\n--- a/gone.rs\n+++ /dev/null\n"
            "@@ -1 +0,0 @@\n-fn x() {}\n")


def test_sections_by_path_keys_each_section_by_its_path_after_and_keeps_the_text():
    from envpool.patches import file_sections, sections_by_path

    diff = _two_file_diff()
    got = sections_by_path(diff)
    assert list(got) == ["pkg/Cargo.toml", "new.txt", "gone.rs"]  # rename: new name; deletion: old name
    assert "".join(got.values()) == diff == "".join(file_sections(diff))
    assert got["new.txt"].startswith("diff --git a/old.txt b/new.txt\n")


def test_changed_line_count_by_unidiff_and_from_the_text_of_a_miscounted_diff():
    from envpool.patches import changed_line_count

    assert changed_line_count(_two_file_diff()) == 4
    miscounted = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,9 +1,9 @@\n-x\n+y\n+z\n"
    assert changed_line_count(miscounted) == 3
    assert changed_line_count("") == 0


def test_added_lines_reads_a_miscounted_diff_section_by_section():
    from envpool.patches import added_lines

    miscounted = ("diff --git a/package.json b/package.json\n--- a/package.json\n+++ b/package.json\n"
                  "@@ -89,6 +89,7 @@\n     \"a\": \"1\",\n+    \"b\": \"^2.0.0\",\n")
    assert added_lines(miscounted) == {"package.json": ['    "b": "^2.0.0",']}
