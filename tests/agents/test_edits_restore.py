"""Setup edits that a row's patch changes: restored to base_commit when the patch would not apply
to them (sharkdp/bat-562: cargo rewrote the old Cargo.lock format in setup, and the gold patch's
Cargo.lock hunk no longer applied: `patch_failed`)."""

from __future__ import annotations

from agents.dockerfile import render_dockerfile
from agents.envimage import restore_conflicting_edits
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec

PATCH = """diff --git a/Cargo.lock b/Cargo.lock
--- a/Cargo.lock
+++ b/Cargo.lock
@@ -1,3 +1,3 @@
 [[package]]
 name = "adler32"
-version = "1.0.3"
+version = "1.0.4"
diff --git a/src/app.rs b/src/app.rs
--- a/src/app.rs
+++ b/src/app.rs
@@ -1 +1 @@
-fn a() {}
+fn b() {}
"""
TEST_PATCH = """diff --git a/tests/t.rs b/tests/t.rs
--- a/tests/t.rs
+++ b/tests/t.rs
@@ -1 +1 @@
-#[test] fn t() {}
+#[test] fn t2() {}
"""


def test_an_edited_file_the_patch_no_longer_applies_to_goes_back_to_base():
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"git status --porcelain", (0, " M Cargo.lock\n M src/app.rs\n M build.rs\n"))
    sb.on(r"git apply --check --include=Cargo.lock", (1, "error: patch failed: Cargo.lock:1"))
    sb.on(r"git apply --check --include=src/app.rs", 0)
    notes = []
    restored = restore_conflicting_edits(sb, [TEST_PATCH, PATCH], notes.append)
    assert restored == ["Cargo.lock"]
    assert "cd /testbed && git checkout HEAD -- Cargo.lock" in sb.commands
    assert not any("checkout HEAD -- src/app.rs" in c or "build.rs" in c and "checkout" in c for c in sb.commands)
    assert notes and notes[0].rule == "edits-restored" and "Cargo.lock" in notes[0].note
    # nothing edited that a patch changes: no check at all
    sb2 = FakeSandbox(SandboxSpec(image="x"))
    sb2.on(r"git status --porcelain", (0, " M build.rs\n"))
    assert restore_conflicting_edits(sb2, [TEST_PATCH, PATCH], notes.append) == []
    assert not any("apply --check" in c for c in sb2.commands)


def test_the_dockerfile_replays_the_restore_before_committing_the_edits():
    text = render_dockerfile(base_image="swemint/rust:1.78-x", repo="acme/a", base_commit="abc", commands=["cargo fetch"],
                             env={}, restore=["Cargo.lock", "odd name.toml"])
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if "git checkout HEAD -- Cargo.lock 'odd name.toml'" in line)
    j = next(n for n, line in enumerate(lines) if "environment setup edits" in line)
    assert i < j
