"""A tiny Go module (stdlib only) the test writes itself, minted end to end in Docker with the Go
ecosystem: Debian toolchain image (go 1.19), module setup, before/after `go test -json` runs
under network none, graded.

Two cases: the new test (with subtests named ``case (a.b) one`` and ``two words``) fails at run
time before the fix while a changed old test stays PASS_TO_PASS; and the new test file calls a
function the fix adds, so the package does not build before the fix: its tests must be
FAIL_TO_PASS, never passed before, while the package's untouched test is in neither list. In
both the whole touched package runs (an untouched test is PASS_TO_PASS). The minted image then runs ``-run`` with the pattern for one
awkward subtest: exactly that subtest (and its parent) runs.
"""

from __future__ import annotations

import json

import pytest

from agents.ecosystems import golang
from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestStatus

pytestmark = [pytest.mark.docker, pytest.mark.slow]

GO_MOD = "module example.com/calc\n\ngo 1.19\n"
CALC_BUG = "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
CALC_TEST = """package calc

import "testing"

func TestZero(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("zero")
	}
}
"""

PATCH = """diff --git a/calc.go b/calc.go
--- a/calc.go
+++ b/calc.go
@@ -2,5 +2,10 @@ package calc

 // Add returns a+b.
 func Add(a, b int) int {
-	return a - b
+	return a + b
+}
+
+// Double returns 2a.
+func Double(a int) int {
+	return Add(a, a)
 }
"""

TEST_PATCH_RUNTIME = """diff --git a/calc_test.go b/calc_test.go
--- a/calc_test.go
+++ b/calc_test.go
@@ -4,6 +4,19 @@ import "testing"

 func TestZero(t *testing.T) {
 	if Add(0, 0) != 0 {
-		t.Fatal("zero")
+		t.Fatal("0 + 0 is not 0")
 	}
 }
+
+func TestAdd(t *testing.T) {
+	t.Run("case (a.b) one", func(t *testing.T) {
+		if Add(1, 1) != 2 {
+			t.Fatal(Add(1, 1))
+		}
+	})
+	t.Run("two words", func(t *testing.T) {
+		if Add(2, 3) != 5 {
+			t.Fatal(Add(2, 3))
+		}
+	})
+}
"""

TEST_PATCH_COMPILE = """diff --git a/double_test.go b/double_test.go
new file mode 100644
--- /dev/null
+++ b/double_test.go
@@ -0,0 +1,9 @@
+package calc
+
+import "testing"
+
+func TestDouble(t *testing.T) {
+	if Double(4) != 8 {
+		t.Fatal(Double(4))
+	}
+}
"""


OTHER_TEST = "package calc\n\nimport \"testing\"\n\nfunc TestUntouched(t *testing.T) {}\n"
"""A test of the package the test_patch never touches: the whole package runs, so it is
PASS_TO_PASS when the package builds on both sides."""


@pytest.fixture
def mint_go(mint_with):
    """mint(test_patch, name) -> InstanceResult of the Go module with PATCH as the fix."""
    files = {"go.mod": GO_MOD, "calc.go": CALC_BUG, "calc_test.go": CALC_TEST, "other_test.go": OTHER_TEST}
    return lambda test_patch, name: mint_with(golang.ECOSYSTEM, files, name, language="Go",
                                              created_at="2023-03-01 10:00:00", patch=PATCH, test_patch=test_patch)


def test_runtime_failure_with_awkward_subtests(mint_go, docker_client):
    res = mint_go(TEST_PATCH_RUNTIME, "runtime")
    assert res.outcome == "verified", res.reason
    assert sorted(res.FAIL_TO_PASS) == ["example.com/calc::TestAdd", "example.com/calc::TestAdd/case_(a.b)_one",
                                        "example.com/calc::TestAdd/two_words"]
    # the touched package runs whole: its untouched test is a regression test of the row
    assert res.PASS_TO_PASS == ["example.com/calc::TestUntouched", "example.com/calc::TestZero"]
    assert res.interpreter == "go 1.19.8" and res.parser == "go_test_json"
    # the image runs offline, and -run selects exactly one awkward subtest
    pattern = golang.run_pattern(["example.com/calc::TestAdd/case_(a.b)_one"])
    out = docker_client.containers.run(
        res.image, ["bash", "-c", f"cd /testbed && git apply <<'EOF'\n{TEST_PATCH_RUNTIME}EOF\n"
                    f"go test -json -count=1 -run '{pattern}' . || true"],
        network_mode="none", remove=True).decode()  # the toolchain comes from the image's ENV
    ran = {e["Test"] for e in map(json.loads, filter(None, out.splitlines()))
           if e.get("Action") == "run"}
    assert ran == {"TestAdd", "TestAdd/case_(a.b)_one"}
    # the row's test_command runs as is in the row's image and prints the report it parses
    out = docker_client.containers.run(
        res.image, ["bash", "-c", f"cd /testbed && git apply <<'EOF'\n{TEST_PATCH_RUNTIME}EOF\n"
                    f"git apply <<'EOF'\n{PATCH}EOF\n{res.test_command}"],
        network_mode="none", remove=True).decode()
    rep = get_parser(res.parser)(out)
    assert {t: str(rep.statuses.get(t)) for t in res.FAIL_TO_PASS + res.PASS_TO_PASS} == {
        t: str(TestStatus.PASSED) for t in res.FAIL_TO_PASS + res.PASS_TO_PASS}


def test_package_that_does_not_build_before_is_fail_to_pass(mint_go):
    res = mint_go(TEST_PATCH_COMPILE, "compile")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["example.com/calc::TestDouble"]
    # the package did not build before: TestUntouched (passing after, absent before) is in
    # neither list -- only the touched TestDouble is FAIL_TO_PASS (Plan.state["absent_scope"])
    assert res.PASS_TO_PASS == []
