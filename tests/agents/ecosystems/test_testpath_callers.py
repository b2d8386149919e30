"""The ecosystems' own notions of "a test file", now roles of the one test-path rule set
(envpool/testpaths.yaml, issues 24/28), select what they selected before the switch.

Each caller is checked twice: on a few named paths with the answer written out, and on every
path of a grid the test writes (folders x file names of every ecosystem) against the private
pattern it had before (copied below from the code as it was, commit b5e6d2f): the switch keeps
which tests run.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from pathlib import PurePosixPath

import pytest

from agents.ecosystems.cfamily import units
from agents.ecosystems.java import ant_build, java_tests
from agents.ecosystems.lua import _spec_files
from agents.ecosystems.node import build as node_build
from agents.ecosystems.node.runner import TEST_EXTS, fixture_test_files, select_test_files
from agents.ecosystems.python.selection import test_folders
from agents.ecosystems.ruby import test_files as ruby_test_files
from envpool.patches import test_files_to_run

FOLDERS = ["", "tests/", "test/", "Tests/", "testing/", "spec/", "specs/", "Spec/", "src/", "pkg/sub/",
           "tests/data/", "tests/fixtures/", "tests/helpers/", "a/testdata/", "a/test/fixtures/", "a/fixture/",
           "spec/support/", "support/", "lib/spec/fixture/", "__tests__/", "pkg/__test__/", "src/__snapshots__/",
           "node_modules/x/test/", "dist/", "build/test/", "coverage/", "src/__mocks__/", "__fixtures__/",
           "t/", "check/", "Checks/", "TestSuite/", "src/test/java/org/x/", "m/src/it/java/",
           "m/src/integration-test/kotlin/a/", "src/testFixtures/groovy/", "src/test2/scala/", "src/test/resources/",
           "src/main/java/", "src/test/", "src/it/", "src/intTest/java/"]
NAMES = ["test_a.py", "a_test.py", "a_tests.py", "tests.py", "testing.py", "test.py", "conftest.py", "__init__.py",
         "setup.py", "helper.py", "a_spec.rb", "a_test.rb", "test_a.rb", "spec_helper.rb", "test_helper.rb",
         "a.rb", "a.test.js", "a.spec.ts", "a-test.tsx", "a_spec.mjs", "a.tests.cts", "a.d.ts", "a.js", "a.snap",
         "a.test.coffee", "a.test.jsx.snap", "FooTest.java", "TestFoo.java", "FooTests.kt", "FooTestCase.groovy",
         "FooIT.java", "Foo.java", "FooSpec.scala", "package-info.java", "Foo.Test.java", "run-tests.sh",
         "test_x.pl", "TestAll.tcl", "unit.TEST.bats", "mytest.sh", "a.sh", "x_spec.lua", "a.lua", "a.go", "a_test.go"]
GRID = [f + n for f in FOLDERS for n in NAMES]


# -- the private patterns as they were (b5e6d2f) ---------------------------------------------------

def python_run_before(paths):
    out = []
    for p in paths:
        path = PurePosixPath(p)
        name = path.name
        if not name.endswith(".py") or name in ("conftest.py", "__init__.py", "setup.py"):
            continue
        named_like_test = name.startswith("test") or name.endswith(("_test.py", "_tests.py"))
        in_test_dir = any(part.lower() in ("test", "tests", "testing") for part in path.parts[:-1]) and \
            not any(part.lower() in ("data", "fixtures", "testdata", "helpers") for part in path.parts[:-1])
        if named_like_test or in_test_dir:
            out.append(p)
    return out


def python_module_before(path):
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def ruby_before(touched):
    tests = [f for f in touched if f.endswith(".rb") and re.search(r"(^|/)(test|spec)s?/|_test\.rb$|_spec\.rb$", f)
             and not re.search(r"(^|/)(test|spec)_helper\.rb$|/support/|/fixtures?/", f)]
    return tests, [f for f in tests if f.endswith("_spec.rb")]


SUREFIRE = ["Test*", "*Test", "*Tests", "*TestCase", "*IT"]
_TEST_SOURCE = re.compile(r"(?:^|/)src/(?:test|it|integration-test)\w*/(?:java|kotlin|groovy|scala)/(.+)\."
                          r"(?:java|kt|groovy|scala)$")


def java_classes_before(touched):
    out = {}
    for path in touched:
        m = _TEST_SOURCE.search(path)
        if m:
            name = posixpath.basename(m.group(1))
            out[path] = [name] if any(fnmatch.fnmatchcase(name, p) for p in SUREFIRE) else []
    return out


def ant_before(touched):
    out = set()
    for p in touched:
        m = re.search(r"(?:^|/)([A-Z][\w$]*)\.java$", p)
        if m and any(fnmatch.fnmatchcase(m.group(1), pat) for pat in SUREFIRE):
            out.add(m.group(1))
    return sorted(out)


_NOT_TESTS = re.compile(r"(^|/)(__snapshots__|__fixtures__|fixtures?|__mocks__|node_modules|dist|"
                        r"build|coverage)(/|$)")
_NODE_TEST_DIR = re.compile(r"(^|/)(__tests__|tests?|specs?|__test__)(/|$)")


def node_before(touched):
    from envpool.testpaths import TestPathRules

    names = TestPathRules(None, ["js"])
    return [p for p in touched if p.endswith(TEST_EXTS) and not p.endswith(".d.ts") and not _NOT_TESTS.search(p)
            and (names.is_test_file(p) or _NODE_TEST_DIR.search(p))]


_C_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|testing|testsuite|t|checks?|spec)(?:/|$)", re.I)
_C_TEST_NAME = re.compile(r"(?:^|[-_.])tests?(?:[-_.]|$)|^test", re.I)


def script_before(path):
    p = PurePosixPath(path)
    return p.suffix in units.SCRIPT_SUFFIXES and bool(_C_TEST_DIR.search(path) or _C_TEST_NAME.search(p.name))


def _patch(paths):
    return "".join(f"diff --git a/{p} b/{p}\nnew file mode 100644\n--- /dev/null\n+++ b/{p}\n@@ -0,0 +1 @@\n+x\n"
                   for p in paths)


class _Tree:
    def __init__(self, files):
        self.files = list(files)


# -- Python --------------------------------------------------------------------------------------

def test_pytest_is_handed_the_same_test_modules_of_a_test_patch():
    assert test_files_to_run(_patch(["tests/test_a.py", "tests/unittest_brain.py", "tests/data/module.py",
                                     "tests/data/test_b.py", "tests/conftest.py", "pkg/testing.py",
                                     "Testing/helpers/x.py", "tests/fixtures/a.json", "src/core.py"])) == \
        ["tests/test_a.py", "tests/unittest_brain.py", "tests/data/test_b.py", "pkg/testing.py"]
    got = test_files_to_run(_patch(GRID))
    assert got == python_run_before(GRID) and len(got) > 50


def test_the_test_folders_are_those_holding_pytest_style_modules():
    tree = _Tree(["pkg/a.py", "pkg/tests/test_x.py", "pkg/tests/data/in.txt", "other/tests.py", "other/data.txt"])
    # other/ holds only tests.py (not pytest's default python_files): no folder for its data
    assert test_folders(tree, _patch(["pkg/tests/data/in.txt", "other/data.txt"])) == ["pkg/tests"]
    tree = _Tree(GRID)
    touched = [p for p in GRID if p.endswith((".txt", ".json", "a.py"))] + ["tests/data/new.json", "deep/x/y.json"]
    dirs = {posixpath.dirname(f) for f in GRID if python_module_before(f)}
    expected = []
    for path in touched:
        d = posixpath.dirname(path)
        while d:
            if any(x == d or x.startswith(d + "/") for x in dirs):
                expected += [d] if d not in expected else []
                break
            d = posixpath.dirname(d)
    assert test_folders(tree, _patch(touched)) == expected and expected


# -- Ruby ----------------------------------------------------------------------------------------

def test_ruby_runs_the_same_spec_and_test_files():
    assert ruby_test_files(["spec/models/user_spec.rb", "spec/spec_helper.rb", "spec/support/matchers.rb",
                            "test/unit/test_user.rb", "lib/user.rb", "spec/fixtures/a_spec.rb",
                            "support/x_spec.rb", "Spec/a.rb"]) == \
        (["spec/models/user_spec.rb", "test/unit/test_user.rb", "support/x_spec.rb"],
         ["spec/models/user_spec.rb", "support/x_spec.rb"])
    tests, specs = ruby_test_files(GRID)
    assert (tests, specs) == ruby_before(GRID) and specs and len(tests) > len(specs)


# -- Java ----------------------------------------------------------------------------------------

def test_java_names_the_same_test_classes():
    assert java_tests.test_classes(["m/src/test/java/a/FooTest.java", "m/src/test/java/a/TestUtil.java",
                                    "m/src/test/java/a/Helper.java", "src/main/java/a/BarTest.java",
                                    "src/intTest/java/FooTest.java", "m/src/it/java/a/ServerIT.java"]) == \
        {"m/src/test/java/a/FooTest.java": ["FooTest"], "m/src/test/java/a/TestUtil.java": ["TestUtil"],
         "m/src/test/java/a/Helper.java": [], "m/src/it/java/a/ServerIT.java": ["ServerIT"]}
    got = java_tests.test_classes(GRID)
    assert got == java_classes_before(GRID) and any(got.values()) and not all(got.values())


def test_ant_names_the_same_test_classes():
    assert ant_build.touched_test_classes(["test/org/x/FooTest.java", "test/org/x/package-info.java",
                                           "src/org/x/Foo.java", "test/TestAll.java", "test/a/fooTest.java"]) == \
        ["FooTest", "TestAll"]
    assert ant_build.touched_test_classes(GRID) == ant_before(GRID) != []


def test_a_packages_other_tests_leave_out_failsafes_integration_tests():
    files = ["m/src/test/java/a/CalcTest.java", "m/src/test/java/a/ServerIT.java", "m/src/test/java/a/Util.java",
             "m/src/test/java/a/NodeTest.java", "m/src/test/java/a/sub/DeepTest.java"]
    tests = java_tests.test_classes(["m/src/test/java/a/CalcTest.java"])
    assert java_tests.package_classes(_Tree(files), tests, lambda p: "m") == ["CalcTest", "NodeTest"]
    tests = java_tests.test_classes(["m/src/test/java/a/ServerIT.java"])  # a touched *IT still runs
    assert java_tests.package_classes(_Tree(files), tests, lambda p: "m") == ["CalcTest", "NodeTest", "ServerIT"]


# -- Node ----------------------------------------------------------------------------------------

def test_node_hands_its_runner_the_same_test_files():
    assert select_test_files(["src/a.test.ts", "src/a.ts", "test/helpers/setup.js", "types/index.d.ts",
                              "test/types.d.ts", "src/__snapshots__/a.test.ts.snap", "test/fixtures/in.js",
                              "dist/test/a.js", "lib/a.spec.coffee", "lib/a-spec.coffee", "Tests/a.js"]) == \
        ["src/a.test.ts", "test/helpers/setup.js", "lib/a.spec.coffee"]
    got = select_test_files(GRID)
    assert got == node_before(GRID) and len(got) > 20


_FIXTURES = re.compile(r"^(?P<test>(?:.*/)?(?:__tests__|tests?|specs?))/(?:__fixtures__|fixtures?)/")


def fixtures_before(tree, touched):
    out = []
    for d in dict.fromkeys(m.group("test") for p in touched if (m := _FIXTURES.match(p))):
        out += [f for f in tree.files if f.startswith(d + "/") and "/" not in f[len(d) + 1:]
                and f.endswith(TEST_EXTS) and not f.endswith(".d.ts")]
    return list(dict.fromkeys(out))


def test_touched_fixtures_run_the_same_test_folder_files():
    tree = _Tree(["pkg/test/index.js", "pkg/test/util.ts", "pkg/test/types.d.ts", "pkg/test/fixtures/a/in.js",
                  "pkg/test/sub/deep.js", "spec/run.js", "x/test/fixtures/y/test/fixtures/z.txt", "x/test/fixtures/y/test/t.js",
                  "x/test/top.js", "Test/fixtures/q.txt", "Test/a.js"])
    assert fixture_test_files(tree, ["pkg/test/fixtures/a/out.txt", "spec/fixture/b.json",
                                     "x/test/fixtures/y/test/fixtures/z.txt", "Test/fixtures/q.txt"]) == \
        ["pkg/test/index.js", "pkg/test/util.ts", "spec/run.js", "x/test/fixtures/y/test/t.js"]  # the deepest pair
    grid = _Tree(GRID + [f + "t.js" for f in FOLDERS])
    touched = [f + "fixtures/x/in.txt" for f in FOLDERS] + [f + "__fixtures__/in.txt" for f in FOLDERS] + GRID
    got = fixture_test_files(grid, touched)
    assert got == fixtures_before(grid, touched) and len(got) > 10


def test_the_rebuild_guard_leaves_out_the_same_test_paths():
    assert node_build._specs() == ("':(glob,exclude)**/test/**' ':(glob,exclude)**/tests/**' "
                                   "':(glob,exclude)**/__tests__/**' ':(glob,exclude)**/*.test.*' "
                                   "':(glob,exclude)**/*.spec.*'")


# -- C family and Lua ------------------------------------------------------------------------------

@pytest.mark.parametrize("path,script", [
    ("tests/run.sh", True), ("t/basic.pl", True), ("Testing/x.py", True), ("scripts/run-tests.sh", True),
    ("tools/TestAll.tcl", True), ("tools/unit.TEST.bats", True), ("tools/mytest.sh", False),
    ("tools/build.sh", False), ("tests/data.txt", False), ("latest/x.sh", False),
])
def test_a_c_projects_test_scripts_are_the_same(path, script):
    assert units._script(None, path) is script


def test_c_test_scripts_match_the_old_pattern_on_the_grid():
    got = [p for p in GRID if units._script(None, p)]
    assert got == [p for p in GRID if script_before(p)] and len(got) > 20


def test_busted_runs_the_spec_files():
    assert _spec_files(["spec/parser_spec.lua", "src/parser.lua", "x_spec.lua.bak", "a/b_spec.lua"]) == \
        ["spec/parser_spec.lua", "a/b_spec.lua"]
    assert _spec_files(GRID) == [p for p in GRID if p.endswith("_spec.lua")] != []
